/* ONNX spatial and vision operators that onnx_ops.c does not map: DepthToSpace,
 * SpaceToDepth, PRelu, MeanVarianceNormalization, LRN (decompositions into
 * existing tgraph ops: reshape, permute, pooling, elementwise) and GridSample
 * (grid_sample). What those have no form for is refused by name. */
#include <math.h>
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

const onnx_op_map onnx_spatial_ops[] = {
    {"DepthToSpace", map_depth_space, 0}, {"SpaceToDepth", map_depth_space, 0},
    {"PRelu", map_prelu, 0}, {"MeanVarianceNormalization", map_mvn, 0}, {"LRN", map_lrn, 0},
    {"GridSample", map_grid_sample, 0},
};
const int onnx_spatial_nops = (int)(sizeof onnx_spatial_ops / sizeof onnx_spatial_ops[0]);
