/* The tgraph IR: a graph of values (typed tensors with symbolic shapes) and nodes
 * (one op applied to input values, producing output values).
 *
 * Invariants kept by every function here and checked by tg_graph_validate:
 * - nodes are in topological order: a node reads only graph inputs, constants and
 *   outputs of earlier nodes;
 * - every value has exactly one origin: a graph input, a constant (weights), or one
 *   node output;
 * - value and node names are unique.
 * Building a node checks its inputs and infers its outputs' dtype and shape through
 * the op's entry in the op table (ops/ops.def); nothing computes. */
#ifndef TG_GRAPH_H
#define TG_GRAPH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "sym.h"
#include "ops/ops.h"

#define TG_MAX_RANK 8

typedef struct {
    int rank;
    tg_dim d[TG_MAX_RANK];
} tg_shape;

typedef enum {
    TG_VALUE_NODE = 0,      /* output of a node */
    TG_VALUE_INPUT,         /* graph input, supplied at run time */
    TG_VALUE_CONST,         /* weights, buffers, constants: data below */
} tg_value_kind;

typedef struct {
    char *name;
    tg_value_kind kind;
    tg_dtype dtype;
    tg_shape shape;
    int producer;           /* node index for TG_VALUE_NODE, else -1 */
    void *data;             /* TG_VALUE_CONST: owned, contiguous, row-major */
    size_t nbytes;
} tg_value;

typedef enum {
    TG_ATTR_INT = 1, TG_ATTR_FLOAT, TG_ATTR_STRING, TG_ATTR_INTS, TG_ATTR_FLOATS,
    TG_ATTR_DIMS, TG_ATTR_DTYPE,
    TG_ATTR_INPUT,          /* a run-time attribute: the value of one of the node's inputs */
    TG_ATTR_GRAPH,          /* a subgraph (control flow: if, loop), owned by the attribute */
} tg_attr_kind;

/* How deep subgraphs nest at most (a graph's own nodes are depth 0). */
#define TG_MAX_GRAPH_DEPTH 16
/* Outputs of one node at most (only control-flow nodes have more than one). */
#define TG_MAX_NODE_OUTPUTS 64

typedef struct {
    char *name;
    tg_attr_kind kind;
    int n;                  /* element count for INTS, FLOATS, DIMS; for INPUT, the
                               kind (INT, INTS, FLOAT, DIMS) the input's data becomes */
    union {
        int64_t i;          /* INT, DTYPE (a tg_dtype), INPUT (the node input's index) */
        double f;
        char *s;
        int64_t *ints;
        double *floats;
        tg_dim *dims;
        struct tg_graph *g; /* GRAPH */
    } u;
} tg_attr;

typedef struct {
    tg_op op;
    char *name;
    int nin;
    int *in;                /* value ids; -1 for an omitted optional input */
    int nout;
    int *out;               /* value ids */
    int nattr;
    tg_attr *attr;
    char *source;           /* user's source location ("model.py:42"), or NULL */
} tg_node;

typedef struct tg_graph {
    int nsym;
    tg_symbol sym[TG_MAX_SYMS];
    int nvalue, value_cap;
    tg_value *values;
    int nnode, node_cap;
    tg_node *nodes;
    int ninput;
    int *inputs;            /* value ids, in call order */
    int noutput;
    int *outputs;           /* value ids, in result order */
    struct tg_graph_names *names;   /* private: name index (graph_names.c) */
} tg_graph;

tg_graph *tg_graph_new(void);
void tg_graph_free(tg_graph *g);

/* Returns the symbol index, or -1 (tg_err). */
int tg_graph_add_symbol(tg_graph *g, const char *name, int64_t min, int64_t max);
/* A data symbol: a dimension that a node with run-time attributes makes, bound
 * by the interpreter when that node runs. A fresh name "_d<k>". */
int tg_graph_add_data_symbol(tg_graph *g, int64_t min, int64_t max);
/* Whether shape s uses a data symbol. */
bool tg_shape_uses_data(const tg_graph *g, const tg_shape *s);
int tg_graph_find_symbol(const tg_graph *g, const char *name);
/* Return the new value id, or -1 (tg_err). */
int tg_graph_add_input(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape);
/* Takes ownership of data (malloc'd, nbytes must match dtype and constant shape);
 * on failure data is freed too. */
int tg_graph_add_const(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape,
                       void *data, size_t nbytes);
/* The same with a copy of data (numel * dtype size bytes); the caller keeps data. */
int tg_graph_add_const_copy(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape,
                            const void *data);
/* A rank-0 constant holding v converted to dt (as tg_store_f64). */
int tg_graph_add_scalar(tg_graph *g, const char *name, tg_dtype dt, double v);
int tg_graph_add_output(tg_graph *g, int value);
/* Index by name, or -1. Names are indexed: change a value's name only with
 * tg_graph_rename_value (a direct write may leave lookups of the new name failing). */
int tg_graph_find_value(const tg_graph *g, const char *name);
int tg_graph_find_node(const tg_graph *g, const char *name);
/* Give value v a new name (copied), which must be unused. 0 or -1 (tg_err). */
int tg_graph_rename_value(tg_graph *g, int v, const char *name);

/* Add a node: checks inputs and attributes, infers outputs. in[i] may be -1 for an
 * omitted optional input. Attributes are copied. name may be NULL (one is made up);
 * outputs are named after the node. Returns the first output's value id, or -1
 * (tg_err, naming the node). */
int tg_graph_add_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                      int nattr, const tg_attr *attr);
/* Add a node with run-time attributes (kind TG_ATTR_INPUT, see tgraph-format(5)),
 * or of an op whose output's shape depends on the data (tg_op_is_data): nin counts
 * the op's own inputs followed by one input per run-time attribute, in the
 * attributes' order. Its output's dtype and shape are declared, not inferred:
 * constants and data symbols that the interpreter checks and binds when the node
 * runs. Returns the output's value id, or -1 (tg_err, naming the node). */
int tg_graph_add_dynamic_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                              int nattr, const tg_attr *attr, tg_dtype dt,
                              const tg_shape *shape);
/* Add a node whose nout outputs are declared (dts, shapes), not inferred: the
 * control-flow ops (if, loop), whose inference checks the declaration against
 * their subgraphs (ops/control.c; tg_control_declare makes one). Returns the
 * first output's value id, or -1 (tg_err, naming the node). */
int tg_graph_add_declared_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                               int nattr, const tg_attr *attr, int nout, const tg_dtype *dts,
                               const tg_shape *shapes);
/* The number of a node's run-time attributes; its op's own inputs are the first
 * nin minus that many. */
int tg_node_runtime_attrs(const tg_node *n);
/* Whether the node's output is declared (run-time attributes, or a data op),
 * so that re-inference does not apply: it is checked when the node runs. */
bool tg_node_declared(const tg_node *n);
/* A run-time attribute: input i of the node, read as an attribute of kind as. */
tg_attr tg_attr_input(const char *name, int i, tg_attr_kind as);

/* Source location for the node that produced value v (copied). */
void tg_graph_set_source(tg_graph *g, int v, const char *source);

/* Attribute constructors for tg_graph_add_node (they borrow; add_node copies). */
tg_attr tg_attr_int(const char *name, int64_t v);
tg_attr tg_attr_float(const char *name, double v);
tg_attr tg_attr_string(const char *name, const char *s);
tg_attr tg_attr_ints(const char *name, int n, const int64_t *v);
tg_attr tg_attr_floats(const char *name, int n, const double *v);
tg_attr tg_attr_dims(const char *name, int n, const tg_dim *v);
tg_attr tg_attr_dtype(const char *name, tg_dtype t);
/* A subgraph attribute; add_node copies (clones) g, the caller keeps it. */
tg_attr tg_attr_graph(const char *name, const tg_graph *g);

/* Attribute lookup on a node; the default when absent. */
const tg_attr *tg_node_attr(const tg_node *n, const char *name);
int64_t tg_node_int(const tg_node *n, const char *name, int64_t dflt);
double tg_node_float(const tg_node *n, const char *name, double dflt);
const char *tg_node_string(const tg_node *n, const char *name, const char *dflt);
/* Returns the count and sets *v, or -1 when absent. */
int tg_node_ints(const tg_node *n, const char *name, const int64_t **v);
int tg_node_floats(const tg_node *n, const char *name, const double **v);
int tg_node_dims(const tg_node *n, const char *name, const tg_dim **v);
/* A subgraph attribute, or NULL when absent or of another kind. */
const tg_graph *tg_node_graph(const tg_node *n, const char *name);

/* The value of input i of node n, or NULL when omitted / out of range. */
const tg_value *tg_node_input(const tg_graph *g, const tg_node *n, int i);

/* Shapes. */
tg_shape tg_shape_of(int rank, const int64_t *dims);   /* all-constant shape */
bool tg_shape_eq(const tg_shape *a, const tg_shape *b);
bool tg_shape_is_const(const tg_shape *s, int64_t *dims /* may be NULL */);
/* Element count as an expression; -1 (tg_err) on overflow. */
int tg_shape_numel(const tg_shape *s, tg_dim *out);
/* "[s0, 64, 2*s0]" */
int tg_shape_format(const tg_shape *s, const tg_symbol *syms, char *buf, size_t n);
/* Concrete dims for symbol values; -1 (tg_err) on overflow or negative. */
int tg_shape_eval(const tg_shape *s, const int64_t *symvals, int64_t *dims);

/* Editing, for passes. Replace every use of value `from` (node inputs and graph
 * outputs) by value `to`, except in the node that produces `to` (so a node just
 * inserted after `from` keeps reading it). */
void tg_graph_replace_uses(tg_graph *g, int from, int to);
/* Mark node i dead; tg_graph_compact drops dead nodes, values nothing refers to
 * (except graph inputs), renumbers, and puts the nodes back in topological order
 * (keeping the current order where it is valid), so passes may append nodes and
 * rewire earlier ones. -1 (tg_err, graph unchanged) when a live node or a graph
 * output still reads a dead node's output, or on a cycle. */
void tg_graph_kill_node(tg_graph *g, int i);
/* Node ni is replaced by value y: y takes the name of ni's output (so graph
 * outputs keep theirs; the old one gets `suffix` appended), every use moves
 * to y, ni dies. 0 or -1 (tg_err). */
int tg_graph_replace_node(tg_graph *g, int ni, int y, const char *suffix);
int tg_graph_compact(tg_graph *g);
/* Constant v becomes an input of g, appended to its inputs (making a subgraph
 * whose constants are its node's inputs); its data goes to the caller (*data,
 * *nbytes). 0, or -1 (tg_err) when v is not a constant. */
int tg_graph_const_to_input(tg_graph *g, int v, void **data, size_t *nbytes);
/* Number of uses of each value (node inputs + graph outputs); caller frees. */
int *tg_graph_use_counts(const tg_graph *g);
/* Deep copy. */
tg_graph *tg_graph_clone(const tg_graph *g);

/* Check every invariant and every node's inference again; report every problem
 * (one line each, with the node name) in the tg_err message. 0 or -1. */
int tg_graph_validate(const tg_graph *g);
/* -1 (tg_err naming the node, the attribute and tool) when a node has a run-time
 * attribute, or is a data op (tg_op_is_data) and the tool takes none (data_ops
 * false): only the interpreter runs those; 0 otherwise. */
int tg_graph_check_static(const tg_graph *g, const char *tool, bool data_ops);

/* Where symbol s is read from at run time: the dim `axis` of input `input`
 * (an index into g->inputs) that is coef*s + off, the smallest coef; -1
 * (tg_err) when no input dim is s alone. */
int tg_graph_symbol_source(const tg_graph *g, int s, int *input, int *axis, int64_t *coef,
                           int64_t *off);

#endif
