/* How the ops map onto the CPU: one description shared by the interpreter's
 * glue (run_*.c) and the C emitter (emit*.c). Both dispatch by ops.def's
 * family column through tables generated from ops.def (cpu.c, emit_node.c);
 * the ops of the kernel-op families (unary, binary, reduce) run the kernel op
 * of the same name, TGK_<ID>, through the maps below, which opmap.c checks
 * against the kernels' enums at compile time. */
#ifndef TG_BACKEND_CPU_OPMAP_H
#define TG_BACKEND_CPU_OPMAP_H

#include "../../graph.h"
#include "../../ops/family.h"
#include "kernels/kernels.h"
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

/* The ops with a descriptor kernel, as its descriptor (opdesc.c): the node's
 * attributes read and checked once, everything but the sizes, which the
 * interpreter's glue fills in concrete (tg_run_*_desc, run.h, shared with the
 * CUDA glue) and the C emitter as expressions of the symbols (emit_node.c).
 * 0 or -1 (tg_err). */
/* conv: groups, transposed, stride, padding, dilation. */
int tg_cpu_conv_desc(const tg_node *n, int nsp, tgk_conv_desc *d);
/* conv_nhwc: k, groups, kernel, stride, padding, dilation. */
int tg_cpu_conv_nhwc_desc(const tg_node *n, tgk_conv_nhwc_desc *d);
/* max_pool, avg_pool: the window (stride defaulting to the kernel),
 * count_include_pad and channels_last; adaptive_avg_pool has no window. */
int tg_cpu_pool_desc(const tg_node *n, int nsp, tgk_pool_desc *d);
/* layer_norm, group_norm, batch_norm (their kernels take these as arguments). */
typedef struct {
    float eps;
    int axis;               /* layer_norm: normalized over [axis, rank) */
    int64_t groups;         /* group_norm */
} tg_cpu_norm;
int tg_cpu_norm_desc(const tg_node *n, int rank, tg_cpu_norm *d);
/* sdpa: causal and scale (0: 1/sqrt(E), which the caller resolves from E);
 * no mask. */
void tg_cpu_sdpa_desc(const tg_node *n, tgk_sdpa_desc *d);
/* resize: mode, coordinates, rounding, scales, cubic a (sizes and plane count
 * left alone). */
int tg_cpu_resize_desc(const tg_node *n, int nsp, tgk_resize_desc *d);

/* The families whose kernels take plain arguments: the attributes checked
 * against the input's rank and normalized, as those arguments. */
/* permute, expand, slice, concat, pad, tile, tril, triu. */
typedef struct {
    int axis;                       /* slice, concat */
    tg_dim start;                   /* slice (the emitter writes it in the symbols) */
    int64_t step;                   /* slice */
    int64_t v[2 * TG_MAX_RANK];     /* permute: perm (negatives resolved); tile: repeats;
                                     * pad: the rank pads before, then the rank after */
    double value;                   /* pad: the constant */
    int mode;                       /* pad: tg_pad_mode (0 constant, else tgk_pad_mode's) */
    int64_t k;                      /* tril, triu: the diagonal */
} tg_cpu_movement;
int tg_cpu_movement_desc(const tg_node *n, int rank, tg_cpu_movement *d);
/* index_select, index_copy, gather: the axis, normalized, and index_copy's
 * reduce (tg_index_reduce_mode: 0 none, else tgk_index_reduce's mode). */
typedef struct {
    int axis, reduce;
} tg_cpu_index;
int tg_cpu_index_desc(const tg_node *n, int rank, tg_cpu_index *d);
/* full's value, arange's start and step. */
typedef struct {
    double value;
    int64_t start, step;
} tg_cpu_gen;
void tg_cpu_gen_desc(const tg_node *n, tg_cpu_gen *d);
/* quantize, dequantize: per tensor (nch 1) or per channel along axis; the
 * scale and zero point of channel i by tg_cpu_quant_scale and _zero (no
 * attribute: 1 and 0). */
typedef struct {
    bool per_axis;                  /* scale is a list (axis read) */
    int axis;
    int64_t nch;
    const tg_attr *scale, *zero;
} tg_cpu_quant;
int tg_cpu_quant_desc(const tg_node *n, int rank, tg_cpu_quant *d);
float tg_cpu_quant_scale(const tg_cpu_quant *d, int64_t i);
int32_t tg_cpu_quant_zero(const tg_cpu_quant *d, int64_t i);

#endif
