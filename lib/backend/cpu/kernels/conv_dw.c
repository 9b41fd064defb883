/* Depthwise convolution (groups == c, k a multiple of c), one output plane
 * (image, channel) at a time, 1-3 spatial dims run as 3-D.
 *
 * The plane's input is first copied zero-padded and split by stride phase:
 * with strides s, phase (pd, ph, pw) holds the padded input at
 * (d s0 + pd, h s1 + ph, w s2 + pw) for d, h, w < Q, the output's size plus
 * the kernel's reach in phase units. A tap (kd, kh, kw) then reads one phase
 * at a fixed offset from the output position. The output is computed on the
 * phases' own pitch (rows Q2 floats apart, depth slices Q1 rows apart): a
 * contiguous run of flat positions in which every tap is a vector load at a
 * constant offset and an FMA into a register, whatever the stride, dilation
 * or padding. Small planes (8x8, 4x4) fill vectors across rows instead of
 * leaving most lanes of a row-at-a-time loop empty, and nothing is stored
 * until every tap is summed. The positions past the output's width and
 * height are computed and dropped when the rows are copied out: with a 3x3
 * kernel on 8x8, 80 positions for 64 outputs.
 *
 * Stride 1 with the output's rows as long as the input's (the "same"
 * padding of MobileNet's and EfficientNet's stride-1 layers), 2-D or 1-D,
 * on AVX-512: the plane is read in place, with no copy. Output position j
 * (row j / W, column j % W) sums tap t at input j + off[t], one offset a tap
 * for every position since the rows have one pitch; a lane whose tap falls
 * in the padding (above, below, or past either end of its row, where
 * j + off[t] is a neighbouring row's pixel) is masked off the load, a
 * 16-bit mask a (vector, tap) worked out once a call (dw_masks). Vectors no
 * tap masks load without. The sums go straight to y, the plane's last
 * vector stored masked. Where the rows are whole vectors (width a multiple
 * of 16, 32 and up, or 16 with a 5-wide kernel) the taps across a row are
 * instead lane shifts of the row's vectors (dw_rw_run: one load a vector
 * and kernel row, no mask, no load across a cache line; 64x64 and 32x32
 * 3x3 layers 1.3-1.65x). Copying into phases and out again had cost more
 * than the products (MobileNetV3-large at batch 8: dw_phases 15.4% of the
 * samples, the sums 9.6%). Other strides and shapes, and the other
 * instruction sets, keep the phases; on AVX-512 stride 2's column phases are
 * split from each input row in one pass (dw_split2) and the rows copied out
 * with masked vectors (dw_copy_rows), not a memcpy call a row.
 *
 * Small planes on AVX-512 (stride 2 and more up to 32x32 inputs, stride 1
 * up to 4x4 outputs: dw_blocked_setup) are channel-blocked instead: 16
 * channels of an image transposed into one padded block of 16-float pixels,
 * every tap a whole-vector load and FMA (no mask, no phase), the output
 * pixels transposed back (dw_blocks). MobileNetV3's 8x8 -> 4x4 5x5 stride 2
 * had spent 6x its products' time on its 5376 planes' phases and copies.
 *
 * An activation or residual after the convolution is applied to each plane
 * as it is finished, while it is in cache, not in a pass after; in place,
 * hardswish (without a residual) to the sums in registers.
 *
 * The earlier kernel (a row of one tap at a time, with its valid range
 * worked out per row and tap, read-modify-write of the output per tap) ran
 * MobileNetV3's 8x8 and 4x4 layers at 1-2 GFLOP/s. */
#include "backend/cpu/kernels/conv_geom.h"
#include "backend/cpu/kernels/kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#include <immintrin.h>
#define DW_INPLACE 1
#endif

/* Vectors a step of the main loop: independent FMA chains enough to cover
 * the FMA latency (4 cycles on Zen 4 and Skylake). */
#define DW_NV 4

typedef struct {
    const tgk_conv_desc *d;
    const tgk_conv_geom *g;
    const float *x, *w, *b;
    float *y;
    int64_t q[3];               /* phase sizes (depth, rows, columns) */
    int64_t nph[3];             /* phases a dim: those the taps reach */
    int64_t phase_sz, len;      /* floats a phase; flat positions computed (whole vectors) */
    int64_t buf_sz;             /* the phased input and a vector of slack */
    int64_t *tapoff;            /* per tap: its phase's offset + its offset in the phase */
    /* in place (stride 1, rows of one pitch): tapoff is each tap's offset in
     * the plane, nvec vectors of 16 positions, each with a mask a tap
     * (mask[v * taps + t]) and whether every mask is whole (full[v]) */
    bool inplace;
    bool rows16;                /* in place, rows of whole vectors: dw_rw_run */
    bool split2;                /* stride 2 across, both column phases: dw_split2 */
    int regact;                 /* in place or blocked, no res: act applied as stored (DW_*) */
    int64_t nvec;
    uint16_t last;              /* the lanes of the last vector that are the plane's */
    uint16_t *mask;
    bool *full;
    /* channel-blocked (dw_blocks): 16 channels a vector, the padded input
     * hp x wp pixels of 16 floats; wt per group of 16 channels, per tap, the
     * 16 channels' weights (lanes past c zero) */
    int64_t hp, wp, ngrp;
    float *wt;
    atomic_bool failed;
} dw_job;

/* the activations the in-place and blocked paths apply on their registers */
enum { DW_CALL, DW_RELU6, DW_HARDSWISH };

static inline int dw_regact(const tgk_conv_desc *d)
{
    return d->res ? DW_CALL : d->act == tgk_vec_hardswish_f32 ? DW_HARDSWISH
           : d->act == tgk_vec_relu6_f32 ? DW_RELU6 : DW_CALL;
}

typedef struct {
    int64_t vl;                 /* floats a vector */
    void (*run)(const float *in, const int64_t *off, const float *w, int64_t taps, float bias,
                bool relu, int64_t len, float *out);
    bool inplace;               /* AVX-512: the in-place path, dw_split2, dw_copy_rows */
} dw_kernel;

#define UNROLL _Pragma("GCC unroll 16")

/* NAME: out[0, len) = bias + sum_t w[t] in[off[t] + j] (then relu), len a
 * multiple of VL; DW_NV vectors a step, then what is left 2 and 1 at a time.
 * Compiled with ATTR (a target or nothing) for vectors of VL floats. */
#define DW_KERNEL(NAME, ATTR, VL)                                                           \
    typedef float NAME##_vec __attribute__((vector_size((VL) * sizeof(float))));           \
    typedef int32_t NAME##_ivec __attribute__((vector_size((VL) * sizeof(float))));        \
    ATTR static inline __attribute__((always_inline)) void NAME##_step(                     \
        const int nv, const float *in, const int64_t *off, const float *w, int64_t taps,    \
        float bias, bool relu, float *out)                                                  \
    {                                                                                       \
        NAME##_vec acc[DW_NV];                                                              \
        UNROLL for (int v = 0; v < nv; v++)                                                 \
            acc[v] = (NAME##_vec){0} + bias;                                                \
        for (int64_t t = 0; t < taps; t++) {                                                \
            const float *s = in + off[t];                                                   \
            float wt = w[t];                                                                \
            UNROLL for (int v = 0; v < nv; v++) {                                           \
                NAME##_vec xv;                                                              \
                memcpy(&xv, s + v * (VL), sizeof xv);                                       \
                acc[v] += wt * xv;                                                          \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int v = 0; v < nv; v++) {                                               \
            if (relu) /* clear the lanes < 0: NaN and -0 stay, as relu leaves them */       \
                acc[v] = (NAME##_vec)((NAME##_ivec)acc[v] & ~(NAME##_ivec)(acc[v] < 0));    \
            memcpy(out + v * (VL), &acc[v], sizeof acc[v]);                                 \
        }                                                                                   \
    }                                                                                       \
    ATTR static void NAME##_run(const float *in, const int64_t *off, const float *w,        \
                                int64_t taps, float bias, bool relu, int64_t len, float *out) \
    {                                                                                       \
        int64_t j = 0;                                                                      \
        for (; j + DW_NV * (VL) <= len; j += DW_NV * (VL))                                  \
            NAME##_step(DW_NV, in + j, off, w, taps, bias, relu, out + j);                  \
        if (j + 2 * (VL) <= len) {                                                          \
            NAME##_step(2, in + j, off, w, taps, bias, relu, out + j);                      \
            j += 2 * (VL);                                                                  \
        }                                                                                   \
        if (j < len)                                                                        \
            NAME##_step(1, in + j, off, w, taps, bias, relu, out + j);                      \
    }                                                                                       \
    static const dw_kernel NAME = {(VL), NAME##_run, (VL) == 16};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
DW_KERNEL(dw_v4, __attribute__((target("arch=x86-64-v4"))), 16)
DW_KERNEL(dw_v3, __attribute__((target("arch=x86-64-v3"))), 8)
#endif
DW_KERNEL(dw_base, , 4)

#ifdef DW_INPLACE
#define V4 __attribute__((target("arch=x86-64-v4")))

/* relu, then (act) tgk_vec_relu6_f32's or tgk_vec_hardswish_f32's operations,
 * on a vector of sums */
V4 static inline __attribute__((always_inline)) __m512 dw_act(__m512 acc, bool relu, int act)
{
    if (relu || act == DW_RELU6)    /* the lanes < 0 cleared: NaN and -0 stay */
        acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, _mm512_setzero_ps(), _CMP_LT_OQ),
                                 _mm512_setzero_ps());
    if (act == DW_RELU6)
        acc = _mm512_mask_mov_ps(acc, _mm512_cmp_ps_mask(acc, _mm512_set1_ps(6.0f), _CMP_GT_OQ),
                                 _mm512_set1_ps(6.0f));
    if (act == DW_HARDSWISH) {  /* the clamp as selects, / 6 */
        __m512 t = _mm512_add_ps(acc, _mm512_set1_ps(3.0f));
        t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, _mm512_setzero_ps(), _CMP_LT_OQ),
                               _mm512_setzero_ps());
        t = _mm512_mask_mov_ps(t, _mm512_cmp_ps_mask(t, _mm512_set1_ps(6.0f), _CMP_GT_OQ),
                               _mm512_set1_ps(6.0f));
        acc = _mm512_div_ps(_mm512_mul_ps(acc, t), _mm512_set1_ps(6.0f));
    }
    return acc;
}

/* nv vectors from vector v of a plane read in place (dw_job's in-place
 * fields): in the input plane, out the output plane; masked: each (vector,
 * tap) loaded under its mask. The plane's last vector is stored masked. */
V4 static inline __attribute__((always_inline)) void dw_ip_step(
    const int nv, const bool masked, const dw_job *j, int64_t v, const float *in,
    const float *w, float bias, bool relu, float *out)
{
    const int64_t taps = j->g->kprod, *off = j->tapoff;
    const uint16_t *m = j->mask + v * taps;
    __m512 acc[DW_NV];
    UNROLL for (int i = 0; i < nv; i++)
        acc[i] = _mm512_set1_ps(bias);
    in += v * 16;
    for (int64_t t = 0; t < taps; t++) {
        __m512 wt = _mm512_set1_ps(w[t]);
        const float *s = in + off[t];
        UNROLL for (int i = 0; i < nv; i++) {
            __m512 x = masked ? _mm512_maskz_loadu_ps(m[i * taps + t], s + 16 * i)
                              : _mm512_loadu_ps(s + 16 * i);
            acc[i] = _mm512_fmadd_ps(wt, x, acc[i]);
        }
    }
    out += v * 16;
    UNROLL for (int i = 0; i < nv; i++)
        _mm512_mask_storeu_ps(out + 16 * i, v + i == j->nvec - 1 ? j->last : 0xFFFF,
                              dw_act(acc[i], relu, j->regact));
}

/* x shifted by d lanes (x[j + d], from the vectors left and right of it) */
V4 static inline __attribute__((always_inline)) __m512 dw_shift(__m512 l, __m512 x, __m512 r,
                                                                const int d)
{
    switch (d) {
    case -2: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(x),
                                                            _mm512_castps_si512(l), 14));
    case -1: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(x),
                                                            _mm512_castps_si512(l), 15));
    case 1: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(r),
                                                           _mm512_castps_si512(x), 1));
    case 2: return _mm512_castsi512_ps(_mm512_alignr_epi32(_mm512_castps_si512(r),
                                                           _mm512_castps_si512(x), 2));
    default: return x;
    }
}

/* Rows of whole vectors (rows16): output row oh, nv vectors from vector v0
 * of the row, a kw-wide kernel padded kw / 2 across. Each kernel row's input
 * row is loaded once as whole vectors (the vectors beside the first and
 * last: the row's neighbours or, past its ends, zeros), and each tap's
 * vector is made from two of them by a lane shift: no mask, no load across
 * a cache line, one load a vector and kernel row instead of one a tap. The
 * taps and their sums in the in-place path's order. */
V4 static inline __attribute__((always_inline)) void dw_rw_step(
    const int nv, const int kw, const dw_job *j, const float *x, int64_t oh, int64_t v0,
    const float *w, float bias, bool relu, float *y)
{
    const tgk_conv_geom *g = j->g;
    const int64_t W = g->in[2], nvr = W / 16;
    __m512 acc[DW_NV], z = _mm512_setzero_ps();
    UNROLL for (int i = 0; i < nv; i++)
        acc[i] = _mm512_set1_ps(bias);
    for (int64_t kh = 0; kh < g->ker[1]; kh++) {
        int64_t ih = oh + kh - g->pad[1];
        bool in = (uint64_t)ih < (uint64_t)g->in[1];
        const float *r = x + ih * W + v0 * 16;
        __m512 row[DW_NV + 2];
        row[0] = in && v0 > 0 ? _mm512_loadu_ps(r - 16) : z;
        UNROLL for (int i = 0; i < nv; i++)
            row[i + 1] = in ? _mm512_loadu_ps(r + 16 * i) : z;
        row[nv + 1] = in && v0 + nv < nvr ? _mm512_loadu_ps(r + 16 * nv) : z;
        UNROLL for (int t = 0; t < kw; t++) {
            __m512 wt = _mm512_set1_ps(w[kh * kw + t]);
            UNROLL for (int i = 0; i < nv; i++)
                acc[i] = _mm512_fmadd_ps(wt, dw_shift(row[i], row[i + 1], row[i + 2], t - kw / 2),
                                         acc[i]);
        }
    }
    y += oh * W + v0 * 16;
    UNROLL for (int i = 0; i < nv; i++)
        _mm512_storeu_ps(y + 16 * i, dw_act(acc[i], relu, j->regact));
}

/* Stride 2 (rows16 with str 2): output vector v0 + i of row oh reads its
 * kernel row's 32 input columns from 32 (v0 + i), split into their even and
 * odd columns in registers (two permutes); tap d across is column 2 j + d:
 * the even or odd vector, shifted a lane for |d| = 2 and for d = -1. */
V4 static inline __attribute__((always_inline)) void dw_rw2_step(
    const int nv, const int kw, const dw_job *j, const float *x, int64_t oh, int64_t v0,
    const float *w, float bias, bool relu, float *y)
{
    const tgk_conv_geom *g = j->g;
    const int64_t W = g->in[2], nvr = g->out[2] / 16;
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    __m512 acc[DW_NV], z = _mm512_setzero_ps();
    UNROLL for (int i = 0; i < nv; i++)
        acc[i] = _mm512_set1_ps(bias);
    for (int64_t kh = 0; kh < g->ker[1]; kh++) {
        int64_t ih = 2 * oh + kh - g->pad[1];
        bool in = (uint64_t)ih < (uint64_t)g->in[1];
        const float *r = x + ih * W + v0 * 32;
        __m512 e[DW_NV + 2], o[DW_NV + 2];
        UNROLL for (int i = -1; i <= nv; i++) {
            bool have = in && v0 + i >= 0 && v0 + i < nvr;
            __m512 a = have ? _mm512_loadu_ps(r + 32 * i) : z;
            __m512 b = have ? _mm512_loadu_ps(r + 32 * i + 16) : z;
            e[i + 1] = _mm512_permutex2var_ps(a, ie, b);
            o[i + 1] = _mm512_permutex2var_ps(a, io, b);
        }
        UNROLL for (int t = 0; t < kw; t++) {
            const int d = t - kw / 2;
            __m512 wt = _mm512_set1_ps(w[kh * kw + t]);
            UNROLL for (int i = 0; i < nv; i++) {
                __m512 v = d % 2 ? dw_shift(o[i], o[i + 1], o[i + 2], d < 0 ? -1 : 0)
                                 : dw_shift(e[i], e[i + 1], e[i + 2], d / 2);
                acc[i] = _mm512_fmadd_ps(wt, v, acc[i]);
            }
        }
    }
    y += oh * g->out[2] + v0 * 16;
    UNROLL for (int i = 0; i < nv; i++)
        _mm512_storeu_ps(y + 16 * i, dw_act(acc[i], relu, j->regact));
}

/* every output row of a plane, DW_NV vectors a step, then 2, then 1; sx the
 * stride (1: dw_rw_step, 2: dw_rw2_step) */
V4 static inline __attribute__((always_inline)) void dw_rw_rows(
    const int sx, const int kw, const dw_job *j, const float *x, const float *w, float bias,
    bool relu, float *y)
{
#define step(nv, ...) (sx == 2 ? dw_rw2_step(nv, __VA_ARGS__) : dw_rw_step(nv, __VA_ARGS__))
    const int64_t nvr = j->g->out[2] / 16;
    for (int64_t oh = 0; oh < j->g->out[1]; oh++) {
        int64_t v = 0;
        for (; v + DW_NV <= nvr; v += DW_NV)
            step(DW_NV, kw, j, x, oh, v, w, bias, relu, y);
        if (v + 2 <= nvr) {
            step(2, kw, j, x, oh, v, w, bias, relu, y);
            v += 2;
        }
        if (v < nvr)
            step(1, kw, j, x, oh, v, w, bias, relu, y);
    }
#undef step
}

/* one plane of rows16: 3 or 5 taps across, stride 1 or 2 */
V4 static void dw_rw_run(const dw_job *j, const float *x, const float *w, float bias, bool relu,
                         float *y)
{
    if (j->g->str[2] == 2)
        (j->g->ker[2] == 3 ? dw_rw_rows(2, 3, j, x, w, bias, relu, y)
                           : dw_rw_rows(2, 5, j, x, w, bias, relu, y));
    else
        (j->g->ker[2] == 3 ? dw_rw_rows(1, 3, j, x, w, bias, relu, y)
                           : dw_rw_rows(1, 5, j, x, w, bias, relu, y));
}

/* vectors [v, v + nv) need no mask */
static inline bool dw_ip_full(const dw_job *j, int64_t v, int nv)
{
    bool all = true;
    for (int i = 0; i < nv; i++)
        all &= j->full[v + i];
    return all;
}

/* one plane in place: DW_NV vectors a step, then 2, then 1 */
V4 static void dw_ip_run(const dw_job *j, const float *in, const float *w, float bias,
                         bool relu, float *out)
{
    int64_t v = 0, n = j->nvec;
    for (; v + DW_NV <= n; v += DW_NV)
        if (dw_ip_full(j, v, DW_NV))
            dw_ip_step(DW_NV, false, j, v, in, w, bias, relu, out);
        else
            dw_ip_step(DW_NV, true, j, v, in, w, bias, relu, out);
    if (v + 2 <= n) {
        if (dw_ip_full(j, v, 2))
            dw_ip_step(2, false, j, v, in, w, bias, relu, out);
        else
            dw_ip_step(2, true, j, v, in, w, bias, relu, out);
        v += 2;
    }
    if (v < n)
        dw_ip_step(1, true, j, v, in, w, bias, relu, out);
}

/* The in-place masks: lane l of vector v is output position 16 v + l, at
 * (row r, column c); tap (kh, kw) reads input (r + kh dil - pad, c + kw dil
 * - pad), in the plane when both are in range (compared unsigned: below 0
 * is out too) and the position is an output's. Rows and columns are carried
 * from vector to vector, no division. */
V4 static void dw_masks(dw_job *j)
{
    const tgk_conv_geom *g = j->g;
    int32_t W = (int32_t)g->in[2], step_r = 16 / W, step_c = 16 % W, r0[16], c0[16];
    for (int l = 0; l < 16; l++)
        r0[l] = l / W, c0[l] = l % W;
    __m512i r = _mm512_loadu_si512(r0), c = _mm512_loadu_si512(c0);
    __m512i vw = _mm512_set1_epi32(W), vh = _mm512_set1_epi32((int32_t)g->in[1]);
    __mmask16 vm[64], hm[64];
    for (int64_t v = 0; v < j->nvec; v++) {
        __mmask16 out = _mm512_cmplt_epu32_mask(r, _mm512_set1_epi32((int32_t)g->out[1]));
        for (int64_t kh = 0; kh < g->ker[1]; kh++)
            vm[kh] = _mm512_cmplt_epu32_mask(
                _mm512_add_epi32(r, _mm512_set1_epi32((int32_t)(kh * g->dil[1] - g->pad[1]))), vh);
        for (int64_t kw = 0; kw < g->ker[2]; kw++)
            hm[kw] = _mm512_cmplt_epu32_mask(
                _mm512_add_epi32(c, _mm512_set1_epi32((int32_t)(kw * g->dil[2] - g->pad[2]))), vw);
        bool full = true;
        uint16_t *m = j->mask + v * g->kprod;
        for (int64_t kh = 0; kh < g->ker[1]; kh++)
            for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                *m = (uint16_t)(out & vm[kh] & hm[kw]);
                full &= *m++ == 0xFFFF;
            }
        j->full[v] = full;
        c = _mm512_add_epi32(c, _mm512_set1_epi32(step_c));
        r = _mm512_add_epi32(r, _mm512_set1_epi32(step_r));
        __mmask16 wrap = _mm512_cmpge_epi32_mask(c, vw);
        c = _mm512_mask_sub_epi32(c, wrap, c, vw);
        r = _mm512_mask_add_epi32(r, wrap, r, _mm512_set1_epi32(1));
    }
}

/* Stride 2 across, both column phases taken: input row src (w floats) into
 * them, its even columns at e and odd ones at o (where the phases' first
 * positions for them are), ne and no of each: two loads, two permutes and
 * two masked stores a 32 columns (GCC's loops took 7-30 columns a row with
 * a vectorized body, a scalar tail, and a pass a phase). */
V4 static void dw_split2(const float *src, int64_t w, float *e, int64_t ne, float *o, int64_t no)
{
    const __m512i ie = _mm512_set_epi32(30, 28, 26, 24, 22, 20, 18, 16, 14, 12, 10, 8, 6, 4, 2, 0);
    const __m512i io = _mm512_add_epi32(ie, _mm512_set1_epi32(1));
    for (int64_t i = 0; i < ne || i < no; i += 16, src += 32, w -= 32) {
        __mmask16 lo = w >= 16 ? 0xFFFF : (__mmask16)((1u << w) - 1);
        __mmask16 hi = w >= 32 ? 0xFFFF : w <= 16 ? 0 : (__mmask16)((1u << (w - 16)) - 1);
        __m512 a = _mm512_maskz_loadu_ps(lo, src), b = _mm512_maskz_loadu_ps(hi, src + 16);
        __mmask16 me = ne - i >= 16 ? 0xFFFF : ne <= i ? 0 : (__mmask16)((1u << (ne - i)) - 1);
        __mmask16 mo = no - i >= 16 ? 0xFFFF : no <= i ? 0 : (__mmask16)((1u << (no - i)) - 1);
        _mm512_mask_storeu_ps(e + i, me, _mm512_permutex2var_ps(a, ie, b));
        _mm512_mask_storeu_ps(o + i, mo, _mm512_permutex2var_ps(a, io, b));
    }
}

/* r[0..16) transposed in registers: lane i of r[j] becomes lane j of r[i]
 * (unpack pairs, then 4-float and 128-bit lane shuffles: 64 shuffles) */
V4 static inline __attribute__((always_inline)) void dw_t16(__m512 r[16])
{
    __m512 t[16], u[16];
    UNROLL for (int k = 0; k < 8; k++) {
        t[2 * k] = _mm512_unpacklo_ps(r[2 * k], r[2 * k + 1]);
        t[2 * k + 1] = _mm512_unpackhi_ps(r[2 * k], r[2 * k + 1]);
    }
    UNROLL for (int k = 0; k < 4; k++) {
        u[4 * k] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0x44);
        u[4 * k + 1] = _mm512_shuffle_ps(t[4 * k], t[4 * k + 2], 0xEE);
        u[4 * k + 2] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0x44);
        u[4 * k + 3] = _mm512_shuffle_ps(t[4 * k + 1], t[4 * k + 3], 0xEE);
    }
    UNROLL for (int j = 0; j < 4; j++) {
        __m512 v0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0x88);
        __m512 w0 = _mm512_shuffle_f32x4(u[j], u[4 + j], 0xDD);
        __m512 v1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0x88);
        __m512 w1 = _mm512_shuffle_f32x4(u[8 + j], u[12 + j], 0xDD);
        r[j] = _mm512_shuffle_f32x4(v0, v1, 0x88);
        r[8 + j] = _mm512_shuffle_f32x4(v0, v1, 0xDD);
        r[4 + j] = _mm512_shuffle_f32x4(w0, w1, 0x88);
        r[12 + j] = _mm512_shuffle_f32x4(w0, w1, 0xDD);
    }
}

/* Channel-blocked: 16 channels of one image a vector. The group's input
 * planes are transposed into buf, 16 pixels of 16 channels at a time (the
 * planes read as flat runs, each pixel put at its row and column of the
 * padded hp x wp block; the padding zero, from the buffer's first clearing);
 * each output pixel then sums its taps as whole vectors (tap t's 16 weights
 * times the pixel it reads: no mask, any stride or dilation), nb output
 * pixels of a row a step, into out (a pixel's 16 channels a vector), which
 * is transposed back into the 16 output planes. */
V4 static inline __attribute__((always_inline)) void dw_cb_step(
    const int nb, const int kk, const dw_job *j, const float *in, const float *wt, __m512 bias,
    float *out)
{
    const tgk_conv_geom *g = j->g;
    const int64_t sw = g->str[2] * 16, kh_n = kk ? kk : g->ker[1], kw_n = kk ? kk : g->ker[2];
    __m512 acc[8];
    UNROLL for (int i = 0; i < nb; i++)
        acc[i] = bias;
    UNROLL for (int64_t kh = 0; kh < kh_n; kh++) {
        const float *r = in + kh * g->dil[1] * j->wp * 16;
        UNROLL for (int64_t kw = 0; kw < kw_n; kw++, wt += 16) {
            __m512 wv = _mm512_load_ps(wt);
            const float *s = r + kw * g->dil[2] * 16;
            UNROLL for (int i = 0; i < nb; i++)
                acc[i] = _mm512_fmadd_ps(wv, _mm512_load_ps(s + i * sw), acc[i]);
        }
    }
    UNROLL for (int i = 0; i < nb; i++)
        _mm512_store_ps(out + 16 * i, dw_act(acc[i], j->d->relu, j->regact));
}

/* every output row: 8 pixels a step, then 4, 2, 1; kk: a kk x kk kernel
 * unrolled (0: g's) */
V4 static inline __attribute__((always_inline)) void dw_cb_rows(
    const int kk, const dw_job *j, const float *buf, const float *wt, __m512 bias, float *out)
{
    const tgk_conv_geom *g = j->g;
    const int64_t OW = g->out[2], sw = g->str[2] * 16;
    for (int64_t oh = 0; oh < g->out[1]; oh++) {
        const float *in = buf + oh * g->str[1] * j->wp * 16;
        float *o = out + oh * OW * 16;
        int64_t ow = 0;
        for (; ow + 8 <= OW; ow += 8)
            dw_cb_step(8, kk, j, in + ow * sw, wt, bias, o + ow * 16);
        if (ow + 4 <= OW) {
            dw_cb_step(4, kk, j, in + ow * sw, wt, bias, o + ow * 16);
            ow += 4;
        }
        if (ow + 2 <= OW) {
            dw_cb_step(2, kk, j, in + ow * sw, wt, bias, o + ow * 16);
            ow += 2;
        }
        if (ow < OW)
            dw_cb_step(1, kk, j, in + ow * sw, wt, bias, o + ow * 16);
    }
}

/* group grp of image n: buf the padded input block, out the output pixels */
V4 static void dw_cb_block(const dw_job *j, int64_t n, int64_t grp, float *buf, float *out)
{
    const tgk_conv_geom *g = j->g;
    const int64_t C = j->d->c, W = g->in[2], c0 = grp * 16;
    const int64_t nl = C - c0 < 16 ? C - c0 : 16;
    const float *x = j->x + (n * C + c0) * g->in_sp;
    __m512 r[16];
    int64_t ih = 0, iw = 0;
    for (int64_t p = 0; p < g->in_sp; p += 16) {
        int64_t np = g->in_sp - p < 16 ? g->in_sp - p : 16;
        __mmask16 m = (__mmask16)(0xFFFFu >> (16 - np));
        UNROLL for (int l = 0; l < 16; l++)
            r[l] = l < nl ? _mm512_maskz_loadu_ps(m, x + l * g->in_sp + p) : _mm512_setzero_ps();
        dw_t16(r);
        for (int64_t i = 0; i < np; i++) {
            _mm512_store_ps(buf + ((ih + g->pad[1]) * j->wp + iw + g->pad[2]) * 16, r[i]);
            if (++iw == W)
                iw = 0, ih++;
        }
    }
    const float *wt = j->wt + grp * g->kprod * 16;
    __m512 bias = j->b ? _mm512_maskz_loadu_ps((__mmask16)(0xFFFFu >> (16 - nl)), j->b + c0)
                       : _mm512_setzero_ps();
    int kk = g->ker[1] == g->ker[2] && (g->ker[1] == 3 || g->ker[1] == 5) ? (int)g->ker[1] : 0;
    if (kk == 3)
        dw_cb_rows(3, j, buf, wt, bias, out);
    else if (kk == 5)
        dw_cb_rows(5, j, buf, wt, bias, out);
    else
        dw_cb_rows(0, j, buf, wt, bias, out);
    float *y = j->y + (n * C + c0) * g->out_sp;
    for (int64_t p = 0; p < g->out_sp; p += 16) {
        int64_t np = g->out_sp - p < 16 ? g->out_sp - p : 16;
        __mmask16 m = (__mmask16)(0xFFFFu >> (16 - np));
        UNROLL for (int i = 0; i < 16; i++)
            r[i] = i < np ? _mm512_load_ps(out + (p + i) * 16) : _mm512_setzero_ps();
        dw_t16(r);
        for (int64_t l = 0; l < nl; l++)
            _mm512_mask_storeu_ps(y + l * g->out_sp + p, m, r[l]);
    }
}

/* rows of n floats, from pitch ps to pitch pd: masked vectors, no call a row */
V4 static void dw_copy_rows(const float *src, int64_t ps, float *dst, int64_t pd, int64_t rows,
                            int64_t n)
{
    for (int64_t r = 0; r < rows; r++, src += ps, dst += pd)
        for (int64_t c = 0; c < n; c += 16) {
            __mmask16 m = n - c >= 16 ? 0xFFFF : (__mmask16)((1u << (n - c)) - 1);
            _mm512_mask_storeu_ps(dst + c, m, _mm512_maskz_loadu_ps(m, src + c));
        }
}
#endif

/* The widest this CPU runs, or (isa) the named one if it runs it. */
static const dw_kernel *dw_find(const char *isa)
{
    bool any = !isa;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_cpu_init();
    if ((any || !strcmp(isa, "avx512")) && __builtin_cpu_supports("x86-64-v4"))
        return &dw_v4;
    if ((any || !strcmp(isa, "avx2")) && __builtin_cpu_supports("x86-64-v3"))
        return &dw_v3;
#endif
    return any || !strcmp(isa, "base") ? &dw_base : NULL;
}

static const dw_kernel *dw_kern;

/* chosen once, before any caller (a test may then pick another) */
__attribute__((constructor)) static void dw_pick(void)
{
    dw_kern = dw_find(NULL);
}

bool tgk_conv_dw_isa(const char *isa)
{
    const dw_kernel *k = dw_find(isa);
    if (k)
        dw_kern = k;
    return k != NULL;
}

/* input plane xc, split by phase, into buf: the positions that lie in the
 * input, copied (strides 1 and 2 as loops GCC vectorizes). The input's rows
 * are taken in order, each into its column phases while it is in L1 (phase
 * by phase, the plane was read every other row, twice: MobileNetV3's
 * stride-2 layers took 3x their products' time here). The padding's
 * positions are the same for every plane: zeroed once, with the buffer. */
TGK_CLONES static void dw_phases(const dw_job *j, const float *xc, float *buf)
{
    const tgk_conv_geom *g = j->g;
    const int64_t *q = j->q, *s = g->str;
    for (int64_t id = 0; id < g->in[0]; id++) {
        int64_t pd = (id + g->pad[0]) % s[0], rd = (id + g->pad[0]) / s[0];
        if (pd >= j->nph[0] || rd >= q[0])
            continue;
        for (int64_t ih = 0; ih < g->in[1]; ih++) {
            int64_t ph = (ih + g->pad[1]) % s[1], rh = (ih + g->pad[1]) / s[1];
            if (ph >= j->nph[1] || rh >= q[1])
                continue;
            const float *row = xc + (id * g->in[1] + ih) * g->in[2];
            float *dst = buf + ((pd * j->nph[1] + ph) * j->nph[2] * q[0] + rd) * q[1] * q[2] +
                         rh * q[2];
#ifdef DW_INPLACE
            if (j->split2) {
                int64_t p = g->pad[2], w = g->in[2];
                int64_t ne = q[2] - p / 2 < (w + 1) / 2 ? q[2] - p / 2 : (w + 1) / 2;
                int64_t no = q[2] - (p + 1) / 2 < w / 2 ? q[2] - (p + 1) / 2 : w / 2;
                dw_split2(row, w, dst + p % 2 * j->phase_sz + p / 2, ne,
                          dst + (p + 1) % 2 * j->phase_sz + (p + 1) / 2, no);
                continue;
            }
#endif
            for (int64_t pw = 0; pw < j->nph[2]; pw++, dst += j->phase_sz) {
                int64_t off = pw - g->pad[2], c0, c1;
                tgk_conv_valid_range(q[2], s[2], off, g->in[2], &c0, &c1);
                const float *src = row + off;
                if (s[2] == 1)
                    for (int64_t c = c0; c < c1; c++)
                        dst[c] = src[c];
                else if (s[2] == 2)
                    for (int64_t c = c0; c < c1; c++)
                        dst[c] = src[2 * c];
                else
                    for (int64_t c = c0; c < c1; c++)
                        dst[c] = src[c * s[2]];
            }
        }
    }
}

/* the plane's activation and residual, while it is in cache */
static void dw_epilogue(const dw_job *j, int64_t p)
{
    int64_t sp = j->g->out_sp;
    if (j->d->res || (j->d->act && !j->regact))
        tgk_gemm_epilogue(j->y + p * sp, sp, j->d->res ? j->d->res + p * sp : NULL,
                          j->regact ? NULL : j->d->act, 0, 1, 0, sp);
}

/* groups (image, 16 channels) [begin, end), channel-blocked */
static void dw_blocks(void *ctx, int64_t begin, int64_t end)
{
    dw_job *j = ctx;
#ifdef DW_INPLACE
    const int64_t sp = j->g->out_sp;
    size_t in = (size_t)(j->hp * j->wp * 16), out = (size_t)(sp * 16);
    float *buf = aligned_alloc(64, (in + out) * sizeof *buf);
    if (!buf) {
        atomic_store(&j->failed, true);
        return;
    }
    memset(buf, 0, in * sizeof *buf);
    for (int64_t i = begin; i < end; i++) {
        int64_t n = i / j->ngrp, grp = i % j->ngrp, p = n * j->d->c + grp * 16;
        int64_t nl = j->d->c - grp * 16 < 16 ? j->d->c - grp * 16 : 16;
        dw_cb_block(j, n, grp, buf, buf + in);
        if (j->d->res || (j->d->act && !j->regact))
            tgk_gemm_epilogue(j->y + p * sp, sp, j->d->res ? j->d->res + p * sp : NULL,
                              j->regact ? NULL : j->d->act, 0, nl, 0, sp);
    }
    free(buf);
#else
    (void)j, (void)begin, (void)end;
#endif
}

/* planes (image, output channel) [begin, end) */
static void dw_planes(void *ctx, int64_t begin, int64_t end)
{
    dw_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    const dw_kernel *kern = dw_kern;
    int64_t mult = j->d->k / j->d->c, last = -1;
#ifdef DW_INPLACE
    if (j->inplace) {
        for (int64_t p = begin; p < end; p++) {
            int64_t n = p / j->d->k, k = p % j->d->k;
            (j->rows16 ? dw_rw_run : dw_ip_run)(
                j, j->x + (n * j->d->c + k / mult) * g->in_sp, j->w + k * g->kprod,
                j->b ? j->b[k] : 0.0f, j->d->relu, j->y + p * g->out_sp);
            dw_epilogue(j, p);
        }
        return;
    }
#endif
    float *buf = calloc((size_t)(j->buf_sz + j->len), sizeof *buf);
    if (!buf) {
        atomic_store(&j->failed, true);
        return;
    }
    float *out = buf + j->buf_sz;
    for (int64_t p = begin; p < end; p++) {
        int64_t n = p / j->d->k, k = p % j->d->k, in_plane = n * j->d->c + k / mult;
        if (in_plane != last)   /* a multiplier's channels share their input */
            dw_phases(j, j->x + in_plane * g->in_sp, buf);
        last = in_plane;
        kern->run(buf, j->tapoff, j->w + k * g->kprod, g->kprod, j->b ? j->b[k] : 0.0f,
                  j->d->relu, j->len, out);
        float *y = j->y + p * g->out_sp;
        for (int64_t od = 0; od < g->out[0]; od++, y += g->out[1] * g->out[2]) {
            const float *o = out + od * j->q[1] * j->q[2];
#ifdef DW_INPLACE
            if (kern->inplace) {
                dw_copy_rows(o, j->q[2], y, g->out[2], g->out[1], g->out[2]);
                continue;
            }
#endif
            for (int64_t oh = 0; oh < g->out[1]; oh++)
                memcpy(y + oh * g->out[2], o + oh * j->q[2], (size_t)g->out[2] * sizeof *y);
        }
        dw_epilogue(j, p);
    }
    free(buf);
}

/* The in-place path's when this CPU's kernel runs it: stride 1, rows of
 * one pitch in and out, one depth slice (and a kernel one deep, unpadded:
 * the masks and tap offsets are a plane's), kernel rows and columns that
 * dw_masks keeps (64), planes whose positions fit 32 bits. Sets its tap
 * offsets and masks; false: the phases (or no memory: *failed). */
static bool dw_inplace_setup(dw_job *j, bool *failed)
{
    const tgk_conv_geom *g = j->g;
    *failed = false;
#ifdef DW_INPLACE
    if (dw_kern->inplace && g->in[0] == 1 && g->out[0] == 1 && g->ker[0] == 1 && !g->pad[0] &&
        g->str[1] == 2 && g->str[2] == 2 && g->dil[1] == 1 && g->dil[2] == 1 &&
        (g->ker[2] == 3 || g->ker[2] == 5) && g->pad[2] == g->ker[2] / 2 &&
        g->in[2] % 32 == 0 && 2 * g->out[2] == g->in[2]) {
        j->inplace = j->rows16 = true;      /* stride 2: dw_rw2_step */
        j->regact = dw_regact(j->d);
        j->len = g->out_sp;
        return true;
    }
    if (!dw_kern->inplace || g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1 || g->pad[0] ||
        g->str[1] != 1 || g->str[2] != 1 || g->out[2] != g->in[2] || g->ker[1] > 64 || g->ker[2] > 64 ||
        g->out_sp >= (int64_t)1 << 30 || g->in_sp >= (int64_t)1 << 30)
        return false;
    j->nvec = (g->out_sp + 15) / 16;
    j->last = (uint16_t)(0xFFFFu >> (16 * j->nvec - g->out_sp));
    j->mask = malloc((size_t)(j->nvec * g->kprod) * sizeof *j->mask);
    j->full = malloc((size_t)j->nvec * sizeof *j->full);
    if (!j->mask || !j->full) {
        *failed = true;
        return false;
    }
    int64_t t = 0;
    for (int64_t kh = 0; kh < g->ker[1]; kh++)
        for (int64_t kw = 0; kw < g->ker[2]; kw++)
            j->tapoff[t++] = (kh * g->dil[1] - g->pad[1]) * g->in[2] + kw * g->dil[2] - g->pad[2];
    dw_masks(j);
    j->inplace = true;
    j->rows16 = g->in[2] % 16 == 0 && (g->in[2] >= 32 || g->ker[2] == 5) &&
                (g->ker[2] == 3 || g->ker[2] == 5) &&
                g->pad[2] == g->ker[2] / 2 && g->dil[1] == 1 && g->dil[2] == 1;
    j->regact = dw_regact(j->d);
    j->len = 16 * j->nvec;
    return true;
#else
    (void)g;
    return false;
#endif
}

/* The channel-blocked path's when this CPU's kernel runs it: 2-D, no
 * multiplier, and small planes: strided with at most 32x32 input pixels, or
 * at most 16 output pixels (4x4). Its transposes in and out cost about what
 * the products do on 8x8 and larger stride-1 planes, where the in-place path
 * has no copy (one thread, batch 8, 3x3: 8x8 0.8-1.1x of it, 16x16 0.65x,
 * 64x64 0.6x); on strided planes they replace the phases' copies (64x64
 * 0.9x, 32x32 1.2-1.3x, 16x16 2.5x, 8x8 6-8x); 4x4 stride 1 1.6-2x.
 * Sets its weights; false: another path (or no memory: *failed). */
static bool dw_blocked_setup(dw_job *j, bool *failed)
{
    const tgk_conv_geom *g = j->g;
    *failed = false;
#ifdef DW_INPLACE
    int64_t pd[3];
    tgk_conv_padded_dims(g, pd);
    if (g->str[1] > 1 || g->str[2] > 1 ? g->in_sp > 1024 : g->out_sp > 16)
        return false;
    if (!dw_kern->inplace || g->in[0] != 1 || g->out[0] != 1 || g->ker[0] != 1 || g->pad[0] ||
        j->d->k != j->d->c)
        return false;
    j->hp = pd[1];
    j->wp = pd[2];
    j->ngrp = (j->d->c + 15) / 16;
    j->wt = aligned_alloc(64, (size_t)(j->ngrp * g->kprod * 16) * sizeof *j->wt);
    if (!j->wt) {
        *failed = true;
        return false;
    }
    for (int64_t c = 0; c < j->ngrp * 16; c++)
        for (int64_t t = 0; t < g->kprod; t++)
            j->wt[(c / 16 * g->kprod + t) * 16 + c % 16] =
                c < j->d->c ? j->w[c * g->kprod + t] : 0.0f;
    j->regact = dw_regact(j->d);
    return true;
#else
    (void)g;
    return false;
#endif
}

int tgk_conv_depthwise_f32(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *x,
                           const float *w, const float *b, float *y)
{
    dw_job j = {.d = d, .g = g, .x = x, .w = w, .b = b, .y = y};
    int64_t vl = dw_kern->vl, nph = 1;
    if (!(j.tapoff = malloc((size_t)g->kprod * sizeof *j.tapoff)))
        return -1;
    bool failed;
    if (dw_blocked_setup(&j, &failed) || failed) {
        atomic_init(&j.failed, failed);
        if (!failed)    /* tasks of at least ~64K multiply-adds */
            tgk_parallel_for(d->n * j.ngrp, 1 + 65536 / (16 * g->out_sp * g->kprod), dw_blocks,
                             &j);
        free(j.tapoff);
        free(j.wt);
        return atomic_load(&j.failed) ? -1 : 0;
    }
    if (!dw_inplace_setup(&j, &failed) && !failed) {
        for (int a = 0; a < 3; a++) {
            int64_t reach = (g->ker[a] - 1) * g->dil[a];
            j.q[a] = g->out[a] + reach / g->str[a];
            j.nph[a] = g->str[a] < reach + 1 ? g->str[a] : reach + 1;
            nph *= j.nph[a];
        }
        j.phase_sz = j.q[0] * j.q[1] * j.q[2];
        int64_t last = ((g->out[0] - 1) * j.q[1] + g->out[1] - 1) * j.q[2] + g->out[2];
        j.len = (last + vl - 1) / vl * vl;
        j.buf_sz = nph * j.phase_sz + vl;
        j.split2 = dw_kern->inplace && g->str[2] == 2 && j.nph[2] == 2;
        int64_t t = 0;
        for (int64_t kd = 0; kd < g->ker[0]; kd++)
            for (int64_t kh = 0; kh < g->ker[1]; kh++)
                for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                    int64_t rd = kd * g->dil[0], rh = kh * g->dil[1], rw = kw * g->dil[2];
                    int64_t phase = ((rd % g->str[0]) * j.nph[1] + rh % g->str[1]) * j.nph[2] +
                                    rw % g->str[2];
                    j.tapoff[t++] = phase * j.phase_sz +
                                    ((rd / g->str[0]) * j.q[1] + rh / g->str[1]) * j.q[2] +
                                    rw / g->str[2];
                }
    }
    atomic_init(&j.failed, failed);
    /* tasks of at least ~64K multiply-adds */
    if (!failed)
        tgk_parallel_for(d->n * d->k, 1 + 65536 / (j.len * g->kprod), dw_planes, &j);
    free(j.tapoff);
    free(j.mask);
    free(j.full);
    return atomic_load(&j.failed) ? -1 : 0;
}
