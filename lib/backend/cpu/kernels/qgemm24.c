/* The int8 2:4 sparse GEMM (qlinear_24): u8 activations (affine, zero point)
 * times a 2:4 sparse s8 weight w[N,K] (symmetric), two nonzeros in every
 * group of four k, stored compressed (tgraph-format(5): values [N, K/2] s8,
 * 2-bit indices meta [N, ceil(K/8)]). Half the weights are read and half the
 * vpdpbusd done, exactly the integers of the dense int8 GEMM (qgemm.c) on the
 * expanded weight.
 *
 * The packed layout is the dense one of the values, tgk_qgemm_pack(N, K/2):
 * column sums (the zero-point correction: the zeros add nothing), then panels
 * of 16 columns x 4 values, one 4-byte run a column for each pair h of groups
 * (k in [8h, 8h + 8)); after it the metadata, [panel][pair][16] bytes: the TG
 * byte of each column (two groups, bits 0-1 and 2-3 the first group's kept
 * indices, 4-5 and 6-7 the second's) moved next to its neighbours'.
 *
 * VNNI: the 8 bytes of x of a pair, broadcast to every 128-bit lane, are
 * gathered per column by vpshufb (control bytes i0, i1, 4 + i2, 4 + i3 made
 * from the column's metadata byte), then one vpdpbusd multiplies the four
 * with the column's four values: one shuffle where the dense kernel does a
 * second vpdpbusd, and its weight stream is 80 bytes where the dense one's is
 * 128. A register tile of rows x panels shares each control vector and each
 * broadcast; tasks are row chunks x panel chunks (tgk_parallel_panels), rows
 * outer, so a chunk's panels stay in cache while its rows sweep them (the
 * weights stream from memory about once per row chunk).
 *
 * Paths: AVX-512 VNNI and a scalar loop (the readable reference and the path
 * of CPUs without it), chosen once by CPU features. */
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define Q24_X86 1
#endif

#include "chunk24.h"
#include "kernels.h"
#include "qgemm.h"
#include "vecmath.h"    /* -O3 in the interpreter's copy too */

#define QB 16                       /* columns a panel */

static int64_t panels_of(int64_t N) { return (N + QB - 1) / QB; }
static int64_t pairs_of(int64_t K) { return (K / 4 + 1) / 2; }     /* metadata bytes a row */

size_t tgk_qgemm24_packed_size(int64_t N, int64_t K)
{
    return tgk_qgemm_packed_size(N, K / 2) + (size_t)(panels_of(N) * QB * pairs_of(K));
}

void tgk_qgemm24_pack(int64_t N, int64_t K, const void *values, const uint8_t *meta,
                      void *packed)
{
    tgk_qgemm_pack(N, K / 2, values, packed);
    tgk_sparse24_pack_meta(N, K, meta, (uint8_t *)packed + tgk_qgemm_packed_size(N, K / 2));
}

void *tgk_qgemm24_pack_once(void **slot, int64_t N, int64_t K, const int8_t *values,
                            const uint8_t *meta)
{
    return tgk_pack24_once(slot, tgk_qgemm24_packed_size(N, K), tgk_qgemm24_pack, N, K, values,
                           meta);
}

/* chunk functions (tgk_parallel_panels): rows [r0, r1) x panels [p0, p1) of a q24_job */
typedef struct {
    int64_t M, N, K, lda, ldc;
    const uint8_t *a;
    int32_t a_zero;
    const int32_t *colsum;      /* the packed weight's parts */
    const int8_t *v;
    const uint8_t *meta;
    int32_t *c;                 /* integer output, or NULL: */
    const float *scale, *bias;  /* y[m*ldc + n] = (float)c[m,n] * scale[n] + bias[n] */
    float *y;
} q24_job;

/* Columns n0 + [0, nc) of row r from their raw sums, zero-point corrected, as
 * integers or through the float epilogue. */
static void store(const q24_job *j, int64_t r, int64_t n0, int nc, const int32_t *raw)
{
    for (int c = 0; c < nc; c++) {
        int32_t v = raw[c] - j->a_zero * j->colsum[n0 + c];
        if (j->c)
            j->c[r * j->ldc + n0 + c] = v;
        else
            j->y[r * j->ldc + n0 + c] =
                (float)v * j->scale[n0 + c] + (j->bias ? j->bias[n0 + c] : 0.0f);
    }
}

/* The reference: one product at a time, as the format defines it. */
static void chunk_scalar(const void *ctx, int64_t r0, int64_t r1, int64_t p0, int64_t p1)
{
    const q24_job *j = ctx;
    int64_t K = j->K, H = pairs_of(K);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t p = p0; p < p1; p++) {
            int nc = j->N - p * QB < QB ? (int)(j->N - p * QB) : QB;
            int32_t raw[QB];
            for (int c = 0; c < nc; c++) {
                const uint8_t *x = j->a + r * j->lda;
                int32_t s = 0;
                for (int64_t h = 0; h < H; h++) {
                    int bits = j->meta[(p * H + h) * QB + c];
                    for (int t = 0; t < 4 && 8 * h + t / 2 * 4 < K; t++)
                        s += x[8 * h + t / 2 * 4 + (bits >> 2 * t & 3)] *
                             j->v[((p * H + h) * QB + c) * 4 + t];
                }
                raw[c] = s;
            }
            store(j, r, p * QB, nc, raw);
        }
}

#ifdef Q24_X86
#define VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#define INLINE static inline __attribute__((always_inline))

/* vpshufb's control for 16 columns' metadata bytes e: in each column's
 * 32-bit lane, bytes (e & 3, e >> 2 & 3, 4 + (e >> 4 & 3), 4 + (e >> 6)):
 * the lane's byte t holds bits 2t, 2t + 1 of e once e is or'ed with itself
 * shifted by 6, 12 and 18. */
VNNI INLINE __m512i control(const uint8_t *m)
{
    __m512i d = _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)m));
    __m512i t = _mm512_or_si512(d, _mm512_slli_epi32(d, 6));
    t = _mm512_ternarylogic_epi32(t, _mm512_slli_epi32(t, 12), _mm512_set1_epi32(0x03030303),
                                  0xA8);     /* (a | b) & c */
    return _mm512_or_si512(t, _mm512_set1_epi32(0x04040000));
}

/* x's bytes [8h, 8h + 8) in every 64-bit lane (only 4 in the short last
 * pair of a K with K % 8 == 4: the rest zero, against zero weights) */
VNNI INLINE __m512i xpair(const uint8_t *x, int64_t h, int full)
{
    uint64_t q = 0;
    memcpy(&q, x + 8 * h, full ? 8 : 4);
    return _mm512_set1_epi64((long long)q);
}

/* rows [r, r + mr) x panels [p, p + np) of the job; mr and np constants at
 * every call site, so the accumulators live in registers */
VNNI INLINE void tile(const int mr, const int np, const q24_job *j, int64_t r, int64_t p)
{
    int64_t K = j->K, H = pairs_of(K), HF = K / 8, lda = j->lda;
    const int8_t *v = j->v + p * H * QB * 4;
    const uint8_t *m = j->meta + p * H * QB, *x = j->a + r * lda;
    __m512i acc[8][4];
#pragma GCC unroll 8
    for (int i = 0; i < mr; i++)
#pragma GCC unroll 4
        for (int u = 0; u < np; u++)
            acc[i][u] = _mm512_setzero_si512();
    for (int64_t h = 0; h < H; h++) {
        __m512i w[4], c[4];
        int full = h < HF;
#pragma GCC unroll 4
        for (int u = 0; u < np; u++) {
            w[u] = _mm512_loadu_si512(v + (u * H + h) * QB * 4);
            c[u] = control(m + (u * H + h) * QB);
        }
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512i xb = xpair(x + i * lda, h, full);
#pragma GCC unroll 4
            for (int u = 0; u < np; u++)
                acc[i][u] = _mm512_dpbusd_epi32(acc[i][u], _mm512_shuffle_epi8(xb, c[u]), w[u]);
        }
    }
#pragma GCC unroll 4
    for (int u = 0; u < np; u++) {
        int64_t n0 = (p + u) * QB;
        int nc = j->N - n0 < QB ? (int)(j->N - n0) : QB;
        __mmask16 k = (__mmask16)((1u << nc) - 1);
        __m512i zc = _mm512_mullo_epi32(_mm512_set1_epi32(j->a_zero),
                                        _mm512_maskz_loadu_epi32(k, j->colsum + n0));
        __m512 s = _mm512_setzero_ps(), b = s;
        if (j->scale)
            s = _mm512_maskz_loadu_ps(k, j->scale + n0);
        if (j->bias)
            b = _mm512_maskz_loadu_ps(k, j->bias + n0);
#pragma GCC unroll 8
        for (int i = 0; i < mr; i++) {
            __m512i t = _mm512_sub_epi32(acc[i][u], zc);
            if (j->c)
                _mm512_mask_storeu_epi32(j->c + (r + i) * j->ldc + n0, k, t);
            else
                _mm512_mask_storeu_ps(j->y + (r + i) * j->ldc + n0, k,
                                      _mm512_add_ps(_mm512_mul_ps(_mm512_cvtepi32_ps(t), s), b));
        }
    }
}

#define MR 6
TGK_CHUNK24(chunk_vnni, VNNI, tile, q24_job, MR, 2)
#endif

#ifdef Q24_X86
static bool has_vnni(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
           __builtin_cpu_supports("avx512vnni");
}
#endif

static const tgk_path24 paths[] = {
#ifdef Q24_X86
    {"avx512vnni", chunk_vnni, MR, has_vnni},
#endif
    {"scalar", chunk_scalar, 1, tgk_cpu_any},
};
#define NPATHS (sizeof paths / sizeof *paths)

static tgk_paths24 sel = {paths, NPATHS, NULL};

/* the best this CPU runs, chosen once before any caller */
__attribute__((constructor)) static void pick_path(void) { tgk_paths24_set(&sel, NULL); }

const char *tgk_qgemm24_path(void) { return sel.chosen->name; }
int tgk_qgemm24_set_path(const char *name) { return tgk_paths24_set(&sel, name); }

static void run(q24_job *j)
{
    int64_t P = panels_of(j->N);
    j->v = (const int8_t *)(j->colsum + P * QB);
    j->meta = (const uint8_t *)(j->v + P * pairs_of(j->K) * QB * 4);
    tgk_parallel_panels(j->M, P, sel.chosen->mr, (double)j->M * (double)j->N * (double)j->K / 2,
                        sel.chosen->fn, j);
}

void tgk_qgemm24_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                      int32_t a_zero, const void *packed, int32_t *c, int64_t ldc)
{
    q24_job j = {.M = M, .N = N, .K = K, .lda = lda, .ldc = ldc, .a = a, .a_zero = a_zero,
                 .colsum = packed, .c = c};
    run(&j);
}

void tgk_qgemm24_u8s8_f32(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                          int32_t a_zero, const void *packed, const float *scale,
                          const float *bias, float *y, int64_t ldy)
{
    q24_job j = {.M = M, .N = N, .K = K, .lda = lda, .ldc = ldy, .a = a, .a_zero = a_zero,
                 .colsum = packed, .scale = scale, .bias = bias, .y = y};
    run(&j);
}
