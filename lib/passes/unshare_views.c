/* Shared view links, one copy per reader: a movement node whose result only
 * slices read (a permute of a qkv projection that q, k and v slice out of:
 * timm's ViTs, Swin), or a reshape that only movement nodes read, is cloned
 * so that each reader has a link of its own. fuse_views grows a view chain
 * only through links of one reader: shared, the permute was a copy of the
 * whole projection and each slice a copy again; unshared, each chain is one
 * strided view (a copy of its third), or none where attention reads it in
 * place. A slice of a permute (or of an expand, a slice) is always one
 * strided view, and a reshape clone is an alias, so no clone costs a copy
 * the shared node did not. tcompile runs it after cse (which would merge the
 * clones back) for targets that fuse views (tg_group_rules.view). */
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>

static bool movement(tg_op op)
{
    return tg_op_table[op].flags & (TG_OPF_VIEW | TG_OPF_STRIDED);
}

/* Whether node n's result has several readers, each a node that it clones
 * for: slices of a movement node, movement nodes of a reshape (no graph
 * output, no other input position). */
static bool shared_link(const tg_graph *g, int n, const int *uses)
{
    const tg_node *nd = &g->nodes[n];
    if (!movement(nd->op) || tg_op_is_data(nd->op) || nd->nout != 1 || uses[nd->out[0]] < 2)
        return false;
    int v = nd->out[0], found = 0;
    for (int r = n + 1; r < g->nnode; r++) {
        const tg_node *rd = &g->nodes[r];
        for (int i = 0; i < rd->nin; i++) {
            if (rd->in[i] != v)
                continue;
            if (i != 0 || (tg_op_is_view(nd->op) ? !movement(rd->op) : rd->op != TG_OP_SLICE))
                return false;
            found++;
        }
    }
    return found == uses[v];    /* else a graph output reads it too */
}

int tg_pass_unshare_views(tg_graph *g)
{
    int changes = 0;
    /* backwards: a link's readers are unshared before it, so a reshape above
     * a permute sees the permute's clones as its readers */
    for (int n = g->nnode - 1; n >= 0; n--) {
        int *uses = tg_graph_use_counts(g);
        if (!uses)
            return -1;
        bool shared = shared_link(g, n, uses);
        free(uses);
        if (!shared)
            continue;
        int v = g->nodes[n].out[0], k = 0;
        for (int r = n + 1, last = g->nnode; r < last; r++) {
            if (g->nodes[r].nin < 1 || g->nodes[r].in[0] != v || k++ == 0)
                continue;   /* the first reader keeps the node */
            char name[256];
            snprintf(name, sizeof name, "%s/%d", g->nodes[n].name, k);
            bool taken = tg_graph_find_node(g, name) >= 0 || tg_graph_find_value(g, name) >= 0;
            const tg_node *nd = &g->nodes[n];
            int c = tg_graph_add_node(g, nd->op, taken ? NULL : name, nd->nin, nd->in, nd->nattr,
                                      nd->attr);
            if (c < 0)
                return -1;
            g->nodes[r].in[0] = c;
            changes++;
        }
    }
    return changes && tg_graph_compact(g) ? -1 : changes;
}
