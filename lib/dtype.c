/* Element types: name tables and exact scalar conversions.
 *
 * All narrow float formats (f16, bf16, f8e4m3, f8e5m2) go through one encoder and
 * one decoder parameterized by exponent/mantissa widths, so rounding, subnormals,
 * NaN and overflow are handled once. The encoder takes a double, which holds every
 * f32 exactly, so storing a double never rounds twice. */
#include "dtype.h"

#include <math.h>
#include <string.h>

typedef struct {
    const char *name, *st, *npy;
    size_t size;
} dtype_info;

static const dtype_info dtypes[TG_DTYPE_COUNT] = {
    [TG_DTYPE_NONE] = {"none", NULL, NULL, 0},
    [TG_F32] = {"f32", "F32", "<f4", 4},
    [TG_F64] = {"f64", "F64", "<f8", 8},
    [TG_F16] = {"f16", "F16", "<f2", 2},
    [TG_BF16] = {"bf16", "BF16", NULL, 2},
    [TG_F8E4M3] = {"f8e4m3", "F8_E4M3", NULL, 1},
    [TG_F8E5M2] = {"f8e5m2", "F8_E5M2", NULL, 1},
    [TG_I8] = {"i8", "I8", "|i1", 1},
    [TG_U8] = {"u8", "U8", "|u1", 1},
    [TG_I16] = {"i16", "I16", "<i2", 2},
    [TG_I32] = {"i32", "I32", "<i4", 4},
    [TG_I64] = {"i64", "I64", "<i8", 8},
    [TG_BOOL] = {"bool", "BOOL", "|b1", 1},
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

/* Accepts the descr with '<', '=' or (for one-byte types) '|' or none; big-endian
 * multi-byte types are not ours to read. */
tg_dtype tg_dtype_from_npy_descr(const char *s)
{
    if (!s || !*s)
        return TG_DTYPE_NONE;
    char order = 0;
    if (strchr("<>=|", s[0]))
        order = *s++;
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        if (!dtypes[t].npy || strcmp(s, dtypes[t].npy + 1) != 0)
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
           t == TG_F8E5M2;
}

bool tg_dtype_is_int(tg_dtype t)
{
    return t == TG_I8 || t == TG_U8 || t == TG_I16 || t == TG_I32 || t == TG_I64;
}

/* ---- narrow floats ---- */

typedef struct {
    int ebits, mbits, bias;
    uint32_t max_finite;    /* code of the largest finite value (sign clear) */
    uint32_t inf;           /* code of +inf, 0 when the format has none */
    uint32_t nan;           /* canonical quiet NaN (sign clear) */
} minifloat;

static const minifloat fmt_f16 = {5, 10, 15, 0x7bff, 0x7c00, 0x7e00};
static const minifloat fmt_bf16 = {8, 7, 127, 0x7f7f, 0x7f80, 0x7fc0};
/* e4m3fn: exponent 15 is a normal binade except mantissa 111, which is NaN. */
static const minifloat fmt_e4m3 = {4, 3, 7, 0x7e, 0, 0x7f};
static const minifloat fmt_e5m2 = {5, 2, 15, 0x7b, 0x7c, 0x7e};

/* Round to nearest, ties to even. Overflow (and inf) becomes inf, or the largest
 * finite value for formats without inf (e4m3 "satfinite", as CUDA's converters). */
static uint32_t mini_encode(const minifloat *m, double d)
{
    uint64_t bits;
    memcpy(&bits, &d, 8);
    uint32_t sign = (uint32_t)(bits >> 63) << (m->ebits + m->mbits);
    int e = (int)((bits >> 52) & 0x7ff);
    uint64_t mant = bits & ((UINT64_C(1) << 52) - 1);
    if (e == 0x7ff) {
        if (mant)
            return sign | m->nan;
        return sign | (m->inf ? m->inf : m->max_finite);
    }
    if (e == 0 && mant == 0)
        return sign;
    /* d = mant * 2^exp with mant an integer; ea = floor(log2|d|). */
    int exp, ea;
    if (e == 0) {
        exp = -1074;
        ea = -1074 + 63 - __builtin_clzll(mant);
    } else {
        mant |= UINT64_C(1) << 52;
        exp = e - 1075;
        ea = e - 1023;
    }
    int emin = 1 - m->bias;                  /* exponent of the smallest normal */
    int te = ea > emin ? ea : emin;
    int shift = (te - m->mbits) - exp;       /* >= 1 for every format here */
    uint64_t r;
    if (shift >= 64) {
        r = 0;                               /* far below half the smallest step */
    } else {
        r = mant >> shift;
        uint64_t rem = mant & ((UINT64_C(1) << shift) - 1);
        uint64_t half = UINT64_C(1) << (shift - 1);
        r += (rem > half) | ((rem == half) & r);     /* branch-free: data is random */
    }
    uint64_t one = UINT64_C(1) << m->mbits;
    if (r >= 2 * one) {                      /* rounding carried into the next binade */
        r >>= 1;
        te++;
    }
    uint64_t code;
    if (r < one)
        code = r;                            /* subnormal (or zero) */
    else if (te + m->bias >= (1 << (m->ebits + 1)))
        code = UINT64_MAX;                   /* far out of range */
    else
        code = ((uint64_t)(te + m->bias) << m->mbits) | (r - one);
    if (code > m->max_finite)
        return sign | (m->inf ? m->inf : m->max_finite);
    return sign | (uint32_t)code;
}

static float mini_decode(const minifloat *m, uint32_t c)
{
    int nb = m->ebits + m->mbits;
    uint32_t sign = (c >> nb & 1) << 31;     /* applied as a bit: data is random */
    uint32_t mag = c & ((1u << nb) - 1);
    int e = (int)(mag >> m->mbits);
    uint32_t mant = mag & ((1u << m->mbits) - 1);
    uint32_t bits;
    if (mag > m->max_finite)
        bits = m->inf && mag == m->inf ? 0x7f800000u : 0x7fc00000u;
    else if (e == 0) {
        float v = ldexpf((float)mant, 1 - m->bias - m->mbits);
        memcpy(&bits, &v, 4);
    } else
        bits = (uint32_t)(e - m->bias + 127) << 23 | mant << (23 - m->mbits);
    bits |= sign;
    float v;
    memcpy(&v, &bits, 4);
    return v;
}

static const minifloat *mini_of(tg_dtype t)
{
    switch (t) {
    case TG_F16: return &fmt_f16;
    case TG_BF16: return &fmt_bf16;
    case TG_F8E4M3: return &fmt_e4m3;
    case TG_F8E5M2: return &fmt_e5m2;
    default: return NULL;
    }
}

uint16_t tg_f32_to_f16(float f) { return (uint16_t)mini_encode(&fmt_f16, f); }
float tg_f16_to_f32(uint16_t h) { return mini_decode(&fmt_f16, h); }
uint16_t tg_f32_to_bf16(float f) { return (uint16_t)mini_encode(&fmt_bf16, f); }
uint8_t tg_f32_to_f8e4m3(float f) { return (uint8_t)mini_encode(&fmt_e4m3, f); }
float tg_f8e4m3_to_f32(uint8_t b) { return mini_decode(&fmt_e4m3, b); }
uint8_t tg_f32_to_f8e5m2(float f) { return (uint8_t)mini_encode(&fmt_e5m2, f); }
float tg_f8e5m2_to_f32(uint8_t b) { return mini_decode(&fmt_e5m2, b); }

/* bf16 is the top half of an f32: decoding is a shift. */
float tg_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* ---- buffers ---- */

/* Float to integer: truncate toward zero, saturating at the type's range; NaN is 0.
 * (Out-of-range casts are undefined in C; this keeps them defined.) */
static int64_t f64_to_int(double v, int64_t lo, int64_t hi)
{
    if (v != v)
        return 0;
    if (v <= (double)lo)
        return lo;
    if (v >= (double)hi)          /* (double)INT64_MAX rounds up to 2^63 */
        return hi;
    return (int64_t)v;
}

double tg_load_f64(tg_dtype t, const void *p, size_t i)
{
    switch (t) {
    case TG_F32: return ((const float *)p)[i];
    case TG_F64: return ((const double *)p)[i];
    case TG_F16: return tg_f16_to_f32(((const uint16_t *)p)[i]);
    case TG_BF16: return tg_bf16_to_f32(((const uint16_t *)p)[i]);
    case TG_F8E4M3: return tg_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    case TG_F8E5M2: return tg_f8e5m2_to_f32(((const uint8_t *)p)[i]);
    case TG_I8: return ((const int8_t *)p)[i];
    case TG_U8: return ((const uint8_t *)p)[i];
    case TG_I16: return ((const int16_t *)p)[i];
    case TG_I32: return ((const int32_t *)p)[i];
    case TG_I64: return (double)((const int64_t *)p)[i];
    case TG_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

void tg_store_f64(tg_dtype t, void *p, size_t i, double v)
{
    switch (t) {
    case TG_F32: ((float *)p)[i] = (float)v; break;
    case TG_F64: ((double *)p)[i] = v; break;
    case TG_F16: ((uint16_t *)p)[i] = (uint16_t)mini_encode(&fmt_f16, v); break;
    case TG_BF16: ((uint16_t *)p)[i] = (uint16_t)mini_encode(&fmt_bf16, v); break;
    case TG_F8E4M3: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e4m3, v); break;
    case TG_F8E5M2: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e5m2, v); break;
    case TG_I8: ((int8_t *)p)[i] = (int8_t)f64_to_int(v, INT8_MIN, INT8_MAX); break;
    case TG_U8: ((uint8_t *)p)[i] = (uint8_t)f64_to_int(v, 0, UINT8_MAX); break;
    case TG_I16: ((int16_t *)p)[i] = (int16_t)f64_to_int(v, INT16_MIN, INT16_MAX); break;
    case TG_I32: ((int32_t *)p)[i] = (int32_t)f64_to_int(v, INT32_MIN, INT32_MAX); break;
    case TG_I64: ((int64_t *)p)[i] = f64_to_int(v, INT64_MIN, INT64_MAX); break;
    case TG_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

/* Integers and bools move through int64 so i64 values above 2^53 stay exact;
 * narrowing wraps as two's complement (like NumPy's astype). */
static int64_t load_i64(tg_dtype t, const void *p, size_t i)
{
    switch (t) {
    case TG_I8: return ((const int8_t *)p)[i];
    case TG_U8: return ((const uint8_t *)p)[i];
    case TG_I16: return ((const int16_t *)p)[i];
    case TG_I32: return ((const int32_t *)p)[i];
    case TG_I64: return ((const int64_t *)p)[i];
    case TG_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

static void store_i64(tg_dtype t, void *p, size_t i, int64_t v)
{
    switch (t) {
    case TG_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TG_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TG_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case TG_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TG_I64: ((int64_t *)p)[i] = v; break;
    case TG_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    default: break;
    }
}

void tg_convert(tg_dtype dt, void *dst, tg_dtype st, const void *src, size_t n)
{
    if (!dtype_valid(dt) || !dtype_valid(st))
        return;
    if (dt == st) {
        if (dt == TG_BOOL)       /* normalize any nonzero byte to 1 */
            for (size_t i = 0; i < n; i++)
                ((uint8_t *)dst)[i] = ((const uint8_t *)src)[i] != 0;
        else
            memmove(dst, src, n * dtypes[dt].size);
        return;
    }
    if (!tg_dtype_is_float(dt) && !tg_dtype_is_float(st)) {
        for (size_t i = 0; i < n; i++)
            store_i64(dt, dst, i, load_i64(st, src, i));
        return;
    }
    /* the hot pairs, f32 to and from a narrow float, without the per-element switch */
    const minifloat *m;
    if (dt == TG_F32 && st == TG_BF16) {
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = tg_bf16_to_f32(((const uint16_t *)src)[i]);
        return;
    }
    if (dt == TG_F32 && (m = mini_of(st))) {
        for (size_t i = 0; i < n; i++)
            ((float *)dst)[i] = mini_decode(m, m->ebits + m->mbits == 7
                                                   ? ((const uint8_t *)src)[i]
                                                   : ((const uint16_t *)src)[i]);
        return;
    }
    if (st == TG_F32 && (m = mini_of(dt))) {
        for (size_t i = 0; i < n; i++) {
            uint32_t c = mini_encode(m, ((const float *)src)[i]);
            if (m->ebits + m->mbits == 7)
                ((uint8_t *)dst)[i] = (uint8_t)c;
            else
                ((uint16_t *)dst)[i] = (uint16_t)c;
        }
        return;
    }
    for (size_t i = 0; i < n; i++)
        tg_store_f64(dt, dst, i, tg_load_f64(st, src, i));
}
