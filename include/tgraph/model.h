/* <tgraph/model.h>: the C ABI of a model compiled by tcompile(1).
 *
 * Every .so that tcompile writes exports exactly these functions, whatever the
 * model: load it with dlopen(3) and look them up with dlsym(3), or link one
 * model directly with -l. The .so needs only libc and libm, and leaves its
 * host's settings alone: no environment variables, no process-wide thread
 * counts (it uses no BLAS library), threads of its own.
 * See tgraph_model(3) for a complete example.
 *
 * Threads: a model handle is immutable once open; tgraph_model_run may be
 * called on one handle from several threads at once (each call has its own
 * workspace). Errors: functions that can fail return a tgraph_status (0 ok,
 * negative on error) or NULL, and leave a message for the calling thread in
 * tgraph_last_error(). */
#ifndef TGRAPH_MODEL_H
#define TGRAPH_MODEL_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped on any incompatible change to this file. Compare it with
 * tgraph_abi_version() after dlopen. */
#define TGRAPH_MODEL_ABI_VERSION 1

/* The .so carries the same number as data, so that it can be read without
 * running the model (tg_model_check, readelf -n): an ELF note in section
 * .note.tgraph, owner TGRAPH_NOTE_NAME, type TGRAPH_NOTE_ABI_VERSION, whose
 * 4-byte description is the version in the file's byte order. */
#define TGRAPH_NOTE_NAME "tgraph"
#define TGRAPH_NOTE_ABI_VERSION 1

#define TGRAPH_MAX_RANK 8

#if defined(__GNUC__)
#define TGRAPH_API __attribute__((visibility("default")))
#else
#define TGRAPH_API
#endif

/* Element types; the numbers are part of the ABI. */
typedef enum {
    TGRAPH_F32 = 1, TGRAPH_F64 = 2, TGRAPH_F16 = 3, TGRAPH_BF16 = 4,
    TGRAPH_F8E4M3 = 5, TGRAPH_F8E5M2 = 6,
    TGRAPH_I8 = 7, TGRAPH_U8 = 8, TGRAPH_I16 = 9, TGRAPH_I32 = 10, TGRAPH_I64 = 11,
    TGRAPH_BOOL = 12,   /* one byte, 0 or 1 */
    /* Appended after ABI version 1 first shipped (so the version is unchanged): only
     * a model whose inputs or outputs are unsigned reports them. */
    TGRAPH_U16 = 13, TGRAPH_U32 = 14, TGRAPH_U64 = 15,
    /* Appended likewise, one byte an element (ml_dtypes' layout: a 4-bit value in
     * the low nibble): int4, uint4, float8 e4m3fnuz and e5m2fnuz, float4 e2m1. */
    TGRAPH_I4 = 16, TGRAPH_U4 = 17, TGRAPH_F8E4M3FNUZ = 18, TGRAPH_F8E5M2FNUZ = 19,
    TGRAPH_F4E2M1 = 20,
} tgraph_dtype;

typedef enum {
    TGRAPH_OK = 0,
    TGRAPH_E_ARG = -1,      /* NULL pointer, index or count out of range */
    TGRAPH_E_DTYPE = -2,    /* an input has the wrong element type */
    TGRAPH_E_SHAPE = -3,    /* an input has the wrong rank or dims */
    TGRAPH_E_RANGE = -4,    /* a symbolic dim is outside its range */
    TGRAPH_E_NOMEM = -5,    /* out of memory */
    TGRAPH_E_SPACE = -6,    /* a caller-provided output buffer is too small */
    TGRAPH_E_DATA = -7,     /* bad input values (an index out of range ...) */
    TGRAPH_E_WEIGHTS = -8,  /* the weights file is missing, unreadable or not this model's */
    TGRAPH_E_DEVICE = -9,   /* the device failed (a CUDA error: its words in tgraph_last_error) */
} tgraph_status;

typedef struct tgraph_model tgraph_model;

/* An input or output as the model declares it. */
typedef struct {
    const char *name;
    tgraph_dtype dtype;
    int rank;
    int64_t dims[TGRAPH_MAX_RANK];          /* fixed size, or -1 when symbolic */
    const char *dim_expr[TGRAPH_MAX_RANK];  /* every dim as text: "64", "s0", "2*s0+1" */
} tgraph_tensor_info;

/* A symbol that dims are written in: its value is read from the inputs' dims
 * at every run and must lie in [min, max]. A data symbol, which appears in no
 * input's dims, is a length the run sets (a nonzero node's count ...): see
 * tgraph_model_output_dims. */
typedef struct {
    const char *name;
    int64_t min, max;
} tgraph_symbol_info;

/* A tensor passed to or returned by a run: dense, row-major (C order). */
typedef struct {
    void *data;         /* inputs: read only. outputs: see tgraph_model_run */
    tgraph_dtype dtype;
    int rank;
    int64_t dims[TGRAPH_MAX_RANK];
    size_t nbytes;      /* outputs: capacity of a caller-provided data buffer */
} tgraph_tensor;

/* TGRAPH_MODEL_ABI_VERSION as this model was built. */
TGRAPH_API uint32_t tgraph_abi_version(void);
/* A fixed text for a status ("wrong dtype" ...). */
TGRAPH_API const char *tgraph_strerror(int status);
/* The message of the calling thread's last failed call, "" when none. */
TGRAPH_API const char *tgraph_last_error(void);

/* Load the model. weights_path NULL: the weights built into the .so or, for a
 * model compiled with `tcompile --weights FILE`, FILE's name looked up beside
 * the .so. Otherwise a weights file written by `tcompile --weights`, which is
 * mapped read-only. NULL on error. */
TGRAPH_API tgraph_model *tgraph_model_open(const char *weights_path);
TGRAPH_API void tgraph_model_close(tgraph_model *m);   /* NULL is a no-op */

/* Introspection. The strings live as long as the .so stays loaded. */
TGRAPH_API int tgraph_model_num_inputs(const tgraph_model *m);
TGRAPH_API int tgraph_model_num_outputs(const tgraph_model *m);
TGRAPH_API int tgraph_model_num_symbols(const tgraph_model *m);
TGRAPH_API int tgraph_model_input_info(const tgraph_model *m, int i, tgraph_tensor_info *info);
TGRAPH_API int tgraph_model_output_info(const tgraph_model *m, int i, tgraph_tensor_info *info);
TGRAPH_API int tgraph_model_symbol_info(const tgraph_model *m, int i, tgraph_symbol_info *info);

/* Check inputs (dtype, rank, dims, symbol ranges; data is not read) and fill
 * each output's dtype, rank, dims and nbytes (the size it will need). A dim
 * that is a data symbol is given as its bound for these inputs: the run
 * returns the dims it made, packed, nbytes no more than this; one with no
 * bound (a loop's trip count read at run time, a branch's own size) is -1,
 * and the output's nbytes 0. */
TGRAPH_API int tgraph_model_output_dims(const tgraph_model *m, const tgraph_tensor *inputs,
                                        int ninputs, tgraph_tensor *outputs, int noutputs);

/* Run the model. inputs: ninputs tensors in declaration order, checked like
 * tgraph_model_output_dims. outputs: noutputs tensors; for each, either
 *   data != NULL: the caller's buffer of nbytes bytes, which must be large
 *                 enough (TGRAPH_E_SPACE otherwise; for an output whose
 *                 shape the run sets, checked once the run made it), or
 *   data == NULL: the model allocates it with malloc(3); the caller frees it.
 * On return dtype, rank, dims and nbytes describe the result. On error no
 * output is allocated. */
TGRAPH_API int tgraph_model_run(tgraph_model *m, const tgraph_tensor *inputs, int ninputs,
                                tgraph_tensor *outputs, int noutputs);

/* An extended run, for devices: the run's queue and where tensors live. It
 * came after ABI version 1 first shipped (version 1 is unchanged, callers of
 * tgraph_model_run need nothing): look it up with dlsym(3), absent means
 * "host only". Set size and version to what the caller was compiled with;
 * a later header may add fields at the end under a higher version. */
#define TGRAPH_RUN_OPTS_VERSION 1

typedef enum {
    TGRAPH_HOST = 0,        /* memory the CPU reads (malloc, mmap) */
    TGRAPH_DEVICE = 1,      /* the device's memory; on the CPU the host's */
} tgraph_placement;

typedef struct {
    uint32_t size;          /* sizeof(tgraph_run_opts) */
    uint32_t version;       /* TGRAPH_RUN_OPTS_VERSION */
    void *stream;           /* the device queue the run is ordered on (a cudaStream_t ...);
                               NULL: the device's default. The CPU ignores it. */
    tgraph_placement inputs;    /* where every input's data is */
    tgraph_placement outputs;   /* where outputs' buffers are, or are allocated */
} tgraph_run_opts;

/* tgraph_model_run with options; opts NULL runs as tgraph_model_run does.
 * TGRAPH_E_ARG, with the reason in tgraph_last_error(), for a version this
 * model does not know, a size too small for that version or an unknown
 * placement. On a device the run is queued on opts->stream and device
 * outputs are ready when the queue gets there; the CPU runs at once and
 * returns when the outputs are written. */
TGRAPH_API int tgraph_model_run_ex(tgraph_model *m, const tgraph_tensor *inputs, int ninputs,
                                   tgraph_tensor *outputs, int noutputs,
                                   const tgraph_run_opts *opts);

/* Threads each run of this .so uses: the caller and n - 1 workers (n <= 0:
 * all cores). Concurrent runs each get n: every run in flight has a team of
 * workers of its own (up to 8 runs at once; more run on their own thread). */
TGRAPH_API void tgraph_set_num_threads(int n);
TGRAPH_API int tgraph_num_threads(void);

/* Optional per-kernel timing (trun --profile): after each kernel of every
 * run, fn(ctx, kernel, ops, seconds), where kernel is the name of the graph
 * node whose result the kernel computes and ops its ops ("linear+relu" when
 * fused). fn NULL turns it off; off, a kernel pays one load and one branch.
 * Process-wide for this .so: set it while no run is in flight; fn is called
 * from the thread that runs. It came after ABI version 1 first shipped, so
 * older models lack it: look it up with dlsym(3), absent means "no timings". */
typedef void (*tgraph_profile_fn)(void *ctx, const char *kernel, const char *ops,
                                  double seconds);
TGRAPH_API void tgraph_set_profile(tgraph_profile_fn fn, void *ctx);

#ifdef __cplusplus
}
#endif

#endif
