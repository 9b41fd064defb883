/* Element conversions (elem.h): the one implementation, used by the library
 * (lib/dtype.c), by the CPU kernels and by compiled models (which need nothing
 * of libtgraph). All narrow float formats (f16, bf16, f8e4m3, f8e5m2, their fnuz
 * forms, f4e2m1) go through one
 * encoder and one decoder parameterized by exponent and mantissa widths, so
 * rounding, subnormals, NaN and overflow are handled once. The encoder takes a
 * double, which holds every f32 exactly, so storing a double never rounds twice. */
#include <math.h>
#include <string.h>

#include "elem.h"

size_t tgk_dtype_size(tgk_dtype t)
{
    switch (t) {
    case TGK_F64: case TGK_I64: case TGK_U64: return 8;
    case TGK_F32: case TGK_I32: case TGK_U32: return 4;
    case TGK_F16: case TGK_BF16: case TGK_I16: case TGK_U16: return 2;
    case TGK_F8E4M3: case TGK_F8E5M2: case TGK_I8: case TGK_U8: case TGK_BOOL: return 1;
    case TGK_I4: case TGK_U4: case TGK_F8E4M3FNUZ: case TGK_F8E5M2FNUZ: case TGK_F4E2M1: return 1;
    default: return 0;
    }
}

bool tgk_dtype_is_float(tgk_dtype t)
{
    return (t >= TGK_F32 && t <= TGK_F8E5M2) || t == TGK_F8E4M3FNUZ || t == TGK_F8E5M2FNUZ ||
           t == TGK_F4E2M1;
}

/* ---- narrow floats: one encoder and one decoder for every format ---------- */

typedef struct {
    int ebits, mbits, bias;
    uint32_t max_finite;    /* code of the largest finite value (sign clear) */
    uint32_t inf;           /* code of +inf, 0 when the format has none */
    uint32_t nan;           /* canonical quiet NaN (sign clear); with no NaN, what one gives */
    bool fnuz;              /* "negative zero" is NaN: no -0 (a result that is 0 is +0) */
    bool no_nan;            /* no NaN code: NaN gives `nan` with the sign flipped (e2m1) */
} minifloat;

static const minifloat fmt_f16 = {5, 10, 15, 0x7bff, 0x7c00, 0x7e00, false, false};
static const minifloat fmt_bf16 = {8, 7, 127, 0x7f7f, 0x7f80, 0x7fc0, false, false};
/* e4m3fn: exponent 15 is a normal binade except mantissa 111, which is NaN. */
static const minifloat fmt_e4m3 = {4, 3, 7, 0x7e, 0, 0x7f, false, false};
static const minifloat fmt_e5m2 = {5, 2, 15, 0x7b, 0x7c, 0x7e, false, false};
/* fnuz: every exponent is a normal binade; the one NaN is 0x80. */
static const minifloat fmt_e4m3fnuz = {4, 3, 8, 0x7f, 0, 0x80, true, false};
static const minifloat fmt_e5m2fnuz = {5, 2, 16, 0x7f, 0, 0x80, true, false};
/* e2m1: 0, 0.5, 1, 1.5, 2, 3, 4, 6; NaN gives -0 (8) for +NaN, +0 for -NaN. */
static const minifloat fmt_e2m1 = {2, 1, 1, 0x7, 0, 0x8, false, true};

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
            return m->fnuz ? m->nan : m->no_nan ? sign ^ m->nan : sign | m->nan;
        return sign | (m->inf ? m->inf : m->max_finite);
    }
    if (e == 0 && mant == 0)
        return m->fnuz ? 0 : sign;
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
    if (code == 0 && m->fnuz)
        return 0;
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
    if (m->fnuz && c == m->nan)
        bits = 0x7fc00000u;
    else if (mag > m->max_finite)
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

uint16_t tgk_f32_to_f16(float f) { return (uint16_t)mini_encode(&fmt_f16, f); }
float tgk_f16_to_f32(uint16_t h) { return mini_decode(&fmt_f16, h); }
uint16_t tgk_f32_to_bf16(float f) { return (uint16_t)mini_encode(&fmt_bf16, f); }
uint8_t tgk_f32_to_f8e4m3(float f) { return (uint8_t)mini_encode(&fmt_e4m3, f); }
float tgk_f8e4m3_to_f32(uint8_t b) { return mini_decode(&fmt_e4m3, b); }
uint8_t tgk_f32_to_f8e5m2(float f) { return (uint8_t)mini_encode(&fmt_e5m2, f); }
float tgk_f8e5m2_to_f32(uint8_t b) { return mini_decode(&fmt_e5m2, b); }

/* i4, u4: the low nibble of the byte (ml_dtypes reads no more). */
static int64_t load_i4(const void *p, int64_t i) { return (int8_t)(((const uint8_t *)p)[i] << 4) >> 4; }
static int64_t load_u4(const void *p, int64_t i) { return ((const uint8_t *)p)[i] & 15; }

/* Float to i4/u4 as ml_dtypes converts: truncated; out of [lo, hi], NaN or
 * inf give 0. */
static uint8_t float_to_4bit(double v, double lo, double hi)
{
    double t = trunc(v);
    return t >= lo && t <= hi ? (uint8_t)((int)t & 15) : 0;
}

/* bf16 is the top half of an f32: decoding is a shift. */
float tgk_bf16_to_f32(uint16_t b)
{
    uint32_t bits = (uint32_t)b << 16;
    float f;
    memcpy(&f, &bits, 4);
    return f;
}

/* Float to integer: truncate, saturate, NaN gives 0 (C leaves these undefined). */
static int64_t sat_i64(double v, double lo, double hi)
{
    if (v != v)
        return 0;
    if (v <= lo)
        return (int64_t)lo;
    if (v >= hi)
        return v >= 9223372036854775807.0 ? INT64_MAX : (int64_t)hi;
    return (int64_t)v;
}

double tgk_load_f64(tgk_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case TGK_F32: return ((const float *)p)[i];
    case TGK_F64: return ((const double *)p)[i];
    case TGK_F16: return tgk_f16_to_f32(((const uint16_t *)p)[i]);
    case TGK_BF16: return tgk_bf16_to_f32(((const uint16_t *)p)[i]);
    case TGK_F8E4M3: return tgk_f8e4m3_to_f32(((const uint8_t *)p)[i]);
    case TGK_F8E5M2: return tgk_f8e5m2_to_f32(((const uint8_t *)p)[i]);
    case TGK_F8E4M3FNUZ: return mini_decode(&fmt_e4m3fnuz, ((const uint8_t *)p)[i]);
    case TGK_F8E5M2FNUZ: return mini_decode(&fmt_e5m2fnuz, ((const uint8_t *)p)[i]);
    case TGK_F4E2M1: return mini_decode(&fmt_e2m1, ((const uint8_t *)p)[i] & 15);
    case TGK_U64: return (double)((const uint64_t *)p)[i];
    default: return (double)tgk_load_i64(t, p, i);
    }
}

/* Float to u64: truncate, saturate to [0, 2^64 - 1], NaN gives 0. */
static uint64_t sat_u64(double v)
{
    if (!(v > 0))
        return 0;
    return v >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)v;
}

void tgk_store_f64(tgk_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case TGK_F32: ((float *)p)[i] = (float)v; break;
    case TGK_F64: ((double *)p)[i] = v; break;
    /* straight from the double: rounding once, never twice via f32 */
    case TGK_F16: ((uint16_t *)p)[i] = (uint16_t)mini_encode(&fmt_f16, v); break;
    case TGK_BF16: ((uint16_t *)p)[i] = (uint16_t)mini_encode(&fmt_bf16, v); break;
    case TGK_F8E4M3: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e4m3, v); break;
    case TGK_F8E5M2: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e5m2, v); break;
    case TGK_I8: ((int8_t *)p)[i] = (int8_t)sat_i64(v, INT8_MIN, INT8_MAX); break;
    case TGK_U8: ((uint8_t *)p)[i] = (uint8_t)sat_i64(v, 0, UINT8_MAX); break;
    case TGK_I16: ((int16_t *)p)[i] = (int16_t)sat_i64(v, INT16_MIN, INT16_MAX); break;
    case TGK_I32: ((int32_t *)p)[i] = (int32_t)sat_i64(v, INT32_MIN, INT32_MAX); break;
    case TGK_I64: ((int64_t *)p)[i] = sat_i64(v, -9223372036854775808.0, 9223372036854775807.0); break;
    case TGK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case TGK_U16: ((uint16_t *)p)[i] = (uint16_t)sat_i64(v, 0, UINT16_MAX); break;
    case TGK_U32: ((uint32_t *)p)[i] = (uint32_t)sat_i64(v, 0, UINT32_MAX); break;
    case TGK_U64: ((uint64_t *)p)[i] = sat_u64(v); break;
    case TGK_I4: ((uint8_t *)p)[i] = float_to_4bit(v, -8, 7); break;
    case TGK_U4: ((uint8_t *)p)[i] = float_to_4bit(v, 0, 15); break;
    case TGK_F8E4M3FNUZ: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e4m3fnuz, v); break;
    case TGK_F8E5M2FNUZ: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e5m2fnuz, v); break;
    case TGK_F4E2M1: ((uint8_t *)p)[i] = (uint8_t)mini_encode(&fmt_e2m1, v); break;
    default: break;
    }
}

int64_t tgk_load_i64(tgk_dtype t, const void *p, int64_t i)
{
    switch (t) {
    case TGK_I8: return ((const int8_t *)p)[i];
    case TGK_U8: return ((const uint8_t *)p)[i];
    case TGK_I16: return ((const int16_t *)p)[i];
    case TGK_I32: return ((const int32_t *)p)[i];
    case TGK_I64: return ((const int64_t *)p)[i];
    case TGK_BOOL: return ((const uint8_t *)p)[i] != 0;
    case TGK_U16: return ((const uint16_t *)p)[i];
    case TGK_U32: return ((const uint32_t *)p)[i];
    case TGK_U64: return (int64_t)((const uint64_t *)p)[i];    /* the bit pattern */
    case TGK_I4: return load_i4(p, i);
    case TGK_U4: return load_u4(p, i);
    case TGK_DT_NONE: case TGK_DT_COUNT: return 0;
    default: return sat_i64(tgk_load_f64(t, p, i), -9223372036854775808.0, 9223372036854775807.0);
    }
}

void tgk_store_i64(tgk_dtype t, void *p, int64_t i, int64_t v)
{
    switch (t) {
    case TGK_I8: ((int8_t *)p)[i] = (int8_t)v; break;      /* wraps, like torch */
    case TGK_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TGK_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case TGK_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TGK_I64: ((int64_t *)p)[i] = v; break;
    case TGK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case TGK_U16: ((uint16_t *)p)[i] = (uint16_t)v; break;
    case TGK_U32: ((uint32_t *)p)[i] = (uint32_t)v; break;
    case TGK_U64: ((uint64_t *)p)[i] = (uint64_t)v; break;
    case TGK_I4: case TGK_U4: ((uint8_t *)p)[i] = (uint8_t)(v & 15); break;    /* wraps */
    default: tgk_store_f64(t, p, i, (double)v); break;
    }
}

/* A 64-bit integer as double rounded to odd (truncated, the last bit set when
 * any dropped bit was): rounding that once more to a float of at most 51
 * bits (f32 and narrower) gives the correctly rounded value, which
 * rounding to nearest twice would not (2^63 + 2^39 + 1 to f32). */
static double int_f64_odd(tgk_dtype t, const void *p, int64_t i)
{
    uint64_t m;
    bool neg = false;
    if (t == TGK_U64) {
        m = ((const uint64_t *)p)[i];
    } else {
        int64_t v = ((const int64_t *)p)[i];
        neg = v < 0;
        m = neg ? 0 - (uint64_t)v : (uint64_t)v;
    }
    if (m >> 53) {
        int shift = 11 - __builtin_clzll(m);
        m = m >> shift | ((m & ((UINT64_C(1) << shift) - 1)) != 0);
        double d = ldexp((double)m, shift);
        return neg ? -d : d;
    }
    return neg ? -(double)m : (double)m;
}

void tgk_cast_range(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t begin,
                    int64_t end)
{
    if (dt == TGK_F32 && st == TGK_F16) {
        for (int64_t i = begin; i < end; i++)
            ((float *)dst)[i] = tgk_f16_to_f32(((const uint16_t *)src)[i]);
    } else if (dt == TGK_F32 && st == TGK_BF16) {
        for (int64_t i = begin; i < end; i++)
            ((float *)dst)[i] = tgk_bf16_to_f32(((const uint16_t *)src)[i]);
    } else if (tgk_dtype_is_float(dt) && dt != TGK_F64 && (st == TGK_I64 || st == TGK_U64)) {
        for (int64_t i = begin; i < end; i++)
            tgk_store_f64(dt, dst, i, int_f64_odd(st, src, i));
    } else if (tgk_dtype_is_float(dt) || tgk_dtype_is_float(st)) {
        for (int64_t i = begin; i < end; i++)
            tgk_store_f64(dt, dst, i, tgk_load_f64(st, src, i));
    } else {
        for (int64_t i = begin; i < end; i++)
            tgk_store_i64(dt, dst, i, tgk_load_i64(st, src, i));
    }
}

void tgk_qparams_u8(float lo, float hi, float *scale, int32_t *zero)
{
    if (lo > 0) lo = 0;
    if (hi < 0) hi = 0;
    float s = (hi - lo) / 255.0f;
    if (!(s > 0) || !isfinite(s)) s = 1.0f;  /* all zeros (or garbage): any scale works */
    int32_t z = (int32_t)nearbyintf(-lo / s);
    *scale = s;
    *zero = z < 0 ? 0 : z > 255 ? 255 : z;
}

double tgk_qact_value(int act, double v)
{
    if (act == TGK_QACT_SILU)
        return v / (1.0 + exp(-v));
    if (act == TGK_QACT_GELU)
        return 0.5 * v * erfc(-v * 0.70710678118654752440);
    return 0.5 * v * (1.0 + tanh(0.79788456080286535588 * (v + 0.044715 * v * v * v)));
}

float tgk_wq_weight(const void *q, int bits, int64_t K, int64_t group, const float *scale,
                    int64_t n, int64_t k)
{
    int32_t v;
    if (bits == 8) {
        v = ((const int8_t *)q)[n * K + k];
    } else {
        uint8_t b = ((const uint8_t *)q)[n * ((K + 1) / 2) + k / 2];
        v = k % 2 ? b >> 4 : b & 15;
        v = v >= 8 ? v - 16 : v;
    }
    if (group <= 0)
        group = K;
    return (float)v * scale[n * ((K + group - 1) / group) + k / group];
}
