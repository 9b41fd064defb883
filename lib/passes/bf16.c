/* tcompile --dtype bf16: a float32 linear on a constant weight gets the weight
 * rounded to bfloat16 (nearest even). A linear whose weight is bf16 and input
 * float32 computes in bf16 (ops.def): the input rounded to bf16, the products
 * summed in float32, the result float32; so the target picks its bf16 GEMM
 * (the CPU's: vdpbf16ps) and the weights take half the bytes. Everything else
 * (norms, softmax, attention, elementwise) stays float32. */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

#include "../error.h"
#include "../log.h"

/* The bf16 copy of constant v, made once for all its readers (tied weights). */
static int bf16_const(tg_graph *g, int v)
{
    char name[512];
    snprintf(name, sizeof name, "%s.bf16", g->values[v].name);
    int r = tg_graph_find_value(g, name);
    if (r >= 0)
        return r;
    const tg_value *w = &g->values[v];
    size_t n = w->nbytes / sizeof(float);
    uint16_t *data = malloc(n ? n * sizeof *data : 1);
    if (!data)
        return tg_err("out of memory");
    for (size_t i = 0; i < n; i++)
        data[i] = tg_f32_to_bf16(((const float *)w->data)[i]);
    tg_shape s = w->shape;
    return tg_graph_add_const(g, name, TG_BF16, &s, data, n * sizeof *data);
}

int tg_pass_bf16_weights(tg_graph *g)
{
    int changed = 0, nnode = g->nnode;
    for (int n = 0; n < nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (nd->op != TG_OP_LINEAR)
            continue;
        const tg_value *x = &g->values[nd->in[0]], *w = &g->values[nd->in[1]];
        if (w->kind != TG_VALUE_CONST || w->dtype != TG_F32 || x->dtype != TG_F32)
            continue;
        int wb = bf16_const(g, nd->in[1]);
        if (wb < 0)
            return -1;
        g->nodes[n].in[1] = wb;
        TG_LOG(PASSES, TG_LOG_DEBUG, "bf16: %s's weight %s in bf16", g->nodes[n].name,
               g->values[wb].name);
        changed++;
    }
    return changed;
}
