/* Quantizing float32 vectors to u8 in AVX-512 registers, for the kernels'
 * epilogues and tgk_quantize_u8 (qgemm.c) alike: the same bits as its
 * scalar quant1 on every lane. */
#ifndef TGK_QQUANT_H
#define TGK_QQUANT_H

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
#endif

#endif
