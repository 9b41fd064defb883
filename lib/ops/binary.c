/* Elementwise binary ops, comparisons, logic and where: NumPy broadcasting of
 * symbolic shapes. */
#include "infer.h"

static bool dim_is_one(tg_dim d)
{
    int64_t v;
    return tg_dim_is_const(d, &v) && v == 1;
}

/* A dim that is one data symbol: known when its node runs (1 or the other dim then,
 * which the interpreter checks by inferring the node again on concrete shapes). */
static bool dim_is_data(const tg_graph *g, tg_dim d)
{
    for (int s = 0; s < g->nsym; s++)
        if (g->sym[s].data && tg_dim_eq(d, tg_dim_sym(s)))
            return true;
    return false;
}

int tg_shape_broadcast(const tg_graph *g, const tg_shape *a, const tg_shape *b, tg_shape *out)
{
    tg_shape r;
    r.rank = a->rank > b->rank ? a->rank : b->rank;
    for (int i = 0; i < r.rank; i++) {
        /* i counts from the right; a missing dim acts as 1 */
        int ia = a->rank - 1 - i, ib = b->rank - 1 - i;
        tg_dim da = ia >= 0 ? a->d[ia] : tg_dim_const(1);
        tg_dim db = ib >= 0 ? b->d[ib] : tg_dim_const(1);
        tg_dim *o = &r.d[r.rank - 1 - i];
        if (tg_dim_eq(da, db) || dim_is_one(db))
            *o = da;
        else if (dim_is_one(da))
            *o = db;
        else if (dim_is_data(g, da) != dim_is_data(g, db))
            *o = dim_is_data(g, da) ? db : da;
        else {
            char sa[TG_INFER_STR], sb[TG_INFER_STR], da_s[TG_INFER_STR], db_s[TG_INFER_STR];
            return tg_err("cannot broadcast %s with %s (%s and %s at axis %d)",
                          tg_infer_shape_str(g, a, sa), tg_infer_shape_str(g, b, sb),
                          tg_infer_dim_str(g, da, da_s), tg_infer_dim_str(g, db, db_s), -1 - i);
        }
    }
    *out = r;
    return 0;
}

/* Both inputs present, of one dtype; *s = their broadcast shape. */
static int two_inputs(tg_graph *g, int node, const tg_value **a, tg_shape *s)
{
    const tg_value *b;
    if (!(*a = tg_infer_in(g, node, 0)) || !(b = tg_infer_in(g, node, 1)) ||
        tg_check_same_dtype(b, 1, *a, 0))
        return -1;
    return tg_shape_broadcast(g, &(*a)->shape, &b->shape, s);
}

int tg_infer_binary(tg_graph *g, int node)
{
    const tg_value *a;
    tg_shape s;
    if (two_inputs(g, node, &a, &s) || tg_check_numeric(a, 0))
        return -1;
    return tg_infer_set(g, node, a->dtype, &s);
}

int tg_infer_binary_int(tg_graph *g, int node)
{
    const tg_value *a;
    tg_shape s;
    if (two_inputs(g, node, &a, &s) || tg_check_int(a, 0))
        return -1;
    return tg_infer_set(g, node, a->dtype, &s);
}

int tg_infer_compare(tg_graph *g, int node)
{
    const tg_value *a;
    tg_shape s;
    if (two_inputs(g, node, &a, &s))
        return -1;
    return tg_infer_set(g, node, TG_BOOL, &s);
}

int tg_infer_logical(tg_graph *g, int node)
{
    const tg_value *a;
    tg_shape s;
    if (two_inputs(g, node, &a, &s) || tg_check_dtype(a, 0, TG_BOOL))
        return -1;
    return tg_infer_set(g, node, TG_BOOL, &s);
}

int tg_infer_where(tg_graph *g, int node)
{
    const tg_value *c, *a, *b;
    tg_shape s;
    if (!(c = tg_infer_in(g, node, 0)) || !(a = tg_infer_in(g, node, 1)) ||
        !(b = tg_infer_in(g, node, 2)))
        return -1;
    if (tg_check_dtype(c, 0, TG_BOOL) || tg_check_same_dtype(b, 2, a, 1) ||
        tg_shape_broadcast(g, &c->shape, &a->shape, &s) ||
        tg_shape_broadcast(g, &s, &b->shape, &s))
        return -1;
    return tg_infer_set(g, node, a->dtype, &s);
}
