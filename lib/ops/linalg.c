/* Linear algebra and convolution: matmul, linear, linear_packed, linear_24, conv,
 * conv_nhwc, sdpa. */
#include "infer.h"

#include <inttypes.h>

/* Dims [from, to) of s as a shape. */
static tg_shape sub_shape(const tg_shape *s, int from, int to)
{
    tg_shape r = { .rank = to > from ? to - from : 0 };
    for (int i = 0; i < r.rank; i++)
        r.d[i] = s->d[from + i];
    return r;
}

static int push_dim(tg_shape *s, tg_dim d)
{
    if (s->rank >= TG_MAX_RANK)
        return tg_err("result has more than %d dims", TG_MAX_RANK);
    s->d[s->rank++] = d;
    return 0;
}

/* NumPy matmul: a 1-D operand gains a dim of 1 (front for a, back for b) that the
 * result then drops; the batch dims in front of the last two broadcast. */
int tg_infer_matmul(tg_graph *g, int node)
{
    const tg_value *a = tg_infer_in(g, node, 0), *b = tg_infer_in(g, node, 1);
    if (!a || !b || tg_check_numeric(a, 0) || tg_check_same_dtype(b, 1, a, 0) ||
        tg_check_rank(a, 0, 1, TG_MAX_RANK) || tg_check_rank(b, 1, 1, TG_MAX_RANK))
        return -1;
    const tg_shape *sa = &a->shape, *sb = &b->shape;
    tg_dim ka = sa->d[sa->rank - 1];
    tg_dim kb = sb->rank == 1 ? sb->d[0] : sb->d[sb->rank - 2];
    if (tg_check_dim_eq(g, ka, kb, "matmul inner dims differ"))
        return -1;
    tg_shape ba = sub_shape(sa, 0, sa->rank - 2), bb = sub_shape(sb, 0, sb->rank - 2), s;
    if (tg_shape_broadcast(g, &ba, &bb, &s))
        return -1;
    if ((sa->rank >= 2 && push_dim(&s, sa->d[sa->rank - 2])) ||
        (sb->rank >= 2 && push_dim(&s, sb->d[sb->rank - 1])))
        return -1;
    return tg_infer_set(g, node, a->dtype, &s);
}

/* A linear's weight has x's dtype, or is bf16 on a float32 x: then the
 * linear computes in bf16 (x rounded to bf16, products summed in float32, a
 * float32 result), as tcompile --dtype bf16 makes it. */
static int check_weight_dtype(const tg_value *w, const tg_value *x)
{
    if (w->dtype == TG_BF16 && x->dtype == TG_F32)
        return 0;
    return tg_check_same_dtype(w, 1, x, 0);
}

int tg_infer_linear(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    const tg_value *b = tg_infer_opt(g, node, 2);
    if (!x || !w || tg_check_numeric(x, 0) || check_weight_dtype(w, x) ||
        tg_check_rank(x, 0, 1, TG_MAX_RANK) || tg_check_rank(w, 1, 2, 2) ||
        tg_check_dim_eq(g, x->shape.d[x->shape.rank - 1], w->shape.d[1],
                        "input features differ from weight [N, K]'s K"))
        return -1;
    tg_shape bs = { .rank = 1, .d = { w->shape.d[0] } };
    if (b && (tg_check_same_dtype(b, 2, x, 0) || tg_check_shape(g, b, 2, &bs)))
        return -1;
    tg_shape s = x->shape;
    s.d[s.rank - 1] = w->shape.d[0];
    return tg_infer_set(g, node, x->dtype, &s);
}

/* The weight of a linear, packed by a backend's lowering in panels of P output
 * columns, P its last dim: [ceil(N/P), K, P], zero past N. P is the backend's
 * choice (the CPU's GEMM reads 16), so the IR only checks the layout. */
int tg_infer_linear_packed(tg_graph *g, int node)
{
    const tg_node *nd = &g->nodes[node];
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    const tg_value *b = tg_infer_opt(g, node, 2);
    int64_t n = tg_node_int(nd, "n", 0);
    if (!x || !w || check_weight_dtype(w, x) || tg_check_rank(x, 0, 1, TG_MAX_RANK) ||
        tg_check_rank(w, 1, 3, 3))
        return -1;
    if (x->dtype != TG_F32)
        return tg_err("linear_packed takes float32, not %s", tg_dtype_name(x->dtype));
    if (n <= 0 || n > INT32_MAX)
        return tg_err("attribute n (output features) must be in [1, %d]", INT32_MAX);
    int64_t p;
    if (!tg_dim_is_const(w->shape.d[2], &p) || p <= 0 || p > INT32_MAX)
        return tg_err("input 1 (weight): the panel width (last dim) must be a constant in "
                      "[1, %d]", INT32_MAX);
    tg_shape ws = {.rank = 3, .d = {tg_dim_const((n + p - 1) / p),
                                    x->shape.d[x->shape.rank - 1], tg_dim_const(p)}};
    int64_t K;
    if (w->dtype == TG_BF16) {      /* k in pairs, whole AMX tiles: K rounded up to 32 */
        if (!tg_dim_is_const(ws.d[1], &K))
            return tg_err("linear_packed with a bf16 weight needs a constant K");
        ws.d[1] = tg_dim_const((K + 31) / 32 * 32);
    }
    tg_shape bs = {.rank = 1, .d = {tg_dim_const(n)}};
    if (tg_check_shape(g, w, 1, &ws) || (b && (tg_check_same_dtype(b, 2, x, 0) ||
                                               tg_check_shape(g, b, 2, &bs))))
        return -1;
    tg_shape s = x->shape;
    s.d[s.rank - 1] = tg_dim_const(n);
    return tg_infer_set(g, node, x->dtype, &s);
}

/* The linear layer on a 2:4 sparse weight, compressed: values [N, K/2] and
 * 2-bit indices meta [N, ceil(K/8)] (tgraph-format(5)); float32. */
int tg_infer_linear_24(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0), *v = tg_infer_in(g, node, 1);
    const tg_value *m = tg_infer_in(g, node, 2), *b = tg_infer_opt(g, node, 3);
    if (!x || !v || !m || tg_check_rank(x, 0, 1, TG_MAX_RANK) || tg_check_rank(v, 1, 2, 2) ||
        tg_check_rank(m, 2, 2, 2))
        return -1;
    if (x->dtype != TG_F32 || v->dtype != TG_F32 || m->dtype != TG_U8)
        return tg_err("linear_24 takes x and values float32 and meta uint8, not %s, %s, %s",
                      tg_dtype_name(x->dtype), tg_dtype_name(v->dtype),
                      tg_dtype_name(m->dtype));
    int64_t K;
    if (!tg_dim_is_const(x->shape.d[x->shape.rank - 1], &K) || K % 4 != 0)
        return tg_err("linear_24's input features must be a constant multiple of 4");
    tg_shape vs = {.rank = 2, .d = {v->shape.d[0], tg_dim_const(K / 2)}};
    tg_shape ms = {.rank = 2, .d = {v->shape.d[0], tg_dim_const((K / 4 + 1) / 2)}};
    tg_shape bs = {.rank = 1, .d = {v->shape.d[0]}};
    if (tg_check_shape(g, v, 1, &vs) || tg_check_shape(g, m, 2, &ms) ||
        (b && (tg_check_same_dtype(b, 3, x, 0) || tg_check_shape(g, b, 3, &bs))))
        return -1;
    tg_shape s = x->shape;
    s.d[s.rank - 1] = v->shape.d[0];
    return tg_infer_set(g, node, x->dtype, &s);
}

/* --- conv --- */

typedef struct {
    int nsp, groups, transposed;
    int64_t stride[3], pad[3], dil[3], outpad[3], kernel[3];
} conv_params;

static int read_conv_params(const tg_node *n, const tg_value *w, conv_params *p)
{
    int64_t groups;
    if (tg_attr_get_int(n, "groups", 1, &groups) ||
        tg_attr_get_flag(n, "transposed", 0, &p->transposed) ||
        tg_attr_per_axis(n, "stride", p->nsp, 1, p->stride) ||
        tg_attr_per_axis(n, "padding", p->nsp, 0, p->pad) ||
        tg_attr_per_axis(n, "dilation", p->nsp, 1, p->dil) ||
        tg_attr_per_axis(n, "output_padding", p->nsp, 0, p->outpad))
        return -1;
    if (groups < 1 || groups > INT32_MAX)
        return tg_err("attribute 'groups' is %" PRId64 ", must be positive", groups);
    p->groups = (int)groups;
    for (int i = 0; i < p->nsp; i++) {
        if (p->stride[i] < 1 || p->dil[i] < 1)
            return tg_err("stride and dilation must be positive (spatial axis %d)", i);
        if (p->pad[i] < 0 || p->outpad[i] < 0)
            return tg_err("padding and output_padding must not be negative (spatial axis %d)", i);
        if (p->outpad[i] && !p->transposed)
            return tg_err("attribute 'output_padding' needs transposed=1");
        if (p->outpad[i] >= p->stride[i] && p->outpad[i] >= p->dil[i])
            return tg_err("output_padding %" PRId64 " must be smaller than stride or dilation"
                          " (spatial axis %d)", p->outpad[i], i);
        if (!tg_dim_is_const(w->shape.d[2 + i], &p->kernel[i]) || p->kernel[i] < 1 ||
            p->kernel[i] > INT32_MAX)
            return tg_err("weight kernel size must be a positive constant (spatial axis %d)", i);
    }
    return 0;
}

/* One spatial output size. */
static int conv_out_dim(const conv_params *p, int i, tg_dim in, tg_dim *out)
{
    int64_t span = p->dil[i] * (p->kernel[i] - 1);
    tg_dim t;
    if (p->transposed)   /* (in-1)*s - 2p + d(k-1) + output_padding + 1 */
        return tg_dim_affine(in, p->stride[i],
                             -p->stride[i] - 2 * p->pad[i] + span + p->outpad[i] + 1, out);
    /* floor((in + 2p - d(k-1) - 1) / s) + 1 */
    if (tg_dim_affine(in, 1, 2 * p->pad[i] - span - 1, &t) ||
        tg_dim_floordiv(t, p->stride[i], &t))
        return -1;
    return tg_dim_add(t, tg_dim_const(1), out);
}

int tg_infer_conv(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    const tg_value *b = tg_infer_opt(g, node, 2);
    conv_params p;
    tg_dim cin_w, cout, q;
    char s1[TG_INFER_STR];
    if (!x || !w || tg_check_numeric(x, 0) || tg_check_same_dtype(w, 1, x, 0) ||
        tg_check_rank(x, 0, 3, 5) || tg_check_rank(w, 1, x->shape.rank, x->shape.rank))
        return -1;
    p.nsp = x->shape.rank - 2;
    if (read_conv_params(n, w, &p))
        return -1;
    /* weight [K, C/groups, *k], or transposed [C, K/groups, *k] */
    tg_dim wgroups = tg_dim_const(p.groups);
    if (tg_dim_div(w->shape.d[0], wgroups, &q))
        return tg_err("groups %d does not divide weight dim 0 (%s)", p.groups,
                      tg_infer_dim_str(g, w->shape.d[0], s1));
    if (p.transposed) {
        cin_w = w->shape.d[0];
        if (tg_dim_mul(w->shape.d[1], wgroups, &cout))
            return -1;
    } else {
        cout = w->shape.d[0];
        if (tg_dim_mul(w->shape.d[1], wgroups, &cin_w))
            return -1;
    }
    if (tg_check_dim_eq(g, x->shape.d[1], cin_w, "input channels differ from the weight's"))
        return -1;
    tg_shape bs = { .rank = 1, .d = { cout } };
    if (b && (tg_check_same_dtype(b, 2, x, 0) || tg_check_shape(g, b, 2, &bs)))
        return -1;
    tg_shape s = { .rank = x->shape.rank, .d = { x->shape.d[0], cout } };
    for (int i = 0; i < p.nsp; i++) {
        int64_t v;
        if (conv_out_dim(&p, i, x->shape.d[2 + i], &s.d[2 + i]))
            return tg_err("spatial axis %d of size %s: %s", i,
                          tg_infer_dim_str(g, x->shape.d[2 + i], s1), tg_errmsg());
        if (tg_dim_is_const(s.d[2 + i], &v) && v < 1)
            return tg_err("output size %" PRId64 " along spatial axis %d: input too small"
                          " for the kernel", v, i);
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

/* A 2-D convolution on channels-last x [N, H, W, C], its weight packed by a
 * backend's lowering in panels of P output channels, P its last dim:
 * [ceil(K/P), kh*kw*C/groups, P] (tgraph-ops(7)); the result [N, H', W', K]. */
int tg_infer_conv_nhwc(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    const tg_value *b = tg_infer_opt(g, node, 2);
    conv_params p = {.nsp = 2};
    int64_t k, groups, c, pw;
    if (!x || !w || tg_check_same_dtype(w, 1, x, 0) || tg_check_rank(x, 0, 4, 4) ||
        tg_check_rank(w, 1, 3, 3) || tg_attr_get_int(n, "k", 0, &k) ||
        tg_attr_get_int(n, "groups", 1, &groups) ||
        tg_attr_per_axis(n, "kernel", 2, 0, p.kernel) ||
        tg_attr_per_axis(n, "stride", 2, 1, p.stride) ||
        tg_attr_per_axis(n, "padding", 2, 0, p.pad) ||
        tg_attr_per_axis(n, "dilation", 2, 1, p.dil))
        return -1;
    if (x->dtype != TG_F32)
        return tg_err("conv_nhwc takes float32, not %s", tg_dtype_name(x->dtype));
    if (!tg_node_attr(n, "kernel"))
        return tg_err("attribute 'kernel' is required");
    if (!tg_dim_is_const(x->shape.d[3], &c))
        return tg_err("conv_nhwc needs a constant channel count");
    if (k < 1 || k > INT32_MAX || groups < 1 || c % groups || k % groups)
        return tg_err("attributes k %" PRId64 " and groups %" PRId64 ": k must be positive and"
                      " groups divide k and the %" PRId64 " channels", k, groups, c);
    for (int i = 0; i < 2; i++)
        if (p.kernel[i] < 1 || p.stride[i] < 1 || p.dil[i] < 1 || p.pad[i] < 0)
            return tg_err("kernel, stride and dilation must be positive and padding not"
                          " negative (spatial axis %d)", i);
    if (!tg_dim_is_const(w->shape.d[2], &pw) || pw <= 0 || pw > INT32_MAX)
        return tg_err("input 1 (weight): the panel width (last dim) must be a constant in "
                      "[1, %d]", INT32_MAX);
    tg_shape ws = {.rank = 3, .d = {tg_dim_const((k + pw - 1) / pw),
                                    tg_dim_const(p.kernel[0] * p.kernel[1] * (c / groups)),
                                    tg_dim_const(pw)}};
    tg_shape bs = {.rank = 1, .d = {tg_dim_const(k)}};
    if (tg_check_shape(g, w, 1, &ws) ||
        (b && (tg_check_same_dtype(b, 2, x, 0) || tg_check_shape(g, b, 2, &bs))))
        return -1;
    tg_shape s = {.rank = 4, .d = {x->shape.d[0], x->shape.d[1], x->shape.d[2],
                                   tg_dim_const(k)}};
    for (int i = 0; i < 2; i++) {
        int64_t v;
        char s1[TG_INFER_STR];
        if (conv_out_dim(&p, i, x->shape.d[1 + i], &s.d[1 + i]))
            return tg_err("spatial axis %d of size %s: %s", i,
                          tg_infer_dim_str(g, x->shape.d[1 + i], s1), tg_errmsg());
        if (tg_dim_is_const(s.d[1 + i], &v) && v < 1)
            return tg_err("output size %" PRId64 " along spatial axis %d: input too small"
                          " for the kernel", v, i);
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

/* --- scaled dot-product attention --- */

int tg_infer_sdpa(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *q = tg_infer_in(g, node, 0), *k = tg_infer_in(g, node, 1);
    const tg_value *v = tg_infer_in(g, node, 2), *m = tg_infer_opt(g, node, 3);
    int causal, gqa;
    double scale;
    if (!q || !k || !v || tg_check_float(q, 0) || tg_check_same_dtype(k, 1, q, 0) ||
        tg_check_same_dtype(v, 2, q, 0) || tg_check_rank(q, 0, 3, TG_MAX_RANK))
        return -1;
    int r = q->shape.rank;
    if (tg_check_rank(k, 1, r, r) || tg_check_rank(v, 2, r, r) ||
        tg_attr_get_flag(n, "causal", 0, &causal) || tg_attr_get_flag(n, "gqa", 0, &gqa) ||
        tg_attr_get_float(n, "scale", 0, &scale))
        return -1;
    const tg_dim *qd = q->shape.d, *kd = k->shape.d, *vd = v->shape.d;
    for (int i = 0; i < r - 3; i++)
        if (tg_check_dim_eq(g, qd[i], kd[i], "q and k batch dims differ") ||
            tg_check_dim_eq(g, qd[i], vd[i], "q and v batch dims differ"))
            return -1;
    if (tg_check_dim_eq(g, qd[r - 1], kd[r - 1], "q and k head sizes (E) differ") ||
        tg_check_dim_eq(g, kd[r - 3], vd[r - 3], "k and v head counts differ") ||
        tg_check_dim_eq(g, kd[r - 2], vd[r - 2], "k and v sequence lengths differ"))
        return -1;
    if (!tg_dim_eq(qd[r - 3], kd[r - 3])) {
        tg_dim ratio;
        char s1[TG_INFER_STR], s2[TG_INFER_STR];
        if (!gqa)
            return tg_err("q has %s heads and k %s: set gqa=1 for grouped-query attention",
                          tg_infer_dim_str(g, qd[r - 3], s1), tg_infer_dim_str(g, kd[r - 3], s2));
        if (tg_dim_div(qd[r - 3], kd[r - 3], &ratio))
            return tg_err("grouped-query attention needs q heads (%s) to be a multiple of"
                          " k heads (%s)", tg_infer_dim_str(g, qd[r - 3], s1),
                          tg_infer_dim_str(g, kd[r - 3], s2));
    }
    tg_shape out = q->shape;
    out.d[r - 1] = vd[r - 1];
    if (m) {
        tg_shape scores = q->shape, b;
        char s1[TG_INFER_STR], s2[TG_INFER_STR];
        scores.d[r - 1] = kd[r - 2];
        if (causal)
            return tg_err("a mask and causal=1 together are ambiguous: give one");
        if (m->dtype != TG_BOOL && m->dtype != q->dtype)
            return tg_err("input 3 (mask) has dtype %s, expected bool or %s",
                          tg_dtype_name(m->dtype), tg_dtype_name(q->dtype));
        if (tg_shape_broadcast(g, &m->shape, &scores, &b) || !tg_shape_eq(&b, &scores))
            return tg_err("mask %s does not broadcast to the scores %s",
                          tg_infer_shape_str(g, &m->shape, s1),
                          tg_infer_shape_str(g, &scores, s2));
    }
    return tg_infer_set(g, node, q->dtype, &out);
}
