/* Flash attention forward on NVIDIA GPUs (sm_80 and up): the kernels the CUDA
 * backend calls for sdpa nodes (attention.c); tests/cuda and
 * bench/cuda/attention drive them directly too.
 *
 * q [batch, hq, L, D], k and v [batch, hk, S, D], o [batch, hq, L, D], all
 * bf16 or all fp16, on the device; fp32 accumulation and softmax. The
 * kernels, chosen at run time: FlashAttention-2 on mma.sync (sm_80 and up),
 * and on compute capability 9.0 for prefill the FA3 design (flash_fa3.cu:
 * bulk tensor copies, a producer warpgroup, wgmma; tgf_kernel). hk divides
 * hq (GQA, MQA). D is 64, 128 or 256. Causal is upper-left aligned (row i sees
 * keys 0..i, like torch's is_causal and the CPU kernel). A row whose every key
 * is masked gives 0, as lib/backend/cpu/kernels/sdpa.c does. Extra memory: none for
 * prefill; for decode (L <= 16) the split-K partials, tgf_attn_workspace()
 * bytes, O(splits * hq * L * D). */
#ifndef TG_BACKEND_CUDA_FLASH_H
#define TG_BACKEND_CUDA_FLASH_H

#include <cuda_runtime_api.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef enum { TGF_BF16 = 0, TGF_F16 = 1 } tgf_dtype;

typedef enum {
    TGF_MASK_NONE = 0,
    TGF_MASK_BOOL = 1,          /* uint8: nonzero attends, 0 masks (torch's bool) */
    TGF_MASK_ADD = 2,           /* float32 added to the scaled scores */
} tgf_mask_kind;

/* The prefill kernel (more than 16 queries) on compute capability 9.0; other
 * devices run the portable one whatever is asked. */
typedef enum {
    TGF_KERNEL_AUTO = 0,        /* the fastest: FA3 (flash_fa3.cu) */
    TGF_KERNEL_FA2 = 1,         /* the portable mma.sync kernel */
    TGF_KERNEL_WGMMA = 2,       /* the first Hopper kernel: wgmma, no TMA or producer warp */
} tgf_kernel;

typedef struct {
    int32_t dtype;              /* tgf_dtype */
    int32_t mask_kind;          /* tgf_mask_kind */
    int64_t batch, hq, hk, L, S, D;
    float scale;
    int32_t causal;
    const void *mask;           /* element (b,h,l,s) at b*st[0] + h*st[1] + l*st[2] + s*st[3] */
    int64_t mask_stride[4];     /* elements; 0 broadcasts that dim */
    /* element strides of batch, head and row; rows are contiguous; all three
     * 0: the tensor is contiguous. Multiples of 8, like the pointers' 16-byte
     * alignment, for the 16-byte loads. */
    int64_t q_stride[3], k_stride[3], v_stride[3], o_stride[3];
    int32_t kernel;             /* tgf_kernel: which prefill kernel */
} tgf_attn_desc;

/* NULL when the descriptor and pointers can run, else why not (one line). */
const char *tgf_attn_check(const tgf_attn_desc *d, const void *q, const void *k, const void *v,
                           const void *o);

/* Device bytes the forward needs as workspace (0 for prefill). */
size_t tgf_attn_workspace(const tgf_attn_desc *d);

/* Which kernel the descriptor runs on the current device, for logs:
 * "wgmma prefill d128 bm128 bn64 splits 1". */
const char *tgf_attn_kernel(const tgf_attn_desc *d);

/* o = softmax(scale * q k^T + mask) v, asynchronous on stream. Returns 0, or
 * -1 with *why set (refused descriptor, workspace too small, CUDA error). */
int tgf_attn_forward(const tgf_attn_desc *d, const void *q, const void *k, const void *v, void *o,
                     void *workspace, size_t workspace_bytes, cudaStream_t stream,
                     const char **why);

#ifdef __cplusplus
}
#endif
#endif
