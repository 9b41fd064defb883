/* The runner for TG graphs: the graph, run by the reference interpreter. */
#include "runner.h"

#include <stdlib.h>

#include "../error.h"
#include "../format.h"
#include "exec.h"

typedef struct {
    tg_graph *g;
    tg_exec *e;
    tg_runner_profile_fn fn;
    void *ctx;
} tg_impl;

static int tg_run(tg_runner *r, const tg_tensor *inputs, tg_tensor *outputs)
{
    tg_impl *m = r->impl;
    return tg_exec_run(m->e, inputs, outputs);
}

static void tg_hook(void *ctx, int node, double seconds)
{
    tg_impl *m = ctx;
    const tg_node *n = &m->g->nodes[node];
    m->fn(m->ctx, n->name, tg_op_name(n->op), seconds);
}

static void tg_set_profile(tg_runner *r, tg_runner_profile_fn fn, void *ctx)
{
    tg_impl *m = r->impl;
    m->fn = fn;
    m->ctx = ctx;
    tg_exec_set_hook(m->e, fn ? tg_hook : NULL, m);
}

static void tg_free(tg_runner *r)
{
    tg_impl *m = r->impl;
    if (m) {
        tg_exec_free(m->e);
        tg_graph_free(m->g);
        free(m);
    }
    free(r->inputs);
    free(r->outputs);
    free(r);
}

static const tg_runner_ops tg_ops = {
    /* .run = */ tg_run,
    /* .set_profile = */ tg_set_profile,
    /* .free = */ tg_free,
};

/* Values an integer input may take when it indexes a table: [0, rows) of the
 * smallest table it selects from, looking through ops that keep values
 * (cast, reshape, ...). Leaves lo == hi when it indexes nothing. */
static void index_range(const tg_graph *g, int v, int64_t *lo, int64_t *hi)
{
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        if (n->nin < 1)
            continue;
        if ((n->op == TG_OP_INDEX_SELECT || n->op == TG_OP_GATHER) && n->nin == 2 &&
            n->in[1] == v) {
            const tg_value *x = &g->values[n->in[0]];
            int64_t a = tg_node_int(n, "axis", 0), rows;
            if (a < 0)
                a += x->shape.rank;
            if (a >= 0 && a < x->shape.rank && tg_dim_is_const(x->shape.d[a], &rows) &&
                (*lo == *hi || rows < *hi)) {
                *lo = 0;
                *hi = rows;
            }
        } else if ((n->op == TG_OP_CAST || n->op == TG_OP_RESHAPE || n->op == TG_OP_IDENTITY ||
                    n->op == TG_OP_EXPAND || n->op == TG_OP_PERMUTE || n->op == TG_OP_SLICE) &&
                   n->in[0] == v) {
            index_range(g, n->out[0], lo, hi);
        }
    }
}

static void describe(const tg_graph *g, int v, tg_runner_io *io)
{
    const tg_value *val = &g->values[v];
    io->name = val->name;
    io->dtype = val->dtype;
    io->shape = val->shape;
    io->lo = io->hi = 0;
    if (tg_dtype_is_int(val->dtype))
        index_range(g, v, &io->lo, &io->hi);
}

tg_runner *tg_runner_open_tg(const char *path, const struct tg_backend *dev, int nthreads)
{
    tg_runner *r = calloc(1, sizeof *r);
    tg_impl *m = calloc(1, sizeof *m);
    if (!r || !m) {
        free(r);
        free(m);
        tg_err("out of memory");
        return NULL;
    }
    r->ops = &tg_ops;
    r->impl = m;
    if (!(m->g = tg_graph_load(path)) || !(m->e = tg_exec_new_on(m->g, dev, nthreads)))
        goto fail;
    const tg_graph *g = m->g;
    r->nsym = g->nsym;
    for (int s = 0; s < g->nsym; s++)
        r->sym[s] = g->sym[s];
    r->ninput = g->ninput;
    r->noutput = g->noutput;
    r->inputs = calloc((size_t)g->ninput + 1, sizeof *r->inputs);
    r->outputs = calloc((size_t)g->noutput + 1, sizeof *r->outputs);
    if (!r->inputs || !r->outputs) {
        tg_err("out of memory");
        goto fail;
    }
    for (int i = 0; i < g->ninput; i++)
        describe(g, g->inputs[i], &r->inputs[i]);
    for (int i = 0; i < g->noutput; i++)
        describe(g, g->outputs[i], &r->outputs[i]);
    return r;
fail:
    tg_free(r);
    return NULL;
}
