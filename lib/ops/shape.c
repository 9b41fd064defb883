/* Data movement: reshape, permute, expand, slice, concat, pad, tile, gather,
 * index_select, index_copy, tril/triu. Only shapes change; the dtype is the input's. */
#include <stdio.h>
#include <string.h>
#include "infer.h"

#include <inttypes.h>

static bool dim_is_neg(tg_dim d)
{
    int64_t v;
    return tg_dim_is_const(d, &v) && v < 0;
}

int tg_reshape_resolve(const tg_shape *in, int n, tg_dim *dims)
{
    tg_dim known = tg_dim_const(1), total;
    int hole = -1;
    if (n < 0 || n > TG_MAX_RANK)
        return tg_err("reshape to %d dims, at most %d allowed", n, TG_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int64_t v = 0;
        bool c = tg_dim_is_const(dims[i], &v);
        if (c && v == -1) {
            if (hole >= 0)
                return tg_err("reshape target has -1 at both dims %d and %d", hole, i);
            hole = i;
        } else if (c && v < 0) {
            return tg_err("reshape target dim %d is %" PRId64, i, v);
        } else if (tg_dim_mul(known, dims[i], &known)) {
            return -1;
        }
    }
    if (hole < 0)
        return 0;
    if (tg_shape_numel(in, &total))
        return -1;
    if (tg_dim_eq(known, tg_dim_const(0)))
        return tg_err("reshape target with -1 has another dim 0: the -1 is ambiguous");
    if (tg_dim_div(total, known, &dims[hole]))
        return tg_err("reshape: the other dims do not divide the element count, so -1"
                      " (dim %d) has no exact value", hole);
    return 0;
}

int tg_infer_reshape(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    tg_shape s;
    tg_dim a, b;
    char s1[TG_INFER_STR], s2[TG_INFER_STR], s3[TG_INFER_STR], s4[TG_INFER_STR];
    if (!x || tg_attr_dim_list(tg_infer_node(g, node), "shape", TG_MAX_RANK, s.d, &s.rank))
        return -1;
    for (int i = 0; i < s.rank; i++)
        if (dim_is_neg(s.d[i]))
            return tg_err("attribute 'shape' has a negative dim at %d (importers resolve -1"
                          " with tg_reshape_resolve)", i);
    if (tg_shape_numel(&x->shape, &a) || tg_shape_numel(&s, &b))
        return -1;
    if (!tg_dim_eq(a, b))
        return tg_err("cannot reshape %s (%s elements) to %s (%s elements)",
                      tg_infer_shape_str(g, &x->shape, s1), tg_infer_dim_str(g, a, s2),
                      tg_infer_shape_str(g, &s, s3), tg_infer_dim_str(g, b, s4));
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_permute(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    const int64_t *perm;
    int k;
    bool seen[TG_MAX_RANK] = { false };
    if (!x || tg_attr_get_ints(tg_infer_node(g, node), "perm", &perm, &k))
        return -1;
    tg_shape s = { .rank = x->shape.rank };
    if (k != s.rank)
        return tg_err("attribute 'perm' has %d values, expected %d (the input's rank)",
                      k < 0 ? 0 : k, s.rank);
    for (int i = 0; i < k; i++) {
        int a;
        if (tg_axis_norm(perm[i], s.rank, &a))
            return -1;
        if (seen[a])
            return tg_err("attribute 'perm' names axis %d twice", a);
        seen[a] = true;
        s.d[i] = x->shape.d[a];
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_expand(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    tg_shape s, b;
    char s1[TG_INFER_STR], s2[TG_INFER_STR];
    if (!x || tg_attr_dim_list(tg_infer_node(g, node), "shape", TG_MAX_RANK, s.d, &s.rank))
        return -1;
    for (int i = 0; i < s.rank; i++)
        if (dim_is_neg(s.d[i]))
            return tg_err("attribute 'shape' has a negative dim at %d (importers resolve -1)", i);
    /* the input broadcasts to the target, not the other way round */
    if (x->shape.rank > s.rank || tg_shape_broadcast(g, &x->shape, &s, &b) ||
        !tg_shape_eq(&b, &s))
        return tg_err("cannot expand %s to %s", tg_infer_shape_str(g, &x->shape, s1),
                      tg_infer_shape_str(g, &s, s2));
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_slice(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a, step, v;
    int ax;
    tg_dim zero = tg_dim_const(0), start, end, len, room;
    if (!x || tg_attr_req_int(n, "axis", &a) || tg_axis_norm(a, x->shape.rank, &ax) ||
        tg_attr_get_int(n, "step", 1, &step))
        return -1;
    tg_dim size = x->shape.d[ax];
    if (step < 1)
        return tg_err("attribute 'step' is %" PRId64 ", must be positive", step);
    if (tg_attr_get_dim(n, "start", &zero, &start) || tg_attr_get_dim(n, "end", &size, &end) ||
        tg_dim_check_nonneg(start, "attribute 'start'") ||
        tg_dim_check_nonneg(end, "attribute 'end'") || tg_dim_sub(end, start, &len) ||
        tg_dim_sub(size, end, &room))
        return -1;
    char s1[TG_INFER_STR], s2[TG_INFER_STR];
    if (tg_dim_is_const(room, &v) && v < 0)
        return tg_err("slice end %s is past the end of axis %d (size %s; importers clamp)",
                      tg_infer_dim_str(g, end, s1), ax, tg_infer_dim_str(g, size, s2));
    if (tg_dim_is_const(len, &v) && v < 0)
        return tg_err("slice start %s is after its end %s", tg_infer_dim_str(g, start, s1),
                      tg_infer_dim_str(g, end, s2));
    tg_shape s = x->shape;
    if (tg_dim_ceildiv(len, step, &s.d[ax]))
        return tg_err("slice length (%s) / %" PRId64 ": %s", tg_infer_dim_str(g, len, s1),
                      step, tg_errmsg());
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_concat(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t a;
    int ax;
    if (!x || tg_attr_req_int(n, "axis", &a) || tg_axis_norm(a, x->shape.rank, &ax))
        return -1;
    tg_shape s = x->shape;
    for (int i = 1; i < n->nin; i++) {
        const tg_value *y = tg_infer_in(g, node, i);
        if (!y || tg_check_same_dtype(y, i, x, 0) ||
            tg_check_rank(y, i, s.rank, s.rank))
            return -1;
        for (int d = 0; d < s.rank; d++) {
            if (d == ax) {
                if (tg_dim_add(s.d[d], y->shape.d[d], &s.d[d]))
                    return -1;
            } else if (!tg_dim_eq(s.d[d], y->shape.d[d])) {
                char s1[TG_INFER_STR], s2[TG_INFER_STR];
                return tg_err("input %d has shape %s, which differs from input 0's %s"
                              " outside axis %d", i,
                              tg_infer_shape_str(g, &y->shape, s1),
                              tg_infer_shape_str(g, &x->shape, s2), ax);
            }
        }
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_pad(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    const int64_t *pads;
    int k;
    double value;
    if (!x || tg_attr_get_ints(n, "pads", &pads, &k) ||
        tg_attr_get_float(n, "value", 0, &value) || tg_pad_mode(n) < 0)
        return -1;
    tg_shape s = x->shape;
    if (k != 2 * s.rank)
        return tg_err("attribute 'pads' has %d values, expected %d (before and after each"
                      " of %d axes)", k < 0 ? 0 : k, 2 * s.rank, s.rank);
    /* negative pads crop, as in ONNX */
    for (int i = 0; i < s.rank; i++) {
        int64_t v;
        if (tg_check_small(pads[i], "pads") || tg_check_small(pads[s.rank + i], "pads") ||
            tg_dim_affine(s.d[i], 1, pads[i] + pads[s.rank + i], &s.d[i]))
            return -1;
        if (tg_dim_is_const(s.d[i], &v) && v < 0)
            return tg_err("pads crop axis %d to %" PRId64 " elements", i, v);
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

int tg_infer_tile(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    const int64_t *rep;
    int k;
    if (!x || tg_attr_get_ints(tg_infer_node(g, node), "repeats", &rep, &k))
        return -1;
    tg_shape s = x->shape;
    if (k != s.rank)
        return tg_err("attribute 'repeats' has %d values, expected %d (the input's rank)",
                      k < 0 ? 0 : k, s.rank);
    for (int i = 0; i < k; i++) {
        if (rep[i] < 0)
            return tg_err("attribute 'repeats' is %" PRId64 " for axis %d, must not be"
                          " negative", rep[i], i);
        if (tg_dim_affine(s.d[i], rep[i], 0, &s.d[i]))
            return -1;
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

/* x and an integer index; *ax the axis attribute normalized to x's rank. */
static int index_inputs(tg_graph *g, int node, const tg_value **x, const tg_value **idx,
                        int *ax)
{
    int64_t a;
    if (!(*x = tg_infer_in(g, node, 0)) || !(*idx = tg_infer_in(g, node, 1)) ||
        tg_check_index(*idx, 1) || tg_attr_req_int(tg_infer_node(g, node), "axis", &a))
        return -1;
    return tg_axis_norm(a, (*x)->shape.rank, ax);
}

int tg_infer_gather(tg_graph *g, int node)
{
    const tg_value *x, *idx;
    int ax;
    if (index_inputs(g, node, &x, &idx, &ax) ||
        tg_check_rank(idx, 1, x->shape.rank, x->shape.rank))
        return -1;
    /* torch.gather: index.size(d) <= x.size(d) for d != axis */
    for (int d = 0; d < x->shape.rank; d++) {
        int64_t vi, vx;
        if (d != ax && tg_dim_is_const(idx->shape.d[d], &vi) &&
            tg_dim_is_const(x->shape.d[d], &vx) && vi > vx)
            return tg_err("index dim %d is %" PRId64 ", larger than input's %" PRId64,
                          d, vi, vx);
    }
    return tg_infer_set(g, node, x->dtype, &idx->shape);
}

int tg_infer_index_select(tg_graph *g, int node)
{
    const tg_value *x, *idx;
    int ax;
    if (index_inputs(g, node, &x, &idx, &ax))
        return -1;
    int rank = x->shape.rank - 1 + idx->shape.rank;
    if (rank > TG_MAX_RANK)
        return tg_err("result would have rank %d, more than %d", rank, TG_MAX_RANK);
    tg_shape s = { .rank = 0 };
    for (int d = 0; d < ax; d++)
        s.d[s.rank++] = x->shape.d[d];
    for (int d = 0; d < idx->shape.rank; d++)
        s.d[s.rank++] = idx->shape.d[d];
    for (int d = ax + 1; d < x->shape.rank; d++)
        s.d[s.rank++] = x->shape.d[d];
    return tg_infer_set(g, node, x->dtype, &s);
}

/* The index of string attribute attr (default the first name) among names[0..n);
 * -1 with tg_err listing them. */
static int choice_of(const tg_node *nd, const char *attr, const char *const *names, int n)
{
    const char *s;
    char all[128] = "";
    if (tg_attr_get_string(nd, attr, names[0], &s))
        return -1;
    for (int i = 0; i < n; i++)
        if (!strcmp(s, names[i]))
            return i;
    for (int i = 0; i < n; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s%s", i ? ", " : "", names[i]);
    return tg_err("attribute '%s' is \"%s\", expected one of %s", attr, s, all);
}

int tg_index_reduce_mode(const tg_node *n)
{
    static const char *const names[] = {"none", "add", "mul", "max", "min"};
    return choice_of(n, "reduce", names, 5);
}

int tg_pad_mode(const tg_node *n)
{
    static const char *const names[] = {"constant", "edge", "reflect", "wrap"};
    return choice_of(n, "mode", names, 4);
}

int tg_infer_index_copy(tg_graph *g, int node)
{
    const tg_value *x, *idx, *src;
    int ax, red = tg_index_reduce_mode(tg_infer_node(g, node));
    if (red < 0 || index_inputs(g, node, &x, &idx, &ax) || tg_check_rank(idx, 1, 1, 1) ||
        !(src = tg_infer_in(g, node, 2)) || tg_check_same_dtype(src, 2, x, 0))
        return -1;
    if (red && x->dtype == TG_BOOL)
        return tg_err("reduce on bool");
    tg_shape want = x->shape;
    want.d[ax] = idx->shape.d[0];
    if (tg_check_shape(g, src, 2, &want))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}

int tg_infer_tri(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t k;
    if (!x || tg_check_rank(x, 0, 2, TG_MAX_RANK) ||
        tg_attr_get_int(tg_infer_node(g, node), "k", 0, &k))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}
