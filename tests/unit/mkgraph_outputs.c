/* mkgraph_outputs: write a TG graph with two outputs on stdout, for the trun
 * tests of -o DIR:  x f32[batch, 3] (batch 1..8) -> out0 = exp(x), out1 = -x. */
#include <stdio.h>

#include "error.h"
#include "format.h"

int main(void)
{
    tg_graph *g = tg_graph_new();
    int b = tg_graph_add_symbol(g, "batch", 1, 8);
    tg_shape s = {.rank = 2, .d = {tg_dim_sym(b), tg_dim_const(3)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    int y = tg_graph_add_node(g, TG_OP_EXP, "e", 1, &x, 0, NULL);
    int z = tg_graph_add_node(g, TG_OP_NEG, "n", 1, &x, 0, NULL);
    if (x < 0 || y < 0 || z < 0 || tg_graph_add_output(g, y) < 0 ||
        tg_graph_add_output(g, z) < 0 || tg_graph_write(g, stdout) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "mkgraph_outputs: %s\n", tg_errmsg());
        return 1;
    }
    tg_graph_free(g);
    return 0;
}
