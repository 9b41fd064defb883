/* The runtime half of a compiled model: everything of <tgraph/model.h> that is
 * the same for every model (opening, weights, checking inputs, binding
 * symbols, outputs, workspace, errors). It is built into libtgkernels.a, and
 * the C file that tcompile writes describes its model to it with a
 * tgrt_model table and one plan function. No libtgraph here: a compiled model
 * needs only libc and libm. */
#ifndef TGRT_MODEL_RT_H
#define TGRT_MODEL_RT_H

#include <stddef.h>
#include <stdint.h>

#include <tgraph/model.h>

#define TGRT_ALIGN 64
#define TGRT_WEIGHTS_MAGIC "TGWEIGHT"
#define TGRT_WEIGHTS_HEADER 64     /* bytes before the blob in a weights file */

/* Symbol `sym` = (dims of input `input`, axis `axis` - offset) / coef; input
 * -1: a data symbol, which a node of the plan binds as it runs, or one that
 * a control node's outputs alone use, whose shapes the run sets. */
typedef struct {
    int input, axis;
    int64_t coef, offset;
} tgrt_bind;

/* What one run sees: symbol values, every dim expression's value, workspace
 * slot offsets, and the data of inputs, outputs and weights. S and D hold a
 * data symbol's bound until its node binds it (the plan writes both). */
typedef struct {
    int64_t *S;                 /* symbol values */
    int64_t *D;                 /* dim expressions (tgrt_model.dims) */
    unsigned char *arena;       /* the workspace */
    const size_t *slot;         /* byte offset of each workspace slot */
    void *const *in;            /* input data */
    void *const *out;           /* output data, allocated for the full size (NULL for
                                 * an output whose shape the run sets) */
    const unsigned char *w;     /* weights blob */
    tgraph_tensor *dyn;         /* per output: one whose shape the run sets, as the run
                                 * made it (malloc'd data); else untouched */
} tgrt_call;

typedef struct {
    int nsym;
    const tgraph_symbol_info *sym;
    const tgrt_bind *bind;      /* one per symbol */
    int nin, nout;
    const tgraph_tensor_info *in, *out;
    /* dim k of input i must equal D[in_dim[i * TGRAPH_MAX_RANK + k]]; likewise
     * outputs, where -1 is a dim the run sets. */
    const int *in_dim, *out_dim;
    int ndim, nslot;
    /* Fill D[ndim] from S (symbols already in range; data symbols at their
     * max, which it lowers to the bound the inputs' dims give) and the slot
     * offsets; return the workspace size in bytes. */
    size_t (*prepare)(int64_t *S, int64_t *D, size_t *slot);
    /* Run the plan; 0, or a tgraph_status after tgrt_fail. */
    int (*exec)(const tgrt_call *c);
    const unsigned char *weights;   /* embedded blob, or NULL */
    uint64_t weights_size, weights_hash;
    const char *weights_file;       /* for --weights builds: file name beside the .so */
} tgrt_model;

/* The ABI functions, forwarded to by the generated file. They serve any
 * runtime whose struct tgraph_model begins with its table, a
 * `const tgrt_model *d` (the CPU's here, the CUDA one's in
 * ../cuda/model_rt.c, which builds its table from its graph at open). */
tgraph_model *tgrt_open(const tgrt_model *d, const char *weights_path);
void tgrt_close(tgraph_model *m);
int tgrt_num(const tgraph_model *m, int what);      /* 0 inputs, 1 outputs, 2 symbols */
int tgrt_tensor_info(const tgraph_model *m, int output, int i, tgraph_tensor_info *info);
int tgrt_symbol_info(const tgraph_model *m, int i, tgraph_symbol_info *info);
int tgrt_output_dims(const tgraph_model *m, const tgraph_tensor *in, int nin,
                     tgraph_tensor *out, int nout);
int tgrt_run(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out, int nout);
int tgrt_run_ex(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out,
                int nout, const tgraph_run_opts *opts);
const char *tgrt_strerror(int status);
/* Run the model table d (a subgraph's: no handle, no spare workspace) on
 * weights w: tgrt_run's contract for in and out. */
int tgrt_sub_run(const tgrt_model *d, const unsigned char *w, const tgraph_tensor *in, int nin,
                 tgraph_tensor *out, int nout);
/* Everything a run checks before it touches data: the arguments, the
 * symbols, every dim; fills S, D, slot and the outputs' shapes in res, and
 * the workspace size in *need. 0 or a tgraph_status (tgrt_fail). */
int tgrt_check_call(const tgraph_model *m, const tgraph_tensor *in, int nin,
                    const tgraph_tensor *out, int nout, int64_t *S, int64_t *D, size_t *slot,
                    tgraph_tensor *res, size_t *need);
/* Room for tgrt_check_call's arrays, sized for model m (NULL: none). */
#define CALL_ARRAYS(m) \
    const tgrt_model *d = (m) ? *(const tgrt_model *const *)(m) : NULL; \
    int64_t S[d ? d->nsym + 1 : 1], D[d ? d->ndim + 1 : 1]; \
    size_t slot[d ? d->nslot + 1 : 1], need; \
    tgraph_tensor res[d ? d->nout + 1 : 1]
/* The run options' version, size and placements. 0 or TGRAPH_E_ARG. */
int tgrt_check_opts(const tgraph_run_opts *o);
const char *tgrt_last_error(void);

/* Per-kernel timing (tgraph_set_profile). The generated plan brackets each
 * kernel with TGRT_PROF_BEGIN/END; built with -DTG_LOG_DISABLE they vanish. */
extern tgraph_profile_fn tgrt_prof_fn;
void tgrt_set_profile(tgraph_profile_fn fn, void *ctx);
double tgrt_now(void);
void tgrt_prof_end(double t0, const char *kernel, const char *ops);
#ifdef TG_LOG_DISABLE
#define TGRT_PROF_BEGIN(t) ((void)0)
#define TGRT_PROF_END(t, kernel, ops) ((void)0)
#else
#define TGRT_PROF_BEGIN(t) ((t) = tgrt_prof_fn ? tgrt_now() : 0)
#define TGRT_PROF_END(t, kernel, ops) (tgrt_prof_fn ? tgrt_prof_end((t), (kernel), (ops)) : (void)0)
#endif

/* What a fused loop of a plan (tcompile's emit_loop.c) reads: its outside
 * inputs and result, rows x inner elements (a reduction: rows results of
 * inner elements each), the row dims and each input's stride along them. */
#define TGRT_LOOP_MAX_IN 16
typedef struct {
    const void *in[TGRT_LOOP_MAX_IN];
    void *out;
    int64_t rows, inner;
    int64_t od[TGRAPH_MAX_RANK];
    int64_t st[TGRT_LOOP_MAX_IN][TGRAPH_MAX_RANK];
} tgrt_loop;

/* Control flow (control_rt.c), each subgraph a table of its own, node the
 * node's name for messages. if: then_ or else_ on args as cond's first byte
 * says. loop: body while iter < *trip (NULL: no bound) and the condition
 * holds (*cond first, NULL: true); args: ncarried carried values, then the
 * invariants; out: the carried results, then the scan outputs. An output with
 * data is the graph's buffer for it, whose rank and dims it must come out
 * with; one without (its shape the run sets) comes back malloc'd. 0, or a
 * tgraph_status after tgrt_fail naming the node. */
int tgrt_control_if(const tgrt_model *then_, const tgrt_model *else_, const char *node,
            const unsigned char *w, const void *cond, const tgraph_tensor *args, int nargs,
            tgraph_tensor *out, int nout);
int tgrt_control_loop(const tgrt_model *body, const char *node, const unsigned char *w,
              const void *trip, const void *cond, int ncarried, const tgraph_tensor *args,
              int nargs, tgraph_tensor *out, int nout);
/* The most iterations a loop runs (the interpreter's and a compiled
 * model's): $TGRAPH_LOOP_MAX, else TGRT_LOOP_MAX_DEFAULT; -1 when the
 * variable is set but not a count of 1 or more. */
#define TGRT_LOOP_MAX_DEFAULT 10000000
int64_t tgrt_loop_max(void);
/* Set the calling thread's message; returns status. */
int tgrt_fail(int status, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
