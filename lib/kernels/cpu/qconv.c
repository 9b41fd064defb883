/* Quantized convolution: the input is quantized to u8 once, then for each
 * (image, group) a slab of output positions is gathered into rows of
 * c/groups * prod(kernel) bytes (im2col with positions as rows, padding as the
 * zero point) and multiplied with the packed s8 weights by tgk_qgemm_u8s8.
 * The integer sums are exact, so every CPU path gives the same output. */
#include <stdlib.h>

#include "kernels.h"
#include "qgemm.h"
#include "vecmath.h"    /* -O3 in the interpreter's copy too; no FMA: exact */

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

/* Output positions o in [o0, o1) whose input position o*str + off lies in
 * [0, lim), as [*lo, *hi) (empty: lo == hi). */
static void valid_span(int64_t o0, int64_t o1, int64_t str, int64_t off, int64_t lim,
                       int64_t *lo, int64_t *hi)
{
    int64_t a = off >= 0 ? 0 : (-off + str - 1) / str;             /* first o with o*str+off >= 0 */
    int64_t b = lim - off <= 0 ? 0 : (lim - off - 1) / str + 1;     /* first o with o*str+off >= lim */
    *lo = a < o0 ? o0 : a > o1 ? o1 : a;
    *hi = b < *lo ? *lo : b > o1 ? o1 : b;
}

/* Rows [r0, r1) of the slab: one output line (fixed d, h) at a time, and for
 * each kernel tap a strided copy along the width with the padded ends set to
 * the zero point, so no position is bounds-checked on its own. */
static void gather_rows(void *ctx, int64_t r0, int64_t r1)
{
    const gather_job *j = ctx;
    const qgeom *g = j->g;
    int64_t kk = j->cg * g->kprod, W = g->out[2];
    for (int64_t r = r0; r < r1;) {
        int64_t p = j->p0 + r, line = p / W, w0 = p % W, w1 = w0 + (r1 - r) < W ? w0 + (r1 - r) : W;
        int64_t o0 = line / g->out[1], o1 = line % g->out[1];
        uint8_t *base = j->rows + (r - w0) * kk;    /* row of position (line, w) is base + w*kk */
        int64_t col = 0;
        for (int64_t ci = 0; ci < j->cg; ci++)
            for (int64_t a = 0; a < g->ker[0]; a++) {
                int64_t i0 = o0 * g->str[0] - g->pad[0] + a * g->dil[0];
                for (int64_t b = 0; b < g->ker[1]; b++) {
                    int64_t i1 = o1 * g->str[1] - g->pad[1] + b * g->dil[1];
                    bool inside = i0 >= 0 && i0 < g->in[0] && i1 >= 0 && i1 < g->in[1];
                    const uint8_t *src = j->xq + ci * g->in_sp + (i0 * g->in[1] + i1) * g->in[2];
                    for (int64_t c = 0; c < g->ker[2]; c++, col++) {
                        int64_t off = c * g->dil[2] - g->pad[2], lo = w1, hi = w1, w = w0;
                        if (inside)
                            valid_span(w0, w1, g->str[2], off, g->in[2], &lo, &hi);
                        for (; w < lo; w++) base[w * kk + col] = j->zero;
                        for (; w < hi; w++) base[w * kk + col] = src[w * g->str[2] + off];
                        for (; w < w1; w++) base[w * kk + col] = j->zero;
                    }
                }
            }
        r += w1 - w0;
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
    float *sc = malloc(sizeof *sc * (size_t)d->k), *out = malloc(sizeof *out * (size_t)(slab * kg));
    if (!xq || !rows || !sc || !out) {
        free(xq), free(rows), free(sc), free(out);
        return -1;
    }
    if (dynamic) {
        float lo, hi;
        tgk_minmax_f32(nx, x, &lo, &hi);
        tgk_qparams_u8(lo, hi, &x_scale, &x_zero);
    }
    tgk_quantize_u8(nx, x, x_scale, x_zero, xq);
    for (int64_t k = 0; k < d->k; k++)
        sc[k] = x_scale * w_scale[k];
    size_t gsize = tgk_qgemm_packed_size(kg, kk);
    for (int64_t img = 0; img < d->n; img++)
        for (int64_t gi = 0; gi < d->groups; gi++)
            for (int64_t p0 = 0; p0 < g.out_sp; p0 += slab) {
                int64_t np = g.out_sp - p0 < slab ? g.out_sp - p0 : slab;
                gather_job j = {&g, xq + (img * d->c + gi * cg) * g.in_sp, cg, p0,
                                (uint8_t)x_zero, rows};
                tgk_parallel_for(np, 1 + 65536 / kk, gather_rows, &j);
                /* positions are the GEMM's rows: out [positions, kg], then
                 * transposed to y [kg, positions] in tiles of 64 positions,
                 * so the strided reads stay in L1 */
                tgk_qgemm_u8s8_f32(np, kg, kk, rows, kk, x_zero, (const char *)packed + gi * gsize,
                                   sc + gi * kg, bias ? bias + gi * kg : NULL, out, kg);
                float *yg = y + (img * d->k + gi * kg) * g.out_sp + p0;
                for (int64_t r0 = 0; r0 < np; r0 += 64)
                    for (int64_t q = 0; q < kg; q++)
                        for (int64_t r = r0; r < r0 + 64 && r < np; r++)
                            yg[q * g.out_sp + r] = out[r * kg + q];
            }
    free(xq), free(rows), free(sc), free(out);
    return 0;
}
