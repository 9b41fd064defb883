/* The 2:4 sparse linear layer: y[M,N] = x[M,K] w[N,K]^T + b, w with two
 * nonzeros in every group of four along k, stored compressed (tgraph-format(5):
 * values [N, K/2], 2-bit indices meta [N, ceil(K/8)]). Half the weights are
 * read and half the multiply-adds done.
 *
 * The kernel's layout, packed once from the TG one: panels of TGK_PANEL (16)
 * output columns, as the dense packed GEMM (gemm_packed.c) has them: the values
 * of a panel are [K/2][16] (row 2g + j: the j-th kept weight of group g of the
 * 16 columns, zero past N), then after all the values, the metadata of a panel
 * is [ceil(K/8)][16] bytes, the TG byte of each column moved next to its
 * neighbours' (4 bits a group: two groups a byte). The four x of a group,
 * broadcast to every 128-bit lane, are permuted by the indices (vpermilps:
 * each lane picks one of the four in its own lane, reading only the low two
 * bits of its index, so a byte shifted right by 0, 2, 4, 6 is the index of
 * the first and second kept weight of the byte's two groups), then two FMAs:
 * two shuffles stand where the dense kernel does two more FMAs, and its
 * weight stream halves.
 *
 * One source per instruction set, as gemm_packed.c: AVX-512 (register tile
 * 6 rows x 2 panels; of 6 x 2, 4 x 2, 8 x 1 and 4 x 3 timed on a Xeon with
 * AVX-512, bench/sparse.sh, 8 x 1 was a little faster at batch 64, 1.40-1.54x
 * the dense kernel against 1.35-1.50x, but only 6 x 2 has been through the
 * unit tests on such a CPU), AVX2 (3 x 1) and a scalar loop, the readable
 * reference and the path of other CPUs; chosen once by CPU features. */
#include "backend/cpu/kernels/kernels.h"

#include <string.h>

#include "backend/cpu/kernels/chunk24.h"
#include "backend/cpu/kernels/qgemm.h"  /* tgk_qpack_once */
#include "backend/cpu/kernels/vecmath.h"    /* -O3 in the interpreter's copy too */

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define S24_X86 1
#endif

#define INLINE static inline __attribute__((always_inline))

static int64_t panels_of(int64_t N) { return (N + TGK_PANEL - 1) / TGK_PANEL; }
static int64_t meta_bytes(int64_t K) { return (K / 4 + 1) / 2; }

size_t tgk_sparse24_packed_size(int64_t N, int64_t K)
{
    return (size_t)(panels_of(N) * TGK_PANEL) * ((size_t)(K / 2) * sizeof(float) +
                                                  (size_t)meta_bytes(K));
}

void tgk_sparse24_pack_meta(int64_t N, int64_t K, const uint8_t *meta, uint8_t *pm)
{
    int64_t MB = meta_bytes(K);
    memset(pm, 0, (size_t)(panels_of(N) * MB * TGK_PANEL));
    for (int64_t n = 0; n < N; n++)
        for (int64_t h = 0; h < MB; h++)
            pm[(n / TGK_PANEL * MB + h) * TGK_PANEL + n % TGK_PANEL] = meta[n * MB + h];
}

void tgk_sparse24_pack(int64_t N, int64_t K, const void *values, const uint8_t *meta,
                       void *packed)
{
    float *pv = packed;
    tgk_pack_weight_f32(values, K / 2, N, K / 2, pv);
    tgk_sparse24_pack_meta(N, K, meta, (uint8_t *)(pv + panels_of(N) * TGK_PANEL * (K / 2)));
}

typedef struct {
    tgk_pack24_fn pack;
    int64_t N, K;
    const void *values;
    const uint8_t *meta;
} pack_args;

static int fill(void *ctx, void *buf)
{
    const pack_args *a = ctx;
    a->pack(a->N, a->K, a->values, a->meta, buf);
    return 0;
}

void *tgk_pack24_once(void **slot, size_t size, tgk_pack24_fn pack, int64_t N, int64_t K,
                      const void *values, const uint8_t *meta)
{
    pack_args a = {pack, N, K, values, meta};
    return tgk_qpack_once(slot, size, fill, &a);
}

void *tgk_sparse24_pack_once(void **slot, int64_t N, int64_t K, const float *values,
                             const uint8_t *meta)
{
    return tgk_pack24_once(slot, tgk_sparse24_packed_size(N, K), tgk_sparse24_pack, N, K,
                           values, meta);
}

/* chunk functions: rows [r0, r1) x panels [p0, p1) of an s24_job */
typedef struct {
    int64_t M, N, K;
    const float *x, *b;
    const float *values;        /* the packed panels */
    const uint8_t *meta;
    float *y;
} s24_job;

/* The reference: rows [r0, r1) x panels [p0, p1), one product at a time. */
static void chunk_scalar(const void *ctx, int64_t r0, int64_t r1, int64_t p0, int64_t p1)
{
    const s24_job *j = ctx;
    int64_t K = j->K, MB = meta_bytes(K);
    for (int64_t r = r0; r < r1; r++)
        for (int64_t p = p0; p < p1; p++) {
            const float *v = j->values + p * (K / 2) * TGK_PANEL, *x = j->x + r * K;
            const uint8_t *m = j->meta + p * MB * TGK_PANEL;
            for (int c = 0; c < TGK_PANEL && p * TGK_PANEL + c < j->N; c++) {
                float s = j->b ? j->b[p * TGK_PANEL + c] : 0.0f;
                for (int64_t g = 0; g < K / 4; g++) {
                    int bits = m[g / 2 * TGK_PANEL + c] >> (g % 2 * 4);
                    s += v[2 * g * TGK_PANEL + c] * x[4 * g + (bits & 3)];
                    s += v[(2 * g + 1) * TGK_PANEL + c] * x[4 * g + (bits >> 2 & 3)];
                }
                j->y[r * j->N + p * TGK_PANEL + c] = s;
            }
        }
}

#ifdef S24_X86
/* One group g of a tile (inside TILE24's function: acc, m, x, v, KH, mr, np,
 * PV in scope), its metadata vectors m shifted right by sh (0 or 4). */
#define GROUP24(name, VL, bcast, perm, g, sh)                                           \
    do {                                                                                \
        name##_vec w0[4 * PV], w1[4 * PV];                                              \
        name##_ivec i0[4 * PV], i1[4 * PV];                                             \
        _Pragma("GCC unroll 16") for (int u = 0; u < np * PV; u++) {                    \
            const float *src = v + (u / PV * KH + 2 * (g)) * TGK_PANEL + u % PV * VL;   \
            memcpy(&w0[u], src, sizeof w0[u]);                                          \
            memcpy(&w1[u], src + TGK_PANEL, sizeof w1[u]);                              \
            i0[u] = m[u] >> (sh);                                                       \
            i1[u] = m[u] >> ((sh) + 2);                                                 \
        }                                                                               \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {                          \
            name##_vec xb = bcast(x + i * K + 4 * (g));                                 \
            _Pragma("GCC unroll 16") for (int u = 0; u < np * PV; u++) {                \
                acc[i][u] += perm(xb, i0[u]) * w0[u];    /* two FMAs, one chain */       \
                acc[i][u] += perm(xb, i1[u]) * w1[u];                                   \
            }                                                                           \
        }                                                                               \
    } while (0)

/* The metadata vectors of byte h of the tile's panels into m: VL bytes
 * widened to 32-bit lanes by expand (vpmovzxbd; gcc's own conversion went
 * through scalar registers). */
#define META24(name, VL, expand, h)                                                     \
    _Pragma("GCC unroll 16") for (int u = 0; u < np * PV; u++)                          \
        m[u] = (name##_ivec)expand(meta + (u / PV * MB + (h)) * TGK_PANEL + u % PV * VL);

/* TILE24(name, attr, VL, bcast, perm, expand): name(mr, np, j, r, p)
 * computes rows [r, r + mr) x panels [p, p + np) with vectors of VL floats;
 * bcast(p) puts the four floats at p in every 128-bit lane, perm(x, i) is the
 * instruction set's vpermilps, expand(p) widens VL bytes at p to 32 bits. mr and np are constants at every call site and everything is
 * in one function, so the accumulators live in registers. */
#define TILE24(name, attr, VL, bcast, perm, expand)                                     \
    typedef float name##_vec __attribute__((vector_size(VL * sizeof(float))));         \
    typedef int32_t name##_ivec __attribute__((vector_size(VL * sizeof(int32_t))));    \
    attr INLINE void name(const int mr, const int np, const s24_job *j, int64_t r,      \
                          int64_t p)                                                    \
    {                                                                                   \
        enum { PV = TGK_PANEL / VL };   /* vectors a panel row */                       \
        int64_t K = j->K, KH = K / 2, G = K / 4, MB = meta_bytes(K);                    \
        int64_t n0 = p * TGK_PANEL;                                                     \
        int64_t ncols = j->N - n0 < np * TGK_PANEL ? j->N - n0 : np * TGK_PANEL;        \
        const float *x = j->x + r * K, *v = j->values + p * KH * TGK_PANEL;             \
        const uint8_t *meta = j->meta + p * MB * TGK_PANEL;                             \
        name##_vec acc[8][4 * PV];                                                      \
        name##_ivec m[4 * PV];                                                          \
        _Pragma("GCC unroll 16") for (int u = 0; u < np * PV; u++) {                    \
            /* through memory: an element written into a vector (or read out of      \
             * one, below) kept the accumulators in memory as well */                   \
            float bf[VL] = {0};                                                         \
            for (int64_t c = 0; j->b && c < VL && u * VL + c < ncols; c++)              \
                bf[c] = j->b[n0 + u * VL + c];                                          \
            name##_vec bv;                                                              \
            memcpy(&bv, bf, sizeof bv);                                                 \
            _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                        \
                acc[i][u] = bv;                                                         \
        }                                                                               \
        for (int64_t h = 0; h < G / 2; h++) {                                           \
            META24(name, VL, expand, h)                                                 \
            GROUP24(name, VL, bcast, perm, 2 * h, 0);                                   \
            GROUP24(name, VL, bcast, perm, 2 * h + 1, 4);                               \
        }                                                                               \
        if (G % 2) {                                                                    \
            META24(name, VL, expand, G / 2)                                             \
            GROUP24(name, VL, bcast, perm, G - 1, 0);                                   \
        }                                                                               \
        float *yr = j->y + r * j->N + n0;                                               \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++, yr += j->N)                \
            _Pragma("GCC unroll 16") for (int u = 0; u < np * PV; u++) {                \
                float yf[VL];                                                           \
                memcpy(yf, &acc[i][u], sizeof yf);                                      \
                for (int64_t c = 0; c < VL && c < ncols - u * VL; c++)                  \
                    yr[u * VL + c] = yf[c];                                             \
            }                                                                           \
    }

#define BCAST512(p) ((tile512_vec)_mm512_broadcast_f32x4(_mm_loadu_ps(p)))
#define BCAST256(p) ((tile256_vec)_mm256_broadcast_ps((const __m128 *)(p)))
#define EXPAND512(p) _mm512_cvtepu8_epi32(_mm_loadu_si128((const __m128i *)(p)))
#define EXPAND256(p) _mm256_cvtepu8_epi32(_mm_loadl_epi64((const __m128i *)(p)))
#define PERM512(x, i) ((tile512_vec)_mm512_permutevar_ps((__m512)(x), (__m512i)(i)))
#define PERM256(x, i) ((tile256_vec)_mm256_permutevar_ps((__m256)(x), (__m256i)(i)))
TILE24(tile512, __attribute__((target("arch=x86-64-v4"))), 16, BCAST512, PERM512, EXPAND512)
TILE24(tile256, __attribute__((target("arch=x86-64-v3"))), 8, BCAST256, PERM256, EXPAND256)
TGK_CHUNK24(chunk_avx512, __attribute__((target("arch=x86-64-v4"))), tile512, s24_job, 6, 2)
TGK_CHUNK24(chunk_avx2, __attribute__((target("arch=x86-64-v3"))), tile256, s24_job, 3, 1)
#endif

#ifdef S24_X86
static bool has_avx512(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v4");
}

static bool has_avx2(void)
{
    __builtin_cpu_init();
    return __builtin_cpu_supports("x86-64-v3");
}
#endif

static const tgk_path24 paths[] = {
#ifdef S24_X86
    {"avx512", chunk_avx512, 6, has_avx512},
    {"avx2", chunk_avx2, 3, has_avx2},
#endif
    {"scalar", chunk_scalar, 1, tgk_cpu_any},
};
#define NPATHS (sizeof paths / sizeof *paths)

bool tgk_cpu_any(void)
{
    return true;
}

int tgk_paths24_set(tgk_paths24 *s, const char *name)
{
    for (size_t i = 0; i < s->n; i++)
        if ((!name || !strcmp(s->paths[i].name, name)) && s->paths[i].has()) {
            s->chosen = &s->paths[i];
            return 0;
        }
    return -1;
}

static tgk_paths24 sel = {paths, NPATHS, NULL};

/* the widest this CPU runs, chosen once before any caller */
__attribute__((constructor)) static void pick_path(void) { tgk_paths24_set(&sel, NULL); }

const char *tgk_sparse24_path(void) { return sel.chosen->name; }
int tgk_sparse24_set_path(const char *name) { return tgk_paths24_set(&sel, name); }

void tgk_linear24_f32(const float *x, const void *packed, const float *b, float *y,
                      int64_t M, int64_t N, int64_t K)
{
    if (M <= 0 || N <= 0)
        return;
    int64_t P = panels_of(N);
    s24_job j = {M, N, K, x, b, packed,
                 (const uint8_t *)((const float *)packed + P * TGK_PANEL * (K / 2)), y};
    tgk_parallel_panels(M, P, sel.chosen->mr, (double)M * (double)N * (double)K / 2,
                        sel.chosen->fn, &j);
}
