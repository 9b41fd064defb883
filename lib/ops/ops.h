/* The op table, generated from ops.def. */
#ifndef TG_OPS_H
#define TG_OPS_H

#include <stdbool.h>

typedef enum {
    TG_OP_NONE = 0,         /* a dead node, removed by tg_graph_compact */
#define OP(id, name, min_in, max_in, infer, family, flag) TG_OP_##id,
#include "ops.def"
#undef OP
    TG_OP_COUNT
} tg_op;

struct tg_graph;
struct tg_value_out;

/* Shape and dtype inference: given node `node` of graph g (inputs and attributes
 * set), fill the dtype and shape of g->values[node->out[0]] (and further outputs).
 * Checks attributes and input dtypes/ranks; -1 with tg_err on a problem. */
typedef int (*tg_infer_fn)(struct tg_graph *g, int node);

/* ops.def's flag column: what passes and backends may assume of an op. */
enum {
    TG_OPF_NONE = 0,
    TG_OPF_ELEMENTWISE = 1 << 0,    /* output element i from element i of each (broadcast) input */
    TG_OPF_REDUCTION = 1 << 1,      /* reduces its input over axes */
    TG_OPF_VIEW = 1 << 2,           /* the output is the input's bytes: storage can be shared */
    TG_OPF_STRIDED = 1 << 3,        /* the output is a strided view of the input */
    TG_OPF_DATA = 1 << 4,           /* the output's shape depends on the inputs' values */
    TG_OPF_CONTROL = 1 << 5,        /* runs subgraphs; outputs declared (ops/control.c) */
};

typedef struct {
    const char *name;
    int min_in, max_in;     /* max_in -1: variadic */
    tg_infer_fn infer;
    const char *family;     /* ops.def's family: which glue of a backend runs it */
    unsigned flags;         /* TG_OPF_ */
} tg_op_info;

extern const tg_op_info tg_op_table[TG_OP_COUNT];

const char *tg_op_name(tg_op op);
tg_op tg_op_from_name(const char *name);     /* TG_OP_NONE if unknown */
bool tg_op_is_elementwise(tg_op op);
bool tg_op_is_view(tg_op op);        /* reshape, identity: memory planning aliases them */
bool tg_op_is_data(tg_op op);        /* nonzero, nms: the run sets a dim of the output */
/* if, loop: nodes that run subgraphs (attributes of kind graph) and declare
 * their outputs (ops/control.c). */
bool tg_op_is_control(tg_op op);

#define OP(id, name, min_in, max_in, infer, family, flag) int infer(struct tg_graph *g, int node);
#include "ops.def"
#undef OP

#endif
