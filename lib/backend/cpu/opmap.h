/* How the ops map onto the CPU: one description shared by the interpreter's
 * glue (run_*.c) and the C emitter (emit*.c). Both dispatch by ops.def's
 * family column through tables generated from ops.def (cpu.c, emit_node.c);
 * the ops of the kernel-op families (unary, binary, reduce) run the kernel op
 * of the same name, TGK_<ID>, through the maps below, which opmap.c checks
 * against the kernels' enums at compile time. */
#ifndef TG_BACKEND_CPU_OPMAP_H
#define TG_BACKEND_CPU_OPMAP_H

#include "../../graph.h"
#include "kernels/tensor_ops.h"

/* Kernel op of each op of the unary, binary and reduce families (other ops:
 * 0, never read: the glue of a family sees only its own ops). */
extern const tgk_unary_op tg_cpu_unary_kop[TG_OP_COUNT];
extern const tgk_binary_op tg_cpu_binary_kop[TG_OP_COUNT];
extern const tgk_reduce_op tg_cpu_reduce_kop[TG_OP_COUNT];
/* "TGK_<ID>": the same kernel ops by name, for generated C. */
extern const char *const tg_cpu_kop_name[TG_OP_COUNT];

/* The kernel op and parameters of a unary node from its attributes (gelu's
 * approximate picks TGK_GELU_TANH; leaky_relu and elu read alpha, clamp min and
 * max). */
void tg_cpu_unary_desc(const tg_node *nd, tgk_unary_op *k, tgk_unary_param *p);
/* The name of k, the kernel op tg_cpu_unary_desc picked for nd. */
const char *tg_cpu_unary_name(const tg_node *nd, tgk_unary_op k);

#endif
