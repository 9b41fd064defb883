/* Reductions over axes, arg reductions, argsort and softmax. */
#include "infer.h"

#include <inttypes.h>

/* Axes to reduce from attribute "axes" (absent: all); duplicates are an error. */
static int read_axes(const tg_node *n, int rank, bool *mask)
{
    const int64_t *v;
    int k;
    if (tg_attr_get_ints(n, "axes", &v, &k))
        return -1;
    for (int i = 0; i < rank; i++)
        mask[i] = k < 0;
    for (int i = 0; i < k; i++) {
        int a;
        if (tg_axis_norm(v[i], rank, &a))
            return -1;
        if (mask[a])
            return tg_err("axis %" PRId64 " appears twice in 'axes'", v[i]);
        mask[a] = true;
    }
    return 0;
}

/* Drop the masked axes, or keep them as 1 with keepdim. */
static tg_shape reduced_shape(const tg_shape *in, const bool *mask, int keepdim)
{
    tg_shape s = { .rank = 0 };
    for (int i = 0; i < in->rank; i++) {
        if (!mask[i])
            s.d[s.rank++] = in->d[i];
        else if (keepdim)
            s.d[s.rank++] = tg_dim_const(1);
    }
    return s;
}

static int reduce_to(tg_graph *g, int node, const tg_value *x, tg_dtype out)
{
    const tg_node *n = tg_infer_node(g, node);
    bool mask[TG_MAX_RANK];
    int keepdim;
    if (read_axes(n, x->shape.rank, mask) || tg_attr_get_flag(n, "keepdim", 0, &keepdim))
        return -1;
    tg_shape s = reduced_shape(&x->shape, mask, keepdim);
    return tg_infer_set(g, node, out, &s);
}

int tg_infer_reduce(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x)
        return -1;
    if (n->op == TG_OP_REDUCE_MEAN || n->op == TG_OP_REDUCE_VAR) {
        if (tg_check_float(x, 0))
            return -1;
    } else if (tg_check_numeric(x, 0)) {
        return -1;
    }
    if (n->op == TG_OP_REDUCE_VAR) {
        int64_t c;
        if (tg_attr_get_int(n, "correction", 1, &c))
            return -1;
        if (c < 0)
            return tg_err("attribute 'correction' is %" PRId64 ", must not be negative", c);
    }
    return reduce_to(g, node, x, x->dtype);
}

int tg_infer_reduce_bool(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    return x ? reduce_to(g, node, x, TG_BOOL) : -1;
}

int tg_infer_arg_reduce(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    bool mask[TG_MAX_RANK];
    int keepdim, rank;
    if (!x || tg_check_numeric(x, 0) || tg_attr_get_flag(n, "keepdim", 0, &keepdim))
        return -1;
    rank = x->shape.rank;
    /* absent axis: the index into the flattened input, as torch.argmax(x) */
    for (int i = 0; i < rank; i++)
        mask[i] = true;
    if (tg_node_attr(n, "axis")) {
        int64_t a;
        int ax;
        if (tg_attr_get_int(n, "axis", 0, &a) || tg_axis_norm(a, rank, &ax))
            return -1;
        for (int i = 0; i < rank; i++)
            mask[i] = i == ax;
    }
    tg_shape s = reduced_shape(&x->shape, mask, keepdim);
    return tg_infer_set(g, node, TG_I64, &s);
}

int tg_infer_cumsum(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a;
    int ax, flag;
    if (!x || tg_check_numeric(x, 0) || tg_attr_req_int(n, "axis", &a) ||
        tg_axis_norm(a, x->shape.rank ? x->shape.rank : 1, &ax) ||
        tg_attr_get_flag(n, "exclusive", 0, &flag) || tg_attr_get_flag(n, "reverse", 0, &flag))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}

int tg_infer_argsort(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a;
    int ax, flag;
    if (!x || tg_attr_get_int(n, "axis", -1, &a) ||
        tg_axis_norm(a, x->shape.rank ? x->shape.rank : 1, &ax) ||
        tg_attr_get_flag(n, "descending", 0, &flag))
        return -1;
    return tg_infer_set(g, node, TG_I64, &x->shape);
}

int tg_infer_softmax(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a;
    int ax;
    if (!x || tg_check_float(x, 0) ||
        tg_attr_get_int(tg_infer_node(g, node), "axis", -1, &a))
        return -1;
    /* a scalar has one axis to normalize over, as in torch */
    if (tg_axis_norm(a, x->shape.rank ? x->shape.rank : 1, &ax))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}
