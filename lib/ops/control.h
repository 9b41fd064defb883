/* Building control-flow nodes (ops.def: if, loop; lib/ops/control.c). */
#ifndef TG_OPS_CONTROL_H
#define TG_OPS_CONTROL_H

#include "../graph.h"

/* The outputs a control node of op on inputs in[] with attributes attr[]
 * declares: *nout of them (dts, shapes; room for TG_MAX_NODE_OUTPUTS), each
 * dim what its subgraphs fix alike where they fix it in the outer graph's
 * terms, else a new data symbol of g; a loop's carried outputs as they went
 * in, its scan outputs' trip count a constant only where the import can know
 * it. 0, or -1 (tg_err). */
int tg_control_declare(tg_graph *g, tg_op op, int nin, const int *in, int nattr,
                       const tg_attr *attr, int *nout, tg_dtype *dts, tg_shape *shapes);
/* tg_control_declare, then tg_graph_add_declared_node: the first output's
 * value id, or -1 (tg_err, naming the node). */
int tg_control_add(tg_graph *g, tg_op op, const char *name, int nin, const int *in, int nattr,
                   const tg_attr *attr);

#endif
