/* The interpreter's control-flow ops (exec_control.c). */
#ifndef TG_EXEC_CONTROL_H
#define TG_EXEC_CONTROL_H

#include "../backend/backend.h"
#include "../graph.h"
#include "../tensor.h"

/* Run control node n (if, loop) on host tensors in[] (NULL where omitted):
 * its subgraphs run in execs of their own on dev with nthreads. out: n->nout
 * tensors filled with newly allocated host data (the caller frees them; dims
 * as the run made them, for the caller to check against the declared
 * shapes). 0, or -1 (tg_err) with nothing allocated. */
int tg_exec_control(const tg_node *n, const tg_backend *dev, int nthreads,
                    const tg_tensor *const *in, tg_tensor *out);

#endif
