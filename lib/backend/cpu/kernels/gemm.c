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
