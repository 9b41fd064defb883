/* ONNX math and generator operators written out in existing tgraph ops: the
 * window generators (HannWindow, HammingWindow, BlackmanWindow), EyeLike,
 * OneHot, CumProd, Det, Einsum, and CenterCropPad (crop and pad to sizes
 * that may be read at run time). What has no such form is refused by name. */
#include <ctype.h>
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"
#include "onnx_rt.h"

static int mul_by(onnx_ctx *c, int x, double k, const char *sfx)
{
    return x < 0 ? -1 : binary_on(c, TG_OP_MUL, sfx, x, scalar_const(c, "factor", dtype_of(c, x), k));
}

/* ---- window functions -------------------------------------------------------------------- */

/* HannWindow, HammingWindow, BlackmanWindow (opset 17) of a size read at run
 * time: n = 0..size-1 over N = size (periodic) or size - 1, in float64, then
 * output_datatype: sin^2(pi n/N); 25/46 - 21/46 cos(2 pi n/N);
 * 0.42 - 0.5 cos(2 pi n/N) + 0.08 cos(4 pi n/N). */
static int map_window(onnx_ctx *c, const onnx_op_map *m)
{
    const char *t = N(c)->op_type;
    int size = in_val(c, 0);
    if (size < 0) return -1;
    tg_dtype dt = onnx_elem_dtype((int32_t)onnx_attr_int(N(c), "output_datatype", 1));
    if (dt == TG_DTYPE_NONE || dt == TG_BOOL) return tg_err("output_datatype %lld is not a numeric type ONNX and tgraph share",
                                                        (long long)onnx_attr_int(N(c), "output_datatype", 1));
    int n = onnx_rt_range(c, scalar_const(c, "zero", TG_F64, 0), size, scalar_const(c, "one", TG_F64, 1));
    int len = cast_as(c, size, TG_F64, "size_f64");
    if (!onnx_attr_int(N(c), "periodic", 1))
        len = len < 0 ? -1 : binary_on(c, TG_OP_SUB, "size_minus_one", len, scalar_const(c, "one", TG_F64, 1));
    int ph = n < 0 || len < 0 ? -1 : binary_on(c, TG_OP_DIV, "phase", mul_by(c, n, M_PI, "pi_n"), len), y;
    if (ph < 0) return -1;
    if (!strcmp(t, "HannWindow")) {
        int s = unary_on(c, TG_OP_SIN, "sin", ph, 0, NULL);
        y = s < 0 ? -1 : binary_on(c, TG_OP_MUL, "window", s, s);
    } else {
        int c2 = mul_by(c, unary_on(c, TG_OP_COS, "cos2", mul_by(c, ph, 2, "phase2"), 0, NULL), !strcmp(t, "HammingWindow") ? -21.0 / 46 : -0.5, "term2");
        y = c2 < 0 ? -1 : binary_on(c, TG_OP_ADD, "window", c2, scalar_const(c, "alpha", TG_F64, !strcmp(t, "HammingWindow") ? 25.0 / 46 : 0.42));
        if (!strcmp(t, "BlackmanWindow")) {
            int c4 = mul_by(c, unary_on(c, TG_OP_COS, "cos4", mul_by(c, ph, 4, "phase4"), 0, NULL), 0.08, "term4");
            y = y < 0 || c4 < 0 ? -1 : binary_on(c, TG_OP_ADD, "window_full", y, c4);
        }
    }
    return def_out(c, 0, cast_as(c, y, dt, "cast"));
}

/* ---- EyeLike ------------------------------------------------------------------------------- */

/* EyeLike: ones on diagonal k of a matrix of the input's (2-D) shape, in
 * attribute dtype (default the input's): triu(tril(ones, k), k). */
static int map_eyelike(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    if (s.rank != 2) return tg_err("input must be 2-D, not of rank %d", s.rank);
    int64_t dtv = onnx_attr_int(N(c), "dtype", 0);
    tg_dtype dt = dtv ? onnx_elem_dtype((int32_t)dtv) : dtype_of(c, x);
    if (dt == TG_DTYPE_NONE) return tg_err("dtype %lld is not one tgraph has", (long long)dtv);
    tg_attr f[3] = {tg_attr_dims("shape", 2, s.d), tg_attr_float("value", 1), tg_attr_dtype("dtype", dt)};
    tg_attr k = tg_attr_int("k", onnx_attr_int(N(c), "k", 0));
    int y = onnx_add(c, TG_OP_FULL, "ones", 0, NULL, 3, f);
    y = y < 0 ? -1 : unary_on(c, TG_OP_TRIL, "lower", y, 1, &k);
    return def_out(c, 0, y < 0 ? -1 : unary_on(c, TG_OP_TRIU, NULL, y, 1, &k));
}

/* ---- CumProd ------------------------------------------------------------------------------- */

/* y shifted by s along its static axis (length len) forward (or back for
 * rev), the vacated places 1. */
static int shift_in_ones(onnx_ctx *c, int y, int axis, int64_t len, int64_t s, bool rev)
{
    tg_shape ys = shape_of(c, y);
    if (s >= len) {
        tg_attr f[3] = {tg_attr_dims("shape", ys.rank, ys.d), tg_attr_float("value", 1), tg_attr_dtype("dtype", dtype_of(c, y))};
        return onnx_add(c, TG_OP_FULL, "ones", 0, NULL, 3, f);
    }
    int64_t pads[2 * TG_MAX_RANK] = {0};
    pads[rev ? ys.rank + axis : axis] = s;
    tg_attr pa[2] = {tg_attr_ints("pads", 2 * ys.rank, pads), tg_attr_float("value", 1)};
    int part = rev ? slice_range(c, y, axis, s, len, "tail") : slice_range(c, y, axis, 0, len - s, "head");
    return part < 0 ? -1 : unary_on(c, TG_OP_PAD, "shifted", part, 2, pa);
}

/* Product scan of x along its static axis (length len): exclusive shifts x by
 * one first; then log2(len) steps of y *= y shifted by 2^j (Hillis-Steele). */
static int cumprod_axis(onnx_ctx *c, int x, int axis, int64_t len, bool excl, bool rev)
{
    int y = excl ? shift_in_ones(c, x, axis, len, 1, rev) : x;
    for (int64_t s = 1; s < len && y >= 0; s *= 2) {
        int sh = shift_in_ones(c, y, axis, len, s, rev);
        y = sh < 0 ? -1 : binary_on(c, TG_OP_MUL, "scan", y, sh);
    }
    return y;
}

/* CumProd (opset 26): an axis constant or read at run time; at run time every
 * axis' scan is computed and the one asked for selected. The scanned axis (at
 * run time, every axis) must be static. */
static int map_cumprod(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *ax = x < 0 ? NULL : in_req(c, 1);
    if (!ax) return -1;
    bool excl = onnx_attr_int(N(c), "exclusive", 0), rev = onnx_attr_int(N(c), "reverse", 0);
    tg_shape s = shape_of(c, x);
    int64_t d[TG_MAX_RANK];
    bool rt = ax->kind != ONNX_ENT_CONST;
    if (s.rank == 0) return tg_err("input must have at least one dim");
    for (int i = 0; i < s.rank; i++)
        if (!tg_dim_is_const(s.d[i], &d[i])) d[i] = -1;
    if (!rt) {
        int64_t a;
        int n, axis = 0;
        if (onnx_int_list(ax, 1, &a, &n) || axis_norm(a, s.rank, &axis)) return -1;
        if (d[axis] < 0) return tg_err("the scanned axis %d is dynamic (it must be static)", axis);
        return def_out(c, 0, cumprod_axis(c, x, axis, d[axis], excl, rev));
    }
    for (int i = 0; i < s.rank; i++)
        if (d[i] < 0) return tg_err("input dim %d is dynamic (with the axis given at run time, every axis must be static)", i);
    int av = cast_as(c, onnx_value(c, ax), TG_I64, "axis_i64"), y = -1;
    if (av < 0) return -1;
    /* the axis through index_select of [0, rank): a negative one counts from
     * the end, one out of range fails at run time naming the node */
    int64_t r = s.rank, *ids = malloc(sizeof(int64_t) * TG_MAX_RANK);
    if (!ids) return tg_err("out of memory");
    for (int i = 0; i < s.rank; i++) ids[i] = i;
    tg_attr a0 = tg_attr_int("axis", 0);
    int sel[2] = {const_named(c, "axes", TG_I64, 1, &r, ids), av};
    int an = sel[0] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "axis_checked", 2, sel, 1, &a0);
    for (int i = s.rank - 1; i >= 0 && an >= 0; i--) {
        int yi = cumprod_axis(c, x, i, d[i], excl, rev);
        if (y < 0) {
            y = yi;
            continue;
        }
        int is = binary_on(c, TG_OP_EQ, "is_axis", an, scalar_const(c, "axis_i", TG_I64, i));
        y = yi < 0 ? -1 : where_on(c, "by_axis", is, yi, y);
    }
    return def_out(c, 0, y);
}

/* ---- OneHot -------------------------------------------------------------------------------- */

/* OneHot: a new axis of depth (read at run time: its length a data symbol)
 * where position j is on_value when j equals the index (a negative one
 * counting from depth; out of range: none), else off_value. Compared in
 * float64, as the reference compares whatever type the indices have. */
static int map_onehot(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), dep = x < 0 ? -1 : in_val(c, 1), vals = dep < 0 ? -1 : in_val(c, 2);
    if (vals < 0) return -1;
    tg_shape xs = shape_of(c, x), ds = shape_of(c, dep), vs = shape_of(c, vals);
    int64_t two;
    if (vs.rank != 1 || !tg_dim_is_const(vs.d[0], &two) || two != 2) return tg_err("values must be [off_value, on_value]");
    if (ds.rank > 1 || (ds.rank == 1 && !tg_dim_eq(ds.d[0], tg_dim_const(1)))) return tg_err("depth must be a scalar");
    if (xs.rank + 1 > TG_MAX_RANK) return tg_err("indices of rank %d are too large", xs.rank);
    int axis = 0;
    if (axis_norm(onnx_attr_int(N(c), "axis", -1), xs.rank + 1, &axis)) return -1;
    int d = cast_as(c, ds.rank ? reshape_as(c, dep, 0, NULL, "depth_scalar") : dep, TG_F64, "depth_f64");
    int pos = d < 0 ? -1 : onnx_rt_range(c, scalar_const(c, "zero", TG_F64, 0), d, scalar_const(c, "one", TG_F64, 1));
    if (pos < 0) return -1;
    /* the depth axis last (the positions broadcast as they are), then moved to axis */
    tg_dim id[TG_MAX_RANK];
    int64_t perm[TG_MAX_RANK];
    for (int i = 0; i < xs.rank; i++) id[i] = xs.d[i];
    id[xs.rank] = tg_dim_const(1);
    for (int i = 0, j = 0; i <= xs.rank; i++) perm[i] = i == axis ? xs.rank : j++;
    int idx = cast_as(c, x, TG_F64, "indices_f64"), zero = scalar_const(c, "zero", TG_F64, 0);
    idx = idx < 0 ? -1 : where_on(c, "wrapped", binary_on(c, TG_OP_LT, "negative", idx, zero), binary_on(c, TG_OP_ADD, "from_end", idx, d), idx);
    int hit = binary_on(c, TG_OP_EQ, "hot", reshape_as(c, idx, xs.rank + 1, id, "indices_nd"), pos);
    int off = reshape_as(c, slice_range(c, vals, 0, 0, 1, "off"), 0, NULL, "off_value");
    int on = reshape_as(c, slice_range(c, vals, 0, 1, 2, "on"), 0, NULL, "on_value");
    int y = hit < 0 || off < 0 || on < 0 ? -1 : where_on(c, axis == xs.rank ? NULL : "depth_last", hit, on, off);
    tg_attr p = tg_attr_ints("perm", xs.rank + 1, perm);
    return def_out(c, 0, y < 0 || axis == xs.rank ? y : unary_on(c, TG_OP_PERMUTE, NULL, y, 1, &p));
}

/* ---- CenterCropPad ------------------------------------------------------------------------ */

/* CenterCropPad: each listed axis cropped to its target size (from
 * (dim - size) / 2 on) or zero-padded to it ((size - dim) / 2 before, the
 * rest after). Sizes given as constants: a slice and a pad; read at run time:
 * the same through the run-time slice and pad (the output dims data symbols;
 * the input's shape must be static). */
static int map_center_crop_pad(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *se = x < 0 ? NULL : in_req(c, 1);
    if (!se) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t axes[TG_MAX_RANK], dims[TG_MAX_RANK], want[TG_MAX_RANK];
    int na, n;
    if (attr_ints(c, "axes", TG_MAX_RANK, axes, &na)) return -1;
    if (na < 0)
        for (na = 0; na < xs.rank; na++) axes[na] = na;
    for (int i = 0; i < na; i++) {
        int a = 0;
        if (axis_norm(axes[i], xs.rank, &a)) return -1;
        axes[i] = a;
        if (!tg_dim_is_const(xs.d[a], &dims[i])) return tg_err("input dim %d is dynamic (cropped or padded axes must be static)", a);
    }
    if (se->kind == ONNX_ENT_CONST) {
        if (onnx_int_list(se, TG_MAX_RANK, want, &n)) return -1;
        if (n != na) return tg_err("shape has %d values for %d axes", n, na);
        int y = x;
        int64_t pads[2 * TG_MAX_RANK] = {0};
        bool pad = false;
        for (int i = 0; i < na && y >= 0; i++) {
            if (want[i] < 0) return tg_err("shape[%d] = %lld is negative", i, (long long)want[i]);
            int64_t d = dims[i] - want[i];
            if (d > 0) y = slice_range(c, y, (int)axes[i], d / 2, d / 2 + want[i], "crop");
            if (d < 0) pads[axes[i]] = -d / 2, pads[xs.rank + axes[i]] = -d - -d / 2, pad = true;
        }
        tg_attr pa[2] = {tg_attr_ints("pads", 2 * xs.rank, pads), tg_attr_float("value", 0)};
        return def_out(c, 0, !pad || y < 0 ? y : unary_on(c, TG_OP_PAD, NULL, y, 2, pa));
    }
    int64_t nn = na, *dv = malloc(sizeof(int64_t) * TG_MAX_RANK);
    if (!dv) return tg_err("out of memory");
    memcpy(dv, dims, sizeof(int64_t) * (size_t)na);
    int in = const_named(c, "dims", TG_I64, 1, &nn, dv), t = cast_as(c, onnx_value(c, se), TG_I64, "shape_i64");
    int zero = scalar_const(c, "zero", TG_I64, 0), two = scalar_const(c, "two", TG_I64, 2);
    if (in < 0 || t < 0 || zero < 0 || two < 0) return -1;
    if (shape_of(c, t).rank != 1 || !tg_dim_eq(shape_of(c, t).d[0], tg_dim_const(na)))
        return tg_err("shape must be a vector of %d values, one per axis", na);
    int crop = binary_on(c, TG_OP_MAXIMUM, "crop", binary_on(c, TG_OP_SUB, "excess", in, t), zero);
    int start = crop < 0 ? -1 : binary_on(c, TG_OP_DIV, "crop_start", crop, two);
    int end = start < 0 ? -1 : binary_on(c, TG_OP_ADD, "crop_end", start, binary_on(c, TG_OP_SUB, "kept", in, crop));
    int y = end < 0 ? -1 : onnx_rt_slice(c, x, start, end, -1, na, axes, -1);
    int grow = y < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "grow", binary_on(c, TG_OP_SUB, "shortfall", t, in), zero);
    int before = grow < 0 ? -1 : binary_on(c, TG_OP_DIV, "pad_before", grow, two);
    int ba[2] = {before, before < 0 ? -1 : binary_on(c, TG_OP_SUB, "pad_after", grow, before)};
    tg_attr ax = tg_attr_int("axis", 0);
    int pads = ba[1] < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, "pads", 2, ba, 1, &ax);
    return def_out(c, 0, pads < 0 ? -1 : onnx_rt_pad(c, y, pads, na, axes, -1, 0, -1, "constant"));
}

/* ---- Det ---------------------------------------------------------------------------------- */

#define DET_MAX_N 4

/* Det of [..., n, n], n <= DET_MAX_N static: the Leibniz sum over
 * permutations of products of the n^2 entries, each sliced out. */
static int map_det(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    int64_t n, n2;
    if (s.rank < 2 || !tg_dim_is_const(s.d[s.rank - 1], &n) || !tg_dim_is_const(s.d[s.rank - 2], &n2) || n != n2)
        return tg_err("input must be [..., n, n] with n static");
    if (n < 1 || n > DET_MAX_N) return tg_err("%lldx%lld matrices are not supported (at most %dx%d)", (long long)n,
                                              (long long)n, DET_MAX_N, DET_MAX_N);
    tg_dim fd[TG_MAX_RANK];
    for (int i = 0; i < s.rank - 2; i++) fd[i] = s.d[i];
    fd[s.rank - 2] = tg_dim_const(n * n);
    int flat = reshape_as(c, x, s.rank - 1, fd, "entries"), e[DET_MAX_N * DET_MAX_N];
    for (int i = 0; i < n * n; i++)
        if ((e[i] = slice_range(c, flat, s.rank - 2, i, i + 1, "entry")) < 0) return -1;
    int perm[DET_MAX_N], y = -1;
    for (int i = 0; i < n; i++) perm[i] = i;
    for (;;) {                                  /* permutations in lexicographic order */
        int inv = 0, p = e[perm[0]];
        for (int i = 0; i < n; i++)
            for (int j = i + 1; j < n; j++) inv += perm[i] > perm[j];
        for (int i = 1; i < n && p >= 0; i++) p = binary_on(c, TG_OP_MUL, "product", p, e[i * n + perm[i]]);
        y = p < 0 ? -1 : y < 0 ? (inv % 2 ? unary_on(c, TG_OP_NEG, "term", p, 0, NULL) : p)
                                : binary_on(c, inv % 2 ? TG_OP_SUB : TG_OP_ADD, "sum", y, p);
        if (y < 0) return -1;
        int i = (int)n - 2;
        while (i >= 0 && perm[i] > perm[i + 1]) i--;
        if (i < 0) break;
        int j = (int)n - 1;
        while (perm[j] < perm[i]) j--;
        int t = perm[i];
        perm[i] = perm[j], perm[j] = t;
        for (int a = i + 1, b = (int)n - 1; a < b; a++, b--) t = perm[a], perm[a] = perm[b], perm[b] = t;
    }
    return def_out(c, 0, reshape_as(c, y, s.rank - 2, s.d, NULL));
}

/* ---- Einsum -------------------------------------------------------------------------------- */

/* One operand's labels: a letter per axis, the ellipsis expanded into digits
 * '0'.. (aligned to the right across operands, as NumPy broadcasts them). */
typedef struct {
    int n;
    char l[TG_MAX_RANK + 1];
} ein_term;

/* Letters and whether there is an ellipsis in term s (spaces removed). */
static int ein_count(const char *s, size_t len, int *letters, bool *ell)
{
    *letters = 0, *ell = false;
    for (size_t i = 0; i < len; i++)
        if (isalpha((unsigned char)s[i]))
            ++*letters;
        else if (!*ell && len - i >= 3 && !strncmp(s + i, "...", 3))
            *ell = true, i += 2;
        else
            return tg_err("equation term '%.*s' has '%c' where a letter or one '...' belongs", (int)len, s, s[i]);
    return 0;
}

/* The labels of term s, its ellipsis ne digits from first on. */
static void ein_fill(const char *s, size_t len, int first, int ne, ein_term *t)
{
    t->n = 0;
    for (size_t i = 0; i < len; i++) {
        if (s[i] == '.') {
            for (int k = 0; k < ne; k++) t->l[t->n++] = (char)('0' + first + k);
            i += 2;
        } else
            t->l[t->n++] = s[i];
    }
    t->l[t->n] = 0;
}

/* Sum of x over axis a (keepdim 0). */
static int sum_axis(onnx_ctx *c, int x, int a)
{
    tg_attr r[2] = {tg_attr_ints("axes", 1, (int64_t[]){a}), tg_attr_int("keepdim", 0)};
    return x < 0 ? -1 : unary_on(c, TG_OP_REDUCE_SUM, "sum", x, 2, r);
}

/* Diagonals of repeated labels (x times an identity, summed over the second
 * axis), then the labels neither in keep nor elsewhere summed out. */
static int ein_reduce(onnx_ctx *c, int x, ein_term *t, const char *keep)
{
    for (int i = 0; i < t->n && x >= 0; i++)
        for (int j = i + 1; j < t->n && x >= 0; j++) {
            if (t->l[i] != t->l[j]) continue;
            tg_shape s = shape_of(c, x);
            int64_t n;
            if (!tg_dim_is_const(s.d[i], &n) || !tg_dim_eq(s.d[i], s.d[j])) return tg_err("repeated label '%c' over unequal or dynamic dims", t->l[i]);
            int64_t rank = s.rank, dims[TG_MAX_RANK];
            for (int k = 0; k < rank; k++) dims[k] = k == i || k == j ? n : 1;
            uint8_t *p = calloc((size_t)(n * n), 1);
            if (!p) return tg_err("out of memory");
            for (int64_t k = 0; k < n; k++) p[k * n + k] = 1;
            int eye = const_named(c, "eye", TG_BOOL, s.rank, dims, p);
            int zero = scalar_const(c, "zero", dtype_of(c, x), 0);
            x = where_on(c, "diagonal_only", eye, x, zero);
            x = sum_axis(c, x, j);
            memmove(&t->l[j], &t->l[j + 1], (size_t)(t->n - j));
            t->n--;
            j--;
        }
    for (int i = t->n - 1; i >= 0 && x >= 0; i--)
        if (!strchr(keep, t->l[i])) {
            x = sum_axis(c, x, i);
            memmove(&t->l[i], &t->l[i + 1], (size_t)(t->n - i));
            t->n--;
        }
    return x;
}

/* x with its axes (labels t) in the order of labels o; every label of o must be in t. */
static int ein_permute(onnx_ctx *c, int x, ein_term *t, const char *o, int no)
{
    int64_t p[TG_MAX_RANK] = {0};
    bool same = true;
    for (int i = 0; i < no; i++) {
        p[i] = strchr(t->l, o[i]) - t->l;
        same &= p[i] == i;
    }
    memcpy(t->l, o, (size_t)no);
    t->l[no] = 0;
    tg_attr a = tg_attr_ints("perm", no, p);
    return same || x < 0 ? x : unary_on(c, TG_OP_PERMUTE, "perm", x, 1, &a);
}

static tg_dim dim_prod(onnx_ctx *c, int x, int from, int to, int *err)
{
    tg_dim d = tg_dim_const(1);
    tg_shape s = shape_of(c, x);
    for (int i = from; i < to; i++)
        if (tg_dim_mul(d, s.d[i], &d)) *err = 1;
    return d;
}

/* Einsum of one or two operands: diagonals and labels of one operand only
 * summed out, then for two a batched matmul over [batch, left, contracted] x
 * [batch, contracted, right], then the output's order. */
static int map_einsum(onnx_ctx *c, const onnx_op_map *m)
{
    const char *eq = onnx_attr_string(N(c), "equation", NULL);
    if (!eq) return tg_err("attribute equation is required");
    char buf[256];
    size_t bl = 0;
    for (const char *p = eq; *p && bl < sizeof buf - 1; p++)
        if (!isspace((unsigned char)*p)) buf[bl++] = *p;
    buf[bl] = 0;
    int nin = (int)N(c)->n_input;
    if (nin < 1 || nin > 2) return tg_err("%d operands (only one or two are supported)", nin);
    int x[2] = {in_val(c, 0), nin > 1 ? in_val(c, 1) : 0};
    if (x[0] < 0 || x[1] < 0) return -1;
    char *arrow = strstr(buf, "->"), *comma = strchr(buf, ',');
    const char *end = arrow ? arrow : buf + bl;
    if ((nin == 2) != (comma && comma < end) || (comma && strchr(comma + 1, ',') && strchr(comma + 1, ',') < end))
        return tg_err("equation '%s' does not have %d operand terms", eq, nin);
    ein_term t[2], o;
    int nell = 0, ne[2] = {0, 0}, letters;
    bool ell;
    const char *starts[2] = {buf, comma ? comma + 1 : NULL}, *ends[2] = {comma ? comma : end, end};
    for (int i = 0; i < nin; i++) {             /* each ellipsis aligned to the right of the widest */
        int rank = shape_of(c, x[i]).rank;
        if (ein_count(starts[i], (size_t)(ends[i] - starts[i]), &letters, &ell)) return -1;
        ne[i] = rank - letters;
        if (ne[i] < 0 || (!ell && ne[i]) || letters + ne[i] > TG_MAX_RANK)
            return tg_err("equation term %d has %d labels for an operand of rank %d", i, letters, rank);
        if (ne[i] > nell) nell = ne[i];
    }
    for (int i = 0; i < nin; i++) ein_fill(starts[i], (size_t)(ends[i] - starts[i]), nell - ne[i], ne[i], &t[i]);
    if (arrow) {
        const char *os = arrow + 2;
        if (ein_count(os, strlen(os), &letters, &ell)) return -1;
        if (letters + (ell ? nell : 0) > TG_MAX_RANK) return tg_err("output has too many labels");
        ein_fill(os, strlen(os), 0, ell ? nell : 0, &o);
    } else {                                    /* implicit: the ellipsis, then labels seen once, sorted */
        o.n = 0;
        for (int k = 0; k < nell; k++) o.l[o.n++] = (char)('0' + k);
        for (int ch = 'A'; ch <= 'z'; ch++) {
            int cnt = 0;
            for (int i = 0; i < nin; i++)
                for (int k = 0; k < t[i].n; k++) cnt += t[i].l[k] == ch;
            if (isalpha(ch) && cnt == 1 && o.n < TG_MAX_RANK) o.l[o.n++] = (char)ch;
        }
    }
    o.l[o.n] = 0;
    for (int k = 0; k < o.n; k++) {
        if (strchr(o.l + k + 1, o.l[k])) return tg_err("output label '%c' repeats", o.l[k]);
        if (!strchr(t[0].l, o.l[k]) && (nin < 2 || !strchr(t[1].l, o.l[k]))) return tg_err("output label '%c' is in no operand", o.l[k]);
    }
    for (int i = 0; i < nin; i++) {             /* keep what the output or the other operand has */
        char keep[2 * TG_MAX_RANK + 2];
        snprintf(keep, sizeof keep, "%s%s", o.l, nin == 2 ? t[1 - i].l : "");
        if ((x[i] = ein_reduce(c, x[i], &t[i], keep)) < 0) return -1;
    }
    if (nin == 1) return def_out(c, 0, ein_permute(c, x[0], &t[0], o.l, o.n));
    char bat[TG_MAX_RANK + 1] = "", lft[TG_MAX_RANK + 1] = "", rgt[TG_MAX_RANK + 1] = "", con[TG_MAX_RANK + 1] = "";
    int nb = 0, nl = 0, nr = 0, nc = 0;
    for (int k = 0; k < t[0].n; k++) {
        char ch = t[0].l[k];
        bool other = strchr(t[1].l, ch), out = strchr(o.l, ch);
        if (other && out) bat[nb++] = ch;
        else if (other) con[nc++] = ch;
        else lft[nl++] = ch;
    }
    for (int k = 0; k < t[1].n; k++)
        if (!strchr(t[0].l, t[1].l[k])) rgt[nr++] = t[1].l[k];
    char oa[TG_MAX_RANK + 1], ob[TG_MAX_RANK + 1];
    snprintf(oa, sizeof oa, "%s%s%s", bat, lft, con);
    snprintf(ob, sizeof ob, "%s%s%s", bat, con, rgt);
    int a = ein_permute(c, x[0], &t[0], oa, nb + nl + nc), b = ein_permute(c, x[1], &t[1], ob, nb + nc + nr), err = 0;
    if (a < 0 || b < 0) return -1;
    tg_shape as = shape_of(c, a), bs = shape_of(c, b);
    for (int k = 0; k < nb + nc; k++)
        if (!tg_dim_eq(as.d[k < nb ? k : nb + nl + k - nb], bs.d[k]))
            return tg_err("label '%c' has unequal dims in the two operands (broadcasting is not supported)", k < nb ? bat[k] : con[k - nb]);
    tg_dim ad[3] = {dim_prod(c, a, 0, nb, &err), dim_prod(c, a, nb, nb + nl, &err), dim_prod(c, a, nb + nl, nb + nl + nc, &err)};
    tg_dim bd[3] = {ad[0], ad[2], dim_prod(c, b, nb + nc, nb + nc + nr, &err)};
    if (err) return -1;
    int y = binary_on(c, TG_OP_MATMUL, "matmul", reshape_as(c, a, 3, ad, "lhs"), reshape_as(c, b, 3, bd, "rhs"));
    tg_dim yd[TG_MAX_RANK];
    ein_term yt = {.n = nb + nl + nr};
    for (int k = 0; k < nb + nl; k++) yd[k] = as.d[k];
    for (int k = 0; k < nr; k++) yd[nb + nl + k] = bs.d[nb + nc + k];
    snprintf(yt.l, sizeof yt.l, "%s%s%s", bat, lft, rgt);
    y = reshape_as(c, y, yt.n, yd, "product");
    return def_out(c, 0, ein_permute(c, y, &yt, o.l, o.n));
}

/* ---- the table ------------------------------------------------------------------------------ */

const onnx_op_map onnx_math_ops[] = {
    {"HannWindow", map_window, 0}, {"HammingWindow", map_window, 0}, {"BlackmanWindow", map_window, 0},
    {"EyeLike", map_eyelike, 0}, {"CumProd", map_cumprod, 0}, {"Det", map_det, 0},
    {"Einsum", map_einsum, 0}, {"OneHot", map_onehot, 0}, {"CenterCropPad", map_center_crop_pad, 0},
};
const int onnx_math_nops = (int)(sizeof onnx_math_ops / sizeof onnx_math_ops[0]);
