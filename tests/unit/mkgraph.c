/* mkgraph KIND SEED: write a small TG graph on stdout, for the tlog, tcompile
 * and tsparse tests.
 *   mlp       x f32[batch,8] -> linear 16 -> relu -> linear 4 -> mul by a scalar
 *   mlp-gelu  the same with gelu instead of relu
 *   mlp-wide  hidden width 32 instead of 16
 *   mlp-24    mlp with fc1's weight 2:4 sparse already (pruned by magnitude)
 *   chain     x f32[batch,8] -> linear 16 (fc1) -> add shift[16] (shifted) ->
 *             relu (act) -> mul scale[16] (out): a linear, then a chain of
 *             add, relu and mul with constants (tests/device_plugin.bats)
 *   conv1x1   x f32[batch,8,6,6] -> 1x1 conv 16 (c1) -> batch norm -> relu ->
 *             1x1 conv 12 stride 2 (c2) -> 1x1 conv 6 (c3) -> 1x1 conv 4 (c4)
 *   mlp24:K,H1,...,Hn[:bias]
 *             x f32[tokens,K] -> linear H1 (fc1) -> relu -> ... -> linear Hn
 *             (fcn), every weight 2:4 already (pruned by magnitude) and
 *             scaled by 1/sqrt(its K); biases with :bias (the CUDA backend's
 *             cuSPARSELt test and bench: tests/cuda/sparse24.sh)
 *   forever   x f32[2] -> a loop (node 'forever') with no trip count whose
 *             body passes its condition through: it never ends
 *             (TGRAPH_LOOP_MAX stops it: trun.bats, tcompile.bats)
 * Weights are uniform in [-1, 1) from SEED; the same KIND and SEED give the
 * same bytes. */
#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "format.h"
#include "randgraph.h"
#include "ops/control.h"
#include "sparse/sparse.h"


/* Value v (a constant [N, K]) pruned to 2:4 in place. */
static void prune_24(tg_graph *g, int v)
{
    int64_t N = g->values[v].shape.d[0].t[0].coef, K = g->values[v].shape.d[1].t[0].coef;
    float *w = g->values[v].data, values[64];
    uint8_t meta[16];
    for (int64_t n = 0; n < N; n++) {   /* a row at a time: K <= 128 */
        tg_sparse24_compress(w + n * K, 1, K, values, meta);
        tg_sparse24_expand(values, meta, 1, K, w + n * K);
    }
}

/* Value v (a constant [N, K], K % 4 == 0) pruned to 2:4 in place, any K. */
static void prune_rows(tg_graph *g, int v, int64_t N, int64_t K)
{
    float *w = g->values[v].data, *values = malloc(sizeof(float) * (size_t)(K / 2 + 1));
    uint8_t *meta = malloc((size_t)tg_sparse24_meta_bytes(K) + 1);
    for (int64_t n = 0; values && meta && n < N; n++) {
        tg_sparse24_compress(w + n * K, 1, K, values, meta);
        tg_sparse24_expand(values, meta, 1, K, w + n * K);
    }
    free(values);
    free(meta);
}

/* mlp24:K,H1,...[:bias] (above) */
static tg_graph *build_mlp24(const char *spec)
{
    int64_t d[16];
    int nd = 0;
    const char *p = spec;
    while (nd < 16 && *p >= '0' && *p <= '9') {
        d[nd++] = strtoll(p, (char **)&p, 10);
        p += *p == ',';
    }
    bool bias = !strcmp(p, ":bias");
    if (nd < 2 || (*p && !bias)) {
        tg_err("mlp24:K,H1,...[:bias] needs at least two dims, not '%s'", spec);
        return NULL;
    }
    tg_graph *g = tg_graph_new();
    int t = tg_graph_add_symbol(g, "tokens", 1, 1 << 20);
    tg_shape xs = {.rank = 2, .d = {tg_dim_sym(t), tg_dim_const(d[0])}};
    int h = tg_graph_add_input(g, "x", TG_F32, &xs);
    for (int i = 1; i < nd && h >= 0; i++) {
        char name[32], wn[48], bn[48];
        snprintf(name, sizeof name, "fc%d", i);
        snprintf(wn, sizeof wn, "%s.weight", name);
        snprintf(bn, sizeof bn, "%s.bias", name);
        int w = weight(g, wn, 2, (int64_t[]){d[i], d[i - 1]});
        int b = bias ? weight(g, bn, 1, (int64_t[]){d[i]}) : -1;
        if (w < 0 || (bias && b < 0)) {
            h = -1;
            break;
        }
        float *wd = g->values[w].data, sc = 1 / sqrtf((float)d[i - 1]);
        for (int64_t k = 0; k < d[i] * d[i - 1]; k++)
            wd[k] *= sc;
        prune_rows(g, w, d[i], d[i - 1]);
        h = tg_graph_add_node(g, TG_OP_LINEAR, name, bias ? 3 : 2, (int[]){h, w, b}, 0, NULL);
        if (h >= 0 && i + 1 < nd) {
            snprintf(name, sizeof name, "act%d", i);
            h = tg_graph_add_node(g, TG_OP_RELU, name, 1, &h, 0, NULL);
        }
    }
    if (h < 0 || tg_graph_add_output(g, h) < 0) {
        tg_graph_free(g);
        return NULL;
    }
    return g;
}

static int conv1x1(tg_graph *g, const char *name, int x, int64_t c, int64_t k, int64_t stride)
{
    char wn[64], bn[64];
    snprintf(wn, sizeof wn, "%s.weight", name);
    snprintf(bn, sizeof bn, "%s.bias", name);
    int w = W(g, wn, k, c, 1, 1), b = W(g, bn, k);
    tg_attr a = tg_attr_ints("stride", 1, &stride);
    return tg_graph_add_node(g, TG_OP_CONV, name, 3, (int[]){x, w, b}, 1, &a);
}

static tg_graph *build_conv(void)
{
    tg_graph *g = tg_graph_new();
    int b = tg_graph_add_symbol(g, "batch", 1, 64);
    tg_shape xs = {.rank = 4, .d = {tg_dim_sym(b), tg_dim_const(8), tg_dim_const(6),
                                    tg_dim_const(6)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int c1 = conv1x1(g, "c1", x, 8, 16, 1);
    int mean = W(g, "bn.mean", 16), var = W(g, "bn.var", 16);
    for (int i = 0; var >= 0 && i < 16; i++) {
        float *v = g->values[var].data;
        v[i] = v[i] * v[i] + 0.5f;
    }
    int bn = tg_graph_add_node(g, TG_OP_BATCH_NORM, "bn", 5,
                               (int[]){c1, mean, var, W(g, "bn.weight", 16), W(g, "bn.bias", 16)},
                               0, NULL);
    int r = tg_graph_add_node(g, TG_OP_RELU, "act", 1, &bn, 0, NULL);
    int c2 = conv1x1(g, "c2", r, 16, 12, 2);
    int c3 = conv1x1(g, "c3", c2, 12, 6, 1);
    int c4 = conv1x1(g, "c4", c3, 6, 4, 1);
    if (x < 0 || c4 < 0 || tg_graph_add_output(g, c4) < 0) {
        tg_graph_free(g);
        return NULL;
    }
    return g;
}

static tg_graph *build_chain(void)
{
    tg_graph *g = tg_graph_new();
    int b = tg_graph_add_symbol(g, "batch", 1, 64);
    tg_shape xs = {.rank = 2, .d = {tg_dim_sym(b), tg_dim_const(8)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int h = tg_graph_add_node(g, TG_OP_LINEAR, "fc1", 3,
                              (int[]){x, W(g, "fc1.weight", 16, 8), W(g, "fc1.bias", 16)}, 0, NULL);
    int s = tg_graph_add_node(g, TG_OP_ADD, "shifted", 2, (int[]){h, W(g, "shift", 16)}, 0, NULL);
    int a = tg_graph_add_node(g, TG_OP_RELU, "act", 1, &s, 0, NULL);
    int y = tg_graph_add_node(g, TG_OP_MUL, "out", 2, (int[]){a, W(g, "scale", 16)}, 0, NULL);
    if (x < 0 || y < 0 || tg_graph_add_output(g, y) < 0) {
        tg_graph_free(g);
        return NULL;
    }
    return g;
}

static tg_graph *build_forever(void)
{
    tg_graph *g = tg_graph_new(), *body = tg_graph_new();
    tg_shape xs = {.rank = 1, .d = {tg_dim_const(2)}}, s0 = {0};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int bi[3] = {tg_graph_add_input(body, "i", TG_I64, &s0),
                 tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "x", TG_F32, &xs)};
    tg_graph_add_output(body, bi[1]);
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_ABS, "a", 1, bi + 2, 0, NULL));
    tg_attr at[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
    int y = tg_control_add(g, TG_OP_LOOP, "forever", 3, (int[]){-1, -1, x}, 2, at);
    tg_graph_free(body);
    if (y < 0 || tg_graph_add_output(g, y) < 0) {
        tg_graph_free(g);
        return NULL;
    }
    return g;
}

static tg_graph *build(const char *kind)
{
    if (!strcmp(kind, "forever"))
        return build_forever();
    if (!strcmp(kind, "conv1x1"))
        return build_conv();
    if (!strcmp(kind, "chain"))
        return build_chain();
    if (!strncmp(kind, "mlp24:", 6))
        return build_mlp24(kind + 6);
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
    if (!strcmp(kind, "mlp-24"))
        prune_24(g, w1);
    return g;
}

int main(int argc, char **argv)
{
    if (argc != 3) {
        fprintf(stderr, "usage: mkgraph mlp|mlp-gelu|mlp-wide|mlp-24|chain|conv1x1|forever|"
                "mlp24:K,H1,..[:bias] SEED\n");
        return 2;
    }
    unit_rng = strtoull(argv[2], NULL, 10);
    tg_graph *g = build(argv[1]);
    if (!g || tg_graph_write(g, stdout) < 0 || fflush(stdout) != 0) {
        fprintf(stderr, "mkgraph: %s\n", tg_errmsg());
        return 1;
    }
    tg_graph_free(g);
    return 0;
}
