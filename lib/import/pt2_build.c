/* Building blocks of the operator handlers: adding nodes named after the torch
 * node they come from, constants, casts, and PyTorch's type promotion. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

/* "<prefix><out0>/<what>", made unique with a counter when needed. */
static void inner_name(const pt2_ctx *c, const char *what, char *buf, size_t n)
{
    const char *p = c->prefix ? c->prefix : "";
    snprintf(buf, n, "%s%s/%s", p, c->out0, what);
    for (int k = 2; tg_graph_find_value(c->g, buf) >= 0 || tg_graph_find_node(c->g, buf) >= 0;
         k++)
        snprintf(buf, n, "%s%s/%s_%d", p, c->out0, what, k);
}

void pt2_op_name(const cJSON *node, char *buf, size_t n)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, "target");
    const char *s = cJSON_IsString(t) ? t->valuestring : "";
    if (!strncmp(s, "torch.ops.aten.", 15))
        s += 15;
    const char *dot = strrchr(s, '.');
    snprintf(buf, n, "%.*s", dot ? (int)(dot - s) : (int)strlen(s), s);
    size_t l = strlen(buf);
    if (l > 1 && buf[l - 1] == '_' && buf[l - 2] != '_')
        buf[l - 1] = 0;
}

int pt2_emit_named(pt2_ctx *c, const char *name, tg_op op, int nin, const int *in, int nattr,
                   const tg_attr *attr)
{
    char buf[512];
    if (!name) {
        inner_name(c, tg_op_name(op), buf, sizeof buf);
        name = buf;
    } else if (c->prefix) {     /* a graph inlined into another (pt2_flow.c) */
        snprintf(buf, sizeof buf, "%s%s", c->prefix, name);
        name = buf;
    }
    int v = tg_graph_add_node(c->g, op, name, nin, in, nattr, attr);
    if (v >= 0) {
        tg_graph_set_source(c->g, v, c->source);
        c->nemit++;
    }
    return v;
}

int pt2_emit(pt2_ctx *c, bool final, tg_op op, int nin, const int *in, int nattr,
             const tg_attr *attr)
{
    return pt2_emit_named(c, final ? c->out0 : NULL, op, nin, in, nattr, attr);
}

int pt2_unary(pt2_ctx *c, bool final, tg_op op, int x)
{
    return x < 0 ? -1 : pt2_emit(c, final, op, 1, &x, 0, NULL);
}

int pt2_cast(pt2_ctx *c, bool final, int v, tg_dtype dt)
{
    if (v < 0)
        return -1;
    if (pt2_dt(c, v) == dt)
        return v;
    tg_attr a = tg_attr_dtype("dtype", dt);
    return pt2_emit(c, final, TG_OP_CAST, 1, &v, 1, &a);
}

int pt2_binary(pt2_ctx *c, bool final, tg_op op, int a, int b)
{
    if (a < 0 || b < 0)
        return -1;
    pt2_promo p = {0};
    pt2_promo_tensor(&p, pt2_dt(c, a), pt2_rank(c, a));
    pt2_promo_tensor(&p, pt2_dt(c, b), pt2_rank(c, b));
    tg_dtype dt = pt2_promo_result(&p);
    int in[2] = {pt2_cast(c, false, a, dt), pt2_cast(c, false, b, dt)};
    if (in[0] < 0 || in[1] < 0)
        return -1;
    return pt2_emit(c, final, op, 2, in, 0, NULL);
}

int pt2_const(pt2_ctx *c, pt2_scalar s, tg_dtype dt)
{
    char name[512];
    inner_name(c, "const", name, sizeof name);
    size_t es = tg_dtype_size(dt);
    void *data = calloc(1, es ? es : 1);
    if (!data)
        return tg_err("out of memory");
    if (dt == TG_I64 && s.kind != PT2_S_FLOAT)
        memcpy(data, &s.i, sizeof s.i);      /* exact beyond 2^53 */
    else
        tg_store_f64(dt, data, 0, s.kind == PT2_S_FLOAT ? s.f : (double)s.i);
    tg_shape sh = {0};
    return tg_graph_add_const(c->g, name, dt, &sh, data, es);
}

int pt2_const_tensor(pt2_ctx *c, tg_dtype dt, const tg_shape *s, void *data, size_t nbytes)
{
    char name[512];
    inner_name(c, "const", name, sizeof name);
    return tg_graph_add_const(c->g, name, dt, s, data, nbytes);
}

int pt2_axis(int64_t axis, int rank, int *out)
{
    int64_t n = rank ? rank : 1;   /* a rank-0 tensor takes dim 0 and -1 */
    if (axis < -n || axis >= n)
        return tg_err("dimension %lld out of range for rank %d", (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + n : axis);
    return 0;
}

int pt2_reshape(pt2_ctx *c, bool final, int x, int rank, const tg_dim *shape)
{
    if (x < 0)
        return -1;
    tg_shape want = {.rank = rank};
    memcpy(want.d, shape, (size_t)rank * sizeof *shape);
    if (tg_shape_eq(&pt2_val(c, x)->shape, &want))
        return x;
    tg_attr a = tg_attr_dims("shape", rank, shape);
    return pt2_emit(c, final, TG_OP_RESHAPE, 1, &x, 1, &a);
}

int pt2_permute(pt2_ctx *c, bool final, int x, const int64_t *perm)
{
    if (x < 0)
        return -1;
    int r = pt2_rank(c, x);
    bool ident = true;
    for (int i = 0; i < r; i++)
        ident &= perm[i] == i;
    if (ident)
        return x;
    tg_attr a = tg_attr_ints("perm", r, perm);
    return pt2_emit(c, final, TG_OP_PERMUTE, 1, &x, 1, &a);
}

int pt2_slice(pt2_ctx *c, const char *name, int x, int axis, tg_dim start, tg_dim end,
              int64_t step)
{
    if (x < 0)
        return -1;
    tg_dim size = pt2_val(c, x)->shape.d[axis];
    int64_t s, e, n;
    /* clamp constant bounds to the axis, as Python slicing does */
    if (tg_dim_is_const(size, &n)) {
        if (tg_dim_is_const(end, &e) && e > n)
            end = size;
        if (tg_dim_is_const(start, &s) && s > n)
            start = size;
    }
    if (tg_dim_is_const(start, &s) && s == 0 && tg_dim_eq(end, size) && step == 1)
        return x;
    tg_attr a[4] = {tg_attr_int("axis", axis), tg_attr_dims("start", 1, &start),
                    tg_attr_dims("end", 1, &end), tg_attr_int("step", step)};
    return pt2_emit_named(c, name, TG_OP_SLICE, 1, &x, 4, a);
}

/* ---- type promotion ---- */

static int category(tg_dtype t)
{
    return t == TG_DTYPE_NONE ? -1 : t == TG_BOOL ? 0 : tg_dtype_is_float(t) ? 2 : 1;
}

/* u8 only: torch refuses to promote u16/u32/u64 with any other integer type,
 * so an exported graph never mixes them. */
static bool is_unsigned(tg_dtype t) { return t == TG_U8; }

/* torch.promote_types over the dtypes tgraph has. */
static tg_dtype promote_types(tg_dtype a, tg_dtype b)
{
    if (a == TG_DTYPE_NONE || a == b)
        return b;
    if (b == TG_DTYPE_NONE)
        return a;
    int ca = category(a), cb = category(b);
    if (ca != cb)
        return ca > cb ? a : b;
    size_t sa = tg_dtype_size(a), sb = tg_dtype_size(b);
    if (ca == 2) {
        if (sa == sb || sa == 1 || sb == 1)   /* f16 with bf16, fp8 with anything */
            return sa == 8 || sb == 8 ? TG_F64 : TG_F32;
        return sa > sb ? a : b;
    }
    if (is_unsigned(a) != is_unsigned(b)) {   /* u8 with a signed type */
        tg_dtype s = is_unsigned(a) ? b : a;
        return tg_dtype_size(s) > 1 ? s : TG_I16;
    }
    return sa > sb ? a : b;
}

void pt2_promo_tensor(pt2_promo *p, tg_dtype dt, int rank)
{
    tg_dtype *slot = rank > 0 ? &p->dim_t : &p->zero_t;
    *slot = promote_types(*slot, dt);
    p->n++;
}

void pt2_promo_scalar(pt2_promo *p, const pt2_scalar *s)
{
    /* Python floats take the default dtype, float32 */
    tg_dtype dt = s->kind == PT2_S_BOOL ? TG_BOOL : s->kind == PT2_S_INT ? TG_I64 : TG_F32;
    p->scalar_t = promote_types(p->scalar_t, dt);
    p->n++;
}

/* A lower-priority operand changes the type only from a lower category. */
static tg_dtype combine(tg_dtype higher, tg_dtype lower)
{
    if (category(higher) == 2)
        return higher;
    if (higher == TG_BOOL || category(lower) == 2)
        return promote_types(higher, lower);
    return higher != TG_DTYPE_NONE ? higher : lower;
}

tg_dtype pt2_promo_result(const pt2_promo *p)
{
    return combine(p->dim_t, combine(p->zero_t, p->scalar_t));
}

int pt2_operand(pt2_ctx *c, const cJSON *node, const char *name, tg_dtype dt, int *v)
{
    const cJSON *a = pt2_arg(node, name);
    if (a && strcmp(pt2_key(a), "as_tensor") == 0) {
        if (pt2_tensor(c, node, name, v) < 0)
            return -1;
        *v = pt2_cast(c, false, *v, dt);
        return *v < 0 ? -1 : 0;
    }
    pt2_scalar s;
    if (pt2_scalar_arg(c, node, name, &s) < 0)
        return -1;
    *v = pt2_const(c, s, dt);
    return *v < 0 ? -1 : 0;
}
