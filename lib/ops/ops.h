/* The op table, generated from ops.def. */
#ifndef TG_OPS_H
#define TG_OPS_H

typedef enum {
    TG_OP_NONE = 0,         /* a dead node, removed by tg_graph_compact */
#define OP(id, name, min_in, max_in, infer) TG_OP_##id,
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

typedef struct {
    const char *name;
    int min_in, max_in;     /* max_in -1: variadic */
    tg_infer_fn infer;
} tg_op_info;

extern const tg_op_info tg_op_table[TG_OP_COUNT];

const char *tg_op_name(tg_op op);
tg_op tg_op_from_name(const char *name);     /* TG_OP_NONE if unknown */

#define OP(id, name, min_in, max_in, infer) int infer(struct tg_graph *g, int node);
#include "ops.def"
#undef OP

#endif
