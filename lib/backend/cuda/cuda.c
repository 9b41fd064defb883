/* The CUDA backend: device memory (stream-ordered allocations, kept in the
 * driver's pool between runs), copies on one stream, and the struct the
 * registry lists. The device is set up on first use; when there is none,
 * every node is refused with the reason and runs on the CPU. */
#include "cuda.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "flash.h"

#define WORKSPACE (32u << 20)

static tgc_state state;
static char absent[TG_WHY_MAX];     /* why there is no device: "" once set up */
static pthread_once_t once = PTHREAD_ONCE_INIT;

/* TG_CUDA_MATH: words separated by commas; tf32 for the GEMMs, bf16 or
 * fp16 for attention and linear_24 (through cuSPARSELt; the last one given
 * wins); others are ignored. */
static void read_math(const char *math)
{
    state.tf32 = false;
    state.attn_f32 = -1;
    state.gemm_dtype = TG_F32;
    state.lt24_dtype = TG_F32;
    for (const char *w = math; w && *w;) {
        size_t n = strcspn(w, ",");
        if (n == 4 && !strncmp(w, "tf32", n))
            state.tf32 = true;
        else if (n == 4 && !strncmp(w, "bf16", n))
            state.attn_f32 = TGF_BF16, state.lt24_dtype = TG_BF16;
        else if (n == 4 && !strncmp(w, "fp16", n))
            state.attn_f32 = TGF_F16, state.lt24_dtype = TG_F16;
        w += n + (w[n] == ',');
    }
}

static void set_up(void)
{
    int n = 0, dev = 0;
    cudaError_t e = cudaGetDeviceCount(&n);
    if (e != cudaSuccess || n == 0) {
        snprintf(absent, sizeof absent, "no CUDA device (%s)",
                 e != cudaSuccess ? cudaGetErrorString(e) : "none found");
        return;
    }
    struct cudaDeviceProp prop;
    cudaMemPool_t pool;
    uint64_t keep = UINT64_MAX;         /* freed memory stays in the pool for the next run */
    if ((e = cudaGetDevice(&dev)) || (e = cudaGetDeviceProperties(&prop, dev)) ||
        (e = cudaStreamCreateWithFlags(&state.stream, cudaStreamNonBlocking)) ||
        (e = cudaDeviceGetDefaultMemPool(&pool, dev)) ||
        (e = cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep)) ||
        (e = cudaMalloc(&state.workspace, WORKSPACE)) ||
        (e = cudaMalloc((void **)&state.flag, sizeof(int64_t)))) {
        snprintf(absent, sizeof absent, "the CUDA device could not be set up (%s)",
                 cudaGetErrorString(e));
        return;
    }
    if (cublasLtCreate(&state.lt) != CUBLAS_STATUS_SUCCESS) {
        snprintf(absent, sizeof absent, "cuBLASLt could not be set up");
        return;
    }
    state.workspace_size = WORKSPACE;
    state.dnn = tgc_dnn_new();
    state.sm = prop.major * 10 + prop.minor;
    read_math(getenv("TG_CUDA_MATH"));
    absent[0] = 0;
}

const tgc_state *tgc_state_get(void)
{
    pthread_once(&once, set_up);
    if (absent[0]) {
        tg_err("%s", absent);
        return NULL;
    }
    return &state;
}

static void *cuda_alloc(const tg_backend *be, size_t size)
{
    const tgc_state *cs = tgc_state_get();
    void *p = NULL;
    if (!cs)
        return NULL;
    int e = cudaMallocAsync(&p, size ? size : 1, cs->stream);
    if (e) {
        tgc_fail(e, "allocating device memory");
        return NULL;
    }
    if ((e = cudaMemsetAsync(p, 0, size, cs->stream))) {
        cudaFreeAsync(p, cs->stream);
        tgc_fail(e, "zeroing device memory");
        return NULL;
    }
    return p;
}

static void cuda_free(const tg_backend *be, void *p)
{
    if (p)
        cudaFreeAsync(p, state.stream);
}

/* From pageable host memory the copy has read src when it returns. */
static int cuda_upload(const tg_backend *be, void *dst, const void *src, size_t n)
{
    const tgc_state *cs = tgc_state_get();
    if (!cs)
        return -1;
    int e = n ? cudaMemcpyAsync(dst, src, n, cudaMemcpyHostToDevice, cs->stream) : 0;
    return e ? tgc_fail(e, "copying to the device") : 0;
}

static int cuda_download(const tg_backend *be, void *dst, const void *src, size_t n)
{
    const tgc_state *cs = tgc_state_get();
    if (!cs)
        return -1;
    int e = n ? cudaMemcpyAsync(dst, src, n, cudaMemcpyDeviceToHost, cs->stream) : 0;
    if (!e)
        e = cudaStreamSynchronize(cs->stream);
    return e ? tgc_fail(e, "copying from the device") : 0;
}

/* Kernels fail asynchronously: their errors come out here. */
static int cuda_synchronize(const tg_backend *be)
{
    const tgc_state *cs = tgc_state_get();
    if (!cs)
        return 0;               /* no device: nothing was queued */
    int e = cudaStreamSynchronize(cs->stream);
    return e ? tgc_fail(e, "running on the device") : 0;
}

static bool cuda_supports_node(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    if (!tgc_state_get()) {
        snprintf(why, TG_WHY_MAX, "%s", absent);
        return false;
    }
    return tgc_supports(g, n, why);
}

static int cuda_run(const tg_backend *be, const tg_run_ctx *c)
{
    const tgc_state *cs = tgc_state_get();
    return cs ? tgc_run_node(cs, c) : -1;
}

static int cuda_run_group(const tg_backend *be, const tg_group_ctx *c)
{
    const tgc_state *cs = tgc_state_get();
    return cs ? tgc_run_group(cs, c) : -1;
}

/* Only relu joins a product: cuBLASLt's epilogue applies it for nothing;
 * another activation is a pass over the result either way, and better one
 * of a loop with what reads it (silu(gate) * up). */
static bool cuda_epilogue_supports(const tg_graph *g, const tg_node *nd)
{
    return nd->op == TG_OP_RELU;
}

/* What group.c runs as one: elementwise chains (float32, perhaps ending in a
 * sum or mean), a product's relu, and a convolution's residual add and relu
 * (ResNet's: no loop over the sum after each block). */
static const tg_group_rules cuda_groups = {
    .epilogue = true,
    .conv_residual = true,
    .loop = true,
    .loop_supports = tgc_loop_supports,
    .epilogue_supports = cuda_epilogue_supports,
};

/* Runs graphs node by node and fused groups as one (group.c); compiles them
 * into a runtime that captures the same kernels (compile.c). */
static const tg_backend tg_backend_cuda = {
    .abi = TG_BACKEND_ABI,
    .name = "cuda",
    .about = "an NVIDIA GPU through the CUDA runtime and cuBLASLt",
    .memory = TG_MEM_DEVICE,
    .alignment = 256,
    .alloc = cuda_alloc,
    .free = cuda_free,
    .upload = cuda_upload,
    .download = cuda_download,
    .synchronize = cuda_synchronize,
    .supports_node = cuda_supports_node,
    .run = cuda_run,
    .run_group = cuda_run_group,
    .groups = &cuda_groups,
    .compile = tgc_compile,
    .compiles_node = tgc_compiles_node,
};

/* The backend's shared object, libtgraph-backend-cuda.so, which the registry
 * loads by name (load.c): with no GPU it is there all the same, and refuses
 * every node with the reason. */
const tg_backend *tg_backend_entry(void)
{
    return &tg_backend_cuda;
}
