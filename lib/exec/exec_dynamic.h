/* The interpreter's part of run-time shapes (exec_dynamic.c). */
#ifndef TG_EXEC_DYNAMIC_H
#define TG_EXEC_DYNAMIC_H

#include <stdbool.h>
#include <stdint.h>

#include "../graph.h"
#include "../tensor.h"

/* Whether node n has run-time attributes or touches a value whose shape uses a
 * data symbol: then its output shape is only known when it runs. */
bool tg_exec_node_is_dynamic(const tg_graph *g, const tg_node *n);
/* A new one-node graph: n on inputs of in's dtypes and concrete shapes (its own
 * inputs only), each run-time attribute replaced by its input's data, its output
 * inferred. NULL with tg_err (a bad attribute value, say). */
tg_graph *tg_exec_concrete_node(const tg_graph *g, const tg_node *n, const tg_tensor *const *in);
/* Concrete dims of value v at run time: bind the unbound data symbols that are
 * whole dims of v's declared shape (within their ranges), then check every dim.
 * 0, or -1 with tg_err. */
int tg_exec_bind_output(const tg_graph *g, const tg_value *v, const int64_t *dims, int64_t *sym,
                        bool *bound);

#endif
