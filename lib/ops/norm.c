/* Normalization: layer_norm, group_norm, batch_norm (inference form). The
 * output always has the input's dtype and shape; the work is checking the
 * parameters' shapes. */
#include "infer.h"

#include <inttypes.h>

static int check_eps(const tg_node *n)
{
    double eps;
    if (tg_attr_get_float(n, "eps", 1e-5, &eps))
        return -1;
    if (!(eps >= 0))
        return tg_err("attribute 'eps' is %g, must not be negative", eps);
    return 0;
}

/* Parameter inputs first..last (omitted ones skipped) have x's dtype and shape want. */
static int check_params(tg_graph *g, int node, const tg_value *x, int first, int last,
                        const tg_shape *want)
{
    for (int i = first; i <= last; i++) {
        const tg_value *p = tg_infer_opt(g, node, i);
        if (p && (tg_check_same_dtype(p, i, x, 0) || tg_check_shape(g, p, i, want)))
            return -1;
    }
    return 0;
}

/* The input x [N, C, ...] and the shape [C] of per-channel parameters. */
static const tg_value *channel_input(tg_graph *g, int node, tg_shape *chan)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x || tg_check_float(x, 0) || tg_check_rank(x, 0, 2, TG_MAX_RANK))
        return NULL;
    chan->rank = 1;
    chan->d[0] = x->shape.d[1];
    return x;
}

int tg_infer_layer_norm(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a;
    int ax;
    if (!x || tg_check_float(x, 0) || tg_check_rank(x, 0, 1, TG_MAX_RANK) ||
        tg_attr_get_int(n, "axis", -1, &a) || tg_axis_norm(a, x->shape.rank, &ax) ||
        check_eps(n))
        return -1;
    tg_shape norm = { .rank = x->shape.rank - ax };
    for (int i = 0; i < norm.rank; i++)
        norm.d[i] = x->shape.d[ax + i];
    if (check_params(g, node, x, 1, 2, &norm))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}

int tg_infer_group_norm(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    tg_shape chan;
    const tg_value *x = channel_input(g, node, &chan);
    int64_t groups;
    tg_dim q;
    if (!x || tg_attr_req_int(n, "groups", &groups) || check_eps(n))
        return -1;
    if (groups < 1)
        return tg_err("attribute 'groups' is %" PRId64 ", must be positive", groups);
    if (tg_dim_div(chan.d[0], tg_dim_const(groups), &q)) {
        char s[TG_INFER_STR];
        return tg_err("groups %" PRId64 " does not divide channels %s", groups,
                      tg_infer_dim_str(g, chan.d[0], s));
    }
    if (check_params(g, node, x, 1, 2, &chan))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}

int tg_infer_batch_norm(tg_graph *g, int node)
{
    tg_shape chan;
    const tg_value *x = channel_input(g, node, &chan);
    if (!x || !tg_infer_in(g, node, 1) || !tg_infer_in(g, node, 2) ||
        check_eps(tg_infer_node(g, node)) || check_params(g, node, x, 1, 4, &chan))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}
