/* The columns of a patch convolution (kernel == stride, no padding, no
 * dilation: ViT's and CLIP's patch embedding), where every input pixel falls
 * in one window. A pixel's column is then its window, a run of ker[2]
 * contiguous input floats per (channel, depth, row) of the kernel: the
 * panel's kw rows of such a (channel, depth, row) are the transpose of its
 * pixels' runs. im2col_panels (conv.c)
 * builds each of the K rows of cols for all the chunk's pixels instead,
 * which costs a 64-float line per row and for a patch kernel (K = 768 rows
 * of 16 pixels) took 3/4 of the convolution's time. */
#include "backend/cpu/kernels/conv_geom.h"
#include "backend/cpu/kernels/vecmath.h"

bool tgk_conv_is_patch(const tgk_conv_geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->ker[i] != g->str[i] || g->pad[i] || g->dil[i] != 1)
            return false;
    return true;
}

TGK_CLONES void tgk_patch_panels(const void *ctx, int64_t i, int64_t p0, int64_t p1, float *buf)
{
    const tgk_patch_cols *pc = ctx;
    const tgk_conv_geom *g = &pc->g;
    int64_t kw = g->ker[2], plane = g->out[1] * g->out[2];
    const float *xi = pc->x + i * pc->cg * g->in_sp;
    float *dst = buf;
    for (int64_t q0 = p0; q0 < p1; q0 += TGK_PANEL) {
        int64_t n = p1 - q0 < TGK_PANEL ? p1 - q0 : TGK_PANEL, at[TGK_PANEL];
        for (int64_t s = 0; s < n; s++) {   /* each pixel's window start */
            int64_t p = q0 + s, od = p / plane, oh = p % plane / g->out[2], ow = p % g->out[2];
            at[s] = (od * g->ker[0] * g->in[1] + oh * g->ker[1]) * g->in[2] + ow * kw;
        }
        /* a block of kw rows of the panel per (channel, kd, kh): a
         * transpose of the n pixels' runs, a line of the panel at a time */
        for (int64_t c = 0; c < pc->cg; c++)
            for (int64_t kd = 0; kd < g->ker[0]; kd++)
                for (int64_t kh = 0; kh < g->ker[1]; kh++, dst += kw * TGK_PANEL) {
                    const float *src = xi + ((c * g->in[0] + kd) * g->in[1] + kh) * g->in[2];
                    for (int64_t q = 0; q < kw; q++) {
                        float *line = dst + q * TGK_PANEL;
                        for (int64_t s = 0; s < n; s++)
                            line[s] = src[at[s] + q];
                        for (int64_t s = n; s < TGK_PANEL; s++)
                            line[s] = 0.0f;
                    }
                }
    }
}
