/* The rewrite: each chosen linear, linear_24 or convolution becomes qlinear,
 * qlinear_24 or qconv reading quantized copies of its weights; the float weights go when nothing
 * else reads them. The layer's output keeps its name. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../elem.h"             /* tgk_qparams_u8, tgk_wq_weight: the ops' formats */
#include "../error.h"
#include "../log.h"
#include "../passes/passes.h"
#include "internal.h"
#include "quant.h"

static float sym_scale(float amax, int qmax)
{
    float s = amax / (float)qmax;
    return s > 0 && isfinite(s) ? s : 1.0f;     /* all zeros: any scale works */
}

static int32_t quant_sym(float v, float s, int qmax)
{
    float r = nearbyintf(v / s);
    return r != r ? 0 : r < -qmax ? -qmax : r > qmax ? qmax : (int32_t)r;
}

void tg_quant_weights_int8(const float *w, int64_t rows, int64_t cols, int8_t *q, float *scale)
{
    for (int64_t r = 0; r < rows; r++) {
        float amax = 0;
        for (int64_t k = 0; k < cols; k++)
            amax = fmaxf(amax, fabsf(w[r * cols + k]));
        scale[r] = sym_scale(amax, 127);
        for (int64_t k = 0; k < cols; k++)
            q[r * cols + k] = (int8_t)quant_sym(w[r * cols + k], scale[r], 127);
    }
}

void tg_quant_weights_grouped(const float *w, int64_t rows, int64_t cols, int bits,
                              int64_t group, void *q, float *scale)
{
    int qmax = bits == 4 ? 7 : 127;
    if (group <= 0 || group > cols)
        group = cols > 0 ? cols : 1;
    int64_t ng = (cols + group - 1) / group, rowbytes = bits == 4 ? (cols + 1) / 2 : cols;
    memset(q, 0, (size_t)(rows * rowbytes));
    for (int64_t r = 0; r < rows; r++)
        for (int64_t gi = 0; gi < ng; gi++) {
            int64_t k0 = gi * group, k1 = k0 + group < cols ? k0 + group : cols;
            float amax = 0;
            for (int64_t k = k0; k < k1; k++)
                amax = fmaxf(amax, fabsf(w[r * cols + k]));
            float s = scale[r * ng + gi] = sym_scale(amax, qmax);
            for (int64_t k = k0; k < k1; k++) {
                int32_t v = quant_sym(w[r * cols + k], s, qmax);
                if (bits == 8)
                    ((int8_t *)q)[r * cols + k] = (int8_t)v;
                else
                    ((uint8_t *)q)[r * rowbytes + k / 2] |= (uint8_t)((v & 15) << (k % 2 * 4));
            }
        }
}

/* A constant named name, or an existing one of that name (weights shared by
 * several layers are quantized once). */
static int add_const(tg_graph *g, const char *name, tg_dtype dt, int rank, const int64_t *dims,
                     void *data)
{
    int v = tg_graph_find_value(g, name);
    if (v >= 0) {
        free(data);
        return v;
    }
    tg_shape s = tg_shape_of(rank, dims);
    size_t n = tg_dtype_size(dt);
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    return tg_graph_add_const(g, name, dt, &s, data, n);
}

/* The input feature of compressed column c of row r of a linear_24's weight
 * (tgraph-format(5): group c / 2, its index c % 2 in the metadata). */
static int64_t feature_24(const tg_value *meta, int64_t r, int64_t c)
{
    int64_t MB = 0;
    tg_dim_is_const(meta->shape.d[1], &MB);     /* linear_24's inference made it so */
    int bits = ((const uint8_t *)meta->data)[r * MB + c / 4] >> (c / 2 % 2 * 4);
    return c / 2 * 4 + (c % 2 ? bits >> 2 & 3 : bits & 3);
}

/* Bias correction: bias[r] + sum_k (W - deq(Wq))[r,k] * mean(x)[feature of k]; the
 * features of a convolution's row are its group's input channels, those of a
 * linear_24's its metadata's. A new constant, or the layer's bias as it was
 * (-1 when none) when no mean is known; -2 on an error. */
static int corrected_bias(tg_graph *g, const tg_node *n, int xv, const tg_calib *calib,
                          const void *q, const float *s, int bits, int64_t group, int64_t rows,
                          int64_t cols)
{
    int bi = tg_quant_bias_input(n);
    const tg_value *w = tg_node_input(g, n, 1), *b = tg_node_input(g, n, bi);
    const tg_value *meta = n->op == TG_OP_LINEAR_24 ? tg_node_input(g, n, 2) : NULL;
    int old = n->nin > bi ? n->in[bi] : -1;
    bool conv = n->op == TG_OP_CONV;
    int64_t nfeat = conv ? cols * tg_node_int(n, "groups", 1) : meta ? 2 * cols : cols, kprod = 1;
    double *mean = calib && (!b || b->kind == TG_VALUE_CONST) ? malloc(sizeof(double) *
                                                                      (size_t)(nfeat + 1)) : NULL;
    if (!mean || tg_calib_mean(calib, xv, mean, nfeat) < 0) {
        free(mean);
        return old;
    }
    int64_t per_group = conv ? rows / tg_node_int(n, "groups", 1) : rows;
    if (conv) {
        int64_t d;
        for (int i = 2; i < w->shape.rank; i++)
            if (tg_dim_is_const(w->shape.d[i], &d))
                kprod *= d;
    }
    float *nb = malloc(sizeof(float) * (size_t)(rows > 0 ? rows : 1));
    if (!nb) {
        free(mean);
        tg_err("out of memory");
        return -2;
    }
    const float *wf = w->data;
    for (int64_t r = 0; r < rows; r++) {
        double acc = b ? ((const float *)b->data)[r] : 0;
        int64_t f0 = conv ? r / per_group * (cols / kprod) : 0;
        for (int64_t k = 0; k < cols; k++) {
            float deq = bits == 8 && group <= 0 ? (float)((const int8_t *)q)[r * cols + k] * s[r]
                                                : tgk_wq_weight(q, bits, cols, group, s, r, k);
            acc += ((double)wf[r * cols + k] - deq) *
                   mean[conv ? f0 + k / kprod : meta ? feature_24(meta, r, k) : k];
        }
        nb[r] = (float)acc;
    }
    free(mean);
    char name[512];
    snprintf(name, sizeof name, "%s.bias.corrected", n->name);
    int64_t dims[1] = {rows};
    int v = add_const(g, name, TG_F32, 1, dims, nb);
    return v < 0 ? -2 : v;
}

/* Quantized weights and scales of layer n, whose input was value xv during
 * calibration: values *wq and *ws, and its bias *bias (corrected when calib
 * is given; -1: none). */
static int quant_weights(tg_graph *g, const tg_node *n, int xv, const tg_quant_opts *o,
                         const tg_calib *calib, int *wq, int *ws, int *bias)
{
    const tg_value *w = tg_node_input(g, n, 1);
    char qname[512], sname[512];
    int64_t dims[TG_MAX_RANK], rows, cols = 1;
    tg_shape_is_const(&w->shape, dims);
    int wrank = w->shape.rank;
    rows = dims[0];
    for (int i = 1; i < w->shape.rank; i++)
        cols *= dims[i];
    snprintf(qname, sizeof qname, "%s.q%s", w->name,
             o->scheme == TG_QUANT_WEIGHT_INT4 ? "4" : "");
    snprintf(sname, sizeof sname, "%s.scale%s", w->name,
             o->scheme == TG_QUANT_WEIGHT_INT4 ? "4" : "");
    bool wo = o->scheme >= TG_QUANT_WEIGHT_INT8;
    int bits = o->scheme == TG_QUANT_WEIGHT_INT4 ? 4 : 8;
    int64_t group = wo && o->group > 0 && o->group < cols ? o->group : 0;
    int64_t ng = group ? (cols + group - 1) / group : 1;
    int64_t qbytes = rows * (bits == 4 ? (cols + 1) / 2 : cols);
    void *q = malloc((size_t)(qbytes > 0 ? qbytes : 1));
    float *s = malloc(sizeof(float) * (size_t)(rows * ng > 0 ? rows * ng : 1));
    if (!q || !s) {
        free(q), free(s);
        return tg_err("out of memory");
    }
    if (wo)
        tg_quant_weights_grouped(w->data, rows, cols, bits, group, q, s);
    else
        tg_quant_weights_int8(w->data, rows, cols, q, s);
    int64_t qdims[TG_MAX_RANK], sdims[2] = {rows, ng};
    memcpy(qdims, dims, sizeof dims);
    if (bits == 4)
        qdims[1] = (cols + 1) / 2;
    w = NULL;
    int bi = tg_quant_bias_input(n);
    *bias = o->no_bias_correction ? (n->nin > bi ? n->in[bi] : -1)
                                  : corrected_bias(g, n, xv, calib, q, s, bits, group, rows, cols);
    if (*bias < -1) {
        free(q), free(s);
        return -1;
    }
    /* adding constants moves g->values: w is not to be read from here on */
    int wqv = add_const(g, qname, bits == 4 ? TG_U8 : TG_I8, wrank, qdims, q);
    if (wqv < 0) {
        free(s);
        return -1;
    }
    *wq = wqv;
    *ws = add_const(g, sname, TG_F32, ng > 1 ? 2 : 1, sdims, s);
    return *ws < 0 ? -1 : 0;
}

/* The activation parameters of a static layer reading value x. */
static int act_params(const tg_calib *calib, const tg_quant_opts *o, int x, float *scale,
                      int32_t *zero)
{
    float lo, hi;
    if (tg_calib_range(calib, x, &lo, &hi))
        return -1;
    if (o->act_int8) {
        *scale = sym_scale(fmaxf(-lo, hi), 127);
        *zero = 0;
    } else {
        tgk_qparams_u8(lo, hi, scale, zero);
    }
    return 0;
}

/* Layer ni, whose input was value xv when calib observed it: a layer rewritten
 * before it may since have replaced that value (a convolution reading
 * another's output). */
static int rewrite_layer(tg_graph *g, int ni, int xv, const tg_quant_opts *o,
                         const tg_calib *calib)
{
    int wq = -1, ws = -1, bias = -1;
    if (quant_weights(g, &g->nodes[ni], xv, o, calib, &wq, &ws, &bias))
        return -1;
    const tg_node *n = &g->nodes[ni];      /* after adding constants: nodes did not move */
    bool conv = n->op == TG_OP_CONV, s24 = n->op == TG_OP_LINEAR_24;
    tg_op op = conv ? TG_OP_QCONV : s24 ? TG_OP_QLINEAR_24 : TG_OP_QLINEAR;
    tg_attr attrs[12];
    int na = 0;
    float xs = 1;
    int32_t xz = 0;
    static const char *const scheme_attr[] = {"static", "dynamic", "weight_only", "weight_only"};
    attrs[na++] = tg_attr_string("scheme", scheme_attr[o->scheme]);
    if (o->scheme == TG_QUANT_STATIC) {
        if (act_params(calib, o, xv, &xs, &xz)) {
            TG_LOG(QUANT, TG_LOG_WARN, "%s: its input never had a finite value during"
                   " calibration: kept in float", n->name);
            return 0;
        }
        attrs[na++] = tg_attr_float("x_scale", xs);
        attrs[na++] = tg_attr_int("x_zero", xz);
        attrs[na++] = tg_attr_dtype("x_dtype", o->act_int8 ? TG_I8 : TG_U8);
    }
    if (o->scheme >= TG_QUANT_WEIGHT_INT8) {
        const tg_value *w = tg_node_input(g, n, 1);
        int64_t k;
        tg_dim_is_const(w->shape.d[1], &k);
        attrs[na++] = tg_attr_int("bits", o->scheme == TG_QUANT_WEIGHT_INT4 ? 4 : 8);
        attrs[na++] = tg_attr_int("group", o->group > 0 && o->group < k ? o->group : 0);
    }
    for (int i = 0; conv && i < n->nattr; i++)
        if (strcmp(n->attr[i].name, "transposed") && strcmp(n->attr[i].name, "output_padding"))
            attrs[na++] = n->attr[i];
    /* qlinear_24 reads the metadata between the weight and its scales */
    int in[5] = {n->in[0], wq, ws, bias}, nin = bias >= 0 ? 4 : 3, y;
    if (s24) {
        int tail[3] = {n->in[2], ws, bias};
        memcpy(in + 2, tail, sizeof tail);
        nin++;
    }
    char name[512];
    snprintf(name, sizeof name, "%s.q", n->name);
    if (o->qdq)
        y = tg_quant_emit_qdq(g, ni, xs, xz, o->act_int8 ? TG_I8 : TG_U8, wq, ws, bias);
    else
        y = tg_graph_add_node(g, op, name, nin, in, na, attrs);
    if (y < 0)
        return -1;
    n = &g->nodes[ni];
    if (o->scheme == TG_QUANT_STATIC)
        TG_LOGF(QUANT, TG_LOG_INFO, NULL, "%s: %s static, input scale %g zero point %d (%s)",
                n->name, o->qdq ? "quantize/dequantize" : tg_op_name(op), xs, (int)xz,
                o->act_int8 ? "i8" : "u8");
    else
        TG_LOG(QUANT, TG_LOG_INFO, "%s: %s %s", n->name, tg_op_name(op),
               tg_quant_scheme_name(o->scheme));
    if (tg_graph_replace_node(g, ni, y, ".float"))
        return -1;
    return 1;
}

int tg_quant_rewrite(tg_graph *g, const tg_quant_opts *o, const tg_calib *calib)
{
    int *layers = NULL, done = 0;
    int n = tg_quant_layers(g, o, &layers);
    if (n < 0)
        return -1;
    if (o->scheme == TG_QUANT_STATIC && !calib && n > 0) {
        free(layers);
        return tg_err("static quantization needs calibration");
    }
    if (o->qdq && o->scheme != TG_QUANT_STATIC) {
        free(layers);
        return tg_err("quantize/dequantize pairs are for the static scheme");
    }
    /* the inputs as calibrated, before any rewrite renumbers them */
    int *xv = malloc(sizeof(int) * (size_t)(n + 1));
    if (!xv) {
        free(layers);
        return tg_err("out of memory");
    }
    for (int i = 0; i < n; i++)
        xv[i] = g->nodes[layers[i]].in[0];
    for (int i = 0; i < n; i++) {
        int r = rewrite_layer(g, layers[i], xv[i], o, calib);
        if (r < 0) {
            tg_err_append("(layer '%s')", g->nodes[layers[i]].name);
            free(layers), free(xv);
            return -1;
        }
        done += r;
    }
    free(layers), free(xv);
    if ((o->qdq && tg_pass_dce(g) < 0) || tg_graph_compact(g) || tg_graph_validate(g))
        return -1;
    if (o->scheme == TG_QUANT_STATIC && !o->qdq && !o->act_int8 && !o->no_chain &&
        tg_quant_chain(g, calib) < 0)
        return -1;
    return done;
}
