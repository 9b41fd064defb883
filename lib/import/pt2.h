/* Internal to the .pt2 importer: the conversion context shared by pt2.c
 * (archive, weights, symbols, the driver) and the operator tables
 * (pt2_ops*.c), plus the helpers the operator handlers are written with. */
#ifndef TG_IMPORT_PT2_H
#define TG_IMPORT_PT2_H

#include <stdbool.h>
#include <stdint.h>

#include <cjson/cJSON.h>

#include "graph.h"

/* What a name in the exported program stands for. */
typedef enum {
    PT2_TENSOR = 1,     /* a graph value */
    PT2_SYMINT,         /* a symbolic integer (sym_size, _operator.*) */
    PT2_GONE,           /* not computed: an output texport drops, or a failed node's */
} pt2_kind;

/* How a tensor is a view of another, for in-place writes through it:
 * x[start:end:step] along axis (a select drops the axis), or the same
 * elements reshaped; OTHER views cannot be written through. */
typedef struct {
    enum { PT2_V_NONE, PT2_V_SLICE, PT2_V_SELECT, PT2_V_RESHAPE, PT2_V_OTHER } kind;
    int axis;
    tg_dim start, end;
    int64_t step;
} pt2_view;

typedef struct {
    char *name;
    pt2_kind kind;
    int v;              /* PT2_TENSOR: value id */
    tg_dim dim;         /* PT2_SYMINT */
    bool failed;        /* PT2_GONE: its node failed (already reported) */
    pt2_view view;      /* PT2_TENSOR: a view of names[base], or kind NONE */
    int base;
} pt2_name;

/* The names of one torch graph: the program's, or a nested graph's (each
 * has its own namespace; pt2_flow.c). */
typedef struct {
    pt2_name *names;
    int nnames, names_cap;
    int *hash;                  /* open addressing over names, -1 empty */
    int hash_cap;
} pt2_scope;

typedef struct pt2_ctx {
    tg_graph *g;                /* the graph being built: the program's or a subgraph */
    char *tsym[TG_MAX_SYMS];    /* torch's name of each graph symbol ("s77") */
    pt2_scope sc;
    const char *prefix;         /* put before the names of the nodes built, or NULL */
    const cJSON *graph;         /* the torch graph being converted */
    int depth;                  /* how deep the nested graph being converted is */
    /* the node being converted */
    const cJSON *node;
    const char *out0;           /* name of its first output */
    const char *source;         /* "file.py:12", or NULL */
    int nemit;                  /* nodes it emitted so far */
} pt2_ctx;

/* A Python scalar argument. */
typedef struct {
    enum { PT2_S_BOOL = 1, PT2_S_INT, PT2_S_FLOAT } kind;
    int64_t i;
    double f;
} pt2_scalar;

/* An operator handler: convert c->node, bind its outputs; 0, or -1 with
 * tg_err saying why it cannot. */
typedef int (*pt2_handler)(pt2_ctx *c, const cJSON *node);

typedef struct {
    const char *op;             /* aten name without namespace: "add" */
    const char *overloads;      /* space-separated: "Tensor Scalar"; "default" */
    pt2_handler fn;
} pt2_op_entry;

/* After each node (pt2_ops_shape.c): record the view a view operator made,
 * and carry an in-place operator's result back into the tensors its input
 * is a view of. */
int pt2_note_view(pt2_ctx *c, const cJSON *node);
int pt2_write_back(pt2_ctx *c, const cJSON *node);

/* Each operator family's table ends with a NULL op. */
extern const pt2_op_entry pt2_ops_tensor[];
extern const pt2_op_entry pt2_ops_nn[];
extern const pt2_op_entry pt2_ops_shape[];
extern const pt2_op_entry pt2_ops_flow[];   /* higher-order ops (pt2_flow.c): "cond" */

/* The member name of j in its object, "" when none (j in an array). */
static inline const char *pt2_key(const cJSON *j) { return j && j->string ? j->string : ""; }

/* ---- names (pt2.c) ---- */
const pt2_name *pt2_lookup(const pt2_ctx *c, const char *name);
int pt2_bind_tensor(pt2_ctx *c, const char *name, int v);
int pt2_bind_dim(pt2_ctx *c, const char *name, tg_dim d);
/* Name of output i of a node (flattening a tensor list), NULL past the end. */
const char *pt2_out_name(const cJSON *node, int i);
int pt2_out_count(const cJSON *node);
/* Bind output i of the current node. */
int pt2_set_out(pt2_ctx *c, int i, int v);
/* An empty namespace for a nested graph's names, the current one kept in
 * *saved; pt2_scope_leave frees the nested names and restores *saved. */
void pt2_scope_enter(pt2_ctx *c, pt2_scope *saved);
void pt2_scope_leave(pt2_ctx *c, pt2_scope *saved);
/* Convert the nodes of torch graph `graph` (its tensor_values give the shapes
 * checked) into c->g, reporting every node that fails; 0 or -1. */
int pt2_convert_nodes(pt2_ctx *c, const cJSON *graph);
/* Drop the nodes whose results nothing uses, and the constants only they used. */
int pt2_drop_dead(tg_graph *g);

/* ScalarType number of the serialized schema -> dtype; NONE if unsupported. */
tg_dtype pt2_dtype(int64_t st);
/* A TensorMeta size ({"as_int"} or {"as_expr": {"expr_str"}}) as a dim. */
int pt2_parse_size(const pt2_ctx *c, const cJSON *size, tg_dim *out);

/* ---- weights (pt2_weights.c) ----
 * Parameters, buffers and constants: data/weights and data/constants hold
 * whole untyped storages; a config maps each FQN to one (several FQNs may
 * share it) with the tensor's view: dtype, sizes, strides, storage offset. */
struct tg_zip;
typedef struct pt2_weights pt2_weights;
pt2_weights *pt2_weights_open(struct tg_zip *z, const char *prefix, const char *model);
void pt2_weights_close(pt2_weights *w);
/* The constant for FQN (named after it), added on first use; FQNs that are
 * the same view of the same storage (tied weights) give one constant. */
int pt2_weight(pt2_weights *w, tg_graph *g, const char *fqn);

/* ---- arguments (pt2_args.c) ----
 * By schema name; positional and keyword arguments both carry it. Omitted
 * arguments take the default given. -1 with tg_err when present but of the
 * wrong kind. */
const cJSON *pt2_arg(const cJSON *node, const char *name);      /* the {as_*: } or NULL */
bool pt2_arg_none(const cJSON *node, const char *name);         /* absent or None */
int pt2_tensor(pt2_ctx *c, const cJSON *node, const char *name, int *v);
int pt2_opt_tensor(pt2_ctx *c, const cJSON *node, const char *name, int *v); /* -1 if none */
int pt2_tensors(pt2_ctx *c, const cJSON *node, const char *name, int *v, int max, int *n);
int pt2_int(pt2_ctx *c, const cJSON *node, const char *name, int64_t dflt, int64_t *out);
int pt2_float(pt2_ctx *c, const cJSON *node, const char *name, double dflt, double *out);
int pt2_bool(const cJSON *node, const char *name, bool dflt, bool *out);
int pt2_scalar_arg(pt2_ctx *c, const cJSON *node, const char *name, pt2_scalar *out);
/* An int list (a single int is a list of one); returns the count or -1. */
int pt2_ints(pt2_ctx *c, const cJSON *node, const char *name, int64_t *out, int max);
/* A SymInt or SymInt[] as dims; returns the count or -1. */
int pt2_dims(pt2_ctx *c, const cJSON *node, const char *name, tg_dim *out, int max);
int pt2_dim(pt2_ctx *c, const cJSON *node, const char *name, tg_dim dflt, tg_dim *out);
/* A float list (a single float is a list of one); returns the count, 0 when
 * absent or None, or -1. */
int pt2_floats(const cJSON *node, const char *name, double *out, int max);
int pt2_dtype_arg(const cJSON *node, const char *name, tg_dtype dflt, tg_dtype *out);
/* A string argument, or dflt. */
const char *pt2_string(const cJSON *node, const char *name, const char *dflt);
/* A JSON number or one of "Infinity", "-Infinity", "NaN". */
int pt2_json_float(const cJSON *j, double *out);
int pt2_json_int(const cJSON *j, int64_t *out);

/* ---- building (pt2_build.c) ---- */
/* The aten operator's name without namespace, overload or in-place '_'
 * ("torch.ops.aten.add_.Tensor" -> "add"), for handlers shared by several. */
void pt2_op_name(const cJSON *node, char *buf, size_t n);
static inline const tg_value *pt2_val(const pt2_ctx *c, int v) { return &c->g->values[v]; }
static inline int pt2_rank(const pt2_ctx *c, int v) { return c->g->values[v].shape.rank; }
static inline tg_dtype pt2_dt(const pt2_ctx *c, int v) { return c->g->values[v].dtype; }
/* Add a node for the current torch node. final: it produces output 0 (named
 * after it); otherwise an intermediate "<out0>/<op>". */
int pt2_emit(pt2_ctx *c, bool final, tg_op op, int nin, const int *in, int nattr,
             const tg_attr *attr);
/* The same, named after output `out` of the node (multi-output ops). */
int pt2_emit_named(pt2_ctx *c, const char *name, tg_op op, int nin, const int *in, int nattr,
                   const tg_attr *attr);
int pt2_unary(pt2_ctx *c, bool final, tg_op op, int x);
int pt2_binary(pt2_ctx *c, bool final, tg_op op, int a, int b);
int pt2_cast(pt2_ctx *c, bool final, int v, tg_dtype dt);
/* A rank-0 constant of dtype dt. */
int pt2_const(pt2_ctx *c, pt2_scalar s, tg_dtype dt);
/* A constant of shape s (constant dims) holding data (malloc'd, taken over). */
int pt2_const_tensor(pt2_ctx *c, tg_dtype dt, const tg_shape *s, void *data, size_t nbytes);
/* Normalize axis to [0, rank); -1 with tg_err when out of range. */
int pt2_axis(int64_t axis, int rank, int *out);
int pt2_reshape(pt2_ctx *c, bool final, int x, int rank, const tg_dim *shape);
int pt2_permute(pt2_ctx *c, bool final, int x, const int64_t *perm);
/* x[start:end:step] along axis; start/end already normalized to >= 0. */
int pt2_slice(pt2_ctx *c, const char *name, int x, int axis, tg_dim start, tg_dim end,
              int64_t step);

/* Type promotion as torch.result_type: tensors of rank > 0 over rank-0 tensors
 * over Python scalars, by category bool < int < float. */
typedef struct {
    int n;
    tg_dtype dim_t, zero_t, scalar_t;
} pt2_promo;
void pt2_promo_tensor(pt2_promo *p, tg_dtype dt, int rank);
void pt2_promo_scalar(pt2_promo *p, const pt2_scalar *s);
tg_dtype pt2_promo_result(const pt2_promo *p);
/* An operand that is a tensor or a scalar argument, cast to dt. */
int pt2_operand(pt2_ctx *c, const cJSON *node, const char *name, tg_dtype dt, int *v);

#endif
