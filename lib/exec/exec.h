/* The reference interpreter: runs a graph on concrete tensors, node by node,
 * on the CPU or on a device (lib/backend/backend.h) with the CPU running the
 * nodes the device refuses. */
#ifndef TG_EXEC_H
#define TG_EXEC_H

#include <stdbool.h>

#include "../graph.h"
#include "../tensor.h"

typedef struct tg_exec tg_exec;
struct tg_backend;

/* Prepare to run g (borrowed; must outlive the exec). Its runs use nthreads
 * threads, or for nthreads <= 0 the process-wide count (tgk_set_num_threads:
 * all cores unless the host chose); neither changes the process-wide count. */
tg_exec *tg_exec_new(const tg_graph *g, int nthreads);
/* Likewise on device dev: each node runs there when dev supports it, else on
 * the CPU (TLOG=run records where, and why dev refused). NULL (tg_err) when a
 * node runs on neither. */
tg_exec *tg_exec_new_on(const tg_graph *g, const struct tg_backend *dev, int nthreads);
void tg_exec_free(tg_exec *e);

/* Run once. inputs: g->ninput tensors in graph-input order, checked against the
 * graph (dtype, rank, shape, symbol ranges; a clear tg_err otherwise). outputs:
 * g->noutput tensors filled with newly allocated data (caller frees them). */
int tg_exec_run(tg_exec *e, const tg_tensor *inputs, tg_tensor *outputs);

/* Optional per-node timing hook: called after each node with its index and the
 * seconds it took (trun --profile). */
typedef void (*tg_exec_hook)(void *ctx, int node, double seconds);
void tg_exec_set_hook(tg_exec *e, tg_exec_hook hook, void *ctx);

#endif
