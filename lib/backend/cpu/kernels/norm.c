/* Layer, group and batch normalization in float. Statistics are two-pass
 * (a pivoted mean, then the mean of squared deviations) over 16 lanes, which
 * keeps float accuracy without float64 and without the cancellation of
 * E[x^2] - E[x]^2. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

/* The mean of x[0..n) as pivot + delta, and 1/sqrt(var + eps). pivot = x[0]
 * and the sums run over x - pivot: with data far from zero (mean 1000,
 * deviation 1) a plain float mean would be off by half an ulp of 1000, which
 * is 5e-5 of the deviation; x - pivot is exact there and delta is small. */
typedef struct {
    float pivot, delta, rstd;
} stats;

static stats moments(const float *x, int64_t n, float eps)
{
    float pivot = x[0];
    float acc[TGK_LANES] = {0};
    int64_t i = 0;
    for (; i + TGK_LANES <= n; i += TGK_LANES)
        for (int j = 0; j < TGK_LANES; j++)
            acc[j] += x[i + j] - pivot;
    float s = 0.0f;
    for (; i < n; i++)
        s += x[i] - pivot;
    for (int j = 0; j < TGK_LANES; j++)
        s += acc[j];
    float d = s / (float)n;
    for (int j = 0; j < TGK_LANES; j++)
        acc[j] = 0.0f;
    for (i = 0; i + TGK_LANES <= n; i += TGK_LANES)
        for (int j = 0; j < TGK_LANES; j++) {
            float v = x[i + j] - pivot - d;
            acc[j] += v * v;
        }
    for (s = 0.0f; i < n; i++)
        s += (x[i] - pivot - d) * (x[i] - pivot - d);
    for (int j = 0; j < TGK_LANES; j++)
        s += acc[j];
    return (stats){pivot, d, 1.0f / sqrtf(s / (float)n + eps)};
}

/* y = (x - pivot - delta) * scale + shift */
static void affine(const float *x, float *y, int64_t n, stats st, float scale, float shift)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = (x[i] - st.pivot - st.delta) * scale + shift;
}

typedef struct {
    const float *x, *w, *b, *mean, *var;
    float *y;
    int64_t c, cols, groups;
    float eps;
} norm_job;

TGK_CLONES static void layer_norm_rows(void *ctx, int64_t begin, int64_t end)
{
    const norm_job *j = ctx;
    int64_t n = j->cols;
    for (int64_t r = begin; r < end; r++) {
        const float *x = j->x + r * n;
        float *y = j->y + r * n;
        stats st = moments(x, n, j->eps);
        if (!j->w && !j->b) {
            affine(x, y, n, st, st.rstd, 0.0f);
            continue;
        }
        for (int64_t i = 0; i < n; i++) {
            float v = (x[i] - st.pivot - st.delta) * st.rstd;
            v = j->w ? v * j->w[i] : v;
            y[i] = j->b ? v + j->b[i] : v;
        }
    }
}

void tgk_layer_norm_f32(const float *x, const float *w, const float *b, float *y,
                        int64_t rows, int64_t cols, float eps)
{
    if (rows <= 0 || cols <= 0)
        return;
    norm_job j = {.x = x, .w = w, .b = b, .y = y, .cols = cols, .eps = eps};
    tgk_parallel_for(rows, 1 + 16384 / cols, layer_norm_rows, &j);
}

/* one task per (image, group): its channels are contiguous */
TGK_CLONES static void group_norm_groups(void *ctx, int64_t begin, int64_t end)
{
    const norm_job *j = ctx;
    int64_t cg = j->c / j->groups, sp = j->cols;
    for (int64_t t = begin; t < end; t++) {
        const float *x = j->x + t * cg * sp;
        float *y = j->y + t * cg * sp;
        stats st = moments(x, cg * sp, j->eps);
        for (int64_t k = 0; k < cg; k++) {
            int64_t ch = t % j->groups * cg + k;
            float scale = j->w ? j->w[ch] * st.rstd : st.rstd;
            affine(x + k * sp, y + k * sp, sp, st, scale, j->b ? j->b[ch] : 0.0f);
        }
    }
}

void tgk_group_norm_f32(const float *x, const float *w, const float *b, float *y,
                        int64_t n, int64_t c, int64_t spatial, int64_t groups, float eps)
{
    if (n <= 0 || c <= 0 || spatial <= 0 || groups <= 0 || c % groups)
        return;
    norm_job j = {.x = x, .w = w, .b = b, .y = y, .c = c, .cols = spatial,
                  .groups = groups, .eps = eps};
    tgk_parallel_for(n * groups, 1 + 16384 / (c / groups * spatial), group_norm_groups, &j);
}

/* one task per (image, channel) plane */
TGK_CLONES static void batch_norm_planes(void *ctx, int64_t begin, int64_t end)
{
    const norm_job *j = ctx;
    int64_t sp = j->cols;
    for (int64_t t = begin; t < end; t++) {
        int64_t ch = t % j->c;
        float rs = 1.0f / sqrtf(j->var[ch] + j->eps);
        float scale = j->w ? j->w[ch] * rs : rs;
        stats st = {j->mean[ch], 0.0f, rs};
        affine(j->x + t * sp, j->y + t * sp, sp, st, scale, j->b ? j->b[ch] : 0.0f);
    }
}

void tgk_batch_norm_f32(const float *x, const float *mean, const float *var,
                        const float *w, const float *b, float *y,
                        int64_t n, int64_t c, int64_t spatial, float eps)
{
    if (n <= 0 || c <= 0 || spatial <= 0)
        return;
    norm_job j = {.x = x, .w = w, .b = b, .mean = mean, .var = var, .y = y, .c = c,
                  .cols = spatial, .eps = eps};
    tgk_parallel_for(n * c, 1 + 16384 / spatial, batch_norm_planes, &j);
}
