/* Weight-only quantized linear layers: int8 or int4 weights with one float
 * scale per group of `group` consecutive inputs of a row. Blocks of rows are
 * dequantized to float32 (exactly q * scale, one rounding) and multiplied with
 * the float GEMM, so the result is what sgemm gives on the dequantized
 * matrix; the weights stay 4x or 8x smaller in memory. */
#include <stdatomic.h>
#include <stdlib.h>

#include "kernels.h"
#include "qgemm.h"

#define ROWS 64                     /* rows dequantized per block */

static inline int64_t groups_of(int64_t K, int64_t group)
{
    return (K + group - 1) / group;
}

static void dequant_row(const void *q, int bits, int64_t K, int64_t group, const float *scale,
                        int64_t n, float *w)
{
    const float *s = scale + n * groups_of(K, group);
    if (bits == 8) {
        const int8_t *r = (const int8_t *)q + n * K;
        for (int64_t k = 0; k < K; k++) w[k] = (float)r[k] * s[k / group];
        return;
    }
    const uint8_t *r = (const uint8_t *)q + n * ((K + 1) / 2);
    for (int64_t k = 0; k < K; k++) {
        int32_t v = k % 2 ? r[k / 2] >> 4 : r[k / 2] & 15;
        w[k] = (float)(v >= 8 ? v - 16 : v) * s[k / group];
    }
}

typedef struct {
    int64_t M, N, K, group;
    const float *x, *scale, *bias;
    const void *q;
    int bits;
    float *y;
    atomic_bool failed;
} wlinear_job;

/* Each task dequantizes its blocks into scratch of its own, ROWS rows. */
static void wlinear_blocks(void *ctx, int64_t b0, int64_t b1)
{
    wlinear_job *j = ctx;
    float *w = malloc(sizeof *w * (size_t)(ROWS * j->K > 0 ? ROWS * j->K : 1));
    if (!w) {
        atomic_store(&j->failed, true);
        return;
    }
    for (int64_t b = b0; b < b1; b++) {
        int64_t n0 = b * ROWS, nb = j->N - n0 < ROWS ? j->N - n0 : ROWS;
        for (int64_t r = 0; r < nb; r++)
            dequant_row(j->q, j->bits, j->K, j->group, j->scale, n0 + r, w + r * j->K);
        tgk_gemm_f32(false, true, j->M, nb, j->K, 1.0f, j->x, j->K, w, j->K, 0.0f,
                     j->y + n0, j->N);
        if (j->bias)
            for (int64_t m = 0; m < j->M; m++)
                for (int64_t r = 0; r < nb; r++) j->y[m * j->N + n0 + r] += j->bias[n0 + r];
    }
    free(w);
}

int tgk_wlinear_f32(int64_t M, int64_t N, int64_t K, const float *x, const void *q, int bits,
                    int64_t group, const float *scale, const float *bias, float *y)
{
    if ((bits != 8 && bits != 4) || M < 0 || N < 0 || K < 0)
        return -1;
    if (group <= 0 || group > K)
        group = K > 0 ? K : 1;
    wlinear_job j = {M, N, K, group, x, scale, bias, q, bits, y, false};
    tgk_parallel_for((N + ROWS - 1) / ROWS, 1, wlinear_blocks, &j);
    return atomic_load(&j.failed) ? -1 : 0;
}
