/* Element types: name tables, and the scalar and buffer conversions of dtype.h
 * (exact: round to nearest even; see lib/elem.c). */
#include "dtype.h"
#include "elem.h"

#include <math.h>
#include <string.h>

/* npy: the .npy descr. NumPy has no bf16 or float8, so those use the dtype names
 * of ml_dtypes (the package JAX and ONNX use for them), without a byte order:
 * np.load reads such a file back as that dtype once ml_dtypes is imported (and
 * without it fails naming the type). npy.c documents the convention. */
typedef struct {
    const char *name, *st, *npy;
    size_t size;
} dtype_info;

static const dtype_info dtypes[TG_DTYPE_COUNT] = {
    [TG_DTYPE_NONE] = {"none", NULL, NULL, 0},
    [TG_F32] = {"f32", "F32", "<f4", 4},
    [TG_F64] = {"f64", "F64", "<f8", 8},
    [TG_F16] = {"f16", "F16", "<f2", 2},
    [TG_BF16] = {"bf16", "BF16", "bfloat16", 2},
    [TG_F8E4M3] = {"f8e4m3", "F8_E4M3", "float8_e4m3fn", 1},
    [TG_F8E5M2] = {"f8e5m2", "F8_E5M2", "float8_e5m2", 1},
    [TG_I8] = {"i8", "I8", "|i1", 1},
    [TG_U8] = {"u8", "U8", "|u1", 1},
    [TG_I16] = {"i16", "I16", "<i2", 2},
    [TG_I32] = {"i32", "I32", "<i4", 4},
    [TG_I64] = {"i64", "I64", "<i8", 8},
    [TG_BOOL] = {"bool", "BOOL", "|b1", 1},
    [TG_U16] = {"u16", "U16", "<u2", 2},
    [TG_U32] = {"u32", "U32", "<u4", 4},
    [TG_U64] = {"u64", "U64", "<u8", 8},
    [TG_I4] = {"i4", "I4", "int4", 1},
    [TG_U4] = {"u4", "U4", "uint4", 1},
    [TG_F8E4M3FNUZ] = {"f8e4m3fnuz", "F8_E4M3FNUZ", "float8_e4m3fnuz", 1},
    [TG_F8E5M2FNUZ] = {"f8e5m2fnuz", "F8_E5M2FNUZ", "float8_e5m2fnuz", 1},
    [TG_F4E2M1] = {"f4e2m1", "F4_E2M1", "float4_e2m1fn", 1},
};

static bool dtype_valid(tg_dtype t) { return t > TG_DTYPE_NONE && t < TG_DTYPE_COUNT; }

size_t tg_dtype_size(tg_dtype t) { return dtype_valid(t) ? dtypes[t].size : 0; }
const char *tg_dtype_name(tg_dtype t) { return dtype_valid(t) ? dtypes[t].name : "none"; }
const char *tg_dtype_st_name(tg_dtype t) { return dtype_valid(t) ? dtypes[t].st : NULL; }
const char *tg_dtype_npy_descr(tg_dtype t) { return dtype_valid(t) ? dtypes[t].npy : NULL; }

tg_dtype tg_dtype_from_name(const char *s)
{
    for (int t = 1; s && t < TG_DTYPE_COUNT; t++)
        if (strcmp(s, dtypes[t].name) == 0)
            return (tg_dtype)t;
    return TG_DTYPE_NONE;
}

tg_dtype tg_dtype_from_st_name(const char *s)
{
    for (int t = 1; s && t < TG_DTYPE_COUNT; t++)
        if (strcmp(s, dtypes[t].st) == 0)
            return (tg_dtype)t;
    return TG_DTYPE_NONE;
}

bool tg_dtype_npy_is_name(const char *descr)
{
    return descr && *descr && !strchr("<>=|", descr[0]);
}

/* Accepts the descr with '<', '=' or (for one-byte types) '|' or none; big-endian
 * multi-byte types are not ours to read. An ml_dtypes name matches exactly. */
tg_dtype tg_dtype_from_npy_descr(const char *s)
{
    if (!s || !*s)
        return TG_DTYPE_NONE;
    for (int t = 1; t < TG_DTYPE_COUNT; t++)
        if (tg_dtype_npy_is_name(dtypes[t].npy) && !strcmp(s, dtypes[t].npy))
            return (tg_dtype)t;
    char order = 0;
    if (strchr("<>=|", s[0]))
        order = *s++;
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        if (!dtypes[t].npy || tg_dtype_npy_is_name(dtypes[t].npy) ||
            strcmp(s, dtypes[t].npy + 1) != 0)
            continue;
        if (order == '>' && dtypes[t].size > 1)
            return TG_DTYPE_NONE;
        if (order == '|' && dtypes[t].size > 1)
            return TG_DTYPE_NONE;
        return (tg_dtype)t;
    }
    return TG_DTYPE_NONE;
}

bool tg_dtype_is_float(tg_dtype t)
{
    return t == TG_F32 || t == TG_F64 || t == TG_F16 || t == TG_BF16 || t == TG_F8E4M3 ||
           t == TG_F8E5M2 || t == TG_F8E4M3FNUZ || t == TG_F8E5M2FNUZ || t == TG_F4E2M1;
}

bool tg_dtype_is_int(tg_dtype t)
{
    return t == TG_I4 || t == TG_I8 || t == TG_U8 || t == TG_I16 || t == TG_I32 ||
           t == TG_I64 || tg_dtype_is_unsigned(t);
}

bool tg_dtype_is_unsigned(tg_dtype t)
{
    return t == TG_U4 || t == TG_U8 || t == TG_U16 || t == TG_U32 || t == TG_U64;
}

/* ---- narrow floats ---- */

/* The conversions themselves are elem.c's, which numbers its types like tg_dtype. */
_Static_assert((int)TGK_F32 == (int)TG_F32 && (int)TGK_BOOL == (int)TG_BOOL &&
               (int)TGK_F4E2M1 == (int)TG_F4E2M1 && (int)TGK_DT_COUNT == (int)TG_DTYPE_COUNT, "tgk_dtype follows tg_dtype");

uint16_t tg_f32_to_f16(float f) { return tgk_f32_to_f16(f); }
float tg_f16_to_f32(uint16_t h) { return tgk_f16_to_f32(h); }
uint16_t tg_f32_to_bf16(float f) { return tgk_f32_to_bf16(f); }
float tg_bf16_to_f32(uint16_t b) { return tgk_bf16_to_f32(b); }
uint8_t tg_f32_to_f8e4m3(float f) { return tgk_f32_to_f8e4m3(f); }
float tg_f8e4m3_to_f32(uint8_t b) { return tgk_f8e4m3_to_f32(b); }
uint8_t tg_f32_to_f8e5m2(float f) { return tgk_f32_to_f8e5m2(f); }
float tg_f8e5m2_to_f32(uint8_t b) { return tgk_f8e5m2_to_f32(b); }

double tg_load_f64(tg_dtype t, const void *p, size_t i)
{
    return dtype_valid(t) ? tgk_load_f64((tgk_dtype)t, p, (int64_t)i) : 0;
}

void tg_store_f64(tg_dtype t, void *p, size_t i, double v)
{
    if (dtype_valid(t))
        tgk_store_f64((tgk_dtype)t, p, (int64_t)i, v);
}

void tg_convert(tg_dtype dt, void *dst, tg_dtype st, const void *src, size_t n)
{
    if (!dtype_valid(dt) || !dtype_valid(st))
        return;
    if (dt == TG_BOOL && st == TG_BOOL) {       /* normalize any nonzero byte to 1 */
        for (size_t i = 0; i < n; i++)
            ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i] != 0;
        return;
    }
    if (dt == st)
        memmove(dst, src, n * tg_dtype_size(dt));
    else
        tgk_cast_range((tgk_dtype)dt, dst, (tgk_dtype)st, src, 0, (int64_t)n);
}
