/* A model that trun runs, whatever it is: a TG graph through the reference
 * interpreter (runner_tg.c) or a compiled .so (runner_so.c). trun knows only
 * this interface; adding a kind of model is adding an opener. */
#ifndef TG_EXEC_RUNNER_H
#define TG_EXEC_RUNNER_H

#include <stdbool.h>
#include <stdint.h>

#include "../graph.h"
#include "../tensor.h"

typedef struct {
    char *name;
    tg_dtype dtype;
    tg_shape shape;             /* symbolic, over the runner's symbols */
    int64_t lo, hi;             /* integer inputs: the valid values [lo, hi) when the
                                 * model knows them (an index into a table); lo == hi: unknown */
} tg_runner_io;

/* Per-node timing: called after each node of each run. */
typedef void (*tg_runner_profile_fn)(void *ctx, const char *node, const char *op, double seconds);

typedef struct tg_runner tg_runner;

typedef struct {
    /* inputs: r->ninput tensors in order; outputs: r->noutput, newly allocated. */
    int (*run)(tg_runner *r, const tg_tensor *inputs, tg_tensor *outputs);
    /* NULL when the model cannot time its nodes. */
    void (*set_profile)(tg_runner *r, tg_runner_profile_fn fn, void *ctx);
    void (*free)(tg_runner *r);
} tg_runner_ops;

struct tg_runner {
    const tg_runner_ops *ops;
    int nsym;
    tg_symbol sym[TG_MAX_SYMS];
    int ninput, noutput;
    tg_runner_io *inputs, *outputs;
    void *impl;                 /* the implementation's state */
};

struct tg_backend;
/* A TG graph from path ("-": stdin), run by the interpreter on device dev
 * (the CPU running what dev refuses) and nthreads host threads (<= 0: all
 * cores). NULL with tg_err. */
tg_runner *tg_runner_open_tg(const char *path, const struct tg_backend *dev, int nthreads);

/* A model compiled by tcompile (runner_so.c): path is a shared object, which
 * runs on nthreads of its own workers (<= 0: all cores). NULL with tg_err. */
tg_runner *tg_runner_open_so(const char *path, int nthreads);
/* Whether path names a shared object (ELF) rather than a TG graph. */
bool tg_runner_is_so(const char *path);

int tg_runner_run(tg_runner *r, const tg_tensor *inputs, tg_tensor *outputs);
/* -1 (tg_err) when the model cannot time its nodes. */
int tg_runner_set_profile(tg_runner *r, tg_runner_profile_fn fn, void *ctx);
void tg_runner_free(tg_runner *r);

#endif
