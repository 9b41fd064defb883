/* Quantized convolution: the input is quantized to u8 once, then for each
 * (image, group) a slab of output positions is gathered into rows of
 * c/groups * prod(kernel) bytes (im2col with positions as rows, padding as the
 * zero point) and multiplied with the packed s8 weights by tgk_qgemm_u8s8.
 * The integer sums are exact, so every CPU path gives the same output. */
#include <stdlib.h>

#include "kernels.h"
#include "qgemm.h"

#define SLAB_BYTES (1 << 20)

typedef struct {
    int64_t in[3], out[3], ker[3], str[3], pad[3], dil[3];
    int64_t in_sp, out_sp, kprod;
} qgeom;

static int qgeom_from(const tgk_conv_desc *d, qgeom *g)
{
    if (d->nsp < 1 || d->nsp > 3 || d->transposed || d->groups <= 0 || d->n < 0 ||
        d->c <= 0 || d->k <= 0 || d->c % d->groups || d->k % d->groups)
        return -1;
    int off = 3 - d->nsp;
    g->in_sp = g->out_sp = g->kprod = 1;
    for (int i = 0; i < 3; i++) {
        int have = i >= off;
        g->in[i] = have ? d->in[i - off] : 1;
        g->out[i] = have ? d->out[i - off] : 1;
        g->ker[i] = have ? d->kernel[i - off] : 1;
        g->str[i] = have ? d->stride[i - off] : 1;
        g->pad[i] = have ? d->pad[i - off] : 0;
        g->dil[i] = have ? d->dil[i - off] : 1;
        if (g->in[i] <= 0 || g->out[i] <= 0 || g->ker[i] <= 0 || g->str[i] <= 0 ||
            g->dil[i] <= 0 || g->pad[i] < 0)
            return -1;
        g->in_sp *= g->in[i];
        g->out_sp *= g->out[i];
        g->kprod *= g->ker[i];
    }
    return 0;
}

size_t tgk_qconv_packed_size(int64_t k, int64_t c, int64_t groups, int64_t kprod)
{
    return (size_t)groups * tgk_qgemm_packed_size(k / groups, c / groups * kprod);
}

typedef struct {
    const qgeom *g;
    const uint8_t *xq;          /* this image and group: cg channels */
    int64_t cg, p0;             /* channels per group, first output position */
    uint8_t zero;
    uint8_t *rows;              /* [positions, cg * kprod] */
} gather_job;

static void gather_rows(void *ctx, int64_t r0, int64_t r1)
{
    const gather_job *j = ctx;
    const qgeom *g = j->g;
    int64_t kk = j->cg * g->kprod;
    for (int64_t r = r0; r < r1; r++) {
        int64_t p = j->p0 + r, o[3] = {p / (g->out[1] * g->out[2]), p / g->out[2] % g->out[1],
                                       p % g->out[2]};
        uint8_t *row = j->rows + r * kk;
        for (int64_t ci = 0; ci < j->cg; ci++) {
            const uint8_t *xc = j->xq + ci * g->in_sp;
            for (int64_t a = 0; a < g->ker[0]; a++) {
                int64_t i0 = o[0] * g->str[0] - g->pad[0] + a * g->dil[0];
                for (int64_t b = 0; b < g->ker[1]; b++) {
                    int64_t i1 = o[1] * g->str[1] - g->pad[1] + b * g->dil[1];
                    for (int64_t c = 0; c < g->ker[2]; c++) {
                        int64_t i2 = o[2] * g->str[2] - g->pad[2] + c * g->dil[2];
                        bool in = i0 >= 0 && i0 < g->in[0] && i1 >= 0 && i1 < g->in[1] &&
                                  i2 >= 0 && i2 < g->in[2];
                        *row++ = in ? xc[(i0 * g->in[1] + i1) * g->in[2] + i2] : j->zero;
                    }
                }
            }
        }
    }
}

int tgk_qconv_f32(const tgk_conv_desc *d, const float *x, float x_scale, int32_t x_zero,
                  int dynamic, const void *packed, const float *w_scale, const float *bias,
                  float *y)
{
    qgeom g;
    if (qgeom_from(d, &g))
        return -1;
    int64_t cg = d->c / d->groups, kg = d->k / d->groups, kk = cg * g.kprod;
    int64_t slab = SLAB_BYTES / kk > 16 ? SLAB_BYTES / kk : 16;
    if (slab > g.out_sp)
        slab = g.out_sp;
    int64_t nx = d->n * d->c * g.in_sp;
    uint8_t *xq = malloc((size_t)(nx > 0 ? nx : 1));
    uint8_t *rows = malloc((size_t)(slab * kk));
    int32_t *acc = malloc(sizeof *acc * (size_t)(slab * kg));
    if (!xq || !rows || !acc) {
        free(xq), free(rows), free(acc);
        return -1;
    }
    if (dynamic) {
        float lo, hi;
        tgk_minmax_f32(nx, x, &lo, &hi);
        tgk_qparams_u8(lo, hi, &x_scale, &x_zero);
    }
    tgk_quantize_u8(nx, x, x_scale, x_zero, xq);
    size_t gsize = tgk_qgemm_packed_size(kg, kk);
    for (int64_t img = 0; img < d->n; img++)
        for (int64_t gi = 0; gi < d->groups; gi++)
            for (int64_t p0 = 0; p0 < g.out_sp; p0 += slab) {
                int64_t np = g.out_sp - p0 < slab ? g.out_sp - p0 : slab;
                gather_job j = {&g, xq + (img * d->c + gi * cg) * g.in_sp, cg, p0,
                                (uint8_t)x_zero, rows};
                tgk_parallel_for(np, 1 + 65536 / kk, gather_rows, &j);
                tgk_qgemm_u8s8(np, kg, kk, rows, kk, x_zero,
                               (const char *)packed + gi * gsize, acc, kg);
                for (int64_t q = 0; q < kg; q++) {
                    int64_t ko = gi * kg + q;
                    float s = x_scale * w_scale[ko], b = bias ? bias[ko] : 0.0f;
                    float *yo = y + (img * d->k + ko) * g.out_sp + p0;
                    for (int64_t r = 0; r < np; r++)
                        yo[r] = (float)acc[r * kg + q] * s + b;
                }
            }
    free(xq), free(rows), free(acc);
    return 0;
}
