/* The control-flow ops in the C file (ops.def: if, loop): each subgraph is
 * planned on its own (tg_passes_subgraph: its own memory plan, its own
 * workspace when it runs) and written as a model table of its own before the
 * plan that calls it; the node fills the tensors its subgraph takes and
 * makes, and the runtime (control_rt.c) runs it as the interpreter does. An
 * output whose shape the run sets (a data symbol: a trip count known only
 * as the loop runs, a branch's own size) is handed to the caller as the run
 * made it (tgrt_call.dyn). */
#include "cg.h"

#include "../../error.h"
#include "../../passes/passes.h"

/* Subgraph `name` of nd as a model table of its own: the table's name, or
 * NULL (tg_err). */
static const char *subgraph(tg_cg *c, const tg_node *nd, const char *name)
{
    tg_graph *sg = tg_graph_clone(tg_node_graph(nd, name));
    tg_plan *p = sg ? tg_passes_subgraph(sg, &tg_backend_cpu, c->p->level) : NULL;
    const char *pre = cg_str(c, "sg%d_", (*c->nsub)++);
    tg_cg s = {.g = sg, .p = p, .nsub = c->nsub, .hot = c->hot};
    int rc = p ? cg_emit_graph(&s, pre, NULL, c->fns) : -1;
    tg_plan_free(p);
    tg_graph_free(sg);
    if (rc)
        return tg_err("node '%s': subgraph %s: %s", nd->name, name, tg_errmsg()), NULL;
    return cg_str(c, "%sMODEL", pre);
}

/* A tgraph_tensor initializer for value v: its data, dtype and dims (-1
 * where the run sets one, and then no data). */
static const char *tensor(tg_cg *c, int v)
{
    const tg_value *x = &c->g->values[v];
    const char *dims = x->shape.rank ? "" : "0";
    for (int k = 0; k < x->shape.rank; k++)
        dims = cg_str(c, "%s%s%s", dims, k ? ", " : "",
                      cg_dim_run_set(c, x->shape.d[k]) ? "-1" : cg_dim(c, x->shape.d[k]));
    return cg_str(c, "{.data = %s, .dtype = %s, .rank = %d, .dims = {%s}, .nbytes = %s}",
                  c->dyn[v] ? "NULL" : cg_str(c, "(void *)%s", cg_ptr(c, v)),
                  cg_dtype_enum(c, "TGRAPH_", x->dtype), x->shape.rank, dims,
                  c->dyn[v] ? "0" : cg_str(c, "(size_t)(%s)", cg_bytes(c, v)));
}

/* `tgraph_tensor name[] = {...};` of values vals[n] (one zero tensor when
 * none). */
static void tensors(tg_cg *c, const char *name, int n, const int *vals)
{
    fprintf(c->f, "    tgraph_tensor %s[] = {", name);
    for (int i = 0; i < n; i++)
        fprintf(c->f, "\n        %s,", tensor(c, vals[i]));
    fprintf(c->f, "%s};\n", n ? "\n    " : "{0}");
}

int cg_node_control(tg_cg *c, const tg_node *nd)
{
    bool is_if = nd->op == TG_OP_IF;
    int first = is_if ? 1 : 2, nargs = nd->nin - first;
    const char *a = is_if ? subgraph(c, nd, "then") : subgraph(c, nd, "body");
    const char *b = is_if ? subgraph(c, nd, "else") : NULL;
    if (!a || (is_if && !b))
        return -1;
    tensors(c, "a", nargs, nd->in + first);
    tensors(c, "r", nd->nout, nd->out);
    const char *name = cg_quote(c, nd->name);
    if (is_if)
        fprintf(c->f, "    int rc = tgrt_control_if(&%s, &%s, %s, C->w, %s, a, %d, r, %d);\n",
                a, b, name, cg_ptr(c, nd->in[0]), nargs, nd->nout);
    else
        fprintf(c->f, "    int rc = tgrt_control_loop(&%s, %s, C->w, %s, %s, %d, a, %d, r, %d);\n",
                a, name, nd->in[0] >= 0 ? cg_ptr(c, nd->in[0]) : "NULL",
                nd->in[1] >= 0 ? cg_ptr(c, nd->in[1]) : "NULL",
                (int)tg_node_int(nd, "carried", 0), nargs, nd->nout);
    fprintf(c->f, "    if (rc)\n        return rc;\n");
    for (int k = 0; k < nd->nout; k++) {
        int j = 0;
        while (j < c->g->noutput && c->g->outputs[j] != nd->out[k])
            j++;
        if (c->dyn[nd->out[k]] && j < c->g->noutput)
            fprintf(c->f, "    C->dyn[%d] = r[%d];\n", j, k);
        else if (c->dyn[nd->out[k]])       /* nothing reads it */
            fprintf(c->f, "    free(r[%d].data);\n", k);
    }
    return 0;
}
