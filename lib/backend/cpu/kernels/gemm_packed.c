/* GEMM on pre-packed weights: y[M,N] = x[M,K] w[N,K]^T + b, the linear layer
 * with w packed once (tcompile's prepack pass, at compile time) into panels
 * of TGK_PANEL output columns, [N/16][K][16]. A panel row is one vector
 * load, so the inner loop is loads of w, broadcasts of x and FMAs into
 * register accumulators, with no packing at run time (OpenBLAS packs both
 * operands on every call, which costs as much as the products at the sizes
 * of small models).
 *
 * One source, instantiated per instruction set with a register tile that
 * fits it, MR rows x NP panels of 16-float accumulators (AVX-512: 8 x 2,
 * 16 zmm; AVX2: 6 x 1, 12 ymm; baseline SSE: 2 x 1, 8 xmm), chosen once at
 * run time. A single row (GEMV) runs 4 panels at once so that enough
 * independent FMA chains hide the latency. */
#include "backend/cpu/kernels/kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"    /* -O3 and no-trapping-math here too */

#define INLINE static inline __attribute__((always_inline))

typedef struct pgemm_job pgemm_job;
/* rows [r0, r1) x panels [p0, p1) */
typedef void (*chunk_fn)(const pgemm_job *j, int64_t r0, int64_t r1, int64_t p0, int64_t p1);

struct pgemm_job {
    int64_t M, N, K, ldx, ldy;
    const float *x, *wp, *b;
    bool accumulate;            /* start from y instead of b */
    bool bias_rows;             /* b holds a value a row of y (a convolution's output
                                 * channel), not a column */
    float *y;
    /* causal cuts (TGK_NO_DIAG: none): row r of y is needed only in columns
     * n < r + y_diag, and row r of x is zero from column r + x_diag on */
    int64_t y_diag, x_diag;
    const float *res;           /* added to the tile as it stores, rows ldy apart, or NULL */
    tgk_vec_fn act;             /* then on each chunk of y, or NULL */
    int64_t row_chunk, panel_chunk;
    chunk_fn fn;                /* the one for this CPU */
    /* where panel p's row k is: wp + p * pstride + k * ldb (packed: K x
     * TGK_PANEL and TGK_PANEL; an image read in place: TGK_PANEL and its
     * row length, whole panels only), or with koff (the chunk functions
     * that take it) wp + p * pstride + koff[k]: a padded image read in
     * place at each tap's offset (an implicit im2col) */
    int64_t pstride, ldb;
    const int64_t *koff;
    /* an activation applied on the tile's registers as it stores (after res,
     * which the tile adds), act then NULL: ACT_RELU, ACT_RELU6 or ACT_HARDSWISH */
    int act_reg;
    int64_t ldres;              /* res's rows apart; 0: ldy */
    /* an indirect GEMM (the chunk functions that take it): x's row r is
     * taps runs of cin floats, run t at xtab[t * TGK_IGEMM_ROWS + i] + xoff
     * (r = i + the tile's first row), which rows (tgk_igemm) writes for each
     * tile's rows into xtab (the task's own scratch); panel row t * cin + c
     * goes with run t's float c */
    int64_t taps, cin, xoff;
    const float **xtab;
    const tgk_igemm *ig;
};

enum { ACT_CALL, ACT_RELU, ACT_RELU6, ACT_HARDSWISH };

/* which of act the tiles apply on their registers (they add a residual
 * before it; res_after: one added after the tile, so ACT_CALL) */
static int act_in_registers(tgk_vec_fn act, const float *res_after)
{
    return res_after ? ACT_CALL : act == tgk_vec_relu_f32 ? ACT_RELU
           : act == tgk_vec_relu6_f32                     ? ACT_RELU6
           : act == tgk_vec_hardswish_f32                 ? ACT_HARDSWISH : ACT_CALL;
}

/* how a tile finds its operands: x rows ldx apart and panel rows ldb apart;
 * panel rows at koff; x rows through the indirection table (xtab) */
enum { X_ROWS, W_KOFF, X_IND };

/* TILE(name, vec, VL): name(mr, np, j, r, p) computes mr rows x np panels
 * starting at row r, panel p, with vectors of VL floats, the instruction
 * set's own width (GCC splits wider generic vectors through memory). mr and
 * np are constants at every call site, so with the loops unrolled the
 * accumulators live in registers. name##_koff reads panel rows at j->koff,
 * name##_ind x's rows through j->xtab. */
#define TILE(name, vec, VL)                                                         \
    typedef float vec __attribute__((vector_size(VL * sizeof(float))));            \
    typedef int32_t vec##_mask __attribute__((vector_size(VL * sizeof(float))));   \
    /* *v = the first min(n, VL) floats of src, zeros after (by pointer: a      \
     * vector returned by value would change the ABI of the baseline build) */     \
    INLINE void row_init_##name(vec *v, const float *src, int64_t n)                \
    {                                                                               \
        *v = (vec){0};                                                              \
        if (n >= VL)                                                                \
            memcpy(v, src, sizeof *v);                                              \
        else                                                                        \
            for (int64_t c = 0; c < n; c++)                                         \
                (*v)[c] = src[c];                                                   \
    }                                                                               \
    /* tgk_vec_relu_f32, _relu6_f32 and _hardswish_f32 on a vector: the same \
     * operations lane by lane (selects: NaN and -0 stay; / 6, not a         \
     * multiply), so the result is the call's bit for bit */                 \
    INLINE void act_##name(vec *a, int kind)                                       \
    {                                                                               \
        vec v = *a, t = v + 3.0f, six = (vec){0} + 6.0f;                            \
        if (kind == ACT_RELU || kind == ACT_RELU6) {                                \
            v = (vec)((vec##_mask)v & ~(v < (vec){0}));                             \
            vec##_mask cap = kind == ACT_RELU6 ? v > six : (vec##_mask){0};         \
            *a = (vec)(((vec##_mask)v & ~cap) | ((vec##_mask)six & cap));           \
            return;                                                                 \
        }                                                                           \
        t = (vec)((vec##_mask)t & ~(t < (vec){0}));                                 \
        vec##_mask big = t > six;                                                   \
        t = (vec)(((vec##_mask)t & ~big) | ((vec##_mask)six & big));                \
        *a = v * t / 6.0f;                                                          \
    }                                                                               \
    INLINE void name##_body(const int mr, const int np, const int mode,             \
                            const pgemm_job *j, int64_t r, int64_t p)               \
    {                                                                               \
        enum { PV = TGK_PANEL / VL };   /* vectors a panel row */                   \
        int64_t K = j->K, n0 = p * TGK_PANEL;                                       \
        int64_t kend = r + mr - 1 + j->x_diag < K ? r + mr - 1 + j->x_diag : K;     \
        int64_t ncols = j->N - n0 < np * TGK_PANEL ? j->N - n0 : np * TGK_PANEL;    \
        const float *bp = j->wp + p * j->pstride;                                   \
        vec acc[8][4 * PV];                                                         \
        _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++) {                \
            int64_t nb = ncols - v * VL;                                            \
            if (j->accumulate) {                                                    \
                _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                \
                    row_init_##name(&acc[i][v], j->y + (r + i) * j->ldy + n0 + v * VL, nb); \
            } else if (j->bias_rows) {                                              \
                _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                \
                    acc[i][v] = (vec){0} + (j->b ? j->b[r + i] : 0.0f);             \
            } else {    /* the bias, loaded once for all the rows */                \
                vec bv = {0};                                                       \
                if (j->b)                                                           \
                    row_init_##name(&bv, j->b + n0 + v * VL, nb);                   \
                _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                \
                    acc[i][v] = bv;                                                 \
            }                                                                       \
        }                                                                           \
        /* x's rows: one run of kend floats each, or (X_IND) taps runs of cin */  \
        int64_t taps = mode == X_IND ? j->taps : 1, kc = mode == X_IND ? j->cin : kend; \
        for (int64_t t = 0; t < taps; t++) {                                        \
            const float *xr[8];                                                     \
            _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                    \
                xr[i] = mode == X_IND ? j->xtab[t * TGK_IGEMM_ROWS + i] + j->xoff   \
                                      : j->x + (r + i) * j->ldx;                    \
            const float *bt = bp + t * kc * j->ldb;                                 \
            for (int64_t k = 0; k < kc; k++) {                                      \
                vec w[4 * PV];                                                      \
                const float *bk = mode == W_KOFF ? bp + j->koff[k] : bt + k * j->ldb; \
                _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++)          \
                    memcpy(&w[v], bk + v / PV * j->pstride + v % PV * VL, sizeof w[v]); \
                _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++) {              \
                    float xv = xr[i][k];                                            \
                    _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++)      \
                        acc[i][v] += xv * w[v];                                     \
                }                                                                   \
            }                                                                       \
        }                                                                           \
        int64_t ldr = j->ldres ? j->ldres : j->ldy;                                 \
        if (j->res) /* the residual, loaded as the tile stores (rows ldr apart) */ \
            _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                    \
                _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++) {        \
                    vec rv;                                                         \
                    row_init_##name(&rv, j->res + (r + i) * ldr + n0 + v * VL,      \
                                    ncols - v * VL);                                \
                    acc[i][v] += rv;                                                \
                }                                                                   \
        if (j->act_reg != ACT_CALL)                                                 \
            _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++)                    \
                _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++)          \
                    act_##name(&acc[i][v], j->act_reg);                             \
        float *yr = j->y + r * j->ldy + n0;                                         \
        if (ncols == np * TGK_PANEL) { /* whole vectors, from the registers */      \
            _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++, yr += j->ldy)      \
                _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++)          \
                    memcpy(yr + v * VL, &acc[i][v], sizeof acc[i][v]);              \
            return;                                                                 \
        }                                                                           \
        _Pragma("GCC unroll 8") for (int i = 0; i < mr; i++, yr += j->ldy)          \
            _Pragma("GCC unroll 16") for (int v = 0; v < np * PV; v++)              \
                for (int64_t c = 0; c < ncols - v * VL && c < VL; c++)              \
                    yr[v * VL + c] = acc[i][v][c];                                  \
    }                                                                               \
    INLINE void name(const int mr, const int np, const pgemm_job *j, int64_t r,     \
                     int64_t p)                                                     \
    {                                                                               \
        name##_body(mr, np, X_ROWS, j, r, p);                                       \
    }                                                                               \
    INLINE void name##_koff(const int mr, const int np, const pgemm_job *j,         \
                            int64_t r, int64_t p)                                   \
    {                                                                               \
        name##_body(mr, np, W_KOFF, j, r, p);                                       \
    }                                                                               \
    INLINE void name##_ind(const int mr, const int np, const pgemm_job *j,          \
                           int64_t r, int64_t p)                                    \
    {                                                                               \
        name##_body(mr, np, X_IND, j, r, p);                                        \
    }

/* One chunk of rows x panels: rows outer, so a register tile's rows of x stay
 * in L1 while the tile sweeps the chunk's panels (at most 4 x K x 64 bytes,
 * in L1 or L2), and each row of y is written 4 panels (256 bytes) at a time.
 * Panels outer, which kept a panel in L1 across the chunk's rows, wrote y in
 * 64-byte pieces 6 rows apart: tinygpt's M = 4096 GEMMs ran 1.1-1.2x slower
 * (timed side by side with ONNX Runtime's MatMul in one process). A lone row
 * takes 4 panels at a time. A tile whose rows need none of its panels'
 * columns (y_diag) is skipped. */
#define CHUNK_FN(name, attr, T, MR, NP)                                                \
    attr static void name(const pgemm_job *j, int64_t r0, int64_t r1, int64_t p0,      \
                          int64_t p1)                                                  \
    {                                                                                  \
        int64_t p = p0;                                                                \
        if (j->ig)  /* an indirect GEMM: the tile's rows' table */                     \
            j->ig->rows(j->ig->ctx, r0, r1 - r0 < MR ? r1 - r0 : MR, j->xtab);         \
        if (r1 - r0 == 1)                                                              \
            for (; p + 4 <= p1 && p * TGK_PANEL < r0 + j->y_diag; p += 4)              \
                T(1, 4, j, r0, p);                                                     \
        int64_t pe = p + (p1 - p) / NP * NP;                                           \
        for (int64_t r = r0; r < r1; r += MR) {                                        \
            int64_t mr = r1 - r < MR ? r1 - r : MR;                                    \
            if (j->ig && r > r0)                                                       \
                j->ig->rows(j->ig->ctx, r, mr, j->xtab);                               \
            for (int64_t q = p; q < pe; q += NP)                                       \
                if (q * TGK_PANEL < r + mr - 1 + j->y_diag)                            \
                    TGK_TILE_ROWS(T, MR, NP, j, r, q, mr);                                 \
            for (int64_t q = pe; q < p1; q++)                                          \
                if (q * TGK_PANEL < r + mr - 1 + j->y_diag)                            \
                    TGK_TILE_ROWS(T, MR, 1, j, r, q, mr);                                  \
        }                                                                              \
    }

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
TILE(tile16, v16, 16)
TILE(tile8, v8, 8)
#define V4 __attribute__((target("arch=x86-64-v4")))
#define V3 __attribute__((target("arch=x86-64-v3")))
CHUNK_FN(chunk_avx512, V4, tile16, 8, 2)
CHUNK_FN(chunk_avx512_koff, V4, tile16_koff, 8, 2)
CHUNK_FN(chunk_avx512_ind, V4, tile16_ind, 8, 2)
CHUNK_FN(chunk_avx2, V3, tile8, 6, 1)
CHUNK_FN(chunk_avx2_koff, V3, tile8_koff, 6, 1)
CHUNK_FN(chunk_avx2_ind, V3, tile8_ind, 6, 1)
#endif
TILE(tile4, v4, 4)
CHUNK_FN(chunk_base, , tile4, 2, 1)
CHUNK_FN(chunk_base_koff, , tile4_koff, 2, 1)
CHUNK_FN(chunk_base_ind, , tile4_ind, 2, 1)

typedef struct {
    chunk_fn fn, fn_koff, fn_ind;   /* panel rows k * ldb apart, or at koff; x indirect */
    int64_t mr;
} chunk_kind;

/* The widest this CPU runs, or (isa) the named one if it runs it. */
static bool find_chunk(const char *isa, chunk_kind *k)
{
    bool any = !isa;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_cpu_init();
    if ((any || !strcmp(isa, "avx512")) && __builtin_cpu_supports("x86-64-v4")) {
        *k = (chunk_kind){chunk_avx512, chunk_avx512_koff, chunk_avx512_ind, 8};
        return true;
    }
    if ((any || !strcmp(isa, "avx2")) && __builtin_cpu_supports("x86-64-v3")) {
        *k = (chunk_kind){chunk_avx2, chunk_avx2_koff, chunk_avx2_ind, 6};
        return true;
    }
#endif
    if (any || !strcmp(isa, "base")) {
        *k = (chunk_kind){chunk_base, chunk_base_koff, chunk_base_ind, 2};
        return true;
    }
    return false;
}

static chunk_kind kind;

/* chosen once, before any caller (a test may then pick another) */
__attribute__((constructor)) static void pick_kind(void)
{
    find_chunk(NULL, &kind);
}

bool tgk_gemm_packed_isa(const char *isa)
{
    chunk_kind k;
    if (!find_chunk(isa, &k))
        return false;
    kind = k;
    return true;
}

/* y[i] += r[i]: the residual, added to a chunk while it is in cache (in the
 * tile's accumulator set-up it cost the register tile its registers: 1.6x
 * the instructions at one row) */
TGK_CLONES static void add_row(int64_t n, const float *r, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] += r[i];
}

void tgk_gemm_epilogue(float *y, int64_t ldy, const float *res, tgk_vec_fn act, int64_t r0,
                       int64_t r1, int64_t c0, int64_t c1)
{
    for (int64_t r = r0; (res || act) && r < r1; r++) {
        float *yr = y + r * ldy + c0;
        if (res)
            add_row(c1 - c0, res + r * ldy + c0, yr);
        if (act)
            act(c1 - c0, yr, yr);
    }
}

static void epilogue(const pgemm_job *j, int64_t r0, int64_t r1, int64_t c0, int64_t c1)
{
    tgk_gemm_epilogue(j->y, j->ldy, NULL, j->act, r0, r1, c0, c1);   /* res: in the tile */
}

/* Panel chunks vary fastest: a thread's run of tasks keeps one chunk of rows
 * in cache and sweeps the weight, which stays in L2 (tinygpt's largest is
 * 256 KiB), instead of streaming all of x once per chunk of panels (M = 4096:
 * 1.1-1.5x faster). */
void tgk_gemm_task(int64_t t, int64_t M, int64_t N, int64_t row_chunk, int64_t panel_chunk,
                   int64_t b[4])
{
    int64_t panels = (N + TGK_PANEL - 1) / TGK_PANEL;
    int64_t pchunks = (panels + panel_chunk - 1) / panel_chunk;
    b[0] = t / pchunks * row_chunk;
    b[1] = b[0] + row_chunk < M ? b[0] + row_chunk : M;
    b[2] = t % pchunks * panel_chunk;
    b[3] = b[2] + panel_chunk < panels ? b[2] + panel_chunk : panels;
}

static void run_chunks(void *ctx, int64_t begin, int64_t end)
{
    const pgemm_job *j = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t b[4];
        tgk_gemm_task(t, j->M, j->N, j->row_chunk, j->panel_chunk, b);
        j->fn(j, b[0], b[1], b[2], b[3]);
        epilogue(j, b[0], b[1], b[2] * TGK_PANEL,
                 b[3] * TGK_PANEL < j->N ? b[3] * TGK_PANEL : j->N);
    }
}

int64_t tgk_packed_size(int64_t N, int64_t K)
{
    return (N + TGK_PANEL - 1) / TGK_PANEL * K * TGK_PANEL;
}

/* dst[c * ldd + k] = src[k * lds + c] for c, k < 8: three rounds of
 * two-vector shuffles (the one-byte constant shuffles of AVX) */
INLINE void transpose8(const float *src, int64_t lds, float *dst, int64_t ldd)
{
    tgk_vf8 r[8], t[8], u[8];
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        memcpy(&r[i], src + i * lds, sizeof r[i]);
    for (int i = 0; i < 8; i += 2) {        /* pairs of rows interleaved */
        t[i] = __builtin_shuffle(r[i], r[i + 1], (tgk_vi8){0, 8, 1, 9, 4, 12, 5, 13});
        t[i + 1] = __builtin_shuffle(r[i], r[i + 1], (tgk_vi8){2, 10, 3, 11, 6, 14, 7, 15});
    }
    for (int i = 0; i < 8; i += 4)         /* columns c, c + 4 of four rows */
        for (int h = 0; h < 2; h++) {
            u[i + 2 * h] = __builtin_shuffle(t[i + h], t[i + h + 2],
                                             (tgk_vi8){0, 1, 8, 9, 4, 5, 12, 13});
            u[i + 2 * h + 1] = __builtin_shuffle(t[i + h], t[i + h + 2],
                                                 (tgk_vi8){2, 3, 10, 11, 6, 7, 14, 15});
        }
    for (int c = 0; c < 4; c++) {          /* the halves of rows 0-3 and 4-7 */
        r[c] = __builtin_shuffle(u[c], u[c + 4], (tgk_vi8){0, 1, 2, 3, 8, 9, 10, 11});
        r[c + 4] = __builtin_shuffle(u[c], u[c + 4], (tgk_vi8){4, 5, 6, 7, 12, 13, 14, 15});
    }
#pragma GCC unroll 8
    for (int i = 0; i < 8; i++)
        memcpy(dst + i * ldd, &r[i], sizeof r[i]);
}

/* element (n, k) of the operand at src[n * sn + k * sk], sn or sk 1; columns
 * past N are zeros. Attention packs a K and a V tile per query block, as
 * many copies as a quarter of its multiply-adds: a panel row contiguous in
 * src (sn == 1) is one copy, and a whole panel of rows contiguous in k
 * (sk == 1, a weight or attention's K) goes in 8 x 8 transposes. */
TGK_CLONES static void pack(const float *src, int64_t sn, int64_t sk, int64_t N, int64_t K,
                            float *packed)
{
    for (int64_t n0 = 0; n0 < N; n0 += TGK_PANEL, packed += K * TGK_PANEL) {
        int64_t w = N - n0 < TGK_PANEL ? N - n0 : TGK_PANEL, k0 = 0;
        const float *s = src + n0 * sn;
        if (w < TGK_PANEL)
            memset(packed, 0, sizeof *packed * (size_t)(K * TGK_PANEL));
        if (sn == 1) {
            for (int64_t k = 0; k < K; k++)
                if (w == TGK_PANEL)
                    memcpy(packed + k * TGK_PANEL, s + k * sk, sizeof *packed * TGK_PANEL);
                else
                    memcpy(packed + k * TGK_PANEL, s + k * sk, sizeof *packed * (size_t)w);
            continue;
        }
        if (w == TGK_PANEL)
            for (; k0 + 8 <= K; k0 += 8)
                for (int64_t c = 0; c < TGK_PANEL; c += 8)
                    transpose8(s + c * sn + k0, sn, packed + k0 * TGK_PANEL + c, TGK_PANEL);
        for (int64_t c = 0; c < w; c++)
            for (int64_t k = k0; k < K; k++)
                packed[k * TGK_PANEL + c] = s[c * sn + k * sk];
    }
}

void tgk_pack_weight_f32(const float *w, int64_t ldw, int64_t N, int64_t K, float *packed)
{
    pack(w, ldw, 1, N, K, packed);
}

void tgk_pack_kn_f32(const float *b, int64_t ldb, int64_t K, int64_t N, float *packed)
{
    pack(b, 1, ldb, N, K, packed);
}

static void gemm_packed(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                        const float *wp, const float *b, bool accumulate, float *y, int64_t ldy,
                        int64_t y_diag, int64_t x_diag, const float *res, tgk_vec_fn act)
{
    if (M <= 0 || N <= 0)
        return;
    /* chunks of 4 panels (64 columns) x at most 8 register tiles of rows, as
     * even as they go in whole tiles, so only the matrix's last tile is partial */
    int64_t tiles = (M + kind.mr - 1) / kind.mr, row_chunks = (tiles + 7) / 8;
    int64_t panels = (N + TGK_PANEL - 1) / TGK_PANEL;
    int reg = act_in_registers(act, NULL);  /* on the registers, not a pass after */
    pgemm_job j = {.M = M, .N = N, .K = K, .ldx = ldx, .ldy = ldy, .x = x, .wp = wp, .b = b,
                   .accumulate = accumulate, .y = y, .y_diag = y_diag, .x_diag = x_diag,
                   .res = res, .act = reg != ACT_CALL ? NULL : act,
                   .row_chunk = (tiles + row_chunks - 1) / row_chunks * kind.mr,
                   .panel_chunk = 4, .fn = kind.fn, .pstride = K * TGK_PANEL, .ldb = TGK_PANEL,
                   .act_reg = reg};
    int64_t tasks = row_chunks * ((panels + j.panel_chunk - 1) / j.panel_chunk);
    double per_task = (double)M * (double)N * (double)K / (double)tasks;
    tgk_parallel_for(tasks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1, run_chunks, &j);
}

void tgk_gemm_packed_f32(int64_t M, int64_t N, int64_t K, const float *x, int64_t ldx,
                         const float *wp, const float *b, bool accumulate, float *y, int64_t ldy,
                         int64_t y_diag, int64_t x_diag)
{
    gemm_packed(M, N, K, x, ldx, wp, b, accumulate, y, ldy, y_diag, x_diag, NULL, NULL);
}

void tgk_linear_packed_f32(const float *x, const float *wp, const float *b, float *y,
                           int64_t M, int64_t N, int64_t K)
{
    gemm_packed(M, N, K, x, K, wp, b, false, y, N, TGK_NO_DIAG, TGK_NO_DIAG, NULL, NULL);
}

void tgk_linear_packed_ex_f32(const float *x, const float *wp, const float *b, const float *res,
                              float *y, int64_t M, int64_t N, int64_t K, tgk_vec_fn act)
{
    gemm_packed(M, N, K, x, K, wp, b, false, y, N, TGK_NO_DIAG, TGK_NO_DIAG, res, act);
}

/* ---- tgk_igemm_f32: x's rows through a table of pointers ----------------------
 * The packed GEMM's tasks (chunks of rows x 4 panels), each group's after
 * the one before; a task builds its tiles' tables in its own scratch. */
typedef struct {
    pgemm_job j;                /* group 0's */
    int64_t tasks;              /* a group's */
    atomic_bool failed;
} igemm_job;

static void igemm_tasks(void *ctx, int64_t begin, int64_t end)
{
    igemm_job *ij = ctx;
    const tgk_igemm *g = ij->j.ig;
    const float **tab = malloc(sizeof *tab * (size_t)(g->taps * TGK_IGEMM_ROWS));
    if (!tab) {
        atomic_store(&ij->failed, true);
        return;
    }
    for (int64_t t = begin; t < end; t++) {
        int64_t grp = t / ij->tasks, b[4];
        pgemm_job j = ij->j;
        j.xtab = tab;
        j.xoff = grp * g->C;
        j.wp += grp * (g->N / TGK_PANEL) * j.pstride;
        j.y += grp * g->N;
        j.b = j.b ? j.b + grp * g->N : NULL;
        j.res = j.res ? j.res + grp * g->N : NULL;
        tgk_gemm_task(t % ij->tasks, j.M, j.N, j.row_chunk, j.panel_chunk, b);
        j.fn(&j, b[0], b[1], b[2], b[3]);
        epilogue(&j, b[0], b[1], b[2] * TGK_PANEL,
                 b[3] * TGK_PANEL < j.N ? b[3] * TGK_PANEL : j.N);
    }
    free(tab);
}

int tgk_igemm_f32(const tgk_igemm *g)
{
    if (g->M <= 0 || g->N <= 0 || g->groups <= 0)
        return g->groups <= 0 ? -1 : 0;
    if (g->groups > 1 && g->N % TGK_PANEL)
        return -1;
    /* chunks of 4 panels x at most 8 register tiles of rows, fewer rows a
     * chunk where the threads would go idle */
    int64_t tiles = (g->M + kind.mr - 1) / kind.mr, row_chunks = (tiles + 7) / 8;
    int64_t pchunks = ((g->N + TGK_PANEL - 1) / TGK_PANEL + 3) / 4;
    int64_t want = 2 * (int64_t)tgk_num_threads();
    if (g->groups * row_chunks * pchunks < want) {
        int64_t more = (want + g->groups * pchunks - 1) / (g->groups * pchunks);
        row_chunks = more < tiles ? more : tiles;
    }
    int reg = act_in_registers(g->act, NULL);
    igemm_job ij = {
        .j = {.M = g->M, .N = g->N, .K = g->taps * g->C, .ldy = g->ldy, .wp = g->wp,
              .b = g->b, .y = g->y, .y_diag = TGK_NO_DIAG, .x_diag = TGK_NO_DIAG,
              .res = g->res, .act = reg != ACT_CALL ? NULL : g->act,
              .row_chunk = (tiles + row_chunks - 1) / row_chunks * kind.mr, .panel_chunk = 4,
              .fn = kind.fn_ind, .pstride = g->taps * g->C * TGK_PANEL, .ldb = TGK_PANEL,
              .act_reg = reg, .ldres = g->ldres, .taps = g->taps, .cin = g->C, .ig = g},
        .tasks = row_chunks * pchunks};
    atomic_init(&ij.failed, false);
    double per_task = (double)g->M * (double)g->N * (double)(g->taps * g->C) / (double)ij.tasks;
    tgk_parallel_for(g->groups * ij.tasks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1,
                     igemm_tasks, &ij);
    return atomic_load(&ij.failed) ? -1 : 0;
}

/* ---- tgk_conv_gemm_f32: a convolution's GEMM over its pixels --------------------
 * Per image (and group), y[M, P] = w[M, K] cols[K, P] + b: the weight is the
 * register tile's rows (one broadcast a row of cols) and the pixels its
 * panels, so y comes out in the image's layout, the bias starts the
 * accumulators (no pass filling y) and the epilogue runs on each chunk while
 * it is in cache. A task, (image, chunk of output channels, chunk of
 * pixels), first has its pixels' panels of cols packed, unless the task
 * before it on its thread packed the same (c->cols: a 1x1
 * convolution's pixels as they are, or im2col's columns written straight
 * into panels, never the whole column matrix). Read in place, a 1x1's panel
 * rows would be a plane apart, and with planes of a power of two bytes (64x64
 * and 32x32 maps) all fall in one L1 set (16 -> 64 channels at 64x64, 8
 * images: 2-3x slower in place). */
typedef struct {
    pgemm_job j;                /* image 0's; x: group 0's weight */
    const tgk_conv_gemm *c;
    int64_t n, P;               /* GEMMs and pixels of each: c's, or merged 1 and n * P */
    int64_t panels;             /* of an image's pixels, the last maybe partial */
    int64_t rchunks, pchunks;
    float *packed;              /* every (image, pixel chunk) packed up front, or NULL */
    atomic_bool failed;
} conv_gemm_job;

/* the panels of (image, pixel chunk) u, packed or to pack */
static float *chunk_panels(const conv_gemm_job *cj, int64_t u)
{
    return cj->packed + u * cj->c->K * cj->j.panel_chunk * TGK_PANEL;
}

static void pixel_range(const conv_gemm_job *cj, int64_t pchunk, int64_t *c0, int64_t *c1)
{
    int64_t p0 = pchunk * cj->j.panel_chunk;
    int64_t p1 = p0 + cj->j.panel_chunk < cj->panels ? p0 + cj->j.panel_chunk : cj->panels;
    *c0 = p0 * TGK_PANEL;
    *c1 = p1 * TGK_PANEL < cj->P ? p1 * TGK_PANEL : cj->P;
}

static void pack_chunks(void *ctx, int64_t begin, int64_t end)
{
    const conv_gemm_job *cj = ctx;
    for (int64_t u = begin; u < end; u++) {
        int64_t c0, c1;
        pixel_range(cj, u % cj->pchunks, &c0, &c1);
        cj->c->cols(cj->c->ctx, u / cj->pchunks, c0, c1, chunk_panels(cj, u));
    }
}

/* where GEMM i's y starts, its output channels pout pixels long */
static int64_t y_offset(const tgk_conv_gemm *c, int64_t i, int64_t pout)
{
    if (!c->y_stride)
        return i * c->M * pout;
    return i / c->groups * c->y_stride + i % c->groups * c->M * pout;
}

/* dst[r * ldd + i] = src[r * lds + i] for r < rows, i < n: a grid row's
 * pixels for every output channel, inline (at 8x8 maps a memcpy call for
 * each 32 bytes) */
TGK_CLONES TGK_NO_CALL_IDIOMS static void copy_rows(int64_t n, int64_t rows, const float *restrict src, int64_t lds,
                                 float *restrict dst, int64_t ldd)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t i = 0; i < n; i++)
            dst[r * ldd + i] = src[r * lds + i];
}

/* The implicit im2col's grid pixels [c0, c1) of GEMM i, rows [r0, r1),
 * computed into tmp (rows ldt apart, from row r0): those of y (the first ow
 * of each grid row) copied to y, then the epilogue (act: c's, or NULL where the
 * tile applied it) on them in cache. */
static void scatter_rows(const tgk_conv_gemm *c, tgk_vec_fn act, int64_t i, int64_t r0,
                         int64_t r1, int64_t c0, int64_t c1, const float *tmp, int64_t ldt)
{
    int64_t pout = c->P / c->wp * c->ow;
    float *y = c->y + y_offset(c, i, pout);
    const float *res = c->res ? c->res + i * c->M * pout : NULL;
    for (int64_t q = c0; q < c1;) {
        int64_t row = q / c->wp, col = q % c->wp;
        int64_t end = (row + 1) * c->wp < c1 ? (row + 1) * c->wp : c1;
        int64_t n = col >= c->ow ? 0 : end - q < c->ow - col ? end - q : c->ow - col;
        int64_t at = row * c->ow + col;
        if (n > 0)
            copy_rows(n, r1 - r0, tmp + q - c0, ldt, y + r0 * pout + at, pout);
        if (n > 0)
            tgk_gemm_epilogue(y + at, pout, res ? res + at : NULL, act, r0, r1, 0, n);
        q = end;
    }
}

/* Merged images' pixels [c0, c1) of rows [r0, r1), computed into tmp (rows
 * ldt apart, from row r0): each image's run of them copied to its y, then
 * the epilogue (res, act: c's, or NULL where the tile applied it) in cache. */
static void scatter_images(const tgk_conv_gemm *c, tgk_vec_fn act, int64_t r0, int64_t r1,
                           int64_t c0, int64_t c1, const float *tmp, int64_t ldt)
{
    for (int64_t q = c0; q < c1;) {
        int64_t p = q % c->P, n = c1 - q < c->P - p ? c1 - q : c->P - p;
        float *y = c->y + y_offset(c, q / c->P, c->P) + p;
        const float *res = c->res ? c->res + q / c->P * c->M * c->P + p : NULL;
        copy_rows(n, r1 - r0, tmp + q - c0, ldt, y + r0 * c->P, c->P);
        tgk_gemm_epilogue(y, c->P, res, act, r0, r1, 0, n);
        q += n;
    }
}

/* rows [r0, r1) of j's tile over np panels into out (rows ldo apart, from
 * row r0): the implicit and merged paths, which scatter them after */
static void rows_into(pgemm_job *j, int64_t r0, int64_t r1, int64_t np, float *out, int64_t ldo)
{
    j->x += r0 * j->ldx;
    j->b = j->b ? j->b + r0 : NULL;
    j->y = out;
    j->ldy = ldo;
    j->fn(j, 0, r1 - r0, 0, np);
}

static void conv_gemm_tasks(void *ctx, int64_t begin, int64_t end)
{
    conv_gemm_job *cj = ctx;
    const tgk_conv_gemm *c = cj->c;
    int64_t P = cj->P, K = c->K, chunk = cj->j.panel_chunk * TGK_PANEL;
    /* scratch: the task's packed panels, and (implicit, merged) its rows of y */
    int64_t npack = c->cols && !cj->packed ? K * chunk : 0;
    int64_t need = npack + (!c->cols || c->merged ? cj->j.row_chunk * chunk : 0);
    float *buf = need ? malloc((size_t)need * sizeof *buf) : NULL, *out = buf + npack;
    if (need && !buf) {
        atomic_store(&cj->failed, true);
        return;
    }
    /* packing as it goes, chunks of rows vary fastest: a pixel chunk is
     * packed once for all of them, not once a chunk of rows (a 1x1 of 960
     * outputs packed its pixels 15 times; MobileNetV3-large's expansions
     * 2-15) */
    bool rows_inner = c->cols && !cj->packed;
    int64_t last = -1;      /* the (image, pixel chunk) in buf */
    for (int64_t t = begin; t < end; t++) {
        int64_t img = t / (cj->rchunks * cj->pchunks);
        int64_t rc = rows_inner ? t % cj->rchunks : t / cj->pchunks % cj->rchunks;
        int64_t pchunk = rows_inner ? t / cj->rchunks % cj->pchunks : t % cj->pchunks;
        int64_t grp = img % c->groups, r0 = rc * cj->j.row_chunk;
        int64_t r1 = r0 + cj->j.row_chunk < c->M ? r0 + cj->j.row_chunk : c->M, c0, c1;
        pixel_range(cj, pchunk, &c0, &c1);
        pgemm_job j = cj->j;
        j.x += grp * c->M * K;
        j.b = j.b ? j.b + grp * c->M : NULL;
        j.N = c1 - c0;
        int64_t np = (c1 - c0 + TGK_PANEL - 1) / TGK_PANEL;
        if (!c->cols) {
            j.wp = c->src + img * c->src_stride + c0;
            rows_into(&j, r0, r1, np, out, chunk);
            scatter_rows(c, j.act, img, r0, r1, c0, c1, out, chunk);
            continue;
        }
        if (!cj->packed && img * cj->pchunks + pchunk != last)
            c->cols(c->ctx, img, c0, c1, buf);
        last = img * cj->pchunks + pchunk;
        j.wp = cj->packed ? chunk_panels(cj, img * cj->pchunks + pchunk) : buf;
        if (c->merged) {
            rows_into(&j, r0, r1, np, out, chunk);
            scatter_images(c, j.act, r0, r1, c0, c1, out, chunk);
            continue;
        }
        j.y += y_offset(c, img, P) + c0;
        j.res = j.res ? j.res + img * c->M * P + c0 : NULL;
        j.fn(&j, r0, r1, 0, np);
        epilogue(&j, r0, r1, 0, c1 - c0);
    }
    free(buf);
}

int tgk_conv_gemm_f32(const tgk_conv_gemm *c)
{
    if (c->n <= 0 || c->M <= 0 || c->P <= 0 || (c->merged && (c->groups != 1 || !c->cols)))
        return c->n <= 0 || c->M <= 0 || c->P <= 0 ? 0 : -1;
    /* merged: one GEMM over every image's pixels, y and res written per image */
    int64_t n = c->merged ? 1 : c->n, P = c->merged ? c->n * c->P : c->P;
    bool res_in_tile = c->cols && !c->merged;
    int64_t tiles = (c->M + kind.mr - 1) / kind.mr, row_chunks = (tiles + 7) / 8;
    conv_gemm_job cj = {
        .j = {.M = c->M, .N = P, .K = c->K, .ldx = c->K, .ldy = P, .x = c->w, .b = c->b,
              .bias_rows = true, .y = c->y, .y_diag = TGK_NO_DIAG, .x_diag = TGK_NO_DIAG,
              .res = res_in_tile ? c->res : NULL, .act = c->act, .panel_chunk = 4,
              .fn = c->cols ? kind.fn : kind.fn_koff,
              .pstride = c->cols ? c->K * TGK_PANEL : TGK_PANEL, .ldb = TGK_PANEL,
              .koff = c->koff},
        .c = c, .n = n, .P = P, .panels = (P + TGK_PANEL - 1) / TGK_PANEL};
    /* on the registers, not a pass after (the implicit and merged paths add
     * the residual as they scatter, after the tile) */
    cj.j.act_reg = act_in_registers(c->act, res_in_tile ? NULL : c->res);
    if (cj.j.act_reg != ACT_CALL)
        cj.j.act = NULL;
    cj.pchunks = (cj.panels + cj.j.panel_chunk - 1) / cj.j.panel_chunk;
    if (c->whole_rows || !c->cols) {
        /* to keep the threads busy, first fewer pixels a task, then fewer
         * rows a task (implicit: nothing to pack, so rows split freely) */
        int64_t want = 2 * (int64_t)tgk_num_threads();
        while (n * cj.pchunks < want && cj.j.panel_chunk > 1) {
            cj.j.panel_chunk /= 2;
            cj.pchunks = (cj.panels + cj.j.panel_chunk - 1) / cj.j.panel_chunk;
        }
        int64_t have = n * cj.pchunks;
        if (c->whole_rows) {
            row_chunks = have >= want ? 1 : (want + have - 1) / have;
            row_chunks = row_chunks < tiles ? row_chunks : tiles;
        } else if (have < want) {
            int64_t more = (want + have - 1) / have;
            row_chunks = more > row_chunks ? (more < tiles ? more : tiles) : row_chunks;
        }
        /* whole rows split: the few chunks of pixels are packed once, up
         * front, not by every task (a ViT's patches at 64x64: 16 pixels of
         * 768 rows, packed by 4 tasks, cost more than the products) */
        if (c->cols && row_chunks > 1 &&
            !(cj.packed = malloc((size_t)(have * c->K * cj.j.panel_chunk * TGK_PANEL) *
                                 sizeof *cj.packed)))
            return -1;
    }
    cj.j.row_chunk = (tiles + row_chunks - 1) / row_chunks * kind.mr;
    cj.rchunks = (c->M + cj.j.row_chunk - 1) / cj.j.row_chunk;
    atomic_init(&cj.failed, false);
    if (cj.packed)
        tgk_parallel_for(n * cj.pchunks, 1, pack_chunks, &cj);
    int64_t tasks = n * cj.rchunks * cj.pchunks;
    double per_task = (double)n * (double)c->M * (double)P * (double)c->K / (double)tasks;
    tgk_parallel_for(tasks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1, conv_gemm_tasks, &cj);
    free(cj.packed);
    return atomic_load(&cj.failed) ? -1 : 0;
}

/* a 1x1 convolution's cols: the image's own pixels */
typedef struct {
    const float *x;
    int64_t C, P;
} pointwise_cols;

static void pack_pointwise(const void *ctx, int64_t img, int64_t p0, int64_t p1, float *buf)
{
    const pointwise_cols *pc = ctx;
    pack(pc->x + img * pc->C * pc->P + p0, 1, pc->P, p1 - p0, pc->C, buf);
}

/* the merged images' pixels [q0, q1): a panel inside one image a copy of
 * whole panel rows, one across images its runs element by element */
TGK_CLONES static void pack_merged(const void *ctx, int64_t img, int64_t q0, int64_t q1,
                                   float *buf)
{
    const pointwise_cols *pc = ctx;
    (void)img;
    for (int64_t p0 = q0; p0 < q1; p0 += TGK_PANEL, buf += pc->C * TGK_PANEL) {
        int64_t p1 = q1 - p0 < TGK_PANEL ? q1 : p0 + TGK_PANEL;
        if (p0 / pc->P == (p1 - 1) / pc->P) {
            pack(pc->x + p0 / pc->P * pc->C * pc->P + p0 % pc->P, 1, pc->P, p1 - p0, pc->C, buf);
            continue;
        }
        memset(buf, 0, sizeof *buf * (size_t)(pc->C * TGK_PANEL));
        for (int64_t q = p0; q < p1;) {
            int64_t p = q % pc->P, n = p1 - q < pc->P - p ? p1 - q : pc->P - p;
            const float *s = pc->x + q / pc->P * pc->C * pc->P + p;
            for (int64_t k = 0; k < pc->C; k++)
                for (int64_t c = 0; c < n; c++)
                    buf[k * TGK_PANEL + q - p0 + c] = s[k * pc->P + c];
            q += n;
        }
    }
}

/* Whether n images of P pixels go as one GEMM over all their pixels: where
 * each image's last register tile (2 panels, 32 pixels) would leave more
 * than a tenth more lanes idle than the merged run's (7x7 maps: 49 pixels
 * in 64 lanes, 392 of 8 images in 416). */
static bool merge_images(int64_t n, int64_t P)
{
    int64_t w = 2 * TGK_PANEL;
    return n > 1 && 10 * n * ((P + w - 1) / w) > 11 * ((n * P + w - 1) / w);
}

int tgk_pointwise_f32(int64_t n, int64_t C, int64_t K, int64_t P, const float *x,
                      const float *w, const float *b, const float *res, float *y,
                      int64_t y_stride, tgk_vec_fn act)
{
    pointwise_cols pc = {x, C, P};
    bool merged = merge_images(n, P);
    tgk_conv_gemm c = {.n = n, .groups = 1, .M = K, .K = C, .P = P, .w = w, .b = b,
                       .res = res, .y = y, .y_stride = y_stride, .act = act,
                       .cols = merged ? pack_merged : pack_pointwise, .ctx = &pc,
                       .merged = merged};
    return tgk_conv_gemm_f32(&c);
}

/* ---- tgk_gemm_f32: any two operands, op(B) packed as it goes ------------------
 * A task is a chunk of rows x a block of GB_PANELS panels of columns. It packs
 * op(B) GB_K rows at a time into a buffer on its stack (32 KiB: in L1 while
 * the register tiles sweep the chunk's rows) and accumulates into C, so
 * nothing is allocated and a call never fails. A transposed A is copied into
 * rows GB_AROWS at a time, as the register tiles read rows of x. Rows are
 * split only when there are too few column blocks to keep the threads busy:
 * each row chunk packs the block again. A few rows go without packing
 * (gemv_tasks). */
#define GB_K 128
#define GB_PANELS 4
#define GB_AROWS 32

typedef struct {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    const float *A, *B;
    float *C;
    int64_t row_chunk, col_blocks;
} gemm_job;

TGK_CLONES static void scale_rows(int64_t rows, int64_t n, float s, float *y, int64_t ldy)
{
    for (int64_t r = 0; r < rows; r++)
        for (int64_t c = 0; c < n; c++)
            y[r * ldy + c] *= s;
}

/* at[r * kb + k] = A[(k0 + k) * lda + r0 + r]: rows [r0, r0 + rows) of op(A) = A^T */
static void copy_at(const gemm_job *g, int64_t r0, int64_t rows, int64_t k0, int64_t kb,
                    float *at)
{
    for (int64_t k = 0; k < kb; k++)
        for (int64_t r = 0; r < rows; r++)
            at[r * kb + k] = g->A[(k0 + k) * g->lda + r0 + r];
}

static void gemm_tasks(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *g = ctx;
    float bp[GB_K * GB_PANELS * TGK_PANEL] __attribute__((aligned(64)));
    float at[GB_AROWS * GB_K] __attribute__((aligned(64)));
    for (int64_t t = begin; t < end; t++) {
        int64_t r0 = t / g->col_blocks * g->row_chunk;
        int64_t n0 = t % g->col_blocks * GB_PANELS * TGK_PANEL;
        int64_t rows = g->M - r0 < g->row_chunk ? g->M - r0 : g->row_chunk;
        int64_t cols = g->N - n0 < GB_PANELS * TGK_PANEL ? g->N - n0 : GB_PANELS * TGK_PANEL;
        int64_t panels = (cols + TGK_PANEL - 1) / TGK_PANEL;
        float *y = g->C + r0 * g->ldc + n0;
        if (g->beta != 0.0f && g->beta != 1.0f)
            scale_rows(rows, cols, g->beta, y, g->ldc);
        for (int64_t k0 = 0; k0 < g->K; k0 += GB_K) {
            int64_t kb = g->K - k0 < GB_K ? g->K - k0 : GB_K;
            /* element (k, n) of op(B) is B[k * ldb + n], or B[n * ldb + k] */
            if (g->tb)
                pack(g->B + n0 * g->ldb + k0, g->ldb, 1, cols, kb, bp);
            else
                pack(g->B + k0 * g->ldb + n0, 1, g->ldb, cols, kb, bp);
            if (g->alpha != 1.0f)
                scale_rows(1, panels * kb * TGK_PANEL, g->alpha, bp, 0);
            pgemm_job j = {.N = cols, .K = kb, .ldy = g->ldc, .wp = bp,
                           .accumulate = k0 > 0 || g->beta != 0.0f, .y_diag = TGK_NO_DIAG,
                           .x_diag = TGK_NO_DIAG, .pstride = kb * TGK_PANEL,
                           .ldb = TGK_PANEL};
            if (!g->ta) {
                j.M = rows, j.x = g->A + r0 * g->lda + k0, j.ldx = g->lda, j.y = y;
                kind.fn(&j, 0, rows, 0, panels);
                continue;
            }
            for (int64_t r = 0; r < rows; r += GB_AROWS) {
                int64_t n = rows - r < GB_AROWS ? rows - r : GB_AROWS;
                copy_at(g, r0 + r, n, k0, kb, at);
                j.M = n, j.x = at, j.ldx = kb, j.y = y + r * g->ldc;
                kind.fn(&j, 0, n, 0, panels);
            }
        }
    }
}

/* A few rows of A (up to GEMV_ROWS): packing op(B) would cost as much as the
 * products, so op(B) is read in place, a dot product per element of C (B
 * transposed: rows of B are columns of op(B)) or a sum of rows of B per row
 * of C. A task is a block of GB_PANELS panels' columns. */
#define GEMV_ROWS 4

TGK_CLONES static float dot(const float *a, const float *b, int64_t n)
{
    tgk_vf8 acc[2] = {{0}, {0}};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16)
        for (int h = 0; h < 2; h++) {
            tgk_vf8 x, y;
            memcpy(&x, a + i + 8 * h, sizeof x);
            memcpy(&y, b + i + 8 * h, sizeof y);
            acc[h] += x * y;
        }
    float s = 0.0f;
    for (; i < n; i++)
        s += a[i] * b[i];
    acc[0] += acc[1];
    return s + tgk_hsum8(&acc[0]);
}

/* y[0, n) = beta y (0: not read) + alpha sum_k a[k] B[k * ldb, + n) */
TGK_CLONES static void rows_sum(const float *a, const float *B, int64_t ldb, int64_t K,
                                int64_t n, float alpha, float beta, float *y)
{
    for (int64_t c = 0; c < n; c++)
        y[c] = beta == 0.0f ? 0.0f : beta * y[c];
    for (int64_t k = 0; k < K; k++) {
        float f = alpha * a[k];
        for (int64_t c = 0; c < n; c++)
            y[c] += f * B[k * ldb + c];
    }
}

static void gemv_tasks(void *ctx, int64_t begin, int64_t end)
{
    const gemm_job *g = ctx;
    for (int64_t t = begin; t < end; t++) {
        int64_t n0 = t * GB_PANELS * TGK_PANEL;
        int64_t cols = g->N - n0 < GB_PANELS * TGK_PANEL ? g->N - n0 : GB_PANELS * TGK_PANEL;
        for (int64_t i = 0; i < g->M; i++) {
            const float *a = g->A + i * g->lda;
            float *y = g->C + i * g->ldc + n0;
            if (!g->tb) {
                rows_sum(a, g->B + n0, g->ldb, g->K, cols, g->alpha, g->beta, y);
                continue;
            }
            for (int64_t c = 0; c < cols; c++) {
                float s = g->alpha * dot(a, g->B + (n0 + c) * g->ldb, g->K);
                y[c] = g->beta == 0.0f ? s : s + g->beta * y[c];
            }
        }
    }
}

void tgk_gemm_f32(bool trans_a, bool trans_b, int64_t M, int64_t N, int64_t K,
                  float alpha, const float *A, int64_t lda, const float *B, int64_t ldb,
                  float beta, float *C, int64_t ldc)
{
    if (M <= 0 || N <= 0)
        return;
    if (K <= 0) {   /* C = beta C, without reading C when beta is 0 */
        for (int64_t i = 0; i < M; i++)
            for (int64_t c = 0; c < N; c++)
                C[i * ldc + c] = beta == 0.0f ? 0.0f : beta * C[i * ldc + c];
        return;
    }
    gemm_job g = {trans_a, trans_b, M, N, K, lda, ldb, ldc, alpha, beta, A, B, C, M,
                  (N + GB_PANELS * TGK_PANEL - 1) / (GB_PANELS * TGK_PANEL)};
    if (M <= GEMV_ROWS && !trans_a) {
        double per_task = (double)M * (double)K * GB_PANELS * TGK_PANEL;
        tgk_parallel_for(g.col_blocks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1, gemv_tasks, &g);
        return;
    }
    int64_t want = 4 * (int64_t)tgk_num_threads();
    if (g.col_blocks < want && !tgk_in_task()) {
        int64_t chunks = (want + g.col_blocks - 1) / g.col_blocks;
        int64_t tiles = (M + kind.mr - 1) / kind.mr;
        g.row_chunk = (tiles + chunks - 1) / chunks * kind.mr;
    }
    int64_t tasks = (M + g.row_chunk - 1) / g.row_chunk * g.col_blocks;
    double per_task = (double)M * (double)N * (double)K / (double)tasks;
    tgk_parallel_for(tasks, (int64_t)(TGK_TASK_MIN_MACS / per_task) + 1, gemm_tasks, &g);
}
