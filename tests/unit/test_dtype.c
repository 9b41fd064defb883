/* dtype tables and conversions, checked against float64 arithmetic:
 * every f16/bf16/fp8/fp4 code decoded, every rounding boundary encoded. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "dtype.h"
#include "unit.h"

/* What the codes past the normal ones mean. */
enum {
    FN,                     /* only S.1111.111 is NaN (e4m3fn) */
    IEEE,                   /* all-ones exponent is inf/NaN */
    FNUZ,                   /* only the sign bit alone (-0) is NaN */
    FINITE,                 /* every code is a number (e2m1) */
};

typedef struct {
    const char *name;
    int ebits, mbits, bias;
    int kind;
    int nbits;
    uint32_t (*enc)(float);
    double (*dec)(uint32_t);
    void (*store)(void *, double);   /* through tg_store_f64 */
} format;

static uint32_t enc_f16(float f) { return tg_f32_to_f16(f); }
static uint32_t enc_bf16(float f) { return tg_f32_to_bf16(f); }
static uint32_t enc_e4m3(float f) { return tg_f32_to_f8e4m3(f); }
static uint32_t enc_e5m2(float f) { return tg_f32_to_f8e5m2(f); }
static double dec_f16(uint32_t c) { return tg_f16_to_f32((uint16_t)c); }
static double dec_bf16(uint32_t c) { return tg_bf16_to_f32((uint16_t)c); }
static double dec_e4m3(uint32_t c) { return tg_f8e4m3_to_f32((uint8_t)c); }
static double dec_e5m2(uint32_t c) { return tg_f8e5m2_to_f32((uint8_t)c); }
/* the types with no scalar functions: through tg_store_f64 / tg_load_f64 */
static uint32_t enc_byte(tg_dtype t, float f)
{
    uint8_t b = 0;
    tg_store_f64(t, &b, 0, f);
    return b;
}
static double dec_byte(tg_dtype t, uint32_t c)
{
    uint8_t b = (uint8_t)c;
    return tg_load_f64(t, &b, 0);
}
static uint32_t enc_e4m3fnuz(float f) { return enc_byte(TG_F8E4M3FNUZ, f); }
static uint32_t enc_e5m2fnuz(float f) { return enc_byte(TG_F8E5M2FNUZ, f); }
static uint32_t enc_e2m1(float f) { return enc_byte(TG_F4E2M1, f); }
static double dec_e4m3fnuz(uint32_t c) { return dec_byte(TG_F8E4M3FNUZ, c); }
static double dec_e5m2fnuz(uint32_t c) { return dec_byte(TG_F8E5M2FNUZ, c); }
static double dec_e2m1(uint32_t c) { return dec_byte(TG_F4E2M1, c); }

static const format formats[] = {
    {"f16", 5, 10, 15, IEEE, 16, enc_f16, dec_f16, NULL},
    {"bf16", 8, 7, 127, IEEE, 16, enc_bf16, dec_bf16, NULL},
    {"f8e4m3", 4, 3, 7, FN, 8, enc_e4m3, dec_e4m3, NULL},
    {"f8e5m2", 5, 2, 15, IEEE, 8, enc_e5m2, dec_e5m2, NULL},
    {"f8e4m3fnuz", 4, 3, 8, FNUZ, 8, enc_e4m3fnuz, dec_e4m3fnuz, NULL},
    {"f8e5m2fnuz", 5, 2, 16, FNUZ, 8, enc_e5m2fnuz, dec_e5m2fnuz, NULL},
    {"f4e2m1", 2, 1, 1, FINITE, 4, enc_e2m1, dec_e2m1, NULL},
};
static const tg_dtype format_dtype[] = {TG_F16, TG_BF16, TG_F8E4M3, TG_F8E5M2,
                                        TG_F8E4M3FNUZ, TG_F8E5M2FNUZ, TG_F4E2M1};
#define NFORMAT ((int)(sizeof formats / sizeof formats[0]))

/* The value of a code, computed from its fields in float64. */
static double reference(const format *f, uint32_t c)
{
    int sign = (c >> (f->nbits - 1)) & 1;
    int e = (int)((c >> f->mbits) & ((1u << f->ebits) - 1));
    int m = (int)(c & ((1u << f->mbits) - 1));
    int emax = (1 << f->ebits) - 1;
    double v;
    if (f->kind == FNUZ && c == 1u << (f->nbits - 1))
        v = NAN;
    else if (f->kind == IEEE && e == emax)
        v = m ? NAN : INFINITY;
    else if (f->kind == FN && e == emax && m == (1 << f->mbits) - 1)
        v = NAN;
    else if (e == 0)
        v = ldexp(m, 1 - f->bias - f->mbits);
    else
        v = ldexp((1 << f->mbits) + m, e - f->bias - f->mbits);
    return sign ? -v : v;
}

static bool same(double a, double b)
{
    return (isnan(a) && isnan(b)) || (a == b && signbit(a) == signbit(b));
}

static void test_decode(const format *f)
{
    int bad = 0;
    for (uint32_t c = 0; c < (1u << f->nbits); c++)
        bad += !same(f->dec(c), reference(f, c));
    CHECK(bad == 0);
    if (bad)
        fprintf(stderr, "  %s: %d codes decode wrong\n", f->name, bad);
}


typedef struct {
    uint32_t code;
    double v;
} entry;

static int cmp_entry(const void *a, const void *b)
{
    double x = ((const entry *)a)->v, y = ((const entry *)b)->v;
    return x < y ? -1 : x > y;
}

/* The code of -v for the code c of v >= 0: the sign bit, but fnuz's 0 is +0. */
static uint32_t negated(const format *f, uint32_t c)
{
    return f->kind == FNUZ && c == 0 ? 0 : c | 1u << (f->nbits - 1);
}

/* Encoding: every finite code round-trips, and around the midpoint of every pair of
 * adjacent non-negative values the rounding goes to the right neighbour. */
static void test_encode(const format *f, tg_dtype dt)
{
    uint32_t ncode = 1u << f->nbits, signbit_ = 1u << (f->nbits - 1);
    entry *e = malloc(ncode * sizeof *e);
    int n = 0, bad_rt = 0, bad_mid = 0, bad_store = 0;
    for (uint32_t c = 0; c < ncode; c++) {
        double v = reference(f, c);
        if (isnan(v) || isinf(v))
            continue;
        bad_rt += f->enc((float)v) != c;
        if (!(c & signbit_))
            e[n++] = (entry){c, v};
    }
    qsort(e, (size_t)n, sizeof *e, cmp_entry);
    for (int i = 0; i + 1 < n; i++) {
        uint32_t a = e[i].code, b = e[i + 1].code;
        double mid = (e[i].v + e[i + 1].v) / 2;     /* exact in float and double */
        uint32_t even = (a & 1) ? b : a;
        float below = nextafterf((float)mid, 0), above = nextafterf((float)mid, INFINITY);
        bad_mid += f->enc((float)mid) != even;
        bad_mid += f->enc(below) != a || f->enc(above) != b;
        bad_mid += f->enc(-(float)mid) != negated(f, even);
        bad_mid += f->enc(-below) != negated(f, a) || f->enc(-above) != negated(f, b);
        /* a double just off the midpoint, which an f32 detour would round onto it */
        double eps = (e[i + 1].v - e[i].v) * 0x1p-30;
        unsigned char out[2] = {0};
        tg_store_f64(dt, out, 0, mid + eps);
        uint32_t got = f->nbits <= 8 ? out[0] : (uint32_t)(out[0] | out[1] << 8);
        bad_store += got != b;
        tg_store_f64(dt, out, 0, mid - eps);
        got = f->nbits <= 8 ? out[0] : (uint32_t)(out[0] | out[1] << 8);
        bad_store += got != a;
    }
    CHECK(bad_rt == 0);
    CHECK(bad_mid == 0);
    CHECK(bad_store == 0);
    if (bad_rt || bad_mid || bad_store)
        fprintf(stderr, "  %s: %d round-trip, %d midpoint, %d store errors\n", f->name, bad_rt,
                bad_mid, bad_store);
    free(e);
}

static void test_specials(void)
{
    /* f16: 65520 is the midpoint between 65504 (odd) and 2^16 (would-be even): inf */
    CHECK(tg_f32_to_f16(65519.0f) == 0x7bff);
    CHECK(tg_f32_to_f16(65520.0f) == 0x7c00);
    CHECK(tg_f32_to_f16(1e10f) == 0x7c00);
    CHECK(tg_f32_to_f16(-INFINITY) == 0xfc00);
    CHECK((tg_f32_to_f16(NAN) & 0x7fff) > 0x7c00);
    CHECK(tg_f32_to_f16(0x1p-25f) == 0);            /* half the smallest subnormal: even */
    CHECK(tg_f32_to_f16(0x1.000002p-25f) == 1);
    CHECK(tg_f32_to_f16(-0.0f) == 0x8000);
    /* bf16 */
    CHECK(tg_f32_to_bf16(3.4028235e38f) == 0x7f80);
    CHECK(tg_f32_to_bf16(1.0f) == 0x3f80);
    CHECK((tg_f32_to_bf16(-NAN) & 0x7fff) > 0x7f80);
    CHECK(tg_f32_to_bf16(0x1p-149f) == 0);          /* f32 subnormal below bf16's half step */
    CHECK(tg_f32_to_bf16(0x1p-133f) == 1);          /* smallest bf16 subnormal */
    /* e4m3fn: no inf; overflow and inf saturate to 448; NaN is 0x7f/0xff */
    CHECK(tg_f32_to_f8e4m3(448.0f) == 0x7e);
    CHECK(tg_f32_to_f8e4m3(464.0f) == 0x7e);
    CHECK(tg_f32_to_f8e4m3(1e6f) == 0x7e);
    CHECK(tg_f32_to_f8e4m3(INFINITY) == 0x7e);
    CHECK(tg_f32_to_f8e4m3(-INFINITY) == 0xfe);
    CHECK(tg_f32_to_f8e4m3(NAN) == 0x7f);
    CHECK(tg_f32_to_f8e4m3(-NAN) == 0xff);
    CHECK(isnan(tg_f8e4m3_to_f32(0x7f)) && isnan(tg_f8e4m3_to_f32(0xff)));
    CHECK(tg_f8e4m3_to_f32(0x7e) == 448.0f);
    CHECK(tg_f8e4m3_to_f32(0x01) == 0x1p-9f);
    /* e5m2: has inf */
    CHECK(tg_f32_to_f8e5m2(57344.0f) == 0x7b);
    CHECK(tg_f32_to_f8e5m2(61440.0f) == 0x7c);
    CHECK(tg_f32_to_f8e5m2(1e9f) == 0x7c);
    CHECK(isinf(tg_f8e5m2_to_f32(0x7c)) && isnan(tg_f8e5m2_to_f32(0x7d)));
    CHECK(tg_f32_to_f8e5m2(NAN) == 0x7e);
    /* fnuz: one NaN (0x80, either sign), no -0; no inf: overflow saturates */
    CHECK(enc_e4m3fnuz(NAN) == 0x80 && enc_e4m3fnuz(-NAN) == 0x80);
    CHECK(enc_e4m3fnuz(-0.0f) == 0 && enc_e4m3fnuz(-0x1p-30f) == 0);
    CHECK(enc_e4m3fnuz(240.0f) == 0x7f && enc_e4m3fnuz(1e6f) == 0x7f);
    CHECK(enc_e4m3fnuz(INFINITY) == 0x7f && enc_e4m3fnuz(-INFINITY) == 0xff);
    CHECK(enc_e5m2fnuz(57344.0f) == 0x7f && enc_e5m2fnuz(-1e9f) == 0xff);
    CHECK(isnan(dec_e4m3fnuz(0x80)) && dec_e4m3fnuz(0x7f) == 240 && dec_e4m3fnuz(1) == 0x1p-10);
    CHECK(isnan(dec_e5m2fnuz(0x80)) && dec_e5m2fnuz(0xff) == -57344 && dec_e5m2fnuz(1) == 0x1p-17);
    /* e2m1: no NaN or inf; NaN gives the zero of the other sign (as ml_dtypes) */
    CHECK(enc_e2m1(NAN) == 0x8 && enc_e2m1(-NAN) == 0);
    CHECK(enc_e2m1(INFINITY) == 0x7 && enc_e2m1(-1e9f) == 0xf && enc_e2m1(5.0f) == 0x6);
    CHECK(dec_e2m1(0x7) == 6 && dec_e2m1(0x1) == 0.5 && dec_e2m1(0x9) == -0.5);
    uint8_t b = 0xf1;               /* the high nibble is not e2m1's */
    CHECK(tg_load_f64(TG_F4E2M1, &b, 0) == 0.5);
    /* i4, u4: the low nibble; floats truncate, out of range or NaN give 0 */
    const double in4[] = {7.9, -8.9, 8, -9, NAN, INFINITY, -0.5, 15.5, 16, -1};
    const int want_i4[] = {7, -8, 0, 0, 0, 0, 0, 0, 0, -1};
    const int want_u4[] = {7, 0, 8, 0, 0, 0, 0, 15, 0, 0};
    for (int i = 0; i < 10; i++) {
        uint8_t q[2];
        tg_store_f64(TG_I4, q, 0, in4[i]);
        tg_store_f64(TG_U4, q, 1, in4[i]);
        CHECK(q[0] < 16 && q[1] < 16);
        CHECK(tg_load_f64(TG_I4, q, 0) == want_i4[i] && tg_load_f64(TG_U4, q, 1) == want_u4[i]);
    }
    uint8_t q[3] = {0xff, 0x08, 0x17};
    CHECK(tg_load_f64(TG_I4, q, 0) == -1 && tg_load_f64(TG_I4, q, 1) == -8 &&
          tg_load_f64(TG_I4, q, 2) == 7 && tg_load_f64(TG_U4, q, 0) == 15);
    int64_t wide[3] = {-1, 17, -9};
    tg_convert(TG_I4, q, TG_I64, wide, 3);          /* integers wrap */
    CHECK(q[0] == 0xf && q[1] == 1 && q[2] == 7);
}

static void test_tables(void)
{
    CHECK(tg_dtype_size(TG_DTYPE_NONE) == 0);
    CHECK(tg_dtype_size((tg_dtype)99) == 0);
    CHECK(tg_dtype_from_name("nope") == TG_DTYPE_NONE);
    CHECK(tg_dtype_from_name(NULL) == TG_DTYPE_NONE);
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        CHECK(tg_dtype_size((tg_dtype)t) > 0);
        CHECK(tg_dtype_from_name(tg_dtype_name((tg_dtype)t)) == t);
        CHECK(tg_dtype_from_st_name(tg_dtype_st_name((tg_dtype)t)) == t);
        const char *d = tg_dtype_npy_descr((tg_dtype)t);
        if (d)
            CHECK(tg_dtype_from_npy_descr(d) == t);
        CHECK(tg_dtype_is_float((tg_dtype)t) + tg_dtype_is_int((tg_dtype)t) +
                  (t == TG_BOOL) == 1);
    }
    CHECK(strcmp(tg_dtype_name(TG_BF16), "bf16") == 0);
    CHECK(strcmp(tg_dtype_st_name(TG_F8E4M3), "F8_E4M3") == 0);
    CHECK(strcmp(tg_dtype_npy_descr(TG_BOOL), "|b1") == 0);
    /* NumPy lacks bf16 and float8: their ml_dtypes names, without a byte order */
    CHECK(strcmp(tg_dtype_npy_descr(TG_BF16), "bfloat16") == 0);
    CHECK(strcmp(tg_dtype_npy_descr(TG_F8E4M3), "float8_e4m3fn") == 0);
    CHECK(tg_dtype_from_npy_descr("float8_e5m2") == TG_F8E5M2);
    CHECK(tg_dtype_from_npy_descr("<bfloat16") == TG_DTYPE_NONE);
    CHECK(tg_dtype_from_npy_descr("float8_e4m3fnuz") == TG_F8E4M3FNUZ);
    CHECK(tg_dtype_from_npy_descr("int4") == TG_I4 && tg_dtype_from_npy_descr("uint4") == TG_U4);
    CHECK(tg_dtype_from_npy_descr("float4_e2m1fn") == TG_F4E2M1);
    CHECK(tg_dtype_from_npy_descr("float8_e8m0fnu") == TG_DTYPE_NONE);
    CHECK(TG_I4 == 16 && TG_F4E2M1 == 20 && tg_dtype_size(TG_I4) == 1);
    CHECK(tg_dtype_is_int(TG_I4) && tg_dtype_is_unsigned(TG_U4) && !tg_dtype_is_unsigned(TG_I4));
    CHECK(tg_dtype_is_float(TG_F8E5M2FNUZ) && tg_dtype_is_float(TG_F4E2M1));
    CHECK(tg_dtype_npy_is_name("bfloat16") && !tg_dtype_npy_is_name("<f4"));
    CHECK(tg_dtype_from_npy_descr("f4") == TG_F32);
    CHECK(tg_dtype_from_npy_descr("=f8") == TG_F64);
    CHECK(tg_dtype_from_npy_descr("<i1") == TG_I8);
    CHECK(tg_dtype_from_npy_descr(">f4") == TG_DTYPE_NONE);
    CHECK(tg_dtype_from_npy_descr("|f4") == TG_DTYPE_NONE);
    CHECK(tg_dtype_size(TG_I64) == 8 && tg_dtype_size(TG_BF16) == 2);
    /* appended after bool: the numbers are the ABI's and the file names fixed */
    CHECK(TG_U16 == 13 && TG_U32 == 14 && TG_U64 == 15);
    CHECK(tg_dtype_size(TG_U16) == 2 && tg_dtype_size(TG_U32) == 4 && tg_dtype_size(TG_U64) == 8);
    CHECK(strcmp(tg_dtype_name(TG_U64), "u64") == 0 && strcmp(tg_dtype_st_name(TG_U32), "U32") == 0);
    CHECK(tg_dtype_from_npy_descr("<u2") == TG_U16 && tg_dtype_from_npy_descr("<u8") == TG_U64);
    CHECK(tg_dtype_is_int(TG_U32) && tg_dtype_is_unsigned(TG_U16) && !tg_dtype_is_unsigned(TG_I64));
}

/* Every type stores and loads back values it can hold exactly. */
static void test_load_store(void)
{
    const double vals[] = {0, 1, -2, 3, 96, -6, 0.25};   /* exact even in e5m2 */
    const double vals4[] = {0, 1, -2, 3, 4, -6, 0.5};    /* in the 4-bit types */
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        unsigned char buf[8 * 8];
        bool four = t == TG_I4 || t == TG_U4 || t == TG_F4E2M1;
        for (int i = 0; i < 7; i++) {
            double v = four ? vals4[i] : vals[i];
            if (!tg_dtype_is_float((tg_dtype)t))
                v = trunc(v);
            if (tg_dtype_is_unsigned((tg_dtype)t) && v < 0)
                v = -v;
            if (t == TG_BOOL)
                v = v != 0;
            tg_store_f64((tg_dtype)t, buf, (size_t)i, v);
            CHECK(tg_load_f64((tg_dtype)t, buf, (size_t)i) == v);
        }
    }
    unsigned char b[8];
    tg_store_f64(TG_I8, b, 0, 1000.7);
    CHECK(tg_load_f64(TG_I8, b, 0) == 127);
    tg_store_f64(TG_I8, b, 0, -3.9);
    CHECK(tg_load_f64(TG_I8, b, 0) == -3);
    tg_store_f64(TG_U8, b, 0, -1);
    CHECK(tg_load_f64(TG_U8, b, 0) == 0);
    tg_store_f64(TG_I32, b, 0, NAN);
    CHECK(tg_load_f64(TG_I32, b, 0) == 0);
    tg_store_f64(TG_I64, b, 0, 1e30);
    CHECK(*(int64_t *)b == INT64_MAX);
    tg_store_f64(TG_BOOL, b, 0, 0.5);
    CHECK(b[0] == 1);
    /* u64: the whole range, saturating at both ends */
    tg_store_f64(TG_U64, b, 0, 0x1.8p63);
    CHECK(*(uint64_t *)b == UINT64_C(3) << 62 && tg_load_f64(TG_U64, b, 0) == 0x1.8p63);
    tg_store_f64(TG_U64, b, 0, 1e30);
    CHECK(*(uint64_t *)b == UINT64_MAX);
    tg_store_f64(TG_U64, b, 0, -7);
    CHECK(*(uint64_t *)b == 0);
    tg_store_f64(TG_U32, b, 0, 5e9);
    CHECK(*(uint32_t *)b == UINT32_MAX);
}

static double urand(void) { return (double)rand() / RAND_MAX * 2 - 1; }

static void test_convert(void)
{
    enum { N = 257 };
    float src[N], back[N];
    double ref[N];
    for (int i = 0; i < N; i++)
        src[i] = (float)(urand() * 300);
    /* every float type: convert there and back equals encode+decode of each element */
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        unsigned char mid[N * 8];
        tg_convert((tg_dtype)t, mid, TG_F32, src, N);
        tg_convert(TG_F32, back, (tg_dtype)t, mid, N);
        int bad = 0;
        for (int i = 0; i < N; i++) {
            unsigned char one[8];
            tg_store_f64((tg_dtype)t, one, 0, src[i]);
            ref[i] = (float)tg_load_f64((tg_dtype)t, one, 0);
            bad += !same(back[i], ref[i]);
        }
        CHECK(bad == 0);
    }
    /* integers stay exact above 2^53 and narrow by wrapping */
    int64_t big[3] = {(INT64_C(1) << 60) + 1, -5, 300};
    int64_t big2[3];
    int8_t small[3];
    int32_t mid32[3];
    tg_convert(TG_I32, mid32, TG_I64, big, 3);
    tg_convert(TG_I64, big2, TG_I32, mid32, 3);
    CHECK(big2[1] == -5 && big2[2] == 300 && mid32[0] == 1);
    tg_convert(TG_I8, small, TG_I64, big, 3);
    CHECK(small[1] == -5 && small[2] == 44);
    tg_convert(TG_I64, big2, TG_I64, big, 3);
    CHECK(big2[0] == big[0]);
    uint8_t bools[3] = {0, 7, 1}, bools2[3];
    tg_convert(TG_BOOL, bools2, TG_BOOL, bools, 3);
    CHECK(bools2[0] == 0 && bools2[1] == 1 && bools2[2] == 1);
    float fb[3];
    tg_convert(TG_F32, fb, TG_BOOL, bools, 3);
    CHECK(fb[0] == 0 && fb[1] == 1 && fb[2] == 1);
    double d[2] = {0.1, -2.5};
    float f[2];
    tg_convert(TG_F32, f, TG_F64, d, 2);
    CHECK(f[0] == 0.1f && f[1] == -2.5f);
}

int main(void)
{
    srand(12345);
    test_tables();
    for (int i = 0; i < NFORMAT; i++) {
        test_decode(&formats[i]);
        test_encode(&formats[i], format_dtype[i]);
    }
    test_specials();
    test_load_store();
    test_convert();
    return unit_report();
}
