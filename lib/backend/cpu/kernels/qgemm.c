/* u8 x s8 -> s32 GEMM. Packed weights: colsum[Np] (s32), then for each block of
 * 16 columns and each group of 4 k, 16 columns x 4 bytes. With VNNI one
 * vpdpbusd multiplies a broadcast 4-byte run of a row of a with a 64-byte group
 * and adds 16 column sums at once. The AVX2 path widens to 16 bits and uses
 * vpmaddwd, which never saturates (vpmaddubsw would), so every path is exact. */
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels.h"
#include "qgemm.h"
#include "qquant.h"
#include "vecmath.h"    /* -O3 in the interpreter's copy too; no FMA: exact */

#define QB 16                       /* columns per block */
#define ROUND4(k) (((k) + 3) & ~(int64_t)3)

static int64_t nblocks(int64_t N) { return (N + QB - 1) / QB; }

size_t tgk_qgemm_packed_size(int64_t N, int64_t K)
{
    return (size_t)nblocks(N) * QB * sizeof(int32_t) + (size_t)nblocks(N) * QB * ROUND4(K);
}

void tgk_qgemm_pack(int64_t N, int64_t K, const int8_t *w, void *packed)
{
    int64_t nb = nblocks(N), kg = ROUND4(K) / 4;
    int32_t *colsum = packed;
    int8_t *p = (int8_t *)(colsum + nb * QB);
    memset(packed, 0, tgk_qgemm_packed_size(N, K));
    for (int64_t n = 0; n < N; n++) {
        int32_t s = 0;
        for (int64_t k = 0; k < K; k++) s += w[n * K + k];
        colsum[n] = s;
    }
    for (int64_t b = 0; b < nb; b++)
        for (int64_t g = 0; g < kg; g++)
            for (int j = 0; j < QB; j++)
                for (int t = 0; t < 4; t++) {
                    int64_t n = b * QB + j, k = g * 4 + t;
                    p[((b * kg + g) * QB + j) * 4 + t] = n < N && k < K ? w[n * K + k] : 0;
                }
}

typedef struct {
    int64_t M, N, K, lda, ldc;
    const uint8_t *a;
    int32_t a_zero;
    const void *packed;
    int32_t *c;                 /* integer output, or NULL: */
    const float *scale, *bias;  /* y[m,n] = (float)c[m,n] * scale[n] + bias[n] (bias may be NULL) */
    float *y;                   /* at y[m*ldc + n]; or NULL: */
    uint8_t *yq;                /* tgk_requant1(c[m,n], scale[n], bias[n], lo, hi) there */
    float lo, hi;
} qgemm_args;

/* The 4 bytes of group g of a row of K bytes, zero-padded past K, as the
 * 32-bit value the kernels broadcast. */
static inline int32_t group4(const uint8_t *a, int64_t K, int64_t g)
{
    int32_t v;
    if (g * 4 + 4 <= K) {
        memcpy(&v, a + g * 4, 4);
        return v;
    }
    /* the last, short group: bytes shifted in (a variable-length memcpy here
     * was a library call and a store-forwarding stall on every row) */
    uint32_t u = 0;
    for (int64_t t = 0; t < K - g * 4; t++) u |= (uint32_t)a[g * 4 + t] << (8 * t);
    memcpy(&v, &u, 4);
    return v;
}

/* The readable reference: raw sums sum_k a*w per column block. */
static void block_scalar(const uint8_t *a, int64_t K, const int8_t *blk, int32_t *out)
{
    for (int j = 0; j < QB; j++) out[j] = 0;
    for (int64_t k = 0; k < K; k++)
        for (int j = 0; j < QB; j++)
            out[j] += (int32_t)a[k] * blk[((k / 4) * QB + j) * 4 + k % 4];
}

#if defined(__x86_64__)
__attribute__((target("avx512f,avx512bw,avx512vnni")))
static void block_vnni(const uint8_t *a, int64_t K, const int8_t *blk, int32_t *out)
{
    __m512i acc0 = _mm512_setzero_si512(), acc1 = _mm512_setzero_si512();
    int64_t g = 0, kg = ROUND4(K) / 4;
    for (; g + 1 < kg; g += 2) {    /* two chains, to hide the dpbusd latency */
        acc0 = _mm512_dpbusd_epi32(acc0, _mm512_set1_epi32(group4(a, K, g)),
                                   _mm512_loadu_si512(blk + g * QB * 4));
        acc1 = _mm512_dpbusd_epi32(acc1, _mm512_set1_epi32(group4(a, K, g + 1)),
                                   _mm512_loadu_si512(blk + (g + 1) * QB * 4));
    }
    if (g < kg)
        acc0 = _mm512_dpbusd_epi32(acc0, _mm512_set1_epi32(group4(a, K, g)),
                                   _mm512_loadu_si512(blk + g * QB * 4));
    _mm512_storeu_si512(out, _mm512_add_epi32(acc0, acc1));
}

/* One accumulator of a tile (16 columns of row m, block b) as store_block
 * stores it, in registers: zero-point corrected, then as integers or
 * through the float epilogue, whose multiply and add are the rounding
 * intrinsics (never fused into an FMA), masked past N. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma"), always_inline))
static inline void store_vnni(const qgemm_args *q, int64_t m, int64_t b, __m512i acc)
{
    int64_t nj = q->N - b * QB;
    __mmask16 k = nj >= QB ? (__mmask16)0xffff : (__mmask16)((1u << nj) - 1);
    __m512i colsum = _mm512_loadu_si512((const int32_t *)q->packed + b * QB);
    __m512i v = _mm512_sub_epi32(acc, _mm512_mullo_epi32(_mm512_set1_epi32(q->a_zero), colsum));
    if (q->c) {
        _mm512_mask_storeu_epi32(q->c + m * q->ldc + b * QB, k, v);
        return;
    }
    if (q->yq) {
        _mm_mask_storeu_epi8(q->yq + m * q->ldc + b * QB, k,
                             tgk_requant16(v, _mm512_maskz_loadu_ps(k, q->scale + b * QB),
                                           _mm512_maskz_loadu_ps(k, q->bias + b * QB),
                                           _mm512_set1_ps(q->lo), _mm512_set1_ps(q->hi)));
        return;
    }
    __m512 f = _mm512_mul_round_ps(_mm512_cvtepi32_ps(v), _mm512_maskz_loadu_ps(k, q->scale + b * QB),
                                   _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    __m512 bias = q->bias ? _mm512_maskz_loadu_ps(k, q->bias + b * QB) : _mm512_setzero_ps();
    f = _mm512_add_round_ps(f, bias, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC);
    _mm512_mask_storeu_ps(q->y + m * q->ldc + b * QB, k, f);
}

/* 4 rows x NB column blocks (NB <= 4: up to 64 columns, 16 accumulators):
 * each group of 4 k costs NB weight loads and 4 broadcasts for 4 * NB
 * vpdpbusd; the loops over constant NB unroll fully, so the accumulators
 * stay in registers through the stores. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma"), always_inline))
static inline void tile_vnni(const int NB, const qgemm_args *q, int64_t m, int64_t b)
{
    int64_t K = q->K, kg = ROUND4(K) / 4, kfull = K / 4, lda = q->lda, bstride = kg * QB * 4;
    const int8_t *blk = (const int8_t *)((const int32_t *)q->packed + nblocks(q->N) * QB) +
                        b * bstride;
    const uint8_t *ar[4] = {q->a + m * lda, q->a + (m + 1) * lda, q->a + (m + 2) * lda,
                            q->a + (m + 3) * lda};
    __m512i c[4][4];
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NB; t++) c[r][t] = _mm512_setzero_si512();
    /* whole groups of 4 k without a test, then the zero-padded last one */
    for (int64_t g = 0; g < kg; g++) {
        const int8_t *p = blk + g * QB * 4;
        __m512i w[4];
#pragma GCC unroll 4
        for (int t = 0; t < NB; t++) w[t] = _mm512_loadu_si512(p + t * bstride);
        int32_t v[4];
        if (g < kfull) {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) memcpy(&v[r], ar[r] + 4 * g, 4);
        } else {
#pragma GCC unroll 4
            for (int r = 0; r < 4; r++) v[r] = group4(ar[r], K, g);
        }
#pragma GCC unroll 4
        for (int r = 0; r < 4; r++) {
            __m512i av = _mm512_set1_epi32(v[r]);
#pragma GCC unroll 4
            for (int t = 0; t < NB; t++) c[r][t] = _mm512_dpbusd_epi32(c[r][t], av, w[t]);
        }
    }
#pragma GCC unroll 4
    for (int r = 0; r < 4; r++)
#pragma GCC unroll 4
        for (int t = 0; t < NB; t++) store_vnni(q, m + r, b + t, c[r][t]);
}

/* Rows m..m+3, column blocks [b, nb), on VNNI tiles of up to 4 blocks. */
__attribute__((target("avx512f,avx512bw,avx512vl,avx512vnni,fma")))
static void rows4_vnni(const qgemm_args *q, int64_t m, int64_t b, int64_t nb)
{
    for (; b + 4 <= nb; b += 4) tile_vnni(4, q, m, b);
    switch (nb - b) {
    case 3: tile_vnni(3, q, m, b); break;
    case 2: tile_vnni(2, q, m, b); break;
    case 1: tile_vnni(1, q, m, b); break;
    default: break;
    }
}

/* 16-bit products: each 16-byte quarter of a 64-byte group is 4 columns x 4 k;
 * widened and multiplied with the row's 4 values repeated, vpmaddwd leaves
 * (k0k1, k2k3) partial sums per column, added pairwise at the end. */
__attribute__((target("avx2")))
static void block_avx2(const uint8_t *a, int64_t K, const int8_t *blk, int32_t *out)
{
    __m256i acc[4] = {_mm256_setzero_si256(), _mm256_setzero_si256(), _mm256_setzero_si256(),
                      _mm256_setzero_si256()};
    for (int64_t g = 0, kg = ROUND4(K) / 4; g < kg; g++) {
        __m256i av = _mm256_cvtepu8_epi16(_mm_set1_epi32(group4(a, K, g)));
        for (int q = 0; q < 4; q++) {
            __m256i wv = _mm256_cvtepi8_epi16(_mm_loadu_si128((const __m128i *)(blk + g * QB * 4 + q * 16)));
            acc[q] = _mm256_add_epi32(acc[q], _mm256_madd_epi16(av, wv));
        }
    }
    for (int q = 0; q < 4; q++) {
        int32_t v[8];
        _mm256_storeu_si256((__m256i *)v, acc[q]);
        for (int j = 0; j < 4; j++) out[q * 4 + j] = v[2 * j] + v[2 * j + 1];
    }
}
#endif

typedef void (*block_fn)(const uint8_t *, int64_t, const int8_t *, int32_t *);

static int path_id = -1;            /* 0 scalar, 1 avx2, 2 vnni */

static int choose_path(void)
{
    int best = 0;
#if defined(__x86_64__)
    __builtin_cpu_init();
    if (__builtin_cpu_supports("avx2")) best = 1;
    if (__builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
        __builtin_cpu_supports("avx512vl") && __builtin_cpu_supports("avx512vnni"))
        best = 2;
#endif
    return best;
}

static int path(void)
{
    int p = __atomic_load_n(&path_id, __ATOMIC_RELAXED);
    if (p < 0) __atomic_store_n(&path_id, p = choose_path(), __ATOMIC_RELAXED);
    return p;
}

static const char *const path_names[] = {"scalar", "avx2", "avx512vnni"};

const char *tgk_qgemm_path(void)
{
    return path_names[path()];
}

int tgk_qgemm_set_path(const char *name)
{
    for (int i = 0; i < 3; i++)
        if (!strcmp(name, path_names[i])) {
            if (i > choose_path()) return -1;
            __atomic_store_n(&path_id, i, __ATOMIC_RELAXED);
            return 0;
        }
    return -1;
}

/* One row's block of raw sums, zero-point corrected, stored as integers or
 * through the float epilogue. */
static void store_block(const qgemm_args *q, int64_t m, int64_t b, const int32_t *raw)
{
    const int32_t *colsum = (const int32_t *)q->packed + b * QB;
    int nj = q->N - b * QB < QB ? (int)(q->N - b * QB) : QB;
    int32_t v[QB];
    for (int j = 0; j < QB; j++) v[j] = raw[j] - q->a_zero * colsum[j];
    if (q->c) {
        memcpy(q->c + m * q->ldc + b * QB, v, sizeof(int32_t) * nj);
        return;
    }
    if (q->yq) {
        for (int j = 0; j < nj; j++)
            q->yq[m * q->ldc + b * QB + j] = tgk_requant1(v[j], q->scale[b * QB + j],
                                                          q->bias[b * QB + j], q->lo, q->hi);
        return;
    }
    const float *s = q->scale + b * QB, *bi = q->bias ? q->bias + b * QB : NULL;
    float *y = q->y + m * q->ldc + b * QB;
    for (int j = 0; j < nj; j++) y[j] = (float)v[j] * s[j] + (bi ? bi[j] : 0.0f);
}

/* Rows [m0, m1) of c, column blocks [b0, b1): groups of 4 rows on VNNI,
 * then one at a time. */
static void qgemm_part(const qgemm_args *q, int64_t m0, int64_t m1, int64_t b0, int64_t b1)
{
    int64_t kg = ROUND4(q->K) / 4;
    const int8_t *w = (const int8_t *)((const int32_t *)q->packed + nblocks(q->N) * QB);
    int p = path();
    int32_t raw[4][QB];
    int64_t m = m0;
#if defined(__x86_64__)
    for (; p == 2 && m + 4 <= m1; m += 4) rows4_vnni(q, m, b0, b1);
#endif
    block_fn fn = block_scalar;
#if defined(__x86_64__)
    if (p == 2) fn = block_vnni;
    else if (p == 1) fn = block_avx2;
#endif
    for (; m < m1; m++)
        for (int64_t b = b0; b < b1; b++) {
            fn(q->a + m * q->lda, q->K, w + b * kg * QB * 4, raw[0]);
            store_block(q, m, b, raw[0]);
        }
}

static void qgemm_chunk(const void *ctx, int64_t m0, int64_t m1, int64_t b0, int64_t b1)
{
    qgemm_part(ctx, m0, m1, b0, b1);
}

/* Rows and column blocks both split (tgk_parallel_panels), so that a product
 * of few rows (batch 1) still gives every thread work when it is large. */
static void qgemm_run(const qgemm_args *q)
{
    tgk_parallel_panels(q->M, nblocks(q->N), 4, (double)q->M * (double)q->N * (double)q->K,
                        qgemm_chunk, q);
}

void tgk_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                    int32_t a_zero, const void *packed, int32_t *c, int64_t ldc)
{
    qgemm_args q = {M, N, K, lda, ldc, a, a_zero, packed, c, NULL, NULL, NULL, NULL, 0, 0};
    qgemm_run(&q);
}

void tgk_qgemm_u8s8_u8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                       int32_t a_zero, const void *packed, const float *mul, const float *add,
                       int32_t lo, int32_t hi, uint8_t *q, int64_t ldq)
{
    qgemm_args g = {M, N, K, lda, ldq, a, a_zero, packed, NULL, mul, add, NULL, q, (float)lo,
                    (float)hi};
    qgemm_run(&g);
}

void tgk_qgemm_u8s8_f32(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                        int32_t a_zero, const void *packed, const float *scale,
                        const float *bias, float *y, int64_t ldy)
{
    qgemm_args q = {M, N, K, lda, ldy, a, a_zero, packed, NULL, scale, bias, y, NULL, 0, 0};
    qgemm_run(&q);
}

/* ---- packed weights kept for the life of the program ------------------------- */

static pthread_mutex_t once_lock = PTHREAD_MUTEX_INITIALIZER;
static void **once_bufs;
static size_t once_n, once_cap;

void *tgk_qpack_once(void **slot, size_t size, int (*fill)(void *ctx, void *buf), void *ctx)
{
    void *p = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
    if (p)
        return p;
    pthread_mutex_lock(&once_lock);
    p = *slot;
    if (!p && once_n == once_cap) {
        size_t cap = once_cap ? 2 * once_cap : 16;
        void **b = realloc(once_bufs, cap * sizeof *b);
        if (b) once_bufs = b, once_cap = cap;
    }
    if (!p && once_n < once_cap && (p = malloc(size + 1))) {
        if (fill(ctx, p)) {
            free(p);
            p = NULL;
        } else {
            once_bufs[once_n++] = p;
            __atomic_store_n(slot, p, __ATOMIC_RELEASE);
        }
    }
    pthread_mutex_unlock(&once_lock);
    return p;
}

typedef struct {
    int64_t N, K;
    const int8_t *w;
} linear_pack;

static int fill_linear(void *ctx, void *buf)
{
    const linear_pack *l = ctx;
    tgk_qgemm_pack(l->N, l->K, l->w, buf);
    return 0;
}

void *tgk_qgemm_pack_once(void **slot, int64_t N, int64_t K, const int8_t *w)
{
    linear_pack l = {N, K, w};
    return tgk_qpack_once(slot, tgk_qgemm_packed_size(N, K), fill_linear, &l);
}

/* At exit, or when the model's shared object is unloaded. */
__attribute__((destructor)) static void free_packed(void)
{
    for (size_t i = 0; i < once_n; i++) free(once_bufs[i]);
    free(once_bufs);
    once_bufs = NULL, once_n = once_cap = 0;
}

/* ---- activation quantization --------------------------------------------------- */

static inline uint8_t quant1(float x, float s, int32_t z, float lo, float hi)
{
    float v = nearbyintf(x / s) + (float)z;
    v = v != v ? (float)z : v;
    return (uint8_t)(v < lo ? lo : v > hi ? hi : v);
}

static void quant_scalar(int64_t n, const float *x, float s, int32_t z, float lo, float hi,
                         uint8_t *q)
{
    for (int64_t i = 0; i < n; i++) q[i] = quant1(x[i], s, z, lo, hi);
}

#if defined(__x86_64__)
/* The same operations, 16 lanes at a time (qquant.h), so every lane equals
 * quant1; rows of n floats, ldx apart, into rows of bytes ldq apart; the
 * last 15 or fewer of a row with masked loads and stores. */
__attribute__((target("avx512f,avx512bw,avx512vl")))
static void quant_avx512(int64_t rows, int64_t n, const float *x, int64_t ldx, float s, int32_t z,
                         float flo, float fhi, uint8_t *q, int64_t ldq)
{
    __m512 vz = _mm512_set1_ps((float)z);
    __m512d r = _mm512_set1_pd(1.0 / (double)s);
    __m512 lo = _mm512_set1_ps(flo), hi = _mm512_set1_ps(fhi);
    for (int64_t row = 0; row < rows; row++, x += ldx, q += ldq)
        for (int64_t i = 0; i < n; i += 16) {
            __mmask16 k = n - i >= 16 ? (__mmask16)0xffff : (__mmask16)((1u << (n - i)) - 1);
            _mm_mask_storeu_epi8(q + i, k, tgk_quant16(_mm512_maskz_loadu_ps(k, x + i), r, vz, lo, hi));
        }
}

__attribute__((target("avx2")))
static void quant_avx2(int64_t n, const float *x, float s, int32_t z, float flo, float fhi,
                       uint8_t *q)
{
    __m256 vs = _mm256_set1_ps(s), vz = _mm256_set1_ps((float)z);
    __m256 lo = _mm256_set1_ps(flo), hi = _mm256_set1_ps(fhi);
    int64_t i = 0;
    for (; i + 8 <= n; i += 8) {
        __m256 v = _mm256_div_ps(_mm256_loadu_ps(x + i), vs);
        v = _mm256_add_ps(_mm256_round_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
        v = _mm256_blendv_ps(v, vz, _mm256_cmp_ps(v, v, _CMP_UNORD_Q));
        v = _mm256_min_ps(_mm256_max_ps(v, lo), hi);
        int32_t t[8];
        _mm256_storeu_si256((__m256i *)t, _mm256_cvtps_epi32(v));
        for (int j = 0; j < 8; j++) q[i + j] = (uint8_t)t[j];
    }
    quant_scalar(n - i, x + i, s, z, flo, fhi, q + i);
}
#endif

typedef struct {
    const float *x;
    float s;
    int32_t z;
    uint8_t *q;
} quant_job;

static void quant_task(void *ctx, int64_t b, int64_t e)
{
    const quant_job *j = ctx;
    int p = path();
#if defined(__x86_64__)
    if (p == 2) { quant_avx512(1, e - b, j->x + b, 0, j->s, j->z, 0, 255, j->q + b, 0); return; }
    if (p == 1) { quant_avx2(e - b, j->x + b, j->s, j->z, 0, 255, j->q + b); return; }
#endif
    (void)p;
    quant_scalar(e - b, j->x + b, j->s, j->z, 0, 255, j->q + b);
}

void tgk_quantize_u8_rows(int64_t rows, int64_t n, const float *x, int64_t ldx, float scale,
                          int32_t zero, int32_t lo, int32_t hi, uint8_t *q, int64_t ldq)
{
    int p = path();
#if defined(__x86_64__)
    if (p == 2) { quant_avx512(rows, n, x, ldx, scale, zero, (float)lo, (float)hi, q, ldq); return; }
#endif
    for (int64_t r = 0; r < rows; r++, x += ldx, q += ldq) {
#if defined(__x86_64__)
        if (p == 1) { quant_avx2(n, x, scale, zero, (float)lo, (float)hi, q); continue; }
#endif
        quant_scalar(n, x, scale, zero, (float)lo, (float)hi, q);
    }
}

void tgk_quantize_u8(int64_t n, const float *x, float scale, int32_t zero, uint8_t *q)
{
    quant_job j = {x, scale, zero, q};
    tgk_parallel_for(n, 1 << 15, quant_task, &j);
}

/* min/max over chunks, one per pool thread, then combined. */
#define MINMAX_CHUNKS 64
typedef struct {
    const float *x;
    int64_t n, chunk;
    float lo[MINMAX_CHUNKS], hi[MINMAX_CHUNKS];
} minmax_job;

static void minmax_task(void *ctx, int64_t b, int64_t e)
{
    minmax_job *j = ctx;
    for (int64_t c = b; c < e; c++) {
        int64_t i = c * j->chunk, end = i + j->chunk < j->n ? i + j->chunk : j->n;
        float lo = INFINITY, hi = -INFINITY;
        for (; i < end; i++) {     /* NaN compares false: skipped */
            lo = j->x[i] < lo ? j->x[i] : lo;
            hi = j->x[i] > hi ? j->x[i] : hi;
        }
        j->lo[c] = lo, j->hi[c] = hi;
    }
}

void tgk_minmax_f32(int64_t n, const float *x, float *lo, float *hi)
{
    minmax_job j = {.x = x, .n = n, .chunk = (n + MINMAX_CHUNKS - 1) / MINMAX_CHUNKS};
    int64_t nc = j.chunk ? (n + j.chunk - 1) / j.chunk : 0;
    tgk_parallel_for(nc, nc * j.chunk < (1 << 16) ? nc : 1, minmax_task, &j);
    float l = INFINITY, h = -INFINITY;
    for (int64_t c = 0; c < nc; c++) {
        l = j.lo[c] < l ? j.lo[c] : l;
        h = j.hi[c] > h ? j.hi[c] : h;
    }
    *lo = l <= h ? l : 0.0f;
    *hi = l <= h ? h : 0.0f;
}

/* ---- the quantized linear layer -------------------------------------------------- */

int tgk_qlinear_f32(int64_t M, int64_t N, int64_t K, const float *x, float x_scale,
                    int32_t x_zero, int dynamic, const void *packed, const float *w_scale,
                    const float *bias, float *y)
{
    return tgk_qlinear_f32_on(tgk_qgemm_u8s8_f32, M, N, K, x, x_scale, x_zero, dynamic, packed,
                              w_scale, bias, y);
}

int tgk_qlinear(int64_t M, int64_t N, int64_t K, const tgk_qact *act, const void *packed,
                const float *w_scale, const float *bias)
{
    if (!tgk_qact_ok(act))
        return -1;
    if (!act->xq && !act->yq)
        return tgk_qlinear_f32(M, N, K, act->x, act->x_scale, act->x_zero, act->dynamic, packed,
                               w_scale, bias, act->y);
    tgk_qact a = tgk_qact_pre(act);
    uint8_t *xq = a.xq ? NULL : malloc((size_t)(M * K > 0 ? M * K : 1));
    float *s = malloc(sizeof *s * (size_t)(2 * N + 1));
    if ((!a.xq && !xq) || !s) {
        free(xq), free(s);
        return -1;
    }
    if (xq)
        tgk_quantize_u8(M * K, a.x, a.x_scale, a.x_zero, xq);
    for (int64_t n = 0; n < N; n++)
        s[n] = a.x_scale * w_scale[n];
    if (a.yq) {
        for (int64_t n = 0; n < N; n++)
            tgk_requant_params(s[n], bias ? bias[n] : 0.0f, a.y_scale, a.y_zero, &s[n], &s[N + n]);
        tgk_qgemm_u8s8_u8(M, N, K, xq ? xq : a.xq, K, a.x_zero, packed, s, s + N, a.y_lo, a.y_hi,
                          a.yq, N);
        if (act->y_act)
            tgk_lut_u8(M * N, act->lut, a.yq);
    } else {
        tgk_qgemm_u8s8_f32(M, N, K, a.xq, K, a.x_zero, packed, s, bias, a.y, N);
    }
    free(xq), free(s);
    return 0;
}

int tgk_qlinear_f32_on(tgk_qgemm_f32_fn gemm, int64_t M, int64_t N, int64_t K, const float *x,
                       float x_scale, int32_t x_zero, int dynamic, const void *packed,
                       const float *w_scale, const float *bias, float *y)
{
    uint8_t *xq = malloc((size_t)(M * K > 0 ? M * K : 1));
    float *s = malloc(sizeof *s * (size_t)(N + QB));
    if (!xq || !s) {
        free(xq), free(s);
        return -1;
    }
    if (dynamic) {
        float lo, hi;
        tgk_minmax_f32(M * K, x, &lo, &hi);
        tgk_qparams_u8(lo, hi, &x_scale, &x_zero);
    }
    for (int64_t n = 0; n < N; n++) s[n] = x_scale * w_scale[n];
    tgk_quantize_u8(M * K, x, x_scale, x_zero, xq);
    gemm(M, N, K, xq, K, x_zero, packed, s, bias, y, N);
    free(xq);
    free(s);
    return 0;
}
