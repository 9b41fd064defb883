/* Constant folding: a node whose inputs are all constants (or that has none,
 * like full and arange with constant sizes) is run once by the interpreter
 * and replaced by its result, which keeps the node's output name. Results
 * much larger than their inputs (expand, full) stay nodes: they would bloat
 * the weights for little gain. */
#include "passes.h"

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

/* Run node nd alone on its constant inputs; out gets the result. */
static int evaluate(const tg_graph *g, const tg_node *nd, tg_tensor *out)
{
    tg_graph *t = tg_graph_new();
    int *in = calloc(nd->nin + 1, sizeof *in), rc = -1;
    if (!t || !in) {
        tg_err("out of memory");
        goto out;
    }
    for (int i = 0; i < nd->nin; i++) {
        in[i] = -1;
        if (nd->in[i] < 0)
            continue;
        const tg_value *x = &g->values[nd->in[i]];
        in[i] = tg_graph_find_value(t, x->name);     /* one constant may feed two inputs */
        if (in[i] < 0 &&
            (in[i] = tg_graph_add_const_copy(t, x->name, x->dtype, &x->shape, x->data)) < 0)
            goto out;
    }
    int y = tg_graph_add_node(t, nd->op, nd->name, nd->nin, in, nd->nattr, nd->attr);
    if (y < 0 || tg_graph_add_output(t, y) < 0)
        goto out;
    tg_exec *e = tg_exec_new(t, 1);
    if (e) {
        rc = tg_exec_run(e, NULL, out);
        tg_exec_free(e);
    }
out:
    free(in);
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
        if (evaluate(g, nd, &r)) {
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
