/* Calibration: the activations entering each quantized layer (and the
 * layers' outputs that a silu or gelu alone reads) are made extra outputs of a
 * copy of the graph, which the interpreter runs on each sample; every such
 * value feeds its observer. */
#include <math.h>
#include <stdlib.h>

#include "../error.h"
#include "../exec/exec.h"
#include "internal.h"
#include "quant.h"

struct tg_calib {
    const tg_graph *g;
    tg_graph *og;               /* g with the observed values as extra outputs */
    tg_exec *e;
    int nobs;
    int *vals;                  /* observed value ids (the same in g and og) */
    bool *conv;                 /* read by a convolution: features are dim 1, else the last */
    tg_observer **ob;
    double **sum;               /* per observed value: sum of each input feature */
    int64_t *nfeat, *count;     /* features, and values summed per feature */
};

/* The output of layer l when a silu or a gelu alone reads it (chain.c
 * fuses it as a table on the pre-activation in u8, whose range this gives),
 * or -1. */
static int act_input(const tg_graph *g, const tg_node *l)
{
    int v = l->out[0], reads = 0, act = 0;
    for (int i = 0; l->op != TG_OP_LINEAR_24 && i < g->nnode; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] == v && g->nodes[i].op != TG_OP_NONE) {
                reads++;
                act += tg_quant_table_act(&g->nodes[i]) != 0;
            }
    for (int k = 0; k < g->noutput; k++)
        reads += g->outputs[k] == v;
    return reads == 1 && act == 1 ? v : -1;
}

tg_calib *tg_calib_new(const tg_graph *g, const tg_quant_opts *o)
{
    int *layers = NULL;
    int n = tg_quant_layers(g, o, &layers);
    tg_calib *c = n < 0 ? NULL : calloc(1, sizeof *c);
    if (!c) {
        if (n >= 0)
            tg_err("out of memory");
        free(layers);
        return NULL;
    }
    c->g = g;
    c->vals = malloc(sizeof(int) * (size_t)(2 * n + 1));
    c->ob = calloc((size_t)(2 * n + 1), sizeof *c->ob);
    c->sum = calloc((size_t)(2 * n + 1), sizeof *c->sum);
    c->conv = calloc((size_t)(2 * n + 1), sizeof *c->conv);
    c->nfeat = calloc((size_t)(2 * n + 1), sizeof *c->nfeat);
    c->count = calloc((size_t)(2 * n + 1), sizeof *c->count);
    if (!c->vals || !c->ob || !c->sum || !c->conv || !c->nfeat || !c->count ||
        !(c->og = tg_graph_clone(g)))
        goto fail;
    for (int i = 0; i < 2 * n; i++) {
        const tg_node *l = &g->nodes[layers[i % n]];
        int v = i < n ? l->in[0] : act_input(g, l), seen = 0;
        for (int k = 0; k < c->nobs; k++)
            seen |= c->vals[k] == v;
        if (seen || v < 0)
            continue;
        if (!(c->ob[c->nobs] = tg_observer_new(o)) || tg_graph_add_output(c->og, v))
            goto fail;
        c->conv[c->nobs] = l->op == TG_OP_CONV;
        c->vals[c->nobs++] = v;
    }
    free(layers);
    layers = NULL;
    if (!(c->e = tg_exec_new(c->og, 0)))
        goto fail;
    return c;
fail:
    if (!tg_errmsg()[0])
        tg_err("out of memory");
    free(layers);
    tg_calib_free(c);
    return NULL;
}

void tg_calib_free(tg_calib *c)
{
    if (!c)
        return;
    tg_exec_free(c->e);
    tg_graph_free(c->og);
    for (int i = 0; i < c->nobs; i++) {
        tg_observer_free(c->ob[i]);
        free(c->sum[i]);
    }
    free(c->ob);
    free(c->sum);
    free(c->conv);
    free(c->nfeat);
    free(c->count);
    free(c->vals);
    free(c);
}

/* Per-feature sums of an observed tensor, for the layer's bias correction. */
static int add_sums(tg_calib *c, int k, const tg_tensor *t)
{
    int fax = c->conv[k] ? 1 : t->rank - 1;
    if (t->rank < 1 || fax >= t->rank)
        return 0;
    int64_t nf = t->dims[fax], inner = 1, n = tg_tensor_numel(t->rank, t->dims);
    for (int i = fax + 1; i < t->rank; i++)
        inner *= t->dims[i];
    if (!c->sum[k]) {
        if (!(c->sum[k] = calloc((size_t)(nf > 0 ? nf : 1), sizeof(double))))
            return tg_err("out of memory");
        c->nfeat[k] = nf;
    }
    if (nf != c->nfeat[k] || nf == 0)
        return 0;               /* a symbolic feature dim that changed: no means */
    const float *x = t->data;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i]))
            c->sum[k][i / inner % nf] += x[i];
    c->count[k] += n / nf;
    return 0;
}

int tg_calib_run(tg_calib *c, const tg_tensor *inputs, tg_tensor *outs)
{
    int nout = c->og->noutput, norig = c->g->noutput, rc = 0;
    tg_tensor *all = calloc((size_t)nout + 1, sizeof *all);
    if (!all)
        return tg_err("out of memory");
    if (tg_exec_run(c->e, inputs, all)) {
        free(all);
        return -1;
    }
    for (int k = 0; k < c->nobs && rc == 0; k++) {
        const tg_tensor *t = &all[norig + k];
        rc = tg_observer_update(c->ob[k], t->data, tg_tensor_numel(t->rank, t->dims));
        if (rc == 0)
            rc = add_sums(c, k, t);
    }
    for (int i = 0; i < nout; i++) {
        if (i < norig && outs && rc == 0)
            outs[i] = all[i];
        else
            tg_tensor_free(&all[i]);
    }
    free(all);
    return rc;
}

int64_t tg_calib_mean(const tg_calib *c, int v, double *mean, int64_t max)
{
    for (int k = 0; k < c->nobs; k++)
        if (c->vals[k] == v && c->sum[k] && c->count[k] && c->nfeat[k] <= max) {
            for (int64_t f = 0; f < c->nfeat[k]; f++)
                mean[f] = c->sum[k][f] / (double)c->count[k];
            return c->nfeat[k];
        }
    return -1;
}

int tg_calib_range(const tg_calib *c, int v, float *lo, float *hi)
{
    for (int k = 0; k < c->nobs; k++)
        if (c->vals[k] == v)
            return tg_observer_range(c->ob[k], lo, hi);
    return -1;
}

int tg_calib_range_named(const tg_calib *c, const char *name, float *lo, float *hi)
{
    int v = tg_graph_find_value(c->g, name);
    return v < 0 ? -1 : tg_calib_range(c, v, lo, hi);
}
