/* Element conversions for the kernels, kept apart from lib/dtype.c so that
 * compiled models need nothing of libtgraph. */
#include <math.h>
#include <string.h>

#include "kernels.h"
#include "tensor_ops.h"

size_t tgk_dtype_size(tgk_dtype t)
{
    switch (t) {
    case TGK_F64: case TGK_I64: return 8;
    case TGK_F32: case TGK_I32: return 4;
    case TGK_F16: case TGK_BF16: case TGK_I16: return 2;
    case TGK_F8E4M3: case TGK_F8E5M2: case TGK_I8: case TGK_U8: case TGK_BOOL: return 1;
    default: return 0;
    }
}

bool tgk_dtype_is_float(tgk_dtype t)
{
    return t >= TGK_F32 && t <= TGK_F8E5M2;
}

static uint32_t f32_bits(float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    return u;
}

static float bits_f32(uint32_t u)
{
    float f;
    memcpy(&f, &u, 4);
    return f;
}

uint16_t tgk_f32_to_f16(float f)
{
    uint32_t x = f32_bits(f), sign = (x >> 16) & 0x8000, ax = x & 0x7fffffff;
    if (ax >= 0x7f800000)                       /* inf, NaN (kept quiet) */
        return sign | 0x7c00 | (ax > 0x7f800000 ? 0x200 : 0);
    if (ax >= 0x47800000)                       /* >= 65536: inf */
        return sign | 0x7c00;
    if (ax < 0x38800000)                        /* f16 subnormal: units of 2^-24 */
        return sign | (uint16_t)nearbyintf(bits_f32(ax) * 16777216.0f);
    uint32_t r = ax - (112u << 23);             /* rebias 127 -> 15 */
    r += 0xfff + ((r >> 13) & 1);               /* round to nearest even */
    return sign | (uint16_t)(r >> 13);
}

float tgk_f16_to_f32(uint16_t h)
{
    uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
    if (e == 0) {
        float v = (float)m * 0x1p-24f;
        return sign ? -v : v;
    }
    if (e == 31)
        return bits_f32(sign | 0x7f800000 | (m << 13));
    return bits_f32(sign | ((e + 112) << 23) | (m << 13));
}

uint16_t tgk_f32_to_bf16(float f)
{
    uint32_t x = f32_bits(f);
    if ((x & 0x7fffffff) > 0x7f800000)
        return (uint16_t)((x >> 16) | 0x40);
    x += 0x7fff + ((x >> 16) & 1);
    return (uint16_t)(x >> 16);
}

float tgk_bf16_to_f32(uint16_t b)
{
    return bits_f32((uint32_t)b << 16);
}

/* 8-bit floats: e4m3 (bias 7, no inf, 0x7f NaN, max 448) and e5m2 (IEEE-like,
 * bias 15). One encoder for both, by exponent and mantissa widths. */
static uint8_t f8_encode(float f, int mbits, int bias, bool ieee)
{
    uint8_t sign = signbit(f) ? 0x80 : 0;
    int ebits = 7 - mbits;
    uint8_t nan = ieee ? 0x7e : 0x7f;
    uint8_t maxfin = ieee ? (uint8_t)(((1 << ebits) - 2) << mbits | ((1 << mbits) - 1)) : 0x7e;
    float a = fabsf(f);
    if (isnan(f))
        return sign | nan;
    if (isinf(a))
        return sign | (ieee ? 0x7c : maxfin);
    int emin = 1 - bias;
    if (a < ldexpf(1.0f, emin))                 /* subnormal (may round up to the smallest normal) */
        return sign | (uint8_t)nearbyintf(ldexpf(a, mbits - emin));
    int ex;
    float fr = frexpf(a, &ex);                  /* a = fr * 2^ex, fr in [0.5, 1) */
    int e = ex - 1;
    float q = nearbyintf((fr * 2.0f - 1.0f) * (float)(1 << mbits));
    if (q == (float)(1 << mbits)) {
        q = 0;
        e++;
    }
    int field = e + bias;
    uint32_t code = (uint32_t)field << mbits | (uint32_t)q;
    if (code > maxfin)
        return sign | (ieee ? 0x7c : maxfin);   /* e5m2 overflows to inf, e4m3 saturates */
    return sign | (uint8_t)code;
}

static float f8_decode(uint8_t b, int mbits, int bias, bool ieee)
{
    int ebits = 7 - mbits, e = (b & 0x7f) >> mbits, m = b & ((1 << mbits) - 1);
    float v;
    if (ieee && e == (1 << ebits) - 1)
        v = m ? NAN : INFINITY;
    else if (!ieee && (b & 0x7f) == 0x7f)
        v = NAN;
    else if (e == 0)
        v = ldexpf((float)m, 1 - bias - mbits);
    else
        v = ldexpf(1.0f + (float)m / (float)(1 << mbits), e - bias);
    return (b & 0x80) ? -v : v;
}

uint8_t tgk_f32_to_f8e4m3(float f) { return f8_encode(f, 3, 7, false); }
float tgk_f8e4m3_to_f32(uint8_t b) { return f8_decode(b, 3, 7, false); }
uint8_t tgk_f32_to_f8e5m2(float f) { return f8_encode(f, 2, 15, true); }
float tgk_f8e5m2_to_f32(uint8_t b) { return f8_decode(b, 2, 15, true); }

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
    default: return (double)tgk_load_i64(t, p, i);
    }
}

void tgk_store_f64(tgk_dtype t, void *p, int64_t i, double v)
{
    switch (t) {
    case TGK_F32: ((float *)p)[i] = (float)v; break;
    case TGK_F64: ((double *)p)[i] = v; break;
    case TGK_F16: ((uint16_t *)p)[i] = tgk_f32_to_f16((float)v); break;
    case TGK_BF16: ((uint16_t *)p)[i] = tgk_f32_to_bf16((float)v); break;
    case TGK_F8E4M3: ((uint8_t *)p)[i] = tgk_f32_to_f8e4m3((float)v); break;
    case TGK_F8E5M2: ((uint8_t *)p)[i] = tgk_f32_to_f8e5m2((float)v); break;
    case TGK_I8: ((int8_t *)p)[i] = (int8_t)sat_i64(v, INT8_MIN, INT8_MAX); break;
    case TGK_U8: ((uint8_t *)p)[i] = (uint8_t)sat_i64(v, 0, UINT8_MAX); break;
    case TGK_I16: ((int16_t *)p)[i] = (int16_t)sat_i64(v, INT16_MIN, INT16_MAX); break;
    case TGK_I32: ((int32_t *)p)[i] = (int32_t)sat_i64(v, INT32_MIN, INT32_MAX); break;
    case TGK_I64: ((int64_t *)p)[i] = sat_i64(v, -9223372036854775808.0, 9223372036854775807.0); break;
    case TGK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
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
    default: tgk_store_f64(t, p, i, (double)v); break;
    }
}

typedef struct {
    tgk_dtype dt, st;
    void *dst;
    const void *src;
} cast_ctx;

static void cast_task(void *vctx, int64_t begin, int64_t end)
{
    const cast_ctx *c = vctx;
    if (c->dt == TGK_F32 && c->st == TGK_F16) {
        for (int64_t i = begin; i < end; i++)
            ((float *)c->dst)[i] = tgk_f16_to_f32(((const uint16_t *)c->src)[i]);
    } else if (c->dt == TGK_F32 && c->st == TGK_BF16) {
        for (int64_t i = begin; i < end; i++)
            ((float *)c->dst)[i] = tgk_bf16_to_f32(((const uint16_t *)c->src)[i]);
    } else if (tgk_dtype_is_float(c->dt) || tgk_dtype_is_float(c->st)) {
        for (int64_t i = begin; i < end; i++)
            tgk_store_f64(c->dt, c->dst, i, tgk_load_f64(c->st, c->src, i));
    } else {
        for (int64_t i = begin; i < end; i++)
            tgk_store_i64(c->dt, c->dst, i, tgk_load_i64(c->st, c->src, i));
    }
}

void tgk_cast(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t n)
{
    if (dt == st) {
        memmove(dst, src, (size_t)n * tgk_dtype_size(dt));
        return;
    }
    cast_ctx c = { dt, st, dst, src };
    tgk_parallel_for(n, 1 << 15, cast_task, &c);
}
