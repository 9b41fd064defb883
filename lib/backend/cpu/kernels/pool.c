/* Max and average pooling over 1 or 2 spatial dims (1-D runs as height 1),
 * with padding, dilation, ceil-mode output sizes (windows that run past the
 * padded edge), count_include_pad; and PyTorch's adaptive average pooling.
 * Parallel over (image, channel) planes. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#include <math.h>

typedef struct {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} plane_geom;

typedef struct {
    plane_geom g;
    const float *x;
    float *y;
    bool max, include_pad;
} pool_job;

static bool geom_from(const tgk_pool_desc *d, plane_geom *g)
{
    int a = d->nsp == 2 ? 0 : -1;  /* index of the height dim, -1: none */
    if (d->nsp != 1 && d->nsp != 2)
        return false;
    *g = (plane_geom){
        a < 0 ? 1 : d->in[0], d->in[a + 1], a < 0 ? 1 : d->out[0], d->out[a + 1],
        a < 0 ? 1 : d->kernel[0], d->kernel[a + 1], a < 0 ? 1 : d->stride[0], d->stride[a + 1],
        a < 0 ? 0 : d->pad[0], d->pad[a + 1], a < 0 ? 1 : d->dil[0], d->dil[a + 1],
    };
    return g->ih > 0 && g->iw > 0 && g->oh > 0 && g->ow > 0 && g->kh > 0 && g->kw > 0 &&
           g->sh > 0 && g->sw > 0 && g->dh > 0 && g->dw > 0 && g->ph >= 0 && g->pw >= 0;
}

/* taps i in [*i0, *i1) have 0 <= start + i*dil < lim (an empty range if none) */
static void taps(int64_t start, int64_t k, int64_t dil, int64_t lim, int64_t *i0, int64_t *i1)
{
    int64_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
    int64_t hi = start < lim ? (lim - start + dil - 1) / dil : 0;
    hi = hi < k ? hi : k;
    *i0 = lo;
    *i1 = hi > lo ? hi : lo;
}

static void pool_planes(void *ctx, int64_t begin, int64_t end)
{
    const pool_job *j = ctx;
    const plane_geom *g = &j->g;
    for (int64_t p = begin; p < end; p++) {
        const float *x = j->x + p * g->ih * g->iw;
        float *y = j->y + p * g->oh * g->ow;
        for (int64_t oy = 0; oy < g->oh; oy++) {
            int64_t hs = oy * g->sh - g->ph, a0, a1, unused, pa1;
            taps(hs, g->kh, g->dh, g->ih, &a0, &a1);
            taps(hs, g->kh, g->dh, g->ih + g->ph, &unused, &pa1);
            for (int64_t ox = 0; ox < g->ow; ox++) {
                int64_t ws = ox * g->sw - g->pw, b0, b1, pb1;
                taps(ws, g->kw, g->dw, g->iw, &b0, &b1);
                taps(ws, g->kw, g->dw, g->iw + g->pw, &unused, &pb1);
                float acc = j->max ? -INFINITY : 0.0f;
                for (int64_t a = a0; a < a1; a++) {
                    const float *row = x + (hs + a * g->dh) * g->iw + ws;
                    for (int64_t b = b0; b < b1; b++) {
                        float v = row[b * g->dw];
                        if (j->max)
                            acc = tgk_nan_max(acc, v);
                        else
                            acc += v;
                    }
                }
                if (!j->max) {
                    /* count_include_pad counts taps inside the padded input,
                     * not those past it (ceil mode), as PyTorch does */
                    int64_t cnt = j->include_pad ? pa1 * pb1 : (a1 - a0) * (b1 - b0);
                    acc = cnt > 0 ? acc / (float)cnt : 0.0f;
                }
                y[oy * g->ow + ox] = acc;
            }
        }
    }
}

static void pool_run(const tgk_pool_desc *d, const float *x, float *y, bool max)
{
    pool_job j = {.x = x, .y = y, .max = max, .include_pad = d->count_include_pad};
    if (d->n <= 0 || d->c <= 0 || !geom_from(d, &j.g))
        return;
    int64_t work = j.g.oh * j.g.ow * j.g.kh * j.g.kw;
    tgk_parallel_for(d->n * d->c, 1 + 32768 / work, pool_planes, &j);
}

void tgk_max_pool_f32(const tgk_pool_desc *d, const float *x, float *y)
{
    pool_run(d, x, y, true);
}

void tgk_avg_pool_f32(const tgk_pool_desc *d, const float *x, float *y)
{
    pool_run(d, x, y, false);
}

typedef struct {
    int64_t ih, iw, oh, ow;
    const float *x;
    float *y;
} adaptive_job;

TGK_CLONES static void adaptive_planes(void *ctx, int64_t begin, int64_t end)
{
    const adaptive_job *j = ctx;
    for (int64_t p = begin; p < end; p++) {
        const float *x = j->x + p * j->ih * j->iw;
        float *y = j->y + p * j->oh * j->ow;
        for (int64_t oy = 0; oy < j->oh; oy++) {
            /* bin [floor(o*in/out), ceil((o+1)*in/out)) */
            int64_t h0 = oy * j->ih / j->oh, h1 = ((oy + 1) * j->ih + j->oh - 1) / j->oh;
            for (int64_t ox = 0; ox < j->ow; ox++) {
                int64_t w0 = ox * j->iw / j->ow, w1 = ((ox + 1) * j->iw + j->ow - 1) / j->ow;
                /* vector partial sums, not one serial chain: a bin spanning
                 * whole rows (global pooling) is one contiguous run */
                float s = 0.0f;
                if (w0 == 0 && w1 == j->iw)
                    s = tgk_sum(x + h0 * j->iw, (h1 - h0) * j->iw);
                else
                    for (int64_t h = h0; h < h1; h++)
                        s += tgk_sum(x + h * j->iw + w0, w1 - w0);
                y[oy * j->ow + ox] = s / (float)((h1 - h0) * (w1 - w0));
            }
        }
    }
}

void tgk_adaptive_avg_pool_f32(int64_t nc, int64_t in_h, int64_t in_w,
                               int64_t out_h, int64_t out_w, const float *x, float *y)
{
    if (nc <= 0 || in_h <= 0 || in_w <= 0 || out_h <= 0 || out_w <= 0)
        return;
    adaptive_job j = {in_h, in_w, out_h, out_w, x, y};
    tgk_parallel_for(nc, 1 + 32768 / (in_h * in_w), adaptive_planes, &j);
}
