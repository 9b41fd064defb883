/* Quantizing float32 vectors to u8 in AVX-512 registers, for
 * tgk_quantize_u8 (qgemm.c): the same bits as its scalar quant1 on every
 * lane; and the requantization of the int8 kernels' u8 outputs, exact
 * integer sums straight to u8, the scalar and the vector form alike. */
#ifndef TGK_QQUANT_H
#define TGK_QQUANT_H

#include <math.h>
#include <stdint.h>

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

#endif

#endif
