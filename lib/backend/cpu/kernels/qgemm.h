/* Integer GEMM for quantized linear layers and convolutions (qgemm.c):
 * u8 activations (affine, zero point) times s8 weights (symmetric) into s32,
 * with AVX-512 VNNI where the CPU has it, AVX2 otherwise, and a scalar loop as
 * the reference. All three give the same integers: the math is exact. */
#ifndef TGK_QGEMM_H
#define TGK_QGEMM_H

#include <stddef.h>
#include <stdint.h>

/* tcompile pastes this header after kernels.h and elem.h into every model's C
 * file, where no include path leads here: the guards skip the includes there. */
#ifndef TGK_KERNELS_H
#include "kernels.h"
#endif
#ifndef TGK_ELEM_H
#include "elem.h"       /* tgk_qparams_u8: the ops' u8 parameters */
#endif

/* Weights w[N,K] (row-major, s8) are packed once, at load time, into blocks of
 * 16 output columns x 4 consecutive k (zero padded), preceded by each column's
 * sum (for the zero-point correction). One layout serves every path. */
size_t tgk_qgemm_packed_size(int64_t N, int64_t K);
void tgk_qgemm_pack(int64_t N, int64_t K, const int8_t *w, void *packed);

/* c[m,n] = sum_k (a[m,k] - a_zero) * w[n,k], for m < M, n < N. */
void tgk_qgemm_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                    int32_t a_zero, const void *packed, int32_t *c, int64_t ldc);

/* The same sums through a float epilogue, without an integer buffer:
 * y[m*ldy + n] = (float)c[m,n] * scale[n] + bias[n] (bias may be NULL). */
void tgk_qgemm_u8s8_f32(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                        int32_t a_zero, const void *packed, const float *scale,
                        const float *bias, float *y, int64_t ldy);

/* Which path tgk_qgemm_u8s8 takes: "avx512vnni", "avx2" or "scalar", the best
 * the CPU has unless set; setting one the CPU lacks gives -1 (tests use this to
 * check every path against the reference). */
const char *tgk_qgemm_path(void);
int tgk_qgemm_set_path(const char *name);

/* Packed weights made on first use and kept until the program (or the shared
 * object holding this code) is unloaded: for compiled models, whose weights
 * never change. *slot is set once, safely from several threads; NULL when out
 * of memory. tgk_qpack_once is the mechanism: fill(ctx, buf) writes `size`
 * bytes (0, or -1 when it failed). */
void *tgk_qpack_once(void **slot, size_t size, int (*fill)(void *ctx, void *buf), void *ctx);
void *tgk_qgemm_pack_once(void **slot, int64_t N, int64_t K, const int8_t *w);

/* Activation quantization, bit-identical on every path:
 * q = clamp(round_half_even(x / scale) + zero, 0, 255). */
void tgk_quantize_u8(int64_t n, const float *x, float scale, int32_t zero, uint8_t *q);
/* The same over rows of n floats, ldx apart, into rows ldq apart, clamped
 * to [lo, hi] (0 and 255: none), on the calling thread alone (for kernels
 * quantizing as they copy into a layout or out of their sums). */
void tgk_quantize_u8_rows(int64_t rows, int64_t n, const float *x, int64_t ldx, float scale,
                          int32_t zero, int32_t lo, int32_t hi, uint8_t *q, int64_t ldq);
/* An activation of u8 values as a table (qlut.c), for a layer with an
 * activation fused before its u8 output: the layer requantizes its float
 * output (the pre-activation) to u8 with p_scale and p_zero, and byte b
 * becomes lut[b] = clamp(round_half_even(act((b - p_zero) * p_scale) /
 * y_scale + y_zero), lo, hi), computed in float64 (act, elem.h's
 * tgk_qact_value). tgk_act_lut fills lut[256];
 * tgk_act_lut_once makes it once into *slot (as tgk_qpack_once; NULL when
 * out of memory); tgk_lut_u8 maps q[0..n) through lut in place (VBMI's
 * byte permutes where the CPU has them, else a loop; the same bytes). */
void tgk_act_lut(int act, float p_scale, int32_t p_zero, float y_scale, int32_t y_zero,
                 int32_t lo, int32_t hi, uint8_t *lut);
const uint8_t *tgk_act_lut_once(void **slot, int act, float p_scale, int32_t p_zero,
                                float y_scale, int32_t y_zero, int32_t lo, int32_t hi);
void tgk_lut_u8(int64_t n, const uint8_t *lut, uint8_t *q);
/* Smallest and largest of x[0..n), NaNs ignored; 0 and 0 when n is 0. */
void tgk_minmax_f32(int64_t n, const float *x, float *lo, float *hi);

/* c's sums requantized to u8 (tgk_requant1, qquant.h): q[m*ldq + n] =
 * clamp(round_half_even(fma(c[m,n], mul[n], add[n])), lo, hi), 0 <= lo <= hi <= 255. */
void tgk_qgemm_u8s8_u8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                       int32_t a_zero, const void *packed, const float *mul, const float *add,
                       int32_t lo, int32_t hi, uint8_t *q, int64_t ldq);

/* Quantized linear layer, activations quantized on the fly:
 * xq = tgk_quantize_u8(x, x_scale, x_zero) (per tensor; with dynamic != 0,
 * x_scale and x_zero come from tgk_qparams_u8 (elem.h) of this x's min and max),
 * y[m,n] = (float)(sum_k (xq[m,k] - x_zero) * w[n,k]) * (x_scale * w_scale[n]) + bias[n].
 * bias may be NULL. 0, or -1 when scratch cannot be allocated. */
int tgk_qlinear_f32(int64_t M, int64_t N, int64_t K, const float *x, float x_scale,
                    int32_t x_zero, int dynamic, const void *packed, const float *w_scale,
                    const float *bias, float *y);
/* The same layer on another GEMM of tgk_qgemm_u8s8_f32's form and its packed
 * weights (the 2:4 sparse one below). */
typedef void (*tgk_qgemm_f32_fn)(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                                 int32_t a_zero, const void *packed, const float *scale,
                                 const float *bias, float *y, int64_t ldy);
int tgk_qlinear_f32_on(tgk_qgemm_f32_fn gemm, int64_t M, int64_t N, int64_t K, const float *x,
                       float x_scale, int32_t x_zero, int dynamic, const void *packed,
                       const float *w_scale, const float *bias, float *y);

/* The int8 2:4 sparse GEMM (qgemm24.c, qlinear_24): the same sums as
 * tgk_qgemm_u8s8 on the weight w[N,K] (K % 4 == 0) that the compressed
 * values [N, K/2] (s8) and 2-bit indices meta [N, ceil(K/8)] (tgraph-format(5),
 * as linear_24's) expand to, the coinciding indices of a file made elsewhere
 * adding up; packed once (tgk_qgemm24_packed_size bytes), reading half the
 * weights. Paths "avx512vnni" and "scalar", as tgk_qgemm_path. */
size_t tgk_qgemm24_packed_size(int64_t N, int64_t K);
void tgk_qgemm24_pack(int64_t N, int64_t K, const void *values, const uint8_t *meta,
                      void *packed);  /* values: int8 */
void *tgk_qgemm24_pack_once(void **slot, int64_t N, int64_t K, const int8_t *values,
                            const uint8_t *meta);
void tgk_qgemm24_u8s8(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                      int32_t a_zero, const void *packed, int32_t *c, int64_t ldc);
void tgk_qgemm24_u8s8_f32(int64_t M, int64_t N, int64_t K, const uint8_t *a, int64_t lda,
                          int32_t a_zero, const void *packed, const float *scale,
                          const float *bias, float *y, int64_t ldy);
const char *tgk_qgemm24_path(void);
int tgk_qgemm24_set_path(const char *name);

/* Quantized convolution (qconv.c), not transposed: x [n, c, *in] is quantized
 * as in tgk_qlinear_f32 into channels-last order, padding reads as x_zero (a
 * float 0), each output position's window is gathered into one row (kernel
 * taps in order, each tap's c/groups channels contiguous) for the int8 GEMM
 * against the weights w [k, c/groups, *kernel] (s8, symmetric, per output
 * channel scale w_scale[k]) packed by tgk_qconv_pack. y [n, k, *out] =
 * acc * (x_scale * w_scale[k]) + bias[k], acc the exact integer sum; bias may
 * be NULL. 0, or -1 when the descriptor is invalid or scratch cannot be had. */
size_t tgk_qconv_packed_size(const tgk_conv_desc *d);
int tgk_qconv_pack(const tgk_conv_desc *d, const int8_t *w, void *packed);   /* -1: no memory */
void *tgk_qconv_pack_once(void **slot, const tgk_conv_desc *d, const int8_t *w);
int tgk_qconv_f32(const tgk_conv_desc *d, const float *x, float x_scale, int32_t x_zero,
                  int dynamic, const void *packed, const float *w_scale, const float *bias,
                  float *y);
/* The same with int8 activations on either side, so that consecutive
 * quantized layers pass u8 between them: the input is x (float, quantized
 * as above) or xq (u8 already, with x_scale and x_zero; not dynamic); the
 * output y (float), or yq: the exact sum acc requantized in one rounding,
 * clamp(round_half_even(fma(acc, m[k], c[k])), y_lo, y_hi) with m[k] =
 * x_scale * w_scale[k] / y_scale and c[k] = bias[k] / y_scale + y_zero,
 * each rounded to float once from double: within one step of quantizing
 * the exact float output with y_scale and y_zero (the clamp is a fused
 * relu or relu6: 0 <= y_lo <= y_hi <= 255). With y_act TGK_QACT_SILU or
 * TGK_QACT_GELU (the activation fused into the layer), the sums are requantized so with p_scale
 * and p_zero in place of y_scale and y_zero, unclamped (the pre-activation
 * in u8), and each byte mapped through lut (tgk_act_lut of the same
 * p_scale, p_zero and the output's y_scale, y_zero, y_lo, y_hi). */
typedef struct {
    const float *x;
    const uint8_t *xq;
    float x_scale;
    int32_t x_zero;
    int dynamic;
    float *y;
    uint8_t *yq;
    float y_scale;
    int32_t y_zero, y_lo, y_hi;
    int y_act;                  /* TGK_QACT_NONE, or an activation (with yq and lut) */
    float p_scale;              /* an activation's pre-activation u8 parameters */
    int32_t p_zero;
    const uint8_t *lut;         /* and its table */
} tgk_qact;

/* Whether a is one the layers take: a u8 input static, a u8 output's bounds
 * within u8, an activation with a u8 output, its table and parameters. */
static inline bool tgk_qact_ok(const tgk_qact *a)
{
    return !(a->xq && a->dynamic) && !(a->yq && a->dynamic) &&
           !(a->yq && !(0 <= a->y_lo && a->y_lo <= a->y_hi && a->y_hi <= 255)) &&
           (a->y_act == TGK_QACT_NONE ||
            (a->y_act >= TGK_QACT_SILU && a->y_act <= TGK_QACT_GELU_TANH && a->yq && a->lut &&
             a->p_scale > 0 && a->p_scale <= 3.4e38f && a->p_zero >= 0 && a->p_zero <= 255));
}

/* a as the paths run it: with an activation, the u8 output is the
 * pre-activation (p_scale, p_zero, unclamped), its table applied after. */
static inline tgk_qact tgk_qact_pre(const tgk_qact *act)
{
    tgk_qact a = *act;
    if (a.y_act) {
        a.y_scale = a.p_scale, a.y_zero = a.p_zero, a.y_lo = 0, a.y_hi = 255;
        a.y_act = TGK_QACT_NONE;
    }
    return a;
}
int tgk_qconv(const tgk_conv_desc *d, const tgk_qact *a, const void *packed,
              const float *w_scale, const float *bias);
/* The linear layer (as tgk_qlinear_f32, static or dynamic) with int8
 * activations on either side as tgk_qconv's: a's x or xq (static) in,
 * [M, K]; a's y or yq (static; requantized, an activation's table) out,
 * [M, N]. 0, or -1 (a refused, no memory). */
int tgk_qlinear(int64_t M, int64_t N, int64_t K, const tgk_qact *a, const void *packed,
                const float *w_scale, const float *bias);

/* Weight-only quantized linear layer (wlinear.c): y[M,N] = x[M,K] * W^T + bias,
 * W[n,k] = q[n,k] * scale[n, k / group], q signed: bits 8 one int8 per weight
 * ([N,K]); bits 4 two per byte ([N, (K+1)/2], k even in the low nibble, two's
 * complement). group <= 0 means K (one scale per row). Blocks of rows are
 * dequantized to float32 and multiplied with sgemm. 0, or -1 (bad bits, no
 * memory). */
int tgk_wlinear_f32(int64_t M, int64_t N, int64_t K, const float *x, const void *q, int bits,
                    int64_t group, const float *scale, const float *bias, float *y);

#endif
