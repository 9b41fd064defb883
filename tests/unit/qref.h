/* The float64 reference of the quantized layers (qlinear, qconv take only
 * f32 x): the same layer in ops that take f64, for cgcheck.h's widened
 * graph. The activation is quantized as the kernels do (tgk_qparams_u8,
 * tgk_quantize_u8), each f32 operation of theirs computed in f64 and
 * rounded to f32 (a cast there and back: exact, as f64 holds more than
 * twice f32's digits), then dequantized; the weights are dequantized here
 * (w * w_scale, exact in f64) into a constant; then linear or conv in f64.
 * The kernels' remaining f32 roundings (the combined scale, the sums) are
 * within cgcheck's f32 tolerance. */
#ifndef TG_QREF_H
#define TG_QREF_H

#include <stdio.h>
#include <stdlib.h>

#include "error.h"
#include "graph.h"
#include "ops/qops.h"

/* One node of w on values a (and b); its value or -1 (also when an input is). */
static inline int qref_unary(tg_graph *w, tg_op op, int a, int na, const tg_attr *at)
{
    return a < 0 ? -1 : tg_graph_add_node(w, op, NULL, 1, &a, na, at);
}

static inline int qref_binary(tg_graph *w, tg_op op, int a, int b)
{
    return a < 0 || b < 0 ? -1 : tg_graph_add_node(w, op, NULL, 2, (int[]){a, b}, 0, NULL);
}

static inline int qref_scalar(tg_graph *w, double v)
{
    char name[32];
    snprintf(name, sizeof name, "qref_%d", w->nvalue);
    return tg_graph_add_scalar(w, name, TG_F64, v);
}

/* x rounded to f32 and back */
static inline int qref_f32(tg_graph *w, int x)
{
    tg_attr f = tg_attr_dtype("dtype", TG_F32), d = tg_attr_dtype("dtype", TG_F64);
    return qref_unary(w, TG_OP_CAST, qref_unary(w, TG_OP_CAST, x, 1, &f), 1, &d);
}

/* a op b for values, then rounded as f32 does */
static inline int qref_f32op(tg_graph *w, tg_op op, int a, int b)
{
    return qref_f32(w, qref_binary(w, op, a, b));
}

/* x [f64] quantized to u8 with scale s and zero point z (values of w, f32
 * numbers) and dequantized: (clamp(round(x / s) + z, 0, 255) - z) * s */
static inline int qref_quantized(tg_graph *w, int x, int s, int z)
{
    tg_attr range[2] = {tg_attr_float("min", 0), tg_attr_float("max", 255)};
    int q = qref_unary(w, TG_OP_ROUND, qref_f32op(w, TG_OP_DIV, x, s), 0, NULL);
    q = qref_unary(w, TG_OP_CLAMP, qref_binary(w, TG_OP_ADD, q, z), 2, range);
    return qref_binary(w, TG_OP_MUL, qref_binary(w, TG_OP_SUB, q, z), s);
}

/* dynamic: s and z from x's minimum and maximum (tgk_qparams_u8; inputs
 * are random, so max > min and no fallback scale) */
static inline int qref_dynamic(tg_graph *w, int x)
{
    int zero = qref_scalar(w, 0);
    int lo = qref_binary(w, TG_OP_MINIMUM, qref_unary(w, TG_OP_REDUCE_MIN, x, 0, NULL), zero);
    int hi = qref_binary(w, TG_OP_MAXIMUM, qref_unary(w, TG_OP_REDUCE_MAX, x, 0, NULL), zero);
    int s = qref_f32op(w, TG_OP_DIV, qref_f32op(w, TG_OP_SUB, hi, lo), qref_scalar(w, 255));
    int z = qref_f32op(w, TG_OP_DIV, qref_unary(w, TG_OP_NEG, lo, 0, NULL), s);
    tg_attr range[2] = {tg_attr_float("min", 0), tg_attr_float("max", 255)};
    z = qref_unary(w, TG_OP_CLAMP, qref_unary(w, TG_OP_ROUND, z, 0, NULL), 2, range);
    return qref_quantized(w, x, s, z);
}

/* The weights of a quantized layer nd of g (constants) dequantized into an
 * f64 constant of w of w's shape; -1 (why) when they are not constants. */
static inline int qref_weights(tg_graph *w, const tg_graph *g, const tg_node *nd,
                               const tg_qlayer *q, char *why, size_t nwhy)
{
    const tg_value *wv = tg_node_input(g, nd, 1), *sv = tg_node_input(g, nd, 2);
    if (wv->kind != TG_VALUE_CONST || sv->kind != TG_VALUE_CONST) {
        snprintf(why, nwhy, "%s: the weights are not constants", nd->name);
        return -1;
    }
    int64_t K = 1, dims[TG_MAX_RANK];
    tg_shape_is_const(&wv->shape, dims);
    int64_t N = dims[0];
    for (int i = 1; i < wv->shape.rank; i++)
        K *= dims[i];
    const tg_shape *xs = &tg_node_input(g, nd, 0)->shape;
    if (q->bits == 4)           /* two values a byte: K is x's */
        tg_dim_is_const(xs->d[xs->rank - 1], &K);
    int64_t ng = tg_qlayer_ngroups(q, K), gs = q->group && ng > 1 ? q->group : K;
    size_t nk = (size_t)(N * K);
    double *d = malloc(sizeof *d * (nk ? nk : 1));
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++) {
            double v;
            if (q->bits == 4) {
                int byte = ((const uint8_t *)wv->data)[n * ((K + 1) / 2) + k / 2];
                int nib = k % 2 ? byte >> 4 : byte & 15;
                v = nib >= 8 ? nib - 16 : nib;
            } else {
                v = ((const int8_t *)wv->data)[n * K + k];
            }
            d[n * K + k] = v * ((const float *)sv->data)[n * ng + k / gs];
        }
    tg_shape s = wv->shape;
    if (q->bits == 4)
        s.d[1] = tg_dim_const(K);
    char name[32];
    snprintf(name, sizeof name, "qref_%d", w->nvalue);
    return tg_graph_add_const(w, name, TG_F64, &s, d, sizeof *d * nk);
}

/* nd (qlinear or qconv of g) as f64 ops of w reading in[] (w's values of
 * its inputs); its value, or -1 (why). */
static inline int qref_layer(tg_graph *w, const tg_graph *g, const tg_node *nd, const int *in,
                             char *why, size_t nwhy)
{
    tg_qlayer q;
    if (tg_qlayer_read(nd, &q)) {
        snprintf(why, nwhy, "%s", tg_errmsg());
        return -1;
    }
    int x = in[0];
    if (q.scheme == TG_QSCHEME_STATIC)
        x = qref_quantized(w, x, qref_scalar(w, q.x_scale), qref_scalar(w, q.x_zero_u8));
    else if (q.scheme == TG_QSCHEME_DYNAMIC)
        x = qref_dynamic(w, x);
    int wd = qref_weights(w, g, nd, &q, why, nwhy);
    int li[3] = {x, wd, nd->nin > 3 ? in[3] : -1};
    if (x < 0 || wd < 0)
        return -1;
    if (nd->op == TG_OP_QLINEAR)
        return tg_graph_add_node(w, TG_OP_LINEAR, nd->name, 3, li, 0, NULL);
    tg_attr at[8];      /* conv's attributes: all but the quantization's */
    int na = 0;
    for (int k = 0; k < nd->nattr && na < 8; k++)
        if (!strcmp(nd->attr[k].name, "stride") || !strcmp(nd->attr[k].name, "padding") ||
            !strcmp(nd->attr[k].name, "dilation") || !strcmp(nd->attr[k].name, "groups"))
            at[na++] = nd->attr[k];
    return tg_graph_add_node(w, TG_OP_CONV, nd->name, 3, li, na, at);
}

#endif
