/* Dead code elimination: nodes whose results nothing reads (no node, no
 * graph output) go, then constants nobody reads (tg_graph_compact). */
#include "passes.h"

#include <stdlib.h>

static int count_consts(const tg_graph *g)
{
    int n = 0;
    for (int v = 0; v < g->nvalue; v++)
        n += g->values[v].kind == TG_VALUE_CONST;
    return n;
}

int tg_pass_dce(tg_graph *g)
{
    int *uses = tg_graph_use_counts(g);
    int killed = 0;
    if (!uses)
        return -1;
    /* backwards, so a chain dies in one sweep */
    for (int n = g->nnode - 1; n >= 0; n--) {
        tg_node *nd = &g->nodes[n];
        if (nd->op == TG_OP_NONE)
            continue;
        bool used = false;
        for (int o = 0; o < nd->nout; o++)
            used |= uses[nd->out[o]] > 0;
        if (used)
            continue;
        for (int i = 0; i < nd->nin; i++)
            if (nd->in[i] >= 0)
                uses[nd->in[i]]--;
        tg_graph_kill_node(g, n);
        killed++;
    }
    free(uses);
    int consts = count_consts(g);
    if (tg_graph_compact(g))
        return -1;
    return killed + consts - count_consts(g);
}
