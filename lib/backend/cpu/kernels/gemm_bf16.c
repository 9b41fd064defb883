/* The linear layer in bfloat16 (tcompile --dtype bf16): y[M,N] = x[M,K] w[N,K]^T
 * + b with w rounded to bf16 and packed once at compile time, x rounded to bf16
 * (round to nearest even) at run time, products accumulated in float32 and y
 * float32: PyTorch's CPU autocast and oneDNN's bf16 inner product compute the
 * same.
 *
 * The packed weight has gemm_packed.c's panels of TGK_PANEL output columns
 * with k taken in pairs, [N/16][K/2][16][2] (K rounded up to a multiple of
 * 32, an AMX tile's depth; zeros past N and K): a panel row is one 64-byte vector of 16 bf16 pairs, the operand
 * of AVX512_BF16's vdpbf16ps, which adds both products of a pair to each
 * float32 accumulator. x is rounded once per call into pairs of the same
 * layout, so the register tile's inner step is a vector load of w, a 32-bit
 * broadcast of x's pair and one vdpbf16ps.
 *
 * Four paths read the same packed data, chosen once by cpuid: AMX tiles
 * (tdpbf16ps, with Linux's permission for the tile state), AVX512_BF16's
 * vdpbf16ps, AVX-512 FMAs on the bf16 widened to float32, and a portable one
 * that computes what vdpbf16ps does (each product of two bf16 is exact in
 * float32; the pair's odd product is added first, then the even, each
 * rounded to nearest even), so the last three agree bit for bit but for
 * vdpbf16ps treating subnormals as zero; AMX sums in another order (the same
 * tolerance). On Intel's Xeons vdpbf16ps issues at a quarter of the rate of
 * float32 FMAs, so computes half their products a second (Emerald Rapids
 * under KVM without AMX: 0.45-0.53), so there, without AMX, the FMA path runs
 * (x rounded into a float32 copy, each weight pair split in two vectors by a
 * shift and a mask); elsewhere (AMD's Zen 4) vdpbf16ps. TGRAPH_CPU_BF16=
 * amx|avx512bf16|avx512fma|base picks one (tests; a machine without the
 * instructions has only the portable one). */
#include "backend/cpu/kernels/kernels.h"

#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"
#include "elem.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define HAVE_AVX512BF16 1
#include <cpuid.h>
#include <immintrin.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

#define INLINE static inline __attribute__((always_inline))
#define PAIR (2 * TGK_PANEL)    /* bf16 in a panel row of k pairs */
#define XROWS 32                /* x's rounded copy holds whole blocks of this many rows */

typedef struct bgemm_job bgemm_job;
typedef void (*bchunk_fn)(const bgemm_job *j, int64_t r0, int64_t r1, int64_t p0, int64_t p1);

struct bgemm_job {
    int64_t M, N, kp;           /* kp: K pairs */
    const uint32_t *x;          /* x rounded, a row kp pairs of bf16 (wide: 2 kp float32) */
    bool wide;
    const uint16_t *wp;
    const float *b, *res;
    float *y;
    tgk_vec_fn act;
    int64_t row_chunk, panel_chunk;
    bchunk_fn fn;
    const float *xf;            /* x as given (rounding only), K columns */
    int64_t K;
};

int64_t tgk_packed_bf16_size(int64_t N, int64_t K)
{
    return (N + TGK_PANEL - 1) / TGK_PANEL * (TGK_BF16_KPAD(K) / 2) * PAIR;
}

void tgk_pack_weight_bf16(const float *w, int64_t ldw, int64_t N, int64_t K, uint16_t *packed)
{
    int64_t kp = TGK_BF16_KPAD(K) / 2;
    memset(packed, 0, (size_t)tgk_packed_bf16_size(N, K) * sizeof *packed);
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            packed[(n / TGK_PANEL * kp + k / 2) * PAIR + n % TGK_PANEL * 2 + k % 2] =
                tgk_f32_to_bf16(w[n * ldw + k]);
}

/* Round to nearest even, in integers so that it vectorizes; NaN stays NaN
 * (quieted). The same as tgk_f32_to_bf16 on every number. */
static inline uint32_t rne(const float *x)
{
    uint32_t u;
    memcpy(&u, x, sizeof u);
    bool nan = (u & 0x7fffffffu) > 0x7f800000u;
    return nan ? (u >> 16) | 0x40u : (u + 0x7fffu + ((u >> 16) & 1u)) >> 16;
}

TGK_CLONES static void round_row(const float *x, int64_t K, int64_t kpad, uint16_t *xb)
{
    for (int64_t k = 0; k < K; k++)
        xb[k] = (uint16_t)rne(&x[k]);
    for (int64_t k = K; k < kpad; k++)
        xb[k] = 0;
}

/* the same, each bf16 as the float32 it is (the FMA path's copy) */
TGK_CLONES static void round_row_wide(const float *x, int64_t K, int64_t kpad, uint32_t *xb)
{
    for (int64_t k = 0; k < K; k++)
        xb[k] = rne(&x[k]) << 16;
    for (int64_t k = K; k < kpad; k++)
        xb[k] = 0;
}

static void round_rows(void *ctx, int64_t begin, int64_t end)
{
    const bgemm_job *j = ctx;
    for (int64_t r = begin; r < end; r++)
        if (j->wide)
            round_row_wide(j->xf + r * j->K, j->K, 2 * j->kp, (uint32_t *)j->x + r * 2 * j->kp);
        else
            round_row(j->xf + r * j->K, j->K, 2 * j->kp, (uint16_t *)(j->x + r * j->kp));
}

INLINE float bf(uint16_t h)
{
    uint32_t u = (uint32_t)h << 16;
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

/* The portable path: rows of 4 x one panel, the instruction's arithmetic. A
 * tile of fewer rows computes its first row again in the others (4 rows
 * always: fixed loops that vectorize) and stores only its own. */
TGK_CLONES static void chunk_base(const bgemm_job *j, int64_t r0, int64_t r1, int64_t p0,
                                  int64_t p1)
{
    for (int64_t r = r0; r < r1; r += 4) {
        int mr = r1 - r < 4 ? (int)(r1 - r) : 4;
        const uint16_t *xr[4];
        for (int i = 0; i < 4; i++)
            xr[i] = (const uint16_t *)(j->x + (r + (i < mr ? i : 0)) * j->kp);
        for (int64_t p = p0; p < p1; p++) {
            int64_t n0 = p * TGK_PANEL;
            int ncols = j->N - n0 < TGK_PANEL ? (int)(j->N - n0) : TGK_PANEL;
            float acc[4][TGK_PANEL];
            for (int i = 0; i < 4; i++)
                for (int c = 0; c < TGK_PANEL; c++)
                    acc[i][c] = j->b && c < ncols ? j->b[n0 + c] : 0.0f;
            const uint16_t *w = j->wp + p * j->kp * PAIR;
            for (int64_t k = 0; k < j->kp; k++, w += PAIR) {
                float w0[TGK_PANEL], w1[TGK_PANEL];
                for (int c = 0; c < TGK_PANEL; c++) {
                    w0[c] = bf(w[2 * c]);
                    w1[c] = bf(w[2 * c + 1]);
                }
                for (int i = 0; i < 4; i++) {
                    float x0 = bf(xr[i][2 * k]), x1 = bf(xr[i][2 * k + 1]);
                    for (int c = 0; c < TGK_PANEL; c++) {
                        acc[i][c] += x1 * w1[c];
                        acc[i][c] += x0 * w0[c];
                    }
                }
            }
            for (int i = 0; i < mr; i++)
                memcpy(j->y + (r + i) * j->N + n0, acc[i], (size_t)ncols * sizeof(float));
        }
    }
}

#ifdef HAVE_AVX512BF16
#define BF16_TARGET __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16")))
#define MR 8
#define NP 2

/* mr rows x np panels at row r, panel p: 16 zmm accumulators at most. fma
 * (a constant at each call): the FMA path's step, each weight pair vector
 * split into its odd k (the high halves, masked) and even k (shifted up) as
 * float32 and x's float32 copy broadcast, the odd product first, as
 * vdpbf16ps adds it; else vdpbf16ps on x's pairs. */
BF16_TARGET INLINE void tile_of(const int mr, const int np, const bgemm_job *j, int64_t r,
                                int64_t p, const bool fma)
{
    int64_t n0 = p * TGK_PANEL, kp = j->kp;
    int64_t ncols = j->N - n0 < np * TGK_PANEL ? j->N - n0 : np * TGK_PANEL;
    __mmask16 m[NP];
    __m512 acc[MR][NP];
    for (int v = 0; v < np; v++) {
        int64_t nb = ncols - v * TGK_PANEL;
        m[v] = nb >= TGK_PANEL ? (__mmask16)0xffff : (__mmask16)((1u << nb) - 1);
        __m512 bv = j->b ? _mm512_maskz_loadu_ps(m[v], j->b + n0 + v * TGK_PANEL)
                         : _mm512_setzero_ps();
        for (int i = 0; i < mr; i++)
            acc[i][v] = bv;
    }
    const uint32_t *a = j->x + r * kp * (fma ? 2 : 1);
    const float *af = (const float *)a;
    const uint16_t *w = j->wp + p * kp * PAIR;
    const __m512i high = _mm512_set1_epi32((int)0xffff0000u);
    for (int64_t k = 0; k < kp; k++) {
        __m512i wv[NP];
        __m512 odd[NP], even[NP];
        for (int v = 0; v < np; v++) {
            wv[v] = _mm512_loadu_si512(w + (v * kp + k) * PAIR);
            if (fma) {
                odd[v] = _mm512_castsi512_ps(_mm512_and_si512(wv[v], high));
                even[v] = _mm512_castsi512_ps(_mm512_slli_epi32(wv[v], 16));
            }
        }
        for (int i = 0; i < mr; i++) {
            if (fma) {
                __m512 x1 = _mm512_set1_ps(af[i * 2 * kp + 2 * k + 1]);
                __m512 x0 = _mm512_set1_ps(af[i * 2 * kp + 2 * k]);
                for (int v = 0; v < np; v++) {
                    acc[i][v] = _mm512_fmadd_ps(x1, odd[v], acc[i][v]);
                    acc[i][v] = _mm512_fmadd_ps(x0, even[v], acc[i][v]);
                }
            } else {
                __m512bh xv = (__m512bh)_mm512_set1_epi32((int)a[i * kp + k]);
                for (int v = 0; v < np; v++)
                    acc[i][v] = _mm512_dpbf16_ps(acc[i][v], xv, (__m512bh)wv[v]);
            }
        }
    }
    float *y = j->y + r * j->N + n0;
    for (int i = 0; i < mr; i++)
        for (int v = 0; v < np; v++)
            _mm512_mask_storeu_ps(y + i * j->N + v * TGK_PANEL, m[v], acc[i][v]);
}

#define tile(mr, np, j, r, p) tile_of(mr, np, j, r, p, false)
#define tile_fma(mr, np, j, r, p) tile_of(mr, np, j, r, p, true)

/* rows outer, as gemm_packed.c's chunks (why: there) */
#define CHUNK_OF(name, T)                                                                \
    BF16_TARGET static void name(const bgemm_job *j, int64_t r0, int64_t r1, int64_t p0,  \
                                 int64_t p1)                                             \
    {                                                                                    \
        int64_t pe = p0 + (p1 - p0) / NP * NP;                                           \
        for (int64_t r = r0; r < r1; r += MR) {                                          \
            int64_t mr = r1 - r < MR ? r1 - r : MR;                                      \
            for (int64_t q = p0; q < pe; q += NP)                                        \
                if (mr == MR)                                                            \
                    T(MR, NP, j, r, q);                                                  \
                else                                                                     \
                    TGK_TILE_ROWS(T, MR, NP, j, r, q, mr);                               \
            for (int64_t q = pe; q < p1; q++)                                            \
                if (mr == MR)                                                            \
                    T(MR, 1, j, r, q);                                                   \
                else                                                                     \
                    TGK_TILE_ROWS(T, MR, 1, j, r, q, mr);                                \
        }                                                                                \
    }
CHUNK_OF(chunk_avx512bf16, tile)
CHUNK_OF(chunk_avx512fma, tile_fma)

/* ---- AMX: 16 x 16 float32 tiles, 16 k pairs a step ----------------------------
 * The packed panel's 16 k-pair rows are a B tile as they are (64 bytes a row),
 * and 16 rows of x's rounded copy an A tile (rows kp pairs apart), so nothing
 * is repacked. A step of 32 rows x 2 panels: 4 tile loads, 4 tdpbf16ps
 * (16 x 16 x 32 products each) into C tiles 0-3; the C tiles then go through
 * a buffer into y with the bias. Tiles: 0-3 C (row block a, panel b: 2a + b),
 * 4-5 A, 6-7 B, all 16 rows x 64 bytes. */
#define AMX_TARGET                                                                    \
    __attribute__((target("avx512f,avx512bw,avx512vl,avx512bf16,amx-tile,amx-bf16")))
#define AMX_ROWS 32

typedef struct {
    uint8_t palette, start_row, reserved[14];
    uint16_t colsb[16];
    uint8_t rows[16];
} tilecfg;

/* rows of the 32 x 32 block at row r, panels q and q + 1 (two: the second
 * exists) into y, with the bias */
static void amx_store(const bgemm_job *j, const float (*c)[2 * TGK_PANEL], int64_t r,
                      int64_t q, int64_t r1)
{
    int64_t n0 = q * TGK_PANEL, ncols = j->N - n0 < 2 * TGK_PANEL ? j->N - n0 : 2 * TGK_PANEL;
    for (int64_t i = 0; i < AMX_ROWS && r + i < r1; i++) {
        float *y = j->y + (r + i) * j->N + n0;
        for (int64_t n = 0; n < ncols; n++)
            y[n] = c[i][n] + (j->b ? j->b[n0 + n] : 0.0f);
    }
}

AMX_TARGET static void chunk_amx(const bgemm_job *j, int64_t r0, int64_t r1, int64_t p0,
                                 int64_t p1)
{
    tilecfg cfg = {.palette = 1};
    for (int t = 0; t < 8; t++)
        cfg.rows[t] = 16, cfg.colsb[t] = 64;
    _tile_loadconfig(&cfg);
    float c[AMX_ROWS][2 * TGK_PANEL] __attribute__((aligned(64)));
    int64_t kp = j->kp, lda = kp * 4;
    for (int64_t r = r0; r < r1; r += AMX_ROWS) {   /* x has zero rows to a multiple of 32 */
        const char *a = (const char *)(j->x + r * kp);
        for (int64_t q = p0; q < p1; q += 2) {
            const char *b = (const char *)(j->wp + q * kp * PAIR);
            _tile_zero(0);
            _tile_zero(1);
            _tile_zero(2);
            _tile_zero(3);
            if (q + 1 < p1) {
                const char *b1 = b + kp * PAIR * 2;
                for (int64_t k = 0; k < kp; k += 16) {
                    _tile_loadd(4, a + k * 4, lda);
                    _tile_loadd(5, a + 16 * lda + k * 4, lda);
                    _tile_loadd(6, b + k * 64, 64);
                    _tile_loadd(7, b1 + k * 64, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(1, 4, 7);
                    _tile_dpbf16ps(2, 5, 6);
                    _tile_dpbf16ps(3, 5, 7);
                }
            } else {
                for (int64_t k = 0; k < kp; k += 16) {
                    _tile_loadd(4, a + k * 4, lda);
                    _tile_loadd(5, a + 16 * lda + k * 4, lda);
                    _tile_loadd(6, b + k * 64, 64);
                    _tile_dpbf16ps(0, 4, 6);
                    _tile_dpbf16ps(2, 5, 6);
                }
            }
            _tile_stored(0, &c[0][0], sizeof c[0]);
            _tile_stored(1, &c[0][TGK_PANEL], sizeof c[0]);
            _tile_stored(2, &c[16][0], sizeof c[0]);
            _tile_stored(3, &c[16][TGK_PANEL], sizeof c[0]);
            amx_store(j, c, r, q, r1);
        }
    }
    _tile_release();
}

/* AMX needs the CPU's word (cpuid: AMX-TILE and AMX-BF16) and the kernel's:
 * Linux hands a process the tile state only when asked (arch_prctl). */
static bool amx_usable(void)
{
    unsigned a, b, c, d;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d) || !(d & (1u << 22)) || !(d & (1u << 24)))
        return false;
#if defined(__linux__) && defined(SYS_arch_prctl)
    return syscall(SYS_arch_prctl, 0x1023 /* ARCH_REQ_XCOMP_PERM */, 18 /* XTILEDATA */) == 0;
#else
    return false;
#endif
}
#endif

typedef struct {
    bchunk_fn fn;
    int64_t mr;
    const char *name;
    bool wide;                  /* x's copy in float32 */
} bchunk_kind;

static bool find_kind(const char *isa, bchunk_kind *k)
{
    bool any = !isa;
#ifdef HAVE_AVX512BF16
    __builtin_cpu_init();
    bool v4 = __builtin_cpu_supports("x86-64-v4");
    bool bf16 = __builtin_cpu_supports("avx512bf16") && v4;
    if ((any || !strcmp(isa, "amx")) && bf16 && amx_usable()) {
        *k = (bchunk_kind){chunk_amx, AMX_ROWS, "amx", false};
        return true;
    }
    /* Intel's vdpbf16ps is slower than FMAs (top of the file) */
    if ((any ? !__builtin_cpu_is("intel") : !strcmp(isa, "avx512bf16")) && bf16) {
        *k = (bchunk_kind){chunk_avx512bf16, MR, "avx512bf16", false};
        return true;
    }
    if ((any || !strcmp(isa, "avx512fma")) && v4) {
        *k = (bchunk_kind){chunk_avx512fma, MR, "avx512fma", true};
        return true;
    }
#endif
    if (any || !strcmp(isa, "base")) {
        *k = (bchunk_kind){chunk_base, 4, "base", false};
        return true;
    }
    return false;
}

static bchunk_kind kind;

__attribute__((constructor)) static void pick_kind(void)
{
    const char *env = getenv("TGRAPH_CPU_BF16");
    if (!env || !find_kind(env, &kind))
        find_kind(NULL, &kind);
}

bool tgk_gemm_bf16_isa(const char *isa)
{
    bchunk_kind k;
    if (!find_kind(isa, &k))
        return false;
    kind = k;
    return true;
}

const char *tgk_gemm_bf16_path(void)
{
    return kind.name;
}

static void run_chunks(void *ctx, int64_t begin, int64_t end)
{
    const bgemm_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t b[4];
        tgk_gemm_task(t, j->M, j->N, j->row_chunk, j->panel_chunk, b);
        j->fn(j, b[0], b[1], b[2], b[3]);
        tgk_gemm_epilogue(j->y, j->N, j->res, j->act, b[0], b[1], b[2] * TGK_PANEL,
                          b[3] * TGK_PANEL < j->N ? b[3] * TGK_PANEL : j->N);
    }
}


int tgk_linear_packed_bf16(const float *x, const uint16_t *wp, const float *b, const float *res,
                           float *y, int64_t M, int64_t N, int64_t K, tgk_vec_fn act)
{
    if (M <= 0 || N <= 0)
        return 0;
    /* rows past M zero, to whole tiles of XROWS (AMX reads 16 rows at a time) */
    int64_t kp = TGK_BF16_KPAD(K) / 2, mpad = (M + XROWS - 1) / XROWS * XROWS;
    int64_t row = kind.wide ? 2 * kp : kp;     /* x's copy: uint32 a row */
    uint32_t *xb = malloc((size_t)(mpad * row) * sizeof *xb);
    if (!xb)
        return -1;
    memset(xb + M * row, 0, (size_t)((mpad - M) * row) * sizeof *xb);
    int64_t tiles = (M + kind.mr - 1) / kind.mr, row_chunks = (tiles + 7) / 8;
    int64_t panels = (N + TGK_PANEL - 1) / TGK_PANEL;
    bgemm_job j = {M, N, kp, xb, kind.wide, wp, b, res, y, act,
                   (tiles + row_chunks - 1) / row_chunks * kind.mr, 4, kind.fn, x, K};
    tgk_parallel_for(M, (TGK_TASK_MIN_MACS / 8) / (K + 1) + 1, round_rows, &j);
    int64_t tasks = row_chunks * ((panels + j.panel_chunk - 1) / j.panel_chunk);
    double per_task = (double)M * (double)N * (double)K / (double)tasks;
    tgk_parallel_for(tasks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1, run_chunks, &j);
    free(xb);
    return 0;
}
