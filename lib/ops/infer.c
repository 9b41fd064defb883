/* Helpers shared by the inference functions: inputs, checks, attributes and
 * the little symbolic arithmetic that conv, pool, slice and arange need. */
#include "infer.h"

#include <inttypes.h>
#include <string.h>

const tg_value *tg_infer_opt(tg_graph *g, int node, int i)
{
    const tg_node *n = &g->nodes[node];
    if (i >= n->nin || n->in[i] < 0 || n->in[i] >= g->nvalue)
        return NULL;
    return &g->values[n->in[i]];
}

const tg_value *tg_infer_in(tg_graph *g, int node, int i)
{
    const tg_value *v = tg_infer_opt(g, node, i);
    if (!v)
        tg_err("input %d is missing", i);
    return v;
}

int tg_infer_set(tg_graph *g, int node, tg_dtype dt, const tg_shape *s)
{
    const tg_node *n = &g->nodes[node];
    if (n->nout < 1)
        return tg_err("node has no output value");
    tg_value *v = &g->values[n->out[0]];
    v->dtype = dt;
    /* dims past the rank zeroed, so equal shapes are equal bytes */
    memset(&v->shape, 0, sizeof v->shape);
    v->shape.rank = s->rank;
    for (int i = 0; i < s->rank; i++)
        v->shape.d[i] = s->d[i];
    return 0;
}

int tg_check_dtype(const tg_value *v, int i, tg_dtype want)
{
    if (v->dtype != want)
        return tg_err("input %d has dtype %s, expected %s", i, tg_dtype_name(v->dtype),
                      tg_dtype_name(want));
    return 0;
}

int tg_check_float(const tg_value *v, int i)
{
    if (!tg_dtype_is_float(v->dtype))
        return tg_err("input %d has dtype %s, expected a floating-point dtype", i,
                      tg_dtype_name(v->dtype));
    return 0;
}

int tg_check_numeric(const tg_value *v, int i)
{
    if (v->dtype == TG_BOOL)
        return tg_err("input %d has dtype bool, expected a numeric dtype", i);
    return 0;
}

int tg_check_int(const tg_value *v, int i)
{
    if (!tg_dtype_is_int(v->dtype))
        return tg_err("input %d has dtype %s, expected an integer dtype", i,
                      tg_dtype_name(v->dtype));
    return 0;
}

int tg_check_same_dtype(const tg_value *v, int i, const tg_value *ref, int iref)
{
    if (v->dtype != ref->dtype)
        return tg_err("input %d has dtype %s, expected %s like input %d", i,
                      tg_dtype_name(v->dtype), tg_dtype_name(ref->dtype), iref);
    return 0;
}

int tg_check_index(const tg_value *v, int i)
{
    if (v->dtype != TG_I64 && v->dtype != TG_I32)
        return tg_err("input %d has dtype %s, expected i64 or i32", i,
                      tg_dtype_name(v->dtype));
    return 0;
}

int tg_check_rank(const tg_value *v, int i, int min, int max)
{
    int r = v->shape.rank;
    if (r >= min && r <= max)
        return 0;
    if (min == max)
        return tg_err("input %d has rank %d, expected %d", i, r, min);
    if (max >= TG_MAX_RANK)
        return tg_err("input %d has rank %d, expected at least %d", i, r, min);
    return tg_err("input %d has rank %d, expected %d to %d", i, r, min, max);
}

int tg_check_dim_eq(const tg_graph *g, tg_dim a, tg_dim b, const char *what)
{
    char sa[TG_INFER_STR], sb[TG_INFER_STR];
    if (tg_dim_eq(a, b))
        return 0;
    return tg_err("%s: %s != %s", what, tg_infer_dim_str(g, a, sa), tg_infer_dim_str(g, b, sb));
}

int tg_check_shape(const tg_graph *g, const tg_value *v, int i, const tg_shape *want)
{
    char sa[TG_INFER_STR], sb[TG_INFER_STR];
    if (tg_shape_eq(&v->shape, want))
        return 0;
    return tg_err("input %d has shape %s, expected %s", i,
                  tg_infer_shape_str(g, &v->shape, sa), tg_infer_shape_str(g, want, sb));
}

int tg_axis_norm(int64_t axis, int rank, int *out)
{
    if (axis < -(int64_t)rank || axis >= rank)
        return tg_err("axis %" PRId64 " out of range for rank %d", axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* --- attributes --- */

int tg_check_small(int64_t v, const char *name)
{
    if (v > INT32_MAX || v < -INT32_MAX)
        return tg_err("attribute '%s' value %" PRId64 " is out of range", name, v);
    return 0;
}

static const char *attr_kind_name(tg_attr_kind k)
{
    switch (k) {
    case TG_ATTR_INT: return "int";
    case TG_ATTR_FLOAT: return "float";
    case TG_ATTR_STRING: return "string";
    case TG_ATTR_INTS: return "ints";
    case TG_ATTR_FLOATS: return "floats";
    case TG_ATTR_DIMS: return "dims";
    case TG_ATTR_DTYPE: return "dtype";
    case TG_ATTR_INPUT: return "a run-time input";
    case TG_ATTR_GRAPH: return "a graph";
    }
    return "unknown";
}

static int attr_wrong_kind(const tg_attr *a, const char *want)
{
    return tg_err("attribute '%s' is %s, expected %s", a->name, attr_kind_name(a->kind), want);
}

int tg_attr_get_int(const tg_node *n, const char *name, int64_t dflt, int64_t *out)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a) {
        *out = dflt;
        return 0;
    }
    if (a->kind != TG_ATTR_INT)
        return attr_wrong_kind(a, "int");
    *out = a->u.i;
    return 0;
}

int tg_attr_req_int(const tg_node *n, const char *name, int64_t *out)
{
    if (!tg_node_attr(n, name))
        return tg_err("attribute '%s' is required", name);
    return tg_attr_get_int(n, name, 0, out);
}

int tg_attr_get_flag(const tg_node *n, const char *name, int dflt, int *out)
{
    int64_t v = dflt;
    if (tg_attr_get_int(n, name, dflt, &v))
        return -1;
    if (v != 0 && v != 1)
        return tg_err("attribute '%s' is %" PRId64 ", expected 0 or 1", name, v);
    *out = (int)v;
    return 0;
}

int tg_attr_get_float(const tg_node *n, const char *name, double dflt, double *out)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a)
        *out = dflt;
    else if (a->kind == TG_ATTR_FLOAT)
        *out = a->u.f;
    else if (a->kind == TG_ATTR_INT)
        *out = (double)a->u.i;
    else
        return attr_wrong_kind(a, "float");
    return 0;
}

int tg_attr_get_string(const tg_node *n, const char *name, const char *dflt, const char **out)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a) {
        *out = dflt;
        return 0;
    }
    if (a->kind != TG_ATTR_STRING)
        return attr_wrong_kind(a, "string");
    *out = a->u.s;
    return 0;
}

int tg_attr_get_dtype(const tg_node *n, const char *name, tg_dtype dflt, tg_dtype *out)
{
    const tg_attr *a = tg_node_attr(n, name);
    tg_dtype t;
    if (!a) {
        *out = dflt;
        return 0;
    }
    if (a->kind == TG_ATTR_DTYPE)
        t = (tg_dtype)a->u.i;
    else if (a->kind == TG_ATTR_STRING)
        t = tg_dtype_from_name(a->u.s);
    else
        return attr_wrong_kind(a, "dtype");
    if (t <= TG_DTYPE_NONE || t >= TG_DTYPE_COUNT)
        return tg_err("attribute '%s' is not a known dtype", name);
    *out = t;
    return 0;
}

int tg_attr_get_ints(const tg_node *n, const char *name, const int64_t **v, int *count)
{
    const tg_attr *a = tg_node_attr(n, name);
    *v = NULL;
    *count = -1;
    if (!a)
        return 0;
    if (a->kind != TG_ATTR_INTS)
        return attr_wrong_kind(a, "ints");
    *v = a->u.ints;
    *count = a->n;
    return 0;
}

int tg_attr_per_axis(const tg_node *n, const char *name, int count, int64_t dflt, int64_t *out)
{
    const int64_t *v;
    int k;
    if (tg_attr_get_ints(n, name, &v, &k))
        return -1;
    if (k != -1 && k != 1 && k != count)
        return tg_err("attribute '%s' has %d values, expected 1 or %d", name, k, count);
    for (int i = 0; i < count; i++) {
        out[i] = k == -1 ? dflt : v[k == 1 ? 0 : i];
        if (tg_check_small(out[i], name))
            return -1;
    }
    return 0;
}

int tg_attr_dim_list(const tg_node *n, const char *name, int max, tg_dim *out, int *count)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a)
        return tg_err("attribute '%s' is required", name);
    if (a->kind != TG_ATTR_DIMS && a->kind != TG_ATTR_INTS)
        return attr_wrong_kind(a, "dims");
    if (a->n > max)
        return tg_err("attribute '%s' has %d values, at most %d allowed", name, a->n, max);
    for (int i = 0; i < a->n; i++)
        out[i] = a->kind == TG_ATTR_DIMS ? a->u.dims[i] : tg_dim_const(a->u.ints[i]);
    *count = a->n;
    return 0;
}

int tg_attr_get_dim(const tg_node *n, const char *name, const tg_dim *dflt, tg_dim *out)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a) {
        if (!dflt)
            return tg_err("attribute '%s' is required", name);
        *out = *dflt;
        return 0;
    }
    if (a->kind == TG_ATTR_INT) {
        *out = tg_dim_const(a->u.i);
        return 0;
    }
    if (a->kind != TG_ATTR_DIMS && a->kind != TG_ATTR_INTS)
        return attr_wrong_kind(a, "a dim");
    if (a->n != 1)
        return tg_err("attribute '%s' has %d values, expected 1", name, a->n);
    *out = a->kind == TG_ATTR_DIMS ? a->u.dims[0] : tg_dim_const(a->u.ints[0]);
    return 0;
}

/* --- symbolic arithmetic --- */

/* The constant term of a (0 when none): the term whose powers are all zero. */
static int64_t dim_const_term(tg_dim a)
{
    static const uint8_t zero[TG_MAX_SYMS];
    for (int i = 0; i < a.nterms; i++)
        if (!memcmp(a.t[i].pow, zero, sizeof zero))
            return a.t[i].coef;
    return 0;
}

static int64_t floordiv64(int64_t a, int64_t b)
{
    int64_t q = a / b;
    return (a % b != 0 && (a < 0) != (b < 0)) ? q - 1 : q;
}

int tg_dim_floordiv(tg_dim a, int64_t b, tg_dim *out)
{
    if (b <= 0)
        return tg_err("division of a dim by %" PRId64, b);
    int64_t c = dim_const_term(a);
    tg_dim rest;
    if (tg_dim_sub(a, tg_dim_const(c), &rest))
        return -1;
    /* Dividing every coefficient keeps the canonical order and leaves no zeros. */
    for (int i = 0; i < rest.nterms; i++) {
        if (rest.t[i].coef % b)
            return tg_err("the symbolic part is not a multiple of %" PRId64
                          ", so the size has no exact expression", b);
        rest.t[i].coef /= b;
    }
    return tg_dim_add(rest, tg_dim_const(floordiv64(c, b)), out);
}

int tg_dim_ceildiv(tg_dim a, int64_t b, tg_dim *out)
{
    tg_dim t;
    if (b <= 0)
        return tg_err("division of a dim by %" PRId64, b);
    if (tg_dim_add(a, tg_dim_const(b - 1), &t))
        return -1;
    return tg_dim_floordiv(t, b, out);
}

int tg_dim_affine(tg_dim a, int64_t k, int64_t c, tg_dim *out)
{
    tg_dim t;
    if (tg_dim_mul(a, tg_dim_const(k), &t))
        return -1;
    return tg_dim_add(t, tg_dim_const(c), out);
}

int tg_dim_check_nonneg(tg_dim d, const char *what)
{
    int64_t v;
    if (tg_dim_is_const(d, &v) && v < 0)
        return tg_err("%s is %" PRId64 ", must not be negative", what, v);
    return 0;
}

const char *tg_infer_shape_str(const tg_graph *g, const tg_shape *s, char *buf)
{
    tg_shape_format(s, g->sym, buf, TG_INFER_STR);
    return buf;
}

const char *tg_infer_dim_str(const tg_graph *g, tg_dim d, char *buf)
{
    tg_dim_format(d, g->sym, buf, TG_INFER_STR);
    return buf;
}
