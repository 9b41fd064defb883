/* The int8 depthwise convolution (one input channel a group), taken by
 * tgk_qconv_f32 (qconv.c) on every path: a GEMM of one input channel wastes
 * nearly all of its tile, so each channel's quantized plane is copied with a
 * border of the zero point and every output row sums its taps' rows in
 * 32-bit integers (vectorized: a widening multiply-add per tap, the same
 * exact sums on every ISA), then goes through the float epilogue of the
 * other paths: (float)(acc - zero * sum w) * scale + bias, written as float,
 * or requantized to u8 (qconv_paths.h). */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "conv_geom.h"
#include "kernels.h"
#include "qconv_paths.h"
#include "qgemm.h"
#include "qquant.h"
#include "vecmath.h"    /* TGK_CLONES; -O3 in the interpreter's copy too */

bool tgk_qconv_dw_fits(const tgk_conv_desc *d)
{
    return !d->transposed && d->groups > 0 && d->c == d->groups && d->k % d->groups == 0;
}

static int64_t taps_of(const tgk_conv_desc *d)
{
    int64_t t = 1;
    for (int i = 0; i < d->nsp && i < 3; i++)
        t *= d->kernel[i];
    return t;
}

/* The kernel's rows (its taps over the leading dims) and the 4-tap runs
 * along its last dim that cover one. */
static void runs_of(const tgk_conv_desc *d, int64_t *rows, int64_t *nq)
{
    int64_t width = d->nsp > 0 ? d->kernel[d->nsp - 1] : 1;
    *rows = width > 0 ? taps_of(d) / width : 0;
    *nq = (width + 3) / 4;
}

/* Bytes before the runs: the sums and the weights, rounded up to 4. */
static size_t runs_at(const tgk_conv_desc *d)
{
    return ((size_t)d->k * (4 + (size_t)taps_of(d)) + 3) & ~(size_t)3;
}

/* Per output channel its tap sum (s32), then the weights as they are, then
 * (for the VBMI rows) per channel, kernel row and run of 4 taps along it
 * those 4 weights as one 32-bit word (0 past the kernel's width). */
size_t tgk_qconv_dw_size(const tgk_conv_desc *d)
{
    int64_t rows, nq;
    runs_of(d, &rows, &nq);
    return runs_at(d) + sizeof(int32_t) * (size_t)(d->k * rows * nq);
}

void tgk_qconv_dw_pack(const tgk_conv_desc *d, const int8_t *w, void *packed)
{
    int64_t taps = taps_of(d), rows, nq;
    runs_of(d, &rows, &nq);
    int64_t width = rows ? taps / rows : 0;
    int32_t *sum = packed;
    size_t wend = (size_t)d->k * (4 + (size_t)taps);
    memcpy(sum + d->k, w, (size_t)(d->k * taps));
    memset((char *)packed + wend, 0, runs_at(d) - wend);     /* the padding to 4 */
    int32_t *runs = (int32_t *)((char *)packed + runs_at(d));
    for (int64_t k = 0; k < d->k; k++) {
        int32_t s = 0;
        for (int64_t t = 0; t < taps; t++)
            s += w[k * taps + t];
        sum[k] = s;
        for (int64_t r = 0; r < rows; r++)
            for (int64_t q = 0; q < nq; q++) {
                int8_t b[4] = {0, 0, 0, 0};
                for (int t = 0; t < 4 && q * 4 + t < width; t++)
                    b[t] = w[k * taps + r * width + q * 4 + t];
                memcpy(&runs[(k * rows + r) * nq + q], b, 4);
            }
    }
}

typedef struct {
    const tgk_conv_geom *g;
    const tgk_qact *a;          /* x or xq [n * c][in_sp]; y or yq [n * k][out_sp] */
    uint8_t *planes;            /* [n * c][padded], filled by the tasks */
    const int32_t *sum;
    const int8_t *w;
    const float *scale, *bias;
    int64_t c, kg, pd[3], zero;
    const struct vbmi_prep *vbmi;   /* the VBMI rows' setup, or NULL: the portable rows */
} dw_job;

/* acc[o] += src[o * s] * w for o < n: widened, vectorized per ISA. */
TGK_CLONES static void tap_row(int32_t *restrict acc, const uint8_t *restrict src, int64_t s,
                               int32_t w, int64_t n)
{
    if (s == 1)
        for (int64_t o = 0; o < n; o++)
            acc[o] += (int32_t)src[o] * w;
    else
        for (int64_t o = 0; o < n; o++)
            acc[o] += (int32_t)src[o * s] * w;
}

#define ROW 256     /* output columns summed at once */

/* Not cloned: with FMA the compiler would fuse the multiply and the add,
 * which the other paths round separately. Output element at of a's y, or
 * requantized into its yq (s and b: m and c, qquant.h). */
static void epilogue_row(const tgk_qact *a, int64_t at, const int32_t *acc, int64_t n,
                         int32_t corr, float s, float b)
{
    if (a->yq) {
        for (int64_t o = 0; o < n; o++)
            a->yq[at + o] = tgk_requant1(acc[o] - corr, s, b, (float)a->y_lo, (float)a->y_hi);
        return;
    }
    for (int64_t o = 0; o < n; o++)
        a->y[at + o] = (float)(acc[o] - corr) * s + b;
}

/* Output channel k of the plane pl (padded), row by row, into the output
 * from element y: the portable sums. */
static void channel_rows(const dw_job *j, const uint8_t *pl, int64_t k, int64_t y)
{
    const tgk_conv_geom *g = j->g;
    const int8_t *w = j->w + k * g->kprod;
    int64_t ow = g->out[2];
    int32_t acc[ROW], corr = (int32_t)j->zero * j->sum[k];
    float s = j->scale[k], bias = j->bias ? j->bias[k] : 0.0f;
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1++)
            for (int64_t c0 = 0; c0 < ow; c0 += ROW) {
                int64_t n = ow - c0 < ROW ? ow - c0 : ROW;
                memset(acc, 0, sizeof acc);
                for (int64_t a = 0, t = 0; a < g->ker[0]; a++)
                    for (int64_t bb = 0; bb < g->ker[1]; bb++)
                        for (int64_t cc = 0; cc < g->ker[2]; cc++, t++)
                            tap_row(acc, pl + ((o0 * g->str[0] + a * g->dil[0]) * j->pd[1] +
                                               o1 * g->str[1] + bb * g->dil[1]) * j->pd[2] +
                                             c0 * g->str[2] + cc * g->dil[2],
                                    g->str[2], w[t], n);
                epilogue_row(j->a, y + (o0 * g->out[1] + o1) * ow + c0, acc, n, corr, s, bias);
            }
}

#if defined(__x86_64__)
#define QUADS 4     /* kernel widths up to 16 */
#define KROWS 64    /* kernel rows (the taps' rows over the leading dims) */

/* What the VNNI/VBMI rows need, made once a call: the window permutation,
 * the output rows a vector covers, each kernel row's offset in a padded
 * plane; and the packed weight runs. */
typedef struct vbmi_prep {
    __m512i perm;
    int64_t rows, nq, rpv, off[KROWS];
    const int32_t *wq;          /* [k][rows * nq] */
} vbmi_prep;

/* The same with VNNI and VBMI, 16 output columns a vector: for each kernel
 * row, each run of 4 taps along it gives every column its 4 input bytes in
 * one vpermb of a 64-byte window (byte 4i + t = window[i * stride + t *
 * dilation]) and one vpdpbusd against the 4 weights (0 past the kernel's
 * width) adds them. Needs 15 * stride + 3 * dilation < 64; reads up to 63
 * bytes past a row (the planes' slack). Output rows narrower than 16
 * columns (EfficientNet's 8x8 and 4x4 planes) take v->rpv of them a vector
 * where their windows fit in 64 bytes: lane i is column i % width of row
 * i / width, and the rows are contiguous in the output. R and NQ: the kernel's rows and
 * quads, constants (3 and 1: 3x3; 5 and 2: 5x5) for the loops to unroll, or 0: v's. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,fma"), always_inline))
static inline void rows_vbmi(const int R, const int NQ, const dw_job *j, const vbmi_prep *v,
                             const uint8_t *pl, int64_t k, int64_t y)
{
    const tgk_conv_geom *g = j->g;
    const int64_t rows = R ? R : v->rows, nq = NQ ? NQ : v->nq, rpv = v->rpv;
    int64_t ow = g->out[2], s2 = g->str[2], d2 = g->dil[2];
    const int32_t *wq = v->wq + k * rows * nq;
    __m512i corr = _mm512_set1_epi32((int32_t)j->zero * j->sum[k]);
    __m512 s = _mm512_set1_ps(j->scale[k]), bias = _mm512_set1_ps(j->bias ? j->bias[k] : 0.0f);
    const tgk_qact *a = j->a;
    __m512 ylo = _mm512_set1_ps((float)a->y_lo), yhi = _mm512_set1_ps((float)a->y_hi);
    for (int64_t o0 = 0; o0 < g->out[0]; o0++)
        for (int64_t o1 = 0; o1 < g->out[1]; o1 += rpv) {
            const uint8_t *base = pl + (o0 * g->str[0] * j->pd[1] + o1 * g->str[1]) * j->pd[2];
            int64_t yrow = y + (o0 * g->out[1] + o1) * ow;
            for (int64_t c0 = 0; c0 < ow; c0 += 16) {
                __m512i acc = _mm512_setzero_si512();
                const uint8_t *at = base + c0 * s2;
#pragma GCC unroll 8
                for (int64_t r = 0; r < rows; r++)
#pragma GCC unroll 4
                    for (int64_t q = 0; q < nq; q++) {
                        __m512i win = _mm512_loadu_si512(at + v->off[r] + q * 4 * d2);
                        acc = _mm512_dpbusd_epi32(acc, _mm512_permutexvar_epi8(v->perm, win),
                                                  _mm512_set1_epi32(wq[r * nq + q]));
                    }
                int64_t n = rpv == 1 ? ow - c0 : (g->out[1] - o1 < rpv ? g->out[1] - o1 : rpv) * ow;
                __mmask16 m = n >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << n) - 1);
                acc = _mm512_sub_epi32(acc, corr);
                if (a->yq) {
                    _mm_mask_storeu_epi8(a->yq + yrow + c0, m, tgk_requant16(acc, s, bias, ylo, yhi));
                    continue;
                }
                __m512 f = _mm512_mul_round_ps(_mm512_cvtepi32_ps(acc), s,
                                               _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                f = _mm512_add_round_ps(f, bias, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
                _mm512_mask_storeu_ps(a->y + yrow + c0, m, f);
            }
        }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,avx512vbmi,fma")))
static void channel_rows_vbmi(const dw_job *j, const uint8_t *pl, int64_t k, int64_t y)
{
    const vbmi_prep *v = j->vbmi;
    if (v->rows == 3 && v->nq == 1)
        rows_vbmi(3, 1, j, v, pl, k, y);
    else if (v->rows == 5 && v->nq == 2)   /* 5x5 (EfficientNet's, MnasNet's) */
        rows_vbmi(5, 2, j, v, pl, k, y);
    else
        rows_vbmi(0, 0, j, v, pl, k, y);
}

/* v for the call (wq: the packed runs). */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void vbmi_setup(const dw_job *j, vbmi_prep *v, const int32_t *wq)
{
    const tgk_conv_geom *g = j->g;
    int64_t s2 = g->str[2], d2 = g->dil[2], ow = g->out[2], step = g->str[1] * j->pd[2];
    v->rows = g->ker[0] * g->ker[1], v->nq = (g->ker[2] + 3) / 4;
    /* rows a vector: as many as fit 16 lanes and a window's 64 bytes */
    v->rpv = ow < 16 ? 16 / ow : 1;
    while (v->rpv > 1 && (v->rpv - 1) * step + (ow - 1) * s2 + 3 * d2 >= 64)
        v->rpv--;
    uint8_t idx[64] = {0};
    for (int64_t i = 0; i < (v->rpv == 1 ? 16 : v->rpv * ow); i++)
        for (int t = 0; t < 4; t++) {
            int64_t col = v->rpv == 1 ? i : i % ow, row = v->rpv == 1 ? 0 : i / ow;
            idx[4 * i + t] = (uint8_t)(row * step + col * s2 + t * d2);
        }
    v->perm = _mm512_loadu_si512(idx);
    for (int64_t a = 0, r = 0; a < g->ker[0]; a++)
        for (int64_t bb = 0; bb < g->ker[1]; bb++, r++)
            v->off[r] = (a * g->dil[0] * j->pd[1] + bb * g->dil[1]) * j->pd[2];
    v->wq = wq;
}

static bool vbmi_fits(const tgk_conv_geom *g)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx512vbmi");
    }
    return have && !strcmp(tgk_qgemm_path(), "avx512vnni") && 15 * g->str[2] + 3 * g->dil[2] < 64 &&
           g->ker[2] <= 4 * QUADS && g->ker[0] * g->ker[1] <= KROWS;
}
#endif

/* Planes [b, e) of (image, input channel): padded once, then each output
 * channel of the group. */
static void dw_planes(void *ctx, int64_t b, int64_t e)
{
    const dw_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    int64_t psp = j->pd[0] * j->pd[1] * j->pd[2];
    void (*rows)(const dw_job *, const uint8_t *, int64_t, int64_t) = channel_rows;
#if defined(__x86_64__)
    if (j->vbmi)
        rows = channel_rows_vbmi;
#endif
    for (int64_t i = b; i < e; i++) {
        int64_t img = i / j->c, ch = i % j->c;
        uint8_t *pl = j->planes + i * psp;
        memset(pl, (int)j->zero, (size_t)psp);
        for (int64_t i0 = 0; i0 < g->in[0]; i0++) {  /* into the padded plane */
            int64_t at = (i * g->in[0] + i0) * g->in[1] * g->in[2];
            uint8_t *dst = pl + ((i0 + g->pad[0]) * j->pd[1] + g->pad[1]) * j->pd[2] + g->pad[2];
            if (!j->a->xq) {
                tgk_quantize_u8_rows(g->in[1], g->in[2], j->a->x + at, g->in[2], j->a->x_scale,
                                     (int32_t)j->zero, 0, 255, dst, j->pd[2]);
                continue;
            }
            for (int64_t i1 = 0; i1 < g->in[1]; i1++)
                memcpy(dst + i1 * j->pd[2], j->a->xq + at + i1 * g->in[2], (size_t)g->in[2]);
        }
        for (int64_t m = 0; m < j->kg; m++) {
            int64_t k = ch * j->kg + m;
            rows(j, pl, k, (img * j->c * j->kg + k) * g->out_sp);
        }
    }
}

int tgk_qconv_dw(const tgk_conv_desc *d, const tgk_qact *a, const void *packed,
                 const float *scale, const float *bias)
{
    tgk_conv_geom g;
    if (!tgk_qconv_dw_fits(d) || !tgk_conv_geom_from(d, &g))
        return -1;
    dw_job j = {&g, a, NULL, packed, (const int8_t *)((const int32_t *)packed + d->k), scale,
                bias, d->c, d->k / d->c, {0, 0, 0}, a->x_zero, NULL};
    int64_t psp = tgk_conv_padded_dims(&g, j.pd);
    /* 64 bytes of slack: the VBMI rows read whole windows */
    uint8_t *planes = malloc((size_t)(d->n * d->c * psp) + 64);
    if (!planes)
        return -1;
#if defined(__x86_64__)
    vbmi_prep v;
    if (vbmi_fits(&g)) {
        vbmi_setup(&j, &v, (const int32_t *)((const char *)packed + runs_at(d)));
        j.vbmi = &v;
    }
#endif
    memset(planes + d->n * d->c * psp, 0, 64);
    j.planes = planes;
    tgk_parallel_for(d->n * d->c, 1 + 16384 / (g.out_sp * g.kprod * j.kg), dw_planes, &j);
    free(planes);
    return 0;
}
