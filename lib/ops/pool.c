/* Pooling over the spatial dims of NCL or NCHW inputs, or NHWC ones
 * (channels_last=1, 2-D only), sized like PyTorch. */
#include "infer.h"

#include <inttypes.h>

typedef struct {
    int64_t kernel[2], stride[2], pad[2], dil[2];
    int ceil_mode;
} pool_params;

static int read_pool_params(const tg_node *n, int nsp, pool_params *p)
{
    int avg = n->op == TG_OP_AVG_POOL, count_include_pad;
    if (!tg_node_attr(n, "kernel"))
        return tg_err("attribute 'kernel' is required");
    if (tg_attr_per_axis(n, "kernel", nsp, 0, p->kernel) ||
        tg_attr_per_axis(n, "padding", nsp, 0, p->pad) ||
        tg_attr_per_axis(n, "dilation", nsp, 1, p->dil) ||
        tg_attr_get_flag(n, "ceil_mode", 0, &p->ceil_mode))
        return -1;
    /* stride defaults to the kernel, as in torch */
    if (tg_attr_per_axis(n, "stride", nsp, 0, p->stride))
        return -1;
    if (!tg_node_attr(n, "stride"))
        for (int i = 0; i < nsp; i++)
            p->stride[i] = p->kernel[i];
    if (avg && tg_attr_get_flag(n, "count_include_pad", 1, &count_include_pad))
        return -1;
    for (int i = 0; i < nsp; i++) {
        if (p->kernel[i] < 1 || p->stride[i] < 1 || p->dil[i] < 1)
            return tg_err("kernel, stride and dilation must be positive (spatial axis %d)", i);
        if (p->pad[i] < 0 || 2 * p->pad[i] > p->kernel[i])
            return tg_err("padding %" PRId64 " must be between 0 and half the kernel %" PRId64
                          " (spatial axis %d)", p->pad[i], p->kernel[i], i);
    }
    return 0;
}

/* (in + 2p - d(k-1) - 1) / s + 1, rounded down, or up with ceil_mode, where a last
 * window that would start in the right padding is dropped. */
static int pool_out_dim(const pool_params *p, int i, tg_dim in, tg_dim *out)
{
    tg_dim t, start, over;
    int64_t s = p->stride[i], v;
    if (tg_dim_affine(in, 1, 2 * p->pad[i] - p->dil[i] * (p->kernel[i] - 1) - 1, &t) ||
        (p->ceil_mode ? tg_dim_ceildiv(t, s, &t) : tg_dim_floordiv(t, s, &t)) ||
        tg_dim_add(t, tg_dim_const(1), out))
        return -1;
    if (!p->ceil_mode)
        return 0;
    /* last window starts at (out-1)*s; it must start before in + p */
    if (tg_dim_affine(*out, s, -s, &start) || tg_dim_affine(in, 1, p->pad[i], &t) ||
        tg_dim_sub(start, t, &over))
        return -1;
    if (!tg_dim_is_const(over, &v))
        return tg_err("ceil_mode on a symbolic size has no exact expression");
    return v >= 0 ? tg_dim_add(*out, tg_dim_const(-1), out) : 0;
}

/* x [N, C, *sp] with 1 or 2 spatial dims, or [N, H, W, C] with channels_last;
 * *nsp set, and *sp0, the first spatial dim. */
static const tg_value *pool_input(tg_graph *g, int node, int *nsp, int *sp0)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    const tg_node *n = tg_infer_node(g, node);
    int cl;
    if (!x || (n->op == TG_OP_MAX_POOL ? tg_check_numeric(x, 0) : tg_check_float(x, 0)) ||
        tg_attr_get_flag(n, "channels_last", 0, &cl) || tg_check_rank(x, 0, cl ? 4 : 3, 4))
        return NULL;
    *nsp = x->shape.rank - 2;
    *sp0 = cl ? 1 : 2;
    return x;
}

int tg_infer_pool(tg_graph *g, int node)
{
    pool_params p;
    int nsp, sp0;
    const tg_value *x = pool_input(g, node, &nsp, &sp0);
    if (!x || read_pool_params(tg_infer_node(g, node), nsp, &p))
        return -1;
    tg_shape s = x->shape;
    for (int i = 0; i < nsp; i++) {
        int64_t v;
        char s1[TG_INFER_STR];
        if (pool_out_dim(&p, i, x->shape.d[sp0 + i], &s.d[sp0 + i]))
            return tg_err("spatial axis %d of size %s: %s", i,
                          tg_infer_dim_str(g, x->shape.d[sp0 + i], s1), tg_errmsg());
        if (tg_dim_is_const(s.d[sp0 + i], &v) && v < 1)
            return tg_err("output size %" PRId64 " along spatial axis %d: input too small"
                          " for the kernel", v, i);
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_adaptive_pool(tg_graph *g, int node)
{
    int nsp, sp0;
    int64_t size[2];
    const tg_value *x = pool_input(g, node, &nsp, &sp0);
    const tg_node *n = tg_infer_node(g, node);
    if (!x)
        return -1;
    if (!tg_node_attr(n, "output_size"))
        return tg_err("attribute 'output_size' is required");
    if (tg_attr_per_axis(n, "output_size", nsp, 0, size))
        return -1;
    tg_shape s = x->shape;
    for (int i = 0; i < nsp; i++) {
        if (size[i] < 1)
            return tg_err("output_size %" PRId64 " must be positive (spatial axis %d)",
                          size[i], i);
        s.d[sp0 + i] = tg_dim_const(size[i]);
    }
    return tg_infer_set(g, node, x->dtype, &s);
}
