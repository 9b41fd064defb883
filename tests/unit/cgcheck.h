/* Every path that runs a graph against a float64 reference, one small graph
 * at a time (ggml's test-backend-ops). check_case draws fresh random inputs
 * at batch 1 and 5 and, for every backend (the CPU, and those TG_BACKEND_PATH
 * names: TG_BACKEND_OPS=NAME,... picks some), runs the graph
 *   interpreted: the interpreter on the graph as built, each node on the
 *                backend or, where it refuses, on the CPU (each case with
 *                a refused node listed: "unsupported");
 *   compiled:    (a backend that compiles) a copy through the pass
 *                pipeline for it at -O0 and -O1, built into
 *                a .so (needs libtgkernels.a: TGRAPH_RUNTIME_DIR, which make
 *                check sets), loaded with dlopen and run into output buffers
 *                of the test's own, each between sentinel bytes that must
 *                come back untouched (an out-of-bounds write) and prefilled
 *                with a poison pattern (an element never written);
 * and compares each output with the reference: the interpreter on the graph
 * widened to float64 (every f32 input, constant, result and dtype attribute
 * made f64, the inputs the same values), or of a graph the case gives that
 * computes the same in ops that take f64. Where there is neither, the
 * reference is the interpreter at the graph's own dtypes and the case says
 * so. A graph with no f32 value (integers, bool, f16, f64) is its own
 * reference: the compiled paths must match the interpreter. Errors:
 *   floats: max |got - ref| - atol <= rtol * max |ref|, with the tolerance of
 *           the dtype under test (f32 rtol 1e-4 atol 1e-5; f64 1e-9, 1e-12;
 *           f16 2e-3, 1e-3; bf16 1.6e-2, 1e-2: a few units in the last place),
 *           NaN exactly where ref has NaN, infinities equal;
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

#include "backend/backend.h"
#include "error.h"
#include "exec/exec.h"
#include "ops/control.h"
#include "passes/passes.h"
#include "qref.h"
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
    bool interpreted;   /* the interpreters only: the code generator takes no such
                         * node (sdpa in bf16 or fp16) */
    tg_graph *reference;    /* where g's ops take no f64, the same computation in
                             * ops that do, widened as the reference; freed */
} cg_case;

/* Cases whose reference ran at the graph's own dtypes: an op takes no f64,
 * or the graph holds no f32 to widen. */
static int cg_own_reference, cg_no_f32;

/* The cases a path refused, with its reason (printed by cg_report). */
static int cg_nrefused;

static inline void cg_refuse(const char *what, const char *path, const char *why)
{
    printf("unsupported: %s, %s: %s\n", what, path, why);
    cg_nrefused++;
}

/* TG_SHARD=I/N: only every N-th case from the I-th (from 0) runs, so N
 * processes share the cases (a GPU machine's cores); the seed replays a
 * shard's run with the same TG_SHARD. */
static int cg_shard_i, cg_shard_n = 1, cg_case_no;

/* The backends under test, and per backend the cases its interpreter ran:
 * all, those whose every node it ran, those where it ran some. */
#define CG_MAX_BE 8
static const tg_backend *cg_be[CG_MAX_BE];
static int cg_nbe, cg_be_run[CG_MAX_BE], cg_be_whole[CG_MAX_BE], cg_be_part[CG_MAX_BE];

/* A path's name: "interpreted" or "compiled -O1" on the CPU, else after its backend's. */
static inline void cg_path(char *buf, size_t n, const tg_backend *be, const char *path)
{
    snprintf(buf, n, "%s%s%s", be == &tg_backend_cpu ? "" : be->name,
             be == &tg_backend_cpu ? "" : " ", path);
}

/* Whether backend be runs every node of g (its supports_node); false after
 * cg_refuse with its reason for the first it refuses. */
static inline bool cg_interpretable_on(const tg_backend *be, const char *what, const tg_graph *g)
{
    for (int i = 0; i < g->nnode; i++) {
        char why[TG_WHY_MAX], path[64], node[TG_WHY_MAX + 64];
        if (tg_op_is_control(g->nodes[i].op))
            continue;               /* the interpreter runs it, placing its subgraphs' nodes */
        if (!tg_backend_supports(be, g, i, why)) {
            cg_path(path, sizeof path, be, "interpreted");
            snprintf(node, sizeof node, "%s (%s): %s", g->nodes[i].name,
                     tg_op_name(g->nodes[i].op), why);
            cg_refuse(what, path, node);
            return false;
        }
    }
    return true;
}

/* Whether backend be's compiled model of g can run here: its compiler takes
 * every node (compiles_node) and the device is here to run them (a GPU's
 * supports_node refuses all without one); false after cg_refuse with the
 * first it refuses. */
static inline bool cg_compilable_on(const tg_backend *be, const char *what, const tg_graph *g)
{
    for (int i = 0; be->compiles_node && i < g->nnode; i++) {
        char why[TG_WHY_MAX], path[64], node[TG_WHY_MAX + 64];
        if (!be->compiles_node(be, g, i, why) ||    /* (control: its subgraphs' nodes, placed) */
            (!tg_op_is_control(g->nodes[i].op) && !tg_backend_supports(be, g, i, why))) {
            cg_path(path, sizeof path, be, "compiled");
            snprintf(node, sizeof node, "%s (%s): %s", g->nodes[i].name,
                     tg_op_name(g->nodes[i].op), why);
            cg_refuse(what, path, node);
            return false;
        }
    }
    return true;
}

static inline bool cg_interpretable(const char *what, const tg_graph *g)
{
    return cg_interpretable_on(&tg_backend_cpu, what, g);
}

/* Backend d's interpreter on case g: counted by how many nodes it ran. */
static inline void cg_count_on(int d, const char *what, const tg_graph *g)
{
    int n = 0;
    char why[TG_WHY_MAX];
    for (int i = 0; i < g->nnode; i++)
        n += tg_op_is_control(g->nodes[i].op) || tg_backend_supports(cg_be[d], g, i, why);
    cg_be_run[d]++;
    if (n < g->nnode)
        cg_interpretable_on(cg_be[d], what, g);     /* lists the first refusal */
    cg_be_whole[d] += n == g->nnode;
    cg_be_part[d] += n > 0 && n < g->nnode;
}

/* Each backend's count of cases, for the end of the program. */
static inline void cg_report_backends(void)
{
    for (int d = 0; d < cg_nbe; d++)
        printf("backend %s: %d cases run interpreted: %d all on it, %d partly (the CPU ran the"
               " nodes it refused), %d all on the CPU%s\n", cg_be[d]->name, cg_be_run[d],
               cg_be_whole[d], cg_be_part[d], cg_be_run[d] - cg_be_whole[d] - cg_be_part[d],
               cg_be[d]->compile ? "; and compiled" : "; it compiles nothing");
}

/* Whether the cases can run (TGRAPH_RUNTIME_DIR set: make check sets it);
 * seeds the generator from the clock, or TG_SEED to replay a run, and prints
 * the seed. */
static inline bool cg_start(void)
{
    if (!getenv("TGRAPH_RUNTIME_DIR")) {
        printf("TGRAPH_RUNTIME_DIR is not set: run through make check\n");
        return false;
    }
    if (tg_backend_load_path()) {
        printf("TG_BACKEND_PATH: %s\n", tg_errmsg());
        exit(1);
    }
    const char *only = getenv("TG_BACKEND_OPS");
    for (int i = 0; i < tg_backend_count() && cg_nbe < CG_MAX_BE; i++) {
        const tg_backend *be = tg_backend_at(i);
        char list[256];
        snprintf(list, sizeof list, ",%s,", only ? only : "");
        char name[64];
        snprintf(name, sizeof name, ",%s,", be->name);
        if (!only || strstr(list, name))
            cg_be[cg_nbe++] = be;
    }
    if (!cg_nbe) {
        printf("TG_BACKEND_OPS=%s: no such backend registered\n", only);
        exit(1);
    }
    const char *shard = getenv("TG_SHARD");
    if (shard && (sscanf(shard, "%d/%d", &cg_shard_i, &cg_shard_n) != 2 || cg_shard_n < 1 ||
                  cg_shard_i < 0 || cg_shard_i >= cg_shard_n)) {
        printf("TG_SHARD=%s: not I/N with 0 <= I < N\n", shard);
        exit(1);
    }
    if (cg_shard_n > 1)
        printf("shard %d of %d (TG_SHARD)\n", cg_shard_i, cg_shard_n);
    unit_seed("cgcheck");
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

static inline tg_dtype cg_wide(tg_dtype t)
{
    return t == TG_F32 ? TG_F64 : t;
}

/* The data of n elements of dtype t widened (cg_wide); caller frees. */
static inline void *cg_widen_data(tg_dtype t, const void *data, size_t n)
{
    if (t != TG_F32)
        return n ? memcpy(malloc(n * tg_dtype_size(t)), data, n * tg_dtype_size(t)) : NULL;
    double *w = malloc(sizeof *w * (n ? n : 1));
    for (size_t i = 0; i < n; i++)
        w[i] = ((const float *)data)[i];
    return w;
}

/* g with every f32 value and dtype attribute made f64, values keeping their
 * names and order, the quantized layers as f64 ops (qref.h); NULL (why: the
 * node that refused) where an op takes no f64. */
static inline tg_graph *cg_widen(const tg_graph *g, char *why, size_t nwhy)
{
    *why = 0;
    tg_graph *w = tg_graph_new();
    int *map = malloc(sizeof *map * (g->nvalue ? g->nvalue : 1));
    bool ok = w && map;
    for (int i = 0; ok && i < g->nsym; i++)
        ok = tg_graph_add_symbol(w, g->sym[i].name, g->sym[i].min, g->sym[i].max) == i;
    for (int i = 0; ok && i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        ok = (map[g->inputs[i]] = tg_graph_add_input(w, v->name, cg_wide(v->dtype), &v->shape))
             >= 0;
    }
    for (int i = 0; ok && i < g->nvalue; i++) {
        const tg_value *v = &g->values[i];
        if (v->kind != TG_VALUE_CONST)
            continue;
        size_t n = v->nbytes / tg_dtype_size(v->dtype);
        void *data = cg_widen_data(v->dtype, v->data, n);
        ok = (map[i] = tg_graph_add_const(w, v->name, cg_wide(v->dtype), &v->shape, data,
                                          n * tg_dtype_size(cg_wide(v->dtype)))) >= 0;
    }
    for (int i = 0; ok && i < g->nnode; i++) {
        const tg_node *nd = &g->nodes[i];
        int in[16];
        tg_attr at[16];
        for (int k = 0; k < nd->nin && k < 16; k++)
            in[k] = nd->in[k] < 0 ? -1 : map[nd->in[k]];
        for (int k = 0; k < nd->nattr && k < 16; k++) {
            at[k] = nd->attr[k];
            if (at[k].kind == TG_ATTR_DTYPE)
                at[k].u.i = cg_wide((tg_dtype)at[k].u.i);
        }
        ok = nd->nin <= 16 && nd->nattr <= 16;
        bool q = nd->op == TG_OP_QLINEAR || nd->op == TG_OP_QCONV;
        for (int k = 0; ok && k < nd->nattr; k++)       /* subgraphs widened too */
            if (at[k].kind == TG_ATTR_GRAPH)
                ok = (at[k].u.g = cg_widen(nd->attr[k].u.g, why, nwhy)) != NULL;
        int y = !ok ? -1 : q ? qref_layer(w, g, nd, in, why, nwhy)
                : tg_op_is_control(nd->op) ? tg_control_add(w, nd->op, nd->name, nd->nin, in,
                                                            nd->nattr, at)
                    : tg_graph_add_node(w, nd->op, nd->name, nd->nin, in, nd->nattr, at);
        for (int k = 0; k < nd->nattr && k < 16; k++)
            if (at[k].kind == TG_ATTR_GRAPH && at[k].u.g != nd->attr[k].u.g)
                tg_graph_free(at[k].u.g);
        if (y < 0 && !*why)     /* qref_layer's own reason, or the refusal */
            snprintf(why, nwhy, "%s", tg_errmsg());
        ok = ok && y >= 0;
        for (int k = 0; ok && k < nd->nout; k++)
            map[nd->out[k]] = w->nodes[w->nnode - 1].out[k];
    }
    for (int i = 0; ok && i < g->noutput; i++)
        ok = tg_graph_add_output(w, map[g->outputs[i]]) >= 0;
    free(map);
    if (!ok) {
        tg_graph_free(w);
        return NULL;
    }
    return w;
}

/* Compile g (a copy goes through the passes at `level`) into path. */
static inline int cg_compile(const tg_backend *be, const tg_graph *g, int level,
                             const char *path)
{
    tg_graph *c = tg_graph_clone(g);
    tg_passes_opts po = {.level = level, .target = be};
    tg_plan *p = c ? tg_passes_run(c, &po) : NULL;
    FILE *f = fopen(path, "wb");
    /* a baseline CPU: the cases test the generated code, not -march, and must
     * also run under valgrind (no AVX-512 there); bats tests native builds */
    tg_build_opts o = {.cpu = "x86-64-v2"};
    int rc = p && f ? be->compile(be, c, p, &o, f) : -1;
    if (f && fclose(f))
        rc = -1;
    tg_plan_free(p);
    tg_graph_free(c);
    return rc;
}

/* A result to check: its dtype, dims and bytes. */
typedef struct {
    tg_dtype dtype;
    int rank;
    const int64_t *dims;
    const void *data;
    size_t nbytes;
} cg_result;

/* The error of got against the reference ref (see the top: ref may be the
 * f64 widening of got's f32), as a multiple of the tolerance: <= 1 passes.
 * exact: got's bytes must be ref's converted to got's dtype. */
static inline double cg_compare(const tg_tensor *ref, const cg_result *got, bool exact)
{
    size_t n = got->nbytes / (got->nbytes ? tg_dtype_size(got->dtype) : 1);
    if (got->rank != ref->rank || (ref->dtype != got->dtype && ref->dtype != cg_wide(got->dtype)) ||
        memcmp(got->dims, ref->dims, sizeof(int64_t) * ref->rank) ||
        ref->nbytes != n * tg_dtype_size(ref->dtype))
        return INFINITY;
    if (!tg_dtype_is_float(got->dtype) || exact) {
        unsigned char e[8];
        size_t es = tg_dtype_size(got->dtype);
        for (size_t i = 0; i < n; i++) {
            if (ref->dtype == got->dtype)
                memcpy(e, (const char *)ref->data + i * es, es);
            else
                tg_store_f64(got->dtype, e, 0, tg_load_f64(ref->dtype, ref->data, i));
            if (memcmp(e, (const char *)got->data + i * es, es))
                return INFINITY;
        }
        return 0;
    }
    double rtol = 1e-4, atol = 1e-5;
    switch (got->dtype) {
    case TG_F64: rtol = 1e-9, atol = 1e-12; break;
    case TG_F16: rtol = 2e-3, atol = 1e-3; break;
    case TG_BF16: rtol = 1.6e-2, atol = 1e-2; break;
    default: break;
    }
    double big = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        double a = tg_load_f64(ref->dtype, ref->data, i);
        double b = tg_load_f64(got->dtype, got->data, i);
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
        else if (tg_dtype_is_unsigned(t->dtype))
            v = fabs(floor(v));         /* [-3, 3) folded: no negatives to saturate to 0 */
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
    int (*dims)(const tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
    void (*close)(tgraph_model *);
    const tg_backend *be;   /* whose compile made it */
    int level;
} cg_model;

static inline bool cg_load(const char *what, const tg_backend *be, const tg_graph *g, int level,
                           cg_model *cm)
{
    char path[] = "/tmp/test_codegen.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    memset(cm, 0, sizeof *cm);
    cm->be = be;
    cm->level = level;
    if (cg_compile(be, g, level, path)) {
        fprintf(stderr, "%s, %s -O%d: %s\n", what, be->name, level, tg_errmsg());
        unlink(path);
        return false;
    }
    cm->dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    unlink(path);
    tgraph_model *(*open)(const char *) = cm->dl ? dlsym(cm->dl, "tgraph_model_open") : NULL;
    cm->run = cm->dl ? dlsym(cm->dl, "tgraph_model_run") : NULL;
    cm->dims = cm->dl ? dlsym(cm->dl, "tgraph_model_output_dims") : NULL;
    cm->close = cm->dl ? dlsym(cm->dl, "tgraph_model_close") : NULL;
    cm->m = open && cm->run && cm->dims && cm->close ? open(NULL) : NULL;
    if (!cm->m)
        fprintf(stderr, "%s, -O%d: the .so does not load: %s\n", what, level,
                cm->dl ? "tgraph_model_open failed" : dlerror());
    return cm->m != NULL;
}

static inline void cg_unload(cg_model *cm)
{
    if (cm->m)
        cm->close(cm->m);
    if (cm->dl)         /* its thread pool stops in its destructor */
        dlclose(cm->dl);
}

#define CG_MAX_IO 32     /* inputs and outputs of a case */
#define CG_GUARD 64      /* sentinel bytes on each side of a compiled output */
#define CG_SENTINEL 0xa5 /* their value, and the poison an output starts as */

/* Check each output of a run against the reference; false on a mismatch. */
static inline bool cg_check_outputs(const char *what, const char *path, int b,
                                    const tg_tensor *ref, const cg_result *got, int n,
                                    const cg_case *o)
{
    bool ok = true;
    for (int k = 0; k < n; k++) {
        double err = cg_compare(&ref[k], &got[k], o->exact);
        if (!(err <= 1)) {
            fprintf(stderr, "%s, %s, batch %d, output %d: error %g times the tolerance\n",
                    what, path, b, k, err);
            ok = false;
        }
    }
    return ok;
}

/* Run the compiled model into guarded buffers and check them. */
static inline bool cg_run_compiled(const char *what, const char *path, const cg_model *cm,
                                   const tgraph_tensor *tin, int nin, const tg_tensor *ref,
                                   int nout, int b, const cg_case *o)
{
    tgraph_tensor tout[CG_MAX_IO] = {{0}};
    unsigned char *buf[CG_MAX_IO] = {0};
    size_t cap[CG_MAX_IO];      /* the size output_dims asks: a data-set length's bound */
    cg_result got[CG_MAX_IO];
    int rc = cm->dims(cm->m, tin, nin, tout, nout);
    for (int k = 0; !rc && k < nout; k++) {
        bool sized = true;      /* else the run sets its shape (-1 dims): the .so allocates */
        for (int d = 0; d < tout[k].rank; d++)
            sized = sized && tout[k].dims[d] >= 0;
        if (!sized)
            continue;
        cap[k] = tout[k].nbytes;
        buf[k] = malloc(cap[k] + 2 * CG_GUARD);
        memset(buf[k], CG_SENTINEL, cap[k] + 2 * CG_GUARD);
        tout[k].data = buf[k] + CG_GUARD;
    }
    rc = rc ? rc : cm->run(cm->m, tin, nin, tout, nout);
    bool ok = rc == 0;
    if (!ok)
        fprintf(stderr, "%s, %s, batch %d: the .so fails: %d\n", what, path, b, rc);
    for (int k = 0; ok && k < nout; k++) {
        got[k] = (cg_result){(tg_dtype)tout[k].dtype, tout[k].rank, tout[k].dims,
                             tout[k].data, tout[k].nbytes};
        for (size_t i = 0; buf[k] && i < CG_GUARD; i++)
            if (buf[k][i] != CG_SENTINEL || buf[k][CG_GUARD + cap[k] + i] != CG_SENTINEL) {
                fprintf(stderr, "%s, %s, batch %d, output %d: a write %s its buffer\n",
                        what, path, b, k, buf[k][i] != CG_SENTINEL ? "before" : "past");
                ok = false;
                break;
            }
    }
    ok = ok && cg_check_outputs(what, path, b, ref, got, nout, o);
    for (int k = 0; k < nout; k++) {
        if (rc == 0 && !buf[k])
            free(tout[k].data);
        free(buf[k]);
    }
    return ok;
}

/* Run the interpreter on g, on backend be where it supports a node; its
 * outputs (caller frees) or false. */
static inline bool cg_interpret_on(const tg_backend *be, const tg_graph *g, const tg_tensor *in,
                                   tg_tensor *out)
{
    tg_exec *e = tg_exec_new_on(g, be, 1);
    bool ok = e && !tg_exec_run(e, in, out);
    tg_exec_free(e);
    return ok;
}

static inline bool cg_interpret(const tg_graph *g, const tg_tensor *in, tg_tensor *out)
{
    return cg_interpret_on(&tg_backend_cpu, g, in, out);
}

/* Fresh inputs at batch b, the reference (wide, or g itself on the CPU when
 * wide is NULL), then every path (the interpreter on g on each of the
 * backends interp, each model of cm); false on a mismatch. */
static inline bool cg_run_batch(const char *what, const tg_graph *g, const tg_graph *wide,
                                const tg_backend *const *interp, int ninterp,
                                const cg_model *cm, int ncm, int b, const cg_case *o)
{
    tg_tensor in[CG_MAX_IO] = {{0}}, win[CG_MAX_IO] = {{0}}, ref[CG_MAX_IO] = {{0}},
              out[CG_MAX_IO] = {{0}};
    tgraph_tensor tin[CG_MAX_IO];
    bool ok = g->ninput <= CG_MAX_IO && g->noutput <= CG_MAX_IO;
    if (!ok)
        fprintf(stderr, "%s: %d inputs and %d outputs, over CG_MAX_IO (%d)\n", what, g->ninput,
                g->noutput, CG_MAX_IO);
    for (int i = 0; ok && i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        int64_t sym[TG_MAX_SYMS] = {b};
        in[i].dtype = v->dtype;
        in[i].rank = v->shape.rank;
        tg_shape_eval(&v->shape, sym, in[i].dims);
        tg_tensor_alloc(&in[i]);
        cg_fill(&in[i], o);
        win[i] = in[i];
        win[i].dtype = cg_wide(in[i].dtype);
        win[i].nbytes = in[i].nbytes / tg_dtype_size(in[i].dtype) * tg_dtype_size(win[i].dtype);
        win[i].data = cg_widen_data(in[i].dtype, in[i].data, in[i].nbytes / tg_dtype_size(in[i].dtype));
        tin[i] = (tgraph_tensor){.data = in[i].data, .dtype = (tgraph_dtype)in[i].dtype,
                                 .rank = in[i].rank, .nbytes = in[i].nbytes};
        memcpy(tin[i].dims, in[i].dims, sizeof tin[i].dims);
    }
    if (ok && !cg_interpret(wide ? wide : g, wide ? win : in, ref)) {
        fprintf(stderr, "%s, batch %d: the reference fails: %s\n", what, b, tg_errmsg());
        ok = false;
    }
    for (int d = 0; ok && d < ninterp; d++) {
        char path[64];
        cg_path(path, sizeof path, interp[d], "interpreted");
        if (!cg_interpret_on(interp[d], g, in, out)) {
            fprintf(stderr, "%s, %s, batch %d: %s\n", what, path, b, tg_errmsg());
            ok = false;
        }
        cg_result got[CG_MAX_IO];
        for (int k = 0; ok && k < g->noutput; k++)
            got[k] = (cg_result){out[k].dtype, out[k].rank, out[k].dims, out[k].data,
                                 out[k].nbytes};
        ok = ok && cg_check_outputs(what, path, b, ref, got, g->noutput, o);
        for (int k = 0; ok && k < g->noutput; k++)
            tg_tensor_free(&out[k]);
    }
    for (int m = 0; m < ncm; m++) {
        char path[64], lv[32];
        snprintf(lv, sizeof lv, "compiled -O%d", cm[m].level);
        cg_path(path, sizeof path, cm[m].be, lv);
        if (ok && !cg_run_compiled(what, path, &cm[m], tin, g->ninput, ref, g->noutput, b, o))
            ok = false;
    }
    for (int k = 0; k < g->noutput && k < CG_MAX_IO; k++) {
        tg_tensor_free(&ref[k]);
        tg_tensor_free(&out[k]);
    }
    for (int i = 0; i < g->ninput && i < CG_MAX_IO; i++) {
        tg_tensor_free(&in[i]);
        tg_tensor_free(&win[i]);
    }
    return ok;
}

/* Compile g at each level of o, run every path at batch 1 and 5 against
 * the float64 reference; frees g. */
static inline void check_case_with(const char *what, tg_graph *g, const cg_case *o)
{
    CHECK(g != NULL);
    if (!g)
        return;
    if (cg_case_no++ % cg_shard_n != cg_shard_i) {     /* another shard's */
        tg_graph_free(o->reference);
        tg_graph_free(g);
        return;
    }
    char why[256] = "";
    bool f32 = false;
    for (int i = 0; i < g->nvalue; i++)
        f32 = f32 || g->values[i].dtype == TG_F32;
    tg_graph *wide = f32 ? cg_widen(o->reference ? o->reference : g, why, sizeof why) : NULL;
    tg_graph_free(o->reference);
    cg_no_f32 += !f32;
    if (f32 && !wide) {
        printf("%s: reference at the graph's own dtypes: %s\n", what, why);
        cg_own_reference++;
    }
    /* the interpreter on the graph as built: on the CPU against itself when
     * the reference is not wider, so only then; on another backend, with
     * the CPU running what it refuses, whenever the CPU can */
    const tg_backend *interp[CG_MAX_BE];
    cg_model cm[2 * CG_MAX_BE];
    int ninterp = 0, ncm = 0;
    bool ok = true, cpu_runs = !wide || cg_interpretable(what, g);
    for (int d = 0; d < cg_nbe; d++) {
        const tg_backend *be = cg_be[d];
        bool cpu = be == &tg_backend_cpu;
        if (cpu ? wide && cpu_runs : cpu_runs) {
            interp[ninterp++] = be;
            cg_count_on(d, what, g);
        }
        bool compiles = be->compile && !o->interpreted && cg_compilable_on(be, what, g);
        for (int level = 0; compiles && level < 2; level++)
            if ((o->levels ? o->levels : 2u) & (1u << level))
                ok = cg_load(what, be, g, level, &cm[ncm++]) && ok;
    }
    for (int b = 1; ok && b <= 5; b += 4)
        ok = cg_run_batch(what, g, wide, interp, ninterp, cm, ncm, b, o);
    CHECK(ok);
    for (int m = 0; m < ncm; m++)
        cg_unload(&cm[m]);
    tg_graph_free(wide);
    tg_graph_free(g);
}

static inline void check_case(const char *what, tg_graph *g, bool exact)
{
    check_case_with(what, g, &(cg_case){.exact = exact});
}

#endif
