/* mkgraph KIND SEED: write a small TG graph on stdout, for the tlog tests.
 *   mlp       x f32[batch,8] -> linear 16 -> relu -> linear 4 -> mul by a scalar
 *   mlp-gelu  the same with gelu instead of relu
 *   mlp-wide  hidden width 32 instead of 16
 * Weights are uniform in [-1, 1) from SEED; the same KIND and SEED give the
 * same bytes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "format.h"
#include "randgraph.h"


static tg_graph *build(const char *kind)
{
    int64_t hidden = strcmp(kind, "mlp-wide") ? 16 : 32;
    tg_op act = strcmp(kind, "mlp-gelu") ? TG_OP_RELU : TG_OP_GELU;
    tg_graph *g = tg_graph_new();
    int b = tg_graph_add_symbol(g, "batch", 1, 64);
    tg_shape xs = {.rank = 2, .d = {tg_dim_sym(b), tg_dim_const(8)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int w1 = weight(g, "fc1.weight", 2, (int64_t[]){hidden, 8});
    int b1 = weight(g, "fc1.bias", 1, (int64_t[]){hidden});
    int w2 = weight(g, "fc2.weight", 2, (int64_t[]){4, hidden});
    int b2 = weight(g, "fc2.bias", 1, (int64_t[]){4});
    int scale = weight(g, "scale", 0, NULL);
    int h = tg_graph_add_node(g, TG_OP_LINEAR, "fc1", 3, (int[]){x, w1, b1}, 0, NULL);
    int a = tg_graph_add_node(g, act, "act", 1, (int[]){h}, 0, NULL);
    int y = tg_graph_add_node(g, TG_OP_LINEAR, "fc2", 3, (int[]){a, w2, b2}, 0, NULL);
    int out = tg_graph_add_node(g, TG_OP_MUL, "out", 2, (int[]){y, scale}, 0, NULL);
    if (x < 0 || w1 < 0 || b1 < 0 || w2 < 0 || b2 < 0 || scale < 0 || h < 0 || a < 0 || y < 0
        || out < 0 || tg_graph_add_output(g, out) < 0) {
        tg_graph_free(g);
        return NULL;
    }
    return g;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mkgraph mlp|mlp-gelu|mlp-wide SEED\n");
        return 2;
    }
    rng = strtoull(argv[2], NULL, 10);
    tg_graph *g = build(argv[1]);
    if (!g || tg_graph_write(g, stdout) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "mkgraph: %s\n", tg_errmsg());
        return 1;
    }
    tg_graph_free(g);
    return 0;
}
