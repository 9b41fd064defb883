/* Channels-last (NHWC) 2-D convolutions: x [n, h, w, c] -> y [n, oh, ow, k],
 * the weight packed once (at compile time) into panels of TGK_PANEL output
 * channels, [ceil(k/16)][taps * (c/groups)][16], so that a panel row is one
 * vector of 16 output channels and a pixel's channels are broadcasts.
 * Depthwise layers go to conv_dw_nhwc.c. */
#include "backend/cpu/kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

bool tgk_conv_nhwc_supported(int64_t c, int64_t k, int64_t groups)
{
    if (c <= 0 || k <= 0 || groups <= 0 || c % groups || k % groups)
        return false;
    return groups == 1 || (groups == c && c == k) ||
           ((c / groups) % TGK_PANEL == 0 && (k / groups) % TGK_PANEL == 0);
}

int64_t tgk_conv_nhwc_packed_size(int64_t c, int64_t k, int64_t groups, int64_t kh, int64_t kw)
{
    return tgk_packed_size(k, kh * kw * (c / groups));
}

/* Panel row (t, ic) of output channel o is w[o][ic][t]: taps are the
 * weight's fastest axis and the panel's slower one, so this is a gather,
 * not tgk_pack_weight_f32's rows (k-contiguous). Lanes past k are zeros. */
void tgk_pack_conv_nhwc_f32(const float *w, int64_t c, int64_t k, int64_t groups, int64_t kh,
                            int64_t kw, float *packed)
{
    int64_t cg = c / groups, taps = kh * kw, rows = taps * cg;
    for (int64_t p = 0; p < (k + TGK_PANEL - 1) / TGK_PANEL; p++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t ic = 0; ic < cg; ic++) {
                float *dst = packed + (p * rows + t * cg + ic) * TGK_PANEL;
                for (int64_t l = 0; l < TGK_PANEL; l++) {
                    int64_t o = p * TGK_PANEL + l;
                    dst[l] = o < k ? w[(o * cg + ic) * taps + t] : 0.0f;
                }
            }
}

/* ---- one group or groups of 16-channel multiples: the packed GEMM's tile ----
 * Output pixels are the register tile's rows and output channels its panels
 * (tgk_igemm_f32): each row reads its pixel's taps in place, a tap's c/groups
 * channels contiguous (channels-last), at any stride and dilation; a tap in
 * the padding reads a zero vector. Nothing is packed or copied at run time. */
typedef struct {
    const tgk_conv_nhwc_desc *d;
    const float *x, *zero;      /* x: the input, or (runs) its zero-padded copy */
    int64_t h, w;               /* x's rows and columns */
} conv_rows;

/* the output pixel after (ow, oh) of the image at *xi (images h * w * c apart) */
static inline void next_pixel(const conv_rows *cr, int64_t *ow, int64_t *oh, const float **xi)
{
    if (++*ow < cr->d->out[1])
        return;
    *ow = 0;
    if (++*oh == cr->d->out[0])
        *oh = 0, *xi += cr->h * cr->w * cr->d->c;
}

/* rows [r0, r0 + n): output pixels, their taps' input pixels (the pixel's
 * coordinates divided out once, then stepped) */
static void tap_rows(const void *ctx, int64_t r0, int64_t n, const float **ptr)
{
    const conv_rows *cr = ctx;
    const tgk_conv_nhwc_desc *d = cr->d;
    int64_t kw = d->kernel[1], ow = r0 % d->out[1], oh = r0 / d->out[1] % d->out[0];
    const float *xi = cr->x + r0 / d->out[1] / d->out[0] * cr->h * cr->w * d->c;
    for (int64_t i = 0; i < n; i++, next_pixel(cr, &ow, &oh, &xi)) {
        int64_t ih0 = oh * d->stride[0] - d->pad[0], iw0 = ow * d->stride[1] - d->pad[1];
        for (int64_t r = 0; r < d->kernel[0]; r++) {
            int64_t ih = ih0 + r * d->dil[0];
            for (int64_t s = 0; s < kw; s++) {
                int64_t iw = iw0 + s * d->dil[1];
                bool in = ih >= 0 && ih < d->in[0] && iw >= 0 && iw < d->in[1];
                ptr[(r * kw + s) * TGK_IGEMM_ROWS + i] =
                    in ? xi + (ih * d->in[1] + iw) * d->c : cr->zero;
            }
        }
    }
}

/* A few channels (a stem's 3): each kernel row's kw taps (dilation 1) are
 * one run of kw * c floats of the unpadded or zero-padded input, and their
 * panel rows are consecutive too, so the tile's inner loop is kw * c long,
 * not c (one copy of a 3-channel input is cheap; 7 x 7 pointer loads per
 * 3 channels were not: 44% of peak on ResNet's 7x7/2 stem). */
static void run_rows(const void *ctx, int64_t r0, int64_t n, const float **ptr)
{
    const conv_rows *cr = ctx;
    const tgk_conv_nhwc_desc *d = cr->d;
    int64_t ow = r0 % d->out[1], oh = r0 / d->out[1] % d->out[0];
    const float *xi = cr->x + r0 / d->out[1] / d->out[0] * cr->h * cr->w * d->c;
    for (int64_t i = 0; i < n; i++, next_pixel(cr, &ow, &oh, &xi))
        for (int64_t r = 0; r < d->kernel[0]; r++)
            ptr[r * TGK_IGEMM_ROWS + i] =
                xi + ((oh * d->stride[0] + r * d->dil[0]) * cr->w + ow * d->stride[1]) * d->c;
}

typedef struct {
    const tgk_conv_nhwc_desc *d;
    const float *x;
    float *xp;
    int64_t h, w;               /* xp's */
} pad_job;

/* rows [begin, end) of the padded images: zeros, the input's row inside */
static void pad_rows(void *ctx, int64_t begin, int64_t end)
{
    const pad_job *pj = ctx;
    const tgk_conv_nhwc_desc *d = pj->d;
    int64_t c = d->c;
    for (int64_t q = begin; q < end; q++) {
        float *dst = pj->xp + q * pj->w * c;
        int64_t ih = q % pj->h - d->pad[0];
        memset(dst, 0, sizeof *dst * (size_t)(pj->w * c));
        if (ih >= 0 && ih < d->in[0])
            memcpy(dst + d->pad[1] * c, pj->x + ((q / pj->h * d->in[0]) + ih) * d->in[1] * c,
                   sizeof *dst * (size_t)(d->in[1] * c));
    }
}

static bool valid(const tgk_conv_nhwc_desc *d)
{
    if (d->n < 0 || !tgk_conv_nhwc_supported(d->c, d->k, d->groups) ||
        (d->y_ld && d->y_ld < d->k) || (d->relu && d->act))
        return false;
    for (int a = 0; a < 2; a++) {
        int64_t span = d->dil[a] * (d->kernel[a] - 1) + 1;
        if (d->in[a] < 1 || d->kernel[a] < 1 || d->stride[a] < 1 || d->dil[a] < 1 ||
            d->pad[a] < 0 || d->in[a] + 2 * d->pad[a] < span ||
            d->out[a] != (d->in[a] + 2 * d->pad[a] - span) / d->stride[a] + 1)
            return false;
    }
    return true;
}

int tgk_conv_nhwc_f32(const tgk_conv_nhwc_desc *d, const float *x, const float *wp,
                      const float *b, float *y)
{
    if (!valid(d))
        return -1;
    if (d->groups > 1 && d->groups == d->c && d->c == d->k)   /* depthwise: conv_dw_nhwc.c */
        return tgk_conv_dw_nhwc_f32(d, x, wp, b, y);
    bool padded = d->pad[0] > 0 || d->pad[1] > 0;
    bool runs = d->groups == 1 && d->c < TGK_PANEL && d->kernel[1] > 1 && d->dil[1] == 1;
    conv_rows cr = {.d = d, .x = x, .h = d->in[0], .w = d->in[1]};
    float *buf = NULL;
    if (runs && padded) {
        pad_job pj = {d, x, NULL, d->in[0] + 2 * d->pad[0], d->in[1] + 2 * d->pad[1]};
        buf = pj.xp = malloc(sizeof *buf * (size_t)(d->n * pj.h * pj.w * d->c));
        if (!buf)
            return -1;
        tgk_parallel_for(d->n * pj.h, 64, pad_rows, &pj);
        cr.x = buf, cr.h = pj.h, cr.w = pj.w;
    } else if (padded && !(buf = calloc((size_t)d->c, sizeof *buf))) {
        return -1;
    }
    cr.zero = buf;
    tgk_igemm g = {.M = d->n * d->out[0] * d->out[1], .N = d->k / d->groups,
                   .taps = runs ? d->kernel[0] : d->kernel[0] * d->kernel[1],
                   .C = runs ? d->kernel[1] * d->c : d->c / d->groups, .groups = d->groups,
                   .rows = runs ? run_rows : tap_rows, .ctx = &cr, .wp = wp, .b = b,
                   .res = d->res, .y = y, .ldy = d->y_ld ? d->y_ld : d->k, .ldres = d->k,
                   .act = d->relu ? tgk_vec_relu_f32 : d->act};
    int rc = tgk_igemm_f32(&g);
    free(buf);
    return rc;
}
