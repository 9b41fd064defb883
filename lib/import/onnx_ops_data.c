/* ONNX operators whose output's shape depends on their inputs' values:
 * NonZero and NonMaxSuppression onto the data ops of the same name (a fresh
 * data symbol for the length they find, tgraph-format(5), DATA SYMBOLS);
 * Compress as NonZero's indices selected from x; Unique written out over
 * stable sorts (argsort) and one NonZero. Shape and Size of a value whose
 * dims the data sets read them at run time (the shape op). */
#include "onnx_node.h"

static int index_on(onnx_ctx *c, const char *sfx, int x, int axis, int idx)
{
    tg_attr a = tg_attr_int("axis", axis);
    int in[2] = {x, idx};
    return x < 0 || idx < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, sfx, 2, in, 1, &a);
}

static int reduce_on(onnx_ctx *c, tg_op op, const char *sfx, int x, int64_t axis, int keep)
{
    tg_attr a[2] = {tg_attr_ints("axes", 1, &axis), tg_attr_int("keepdim", keep)};
    return x < 0 ? -1 : unary_on(c, op, sfx, x, 2, a);
}

/* NonZero's indices of a 1-D x as a vector [n]. */
static int nonzero_vec(onnx_ctx *c, int x, int *nz)
{
    *nz = x < 0 ? -1 : unary_on(c, TG_OP_NONZERO, "nonzero", x, 0, NULL);
    return index_on(c, "indices", *nz, 0, scalar_const(c, "row", TG_I64, 0));
}

int onnx_shape_data(onnx_ctx *c, int v, int64_t start, int64_t end, bool size)
{
    int sh = unary_on(c, TG_OP_SHAPE, size ? "dims" : NULL, v, 0, NULL);
    if (size) return sh < 0 ? -1 : unary_on(c, TG_OP_REDUCE_PROD, NULL, sh, 0, NULL);
    if (start == 0 && end == shape_of(c, v).rank) return sh;
    return slice_range(c, sh, 0, start, end, "dims");
}

int onnx_dims_data(onnx_ctx *c, int x, int n, int *dims, int *count)
{
    int r = shape_of(c, x).rank, sh = unary_on(c, TG_OP_SHAPE, "input_dims", x, 0, NULL);
    *count = sh < 0 ? -1 : unary_on(c, TG_OP_REDUCE_PROD, "count", sh, 0, NULL);
    if (n <= r) {
        *dims = n == r ? sh : slice_range(c, sh, 0, 0, n, "input_dims_first");
    } else {
        int64_t pads[2] = {0, n - r};
        tg_attr a = tg_attr_ints("pads", 2, pads);
        *dims = sh < 0 ? -1 : unary_on(c, TG_OP_PAD, "input_dims_padded", sh, 1, &a);
    }
    return *dims < 0 || *count < 0 ? -1 : 0;
}

static int map_nonzero(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    return def_out(c, 0, x < 0 ? -1 : unary_on(c, TG_OP_NONZERO, NULL, x, 0, NULL));
}

/* x flattened to one axis. */
static int flat(onnx_ctx *c, int x, const char *sfx)
{
    tg_shape s = shape_of(c, x);
    tg_dim n = tg_dim_const(1);
    for (int i = 0; i < s.rank; i++)
        if (tg_dim_mul(n, s.d[i], &n)) return -1;
    return reshape_to(c, x, 1, &n, sfx);
}

/* The indices of a constant condition's non-zero entries, as a constant. */
static int indices_const(onnx_ctx *c, const onnx_ent *e)
{
    int64_t n = 0, len = e->dims[0], *p = malloc(sizeof *p * (size_t)(len ? len : 1));
    if (!p) return tg_err("out of memory");
    for (int64_t i = 0; i < len; i++)
        if (tg_load_f64(e->dtype, e->data, (size_t)i) != 0) p[n++] = i;
    return const_named(c, "indices", TG_I64, 1, &n, p);
}

/* Compress: the indices of the condition's non-zero entries selected along
 * the axis (of x flattened without one); found at import when the condition
 * is a constant, so that the graph stays static. */
static int map_compress(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *ce = in_req(c, 1);
    bool known = ce && ce->kind == ONNX_ENT_CONST;
    int x = in_val(c, 0), cond = !ce || known ? -1 : onnx_value(c, ce), ax = 0, nz;
    if (x < 0 || (!known && cond < 0)) return -1;
    if ((known ? ce->rank : shape_of(c, cond).rank) != 1) return tg_err("condition must be 1-D");
    const Onnx__AttributeProto *a = onnx_attr(N(c), "axis");
    if (!a) x = flat(c, x, "flat");
    else if (axis_norm(a->i, shape_of(c, x).rank, &ax)) return -1;
    return def_out(c, 0, index_on(c, NULL, x, ax, known ? indices_const(c, ce) : nonzero_vec(c, cond, &nz)));
}

static int argsort_on(onnx_ctx *c, const char *sfx, int x)
{
    tg_attr a = tg_attr_int("axis", 0);
    return x < 0 ? -1 : unary_on(c, TG_OP_ARGSORT, sfx, x, 1, &a);
}

static int cumsum_on(onnx_ctx *c, const char *sfx, int x)
{
    tg_attr a = tg_attr_int("axis", 0);
    return x < 0 ? -1 : unary_on(c, TG_OP_CUMSUM, sfx, cast_as(c, x, TG_I64, "as_i64"), 1, &a);
}

/* The order [A] that sorts x2's rows [A, M] lexicographically, equal rows in
 * index order: a stable sort by each column, the last first. */
static int row_order(onnx_ctx *c, int x2, int64_t mm)
{
    if (mm < 1) return tg_err("Unique of slices with no elements");
    tg_dim a = shape_of(c, x2).d[0];
    int order = -1;
    for (int64_t k = mm - 1; k >= 0; k--) {
        int col = reshape_to(c, slice_range(c, x2, 1, k, k + 1, "column"), 1, &a, "column_vec");
        int key = order < 0 ? col : index_on(c, "column_sorted", col, 0, order);
        int perm = argsort_on(c, "column_order", key);
        order = order < 0 ? perm : index_on(c, "row_order", order, 0, perm);
        if (order < 0) return -1;
    }
    return order;
}

/* Where a group of equal rows starts in sorted rows s [A, M]: [A] bool, the
 * first row and each row unlike the one before it. */
static int group_starts(onnx_ctx *c, int s, tg_dim a)
{
    tg_attr r[2] = {tg_attr_dims("end", 1, &a), tg_attr_dtype("dtype", TG_I64)};
    int pos = onnx_add(c, TG_OP_ARANGE, "positions", 0, NULL, 2, r);
    int zero = scalar_const(c, "zero", TG_I64, 0), one = scalar_const(c, "one", TG_I64, 1);
    if (pos < 0 || zero < 0 || one < 0) return -1;
    int prev = binary_on(c, TG_OP_SUB, "pos_before", pos, one);
    prev = prev < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "row_before", prev, zero);
    int ne = binary_on(c, TG_OP_NE, "differs", s, index_on(c, "rows_before", s, 0, prev));
    int differs = reduce_on(c, TG_OP_REDUCE_ANY, "row_differs", ne, 1, 0);
    int first = binary_on(c, TG_OP_EQ, "first_row", pos, zero);
    return differs < 0 || first < 0 ? -1 : binary_on(c, TG_OP_LOGICAL_OR, "group_start", differs, first);
}

/* Unique (opset 11): over x flattened, or its slices along axis, as rows x2
 * [A, M]. The rows sorted stably (M sorts of A: O(M A log A)); groups of
 * equal rows start where a row differs from the one before, so the sorted
 * order at a group's start is its first index and the distance to the next
 * start its count; each row's group is the running count of starts at its
 * place in the sorted order. Unsorted, the groups go in order of their first
 * index (one more sort, of the unique rows). */
static int map_unique(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), ax = 0;
    if (x < 0) return -1;
    const Onnx__AttributeProto *aa = onnx_attr(N(c), "axis");
    bool sorted = onnx_attr_int(N(c), "sorted", 1) != 0;
    tg_shape xs = shape_of(c, x);
    int src = x, x2;
    tg_dim a, mm = tg_dim_const(1);
    if (!aa) {
        if ((src = x2 = flat(c, x, "flat")) < 0) return -1;
        a = shape_of(c, x2).d[0];
    } else {
        if (axis_norm(aa->i, xs.rank, &ax)) return -1;
        int64_t perm[TG_MAX_RANK];
        perm[0] = ax;
        for (int i = 0, k = 1; i < xs.rank; i++)
            if (i != ax) {
                perm[k++] = i;
                if (tg_dim_mul(mm, xs.d[i], &mm)) return -1;
            }
        a = xs.d[ax];
        tg_dim s[2] = {a, mm};
        x2 = reshape_to(c, permute_to(c, x, xs.rank, perm, "axis_first"), 2, s, "rows");
    }
    int64_t mv;
    if (!tg_dim_is_const(mm, &mv)) return tg_err("the slices along the axis must have a static size");
    tg_dim rows[2] = {a, mm};
    if (!aa) x2 = reshape_to(c, x2, 2, rows, "rows");
    int order = x2 < 0 ? -1 : row_order(c, x2, mv), nz;
    int start = order < 0 ? -1 : group_starts(c, index_on(c, "sorted_rows", x2, 0, order), a);
    int one = scalar_const(c, "one", TG_I64, 1), starts = nonzero_vec(c, start, &nz);        /* [U] */
    int group = cumsum_on(c, "groups", start);
    group = group < 0 || one < 0 ? -1 : binary_on(c, TG_OP_SUB, "group", group, one);       /* [A] */
    int first = index_on(c, "first", order, 0, starts);
    int next = starts < 0 ? -1 : cumsum_on(c, "next", binary_on(c, TG_OP_EQ, "ones", starts, starts));
    int in[2] = {starts, x2 < 0 ? -1 : onnx_shape_data(c, x2, 0, 1, false)};
    tg_attr ca = tg_attr_int("axis", 0);
    int ends = in[0] < 0 || in[1] < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, "starts_and_end", 2, in, 1, &ca);
    ends = index_on(c, "group_end", ends, 0, next);
    int counts = ends < 0 ? -1 : binary_on(c, TG_OP_SUB, "count", ends, starts);
    int inverse = index_on(c, "inverse", group, 0, argsort_on(c, "place", order));
    if (!sorted) {
        int by_first = argsort_on(c, "by_first", first);
        first = index_on(c, "first_in_order", first, 0, by_first);
        counts = index_on(c, "count_in_order", counts, 0, by_first);
        inverse = index_on(c, "inverse_in_order", argsort_on(c, "rank", by_first), 0, inverse);
    }
    if (first < 0 || counts < 0 || inverse < 0) return -1;
    if (def_out(c, 0, index_on(c, NULL, src, ax, first)) || def_out(c, 1, first) || def_out(c, 2, inverse))
        return -1;
    return def_out(c, 3, counts);
}

/* NonMaxSuppression (opset 10/11): its three optional scalars become the op's
 * attributes, read at run time when the model computes them. */
static int map_nms(onnx_ctx *c, const onnx_op_map *m)
{
    static const char *const names[3] = {"max_output", "iou_threshold", "score_threshold"};
    int in[5] = {in_val(c, 0), in_val(c, 1)}, nin = 2, na = 0;
    if (in[0] < 0 || in[1] < 0) return -1;
    tg_attr a[4];
    a[na++] = tg_attr_int("center_point_box", onnx_attr_int(N(c), "center_point_box", 0));
    for (int k = 0; k < 3; k++) {
        onnx_ent *e = in_opt(c, k + 2);
        if (!e) {
            if (k + 2 < (int)N(c)->n_input && *N(c)->input[k + 2]) return -1;
            continue;
        }
        double v;
        if (e->kind == ONNX_ENT_CONST) {
            if (onnx_scalar_f64(e, &v)) return -1;
            a[na++] = k ? tg_attr_float(names[k], v) : tg_attr_int(names[k], (int64_t)fmax(fmin(v, 1e18), -1));
        } else if ((in[nin] = onnx_value(c, e)) < 0)
            return -1;
        else
            a[na++] = tg_attr_input(names[k], nin++, k ? TG_ATTR_FLOAT : TG_ATTR_INT);
    }
    if (nin == 2) return def_out(c, 0, onnx_add(c, TG_OP_NMS, NULL, 2, in, na, a));
    tg_shape b = shape_of(c, in[0]), s = shape_of(c, in[1]), ys = {.rank = 2, .d = {tg_dim_const(0), tg_dim_const(3)}};
    int64_t lo, hi[3];
    tg_dim d[3] = {b.d[0], s.d[1], b.d[1]};
    for (int k = 0; k < 3; k++) tg_dim_range(d[k], c->g->sym, &lo, &hi[k]);
    int64_t most;
    if (__builtin_mul_overflow(hi[0], hi[1], &most) || __builtin_mul_overflow(most, hi[2], &most)) most = INT64_MAX;
    if (data_dim(c, most, &ys.d[0])) return -1;
    return def_out(c, 0, onnx_add_dynamic(c, TG_OP_NMS, NULL, nin, in, na, a, TG_I64, &ys));
}

const onnx_op_map onnx_data_ops[] = {
    {"NonZero", map_nonzero, 0}, {"Compress", map_compress, 0}, {"Unique", map_unique, 0},
    {"NonMaxSuppression", map_nms, 0},
};
const int onnx_data_nops = (int)(sizeof onnx_data_ops / sizeof onnx_data_ops[0]);
