/* ONNX operators whose output's shape depends on their inputs' values:
 * NonZero and NonMaxSuppression onto the data ops of the same name (a fresh
 * data symbol for the length they find, tgraph-format(5), DATA SYMBOLS);
 * Compress as NonZero's indices selected from x; Unique written out over one
 * NonZero (which rows come first, sorted by comparing every pair: O(n^2), for
 * the short vectors and masks it meets). Shape and Size of a value whose
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

/* The position of the first largest along axis (argmax of an int64 copy of x). */
static int first_max(onnx_ctx *c, const char *sfx, int x, int64_t axis, int keep)
{
    tg_attr a[2] = {tg_attr_int("axis", axis), tg_attr_int("keepdim", keep)};
    int i = cast_as(c, x, TG_I64, "as_i64");
    return i < 0 ? -1 : unary_on(c, TG_OP_ARGMAX, sfx, i, 2, a);
}

static int sum_i64(onnx_ctx *c, const char *sfx, int x, int64_t axis, int keep)
{
    return reduce_on(c, TG_OP_REDUCE_SUM, sfx, cast_as(c, x, TG_I64, "as_i64"), axis, keep);
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

/* Per pair of x2's rows [A, M]: whether they are equal, [A, A] bool. */
static int rows_equal(onnx_ctx *c, int x2, tg_dim a, tg_dim mm)
{
    tg_dim s1[3] = {a, tg_dim_const(1), mm}, s2[3] = {tg_dim_const(1), a, mm};
    int ne = binary_on(c, TG_OP_NE, "rows_ne", reshape_to(c, x2, 3, s1, "rows_i"), reshape_to(c, x2, 3, s2, "rows_j"));
    int any = reduce_on(c, TG_OP_REDUCE_ANY, "rows_differ", ne, 2, 0);
    return any < 0 ? -1 : unary_on(c, TG_OP_LOGICAL_NOT, "rows_equal", any, 0, NULL);
}

/* Rows of x2 [A, M] equal to an earlier row, [A] bool. */
static int repeats_earlier(onnx_ctx *c, int same, tg_dim a)
{
    tg_attr r[2] = {tg_attr_dims("end", 1, &a), tg_attr_dtype("dtype", TG_I64)};
    int pos = onnx_add(c, TG_OP_ARANGE, "positions", 0, NULL, 2, r);
    tg_dim row[2] = {tg_dim_const(1), a}, col[2] = {a, tg_dim_const(1)};
    int before = binary_on(c, TG_OP_LT, "before", reshape_to(c, pos, 2, row, "pos_row"), reshape_to(c, pos, 2, col, "pos_col"));
    int both = before < 0 || same < 0 ? -1 : binary_on(c, TG_OP_LOGICAL_AND, "equal_before", same, before);
    return reduce_on(c, TG_OP_REDUCE_ANY, "repeats", both, 1, 0);
}

/* The order [n] that sorts the unique rows (x2's rows at nz [1, n]) ascending,
 * lexicographically: a row's place is how many rows are smaller, where two rows
 * compare at their first differing element. */
static int sort_order(onnx_ctx *c, int x2, int nz, int64_t mm)
{
    int64_t perm[2] = {1, 0};
    int col = permute_to(c, nz, 2, perm, "first_col");
    int ri = index_on(c, "unique_i", x2, 0, col), rj = index_on(c, "unique_j", x2, 0, nz);  /* [n,1,M], [1,n,M] */
    int less = binary_on(c, TG_OP_LT, "elem_less", ri, rj);
    if (mm != 1) {
        int at = first_max(c, "first_diff", binary_on(c, TG_OP_NE, "elem_ne", ri, rj), 2, 1);
        tg_attr a = tg_attr_int("axis", 2);
        int in[2] = {less, at};
        less = less < 0 || at < 0 ? -1 : onnx_add(c, TG_OP_GATHER, "row_less", 2, in, 1, &a);
    }
    int smaller = sum_i64(c, "smaller", sum_i64(c, "row_less_i64", less, 2, 0), 0, 1);    /* [1, n] */
    int one = col < 0 ? -1 : cast_as(c, binary_on(c, TG_OP_EQ, "ones", col, col), TG_I64, "ones_i64");
    tg_attr cs[2] = {tg_attr_int("axis", 0), tg_attr_int("exclusive", 1)};
    int place = one < 0 ? -1 : unary_on(c, TG_OP_CUMSUM, "places", one, 2, cs);          /* [n, 1]: 0..n-1 */
    int hit = smaller < 0 || place < 0 ? -1 : binary_on(c, TG_OP_EQ, "in_place", place, smaller);
    return first_max(c, "order", hit, 1, 0);
}

/* Unique (opset 11): over x flattened, or its slices along axis. Y, the
 * first index of each, each element's place in Y, and the counts. */
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
    int same = rows_equal(c, x2, a, mm), nz;
    int first = repeats_earlier(c, same, a);
    first = first < 0 ? -1 : unary_on(c, TG_OP_LOGICAL_NOT, "first", first, 0, NULL);
    int sel = nonzero_vec(c, first, &nz);
    if (sorted && sel >= 0) sel = index_on(c, "sorted_first", sel, 0, sort_order(c, x2, nz, mv));
    int hit = index_on(c, "equal_unique", same, 1, sel);                                    /* [A, n] */
    if (def_out(c, 0, index_on(c, NULL, src, ax, sel)) || def_out(c, 1, sel) ||
        def_out(c, 2, first_max(c, "inverse", hit, 1, 0)))
        return -1;
    return def_out(c, 3, sum_i64(c, "counts", hit, 0, 0));
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
