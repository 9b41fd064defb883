/* Quantized layers: qlinear, qlinear_24 and qconv take float32 activations and quantized
 * weights with their scales, and give float32; a static qconv may also take
 * and give u8, so that consecutive ones pass int8 activations (ops.def lists
 * the attributes). */
#include "qops.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "infer.h"

/* q(v) = clamp(round_half_even(v / s) + z, 0, 255), as the kernels quantize */
static int32_t quant_u8(float v, float s, int32_t z)
{
    float r = nearbyintf(v / s) + (float)z;
    return r != r ? z : r < 0 ? 0 : r > 255 ? 255 : (int32_t)r;
}

const char *const tg_qact_names[4] = {"none", "silu", "gelu", "gelu_tanh"};

/* The u8 output's attributes: y_scale, y_zero (0), y_min and y_max (none),
 * y_act (none; silu, gelu or gelu_tanh, with p_scale and p_zero (0)). */
static int read_output(const tg_node *n, tg_qlayer *q)
{
    double ys, lo, hi;
    int64_t yz;
    const char *act;
    q->y_u8 = tg_node_attr(n, "y_scale") != NULL;
    double ps;
    int64_t pz;
    q->y_scale = 1, q->y_zero = 0, q->y_lo = 0, q->y_hi = 255, q->y_act = TGK_QACT_NONE;
    q->p_scale = 1, q->p_zero = 0;
    if (!q->y_u8) {
        if (tg_node_attr(n, "y_zero") || tg_node_attr(n, "y_min") || tg_node_attr(n, "y_max") ||
            tg_node_attr(n, "y_act") || tg_node_attr(n, "p_scale") || tg_node_attr(n, "p_zero"))
            return tg_err("attributes y_zero, y_min, y_max, y_act, p_scale and p_zero need"
                          " y_scale");
        return 0;
    }
    if (tg_attr_get_float(n, "y_scale", 1.0, &ys) || tg_attr_get_int(n, "y_zero", 0, &yz) ||
        tg_attr_get_float(n, "y_min", -INFINITY, &lo) ||
        tg_attr_get_float(n, "y_max", INFINITY, &hi) ||
        tg_attr_get_string(n, "y_act", "none", &act) ||
        tg_attr_get_float(n, "p_scale", 1.0, &ps) || tg_attr_get_int(n, "p_zero", 0, &pz))
        return -1;
    while (q->y_act < 4 && strcmp(act, tg_qact_names[q->y_act]))
        q->y_act++;
    if (q->y_act == 4)
        return tg_err("attribute 'y_act' is '%s', expected none, silu, gelu or gelu_tanh", act);
    if ((q->y_act != TGK_QACT_NONE) != (tg_node_attr(n, "p_scale") != NULL) ||
        (!q->y_act && tg_node_attr(n, "p_zero")))
        return tg_err("y_act silu, gelu or gelu_tanh needs p_scale (and p_zero); none takes"
                      " neither");
    if (!(ps > 0) || !isfinite(ps) || !((float)ps > 0) || !isfinite((float)ps))
        return tg_err("p_scale %g must be positive and finite in float32", ps);
    if (pz < 0 || pz > 255)
        return tg_err("p_zero %" PRId64 " outside u8's range", pz);
    q->p_scale = (float)ps;
    q->p_zero = (int32_t)pz;
    if (q->scheme != TG_QSCHEME_STATIC)
        return tg_err("a u8 output (y_scale) needs scheme static");
    if (!(ys > 0) || !isfinite(ys) || !((float)ys > 0) || !isfinite((float)ys))
        return tg_err("y_scale %g must be positive and finite in float32", ys);
    if (yz < 0 || yz > 255)
        return tg_err("y_zero %" PRId64 " outside u8's range", yz);
    if (!(lo <= hi))
        return tg_err("y_min %g is not at most y_max %g", lo, hi);
    q->y_scale = (float)ys;
    q->y_zero = (int32_t)yz;
    q->y_lo = quant_u8((float)lo, q->y_scale, q->y_zero);
    q->y_hi = quant_u8((float)hi, q->y_scale, q->y_zero);
    return 0;
}

int tg_qlayer_read(const tg_node *n, tg_qlayer *q)
{
    const char *scheme;
    double xs;
    int64_t xz, bits, group;
    tg_dtype xdt;
    if (tg_attr_get_string(n, "scheme", "static", &scheme) ||
        tg_attr_get_float(n, "x_scale", 1.0, &xs) || tg_attr_get_int(n, "x_zero", 0, &xz) ||
        tg_attr_get_dtype(n, "x_dtype", TG_U8, &xdt) || tg_attr_get_int(n, "bits", 8, &bits) ||
        tg_attr_get_int(n, "group", 0, &group))
        return -1;
    if (!strcmp(scheme, "static"))
        q->scheme = TG_QSCHEME_STATIC;
    else if (!strcmp(scheme, "dynamic"))
        q->scheme = TG_QSCHEME_DYNAMIC;
    else if (!strcmp(scheme, "weight_only"))
        q->scheme = TG_QSCHEME_WEIGHT_ONLY;
    else
        return tg_err("attribute 'scheme' is '%s', expected static, dynamic or weight_only",
                      scheme);
    if (q->scheme == TG_QSCHEME_STATIC && !tg_node_attr(n, "x_scale"))
        return tg_err("static scheme needs attribute 'x_scale'");
    if (!(xs > 0) || !isfinite(xs) || !((float)xs > 0) || !isfinite((float)xs))
        return tg_err("x_scale %g must be positive and finite in float32", xs);
    if (xdt != TG_U8 && xdt != TG_I8)
        return tg_err("attribute 'x_dtype' is %s, expected u8 or i8", tg_dtype_name(xdt));
    int64_t lo = xdt == TG_U8 ? 0 : -128, hi = xdt == TG_U8 ? 255 : 127;
    if (xz < lo || xz > hi)
        return tg_err("x_zero %" PRId64 " outside %s's range", xz, tg_dtype_name(xdt));
    if (bits != 8 && bits != 4)
        return tg_err("attribute 'bits' is %" PRId64 ", expected 8 or 4", bits);
    if (bits == 4 && q->scheme != TG_QSCHEME_WEIGHT_ONLY)
        return tg_err("4-bit weights need scheme weight_only");
    if (group < 0 || group > INT32_MAX || (group && q->scheme != TG_QSCHEME_WEIGHT_ONLY))
        return tg_err("attribute 'group' is %" PRId64 ": a positive group size, for"
                      " weight_only only", group);
    q->x_scale = (float)xs;
    q->x_zero_u8 = (int32_t)(xdt == TG_I8 ? xz + 128 : xz);
    q->bits = (int)bits;
    q->group = group;
    return read_output(n, q);
}

int64_t tg_qlayer_ngroups(const tg_qlayer *q, int64_t K)
{
    return q->scheme == TG_QSCHEME_WEIGHT_ONLY && q->group ? (K + q->group - 1) / q->group : 1;
}

/* w_scale f32 [rows] or [rows, groups] (input i) and bias? f32 [rows] (i + 1). */
static int check_scales(tg_graph *g, int node, int i, tg_dim rows, int64_t ngroups)
{
    const tg_value *s = tg_infer_in(g, node, i), *b = tg_infer_opt(g, node, i + 1);
    tg_shape ss = { .rank = ngroups > 1 ? 2 : 1, .d = { rows, tg_dim_const(ngroups) } };
    tg_shape bs = { .rank = 1, .d = { rows } };
    if (!s || tg_check_dtype(s, i, TG_F32) || tg_check_shape(g, s, i, &ss))
        return -1;
    if (b && (tg_check_dtype(b, i + 1, TG_F32) || tg_check_shape(g, b, i + 1, &bs)))
        return -1;
    return 0;
}

/* Input x of a qconv or qlinear: float32, or u8 quantized already (static,
 * x_dtype u8). */
static int u8_input(const tg_node *n, const tg_value *x, const tg_qlayer *q)
{
    tg_dtype xdt;
    if (x->dtype != TG_U8)
        return tg_check_dtype(x, 0, TG_F32);
    if (q->scheme != TG_QSCHEME_STATIC || tg_attr_get_dtype(n, "x_dtype", TG_U8, &xdt) ||
        xdt != TG_U8)
        return tg_err("a u8 input needs scheme static and x_dtype u8");
    return 0;
}

int tg_infer_qlinear(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    tg_qlayer q;
    int64_t K = 0;
    if (!x || !w || tg_qlayer_read(n, &q) || u8_input(n, x, &q) ||
        tg_check_rank(x, 0, 1, TG_MAX_RANK) ||
        tg_check_dtype(w, 1, q.bits == 4 ? TG_U8 : TG_I8) || tg_check_rank(w, 1, 2, 2))
        return -1;
    tg_dim kd = x->shape.d[x->shape.rank - 1], wk = kd;
    if (q.scheme == TG_QSCHEME_WEIGHT_ONLY && !tg_dim_is_const(kd, &K))
        return tg_err("weight_only needs a constant input feature size");
    if (q.bits == 4)
        wk = tg_dim_const((K + 1) / 2);
    if (tg_check_dim_eq(g, w->shape.d[1], wk,
                        q.bits == 4 ? "weight dim 1 is not (K+1)/2 bytes of two 4-bit values"
                                    : "input features differ from weight [N, K]'s K") ||
        check_scales(g, node, 2, w->shape.d[0],
                     q.scheme == TG_QSCHEME_WEIGHT_ONLY ? tg_qlayer_ngroups(&q, K) : 1))
        return -1;
    tg_shape s = x->shape;
    s.d[s.rank - 1] = w->shape.d[0];
    return tg_infer_set(g, node, q.y_u8 ? TG_U8 : TG_F32, &s);
}

/* qlinear on linear_24's compressed weight: values [N, K/2] i8, meta
 * [N, ceil(K/8)] u8 (tgraph-format(5)), K a constant multiple of 4. */
int tg_infer_qlinear_24(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0), *v = tg_infer_in(g, node, 1);
    const tg_value *m = tg_infer_in(g, node, 2);
    tg_qlayer q;
    int64_t K;
    if (!x || !v || !m || tg_qlayer_read(n, &q) || tg_check_dtype(x, 0, TG_F32) ||
        tg_check_rank(x, 0, 1, TG_MAX_RANK) || tg_check_dtype(v, 1, TG_I8) ||
        tg_check_rank(v, 1, 2, 2) || tg_check_dtype(m, 2, TG_U8) || tg_check_rank(m, 2, 2, 2))
        return -1;
    if (q.scheme == TG_QSCHEME_WEIGHT_ONLY)
        return tg_err("qlinear_24 takes scheme static or dynamic");
    if (q.y_u8)
        return tg_err("qlinear_24 gives float32: no y_scale");
    if (!tg_dim_is_const(x->shape.d[x->shape.rank - 1], &K) || K % 4 != 0)
        return tg_err("qlinear_24's input features must be a constant multiple of 4");
    tg_shape vs = {.rank = 2, .d = {v->shape.d[0], tg_dim_const(K / 2)}};
    tg_shape ms = {.rank = 2, .d = {v->shape.d[0], tg_dim_const((K / 4 + 1) / 2)}};
    if (tg_check_shape(g, v, 1, &vs) || tg_check_shape(g, m, 2, &ms) ||
        check_scales(g, node, 3, v->shape.d[0], 1))
        return -1;
    tg_shape s = x->shape;
    s.d[s.rank - 1] = v->shape.d[0];
    return tg_infer_set(g, node, TG_F32, &s);
}

/* The output shape is conv's: tg_infer_conv does it, on the input and the
 * weight read as float32 for the moment (their dtypes are restored before
 * returning). A u8 input is quantized already, with x_scale and x_zero. */
int tg_infer_qconv(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0), *w = tg_infer_in(g, node, 1);
    tg_qlayer q;
    if (!x || !w || tg_qlayer_read(n, &q) || tg_check_dtype(w, 1, TG_I8) || u8_input(n, x, &q))
        return -1;
    if (q.scheme == TG_QSCHEME_WEIGHT_ONLY)
        return tg_err("qconv takes scheme static or dynamic");
    if (tg_node_int(n, "transposed", 0))
        return tg_err("qconv is not transposed");
    if (check_scales(g, node, 2, w->shape.d[0], 1))
        return -1;
    tg_value *wv = &g->values[n->in[1]], *xv = &g->values[n->in[0]];
    tg_dtype xdt = xv->dtype;
    int bias = n->nin > 3 ? n->in[3] : -1;
    tg_node *nn = &g->nodes[node];
    int nin = nn->nin;
    /* conv's inputs are x, w, bias: hide the scales from it for the call */
    int saved = nn->in[2];
    nn->in[2] = bias;
    nn->nin = bias >= 0 ? 3 : 2;
    wv->dtype = TG_F32;
    xv->dtype = TG_F32;
    int rc = tg_infer_conv(g, node);
    wv->dtype = TG_I8;
    xv->dtype = xdt;
    nn->in[2] = saved;
    nn->nin = nin;
    if (rc == 0 && q.y_u8)
        g->values[nn->out[0]].dtype = TG_U8;
    return rc;
}
