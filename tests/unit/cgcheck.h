/* The C code generator against the interpreter, one small graph at a time
 * (ggml's test-backend-ops, here for compiled models). check_case puts a
 * copy of the graph through the pass pipeline, compiles it to a .so (needs
 * libtgkernels.a: TGRAPH_RUNTIME_DIR, which make check sets), loads it with
 * dlopen and runs it on fresh random inputs at batch 1 and 5; every output
 * must match the interpreter on the original graph:
 *   floats: max |got - ref| - atol <= rtol * max |ref|, NaN where ref has NaN
 *           (f32 rtol 1e-4 atol 1e-5; f64 1e-9, 1e-12; f16 2e-3, 1e-3;
 *           bf16 1.6e-2, 1e-2: a few units in the last place of the dtype)
 *   integers and bool: equal; exact cases: equal bytes. */
#ifndef TG_CGCHECK_H
#define TG_CGCHECK_H

#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tgraph/model.h>

#include "codegen/codegen.h"
#include "error.h"
#include "exec/exec.h"
#include "passes/passes.h"
#include "randgraph.h"
#include "tensor.h"
#include "unit.h"

#define DIMS(...) (int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NODE(g, op, na, at, ...) \
    tg_graph_add_node(g, TG_OP_##op, NULL, sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                      (int[]){__VA_ARGS__}, na, at)

/* How a case's inputs are drawn and which pipelines compile it. */
typedef struct {
    bool exact;         /* bit for bit; float inputs also hold NaN and +-0 */
    double lo, hi;      /* inputs uniform in [lo, hi) (integers: floored); 0, 0: -3, 3 */
    bool nonzero;       /* no input element is 0 (integer divisors) */
    unsigned levels;    /* bit L: tcompile -O L; 0: -O1 only */
} cg_case;

/* Whether the cases can run (TGRAPH_RUNTIME_DIR set: make check sets it);
 * seeds the generator from the clock and prints the seed. */
static inline bool cg_start(void)
{
    if (!getenv("TGRAPH_RUNTIME_DIR")) {
        printf("TGRAPH_RUNTIME_DIR is not set: run through make check\n");
        return false;
    }
    rng = (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)rng);
    return true;
}

/* x: dtype [batch, dims...], batch a symbol in 1..16. */
static inline int cg_input(tg_graph *g, const char *name, tg_dtype dt, const int64_t *dims,
                           int rank)
{
    int b = tg_graph_find_symbol(g, "batch");
    if (b < 0)
        b = tg_graph_add_symbol(g, "batch", 1, 16);
    tg_shape s = {.rank = rank + 1, .d = {tg_dim_sym(b)}};
    for (int i = 0; i < rank; i++)
        s.d[i + 1] = tg_dim_const(dims[i]);
    return tg_graph_add_input(g, name, dt, &s);
}

static inline int input(tg_graph *g, const char *name, const int64_t *dims, int rank)
{
    return cg_input(g, name, TG_F32, dims, rank);
}

/* A constant of dtype dt and shape dims[0..rank), elements drawn as inputs
 * are (o: the range; NULL: -3..3). */
static inline void cg_fill(tg_tensor *t, const cg_case *o);
static inline int cg_const(tg_graph *g, const char *name, tg_dtype dt, const int64_t *dims,
                           int rank, const cg_case *o)
{
    tg_tensor t = {.dtype = dt, .rank = rank};
    memcpy(t.dims, dims, sizeof(int64_t) * rank);
    if (tg_tensor_alloc(&t))
        return -1;
    cg_fill(&t, o ? o : &(cg_case){0});
    tg_shape s = tg_shape_of(rank, dims);
    int v = tg_graph_add_const_copy(g, name, dt, &s, t.data);
    tg_tensor_free(&t);
    return v;
}

/* Compile g (a copy goes through the passes at `level`) into path. */
static inline int cg_compile(const tg_graph *g, int level, const char *path)
{
    tg_graph *c = tg_graph_clone(g);
    tg_passes_opts po = {.level = level};
    tg_plan *p = c ? tg_passes_run(c, &po) : NULL;
    FILE *f = fopen(path, "wb");
    /* a baseline CPU: the cases test the generated code, not -march, and must
     * also run under valgrind (no AVX-512 there); bats tests native builds */
    tg_build_opts o = {.cpu = "x86-64-v2"};
    int rc = p && f ? tg_codegen_build(c, p, &o, f) : -1;
    if (f && fclose(f))
        rc = -1;
    tg_plan_free(p);
    tg_graph_free(c);
    return rc;
}

/* The error of got against ref (see the top), as a multiple of the
 * tolerance: <= 1 passes. */
static inline double cg_compare(const tg_tensor *ref, const tgraph_tensor *got)
{
    if (got->rank != ref->rank || got->nbytes != ref->nbytes ||
        (int)got->dtype != (int)ref->dtype)
        return INFINITY;
    size_t n = ref->nbytes / (ref->nbytes ? tg_dtype_size(ref->dtype) : 1);
    if (!tg_dtype_is_float(ref->dtype))
        return memcmp(ref->data, got->data, ref->nbytes) ? INFINITY : 0;
    double rtol = 1e-4, atol = 1e-5;
    switch (ref->dtype) {
    case TG_F64: rtol = 1e-9, atol = 1e-12; break;
    case TG_F16: rtol = 2e-3, atol = 1e-3; break;
    case TG_BF16: rtol = 1.6e-2, atol = 1e-2; break;
    default: break;
    }
    double big = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        double a = tg_load_f64(ref->dtype, ref->data, i);
        double b = tg_load_f64(ref->dtype, got->data, i);
        if (isnan(a) != isnan(b) || (isinf(a) && a != b))
            return INFINITY;
        if (isnan(a) || isinf(a))
            continue;
        big = fmax(big, fabs(a));
        err = fmax(err, fabs(a - b) - atol);
    }
    return err / (rtol * fmax(big, 1e-6));
}

/* Input element k: uniform in [lo, hi), or for exact cases also NaNs of
 * both signs (max pooling must pick the same one) and zeros of both signs
 * (ties keep the first tap), so that a differing select order shows up. */
static inline void cg_fill(tg_tensor *t, const cg_case *o)
{
    double lo = o->lo || o->hi ? o->lo : -3, hi = o->lo || o->hi ? o->hi : 3;
    size_t n = t->nbytes / tg_dtype_size(t->dtype);
    for (size_t k = 0; k < n; k++) {
        double v = lo + (hi - lo) * (uniform() + 1) / 2;
        if (t->dtype == TG_BOOL)
            v = uniform() > 0;
        else if (!tg_dtype_is_float(t->dtype))
            v = floor(v);
        else if (o->exact && k % 11 == 0)
            v = k % 22 ? NAN : -NAN;
        else if (o->exact && k % 5 == 0)
            v = k % 10 ? 0.0 : -0.0;
        if (o->nonzero && v == 0)
            v = 1;
        tg_store_f64(t->dtype, t->data, k, v);
    }
}

typedef struct {
    void *dl;
    tgraph_model *m;
    int (*run)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
    void (*close)(tgraph_model *);
} cg_model;

static inline bool cg_load(const char *what, const tg_graph *g, int level, cg_model *cm)
{
    char path[] = "/tmp/test_codegen.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    memset(cm, 0, sizeof *cm);
    if (cg_compile(g, level, path)) {
        fprintf(stderr, "%s, -O%d: %s\n", what, level, tg_errmsg());
        unlink(path);
        return false;
    }
    cm->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    tgraph_model *(*open)(const char *) = cm->dl ? dlsym(cm->dl, "tgraph_model_open") : NULL;
    cm->run = cm->dl ? dlsym(cm->dl, "tgraph_model_run") : NULL;
    cm->close = cm->dl ? dlsym(cm->dl, "tgraph_model_close") : NULL;
    cm->m = open && cm->run && cm->close ? open(NULL) : NULL;
    if (!cm->m)
        fprintf(stderr, "%s, -O%d: the .so does not load: %s\n", what, level,
                cm->dl ? "tgraph_model_open failed" : dlerror());
    return cm->m != NULL;
}

#define CG_MAX_IO 32     /* inputs and outputs of a case */

/* Run the model and the interpreter at one batch size; false on a mismatch. */
static inline bool cg_run_batch(const char *what, const tg_graph *g, int level,
                                const cg_model *cm, int b, const cg_case *o)
{
    tg_tensor in[CG_MAX_IO] = {{0}}, ref[CG_MAX_IO] = {{0}};
    tgraph_tensor tin[CG_MAX_IO], tout[CG_MAX_IO] = {{0}};
    bool ok = g->ninput <= CG_MAX_IO && g->noutput <= CG_MAX_IO;
    for (int i = 0; ok && i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        int64_t sym[TG_MAX_SYMS] = {b};
        in[i].dtype = v->dtype;
        in[i].rank = v->shape.rank;
        tg_shape_eval(&v->shape, sym, in[i].dims);
        tg_tensor_alloc(&in[i]);
        cg_fill(&in[i], o);
        tin[i] = (tgraph_tensor){.data = in[i].data, .dtype = (tgraph_dtype)in[i].dtype,
                                 .rank = in[i].rank, .nbytes = in[i].nbytes};
        memcpy(tin[i].dims, in[i].dims, sizeof tin[i].dims);
    }
    tg_exec *e = ok ? tg_exec_new(g, 1) : NULL;
    if (!e || tg_exec_run(e, in, ref)) {
        fprintf(stderr, "%s: the interpreter fails: %s\n", what, tg_errmsg());
        ok = false;
    }
    tg_exec_free(e);
    int rc = ok ? cm->run(cm->m, tin, g->ninput, tout, g->noutput) : 0;
    if (rc) {
        fprintf(stderr, "%s, -O%d, batch %d: the .so fails: %d\n", what, level, b, rc);
        ok = false;
    }
    for (int k = 0; ok && k < g->noutput; k++) {
        double err = cg_compare(&ref[k], &tout[k]);
        if (o->exact && err <= 1 && memcmp(ref[k].data, tout[k].data, ref[k].nbytes))
            err = INFINITY;
        if (!(err <= 1)) {
            fprintf(stderr, "%s, -O%d, batch %d, output %d: error %g times the tolerance\n",
                    what, level, b, k, err);
            ok = false;
        }
    }
    for (int k = 0; k < g->noutput && k < CG_MAX_IO; k++) {
        tg_tensor_free(&ref[k]);
        free(tout[k].data);
    }
    for (int i = 0; i < g->ninput && i < CG_MAX_IO; i++)
        tg_tensor_free(&in[i]);
    return ok;
}

/* Compile g at each level of o, run it and the interpreter at batch 1 and
 * 5, compare; frees g. */
static inline void check_case_with(const char *what, tg_graph *g, const cg_case *o)
{
    CHECK(g != NULL);
    for (int level = 0; g && level < 2; level++) {
        if (!((o->levels ? o->levels : 2u) & (1u << level)))
            continue;
        cg_model cm;
        bool ok = cg_load(what, g, level, &cm);
        for (int b = 1; ok && b <= 5; b += 4)
            ok = cg_run_batch(what, g, level, &cm, b, o);
        CHECK(ok);
        if (cm.m)
            cm.close(cm.m);
        if (cm.dl)      /* its thread pool stops in its destructor */
            dlclose(cm.dl);
    }
    tg_graph_free(g);
}

static inline void check_case(const char *what, tg_graph *g, bool exact)
{
    check_case_with(what, g, &(cg_case){.exact = exact});
}

#endif
