/* The CUDA backend's parts (cuda.c: the device, its memory and the struct;
 * run.c: a node's attributes into kernel calls; attention.c: sdpa; gemm.c:
 * cuBLASLt; dnn.c: cuDNN; sparselt.c: cuSPARSELt). One
 * device (the current one), one stream, work queued in graph order. */
#ifndef TG_BACKEND_CUDA_CUDA_H
#define TG_BACKEND_CUDA_CUDA_H

#include <stdbool.h>
#include <stdint.h>
#include <cublasLt.h>
#include <cuda_runtime_api.h>

#include "../backend.h"
#include "kern.h"

/* What the backend holds once the device answered. */
typedef struct {
    cudaStream_t stream;
    cublasLtHandle_t lt;
    void *workspace;            /* cuBLASLt's */
    size_t workspace_size;
    int64_t *flag;              /* device scratch: an index or division error */
    bool deferred;              /* a captured run (tcompile's model): the flag is set before
                                   and read after the whole run, not around each node */
    bool tf32;                  /* TG_CUDA_MATH has tf32: GEMMs on tf32 tensor cores */
    int attn_f32;               /* TG_CUDA_MATH has bf16 or fp16: float32 attention in that
                                 * type through the flash kernels (a tgf_dtype); -1: not */
    tg_dtype gemm_dtype;        /* the GEMMs' operands: TG_F32, or TG_BF16 / TG_F16 in a
                                 * model compiled with --dtype bf16 / fp16 */
    tg_dtype lt24_dtype;        /* linear_24 through cuSPARSELt in this type (TG_BF16,
                                 * TG_F16; sparselt.h), or TG_F32: expanded, cuBLASLt */
    struct tgc_lt24 *lt24;      /* the node's weight compressed at open (a compiled
                                 * model sets it per node), or NULL */
    int sm;                     /* compute capability, major * 10 + minor */
    bool relu;                  /* the products' epilogue applies relu (an EPILOGUE
                                 * group, group.c) */
    const float *residual;      /* an EPILOGUE group's residual (group.c): a convolution
                                 * adds it to its result before the relu; else NULL */
    struct cudnnContext *dnn;   /* cuDNN's handle (dnn.c), or NULL: convolutions as
                                 * products */
} tgc_state;

/* tcompile --dtype, as a compiled model records it (blob.h) */
typedef enum { TGC_MATH_F32, TGC_MATH_TF32, TGC_MATH_BF16, TGC_MATH_F16 } tgc_math;
/* cs's GEMM and attention settings for math */
void tgc_set_math(tgc_state *cs, tgc_math math);

/* The device, set up on first use; NULL (tg_err with the reason) when there
 * is none (no driver, no GPU, a failed set-up). */
const tgc_state *tgc_state_get(void);
/* 0, or -1 with tg_err naming what failed and CUDA's words (err: cudaError_t). */
int tgc_fail(int err, const char *what);
/* cuBLASLt's status likewise. */
int tgc_blas_fail(cublasStatus_t st, const char *what);

/* run.c: whether the kernels cover node n of g (why when not), and its run. */
bool tgc_supports(const tg_graph *g, int n, char *why);
int tgc_run_node(const tgc_state *cs, const tg_run_ctx *c);
/* Whether node n reports bad data through the flag (indexing, integer
 * division), and the flag's value before it runs: any other value after is
 * the error, which tgc_flag_error words. */
bool tgc_node_checks(const tg_graph *g, int n, int64_t *init);
int tgc_flag_error(const tg_graph *g, int n, const int64_t *in_dims, int64_t flag);

/* group.c: the grouping rules' loop_supports, and a fused group's run (a
 * LOOP or EPILOGUE group of the plan; its members all supported). */
bool tgc_loop_supports(const tg_graph *g, const tg_node *nd, const char **why);
int tgc_run_group(const tgc_state *cs, const tg_group_ctx *c);

/* compile.c: tcompile --target cuda (tg_backend's compiles_node and compile). */
bool tgc_compiles_node(const tg_backend *be, const tg_graph *g, int n, char *why);
int tgc_compile(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                const tg_build_opts *o, FILE *so);

/* attention.c: an sdpa node, through the flash kernels where they take it. */
int tgc_run_sdpa(const tgc_state *cs, const tg_run_ctx *c);

/* gemm.c: y [M,N] = x [M,K] w^T (+ b [N]); and NumPy's matmul of a [arank]
 * by b [brank] into y. x, a, b (bias), y float32; w and b of dtype wt, bt:
 * float32, or cs->gemm_dtype (a weight tcompile --dtype converted). 0 or -1
 * (tg_err). */
int tgc_linear(const tgc_state *cs, const float *x, tg_dtype wt, const void *w, const float *b,
               float *y, int64_t M, int64_t N, int64_t K);
/* Whether a linear or matmul of inner dim K runs in cs->gemm_dtype (bf16,
 * fp16, tf32): K of 16 or more. A shorter one runs in float32 on FMA, its
 * weight kept float32 when compiled (blob.c): the tensor cores gain it
 * nothing, and an outer product (K = 1: RoPE's frequencies times positions,
 * which fold leaves as a node at a long sequence) keeps its digits: in bf16
 * a position over 256 is rounded, its angle off by radians. */
bool tgc_half_k(int64_t K);
int tgc_matmul(const tgc_state *cs, int arank, const int64_t *adims, const float *a, int brank,
               const int64_t *bdims, tg_dtype bt, const void *b, float *y);
/* An ungrouped convolution, not transposed (x, b, y float32; w float32 or
 * cs->gemm_dtype, converted when compiled), in cs->gemm_dtype: through
 * cuDNN (tgc_dnn_conv) where it takes it, else through cuBLASLt, its
 * patches times the weight. */
int tgc_conv(const tgc_state *cs, const tgk_conv_desc *d, const float *x, tg_dtype wt,
             const void *w, const float *b, float *y);
/* An operand of n elements of dtype have, as cs->gemm_dtype: p itself (*tmp
 * NULL), or a copy converted into *tmp (the caller frees it on the stream
 * after its use). */
int tgc_operand(const tgc_state *cs, tg_dtype have, const void *p, int64_t n, const void **r,
                void **tmp);

/* dnn.c: cuDNN's handle for a state, or NULL (built without cuDNN, TG_CUDNN
 * is off, or cuDNN could not be set up: the convolutions go as products);
 * and its end. */
struct cudnnContext *tgc_dnn_new(void);
void tgc_dnn_free(struct cudnnContext *h);
/* tgc_conv's convolution through cuDNN (cs->dnn), the bias and cs->relu
 * applied: 0 done, -1 an error (tg_err), 1 not taken (no handle, grouped,
 * transposed, a size or shape cuDNN does not take). */
int tgc_dnn_conv(const tgc_state *cs, const tgk_conv_desc *d, const float *x, tg_dtype wt,
                 const void *w, const float *b, float *y);

#endif
