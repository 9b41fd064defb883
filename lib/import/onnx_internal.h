/* Shared by the ONNX importer's files: what each ONNX tensor name stands for
 * while the graph is built, and the op mapping table. */
#ifndef TG_ONNX_INTERNAL_H
#define TG_ONNX_INTERNAL_H

#include <stdbool.h>
#include <stdint.h>

#include "../graph.h"
#include "import/onnx.pb-c.h"   /* generated from onnx.proto by protoc-c */

/* An ONNX tensor name is, during import, one of:
 * - a value of the graph being built (runtime data);
 * - a host constant (initializers, Constant nodes, folded shape arithmetic):
 *   materialized as a graph constant only when a real op reads it;
 * - a symbolic int64 vector (rank 0 or 1): shape arithmetic such as
 *   Shape -> Gather -> Concat -> Reshape, evaluated here into tg_dim values so
 *   that dynamic dims survive into static attributes. */
typedef enum { ONNX_ENT_VALUE = 1, ONNX_ENT_CONST, ONNX_ENT_SYMS } onnx_ent_kind;

typedef struct {
    char *name;
    onnx_ent_kind kind;
    int value;                  /* VALUE, or CONST once materialized; else -1 */
    /* CONST */
    tg_dtype dtype;
    int rank;
    int64_t dims[TG_MAX_RANK];
    void *data;                 /* owned until materialized (then the graph owns a copy) */
    size_t nbytes;
    /* SYMS: rank 0 or 1, n elements */
    int nsyms;
    tg_dim *syms;
} onnx_ent;

/* The declared outputs of reductions over axes read at run time from value rt,
 * on inputs of shape xs: reductions that share both share their data symbols. */
typedef struct {
    int rt;
    tg_shape xs, kept, dropped;
    bool has_kept, has_dropped;
} onnx_rt_reduce;

/* A subgraph being imported (an If branch, a Loop body) into a graph of its
 * own, c->g while it is: the values of the graphs around that it reads
 * become its inputs (captures), as do its constants, each after its own
 * inputs; cap[] says which value of the graph around each of those takes. */
#define ONNX_CAPTURE (-2)   /* an entry of a graph around: captured when first used */
typedef struct onnx_scope {
    struct onnx_scope *up;      /* the subgraph around, or NULL: the model's graph */
    tg_graph *outer;            /* the graph around (up's, or the model's) */
    int base;                   /* ents[0, base) are the graphs around's */
    int *saved;                 /* their values in outer (ONNX_CAPTURE: not there yet) */
    int *cap;                   /* the outer value each input after the subgraph's own takes */
    int ncap, capcap;
} onnx_scope;

typedef struct onnx_ctx {
    tg_graph *g;
    int64_t opset;              /* default domain */
    const Onnx__ModelProto *model;
    onnx_ent *ents;
    int nent, cap;
    int *hash;                  /* open addressing over ents, -1 empty */
    int hash_cap;
    const char *model_dir;      /* for external data */
    const Onnx__NodeProto *node; /* the node being mapped, for names and messages */
    onnx_rt_reduce rt_reduce[TG_MAX_SYMS];
    int nrt_reduce;
    onnx_scope *scope;          /* the subgraph being imported, or NULL */
} onnx_ctx;

/* Import into subgraph sub (tg_control_subgraph of c->g, with its own inputs
 * only) from here on: c->g becomes sub. */
int onnx_scope_enter(onnx_ctx *c, onnx_scope *sc, tg_graph *sub);
/* Back to the graph around (on success or failure: rc is returned): the
 * subgraph's constants become inputs taking new constants of the graph
 * around (appended to sc->cap), and the entries get their outer values back.
 * The caller frees sc->cap. */
int onnx_scope_leave(onnx_ctx *c, int rc);

/* Lookup; NULL with tg_err when the name is unknown. */
onnx_ent *onnx_get(onnx_ctx *c, const char *name);
/* Define name as a graph value / host constant (takes data) / symbolic vector (copies). */
int onnx_def_value(onnx_ctx *c, const char *name, int value);
int onnx_def_const(onnx_ctx *c, const char *name, tg_dtype dt, int rank, const int64_t *dims,
                   void *data);
/* A graph's (or a subgraph body's) initializers as named constants; WHAT names them in errors. */
int onnx_def_initializers(onnx_ctx *c, Onnx__TensorProto *const *init, size_t n, const char *what);
int onnx_def_syms(onnx_ctx *c, const char *name, int rank, int n, const tg_dim *syms);

/* Graph value for an entry (materializing constants; a symbolic vector that is not
 * all-constant cannot be runtime data). -1 with tg_err. */
int onnx_value(onnx_ctx *c, onnx_ent *e);
/* Dims d (n of them; rank 0: one, as a scalar) as int64 data computed at run
 * time where they depend on symbols. -1 with tg_err. */
int onnx_dims_value(onnx_ctx *c, int rank, int n, const tg_dim *d);
/* Value v's dims [start, end) as an int64 vector the run fills in (the shape
 * op, onnx_ops_data.c), or with size their product as a scalar. */
int onnx_shape_data(onnx_ctx *c, int v, int64_t start, int64_t end, bool size);
/* An int64 vector entry (CONST of an integer type, or SYMS) as dims; at most max. */
int onnx_dim_list(onnx_ctx *c, const onnx_ent *e, int max, tg_dim *out, int *n);
/* A constant entry's elements as int64 / double (any numeric dtype); at most max. */
int onnx_int_list(const onnx_ent *e, int max, int64_t *out, int *n);
int onnx_scalar_f64(const onnx_ent *e, double *out);

/* ONNX TensorProto.DataType to tgraph; TG_DTYPE_NONE when unsupported. */
tg_dtype onnx_elem_dtype(int32_t t);

/* Node attributes by name; NULL when absent. */
const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name);
int64_t onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt);
double onnx_attr_float(const Onnx__NodeProto *n, const char *name, double dflt);
const char *onnx_attr_string(const Onnx__NodeProto *n, const char *name, const char *dflt);
/* Decode a TensorProto into dtype/dims/data (malloc'd); external data resolved
 * against c->model_dir. */
int onnx_tensor_decode(onnx_ctx *c, const Onnx__TensorProto *t, tg_dtype *dt, int *rank,
                       int64_t *dims, void **data, size_t *nbytes);

/* Map one node (onnx_ops.c): defines its outputs. Returns 0, -1 on error (tg_err),
 * or 1 when the op is not supported. */
int onnx_map_node(onnx_ctx *c, const Onnx__NodeProto *n);

/* Map one node of a subgraph (a Scan's body) into the graph being built,
 * folding it as the main graph's nodes are; an unsupported op is an error. */
int onnx_map_body_node(onnx_ctx *c, const Onnx__NodeProto *n);

/* Add a graph node named after the ONNX node (suffix distinguishes helpers). */
int onnx_add(onnx_ctx *c, tg_op op, const char *suffix, int nin, const int *in, int nattr,
             const tg_attr *attr);
/* A control-flow node (if, loop: ops/control.h), its outputs declared; a loop
 * that runs exactly *trips times declares them (NULL: it does not know). */
int onnx_add_control(onnx_ctx *c, tg_op op, int nin, const int *in, int nattr, const tg_attr *attr,
                     const tg_dim *trips);
/* The same for a node with run-time attributes (its inputs last), output declared. */
int onnx_add_dynamic(onnx_ctx *c, tg_op op, const char *suffix, int nin, const int *in,
                     int nattr, const tg_attr *attr, tg_dtype dt, const tg_shape *shape);

#endif
