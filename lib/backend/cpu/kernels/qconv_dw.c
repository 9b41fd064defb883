/* The int8 depthwise convolution (one input channel a group), taken by
 * tgk_qconv_f32 (qconv.c) on every path: a GEMM of one input channel wastes
 * nearly all of its tile, so each channel's quantized plane is copied with a
 * border of the zero point and every output row sums its taps' rows in
 * 32-bit integers (vectorized: a widening multiply-add per tap, the same
 * exact sums on every ISA), then goes through the float epilogue of the
 * other paths: (float)(acc - zero * sum w) * scale + bias. */
#include <stdlib.h>
#include <string.h>

#include "conv_geom.h"
#include "kernels.h"
#include "qconv_dw.h"
#include "vecmath.h"    /* TGK_CLONES; -O3 in the interpreter's copy too */

bool tgk_qconv_dw_fits(const tgk_conv_desc *d)
{
    return !d->transposed && d->groups > 0 && d->c == d->groups && d->k % d->groups == 0;
}

static int64_t taps_of(const tgk_conv_desc *d)
{
    int64_t t = 1;
    for (int i = 0; i < d->nsp && i < 3; i++)
        t *= d->kernel[i];
    return t;
}

/* Per output channel its tap sum (s32), then the weights as they are. */
size_t tgk_qconv_dw_size(const tgk_conv_desc *d)
{
    return (size_t)d->k * (4 + (size_t)taps_of(d));
}

void tgk_qconv_dw_pack(const tgk_conv_desc *d, const int8_t *w, void *packed)
{
    int64_t taps = taps_of(d);
    int32_t *sum = packed;
    memcpy(sum + d->k, w, (size_t)(d->k * taps));
    for (int64_t k = 0; k < d->k; k++) {
        int32_t s = 0;
        for (int64_t t = 0; t < taps; t++)
            s += w[k * taps + t];
        sum[k] = s;
    }
}

typedef struct {
    const tgk_conv_geom *g;
    const uint8_t *xq;          /* [n * c][in_sp] */
    uint8_t *planes;            /* [n * c][padded], filled by the tasks */
    const int32_t *sum;
    const int8_t *w;
    const float *scale, *bias;
    float *y;
    int64_t c, kg, pd[3], zero;
} dw_job;

/* acc[o] += src[o * s] * w for o < n: widened, vectorized per ISA. */
TGK_CLONES static void tap_row(int32_t *restrict acc, const uint8_t *restrict src, int64_t s,
                               int32_t w, int64_t n)
{
    if (s == 1)
        for (int64_t o = 0; o < n; o++)
            acc[o] += (int32_t)src[o] * w;
    else
        for (int64_t o = 0; o < n; o++)
            acc[o] += (int32_t)src[o * s] * w;
}

/* Not cloned: with FMA the compiler would fuse the multiply and the add,
 * which the other paths round separately. */
static void epilogue_row(float *y, const int32_t *acc, int64_t n, int32_t corr, float s, float b)
{
    for (int64_t o = 0; o < n; o++)
        y[o] = (float)(acc[o] - corr) * s + b;
}

#define ROW 256     /* output columns summed at once */

/* Planes [b, e) of (image, input channel): padded once, then each output
 * channel of the group row by row. */
static void dw_planes(void *ctx, int64_t b, int64_t e)
{
    const dw_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    int64_t psp = j->pd[0] * j->pd[1] * j->pd[2], ow = g->out[2];
    int32_t acc[ROW];
    for (int64_t i = b; i < e; i++) {
        int64_t img = i / j->c, ch = i % j->c;
        const uint8_t *x = j->xq + i * g->in_sp;
        uint8_t *pl = j->planes + i * psp;
        memset(pl, (int)j->zero, (size_t)psp);
        for (int64_t i0 = 0; i0 < g->in[0]; i0++)
            for (int64_t i1 = 0; i1 < g->in[1]; i1++)
                memcpy(pl + ((i0 + g->pad[0]) * j->pd[1] + i1 + g->pad[1]) * j->pd[2] + g->pad[2],
                       x + (i0 * g->in[1] + i1) * g->in[2], (size_t)g->in[2]);
        for (int64_t m = 0; m < j->kg; m++) {
            int64_t k = ch * j->kg + m;
            const int8_t *w = j->w + k * g->kprod;
            int32_t corr = (int32_t)j->zero * j->sum[k];
            float s = j->scale[k], bias = j->bias ? j->bias[k] : 0.0f;
            float *y = j->y + (img * j->c * j->kg + k) * g->out_sp;
            for (int64_t o0 = 0; o0 < g->out[0]; o0++)
                for (int64_t o1 = 0; o1 < g->out[1]; o1++)
                    for (int64_t c0 = 0; c0 < ow; c0 += ROW) {
                        int64_t n = ow - c0 < ROW ? ow - c0 : ROW;
                        memset(acc, 0, sizeof acc);
                        for (int64_t a = 0, t = 0; a < g->ker[0]; a++)
                            for (int64_t bb = 0; bb < g->ker[1]; bb++)
                                for (int64_t cc = 0; cc < g->ker[2]; cc++, t++)
                                    tap_row(acc, pl + ((o0 * g->str[0] + a * g->dil[0]) * j->pd[1] +
                                                       o1 * g->str[1] + bb * g->dil[1]) * j->pd[2] +
                                                     c0 * g->str[2] + cc * g->dil[2],
                                            g->str[2], w[t], n);
                        epilogue_row(y + (o0 * g->out[1] + o1) * ow + c0, acc, n, corr, s, bias);
                    }
        }
    }
}

int tgk_qconv_dw_f32(const tgk_conv_desc *d, const uint8_t *xq, int32_t x_zero,
                     const void *packed, const float *scale, const float *bias, float *y)
{
    tgk_conv_geom g;
    if (!tgk_qconv_dw_fits(d) || !tgk_conv_geom_from(d, &g))
        return -1;
    dw_job j = {&g, xq, NULL, packed, (const int8_t *)((const int32_t *)packed + d->k), scale,
                bias, y, d->c, d->k / d->c, {0, 0, 0}, x_zero};
    int64_t psp = 1;
    for (int i = 0; i < 3; i++) {
        int64_t need = (g.out[i] - 1) * g.str[i] + (g.ker[i] - 1) * g.dil[i] + 1;
        j.pd[i] = need > g.in[i] + g.pad[i] ? need : g.in[i] + g.pad[i];
        psp *= j.pd[i];
    }
    uint8_t *planes = malloc((size_t)(d->n * d->c * psp));
    if (!planes)
        return -1;
    j.planes = planes;
    tgk_parallel_for(d->n * d->c, 1 + 16384 / (g.out_sp * g.kprod * j.kg), dw_planes, &j);
    free(planes);
    return 0;
}
