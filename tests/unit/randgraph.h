/* Random weights for graphs that unit tests build by hand, from unit.h's
 * seeded generator: a constant of the given shape filled from it. */
#ifndef TG_RANDGRAPH_H
#define TG_RANDGRAPH_H

#include <stdint.h>
#include <stdlib.h>

#include "error.h"
#include "exec/exec.h"
#include "graph.h"
#include "unit.h"

/* Uniform in [-1, 1). */
static inline float uniform(void) { return (float)unit_uniform(-1, 1); }

/* One run of g (the interpreter, one thread) on f32 inputs uniform in
 * [-scale, scale) drawn from seed (the generator's state is kept), symbols at
 * 3: 0, or -1 with the error printed. out: g->noutput tensors. */
static inline int run_random(const tg_graph *g, uint64_t seed, float scale, tg_tensor *out)
{
    tg_tensor in[4] = {{0}};
    uint64_t keep = unit_rng;
    unit_rng = seed;
    for (int i = 0; i < g->ninput && i < 4; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        int64_t sym[TG_MAX_SYMS] = {3, 3, 3, 3, 3, 3, 3, 3};
        in[i].dtype = v->dtype;
        in[i].rank = v->shape.rank;
        tg_shape_eval(&v->shape, sym, in[i].dims);
        tg_tensor_alloc(&in[i]);
        for (size_t k = 0; k < in[i].nbytes / 4; k++)
            ((float *)in[i].data)[k] = scale * uniform();
    }
    unit_rng = keep;
    tg_exec *e = g->ninput <= 4 ? tg_exec_new(g, 1) : NULL;
    int rc = e ? tg_exec_run(e, in, out) : -1;
    if (rc)
        fprintf(stderr, "run: %s\n", g->ninput <= 4 ? tg_errmsg() : "more than 4 inputs");
    tg_exec_free(e);
    for (int i = 0; i < g->ninput && i < 4; i++)
        tg_tensor_free(&in[i]);
    return rc;
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

/* Attention's split of a qkv projection x [batch, seq, 24]: columns [8i,
 * 8i + 8) as two heads of 4 (slice, reshape to [batch, seq, 2, 4], permute
 * by perm; {0, 2, 1, 3}: [batch, 2, seq, 4]). Returns the permute's value. */
static inline int head_split(tg_graph *g, int x, int i, int64_t seq, const int64_t perm[4])
{
    tg_attr sl[3] = {tg_attr_int("axis", 2), tg_attr_int("start", 8 * i),
                     tg_attr_int("end", 8 * i + 8)};
    int s = tg_graph_add_node(g, TG_OP_SLICE, NULL, 1, &x, 3, sl);
    tg_attr shape = tg_attr_dims("shape", 4, (tg_dim[]){tg_dim_sym(0), tg_dim_const(seq),
                                                        tg_dim_const(2), tg_dim_const(4)});
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &s, 1, &shape);
    tg_attr p = tg_attr_ints("perm", 4, perm);
    return tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &r, 1, &p);
}

/* timm's split of the same x: reshape to [batch, seq, 3, 2, 4], one permute
 * to [3, batch, 2, seq, 4] that all three slice (qkv[i] = a slice of axis 0
 * reshaped to [batch, 2, seq, 4]). Sets q, k, v in qkv. */
static inline void qkv_split(tg_graph *g, int x, int64_t seq, int qkv[3])
{
    tg_attr shape = tg_attr_dims("shape", 5, (tg_dim[]){tg_dim_sym(0), tg_dim_const(seq),
                                                        tg_dim_const(3), tg_dim_const(2),
                                                        tg_dim_const(4)});
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &x, 1, &shape);
    tg_attr p = tg_attr_ints("perm", 5, (int64_t[]){2, 0, 3, 1, 4});
    int t = tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &r, 1, &p);
    tg_attr heads = tg_attr_dims("shape", 4, (tg_dim[]){tg_dim_sym(0), tg_dim_const(2),
                                                        tg_dim_const(seq), tg_dim_const(4)});
    for (int i = 0; i < 3; i++) {
        tg_attr sl[3] = {tg_attr_int("axis", 0), tg_attr_int("start", i),
                         tg_attr_int("end", i + 1)};
        int s = tg_graph_add_node(g, TG_OP_SLICE, NULL, 1, &t, 3, sl);
        qkv[i] = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &s, 1, &heads);
    }
}

/* W(g, "fc.weight", 10, 784): weight() with the dims written out. */
#define W(g, name, ...) \
    weight(g, name, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t), (int64_t[]){__VA_ARGS__})

#endif
