/* Convolution, 1-3 spatial dims, as im2col + GEMM per (image, group); its
 * transpose as GEMM + col2im; depthwise directly; small dense stride-1
 * convolutions (few input channels x taps) directly with a register-blocked
 * micro-kernel, where GEMM's packing would cost as much as the products.
 *
 * Every case is run as 3-D: missing leading dims have size 1. The im2col
 * columns are built a slab of output rows at a time, so scratch stays near
 * COL_BYTES whatever the image size. Work items are (image, group, slab):
 * with many of them each runs on one pool thread with a single-threaded GEMM;
 * with few, they run in turn and the GEMM itself is split across threads. */
#include "kernels/cpu/conv_geom.h"
#include "kernels/cpu/kernels.h"
#include "kernels/cpu/vecmath.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define COL_BYTES (4 << 20)


typedef struct {
    const tgk_conv_desc *d;
    tgk_conv_geom g;
    const float *x, *w, *b;
    float *y;
    int64_t cg, kg;             /* channels per group, in and out */
    int64_t slab;               /* output rows (d, h) per im2col slab */
    int64_t nslab;
    atomic_bool failed;
} conv_job;


/* Output positions o in [0, n) whose input position o*str + off lies in
 * [0, lim): returns them as [*o0, *o1). */
static void valid_range(int64_t n, int64_t str, int64_t off, int64_t lim, int64_t *o0,
                        int64_t *o1)
{
    int64_t lo = off >= 0 ? 0 : (-off + str - 1) / str;
    int64_t hi = off < lim ? (lim - off + str - 1) / str : 0;
    lo = lo < n ? lo : n;
    hi = hi < n ? hi : n;
    *o0 = lo;
    *o1 = hi > lo ? hi : lo;
}

typedef struct {
    const tgk_conv_geom *g;
    const float *xc;
    int64_t r0, r1;
    float *col;
} im2col_job;

/* columns of output rows [r0, r1) (row = (d, h) pair), channels [begin, end):
 * col[(c, kd, kh, kw), (row - r0) * out_w + ow] */
static void im2col_channels(void *ctx, int64_t begin, int64_t end)
{
    const im2col_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    int64_t ow = g->out[2], ncol = (j->r1 - j->r0) * ow;
    for (int64_t c = begin; c < end; c++)
        for (int64_t kd = 0; kd < g->ker[0]; kd++)
            for (int64_t kh = 0; kh < g->ker[1]; kh++)
                for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                    float *dst = j->col + (((c * g->ker[0] + kd) * g->ker[1] + kh) * g->ker[2] + kw) * ncol;
                    int64_t woff = kw * g->dil[2] - g->pad[2], w0, w1;
                    valid_range(ow, g->str[2], woff, g->in[2], &w0, &w1);
                    for (int64_t r = j->r0; r < j->r1; r++, dst += ow) {
                        int64_t id = r / g->out[1] * g->str[0] - g->pad[0] + kd * g->dil[0];
                        int64_t ih = r % g->out[1] * g->str[1] - g->pad[1] + kh * g->dil[1];
                        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1]) {
                            memset(dst, 0, (size_t)ow * sizeof *dst);
                            continue;
                        }
                        const float *src = j->xc + ((c * g->in[0] + id) * g->in[1] + ih) * g->in[2] + woff;
                        memset(dst, 0, (size_t)w0 * sizeof *dst);
                        if (g->str[2] == 1)
                            memcpy(dst + w0, src + w0, (size_t)(w1 - w0) * sizeof *dst);
                        else
                            for (int64_t o = w0; o < w1; o++)
                                dst[o] = src[o * g->str[2]];
                        memset(dst + w1, 0, (size_t)(ow - w1) * sizeof *dst);
                    }
                }
}

/* On the caller's thread (few work items) the copy is split by channel too:
 * it is memory-bound work as long as the GEMM's. */
static void im2col(const tgk_conv_geom *g, const float *xc, int64_t cg, int64_t r0, int64_t r1,
                   float *col)
{
    im2col_job j = {g, xc, r0, r1, col};
    int64_t per_channel = g->kprod * (r1 - r0) * g->out[2];
    tgk_parallel_for(cg, 1 + 65536 / per_channel, im2col_channels, &j);
}

/* y[k, 0..n) = bias[k0 + k] (or 0) for k < nk, rows ld apart */
static void fill_bias(float *y, const float *b, int64_t k0, int64_t nk, int64_t n, int64_t ld)
{
    for (int64_t k = 0; k < nk; k++)
        for (int64_t i = 0; i < n; i++)
            y[k * ld + i] = b ? b[k0 + k] : 0.0f;
}

static bool is_pointwise(const tgk_conv_geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->ker[i] != 1 || g->str[i] != 1 || g->pad[i] != 0 || g->in[i] != g->out[i])
            return false;
    return true;
}

/* items (image, group, slab) */
static void conv_items(void *ctx, int64_t begin, int64_t end)
{
    conv_job *j = ctx;
    const tgk_conv_geom *g = &j->g;
    int64_t rows = j->cg * g->kprod, ow = g->out[2];
    bool pointwise = is_pointwise(g);
    float *col = NULL;
    if (!pointwise && !(col = malloc((size_t)(rows * j->slab * ow) * sizeof *col))) {
        atomic_store(&j->failed, true);
        return;
    }
    for (int64_t it = begin; it < end; it++) {
        int64_t s = it % j->nslab, ng = it / j->nslab;
        int64_t n = ng / j->d->groups, grp = ng % j->d->groups;
        int64_t r0 = s * j->slab, nrows = g->out[0] * g->out[1];
        int64_t r1 = r0 + j->slab < nrows ? r0 + j->slab : nrows;
        const float *xc = j->x + (n * j->d->c + grp * j->cg) * g->in_sp;
        const float *wg = j->w + grp * j->kg * rows;
        float *yg = j->y + (n * j->d->k + grp * j->kg) * g->out_sp + r0 * ow;
        int64_t ncol = (r1 - r0) * ow;
        fill_bias(yg, j->b, grp * j->kg, j->kg, ncol, g->out_sp);
        if (pointwise) {
            tgk_gemm_f32(false, false, j->kg, ncol, rows, 1.0f, wg, rows, xc + r0 * ow,
                         g->in_sp, 1.0f, yg, g->out_sp);
        } else {
            im2col(g, xc, j->cg, r0, r1, col);
            tgk_gemm_f32(false, false, j->kg, ncol, rows, 1.0f, wg, rows, col, ncol, 1.0f, yg,
                         g->out_sp);
        }
    }
    free(col);
}

/* depthwise (groups == c, k a multiple of c), directly: planes (image, out channel) */
TGK_CLONES static void depthwise_planes(void *ctx, int64_t begin, int64_t end)
{
    conv_job *j = ctx;
    const tgk_conv_geom *g = &j->g;
    int64_t ow = g->out[2];
    for (int64_t p = begin; p < end; p++) {
        int64_t n = p / j->d->k, k = p % j->d->k;
        const float *xc = j->x + (n * j->d->c + k / j->kg) * g->in_sp;
        const float *wk = j->w + k * g->kprod;
        float *yk = j->y + p * g->out_sp;
        fill_bias(yk, j->b, k, 1, g->out_sp, g->out_sp);
        for (int64_t r = 0; r < g->out[0] * g->out[1]; r++) {
            float *dst = yk + r * ow;
            for (int64_t kd = 0; kd < g->ker[0]; kd++) {
                int64_t id = r / g->out[1] * g->str[0] - g->pad[0] + kd * g->dil[0];
                if (id < 0 || id >= g->in[0])
                    continue;
                for (int64_t kh = 0; kh < g->ker[1]; kh++) {
                    int64_t ih = r % g->out[1] * g->str[1] - g->pad[1] + kh * g->dil[1];
                    if (ih < 0 || ih >= g->in[1])
                        continue;
                    const float *src = xc + (id * g->in[1] + ih) * g->in[2];
                    for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                        float wv = wk[(kd * g->ker[1] + kh) * g->ker[2] + kw];
                        int64_t woff = kw * g->dil[2] - g->pad[2], w0, w1;
                        valid_range(ow, g->str[2], woff, g->in[2], &w0, &w1);
                        const float *s = src + woff;
                        if (g->str[2] == 1)
                            for (int64_t o = w0; o < w1; o++)
                                dst[o] += wv * s[o];
                        else
                            for (int64_t o = w0; o < w1; o++)
                                dst[o] += wv * s[o * g->str[2]];
                    }
                }
            }
        }
    }
}

/* Direct path: DK output channels x DP output pixels of DR rows held in
 * vector accumulators, updated by DR input vectors per (channel, tap) and
 * one weight broadcast per output channel: 16 AVX-512 accumulators, and
 * FMAs rather than loads bound the loop. */
#define DK 8
#define DP 16
#define DR 2
#define DIRECT_MAX_TAPS 256     /* c * kernel product; above it GEMM wins */
typedef float dvec __attribute__((vector_size(DP * sizeof(float))));

static bool use_direct(const tgk_conv_desc *d, const tgk_conv_geom *g)
{
    if (d->transposed || d->groups != 1 || d->c * g->kprod > DIRECT_MAX_TAPS)
        return false;
    if (g->in[0] != 1 || g->ker[0] != 1 || g->pad[0] != 0)
        return false;
    for (int i = 0; i < 3; i++)
        if (g->str[i] != 1 || g->dil[i] != 1)
            return false;
    return true;
}

/* padded input row length: every DP-wide pixel block plus its taps */
static int64_t direct_width(const tgk_conv_geom *g)
{
    return (g->out[2] + DP - 1) / DP * DP + g->ker[2] - 1;
}

/* weights [K, C, kh, kw] -> [K / DK blocks, C, kh, kw, DK], zero past K */
static float *direct_weights(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *w)
{
    int64_t nkb = (d->k + DK - 1) / DK, taps = d->c * g->kprod;
    float *wt = malloc((size_t)(nkb * taps * DK) * sizeof *wt);
    if (!wt)
        return NULL;
    for (int64_t kb = 0; kb < nkb; kb++)
        for (int64_t t = 0; t < taps; t++)
            for (int64_t k = 0; k < DK; k++) {
                int64_t ko = kb * DK + k;
                wt[(kb * taps + t) * DK + k] = ko < d->k ? w[ko * taps + t] : 0.0f;
            }
    return wt;
}

/* rows [r0, r0 + nr) of the zero-padded image, all channels, into buf [c][nr][wp] */
static void direct_pad(const tgk_conv_geom *g, const float *xn, int64_t c, int64_t r0, int64_t nr,
                       int64_t wp, float *buf)
{
    int64_t ih_n = g->in[1], iw = g->in[2], pw = g->pad[2];
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t rr = 0; rr < nr; rr++) {
            float *dst = buf + (ch * nr + rr) * wp;
            int64_t ih = r0 - g->pad[1] + rr;
            memset(dst, 0, (size_t)wp * sizeof *dst);
            if (ih >= 0 && ih < ih_n)
                memcpy(dst + pw, xn + (ch * ih_n + ih) * iw, (size_t)iw * sizeof *dst);
        }
}

/* items (image, slab of output rows); j->w holds the direct_weights layout */
TGK_CLONES static void direct_items(void *ctx, int64_t begin, int64_t end)
{
    conv_job *j = ctx;
    const tgk_conv_geom *g = &j->g;
    int64_t c = j->d->c, k = j->d->k, kh_n = g->ker[1], kw_n = g->ker[2];
    int64_t oh_n = g->out[1], ow = g->out[2], taps = c * g->kprod;
    /* nr: padded rows a slab reads, plus DR - 1 for a last, partial row block */
    int64_t wp = direct_width(g), nr = j->slab + kh_n + DR - 2, nkb = (k + DK - 1) / DK;
    float *buf = malloc((size_t)(c * nr * wp) * sizeof *buf);
    if (!buf) {
        atomic_store(&j->failed, true);
        return;
    }
    for (int64_t it = begin; it < end; it++) {
        int64_t n = it / j->nslab, r0 = it % j->nslab * j->slab;
        int64_t r1 = r0 + j->slab < oh_n ? r0 + j->slab : oh_n;
        direct_pad(g, j->x + n * c * g->in_sp, c, r0, nr, wp, buf);
        for (int64_t kb = 0; kb < nkb; kb++) {
            int64_t nk = k - kb * DK < DK ? k - kb * DK : DK;
            for (int64_t oh = r0; oh < r1; oh += DR)
                for (int64_t p0 = 0; p0 < ow; p0 += DP) {
                    dvec acc[DR][DK];
                    for (int64_t r = 0; r < DR; r++)
                        for (int64_t i = 0; i < DK; i++)
                            acc[r][i] = (dvec){0} + (j->b && i < nk ? j->b[kb * DK + i] : 0.0f);
                    const float *wq = j->w + kb * taps * DK;
                    for (int64_t ch = 0; ch < c; ch++)
                        for (int64_t kh = 0; kh < kh_n; kh++) {
                            const float *row = buf + (ch * nr + oh - r0 + kh) * wp + p0;
                            for (int64_t kw = 0; kw < kw_n; kw++, wq += DK) {
                                dvec xv[DR];
                                for (int64_t r = 0; r < DR; r++)
                                    memcpy(&xv[r], row + r * wp + kw, sizeof xv[r]);
#pragma GCC unroll 8
                                for (int64_t i = 0; i < DK; i++)
                                    for (int64_t r = 0; r < DR; r++)
                                        acc[r][i] += wq[i] * xv[r];
                            }
                        }
                    int64_t np = ow - p0 < DP ? ow - p0 : DP;
                    for (int64_t r = 0; r < DR && oh + r < r1; r++)
                        for (int64_t i = 0; i < nk; i++) {
                            float *dst = j->y + ((n * k + kb * DK + i) * oh_n + oh + r) * ow + p0;
                            if (np == DP)   /* one vector store, no memcpy call */
                                memcpy(dst, &acc[r][i], sizeof acc[r][i]);
                            else
                                for (int64_t p = 0; p < np; p++)
                                    dst[p] = acc[r][i][p];
                        }
                }
        }
    }
    free(buf);
}

/* enough (image, row slab) items for the pool, each slab's padded rows
 * within COL_BYTES */
static int direct_conv(conv_job *j)
{
    const tgk_conv_geom *g = &j->g;
    int64_t oh_n = g->out[1], want = 4 * (int64_t)tgk_num_threads();
    int64_t per_image = (want + j->d->n - 1) / j->d->n;
    j->slab = ((oh_n + per_image - 1) / per_image + DR - 1) / DR * DR;
    int64_t per_row = j->d->c * direct_width(g) * (int64_t)sizeof(float);
    int64_t most = (COL_BYTES / per_row - (g->ker[1] + DR - 2)) / DR * DR;
    j->slab = j->slab < most ? j->slab : most > DR ? most : DR;
    j->nslab = (oh_n + j->slab - 1) / j->slab;
    float *wt = direct_weights(j->d, g, j->w);
    if (!wt)
        return -1;
    j->w = wt;
    tgk_parallel_for(j->d->n * j->nslab, 1, direct_items, j);
    free(wt);
    return atomic_load(&j->failed) ? -1 : 0;
}

/* transposed: per (image, group), col = w_g^T x_g over slabs of input rows,
 * then scattered (col2im) into y. Items write overlapping outputs only
 * within one (image, group), so those are the unit of parallel work; within
 * one, the scatter splits by output channel. */
typedef struct {
    const tgk_conv_geom *g;
    const float *col;
    int64_t r0, r1;
    float *y;
} col2im_job;

static void col2im_channels(void *ctx, int64_t begin, int64_t end)
{
    const col2im_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    int64_t iw = g->in[2], ncol = (j->r1 - j->r0) * iw;
    for (int64_t c = begin; c < end; c++)
        for (int64_t kd = 0; kd < g->ker[0]; kd++)
            for (int64_t kh = 0; kh < g->ker[1]; kh++)
                for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                    const float *src = j->col + (((c * g->ker[0] + kd) * g->ker[1] + kh) * g->ker[2] + kw) * ncol;
                    int64_t woff = kw * g->dil[2] - g->pad[2], w0, w1;
                    valid_range(iw, g->str[2], woff, g->out[2], &w0, &w1);
                    for (int64_t r = j->r0; r < j->r1; r++, src += iw) {
                        int64_t od = r / g->in[1] * g->str[0] - g->pad[0] + kd * g->dil[0];
                        int64_t oh = r % g->in[1] * g->str[1] - g->pad[1] + kh * g->dil[1];
                        if (od < 0 || od >= g->out[0] || oh < 0 || oh >= g->out[1])
                            continue;
                        float *dst = j->y + ((c * g->out[0] + od) * g->out[1] + oh) * g->out[2] + woff;
                        for (int64_t i = w0; i < w1; i++)
                            dst[i * g->str[2]] += src[i];
                    }
                }
}

static void col2im(const tgk_conv_geom *g, const float *col, int64_t kg, int64_t r0, int64_t r1,
                   float *y)
{
    col2im_job j = {g, col, r0, r1, y};
    int64_t per_channel = g->kprod * (r1 - r0) * g->in[2];
    tgk_parallel_for(kg, 1 + 65536 / per_channel, col2im_channels, &j);
}

static void transposed_items(void *ctx, int64_t begin, int64_t end)
{
    conv_job *j = ctx;
    const tgk_conv_geom *g = &j->g;
    int64_t rows = j->kg * g->kprod, iw = g->in[2], nrows = g->in[0] * g->in[1];
    float *col = malloc((size_t)(rows * j->slab * iw) * sizeof *col);
    if (!col) {
        atomic_store(&j->failed, true);
        return;
    }
    for (int64_t ng = begin; ng < end; ng++) {
        int64_t n = ng / j->d->groups, grp = ng % j->d->groups;
        const float *xc = j->x + (n * j->d->c + grp * j->cg) * g->in_sp;
        const float *wg = j->w + grp * j->cg * rows;
        float *yg = j->y + (n * j->d->k + grp * j->kg) * g->out_sp;
        fill_bias(yg, j->b, grp * j->kg, j->kg, g->out_sp, g->out_sp);
        for (int64_t r0 = 0; r0 < nrows; r0 += j->slab) {
            int64_t r1 = r0 + j->slab < nrows ? r0 + j->slab : nrows, ncol = (r1 - r0) * iw;
            tgk_gemm_f32(true, false, rows, ncol, j->cg, 1.0f, wg, rows, xc + r0 * iw,
                         g->in_sp, 0.0f, col, ncol);
            col2im(g, col, j->kg, r0, r1, yg);
        }
    }
    free(col);
}

/* many items: one per pool thread; few: in turn, each GEMM split instead */
static void run_items(int64_t items, tgk_task_fn fn, conv_job *j)
{
    if (items >= 4 * (int64_t)tgk_num_threads())
        tgk_parallel_for(items, 1, fn, j);
    else
        for (int64_t i = 0; i < items && !atomic_load(&j->failed); i++)
            fn(j, i, i + 1);
}

int tgk_conv_f32(const tgk_conv_desc *d, const float *x, const float *w, const float *b, float *y)
{
    conv_job j = {.d = d, .x = x, .w = w, .b = b, .y = y};
    if (d->n <= 0 || d->c <= 0 || d->k <= 0 || d->groups <= 0 || d->c % d->groups ||
        d->k % d->groups || !tgk_conv_geom_from(d, &j.g))
        return -1;
    atomic_init(&j.failed, false);
    const tgk_conv_geom *g = &j.g;
    j.cg = d->c / d->groups;
    j.kg = d->k / d->groups;
    if (d->transposed) {
        int64_t per_row = j.kg * g->kprod * g->in[2] * (int64_t)sizeof(float);
        j.slab = COL_BYTES / per_row > 1 ? COL_BYTES / per_row : 1;
        run_items(d->n * d->groups, transposed_items, &j);
    } else if (use_direct(d, g)) {
        return direct_conv(&j);
    } else if (d->groups == d->c && j.cg == 1 && d->groups > 1) {
        tgk_parallel_for(d->n * d->k, 1, depthwise_planes, &j);
    } else {
        int64_t nrows = g->out[0] * g->out[1];
        int64_t per_row = j.cg * g->kprod * g->out[2] * (int64_t)sizeof(float);
        j.slab = COL_BYTES / per_row > 1 ? COL_BYTES / per_row : 1;
        j.slab = j.slab < nrows ? j.slab : nrows;
        j.nslab = (nrows + j.slab - 1) / j.slab;
        run_items(d->n * d->groups * j.nslab, conv_items, &j);
    }
    return atomic_load(&j.failed) ? -1 : 0;
}
