/* Elementwise fusion: chains and trees of elementwise nodes, and such a tree
 * feeding a reduction over the trailing axes, become one loop (a LOOP group)
 * that reads the tree's outside inputs once and writes only its result: the
 * values inside the group never touch memory.
 *
 * Groups grow from a root (the last node) towards its producers: a producer
 * joins when the target's loop computes it element by element (its
 * tg_group_rules), every reader of its result is in the group, its result is
 * no graph output, and the group still fits one loop
 * (tg_loop_analyze: at most TG_LOOP_MAX_IN outside inputs, broadcasts that
 * collapse to rows x inner). */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"

#define MAX_MEMBERS 32

/* A reduction (ops.def's REDUCTION flag) ends a loop, over its trailing
 * axes, when the target's loop_supports takes it; it never joins as a
 * producer. Which reductions a loop computes is the target's answer. */
static bool fused_reduction(tg_op op)
{
    return tg_op_table[op].flags & TG_OPF_REDUCTION;
}

/* ---- the loop of a group ------------------------------------------------- */

static bool dim_is(tg_dim d, int64_t v)
{
    int64_t c;
    return tg_dim_is_const(d, &c) && c == v;
}

/* Outside inputs of the group: values members read that no member makes. */
static int outside_inputs(const tg_graph *g, const tg_plan *p, int root, tg_loop *l)
{
    l->nin = 0;
    for (int n = 0; n <= root; n++) {
        if (p->root[n] != root)
            continue;
        const tg_node *nd = &g->nodes[n];
        for (int i = 0; i < nd->nin; i++) {
            int v = nd->in[i];
            const tg_value *x = &g->values[v];
            if (x->kind == TG_VALUE_NODE && p->root[x->producer] == root)
                continue;
            int k = 0;
            while (k < l->nin && l->in[k] != v)
                k++;
            if (k < l->nin)
                continue;
            if (l->nin == TG_LOOP_MAX_IN)
                return tg_err("more than %d outside inputs", TG_LOOP_MAX_IN);
            l->in[l->nin++] = v;
        }
    }
    return 0;
}

int tg_loop_analyze(const tg_graph *g, const tg_plan *p, int root, tg_loop *l)
{
    const tg_node *rn = &g->nodes[root];
    memset(l, 0, sizeof *l);
    l->reduce = fused_reduction(rn->op);
    if (outside_inputs(g, p, root, l))
        return -1;
    const tg_shape *ls = &g->values[l->reduce ? rn->in[0] : rn->out[0]].shape;
    int r = ls->rank;
    bool red[TG_MAX_RANK] = {false}, full[TG_LOOP_MAX_IN][TG_MAX_RANK];
    if (l->reduce) {
        const int64_t *axes;
        int na = tg_node_ints(rn, "axes", &axes);
        for (int d = 0; d < r; d++)
            red[d] = na < 0;
        for (int i = 0; i < na; i++)
            red[axes[i] < 0 ? axes[i] + r : axes[i]] = true;
    }
    for (int k = 0; k < l->nin; k++) {
        const tg_shape *s = &g->values[l->in[k]].shape;
        for (int d = 0; d < r; d++) {
            int e = d - (r - s->rank);
            full[k][d] = e >= 0 && !dim_is(s->d[e], 1);
        }
    }
    /* collapse: drop dims of 1, merge neighbours every input treats alike */
    int first[TG_MAX_RANK], last[TG_MAX_RANK], nc = 0;
    bool seen_red = false;
    for (int d = 0; d < r; d++) {
        if (dim_is(ls->d[d], 1))
            continue;
        if (l->reduce && seen_red && !red[d])
            return tg_err("the reduced axes are not the trailing ones");
        seen_red |= red[d];
        bool same = nc > 0 && red[last[nc - 1]] == red[d];
        for (int k = 0; k < l->nin && same; k++)
            same = full[k][last[nc - 1]] == full[k][d];
        if (same) {
            last[nc - 1] = d;
        } else {
            first[nc] = last[nc] = d;
            nc++;
        }
    }
    if (l->reduce && (!nc || !red[last[nc - 1]]))
        return tg_err("nothing to reduce");
    if (l->reduce && nc > 1 && red[last[nc - 2]])
        return tg_err("inputs broadcast over part of the reduced axes");
    l->rank = nc ? nc : 1;
    for (int c = 0; c < l->rank; c++) {
        tg_dim size = tg_dim_const(1);
        for (int d = nc ? first[c] : 0; nc && d <= last[c]; d++)
            if (tg_dim_mul(size, ls->d[d], &size))
                return -1;
        l->dims[c] = size;
        for (int k = 0; k < l->nin; k++) {
            tg_dim st = tg_dim_const(nc && full[k][first[c]] ? 1 : 0);
            for (int d = nc ? last[c] + 1 : r; d < r && !dim_is(st, 0); d++)
                if (full[k][d] && tg_dim_mul(st, ls->d[d], &st))
                    return -1;
            l->stride[k][c] = st;
        }
    }
    return 0;
}

/* ---- growing the groups ------------------------------------------------------- */

static bool is_output(const tg_graph *g, int v)
{
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == v)
            return true;
    return false;
}

/* Every reader of v is a member of root's group. */
static bool read_only_inside(const tg_graph *g, const tg_plan *p, int v, int root)
{
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] == v && p->root[n] != root)
                return false;
    return true;
}

/* Add producers to root's group while they qualify; returns the member count. */
static int grow(const tg_graph *g, tg_plan *p, int root)
{
    int members = 1;
    bool changed = true;
    while (changed && members < MAX_MEMBERS) {
        changed = false;
        for (int n = root; n >= 0 && members < MAX_MEMBERS; n--) {
            if (p->root[n] != root)
                continue;
            const tg_node *nd = &g->nodes[n];
            for (int i = 0; i < nd->nin; i++) {
                const tg_value *x = &g->values[nd->in[i]];
                const char *why = NULL;
                if (x->kind != TG_VALUE_NODE || p->root[x->producer] != x->producer ||
                    p->kind[x->producer] != TG_GROUP_SINGLE)
                    continue;
                int q = x->producer;
                const tg_node *pn = &g->nodes[q];
                if (fused_reduction(pn->op) || !p->rules->loop_supports(g, pn, &why) ||
                    is_output(g, pn->out[0]) ||
                    !read_only_inside(g, p, pn->out[0], root)) {
                    if (why)
                        TG_LOG(FUSION, TG_LOG_DEBUG, "loop: %s into %s refused: %s", pn->name,
                               g->nodes[root].name, why);
                    continue;
                }
                tg_loop l;
                p->root[q] = root;
                if (tg_loop_analyze(g, p, root, &l)) {
                    TG_LOG(FUSION, TG_LOG_DEBUG, "loop: %s into %s refused: %s", pn->name,
                           g->nodes[root].name, tg_errmsg());
                    tg_err_clear();
                    p->root[q] = q;
                    continue;
                }
                TG_LOG(FUSION, TG_LOG_INFO, "loop: %s (%s) into %s (%s)", pn->name,
                       tg_op_name(pn->op), g->nodes[root].name, tg_op_name(g->nodes[root].op));
                members++;
                changed = true;
            }
        }
    }
    return members;
}

int tg_pass_fuse_elementwise(const tg_graph *g, tg_plan *p)
{
    int groups = 0;
    if (!p->rules || !p->rules->loop)
        return 0;
    for (int n = g->nnode - 1; n >= 0; n--) {
        const tg_node *nd = &g->nodes[n];
        const char *why;
        if (p->root[n] != n || p->kind[n] != TG_GROUP_SINGLE ||
            !p->rules->loop_supports(g, nd, &why))
            continue;
        bool red = fused_reduction(nd->op);
        tg_loop l;
        if (tg_loop_analyze(g, p, n, &l)) {
            tg_err_clear();
            continue;
        }
        p->kind[n] = TG_GROUP_LOOP;
        int members = grow(g, p, n);
        if (red && members == 1) {      /* a lone reduction keeps its kernel */
            p->kind[n] = TG_GROUP_SINGLE;
            continue;
        }
        groups++;
    }
    return groups;
}
