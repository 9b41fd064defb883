/* Element formats: one element of each dtype read or written as double or
 * int64, and the narrow floats' rounding. They are part of what a dtype means,
 * so core owns them (lib/dtype.c wraps them); plain C with no IR types, so the
 * backends' kernels and compiled models (which need nothing of libtgraph) share
 * this one implementation (elem.c). */
#ifndef TGK_ELEM_H
#define TGK_ELEM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Element types, numbered like tg_dtype (lib/dtype.h; dtype.c checks
 * that at compile time), so the kernels need nothing of libtgraph. */
typedef enum {
    TGK_DT_NONE = 0,
    TGK_F32, TGK_F64, TGK_F16, TGK_BF16, TGK_F8E4M3, TGK_F8E5M2,
    TGK_I8, TGK_U8, TGK_I16, TGK_I32, TGK_I64, TGK_BOOL,
    TGK_U16, TGK_U32, TGK_U64,
    TGK_I4, TGK_U4, TGK_F8E4M3FNUZ, TGK_F8E5M2FNUZ, TGK_F4E2M1,
    TGK_DT_COUNT
} tgk_dtype;

size_t tgk_dtype_size(tgk_dtype t);
bool tgk_dtype_is_float(tgk_dtype t);
/* Narrowing rounds to nearest even; overflow gives inf (f16, bf16, e5m2) or
 * saturates (e4m3, the fnuz formats and e2m1, which have no inf). The fnuz
 * formats have no -0 (it is their NaN, 0x80); e2m1 has no NaN: a NaN becomes
 * a zero, -0 for a NaN of clear sign, +0 for one with the sign set (ml_dtypes'
 * rule). i4 and u4 take one byte an element (the value in the low nibble, as
 * ml_dtypes stores them); a float out of their range, or NaN, gives 0 (as
 * ml_dtypes converts; ONNX leaves it undefined), an integer wraps. */
uint16_t tgk_f32_to_f16(float f);
float tgk_f16_to_f32(uint16_t h);
uint16_t tgk_f32_to_bf16(float f);
float tgk_bf16_to_f32(uint16_t b);
uint8_t tgk_f32_to_f8e4m3(float f);
float tgk_f8e4m3_to_f32(uint8_t b);
uint8_t tgk_f32_to_f8e5m2(float f);
float tgk_f8e5m2_to_f32(uint8_t b);
/* Element i as double / int64, and the reverse. Float to integer truncates
 * toward zero and saturates (NaN gives 0; i4/u4: see above); bool is x != 0. Integers travel as
 * int64: unsigned ones zero-extended, u64 as its bit pattern (values of 2^63 and
 * up read negative; the u64 paths of the kernels compare and divide them as
 * uint64), stores truncate to the width (wrap, as C's unsigned arithmetic). */
double tgk_load_f64(tgk_dtype t, const void *p, int64_t i);
void tgk_store_f64(tgk_dtype t, void *p, int64_t i, double v);
int64_t tgk_load_i64(tgk_dtype t, const void *p, int64_t i);
void tgk_store_i64(tgk_dtype t, void *p, int64_t i, int64_t v);
/* Elements [begin, end) from src (type st) to dst (type dt), dt != st, one at
 * a time; integers convert exactly. (The CPU's tgk_cast runs it in parallel.) */
void tgk_cast_range(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t begin,
                    int64_t end);

/* The quantized formats of the quantization ops (ops.def: quantize, qlinear),
 * part of what those ops mean, as the element formats are of the dtypes.
 * tgk_qparams_u8: the affine u8 parameters that cover [lo, hi] (always
 * including 0), as the min/max observers and dynamic quantization compute
 * them. tgk_wq_weight: weight [n, k] of a weight-only qlinear's matrix of
 * K columns, q * scale[n, k / group]: q signed, bits 8 one int8 per weight
 * ([N,K]), bits 4 two per byte ([N, (K+1)/2], k even in the low nibble, two's
 * complement); group <= 0 means K (one scale per row). */
void tgk_qparams_u8(float lo, float hi, float *scale, int32_t *zero);
/* A quantized layer's fused activation (qconv and qlinear's y_act), and its
 * value at v in float64: silu(v) = v / (1 + exp(-v)); gelu, v * (1 +
 * erf(v / sqrt 2)) / 2; gelu_tanh, v * (1 + tanh(sqrt(2/pi) (v + 0.044715
 * v^3))) / 2. */
enum { TGK_QACT_NONE = 0, TGK_QACT_SILU = 1, TGK_QACT_GELU = 2, TGK_QACT_GELU_TANH = 3 };
double tgk_qact_value(int act, double v);
float tgk_wq_weight(const void *q, int bits, int64_t K, int64_t group, const float *scale,
                    int64_t n, int64_t k);

#endif
