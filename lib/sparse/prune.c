/* The tsparse pass: each float32 layer on a constant weight (linear, matmul
 * with a constant 2-D right operand, 1x1 convolution) is pruned to 2:4 along
 * its reduction dim by magnitude and becomes a linear_24 node on the
 * compressed weight (a 1x1 convolution between two permutes: channels last
 * and back); tquant's int8 qlinear becomes qlinear_24. Layers are chosen by name patterns and size; every candidate,
 * pruned or not, gets a line in the result for the report. */
#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../graph.h"
#include "../log.h"
#include "../ops/infer.h"
#include "../ops/qops.h"
#include "../passes/passes.h"
#include "sparse.h"

void tg_sparse_opts_init(tg_sparse_opts *o)
{
    memset(o, 0, sizeof *o);
}

/* The weight as [N, K] rows along the reduction dim, or why the node is no
 * candidate (NULL: not a layer on a constant float weight at all). */
typedef struct {
    const float *w;             /* [N, K] or, transposed, [K, N] */
    const int8_t *q;            /* or a qlinear's int8 [N, K] (w NULL) */
    const float *scale;         /* and its scales [N] */
    bool transposed;            /* matmul: w is [K, N] */
    int64_t N, K;
} weight;

static bool is_ones(const tg_node *n, const char *attr, int nsp, int64_t dflt)
{
    int64_t v[3];
    if (tg_attr_per_axis(n, attr, nsp, dflt, v))
        return false;
    for (int i = 0; i < nsp; i++)
        if (v[i] != (dflt == 0 ? 0 : 1))
            return false;
    return true;
}

/* 1: a candidate (w filled), 0: not a layer this pass knows; *skip: a
 * candidate the pass cannot prune, and why. */
/* tquant's int8 linear layer (tquant before tsparse): pruned by |q| into
 * qlinear_24, its scales and activation parameters kept */
static int candidate_q(const tg_graph *g, const tg_node *n, weight *w, const char **skip)
{
    const tg_value *wv = tg_node_input(g, n, 1), *sv = tg_node_input(g, n, 2);
    int64_t d[2];
    tg_qlayer q;
    if (wv->kind != TG_VALUE_CONST || wv->dtype != TG_I8 || sv->kind != TG_VALUE_CONST ||
        tg_qlayer_read(n, &q))
        return 0;
    tg_shape_is_const(&wv->shape, d);
    *w = (weight){.q = wv->data, .scale = sv->data, .N = d[0], .K = d[1]};
    if (q.scheme == TG_QSCHEME_WEIGHT_ONLY)
        *skip = "weight-only qlinear";
    else if (w->K % 4)
        *skip = "reduction dim not a multiple of 4";
    return 1;
}

static int candidate(const tg_graph *g, const tg_node *n, weight *w, const char **skip)
{
    *skip = NULL;
    if (n->op == TG_OP_QLINEAR)
        return candidate_q(g, n, w, skip);
    if (n->op != TG_OP_LINEAR && n->op != TG_OP_MATMUL && n->op != TG_OP_CONV)
        return 0;
    const tg_value *x = tg_node_input(g, n, 0), *wv = tg_node_input(g, n, 1);
    if (wv->kind != TG_VALUE_CONST || x->dtype != TG_F32 || wv->dtype != TG_F32)
        return 0;
    int64_t d[TG_MAX_RANK];
    tg_shape_is_const(&wv->shape, d);
    *w = (weight){.w = wv->data, .N = d[0], .K = wv->shape.rank > 1 ? d[1] : 0};
    if (n->op == TG_OP_MATMUL) {
        if (wv->shape.rank != 2 || x->shape.rank < 1)
            return 0;
        *w = (weight){.w = wv->data, .transposed = true, .N = d[1], .K = d[0]};
    } else if (n->op == TG_OP_CONV) {
        int nsp = wv->shape.rank - 2;
        for (int i = 0; i < nsp; i++)
            if (d[2 + i] != 1)
                return 0;           /* only 1x1 kernels are matrix products */
        if (tg_node_int(n, "transposed", 0) || tg_node_int(n, "groups", 1) != 1 ||
            !is_ones(n, "stride", nsp, 1) || !is_ones(n, "dilation", nsp, 1) ||
            !is_ones(n, "padding", nsp, 0))
            *skip = "1x1 convolution with groups, stride, dilation or padding";
    }
    if (!*skip && w->K % 4)
        *skip = "reduction dim not a multiple of 4";
    return 1;
}

static bool matches(const char *name, int n, const char *const *patterns)
{
    for (int i = 0; i < n; i++)
        if (!fnmatch(patterns[i], name, 0))
            return true;
    return false;
}

/* The compressed weight as two constants named after the weight (shared by
 * the layers that share the weight); their ids in *v, *m. */
static int compressed(tg_graph *g, int wid, const weight *w, int *v, int *m)
{
    char vn[512], mn[512];
    const char *suffix = w->transposed ? ".t" : "";
    snprintf(vn, sizeof vn, "%s%s.values", g->values[wid].name, suffix);
    snprintf(mn, sizeof mn, "%s%s.meta", g->values[wid].name, suffix);
    *v = tg_graph_find_value(g, vn);
    *m = tg_graph_find_value(g, mn);
    if (*v >= 0 && *m >= 0)
        return 0;
    int64_t MB = tg_sparse24_meta_bytes(w->K);
    uint8_t *meta = malloc((size_t)(w->N * MB) + 1);
    tg_shape vs = tg_shape_of(2, (int64_t[]){w->N, w->K / 2});
    tg_shape ms = tg_shape_of(2, (int64_t[]){w->N, MB});
    if (w->q) {
        int8_t *qv = malloc((size_t)(w->N * w->K / 2) + 1);
        if (!qv || !meta) {
            free(qv), free(meta);
            return tg_err("out of memory");
        }
        tg_sparse24_compress_i8(w->q, w->N, w->K, qv, meta);
        *v = tg_graph_add_const(g, vn, TG_I8, &vs, qv, (size_t)(w->N * w->K / 2));
        *m = *v < 0 ? -1 : tg_graph_add_const(g, mn, TG_U8, &ms, meta, (size_t)(w->N * MB));
        if (*v < 0)
            free(meta);
        return *m < 0 ? -1 : 0;
    }
    float *dense = NULL, *values = malloc(sizeof *values * (size_t)(w->N * w->K / 2) + 1);
    if (w->transposed && (dense = malloc(sizeof *dense * (size_t)(w->N * w->K) + 1)))
        for (int64_t k = 0; k < w->K; k++)
            for (int64_t c = 0; c < w->N; c++)
                dense[c * w->K + k] = w->w[k * w->N + c];
    if (!values || !meta || (w->transposed && !dense)) {
        free(values), free(meta), free(dense);
        return tg_err("out of memory");
    }
    tg_sparse24_compress(w->transposed ? dense : w->w, w->N, w->K, values, meta);
    free(dense);
    *v = tg_graph_add_const(g, vn, TG_F32, &vs, values, sizeof *values * (size_t)(w->N * w->K / 2));
    *m = *v < 0 ? -1 : tg_graph_add_const(g, mn, TG_U8, &ms, meta, (size_t)(w->N * MB));
    if (*v < 0)
        free(meta);
    return *m < 0 ? -1 : 0;
}

/* zeros and relative error of the pruned weight against the dense one (an
 * int8 weight's dequantized) */
static int measure(const tg_graph *g, int v, int m, const weight *w, tg_sparse_layer *l)
{
    float *p = malloc(sizeof *p * (size_t)(w->N * w->K) + 1);
    int8_t *pq = w->q ? malloc((size_t)(w->N * w->K) + 1) : NULL;
    if (!p || (w->q && !pq)) {
        free(p), free(pq);
        return tg_err("out of memory");
    }
    if (w->q) {
        tg_sparse24_expand_i8(g->values[v].data, g->values[m].data, w->N, w->K, pq);
        for (int64_t i = 0; i < w->N * w->K; i++)
            p[i] = pq[i] * w->scale[i / w->K];
    } else {
        tg_sparse24_expand(g->values[v].data, g->values[m].data, w->N, w->K, p);
    }
    free(pq);
    int64_t zeros = 0;
    double err = 0, norm = 0;
    for (int64_t n = 0; n < w->N; n++)
        for (int64_t k = 0; k < w->K; k++) {
            double d = w->q ? (double)(w->q[n * w->K + k] * w->scale[n])
                       : w->transposed ? w->w[k * w->N + n] : w->w[n * w->K + k];
            float q = p[n * w->K + k];
            zeros += q == 0.0f;
            err += (d - q) * (d - q);
            norm += d * d;
        }
    free(p);
    l->sparsity = w->N * w->K > 0 ? (double)zeros / (double)(w->N * w->K) : 0;
    l->rel_err = norm > 0 ? sqrt(err / norm) : sqrt(err);
    l->was_24 = err == 0;       /* nothing but zeros was dropped */
    return 0;
}

/* Node ni as linear_24 (a qlinear: qlinear_24) on (v, m): its output
 * value, or -1. */
static int rewrite(tg_graph *g, int ni, int v, int m)
{
    const tg_node *n = &g->nodes[ni];
    char name[512];
    snprintf(name, sizeof name, "%s.sparse", n->name);
    if (n->op == TG_OP_QLINEAR) {
        tg_attr a[16];      /* copied: adding a node may move g's nodes */
        int na = n->nattr < 16 ? n->nattr : 16, bias = n->nin > 3 ? n->in[3] : -1;
        memcpy(a, n->attr, sizeof *a * (size_t)na);
        return tg_graph_add_node(g, TG_OP_QLINEAR_24, name, bias >= 0 ? 5 : 4,
                                 (int[]){n->in[0], v, m, n->in[2], bias}, na, a);
    }
    int x = n->in[0], bias = n->op != TG_OP_MATMUL && n->nin > 2 ? n->in[2] : -1;
    if (n->op != TG_OP_CONV)
        return tg_graph_add_node(g, TG_OP_LINEAR_24, name, bias >= 0 ? 4 : 3,
                                 (int[]){x, v, m, bias}, 0, NULL);
    /* [N, C, *sp] -> [N, *sp, C], the product, and back */
    int rank = g->values[x].shape.rank;
    int64_t to_last[TG_MAX_RANK], back[TG_MAX_RANK];
    to_last[0] = back[0] = 0;
    for (int i = 1; i < rank - 1; i++)
        to_last[i] = i + 1;
    to_last[rank - 1] = 1;
    back[1] = rank - 1;
    for (int i = 2; i < rank; i++)
        back[i] = i - 1;
    char pn[560];
    snprintf(pn, sizeof pn, "%s.channels_last", n->name);
    tg_attr a = tg_attr_ints("perm", rank, to_last);
    int xt = tg_graph_add_node(g, TG_OP_PERMUTE, pn, 1, &x, 1, &a);
    int y = xt < 0 ? -1 : tg_graph_add_node(g, TG_OP_LINEAR_24, name, bias >= 0 ? 4 : 3,
                                              (int[]){xt, v, m, bias}, 0, NULL);
    snprintf(pn, sizeof pn, "%s.channels_first", g->nodes[ni].name);
    a = tg_attr_ints("perm", rank, back);
    return y < 0 ? -1 : tg_graph_add_node(g, TG_OP_PERMUTE, pn, 1, &y, 1, &a);
}

static int prune_layer(tg_graph *g, int ni, const weight *w, tg_sparse_layer *l)
{
    int wid = g->nodes[ni].in[1], v, m;
    if (compressed(g, wid, w, &v, &m) || measure(g, v, m, w, l))
        return -1;
    int y = rewrite(g, ni, v, m);
    if (y < 0 || tg_graph_replace_node(g, ni, y, ".dense"))
        return -1;
    TG_LOG(SPARSE, TG_LOG_INFO, "%s: %s [%lld, %lld] -> 2:4%s, sparsity %.3f, weight error %.4g",
           l->name, l->op, (long long)w->N, (long long)w->K, l->was_24 ? " (already 2:4)" : "",
           l->sparsity, l->rel_err);
    return 0;
}

int tg_sparse_prune(tg_graph *g, const tg_sparse_opts *o, tg_sparse_result *r)
{
    memset(r, 0, sizeof *r);
    /* batch norms first folded into the layers before them, as tcompile would:
     * it could not fold them into a linear_24 */
    if (tg_pass_bn_fold(g) < 0 || tg_pass_dce(g) < 0)
        return -1;
    int nnode = g->nnode, pruned = 0;
    r->layer = calloc((size_t)nnode + 1, sizeof *r->layer);
    if (!r->layer)
        return tg_err("out of memory");
    for (int i = 0; i < nnode; i++) {
        weight w;
        const char *skip;
        const tg_node *n = &g->nodes[i];
        if (!candidate(g, n, &w, &skip))
            continue;
        tg_sparse_layer *l = &r->layer[r->n];
        if (!(l->name = strdup(n->name)))
            return tg_err("out of memory");
        r->n++;
        l->op = tg_op_name(n->op);
        l->rows = w.N;
        l->cols = w.K;
        if (!skip && o->ninclude && !matches(n->name, o->ninclude, o->include))
            skip = "not included";
        if (!skip && matches(n->name, o->nexclude, o->exclude))
            skip = "excluded";
        if (!skip && w.N * w.K < o->min_size)
            skip = "smaller than the minimum size";
        if ((l->skip = skip)) {
            TG_LOG(SPARSE, TG_LOG_INFO, "%s: %s kept dense (%s)", l->name, l->op, skip);
            continue;
        }
        if (prune_layer(g, i, &w, l))
            return tg_err_append("(layer '%s')", l->name);
        pruned++;
    }
    if (tg_graph_compact(g))
        return -1;
    return pruned;
}

void tg_sparse_result_free(tg_sparse_result *r)
{
    for (int i = 0; r->layer && i < r->n; i++)
        free(r->layer[i].name);
    free(r->layer);
    memset(r, 0, sizeof *r);
}
