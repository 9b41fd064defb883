/* Common subexpression elimination: a node with the same op, inputs and
 * attributes as an earlier one is that one; equal constants (same dtype,
 * shape and bytes: tied or repeated weights) are one constant. Data ops stay
 * apart (node_eq). */
#include "passes.h"

#include <stdlib.h>
#include <string.h>

#include "../log.h"

static bool attr_eq(const tg_attr *a, const tg_attr *b)
{
    if (strcmp(a->name, b->name) || a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case TG_ATTR_INT: case TG_ATTR_DTYPE: case TG_ATTR_INPUT: return a->u.i == b->u.i;
    case TG_ATTR_FLOAT: return memcmp(&a->u.f, &b->u.f, sizeof a->u.f) == 0;
    case TG_ATTR_STRING: return strcmp(a->u.s, b->u.s) == 0;
    case TG_ATTR_INTS: return !a->n || memcmp(a->u.ints, b->u.ints, a->n * sizeof *a->u.ints) == 0;
    case TG_ATTR_FLOATS:
        return !a->n || memcmp(a->u.floats, b->u.floats, a->n * sizeof *a->u.floats) == 0;
    case TG_ATTR_DIMS:
        for (int i = 0; i < a->n; i++)
            if (!tg_dim_eq(a->u.dims[i], b->u.dims[i]))
                return false;
        return true;
    case TG_ATTR_GRAPH: return a->u.g == b->u.g;   /* each node owns its subgraphs */
    }
    return false;
}

/* Data ops never merge: each one's length is a symbol of its own, in the
 * shapes of all that reads it, which merging would leave unbound. */
static bool node_eq(const tg_node *a, const tg_node *b)
{
    if (a->op != b->op || tg_op_is_data(a->op) || a->nin != b->nin || a->nout != b->nout ||
        a->nattr != b->nattr ||
        memcmp(a->in, b->in, a->nin * sizeof *a->in))
        return false;
    for (int i = 0; i < a->nattr; i++) {   /* attributes in any order */
        int j = 0;
        while (j < b->nattr && !attr_eq(&a->attr[i], &b->attr[j]))
            j++;
        if (j == b->nattr)
            return false;
    }
    return true;
}

/* A constant's key: its size and up to 4096 of its bytes taken evenly (FNV-1a);
 * constants with equal keys are then compared whole (const_eq). Every byte
 * hashed was a fifth of tcompile's own time on Swin-T's 110 MB. */
static uint64_t hash_bytes(const void *p, size_t n)
{
    const unsigned char *b = p;
    size_t step = n > 4096 ? n / 4096 : 1;
    uint64_t h = 0xcbf29ce484222325u ^ n;
    for (size_t i = 0; i < n; i += step)
        h = (h ^ b[i]) * 0x100000001b3u;
    return h;
}

static bool const_eq(const tg_value *a, const tg_value *b)
{
    return a->dtype == b->dtype && tg_shape_eq(&a->shape, &b->shape) && a->nbytes == b->nbytes &&
           (!a->nbytes || memcmp(a->data, b->data, a->nbytes) == 0);
}

static int merge_constants(tg_graph *g)
{
    uint64_t *h = calloc(g->nvalue + 1, sizeof *h);
    int merged = 0;
    if (!h)
        return -1;
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *x = &g->values[v];
        if (x->kind != TG_VALUE_CONST)
            continue;
        h[v] = hash_bytes(x->data, x->nbytes);
        for (int u = 0; u < v; u++)
            if (g->values[u].kind == TG_VALUE_CONST && h[u] == h[v] &&
                const_eq(&g->values[u], x)) {
                TG_LOG(PASSES, TG_LOG_DEBUG, "cse: constant %s is %s", x->name,
                       g->values[u].name);
                tg_graph_replace_uses(g, v, u);
                merged++;
                break;
            }
    }
    free(h);
    return merged;
}

int tg_pass_cse(tg_graph *g)
{
    int changed = merge_constants(g);
    if (changed < 0)
        return -1;
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (nd->op == TG_OP_NONE)
            continue;
        for (int m = 0; m < n; m++) {
            const tg_node *e = &g->nodes[m];
            if (e->op == TG_OP_NONE || !node_eq(e, nd))
                continue;
            TG_LOG(PASSES, TG_LOG_DEBUG, "cse: %s is %s", nd->name, e->name);
            for (int o = 0; o < nd->nout; o++)
                tg_graph_replace_uses(g, nd->out[o], e->out[o]);
            tg_graph_kill_node(g, n);
            changed++;
            break;
        }
    }
    if (changed && tg_graph_compact(g))
        return -1;
    return changed;
}
