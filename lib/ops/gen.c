/* Generators: tensors made from attributes alone. */
#include "infer.h"

#include <inttypes.h>

int tg_infer_full(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    tg_shape s;
    tg_dtype dt;
    double value;
    if (tg_attr_dim_list(n, "shape", TG_MAX_RANK, s.d, &s.rank) ||
        tg_attr_get_float(n, "value", 0, &value) ||
        tg_attr_get_dtype(n, "dtype", TG_F32, &dt))
        return -1;
    for (int i = 0; i < s.rank; i++)
        if (tg_dim_check_nonneg(s.d[i], "a dim of attribute 'shape'"))
            return -1;
    return tg_infer_set(g, node, dt, &s);
}

/* [start, end) by step: ceil((end - start) / step) values; with a symbolic end the
 * length must stay exact (always so for step 1). */
int tg_infer_arange(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    int64_t start, step, v;
    tg_dim end, diff;
    tg_dtype dt;
    if (tg_attr_get_int(n, "start", 0, &start) || tg_attr_get_dim(n, "end", NULL, &end) ||
        tg_attr_get_int(n, "step", 1, &step) || tg_attr_get_dtype(n, "dtype", TG_I64, &dt))
        return -1;
    if (step == 0)
        return tg_err("attribute 'step' must not be 0");
    if (start == INT64_MIN || step == INT64_MIN)
        return tg_err("arange start or step is out of range");
    if (dt == TG_BOOL)
        return tg_err("arange cannot make bool values");
    /* a negative step counts down: the same count as (start - end) / -step */
    if (step > 0 ? tg_dim_affine(end, 1, -start, &diff) : tg_dim_affine(end, -1, start, &diff))
        return -1;
    tg_shape s = { .rank = 1 };
    char s1[TG_INFER_STR];
    if (tg_dim_ceildiv(diff, step > 0 ? step : -step, &s.d[0]))
        return tg_err("arange to %s by %" PRId64 ": %s", tg_infer_dim_str(g, end, s1), step,
                      tg_errmsg());
    if (tg_dim_is_const(s.d[0], &v) && v < 0)
        return tg_err("arange from %" PRId64 " by %" PRId64 " never reaches its end %s", start,
                      step, tg_infer_dim_str(g, end, s1));
    return tg_infer_set(g, node, dt, &s);
}
