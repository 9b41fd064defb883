/* Building control-flow nodes (ops.def: if, loop; lib/ops/control.c). */
#ifndef TG_OPS_CONTROL_H
#define TG_OPS_CONTROL_H

#include "../graph.h"

/* A new subgraph for a node of g: it starts with a copy of g's symbols, so
 * that dims using them mean the same inside. NULL (tg_err) when out of memory. */
tg_graph *tg_control_subgraph(const tg_graph *g);
/* The outputs a control node of op on inputs in[] with attributes attr[]
 * declares: *nout of them (dts, shapes; room for TG_MAX_NODE_OUTPUTS), each
 * dim what its subgraphs fix alike where they fix it in the outer graph's
 * terms, else a new data symbol of g; a loop's carried outputs as they went
 * in, its scan outputs' trip count *trips where the importer knows it (NULL:
 * a constant where a constant max_trip fixes it, else a data symbol). 0, or
 * -1 (tg_err). */
int tg_control_declare(tg_graph *g, tg_op op, int nin, const int *in, int nattr,
                       const tg_attr *attr, const tg_dim *trips, int *nout, tg_dtype *dts,
                       tg_shape *shapes);
/* tg_control_declare, then tg_graph_add_declared_node: the first output's
 * value id, or -1 (tg_err, naming the node). */
int tg_control_add(tg_graph *g, tg_op op, const char *name, int nin, const int *in, int nattr,
                   const tg_attr *attr);
/* The same for a loop that runs exactly `trips` times (a dim of g: torch's map
 * over a dynamic dim), its scan outputs' first dim; the run checks it. */
int tg_control_add_loop(tg_graph *g, const char *name, int nin, const int *in, int nattr,
                        const tg_attr *attr, tg_dim trips);

#endif
