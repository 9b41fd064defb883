/* Softmax and log-softmax over the middle axis of [outer, len, inner];
 * x == y is allowed. Terms below 2^-126 are 0 (tgk_exp_ftz): no denormal
 * probability slows the products that read it.
 * inner == 1 (the common last-axis case) works on contiguous rows; otherwise
 * a block of inner positions is processed at once, so the loops still run over
 * contiguous memory. Parallel over rows / (outer, inner block). */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#define INNER_BLOCK 256

typedef struct {
    const float *x;
    float *y;
    int64_t len, inner, nblk;
    bool log;
} softmax_job;

/* sum of exp(x[i] - ref) over 16 lanes, without storing the terms */
static inline float sum_exp(const float *x, int64_t n, float ref)
{
    float acc[TGK_LANES] = {0};
    int64_t i = 0;
    for (; i + TGK_LANES <= n; i += TGK_LANES)
        for (int j = 0; j < TGK_LANES; j++)
            acc[j] += tgk_exp_ftz(x[i + j] - ref);
    float s = 0.0f;
    for (; i < n; i++)
        s += tgk_exp_ftz(x[i] - ref);
    for (int j = 0; j < TGK_LANES; j++)
        s += acc[j];
    return s;
}

TGK_CLONES static void softmax_rows(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *j = ctx;
    int64_t len = j->len;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * len;
        float *y = j->y + r * len;
        float m = tgk_max(x, len);
        /* a row of -inf: use 0 as the reference so exp gives 0, not NaN */
        float ref = m == -INFINITY ? 0.0f : m;
        if (j->log) {
            float shift = ref + logf(sum_exp(x, len, ref));
            for (int64_t i = 0; i < len; i++)
                y[i] = x[i] - shift;
        } else {
            for (int64_t i = 0; i < len; i++)
                y[i] = tgk_exp_ftz(x[i] - ref);
            float inv = 1.0f / tgk_sum(y, len);
            for (int64_t i = 0; i < len; i++)
                y[i] *= inv;
        }
    }
}

TGK_CLONES static void softmax_strided(void *ctx, int64_t begin, int64_t end)
{
    const softmax_job *j = ctx;
    int64_t len = j->len, inner = j->inner;
    float m[INNER_BLOCK], s[INNER_BLOCK];
    for (int64_t t = begin; t < end; t++) {
        int64_t o = t / j->nblk, i0 = t % j->nblk * INNER_BLOCK;
        int64_t w = inner - i0 < INNER_BLOCK ? inner - i0 : INNER_BLOCK;
        const float *x = j->x + o * len * inner + i0;
        float *y = j->y + o * len * inner + i0;
        for (int64_t i = 0; i < w; i++) {
            m[i] = -INFINITY;
            s[i] = 0.0f;
        }
        for (int64_t l = 0; l < len; l++)
            for (int64_t i = 0; i < w; i++) {
                float v = x[l * inner + i];
                m[i] = (v > m[i] || v != v) ? v : m[i];
            }
        for (int64_t i = 0; i < w; i++)
            m[i] = m[i] == -INFINITY ? 0.0f : m[i];
        if (j->log) {
            /* y may be x: sum first, write once */
            for (int64_t l = 0; l < len; l++)
                for (int64_t i = 0; i < w; i++)
                    s[i] += tgk_exp_ftz(x[l * inner + i] - m[i]);
            for (int64_t i = 0; i < w; i++)
                s[i] = m[i] + logf(s[i]);
            for (int64_t l = 0; l < len; l++)
                for (int64_t i = 0; i < w; i++)
                    y[l * inner + i] = x[l * inner + i] - s[i];
        } else {
            for (int64_t l = 0; l < len; l++)
                for (int64_t i = 0; i < w; i++) {
                    float e = tgk_exp_ftz(x[l * inner + i] - m[i]);
                    y[l * inner + i] = e;
                    s[i] += e;
                }
            for (int64_t i = 0; i < w; i++)
                s[i] = 1.0f / s[i];
            for (int64_t l = 0; l < len; l++)
                for (int64_t i = 0; i < w; i++)
                    y[l * inner + i] *= s[i];
        }
    }
}

void tgk_softmax_f32(const float *x, float *y, int64_t outer, int64_t len, int64_t inner,
                     bool log)
{
    if (outer <= 0 || len <= 0 || inner <= 0)
        return;
    softmax_job j = {x, y, len, inner, (inner + INNER_BLOCK - 1) / INNER_BLOCK, log};
    int64_t grain = 1 + 16384 / (len * (inner < INNER_BLOCK ? inner : INNER_BLOCK));
    if (inner == 1)
        tgk_parallel_for(outer, grain, softmax_rows, &j);
    else
        tgk_parallel_for(outer * j.nblk, grain, softmax_strided, &j);
}
