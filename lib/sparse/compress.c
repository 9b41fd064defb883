/* 2:4 compression of a weight matrix w [N,K] along k (the reduction dim) into
 * the TG layout of kernels.h (values [N, K/2], 2-bit indices meta
 * [N, ceil(K/8)]), and back. Magnitude pruning: each group of four keeps its
 * two largest |w| (NaN counts as largest, so a broken weight is not hidden;
 * on ties the lower index), so a weight that is already 2:4 comes back
 * exactly (a dropped -0 comes back as +0). The int8 forms are qlinear_24's
 * (tquant's weights pruned by tsparse after it). */
#include <math.h>
#include <stdlib.h>
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

/* The two largest of a group's magnitudes q[4], in index order, as a
 * metadata nibble (lo | hi << 2). */
static int keep2(const float q[4])
{
    int a = 0, b = 1;               /* the two largest, a ahead of b */
    if (q[1] > q[0])
        a = 1, b = 0;
    for (int i = 2; i < 4; i++)
        if (q[i] > q[a])
            b = a, a = i;
        else if (q[i] > q[b])
            b = i;
    return a < b ? a | b << 2 : b | a << 2;
}

void tg_sparse24_compress(const float *w, int64_t N, int64_t K, float *values, uint8_t *meta)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    memset(meta, 0, (size_t)(N * MB));
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < K / 4; g++) {
            const float *q = w + n * K + 4 * g;
            float mag[4] = {magnitude(q[0]), magnitude(q[1]), magnitude(q[2]), magnitude(q[3])};
            int e = keep2(mag);
            values[n * (K / 2) + 2 * g] = q[e & 3];
            values[n * (K / 2) + 2 * g + 1] = q[e >> 2];
            meta[n * MB + g / 2] |= (uint8_t)(e << (g % 2 * 4));
        }
}

void tg_sparse24_compress_i8(const int8_t *w, int64_t N, int64_t K, int8_t *values,
                             uint8_t *meta)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    memset(meta, 0, (size_t)(N * MB));
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < K / 4; g++) {
            const int8_t *q = w + n * K + 4 * g;
            float mag[4];
            for (int i = 0; i < 4; i++)
                mag[i] = (float)abs(q[i]);
            int e = keep2(mag);
            values[n * (K / 2) + 2 * g] = q[e & 3];
            values[n * (K / 2) + 2 * g + 1] = q[e >> 2];
            meta[n * MB + g / 2] |= (uint8_t)(e << (g % 2 * 4));
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

void tg_sparse24_expand_i8(const int8_t *values, const uint8_t *meta, int64_t N, int64_t K,
                           int8_t *w)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    memset(w, 0, (size_t)(N * K));
    for (int64_t n = 0; n < N; n++)
        for (int64_t g = 0; g < K / 4; g++) {
            int bits = meta[n * MB + g / 2] >> (g % 2 * 4);
            w[n * K + 4 * g + (bits & 3)] = values[n * (K / 2) + 2 * g];
            w[n * K + 4 * g + (bits >> 2 & 3)] = values[n * (K / 2) + 2 * g + 1];
        }
}
