/* ONNX inputs that set a shape (Tile's repeats, Expand's shape, Pad's pads and
 * value, Split's sizes) computed by the model rather than constant: each becomes
 * a run-time attribute (tgraph-format(5), RUN-TIME ATTRIBUTES) of the op, read
 * when the node runs; the dims it sets are data symbols. Constants never come
 * here: the mappers in onnx_ops.c fold them. */
#include "onnx_node.h"
#include "onnx_rt.h"

/* A dim with no bound the model gives: large, for the range check only. */
#define RT_DIM_MAX INT32_MAX

/* Value v holds an integer scalar or vector of static length: *n its length. */
static int rt_vec(onnx_ctx *c, int v, const char *what, int max, int *n)
{
    const tg_value *a = &c->g->values[v];
    int64_t len = 1;
    if (!tg_dtype_is_int(a->dtype) || a->shape.rank > 1 ||
        (a->shape.rank == 1 && !tg_dim_is_const(a->shape.d[0], &len)) || len > max)
        return tg_err("'%s' (%s) must be an integer vector of static length (at most %d)", a->name,
                      what, max);
    *n = (int)len;
    return 0;
}

static int i64_of(onnx_ctx *c, int v)
{
    tg_attr t = tg_attr_dtype("dtype", TG_I64);
    return v < 0 || dtype_of(c, v) == TG_I64 ? v : unary_on(c, TG_OP_CAST, "i64", v, 1, &t);
}

/* An int64 vector constant of n values. */
static int mat_const(onnx_ctx *c, const char *sfx, int rank, const int64_t *dims, const int64_t *v);

static int vec_const(onnx_ctx *c, const char *sfx, int n, const int64_t *v)
{
    int64_t len = n;
    return mat_const(c, sfx, 1, &len, v);
}

/* Dim d of the declared output: a constant where keep, else a data symbol. */
static int out_dim(onnx_ctx *c, bool keep, tg_dim x, int64_t hi, tg_dim *d)
{
    if (keep) return *d = x, 0;
    return data_dim(c, hi, d);
}

int onnx_rt_tile(onnx_ctx *c, int x, int r)
{
    tg_shape xs = shape_of(c, x), ys = xs;
    int n;
    if (rt_vec(c, r, "the repeats", MAXV, &n)) return -1;
    if (n != xs.rank) return tg_err("%d repeats for rank %d", n, xs.rank);
    for (int i = 0; i < xs.rank; i++)               /* an empty dim stays empty */
        if (out_dim(c, tg_dim_eq(xs.d[i], tg_dim_const(0)), xs.d[i], RT_DIM_MAX, &ys.d[i])) return -1;
    tg_attr a = tg_attr_input("repeats", 1, TG_ATTR_INTS);
    int in[2] = {x, r};
    return onnx_add_dynamic(c, TG_OP_TILE, NULL, 2, in, 1, &a, dtype_of(c, x), &ys);
}

/* ConstantOfShape of a shape read at run time: every dim a data symbol. */
int onnx_rt_full(onnx_ctx *c, int s, double value, tg_dtype dt)
{
    tg_shape ys = {0};
    if (rt_vec(c, s, "the shape", TG_MAX_RANK, &ys.rank)) return -1;
    for (int i = 0; i < ys.rank; i++)
        if (data_dim(c, RT_DIM_MAX, &ys.d[i])) return -1;
    tg_attr a[3] = {tg_attr_float("value", value), tg_attr_dtype("dtype", dt), tg_attr_input("shape", 0, TG_ATTR_DIMS)};
    return onnx_add_dynamic(c, TG_OP_FULL, NULL, 1, &s, 3, a, dt, &ys);
}

/* ONNX Expand broadcasts both ways: the expand op's shape is s where s is not
 * 1 and x's dim where it is (x's shape static, rank r; s of length n). */
int onnx_rt_expand(onnx_ctx *c, int x, int s)
{
    tg_shape xs = shape_of(c, x), ys;
    int n;
    int64_t xd[TG_MAX_RANK];
    if (rt_vec(c, s, "the shape", TG_MAX_RANK, &n)) return -1;
    for (int i = 0; i < xs.rank; i++)
        if (!tg_dim_is_const(xs.d[i], &xd[i])) return tg_err("a shape given at run time needs a static input shape");
    int rank = n > xs.rank ? n : xs.rank, pre = rank - n;
    int64_t xa[TG_MAX_RANK];                        /* x's dims right-aligned to the n entries of s */
    for (int i = 0; i < n; i++) {
        int ix = i + pre - (rank - xs.rank);
        xa[i] = ix >= 0 ? xd[ix] : 1;
    }
    int sv = i64_of(c, s), one = scalar_const(c, "one", TG_I64, 1), xv = vec_const(c, "input_dims", n, xa);
    int is1 = sv < 0 || one < 0 ? -1 : binary_on(c, TG_OP_EQ, "is_one", sv, one);
    int t = xv < 0 ? -1 : where_on(c, "target", is1, xv, sv);
    if (t >= 0 && pre > 0) {                        /* x's leading dims, which s does not reach */
        int lead = vec_const(c, "leading_dims", pre, xd), in[2] = {lead, t};
        tg_attr ax = tg_attr_int("axis", 0);
        t = lead < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, "target_all", 2, in, 1, &ax);
    }
    if (t < 0) return -1;
    ys.rank = rank;
    for (int i = 0; i < rank; i++) {                /* x's dims other than 1 stay */
        int ix = i - (rank - xs.rank);
        if (out_dim(c, ix >= 0 && xd[ix] != 1, ix >= 0 ? xs.d[ix] : tg_dim_const(1), RT_DIM_MAX, &ys.d[i]))
            return -1;
    }
    tg_attr a = tg_attr_input("shape", 1, TG_ATTR_DIMS);
    int in[2] = {x, t};
    return onnx_add_dynamic(c, TG_OP_EXPAND, NULL, 2, in, 1, &a, dtype_of(c, x), &ys);
}

/* An int64 constant of the given shape (rank 1 or 2). */
static int mat_const(onnx_ctx *c, const char *sfx, int rank, const int64_t *dims, const int64_t *v)
{
    int64_t n = tg_tensor_numel(rank, dims), *p = malloc(n ? (size_t)n * sizeof *p : 1);
    if (!p) return tg_err("out of memory");
    memcpy(p, v, (size_t)n * sizeof *p);
    return const_named(c, sfx, TG_I64, rank, dims, p);
}

/* Which of na axes names each of rank positions: an int64 [rank, na] of 0/1,
 * from value av (normalized at run time: a negative axis counts from the end)
 * or, when av < 0, the constant axes. */
static int axis_hit(onnx_ctx *c, int av, int na, const int64_t *axes, int rank)
{
    int64_t shp[2] = {rank, na}, m[TG_MAX_RANK * TG_MAX_RANK * 2] = {0};
    if (av < 0) {
        for (int i = 0; i < na; i++) {
            int q = 0;
            if (axis_norm(axes[i], rank, &q)) return -1;
            m[q * na + i] = 1;
        }
        return mat_const(c, "axis_hit", 2, shp, m);
    }
    for (int q = 0; q < rank; q++) m[q] = q;
    shp[1] = 1;
    int a = i64_of(c, av), r = scalar_const(c, "rank", TG_I64, rank), zero = scalar_const(c, "zero", TG_I64, 0);
    int neg = a < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_LT, "axis_negative", a, zero);
    int an = r < 0 || neg < 0 ? -1 : where_on(c, "axes_norm", neg, binary_on(c, TG_OP_ADD, "axes_plus_rank", a, r), a);
    int pc = mat_const(c, "positions", 2, shp, m);
    int hit = an < 0 || pc < 0 ? -1 : binary_on(c, TG_OP_EQ, "axis_hit", pc, an);   /* [rank, na] */
    tg_attr t = tg_attr_dtype("dtype", TG_I64);
    return hit < 0 ? -1 : unary_on(c, TG_OP_CAST, "axis_hit_i64", hit, 1, &t);
}

static int sum_rows(onnx_ctx *c, const char *sfx, int m)
{
    int64_t one = 1;
    tg_attr red[2] = {tg_attr_int("keepdim", 0), tg_attr_ints("axes", 1, &one)};
    return m < 0 ? -1 : unary_on(c, TG_OP_REDUCE_SUM, sfx, m, 2, red);
}

/* Per position of hit [rank, na]: the entry of v (na values) its axis names,
 * or dflt (a value of rank entries, or a scalar) where none does. */
static int pick(onnx_ctx *c, const char *sfx, int hit, int v, int dflt)
{
    int zero = scalar_const(c, "zero", TG_I64, 0), has = sum_rows(c, "axis_named", hit);
    int none = has < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_EQ, "axis_unnamed", has, zero);
    v = i64_of(c, v);
    int m = v < 0 || hit < 0 ? -1 : binary_on(c, TG_OP_MUL, "hit_entry", hit, v);
    int sum = sum_rows(c, "entry", m);
    return sum < 0 || none < 0 || dflt < 0 ? -1 : where_on(c, sfx, none, dflt, sum);
}

/* Index into pads-and-0 (a 0 appended to the na pads at index 2 na) of each
 * begin and end the pad op takes: the entry whose axis names the position. */
static int pad_index(onnx_ctx *c, int av, int na, const int64_t *axes, int rank)
{
    int64_t iota[2][MAXV], len = na;
    for (int i = 0; i < na; i++) iota[0][i] = i, iota[1][i] = na + i;
    int hit = axis_hit(c, av, na, axes, rank), none = scalar_const(c, "no_pad_index", TG_I64, 2 * na), half[2];
    for (int h = 0; h < 2; h++)
        if ((half[h] = pick(c, h ? "end_from" : "begin_from", hit, mat_const(c, "entry_index", 1, &len, iota[h]),
                            none)) < 0)
            return -1;
    tg_attr ax = tg_attr_int("axis", 0);
    return onnx_add(c, TG_OP_CONCAT, "pad_index", 2, half, 1, &ax);
}

/* Pad (mode: constant, edge, reflect, wrap) with pads p read at run time over axes: na of them, the
 * constant axes or value av when av >= 0, or all when na < 0; the value a
 * constant or value v (v >= 0). The pad op takes begin and end for every axis:
 * p's entries are spread there, 0 elsewhere. */
int onnx_rt_pad(onnx_ctx *c, int x, int p, int na, const int64_t *axes, int av, double value, int v,
                const char *mode)
{
    tg_shape xs = shape_of(c, x), ys = xs;
    int rank = xs.rank, n;
    bool padded[TG_MAX_RANK] = {0};
    if (strcmp(mode, "constant")) v = -1;          /* the other modes read no value */
    if (rt_vec(c, p, "the pads", MAXV, &n) || (av >= 0 && rt_vec(c, av, "the axes", TG_MAX_RANK, &na))) return -1;
    if (n != 2 * (na < 0 ? rank : na)) return tg_err("pads has %d values for %d axes", n, na < 0 ? rank : na);
    if (na >= 0) {
        for (int i = 0; i < na; i++) {
            int a = 0;
            if (av < 0 && axis_norm(axes[i], rank, &a)) return -1;
            for (int q = 0; q < rank; q++) padded[q] |= av >= 0 || q == a;
        }
        int64_t zero = 0;
        int pv = i64_of(c, p), z = vec_const(c, "no_pad", 1, &zero);
        int iv = pad_index(c, av, na, axes, rank);
        int in[2] = {pv, z};
        tg_attr ax = tg_attr_int("axis", 0);
        int all = pv < 0 || z < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, "pads_and_0", 2, in, 1, &ax);
        int sel[2] = {all, iv};
        if ((p = all < 0 || iv < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "pads_all", 2, sel, 1, &ax)) < 0)
            return -1;
    } else
        for (int i = 0; i < rank; i++) padded[i] = true;
    for (int i = 0; i < rank; i++)
        if (out_dim(c, !padded[i], xs.d[i], RT_DIM_MAX, &ys.d[i])) return -1;
    tg_attr a[3] = {tg_attr_float("value", value), tg_attr_input("pads", 1, TG_ATTR_INTS),
                    tg_attr_string("mode", mode)};
    int in[3] = {x, p, v};
    if (v >= 0) {                                   /* the run-time ones in their inputs' order */
        a[0] = a[1];
        a[1] = tg_attr_input("value", 2, TG_ATTR_FLOAT);
    }
    return onnx_add_dynamic(c, TG_OP_PAD, NULL, v >= 0 ? 3 : 2, in, 3, a, dtype_of(c, x), &ys);
}

/* Split along axis into nout parts whose sizes (value sp) are read at run time:
 * part k is the slice [ends[k] - sizes[k], ends[k]) of ends = cumsum(sizes). */
int onnx_rt_split(onnx_ctx *c, int x, int axis, int sp, int nout)
{
    tg_shape xs = shape_of(c, x);
    int n;
    if (rt_vec(c, sp, "the split sizes", 1 << 16, &n)) return -1;
    if (n != nout) return tg_err("%d split sizes for %d outputs", n, nout);
    tg_attr ca[3] = {tg_attr_int("axis", 0), tg_attr_int("exclusive", 0), tg_attr_int("reverse", 0)};
    int sv = i64_of(c, sp), ends = sv < 0 ? -1 : unary_on(c, TG_OP_CUMSUM, "ends", sv, 3, ca);
    int starts = ends < 0 ? -1 : binary_on(c, TG_OP_SUB, "starts", ends, sv);
    if (starts < 0) return -1;
    int64_t lo, hi;
    tg_dim_range(xs.d[axis], c->g->sym, &lo, &hi);
    for (int k = 0; k < nout; k++) {
        char sfx[32];
        int64_t kk = k;
        snprintf(sfx, sizeof sfx, "%d", k);
        int iv = vec_const(c, "part", 1, &kk), in[3] = {x, -1, -1};
        int s0[2] = {starts, iv}, e0[2] = {ends, iv};
        tg_attr ax = tg_attr_int("axis", 0);
        in[1] = iv < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "start", 2, s0, 1, &ax);
        in[2] = in[1] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "end", 2, e0, 1, &ax);
        tg_shape ys = xs;
        if (in[2] < 0 || data_dim(c, hi, &ys.d[axis])) return -1;
        tg_attr a[4] = {tg_attr_int("axis", axis), tg_attr_int("step", 1), tg_attr_input("start", 1, TG_ATTR_DIMS),
                        tg_attr_input("end", 2, TG_ATTR_DIMS)};
        int y = onnx_add_dynamic(c, TG_OP_SLICE, sfx, 3, in, 4, a, dtype_of(c, x), &ys);
        if (def_out(c, k, y)) return -1;
    }
    return 0;
}

/* The static dims of x into xd, and as a constant vector. */
static int static_dims(onnx_ctx *c, int x, int64_t *xd)
{
    tg_shape xs = shape_of(c, x);
    for (int i = 0; i < xs.rank; i++)
        if (!tg_dim_is_const(xs.d[i], &xd[i])) return tg_err("an input read at run time needs a static input shape");
    return vec_const(c, "input_dims", xs.rank, xd);
}

/* x's dims as a vector computed when the node runs, and into xd their upper
 * bounds (the dims themselves where static). */
static int run_dims(onnx_ctx *c, int x, int64_t *xd)
{
    tg_shape xs = shape_of(c, x);
    if (const_dims(xs, xs.rank, xd) < 0) return vec_const(c, "input_dims", xs.rank, xd);
    for (int i = 0; i < xs.rank; i++) {
        int64_t lo;
        tg_dim_range(xs.d[i], c->g->sym, &lo, &xd[i]);
    }
    return onnx_shape_data(c, x, 0, xs.rank, false);
}

/* Slice bounds v (per position) the way ONNX clamps them for a positive step:
 * a negative one counts from the end (dims d), then within [0, d]. Clamped to
 * [-d, d] first, so that adding d cannot overflow. */
static int slice_bounds(onnx_ctx *c, const char *sfx, int v, int d, int negd)
{
    int zero = scalar_const(c, "zero", TG_I64, 0);
    int t = v < 0 || negd < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "above_minus_dim", v, negd);
    t = t < 0 || d < 0 ? -1 : binary_on(c, TG_OP_MINIMUM, "below_dim", t, d);
    int neg = t < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_LT, "from_end", t, zero);
    return neg < 0 ? -1 : where_on(c, sfx, neg, binary_on(c, TG_OP_ADD, "plus_dim", t, d), t);
}

/* Value of entry q of vector v, as a 1-element vector. */
static int entry(onnx_ctx *c, const char *sfx, int v, int q)
{
    int64_t k = q;
    int iv = vec_const(c, "position", 1, &k), in[2] = {v, iv};
    tg_attr ax = tg_attr_int("axis", 0);
    return v < 0 || iv < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, sfx, 2, in, 1, &ax);
}

static int clamp_to(onnx_ctx *c, const char *sfx, int v, int lo, int hi)
{
    v = v < 0 || lo < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "at_least", v, lo);
    return v < 0 || hi < 0 ? -1 : binary_on(c, TG_OP_MINIMUM, sfx, v, hi);
}

/* Slice with steps read at run time, of either sign: per position an index
 * vector arange(start, end, step) over ONNX's clamped bounds (a positive step
 * within [0, d], a negative one start within [0, d-1] and end within [-1, d-1],
 * the end never past the start, so that an empty slice counts 0), then
 * index_select. A step of 0 fails when the arange runs. */
static int slice_steps(onnx_ctx *c, int x, int hit, int st, int en, int sp, int dv, int rank, const bool *named,
                       const int64_t *xd)
{
    int64_t lo[TG_MAX_RANK], top[TG_MAX_RANK];
    for (int q = 0; q < rank; q++) lo[q] = -xd[q] - 1, top[q] = xd[q] - 1;
    int zero = scalar_const(c, "zero", TG_I64, 0), m1 = scalar_const(c, "minus_one", TG_I64, -1);
    int low = vec_const(c, "minus_dims_1", rank, lo), last = vec_const(c, "last_index", rank, top);
    int k = pick(c, "step", hit, sp, scalar_const(c, "one", TG_I64, 1)), u[2];
    int down = k < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_LT, "step_negative", k, zero);
    for (int b = 0; b < 2; b++) {               /* from the end, then within [-1, d] */
        int v = pick(c, b ? "end_given" : "start_given", hit, b ? en : st, b ? dv : zero);
        int t = clamp_to(c, "bound", v, low, dv), neg = t < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_LT, "from_end", t, zero);
        u[b] = neg < 0 ? -1 : where_on(c, b ? "end_index" : "start_index", neg, binary_on(c, TG_OP_ADD, "plus_dim", t, dv), t);
    }
    int s = where_on(c, "start", down, clamp_to(c, "start_down", u[0], zero, last), clamp_to(c, "start_up", u[0], zero, dv));
    int e = where_on(c, "end_clamped", down, clamp_to(c, "end_down", u[1], m1, last), clamp_to(c, "end_up", u[1], zero, dv));
    e = e < 0 || s < 0 ? -1 : where_on(c, "end", down, binary_on(c, TG_OP_MINIMUM, "end_down_start", e, s),
                                       binary_on(c, TG_OP_MAXIMUM, "end_up_start", e, s));
    if (e < 0) return -1;
    for (int q = 0; q < rank && x >= 0; q++) {
        if (!named[q]) continue;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "axis%d", q);
        int in[3] = {entry(c, "start_at", s, q), entry(c, "end_at", e, q), entry(c, "step_at", k, q)};
        tg_attr a[4] = {tg_attr_dtype("dtype", TG_I64), tg_attr_input("start", 0, TG_ATTR_INT),
                        tg_attr_input("end", 1, TG_ATTR_DIMS), tg_attr_input("step", 2, TG_ATTR_INT)};
        tg_shape is = {.rank = 1};
        if (in[0] < 0 || in[1] < 0 || in[2] < 0 || data_dim(c, xd[q], &is.d[0])) return -1;
        int idx = onnx_add_dynamic(c, TG_OP_ARANGE, "indices", 3, in, 4, a, TG_I64, &is), sel[2] = {x, idx};
        tg_attr ax = tg_attr_int("axis", q);
        x = idx < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, sfx, 2, sel, 1, &ax);
    }
    return x;
}

/* Slice with starts st, ends en (values), axes av (a value, or na constant axes
 * when av < 0; all in order when na < 0) and steps sp (a value, or -1: all 1).
 * Each position an axis may name becomes a slice op on that axis, its start, end
 * and step picked from the entries at run time (the whole axis where none names
 * it), its dim a data symbol. x's shape must be static. */
int onnx_rt_slice(onnx_ctx *c, int x, int st, int en, int av, int na, const int64_t *axes, int sp)
{
    tg_shape xs = shape_of(c, x);
    int rank = xs.rank, n, n2, n3 = -1, dv;
    int64_t xd[TG_MAX_RANK], negd[TG_MAX_RANK], ord[TG_MAX_RANK];
    bool named[TG_MAX_RANK] = {0};
    if (rt_vec(c, st, "the starts", TG_MAX_RANK, &n) || rt_vec(c, en, "the ends", TG_MAX_RANK, &n2) ||
        (av >= 0 && rt_vec(c, av, "the axes", TG_MAX_RANK, &na)) || (sp >= 0 && rt_vec(c, sp, "the steps", TG_MAX_RANK, &n3)) ||
        (dv = sp >= 0 ? static_dims(c, x, xd) : run_dims(c, x, xd)) < 0)
        return -1;
    if (na < 0) {
        na = n;
        for (int i = 0; i < n; i++) ord[i] = i;
        axes = ord;
    }
    if (n != n2 || n != na || (sp >= 0 && n3 != n))
        return tg_err("starts, ends, axes and steps differ in length (%d, %d, %d, %d)", n, n2, na, sp >= 0 ? n3 : n);
    for (int i = 0; i < na; i++) {
        int a = 0;
        if (av < 0 && axis_norm(axes[i], rank, &a)) return -1;
        for (int q = 0; q < rank; q++) named[q] |= av >= 0 || q == a;
    }
    for (int q = 0; q < rank; q++) negd[q] = -xd[q];
    int hit = axis_hit(c, av, na, axes, rank);
    bool fixed = true;
    for (int q = 0; q < rank; q++) fixed &= tg_dim_is_const(xs.d[q], NULL);
    int nd = fixed ? vec_const(c, "minus_dims", rank, negd) : unary_on(c, TG_OP_NEG, "minus_dims", dv, 0, NULL);
    int s = slice_bounds(c, "start", pick(c, "start_given", hit, st, scalar_const(c, "zero", TG_I64, 0)), dv, nd);
    int e = slice_bounds(c, "end_clamped", pick(c, "end_given", hit, en, dv), dv, nd);
    e = e < 0 || s < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "end", e, s);   /* empty, not reversed */
    if (e < 0) return -1;
    if (sp >= 0) return slice_steps(c, x, hit, st, en, sp, dv, rank, named, xd);
    for (int q = 0; q < rank && x >= 0; q++) {
        if (!named[q]) continue;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "axis%d", q);
        int in[3] = {x, entry(c, "start_at", s, q), entry(c, "end_at", e, q)};
        tg_attr a[4] = {tg_attr_int("axis", q), tg_attr_int("step", 1), tg_attr_input("start", 1, TG_ATTR_DIMS),
                        tg_attr_input("end", 2, TG_ATTR_DIMS)};
        tg_shape ys = shape_of(c, x);
        if (in[1] < 0 || in[2] < 0 || data_dim(c, xd[q], &ys.d[q])) return -1;
        x = onnx_add_dynamic(c, TG_OP_SLICE, sfx, 3, in, 4, a, dtype_of(c, x), &ys);
    }
    return x;
}

/* Reshape x to dims value d (n entries, each at most hi), all data symbols. */
static int reshape_rt(onnx_ctx *c, int x, int d, int n, int64_t hi)
{
    tg_shape ys = {.rank = n};
    for (int i = 0; i < n; i++)
        if (data_dim(c, hi, &ys.d[i])) return -1;
    tg_attr a = tg_attr_input("shape", 1, TG_ATTR_DIMS);
    int in[2] = {x, d};
    return d < 0 ? -1 : onnx_add_dynamic(c, TG_OP_RESHAPE, NULL, 2, in, 1, &a, dtype_of(c, x), &ys);
}

/* Squeeze (unsq false) or Unsqueeze of x (static shape) over axes read at run
 * time (value av): a reshape to dims worked out by nodes. Unsqueeze: position p
 * of the output is 1 where an axis names it, else x's dim p - (how many named up
 * to p). Squeeze: output j is x's dim at the (j+1)-th position no axis names (a
 * named one that is not 1 makes the reshape fail when it runs). */
int onnx_rt_squeeze(onnx_ctx *c, int x, int av, bool unsq)
{
    int64_t xd[TG_MAX_RANK], hi = 1, pos[TG_MAX_RANK * 2], sh[2];
    int r = shape_of(c, x).rank, na, dv = static_dims(c, x, xd);
    if (dv < 0 || rt_vec(c, av, "the axes", TG_MAX_RANK, &na)) return -1;
    int rank = unsq ? r + na : r, out = unsq ? rank : r - na;
    if (out > TG_MAX_RANK || out < 0) return tg_err("%d axes for rank %d", na, r);
    for (int i = 0; i < r; i++) hi = xd[i] > hi ? xd[i] : hi;
    int hit = axis_hit(c, av, na, NULL, rank), named = sum_rows(c, "axis_named", hit);
    tg_attr cs[3] = {tg_attr_int("axis", 0), tg_attr_int("exclusive", 0), tg_attr_int("reverse", 0)};
    int one = scalar_const(c, "one", TG_I64, 1), zero = scalar_const(c, "zero", TG_I64, 0);
    if (unsq) {
        for (int p = 0; p < rank; p++) pos[p] = p;
        int before = named < 0 ? -1 : unary_on(c, TG_OP_CUMSUM, "named_so_far", named, 3, cs);
        int idx = before < 0 ? -1 : binary_on(c, TG_OP_SUB, "input_axis", vec_const(c, "positions_out", rank, pos), before);
        idx = idx < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "input_axis_valid", idx, zero);
        int in[2] = {dv, idx};
        tg_attr ax = tg_attr_int("axis", 0);
        int taken = idx < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "input_dim", 2, in, 1, &ax);
        int is = named < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_NE, "is_new", named, zero);
        return reshape_rt(c, x, where_on(c, "dims", is, one, taken), out, hi);
    }
    int kept = named < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_EQ, "kept", named, zero);
    tg_attr t = tg_attr_dtype("dtype", TG_I64);
    kept = kept < 0 ? -1 : unary_on(c, TG_OP_CAST, "kept_i64", kept, 1, &t);
    int rank_of = kept < 0 ? -1 : unary_on(c, TG_OP_CUMSUM, "kept_so_far", kept, 3, cs);
    for (int j = 0; j < out; j++) pos[j] = j + 1;
    sh[0] = out, sh[1] = 1;
    int m = rank_of < 0 ? -1 : binary_on(c, TG_OP_EQ, "output_of", mat_const(c, "outputs", 2, sh, pos), rank_of);
    m = m < 0 ? -1 : unary_on(c, TG_OP_CAST, "output_of_i64", m, 1, &t);
    m = m < 0 ? -1 : binary_on(c, TG_OP_MUL, "output_kept", m, kept);           /* [out, r] */
    m = m < 0 ? -1 : binary_on(c, TG_OP_MUL, "output_dim", m, dv);
    return reshape_rt(c, x, sum_rows(c, "dims", m), out, hi);
}

/* Range of values s, l, d read at run time (any numeric dtype, the output's
 * that of s): n = max(ceil((l - s) / d), 0) in float64, then s + i d for the
 * int64 arange i < n (exact while the values stay within 2^53). */
int onnx_rt_range(onnx_ctx *c, int s, int l, int d)
{
    tg_dtype dt = dtype_of(c, s);
    tg_attr f = tg_attr_dtype("dtype", TG_F64), t = tg_attr_dtype("dtype", TG_I64), back = tg_attr_dtype("dtype", dt);
    int v[3] = {s, l, d};
    for (int i = 0; i < 3; i++) {
        const tg_value *e = &c->g->values[v[i]];
        if (e->shape.rank > 1 || (e->shape.rank == 1 && !tg_dim_eq(e->shape.d[0], tg_dim_const(1))))
            return tg_err("'%s' must be a scalar", e->name);
        if (v[i] >= 0 && (v[i] = unary_on(c, TG_OP_CAST, "f64", v[i], 1, &f)) < 0) return -1;
    }
    int zero = scalar_const(c, "zero", TG_F64, 0);
    int q = binary_on(c, TG_OP_DIV, "count_exact", binary_on(c, TG_OP_SUB, "span", v[1], v[0]), v[2]);
    q = q < 0 ? -1 : unary_on(c, TG_OP_CEIL, "count_up", q, 0, NULL);
    q = q < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "count_nonneg", q, zero);
    /* past the dim's range (and NaN) as one more than it allows: the cast stays
     * defined and the arange's output fails the range check, naming the node */
    int over = scalar_const(c, "too_many", TG_F64, (double)RT_DIM_MAX + 1), nan = q < 0 ? -1 : binary_on(c, TG_OP_NE, "is_nan", q, q);
    q = over < 0 || nan < 0 ? -1 : where_on(c, "count_f64", nan, over, binary_on(c, TG_OP_MINIMUM, "count_bounded", q, over));
    q = q < 0 ? -1 : unary_on(c, TG_OP_CAST, "count", q, 1, &t);
    tg_shape ys = {.rank = 1};
    if (q < 0 || data_dim(c, RT_DIM_MAX, &ys.d[0])) return -1;
    tg_attr a[4] = {tg_attr_int("start", 0), tg_attr_int("step", 1), tg_attr_dtype("dtype", TG_I64),
                    tg_attr_input("end", 0, TG_ATTR_DIMS)};
    int i = onnx_add_dynamic(c, TG_OP_ARANGE, "index", 1, &q, 4, a, TG_I64, &ys);
    i = i < 0 ? -1 : unary_on(c, TG_OP_CAST, "index_f64", i, 1, &f);
    int y = i < 0 ? -1 : binary_on(c, TG_OP_ADD, "values", binary_on(c, TG_OP_MUL, "offsets", i, v[2]), v[0]);
    return y < 0 || dt == TG_F64 ? y : unary_on(c, TG_OP_CAST, NULL, y, 1, &back);
}

/* TopK over an axis of static length n, k a constant or read at run time (value
 * kv): the stable argsort along the axis (descending for largest; equal
 * elements keep index order either way, as ONNX orders ties), its first k
 * places (a slice; its length a data symbol when k is read at run time), and
 * the values gathered at them. O(n log n). */
int onnx_rt_topk(onnx_ctx *c, int x, int axis, int kv, int64_t k, bool largest, int *values, int *indices)
{
    tg_shape xs = shape_of(c, x);
    int ax = 0;
    int64_t n;
    if (axis_norm(axis, xs.rank, &ax)) return -1;
    if (!tg_dim_is_const(xs.d[ax], &n)) return tg_err("TopK needs a static axis");
    tg_attr sa[2] = {tg_attr_int("axis", ax), tg_attr_int("descending", largest)};
    int order = unary_on(c, TG_OP_ARGSORT, "order", x, 2, sa);
    if (order < 0) return -1;
    int idx;
    tg_dim z = tg_dim_const(0), kd = tg_dim_const(k);
    if (kv >= 0) {
        tg_shape ys = xs;
        if (data_dim(c, n, &ys.d[ax])) return -1;
        int in[2] = {order, kv};
        tg_attr a[4] = {tg_attr_int("axis", ax), tg_attr_int("step", 1), tg_attr_dims("start", 1, &z),
                        tg_attr_input("end", 1, TG_ATTR_DIMS)};
        idx = onnx_add_dynamic(c, TG_OP_SLICE, "first_k", 2, in, 4, a, TG_I64, &ys);
    } else {
        if (k < 0 || k > n) return tg_err("k = %lld for an axis of %lld", (long long)k, (long long)n);
        tg_attr a[4] = {tg_attr_int("axis", ax), tg_attr_int("step", 1), tg_attr_dims("start", 1, &z),
                        tg_attr_dims("end", 1, &kd)};
        idx = unary_on(c, TG_OP_SLICE, "first_k", order, 4, a);
    }
    int in[2] = {x, idx};
    tg_attr g = tg_attr_int("axis", ax);
    *indices = idx;
    *values = idx < 0 ? -1 : onnx_add(c, TG_OP_GATHER, "values", 2, in, 1, &g);
    return *values < 0 || *indices < 0 ? -1 : 0;
}

/* Slice of a static axis with a constant negative step: the indices ONNX's
 * clamping gives (start within [0, d-1], end within [-1, d-1]) as a constant,
 * then index_select. */
int onnx_slice_down(onnx_ctx *c, int x, int axis, int64_t start, int64_t end, int64_t step, const char *sfx)
{
    int64_t d, n = 0;
    if (!tg_dim_is_const(shape_of(c, x).d[axis], &d))
        return tg_err("Slice with step %lld needs a static axis", (long long)step);
    start = start < 0 ? (start < -d ? -1 : start + d) : start;
    end = end < 0 ? (end < -d ? -1 : end + d) : end;
    start = start < 0 ? 0 : start > d - 1 ? d - 1 : start;
    end = end < -1 ? -1 : end > d - 1 ? d - 1 : end;
    int64_t *idx = malloc((size_t)(d > 0 ? d : 1) * sizeof *idx);
    if (!idx) return tg_err("out of memory");
    for (int64_t i = start; i > end && d > 0; i += step) idx[n++] = i;
    int iv = mat_const(c, "indices", 1, &n, idx), in[2] = {x, iv};
    free(idx);
    tg_attr ax = tg_attr_int("axis", axis);
    return iv < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, sfx, 2, in, 1, &ax);
}
