/* Ops whose output's shape depends on their inputs' values (ops.def's DATA
 * flag): inference gives the dim the data sets as a fresh data symbol whose
 * range is the most the op can make, so a graph of symbolic or static input
 * shapes stays one graph (as torch.export's unbacked symbols). The node binds
 * it when it runs; on a rebuild over concrete shapes (exec_dynamic.c) the
 * symbol's maximum is what the interpreter allocates. */
#include "infer.h"

/* Largest value of a * b, saturated. */
static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    return __builtin_mul_overflow(a, b, &r) ? INT64_MAX : r;
}

static int64_t dim_hi(const tg_graph *g, tg_dim d)
{
    int64_t lo, hi;
    tg_dim_range(d, g->sym, &lo, &hi);
    return hi < 0 ? 0 : hi;
}

/* An input of data op n: NULL with tg_err when absent. */
static const tg_value *data_in(const tg_graph *g, const tg_node *n, int i)
{
    const tg_value *v = tg_node_input(g, n, i);
    if (!v)
        tg_err("input %d is missing", i);
    return v;
}

int tg_data_shape(const tg_graph *g, const tg_node *n, tg_shape *s, int *k, int64_t *most)
{
    const tg_value *x = data_in(g, n, 0);
    if (!x)
        return -1;
    if (n->op == TG_OP_NONZERO) {
        *most = 1;
        for (int i = 0; i < x->shape.rank; i++)
            *most = sat_mul(*most, dim_hi(g, x->shape.d[i]));
        *s = (tg_shape){.rank = 2, .d = {tg_dim_const(x->shape.rank ? x->shape.rank : 1)}};
        *k = 1;
        return 0;
    }
    if (n->op != TG_OP_NMS)
        return tg_err("op %s is not a data op", tg_op_name(n->op));
    const tg_value *sc = data_in(g, n, 1);
    int64_t maxo;
    double iou, thr;
    int center;
    if (!sc || tg_check_float(x, 0) || tg_check_same_dtype(sc, 1, x, 0) ||
        tg_check_rank(x, 0, 3, 3) || tg_check_rank(sc, 1, 3, 3) ||
        tg_attr_get_int(n, "max_output", 0, &maxo) || tg_attr_get_float(n, "iou_threshold", 0, &iou) ||
        tg_attr_get_float(n, "score_threshold", 0, &thr) ||
        tg_attr_get_flag(n, "center_point_box", 0, &center) ||
        tg_check_dim_eq(g, x->shape.d[2], tg_dim_const(4), "boxes' last dim and 4") ||
        tg_check_dim_eq(g, x->shape.d[0], sc->shape.d[0], "the batch of boxes and of scores") ||
        tg_check_dim_eq(g, x->shape.d[1], sc->shape.d[2], "the boxes of boxes and of scores"))
        return -1;
    int64_t per = dim_hi(g, x->shape.d[1]);
    if (maxo < per)
        per = maxo < 0 ? 0 : maxo;
    *most = sat_mul(sat_mul(dim_hi(g, x->shape.d[0]), dim_hi(g, sc->shape.d[1])), per);
    *s = (tg_shape){.rank = 2, .d = {tg_dim_const(0), tg_dim_const(3)}};
    *k = 0;
    return 0;
}

/* The output's shape with its length a new data symbol in [0, most]. */
static int set_data(tg_graph *g, int node)
{
    tg_shape s;
    int k;
    int64_t most;
    if (tg_data_shape(g, &g->nodes[node], &s, &k, &most))
        return -1;
    int sym = tg_graph_add_data_symbol(g, 0, most);
    if (sym < 0)
        return tg_err("its output's length is set by the data: %s", tg_errmsg());
    s.d[k] = tg_dim_sym(sym);
    return tg_infer_set(g, node, TG_I64, &s);
}

int tg_infer_nonzero(tg_graph *g, int node)
{
    return set_data(g, node);
}

int tg_infer_nms(tg_graph *g, int node)
{
    return set_data(g, node);
}

int tg_data_bound(const tg_graph *g, const tg_node *n, tg_dim *out)
{
    const tg_value *x = tg_node_input(g, n, 0);
    if (n->op == TG_OP_NONZERO)
        return tg_shape_numel(&x->shape, out);
    if (n->op != TG_OP_NMS)
        return tg_err("node '%s' (%s) is not a data op", n->name, tg_op_name(n->op));
    /* batches x classes x the fewer of boxes and max_output */
    const tg_value *sc = tg_node_input(g, n, 1);
    int64_t maxo = tg_node_int(n, "max_output", 0), boxes;
    tg_dim per = x->shape.d[1];
    if (maxo <= 0 || (tg_dim_is_const(per, &boxes) ? maxo < boxes : maxo < dim_hi(g, per)))
        per = tg_dim_const(maxo < 0 ? 0 : maxo);
    tg_dim bc;
    return tg_dim_mul(x->shape.d[0], sc->shape.d[1], &bc) || tg_dim_mul(bc, per, out);
}

int tg_infer_shape(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x)
        return -1;
    tg_shape s = {.rank = 1, .d = {tg_dim_const(x->shape.rank)}};
    return tg_infer_set(g, node, TG_I64, &s);
}
