/* Channels-last (NHWC) 2-D convolutions: x [n, h, w, c] -> y [n, oh, ow, k],
 * the weight packed once (at compile time) into panels of TGK_PANEL output
 * channels, [ceil(k/16)][taps * (c/groups)][16], so that a panel row is one
 * vector of 16 output channels and a pixel's channels are broadcasts. */
#include "backend/cpu/kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"

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

typedef struct {
    const tgk_conv_nhwc_desc *d;
    const float *x, *wp, *b;
    float *y;
    int64_t ldy, cg, kg, panels;
    bool depthwise;
} nhwc_job;

/* One output pixel's panel p: 16 lanes, the taps inside the image. */
TGK_CLONES static void pixel_panel(const nhwc_job *j, int64_t q, int64_t p)
{
    const tgk_conv_nhwc_desc *d = j->d;
    int64_t ow = q % d->out[1], oh = q / d->out[1] % d->out[0], img = q / d->out[1] / d->out[0];
    int64_t lanes = d->k - p * TGK_PANEL < TGK_PANEL ? d->k - p * TGK_PANEL : TGK_PANEL;
    int64_t rows = d->kernel[0] * d->kernel[1] * j->cg;
    /* a panel's channels are in one group (k / groups a multiple of 16, or one group) */
    int64_t g = j->depthwise ? 0 : p * TGK_PANEL / j->kg;
    float acc[TGK_PANEL];
    for (int64_t l = 0; l < TGK_PANEL; l++)
        acc[l] = j->b && l < lanes ? j->b[p * TGK_PANEL + l] : 0.0f;
    for (int64_t r = 0; r < d->kernel[0]; r++) {
        int64_t ih = oh * d->stride[0] - d->pad[0] + r * d->dil[0];
        if (ih < 0 || ih >= d->in[0])
            continue;
        for (int64_t s = 0; s < d->kernel[1]; s++) {
            int64_t iw = ow * d->stride[1] - d->pad[1] + s * d->dil[1];
            if (iw < 0 || iw >= d->in[1])
                continue;
            const float *xp = j->x + ((img * d->in[0] + ih) * d->in[1] + iw) * d->c;
            const float *wt = j->wp + (p * rows + (r * d->kernel[1] + s) * j->cg) * TGK_PANEL;
            if (j->depthwise) {
                for (int64_t l = 0; l < lanes; l++)
                    acc[l] += xp[p * TGK_PANEL + l] * wt[l];
                continue;
            }
            xp += g * j->cg;
            for (int64_t ic = 0; ic < j->cg; ic++)
                for (int64_t l = 0; l < TGK_PANEL; l++)
                    acc[l] += xp[ic] * wt[ic * TGK_PANEL + l];
        }
    }
    float *yp = j->y + q * j->ldy + p * TGK_PANEL;
    const float *rp = d->res ? d->res + q * d->k + p * TGK_PANEL : NULL;
    for (int64_t l = 0; l < lanes; l++) {
        float v = acc[l] + (rp ? rp[l] : 0.0f);
        yp[l] = d->relu && v < 0.0f ? 0.0f : v;
    }
    if (d->act)
        d->act(lanes, yp, yp);
}

static void pixel_tasks(void *ctx, int64_t begin, int64_t end)
{
    const nhwc_job *j = ctx;
    for (int64_t q = begin; q < end; q++)
        for (int64_t p = 0; p < j->panels; p++)
            pixel_panel(j, q, p);
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
    nhwc_job j = {.d = d, .x = x, .wp = wp, .b = b, .y = y, .ldy = d->y_ld ? d->y_ld : d->k,
                  .cg = d->c / d->groups, .kg = d->k / d->groups,
                  .panels = (d->k + TGK_PANEL - 1) / TGK_PANEL,
                  .depthwise = d->groups > 1 && d->groups == d->c && d->c == d->k};
    int64_t pixels = d->n * d->out[0] * d->out[1];
    double per_pixel = (double)d->k * (double)(d->kernel[0] * d->kernel[1] * j.cg);
    tgk_parallel_for(pixels, (int64_t)(TGK_TASK_MIN_MACS / per_pixel) + 1, pixel_tasks, &j);
    return 0;
}
