/* The geometry of a convolution, padded to 3 spatial dims (missing leading
 * dims are 1), shared by the float (conv.c) and int8 (qconv.c) kernels. */
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

#endif
