/* Weight pre-packing: operands turned once, at compile time, into the form
 * their CPU kernel reads, instead of at every run.
 *
 * - The attention kernel takes an additive float mask. A constant boolean
 *   mask (true: attend) becomes a constant of 0 and -inf; a computed one gets
 *   a where node that makes the same. */
#include "passes.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../error.h"
#include "../log.h"

/* A float constant of the mask's shape, or -1. */
static int packed_const(tg_graph *g, const tg_value *m, tg_dtype dt)
{
    size_t n = m->nbytes, es = tg_dtype_size(dt);
    unsigned char *data = malloc(n * es > 0 ? n * es : 1);
    if (!data)
        return tg_err("out of memory");
    for (size_t i = 0; i < n; i++)
        tg_store_f64(dt, data, i, ((const unsigned char *)m->data)[i] ? 0.0 : -INFINITY);
    char name[512];
    snprintf(name, sizeof name, "%s.additive", m->name);
    tg_shape s = m->shape;
    return tg_graph_add_const(g, name, dt, &s, data, n * es);
}

/* where(m, 0, -inf) in dtype dt, for a computed mask. */
static int packed_node(tg_graph *g, int mv, tg_dtype dt)
{
    char name[512];
    snprintf(name, sizeof name, "%s.zero", g->values[mv].name);
    int zero = tg_graph_add_scalar(g, name, dt, 0.0);
    snprintf(name, sizeof name, "%s.neginf", g->values[mv].name);
    int ninf = zero < 0 ? -1 : tg_graph_add_scalar(g, name, dt, -INFINITY);
    if (ninf < 0)
        return -1;
    int in[3] = {mv, zero, ninf};
    return tg_graph_add_node(g, TG_OP_WHERE, NULL, 3, in, 0, NULL);
}

int tg_pass_prepack(tg_graph *g)
{
    int changed = 0, nnode = g->nnode;
    for (int n = 0; n < nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (nd->op != TG_OP_SDPA || nd->nin < 4 || nd->in[3] < 0 ||
            g->values[nd->in[3]].dtype != TG_BOOL)
            continue;
        int mv = nd->in[3];
        tg_dtype dt = g->values[nd->in[0]].dtype;
        int packed = g->values[mv].kind == TG_VALUE_CONST ? packed_const(g, &g->values[mv], dt)
                                                          : packed_node(g, mv, dt);
        if (packed < 0)
            return -1;
        g->nodes[n].in[3] = packed;
        TG_LOG(PASSES, TG_LOG_DEBUG, "prepack: %s's boolean mask %s is additive",
               g->nodes[n].name, g->values[mv].name);
        changed++;
    }
    if (changed && tg_graph_compact(g))
        return -1;
    return changed;
}
