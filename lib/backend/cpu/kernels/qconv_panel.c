/* The int8 convolution as the float one runs (conv.c): output channels are
 * the GEMM's rows, pixels its columns, and im2col writes a chunk of 64
 * pixels straight into VNNI panels, [k quad][16 pixels][4 bytes], so one
 * vpdpbusd multiplies 16 pixels' 4 inputs by a broadcast 4 weights of one
 * output channel. The input is quantized once into a zero-point-padded
 * layout [group][channel quad][d][h][w][4 channels], where a tap's quad for
 * 16 pixels of an output row is one 64-byte run (stride 1). The result is
 * written per output channel, contiguous pixels, as y's layout wants it,
 * through the same float epilogue as the row path (qconv.c), as float or
 * quantized to u8 (qconv_paths.h): every path gives the same bits. */
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#elif defined(__SSE2__)
#include <emmintrin.h>
#endif

#include "conv_geom.h"
#include "kernels.h"
#include "qconv_paths.h"
#include "qgemm.h"
#include "qquant.h"
#include "vecmath.h"    /* -O3 in the interpreter's copy too; no FMA: exact */

#define MR 6                    /* output channels a tile */
#define NR 4                    /* panels a tile */
#define PX 16                   /* pixels a panel */
#define CHUNK (NR * PX)         /* pixels im2col packs at once */
#define MB_TASK 4               /* blocks of MR channels a GEMM task */
#define SLAB_BYTES (4 << 20)    /* packed pixels at once, at most */

typedef struct {
    int64_t cg, kg, cq, kq, mb; /* channels per group in and out, channel quads, k quads, MR blocks */
    int64_t pd[3];              /* the padded input's dims */
    int64_t psp;                /* their product */
} pgeom;

static void pgeom_of(const tgk_conv_desc *d, const tgk_conv_geom *g, pgeom *p)
{
    p->cg = d->c / d->groups, p->kg = d->k / d->groups;
    p->cq = (p->cg + 3) / 4, p->kq = p->cq * g->kprod, p->mb = (p->kg + MR - 1) / MR;
    p->psp = tgk_conv_padded_dims(g, p->pd);
}

/* One group's weights: row sums [mb * MR] (s32), then [mb][kq][MR][4] (s8). */
static size_t group_bytes(const pgeom *p)
{
    return (size_t)(p->mb * MR) * (4 + (size_t)p->kq * 4);
}

bool tgk_qconv_panel_fits(const tgk_conv_desc *d)
{
    return !d->transposed && d->groups > 0 && d->c % d->groups == 0 && d->k % d->groups == 0 &&
           d->c / d->groups >= 3 && d->k / d->groups >= 4;
}

size_t tgk_qconv_panel_size(const tgk_conv_desc *d)
{
    tgk_conv_geom g;
    pgeom p;
    if (!tgk_conv_geom_from(d, &g))
        return 0;
    pgeom_of(d, &g, &p);
    return (size_t)d->groups * group_bytes(&p);
}

void tgk_qconv_panel_pack(const tgk_conv_desc *d, const int8_t *w, void *packed)
{
    tgk_conv_geom g;
    pgeom p;
    if (!tgk_conv_geom_from(d, &g))
        return;
    pgeom_of(d, &g, &p);
    int64_t taps = g.kprod;
    memset(packed, 0, tgk_qconv_panel_size(d));
    for (int64_t gi = 0; gi < d->groups; gi++) {
        char *base = (char *)packed + gi * group_bytes(&p);
        int32_t *rowsum = (int32_t *)base;
        int8_t *pw = (int8_t *)(rowsum + p.mb * MR);
        for (int64_t k = 0; k < p.kg; k++) {
            const int8_t *wk = w + (gi * p.kg + k) * p.cg * taps;
            int64_t blk = k / MR, r = k % MR;
            int32_t s = 0;
            for (int64_t c = 0; c < p.cg; c++)
                for (int64_t t = 0; t < taps; t++) {
                    int64_t q = c / 4 * taps + t;
                    pw[((blk * p.kq + q) * MR + r) * 4 + c % 4] = wk[c * taps + t];
                    s += wk[c * taps + t];
                }
            rowsum[k] = s;
        }
    }
}

/* ---- the input, quantized and padded -------------------------------------- */

typedef struct {
    const tgk_conv_geom *g;
    const pgeom *p;
    const tgk_qact *a;
    int64_t x0;                 /* this image's first element in a's x or xq, [c][in_sp] */
    int32_t x_zero;
    uint8_t *xb;                /* [groups][cq][pd][4] */
} relayout_job;

#if defined(__x86_64__)
/* The same unpacking on AVX-512BW, a row's last 1 to 15 positions with
 * masked loads and stores (most rows of a late layer are 7 or 14 long). */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void interleave4_masked(const uint8_t *const s[4], int64_t n, uint8_t *o)
{
    for (int64_t i = 0; i < n; i += 16) {
        int64_t r = n - i < 16 ? n - i : 16;
        __mmask16 k = (__mmask16)((1u << r) - 1);
        __m128i a = _mm_maskz_loadu_epi8(k, s[0] + i), b = _mm_maskz_loadu_epi8(k, s[1] + i);
        __m128i c = _mm_maskz_loadu_epi8(k, s[2] + i), d = _mm_maskz_loadu_epi8(k, s[3] + i);
        __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
        __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
        __m512i v = _mm512_castsi128_si512(_mm_unpacklo_epi16(ab0, cd0));
        v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab0, cd0), 1);
        v = _mm512_inserti32x4(v, _mm_unpacklo_epi16(ab1, cd1), 2);
        v = _mm512_inserti32x4(v, _mm_unpackhi_epi16(ab1, cd1), 3);
        _mm512_mask_storeu_epi8(o + 4 * i, r == 16 ? ~(__mmask64)0 : ((__mmask64)1 << (4 * r)) - 1, v);
    }
}

static bool have_avx512bw(void)
{
    static int have = -1;
    if (have < 0) {
        __builtin_cpu_init();
        have = __builtin_cpu_supports("avx512bw") && __builtin_cpu_supports("avx512vl");
    }
    return have;
}
#endif

/* n positions of 4 planes interleaved, 4 bytes to a position: SSE2's byte
 * and word unpacking 16 positions at a time, then one by one (AVX-512BW:
 * the last ones masked). */
static void interleave4(const uint8_t *const s[4], int64_t n, uint8_t *o)
{
    int64_t i = 0;
#if defined(__x86_64__)
    if (have_avx512bw()) {
        interleave4_masked(s, n, o);
        return;
    }
#endif
#if defined(__SSE2__)
    for (; i + 16 <= n; i += 16) {
        __m128i a = _mm_loadu_si128((const __m128i *)(s[0] + i));
        __m128i b = _mm_loadu_si128((const __m128i *)(s[1] + i));
        __m128i c = _mm_loadu_si128((const __m128i *)(s[2] + i));
        __m128i d = _mm_loadu_si128((const __m128i *)(s[3] + i));
        __m128i ab0 = _mm_unpacklo_epi8(a, b), ab1 = _mm_unpackhi_epi8(a, b);
        __m128i cd0 = _mm_unpacklo_epi8(c, d), cd1 = _mm_unpackhi_epi8(c, d);
        _mm_storeu_si128((__m128i *)(o + 4 * i), _mm_unpacklo_epi16(ab0, cd0));
        _mm_storeu_si128((__m128i *)(o + 4 * i + 16), _mm_unpackhi_epi16(ab0, cd0));
        _mm_storeu_si128((__m128i *)(o + 4 * i + 32), _mm_unpacklo_epi16(ab1, cd1));
        _mm_storeu_si128((__m128i *)(o + 4 * i + 48), _mm_unpackhi_epi16(ab1, cd1));
    }
#endif
    for (; i < n; i++)
        for (int t = 0; t < 4; t++)
            o[4 * i + t] = s[t][i];
}

#define QSPAN 4096  /* input bytes of a channel quantized at once */

/* Channel quads [b, e) over all groups: spans of whole input rows (or
 * pieces of one long row) of the quad's 4 channels quantized (or read in
 * place when u8), then each row interleaved into the padded layout (whose
 * border was filled with the zero point); channels past the group's last
 * read the zero point too. */
static void relayout(void *ctx, int64_t b, int64_t e)
{
    const relayout_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    const pgeom *p = j->p;
    int64_t in2 = g->in[2], nrow = g->in[0] * g->in[1];
    int64_t cols = in2 < QSPAN ? in2 : QSPAN, rows_per = in2 < QSPAN ? QSPAN / in2 : 1;
    uint8_t span[4][QSPAN];
    for (int64_t qi = b; qi < e; qi++) {
        int64_t gi = qi / p->cq, cq = qi % p->cq;
        uint8_t *dst = j->xb + qi * p->psp * 4;
        for (int t = 0; t < 4; t++)
            if (cq * 4 + t >= p->cg)
                memset(span[t], j->x_zero, QSPAN);
        for (int64_t r0 = 0; r0 < nrow; r0 += rows_per)
            for (int64_t c0 = 0; c0 < in2; c0 += cols) {
                int64_t r1 = r0 + rows_per < nrow ? r0 + rows_per : nrow;
                int64_t n = in2 - c0 < cols ? in2 - c0 : cols;
                const uint8_t *from[4] = {span[0], span[1], span[2], span[3]};
                for (int t = 0; t < 4; t++) {
                    int64_t at = j->x0 + (gi * p->cg + cq * 4 + t) * g->in_sp + r0 * in2 + c0;
                    if (cq * 4 + t >= p->cg)
                        continue;
                    if (j->a->xq)   /* rows r0..r1 of n bytes are contiguous there */
                        from[t] = j->a->xq + at;
                    else    /* on this thread: a span is too small to share */
                        tgk_quantize_u8_rows(1, (r1 - r0) * n, j->a->x + at, 0, j->a->x_scale,
                                             j->x_zero, 0, 255, span[t], 0);
                }
                for (int64_t r = r0; r < r1; r++) {
                    int64_t i0 = r / g->in[1], i1 = r % g->in[1];
                    const uint8_t *s[4] = {from[0] + (r - r0) * n, from[1] + (r - r0) * n,
                                           from[2] + (r - r0) * n, from[3] + (r - r0) * n};
                    interleave4(s, n, dst + (((i0 + g->pad[0]) * p->pd[1] + i1 + g->pad[1]) *
                                             p->pd[2] + g->pad[2] + c0) * 4);
                }
            }
    }
}

/* ---- im2col into panels ---------------------------------------------------- */

typedef struct {
    const tgk_conv_geom *g;
    const pgeom *p;
    const uint8_t *xg;          /* the group's padded input */
    uint8_t *bufs;              /* chunk i at i * CHUNK * kq * 4 */
    int64_t p0;                 /* first pixel of chunk 0 */
} pack_job;

/* Chunks [b, e): buf [panel][kq][16][4], pixels past the chunk's end 0. */
static void pack_chunks(void *ctx, int64_t b, int64_t e)
{
    const pack_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    const pgeom *p = j->p;
    int64_t ow = g->out[2], ohw = g->out[1] * g->out[2];
    for (int64_t ch = b; ch < e; ch++) {
        uint8_t *buf = j->bufs + ch * CHUNK * p->kq * 4;
        int64_t c0 = j->p0 + ch * CHUNK, c1 = c0 + CHUNK < g->out_sp ? c0 + CHUNK : g->out_sp;
        int64_t np = (c1 - c0 + PX - 1) / PX;
        if ((c1 - c0) % PX)
            for (int64_t q = 0; q < p->kq; q++)
                memset(buf + ((np - 1) * p->kq + q) * PX * 4, 0, PX * 4);
        struct { int64_t at, n, src; } run[CHUNK];  /* pixels at..at+n from input offset src */
        int nrun = 0;
        for (int64_t px = c0; px < c1; nrun++) {
            int64_t o0 = px / ohw, o1 = px / ow % g->out[1], o2 = px % ow;
            int64_t n = ow - o2 < c1 - px ? ow - o2 : c1 - px;
            run[nrun].at = px - c0, run[nrun].n = n;
            run[nrun].src = (o0 * g->str[0] * p->pd[1] + o1 * g->str[1]) * p->pd[2] + o2 * g->str[2];
            px += n;
        }
        int64_t s2 = g->str[2];
        for (int64_t cq = 0, q = 0; cq < p->cq; cq++)
            for (int64_t a = 0; a < g->ker[0]; a++)
                for (int64_t bb = 0; bb < g->ker[1]; bb++)
                    for (int64_t cc = 0; cc < g->ker[2]; cc++, q++) {
                        const uint8_t *src = j->xg + (cq * p->psp + (a * g->dil[0] * p->pd[1] +
                                             bb * g->dil[1]) * p->pd[2] + cc * g->dil[2]) * 4;
                        uint8_t *dq = buf + q * PX * 4;
                        for (int r = 0; r < nrun; r++) {
                            const uint8_t *s = src + run[r].src * 4;
                            for (int64_t i = run[r].at, end = i + run[r].n; i < end;) {
                                /* up to the panel's end in one copy when stride 1 */
                                int64_t n = PX - i % PX < end - i ? PX - i % PX : end - i;
                                uint8_t *dd = dq + ((i / PX) * p->kq * PX + i % PX) * 4;
                                if (s2 == 1 && n == PX) {   /* a whole panel: inline moves */
                                    memcpy(dd, s, PX * 4);
                                    s += PX * 4;
                                } else {
                                    for (int64_t v = 0; v < n; v++, s += s2 * 4)
                                        memcpy(dd + v * 4, s, 4);
                                }
                                i += n;
                            }
                        }
                    }
    }
}

/* ---- the GEMM over panels --------------------------------------------------- */

/* Where a chunk's panels are and where their pixels go. Packed: panel v at
 * src + v * kq * 64, k quad q 64 bytes further each. Read in place (every
 * stride 1): the chunk is 64 consecutive positions of the padded input's
 * rows, pixel i of panel v at src + (v * 16 + i) * 4 and k quad q at
 * off[q] from there (channel quad, tap); the positions in a row's padding
 * columns, or past the last row, are computed but not stored. */
typedef struct {
    const uint8_t *src;
    int64_t vstride;            /* bytes from panel to panel */
    int np;                     /* panels */
    uint16_t mask[NR];          /* the pixels stored */
    int64_t out[NR];            /* where the first stored pixel goes */
} chunk_at;

typedef struct {
    const pgeom *p;
    const tgk_conv_geom *g;
    const uint8_t *src;         /* packed chunks, or the group's padded input (in place) */
    const int64_t *off;         /* per k quad: its bytes from a pixel's */
    bool in_place;
    const int8_t *w;            /* the group's packed weights */
    const int32_t *rowsum;
    const float *scale, *bias;  /* the group's: scale[k] = x_scale * w_scale[k]; bias may be NULL */
    const tgk_qact *a;          /* the output, y or yq */
    int64_t y0;                 /* the group's channel 0, pixel 0 there */
    int64_t p0, p1, nch, zero;  /* packed: pixels [p0, p1), nch chunks; in place: nch per plane */
} gemm_job;

static void chunk_of(const gemm_job *j, int64_t ch, chunk_at *c)
{
    const tgk_conv_geom *g = j->g;
    const pgeom *p = j->p;
    if (!j->in_place) {
        int64_t c0 = j->p0 + ch * CHUNK, n = j->p1 - c0 < CHUNK ? j->p1 - c0 : CHUNK;
        c->src = j->src + ch * CHUNK * p->kq * 4, c->vstride = p->kq * PX * 4;
        c->np = (int)((n + PX - 1) / PX);
        for (int v = 0; v < c->np; v++) {
            int64_t k = n - v * PX < PX ? n - v * PX : PX;
            c->mask[v] = (uint16_t)((1u << k) - 1), c->out[v] = c0 + v * PX;
        }
        return;
    }
    /* plane o0 of the output, positions [v0, v0 + 64) of its rows at the
     * padded input's width */
    int64_t w = p->pd[2], rows = g->out[1] * w, o0 = ch / j->nch, v0 = ch % j->nch * CHUNK;
    c->src = j->src + (o0 * g->str[0] * p->pd[1] * w + v0) * 4, c->vstride = PX * 4;
    c->np = (int)((rows - v0 < CHUNK ? rows - v0 + PX - 1 : CHUNK) / PX);
    int64_t o1 = v0 / w, o2 = v0 % w;  /* the position's row and column, stepped */
    for (int v = 0; v < c->np; v++) {
        c->mask[v] = 0, c->out[v] = -1;
        for (int i = 0; i < PX; i++) {
            if (o1 < g->out[1] && o2 < g->out[2]) {
                c->mask[v] |= (uint16_t)(1u << i);
                if (c->out[v] < 0)
                    c->out[v] = (o0 * g->out[1] + o1) * g->out[2] + o2;
            }
            if (++o2 == w)
                o2 = 0, o1++;
        }
    }
}

/* The epilogue of one channel's 16 sums: (float)(acc - zero * rowsum) * s + b,
 * as the row path computes it (tgk_qgemm_u8s8_f32), or requantized (s and
 * b: m and c, qquant.h), the lanes in mask stored one after another from
 * element at of the output. */
static inline void store_scalar(const tgk_qact *a, int64_t at, const int32_t *acc, unsigned mask,
                                int32_t corr, float s, float b)
{
    int n = 0;
    for (int i = 0; i < PX; i++)
        if (mask >> i & 1) {
            if (a->yq)
                a->yq[at + n++] = tgk_requant1(acc[i] - corr, s, b, (float)a->y_lo, (float)a->y_hi);
            else
                a->y[at + n++] = (float)(acc[i] - corr) * s + b;
        }
}

/* The reference: blocks of MR channels x the chunk's panels, plain loops. */
static void tile_scalar(const gemm_job *j, int64_t blk, const chunk_at *c)
{
    const pgeom *p = j->p;
    const int8_t *wb = j->w + blk * p->kq * MR * 4;
    int64_t mr = p->kg - blk * MR < MR ? p->kg - blk * MR : MR, sp = j->g->out_sp;
    for (int v = 0; v < c->np; v++)
        for (int64_t r = 0; r < mr; r++) {
            int32_t acc[PX] = {0};
            for (int64_t q = 0; q < p->kq; q++) {
                const uint8_t *a = c->src + v * c->vstride + j->off[q];
                for (int i = 0; i < PX; i++)
                    for (int t = 0; t < 4; t++)
                        acc[i] += (int32_t)a[i * 4 + t] * wb[(q * MR + r) * 4 + t];
            }
            int64_t k = blk * MR + r;
            store_scalar(j->a, j->y0 + k * sp + c->out[v], acc, c->mask[v],
                         (int32_t)j->zero * j->rowsum[k], j->scale[k], j->bias ? j->bias[k] : 0.0f);
        }
}

#if defined(__x86_64__)
/* MR x NP accumulators, NP panels a constant at each call so that every
 * loop unrolls and they stay in registers: per k quad, NP panel loads and MR
 * broadcasts feed MR * NP vpdpbusd. The epilogue's multiply and add are the
 * rounding intrinsics, which the compiler never fuses into an FMA; a panel
 * whose stored pixels are not its first ones is compressed as it is stored
 * (when u8, its sums compressed, then requantized). */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma"), always_inline))
static inline void tile_vnni(const int NP, const gemm_job *j, int64_t blk, const chunk_at *c)
{
    const pgeom *p = j->p;
    const int8_t *wb = j->w + blk * p->kq * MR * 4;
    const uint8_t *src = c->src;
    const int64_t *off = j->off;
    int64_t kq = p->kq, vs = c->vstride;
    __m512i acc[MR][NR];
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++)
#pragma GCC unroll 4
        for (int v = 0; v < NP; v++) acc[r][v] = _mm512_setzero_si512();
    for (int64_t q = 0; q < kq; q++) {
        __m512i a[NR];
        const uint8_t *aq = src + off[q];
#pragma GCC unroll 4
        for (int v = 0; v < NP; v++) a[v] = _mm512_loadu_si512(aq + v * vs);
        const int8_t *wq = wb + q * MR * 4;
#pragma GCC unroll 8
        for (int r = 0; r < MR; r++) {
            int32_t wv;
            memcpy(&wv, wq + r * 4, 4);
            __m512i b = _mm512_set1_epi32(wv);
#pragma GCC unroll 4
            for (int v = 0; v < NP; v++) acc[r][v] = _mm512_dpbusd_epi32(acc[r][v], a[v], b);
        }
    }
    int64_t mr = p->kg - blk * MR < MR ? p->kg - blk * MR : MR, sp = j->g->out_sp;
    const tgk_qact *ya = j->a;
    __m512 ylo = _mm512_set1_ps((float)ya->y_lo), yhi = _mm512_set1_ps((float)ya->y_hi);
#pragma GCC unroll 8
    for (int r = 0; r < MR; r++) {
        if (r >= mr)
            break;
        int64_t k = blk * MR + r;
        __m512i corr = _mm512_set1_epi32((int32_t)j->zero * j->rowsum[k]);
        __m512 s = _mm512_set1_ps(j->scale[k]), b = _mm512_set1_ps(j->bias ? j->bias[k] : 0.0f);
        int64_t y = j->y0 + k * sp;
#pragma GCC unroll 4
        for (int v = 0; v < NP; v++) {
            unsigned m = c->mask[v];
            if (!m)                     /* all in the padding columns */
                continue;
            __m512i iv = _mm512_sub_epi32(acc[r][v], corr);
            if (ya->yq) {
                __mmask16 first = (__mmask16)((1u << __builtin_popcount(m)) - 1);
                if (m & (m + 1))
                    iv = _mm512_maskz_compress_epi32((__mmask16)m, iv);
                _mm_mask_storeu_epi8(ya->yq + y + c->out[v], first, tgk_requant16(iv, s, b, ylo, yhi));
                continue;
            }
            __m512 f = _mm512_mul_round_ps(_mm512_cvtepi32_ps(iv), s,
                                           _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            f = _mm512_add_round_ps(f, b, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
            if ((m & (m + 1)) == 0) {    /* the first pixels: a plain masked store */
                _mm512_mask_storeu_ps(ya->y + y + c->out[v], (__mmask16)m, f);
            } else {
                _mm512_mask_compressstoreu_ps(ya->y + y + c->out[v], (__mmask16)m, f);
            }
        }
    }
}

__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
static void tile_vnni_any(const gemm_job *j, int64_t blk, const chunk_at *c)
{
    switch (c->np) {
    case 1: tile_vnni(1, j, blk, c); break;
    case 2: tile_vnni(2, j, blk, c); break;
    case 3: tile_vnni(3, j, blk, c); break;
    default: tile_vnni(4, j, blk, c); break;
    }
}
#endif

/* Tasks [b, e): task t is MB_TASK blocks of channels t / nch over chunk
 * t % nch, so a thread's consecutive tasks reuse the same weights. */
static void gemm_tasks(void *ctx, int64_t b, int64_t e)
{
    const gemm_job *j = ctx;
#if defined(__x86_64__)
    bool vnni = !strcmp(tgk_qgemm_path(), "avx512vnni");
#endif
    int64_t nch = j->in_place ? j->nch * j->g->out[0] : j->nch;
    for (int64_t t = b; t < e; t++) {
        int64_t mg = t / nch;
        chunk_at c;
        chunk_of(j, t % nch, &c);
        for (int64_t blk = mg * MB_TASK; blk < j->p->mb && blk < (mg + 1) * MB_TASK; blk++) {
#if defined(__x86_64__)
            if (vnni) {
                tile_vnni_any(j, blk, &c);
                continue;
            }
#endif
            tile_scalar(j, blk, &c);
        }
    }
}

int tgk_qconv_panel(const tgk_conv_desc *d, const tgk_qact *a, const void *packed,
                    const float *scale, const float *bias)
{
    int32_t x_zero = a->x_zero;
    tgk_conv_geom g;
    pgeom p;
    if (!tgk_conv_geom_from(d, &g))
        return -1;
    pgeom_of(d, &g, &p);
    /* in place when every stride is 1 (the chunks' reads run past the last
     * row by at most a chunk and a row: slack after the padded input) */
    bool in_place = g.str[0] == 1 && g.str[1] == 1 && g.str[2] == 1;
    int64_t chunk_bytes = CHUNK * p.kq * 4, slab = SLAB_BYTES / chunk_bytes;
    int64_t nch_all = (g.out_sp + CHUNK - 1) / CHUNK;
    slab = slab < 1 ? 1 : slab > nch_all ? nch_all : slab;
    size_t xb_bytes = (size_t)(d->groups * p.cq * p.psp * 4), slack = (size_t)(CHUNK + p.pd[2]) * 4;
    uint8_t *xb = malloc(xb_bytes + slack), *bufs = in_place ? NULL : malloc((size_t)(slab * chunk_bytes));
    int64_t *off = malloc(sizeof *off * (size_t)p.kq);
    if (!xb || (!in_place && !bufs) || !off) {
        free(xb), free(bufs), free(off);
        return -1;
    }
    for (int64_t cq = 0, q = 0; cq < p.cq; cq++)
        for (int64_t a = 0; a < g.ker[0]; a++)
            for (int64_t b = 0; b < g.ker[1]; b++)
                for (int64_t c = 0; c < g.ker[2]; c++, q++)
                    off[q] = in_place ? (cq * p.psp + (a * g.dil[0] * p.pd[1] + b * g.dil[1]) * p.pd[2] +
                                         c * g.dil[2]) * 4
                                      : q * PX * 4;
    int64_t mg = (p.mb + MB_TASK - 1) / MB_TASK;
    for (int64_t img = 0; img < d->n; img++) {
        memset(xb, x_zero, xb_bytes + slack);
        relayout_job rj = {&g, &p, a, img * d->c * g.in_sp, x_zero, xb};
        tgk_parallel_for(d->groups * p.cq, 1 + 65536 / (4 * g.in_sp), relayout, &rj);
        for (int64_t gi = 0; gi < d->groups; gi++) {
            const char *wg = (const char *)packed + gi * group_bytes(&p);
            gemm_job gj = {&p, &g, NULL, off, in_place, (const int8_t *)(wg + p.mb * MR * 4),
                           (const int32_t *)wg, scale + gi * p.kg, bias ? bias + gi * p.kg : NULL,
                           a, (img * d->k + gi * p.kg) * g.out_sp, 0, 0, 0, x_zero};
            const uint8_t *xg = xb + gi * p.cq * p.psp * 4;
            if (in_place) {
                gj.src = xg, gj.nch = (g.out[1] * p.pd[2] + CHUNK - 1) / CHUNK;
                tgk_parallel_for(mg * gj.nch * g.out[0], 1, gemm_tasks, &gj);
                continue;
            }
            for (int64_t p0 = 0; p0 < g.out_sp; p0 += slab * CHUNK) {
                int64_t p1 = p0 + slab * CHUNK < g.out_sp ? p0 + slab * CHUNK : g.out_sp;
                int64_t nch = (p1 - p0 + CHUNK - 1) / CHUNK;
                pack_job pj = {&g, &p, xg, bufs, p0};
                tgk_parallel_for(nch, 1, pack_chunks, &pj);
                gj.src = bufs, gj.p0 = p0, gj.p1 = p1, gj.nch = nch;
                tgk_parallel_for(mg * nch, 1, gemm_tasks, &gj);
            }
        }
    }
    free(xb), free(bufs), free(off);
    return 0;
}
