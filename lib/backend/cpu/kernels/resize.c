/* Resizing 1 or 2 spatial dims (1-D runs as height 1): nearest, linear and
 * cubic interpolation, separable. Each output coordinate of an axis maps to
 * a source coordinate and then to up to four taps (clamped input indices)
 * with weights, once per call; an output element is the weighted sum over
 * the taps of both axes. Coordinates and weights follow PyTorch's CPU
 * kernels step for step (float arithmetic), so nearest picks the same
 * indices and bilinear gives the same sums. Parallel over planes. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#include <math.h>
#include <stdlib.h>

#define TAPS 4

typedef struct {
    int taps;
    int64_t *idx;               /* [out][TAPS] */
    float *w;                   /* [out][TAPS] */
} axis_table;

static float source_coord(const tgk_resize_desc *d, int ax, int64_t o)
{
    int64_t in = d->in[ax], out = d->out[ax];
    if (d->coord == TGK_COORD_ALIGN_CORNERS) {
        /* with a scale, ONNX's: the output length in * scale before flooring */
        float len = d->scale[ax] > 0 ? (float)((double)in * d->scale[ax]) : (float)out;
        return out > 1 ? (float)(in - 1) / (len - 1) * (float)o : 0.0f;
    }
    float r = d->scale[ax] > 0 ? (float)(1.0 / d->scale[ax]) : (float)in / (float)out;
    float c = (float)o + 0.5f;
    switch (d->coord) {
    case TGK_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? r * c - 0.5f : 0.0f;
    case TGK_COORD_ASYMMETRIC: return r * (float)o;
    case TGK_COORD_TF_HALF_PIXEL_FOR_NN: return r * c;
    case TGK_COORD_HALF_PIXEL_SYMMETRIC: {
        float adjust = (float)out * r / (float)in;
        return (float)in / 2 * (1 - adjust) + r * c - 0.5f;
    }
    default: return r * c - 0.5f;
    }
}

static int64_t clamp_index(int64_t i, int64_t in)
{
    return i < 0 ? 0 : i >= in ? in - 1 : i;
}

static int64_t nearest_index(const tgk_resize_desc *d, float s, int64_t in)
{
    float f = floorf(s);
    switch (d->nearest) {
    case TGK_NEAREST_ROUND_PREFER_FLOOR: f = s - f == 0.5f ? f : roundf(s); break;
    case TGK_NEAREST_ROUND_PREFER_CEIL: f = s - f == 0.5f ? f + 1 : roundf(s); break;
    case TGK_NEAREST_CEIL: f = ceilf(s); break;
    default: break;
    }
    /* a coordinate far outside (huge scales) must not overflow the conversion */
    return f < 0 ? 0 : f >= (float)in ? in - 1 : (int64_t)f;
}

/* Keys' cubic convolution weights for the taps at -1, 0, 1, 2 from floor,
 * in double: the polynomials cancel, and the table is small */
static void cubic_weights(double t, double a, float *w)
{
    double x1 = t + 1, x2 = 1 - t, x3 = 2 - t;
    w[0] = (float)(((a * x1 - 5 * a) * x1 + 8 * a) * x1 - 4 * a);
    w[1] = (float)(((a + 2) * t - (a + 3)) * t * t + 1);
    w[2] = (float)(((a + 2) * x2 - (a + 3)) * x2 * x2 + 1);
    w[3] = (float)(((a * x3 - 5 * a) * x3 + 8 * a) * x3 - 4 * a);
}

static void fill_entry(const tgk_resize_desc *d, int ax, int64_t o, int64_t *idx, float *w)
{
    int64_t in = d->in[ax];
    float s = source_coord(d, ax, o);
    if (d->mode == TGK_RESIZE_NEAREST) {
        idx[0] = nearest_index(d, s, in);
        w[0] = 1;
    } else if (d->mode == TGK_RESIZE_LINEAR) {
        /* PyTorch's guard_index_and_lambda on a coordinate clamped at 0 */
        s = s < 0 ? 0 : s;
        float f = floorf(s);
        int64_t i0 = f >= (float)in ? in - 1 : (int64_t)f;
        float l = s - (float)i0;
        l = l < 0 ? 0 : l > 1 ? 1 : l;
        idx[0] = i0;
        idx[1] = i0 + (i0 < in - 1);
        w[0] = 1 - l;
        w[1] = l;
    } else {
        float f = floorf(s), sum = 0;
        cubic_weights((double)s - f, d->cubic_a, w);
        for (int t = 0; t < TAPS; t++) {
            /* far outside (huge scales) every tap reads the edge */
            int64_t i = f < -(float)in - 2 ? -1 : f > (float)in + 2 ? in : (int64_t)f - 1 + t;
            if (d->exclude_outside && (i < 0 || i >= in))
                w[t] = 0;
            sum += w[t];
            idx[t] = clamp_index(i, in);
        }
        if (d->exclude_outside && sum != 0)
            for (int t = 0; t < TAPS; t++)
                w[t] /= sum;
    }
}

static int table_new(const tgk_resize_desc *d, int ax, axis_table *t)
{
    int64_t out = d->out[ax];
    t->taps = d->mode == TGK_RESIZE_NEAREST ? 1 : d->mode == TGK_RESIZE_LINEAR ? 2 : TAPS;
    t->idx = malloc(sizeof *t->idx * TAPS * (size_t)out);
    t->w = malloc(sizeof *t->w * TAPS * (size_t)out);
    if (!t->idx || !t->w)
        return -1;
    for (int64_t o = 0; o < out; o++)
        fill_entry(d, ax, o, t->idx + o * TAPS, t->w + o * TAPS);
    return 0;
}

typedef struct {
    int64_t ih, iw, oh, ow;
    axis_table h, w;
    const float *x;
    float *y;
} resize_job;

TGK_CLONES static void resize_planes(void *ctx, int64_t begin, int64_t end)
{
    const resize_job *j = ctx;
    const axis_table *th = &j->h, *tw = &j->w;
    for (int64_t p = begin; p < end; p++) {
        const float *x = j->x + p * j->ih * j->iw;
        float *y = j->y + p * j->oh * j->ow;
        for (int64_t oy = 0; oy < j->oh; oy++) {
            const int64_t *iy = th->idx + oy * TAPS;
            const float *wy = th->w + oy * TAPS;
            for (int64_t ox = 0; ox < j->ow; ox++) {
                const int64_t *ix = tw->idx + ox * TAPS;
                const float *wx = tw->w + ox * TAPS;
                float acc = 0;
                for (int a = 0; a < th->taps; a++) {
                    const float *row = x + iy[a] * j->iw;
                    float r = 0;
                    for (int b = 0; b < tw->taps; b++)
                        r += wx[b] * row[ix[b]];
                    acc += wy[a] * r;
                }
                y[oy * j->ow + ox] = acc;
            }
        }
    }
}

int tgk_resize_f32(const tgk_resize_desc *d, const float *x, float *y)
{
    if (d->nsp != 1 && d->nsp != 2)
        return -1;
    /* 1-D: a height of 1 that nearest maps onto itself */
    tgk_resize_desc e = *d;
    if (d->nsp == 1) {
        e = (tgk_resize_desc){.nsp = 2, .nc = d->nc, .in = {1, d->in[0]}, .out = {1, d->out[0]},
                              .scale = {0, d->scale[0]}, .mode = d->mode, .coord = d->coord,
                              .nearest = d->nearest, .cubic_a = d->cubic_a,
                              .exclude_outside = d->exclude_outside};
    }
    for (int i = 0; i < 2; i++)
        if (e.out[i] < 0 || e.in[i] < 0 || (e.out[i] > 0 && e.in[i] == 0))
            return -1;
    if (e.nc <= 0 || e.out[0] == 0 || e.out[1] == 0)
        return 0;
    axis_table h = {0}, w = {0};
    tgk_resize_desc eh = e;
    if (d->nsp == 1)
        eh.mode = TGK_RESIZE_NEAREST;
    int rc = -1;
    if (table_new(&eh, 0, &h) == 0 && table_new(&e, 1, &w) == 0) {
        resize_job j = {e.in[0], e.in[1], e.out[0], e.out[1], h, w, x, y};
        tgk_parallel_for(e.nc, 1 + 32768 / (e.out[0] * e.out[1]), resize_planes, &j);
        rc = 0;
    }
    free(h.idx);
    free(h.w);
    free(w.idx);
    free(w.w);
    return rc;
}
