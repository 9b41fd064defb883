/* Constant folding: a node whose inputs are all constants (or that has none,
 * like full and arange with constant sizes) is run once by the interpreter
 * and replaced by its result, which keeps the node's output name. Results
 * much larger than their inputs (expand, full) stay nodes: they would bloat
 * the weights for little gain. tg_eval_const runs such a value's whole
 * constant-only subgraph for a pass that needs its contents once (a causal
 * mask's pattern) without keeping it. */
#include "passes.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../exec/exec.h"
#include "../log.h"

#define FOLD_MAX_GROWTH (1 << 16)   /* bytes a result may exceed its inputs by */

static bool foldable(const tg_graph *g, const tg_node *nd)
{
    size_t in_bytes = 0;
    if (nd->op == TG_OP_NONE || nd->nout != 1)
        return false;
    for (int i = 0; i < nd->nin; i++) {
        if (nd->in[i] < 0)
            continue;
        const tg_value *x = &g->values[nd->in[i]];
        if (x->kind != TG_VALUE_CONST)
            return false;
        in_bytes += x->nbytes;
    }
    const tg_value *y = &g->values[nd->out[0]];
    int64_t dims[TG_MAX_RANK];
    if (!tg_shape_is_const(&y->shape, dims))
        return false;
    int64_t n = tg_tensor_numel(y->shape.rank, dims);
    return n >= 0 && (size_t)n * tg_dtype_size(y->dtype) <= in_bytes + FOLD_MAX_GROWTH;
}

/* Whether node nd can be copied into a graph of its own as it is (no
 * declared outputs: run-time attributes, data and control-flow ops). */
static bool plain(const tg_node *nd)
{
    return nd->op != TG_OP_NONE && !tg_node_declared(nd) && !tg_op_is_control(nd->op);
}

/* need[n] for every node value v depends on; false (tg_err) when a graph
 * input is among its sources, a node is not plain or has a result of no
 * constant shape, or the results come to more than max_bytes. */
static bool mark_sources(const tg_graph *g, int v, size_t max_bytes, bool *need)
{
    int *stack = malloc(sizeof *stack * (size_t)(g->nvalue + 1)), top = 0;
    size_t bytes = 0;
    bool ok = stack != NULL;
    if (!ok)
        tg_err("out of memory");
    else
        stack[top++] = v;
    while (ok && top > 0) {
        const tg_value *x = &g->values[stack[--top]];
        if (x->kind == TG_VALUE_CONST)
            continue;
        if (x->kind != TG_VALUE_NODE) {
            ok = !tg_err("%s is a graph input", x->name);
            break;
        }
        if (need[x->producer])
            continue;
        const tg_node *nd = &g->nodes[x->producer];
        need[x->producer] = true;
        if (!plain(nd)) {
            ok = !tg_err("%s (%s) has run-time attributes or sizes", nd->name,
                         tg_op_name(nd->op));
            break;
        }
        for (int k = 0; k < nd->nout; k++) {
            const tg_value *y = &g->values[nd->out[k]];
            int64_t dims[TG_MAX_RANK];
            if (!tg_shape_is_const(&y->shape, dims)) {
                ok = !tg_err("%s has no constant shape", y->name);
                break;
            }
            bytes += (size_t)tg_tensor_numel(y->shape.rank, dims) * tg_dtype_size(y->dtype);
        }
        if (ok && bytes > max_bytes)
            ok = !tg_err("its results come to more than %zu bytes", max_bytes);
        for (int i = 0; ok && i < nd->nin; i++)
            if (nd->in[i] >= 0)
                stack[top++] = nd->in[i];       /* each node pushes once: nvalue bounds */
    }
    free(stack);
    return ok;
}

int tg_eval_const(const tg_graph *g, int v, size_t max_bytes, tg_tensor *out)
{
    bool *need = calloc((size_t)g->nnode + 1, sizeof *need);
    int *map = malloc(sizeof *map * (size_t)(g->nvalue + 1)), rc = -1;
    tg_graph *t = tg_graph_new();
    if (!need || !map || !t) {
        tg_err("out of memory");
        goto out;
    }
    if (!mark_sources(g, v, max_bytes, need))
        goto out;
    for (int i = 0; i < g->nvalue; i++)
        map[i] = -1;
    if (g->values[v].kind == TG_VALUE_CONST)
        map[v] = tg_graph_add_const_copy(t, g->values[v].name, g->values[v].dtype,
                                         &g->values[v].shape, g->values[v].data);
    for (int n = 0; n < g->nnode; n++) {        /* in topological order */
        if (!need[n])
            continue;
        const tg_node *nd = &g->nodes[n];
        int in[nd->nin + 1];
        for (int i = 0; i < nd->nin; i++) {
            int x = nd->in[i];
            const tg_value *xv = x >= 0 ? &g->values[x] : NULL;
            if (xv && map[x] < 0 && xv->kind == TG_VALUE_CONST &&
                (map[x] = tg_graph_add_const_copy(t, xv->name, xv->dtype, &xv->shape,
                                                  xv->data)) < 0)
                goto out;
            in[i] = x >= 0 ? map[x] : -1;
        }
        int y = tg_graph_add_node(t, nd->op, nd->name, nd->nin, in, nd->nattr, nd->attr);
        if (y < 0)
            goto out;
        const tg_node *copy = &t->nodes[t->values[y].producer];
        for (int k = 0; k < nd->nout && k < copy->nout; k++)
            map[nd->out[k]] = copy->out[k];
    }
    if (map[v] < 0 || tg_graph_add_output(t, map[v]) < 0)
        goto out;
    tg_exec *e = tg_exec_new(t, 1);
    if (e) {
        rc = tg_exec_run(e, NULL, out);
        tg_exec_free(e);
    }
out:
    free(need);
    free(map);
    tg_graph_free(t);
    return rc;
}

int tg_pass_fold(tg_graph *g)
{
    int folded = 0;
    for (int n = 0; n < g->nnode; n++) {
        tg_node *nd = &g->nodes[n];
        if (!foldable(g, nd))
            continue;
        tg_tensor r;
        if (tg_eval_const(g, nd->out[0], SIZE_MAX, &r)) {
            TG_LOG(PASSES, TG_LOG_DEBUG, "fold: %s (%s) stays: %s", nd->name,
                   tg_op_name(nd->op), tg_errmsg());
            tg_err_clear();
            continue;
        }
        /* the constant takes over the output's name; the old value is renamed
         * and dropped by compaction */
        int old = nd->out[0];
        tg_value *ov = &g->values[old];
        char *name = ov->name;
        size_t len = strlen(name) + 16;
        ov->name = malloc(len);
        if (!ov->name) {
            ov->name = name;
            tg_tensor_free(&r);
            return tg_err("out of memory");
        }
        snprintf(ov->name, len, "%s.folded", name);
        tg_shape s = ov->shape;
        int c = tg_graph_add_const(g, name, ov->dtype, &s, r.data, r.nbytes);
        free(name);
        if (c < 0)
            return -1;
        tg_graph_replace_uses(g, old, c);
        TG_LOG(PASSES, TG_LOG_DEBUG, "fold: %s (%s) is a constant",
               g->nodes[n].name, tg_op_name(g->nodes[n].op));
        tg_graph_kill_node(g, n);
        folded++;
    }
    if (folded && tg_graph_compact(g))
        return -1;
    return folded;
}
