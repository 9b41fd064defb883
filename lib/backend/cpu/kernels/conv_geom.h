/* The geometry of a convolution, padded to 3 spatial dims (missing leading
 * dims are 1), shared by the float (conv.c, conv_dw.c) and int8 (qconv.c) kernels. */
#ifndef TGK_CONV_GEOM_H
#define TGK_CONV_GEOM_H

#include <stdbool.h>
#include <stdint.h>

#include "kernels.h"

typedef struct {
    int64_t in[3], out[3], ker[3], str[3], pad[3], dil[3];
    int64_t in_sp, out_sp, kprod;       /* products over the spatial dims */
} tgk_conv_geom;

/* Fill g from d; false when a size, stride or dilation is not positive or a
 * padding is negative. */
static inline bool tgk_conv_geom_from(const tgk_conv_desc *d, tgk_conv_geom *g)
{
    if (d->nsp < 1 || d->nsp > 3)
        return false;
    int off = 3 - d->nsp;
    g->in_sp = g->out_sp = g->kprod = 1;
    for (int i = 0; i < 3; i++) {
        bool have = i >= off;
        g->in[i] = have ? d->in[i - off] : 1;
        g->out[i] = have ? d->out[i - off] : 1;
        g->ker[i] = have ? d->kernel[i - off] : 1;
        g->str[i] = have ? d->stride[i - off] : 1;
        g->pad[i] = have ? d->pad[i - off] : 0;
        g->dil[i] = have ? d->dil[i - off] : 1;
        if (g->in[i] <= 0 || g->out[i] <= 0 || g->ker[i] <= 0 || g->str[i] <= 0 ||
            g->dil[i] <= 0 || g->pad[i] < 0)
            return false;
        g->in_sp *= g->in[i];
        g->out_sp *= g->out[i];
        g->kprod *= g->ker[i];
    }
    return true;
}

/* Output positions o in [0, n) whose input position o*str + off lies in
 * [0, lim): returns them as [*o0, *o1). */
static inline void tgk_conv_valid_range(int64_t n, int64_t str, int64_t off, int64_t lim,
                                        int64_t *o0, int64_t *o1)
{
    int64_t lo = off >= 0 ? 0 : (-off + str - 1) / str;
    int64_t hi = off < lim ? (lim - off + str - 1) / str : 0;
    lo = lo < n ? lo : n;
    hi = hi < n ? hi : n;
    *o0 = lo;
    *o1 = hi > lo ? hi : lo;
}

/* The input's dims with padding on both sides, as far as the windows reach
 * (the int8 kernels copy it so, padding as the zero point); returns their
 * product. */
static inline int64_t tgk_conv_padded_dims(const tgk_conv_geom *g, int64_t pd[3])
{
    int64_t prod = 1;
    for (int i = 0; i < 3; i++) {
        int64_t need = (g->out[i] - 1) * g->str[i] + (g->ker[i] - 1) * g->dil[i] + 1;
        pd[i] = need > g->in[i] + g->pad[i] ? need : g->in[i] + g->pad[i];
        prod *= pd[i];
    }
    return prod;
}

/* Depthwise (groups == c, k a multiple of c), relu, act and res included (conv_dw.c);
 * g from d. Returns 0, or -1 when scratch cannot be allocated. */
int tgk_conv_depthwise_f32(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *x,
                           const float *w, const float *b, float *y);

/* A patch convolution (conv_patch.c): kernel == stride, no padding, no
 * dilation. tgk_patch_panels is tgk_conv_gemm's cols over a tgk_patch_cols:
 * (image, group) i's channels at x + i * cg * in_sp. */
typedef struct {
    const float *x;
    int64_t cg;
    tgk_conv_geom g;
} tgk_patch_cols;
bool tgk_conv_is_patch(const tgk_conv_geom *g);
void tgk_patch_panels(const void *ctx, int64_t i, int64_t p0, int64_t p1, float *buf);

#endif
