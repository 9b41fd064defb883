/* aten operators of neural-network layers: matrix products, convolution,
 * normalization, attention, pooling, resizing and grid sampling, embedding. Both IR levels: the plain
 * export's composites (linear, conv2d, batch_norm, layer_norm ...) and Core
 * ATen's forms (addmm, convolution, _native_batch_norm_legit_no_training,
 * native_layer_norm ...). */
#include <math.h>
#include <stdint.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

/* The weight W when v is W transposed (permute [1, 0] or t of a 2-D value):
 * Core ATen IR writes linear layers as addmm(b, x, permute(W)). -1 if not. */
static int transposed_of(const pt2_ctx *c, int v)
{
    const tg_value *val = pt2_val(c, v);
    if (val->kind != TG_VALUE_NODE || val->shape.rank != 2)
        return -1;
    const tg_node *n = &c->g->nodes[val->producer];
    const int64_t *perm;
    if (n->op != TG_OP_PERMUTE || tg_node_ints(n, "perm", &perm) != 2 || perm[0] != 1)
        return -1;
    return n->in[0];
}

static int h_linear(pt2_ctx *c, const cJSON *node)
{
    int in[3];
    if (pt2_tensor(c, node, "input", &in[0]) < 0 || pt2_tensor(c, node, "weight", &in[1]) < 0 ||
        pt2_opt_tensor(c, node, "bias", &in[2]) < 0)
        return -1;
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_LINEAR, in[2] < 0 ? 2 : 3, in, 0, NULL));
}

static int scaled(pt2_ctx *c, int x, double k)
{
    if (k == 1)
        return x;
    return pt2_binary(c, false, TG_OP_MUL, x,
                      pt2_const(c, (pt2_scalar){.kind = PT2_S_FLOAT, .f = k}, pt2_dt(c, x)));
}

/* mm, bmm, matmul, and addmm / baddbmm: beta * self + alpha * (a @ b). A
 * product with a transposed matrix becomes linear, so the weight keeps its
 * [out, in] layout. */
static int h_matmul(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool add = !strcmp(name, "addmm") || !strcmp(name, "baddbmm");
    const char *an = add ? (pt2_arg(node, "mat1") ? "mat1" : "batch1") : "self";
    const char *bn = add ? (pt2_arg(node, "mat2") ? "mat2" : "batch2")
                         : pt2_arg(node, "mat2") ? "mat2" : "other";
    int a, b, bias = -1;
    double alpha, beta;
    if (pt2_tensor(c, node, an, &a) < 0 || pt2_tensor(c, node, bn, &b) < 0 ||
        (add && pt2_tensor(c, node, "self", &bias) < 0) ||
        pt2_float(c, node, "alpha", 1, &alpha) < 0 || pt2_float(c, node, "beta", 1, &beta) < 0)
        return -1;
    int w = transposed_of(c, b);
    bool bias_fits = bias < 0 || (pt2_rank(c, bias) == 1 && beta == 1);
    if (w >= 0 && pt2_rank(c, a) == 2 && alpha == 1 && bias_fits &&
        pt2_dt(c, a) == pt2_dt(c, w) && (bias < 0 || pt2_dt(c, bias) == pt2_dt(c, a))) {
        int in[3] = {a, w, bias};
        return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_LINEAR, bias < 0 ? 2 : 3, in, 0, NULL));
    }
    bool tail = add && beta != 0;
    int y = scaled(c, pt2_binary(c, !tail && alpha == 1, TG_OP_MATMUL, a, b), alpha);
    if (tail)
        y = pt2_binary(c, true, TG_OP_ADD, y, scaled(c, bias, beta));
    return pt2_set_out(c, 0, y);
}

/* ---- convolution ---- */

static int spatial_ints(pt2_ctx *c, const cJSON *node, const char *name, int64_t dflt,
                        int nsp, int64_t *out)
{
    int n = pt2_arg_none(node, name) ? 0 : pt2_ints(c, node, name, out, nsp);
    if (n < 0)
        return -1;
    if (n == 0)
        out[n++] = dflt;
    if (n != 1 && n != nsp)
        return tg_err("argument '%s': %d values for %d spatial dimensions", name, n, nsp);
    for (int i = n; i < nsp; i++)
        out[i] = out[0];
    return 0;
}

/* padding='same' (stride 1): total d*(k-1) per dimension, the odd one extra
 * at the end, as torch pads it. Sets the symmetric part in pad and returns x
 * padded with what is left over. */
static int same_padding(pt2_ctx *c, int x, int w, int nsp, const int64_t *dil, int64_t *pad)
{
    int64_t pads[2 * TG_MAX_RANK] = {0}, k;
    bool extra = false;
    int r = pt2_rank(c, x);
    for (int i = 0; i < nsp; i++) {
        if (!tg_dim_is_const(pt2_val(c, w)->shape.d[2 + i], &k))
            return tg_err("padding='same' needs a constant kernel size");
        int64_t total = dil[i] * (k - 1);
        pad[i] = total / 2;
        pads[r + 2 + i] = total % 2;
        extra |= total % 2;
    }
    if (!extra)
        return x;
    tg_attr a[2] = {tg_attr_ints("pads", 2 * r, pads), tg_attr_float("value", 0)};
    return pt2_emit(c, false, TG_OP_PAD, 1, &x, 2, a);
}

static int h_conv(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    int in[3];
    int64_t stride[3], pad[3], dil[3], opad[3], groups;
    bool transposed = strstr(name, "transpose") != NULL;
    if (pt2_tensor(c, node, "input", &in[0]) < 0 || pt2_tensor(c, node, "weight", &in[1]) < 0 ||
        pt2_opt_tensor(c, node, "bias", &in[2]) < 0 || pt2_int(c, node, "groups", 1, &groups) < 0 ||
        pt2_bool(node, "transposed", transposed, &transposed) < 0)
        return -1;
    int nsp = pt2_rank(c, in[1]) - 2;
    if (nsp < 1 || nsp > 3)
        return tg_err("convolution weight of rank %d", pt2_rank(c, in[1]));
    const char *mode = pt2_string(node, "padding", NULL);
    if (spatial_ints(c, node, "stride", 1, nsp, stride) < 0 ||
        spatial_ints(c, node, "dilation", 1, nsp, dil) < 0 ||
        spatial_ints(c, node, "output_padding", 0, nsp, opad) < 0 ||
        (!mode && spatial_ints(c, node, "padding", 0, nsp, pad) < 0))
        return -1;
    if (mode && !strcmp(mode, "valid")) {
        memset(pad, 0, sizeof pad);
    } else if (mode && !strcmp(mode, "same")) {
        for (int i = 0; i < nsp; i++)
            if (stride[i] != 1)
                return tg_err("padding='same' needs stride 1");
        in[0] = same_padding(c, in[0], in[1], nsp, dil, pad);
        if (in[0] < 0)
            return -1;
    } else if (mode) {
        return tg_err("padding='%s' not supported", mode);
    }
    tg_attr a[6] = {tg_attr_ints("stride", nsp, stride), tg_attr_ints("padding", nsp, pad),
                    tg_attr_ints("dilation", nsp, dil), tg_attr_ints("output_padding", nsp, opad),
                    tg_attr_int("groups", groups), tg_attr_int("transposed", transposed)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_CONV, in[2] < 0 ? 2 : 3, in, 6, a));
}

/* ---- normalization ---- */

/* Parameters in the input's dtype (mixed-precision models keep them f32). */
static int like(pt2_ctx *c, int p, int x)
{
    return p < 0 ? -1 : pt2_cast(c, false, p, pt2_dt(c, x));
}

static int h_batch_norm(pt2_ctx *c, const cJSON *node)
{
    int x, w, b, mean, var;
    bool training;
    double eps;
    if (pt2_tensor(c, node, "input", &x) < 0 || pt2_opt_tensor(c, node, "weight", &w) < 0 ||
        pt2_opt_tensor(c, node, "bias", &b) < 0 ||
        pt2_opt_tensor(c, node, "running_mean", &mean) < 0 ||
        pt2_opt_tensor(c, node, "running_var", &var) < 0 ||
        pt2_bool(node, "training", false, &training) < 0 || pt2_float(c, node, "eps", 1e-5, &eps) < 0)
        return -1;
    if (training)
        return tg_err("batch_norm in training mode (export the model after model.eval())");
    if (mean < 0 || var < 0)
        return tg_err("batch_norm without running statistics is not supported");
    int in[5] = {x, like(c, mean, x), like(c, var, x), like(c, w, x), like(c, b, x)};
    int nin = b >= 0 ? 5 : w >= 0 ? 4 : 3;
    if (b >= 0 && w < 0)
        return tg_err("batch_norm with a bias but no weight is not supported");
    tg_attr a = tg_attr_float("eps", eps);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_BATCH_NORM, nin, in, 1, &a));
}

static int h_layer_norm(pt2_ctx *c, const cJSON *node)
{
    int x, w, b;
    int64_t shape[TG_MAX_RANK];
    double eps;
    int n;
    if (pt2_tensor(c, node, "input", &x) < 0 || pt2_opt_tensor(c, node, "weight", &w) < 0 ||
        pt2_opt_tensor(c, node, "bias", &b) < 0 || pt2_float(c, node, "eps", 1e-5, &eps) < 0 ||
        (n = pt2_ints(c, node, "normalized_shape", shape, TG_MAX_RANK)) < 0)
        return -1;
    int r = pt2_rank(c, x);
    if (n < 1 || n > r)
        return tg_err("layer_norm over %d of %d dimensions", n, r);
    if (b >= 0 && w < 0)
        return tg_err("layer_norm with a bias but no weight is not supported");
    int in[3] = {x, w < 0 ? -1 : like(c, w, x), b < 0 ? -1 : like(c, b, x)};
    tg_attr a[2] = {tg_attr_int("axis", r - n), tg_attr_float("eps", eps)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_LAYER_NORM, b >= 0 ? 3 : w >= 0 ? 2 : 1,
                                      in, 2, a));
}

static int h_group_norm(pt2_ctx *c, const cJSON *node)
{
    int x, w, b;
    int64_t groups;
    double eps;
    if (pt2_tensor(c, node, "input", &x) < 0 || pt2_opt_tensor(c, node, "weight", &w) < 0 ||
        pt2_opt_tensor(c, node, "bias", &b) < 0 || pt2_float(c, node, "eps", 1e-5, &eps) < 0 ||
        pt2_int(c, node, pt2_arg(node, "group") ? "group" : "num_groups", 1, &groups) < 0)
        return -1;
    if (b >= 0 && w < 0)
        return tg_err("group_norm with a bias but no weight is not supported");
    int in[3] = {x, w < 0 ? -1 : like(c, w, x), b < 0 ? -1 : like(c, b, x)};
    tg_attr a[2] = {tg_attr_int("groups", groups), tg_attr_float("eps", eps)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_GROUP_NORM, b >= 0 ? 3 : w >= 0 ? 2 : 1,
                                      in, 2, a));
}

/* rms_norm(x, shape, weight, eps) = x * rsqrt(mean(x^2 over shape) + eps) * weight */
static int h_rms_norm(pt2_ctx *c, const cJSON *node)
{
    int x, w, n;
    int64_t shape[TG_MAX_RANK], axes[TG_MAX_RANK];
    double eps;
    if (pt2_tensor(c, node, "input", &x) < 0 || pt2_opt_tensor(c, node, "weight", &w) < 0 ||
        (n = pt2_ints(c, node, "normalized_shape", shape, TG_MAX_RANK)) < 0)
        return -1;
    tg_dtype dt = pt2_dt(c, x);
    /* torch's default eps is the dtype's machine epsilon */
    double dflt = dt == TG_F16 ? 9.765625e-4 : dt == TG_BF16 ? 7.8125e-3
                : dt == TG_F64 ? 2.220446049250313e-16 : 1.1920928955078125e-7;
    if (pt2_float(c, node, "eps", dflt, &eps) < 0)
        return -1;
    int r = pt2_rank(c, x);
    for (int i = 0; i < n; i++)
        axes[i] = r - n + i;
    tg_attr a[2] = {tg_attr_ints("axes", n, axes), tg_attr_int("keepdim", 1)};
    int sq = pt2_binary(c, false, TG_OP_MUL, x, x);
    int ms = sq < 0 ? -1 : pt2_emit(c, false, TG_OP_REDUCE_MEAN, 1, &sq, 2, a);
    int d = pt2_unary(c, false, TG_OP_RSQRT, pt2_binary(c, false, TG_OP_ADD, ms,
                      pt2_const(c, (pt2_scalar){.kind = PT2_S_FLOAT, .f = eps}, dt)));
    int y = pt2_binary(c, w < 0, TG_OP_MUL, x, d);
    if (w >= 0)
        y = pt2_binary(c, true, TG_OP_MUL, y, like(c, w, x));
    return pt2_set_out(c, 0, y);
}

/* _weight_norm(v, g, dim) = v * g / ||v|| over every axis but dim (dim -1:
 * over all of v) */
static int h_weight_norm(pt2_ctx *c, const cJSON *node)
{
    int v, g;
    int64_t dim, axes[TG_MAX_RANK];
    if (pt2_tensor(c, node, "v", &v) < 0 || pt2_tensor(c, node, "g", &g) < 0 ||
        pt2_int(c, node, "dim", 0, &dim) < 0)
        return -1;
    int r = pt2_rank(c, v), n = 0, ax = -1;
    if (dim != -1 && pt2_axis(dim, r, &ax) < 0)
        return -1;
    for (int i = 0; i < r; i++)
        if (i != ax)
            axes[n++] = i;
    tg_attr a[2] = {tg_attr_ints("axes", n, axes), tg_attr_int("keepdim", 1)};
    int sq = pt2_binary(c, false, TG_OP_MUL, v, v);
    int ss = sq < 0 ? -1 : pt2_emit(c, false, TG_OP_REDUCE_SUM, 1, &sq, 2, a);
    int scale = pt2_binary(c, false, TG_OP_DIV, like(c, g, v), pt2_unary(c, false, TG_OP_SQRT, ss));
    return pt2_set_out(c, 0, pt2_binary(c, true, TG_OP_MUL, v, scale));
}

/* ---- attention ---- */

static int h_sdpa(pt2_ctx *c, const cJSON *node)
{
    int in[4];
    bool causal, gqa;
    double scale, dropout;
    if (pt2_tensor(c, node, "query", &in[0]) < 0 || pt2_tensor(c, node, "key", &in[1]) < 0 ||
        pt2_tensor(c, node, "value", &in[2]) < 0 ||
        pt2_opt_tensor(c, node, "attn_mask", &in[3]) < 0 ||
        pt2_bool(node, "is_causal", false, &causal) < 0 ||
        pt2_bool(node, "enable_gqa", false, &gqa) < 0 ||
        pt2_float(c, node, "scale", 0, &scale) < 0 ||
        pt2_float(c, node, "dropout_p", 0, &dropout) < 0)
        return -1;
    if (dropout != 0)
        return tg_err("attention dropout_p=%g (export in eval mode, or pass 0)", dropout);
    if (in[3] >= 0 && pt2_dt(c, in[3]) != TG_BOOL)
        in[3] = like(c, in[3], in[0]);
    tg_attr a[3] = {tg_attr_int("causal", causal), tg_attr_float("scale", scale),
                    tg_attr_int("gqa", gqa)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_SDPA, in[3] < 0 ? 3 : 4, in, 3, a));
}

/* ---- pooling ---- */

static int h_pool(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool max = !strncmp(name, "max_", 4);
    int x;
    int64_t k[3], s[3], p[3], d[3];
    bool ceil_mode, incl_pad;
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    int nsp = pt2_rank(c, x) - 2;
    if (nsp < 1 || nsp > 2)
        return tg_err("pooling over %d spatial dimensions is not supported", nsp);
    if (!pt2_arg_none(node, "divisor_override"))
        return tg_err("avg_pool with divisor_override is not supported");
    if (spatial_ints(c, node, "kernel_size", 1, nsp, k) < 0 ||
        spatial_ints(c, node, "padding", 0, nsp, p) < 0 ||
        spatial_ints(c, node, "dilation", 1, nsp, d) < 0 ||
        pt2_bool(node, "ceil_mode", false, &ceil_mode) < 0 ||
        pt2_bool(node, "count_include_pad", true, &incl_pad) < 0)
        return -1;
    /* an empty stride means the kernel size */
    int64_t tmp[3];
    int ns = pt2_arg_none(node, "stride") ? 0 : pt2_ints(c, node, "stride", tmp, nsp);
    if (ns < 0 || (ns && spatial_ints(c, node, "stride", 1, nsp, s) < 0))
        return -1;
    if (!ns)
        memcpy(s, k, sizeof s);
    tg_attr a[5] = {tg_attr_ints("kernel", nsp, k), tg_attr_ints("stride", nsp, s),
                    tg_attr_ints("padding", nsp, p), tg_attr_int("ceil_mode", ceil_mode),
                    max ? tg_attr_ints("dilation", nsp, d)
                        : tg_attr_int("count_include_pad", incl_pad)};
    return pt2_set_out(c, 0, pt2_emit(c, true, max ? TG_OP_MAX_POOL : TG_OP_AVG_POOL, 1, &x, 5, a));
}

static int h_adaptive_pool(pt2_ctx *c, const cJSON *node)
{
    int x, n;
    int64_t size[3];
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (n = pt2_ints(c, node, "output_size", size, 3)) < 0)
        return -1;
    tg_attr a = tg_attr_ints("output_size", n, size);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_ADAPTIVE_AVG_POOL, 1, &x, 1, &a));
}

/* ---- resizing ---- */

/* The resize's spatial sizes: output_size, or floor(in * scale) (a symbolic
 * input dim only for an integral scale). */
static int upsample_sizes(pt2_ctx *c, const cJSON *node, int x, int nsp, const double *scale,
                          tg_dim *size)
{
    if (!pt2_arg_none(node, "output_size")) {
        int n = pt2_dims(c, node, "output_size", size, nsp);
        return n < 0 ? -1 : n != nsp ? tg_err("output_size: %d values for %d spatial"
                                              " dimensions", n, nsp) : 0;
    }
    for (int i = 0; i < nsp; i++) {
        tg_dim in = pt2_val(c, x)->shape.d[2 + i];
        int64_t v;
        if (!(scale[i] > 0) || !isfinite(scale[i]))
            return tg_err("scale factor %g must be positive and finite", scale[i]);
        if (tg_dim_is_const(in, &v))
            size[i] = tg_dim_const((int64_t)((double)v * scale[i]));
        else if (scale[i] != floor(scale[i]) || scale[i] > INT32_MAX ||
                 tg_dim_mul(in, tg_dim_const((int64_t)scale[i]), &size[i]))
            return tg_err("a scale factor of %g on a dynamic size", scale[i]);
    }
    return 0;
}

/* upsample_{nearest,linear,bilinear,bicubic}{1d,2d}[.vec] and
 * _upsample_nearest_exact{1d,2d}: resize with PyTorch's coordinate rules */
static int h_upsample(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool vec = pt2_arg(node, "input") != NULL, nearest = strstr(name, "nearest"), align;
    int x, nsp = name[strlen(name) - 2] - '0';
    double scale[2] = {0, 0};
    tg_dim size[2];
    if (pt2_tensor(c, node, vec ? "input" : "self", &x) < 0 ||
        pt2_bool(node, "align_corners", false, &align) < 0)
        return -1;
    if (pt2_rank(c, x) != nsp + 2)
        return tg_err("%s of a rank %d tensor", name, pt2_rank(c, x));
    int ns = vec ? pt2_floats(node, "scale_factors", scale, nsp)
           : nsp == 1 ? pt2_floats(node, "scales", scale, 1)
           : pt2_floats(node, "scales_h", scale, 1) < 0 ? -1
           : pt2_floats(node, "scales_w", scale + 1, 1);
    if (ns < 0 || upsample_sizes(c, node, x, nsp, scale, size) < 0)
        return -1;
    const char *coord = align ? "align_corners" : !nearest ? "half_pixel"
                      : strstr(name, "exact") ? "tf_half_pixel_for_nn" : "asymmetric";
    bool scaled = !align && (scale[0] > 0 || scale[nsp - 1] > 0); /* align_corners: PyTorch's ignore them */
    for (int i = 0; i < nsp; i++)    /* a scale left out: in/out, as PyTorch */
        if (scaled && !(scale[i] > 0))
            return tg_err("%s with a scale for some spatial dimensions only", name);
    tg_attr a[5] = {tg_attr_dims("size", nsp, size),
                    tg_attr_string("mode", nearest ? "nearest" : strstr(name, "bicubic")
                                                                 ? "cubic" : "linear"),
                    tg_attr_string("coord", coord), tg_attr_string("nearest_mode", "floor"),
                    tg_attr_floats("scales", nsp, scale)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_RESIZE, 1, &x, scaled ? 5 : 4, a));
}

/* grid_sampler[_2d|_3d]: grid_sample. torch's interpolation_mode 0 bilinear, 1
 * nearest, 2 bicubic; padding_mode 0 zeros, 1 border, 2 reflection. */
static int h_grid_sample(pt2_ctx *c, const cJSON *node)
{
    int in[2];
    int64_t mode, pad;
    bool align;
    if (pt2_tensor(c, node, "input", &in[0]) < 0 || pt2_tensor(c, node, "grid", &in[1]) < 0 ||
        pt2_int(c, node, "interpolation_mode", 0, &mode) < 0 ||
        pt2_int(c, node, "padding_mode", 0, &pad) < 0 || pt2_bool(node, "align_corners", false, &align) < 0)
        return -1;
    static const char *const modes[] = {"linear", "nearest", "cubic"}, *const pads[] = {"zeros", "border", "reflection"};
    if (mode < 0 || mode > 2 || pad < 0 || pad > 2)
        return tg_err("interpolation_mode %lld or padding_mode %lld is not one torch defines",
                      (long long)mode, (long long)pad);
    tg_attr a[3] = {tg_attr_string("mode", modes[mode]), tg_attr_string("padding", pads[pad]),
                    tg_attr_int("align_corners", align)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_GRID_SAMPLE, 2, in, 3, a));
}

static int h_embedding(pt2_ctx *c, const cJSON *node)
{
    int in[2];
    if (pt2_tensor(c, node, "weight", &in[0]) < 0 || pt2_tensor(c, node, "indices", &in[1]) < 0)
        return -1;
    tg_attr a = tg_attr_int("axis", 0);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_INDEX_SELECT, 2, in, 1, &a));
}

const pt2_op_entry pt2_ops_nn[] = {
    {"linear", "default", h_linear},
    {"mm", "default", h_matmul}, {"bmm", "default", h_matmul},
    {"matmul", "default", h_matmul}, {"addmm", "default", h_matmul},
    {"baddbmm", "default", h_matmul},
    {"convolution", "default", h_conv}, {"_convolution", "default", h_conv},
    {"conv1d", "default padding", h_conv}, {"conv2d", "default padding", h_conv},
    {"conv3d", "default padding", h_conv},
    {"conv_transpose1d", "default", h_conv}, {"conv_transpose2d", "input", h_conv},
    {"conv_transpose3d", "input", h_conv},
    {"batch_norm", "default", h_batch_norm}, {"native_batch_norm", "default", h_batch_norm},
    {"_native_batch_norm_legit_no_training", "default", h_batch_norm},
    {"_native_batch_norm_legit", "default", h_batch_norm},
    {"layer_norm", "default", h_layer_norm}, {"native_layer_norm", "default", h_layer_norm},
    {"group_norm", "default", h_group_norm}, {"native_group_norm", "default", h_group_norm},
    {"rms_norm", "default", h_rms_norm}, {"_weight_norm", "default", h_weight_norm},
    {"scaled_dot_product_attention", "default", h_sdpa},
    {"_scaled_dot_product_flash_attention_for_cpu", "default", h_sdpa},
    {"max_pool1d", "default", h_pool}, {"max_pool2d", "default", h_pool},
    {"max_pool2d_with_indices", "default", h_pool},
    {"avg_pool1d", "default", h_pool}, {"avg_pool2d", "default", h_pool},
    {"adaptive_avg_pool1d", "default", h_adaptive_pool},
    {"adaptive_avg_pool2d", "default", h_adaptive_pool},
    {"_adaptive_avg_pool2d", "default", h_adaptive_pool},
    {"upsample_nearest1d", "default", h_upsample}, {"upsample_nearest1d", "vec", h_upsample},
    {"upsample_nearest2d", "default", h_upsample}, {"upsample_nearest2d", "vec", h_upsample},
    {"_upsample_nearest_exact1d", "default", h_upsample},
    {"_upsample_nearest_exact1d", "vec", h_upsample},
    {"_upsample_nearest_exact2d", "default", h_upsample},
    {"_upsample_nearest_exact2d", "vec", h_upsample},
    {"upsample_linear1d", "default", h_upsample}, {"upsample_linear1d", "vec", h_upsample},
    {"upsample_bilinear2d", "default", h_upsample}, {"upsample_bilinear2d", "vec", h_upsample},
    {"upsample_bicubic2d", "default", h_upsample}, {"upsample_bicubic2d", "vec", h_upsample},
    {"grid_sampler", "default", h_grid_sample}, {"grid_sampler_2d", "default", h_grid_sample},
    {"grid_sampler_3d", "default", h_grid_sample},
    {"embedding", "default", h_embedding},
    {NULL, NULL, NULL},
};
