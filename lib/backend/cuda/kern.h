/* The CUDA backend's kernels as C functions (k_*.cu), called by its glue
 * (run.c, gemm.c): plain pointers into device memory, element counts and
 * dims, dtypes numbered like tg_dtype (tgk_dtype), work queued on the given
 * stream. Each returns a cudaError_t (0: queued). Descriptors shared with the
 * CPU's kernels (tgk_conv_desc, tgk_pool_desc, tgk_sdpa_desc) mean the same
 * here. */
#ifndef TG_BACKEND_CUDA_KERN_H
#define TG_BACKEND_CUDA_KERN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cuda_runtime_api.h>

#include "../cpu/kernels/kernels.h"
#include "../cpu/kernels/tensor_ops.h"

#ifdef __cplusplus
extern "C" {
#endif

/* An iteration space of up to 2*TGK_MAX_RANK dims (tile and the strided
 * copies need twice the rank) and the element strides of up to four
 * operands through it (0: broadcast). Operand 0 is the output unless a
 * kernel says otherwise. */
#define TGC_MAX_DIMS (2 * TGK_MAX_RANK)
typedef struct {
    int rank;
    int64_t dims[TGC_MAX_DIMS];
    int64_t st[4][TGC_MAX_DIMS];
} tgc_iter;

/* ---- elementwise (k_elementwise.cu) ---------------------------------------- */
/* y[i] = op(x[i]) as tgk_unary (logical_not: bool out). */
int tgc_unary(tgk_unary_op op, tgk_dtype t, int64_t n, const void *x, void *y,
              const tgk_unary_param *p, cudaStream_t s);
/* y (contiguous, it->st[0]) = a (st[1]) op b (st[2]) as tgk_binary; an
 * integer division by zero sets *bad (device memory) to 1. */
int tgc_binary(tgk_binary_op op, tgk_dtype t, const tgc_iter *it, const void *a, const void *b,
               void *y, int64_t *bad, cudaStream_t s);
/* y = c ? a : b through st[0..3] (y, c, a, b), elements of es bytes. */
int tgc_where(size_t es, const tgc_iter *it, const uint8_t *c, const void *a, const void *b,
              void *y, cudaStream_t s);
/* n elements from x (type st) to y (type dt), as tgk_cast. */
int tgc_cast(tgk_dtype dt, void *y, tgk_dtype st, const void *x, int64_t n, cudaStream_t s);

/* ---- data movement (k_movement.cu): any type, by element size ------------------ */
/* y[st[0]] = x[st[1]] over it's dims. */
int tgc_copy(size_t es, const tgc_iter *it, const void *x, void *y, cudaStream_t s);
/* y[0..n) = value (value: one element of y's type). */
int tgc_fill(size_t es, int64_t n, const void *value, void *y, cudaStream_t s);
/* tgk_arange on the device. */
int tgc_arange(tgk_dtype t, int64_t n, int64_t start, int64_t step, void *y, cudaStream_t s);
int tgc_tri(size_t es, bool upper, int64_t batch, int64_t rows, int64_t cols, int64_t k,
            const void *x, void *y, cudaStream_t s);
/* The index kernels of tensor_ops.h, indices of type it (i32 or i64); an
 * index out of range is written to *bad (device memory, set beforehand to
 * INT64_MIN) and its element left alone. */
int tgc_index_select(size_t es, int64_t outer, int64_t n, int64_t inner, const void *x,
                     int64_t nidx, tgk_dtype it, const void *idx, void *y, int64_t *bad,
                     cudaStream_t s);
int tgc_gather(size_t es, int rank, const int64_t *xdims, const int64_t *idims, int axis,
               const void *x, tgk_dtype it, const void *idx, void *y, int64_t *bad,
               cudaStream_t s);
/* y holds a copy of x already; the rows of src go to the rows idx names (the
 * last of repeated indices wins). */
int tgc_index_copy(size_t es, int64_t outer, int64_t n, int64_t inner, int64_t nidx,
                   tgk_dtype it, const void *idx, const void *src, void *y, int64_t *bad,
                   cudaStream_t s);

/* ---- fused loops (k_loop.cu): a plan's LOOP group as one kernel ------------------ */
/* A LOOP group (group.c) as a program run per element of its iteration
 * space, float32: each step one member node, unary or binary, on the
 * group's outside inputs (operand -1 - k: input k) and earlier steps'
 * results (operand s >= 0), each rounded to float32 as the member's own
 * kernel rounds it (tgk_unary_f64, tgk_binary_f64): the same bits as the
 * nodes one by one, but one read of each input and one write of the root.
 * dims[0..nkeep) are the root's (contiguous y); where nkeep < rank the root
 * is a sum or mean of operand `res` over dims[nkeep..rank), accumulated in
 * double in the order tgc_reduce sums. */
#define TGC_LOOP_MAX_IN 16
#define TGC_LOOP_MAX_STEPS 32
typedef struct {
    uint8_t binary;             /* 0: unary (tgk_unary_op), 1: binary (tgk_binary_op) */
    uint8_t op;
    int8_t a, b;                /* operands */
    tgk_unary_param p;
} tgc_loop_step;
typedef struct {
    int nin, nstep, res;        /* res: the operand stored (or reduced) */
    int rank, nkeep;
    int red;                    /* TGK_REDUCE_SUM or _MEAN where nkeep < rank */
    int64_t dims[TGK_MAX_RANK];
    int64_t st[TGC_LOOP_MAX_IN][TGK_MAX_RANK];  /* input k's element strides (0: broadcast) */
    const float *in[TGC_LOOP_MAX_IN];
    tgc_loop_step step[TGC_LOOP_MAX_STEPS];
} tgc_loop;
int tgc_loop_f32(const tgc_loop *l, float *y, cudaStream_t s);

/* ---- reductions (k_reduce.cu) ---------------------------------------------------- */
/* As tgk_reduce: it->dims[0..nkeep) are the kept dims (y's, contiguous),
 * the rest the reduced ones; it->st[1] x's strides over all of them. */
int tgc_reduce(tgk_reduce_op op, tgk_dtype t, const tgc_iter *it, int nkeep, int64_t correction,
               const void *x, void *y, cudaStream_t s);
/* As tgk_arg_reduce over the middle axis of [outer, n, inner]. */
int tgc_arg_reduce(bool max, tgk_dtype t, int64_t outer, int64_t n, int64_t inner,
                   const void *x, int64_t *y, cudaStream_t s);
/* As tgk_softmax_f32 and tgk_cumsum. */
int tgc_softmax_f32(const float *x, float *y, int64_t outer, int64_t len, int64_t inner, bool log,
                    cudaStream_t s);
int tgc_cumsum(tgk_dtype t, int64_t outer, int64_t n, int64_t inner, bool exclusive,
               bool reverse, const void *x, void *y, cudaStream_t s);

/* ---- nn (k_nn.cu): float32 ----------------------------------------------------------- */
/* As the CPU's tgk_layer_norm_f32, tgk_group_norm_f32, tgk_batch_norm_f32 (w, b
 * and the batch norm's weight and bias may be NULL). */
int tgc_layer_norm_f32(const float *x, const float *w, const float *b, float *y, int64_t rows,
                       int64_t len, float eps, cudaStream_t s);
int tgc_group_norm_f32(const float *x, const float *w, const float *b, float *y, int64_t n,
                       int64_t c, int64_t spatial, int64_t groups, float eps, cudaStream_t s);
int tgc_batch_norm_f32(const float *x, const float *mean, const float *var, const float *w,
                       const float *b, float *y, int64_t n, int64_t c, int64_t spatial, float eps,
                       cudaStream_t s);
int tgc_pool_f32(const tgk_pool_desc *d, bool max, const float *x, float *y, cudaStream_t s);
int tgc_adaptive_avg_pool_f32(int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                              int64_t out_w, const float *x, float *y, cudaStream_t s);
/* Direct convolution, one thread an output element (no relu or pool fused). */
int tgc_conv_f32(const tgk_conv_desc *d, const float *x, const float *w, const float *b, float *y,
                 cudaStream_t s);
/* A convolution's patches (im2col) for one product, ungrouped and not
 * transposed: row n * P + p (P output positions an image) holds, at c * ks
 * + t, x's channel c under output p's window at kernel tap t (0 in the
 * padding); columns C * ks to ld are 0. col of type t: f32, bf16 or f16. */
int tgc_patches(const tgk_conv_desc *d, const float *x, tgk_dtype t, void *col, int64_t ld,
                cudaStream_t s);
/* A convolution's result t [planes, P] (of type tt: f32, bf16 or f16; plane
 * q has channel q % K) into float32 y, plus b[channel] and the residual z
 * (of y's shape; b and z may be NULL), then relu when asked; t may be y. */
int tgc_conv_out(tgk_dtype tt, const void *t, const float *b, const float *z, bool relu, float *y,
                 int64_t planes, int64_t K, int64_t P, cudaStream_t s);
/* Attention, one warp a query row with an online softmax; contiguous q, k,
 * v, o (the desc's strides unused); a mask of bool (mask_bool) or float. */
int tgc_sdpa_f32(const tgk_sdpa_desc *d, const void *mask, bool mask_bool, const float *q,
                 const float *k, const float *v, float *o, cudaStream_t s);
/* linear_24's compressed weight (values [N,K/2], meta [N,ceil(K/8)]) into the
 * dense w [N,K], as tg_sparse24_expand. */
int tgc_expand24_f32(const float *values, const uint8_t *meta, float *w, int64_t N, int64_t K,
                     cudaStream_t s);

#ifdef __cplusplus
}
#endif

#endif
