/* Element types, their names in TG/safetensors/NumPy, and exact conversions. */
#ifndef TG_DTYPE_H
#define TG_DTYPE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* Zero is "no type", so a zeroed struct is never silently f32. */
typedef enum {
    TG_DTYPE_NONE = 0,
    TG_F32, TG_F64, TG_F16, TG_BF16, TG_F8E4M3, TG_F8E5M2,
    TG_I8, TG_U8, TG_I16, TG_I32, TG_I64, TG_BOOL,
    TG_U16, TG_U32, TG_U64,     /* appended: the numbers are the ABI's and never change */
    /* one byte an element, as ml_dtypes holds them (ONNX packs the 4-bit ones
     * two to a byte; the importer unpacks them) */
    TG_I4, TG_U4, TG_F8E4M3FNUZ, TG_F8E5M2FNUZ, TG_F4E2M1,
    TG_DTYPE_COUNT
} tg_dtype;

size_t tg_dtype_size(tg_dtype t);          /* bytes per element, 0 for NONE */
const char *tg_dtype_name(tg_dtype t);     /* "f32", "bf16", "f8e4m3", "i4", "bool" ... */
tg_dtype tg_dtype_from_name(const char *s);        /* NONE if unknown */
const char *tg_dtype_st_name(tg_dtype t);  /* safetensors: "F32", "BF16", "F8_E4M3" ... */
tg_dtype tg_dtype_from_st_name(const char *s);
/* "<f4", "|b1" ..., or for the types NumPy lacks the ml_dtypes name ("bfloat16",
 * "float8_e4m3fn", "float8_e5m2", "int4", "uint4", "float8_e4m3fnuz",
 * "float8_e5m2fnuz", "float4_e2m1fn"); NULL when there is none. */
const char *tg_dtype_npy_descr(tg_dtype t);
bool tg_dtype_npy_is_name(const char *descr);  /* an ml_dtypes name, no byte order */
tg_dtype tg_dtype_from_npy_descr(const char *s);
bool tg_dtype_is_float(tg_dtype t);
bool tg_dtype_is_int(tg_dtype t);          /* signed or unsigned integer, not bool */
bool tg_dtype_is_unsigned(tg_dtype t);     /* u4, u8, u16, u32, u64 */

/* Scalar conversions. Narrowing rounds to nearest, ties to even; NaN stays NaN;
 * overflow gives inf (f16, bf16, e5m2) or saturates to the largest finite value
 * (e4m3, which has no inf; so do the fnuz formats and f4e2m1: lib/elem.h). */
uint16_t tg_f32_to_f16(float f);
float tg_f16_to_f32(uint16_t h);
uint16_t tg_f32_to_bf16(float f);
float tg_bf16_to_f32(uint16_t b);
uint8_t tg_f32_to_f8e4m3(float f);
float tg_f8e4m3_to_f32(uint8_t b);
uint8_t tg_f32_to_f8e5m2(float f);
float tg_f8e5m2_to_f32(uint8_t b);

/* Element i of a buffer of type t as double, and the reverse (float-to-int truncates
 * toward zero like C, saturating at the type's range, NaN to 0; bool is x != 0).
 * Narrow floats are rounded from the double directly, never through f32. */
double tg_load_f64(tg_dtype t, const void *p, size_t i);
void tg_store_f64(tg_dtype t, void *p, size_t i, double v);
/* Convert n elements between buffers of any two types (integer to integer is exact
 * through int64 and wraps when narrowing, like NumPy's astype). */
void tg_convert(tg_dtype dt, void *dst, tg_dtype st, const void *src, size_t n);

#endif
