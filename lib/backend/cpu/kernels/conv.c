/* Convolution, 1-3 spatial dims, as a GEMM over the pixels per (image,
 * group): stride 1 (2-D and 1-D) with the zero-padded image read in place at
 * each tap's offset (an implicit im2col), others with im2col's columns packed
 * straight into the GEMM's panels (a chunk of 64 pixels at a time, never the
 * whole column matrix: tgk_conv_gemm_f32); its transpose as GEMM + col2im; 1x1 convolutions on
 * the same GEMM with the pixels packed as they are (strided: the pixels they
 * read copied out first); depthwise directly
 * (conv_dw.c); small dense convolutions (few input channels x taps: first
 * layers, stems with stride 2) directly with a register-blocked
 * micro-kernel, where GEMM's packing would cost as much as the products.
 *
 * Every case is run as 3-D: missing leading dims have size 1. The
 * transposed GEMM's columns go a slab of input rows at a time, so scratch
 * stays near COL_BYTES whatever the image size. */
#include "backend/cpu/kernels/conv_geom.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

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
    int64_t ys;                 /* elements from one image's y to the next */
    int64_t slab;               /* output rows (d, h) per im2col slab */
    int64_t nslab;
    atomic_bool failed;
} conv_job;


/* dst[q] = src[q * 2] for q < n: the stride a constant, so that GCC
 * vectorizes it (permutes; with the stride a variable it stayed scalar and
 * took most of a grouped stride-2 convolution's time) */
TGK_CLONES static void every_second(float *restrict dst, const float *restrict src, int64_t n)
{
    for (int64_t q = 0; q < n; q++)
        dst[q] = src[q * 2];
}

/* im2col's columns of pixels [p0, p1) of (image, group) i, straight into the
 * GEMM's panels (tgk_conv_gemm_f32). The chunk's pixels fall in a few runs
 * along output rows, found once (no division per row of cols); each row of
 * cols, (c, kd, kh, kw), is built in a line of 64 pixels, zero where the
 * taps fall in the padding, then copied a panel at a time. */
TGK_CLONES static void im2col_panels(const void *ctx, int64_t i, int64_t p0, int64_t p1,
                                     float *buf)
{
    const conv_job *j = ctx;
    const tgk_conv_geom *g = &j->g;
    int64_t ow = g->out[2], K = j->cg * g->kprod, np = (p1 - p0 + TGK_PANEL - 1) / TGK_PANEL;
    const float *xi = j->x + i * j->cg * g->in_sp;
    struct { int64_t at, o0, o1, id, ih; } run[4 * TGK_PANEL];
    int nrun = 0;
    for (int64_t p = p0; p < p1; nrun++) {
        int64_t r = p / ow, o = p % ow, o1 = o + (p1 - p) < ow ? o + (p1 - p) : ow;
        run[nrun].at = p - p0 - o;      /* pixel (r, q) at line[at + q] */
        run[nrun].o0 = o, run[nrun].o1 = o1;
        run[nrun].id = r / g->out[1] * g->str[0] - g->pad[0];
        run[nrun].ih = r % g->out[1] * g->str[1] - g->pad[1];
        p += o1 - o;
    }
    float line[4 * TGK_PANEL];
    int64_t row = 0, sw = g->str[2];
    for (int64_t c = 0; c < j->cg; c++)
        for (int64_t kd = 0; kd < g->ker[0]; kd++)
            for (int64_t kh = 0; kh < g->ker[1]; kh++)
                for (int64_t kw = 0; kw < g->ker[2]; kw++, row++) {
                    int64_t woff = kw * g->dil[2] - g->pad[2], w0, w1;
                    tgk_conv_valid_range(ow, sw, woff, g->in[2], &w0, &w1);
                    memset(line, 0, sizeof line);
                    for (int k = 0; k < nrun; k++) {
                        int64_t id = run[k].id + kd * g->dil[0], ih = run[k].ih + kh * g->dil[1];
                        int64_t lo = run[k].o0 > w0 ? run[k].o0 : w0;
                        int64_t hi = run[k].o1 < w1 ? run[k].o1 : w1;
                        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1])
                            continue;
                        const float *src = xi + ((c * g->in[0] + id) * g->in[1] + ih) * g->in[2] + woff;
                        float *dst = line + run[k].at;
                        if (sw == 1)
                            for (int64_t q = lo; q < hi; q++)
                                dst[q] = src[q];
                        else if (sw == 2 && hi > lo)
                            every_second(dst + lo, src + 2 * lo, hi - lo);
                        else
                            for (int64_t q = lo; q < hi; q++)
                                dst[q] = src[q * sw];
                    }
                    for (int64_t v = 0; v < np; v++)
                        memcpy(buf + (v * K + row) * TGK_PANEL, line + v * TGK_PANEL,
                               TGK_PANEL * sizeof *line);
                }
}

/* im2col's columns of the merged images' pixels [q0, q1) (a row of n * P):
 * each image's run of them, whole panels, since P is a multiple of one */
static void im2col_merged(const void *ctx, int64_t img, int64_t q0, int64_t q1, float *buf)
{
    const conv_job *j = ctx;
    int64_t P = j->g.out_sp, K = j->cg * j->g.kprod;
    (void)img;
    for (int64_t q = q0; q < q1;) {
        int64_t e = (q / P + 1) * P < q1 ? (q / P + 1) * P : q1;
        im2col_panels(ctx, q / P, q % P, q % P + e - q, buf + (q - q0) * K);
        q = e;
    }
}

/* Whether im2col runs the images as one GEMM over all their pixels: where
 * an image's pixels are an odd number of whole panels, so that its last
 * register tile (2 panels) would leave one idle (ResNet's 4x4 maps: one
 * panel an image, tiles of 8 x 1 vectors, ~2/3 of the 8 x 2 tile's rate). */
static bool merge_im2col(const tgk_conv_desc *d, const tgk_conv_geom *g)
{
    return d->groups == 1 && d->n > 1 && g->out_sp % (2 * TGK_PANEL) == TGK_PANEL;
}

/* Stride 1 without im2col: the images zero-padded once into planes of
 * hp rows wp long, output pixel (oh, ow) taken on a grid of rows wp long,
 * reads tap (c, kh, kw) at c * plane + (oh + kh dil) wp + ow + kw dil: one
 * offset a tap for every pixel, so the GEMM reads its panels in place
 * (tgk_conv_gemm_f32's cols NULL) and the grid's wp - ow extra pixels a row
 * are computed and dropped. Images go a batch at a time, as many as keep the
 * padded copy within PAD_BYTES; none fits: im2col. */
#define PAD_BYTES (32 << 20)

typedef struct {
    const conv_job *j;
    const float *x;             /* the batch's first image */
    float *pad;
    int64_t hp, wp, plane;      /* plane: hp * wp */
} pad_job;

/* The grid's extra pixels cost (extra panels) x M multiply-adds a row of
 * cols, im2col about 64 a row of cols whatever M: small maps with many
 * output channels keep im2col (ResNet-50's 512 at 4x4, grid 6 x 4: 2 panels
 * for 1; at batch 8, 1.2x slower implicit), DenseNet's 32 take the grid. */
static bool use_implicit(const tgk_conv_geom *g, int64_t m)
{
    int64_t grid = (g->out[1] * (g->out[2] + (g->ker[2] - 1) * g->dil[2]) + TGK_PANEL - 1) /
                   TGK_PANEL, panels = (g->out_sp + TGK_PANEL - 1) / TGK_PANEL;
    return g->in[0] == 1 && g->ker[0] == 1 && g->pad[0] == 0 && g->str[1] == 1 &&
           g->str[2] == 1 && (grid - panels) * m < 64 * panels;
}

/* the ih image rows of a plane into padded rows wp long: pw zeros, the
 * row, zeros to wp; inline (a memcpy and two memset calls a row of 32 took
 * ~5% of a 3x3 at 32x32 maps) */
TGK_CLONES TGK_NO_CALL_IDIOMS static void pad_rows(float *restrict dst, const float *restrict src,
                                                   int64_t ih, int64_t iw, int64_t pw, int64_t wp)
{
    for (int64_t r = 0; r < ih; r++, dst += wp, src += iw) {
        for (int64_t q = 0; q < pw; q++)
            dst[q] = 0.0f;
        for (int64_t q = 0; q < iw; q++)
            dst[pw + q] = src[q];
        for (int64_t q = pw + iw; q < wp; q++)
            dst[q] = 0.0f;
    }
}

static void pad_planes(void *ctx, int64_t begin, int64_t end)
{
    const pad_job *pj = ctx;
    const tgk_conv_geom *g = &pj->j->g;
    int64_t ih = g->in[1], iw = g->in[2], ph = g->pad[1], pw = g->pad[2], wp = pj->wp;
    for (int64_t pl = begin; pl < end; pl++) {
        const float *src = pj->x + pl * g->in_sp;
        float *dst = pj->pad + pl * pj->plane;
        memset(dst, 0, (size_t)(ph * wp) * sizeof *dst);
        pad_rows(dst + ph * wp, src, ih, iw, pw, wp);
        memset(dst + (ph + ih) * wp, 0, (size_t)((pj->hp - ph - ih) * wp) * sizeof *dst);
    }
}

/* 1: no batch of images fits PAD_BYTES (the caller runs im2col) */
static int implicit_conv(conv_job *j)
{
    const tgk_conv_desc *d = j->d;
    const tgk_conv_geom *g = &j->g;
    int64_t oh = g->out[1], ow = g->out[2], kh = g->ker[1], kw = g->ker[2];
    int64_t dh = g->dil[1], dw = g->dil[2];
    pad_job pj = {.j = j};
    /* rows and columns past the image's are zeros: any padding at the end */
    pj.hp = g->pad[1] + g->in[1] > oh + (kh - 1) * dh ? g->pad[1] + g->in[1] : oh + (kh - 1) * dh;
    pj.wp = g->pad[2] + g->in[2] > ow + (kw - 1) * dw ? g->pad[2] + g->in[2] : ow + (kw - 1) * dw;
    pj.plane = pj.hp * pj.wp;
    /* the last grid panel's lanes read up to a panel past the last plane */
    int64_t slack = (kw - 1) * dw + 4 * TGK_PANEL, image = d->c * pj.plane;
    int64_t batch = (PAD_BYTES / (int64_t)sizeof(float) - slack) / image;
    if (batch < 1)
        return 1;
    batch = batch < d->n ? batch : d->n;
    int64_t K = j->cg * g->kprod, *koff = malloc((size_t)K * sizeof *koff);
    pj.pad = malloc((size_t)(batch * image + slack) * sizeof *pj.pad);
    int rc = -1;
    if (!koff || !pj.pad)
        goto out;
    for (int64_t c = 0, t = 0; c < j->cg; c++)
        for (int64_t a = 0; a < kh; a++)
            for (int64_t b = 0; b < kw; b++)
                koff[t++] = c * pj.plane + a * dh * pj.wp + b * dw;
    memset(pj.pad + batch * image, 0, (size_t)slack * sizeof *pj.pad);
    for (int64_t i0 = 0; i0 < d->n; i0 += batch) {
        int64_t nb = d->n - i0 < batch ? d->n - i0 : batch, out = i0 * d->k * g->out_sp;
        pj.x = j->x + i0 * d->c * g->in_sp;
        if (nb < batch)     /* the slack right after the last image */
            memset(pj.pad + nb * image, 0, (size_t)slack * sizeof *pj.pad);
        tgk_parallel_for(nb * d->c, 1 + 65536 / pj.plane, pad_planes, &pj);
        tgk_conv_gemm c = {.n = nb * d->groups, .groups = d->groups, .M = j->kg, .K = K,
                           .P = oh * pj.wp, .w = j->w, .b = j->b,
                           .res = d->res ? d->res + out : NULL, .y = j->y + i0 * j->ys,
                           .y_stride = j->ys,
                           .act = d->relu ? tgk_vec_relu_f32 : d->act, .src = pj.pad,
                           .koff = koff, .src_stride = j->cg * pj.plane, .wp = pj.wp, .ow = ow};
        if (tgk_conv_gemm_f32(&c))
            goto out;
    }
    rc = 0;
out:
    free(koff);
    free(pj.pad);
    return rc;
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

/* A strided 1x1 convolution without padding (a residual block's
 * downsampling shortcut) reads every str-th pixel: those pixels copied into
 * planes of the output's size, then the 1x1 GEMM on them (the direct path,
 * meant for few input channels, ran ResNet's and RegNet's at 23-50 GFLOP/s
 * a thread; im2col at 74). */
static bool is_strided_pointwise(const tgk_conv_geom *g)
{
    for (int i = 0; i < 3; i++)
        if (g->ker[i] != 1 || g->pad[i] != 0 || (g->out[i] - 1) * g->str[i] >= g->in[i])
            return false;
    return g->str[0] > 1 || g->str[1] > 1 || g->str[2] > 1;
}

typedef struct {
    const tgk_conv_geom *g;
    const float *x;
    float *s;
} subsample_job;

static void subsample_planes(void *ctx, int64_t begin, int64_t end)
{
    const subsample_job *sj = ctx;
    const tgk_conv_geom *g = sj->g;
    for (int64_t pl = begin; pl < end; pl++) {
        const float *x = sj->x + pl * g->in_sp;
        float *s = sj->s + pl * g->out_sp;
        for (int64_t d = 0; d < g->out[0]; d++)
            for (int64_t h = 0; h < g->out[1]; h++, s += g->out[2]) {
                const float *r = x + (d * g->str[0] * g->in[1] + h * g->str[1]) * g->in[2];
                for (int64_t w = 0; w < g->out[2]; w++)
                    s[w] = r[w * g->str[2]];
            }
    }
}

static int strided_pointwise(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *x,
                             const float *w, const float *b, float *y, int64_t ys)
{
    subsample_job sj = {g, x, malloc((size_t)(d->n * d->c * g->out_sp) * sizeof(float))};
    if (!sj.s)
        return -1;
    tgk_parallel_for(d->n * d->c, 1 + 65536 / g->out_sp, subsample_planes, &sj);
    int rc = tgk_pointwise_f32(d->n, d->c, d->k, g->out_sp, sj.s, w, b, d->res, y, ys,
                               d->relu ? tgk_vec_relu_f32 : d->act);
    free(sj.s);
    return rc;
}

/* Direct path: DK output channels x NV vectors of DV output pixels held in
 * DK * NV vector accumulators, updated per (input channel, tap) by NV input
 * vectors and one weight broadcast per output channel, so FMAs rather than
 * loads bound the loop. The tile is sized per ISA to fill its register file
 * without spilling (and GCC splits a vector wider than the ISA's through the
 * stack): the same source is instantiated for each and one is picked at run
 * time. A slab's vectors, (output row, block of DV pixels), are taken NV at
 * a time in raster order, so a tile may span rows and few are left partial. */
/* c * kernel product; above it GEMM wins on AVX-512 (on AVX2 the direct path
 * still wins up to ~600: 64 channels 3x3 at 56x56, 3.6 vs 4.4 ms a thread) */
#define DIRECT_MAX_TAPS 256
/* Below it a convolution runs on the caller's thread alone. Handing work to
 * spinning workers costs about a microsecond; 0.5 MFLOP is ~6 us a thread
 * (the cnn fixture at batch 1, both convolutions parallel: 0.063 -> 0.047 ms
 * a run on 2 vCPUs; the old 3 MFLOP was set for workers woken by futex). */
#define DIRECT_PARALLEL_FLOPS (1 << 19)

/* Grouped convolutions too (a block of output channels within one group
 * reads that group's input channels: RegNet's 8 a group, where im2col's
 * GEMM had 8 rows to share each packed panel, 13-16 GFLOP/s a thread), not
 * depthwise (one input channel a group: conv_dw.c), nor rows shorter than 8
 * pixels (a vector a row, mostly idle lanes: RegNet's 4x4 maps ran 1.1x
 * slower than on the implicit GEMM). */
static bool use_direct(const tgk_conv_desc *d, const tgk_conv_geom *g)
{
    int64_t cg = d->c / d->groups;
    if (d->transposed || (d->groups > 1 && (cg == 1 || g->out[2] < 8)) ||
        cg * g->kprod > DIRECT_MAX_TAPS)
        return false;
    if (g->in[0] != 1 || g->ker[0] != 1 || g->pad[0] != 0)
        return false;
    for (int i = 0; i < 3; i++)
        if (g->dil[i] != 1)
            return false;
    return true;
}

/* One output vector of a slab: where it reads in the padded rows and writes
 * in an output channel, and how many of its pixels exist (0 for the repeats
 * of the slab's last vector that fill its last tile). */
typedef struct {
    int64_t in, out, np;
} direct_vec;

/* One block of output channels over one slab of output rows: the
 * micro-kernel's arguments. */
typedef struct {
    const float *buf;           /* the slab's zero-padded input rows, [c][nr][wp] */
    const int64_t *tapoff;      /* per (channel, kh, kw): its offset in buf */
    const direct_vec *vec;      /* the slab's vectors, whole tiles of them */
    const float *w;             /* the block's weights, taps a channel */
    const float *b;             /* the block's bias, or NULL */
    float *y;                   /* output channel 0 of the block */
    int64_t nvec, taps, nk;     /* nk: channels of the block that exist (<= dk) */
    int64_t out_sp;
    bool relu;
} direct_block;

typedef struct {
    int64_t dv, dk, nv;         /* pixels a vector, channels a block, vectors a tile */
    void (*run)(const direct_block *);
} direct_kernel;

/* a tile's stores where some pixels or channels do not exist; lanes [nv][dk][dv] */
static void direct_store_part(const direct_block *bl, const direct_vec *vec, const float *lanes,
                              int nv, int64_t dk, int64_t dv)
{
    for (int v = 0; v < nv; v++)
        for (int64_t i = 0; i < bl->nk; i++)
            memcpy(bl->y + vec[v].out + i * bl->out_sp, lanes + (v * dk + i) * dv,
                   (size_t)vec[v].np * sizeof *lanes);
}

/* Every loop over the tile fully unrolled, so the accumulators stay in registers. */
#define UNROLL _Pragma("GCC unroll 16")

/* NAME_run: the micro-kernel over every tile of a block, for vectors of DV
 * floats and DK x NV accumulators, compiled with ATTR (a target or nothing);
 * NAME: its direct_kernel. Channels of the block past K repeat its last
 * (computed, not stored), so the loop has no tail. */
#define DIRECT_KERNEL(NAME, ATTR, DV, DK, NV)                                                \
    typedef float NAME##_vec __attribute__((vector_size((DV) * sizeof(float))));            \
    typedef int32_t NAME##_ivec __attribute__((vector_size((DV) * sizeof(float))));         \
    ATTR static void NAME##_run(const direct_block *bl)                                     \
    {                                                                                       \
        const int64_t *tapoff = bl->tapoff, taps = bl->taps, out_sp = bl->out_sp;           \
        const float *wk[DK];                                                                \
        float bias[DK];                                                                     \
        UNROLL for (int i = 0; i < (DK); i++) {                                             \
            int64_t k = i < bl->nk ? i : bl->nk - 1;                                        \
            wk[i] = bl->w + k * taps;                                                       \
            bias[i] = bl->b ? bl->b[k] : 0.0f;                                              \
        }                                                                                   \
        for (const direct_vec *vec = bl->vec; vec < bl->vec + bl->nvec; vec += (NV)) {      \
            const float *in[NV];                                                            \
            float *out[NV];                                                                 \
            bool whole = bl->nk == (DK);                                                    \
            UNROLL for (int v = 0; v < (NV); v++) {                                         \
                in[v] = bl->buf + vec[v].in;                                                \
                out[v] = bl->y + vec[v].out;                                                \
                whole &= vec[v].np == (DV);                                                 \
            }                                                                               \
            NAME##_vec acc[NV][DK];                                                         \
            UNROLL for (int i = 0; i < (DK); i++)                                           \
                UNROLL for (int v = 0; v < (NV); v++)                                       \
                    acc[v][i] = (NAME##_vec){0} + bias[i];                                  \
            for (int64_t t = 0; t < taps; t++) {                                            \
                NAME##_vec xv[NV];                                                          \
                UNROLL for (int v = 0; v < (NV); v++)                                       \
                    memcpy(&xv[v], in[v] + tapoff[t], sizeof xv[v]);                        \
                UNROLL for (int i = 0; i < (DK); i++)                                       \
                    UNROLL for (int v = 0; v < (NV); v++)                                   \
                        acc[v][i] += wk[i][t] * xv[v];                                      \
            }                                                                               \
            if (bl->relu) /* clear the lanes < 0: NaN and -0 stay, as relu leaves them */  \
                UNROLL for (int v = 0; v < (NV); v++)                                       \
                    UNROLL for (int i = 0; i < (DK); i++)                                   \
                        acc[v][i] = (NAME##_vec)((NAME##_ivec)acc[v][i] &                   \
                                                 ~(NAME##_ivec)(acc[v][i] < 0));            \
            if (whole) {                                                                    \
                UNROLL for (int v = 0; v < (NV); v++)                                       \
                    UNROLL for (int i = 0; i < (DK); i++)                                   \
                        memcpy(out[v] + i * out_sp, &acc[v][i], sizeof acc[v][i]);          \
            } else {                                                                        \
                float lanes[NV][DK][DV];                                                    \
                UNROLL for (int v = 0; v < (NV); v++)                                       \
                    UNROLL for (int i = 0; i < (DK); i++)                                   \
                        memcpy(lanes[v][i], &acc[v][i], sizeof acc[v][i]);                  \
                direct_store_part(bl, vec, &lanes[0][0][0], (NV), (DK), (DV));              \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    static const direct_kernel NAME = {(DV), (DK), (NV), NAME##_run};

/* AVX-512: 16 of 32 zmm; AVX2 and the rest: 12 of 16 ymm or xmm. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
DIRECT_KERNEL(direct_v4, __attribute__((target("arch=x86-64-v4"))), 16, 8, 2)
DIRECT_KERNEL(direct_v3, __attribute__((target("arch=x86-64-v3"))), 8, 4, 3)
#endif
DIRECT_KERNEL(direct_base, , 4, 4, 3)

static const direct_kernel *direct_pick(void)
{
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    if (__builtin_cpu_supports("x86-64-v4"))
        return &direct_v4;
    if (__builtin_cpu_supports("x86-64-v3"))
        return &direct_v3;
#endif
    return &direct_base;
}

typedef struct {
    conv_job *j;
    const direct_kernel *kern;
    float *pad;                 /* every image padded up front, or NULL: items pad their slab */
    int64_t nvb, wp, nr;        /* vectors a row; padded row length; padded rows a plane */
    int64_t nph, halo;          /* stride phases a channel; rows a slab reads past its own */
    int64_t nkb, nkg;           /* channel blocks; groups of them, one a work item */
    int64_t kpg;                /* channel blocks a convolution group */
    int64_t tapoff[DIRECT_MAX_TAPS];
} direct_job;

/* Rows [r0, r0 + rows) of the zero-padded image's stride phases, c
 * channels, into buf [c][sh][sw][nr][wp]: row rr, column q of phase (a, b)
 * holds the padded image's row (r0 + rr) * sh + a, column q * sw + b. A
 * strided convolution so reads each tap (kh, kw) at a constant offset, in
 * phase (kh % sh, kw % sw) at (kh / sh, kw / sw), as a stride-1 one does.
 * The columns outside the image are already zero and stay so. */
static void direct_pad(const direct_job *dj, const float *xn, int64_t c, int64_t r0,
                       int64_t rows, float *buf)
{
    const tgk_conv_geom *g = &dj->j->g;
    int64_t ih_n = g->in[1], iw = g->in[2], sh = g->str[1], sw = g->str[2];
    for (int64_t ch = 0; ch < c; ch++)
        for (int64_t a = 0; a < sh; a++)
            for (int64_t b = 0; b < sw; b++) {
                int64_t q0, q1;
                tgk_conv_valid_range(dj->wp, sw, b - g->pad[2], iw, &q0, &q1);
                float *phase = buf + ((ch * sh + a) * sw + b) * dj->nr * dj->wp;
                for (int64_t rr = 0; rr < rows; rr++) {
                    float *dst = phase + rr * dj->wp;
                    int64_t ih = (r0 + rr) * sh + a - g->pad[1];
                    if (ih < 0 || ih >= ih_n) {
                        memset(dst + q0, 0, (size_t)(q1 - q0) * sizeof *dst);
                        continue;
                    }
                    const float *src = xn + (ch * ih_n + ih) * iw + b - g->pad[2];
                    if (sw == 1)
                        memcpy(dst + q0, src + q0, (size_t)(q1 - q0) * sizeof *dst);
                    else if (sw == 2)
                        every_second(dst + q0, src + 2 * q0, q1 - q0);
                    else
                        for (int64_t q = q0; q < q1; q++)
                            dst[q] = src[q * sw];
                }
            }
}

/* planes (image, channel) of dj->pad */
static void direct_pad_planes(void *ctx, int64_t begin, int64_t end)
{
    const direct_job *dj = ctx;
    for (int64_t p = begin; p < end; p++)
        direct_pad(dj, dj->j->x + p * dj->j->g.in_sp, 1, 0, dj->nr,
                   dj->pad + p * dj->nph * dj->nr * dj->wp);
}

/* the vectors of output rows [r0, r0 + rows), in raster order, then repeats
 * of the last up to whole tiles, writing at row r0 of a plane (0: of a slab's
 * scratch); returns their count */
static int64_t direct_vectors(const direct_job *dj, int64_t r0, int64_t rows, direct_vec *vec)
{
    int64_t dv = dj->kern->dv, ow = dj->j->g.out[2], m = 0;
    for (int64_t r = 0; r < rows; r++)
        for (int64_t p0 = 0; p0 < ow; p0 += dv)
            vec[m++] = (direct_vec){r * dj->wp + p0, (r0 + r) * ow + p0,
                                    ow - p0 < dv ? ow - p0 : dv};
    for (; m % dj->kern->nv; m++)
        vec[m] = (direct_vec){vec[m - 1].in, vec[m - 1].out, 0};
    return m;
}

/* Max over the pool x pool windows of a block's nk channels of `rows` output
 * rows in scratch s ([nk][slab][ow]) into y's pooled rows from r0 / pool.
 * P = 2 as two loops GCC vectorizes, each over a whole row pair (the rows,
 * then pairs of columns; as one loop it stays scalar, and its selects were
 * mispredicted branches: 4x the time of the convolution). */
TGK_CLONES static void pool_block(const conv_job *j, const float *restrict s, int64_t nk,
                                  int64_t rows, int64_t r0, float *restrict y)
{
    int64_t P = j->d->pool, ow = j->g.out[2], pw = ow / P, psp = j->g.out[1] / P * pw;
    float t[512];
    for (int64_t i = 0; i < nk; i++)
        for (int64_t pr = 0; pr < rows / P; pr++) {
            const float *restrict x = s + (i * j->slab + pr * P) * ow;
            float *restrict yr = y + i * psp + (r0 / P + pr) * pw;
            for (int64_t p0 = 0; P == 2 && p0 < pw; p0 += 256) {
                int64_t n = pw - p0 < 256 ? pw - p0 : 256;
                for (int64_t c = 0; c < 2 * n; c++)
                    t[c] = tgk_nan_max(x[2 * p0 + c], x[ow + 2 * p0 + c]);
                for (int64_t c = 0; c < n; c++)
                    yr[p0 + c] = tgk_nan_max(t[2 * c], t[2 * c + 1]);
            }
            for (int64_t px = 0; P != 2 && px < pw; px++) {
                float m = x[px * P];
                for (int64_t a = 0; a < P; a++)
                    for (int64_t b = 0; b < P; b++)
                        m = tgk_nan_max(m, x[a * ow + px * P + b]);
                yr[px] = m;
            }
        }
}

/* y[0, n) = act(y + res[0, n)), either NULL */
TGK_CLONES static void epilogue_span(const tgk_conv_desc *d, float *y, const float *res,
                                     int64_t n)
{
    for (int64_t i = 0; res && i < n; i++)
        y[i] += res[i];
    if (d->act)
        d->act(n, y, y);
}

/* items (image, slab of output rows, group of channel blocks); the
 * epilogue on each block's rows while they are in cache */
static void direct_items(void *ctx, int64_t begin, int64_t end)
{
    const direct_job *dj = ctx;
    conv_job *j = dj->j;
    const tgk_conv_geom *g = &j->g;
    int64_t c = j->d->c, k = j->d->k, dk = dj->kern->dk, oh_n = g->out[1], P = j->d->pool;
    int64_t chan = dj->nph * dj->nr * dj->wp;  /* one input channel in buf or pad */
    direct_vec *vec = malloc((size_t)(j->slab * dj->nvb + dj->kern->nv) * sizeof *vec);
    float *buf = NULL, *sc = NULL;
    if (!vec || (!dj->pad && !(buf = calloc((size_t)(c * dj->nph * dj->nr * dj->wp), sizeof *buf))) ||
        (P > 1 && !(sc = malloc((size_t)(dk * j->slab * g->out[2]) * sizeof *sc)))) {
        atomic_store(&j->failed, true);
        free(vec);
        free(buf);
        return;
    }
    /* pooling: each block's rows go to the scratch, then pooled into y */
    direct_block bl = {.tapoff = dj->tapoff, .vec = vec, .taps = j->cg * g->kprod,
                       .out_sp = P > 1 ? j->slab * g->out[2] : g->out_sp, .relu = j->d->relu};
    for (int64_t it = begin; it < end; it++) {
        int64_t grp = it % dj->nkg, s = it / dj->nkg % j->nslab, n = it / dj->nkg / j->nslab;
        int64_t r0 = s * j->slab, rows = r0 + j->slab < oh_n ? j->slab : oh_n - r0;
        if (buf)
            direct_pad(dj, j->x + n * c * g->in_sp, c, r0, rows + dj->halo, buf);
        const float *in = buf ? buf : dj->pad + n * c * chan + r0 * dj->wp;
        bl.nvec = direct_vectors(dj, P > 1 ? 0 : r0, rows, vec);
        for (int64_t kb = grp * dj->nkb / dj->nkg; kb < (grp + 1) * dj->nkb / dj->nkg; kb++) {
            /* the block's first output channel; blocks do not cross groups */
            int64_t cgrp = kb / dj->kpg, in_grp = kb % dj->kpg * dk, k0 = cgrp * j->kg + in_grp;
            bl.buf = in + cgrp * j->cg * chan;
            bl.w = j->w + k0 * bl.taps;
            bl.b = j->b ? j->b + k0 : NULL;
            bl.y = sc ? sc : j->y + n * j->ys + k0 * g->out_sp;
            bl.nk = j->kg - in_grp < dk ? j->kg - in_grp : dk;
            dj->kern->run(&bl);
            if (sc)
                pool_block(j, sc, bl.nk, rows, r0,
                           j->y + n * j->ys + k0 * (oh_n / P) * (g->out[2] / P));
            for (int64_t i = 0; !sc && (j->d->res || j->d->act) && i < bl.nk; i++) {
                int64_t at = (k0 + i) * g->out_sp + r0 * g->out[2];
                epilogue_span(j->d, j->y + n * j->ys + at,
                              j->d->res ? j->d->res + n * k * g->out_sp + at : NULL,
                              rows * g->out[2]);
            }
        }
    }
    free(sc);
    free(buf);
    free(vec);
}

/* Work items for the pool, about 4 a thread, or one when the work is too
 * small to share. With enough images, one image's slabs each pad their own
 * rows and run every channel block on them. With fewer, each image is split
 * into groups of channel blocks (a divisor of their count, so groups are
 * even) before row slabs, and padded once up front for all its groups, as
 * long as the padded batch fits in COL_BYTES. */
static int direct_conv(conv_job *j)
{
    const tgk_conv_geom *g = &j->g;
    direct_job dj = {.j = j, .kern = direct_pick()};
    int64_t n = j->d->n, c = j->d->c, oh_n = g->out[1], kh_n = g->ker[1], dv = dj.kern->dv;
    int64_t sh = g->str[1], sw = g->str[2];
    bool parallel = tgk_num_threads() > 1 &&
                    2 * n * j->d->k * g->out_sp * j->cg * g->kprod >= DIRECT_PARALLEL_FLOPS;
    int64_t want = parallel ? 4 * (int64_t)tgk_num_threads() : 1, per_image = (want + n - 1) / n;
    dj.nvb = (g->out[2] + dv - 1) / dv;
    dj.wp = dj.nvb * dv + (g->ker[2] - 1) / sw;
    dj.nph = sh * sw;
    dj.halo = (kh_n - 1) / sh;
    dj.kpg = (j->kg + dj.kern->dk - 1) / dj.kern->dk;
    dj.nkb = j->d->groups * dj.kpg;
    int64_t plane = dj.nph * (oh_n + dj.halo) * dj.wp;
    dj.nkg = 1;
    if (per_image > 1 && n * c * plane * (int64_t)sizeof(float) <= COL_BYTES)
        for (dj.nkg = per_image < dj.nkb ? per_image : dj.nkb; dj.nkb % dj.nkg; dj.nkg++)
            ;
    int64_t nslab = (per_image + dj.nkg - 1) / dj.nkg, P = j->d->pool > 1 ? j->d->pool : 1;
    /* a slab is whole pooling windows of rows */
    j->slab = ((oh_n + nslab - 1) / nslab + P - 1) / P * P;
    if (dj.nkg > 1) {
        dj.nr = oh_n + dj.halo;
        if (!(dj.pad = calloc((size_t)(n * c * plane), sizeof *dj.pad)))
            return -1;
        tgk_parallel_for(n * c, 1 + 65536 / plane, direct_pad_planes, &dj);
    } else {
        int64_t most = (COL_BYTES / (c * dj.nph * dj.wp * (int64_t)sizeof(float)) - dj.halo) /
                       P * P;
        j->slab = j->slab < most ? j->slab : most > P ? most : P;
        dj.nr = j->slab + dj.halo;
    }
    j->nslab = (oh_n + j->slab - 1) / j->slab;
    int64_t t = 0;
    for (int64_t ch = 0; ch < j->cg; ch++)    /* a group's channels */
        for (int64_t kh = 0; kh < kh_n; kh++)
            for (int64_t kw = 0; kw < g->ker[2]; kw++)
                dj.tapoff[t++] = (((ch * sh + kh % sh) * sw + kw % sw) * dj.nr + kh / sh) * dj.wp +
                                 kw / sw;
    if (parallel)
        tgk_parallel_for(n * j->nslab * dj.nkg, 1, direct_items, &dj);
    else
        direct_items(&dj, 0, n * j->nslab * dj.nkg);
    free(dj.pad);
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
                    tgk_conv_valid_range(iw, g->str[2], woff, g->out[2], &w0, &w1);
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

/* relu, or y = act(y + res), over output planes [begin, end) (image,
 * channel) of the paths that do not apply them as they store: each image's
 * run of planes at a time (images y_stride apart, res contiguous) */
static void finish_planes(const conv_job *j, int64_t begin, int64_t end, bool relu)
{
    int64_t sp = j->g.out_sp, k = j->d->k;
    for (int64_t p = begin, q; p < end; p = q) {
        q = (p / k + 1) * k < end ? (p / k + 1) * k : end;
        float *y = j->y + p / k * j->ys + p % k * sp;
        if (relu)
            tgk_vec_relu_f32((q - p) * sp, y, y);
        else
            epilogue_span(j->d, y, j->d->res ? j->d->res + p * sp : NULL, (q - p) * sp);
    }
}

static void relu_planes(void *ctx, int64_t begin, int64_t end)
{
    finish_planes(ctx, begin, end, true);
}

static void epilogue_planes(void *ctx, int64_t begin, int64_t end)
{
    finish_planes(ctx, begin, end, false);
}

/* The convolution into a scratch result, then its max pool into y: the
 * paths that do not pool as they go. */
static int conv_then_pool(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *x,
                          const float *w, const float *b, float *y)
{
    tgk_conv_desc full = *d;
    full.pool = 0;
    full.y_stride = 0;
    float *t = malloc((size_t)(d->n * d->k * g->out_sp) * sizeof *t);
    int rc = t ? tgk_conv_f32(&full, x, w, b, t) : -1;
    if (rc == 0) {
        tgk_pool_desc p = {.nsp = 2, .n = d->n, .c = d->k, .in = {d->out[0], d->out[1]},
                           .out = {d->out[0] / d->pool, d->out[1] / d->pool},
                           .kernel = {d->pool, d->pool}, .stride = {d->pool, d->pool},
                           .dil = {1, 1}};
        tgk_max_pool_f32(&p, t, y);
    }
    free(t);
    return rc;
}

/* One image at a time, each into its part of y (y_stride apart): the paths
 * that write y as one block (transposed, depthwise, a pool after the
 * convolution). */
static int conv_images(const tgk_conv_desc *d, const tgk_conv_geom *g, int64_t image,
                       const float *x, const float *w, const float *b, float *y)
{
    tgk_conv_desc one = *d;
    one.n = 1;
    one.y_stride = 0;
    for (int64_t i = 0; i < d->n; i++) {
        one.res = d->res ? d->res + i * image : NULL;
        if (tgk_conv_f32(&one, x + i * d->c * g->in_sp, w, b, y + i * d->y_stride))
            return -1;
    }
    return 0;
}

int tgk_conv_f32(const tgk_conv_desc *d, const float *x, const float *w, const float *b, float *y)
{
    conv_job j = {.d = d, .x = x, .w = w, .b = b, .y = y};
    if (d->n <= 0 || d->c <= 0 || d->k <= 0 || d->groups <= 0 || d->c % d->groups ||
        d->k % d->groups || !tgk_conv_geom_from(d, &j.g) ||
        (d->pool > 1 && (d->nsp != 2 || d->transposed || d->out[0] < d->pool ||
                         d->out[1] < d->pool || d->res || d->act)) ||
        (d->relu && d->act))
        return -1;
    /* one image's y; a y_stride of another size: only some paths take it */
    int64_t image = d->pool > 1 ? d->k * (d->out[0] / d->pool) * (d->out[1] / d->pool)
                                : d->k * j.g.out_sp;
    j.ys = d->y_stride ? d->y_stride : image;
    bool apart = j.ys != image && d->n > 1;
    if (d->y_stride && d->y_stride < image)
        return -1;
    if (d->relu && d->res) {    /* relu(y + res): the relu as an activation, after the sum */
        tgk_conv_desc after = *d;
        after.relu = false;
        after.act = tgk_vec_relu_f32;
        return tgk_conv_f32(&after, x, w, b, y);
    }
    if (apart && (d->transposed || (d->pool > 1 && !use_direct(d, &j.g)) ||
                  (d->groups == d->c && d->groups > 1)))
        return conv_images(d, &j.g, image, x, w, b, y);
    if (d->pool > 1 && !use_direct(d, &j.g))
        return conv_then_pool(d, &j.g, x, w, b, y);
    atomic_init(&j.failed, false);
    const tgk_conv_geom *g = &j.g;
    j.cg = d->c / d->groups;
    j.kg = d->k / d->groups;
    bool relu_done = false, epilogue_done = false;
    int rc;
    if (d->transposed) {
        int64_t per_row = j.kg * g->kprod * g->in[2] * (int64_t)sizeof(float);
        j.slab = COL_BYTES / per_row > 1 ? COL_BYTES / per_row : 1;
        run_items(d->n * d->groups, transposed_items, &j);
    } else if (d->groups == 1 && g->out_sp == 1 && is_pointwise(g)) {
        /* one pixel an image (squeeze-excite's): the linear layer y = x w^T
         * over the batch; as a GEMM over pixels its one column filled a
         * 16-wide panel (16x the work) */
        for (int64_t i = 0; i < d->n * d->k; i++)
            y[i / d->k * j.ys + i % d->k] = b ? b[i % d->k] : 0.0f;
        tgk_gemm_f32(false, true, d->n, d->k, d->c, 1.0f, x, d->c, w, d->c, 1.0f, y, j.ys);
    } else if (d->groups == 1 && d->pool <= 1 && is_pointwise(g)) {
        return tgk_pointwise_f32(d->n, d->c, d->k, g->out_sp, x, w, b, d->res, y, j.ys,
                                 d->relu ? tgk_vec_relu_f32 : d->act);
    } else if (d->groups == 1 && d->pool <= 1 && is_strided_pointwise(g)) {
        return strided_pointwise(d, g, x, w, b, y, j.ys);
    } else if (use_direct(d, g)) {  /* relu as it stores, the epilogue a block at a time */
        if (direct_conv(&j))
            return -1;
        relu_done = epilogue_done = true;
    } else if (d->groups == d->c && j.cg == 1 && d->groups > 1) {
        if (tgk_conv_depthwise_f32(d, g, x, w, b, y))
            return -1;
        relu_done = epilogue_done = true;
    } else if (use_implicit(g, j.kg) && (rc = implicit_conv(&j)) <= 0) {
        if (rc)
            return -1;
        relu_done = epilogue_done = true;
    } else {
        tgk_patch_cols patch = {x, j.cg, *g};
        bool is_patch = tgk_conv_is_patch(g), merged = !is_patch && merge_im2col(d, g);
        tgk_conv_gemm c = {.n = d->n * d->groups, .groups = d->groups, .M = j.kg,
                           .K = j.cg * g->kprod, .P = g->out_sp, .w = w, .b = b, .res = d->res,
                           .y = y, .y_stride = j.ys, .act = d->relu ? tgk_vec_relu_f32 : d->act,
                           .cols = is_patch ? tgk_patch_panels
                                   : merged ? im2col_merged : im2col_panels,
                           .ctx = is_patch ? (const void *)&patch : &j, .whole_rows = true,
                           .merged = merged};
        if (tgk_conv_gemm_f32(&c))
            return -1;
        relu_done = epilogue_done = true;
    }
    if (d->relu && !relu_done && !atomic_load(&j.failed))
        tgk_parallel_for(d->n * d->k, 1 + 16384 / g->out_sp, relu_planes, &j);
    if ((d->res || d->act) && !epilogue_done && !atomic_load(&j.failed))
        tgk_parallel_for(d->n * d->k, 1 + 16384 / g->out_sp, epilogue_planes, &j);
    return atomic_load(&j.failed) ? -1 : 0;
}
