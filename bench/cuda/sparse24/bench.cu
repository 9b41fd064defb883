// 2:4 sparse GEMM bench: dense cuBLASLt bf16 against cuSPARSELt on the same
// pruned weights, for a linear y[T,N] = x[T,K] * W[N,K]^T with W 2:4 along K.
//
// Every configuration reads the same buffers (x row-major [T,K], W row-major
// [N,K]); the four cuSPARSELt forms differ in which operand is the sparse
// one and in the order the library is told, so they write y or y^T:
//   A=W col   sparse A = W, column-major, opA=T opB=N -> D = y   (cuBLAS "TN")
//   B=W row   sparse B = W, row-major,    opA=N opB=T -> D = y
//   A=W row   sparse A = W, row-major,    opA=N opB=T -> D = y^T
//   B=W col   sparse B = W, column-major, opA=T opB=N -> D = y^T
// Each is planned with cusparseLtMatmulSearch (its own algorithm and split-k
// search), then timed; its output is compared with the dense result.
// TFLOP/s counts 2*T*N*K for dense and sparse alike.
//   bench [--quick] [T N K ...]
#include <cublasLt.h>
#include <cuda_bf16.h>
#include <cuda_runtime.h>
#include <cusparseLt.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

#define CK(x)                                                                      \
    do {                                                                           \
        cudaError_t e_ = (x);                                                      \
        if (e_ != cudaSuccess) {                                                   \
            fprintf(stderr, "%s:%d %s: %s\n", __FILE__, __LINE__, #x,              \
                    cudaGetErrorString(e_));                                       \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
#define CB(x)                                                                      \
    do {                                                                           \
        cublasStatus_t s_ = (x);                                                   \
        if (s_ != CUBLAS_STATUS_SUCCESS) {                                         \
            fprintf(stderr, "%s:%d %s: cublas %d\n", __FILE__, __LINE__, #x,       \
                    (int)s_);                                                      \
            exit(1);                                                               \
        }                                                                          \
    } while (0)
// cuSPARSELt failures skip the configuration (some forms may be unsupported).
#define CS(x)                                                                      \
    do {                                                                           \
        cusparseStatus_t s_ = (x);                                                 \
        if (s_ != CUSPARSE_STATUS_SUCCESS) {                                       \
            fprintf(stderr, "  %s: %s\n", #x, cusparseLtGetErrorString(s_));       \
            return false;                                                          \
        }                                                                          \
    } while (0)

static const size_t kWorkspace = 256u << 20;

// Fills with uniform [-1, 1) from a per-element hash (fresh per seed).
__global__ void fill(__nv_bfloat16 *p, size_t n, unsigned seed) {
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)i * 2654435761u ^ seed * 40503u;
        h ^= h >> 15; h *= 2246822519u; h ^= h >> 13; h *= 3266489917u; h ^= h >> 16;
        p[i] = __float2bfloat16((h >> 8) * (2.0f / 16777216.0f) - 1.0f);
    }
}

// 2:4 along the contiguous (K) axis: in each group of four keep the two
// entries a hash picks, zero the other two.
__global__ void prune24(__nv_bfloat16 *w, size_t groups, unsigned seed) {
    static const unsigned char keep[6] = {0x3, 0x5, 0x9, 0x6, 0xa, 0xc};
    for (size_t g = blockIdx.x * (size_t)blockDim.x + threadIdx.x; g < groups;
         g += (size_t)gridDim.x * blockDim.x) {
        unsigned h = (unsigned)g * 747796405u + seed;
        h ^= h >> 16; h *= 2246822519u; h ^= h >> 13;
        unsigned m = keep[h % 6];
        for (int j = 0; j < 4; j++)
            if (!(m >> j & 1)) w[g * 4 + j] = __float2bfloat16(0.0f);
    }
}

// max |got - ref| (and max |ref|) where got is ref ([rows, cols] row-major)
// or its transpose.
__global__ void maxdiff(const __nv_bfloat16 *got, const __nv_bfloat16 *ref,
                        size_t rows, size_t cols, int transposed, unsigned *out) {
    float d = 0, r = 0;
    size_t n = rows * cols;
    for (size_t i = blockIdx.x * (size_t)blockDim.x + threadIdx.x; i < n;
         i += (size_t)gridDim.x * blockDim.x) {
        size_t gi = transposed ? (i % cols) * rows + i / cols : i;
        float a = __bfloat162float(got[gi]), b = __bfloat162float(ref[i]);
        d = fmaxf(d, fabsf(a - b));
        r = fmaxf(r, fabsf(b));
    }
    atomicMax(out, __float_as_uint(d)); // non-negative floats order as uints
    atomicMax(out + 1, __float_as_uint(r));
}

template <class F> static float time_ms(F f, int iters) {
    cudaEvent_t a, b;
    CK(cudaEventCreate(&a));
    CK(cudaEventCreate(&b));
    for (int i = 0; i < 3; i++) f();
    float best = 1e30f;
    for (int rep = 0; rep < 3; rep++) {
        CK(cudaEventRecord(a));
        for (int i = 0; i < iters; i++) f();
        CK(cudaEventRecord(b));
        CK(cudaEventSynchronize(b));
        float ms;
        CK(cudaEventElapsedTime(&ms, a, b));
        best = std::min(best, ms / iters);
    }
    CK(cudaEventDestroy(a));
    CK(cudaEventDestroy(b));
    return best;
}

struct Bufs {
    long T, N, K;
    __nv_bfloat16 *x, *w, *yd, *ys, *wc;
    void *ws, *cbuf;
    unsigned *dev2;
};

// Dense y = x W^T through cuBLASLt: column-major C[N,T] = W^T(op T) * x(op N),
// best of up to 32 heuristic candidates, timed.
static float dense(cublasLtHandle_t lt, Bufs &b, int iters, int *nalgo) {
    cublasLtMatmulDesc_t op;
    CB(cublasLtMatmulDescCreate(&op, CUBLAS_COMPUTE_32F, CUDA_R_32F));
    cublasOperation_t ta = CUBLAS_OP_T, tb = CUBLAS_OP_N;
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta));
    CB(cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb));
    cublasLtMatrixLayout_t la, lb, lc;
    CB(cublasLtMatrixLayoutCreate(&la, CUDA_R_16BF, b.K, b.N, b.K));
    CB(cublasLtMatrixLayoutCreate(&lb, CUDA_R_16BF, b.K, b.T, b.K));
    CB(cublasLtMatrixLayoutCreate(&lc, CUDA_R_16BF, b.N, b.T, b.N));
    cublasLtMatmulPreference_t pref;
    CB(cublasLtMatmulPreferenceCreate(&pref));
    size_t wsz = kWorkspace;
    CB(cublasLtMatmulPreferenceSetAttribute(
        pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES, &wsz, sizeof wsz));
    cublasLtMatmulHeuristicResult_t res[32];
    int n = 0;
    CB(cublasLtMatmulAlgoGetHeuristic(lt, op, la, lb, lc, lc, pref, 32, res, &n));
    float alpha = 1, beta = 0, best = 1e30f;
    int bi = -1;
    for (int i = 0; i < n; i++) {
        if (res[i].state != CUBLAS_STATUS_SUCCESS) continue;
        auto f = [&] {
            CB(cublasLtMatmul(lt, op, &alpha, b.w, la, b.x, lb, &beta, b.yd, lc, b.yd, lc,
                              &res[i].algo, b.ws, kWorkspace, 0));
        };
        float ms = time_ms(f, std::max(2, iters / 2));
        if (ms < best) best = ms, bi = i;
    }
    // Leave the best one's output in yd as the reference.
    CB(cublasLtMatmul(lt, op, &alpha, b.w, la, b.x, lb, &beta, b.yd, lc, b.yd, lc,
                      &res[bi].algo, b.ws, kWorkspace, 0));
    best = std::min(best, time_ms([&] {
        CB(cublasLtMatmul(lt, op, &alpha, b.w, la, b.x, lb, &beta, b.yd, lc, b.yd, lc,
                          &res[bi].algo, b.ws, kWorkspace, 0));
    }, iters));
    *nalgo = n;
    cublasLtMatmulPreferenceDestroy(pref);
    cublasLtMatrixLayoutDestroy(la);
    cublasLtMatrixLayoutDestroy(lb);
    cublasLtMatrixLayoutDestroy(lc);
    cublasLtMatmulDescDestroy(op);
    return best;
}

struct Form {
    const char *name;
    bool sparse_a;      // W is the library's A (else its B)
    cusparseOrder_t order;
    bool transposed_out; // D holds y^T
};

static const Form kForms[] = {
    {"A=W col", true, CUSPARSE_ORDER_COL, false},
    {"B=W row", false, CUSPARSE_ORDER_ROW, false},
    {"A=W row", true, CUSPARSE_ORDER_ROW, true},
    {"B=W col", false, CUSPARSE_ORDER_COL, true},
};

// One cuSPARSELt form: describe, check the pattern, compress, search, time,
// compare. Returns false (printed) where the library refuses the form.
static bool sparse(cusparseLtHandle_t *h, const Form &fm, Bufs &b, int iters, float *ms,
                   int *alg, int *splitk, float *err, float *refmax) {
    long T = b.T, N = b.N, K = b.K;
    bool col = fm.order == CUSPARSE_ORDER_COL;
    // W is row-major [N,K] = column-major [K,N]; x row-major [T,K] = col [K,T].
    long wr = col ? K : N, wc = col ? N : K, xr = col ? K : T, xc = col ? T : K;
    cusparseOperation_t ow = col ? (fm.sparse_a ? CUSPARSE_OPERATION_TRANSPOSE
                                                : CUSPARSE_OPERATION_NON_TRANSPOSE)
                                 : (fm.sparse_a ? CUSPARSE_OPERATION_NON_TRANSPOSE
                                                : CUSPARSE_OPERATION_TRANSPOSE);
    cusparseOperation_t ox = col ? (fm.sparse_a ? CUSPARSE_OPERATION_NON_TRANSPOSE
                                                : CUSPARSE_OPERATION_TRANSPOSE)
                                 : (fm.sparse_a ? CUSPARSE_OPERATION_TRANSPOSE
                                                : CUSPARSE_OPERATION_NON_TRANSPOSE);
    // D = op(A) op(B): y^T [N,T] when A = W, y [T,N] when B = W.
    long dr = fm.sparse_a ? N : T, dc = fm.sparse_a ? T : N;
    long ld_w = col ? wr : wc, ld_x = col ? xr : xc, ld_d = col ? dr : dc;
    cusparseLtMatDescriptor_t mw, mx, md;
    CS(cusparseLtStructuredDescriptorInit(h, &mw, wr, wc, ld_w, 16, CUDA_R_16BF, fm.order,
                                          CUSPARSELT_SPARSITY_50_PERCENT));
    CS(cusparseLtDenseDescriptorInit(h, &mx, xr, xc, ld_x, 16, CUDA_R_16BF, fm.order));
    CS(cusparseLtDenseDescriptorInit(h, &md, dr, dc, ld_d, 16, CUDA_R_16BF, fm.order));
    cusparseLtMatmulDescriptor_t mm;
    if (fm.sparse_a)
        CS(cusparseLtMatmulDescriptorInit(h, &mm, ow, ox, &mw, &mx, &md, &md,
                                          CUSPARSE_COMPUTE_32F));
    else
        CS(cusparseLtMatmulDescriptorInit(h, &mm, ox, ow, &mx, &mw, &md, &md,
                                          CUSPARSE_COMPUTE_32F));
    int *dvalid;
    CK(cudaMalloc(&dvalid, sizeof(int)));
    CS(cusparseLtSpMMAPruneCheck2(h, &mw, fm.sparse_a, ow, b.w, dvalid, 0));
    int valid = 1;
    CK(cudaMemcpy(&valid, dvalid, sizeof valid, cudaMemcpyDeviceToHost));
    CK(cudaFree(dvalid));
    if (valid != 0) {
        fprintf(stderr, "  %s: W is not 2:4 in this form's view\n", fm.name);
        return false;
    }
    cusparseLtMatmulAlgSelection_t sel;
    CS(cusparseLtMatmulAlgSelectionInit(h, &sel, &mm, CUSPARSELT_MATMUL_ALG_DEFAULT));
    cusparseLtMatmulPlan_t plan;
    CS(cusparseLtMatmulPlanInit(h, &plan, &mm, &sel));
    size_t csz, cbsz, wsz;
    CS(cusparseLtSpMMACompressedSize(h, &plan, &csz, &cbsz));
    if (cbsz > kWorkspace || csz > (size_t)N * K * 2) {
        fprintf(stderr, "  %s: compressed buffers too large\n", fm.name);
        return false;
    }
    CS(cusparseLtSpMMACompress(h, &plan, b.w, b.wc, b.cbuf, 0));
    CS(cusparseLtMatmulGetWorkspace(h, &plan, &wsz));
    if (wsz > kWorkspace) {
        fprintf(stderr, "  %s: workspace %zu too large\n", fm.name, wsz);
        return false;
    }
    float alpha = 1, beta = 0;
    const void *pa = fm.sparse_a ? (const void *)b.wc : b.x;
    const void *pb = fm.sparse_a ? (const void *)b.x : b.wc;
    cudaStream_t st = 0;
    CS(cusparseLtMatmulSearch(h, &plan, &alpha, pa, pb, &beta, b.ys, b.ys, b.ws, &st, 1));
    CS(cusparseLtMatmulAlgGetAttribute(h, &sel, CUSPARSELT_MATMUL_ALG_CONFIG_ID, alg,
                                       sizeof *alg));
    CS(cusparseLtMatmulAlgGetAttribute(h, &sel, CUSPARSELT_MATMUL_SPLIT_K, splitk,
                                       sizeof *splitk));
    CS(cusparseLtMatmulGetWorkspace(h, &plan, &wsz));
    if (wsz > kWorkspace) {
        fprintf(stderr, "  %s: workspace %zu too large\n", fm.name, wsz);
        return false;
    }
    CK(cudaMemset(b.ys, 0, (size_t)T * N * 2));
    bool ok = true;
    *ms = time_ms([&] {
        cusparseStatus_t s =
            cusparseLtMatmul(h, &plan, &alpha, pa, pb, &beta, b.ys, b.ys, b.ws, &st, 1);
        if (s != CUSPARSE_STATUS_SUCCESS) ok = false;
    }, iters);
    if (!ok) {
        fprintf(stderr, "  %s: cusparseLtMatmul failed\n", fm.name);
        return false;
    }
    CK(cudaMemset(b.dev2, 0, 8));
    maxdiff<<<1024, 256>>>(b.ys, b.yd, T, N, fm.transposed_out, b.dev2);
    unsigned r[2];
    CK(cudaMemcpy(r, b.dev2, 8, cudaMemcpyDeviceToHost));
    memcpy(err, &r[0], 4);
    memcpy(refmax, &r[1], 4);
    cusparseLtMatmulPlanDestroy(&plan);
    cusparseLtMatmulAlgSelectionDestroy(&sel);
    cusparseLtMatDescriptorDestroy(&mw);
    cusparseLtMatDescriptorDestroy(&mx);
    cusparseLtMatDescriptorDestroy(&md);
    return true;
}

static float bf(__nv_bfloat16 v) { return __bfloat162float(v); }

// The dense reference itself against float64 on a few sampled outputs.
static double spot_check(const Bufs &b) {
    double worst = 0;
    std::vector<__nv_bfloat16> xr(b.K), wr(b.K);
    for (int s = 0; s < 16; s++) {
        long t = (s * 7919L + 13) % b.T, n = (s * 104729L + 7) % b.N;
        __nv_bfloat16 y;
        CK(cudaMemcpy(xr.data(), b.x + t * b.K, b.K * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(wr.data(), b.w + n * b.K, b.K * 2, cudaMemcpyDeviceToHost));
        CK(cudaMemcpy(&y, b.yd + t * b.N + n, 2, cudaMemcpyDeviceToHost));
        double acc = 0;
        for (long k = 0; k < b.K; k++) acc += (double)bf(xr[k]) * bf(wr[k]);
        // bf16 output rounding: half an ulp of 8 bits.
        worst = std::max(worst, fabs(acc - bf(y)) / std::max(1.0, fabs(acc)));
    }
    return worst;
}

int main(int argc, char **argv) {
    int iters = 20;
    std::vector<long> shapes;
    for (int i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--quick")) iters = 5;
        else shapes.push_back(atol(argv[i]));
    }
    if (shapes.empty()) {
        long d[] = {8192, 8192, 8192, 4096, 4096, 4096,
                    2048, 11008, 4096, 2048, 4096, 11008,
                    4096, 11008, 4096, 4096, 4096, 11008,
                    8192, 11008, 4096, 8192, 4096, 11008,
                    16384, 11008, 4096, 16384, 4096, 11008};
        shapes.assign(d, d + sizeof d / sizeof *d);
    }
    if (shapes.size() % 3) {
        fprintf(stderr, "usage: bench [--quick] [T N K]...\n");
        return 2;
    }
    cublasLtHandle_t lt;
    CB(cublasLtCreate(&lt));
    cusparseLtHandle_t h;
    if (cusparseLtInit(&h) != CUSPARSE_STATUS_SUCCESS) {
        fprintf(stderr, "cusparseLtInit failed\n");
        return 1;
    }
    int ver = 0;
    cusparseLtGetVersion(&h, &ver);
    cudaDeviceProp prop;
    CK(cudaGetDeviceProperties(&prop, 0));
    printf("# %s, cuSPARSELt %d, cuBLASLt %zu\n", prop.name, ver, cublasLtGetVersion());
    printf("| T | N | K | dense TF/s (algos) | form | sparse TF/s | alg/splitk | ratio | max err | max abs ref |\n");
    printf("|--:|--:|--:|--:|:--|--:|:--|--:|--:|--:|\n");
    for (size_t s = 0; s < shapes.size(); s += 3) {
        Bufs b{};
        b.T = shapes[s], b.N = shapes[s + 1], b.K = shapes[s + 2];
        size_t nx = b.T * b.K, nw = b.N * b.K, ny = b.T * b.N;
        CK(cudaMalloc(&b.x, nx * 2));
        CK(cudaMalloc(&b.w, nw * 2));
        CK(cudaMalloc(&b.wc, nw * 2));
        CK(cudaMalloc(&b.yd, ny * 2));
        CK(cudaMalloc(&b.ys, ny * 2));
        CK(cudaMalloc(&b.ws, kWorkspace));
        CK(cudaMalloc(&b.cbuf, kWorkspace));
        CK(cudaMalloc(&b.dev2, 8));
        fill<<<1024, 256>>>(b.x, nx, 1 + (unsigned)s);
        fill<<<1024, 256>>>(b.w, nw, 1000 + (unsigned)s);
        prune24<<<1024, 256>>>(b.w, nw / 4, 77 + (unsigned)s);
        CK(cudaDeviceSynchronize());
        double flop = 2.0 * b.T * b.N * b.K;
        int nalgo = 0;
        float dms = dense(lt, b, iters, &nalgo);
        double spot = spot_check(b);
        double dtf = flop / dms / 1e9;
        for (const Form &fm : kForms) {
            float ms, err, refmax;
            int alg = -1, splitk = -1;
            if (!sparse(&h, fm, b, iters, &ms, &alg, &splitk, &err, &refmax)) {
                printf("| %ld | %ld | %ld | %.0f (%d) | %s | refused | | | | |\n", b.T, b.N,
                       b.K, dtf, nalgo, fm.name);
                continue;
            }
            double stf = flop / ms / 1e9;
            printf("| %ld | %ld | %ld | %.0f (%d) | %s | %.0f | %d/%d | %.2f | %.3g | %.3g |\n",
                   b.T, b.N, b.K, dtf, nalgo, fm.name, stf, alg, splitk, dms / ms, err,
                   refmax);
            fflush(stdout);
        }
        printf("<!-- dense vs float64 on 16 samples: max rel err %.2g -->\n", spot);
        fflush(stdout);
        cudaFree(b.x); cudaFree(b.w); cudaFree(b.wc); cudaFree(b.yd); cudaFree(b.ys);
        cudaFree(b.ws); cudaFree(b.cbuf); cudaFree(b.dev2);
    }
    cusparseLtDestroy(&h);
    cublasLtDestroy(lt);
    return 0;
}
