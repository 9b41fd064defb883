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
    TGK_DT_COUNT
} tgk_dtype;

size_t tgk_dtype_size(tgk_dtype t);
bool tgk_dtype_is_float(tgk_dtype t);
/* Narrowing rounds to nearest even; overflow gives inf (f16, bf16, e5m2) or
 * saturates (e4m3). */
uint16_t tgk_f32_to_f16(float f);
float tgk_f16_to_f32(uint16_t h);
uint16_t tgk_f32_to_bf16(float f);
float tgk_bf16_to_f32(uint16_t b);
uint8_t tgk_f32_to_f8e4m3(float f);
float tgk_f8e4m3_to_f32(uint8_t b);
uint8_t tgk_f32_to_f8e5m2(float f);
float tgk_f8e5m2_to_f32(uint8_t b);
/* Element i as double / int64, and the reverse. Float to integer truncates
 * toward zero and saturates (NaN gives 0); bool is x != 0. */
double tgk_load_f64(tgk_dtype t, const void *p, int64_t i);
void tgk_store_f64(tgk_dtype t, void *p, int64_t i, double v);
int64_t tgk_load_i64(tgk_dtype t, const void *p, int64_t i);
void tgk_store_i64(tgk_dtype t, void *p, int64_t i, int64_t v);
/* Elements [begin, end) from src (type st) to dst (type dt), dt != st, one at
 * a time; integers convert exactly. (The CPU's tgk_cast runs it in parallel.) */
void tgk_cast_range(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t begin,
                    int64_t end);

#endif
