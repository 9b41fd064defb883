/* Random weights for graphs that unit tests build by hand: one seeded generator
 * (tests print the seed in `rng` so a failure can be replayed) and a constant
 * of the given shape filled from it. */
#ifndef TG_RANDGRAPH_H
#define TG_RANDGRAPH_H

#include <stdint.h>
#include <stdlib.h>

#include "graph.h"

static uint64_t rng;

/* Uniform in [-1, 1). */
static inline float uniform(void)
{
    rng = rng * 6364136223846793005ull + 1442695040888963407ull;
    return (float)((rng >> 40) / (double)(1ull << 24)) * 2 - 1;
}

/* An f32 constant named name of shape dims[0..rank), filled with uniform(). */
static inline int weight(tg_graph *g, const char *name, int rank, const int64_t *dims)
{
    int64_t n = 1;
    for (int i = 0; i < rank; i++)
        n *= dims[i];
    float *w = malloc(sizeof(float) * (n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        w[i] = uniform();
    tg_shape s = tg_shape_of(rank, dims);
    return tg_graph_add_const(g, name, TG_F32, &s, w, sizeof(float) * n);
}

/* W(g, "fc.weight", 10, 784): weight() with the dims written out. */
#define W(g, name, ...) \
    weight(g, name, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

#endif
