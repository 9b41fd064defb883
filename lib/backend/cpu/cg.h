/* Internal state of the C emitter, shared by its files (emit.c: the file and
 * the ABI tables; emit_node.c: one kernel call per node; emit_loop.c: fused
 * loops; emit_hot.c: the functions the thread pool runs). */
#ifndef TG_CG_H
#define TG_CG_H

#include <stdbool.h>
#include <stdio.h>

#include "cpu.h"
#include "../../ops/family.h"

/* The file's hot functions (fused loops, specialized pools: what
 * tgk_parallel_for runs over a model's elements), shared by a graph and its
 * subgraphs: written apart from the plan (the build compiles them at -O3, the
 * plan at -O1), each distinct body once, under the name of its first. */
typedef struct {
    FILE *f;                /* their definitions */
    int n, cap;
    char **name, **body;
} cg_hot;

typedef struct {
    const tg_graph *g;
    const tg_plan *p;
    const tg_weights *w;
    FILE *f;                /* the plan function's body being written */
    FILE *fns;              /* subgraphs' model tables it names, written before it */
    cg_hot *hot;            /* the whole file's hot functions */
    int ndim, dim_cap;      /* dim expressions evaluated once per run into D[] */
    tg_dim *dims;
    bool *used;             /* per value: its pointer variable is referenced */
    int nstr, str_cap;      /* strings made while emitting, freed at the end */
    char **strs;
    bool *dyn;              /* per value: its shape is set as the graph runs */
    bool *free_sym;         /* per symbol: no input gives it (a data symbol) */
    int *nsub;              /* subgraph models emitted so far, the whole file's count */
    const char *pre;        /* the prefix of this graph's names in the file ("sg2_") */
} tg_cg;

/* Whether dim d uses a symbol that no input gives (c->free_sym). */
bool cg_dim_run_set(const tg_cg *c, tg_dim d);
/* Graph c->g on plan c->p (c->w its weights, c->nsub the file's count) as a
 * model table pre##MODEL and the functions it names, written to f; how: the
 * weights (NULL: a subgraph's, which has none). Frees what it made in c. */
int cg_emit_graph(tg_cg *c, const char *pre, const tg_codegen_weights *how, FILE *f);

/* A string that lives until the emitter is done (printf-style). */
const char *cg_str(tg_cg *c, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Index of d in D[] (added when new); -1 (tg_err) when out of memory. */
int cg_dim_index(tg_cg *c, tg_dim d);
/* A C expression for a dim: a literal when constant, else "D[k]". */
const char *cg_dim(tg_cg *c, tg_dim d);
/* Product of dims [from, to) of s as a C expression. */
const char *cg_prod(tg_cg *c, const tg_shape *s, int from, int to);
/* Element count and byte size of a value. */
const char *cg_numel(tg_cg *c, int v);
const char *cg_bytes(tg_cg *c, int v);
/* The pointer variable of a value ("v12"), marked used. */
const char *cg_ptr(tg_cg *c, int v);
/* Declare `const int64_t name[] = {dims of s};` (one 1 for rank 0). */
void cg_dims_array(tg_cg *c, const char *name, const tg_shape *s);
/* "TGK_F32" from prefix "TGK_" and f32. */
const char *cg_dtype_enum(tg_cg *c, const char *prefix, tg_dtype t);
/* C literals that read back exactly: cg_float as a float constant (v
 * rounded to float, suffix f: "6.0f", "1e-05f"), cg_double as a double
 * ("6.0"); NAN, INFINITY or -INFINITY where v is not finite. */
const char *cg_float(tg_cg *c, double v);
const char *cg_double(tg_cg *c, double v);
/* A C string literal for s, quotes included. */
const char *cg_quote(tg_cg *c, const char *s);
/* Axis attribute `name` of nd normalized to [0, rank) into *ax; -1 (tg_err,
 * naming the node) when it is not an int or out of range. */
int cg_axis(const tg_node *nd, const char *name, int64_t dflt, int rank, int *ax);

/* The data symbol that data op nd's run binds (a dim of its output), else -1. */
int cg_data_symbol(const tg_cg *c, const tg_node *nd);
/* After data op nd's kernel: its symbol = the C expression count, checked
 * against its range, and the dims that use it again (plan_dims), none
 * negative; else the run fails naming the node. */
int cg_data_bind(tg_cg *c, const tg_node *nd, const char *count);
/* One node as kernel calls into c->f; -1 (tg_err) when the CPU code generator
 * cannot compile it. */
int cg_emit_node(tg_cg *c, int n);
/* One entry per family of ops.def (cg_node_<family>: emit_node.c, qops in
 * emit_qops.c, sparse in emit_sparse.c, a family of one op in its kernel's
 * file, as kernels/cumsum.c), found through emit_node.c's table
 * generated from it; an entry of several ops switches on nd->op, and states
 * how many it handles (TG_FAMILY_HANDLES, family.h). Writes the node's
 * kernel calls into c->f; -1 (tg_err) when it cannot. */
#define OP(id, name, min_in, max_in, infer, family, flag) \
    int cg_node_##family(tg_cg *c, const tg_node *nd);
#include "../../ops/ops.def"
#undef OP
/* A hot function of tgk_parallel_for's type, `void NAME(void *ctx, int64_t r0,
 * int64_t r1)`, its body (from its opening brace) in body: the name to call
 * it by, NAME or that of an earlier function with the same body (emit_hot.c);
 * NULL (tg_err) when out of memory. */
const char *cg_hot_add(tg_cg *c, const char *name, const char *body);
/* The prototypes of hot's functions, for the plan's side of the file. */
void cg_hot_protos(const cg_hot *hot, FILE *f);
void cg_hot_free(cg_hot *hot);
/* A fused loop group (TG_GROUP_LOOP) with root node `root`: a hot function
 * and its call into c->f. */
int cg_emit_loop(tg_cg *c, int root);
/* A VIEW group: one strided copy of the chain's input. */
int cg_emit_view(tg_cg *c, int root);
/* A max or avg pool as a hot function specialized for its geometry: 0, 1 when it
 * cannot be (the caller then calls the kernel), -1 (tg_err). */
int cg_emit_pool(tg_cg *c, int n);
/* An epilogue group: its anchor's kernel, then its activations as a loop over
 * the result, in place. */
int cg_emit_epilogue(tg_cg *c, int root);
/* What a conv's (or conv_nhwc's) kernel applies itself, no loop of its own:
 * a relu as it stores (tgk_conv_desc.relu) and/or a max pool of pool x pool
 * windows (.pool; 0: none; conv only), or one other activation (.act: the
 * NAME of tgk_vec_NAME_f32), or the add of a residual (.res: the value; else
 * -1). anchor: the conv node. */
typedef struct {
    bool relu;
    int64_t pool;
    const char *act;
    int res, anchor;
} cg_conv_ep;
/* Whether group `root` is a conv or conv_nhwc whose kernel applies all of its
 * epilogue. */
bool cg_conv_epilogue(const tg_cg *c, int root, cg_conv_ep *ep);
/* Likewise a linear_packed's epilogue, which its kernel applies to each
 * block of its result as it is computed: one activation (*act: the NAME of
 * tgk_vec_NAME_f32) or the add of a residual (*res: the value; else -1). */
bool cg_linear_epilogue(const tg_cg *c, int root, const char **act, int *res);

#endif
