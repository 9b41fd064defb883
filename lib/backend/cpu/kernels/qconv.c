/* Quantized convolution: the input is quantized to u8 once; depthwise ones
 * (one input channel a group) take qconv_dw.c; weights packed while the VNNI
 * path is in use, for convolutions with enough channels a group, take the
 * panel path (qconv_panel.c: pixels as the GEMM's columns, im2col into VNNI
 * panels); the others the row path here: the input in
 * channels-last order, so that for each (image, group) the window of an
 * output position is a handful of contiguous runs of c/groups bytes, one per
 * kernel tap: a slab of positions is gathered into rows that way (padding as
 * the zero point) and multiplied by tgk_qgemm_u8s8 with weights packed in the
 * same tap-major order. The integer sums are exact, so every CPU path gives
 * the same output. */
#include <stdlib.h>
#include <string.h>

#include "conv_geom.h"
#include "kernels.h"
#include "qconv_paths.h"
#include "qgemm.h"
#include "qquant.h"
#include "vecmath.h"    /* -O3 in the interpreter's copy too; no FMA: exact */

#define SLAB_BYTES (1 << 20)
/* The packed weights start with their layout, then its bytes from here. */
#define HEADER 64
enum { LAYOUT_ROWS = 1, LAYOUT_PANELS = 2, LAYOUT_DEPTHWISE = 3 };


/* The int8 path: not transposed, channels divisible by groups. */
static int qgeom_from(const tgk_conv_desc *d, tgk_conv_geom *g)
{
    if (d->transposed || d->groups <= 0 || d->n < 0 || d->c <= 0 || d->k <= 0 ||
        d->c % d->groups || d->k % d->groups)
        return -1;
    return tgk_conv_geom_from(d, g) ? 0 : -1;
}

static int64_t kprod_of(const tgk_conv_desc *d)
{
    int64_t p = 1;
    for (int i = 0; i < d->nsp && i < 3; i++)
        p *= d->kernel[i];
    return p;
}

static int32_t layout_for(const tgk_conv_desc *d)
{
    if (tgk_qconv_dw_fits(d))
        return LAYOUT_DEPTHWISE;
    return !strcmp(tgk_qgemm_path(), "avx512vnni") && tgk_qconv_panel_fits(d) ? LAYOUT_PANELS
                                                                             : LAYOUT_ROWS;
}

static size_t rows_size(const tgk_conv_desc *d)
{
    return (size_t)d->groups * tgk_qgemm_packed_size(d->k / d->groups,
                                                     d->c / d->groups * kprod_of(d));
}

size_t tgk_qconv_packed_size(const tgk_conv_desc *d)
{
    int32_t layout = layout_for(d);
    return HEADER + (layout == LAYOUT_DEPTHWISE ? tgk_qconv_dw_size(d)
                     : layout == LAYOUT_PANELS  ? tgk_qconv_panel_size(d)
                                                : rows_size(d));
}

/* Rows: each group's [kg, cg, taps] weights reordered to [kg, taps, cg], the
 * gather's order, then packed. */
int tgk_qconv_pack(const tgk_conv_desc *d, const int8_t *w, void *packed)
{
    int32_t layout = layout_for(d);
    memset(packed, 0, HEADER);
    memcpy(packed, &layout, sizeof layout);
    packed = (char *)packed + HEADER;
    if (layout == LAYOUT_DEPTHWISE) {
        tgk_qconv_dw_pack(d, w, packed);
        return 0;
    }
    if (layout == LAYOUT_PANELS) {
        tgk_qconv_panel_pack(d, w, packed);
        return 0;
    }
    int64_t kg = d->k / d->groups, cg = d->c / d->groups, taps = kprod_of(d), kk = cg * taps;
    size_t one = tgk_qgemm_packed_size(kg, kk);
    int8_t *t = malloc((size_t)(kg * kk > 0 ? kg * kk : 1));
    if (!t)
        return -1;
    for (int64_t gi = 0; gi < d->groups; gi++) {
        const int8_t *wg = w + gi * kg * kk;
        for (int64_t k = 0; k < kg; k++)
            for (int64_t c = 0; c < cg; c++)
                for (int64_t p = 0; p < taps; p++)
                    t[k * kk + p * cg + c] = wg[k * kk + c * taps + p];
        tgk_qgemm_pack(kg, kk, t, (char *)packed + gi * one);
    }
    free(t);
    return 0;
}

typedef struct {
    const tgk_conv_desc *d;
    const int8_t *w;
} conv_pack;

static int fill_conv(void *ctx, void *buf)
{
    const conv_pack *c = ctx;
    return tgk_qconv_pack(c->d, c->w, buf);
}

void *tgk_qconv_pack_once(void **slot, const tgk_conv_desc *d, const int8_t *w)
{
    conv_pack c = {d, w};
    return tgk_qpack_once(slot, tgk_qconv_packed_size(d), fill_conv, &c);
}

typedef struct {
    const tgk_conv_geom *g;
    const uint8_t *xq;          /* this image, channels last: [in_sp, c] */
    int64_t c, cg, c0, p0;      /* channels, per group, the group's first; first position */
    uint8_t zero;
    uint8_t *rows;              /* [positions, taps * cg], 8 bytes of slack after */
    const int64_t *delta;       /* per tap: its input offset from the window's corner */
    int64_t lo[3], hi[3];       /* output positions whose window lies inside the input */
} gather_job;

/* Copy n <= 8 bytes as one 8-byte move: the bytes past n are garbage that the
 * next tap overwrites (the caller keeps slack after both buffers). */
static inline void copy8(uint8_t *dst, const uint8_t *src)
{
    uint64_t v;
    memcpy(&v, src, 8);
    memcpy(dst, &v, 8);
}

/* Rows [r0, r1) of the slab: for each tap, the cg channels of the input
 * position under it, or the zero point outside the image. */
static void gather_rows(void *ctx, int64_t r0, int64_t r1)
{
    const gather_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    int64_t cg = j->cg, kk = cg * g->kprod;
    int64_t p = j->p0 + r0, o[3] = {p / (g->out[1] * g->out[2]), p / g->out[2] % g->out[1],
                                    p % g->out[2]};
    for (int64_t r = r0; r < r1; r++) {
        if (r > r0 && ++o[2] == g->out[2]) {   /* the next position, without dividing */
            o[2] = 0;
            if (++o[1] == g->out[1])
                o[1] = 0, o[0]++;
        }
        uint8_t *dst = j->rows + r * kk;
        if (o[0] >= j->lo[0] && o[0] < j->hi[0] && o[1] >= j->lo[1] && o[1] < j->hi[1] &&
            o[2] >= j->lo[2] && o[2] < j->hi[2]) {
            /* the whole window inside: one copy per tap from the corner */
            const uint8_t *corner = j->xq + j->c0 +
                ((o[0] * g->str[0] - g->pad[0]) * g->in[1] * g->in[2] +
                 (o[1] * g->str[1] - g->pad[1]) * g->in[2] + (o[2] * g->str[2] - g->pad[2])) * j->c;
            if (cg > 8) {
                for (int64_t t = 0; t < g->kprod; t++)
                    memcpy(dst + t * cg, corner + j->delta[t], (size_t)cg);
                continue;
            }
            int64_t t = 0;
            for (; t + 1 < g->kprod; t++) copy8(dst + t * cg, corner + j->delta[t]);
            for (int64_t k = 0; k < cg; k++)    /* the last tap exactly: the row ends there */
                dst[t * cg + k] = corner[j->delta[t] + k];
            continue;
        }
        for (int64_t a = 0; a < g->ker[0]; a++) {
            int64_t i0 = o[0] * g->str[0] - g->pad[0] + a * g->dil[0];
            bool in0 = i0 >= 0 && i0 < g->in[0];
            for (int64_t b = 0; b < g->ker[1]; b++) {
                int64_t i1 = o[1] * g->str[1] - g->pad[1] + b * g->dil[1];
                bool in1 = in0 && i1 >= 0 && i1 < g->in[1];
                const uint8_t *line = j->xq + ((i0 * g->in[1] + i1) * g->in[2]) * j->c + j->c0;
                for (int64_t c = 0; c < g->ker[2]; c++, dst += cg) {
                    int64_t i2 = o[2] * g->str[2] - g->pad[2] + c * g->dil[2];
                    bool in = in1 && i2 >= 0 && i2 < g->in[2];
                    if (cg <= 8) {      /* a few bytes (an RGB input): no library call */
                        for (int64_t k = 0; k < cg; k++)
                            dst[k] = in ? line[i2 * j->c + k] : j->zero;
                    } else if (in) {
                        memcpy(dst, line + i2 * j->c, (size_t)cg);
                    } else {
                        memset(dst, j->zero, (size_t)cg);
                    }
                }
            }
        }
    }
}

/* [c, sp] bytes to [sp, c], in tiles that stay in L1. */
static void to_channels_last(const uint8_t *src, int64_t c, int64_t sp, uint8_t *dst)
{
    for (int64_t s0 = 0; s0 < sp; s0 += 64)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t s = s0; s < s0 + 64 && s < sp; s++)
                dst[s * c + ch] = src[ch * sp + s];
}

/* The row path over xq, the whole input quantized. */
static int rows_conv(const tgk_conv_desc *d, const tgk_conv_geom *gp, const uint8_t *xq,
                     int32_t x_zero, const void *packed, const float *sc, const float *bias,
                     const tgk_qact *a)
{
    const tgk_conv_geom g = *gp;
    int64_t cg = d->c / d->groups, kg = d->k / d->groups, kk = cg * g.kprod;
    int64_t slab = SLAB_BYTES / kk > 16 ? SLAB_BYTES / kk : 16;
    if (slab > g.out_sp)
        slab = g.out_sp;
    int64_t per_img = d->c * g.in_sp;
    uint8_t *xt = malloc((size_t)per_img + 8), *rows = malloc((size_t)(slab * kk) + 8);
    void *out = malloc(sizeof(float) * (size_t)(slab * kg));   /* floats, or a->yq's sums */
    int64_t *delta = malloc(sizeof *delta * (size_t)g.kprod);
    if (!xt || !rows || !out || !delta) {
        free(xt), free(rows), free(out), free(delta);
        return -1;
    }
    memset(xt + per_img, 0, 8);
    for (int64_t a = 0, t = 0; a < g.ker[0]; a++)
        for (int64_t b = 0; b < g.ker[1]; b++)
            for (int64_t c = 0; c < g.ker[2]; c++, t++)
                delta[t] = ((a * g.dil[0] * g.in[1] + b * g.dil[1]) * g.in[2] + c * g.dil[2]) * d->c;
    int64_t lo[3], hi[3];           /* o*str - pad >= 0 and o*str - pad + (ker-1)*dil < in */
    for (int i = 0; i < 3; i++) {
        lo[i] = (g.pad[i] + g.str[i] - 1) / g.str[i];
        int64_t last = g.in[i] - 1 + g.pad[i] - (g.ker[i] - 1) * g.dil[i];
        hi[i] = last < 0 ? 0 : last / g.str[i] + 1;
        hi[i] = hi[i] > g.out[i] ? g.out[i] : hi[i];
    }
    size_t gsize = tgk_qgemm_packed_size(kg, kk);
    for (int64_t img = 0; img < d->n; img++) {
        to_channels_last(xq + img * per_img, d->c, g.in_sp, xt);
        for (int64_t gi = 0; gi < d->groups; gi++)
            for (int64_t p0 = 0; p0 < g.out_sp; p0 += slab) {
                int64_t np = g.out_sp - p0 < slab ? g.out_sp - p0 : slab;
                gather_job j = {&g, xt, d->c, cg, gi * cg, p0, (uint8_t)x_zero, rows, delta,
                                {lo[0], lo[1], lo[2]}, {hi[0], hi[1], hi[2]}};
                tgk_parallel_for(np, 1 + 65536 / kk, gather_rows, &j);
                /* positions are the GEMM's rows: out [positions, kg], then
                 * transposed to y [kg, positions] in tiles of 64 positions,
                 * so the strided reads stay in L1 */
                const char *pk = (const char *)packed + gi * gsize;
                int64_t at = (img * d->k + gi * kg) * g.out_sp + p0;
                if (a->yq) {    /* the sums, requantized as they are transposed */
                    int32_t *acc = out;
                    const float *m = sc + gi * kg, *cb = bias + gi * kg;
                    tgk_qgemm_u8s8(np, kg, kk, rows, kk, x_zero, pk, acc, kg);
                    for (int64_t r0 = 0; r0 < np; r0 += 64)
                        for (int64_t q = 0; q < kg; q++)
                            for (int64_t r = r0; r < r0 + 64 && r < np; r++)
                                a->yq[at + q * g.out_sp + r] =
                                    tgk_requant1(acc[r * kg + q], m[q], cb[q], (float)a->y_lo,
                                                 (float)a->y_hi);
                    continue;
                }
                float *yf = out;
                tgk_qgemm_u8s8_f32(np, kg, kk, rows, kk, x_zero, pk, sc + gi * kg,
                                   bias ? bias + gi * kg : NULL, yf, kg);
                for (int64_t r0 = 0; r0 < np; r0 += 64)
                    for (int64_t q = 0; q < kg; q++)
                        for (int64_t r = r0; r < r0 + 64 && r < np; r++)
                            a->y[at + q * g.out_sp + r] = yf[r * kg + q];
            }
    }
    free(xt), free(rows), free(out), free(delta);
    return 0;
}

/* The row path from a's input (quantized whole first when float). */
static int rows_conv_act(const tgk_conv_desc *d, const tgk_conv_geom *g, const tgk_qact *a,
                         const void *packed, const float *sc, const float *bias)
{
    int64_t nx = d->n * d->c * g->in_sp;
    uint8_t *xq = a->xq ? NULL : malloc((size_t)(nx > 0 ? nx : 1));
    int rc = -1;
    if (xq || a->xq) {
        if (xq)
            tgk_quantize_u8(nx, a->x, a->x_scale, a->x_zero, xq);
        rc = rows_conv(d, g, xq ? xq : a->xq, a->x_zero, packed, sc, bias, a);
    }
    free(xq);
    return rc;
}

int tgk_qconv(const tgk_conv_desc *d, const tgk_qact *act, const void *packed,
              const float *w_scale, const float *bias)
{
    tgk_conv_geom g;
    int32_t layout;
    memcpy(&layout, packed, sizeof layout);
    if (qgeom_from(d, &g) || (layout == LAYOUT_PANELS && !tgk_qconv_panel_fits(d)) ||
        (layout == LAYOUT_DEPTHWISE && !tgk_qconv_dw_fits(d)) || !tgk_qact_ok(act))
        return -1;
    tgk_qact a = tgk_qact_pre(act);
    float *sc = malloc(sizeof *sc * (size_t)(2 * d->k + 1));
    if (!sc)
        return -1;
    if (a.dynamic) {
        float lo, hi;
        tgk_minmax_f32(d->n * d->c * g.in_sp, a.x, &lo, &hi);
        tgk_qparams_u8(lo, hi, &a.x_scale, &a.x_zero);
    }
    for (int64_t k = 0; k < d->k; k++)
        sc[k] = a.x_scale * w_scale[k];
    if (a.yq) {  /* the paths' scale and bias become m and c (qquant.h) */
        for (int64_t k = 0; k < d->k; k++)
            tgk_requant_params(sc[k], bias ? bias[k] : 0.0f, a.y_scale, a.y_zero, &sc[k],
                               &sc[d->k + k]);
        bias = sc + d->k;
    }
    const char *w = (const char *)packed + HEADER;
    int rc = layout == LAYOUT_DEPTHWISE ? tgk_qconv_dw(d, &a, w, sc, bias)
             : layout == LAYOUT_PANELS  ? tgk_qconv_panel(d, &a, w, sc, bias)
                                        : rows_conv_act(d, &g, &a, w, sc, bias);
    free(sc);
    if (rc == 0 && act->y_act)
        tgk_lut_u8(d->n * d->k * g.out_sp, act->lut, a.yq);
    return rc;
}

int tgk_qconv_f32(const tgk_conv_desc *d, const float *x, float x_scale, int32_t x_zero,
                  int dynamic, const void *packed, const float *w_scale, const float *bias,
                  float *y)
{
    tgk_qact a = {.x = x, .x_scale = x_scale, .x_zero = x_zero, .dynamic = dynamic, .y = y};
    return tgk_qconv(d, &a, packed, w_scale, bias);
}
