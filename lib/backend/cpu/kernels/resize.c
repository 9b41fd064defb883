/* Resizing 1 or 2 spatial dims (1-D runs as height 1): nearest, linear and
 * cubic interpolation, separable. Each output coordinate of an axis maps to
 * a source coordinate and then to up to four taps (clamped input indices)
 * with weights, once per call; an output element is the weighted sum over
 * the taps of both axes. Coordinates and weights follow PyTorch's CPU
 * kernels step for step (float arithmetic), so nearest picks the same
 * indices and bilinear gives the same sums; tf_crop_and_resize and
 * antialiasing follow ONNX's reference instead (double). Parallel over planes. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#include <math.h>
#include <stdlib.h>

#define TAPS 4
/* The widest antialiasing filter taken: 256 taps (scales down to about 1/64). */
#define AA_MAX (2 * TAPS * 32)

typedef struct {
    int taps, stride;
    int64_t *idx;               /* [out][stride] */
    float *w;                   /* [out][stride] */
    bool *outside;              /* [out]: tf_crop_and_resize's extrapolation; else NULL */
} axis_table;

static double onnx_coord(const tgk_resize_desc *d, int ax, int64_t o);

static float source_coord(const tgk_resize_desc *d, int ax, int64_t o)
{
    int64_t in = d->in[ax], out = d->out[ax];
    if (d->coord == TGK_COORD_TF_CROP_AND_RESIZE)
        return (float)onnx_coord(d, ax, o);
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

/* ONNX's reference coordinate, in double (tf_crop_and_resize and antialiasing
 * follow the reference rather than PyTorch). */
static double onnx_coord(const tgk_resize_desc *d, int ax, int64_t o)
{
    double in = (double)d->in[ax], sc = d->scale[ax] > 0 ? d->scale[ax] : (double)d->out[ax] / in;
    double len = sc * in, x = (double)o;       /* the output length before flooring */
    switch (d->coord) {
    case TGK_COORD_ALIGN_CORNERS: return len == 1 ? 0 : x * (in - 1) / (len - 1);
    case TGK_COORD_ASYMMETRIC: return x / sc;
    case TGK_COORD_TF_HALF_PIXEL_FOR_NN: return (x + 0.5) / sc;
    case TGK_COORD_PYTORCH_HALF_PIXEL: return len == 1 ? -0.5 : (x + 0.5) / sc - 0.5;
    case TGK_COORD_HALF_PIXEL_SYMMETRIC:
        return in / 2 * (1 - (double)d->out[ax] / len) + (x + 0.5) / sc - 0.5;
    case TGK_COORD_TF_CROP_AND_RESIZE: {
        double r0 = d->roi[ax][0], r1 = d->roi[ax][1];
        return (len == 1 ? (r1 - r0) * (in - 1) / 2 : x * (r1 - r0) * (in - 1) / (len - 1)) + r0 * (in - 1);
    }
    default: return (x + 0.5) / sc - 0.5;
    }
}

/* Antialiasing (linear or cubic, scale < 1): the filter's first tap offset and tap count. */
static int aa_taps(const tgk_resize_desc *d, int ax, int *start)
{
    double sc = d->scale[ax] > 0 ? d->scale[ax] : (double)d->out[ax] / (double)d->in[ax];
    *start = (int)floor((d->mode == TGK_RESIZE_LINEAR ? -1 : -2) / sc) + 1;
    return 2 - 2 * *start;
}

/* ONNX's reference step for step: weights from the ratio in (0, 1] (1 at an
 * integer coordinate), normalized; taps the n nearest indices of the input
 * padded by ceil(n/2) edge values (ties to the lower one). */
static void fill_antialias(const tgk_resize_desc *d, int ax, int64_t o, int n, int start, int64_t *idx, float *w)
{
    double in = (double)d->in[ax], sc = d->scale[ax] > 0 ? d->scale[ax] : (double)d->out[ax] / in;
    double x = onnx_coord(d, ax, o), fl = floor(x), ratio = x == fl ? 1 : x - fl, s = sc < 1 ? sc : 1, sum = 0;
    double a = d->cubic_a, c[AA_MAX];
    for (int t = 0; t < n; t++) {
        double v = fabs(s * ((double)(start + t) - ratio));
        if (d->mode == TGK_RESIZE_LINEAR)
            c[t] = v < 1 ? 1 - v : 0;
        else
            c[t] = v <= 1 ? ((a + 2) * v - (a + 3)) * v * v + 1
                 : v < 2 ? ((a * v - 5 * a) * v + 8 * a) * v - 4 * a : 0;
        sum += c[t];
    }
    int64_t pad = (n + 1) / 2, limit = d->in[ax] + 2 * pad;
    double first = ceil(x + (double)pad - n / 2.0);
    int64_t s0 = first < 0 ? 0 : first > (double)(limit - n) ? limit - n : (int64_t)first;
    double kept = 0;
    for (int t = 0; t < n; t++) {
        int64_t i = s0 + t - pad;
        c[t] /= sum;
        if (d->exclude_outside && (i < 0 || i >= d->in[ax]))
            c[t] = 0;
        kept += c[t];
        idx[t] = clamp_index(i, d->in[ax]);
    }
    for (int t = 0; t < n; t++)
        w[t] = (float)(d->exclude_outside && kept != 0 ? c[t] / kept : c[t]);
}

static int table_new(const tgk_resize_desc *d, int ax, axis_table *t)
{
    int64_t out = d->out[ax];
    int start = 0, n = 0;
    double sc = d->scale[ax] > 0 ? d->scale[ax] : (double)out / (double)d->in[ax];
    bool aa = d->antialias && d->mode != TGK_RESIZE_NEAREST && sc < 1;
    if (aa && ((n = aa_taps(d, ax, &start)) > AA_MAX || n < 1))
        return -1;
    t->taps = aa ? n : d->mode == TGK_RESIZE_NEAREST ? 1 : d->mode == TGK_RESIZE_LINEAR ? 2 : TAPS;
    t->stride = aa ? n : TAPS;
    t->idx = malloc(sizeof *t->idx * (size_t)t->stride * (size_t)(out ? out : 1));
    t->w = malloc(sizeof *t->w * (size_t)t->stride * (size_t)(out ? out : 1));
    t->outside = d->coord == TGK_COORD_TF_CROP_AND_RESIZE ? malloc(sizeof *t->outside * (size_t)(out ? out : 1))
                                                          : NULL;
    if (!t->idx || !t->w || (d->coord == TGK_COORD_TF_CROP_AND_RESIZE && !t->outside))
        return -1;
    for (int64_t o = 0; o < out; o++) {
        if (aa)
            fill_antialias(d, ax, o, n, start, t->idx + o * t->stride, t->w + o * t->stride);
        else
            fill_entry(d, ax, o, t->idx + o * t->stride, t->w + o * t->stride);
        if (t->outside) {
            double x = onnx_coord(d, ax, o);
            t->outside[o] = x < 0 || x > (double)(d->in[ax] - 1);
        }
    }
    return 0;
}

typedef struct {
    int64_t ih, iw, oh, ow;
    axis_table h, w;
    const float *x;
    float *y;
    float extrapolation;
} resize_job;

TGK_CLONES static void resize_planes(void *ctx, int64_t begin, int64_t end)
{
    const resize_job *j = ctx;
    const axis_table *th = &j->h, *tw = &j->w;
    for (int64_t p = begin; p < end; p++) {
        const float *x = j->x + p * j->ih * j->iw;
        float *y = j->y + p * j->oh * j->ow;
        for (int64_t oy = 0; oy < j->oh; oy++) {
            const int64_t *iy = th->idx + oy * th->stride;
            const float *wy = th->w + oy * th->stride;
            for (int64_t ox = 0; ox < j->ow; ox++) {
                const int64_t *ix = tw->idx + ox * tw->stride;
                const float *wx = tw->w + ox * tw->stride;
                float acc = 0;
                if (th->outside && (th->outside[oy] || tw->outside[ox])) {
                    y[oy * j->ow + ox] = j->extrapolation;
                    continue;
                }
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
                              .exclude_outside = d->exclude_outside, .antialias = d->antialias,
                              .roi = {{0, 1}, {d->roi[0][0], d->roi[0][1]}},
                              .extrapolation = d->extrapolation};
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
        resize_job j = {e.in[0], e.in[1], e.out[0], e.out[1], h, w, x, y, e.extrapolation};
        tgk_parallel_for(e.nc, 1 + 32768 / (e.out[0] * e.out[1]), resize_planes, &j);
        rc = 0;
    }
    free(h.idx);
    free(h.w);
    free(h.outside);
    free(w.idx);
    free(w.w);
    free(w.outside);
    return rc;
}
