/* Reading a node's arguments in the exported program's JSON: each is
 * {"name": schema name, "arg": {"as_<kind>": value}, "kind": 1|2}. */
#include <math.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

const cJSON *pt2_arg(const cJSON *node, const char *name)
{
    const cJSON *in;
    cJSON_ArrayForEach(in, cJSON_GetObjectItemCaseSensitive(node, "inputs")) {
        const cJSON *n = cJSON_GetObjectItemCaseSensitive(in, "name");
        if (cJSON_IsString(n) && strcmp(n->valuestring, name) == 0) {
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(in, "arg");
            return cJSON_IsObject(a) && a->child ? a->child : NULL;
        }
    }
    return NULL;
}

static bool is(const cJSON *a, const char *kind)
{
    return a && a->string && strcmp(a->string, kind) == 0;
}

bool pt2_arg_none(const cJSON *node, const char *name)
{
    const cJSON *a = pt2_arg(node, name);
    return !a || is(a, "as_none");
}

static int bad(const char *name, const cJSON *a, const char *want)
{
    return tg_err("argument '%s': expected %s, got %s", name, want, a->string);
}

int pt2_json_float(const cJSON *j, double *out)
{
    if (cJSON_IsNumber(j)) {
        *out = j->valuedouble;
        return 0;
    }
    if (cJSON_IsString(j)) {
        const char *s = j->valuestring;
        if (!strcmp(s, "Infinity") || !strcmp(s, "inf"))
            *out = INFINITY;
        else if (!strcmp(s, "-Infinity") || !strcmp(s, "-inf"))
            *out = -INFINITY;
        else if (!strcmp(s, "NaN") || !strcmp(s, "nan"))
            *out = NAN;
        else
            return tg_err("'%s' is not a number", s);
        return 0;
    }
    return tg_err("expected a number");
}

int pt2_json_int(const cJSON *j, int64_t *out)
{
    if (!cJSON_IsNumber(j) || j->valuedouble != floor(j->valuedouble))
        return tg_err("expected an integer");
    /* Integers beyond 2^53 arrive rounded; the usual one is INT64_MAX
     * (slice to the end), which rounds up to 2^63: saturate. */
    double d = j->valuedouble;
    *out = d >= 9223372036854775807.0 ? INT64_MAX : d <= -9223372036854775808.0 ? INT64_MIN
                                                                                 : (int64_t)d;
    return 0;
}

static int tensor_of(pt2_ctx *c, const cJSON *a, const char *argname, int *v)
{
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "name");
    if (!cJSON_IsString(n))
        return tg_err("argument '%s': tensor without a name", argname);
    const pt2_name *p = pt2_lookup(c, n->valuestring);
    if (!p)
        return tg_err("argument '%s': unknown tensor '%s'", argname, n->valuestring);
    if (p->kind != PT2_TENSOR)
        return tg_err("argument '%s': uses '%s', an output texport does not compute",
                      argname, n->valuestring);
    *v = p->v;
    return 0;
}

int pt2_tensor(pt2_ctx *c, const cJSON *node, const char *name, int *v)
{
    const cJSON *a = pt2_arg(node, name);
    if (!a)
        return tg_err("argument '%s' missing", name);
    if (!is(a, "as_tensor"))
        return bad(name, a, "a tensor");
    return tensor_of(c, a, name, v);
}

int pt2_opt_tensor(pt2_ctx *c, const cJSON *node, const char *name, int *v)
{
    *v = -1;
    if (pt2_arg_none(node, name))
        return 0;
    return pt2_tensor(c, node, name, v);
}

int pt2_tensors(pt2_ctx *c, const cJSON *node, const char *name, int *v, int max, int *n)
{
    const cJSON *a = pt2_arg(node, name), *t;
    if (!a)
        return tg_err("argument '%s' missing", name);
    if (!is(a, "as_tensors") && !is(a, "as_optional_tensors"))
        return bad(name, a, "a list of tensors");
    *n = 0;
    cJSON_ArrayForEach(t, a) {
        if (*n >= max)
            return tg_err("argument '%s': more than %d tensors", name, max);
        const cJSON *inner = t;
        if (is(a, "as_optional_tensors")) {   /* [{"as_tensor": ...} | {"as_none": ...}] */
            if (is(t->child, "as_none")) {
                v[(*n)++] = -1;
                continue;
            }
            inner = cJSON_GetObjectItemCaseSensitive(t, "as_tensor");
        }
        if (tensor_of(c, inner, name, &v[*n]) < 0)
            return -1;
        (*n)++;
    }
    return 0;
}

/* A SymInt reference {"as_name": n} or {"as_int": v}. */
static int symint_of(pt2_ctx *c, const cJSON *s, const char *argname, tg_dim *out)
{
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(s, "as_int");
    if (i) {
        int64_t v;
        if (pt2_json_int(i, &v) < 0)
            return tg_err("argument '%s': %s", argname, tg_errmsg());
        *out = tg_dim_const(v);
        return 0;
    }
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(s, "as_name");
    if (!cJSON_IsString(n))
        return tg_err("argument '%s': malformed symbolic integer", argname);
    const pt2_name *p = pt2_lookup(c, n->valuestring);
    if (!p || p->kind != PT2_SYMINT)
        return tg_err("argument '%s': unknown symbolic integer '%s'", argname, n->valuestring);
    *out = p->dim;
    return 0;
}

int pt2_dim(pt2_ctx *c, const cJSON *node, const char *name, tg_dim dflt, tg_dim *out)
{
    const cJSON *a = pt2_arg(node, name);
    if (!a || is(a, "as_none")) {
        *out = dflt;
        return 0;
    }
    if (is(a, "as_sym_int"))
        return symint_of(c, a, name, out);
    if (is(a, "as_int")) {
        int64_t v;
        if (pt2_json_int(a, &v) < 0)
            return tg_err("argument '%s': %s", name, tg_errmsg());
        *out = tg_dim_const(v);
        return 0;
    }
    return bad(name, a, "an integer");
}

int pt2_int(pt2_ctx *c, const cJSON *node, const char *name, int64_t dflt, int64_t *out)
{
    tg_dim d;
    if (pt2_dim(c, node, name, tg_dim_const(dflt), &d) < 0)
        return -1;
    if (!tg_dim_is_const(d, out))
        return tg_err("argument '%s' must not depend on a dynamic dimension", name);
    return 0;
}

int pt2_dims(pt2_ctx *c, const cJSON *node, const char *name, tg_dim *out, int max)
{
    const cJSON *a = pt2_arg(node, name), *e;
    if (!a)
        return tg_err("argument '%s' missing", name);
    if (is(a, "as_int") || is(a, "as_sym_int")) {
        if (max < 1)
            return tg_err("argument '%s': too many values", name);
        return pt2_dim(c, node, name, tg_dim_const(0), out) < 0 ? -1 : 1;
    }
    if (!is(a, "as_ints") && !is(a, "as_sym_ints"))
        return bad(name, a, "a list of integers");
    int n = 0;
    cJSON_ArrayForEach(e, a) {
        if (n >= max)
            return tg_err("argument '%s': more than %d values", name, max);
        if (is(a, "as_sym_ints")) {
            if (symint_of(c, e, name, &out[n]) < 0)
                return -1;
        } else {
            int64_t v;
            if (pt2_json_int(e, &v) < 0)
                return tg_err("argument '%s': %s", name, tg_errmsg());
            out[n] = tg_dim_const(v);
        }
        n++;
    }
    return n;
}

int pt2_ints(pt2_ctx *c, const cJSON *node, const char *name, int64_t *out, int max)
{
    tg_dim d[TG_MAX_RANK * 2];
    int n = pt2_dims(c, node, name, d, max < TG_MAX_RANK * 2 ? max : TG_MAX_RANK * 2);
    for (int i = 0; i < n; i++)
        if (!tg_dim_is_const(d[i], &out[i]))
            return tg_err("argument '%s' must not depend on a dynamic dimension", name);
    return n;
}

int pt2_float(pt2_ctx *c, const cJSON *node, const char *name, double dflt, double *out)
{
    pt2_scalar s;
    if (pt2_arg_none(node, name)) {
        *out = dflt;
        return 0;
    }
    if (pt2_scalar_arg(c, node, name, &s) < 0)
        return -1;
    *out = s.kind == PT2_S_FLOAT ? s.f : (double)s.i;
    return 0;
}

int pt2_floats(const cJSON *node, const char *name, double *out, int max)
{
    const cJSON *a = pt2_arg(node, name), *e;
    if (!a || is(a, "as_none"))
        return 0;
    if (is(a, "as_float"))
        return max < 1 ? tg_err("argument '%s': too many values", name)
                       : pt2_json_float(a, out) < 0 ? -1 : 1;
    if (!is(a, "as_floats"))
        return bad(name, a, "a list of floats");
    int n = 0;
    cJSON_ArrayForEach(e, a) {
        if (n >= max)
            return tg_err("argument '%s': more than %d values", name, max);
        if (pt2_json_float(e, &out[n++]) < 0)
            return tg_err("argument '%s': %s", name, tg_errmsg());
    }
    return n;
}

int pt2_bool(const cJSON *node, const char *name, bool dflt, bool *out)
{
    const cJSON *a = pt2_arg(node, name);
    if (!a || is(a, "as_none")) {
        *out = dflt;
        return 0;
    }
    if (!is(a, "as_bool") || !cJSON_IsBool(a))
        return bad(name, a, "a bool");
    *out = cJSON_IsTrue(a);
    return 0;
}

int pt2_scalar_arg(pt2_ctx *c, const cJSON *node, const char *name, pt2_scalar *out)
{
    const cJSON *a = pt2_arg(node, name);
    memset(out, 0, sizeof *out);
    if (!a)
        return tg_err("argument '%s' missing", name);
    if (is(a, "as_bool") && cJSON_IsBool(a)) {
        out->kind = PT2_S_BOOL;
        out->i = cJSON_IsTrue(a);
        out->f = (double)out->i;
        return 0;
    }
    if (is(a, "as_int") || is(a, "as_sym_int")) {
        out->kind = PT2_S_INT;
        if (pt2_int(c, node, name, 0, &out->i) < 0)
            return -1;
        out->f = (double)out->i;
        return 0;
    }
    if (is(a, "as_float")) {
        out->kind = PT2_S_FLOAT;
        if (pt2_json_float(a, &out->f) < 0)
            return tg_err("argument '%s': %s", name, tg_errmsg());
        return 0;
    }
    return bad(name, a, "a number");
}

int pt2_dtype_arg(const cJSON *node, const char *name, tg_dtype dflt, tg_dtype *out)
{
    const cJSON *a = pt2_arg(node, name);
    if (!a || is(a, "as_none")) {
        *out = dflt;
        return 0;
    }
    if (!is(a, "as_scalar_type") || !cJSON_IsNumber(a))
        return bad(name, a, "a dtype");
    *out = pt2_dtype((int64_t)a->valuedouble);
    if (*out == TG_DTYPE_NONE)
        return tg_err("argument '%s': unsupported dtype (ScalarType %d)", name, a->valueint);
    return 0;
}

const char *pt2_string(const cJSON *node, const char *name, const char *dflt)
{
    const cJSON *a = pt2_arg(node, name);
    return is(a, "as_string") && cJSON_IsString(a) ? a->valuestring : dflt;
}
