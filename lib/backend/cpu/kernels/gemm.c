/* The linear layer and NumPy's matmul on tgk_gemm_f32 (gemm_packed.c: our own
 * register tiles on our threads; no BLAS library, so a compiled model never
 * touches the host's BLAS settings or threads). */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/tensor_ops.h"

#include <string.h>

void tgk_linear_f32(const float *x, const float *w, const float *b, float *y,
                    int64_t M, int64_t N, int64_t K)
{
    if (b) {
        for (int64_t i = 0; i < M; i++)
            memcpy(y + i * N, b, (size_t)N * sizeof *y);
    }
    tgk_gemm_f32(false, true, M, N, K, 1.0f, x, K, w, K, b ? 1.0f : 0.0f, y, N);
}

typedef struct {
    int rank;
    const int64_t *dims, *sa, *sb;
    int64_t M, N, K;
    const float *a, *b;
    float *y;
} matmul_job;

/* batches [begin, end) of a batched matmul, one GEMM each (inline: a task) */
static void matmul_batches(void *ctx, int64_t begin, int64_t end)
{
    const matmul_job *j = ctx;
    for (int64_t i = begin; i < end; i++) {
        int64_t oa = 0, ob = 0, rest = i;
        for (int k = j->rank - 1; k >= 0; k--) {
            oa += rest % j->dims[k] * j->sa[k];
            ob += rest % j->dims[k] * j->sb[k];
            rest /= j->dims[k];
        }
        tgk_gemm_f32(false, false, j->M, j->N, j->K, 1.0f, j->a + oa * j->M * j->K, j->K,
                     j->b + ob * j->K * j->N, j->N, 0.0f, j->y + i * j->M * j->N, j->N);
    }
}

/* NumPy matmul: a 1-D a is a row, a 1-D b a column; the batch dims broadcast. */
void tgk_matmul_f32(int ra, const int64_t *ad, const float *a, int rb, const int64_t *bd,
                    const float *b, float *y)
{
    int64_t M = ra >= 2 ? ad[ra - 2] : 1, K = ad[ra - 1], N = rb >= 2 ? bd[rb - 1] : 1;
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0, rank = na > nb ? na : nb;
    int64_t dims[TGK_MAX_RANK] = {0}, sa[TGK_MAX_RANK], sb[TGK_MAX_RANK];
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
    /* Attention's batches of small products (Swin's windows: 49 x 49 x 32,
     * too small to split one) run a batch a task; a product big enough to
     * split goes to the threads itself, one after the other. */
    matmul_job j = {rank, dims, sa, sb, M, N, K, a, b, y};
    int64_t macs = M * N * K;
    if (macs < 4 * TGK_TASK_MIN_MACS)
        tgk_parallel_for(batch, TGK_TASK_MIN_MACS / (macs + 1) + 1, matmul_batches, &j);
    else
        matmul_batches(&j, 0, batch);
}
