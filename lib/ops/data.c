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

/* The output's shape with dim k a new data symbol in [0, hi]. */
static int set_data(tg_graph *g, int node, tg_shape *s, int k, int64_t hi)
{
    int sym = tg_graph_add_data_symbol(g, 0, hi);
    if (sym < 0)
        return tg_err("its output's length is set by the data: %s", tg_errmsg());
    s->d[k] = tg_dim_sym(sym);
    return tg_infer_set(g, node, TG_I64, s);
}

int tg_infer_nonzero(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x)
        return -1;
    int64_t hi = 1;
    for (int i = 0; i < x->shape.rank; i++)
        hi = sat_mul(hi, dim_hi(g, x->shape.d[i]));
    tg_shape s = {.rank = 2, .d = {tg_dim_const(x->shape.rank ? x->shape.rank : 1)}};
    return set_data(g, node, &s, 1, hi);
}

int tg_infer_nms(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *b = tg_infer_in(g, node, 0), *sc = tg_infer_in(g, node, 1);
    int64_t maxo;
    double iou, thr;
    int center;
    if (!b || !sc || tg_check_float(b, 0) || tg_check_same_dtype(sc, 1, b, 0) ||
        tg_check_rank(b, 0, 3, 3) || tg_check_rank(sc, 1, 3, 3) ||
        tg_attr_get_int(n, "max_output", 0, &maxo) || tg_attr_get_float(n, "iou_threshold", 0, &iou) ||
        tg_attr_get_float(n, "score_threshold", 0, &thr) ||
        tg_attr_get_flag(n, "center_point_box", 0, &center) ||
        tg_check_dim_eq(g, b->shape.d[2], tg_dim_const(4), "boxes' last dim and 4") ||
        tg_check_dim_eq(g, b->shape.d[0], sc->shape.d[0], "the batch of boxes and of scores") ||
        tg_check_dim_eq(g, b->shape.d[1], sc->shape.d[2], "the boxes of boxes and of scores"))
        return -1;
    int64_t per = dim_hi(g, b->shape.d[1]);
    if (maxo < per)
        per = maxo < 0 ? 0 : maxo;
    tg_shape s = {.rank = 2, .d = {tg_dim_const(0), tg_dim_const(3)}};
    return set_data(g, node, &s, 0,
                    sat_mul(sat_mul(dim_hi(g, b->shape.d[0]), dim_hi(g, sc->shape.d[1])), per));
}

int tg_infer_shape(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x)
        return -1;
    tg_shape s = {.rank = 1, .d = {tg_dim_const(x->shape.rank)}};
    return tg_infer_set(g, node, TG_I64, &s);
}
