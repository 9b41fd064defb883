/* Quantize/dequantize pairs: tquant --qdq writes them around float layers
 * (quantization simulated in float, as PyTorch's convert_pt2e does), and
 * tg_quant_fold_qdq folds such pairs, whoever wrote them, into qlinear/qconv. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"
#include "../ops/infer.h"
#include "../passes/passes.h"
#include "internal.h"
#include "quant.h"

int tg_quant_emit_qdq(tg_graph *g, int ni, float xs, int32_t xz, tg_dtype xdt, int wq, int ws,
                      int bias)
{
    const tg_value *sv = &g->values[ws];
    int64_t rows = (int64_t)(sv->nbytes / sizeof(float));
    double *scales = malloc(sizeof(double) * (size_t)(rows + 1));
    if (!scales)
        return tg_err("out of memory");
    for (int64_t r = 0; r < rows; r++)
        scales[r] = ((const float *)sv->data)[r];
    char name[512];
    const char *nm = g->nodes[ni].name;
    tg_attr xa[3] = {tg_attr_float("scale", xs), tg_attr_int("zero_point", xz),
                     tg_attr_dtype("dtype", xdt)};
    tg_attr wa[3] = {tg_attr_floats("scale", (int)rows, scales), tg_attr_int("axis", 0),
                     tg_attr_int("zero_point", 0)};
    int in0 = g->nodes[ni].in[0];
    snprintf(name, sizeof name, "%s.quantize_x", nm);
    int q = tg_graph_add_node(g, TG_OP_QUANTIZE, name, 1, &in0, 3, xa);
    snprintf(name, sizeof name, "%s.dequantize_x", nm);
    int dx = q < 0 ? -1 : tg_graph_add_node(g, TG_OP_DEQUANTIZE, name, 1, &q, 2, xa);
    /* per channel: zero points are 0, one scale per row, along axis 0 */
    snprintf(name, sizeof name, "%s.dequantize_w", nm);
    int dw = dx < 0 ? -1 : tg_graph_add_node(g, TG_OP_DEQUANTIZE, name, 1, &wq, 2, wa);
    free(scales);
    if (dw < 0)
        return -1;
    const tg_node *n = &g->nodes[ni];
    int in[3] = {dx, dw, bias};
    snprintf(name, sizeof name, "%s.qdq", nm);
    return tg_graph_add_node(g, n->op, name, bias >= 0 ? 3 : 2, in, n->nattr, n->attr);
}

/* The node producing value v when it is op, else NULL. */
static const tg_node *made_by(const tg_graph *g, int v, tg_op op)
{
    if (v < 0 || g->values[v].kind != TG_VALUE_NODE)
        return NULL;
    const tg_node *n = &g->nodes[g->values[v].producer];
    return n->op == op ? n : NULL;
}

/* Per-tensor parameters of a quantize or dequantize node. */
static bool per_tensor(const tg_node *n, double *scale, int64_t *zero)
{
    const tg_attr *s = tg_node_attr(n, "scale"), *z = tg_node_attr(n, "zero_point");
    if (!s || s->kind != TG_ATTR_FLOAT || (z && z->kind != TG_ATTR_INT))
        return false;
    *scale = s->u.f;
    *zero = z ? z->u.i : 0;
    return true;
}

/* The activation side: dequantize(quantize(x)) with equal parameters; x. */
static int act_side(const tg_graph *g, int v, double *scale, int64_t *zero, tg_dtype *dt)
{
    const tg_node *d = made_by(g, v, TG_OP_DEQUANTIZE);
    const tg_node *q = d ? made_by(g, d->in[0], TG_OP_QUANTIZE) : NULL;
    double s2;
    int64_t z2;
    if (!q || !per_tensor(d, scale, zero) || !per_tensor(q, &s2, &z2) || s2 != *scale ||
        z2 != *zero || (float)*scale != *scale)
        return -1;
    *dt = g->values[q->out[0]].dtype;
    if ((*dt != TG_U8 && *dt != TG_I8) || g->values[q->in[0]].dtype != TG_F32)
        return -1;
    return q->in[0];
}

/* Dequantize node d's parameters as symmetric float32 scales s[n] (one scale
 * broadcast, or n of them): false when a zero point is not 0 or a scale is not
 * exact in float32 (the kernels scale in float32: only those fold). */
static bool sym_scales(const tg_node *d, int64_t n, float *s)
{
    const tg_attr *sa = tg_node_attr(d, "scale"), *za = tg_node_attr(d, "zero_point");
    for (int i = 0; za && i < (za->kind == TG_ATTR_INTS ? za->n : 1); i++)
        if ((za->kind == TG_ATTR_INTS ? za->u.ints[i] : za->u.i) != 0)
            return false;
    for (int64_t r = 0; r < n; r++) {
        double x = sa->kind == TG_ATTR_FLOATS ? sa->u.floats[r] : sa->u.f;
        if ((float)x != x)
            return false;
        s[r] = (float)x;
    }
    return true;
}

/* The weight side: dequantize of a constant i8 of `rows` rows, symmetric,
 * per tensor or per row; the scales into s[rows] (float). The i8 value. */
static int weight_side(const tg_graph *g, int v, int64_t rows, float *s)
{
    const tg_node *d = made_by(g, v, TG_OP_DEQUANTIZE);
    if (!d)
        return -1;
    const tg_value *w = &g->values[d->in[0]];
    const tg_attr *sa = tg_node_attr(d, "scale");
    if (w->kind != TG_VALUE_CONST || w->dtype != TG_I8 || !sa)
        return -1;
    if (sa->kind == TG_ATTR_FLOATS && (sa->n != rows || tg_node_int(d, "axis", -1) != 0))
        return -1;
    return sym_scales(d, rows, s) ? d->in[0] : -1;
}

/* The transposed weight side: dequantize of a constant i8 [K, N] (a MatMul's
 * or Gemm's B), symmetric, per tensor or per column (axis 1); the scales into
 * s[N]. An i8 constant [N, K] with its rows (made once, named "<w>.t"), or -1. */
static int weight_side_t(tg_graph *g, int v, float *s)
{
    const tg_node *d = made_by(g, v, TG_OP_DEQUANTIZE);
    const tg_value *w = d ? &g->values[d->in[0]] : NULL;
    int64_t K, N;
    if (!w || w->kind != TG_VALUE_CONST || w->dtype != TG_I8 || w->shape.rank != 2 ||
        !tg_dim_is_const(w->shape.d[0], &K) || !tg_dim_is_const(w->shape.d[1], &N))
        return -1;
    const tg_attr *sa = tg_node_attr(d, "scale");
    int64_t axis = tg_node_int(d, "axis", 1);
    if (!sa || (sa->kind == TG_ATTR_FLOATS && (sa->n != N || (axis != 1 && axis != -1))) ||
        !sym_scales(d, N, s))
        return -1;
    char name[512];
    snprintf(name, sizeof name, "%s.t", w->name);
    int t = tg_graph_find_value(g, name);
    if (t >= 0)
        return t;
    int8_t *q = malloc((size_t)(N * K) + 1);
    if (!q)
        return tg_err("out of memory"), -2;
    const int8_t *src = w->data;
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            q[n * K + k] = src[k * N + n];
    int64_t dims[2] = {N, K};
    tg_shape ts = tg_shape_of(2, dims);
    t = tg_graph_add_const(g, name, TG_I8, &ts, q, (size_t)(N * K));
    return t < 0 ? -2 : t;
}

/* A linear's weight that is permute([1, 0]) of v: v, else -1. */
static int transposed_from(const tg_graph *g, int v)
{
    const tg_node *p = made_by(g, v, TG_OP_PERMUTE);
    const int64_t *perm;
    if (!p || tg_node_ints(p, "perm", &perm) != 2 || perm[0] != 1 || perm[1] != 0)
        return -1;
    return p->in[0];
}

/* Fold layer ni when both sides allow: 1 folded, 0 not, -1 error. */
static int fold_layer(tg_graph *g, int ni)
{
    const tg_node *n = &g->nodes[ni];
    const tg_value *w = tg_node_input(g, n, 1), *b = tg_node_input(g, n, 2);
    int64_t rows;
    double xs;
    int64_t xz;
    tg_dtype xdt;
    /* MatMul's B [K, N] and Gemm's (a linear reading B transposed) fold transposed */
    bool mm = n->op == TG_OP_MATMUL && w && w->shape.rank == 2;
    int wt = n->op == TG_OP_LINEAR ? transposed_from(g, n->in[1]) : mm ? n->in[1] : -1;
    if ((n->op != TG_OP_LINEAR && n->op != TG_OP_CONV && !mm) || tg_node_int(n, "transposed", 0) ||
        !w || !tg_dim_is_const(w->shape.d[mm ? 1 : 0], &rows) || (b && b->dtype != TG_F32))
        return 0;
    int x = act_side(g, n->in[0], &xs, &xz, &xdt);
    float *s = malloc(sizeof(float) * (size_t)(rows + 1));
    if (!s)
        return tg_err("out of memory");
    int wq = x < 0 ? -1 : wt >= 0 ? weight_side_t(g, wt, s) : weight_side(g, n->in[1], rows, s);
    if (wq < 0) {
        free(s);
        return wq == -2 ? -1 : 0;
    }
    char name[512];
    snprintf(name, sizeof name, "%s.scale", g->values[wq].name);
    tg_shape ss = tg_shape_of(1, &rows);
    int ws = tg_graph_find_value(g, name);
    if (ws < 0)
        ws = tg_graph_add_const(g, name, TG_F32, &ss, s, sizeof(float) * (size_t)rows);
    else
        free(s);
    if (ws < 0)
        return -1;
    n = &g->nodes[ni];
    bool conv = n->op == TG_OP_CONV;
    tg_attr attrs[12];
    int na = 0;
    attrs[na++] = tg_attr_string("scheme", "static");
    attrs[na++] = tg_attr_float("x_scale", xs);
    attrs[na++] = tg_attr_int("x_zero", xz);
    attrs[na++] = tg_attr_dtype("x_dtype", xdt);
    for (int i = 0; conv && i < n->nattr && na < 12; i++)
        if (strcmp(n->attr[i].name, "transposed") && strcmp(n->attr[i].name, "output_padding"))
            attrs[na++] = n->attr[i];
    int in[4] = {x, wq, ws, !mm && n->nin > 2 ? n->in[2] : -1};
    snprintf(name, sizeof name, "%s.q", n->name);
    int y = tg_graph_add_node(g, conv ? TG_OP_QCONV : TG_OP_QLINEAR, name, in[3] >= 0 ? 4 : 3,
                              in, na, attrs);
    if (y < 0 || tg_graph_replace_node(g, ni, y, ".float"))
        return -1;
    TG_LOG(QUANT, TG_LOG_INFO, "%s: quantize/dequantize pairs folded into %s", g->nodes[ni].name,
           conv ? "qconv" : "qlinear");
    return 1;
}

/* A view or max pool of quantize(x) per tensor is quantize of the same op on x
 * (quantize is elementwise and monotonic): so rewritten, the pairs of models
 * that reshape or pool quantized tensors (ONNX Runtime's QOperator format) meet
 * again as dequantize(quantize(x)), and max_pool runs in float32. */
static int hoist_quantize(tg_graph *g)
{
    int done = 0, nnode = g->nnode;
    for (int i = 0; i < nnode; i++) {
        tg_op op = g->nodes[i].op;
        if ((op != TG_OP_RESHAPE && op != TG_OP_PERMUTE && op != TG_OP_MAX_POOL && op != TG_OP_SLICE &&
             op != TG_OP_EXPAND) || g->nodes[i].nin != 1 || g->nodes[i].nout != 1)
            continue;
        const tg_node *q = made_by(g, g->nodes[i].in[0], TG_OP_QUANTIZE);
        double s;
        int64_t z;
        if (!q || !per_tensor(q, &s, &z))
            continue;
        tg_node n = g->nodes[i], qn = *q;     /* copies: adding nodes may move the array */
        char name[512];
        snprintf(name, sizeof name, "%s.float", n.name);
        int f = tg_graph_add_node(g, n.op, name, 1, &qn.in[0], n.nattr, n.attr);
        snprintf(name, sizeof name, "%s.quantize", n.name);
        int y = f < 0 ? -1 : tg_graph_add_node(g, TG_OP_QUANTIZE, name, 1, &f, qn.nattr, qn.attr);
        if (y < 0 || tg_graph_replace_node(g, i, y, ".u8"))
            return -1;
        done++;
    }
    return done;
}

int tg_quant_fold_qdq(tg_graph *g)
{
    int done = 0, nnode, hoisted = hoist_quantize(g);
    if (hoisted < 0)
        return -1;
    nnode = g->nnode;
    for (int i = 0; i < nnode; i++) {
        int r = fold_layer(g, i);
        if (r < 0)
            return -1;
        done += r;
    }
    if ((done || hoisted) && (tg_graph_compact(g) || tg_pass_dce(g) < 0 || tg_graph_validate(g)))
        return -1;
    return done;
}
