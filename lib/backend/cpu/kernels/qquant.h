/* Quantizing float32 vectors to u8 in AVX-512 registers, for
 * tgk_quantize_u8 (qgemm.c): the same bits as its scalar quant1 on every
 * lane; and the requantization of the int8 kernels' u8 outputs, exact
 * integer sums straight to u8, the scalar and the vector form alike. */
#ifndef TGK_QQUANT_H
#define TGK_QQUANT_H

#include <math.h>
#include <stdint.h>
#include <string.h>

/* A u8 output's requantization in one rounding: acc (the zero-point
 * corrected sum) times m = x_scale * w_scale / y_scale plus c = bias /
 * y_scale + y_zero, fused (fmaf), clamped to [lo, hi] (NaN: lo), rounded
 * half to even. Within one step of the exact (acc * x_scale * w_scale +
 * bias) / y_scale + y_zero: m and c are each rounded once from double. */
static inline void tgk_requant_params(float scale, float bias, float y_scale, int32_t y_zero,
                                      float *m, float *c)
{
    *m = (float)((double)scale / (double)y_scale);
    *c = (float)((double)bias / (double)y_scale + (double)y_zero);
}

/* v clamped to [lo, hi] (NaN: lo), rounded half to even. */
static inline uint8_t tgk_round_u8(float v, float lo, float hi)
{
    v = v > lo ? v : lo;
    v = v < hi ? v : hi;
    return (uint8_t)nearbyintf(v);
}

static inline uint8_t tgk_requant1(int32_t acc, float m, float c, float lo, float hi)
{
    return tgk_round_u8(fmaf((float)acc, m, c), lo, hi);
}

/* A SiLU fused into a layer with a u8 output: its float output f (as the
 * layer gives it) through silu(f) = f * sigmoid(f), then quantized in one
 * rounding, clamp(round_half_even(fma(silu(f), r, z)), lo, hi) with r =
 * 1/y_scale rounded once from double (tgk_silu_recip) and z = y_zero.
 * silu: sigmoid as exp(-|f|) / (1 + exp(-|f|)) for f < 0, 1 / (1 + exp(-|f|))
 * otherwise, exp as vecmath.h's tgk_exp_reduce (Cody-Waite reduction and its
 * polynomial); |f| clamped to 86 so that exp's power of two stays a
 * normal number (silu(-86) = -3.8e-36, below any u8 step). Every
 * multiply-add is an explicit fmaf, and the one product that feeds a sum
 * (e times a power of two, into 1 + e) is exact, so a compiler fusing
 * products into sums changes nothing: the scalar and the 16-lane form
 * (tgk_silu_quant16) give the same bits on every path. */
static inline float tgk_silu_recip(float y_scale)
{
    return (float)(1.0 / (double)y_scale);
}

static inline float tgk_silu_q(float f)
{
    float a = fabsf(f);
    a = a < 86.0f ? a : 86.0f;
    const float shift = 12582912.0f;            /* 1.5 * 2^23: rounds to integer */
    float t = fmaf(-a, 1.44269504088896341f, shift);
    float nf = t - shift;
    uint32_t tb, sb;
    memcpy(&tb, &t, 4), memcpy(&sb, &shift, 4);
    uint32_t pow2 = (tb - sb + 127u) << 23;     /* 2^n, n = nf in [-124, 0] */
    float r = fmaf(nf, -0.693359375f, -a);
    r = fmaf(nf, 2.12194440e-4f, r);
    float p = 1.9875691500e-4f;
    p = fmaf(p, r, 1.3981999507e-3f);
    p = fmaf(p, r, 8.3334519073e-3f);
    p = fmaf(p, r, 4.1665795894e-2f);
    p = fmaf(p, r, 1.6666665459e-1f);
    p = fmaf(p, r, 5.0000001201e-1f);
    float scale;
    memcpy(&scale, &pow2, 4);
    float e = (fmaf(p, r * r, r) + 1.0f) * scale;
    float s = 1.0f / (1.0f + e);
    return f * (f < 0.0f ? e * s : s);
}

static inline uint8_t tgk_silu_quant1(float f, float r, float z, float lo, float hi)
{
    return tgk_round_u8(fmaf(tgk_silu_q(f), r, z), lo, hi);
}

#if defined(__x86_64__)
#include <immintrin.h>

/* x / s as x times r = 1/s in double, rounded once to float, which is the
 * float quotient whenever it is at least 2^-126 (then it is never a float
 * midpoint, and is at least 2^-49 of itself from one, further than the
 * double's error of under 2^-52), and rounds to 0 like it when smaller; it
 * costs a fraction of vdivps. */
__attribute__((target("avx512f")))
static inline __m512 tgk_div_by_recip(__m512 x, __m512d r)
{
    __m512d lo = _mm512_cvtps_pd(_mm512_castps512_ps256(x));
    __m512d hi = _mm512_cvtps_pd(_mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1)));
    __m256 flo = _mm512_cvtpd_ps(_mm512_mul_pd(lo, r)), fhi = _mm512_cvtpd_ps(_mm512_mul_pd(hi, r));
    return _mm512_castpd_ps(_mm512_insertf64x4(_mm512_castps_pd(_mm512_castps256_ps512(flo)),
                                               _mm256_castps_pd(fhi), 1));
}

/* 16 floats to bytes: clamp(round_half_even(x / s) + z, lo, hi), NaN as z
 * (then clamped); r = 1/s in double, vz = z, lo and hi within [0, 255]. */
__attribute__((target("avx512f")))
static inline __m128i tgk_quant16(__m512 x, __m512d r, __m512 vz, __m512 lo, __m512 hi)
{
    __m512 v = tgk_div_by_recip(x, r);
    v = _mm512_add_ps(_mm512_roundscale_ps(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC), vz);
    v = _mm512_mask_mov_ps(v, _mm512_cmp_ps_mask(v, v, _CMP_UNORD_Q), vz);
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_cvtusepi32_epi8(_mm512_cvtps_epi32(v));
}

/* tgk_requant1 on 16 lanes: the same fused multiply-add (one rounding,
 * as fmaf), vmaxps giving lo for NaN as the comparison above does. */
__attribute__((target("avx512f")))
static inline __m128i tgk_round16(__m512 v, __m512 lo, __m512 hi)
{
    v = _mm512_min_ps(_mm512_max_ps(v, lo), hi);
    return _mm512_cvtepi32_epi8(_mm512_cvt_roundps_epi32(v, _MM_FROUND_TO_NEAREST_INT | _MM_FROUND_NO_EXC));
}

__attribute__((target("avx512f,fma")))
static inline __m128i tgk_requant16(__m512i acc, __m512 m, __m512 c, __m512 lo, __m512 hi)
{
    return tgk_round16(_mm512_fmadd_ps(_mm512_cvtepi32_ps(acc), m, c), lo, hi);
}

/* tgk_silu_quant1 on 16 lanes, operation for operation (vminps and vmaxps
 * give their second operand for NaN, as the scalar selects do). */
__attribute__((target("avx512f,fma")))
static inline __m128i tgk_silu_quant16(__m512 f, __m512 r, __m512 z, __m512 lo, __m512 hi)
{
    const __m512 shift = _mm512_set1_ps(12582912.0f), one = _mm512_set1_ps(1.0f);
    __m512 a = _mm512_min_ps(_mm512_abs_ps(f), _mm512_set1_ps(86.0f));
    __m512 t = _mm512_fnmadd_ps(a, _mm512_set1_ps(1.44269504088896341f), shift);
    __m512 nf = _mm512_sub_ps(t, shift);
    __m512i n = _mm512_sub_epi32(_mm512_castps_si512(t), _mm512_castps_si512(shift));
    __m512 scale = _mm512_castsi512_ps(_mm512_slli_epi32(_mm512_add_epi32(n, _mm512_set1_epi32(127)), 23));
    __m512 x = _mm512_fnmsub_ps(nf, _mm512_set1_ps(0.693359375f), a);
    x = _mm512_fmadd_ps(nf, _mm512_set1_ps(2.12194440e-4f), x);
    __m512 p = _mm512_set1_ps(1.9875691500e-4f);
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.3981999507e-3f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(8.3334519073e-3f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(4.1665795894e-2f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(1.6666665459e-1f));
    p = _mm512_fmadd_ps(p, x, _mm512_set1_ps(5.0000001201e-1f));
    __m512 e = _mm512_mul_ps(_mm512_add_ps(_mm512_fmadd_ps(p, _mm512_mul_ps(x, x), x), one), scale);
    __m512 s = _mm512_div_ps(one, _mm512_add_ps(one, e));
    __mmask16 neg = _mm512_cmp_ps_mask(f, _mm512_setzero_ps(), _CMP_LT_OQ);
    __m512 g = _mm512_mul_ps(f, _mm512_mask_mul_ps(s, neg, e, s));
    return tgk_round16(_mm512_fmadd_ps(g, r, z), lo, hi);
}
#endif

#endif
