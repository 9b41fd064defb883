/* Vectorization support for the kernels, internal to lib/backend/cpu/kernels (include
 * it after the system headers): -O3, multiversioning, and inline float math
 * written so gcc vectorizes the loops that call it: no branches (both sides
 * computed, then selected), no libm calls, bit tricks on plain integers.
 * Accuracy against float64 (tests/unit/test_vec.c): exp 1 ulp, tanh, sigmoid,
 * erf within 2 ulp over the float range. */
#ifndef TGK_VECMATH_H
#define TGK_VECMATH_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* The interpreter compiles the kernels with the project's -O2, whose cheap
 * vectorizer cost model leaves these loops scalar (vec.c: no vector code at
 * all); libtgkernels.a gets -O3. Ask for -O3 here so both copies match.
 * no-trapping-math: GCC will not if-convert a select between float
 * expressions that might trap, so without AVX-512's masked operations the
 * clamps and selects here stayed branches and the AVX2 and baseline clones
 * scalar (exp 0.26 Gelem/s against 2+ vectorized). No kernel reads the
 * floating-point exception flags; results are the same bit for bit. */
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O3", "no-trapping-math")
#endif

/* Function multiversioning for hot loops: AVX-512, AVX2+FMA, baseline. Not
 * under ThreadSanitizer: the clones' ifunc resolvers run while the dynamic
 * linker relocates, before TSan's runtime is initialised, and crash it. */
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__) && \
    !defined(__SANITIZE_THREAD__)
#define TGK_CLONES __attribute__((target_clones("arch=x86-64-v4", "arch=x86-64-v3", "default")))
#else
#define TGK_CLONES
#endif

/* For loops over short runs (an image row, a grid row of 32 pixels): GCC's
 * loop idioms make a plain copy loop a memcpy call, ~20 ns each (the
 * implicit convolution's pad and scatter: ~10% of a 3x3 at 32x32 maps). */
#if defined(__GNUC__) && !defined(__clang__)
#define TGK_NO_CALL_IDIOMS __attribute__((optimize("no-tree-loop-distribute-patterns")))
#else
#define TGK_NO_CALL_IDIOMS
#endif

/* Register tiles (gemm_packed.c, sparse24.c): tile T(mr, np, j, r, p) over
 * rows [r, r + mr), mr <= MR <= 8, with mr a constant at each call, so that
 * every row count gets its own unrolled copy. */
#define TGK_TILE_ROWS(T, MR, NP, j, r, p, mr)                                \
    do {                                                                     \
        switch ((mr)) {                                                      \
        case 1: T(1, NP, j, r, p); break;                                    \
        case 2: if (MR > 2) T(2, NP, j, r, p); break;                        \
        case 3: if (MR > 3) T(3, NP, j, r, p); break;                        \
        case 4: if (MR > 4) T(4, NP, j, r, p); break;                        \
        case 5: if (MR > 5) T(5, NP, j, r, p); break;                        \
        case 6: if (MR > 6) T(6, NP, j, r, p); break;                        \
        case 7: if (MR > 7) T(7, NP, j, r, p); break;                        \
        }                                                                    \
        if ((mr) == MR)                                                      \
            T(MR, NP, j, r, p);                                              \
    } while (0)

/* Activations a kernel applies on its registers, and TGK_VEC_ACT(QUAL, fn,
 * vec): QUAL void fn(vec *a, int kind) applies kind's to a vector of a GCC
 * vector type: tgk_vec_relu_f32's, _relu6_f32's or _hardswish_f32's
 * operations lane by lane (selects: NaN and -0 stay; / 6, not a multiply),
 * so the result is the call's bit for bit. */
enum { TGK_ACT_NONE, TGK_ACT_RELU, TGK_ACT_RELU6, TGK_ACT_HARDSWISH };
#define TGK_VEC_ACT(QUAL, fn, vec)                                                  \
    QUAL void fn(vec *a, int kind)                                                  \
    {                                                                               \
        typedef __typeof__(*a < *a) mask;                                           \
        vec v = *a, t = v + 3.0f, six = (vec){0} + 6.0f;                            \
        if (kind == TGK_ACT_RELU || kind == TGK_ACT_RELU6) {                        \
            v = (vec)((mask)v & ~(v < (vec){0}));                                   \
            if (kind == TGK_ACT_RELU6) {                                            \
                mask cap = v > six;                                                 \
                v = (vec)(((mask)v & ~cap) | ((mask)six & cap));                    \
            }                                                                       \
            *a = v;                                                                 \
            return;                                                                 \
        }                                                                           \
        t = (vec)((mask)t & ~(t < (vec){0}));                                       \
        mask big = t > six;                                                         \
        t = (vec)(((mask)t & ~big) | ((mask)six & big));                            \
        *a = v * t / 6.0f;                                                          \
    }

/* t clamped to [0, 6], NaN kept (hardswish's, as selects that vectorize) */
static inline float tgk_clamp06(float t)
{
    t = t < 0.0f ? 0.0f : t;
    return t > 6.0f ? 6.0f : t;
}

static inline float tgk_bits_float(uint32_t u)
{
    float f;
    memcpy(&f, &u, sizeof f);
    return f;
}

static inline uint32_t tgk_float_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, sizeof u);
    return u;
}

/* exp(r) for |r| <= ln2/2: Cephes' degree-6 polynomial */
static inline float tgk_exp_poly(float r)
{
    float p = 1.9875691500e-4f;
    p = p * r + 1.3981999507e-3f;
    p = p * r + 8.3334519073e-3f;
    p = p * r + 4.1665795894e-2f;
    p = p * r + 1.6666665459e-1f;
    p = p * r + 5.0000001201e-1f;
    return p * r * r + r + 1.0f;
}

/* x - lo = n ln2 + r, |r| <= ln2/2 (about): *n set, exp(r) returned. ln2 in
 * two parts, x - n ln2 nearly exact, lo taken off after it (0 folds away) */
static inline float tgk_exp_reduce_lo(float x, float lo, int32_t *n)
{
    const float shift = 12582912.0f;              /* 1.5 * 2^23: rounds to integer */
    float t = (x - lo) * 1.44269504088896341f + shift;
    float nf = t - shift;
    *n = (int32_t)(tgk_float_bits(t) - tgk_float_bits(shift));
    float r = x - nf * 0.693359375f;
    r = r + nf * 2.12194440e-4f;
    return tgk_exp_poly(r - lo);
}

/* exp(x) = exp(r) 2^n: *n set, exp(r) returned */
static inline float tgk_exp_reduce(float x, int32_t *n)
{
    return tgk_exp_reduce_lo(x, 0.0f, n);
}

/* 2^n for n in [-252, 254], in two halves, so that p 2^n comes out right
 * down to the denormals */
static inline float tgk_scale2n(float p, int32_t ni)
{
    int32_t h = ni >> 1;
    float s1 = tgk_bits_float((uint32_t)(h + 127) << 23);
    float s2 = tgk_bits_float((uint32_t)(ni - h + 127) << 23);
    return p * s1 * s2;
}

/* exp: 2^n built in two halves so results down to the denormals come out
 * right. Clamping keeps n small; NaN fails both comparisons and stays NaN. */
static inline float tgk_exp(float x)
{
    x = x > 89.0f ? 89.0f : x;
    x = x < -104.0f ? -104.0f : x;
    int32_t ni;
    float p = tgk_exp_reduce(x, &ni);
    return tgk_scale2n(p, ni);
}

/* exp(x), but 0 where that is below 2^-126 (x < -87.33): softmax's
 * probabilities, never a denormal. A product that reads a denormal takes a
 * microcode assist on x86 (no FTZ/DAZ: the model does not own the thread's
 * MXCSR), ~100 cycles: Swin's shifted windows mask scores with -100, and
 * their P V products ran 10x slower on the denormal probabilities. The
 * argument is clamped to [-87.33, 89] first, so no lane computes a denormal
 * either, and 2^n is one float, built in one step (from x = 88.4 on it is
 * +inf: exact up to there, inf above; every caller passes a score less its
 * row's max, x <= 0). The absolute error is below 1.2e-38. */
static inline float tgk_exp_ftz(float x)
{
    float c = x < -87.33f ? -87.33f : x;
    c = c > 89.0f ? 89.0f : c;
    int32_t ni;
    float e = tgk_exp_reduce(c, &ni) * tgk_bits_float((uint32_t)(ni + 127) << 23);
    return x < -87.33f ? 0.0f : e;
}

/* 1/(1 + exp(-x)), as exp(x)/(1 + exp(x)) for x < 0 so that nothing
 * overflows and x * sigmoid(x) stays accurate down to the denormals. */
static inline float tgk_sigmoid(float x)
{
    float e = tgk_exp(-fabsf(x));
    float r = 1.0f / (1.0f + e);
    return x < 0.0f ? e * r : r;
}

/* tanh: Cephes' odd polynomial below 0.625, 1 - 2/(exp(2|x|)+1) above. */
static inline float tgk_tanh(float x)
{
    float a = fabsf(x), z = x * x;
    float p = -5.70498872745e-3f;
    p = p * z + 2.06390887954e-2f;
    p = p * z - 5.37397155531e-2f;
    p = p * z + 1.33314422036e-1f;
    p = p * z - 3.33332819422e-1f;
    float small = p * z * x + x;
    float big = copysignf(1.0f - 2.0f / (tgk_exp(2.0f * a) + 1.0f), x);
    return a < 0.625f ? small : big;
}

/* erf(x)/x for |x| < 1 as a polynomial in x^2 (Chebyshev fit, error 1.2e-9). */
static inline float tgk_erf_small(float x)
{
    float z = x * x;
    float p = 7.875875063e-05f;
    p = p * z - 8.016864287e-04f;
    p = p * z + 5.189087423e-03f;
    p = p * z - 2.685421201e-02f;
    p = p * z + 1.128359472e-01f;
    p = p * z - 3.761262667e-01f;
    p = p * z + 1.128379166e+00f;
    return p;
}

/* v = hi + lo with hi holding the top 12 significant bits, so hi * hi is exact */
static inline float tgk_split_hi(float v)
{
    return tgk_bits_float(tgk_float_bits(v) & 0xFFFFF000u);
}

/* erfc(a) for a >= 1, given a^2 as sq_hi + sq_lo: exp(-a^2) g(t), t = 1/(1 + a/2),
 * g a degree-9 fit in t - 0.40476 (relative error 4e-9). The exponent is the
 * sensitive part (a^2 = 100 at a = 10), so callers pass it nearly exact:
 * one exp, sq_hi reduced (n from the whole sum) and sq_lo taken off the
 * remainder (not a second exp for sq_lo: the GELU 1.2 -> ns an element). */
static inline float tgk_erfc_big(float a, float sq_hi, float sq_lo)
{
    float s = 1.0f / (1.0f + 0.5f * a) - 0.404761905f;
    float g = -6.492553489e-02f;
    g = g * s + 7.970171993e-02f;
    g = g * s + 8.618266163e-02f;
    g = g * s - 1.279027013e-01f;
    g = g * s - 1.704747019e-01f;
    g = g * s + 1.553192980e-01f;
    g = g * s + 5.900534902e-01f;
    g = g * s + 7.912080050e-01f;
    g = g * s + 6.871484914e-01f;
    g = g * s + 1.822554091e-01f;
    int32_t ni;
    float p = tgk_exp_reduce_lo(-sq_hi < -104.0f ? -104.0f : -sq_hi, sq_lo, &ni);
    return tgk_scale2n(p * g, ni);
}

static inline float tgk_erf(float x)
{
    /* clamp: erf is 1 in float from 4 on; keeps the squares finite, NaN passes */
    float a = fabsf(x);
    a = a > 12.0f ? 12.0f : a;
    float ah = tgk_split_hi(a), al = a - ah;
    float big = copysignf(1.0f - tgk_erfc_big(a, ah * ah, al * (a + ah)), x);
    return a < 1.0f ? x * tgk_erf_small(x) : big;
}

/* 1 + erf(x / sqrt 2), the GELU factor, as erfc(-u) for u = x / sqrt 2: with
 * a = |u| and t = 1/(1 + a/2), erfc(a) = exp(-a^2) t q(t), q a degree-9 fit
 * of erfc(a) exp(a^2) / t in t - 0.6 over t in [0.2, 1] (a in [0, 8],
 * relative error 1.3e-8; below x = -11.3 the GELU is under 1e-28). One
 * formula for every x: no erf polynomial beside it for |u| < 1 to compute
 * and select (1.1 -> 0.9 ns an element), and accurate where the factor is
 * tiny (x very negative: it is erfc(a)) and near 1 (1 - erfc(a)/2 there).
 * (x / sqrt 2)^2 is taken from x exactly; x is clamped to [-17, 17], so the
 * exponent stays within tgk_scale2n's range. */
static inline float tgk_gelu_phi(float x)
{
    x = x > 17.0f ? 17.0f : x;
    x = x < -17.0f ? -17.0f : x;
    float u = x * 0.707106781186547524f, a = fabsf(u);
    float t = 1.0f / (1.0f + 0.5f * a), s = t - 0.6f;
    float q = 2.045089505e-02f;
    q = q * s - 5.664571873e-02f;
    q = q * s - 6.368257147e-03f;
    q = q * s + 1.118586758e-01f;
    q = q * s - 3.807173554e-02f;
    q = q * s - 2.077203100e-01f;
    q = q * s + 6.869671306e-02f;
    q = q * s + 5.914687793e-01f;
    q = q * s + 8.025885505e-01f;
    q = q * s + 5.852244946e-01f;
    float xh = tgk_split_hi(x), xl = x - xh;
    int32_t ni;
    float p = tgk_exp_reduce_lo(-0.5f * xh * xh, 0.5f * xl * (x + xh), &ni);
    float c = tgk_scale2n(p * (q * t), ni);
    return u > 0.0f ? 2.0f - c : c;
}

/* The tanh GELU, 0.5 v (1 + tanh y) with y = sqrt(2/pi) (v + 0.044715 v^3),
 * as v / (1 + exp(-2y)): accurate where 1 + tanh would cancel (v < 0), and
 * no select. exp(u), u = -2y, as in tgk_exp but with 2^n in one step: u is
 * clamped to [-87, 89], where 2^n is a normal float or, from u = 88.4 on,
 * +inf, so that v / inf gives -0 for a very negative v and NaN for -inf, as
 * the formula does; the min and max ops of the clamps map NaN to a bound,
 * and a NaN v stays NaN through the division. 1.4x the speed of
 * v * tgk_sigmoid(2y) on AVX2 (0.85 -> 1.2 Gelem/s a core). */
static inline float tgk_gelu_tanh(float v)
{
    float u = -1.595769121605730711f * (v + 0.044715f * v * v * v);
    u = u < 89.0f ? u : 89.0f;
    u = u > -87.0f ? u : -87.0f;
    int32_t ni;
    float e = tgk_exp_reduce(u, &ni) * tgk_bits_float((uint32_t)(ni + 127) << 23);
    return v / (1.0f + e);
}

/* The larger of m and v, NaN winning (torch's max and max_pool): as selects
 * with no branch, which gcc vectorizes (the `v > m || v != v` form it left
 * scalar). A NaN m stays: v > NaN is false. */
static inline float tgk_nan_max(float m, float v)
{
    return v != v ? v : v > m ? v : m;
}

/* Sum and max in 16 independent lanes, two vectors of 8 (then one vector,
 * then single floats), the lanes folded by shuffles: the lanes vectorize (a
 * float reduction alone gcc may not reorder) and partial sums lose less
 * precision. Vector types, because gcc 12 left the lane-array max (x > acc
 * || x != x) scalar, 4.5 instructions an element, a third of attention's
 * softmax, and folded the lanes one at a time (its rows are short). */
#define TGK_LANES 16
typedef float tgk_vf8 __attribute__((vector_size(8 * sizeof(float))));
typedef int32_t tgk_vi8 __attribute__((vector_size(8 * sizeof(int32_t))));

/* *acc += x[0..8) (vectors by pointer: returned by value they would change
 * the ABI of the baseline clones) */
static inline void tgk_add8(tgk_vf8 *acc, const float *x)
{
    tgk_vf8 v;
    memcpy(&v, x, sizeof v);
    *acc += v;
}

/* The lanes of *v folded in three shuffles: lane 0 ends up with the sum. */
static inline float tgk_hsum8(tgk_vf8 *v)
{
    *v += __builtin_shuffle(*v, (tgk_vi8){4, 5, 6, 7, 0, 1, 2, 3});
    *v += __builtin_shuffle(*v, (tgk_vi8){2, 3, 0, 1, 6, 7, 4, 5});
    *v += __builtin_shuffle(*v, (tgk_vi8){1, 0, 3, 2, 5, 4, 7, 6});
    return (*v)[0];
}

static inline float tgk_sum(const float *x, int64_t n)
{
    tgk_vf8 acc[2] = {{0}, {0}};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        tgk_add8(&acc[0], x + i);
        tgk_add8(&acc[1], x + i + 8);
    }
    if (i + 8 <= n) {
        tgk_add8(&acc[0], x + i);
        i += 8;
    }
    float s = 0.0f;
    for (; i < n; i++)
        s += x[i];
    acc[0] += acc[1];
    return s + tgk_hsum8(&acc[0]);
}

/* *acc = max(*acc, *v) lane by lane, NaN winning: once in a lane it stays */
static inline void tgk_vmax8(tgk_vf8 *acc, const tgk_vf8 *v)
{
    tgk_vi8 take = (*v > *acc) | (*v != *v);
    *acc = (tgk_vf8)(((tgk_vi8)*v & take) | ((tgk_vi8)*acc & ~take));
}

static inline void tgk_max8(tgk_vf8 *acc, const float *x)
{
    tgk_vf8 v;
    memcpy(&v, x, sizeof v);
    tgk_vmax8(acc, &v);
}

typedef float tgk_vf16 __attribute__((vector_size(16 * sizeof(float))));
typedef int32_t tgk_vi16 __attribute__((vector_size(16 * sizeof(int32_t))));

/* *acc = the larger of *acc and x[0..16) lane by lane, a NaN of x dropped */
static inline void tgk_vmax16(tgk_vf16 *acc, const float *x)
{
    tgk_vf16 v;
    memcpy(&v, x, sizeof v);
    tgk_vi16 take = v > *acc;
    *acc = (tgk_vf16)(((tgk_vi16)v & take) | ((tgk_vi16)*acc & ~take));
}

/* The largest of x[0..n), n a multiple of 16, where a NaN need not win: a
 * softmax row's reference (a NaN of the row reaches every output through
 * its exp and the sum anyway; all -inf gives -inf). A compare and a masked
 * move per 16 floats, two chains, against tgk_max's NaN-winning selects on
 * 8 (a third of attention's softmax). */
static inline float tgk_max_ref16(const float *x, int64_t n)
{
    tgk_vf16 acc[2] = {{0}, {0}};
    acc[0] -= INFINITY;
    acc[1] -= INFINITY;
    int64_t i = 0;
    for (; i + 32 <= n; i += 32) {
        tgk_vmax16(&acc[0], x + i);
        tgk_vmax16(&acc[1], x + i + 16);
    }
    if (i < n)
        tgk_vmax16(&acc[0], x + i);
    float lanes[16];
    memcpy(lanes, &acc[1], sizeof lanes);
    tgk_vmax16(&acc[0], lanes);
    float m = -INFINITY;
    for (int j = 0; j < 16; j++)
        m = acc[0][j] > m ? acc[0][j] : m;
    return m;
}

/* NaN wins, as in torch.max. */
static inline float tgk_max(const float *x, int64_t n)
{
    tgk_vf8 zero = {0}, acc[2] = {zero - INFINITY, zero - INFINITY};
    int64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        tgk_max8(&acc[0], x + i);
        tgk_max8(&acc[1], x + i + 8);
    }
    if (i + 8 <= n) {
        tgk_max8(&acc[0], x + i);
        i += 8;
    }
    float m = -INFINITY;
    for (; i < n; i++)
        m = tgk_nan_max(m, x[i]);
    /* the lanes folded as in tgk_hsum8 */
    tgk_vmax8(&acc[0], &acc[1]);
    acc[1] = __builtin_shuffle(acc[0], (tgk_vi8){4, 5, 6, 7, 0, 1, 2, 3});
    tgk_vmax8(&acc[0], &acc[1]);
    acc[1] = __builtin_shuffle(acc[0], (tgk_vi8){2, 3, 0, 1, 6, 7, 4, 5});
    tgk_vmax8(&acc[0], &acc[1]);
    acc[1] = __builtin_shuffle(acc[0], (tgk_vi8){1, 0, 3, 2, 5, 4, 7, 6});
    tgk_vmax8(&acc[0], &acc[1]);
    return tgk_nan_max(m, acc[0][0]);
}

#endif
