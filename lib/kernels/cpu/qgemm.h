/* Integer GEMM for quantized linear layers and convolutions (qgemm.c):
 * u8 activations (affine, zero point) times s8 weights (symmetric) into s32,
 * with AVX-512 VNNI where the CPU has it, AVX2 otherwise, and a scalar loop as
 * the reference. All three give the same integers: the math is exact. */
#ifndef TGK_QGEMM_H
#define TGK_QGEMM_H

#include <stddef.h>
#include <stdint.h>

/* Weights w[N,K] (row-major, s8) are packed once, at load time, into blocks of
 * 16 output columns x 4 consecutive k (zero padded), preceded by each column's
 * sum (for the zero-point correction). One layout serves every path. */
size_t tgk_qgemm_packed_size(int64_t N, int64_t K);
void tgk_qgemm_pack(int64_t N, int64_t K, const int8_t *w, void *packed);

/* c[m,n] = sum_k (a[m,k] - a_zero) * w[n,k], for m < M, n < N. */
void tgk_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                    int32_t a_zero, const void *packed, int32_t *c, int64_t ldc);

/* Which path tgk_qgemm_u8s8 takes: "avx512vnni", "avx2" or "scalar", the best
 * the CPU has unless set; setting one the CPU lacks gives -1 (tests use this to
 * check every path against the reference). */
const char *tgk_qgemm_path(void);
int tgk_qgemm_set_path(const char *name);

/* Quantized linear layer, activations quantized on the fly:
 * xq = clamp(round_half_even(x / x_scale) + x_zero, 0, 255) (per tensor; with
 * dynamic != 0, x_scale and x_zero are computed from this x's min and max),
 * y[m,n] = (float)(sum_k (xq[m,k] - x_zero) * w[n,k]) * (x_scale * w_scale[n]) + bias[n].
 * bias may be NULL. */
void tgk_qlinear_f32(int64_t M, int64_t N, int64_t K, const float *x, float x_scale,
                     int32_t x_zero, int dynamic, const void *packed, const float *w_scale,
                     const float *bias, float *y);

/* The affine u8 parameters that cover [lo, hi] (always including 0), as the
 * min/max observers and dynamic quantization compute them. */
void tgk_qparams_u8(float lo, float hi, float *scale, int32_t *zero);

#endif
