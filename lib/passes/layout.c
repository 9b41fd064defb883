/* Layout choices.
 *
 * - A permute of a permute is one permute; a permute that keeps the order is
 *   its input, and so is a pad by nothing on every side (Swin's windows pad
 *   56 x 56 to a multiple of 7 with zeros: a copy of the whole activation).
 * - A matmul whose right operand is a constant [K, N] matrix, directly or
 *   broadcast over the batch by an expand, becomes a linear on the
 *   pre-transposed [N, K] constant: one GEMM over every row of the batch
 *   instead of one per batch entry, with the weight read in the layout the
 *   linear kernel wants (and a following bias add can then fuse into it). */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"

int tg_layout_perm(const tg_node *nd, int64_t *p)
{
    const int64_t *v;
    int n = tg_node_ints(nd, "perm", &v);
    for (int i = 0; i < n; i++)
        p[i] = v[i] < 0 ? v[i] + n : v[i];
    return n;
}

static const tg_node *producer(const tg_graph *g, int v)
{
    const tg_value *x = &g->values[v];
    return x->kind == TG_VALUE_NODE ? &g->nodes[x->producer] : NULL;
}

/* Replace node n's result by value v everywhere, keeping the result's name
 * when v is a new node's. */
static int replace(tg_graph *g, int n, int v)
{
    int old = g->nodes[n].out[0];
    if (g->values[v].kind == TG_VALUE_NODE && tg_value_take_name(g, v, old))
        return -1;
    tg_graph_replace_uses(g, old, v);
    tg_graph_kill_node(g, n);
    return 0;
}

int tg_layout_fold_permute(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    int64_t p[TG_MAX_RANK], q[TG_MAX_RANK], r[TG_MAX_RANK];
    int k = tg_layout_perm(nd, p), x = nd->in[0];
    const tg_node *in = producer(g, x);
    if (in && in->op == TG_OP_PERMUTE && tg_layout_perm(in, q) == k) {
        for (int i = 0; i < k; i++)     /* out[i] = mid[p[i]] = x[q[p[i]]] */
            r[i] = q[p[i]];
        memcpy(p, r, sizeof r);
        x = in->in[0];
    }
    bool identity = true;
    for (int i = 0; i < k; i++)
        identity &= p[i] == i;
    if (identity) {
        TG_LOG(PASSES, TG_LOG_DEBUG, "layout: %s keeps the order: dropped", nd->name);
        return replace(g, n, x) ? -1 : 1;
    }
    if (x == nd->in[0])
        return 0;
    tg_attr a = tg_attr_ints("perm", k, p);
    int y = tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &x, 1, &a);
    if (y < 0)
        return -1;
    TG_LOG(PASSES, TG_LOG_DEBUG, "layout: %s and the permute before it are one",
           g->nodes[n].name);
    return replace(g, n, y) ? -1 : 1;
}

/* A pad whose pads (an attribute, not read at run time) are all 0 copies its
 * input: drop it. */
static int drop_empty_pad(tg_graph *g, int n)
{
    const int64_t *pads;
    int k = tg_node_ints(&g->nodes[n], "pads", &pads);
    if (g->nodes[n].nin != 1 || k <= 0)
        return 0;
    for (int i = 0; i < k; i++)
        if (pads[i])
            return 0;
    TG_LOG(PASSES, TG_LOG_DEBUG, "layout: %s pads nothing: dropped", g->nodes[n].name);
    return replace(g, n, g->nodes[n].in[0]) ? -1 : 1;
}

/* The [K, N] constant under b (itself, or what an expand broadcasts), or -1. */
static int const_matrix(const tg_graph *g, int b)
{
    const tg_node *e = producer(g, b);
    if (e && e->op == TG_OP_EXPAND)
        b = e->in[0];
    const tg_value *w = &g->values[b];
    return w->kind == TG_VALUE_CONST && w->shape.rank == 2 ? b : -1;
}

static int matmul_to_linear(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    int b = const_matrix(g, nd->in[1]);
    const tg_value *x = &g->values[nd->in[0]], *y = &g->values[nd->out[0]];
    if (b < 0 || x->shape.rank < 2 || y->shape.rank != x->shape.rank)
        return 0;
    for (int i = 0; i < x->shape.rank - 1; i++)   /* the batch comes from x alone */
        if (!tg_dim_eq(x->shape.d[i], y->shape.d[i]))
            return 0;
    const tg_value *w = &g->values[b];
    int64_t K, N;
    if (!tg_dim_is_const(w->shape.d[0], &K) || !tg_dim_is_const(w->shape.d[1], &N))
        return 0;
    size_t es = tg_dtype_size(w->dtype);
    unsigned char *t = malloc(w->nbytes ? w->nbytes : 1);
    if (!t)
        return tg_err("out of memory");
    for (int64_t i = 0; i < K; i++)
        for (int64_t j = 0; j < N; j++)
            memcpy(t + (j * K + i) * es, (const unsigned char *)w->data + (i * N + j) * es, es);
    char name[512];
    snprintf(name, sizeof name, "%s.T", w->name);
    int64_t dims[2] = {N, K};
    tg_shape s = tg_shape_of(2, dims);
    int wt = tg_graph_find_value(g, name);   /* made for an earlier matmul? */
    if (wt >= 0)
        free(t);
    else if ((wt = tg_graph_add_const(g, name, w->dtype, &s, t, w->nbytes)) < 0)
        return -1;
    int in[2] = {g->nodes[n].in[0], wt};
    int lin = tg_graph_add_node(g, TG_OP_LINEAR, NULL, 2, in, 0, NULL);
    if (lin < 0)
        return -1;
    TG_LOG(PASSES, TG_LOG_DEBUG, "layout: %s on constant %s is a linear on its transpose",
           g->nodes[n].name, g->values[b].name);
    return replace(g, n, lin) ? -1 : 1;
}

int tg_pass_layout(tg_graph *g)
{
    int changed = 0;
    for (int n = 0; n < g->nnode; n++) {
        int r = 0;
        if (g->nodes[n].op == TG_OP_PERMUTE)
            r = tg_layout_fold_permute(g, n);
        else if (g->nodes[n].op == TG_OP_PAD)
            r = drop_empty_pad(g, n);
        else if (g->nodes[n].op == TG_OP_MATMUL)
            r = matmul_to_linear(g, n);
        if (r < 0)
            return -1;
        changed += r;
    }
    if (changed && tg_graph_compact(g))
        return -1;
    return changed;
}
