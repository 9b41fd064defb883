/* Depthwise convolution channels last (groups == c == k, 2-D): x [n, ih, iw,
 * c] -> y [n, oh, ow, c] (pixels y_ld apart), the weight packed by
 * tgk_pack_conv_nhwc_f32 into panels of 16 channels, [ceil(c/16)][kh*kw][16]:
 * a tap's weights for 16 channels are one vector. tgk_conv_nhwc_f32 hands
 * its depthwise layers here.
 *
 * Channels last, a depthwise convolution needs no shuffle at all: a pixel's
 * channels are contiguous, so each tap is one FMA of a vector of channels of
 * the input pixel under it (read in place, whatever the stride or dilation)
 * by that tap's weight vector. A register tile holds P output pixels of a row
 * x NV vectors of channels (AVX-512: 8 x 2 vectors of 16); a row is swept P
 * pixels at a time, all the channels of those pixels before the next (the
 * memory read and written in order). Stride 1 or 2 with 3 or 5 taps across
 * (the mobile nets' layers) read each input column once a kernel row for
 * every tap that uses it, the row's weight vectors in registers; other
 * shapes load each tap's weights once for the tile's pixels. The taps of
 * padding are skipped, not read from a padded copy: kernel rows outside the
 * input are left out of the whole output row, and in the tiles at a row's
 * ends (and a last partial tile) each tap runs over only the pixels whose
 * column lies in the input. Channels past the last whole vector go through
 * masked loads and stores (AVX-512, AVX2) or single floats (the baseline).
 *
 * Bias, the residual, relu, relu6 and hardswish are applied on the
 * registers as the tile stores; another activation (SiLU) on each finished
 * row's channels while they are in cache. Tasks are output rows, split into
 * chunks of channels when there are too few rows for the threads. */
#include "backend/cpu/kernels/conv_geom.h"
#include "backend/cpu/kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define DWN_X86 1
#endif

#define INLINE static inline __attribute__((always_inline))
#define UNROLL _Pragma("GCC unroll 16")

/* a task's channels: a multiple of every tile's NV x VL */
#define DWN_CHUNK 64

typedef struct {
    const tgk_conv_nhwc_desc *d;
    const float *x, *wp, *b;
    float *y;
    int64_t ldy, taps;
    int64_t ox_lo, ox_hi;       /* the output columns whose taps all lie in the input */
    int64_t nchunk, chunk;      /* tasks are (row, chunk of `chunk` channels) */
    int act;                    /* what the tile applies on its registers (TGK_ACT_*) */
    int fixed;                  /* the stride and width across the tiles take as constants */
} dwn_job;

/* dwn_job.fixed: stride and kernel width across (no dilation), or none */
enum { DWN_ANY, DWN_S1K3, DWN_S1K5, DWN_S2K3, DWN_S2K5 };

/* DWN_KERNEL(name, ATTR, vec, VL, NV, P, LOADT, STORET): name##_tasks, the
 * tasks' function for vectors of VL floats compiled with ATTR, tiles of P
 * pixels x NV vectors. LOADT(vec *v, const float *src, int64_t n) loads the
 * first n < VL floats (the rest zero), STORET(float *dst, const vec *v,
 * int64_t n) stores them.
 *
 * A tile: nv vectors (the last of them tail: nt < VL floats) of channels
 * [ch, ...) for output pixels [ox0, ox0 + npix) of the row whose first input
 * row is hs, kernel rows [a0, a1). x: the image at channel ch; y, res: the
 * row at pixel ox0, channel ch. Its taps, for a kernel row:
 * - any (S = 0): tap by tap, its weights loaded once for the P pixels; edge:
 *   only the pixels < npix whose column for the tap lies in x;
 * - S and KW constants (stride S, KW wide, no dilation across, every tap in
 *   x): input column by column, each loaded once for the taps that read it
 *   (stride 1, 3 wide, 8 pixels: 10 loads, not 24), the row's KW weight
 *   vectors in registers. */
#define DWN_KERNEL(name, ATTR, vec, VL, NV, P, LOADT, STORET)                                \
    TGK_VEC_ACT(ATTR INLINE, name##_act, vec)                                               \
    /* *v = the floats at src, vector v of nv (the last one tail) */                        \
    ATTR INLINE void name##_ld(vec *v, const float *src, const int nv, const bool tail,     \
                               const int i, int64_t nt)                                     \
    {                                                                                       \
        if (tail && i == nv - 1)                                                            \
            LOADT(v, src, nt);                                                              \
        else                                                                                \
            memcpy(v, src, sizeof *v);                                                      \
    }                                                                                       \
    ATTR INLINE void name##_tile(const int nv, const bool edge, const bool tail,            \
                                 const int S, const int KW, const dwn_job *j,               \
                                 const float *x, int64_t hs, int64_t a0, int64_t a1,        \
                                 int64_t ox0, int64_t npix, int64_t ch, int64_t nt,         \
                                 float *y, const float *res)                                \
    {                                                                                       \
        const tgk_conv_nhwc_desc *d = j->d;                                                 \
        const int64_t c = d->c, iw = d->in[1], kw = d->kernel[1], sw = d->stride[1];        \
        const int64_t dw = d->dil[1];                                                       \
        const float *wv[NV];                                                                \
        vec acc[P][NV], w[KW ? KW : 1][NV];                                                 \
        UNROLL for (int v = 0; v < nv; v++) {                                               \
            int64_t cc = ch + v * VL;                                                       \
            wv[v] = j->wp + cc / 16 * j->taps * 16 + cc % 16;                               \
            w[0][v] = (vec){0};                                                             \
            if (j->b)                                                                       \
                name##_ld(&w[0][v], j->b + cc, nv, tail, v, nt);                            \
            UNROLL for (int p = 0; p < P; p++)                                              \
                acc[p][v] = w[0][v];                                                        \
        }                                                                                   \
        /* pixel p's input at xb + po[p] */                                                 \
        int64_t po[P];                                                                      \
        UNROLL for (int p = 0; p < P; p++)                                                  \
            po[p] = p * sw * c;                                                             \
        for (int64_t a = a0; a < a1; a++) {                                                 \
            const float *xr = x + (hs + a * d->dil[0]) * iw * c;                            \
            if (KW) {                                                                       \
                const float *xb = xr + (ox0 * S - d->pad[1]) * c;                           \
                UNROLL for (int b = 0; b < KW; b++)                                         \
                    UNROLL for (int v = 0; v < nv; v++)                                     \
                        memcpy(&w[b][v], wv[v] + (a * KW + b) * 16, sizeof w[b][v]);        \
                UNROLL for (int i = 0; i < S * (P - 1) + KW; i++)                           \
                    UNROLL for (int v = 0; v < nv; v++) {                                   \
                        vec xv;                                                             \
                        name##_ld(&xv, xb + i * c + v * VL, nv, tail, v, nt);               \
                        UNROLL for (int b = 0; b < KW; b++)                                 \
                            if (i >= b && (i - b) % S == 0 && (i - b) / S < P)              \
                                acc[(i - b) / S][v] += xv * w[b][v];                        \
                    }                                                                       \
                continue;                                                                   \
            }                                                                               \
            for (int64_t b = 0; b < kw; b++) {                                              \
                int64_t col = ox0 * sw - d->pad[1] + b * dw, plo = 0, phi = P;              \
                if (edge) /* the tile's pixels whose column for this tap is in x */        \
                    tgk_conv_valid_range(npix, sw, col, iw, &plo, &phi);                    \
                UNROLL for (int v = 0; v < nv; v++)                                         \
                    memcpy(&w[0][v], wv[v] + (a * kw + b) * 16, sizeof w[0][v]);            \
                const float *xb = xr + col * c;                                             \
                UNROLL for (int p = 0; p < P; p++) {                                        \
                    if (edge && (p < plo || p >= phi))                                      \
                        continue;                                                           \
                    UNROLL for (int v = 0; v < nv; v++) {                                   \
                        vec xv;                                                             \
                        name##_ld(&xv, xb + po[p] + v * VL, nv, tail, v, nt);               \
                        acc[p][v] += xv * w[0][v];                                          \
                    }                                                                       \
                }                                                                           \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int p = 0; p < P; p++) {                                                \
            if (edge && p >= npix)                                                          \
                break;                                                                      \
            UNROLL for (int v = 0; v < nv; v++) {                                           \
                if (res) {                                                                  \
                    vec rv;                                                                 \
                    name##_ld(&rv, res + p * c + v * VL, nv, tail, v, nt);                  \
                    acc[p][v] += rv;                                                        \
                }                                                                           \
                if (j->act != TGK_ACT_NONE)                                                 \
                    name##_act(&acc[p][v], j->act);                                         \
                if (tail && v == nv - 1)                                                    \
                    STORET(y + p * j->ldy + v * VL, &acc[p][v], nt);                        \
                else                                                                        \
                    memcpy(y + p * j->ldy + v * VL, &acc[p][v], sizeof acc[p][v]);          \
            }                                                                               \
        }                                                                                   \
    }                                                                                       \
    /* channels [c0, c1) of the pixels [ox, ox + n) of a row: x the image,           \
     * y and res the row at pixel ox */                                                   \
    ATTR INLINE void name##_span(const bool edge, const int S, const int KW,                \
                                 const dwn_job *j, const float *x, int64_t hs, int64_t a0,  \
                                 int64_t a1, int64_t ox, int64_t n, int64_t c0, int64_t c1, \
                                 float *y, const float *res)                                \
    {                                                                                       \
        int64_t ch = c0;                                                                    \
        for (; c1 - ch >= NV * VL; ch += NV * VL)                                           \
            name##_tile(NV, edge, false, S, KW, j, x + ch, hs, a0, a1, ox, n, ch, 0, y + ch, \
                        res ? res + ch : NULL);                                             \
        for (; c1 - ch >= VL; ch += VL)                                                     \
            name##_tile(1, edge, false, S, KW, j, x + ch, hs, a0, a1, ox, n, ch, 0, y + ch,  \
                        res ? res + ch : NULL);                                             \
        if (ch < c1)                                                                        \
            name##_tile(1, edge, true, S, KW, j, x + ch, hs, a0, a1, ox, n, ch, c1 - ch,     \
                        y + ch, res ? res + ch : NULL);                                     \
    }                                                                                       \
    /* channels [c0, c1) of output row `row`, P pixels at a time, each tile with           \
     * every tap in x with S, KW (any: 0), the others edge */                               \
    ATTR INLINE void name##_rows(const int S, const int KW, const dwn_job *j, int64_t row,  \
                                 int64_t c0, int64_t c1)                                    \
    {                                                                                       \
        const tgk_conv_nhwc_desc *d = j->d;                                                 \
        const int64_t c = d->c, oh = d->out[0], ow = d->out[1];                             \
        int64_t hs = row % oh * d->stride[0] - d->pad[0], a0, a1;                           \
        tgk_conv_valid_range(d->kernel[0], d->dil[0], hs, d->in[0], &a0, &a1);              \
        const float *x = j->x + row / oh * d->in[0] * d->in[1] * c;                         \
        float *y = j->y + row * ow * j->ldy;                                                \
        const float *res = d->res ? d->res + row * ow * c : NULL;                           \
        for (int64_t ox = 0; ox < ow; ox += P) {                                            \
            int64_t n = ow - ox < P ? ow - ox : P;                                          \
            const float *r = res ? res + ox * c : NULL;                                     \
            if (n == P && ox >= j->ox_lo && ox + P <= j->ox_hi)                             \
                name##_span(false, S, KW, j, x, hs, a0, a1, ox, n, c0, c1,                  \
                            y + ox * j->ldy, r);                                            \
            else                                                                            \
                name##_span(true, 0, 0, j, x, hs, a0, a1, ox, n, c0, c1, y + ox * j->ldy,   \
                            r);                                                             \
        }                                                                                   \
    }                                                                                       \
    ATTR static void name##_tasks(void *ctx, int64_t begin, int64_t end)                    \
    {                                                                                       \
        const dwn_job *j = ctx;                                                             \
        const tgk_conv_nhwc_desc *d = j->d;                                                 \
        for (int64_t t = begin; t < end; t++) {                                             \
            int64_t row = t / j->nchunk, c0 = t % j->nchunk * j->chunk;                     \
            int64_t c1 = c0 + j->chunk < d->c ? c0 + j->chunk : d->c;                       \
            switch (j->fixed) {                                                             \
            case DWN_S1K3: name##_rows(1, 3, j, row, c0, c1); break;                        \
            case DWN_S1K5: name##_rows(1, 5, j, row, c0, c1); break;                        \
            case DWN_S2K3: name##_rows(2, 3, j, row, c0, c1); break;                        \
            case DWN_S2K5: name##_rows(2, 5, j, row, c0, c1); break;                        \
            default: name##_rows(0, 0, j, row, c0, c1);                                     \
            }                                                                               \
            if (d->act && j->act == TGK_ACT_NONE) {                                         \
                float *y = j->y + row * d->out[1] * j->ldy + c0;                            \
                for (int64_t ox = 0; ox < d->out[1]; ox++)                                  \
                    d->act(c1 - c0, y + ox * j->ldy, y + ox * j->ldy);                      \
            }                                                                               \
        }                                                                                   \
    }

/* the first n < VL floats, single floats (the baseline) */
#define DWN_LOADT_SCALAR(v, src, n)                                                         \
    do {                                                                                    \
        memset((v), 0, sizeof *(v));                                                        \
        for (int64_t i_ = 0; i_ < (n); i_++)                                                \
            (*(v))[i_] = (src)[i_];                                                         \
    } while (0)
#define DWN_STORET_SCALAR(dst, v, n)                                                        \
    do {                                                                                    \
        for (int64_t i_ = 0; i_ < (n); i_++)                                                \
            (dst)[i_] = (*(v))[i_];                                                         \
    } while (0)

#ifdef DWN_X86
typedef float dwn_v16 __attribute__((vector_size(64)));
typedef float dwn_v8 __attribute__((vector_size(32)));
#define V4 __attribute__((target("arch=x86-64-v4")))
#define V3 __attribute__((target("arch=x86-64-v3")))
/* the first n floats, n < VL, under a mask */
#define DWN_MASK16(n) ((__mmask16)((1u << (n)) - 1))
#define DWN_LOADT16(v, src, n) (*(v) = (dwn_v16)_mm512_maskz_loadu_ps(DWN_MASK16(n), (src)))
#define DWN_STORET16(dst, v, n) _mm512_mask_storeu_ps((dst), DWN_MASK16(n), (__m512)*(v))
/* AVX2's masked moves take the lanes whose sign bit is set */
#define DWN_MASK8(n)                                                                        \
    _mm256_cmpgt_epi32(_mm256_set1_epi32((int)(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7))
#define DWN_LOADT8(v, src, n) (*(v) = (dwn_v8)_mm256_maskload_ps((src), DWN_MASK8(n)))
#define DWN_STORET8(dst, v, n) _mm256_maskstore_ps((dst), DWN_MASK8(n), (__m256)*(v))
DWN_KERNEL(dwn_avx512, V4, dwn_v16, 16, 2, 8, DWN_LOADT16, DWN_STORET16)
DWN_KERNEL(dwn_avx2, V3, dwn_v8, 8, 2, 5, DWN_LOADT8, DWN_STORET8)
#endif
typedef float dwn_v4 __attribute__((vector_size(16)));
DWN_KERNEL(dwn_base, , dwn_v4, 4, 2, 4, DWN_LOADT_SCALAR, DWN_STORET_SCALAR)

/* The widest this CPU runs, or (isa) the named one if it runs it. */
static tgk_task_fn dwn_find(const char *isa)
{
    bool any = !isa;
#ifdef DWN_X86
    __builtin_cpu_init();
    if ((any || !strcmp(isa, "avx512")) && __builtin_cpu_supports("x86-64-v4"))
        return dwn_avx512_tasks;
    if ((any || !strcmp(isa, "avx2")) && __builtin_cpu_supports("x86-64-v3"))
        return dwn_avx2_tasks;
#endif
    return any || !strcmp(isa, "base") ? dwn_base_tasks : NULL;
}

static tgk_task_fn dwn_tasks;

/* chosen once, before any caller (a test may then pick another) */
__attribute__((constructor)) static void dwn_pick(void)
{
    dwn_tasks = dwn_find(NULL);
}

bool tgk_conv_dw_nhwc_isa(const char *isa)
{
    tgk_task_fn f = dwn_find(isa);
    if (f)
        dwn_tasks = f;
    return f != NULL;
}

/* what the tile applies on its registers for act */
static int act_kind(tgk_vec_fn act)
{
    return act == tgk_vec_relu_f32 ? TGK_ACT_RELU : act == tgk_vec_relu6_f32 ? TGK_ACT_RELU6
           : act == tgk_vec_hardswish_f32 ? TGK_ACT_HARDSWISH : TGK_ACT_NONE;
}

int tgk_conv_dw_nhwc_f32(const tgk_conv_nhwc_desc *d, const float *x, const float *wp,
                         const float *b, float *y)
{
    bool ok = d->n >= 0 && d->c > 0 && d->k == d->c && d->groups == d->c &&
              (d->y_ld == 0 || d->y_ld >= d->k) && !(d->relu && d->act);
    for (int i = 0; i < 2; i++)
        ok = ok && d->in[i] > 0 && d->out[i] > 0 && d->kernel[i] > 0 && d->stride[i] > 0 &&
             d->pad[i] >= 0 && d->dil[i] > 0;
    if (!ok)
        return -1;
    dwn_job j = {.d = d, .x = x, .wp = wp, .b = b, .y = y, .ldy = d->y_ld ? d->y_ld : d->k,
                 .taps = d->kernel[0] * d->kernel[1],
                 .act = d->relu ? TGK_ACT_RELU : act_kind(d->act)};
    if (d->dil[1] == 1 && (d->stride[1] == 1 || d->stride[1] == 2) &&
        (d->kernel[1] == 3 || d->kernel[1] == 5))
        j.fixed = (d->stride[1] == 1 ? DWN_S1K3 : DWN_S2K3) + (d->kernel[1] == 5);
    /* ox_lo: the first column whose first tap is in x; ox_hi: past the last
     * whose last tap is */
    int64_t sw = d->stride[1], reach = d->pad[1] - (d->kernel[1] - 1) * d->dil[1];
    j.ox_lo = (d->pad[1] + sw - 1) / sw;
    j.ox_hi = d->in[1] + reach > 0 ? (d->in[1] + reach - 1) / sw + 1 : 0;
    /* one task a row, all its channels; rows split into chunks of channels
     * (multiples of DWN_CHUNK) when there are fewer than 4 a thread */
    int64_t rows = d->n * d->out[0], blocks = (d->c + DWN_CHUNK - 1) / DWN_CHUNK;
    int64_t want = (4 * tgk_num_threads() + rows - 1) / rows;
    want = want < blocks ? want : blocks;
    j.chunk = (blocks + want - 1) / want * DWN_CHUNK;
    j.nchunk = (d->c + j.chunk - 1) / j.chunk;
    int64_t work = d->out[1] * j.chunk * j.taps;
    tgk_parallel_for(rows * j.nchunk, 1 + 65536 / (work > 0 ? work : 1), dwn_tasks, &j);
    return 0;
}
