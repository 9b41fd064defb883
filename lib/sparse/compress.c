/* 2:4 compression of a weight matrix w [N,K] along k (the reduction dim) into
 * the TG layout of kernels.h (values [N, K/2], 2-bit indices meta
 * [N, ceil(K/8)]), and back. Magnitude pruning: each group of four keeps its
 * two largest |w| (NaN counts as largest, so a broken weight is not hidden;
 * on ties the lower index), so a weight that is already 2:4 comes back
 * exactly (a dropped -0 comes back as +0). */
#include <math.h>
#include <string.h>

#include "sparse.h"

static float magnitude(float v)
{
    return isnan(v) ? INFINITY : fabsf(v);
}

int64_t tg_sparse24_meta_bytes(int64_t K)
{
    return (K / 4 + 1) / 2;
}

void tg_sparse24_compress(const float *w, int64_t N, int64_t K, float *values, uint8_t *meta)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    memset(meta, 0, (size_t)(N * MB));
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < K / 4; g++) {
            const float *q = w + n * K + 4 * g;
            int a = 0, b = 1;           /* the two largest, a ahead of b */
            if (magnitude(q[1]) > magnitude(q[0]))
                a = 1, b = 0;
            for (int i = 2; i < 4; i++)
                if (magnitude(q[i]) > magnitude(q[a]))
                    b = a, a = i;
                else if (magnitude(q[i]) > magnitude(q[b]))
                    b = i;
            int lo = a < b ? a : b, hi = a < b ? b : a;
            values[n * (K / 2) + 2 * g] = q[lo];
            values[n * (K / 2) + 2 * g + 1] = q[hi];
            meta[n * MB + g / 2] |= (uint8_t)((lo | hi << 2) << (g % 2 * 4));
        }
}

void tg_sparse24_expand(const float *values, const uint8_t *meta, int64_t N, int64_t K,
                        float *w)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    memset(w, 0, sizeof *w * (size_t)(N * K));
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < K / 4; g++) {
            int bits = meta[n * MB + g / 2] >> (g % 2 * 4);
            /* += : indices that coincide (only in a file made elsewhere) add up,
             * as the kernels' two products do */
            w[n * K + 4 * g + (bits & 3)] += values[n * (K / 2) + 2 * g];
            w[n * K + 4 * g + (bits >> 2 & 3)] += values[n * (K / 2) + 2 * g + 1];
        }
}
