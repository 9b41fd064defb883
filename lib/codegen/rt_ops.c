/* Kernels a compiled plan calls that kernels.h has no single entry for. */
#include "model_rt.h"

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/tensor_ops.h"

void tgrt_matmul_f32(int ra, const int64_t *ad, const float *a, int rb, const int64_t *bd,
                     const float *b, float *y)
{
    /* a 1-D operand is a row (a) or a column (b) */
    int64_t M = ra > 1 ? ad[ra - 2] : 1, K = ad[ra - 1], N = rb > 1 ? bd[rb - 1] : 1;
    int na = ra > 2 ? ra - 2 : 0, nb = rb > 2 ? rb - 2 : 0;
    int nbat = na > nb ? na : nb;
    int64_t dims[TGK_MAX_RANK], sa[TGK_MAX_RANK], sb[TGK_MAX_RANK], batch = 1, bbatch = 1;
    for (int i = 0; i < nbat; i++) {
        int64_t da = i - (nbat - na) >= 0 ? ad[i - (nbat - na)] : 1;
        int64_t db = i - (nbat - nb) >= 0 ? bd[i - (nbat - nb)] : 1;
        dims[i] = da > db ? da : db;
        batch *= dims[i];
    }
    for (int i = 0; i < nb; i++)
        bbatch *= bd[i];
    if (bbatch == 1) {     /* one weight matrix: every row of a in one GEMM */
        tgk_gemm_f32(false, false, batch * M, N, K, 1.0f, a, K, b, N, 0.0f, y, N);
        return;
    }
    tgk_broadcast_strides(nbat, dims, na, ad, sa);
    tgk_broadcast_strides(nbat, dims, nb, bd, sb);
    int64_t idx[TGK_MAX_RANK] = {0};
    for (int64_t i = 0; i < batch; i++) {
        int64_t oa = 0, ob = 0;
        for (int k = 0; k < nbat; k++) {
            oa += idx[k] * sa[k];
            ob += idx[k] * sb[k];
        }
        tgk_gemm_f32(false, false, M, N, K, 1.0f, a + oa * M * K, K, b + ob * K * N, N, 0.0f,
                     y + i * M * N, N);
        for (int k = nbat - 1; k >= 0 && ++idx[k] == dims[k]; k--)
            idx[k] = 0;
    }
}
