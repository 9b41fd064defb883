/* Batch norm folding: an inference batch_norm right after a conv (not
 * transposed) or a 2-D linear, with constant f32 weights and statistics,
 * becomes part of that conv's or linear's weight and bias:
 *   s = gamma / sqrt(var + eps),  W'[k] = W[k] * s[k],  b'[k] = (b[k] - mean[k]) * s[k] + beta[k]
 * The conv or linear must have no other reader. */
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"

static const float *const_f32(const tg_graph *g, const tg_node *nd, int i, int64_t n)
{
    if (i >= nd->nin || nd->in[i] < 0)
        return NULL;
    const tg_value *v = &g->values[nd->in[i]];
    int64_t k;
    if (v->kind != TG_VALUE_CONST || v->dtype != TG_F32 || v->shape.rank != 1 ||
        !tg_dim_is_const(v->shape.d[0], &k) || k != n)
        return NULL;
    return v->data;
}

/* Why the pair cannot fold, or NULL. */
static const char *refusal(const tg_graph *g, const tg_node *op, const tg_node *bn,
                           const int *uses, int64_t *k)
{
    const tg_value *y = &g->values[op->out[0]], *w = &g->values[op->in[1]];
    if (uses[op->out[0]] != 1)
        return "the conv/linear result has other readers";
    if (op->op == TG_OP_CONV && tg_node_int(op, "transposed", 0))
        return "transposed conv";
    if (op->op == TG_OP_LINEAR && y->shape.rank != 2)
        return "linear result is not 2-D";
    if (w->kind != TG_VALUE_CONST || w->dtype != TG_F32)
        return "weight is not a constant f32";
    if (!tg_dim_is_const(y->shape.d[1], k))
        return "channel count is symbolic";
    for (int i = 1; i < bn->nin; i++)
        if (bn->in[i] >= 0 && !const_f32(g, bn, i, *k))
            return "batch_norm statistics are not constant f32 vectors";
    if (op->nin > 2 && op->in[2] >= 0 && !const_f32(g, op, 2, *k))
        return "bias is not a constant f32 vector";
    for (int k2 = 0; k2 < g->noutput; k2++)
        if (g->outputs[k2] == op->out[0])
            return "the conv/linear result is a graph output";
    return NULL;
}

static int fold_one(tg_graph *g, int opn, int bnn)
{
    const tg_node *op = &g->nodes[opn], *bn = &g->nodes[bnn];
    const tg_value *w = &g->values[op->in[1]];
    int64_t k = 0;
    tg_dim_is_const(g->values[op->out[0]].shape.d[1], &k);
    double eps = tg_node_float(bn, "eps", 1e-5);
    const float *mean = const_f32(g, bn, 1, k), *var = const_f32(g, bn, 2, k);
    const float *gamma = const_f32(g, bn, 3, k), *beta = const_f32(g, bn, 4, k);
    const float *bias = op->nin > 2 && op->in[2] >= 0 ? const_f32(g, op, 2, k) : NULL;
    size_t per = w->nbytes / sizeof(float) / (size_t)k;   /* weight elements per channel */
    float *nw = malloc(w->nbytes ? w->nbytes : 1), *nb = malloc(k * sizeof *nb);
    if (!nw || !nb) {
        free(nw), free(nb);
        return tg_err("out of memory");
    }
    for (int64_t c = 0; c < k; c++) {
        double s = (gamma ? gamma[c] : 1.0) / sqrt((double)var[c] + eps);
        for (size_t i = 0; i < per; i++)
            nw[c * per + i] = (float)(((const float *)w->data)[c * per + i] * s);
        nb[c] = (float)(((bias ? bias[c] : 0.0) - mean[c]) * s + (beta ? beta[c] : 0.0));
    }
    char name[512];
    tg_shape bs = {.rank = 1, .d = {tg_dim_const(k)}}, ws = w->shape;
    snprintf(name, sizeof name, "%s.bn_weight", op->name);
    int wv = tg_graph_add_const(g, name, TG_F32, &ws, nw, g->values[op->in[1]].nbytes);
    snprintf(name, sizeof name, "%s.bn_bias", g->nodes[opn].name);
    int bv = wv < 0 ? -1 : tg_graph_add_const(g, name, TG_F32, &bs, nb, k * sizeof *nb);
    if (wv < 0 || bv < 0) {
        if (wv < 0)
            free(nb);
        return -1;
    }
    op = &g->nodes[opn];
    int in[3] = {op->in[0], wv, bv};
    int y = tg_graph_add_node(g, op->op, NULL, 3, in, op->nattr, op->attr);
    if (y < 0)
        return -1;
    int old = g->nodes[bnn].out[0];
    if (tg_value_take_name(g, y, old))
        return -1;
    tg_graph_replace_uses(g, old, y);
    TG_LOG(FUSION, TG_LOG_INFO, "bn_fold: %s folded into %s", g->nodes[bnn].name,
           g->nodes[opn].name);
    /* the folded node keeps the conv's name: logs and tlog --dot --log refer to it */
    tg_node_take_name(g, g->values[y].producer, opn);
    tg_graph_kill_node(g, bnn);
    tg_graph_kill_node(g, opn);
    return 0;
}

int tg_pass_bn_fold(tg_graph *g)
{
    int *uses = tg_graph_use_counts(g);
    int folded = 0;
    if (!uses)
        return -1;
    int nnode = g->nnode;
    for (int n = 0; n < nnode; n++) {
        const tg_node *bn = &g->nodes[n];
        if (bn->op != TG_OP_BATCH_NORM || g->values[bn->in[0]].kind != TG_VALUE_NODE)
            continue;
        int opn = g->values[bn->in[0]].producer;
        const tg_node *op = &g->nodes[opn];
        if (op->op != TG_OP_CONV && op->op != TG_OP_LINEAR)
            continue;
        int64_t k;
        const char *why = refusal(g, op, bn, uses, &k);
        if (why) {
            TG_LOG(FUSION, TG_LOG_DEBUG, "bn_fold: %s into %s refused: %s", bn->name,
                   op->name, why);
            continue;
        }
        if (fold_one(g, opn, n)) {
            free(uses);
            return -1;
        }
        folded++;
    }
    free(uses);
    if (folded && tg_graph_compact(g))
        return -1;
    return folded;
}
