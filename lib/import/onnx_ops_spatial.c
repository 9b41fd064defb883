/* ONNX spatial and vision operators that onnx_ops.c does not map: DepthToSpace,
 * SpaceToDepth, PRelu, MeanVarianceNormalization, LRN, Col2Im (decompositions
 * into existing tgraph ops: reshape, permute, pooling, convolution,
 * elementwise) and GridSample (grid_sample). What those have no form for is
 * refused by name. */
#include <math.h>
#include <stdlib.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include "../error.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* ---- DepthToSpace, SpaceToDepth ----------------------------------------------------------- */

/* Both are a reshape to rank 6, a permutation and a reshape back. DCR (depth,
 * column, row) orders the channel as [b, b, C'], CRD as [C', b, b]. */
static int map_depth_space(onnx_ctx *c, const onnx_op_map *m)
{
    bool to_space = !strcmp(N(c)->op_type, "DepthToSpace");
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t b = onnx_attr_int(N(c), "blocksize", 0), ch;
    const char *mode = onnx_attr_string(N(c), "mode", "DCR");
    bool crd = !strcmp(mode, "CRD");
    if (!crd && strcmp(mode, "DCR")) return tg_err("mode '%s' is not DCR or CRD", mode);
    if (xs.rank != 4) return tg_err("input of rank %d: expected 4 (NCHW)", xs.rank);
    if (b < 1 || b > INT32_MAX) return tg_err("blocksize %lld is not positive", (long long)b);
    if (!tg_dim_is_const(xs.d[1], &ch)) return tg_err("needs a static channel dim");
    tg_dim bd = tg_dim_const(b), d6[6], d4[4] = {xs.d[0]};
    if (to_space) {
        if (ch % (b * b)) return tg_err("%lld channels are not a multiple of blocksize^2 = %lld",
                                        (long long)ch, (long long)(b * b));
        tg_dim cd = tg_dim_const(ch / (b * b));
        tg_dim dcr[6] = {xs.d[0], bd, bd, cd, xs.d[2], xs.d[3]}, crd6[6] = {xs.d[0], cd, bd, bd, xs.d[2], xs.d[3]};
        memcpy(d6, crd ? crd6 : dcr, sizeof d6);
        d4[1] = cd;
        if (tg_dim_mul(xs.d[2], bd, &d4[2]) || tg_dim_mul(xs.d[3], bd, &d4[3])) return -1;
    } else {
        int64_t hw[2];
        for (int i = 0; i < 2; i++)
            if (!tg_dim_is_const(xs.d[2 + i], &hw[i]) || hw[i] % b)
                return tg_err("spatial dim %d is not a static multiple of blocksize %lld", 2 + i, (long long)b);
        tg_dim s6[6] = {xs.d[0], xs.d[1], tg_dim_const(hw[0] / b), bd, tg_dim_const(hw[1] / b), bd};
        memcpy(d6, s6, sizeof d6);
        d4[1] = tg_dim_const(ch * b * b), d4[2] = s6[2], d4[3] = s6[4];
    }
    static const int64_t p_dcr[6] = {0, 3, 4, 1, 5, 2}, p_crd[6] = {0, 1, 4, 2, 5, 3};
    static const int64_t s_dcr[6] = {0, 3, 5, 1, 2, 4}, s_crd[6] = {0, 1, 3, 5, 2, 4};
    const int64_t *perm = to_space ? (crd ? p_crd : p_dcr) : (crd ? s_crd : s_dcr);
    int y = permute_to(c, reshape_to(c, x, 6, d6, "blocks"), 6, perm, "moved");
    return def_out(c, 0, reshape_to(c, y, 4, d4, NULL));
}

/* ---- PRelu, MeanVarianceNormalization, LRN ------------------------------------------------ */

/* PRelu: x where x >= 0, else slope * x (slope broadcast to x). */
static int map_prelu(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), s = x < 0 ? -1 : in_val(c, 1);
    if (s < 0) return -1;
    int zero = scalar_const(c, "zero", dtype_of(c, x), 0);
    int neg = zero < 0 ? -1 : binary_on(c, TG_OP_LT, "negative", x, zero);
    int sx = neg < 0 ? -1 : binary_on(c, TG_OP_MUL, "scaled", x, s);
    return def_out(c, 0, sx < 0 ? -1 : where_on(c, NULL, neg, sx, x));
}

/* MeanVarianceNormalization as ONNX's function body writes it:
 * (x - E[x]) / (sqrt(E[x^2] - E[x]^2) + 1e-9) over axes (default 0, 2, 3). */
static int map_mvn(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), n;
    if (x < 0) return -1;
    int64_t axes[TG_MAX_RANK] = {0, 2, 3};
    if (attr_ints(c, "axes", TG_MAX_RANK, axes, &n)) return -1;
    if (n < 0) n = 3;
    tg_attr a[2] = {tg_attr_int("keepdim", 1), tg_attr_ints("axes", n, axes)};
    int mean = unary_on(c, TG_OP_REDUCE_MEAN, "mean", x, 2, a);
    int sq = mean < 0 ? -1 : binary_on(c, TG_OP_MUL, "square", x, x);
    int msq = sq < 0 ? -1 : unary_on(c, TG_OP_REDUCE_MEAN, "mean_square", sq, 2, a);
    int m2 = msq < 0 ? -1 : binary_on(c, TG_OP_MUL, "mean_squared", mean, mean);
    int var = m2 < 0 ? -1 : binary_on(c, TG_OP_SUB, "variance", msq, m2);
    int sd = var < 0 ? -1 : unary_on(c, TG_OP_SQRT, "std", var, 0, NULL);
    int eps = sd < 0 ? -1 : scalar_const(c, "epsilon", dtype_of(c, x), 1e-9);
    int den = eps < 0 ? -1 : binary_on(c, TG_OP_ADD, "std_eps", sd, eps);
    int num = den < 0 ? -1 : binary_on(c, TG_OP_SUB, "centered", x, mean);
    return def_out(c, 0, num < 0 ? -1 : binary_on(c, TG_OP_DIV, NULL, num, den));
}

/* LRN: x / (bias + alpha/size * sum of x^2 over the channels c - floor((size-1)/2)
 * to c + ceil((size-1)/2))^beta. The channel sum is an average pool over
 * [N, 1, C, rest] with the channel axis zero-padded: alpha * that average. */
static int map_lrn(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t size = onnx_attr_int(N(c), "size", 0);
    double alpha = onnx_attr_float(N(c), "alpha", 1e-4), beta = onnx_attr_float(N(c), "beta", 0.75);
    double bias = onnx_attr_float(N(c), "bias", 1);
    if (size < 1 || size > INT32_MAX) return tg_err("size %lld is not positive", (long long)size);
    if (xs.rank < 3) return tg_err("input of rank %d: expected 3 or more", xs.rank);
    tg_dim rest = tg_dim_const(1);
    for (int i = 2; i < xs.rank; i++)
        if (tg_dim_mul(rest, xs.d[i], &rest)) return -1;
    tg_dim d4[4] = {xs.d[0], tg_dim_const(1), xs.d[1], rest};
    tg_dtype dt = dtype_of(c, x);
    int sq = binary_on(c, TG_OP_MUL, "square", x, x);
    int64_t pads[8] = {0, 0, (size - 1) / 2, 0, 0, 0, size / 2, 0};
    tg_attr pa[2] = {tg_attr_ints("pads", 8, pads), tg_attr_float("value", 0)};
    int sp = sq < 0 ? -1 : unary_on(c, TG_OP_PAD, "padded", reshape_to(c, sq, 4, d4, "channels"), 2, pa);
    int64_t k[2] = {size, 1}, one[2] = {1, 1}, zero[2] = {0, 0};
    tg_attr a[4] = {tg_attr_ints("kernel", 2, k), tg_attr_ints("stride", 2, one), tg_attr_ints("padding", 2, zero),
                    tg_attr_int("count_include_pad", 1)};
    int avg = sp < 0 ? -1 : unary_on(c, TG_OP_AVG_POOL, "window_mean", sp, 4, a);
    avg = reshape_to(c, avg, xs.rank, xs.d, "window_mean_nc");
    int sc = avg < 0 ? -1 : binary_on(c, TG_OP_MUL, "alpha", avg, scalar_const(c, "alpha", dt, alpha));
    int bs = sc < 0 ? -1 : binary_on(c, TG_OP_ADD, "bias", sc, scalar_const(c, "bias", dt, bias));
    int pw = bs < 0 ? -1 : binary_on(c, TG_OP_POW, "beta", bs, scalar_const(c, "beta", dt, beta));
    return def_out(c, 0, pw < 0 ? -1 : binary_on(c, TG_OP_DIV, NULL, x, pw));
}

/* ---- GridSample ------------------------------------------------------------------------- */

/* GridSample onto grid_sample: opset 16's mode names bilinear and bicubic are
 * opset 20's linear and cubic; a grid of another float type is cast to x's. */
static int map_grid_sample(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), grid = x < 0 ? -1 : in_val(c, 1);
    if (grid < 0) return -1;
    char mode[64];      /* onnx_attr_string's buffer is reused by the next call */
    snprintf(mode, sizeof mode, "%s", onnx_attr_string(N(c), "mode", c->opset < 20 ? "bilinear" : "linear"));
    const char *pad = onnx_attr_string(N(c), "padding_mode", "zeros");
    if (!strcmp(mode, "bilinear")) strcpy(mode, "linear");
    if (!strcmp(mode, "bicubic")) strcpy(mode, "cubic");
    if (dtype_of(c, grid) != dtype_of(c, x)) {
        tg_attr t = tg_attr_dtype("dtype", dtype_of(c, x));
        if ((grid = unary_on(c, TG_OP_CAST, "grid_cast", grid, 1, &t)) < 0) return -1;
    }
    tg_attr a[3] = {tg_attr_string("mode", mode), tg_attr_string("padding", pad),
                    tg_attr_int("align_corners", onnx_attr_int(N(c), "align_corners", 0))};
    int in[2] = {x, grid};
    return def_out(c, 0, onnx_add(c, TG_OP_GRID_SAMPLE, NULL, 2, in, 3, a));
}

/* ---- DeformConv ----------------------------------------------------------------------- */

/* A constant of x's dtype with the given dims and values (taken). */
static int f64_const(onnx_ctx *c, const char *sfx, tg_dtype dt, int rank, const int64_t *dims, const double *v)
{
    int64_t n = tg_tensor_numel(rank, dims);
    void *p = malloc((size_t)(n ? n : 1) * tg_dtype_size(dt));
    if (!p) return tg_err("out of memory");
    for (int64_t i = 0; i < n; i++) tg_store_f64(dt, p, (size_t)i, v[i]);
    return const_named(c, sfx, dt, rank, dims, p);
}

/* DeformConv (2-D): each kernel tap samples x bilinearly (zero outside) at its
 * place in the window moved by the offsets, as ONNX's reference does with
 * GridSample: one grid_sample per offset group over all taps, the samples
 * times the mask, then a grouped matmul with the weights and the bias. */
static int map_deform_conv(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), w = x < 0 ? -1 : in_val(c, 1), off = w < 0 ? -1 : in_val(c, 2);
    int b = off < 0 ? -1 : in_val_opt(c, 3), mk = in_val_opt(c, 4);
    if (off < 0 || (b < 0 && in_opt(c, 3)) || (mk < 0 && in_opt(c, 4))) return -1;
    tg_shape xs = shape_of(c, x), ws = shape_of(c, w), os = shape_of(c, off);
    int64_t xd[4], wd[4], od[4], k[3], st[3], dil[3], pads[6];
    int nsp;
    if (xs.rank != 4 || ws.rank != 4 || os.rank != 4) return tg_err("only 2-D DeformConv (inputs of rank 4) is supported");
    if (onnx_window_attrs(c, &xs, &ws, k, st, dil, NULL, pads, &nsp)) return -1;
    for (int i = 1; i < 4; i++)
        if (!tg_dim_is_const(xs.d[i], &xd[i]) || !tg_dim_is_const(os.d[i], &od[i]))
            return tg_err("needs static shapes but the batch");
    if (const_dims(ws, 4, wd) >= 0) return tg_err("needs a static weight shape");
    int64_t G = onnx_attr_int(N(c), "group", 1), og = onnx_attr_int(N(c), "offset_group", 1), K = k[0] * k[1];
    int64_t C = xd[1], H = xd[2], W = xd[3], oC = wd[0], oH = od[2], oW = od[3], L = oH * oW;
    if (G < 1 || og < 1 || C % G || C % og || oC % G || wd[1] * G != C || od[1] != og * K * 2 || wd[2] != k[0] ||
        wd[3] != k[1])
        return tg_err("group, offset_group, the kernel and the shapes of X, W and offset disagree");
    for (int i = 0; i < 2; i++)
        if (od[2 + i] != (xd[2 + i] + pads[i] + pads[2 + i] - (k[i] - 1) * dil[i] - 1) / st[i] + 1)
            return tg_err("offset's spatial dims are not the convolution's output size");
    tg_dtype dt = dtype_of(c, x);
    /* the taps' places: [K, 2, oH, oW], y then x, without the offsets */
    int64_t pd[4] = {K, 2, oH, oW}, cd[6] = {1, 1, 1, 2, 1, 1};
    double *pv = malloc(sizeof(double) * (size_t)(K * 2 * L)), sc[2] = {2.0 / (double)H, 2.0 / (double)W},
           sh[2] = {1.0 / (double)H - 1, 1.0 / (double)W - 1};
    if (!pv) return tg_err("out of memory");
    for (int64_t t = 0; t < K; t++)
        for (int64_t q = 0; q < L; q++) {
            pv[(t * 2 + 0) * L + q] = (double)(-pads[0] + (q / oW) * st[0] + (t / k[1]) * dil[0]);
            pv[(t * 2 + 1) * L + q] = (double)(-pads[1] + (q % oW) * st[1] + (t % k[1]) * dil[1]);
        }
    int places = f64_const(c, "taps", dt, 4, pd, pv);
    free(pv);
    tg_dim n = xs.d[0];
    tg_dim o6[6] = {n, tg_dim_const(og), tg_dim_const(K), tg_dim_const(2), tg_dim_const(oH), tg_dim_const(oW)};
    int pos = binary_on(c, TG_OP_ADD, "places", reshape_to(c, off, 6, o6, "offsets"), places);
    /* grid_sample's coordinates (align_corners 0): (2 p + 1) / size - 1, x first */
    int g = binary_on(c, TG_OP_ADD, "normalized", binary_on(c, TG_OP_MUL, "scaled", pos, f64_const(c, "scale", dt, 6, cd, sc)),
                      f64_const(c, "shift", dt, 6, cd, sh));
    g = permute_to(c, g, 6, (int64_t[]){0, 1, 2, 4, 5, 3}, "yx_last");
    int64_t two = 2, swap[2] = {1, 0};
    int64_t *sw = malloc(sizeof swap);
    if (!sw) return tg_err("out of memory");
    memcpy(sw, swap, sizeof swap);
    tg_attr la = tg_attr_int("axis", 5);
    int in2[2] = {g, const_named(c, "xy", TG_I64, 1, &two, sw)};
    g = g < 0 || in2[1] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "xy_last", 2, in2, 1, &la);
    tg_dim nog, gd[4], xg[4];
    if (tg_dim_mul(n, tg_dim_const(og), &nog)) return -1;
    gd[0] = nog, gd[1] = tg_dim_const(K * oH), gd[2] = tg_dim_const(oW), gd[3] = tg_dim_const(2);
    xg[0] = nog, xg[1] = tg_dim_const(C / og), xg[2] = tg_dim_const(H), xg[3] = tg_dim_const(W);
    tg_attr ga[3] = {tg_attr_string("mode", "linear"), tg_attr_string("padding", "zeros"), tg_attr_int("align_corners", 0)};
    int gin[2] = {reshape_to(c, x, 4, xg, "groups"), reshape_to(c, g, 4, gd, "grid")};
    int smp = gin[0] < 0 || gin[1] < 0 ? -1 : onnx_add(c, TG_OP_GRID_SAMPLE, "samples", 2, gin, 3, ga);
    if (mk >= 0) {
        tg_dim s6[6] = {n, tg_dim_const(og), tg_dim_const(C / og), tg_dim_const(K), tg_dim_const(oH), tg_dim_const(oW)};
        tg_dim m6[6] = {n, tg_dim_const(og), tg_dim_const(1), tg_dim_const(K), tg_dim_const(oH), tg_dim_const(oW)};
        smp = binary_on(c, TG_OP_MUL, "masked", reshape_to(c, smp, 6, s6, "samples_split"), reshape_to(c, mk, 6, m6, "mask"));
    }
    tg_dim c4[4] = {n, tg_dim_const(G), tg_dim_const(C / G * K), tg_dim_const(L)}, w3[3], y4[4];
    w3[0] = tg_dim_const(G), w3[1] = tg_dim_const(oC / G), w3[2] = tg_dim_const(C / G * K);
    y4[0] = n, y4[1] = tg_dim_const(oC), y4[2] = tg_dim_const(oH), y4[3] = tg_dim_const(oW);
    int y = binary_on(c, TG_OP_MATMUL, "products", reshape_to(c, w, 3, w3, "weights"), reshape_to(c, smp, 4, c4, "columns"));
    y = reshape_to(c, y, 4, y4, b >= 0 ? "unbiased" : NULL);
    if (b >= 0) {
        tg_dim b3[3] = {tg_dim_const(oC), tg_dim_const(1), tg_dim_const(1)};
        y = binary_on(c, TG_OP_ADD, NULL, y, reshape_to(c, b, 3, b3, "bias"));
    }
    return def_out(c, 0, y);
}

/* ---- AffineGrid ---------------------------------------------------------------------- */

/* The normalized coordinates along a spatial axis of len points (an i64 [1]
 * value): -1 + step/2 + i*step with step 2/len, or with align_corners -1 + i*step
 * with step 2/(len-1) (one point: -1). pos: the axis' place in the grid's
 * [N, sp..., 1] layout, whose dim there is d. */
static int grid_coords(onnx_ctx *c, int len, tg_dim d, int rank, int pos, bool align, tg_dtype dt)
{
    int64_t hi;
    bool fixed = tg_dim_is_const(d, &hi);
    tg_attr a[4] = {tg_attr_int("start", 0), tg_attr_int("step", 1), tg_attr_dtype("dtype", TG_F64),
                    fixed ? tg_attr_dims("end", 1, &d) : tg_attr_input("end", 0, TG_ATTR_DIMS)};
    tg_shape is = {.rank = 1, .d = {d}};
    int scalar = fixed ? -1 : reshape_to(c, len, 0, NULL, "len_scalar");
    int i = fixed ? onnx_add(c, TG_OP_ARANGE, "index", 0, NULL, 4, a)
                  : onnx_add_dynamic(c, TG_OP_ARANGE, "index", 1, &scalar, 4, a, TG_F64, &is);
    int n = align ? binary_on(c, TG_OP_MAXIMUM, "intervals", binary_on(c, TG_OP_SUB, "len_less_one", len,
                                                                        scalar_const(c, "one", TG_I64, 1)),
                              scalar_const(c, "one", TG_I64, 1))
                  : len;
    int step = binary_on(c, TG_OP_DIV, "step", scalar_const(c, "two", TG_F64, 2), cast_as(c, n, TG_F64, "intervals_f64"));
    int start = align ? scalar_const(c, "minus_one", TG_F64, -1)
                      : binary_on(c, TG_OP_ADD, "start", scalar_const(c, "minus_one", TG_F64, -1),
                                  binary_on(c, TG_OP_MUL, "half_step", step, scalar_const(c, "half", TG_F64, 0.5)));
    int v = i < 0 || step < 0 || start < 0 ? -1
          : binary_on(c, TG_OP_ADD, "coords", binary_on(c, TG_OP_MUL, "offsets", i, step), start);
    v = cast_as(c, v, dt, "coords_cast");
    tg_shape ys = {.rank = rank};
    for (int k = 0; k < rank; k++) ys.d[k] = k == pos ? d : tg_dim_const(1);
    if (v < 0 || fixed) return reshape_to(c, v, rank, ys.d, "coords_placed");
    int64_t ones[TG_MAX_RANK];
    for (int k = 0; k < rank; k++) ones[k] = 1;
    int64_t nb = pos, na = rank - pos - 1;
    int parts[3], np = 0;
    if (nb) {
        int64_t *p = malloc(sizeof(int64_t) * TG_MAX_RANK);
        if (!p) return tg_err("out of memory");
        memcpy(p, ones, sizeof(int64_t) * (size_t)nb);
        parts[np++] = const_named(c, "ones_before", TG_I64, 1, &nb, p);
    }
    parts[np++] = len;
    if (na) {
        int64_t *p = malloc(sizeof(int64_t) * TG_MAX_RANK);
        if (!p) return tg_err("out of memory");
        memcpy(p, ones, sizeof(int64_t) * (size_t)na);
        parts[np++] = const_named(c, "ones_after", TG_I64, 1, &na, p);
    }
    for (int k = 0; k < np; k++)
        if (parts[k] < 0) return -1;
    tg_attr ax = tg_attr_int("axis", 0);
    int sv = onnx_add(c, TG_OP_CONCAT, "coords_shape", np, parts, 1, &ax);
    tg_attr sh = tg_attr_input("shape", 1, TG_ATTR_DIMS);
    int in[2] = {v, sv};
    return sv < 0 ? -1 : onnx_add_dynamic(c, TG_OP_RESHAPE, "coords_placed", 2, in, 1, &sh, dt, &ys);
}

/* AffineGrid: grid[n, sp..., :] = theta[n] @ [x, y, (z,) 1], x the coordinate
 * along the last spatial axis: a sum of broadcast products over theta's
 * columns. A size read at run time makes the spatial dims data symbols. */
static int map_affine_grid(onnx_ctx *c, const onnx_op_map *m)
{
    int theta = in_val(c, 0);
    onnx_ent *se = theta < 0 ? NULL : in_req(c, 1);
    if (!se) return -1;
    tg_shape ts = shape_of(c, theta);
    int64_t r, k;
    if (ts.rank != 3 || !tg_dim_is_const(ts.d[1], &r) || !tg_dim_is_const(ts.d[2], &k) || (r != 2 && r != 3) ||
        k != r + 1)
        return tg_err("theta must be [N, 2, 3] or [N, 3, 4]");
    int nsp = (int)r, rank = nsp + 2, sv = -1;
    int64_t size[5];
    int n = -1;
    bool fixed = se->kind == ONNX_ENT_CONST;
    if (fixed ? onnx_int_list(se, 5, size, &n) : (sv = onnx_value(c, se)) < 0) return -1;
    if (fixed && n != nsp + 2) return tg_err("size has %d values, expected %d", n, nsp + 2);
    if (fixed && tg_dim_is_const(ts.d[0], &k) && k != size[0])
        return tg_err("size[0] = %lld is not theta's batch %lld", (long long)size[0], (long long)k);
    if (!fixed) {
        tg_shape ss = shape_of(c, sv);
        int64_t len;
        if (ss.rank != 1 || !tg_dim_is_const(ss.d[0], &len) || len != nsp + 2 || !tg_dtype_is_int(dtype_of(c, sv)))
            return tg_err("size must be an integer vector of %d values", nsp + 2);
        sv = cast_as(c, sv, TG_I64, "size_i64");
    }
    bool align = onnx_attr_int(N(c), "align_corners", 0);
    tg_dtype dt = dtype_of(c, theta);
    int grid = -1;
    for (int j = 0; j <= nsp && theta >= 0; j++) {     /* column j of theta: x, y, (z,) then the offset */
        tg_dim col[TG_MAX_RANK];
        col[0] = ts.d[0];
        for (int q = 1; q < rank - 1; q++) col[q] = tg_dim_const(1);
        col[rank - 1] = tg_dim_const(r);
        int t = reshape_to(c, slice_range(c, theta, 2, j, j + 1, "column"), rank, col, "column_placed");
        if (j < nsp) {
            int pos = nsp - j, len;      /* x (j 0) runs along the last spatial axis */
            tg_dim d;
            if (fixed) {
                if (size[1 + pos] < 0 || size[1 + pos] > INT32_MAX) return tg_err("size[%d] is out of range", 1 + pos);
                d = tg_dim_const(size[1 + pos]);
                len = scalar_const(c, "len", TG_I64, (double)size[1 + pos]);
                len = reshape_to(c, len, 1, (tg_dim[]){tg_dim_const(1)}, "len_vec");
            } else {
                len = slice_range(c, sv, 0, 1 + pos, 2 + pos, "len");
                if (data_dim(c, INT32_MAX, &d)) return -1;
            }
            int co = len < 0 ? -1 : grid_coords(c, len, d, rank, pos, align, dt);
            t = co < 0 || t < 0 ? -1 : binary_on(c, TG_OP_MUL, "term", t, co);
        }
        grid = t < 0 ? -1 : grid < 0 ? t : binary_on(c, TG_OP_ADD, j == nsp ? NULL : "partial", grid, t);
        if (grid < 0) return -1;
    }
    return def_out(c, 0, grid);
}

/* ---- Col2Im ------------------------------------------------------------------------------ */

/* Col2Im (opset 18): the columns x [N, C*K, L] (K = prod(block_shape), L the
 * blocks of each spatial dim, multiplied) summed back into an image [N, C,
 * *image_shape]: a transposed convolution of x as [N, C*K, *blocks], in C
 * groups, by one-hot weights (column k of a channel adds into block position
 * k), its full result cropped by the pads and extended to the image. */
static int map_col2im(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), nsp, nb, n;
    onnx_ent *ie = x < 0 ? NULL : in_req(c, 1), *be = ie ? in_req(c, 2) : NULL;
    int64_t img[3], k[3], st[3] = {1, 1, 1}, dil[3] = {1, 1, 1}, pads[6] = {0}, op[3], cols, kk = 1;
    if (!be) return -1;
    if (ie->kind != ONNX_ENT_CONST || be->kind != ONNX_ENT_CONST)
        return tg_err("image_shape and block_shape must be constants");
    if (onnx_int_list(ie, 3, img, &nsp) || onnx_int_list(be, 3, k, &nb)) return -1;
    if (nsp != nb || nsp < 1) return tg_err("image_shape has %d values, block_shape %d: 1 to 3 each", nsp, nb);
    static const char *const names[3] = {"strides", "dilations", "pads"};
    int64_t *vals[3] = {st, dil, pads};
    for (int i = 0; i < 3; i++) {
        int want = (i == 2 ? 2 : 1) * nsp;
        if (attr_ints(c, names[i], want, vals[i], &n)) return -1;
        if (n >= 0 && n != want) return tg_err("%s has %d values for %d image dims", names[i], n, nsp);
    }
    tg_shape xs = shape_of(c, x);
    if (xs.rank != 3 || !tg_dim_is_const(xs.d[1], &cols)) return tg_err("input must be [N, C*K, L] with C*K static");
    tg_dim ds[2 + 3] = {xs.d[0], xs.d[1]};
    int64_t blocks = 1;
    for (int i = 0; i < nsp; i++) {
        int64_t span = dil[i] * (k[i] - 1) + 1, full = img[i] + pads[i] + pads[nsp + i];
        if (k[i] < 1 || st[i] < 1 || dil[i] < 1 || img[i] < 1 || full < span)
            return tg_err("image dim %d: size %lld, block %lld, stride %lld, dilation %lld, pads %lld+%lld leave no block",
                          i, (long long)img[i], (long long)k[i], (long long)st[i], (long long)dil[i],
                          (long long)pads[i], (long long)pads[nsp + i]);
        int64_t nbk = (full - span) / st[i] + 1;
        op[i] = full - (st[i] * (nbk - 1) + span);      /* rows past the last block */
        ds[2 + i] = tg_dim_const(nbk);
        blocks *= nbk, kk *= k[i];
    }
    int64_t l;
    if (tg_dim_is_const(xs.d[2], &l) && l != blocks)
        return tg_err("input has %lld blocks, the image and block shapes make %lld", (long long)l, (long long)blocks);
    if (cols % kk) return tg_err("input dim 1 (%lld) is not a multiple of the block size %lld", (long long)cols, (long long)kk);
    int64_t wd[2 + 3] = {cols, 1};
    for (int i = 0; i < nsp; i++) wd[2 + i] = k[i];
    tg_dtype dt = dtype_of(c, x);
    void *w = calloc((size_t)(cols * kk), tg_dtype_size(dt));
    if (!w) return tg_err("out of memory");
    for (int64_t ch = 0; ch < cols; ch++)     /* channel c*K + k: a one at block position k */
        tg_store_f64(dt, w, (size_t)(ch * kk + ch % kk), 1);
    int wv = const_named(c, "one_hot", dt, 2 + nsp, wd, w);
    x = reshape_to(c, x, 2 + nsp, ds, "blocks");
    if (wv < 0 || x < 0) return -1;
    tg_attr a[6] = {tg_attr_ints("stride", nsp, st), tg_attr_ints("padding", nsp, pads),
                    tg_attr_ints("dilation", nsp, dil), tg_attr_int("groups", cols / kk),
                    tg_attr_int("transposed", 1), tg_attr_ints("output_padding", nsp, op)};
    return def_out(c, 0, onnx_conv_transpose(c, x, wv, -1, nsp, st, dil, pads, op, a));
}

const onnx_op_map onnx_spatial_ops[] = {
    {"DepthToSpace", map_depth_space, 0}, {"SpaceToDepth", map_depth_space, 0},
    {"PRelu", map_prelu, 0}, {"MeanVarianceNormalization", map_mvn, 0}, {"LRN", map_lrn, 0},
    {"GridSample", map_grid_sample, 0}, {"AffineGrid", map_affine_grid, 0},
    {"DeformConv", map_deform_conv, 0}, {"Col2Im", map_col2im, 0},
};
const int onnx_spatial_nops = (int)(sizeof onnx_spatial_ops / sizeof onnx_spatial_ops[0]);
