/* GEMM on OpenBLAS, threaded by our pool rather than OpenBLAS's own threads.
 *
 * OpenBLAS is set to one thread once; a large product is split along its
 * longer output side into blocks, each a single-threaded sgemm on one pool
 * thread. So there is one set of threads in the process, a GEMM called from
 * inside a pool task (conv per image, attention tiles) runs inline without
 * oversubscribing the cores, and concurrent callers never meet OpenBLAS's
 * internal lock (which serializes its threaded path). */
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/tensor_ops.h"

#include <cblas.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* Below this many multiply-adds a split costs more than it gains. */
#define SPLIT_MIN_WORK (1 << 21)
#define BLOCK_ALIGN 16

/* OpenBLAS's DYNAMIC_ARCH builds (Debian's) pick kernels by CPU model; on a
 * model newer than the build, or a VM that hides it, they fall back to
 * Prescott's SSE3 kernels: 4x slower than SkylakeX's on an AVX-512 machine
 * (measured 27 vs 118 GFLOP/s, 1024^3, one thread). When that happens and the
 * user did not choose with OPENBLAS_CORETYPE, choose by instruction set at
 * load time (before any BLAS call; these entry points are weak because only
 * DYNAMIC_ARCH builds have them). */
extern void gotoblas_dynamic_init(void) __attribute__((weak));
extern void gotoblas_dynamic_quit(void) __attribute__((weak));

static bool core_is_fallback(const char *name)
{
    static const char *const old[] = {"prescott", "core2", "penryn", "dunnington",
                                      "nehalem", "sandybridge", "unknown"};
    for (size_t i = 0; i < sizeof old / sizeof *old; i++)
        if (name && strcasecmp(name, old[i]) == 0)
            return true;
    return false;
}

__attribute__((constructor)) static void blas_pick_core(void)
{
    if (!gotoblas_dynamic_init || !gotoblas_dynamic_quit || getenv("OPENBLAS_CORETYPE") ||
        !core_is_fallback(openblas_get_corename()))
        return;
    __builtin_cpu_init();
    const char *core = NULL;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512cd") &&
        __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512dq") &&
        __builtin_cpu_supports("avx512vl"))
        core = "SkylakeX";
    else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
        core = "Haswell";
    if (!core || setenv("OPENBLAS_CORETYPE", core, 0) != 0)
        return;
    gotoblas_dynamic_quit();
    gotoblas_dynamic_init();
    unsetenv("OPENBLAS_CORETYPE");
}

/* Up to this many rows of A, a GEMM is that many GEMVs. */
#define GEMV_ROWS 4

static pthread_once_t blas_once = PTHREAD_ONCE_INIT;

static void blas_single_thread(void)
{
    openblas_set_num_threads(1);
}

typedef struct {
    bool ta, tb, split_m;
    int64_t M, N, K;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int64_t lda, ldb, ldc;
} gemm_job;

static void gemm_call(const gemm_job *j, int64_t M, int64_t N, const float *A,
                      const float *B, float *C)
{
    if (M <= GEMV_ROWS && !j->ta) {
        /* rows times op(B), one at a time: OpenBLAS's gemv is faster than its
         * gemm here, which packs both operands (3 x 256 x 784: 6x) */
        for (int64_t i = 0; i < M; i++)
            cblas_sgemv(CblasRowMajor, j->tb ? CblasNoTrans : CblasTrans,
                        j->tb ? (int)N : (int)j->K, j->tb ? (int)j->K : (int)N, j->alpha, B,
                        (int)j->ldb, A + i * j->lda, 1, j->beta, C + i * j->ldc, 1);
        return;
    }
    cblas_sgemm(CblasRowMajor, j->ta ? CblasTrans : CblasNoTrans,
                j->tb ? CblasTrans : CblasNoTrans, (int)M, (int)N, (int)j->K,
                j->alpha, A, (int)j->lda, B, (int)j->ldb, j->beta, C, (int)j->ldc);
}

static void gemm_block(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *j = ctx;
    begin *= BLOCK_ALIGN;
    end *= BLOCK_ALIGN;
    if (j->split_m) {
        if (end > j->M)
            end = j->M;
        const float *A = j->A + (j->ta ? begin : begin * j->lda);
        gemm_call(j, end - begin, j->N, A, j->B, j->C + begin * j->ldc);
    } else {
        if (end > j->N)
            end = j->N;
        const float *B = j->B + (j->tb ? begin * j->ldb : begin);
        gemm_call(j, j->M, end - begin, j->A, B, j->C + begin);
    }
}

void tgk_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    pthread_once(&blas_once, blas_single_thread);
    if (K <= 0) {
        /* BLAS leaves C alone when K = 0 only if beta = 1; be explicit. */
        for (int64_t i = 0; i < M; i++)
            for (int64_t jj = 0; jj < N; jj++)
                C[i * ldc + jj] = beta == 0.0f ? 0.0f : beta * C[i * ldc + jj];
        return;
    }
    gemm_job j = {trans_a, trans_b, M >= N, M, N, K, alpha, beta, A, B, C, lda, ldb, ldc};
    double work = (double)M * (double)N * (double)K;
    int64_t side = j.split_m ? M : N;
    int64_t blocks = (side + BLOCK_ALIGN - 1) / BLOCK_ALIGN;
    if (work < SPLIT_MIN_WORK || blocks < 2 || tgk_num_threads() <= 1 || tgk_in_task()) {
        gemm_call(&j, M, N, A, B, C);
        return;
    }
    /* Each block of BLOCK_ALIGN rows (or columns) carries work/blocks. */
    int64_t grain = (int64_t)(SPLIT_MIN_WORK / (work / (double)blocks)) + 1;
    tgk_parallel_for(blocks, grain, gemm_block, &j);
}

void tgk_linear_f32(const float *x, const float *w, const float *b, float *y,
                    int64_t M, int64_t N, int64_t K)
{
    if (b) {
        for (int64_t i = 0; i < M; i++)
            memcpy(y + i * N, b, (size_t)N * sizeof *y);
    }
    tgk_gemm_f32(false, true, M, N, K, 1.0f, x, K, w, K, b ? 1.0f : 0.0f, y, N);
}

/* NumPy matmul: a 1-D a is a row, a 1-D b a column; the batch dims broadcast. */
void tgk_matmul_f32(int ra, const int64_t *ad, const float *a, int rb, const int64_t *bd,
                    const float *b, float *y)
{
    int64_t M = ra >= 2 ? ad[ra - 2] : 1, K = ad[ra - 1], N = rb >= 2 ? bd[rb - 1] : 1;
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, rank = na > nb ? na : nb;
    int64_t dims[TGK_MAX_RANK] = {0}, sa[TGK_MAX_RANK], sb[TGK_MAX_RANK], idx[TGK_MAX_RANK] = {0};
    int64_t batch = 1;
    for (int k = 0; k < rank; k++) {
        int ka = k - (rank - na), kb = k - (rank - nb);
        int64_t da = ka >= 0 ? ad[ka] : 1, db = kb >= 0 ? bd[kb] : 1;
        dims[k] = da > db ? da : db;
        batch *= dims[k];
    }
    tgk_broadcast_strides(rank, dims, na, ad, sa);
    tgk_broadcast_strides(rank, dims, nb, bd, sb);
    bool b_shared = true, a_flat = true;    /* one b for every batch; a's batches in a row */
    for (int k = 0; k < rank; k++) {
        b_shared &= sb[k] == 0;
        a_flat &= sa[k] != 0 || dims[k] == 1;
    }
    if (b_shared && a_flat) {               /* one GEMM with the batches as rows */
        tgk_gemm_f32(false, false, batch * M, N, K, 1.0f, a, K, b, N, 0.0f, y, N);
        return;
    }
    for (int64_t i = 0; i < batch; i++) {
        int64_t oa = 0, ob = 0;
        for (int k = 0; k < rank; k++) {
            oa += idx[k] * sa[k];
            ob += idx[k] * sb[k];
        }
        tgk_gemm_f32(false, false, M, N, K, 1.0f, a + oa * M * K, K, b + ob * K * N, N, 0.0f,
                     y + i * M * N, N);
        for (int k = rank - 1; k >= 0 && ++idx[k] == dims[k]; k--)
            idx[k] = 0;
    }
}
