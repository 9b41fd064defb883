/* Max and average pooling over 1 or 2 spatial dims (1-D runs as height 1),
 * with padding, dilation, ceil-mode output sizes (windows that run past the
 * padded edge), count_include_pad; and PyTorch's adaptive average pooling.
 * Channels first: parallel over (image, channel) planes. Channels last
 * (x [n, h, w, c]): parallel over output rows (adaptive: bins), each
 * window reduced over blocks of PC channels, a vector loop a tap. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#include <math.h>

typedef struct {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} plane_geom;

typedef struct {
    plane_geom g;
    int64_t c;                  /* channels last: the channels */
    const float *x;
    float *y;
    bool max, include_pad;
} pool_job;

/* channels last: the channels a window is reduced over at once */
#define PC 64

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

/* the divisor of an average over taps [a0, a1) x [b0, b1): count_include_pad
 * counts the taps inside the padded input ([0, pa1) x [0, pb1)), not those
 * past it (ceil mode), as PyTorch does */
static inline int64_t window_count(const pool_job *j, int64_t a0, int64_t a1, int64_t pa1,
                                   int64_t b0, int64_t b1, int64_t pb1)
{
    return j->include_pad ? pa1 * pb1 : (a1 - a0) * (b1 - b0);
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
                    int64_t cnt = window_count(j, a0, a1, pa1, b0, b1, pb1);
                    acc = cnt > 0 ? acc / (float)cnt : 0.0f;
                }
                y[oy * g->ow + ox] = acc;
            }
        }
    }
}

/* channels last: y[0, nc) = the window's max or sum (then / cnt) of nc
 * channels from x, taps [a0, a1) x [b0, b1) at rows hs + a dh and columns
 * ws + b dw; nc a constant PC at most calls, so acc can live in registers */
static inline __attribute__((always_inline)) void window_nhwc(
    const pool_job *j, const float *x, int64_t hs, int64_t ws, int64_t a0, int64_t a1,
    int64_t b0, int64_t b1, int64_t cnt, const int64_t nc, float *y)
{
    const plane_geom *g = &j->g;
    float acc[PC];
    for (int64_t i = 0; i < nc; i++)
        acc[i] = j->max ? -INFINITY : 0.0f;
    for (int64_t a = a0; a < a1; a++)
        for (int64_t b = b0; b < b1; b++) {
            const float *px = x + ((hs + a * g->dh) * g->iw + ws + b * g->dw) * j->c;
            if (j->max)
                for (int64_t i = 0; i < nc; i++)
                    acc[i] = tgk_nan_max(acc[i], px[i]);
            else
                for (int64_t i = 0; i < nc; i++)
                    acc[i] += px[i];
        }
    if (j->max)
        for (int64_t i = 0; i < nc; i++)
            y[i] = acc[i];
    else
        for (int64_t i = 0; i < nc; i++)
            y[i] = cnt > 0 ? acc[i] / (float)cnt : 0.0f;
}

/* rows [begin, end) of y [n * oh, ow, c] */
TGK_CLONES static void pool_rows_nhwc(void *ctx, int64_t begin, int64_t end)
{
    const pool_job *j = ctx;
    const plane_geom *g = &j->g;
    for (int64_t r = begin; r < end; r++) {
        int64_t oy = r % g->oh, hs = oy * g->sh - g->ph, a0, a1, unused, pa1;
        const float *x = j->x + r / g->oh * g->ih * g->iw * j->c;
        float *y = j->y + r * g->ow * j->c;
        taps(hs, g->kh, g->dh, g->ih, &a0, &a1);
        taps(hs, g->kh, g->dh, g->ih + g->ph, &unused, &pa1);
        for (int64_t ox = 0; ox < g->ow; ox++, y += j->c) {
            int64_t ws = ox * g->sw - g->pw, b0, b1, pb1;
            taps(ws, g->kw, g->dw, g->iw, &b0, &b1);
            taps(ws, g->kw, g->dw, g->iw + g->pw, &unused, &pb1);
            int64_t cnt = window_count(j, a0, a1, pa1, b0, b1, pb1), c0 = 0;
            for (; c0 + PC <= j->c; c0 += PC)
                window_nhwc(j, x + c0, hs, ws, a0, a1, b0, b1, cnt, PC, y + c0);
            if (c0 < j->c)
                window_nhwc(j, x + c0, hs, ws, a0, a1, b0, b1, cnt, j->c - c0, y + c0);
        }
    }
}

static void pool_run(const tgk_pool_desc *d, const float *x, float *y, bool max)
{
    pool_job j = {.c = d->c, .x = x, .y = y, .max = max, .include_pad = d->count_include_pad};
    if (d->n <= 0 || d->c <= 0 || !geom_from(d, &j.g))
        return;
    int64_t work = j.g.oh * j.g.ow * j.g.kh * j.g.kw;
    if (d->channels_last)
        tgk_parallel_for(d->n * j.g.oh, 1 + 32768 / (work / j.g.oh * d->c), pool_rows_nhwc, &j);
    else
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

typedef struct {
    int64_t c, ih, iw, oh, ow, ncb;     /* ncb: blocks of PC channels */
    const float *x;
    float *y;
} adaptive_nhwc_job;

/* y[0, nc) = the mean of nc channels from x over rows [h0, h1) and columns
 * [w0, w1): each row's sum apart, then the rows', so that a large bin (a
 * global pool of 112 x 112) adds no long serial chain of rounding */
static inline __attribute__((always_inline)) void bin_nhwc(
    const adaptive_nhwc_job *j, const float *x, int64_t h0, int64_t h1, int64_t w0, int64_t w1,
    const int64_t nc, float *y)
{
    float acc[PC], row[PC];
    for (int64_t i = 0; i < nc; i++)
        acc[i] = 0.0f;
    for (int64_t h = h0; h < h1; h++) {
        for (int64_t i = 0; i < nc; i++)
            row[i] = 0.0f;
        for (int64_t w = w0; w < w1; w++) {
            const float *px = x + (h * j->iw + w) * j->c;
            for (int64_t i = 0; i < nc; i++)
                row[i] += px[i];
        }
        for (int64_t i = 0; i < nc; i++)
            acc[i] += row[i];
    }
    float cnt = (float)((h1 - h0) * (w1 - w0));
    for (int64_t i = 0; i < nc; i++)
        y[i] = acc[i] / cnt;
}

/* tasks [begin, end): (image, output pixel, block of PC channels) */
TGK_CLONES static void adaptive_bins_nhwc(void *ctx, int64_t begin, int64_t end)
{
    const adaptive_nhwc_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t cb = t % j->ncb, pix = t / j->ncb, img = pix / (j->oh * j->ow);
        int64_t oy = pix / j->ow % j->oh, ox = pix % j->ow, c0 = cb * PC;
        int64_t h0 = oy * j->ih / j->oh, h1 = ((oy + 1) * j->ih + j->oh - 1) / j->oh;
        int64_t w0 = ox * j->iw / j->ow, w1 = ((ox + 1) * j->iw + j->ow - 1) / j->ow;
        const float *x = j->x + img * j->ih * j->iw * j->c + c0;
        float *y = j->y + pix * j->c + c0;
        if (j->c - c0 >= PC)
            bin_nhwc(j, x, h0, h1, w0, w1, PC, y);
        else
            bin_nhwc(j, x, h0, h1, w0, w1, j->c - c0, y);
    }
}

void tgk_adaptive_avg_pool_nhwc_f32(int64_t n, int64_t c, int64_t in_h, int64_t in_w,
                                    int64_t out_h, int64_t out_w, const float *x, float *y)
{
    if (n <= 0 || c <= 0 || in_h <= 0 || in_w <= 0 || out_h <= 0 || out_w <= 0)
        return;
    adaptive_nhwc_job j = {c, in_h, in_w, out_h, out_w, (c + PC - 1) / PC, x, y};
    /* a bin's floats summed by a task: the input's share of an output pixel */
    int64_t bin = (in_h / out_h + 1) * (in_w / out_w + 1) * PC;
    tgk_parallel_for(n * out_h * out_w * j.ncb, 1 + 32768 / bin, adaptive_bins_nhwc, &j);
}
