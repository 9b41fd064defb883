/* The device interface: what tgraph asks of a device to run a graph (the
 * interpreter, trun --device) and to compile one (tcompile --target). A device
 * is one struct of function pointers (its folder lib/backend/NAME/), found by
 * name in the registry (registry.c). This plays ggml-backend's role, written
 * for this IR; tgraph(7), section DEVICES, tells the design.
 *
 * Running. The interpreter (lib/exec) asks the chosen device whether it
 * supports each node, and why not: a refused node falls back to the CPU, and
 * TLOG=run records where each node runs and why a device refused it. A value
 * lives in memory of the device whose node made it (buffers: alloc, free,
 * host or device memory); when a node on another device reads it, the
 * interpreter moves it (upload, download); a constant moves once for the
 * life of the interpreter's tg_exec, not once a run. Runs go node by node
 * (run), or a fused group at a time where the device runs groups (run_group:
 * the interpreter forms them with the device's grouping rules), and the
 * interpreter synchronizes before handing outputs back. The call per node is
 * the only indirection: nothing per element.
 *
 * Compiling. tcompile's pipeline (lib/passes) lets the target lower the graph
 * into its own weight formats (lower: the CPU packs linear weights into the
 * panels its GEMM streams; a GPU would use its own layouts), asks the target
 * which groups its code generator compiles (groups), then hands graph and
 * plan to compile, which emits the target's source, builds it (cc; nvcc) and
 * links the target's runtime into the shared object. */
#ifndef TG_BACKEND_H
#define TG_BACKEND_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "../graph.h"
#include "../passes/passes.h"
#include "../tensor.h"

/* A backend's struct says which version of this interface it fills; a backend
 * loaded at run time with another is refused. */
#define TG_BACKEND_ABI 3

/* Where a device's buffers live: host memory the CPU can read, or memory
 * only the device reads (reached through upload and download). */
typedef enum { TG_MEM_HOST = 0, TG_MEM_DEVICE } tg_mem;

/* One node to run: its inputs and outputs as tensors whose data is in the
 * device's memory (outputs allocated by the interpreter, dims set; a data op,
 * tg_op_is_data, sets the dims it makes, within those it was given). */
typedef struct {
    const tg_graph *g;
    const tg_node *n;
    const int64_t *sym;             /* the bound symbol values */
    const tg_tensor *const *in;     /* n->nin inputs, NULL when omitted */
    tg_tensor *const *out;          /* n->nout outputs: dtype, dims and zeroed data set */
} tg_run_ctx;

/* A group of nodes to run as one (run_group): the nodes the device's
 * grouping rules fused (groups; tg_plan), in graph order with the root last,
 * all of which it supports. Only the root's outputs get memory: the values
 * made and read inside the group have none. */
typedef struct {
    const tg_graph *g;
    tg_group_kind kind;             /* TG_GROUP_LOOP, _EPILOGUE ...: what fused it */
    int nnode;
    const int *nodes;               /* node indices, the root last */
    const int64_t *sym;             /* the bound symbol values */
    int nin;
    const int *in_values;           /* the values the group reads from outside it */
    const tg_tensor *const *in;     /* their tensors, in the device's memory */
    tg_tensor *const *out;          /* the root's outputs, as tg_run_ctx's */
} tg_group_ctx;

/* Why a device refuses a node: supports_node writes a short reason here. */
#define TG_WHY_MAX 160

/* A graph pass of a target's lowering: the changes it made, or -1 (tg_err). */
typedef struct {
    const char *name;               /* as TLOG=passes shows it */
    int (*run)(tg_graph *g);
    bool channels_last;             /* run only for tcompile --layout=nhwc */
} tg_lower_pass;

/* What tcompile passes to a target's compile. */
typedef struct {
    const char *cc;             /* NULL: $CC, else "cc" */
    const char *cpu;            /* -march= value; NULL: "native" */
    const char *weights_path;   /* --weights: write them there, not into the .so */
    const char *emit_c;         /* also write the generated source there */
    const char *dtype;          /* --dtype: NULL or "fp32"; "bf16", "fp16", "tf32" (the
                                   targets that take it: tcompile checks) */
} tg_build_opts;

typedef struct tg_backend tg_backend;
struct tg_backend {
    int abi;                    /* TG_BACKEND_ABI */
    const char *name;           /* --device / --target NAME */
    const char *about;          /* one line for --help and TLOG */

    /* ---- running: all required --------------------------------------------- */
    tg_mem memory;
    size_t alignment;           /* of what alloc returns */
    /* size bytes (size 0: a valid pointer all the same), zeroed; NULL (tg_err). */
    void *(*alloc)(const tg_backend *be, size_t size);
    void (*free)(const tg_backend *be, void *p);
    /* n bytes from host memory into the device's, and back. 0 or -1 (tg_err). */
    int (*upload)(const tg_backend *be, void *dst, const void *src, size_t n);
    int (*download)(const tg_backend *be, void *dst, const void *src, size_t n);
    /* Wait for the work queued so far. 0 or -1 (tg_err). */
    int (*synchronize)(const tg_backend *be);
    /* Whether the device runs node n of g (inputs' dtypes and shapes, its
     * attributes); when not, why (into why[TG_WHY_MAX]). */
    bool (*supports_node)(const tg_backend *be, const tg_graph *g, int n, char *why);
    /* Run one node it supports. 0 or -1 (tg_err). */
    int (*run)(const tg_backend *be, const tg_run_ctx *c);
    /* Run a group its grouping rules (groups) fused, as one. NULL: the
     * interpreter forms no groups and runs every node with run. */
    int (*run_group)(const tg_backend *be, const tg_group_ctx *c);
    /* A run of a graph starts and ends: the CPU sets the host threads the run
     * may use (nthreads; <= 0: the process-wide count) and wakes its workers,
     * then puts back what run_begin returned. NULL: nothing to do. */
    int (*run_begin)(const tg_backend *be, int nthreads);
    void (*run_end)(const tg_backend *be, int saved);

    /* ---- compiling: NULL compile when the device only runs --------------------- */
    const tg_lower_pass *lower;     /* run in order where the pipeline lowers */
    int nlower;
    const tg_group_rules *groups;   /* what its code generator fuses (passes.h); NULL: nothing */
    /* Emit the target's source for g and plan p, build it and write the shared
     * object to `so`. 0 or -1 (tg_err with the compiler's messages). */
    int (*compile)(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                   const tg_build_opts *o, FILE *so);
    /* Whether compile handles node n (why when not), whether or not the
     * device is present here (a GPU's models build on machines without one).
     * NULL: supports_node decides. (Version 2 of this interface added it.) */
    bool (*compiles_node)(const tg_backend *be, const tg_graph *g, int n, char *why);
};

/* ---- the registry (registry.c) ------------------------------------------------ */

/* The CPU: the default device and target, and every node's fallback. */
extern const tg_backend tg_backend_cpu;

/* The backend called name: a registered one, else one loaded as
 * tg_backend_load_named does; NULL (tg_err listing the known ones) when none. */
const tg_backend *tg_backend_find(const char *name);
/* The registered backends, the CPU first: i in [0, tg_backend_count()). */
int tg_backend_count(void);
const tg_backend *tg_backend_at(int i);
/* Add a backend (one loaded at run time). -1 (tg_err) when its ABI differs,
 * a required function is missing or its name is taken. */
int tg_backend_register(const tg_backend *be);

/* ---- backends in shared objects (load.c) ---------------------------------------- */

/* What a backend's shared object defines: its struct, which the loader
 * registers (NULL with tg_err: it cannot run here, e.g. no device present). */
#define TG_BACKEND_ENTRY "tg_backend_entry"
const tg_backend *tg_backend_entry(void);

/* Load and register the backend of the shared object at path (or return it
 * when registered already). NULL (tg_err) when the file is missing, is no
 * shared object, defines no tg_backend_entry, or the registry refuses its
 * backend (another interface version, a function missing, its name taken). */
const tg_backend *tg_backend_load(const char *path);
/* name with a '/': tg_backend_load(name); else the first
 * libtgraph-backend-NAME.so in the folders of TG_BACKEND_PATH (colon-separated),
 * then in the package's library folder (pkglibdir), whose backend must be
 * called name. NULL: with tg_err when loading failed,
 * without when there is no such file. */
const tg_backend *tg_backend_load_named(const char *name);
/* Load every backend TG_BACKEND_PATH names: each shared object it lists and
 * each libtgraph-backend-*.so in the folders it lists. 0, or -1 (tg_err). */
int tg_backend_load_path(void);

/* supports_node, with a reason always written when it refuses. */
bool tg_backend_supports(const tg_backend *be, const tg_graph *g, int n, char *why);

#endif
