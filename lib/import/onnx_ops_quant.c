/* ONNX quantization operators: QuantizeLinear, DequantizeLinear,
 * DynamicQuantizeLinear, QLinearMatMul, QLinearConv, MatMulInteger and
 * ConvInteger.
 *
 * Constant per-tensor or per-axis parameters on int8/uint8 become tgraph's
 * quantize and dequantize ops (round half to even, saturation, as ONNX
 * specifies); anything else (parameters read at run time, blocked scales,
 * int4, int16, float8, float4, float16 scales) is written out elementwise in float32:
 * q = saturate(round(x / scale) + zero_point), x = (q - zero_point) * scale.
 * The QOperator ops are dequantize -> the float op -> quantize, so that a
 * whole model is quantize/dequantize pairs around float layers, which
 * tg_quant_fold_qdq (lib/quant/qdq.c; run at the end of the import) turns
 * into qlinear/qconv on the int8 kernels where the weights allow. The
 * integer ops (MatMulInteger, ConvInteger) run in float64, exact for any
 * int32 sum of 8-bit products. */
#include <math.h>
#include <string.h>

#include "../error.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* dtype of an entry (a value's, or a constant's) */
static tg_dtype ent_dtype(onnx_ctx *c, onnx_ent *e)
{
    if (e->kind == ONNX_ENT_CONST) return e->dtype;
    if (e->kind == ONNX_ENT_SYMS) return TG_I64;
    int v = onnx_value(c, e);
    return v < 0 ? TG_DTYPE_NONE : dtype_of(c, v);
}

static int cast_to(onnx_ctx *c, int x, tg_dtype dt, const char *sfx)
{
    if (x < 0 || dtype_of(c, x) == dt) return x;
    tg_attr a = tg_attr_dtype("dtype", dt);
    return unary_on(c, TG_OP_CAST, sfx, x, 1, &a);
}

/* Where a scale or zero point applies: per tensor, along axis (a 1-D
 * parameter), or in blocks of `block` along axis (a parameter of x's rank).
 * axis is -1 when out of range, which matters only to per-axis parameters. */
typedef struct {
    int axis;
    int64_t block;
} qaxis;

static int qaxis_read(onnx_ctx *c, int rank, int64_t dflt_axis, qaxis *q)
{
    q->block = onnx_attr_int(N(c), "block_size", 0);
    if (q->block < 0) return tg_err("block_size %lld is negative", (long long)q->block);
    int64_t a = onnx_attr_int(N(c), "axis", dflt_axis);
    q->axis = a < -rank || a >= rank ? -1 : (int)(a < 0 ? a + rank : a);
    return 0;
}

/* Parameter e as dtype dt, shaped to broadcast against x of shape xs. */
static int param_as(onnx_ctx *c, onnx_ent *e, const tg_shape *xs, const qaxis *q, tg_dtype dt,
                    const char *sfx)
{
    int v = cast_to(c, onnx_value(c, e), dt, sfx);
    if (v < 0) return -1;
    tg_shape ps = shape_of(c, v);
    int64_t n = 1, d;
    bool known = true;
    for (int i = 0; i < ps.rank; i++)
        if (tg_dim_is_const(ps.d[i], &d)) n *= d;
        else known = false;
    if (known && n == 1 && !q->block) return ps.rank ? reshape_to(c, v, 0, NULL, sfx) : v;
    if (q->axis < 0) return tg_err("attribute axis is out of range for input rank %d", xs->rank);
    if (q->block) {
        /* [.., nb, ..] -> [.., nb, 1, ..] -> [.., nb, B, ..] -> [.., nb*B, ..] -> first D */
        int64_t nb, len;
        if (ps.rank != xs->rank || !tg_dim_is_const(ps.d[q->axis], &nb) ||
            !tg_dim_is_const(xs->d[q->axis], &len))
            return tg_err("blocked quantization needs a parameter of the input's rank with a static"
                          " blocked axis");
        if (nb != (len + q->block - 1) / q->block)
            return tg_err("%lld blocks of %lld along axis %d, but that axis has %lld elements",
                          (long long)nb, (long long)q->block, q->axis, (long long)len);
        tg_shape u = {.rank = ps.rank + 1};
        for (int i = 0, j = 0; i < ps.rank; i++) {
            u.d[j++] = ps.d[i];
            if (i == q->axis) u.d[j++] = tg_dim_const(1);
        }
        v = reshape_to(c, v, u.rank, u.d, sfx);
        u.d[q->axis + 1] = tg_dim_const(q->block);
        tg_attr ea = tg_attr_dims("shape", u.rank, u.d);
        v = v < 0 ? -1 : unary_on(c, TG_OP_EXPAND, sfx, v, 1, &ea);
        tg_shape f = ps;
        f.d[q->axis] = tg_dim_const(nb * q->block);
        v = reshape_to(c, v, f.rank, f.d, sfx);
        if (v >= 0 && nb * q->block != len) {
            tg_dim end = tg_dim_const(len);
            tg_attr sa[2] = {tg_attr_int("axis", q->axis), tg_attr_dims("end", 1, &end)};
            v = unary_on(c, TG_OP_SLICE, sfx, v, 2, sa);
        }
        return v;
    }
    if (ps.rank != 1) return tg_err("a per-axis %s must be 1-D (it has rank %d)", sfx, ps.rank);
    if (!tg_dim_is_const(xs->d[q->axis], &d) || !tg_dim_is_const(ps.d[0], &n) || d != n)
        return tg_err("the %s has %lld values for axis %d", sfx, known ? (long long)n : -1LL, q->axis);
    tg_shape b = {.rank = xs->rank - q->axis};
    b.d[0] = ps.d[0];
    for (int i = 1; i < b.rank; i++) b.d[i] = tg_dim_const(1);
    return reshape_to(c, v, b.rank, b.d, sfx);
}

/* Constant scale (float32, > 0) and zero point (integer or absent), per tensor or
 * per axis: the attributes of tgraph's quantize/dequantize (a[0..*na)), with
 * storage in ds/zs (count values). false when they do not fit those ops. */
typedef struct {
    tg_attr a[4];
    int na;
    double *ds;
    int64_t *zs;
} qattrs;

static void qattrs_free(qattrs *qa)
{
    free(qa->ds);
    free(qa->zs);
}

static bool const_qparams(onnx_ctx *c, onnx_ent *s, onnx_ent *z, const tg_shape *xs, const qaxis *q,
                          qattrs *qa)
{
    memset(qa, 0, sizeof *qa);
    if (q->block || s->kind != ONNX_ENT_CONST || s->dtype != TG_F32 || s->rank > 1 ||
        (z && (z->kind != ONNX_ENT_CONST || tg_dtype_is_float(z->dtype))))
        return false;
    int64_t n = (int64_t)(s->nbytes / sizeof(float)), len;
    if (n < 1 || n > 1 << 20 || (z && (int64_t)(z->nbytes / tg_dtype_size(z->dtype)) != n)) return false;
    if (n > 1 && (s->rank != 1 || q->axis < 0 || !tg_dim_is_const(xs->d[q->axis], &len) || len != n)) return false;
    qa->ds = malloc(sizeof(double) * (size_t)n);
    qa->zs = calloc((size_t)n, sizeof(int64_t));
    int nz;
    if (!qa->ds || !qa->zs || (z && onnx_int_list(z, (int)n, qa->zs, &nz))) {
        tg_err_clear();
        qattrs_free(qa);
        return false;
    }
    for (int64_t i = 0; i < n; i++) {
        qa->ds[i] = ((const float *)s->data)[i];
        if (!(qa->ds[i] > 0) || isinf(qa->ds[i])) {     /* the elementwise form gives ONNX's inf/NaN */
            qattrs_free(qa);
            return false;
        }
    }
    if (n == 1) {
        qa->a[qa->na++] = tg_attr_float("scale", qa->ds[0]);
        qa->a[qa->na++] = tg_attr_int("zero_point", qa->zs[0]);
    } else {
        qa->a[qa->na++] = tg_attr_floats("scale", (int)n, qa->ds);
        qa->a[qa->na++] = tg_attr_ints("zero_point", (int)n, qa->zs);
        qa->a[qa->na++] = tg_attr_int("axis", q->axis);
    }
    return true;
}

static bool int8_type(tg_dtype t) { return t == TG_I8 || t == TG_U8; }

/* quantize x (floating) to qdt with scale s and zero point z (NULL: 0). */
static int quantize_val(onnx_ctx *c, int x, onnx_ent *s, onnx_ent *z, const qaxis *q, tg_dtype qdt,
                        bool saturate, const char *sfx)
{
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    qattrs qa;
    if (int8_type(qdt) && const_qparams(c, s, z, &xs, q, &qa)) {
        qa.a[qa.na++] = tg_attr_dtype("dtype", qdt);
        int y = unary_on(c, TG_OP_QUANTIZE, sfx, cast_to(c, x, TG_F32, "x_f32"), qa.na, qa.a);
        qattrs_free(&qa);
        return y;
    }
    int t = binary_on(c, TG_OP_DIV, "scaled", cast_to(c, x, TG_F32, "x_f32"),
                      param_as(c, s, &xs, q, TG_F32, "scale"));
    if (tg_dtype_is_float(qdt))     /* float8, float4: scale only, the zero point is 0 */
        return cast_to(c, t < 0 ? -1 : onnx_f8_range(c, t, qdt, saturate), qdt, sfx);
    int64_t bits = (int64_t)tg_dtype_size(qdt) * 8 >> (qdt == TG_I4 || qdt == TG_U4);
    double lo = tg_dtype_is_unsigned(qdt) ? 0 : -ldexp(1, (int)bits - 1);
    double hi = tg_dtype_is_unsigned(qdt) ? ldexp(1, (int)bits) - 1 : ldexp(1, (int)bits - 1) - 1;
    t = t < 0 ? -1 : unary_on(c, TG_OP_ROUND, "rounded", t, 0, NULL);
    if (z && t >= 0) t = binary_on(c, TG_OP_ADD, "shifted", t, param_as(c, z, &xs, q, TG_F32, "zero_point"));
    tg_attr ca[2] = {tg_attr_float("min", lo), tg_attr_float("max", hi)};
    t = t < 0 ? -1 : unary_on(c, TG_OP_CLAMP, "saturated", t, 2, ca);
    return cast_to(c, t, qdt, sfx);
}

/* dequantize x (integer or float8) with scale s and zero point z into odt. */
static int dequantize_val(onnx_ctx *c, int x, onnx_ent *s, onnx_ent *z, const qaxis *q, tg_dtype odt,
                          const char *sfx)
{
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    tg_dtype xdt = dtype_of(c, x);
    qattrs qa;
    bool zero_ok = !tg_dtype_is_float(xdt) || !z;
    if (odt == TG_F32 && zero_ok && (int8_type(xdt) || xdt == TG_I32 || xdt == TG_F8E4M3 || xdt == TG_F8E5M2) &&
        const_qparams(c, s, z, &xs, q, &qa)) {
        int y = unary_on(c, TG_OP_DEQUANTIZE, sfx, x, qa.na, qa.a);
        qattrs_free(&qa);
        return y;
    }
    int t = cast_to(c, x, TG_F32, "x_f32");
    if (z && t >= 0) t = binary_on(c, TG_OP_SUB, "centered", t, param_as(c, z, &xs, q, TG_F32, "zero_point"));
    t = t < 0 ? -1 : binary_on(c, TG_OP_MUL, odt == TG_F32 ? sfx : "f32", t, param_as(c, s, &xs, q, TG_F32, "scale"));
    return cast_to(c, t, odt, sfx);
}

/* The quantized dtype named by a zero point or output_dtype attribute. */
static int quant_dtype(onnx_ctx *c, onnx_ent *z, tg_dtype *qdt)
{
    int64_t od = onnx_attr_int(N(c), "output_dtype", 0);
    tg_dtype zt = z ? ent_dtype(c, z) : TG_DTYPE_NONE;
    *qdt = od ? onnx_elem_dtype((int32_t)od) : z ? zt : TG_U8;
    static const char *const lacking[] = {[24] = "float8e8m0", [25] = "uint2", [26] = "int2"};
    if (*qdt == TG_DTYPE_NONE)
        return tg_err("output type %lld (%s) is not one tgraph has (int4, uint4, int8, uint8, int16,"
                      " the float8 and float4e2m1 types are)", (long long)od,
                      od > 0 && od < 27 && lacking[od] ? lacking[od] : "unknown");
    if (z && zt != *qdt) return tg_err("output_dtype differs from the zero point's type");
    if (!int8_type(*qdt) && *qdt != TG_I16 && *qdt != TG_I4 && *qdt != TG_U4 && *qdt != TG_F4E2M1 &&
        !onnx_is_f8(*qdt))
        return tg_err("quantizing to %s is not supported (int4, uint4, int8, uint8, int16, float8, float4e2m1)",
                      tg_dtype_name(*qdt));
    return 0;
}

/* QuantizeLinear (10, 13 axis, 19 float8 and saturate, 21 block_size and output_dtype). */
static int map_quantize_linear(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int x = in_val(c, 0);
    onnx_ent *s = x < 0 ? NULL : in_req(c, 1), *z = in_opt(c, 2);
    tg_dtype qdt;
    qaxis q;
    if (!s || quant_dtype(c, z, &qdt) || qaxis_read(c, shape_of(c, x).rank, 1, &q)) return -1;
    if (!tg_dtype_is_float(dtype_of(c, x))) return tg_err("input x is %s, not floating point", tg_dtype_name(dtype_of(c, x)));
    return def_out(c, 0, quantize_val(c, x, s, z, &q, qdt, onnx_attr_int(N(c), "saturate", 1) != 0, NULL));
}

/* DequantizeLinear (10, 13 axis, 19 float8, 21 block_size, 23 output_dtype): the
 * output has the scale's type. */
static int map_dequantize_linear(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int x = in_val(c, 0);
    onnx_ent *s = x < 0 ? NULL : in_req(c, 1), *z = in_opt(c, 2);
    qaxis q;
    if (!s || qaxis_read(c, shape_of(c, x).rank, 1, &q)) return -1;
    int64_t od = onnx_attr_int(N(c), "output_dtype", 0);
    tg_dtype odt = od ? onnx_elem_dtype((int32_t)od) : ent_dtype(c, s);
    if (!tg_dtype_is_float(odt)) return tg_err("output type %lld is not floating point", (long long)od);
    return def_out(c, 0, dequantize_val(c, x, s, z, &q, odt, NULL));
}

/* DynamicQuantizeLinear (11): uint8 with scale (max(0, max x) - min(0, min x)) / 255
 * and zero point saturate(round(-min / scale)), as ONNX writes it out; an all-zero
 * x (scale 0) quantizes to 0 with zero point 0. */
static int map_dynamic_quantize_linear(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int x = cast_to(c, in_val(c, 0), TG_F32, "x_f32");
    if (x < 0) return -1;
    int rank = shape_of(c, x).rank;
    int64_t axes[TG_MAX_RANK];
    for (int i = 0; i < rank; i++) axes[i] = i;
    tg_attr ra[2] = {tg_attr_ints("axes", rank, axes), tg_attr_int("keepdim", 0)};
    int zero = scalar_const(c, "zero", TG_F32, 0);
    int lo = binary_on(c, TG_OP_MINIMUM, "min", unary_on(c, TG_OP_REDUCE_MIN, "min_x", x, 2, ra), zero);
    int hi = lo < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "max", unary_on(c, TG_OP_REDUCE_MAX, "max_x", x, 2, ra), zero);
    int sc = hi < 0 ? -1 : binary_on(c, TG_OP_DIV, "scale", binary_on(c, TG_OP_SUB, "range", hi, lo),
                                     scalar_const(c, "levels", TG_F32, 255));
    /* a zero scale divides by 1 instead: x is all zeros, so is q */
    int is0 = sc < 0 ? -1 : binary_on(c, TG_OP_EQ, "scale_is_0", sc, zero);
    int safe = where_on(c, "safe_scale", is0, scalar_const(c, "one", TG_F32, 1), sc);
    tg_attr ca[2] = {tg_attr_float("min", 0), tg_attr_float("max", 255)};
    int zp = safe < 0 ? -1 : binary_on(c, TG_OP_DIV, "zero_f", unary_on(c, TG_OP_NEG, "neg_min", lo, 0, NULL), safe);
    zp = zp < 0 ? -1 : unary_on(c, TG_OP_CLAMP, "zero_sat", unary_on(c, TG_OP_ROUND, "zero_round", zp, 0, NULL), 2, ca);
    int y = zp < 0 ? -1 : binary_on(c, TG_OP_ADD, "shifted", unary_on(c, TG_OP_ROUND, "rounded",
                                                      binary_on(c, TG_OP_DIV, "scaled", x, safe), 0, NULL), zp);
    y = y < 0 ? -1 : cast_to(c, unary_on(c, TG_OP_CLAMP, "saturated", y, 2, ca), TG_U8, NULL);
    if (y < 0 || def_out(c, 0, y) || def_out(c, 1, sc) || def_out(c, 2, cast_to(c, zp, TG_U8, "zero_point")))
        return -1;
    return 0;
}

/* Map the standard op `type` on values in[] (-1: absent) with this node's
 * attributes, as if the model had that node: its output value. It defines
 * names, which may move the entry table: entries looked up before are stale. */
#define MAP_AS_MAX 64

static int map_as(onnx_ctx *c, const char *type, int nin, const int *in)
{
    const Onnx__NodeProto *n = N(c);
    const char *base = n->output[0];
    char names[MAP_AS_MAX][320], out[320], *inp[MAP_AS_MAX], *outp[1] = {out};
    if (nin > MAP_AS_MAX) return tg_err("more than %d inputs", MAP_AS_MAX);
    for (int i = 0; i < nin; i++) {
        inp[i] = names[i];
        names[i][0] = 0;
        if (in[i] < 0) continue;
        snprintf(names[i], sizeof names[i], "%s/%s_in%d", base, type, i);
        if (onnx_def_value(c, names[i], in[i])) return -1;
    }
    snprintf(out, sizeof out, "%s/%s", base, type);
    Onnx__NodeProto f = ONNX__NODE_PROTO__INIT;
    f.name = n->name;
    f.op_type = (char *)type;
    f.n_input = (size_t)nin;
    f.input = inp;
    f.n_output = 1;
    f.output = outp;
    f.n_attribute = n->n_attribute;
    f.attribute = n->attribute;
    c->node = &f;
    int rc = onnx_map_node(c, &f);
    c->node = n;
    if (rc) return rc > 0 ? tg_err("%s is not supported", type) : -1;
    onnx_ent *e = onnx_get(c, out);
    return e ? onnx_value(c, e) : -1;
}

/* Output 0: y quantized per tensor with the scale and zero point of inputs is
 * and iz (absent: uint8, 0). The entries are looked up here, after map_as:
 * defining names may move the table. */
static int requantize(onnx_ctx *c, int y, int is, int iz)
{
    onnx_ent *ys = in_req(c, is), *yz = in_opt(c, iz);
    tg_dtype qdt = yz ? ent_dtype(c, yz) : TG_U8;
    qaxis qy = {0, 0};
    if (!ys || y < 0) return -1;
    if (!int8_type(qdt)) return tg_err("y is %s, not int8 or uint8", tg_dtype_name(qdt));
    return def_out(c, 0, quantize_val(c, y, ys, yz, &qy, qdt, true, NULL));
}

/* QLinearMatMul (10, 21 float16 scales): a per tensor or per row, b per tensor or
 * per column, y per tensor. */
static int map_qlinear_matmul(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 3);
    onnx_ent *as = in_req(c, 1), *az = in_opt(c, 2), *bs = in_req(c, 4), *bz = in_opt(c, 5);
    if (b < 0 || !as || !bs) return -1;
    int ra = shape_of(c, a).rank, rb = shape_of(c, b).rank;
    qaxis qa = {ra > 1 ? ra - 2 : 0, 0}, qb = {rb - 1, 0};
    int in[2] = {dequantize_val(c, a, as, az, &qa, TG_F32, "a"), dequantize_val(c, b, bs, bz, &qb, TG_F32, "b")};
    return requantize(c, in[0] < 0 || in[1] < 0 ? -1 : map_as(c, "MatMul", 2, in), 6, 7);
}

/* The int32 bias of QLinearConv and QGemm in float32: bias * x_scale * w_scale (per channel). */
static int int32_bias(onnx_ctx *c, onnx_ent *bias, onnx_ent *xs, onnx_ent *ws)
{
    if (bias->kind == ONNX_ENT_CONST && bias->dtype == TG_I32 && xs->kind == ONNX_ENT_CONST &&
        xs->dtype == TG_F32 && xs->nbytes == 4 && ws->kind == ONNX_ENT_CONST && ws->dtype == TG_F32) {
        int64_t n = (int64_t)(ws->nbytes / 4), nb = (int64_t)(bias->nbytes / 4);
        float *s = malloc(sizeof(float) * (size_t)nb);
        if (!s) return tg_err("out of memory");
        for (int64_t i = 0; i < nb; i++)   /* the product in float32, as ORT forms it */
            s[i] = ((const float *)xs->data)[0] * ((const float *)ws->data)[n == 1 ? 0 : i];
        int64_t dims[1] = {nb};
        onnx_ent e = {.kind = ONNX_ENT_CONST, .dtype = TG_F32, .rank = 1, .dims = {nb}, .data = s,
                      .nbytes = sizeof(float) * (size_t)nb, .value = -1};
        qaxis q = {0, 0};
        tg_shape bs = tg_shape_of(1, dims);
        qattrs qa;
        int y = -1, bv = onnx_value(c, bias);
        if (bv >= 0 && (n == 1 || n == nb) && const_qparams(c, &e, NULL, &bs, &q, &qa)) {
            y = unary_on(c, TG_OP_DEQUANTIZE, "bias", bv, qa.na, qa.a);
            qattrs_free(&qa);
            free(s);
            return y;
        }
        free(s);
    }
    int s = binary_on(c, TG_OP_MUL, "bias_scale", cast_to(c, onnx_value(c, xs), TG_F32, "x_scale"),
                      cast_to(c, onnx_value(c, ws), TG_F32, "w_scale"));
    return s < 0 ? -1 : binary_on(c, TG_OP_MUL, "bias", cast_to(c, onnx_value(c, bias), TG_F32, "bias_f32"), s);
}

/* QLinearConv (10): x and y per tensor, w per tensor or per output channel,
 * bias int32 with scale x_scale * w_scale. */
static int map_qlinear_conv(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int x = in_val(c, 0), w = x < 0 ? -1 : in_val(c, 3);
    onnx_ent *xs = in_req(c, 1), *xz = in_opt(c, 2), *ws = in_req(c, 4), *wz = in_opt(c, 5);
    onnx_ent *bias = in_opt(c, 8);
    if (w < 0 || !xs || !ws) return -1;
    qaxis qx = {0, 0}, qw = {0, 0};
    int in[3] = {dequantize_val(c, x, xs, xz, &qx, TG_F32, "x"), dequantize_val(c, w, ws, wz, &qw, TG_F32, "w"),
                 bias ? int32_bias(c, bias, xs, ws) : -1};
    if (in[0] < 0 || in[1] < 0 || (bias && in[2] < 0)) return -1;
    return requantize(c, map_as(c, "Conv", bias ? 3 : 2, in), 6, 7);
}

/* x - zero_point in float64 (exact for 8-bit values and their int32 sums). */
static int centered_f64(onnx_ctx *c, int x, onnx_ent *z, const qaxis *q)
{
    int t = cast_to(c, x, TG_F64, "f64");
    if (t < 0 || !z) return t;
    tg_shape xs = shape_of(c, x);
    return binary_on(c, TG_OP_SUB, "centered", t, param_as(c, z, &xs, q, TG_F64, "zero_point"));
}

/* MatMulInteger (10) and ConvInteger (10): int32 results of 8-bit operands less
 * their zero points (MatMulInteger: a's per row, b's per column; ConvInteger:
 * x's per tensor, w's per output channel). */
static int map_integer(onnx_ctx *c, const onnx_op_map *m)
{
    bool conv = m->op == TG_OP_CONV;
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    if (b < 0) return -1;
    if (!int8_type(dtype_of(c, a)) || !int8_type(dtype_of(c, b)))
        return tg_err("operands are %s and %s, not int8 or uint8", tg_dtype_name(dtype_of(c, a)),
                      tg_dtype_name(dtype_of(c, b)));
    int ra = shape_of(c, a).rank, rb = shape_of(c, b).rank;
    qaxis qa = {conv ? 0 : ra > 1 ? ra - 2 : 0, 0}, qb = {conv ? 0 : rb - 1, 0};
    int in[2] = {centered_f64(c, a, in_opt(c, 2), &qa), centered_f64(c, b, in_opt(c, 3), &qb)};
    if (in[0] < 0 || in[1] < 0) return -1;
    return def_out(c, 0, cast_to(c, map_as(c, conv ? "Conv" : "MatMul", 2, in), TG_I32, NULL));
}

/* ---- ONNX Runtime's QOperator ops (domain com.microsoft) ---------------------------- */

/* The ops that are dequantize -> a standard op -> quantize: its k quantized
 * inputs as (x, scale, zero point) triples, then y's scale and zero point. */
static const struct {
    const char *type, *as;
    int k;
} qlinear_ms[] = {
    {"QLinearAdd", "Add", 2}, {"QLinearMul", "Mul", 2}, {"QLinearGlobalAveragePool", "GlobalAveragePool", 1},
    {"QLinearAveragePool", "AveragePool", 1}, {"QLinearSoftmax", "Softmax", 1},
    {"QLinearSigmoid", "Sigmoid", 1}, {"QLinearLeakyRelu", "LeakyRelu", 1},
};

static int map_qlinear_ms(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int e = 0;
    while (strcmp(qlinear_ms[e].type, N(c)->op_type)) e++;
    int k = qlinear_ms[e].k, in[2] = {-1, -1};
    if (onnx_attr_int(N(c), "channels_last", 0)) return tg_err("channels_last=1 is not supported");
    for (int i = 0; i < k; i++) {
        int x = in_val(c, 3 * i);
        onnx_ent *s = x < 0 ? NULL : in_req(c, 3 * i + 1);
        qaxis q = {0, 0};
        if (!s || (in[i] = dequantize_val(c, x, s, in_opt(c, 3 * i + 2), &q, TG_F32, i ? "b" : "a")) < 0) return -1;
    }
    /* QLinearSoftmax's opset attribute says which Softmax it is */
    int64_t opset = c->opset;
    if (!strcmp(qlinear_ms[e].as, "Softmax")) c->opset = onnx_attr_int(N(c), "opset", 0);
    int y = map_as(c, qlinear_ms[e].as, k, in);
    c->opset = opset;
    return requantize(c, y, 3 * k, 3 * k + 1);
}

/* QLinearConcat: y_scale, y_zero_point, then an (x, scale, zero point) triple per
 * input; axis as Concat's. */
static int map_qlinear_concat(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int k = ((int)N(c)->n_input - 2) / 3, in[MAP_AS_MAX];
    if (k < 1 || (int)N(c)->n_input != 2 + 3 * k) return tg_err("inputs are not y_scale, y_zero_point, then triples");
    if (k > MAP_AS_MAX) return tg_err("more than %d inputs", MAP_AS_MAX);
    for (int i = 0; i < k; i++) {
        int x = in_val(c, 2 + 3 * i);
        onnx_ent *s = x < 0 ? NULL : in_req(c, 3 + 3 * i);
        qaxis q = {0, 0};
        if (!s || (in[i] = dequantize_val(c, x, s, in_opt(c, 4 + 3 * i), &q, TG_F32, "x")) < 0) return -1;
    }
    return requantize(c, map_as(c, "Concat", k, in), 0, 1);
}

/* QGemm: A, a_scale, a_zero_point, B, b_scale, b_zero_point (per tensor or per
 * output column), C (int32 with scale a_scale * b_scale)?, y_scale?, y_zero_point?;
 * alpha, transA, transB as Gemm's. Without y_scale the output is float32. */
static int map_qgemm(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 3);
    onnx_ent *as = in_req(c, 1), *bs = in_req(c, 4), *bias = in_opt(c, 6);
    if (b < 0 || !as || !bs) return -1;
    if (bias && onnx_attr_float(N(c), "alpha", 1) != 1) return tg_err("alpha != 1 with a bias C is not supported");
    qaxis qa = {0, 0}, qb = {onnx_attr_int(N(c), "transB", 0) ? 0 : 1, 0};
    int in[3] = {dequantize_val(c, a, as, in_opt(c, 2), &qa, TG_F32, "a"), dequantize_val(c, b, bs, in_opt(c, 5), &qb, TG_F32, "b"),
                 bias ? int32_bias(c, bias, as, bs) : -1};
    if (in[0] < 0 || in[1] < 0 || (bias && in[2] < 0)) return -1;
    int y = map_as(c, "Gemm", bias ? 3 : 2, in);
    return in_opt(c, 7) ? requantize(c, y, 7, 8) : def_out(c, 0, y);
}

const onnx_op_map onnx_quant_ms_ops[] = {
    {"QuantizeLinear", map_quantize_linear, TG_OP_QUANTIZE},
    {"DequantizeLinear", map_dequantize_linear, TG_OP_DEQUANTIZE},
    {"QGemm", map_qgemm, TG_OP_NONE},
    {"QLinearAdd", map_qlinear_ms, TG_OP_NONE}, {"QLinearMul", map_qlinear_ms, TG_OP_NONE},
    {"QLinearGlobalAveragePool", map_qlinear_ms, TG_OP_NONE}, {"QLinearAveragePool", map_qlinear_ms, TG_OP_NONE},
    {"QLinearSoftmax", map_qlinear_ms, TG_OP_NONE}, {"QLinearSigmoid", map_qlinear_ms, TG_OP_NONE},
    {"QLinearLeakyRelu", map_qlinear_ms, TG_OP_NONE}, {"QLinearConcat", map_qlinear_concat, TG_OP_NONE},
};
const int onnx_quant_ms_nops = (int)(sizeof onnx_quant_ms_ops / sizeof onnx_quant_ms_ops[0]);

const onnx_op_map onnx_quant_ops[] = {
    {"QuantizeLinear", map_quantize_linear, TG_OP_QUANTIZE},
    {"DequantizeLinear", map_dequantize_linear, TG_OP_DEQUANTIZE},
    {"DynamicQuantizeLinear", map_dynamic_quantize_linear, TG_OP_NONE},
    {"QLinearMatMul", map_qlinear_matmul, TG_OP_NONE},
    {"QLinearConv", map_qlinear_conv, TG_OP_NONE},
    {"MatMulInteger", map_integer, TG_OP_MATMUL},
    {"ConvInteger", map_integer, TG_OP_CONV},
};
const int onnx_quant_nops = (int)(sizeof onnx_quant_ops / sizeof onnx_quant_ops[0]);
