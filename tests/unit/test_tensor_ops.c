/* The simple-op kernels (lib/backend/cpu/kernels/tensor_ops.h) against float64
 * references written out index by index, on fresh random inputs (the seed is
 * printed; TG_SEED=N repeats a run). Tolerances: float32 results within
 * 1e-5 relative (+1e-6 absolute) of the double reference; exact for data
 * movement, indexing and integers. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "dtype.h"
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/tensor_ops.h"
#include "unit.h"

static int64_t randint(int64_t lo, int64_t hi)     /* [lo, hi) */
{
    return lo + (int64_t)(unit_next() % (uint64_t)(hi - lo));
}

static float *rand_f32(int64_t n, double lo, double hi)
{
    float *x = malloc(sizeof(float) * (size_t)(n ? n : 1));
    for (int64_t i = 0; i < n; i++)
        x[i] = (float)unit_uniform(lo, hi);
    return x;
}

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= d[k];
    return n;
}

/* Multi-index of flat i over dims. */
static void unravel(int64_t i, int rank, const int64_t *d, int64_t *idx)
{
    for (int k = rank - 1; k >= 0; k--) {
        idx[k] = i % d[k];
        i /= d[k];
    }
}

static int64_t ravel(int rank, const int64_t *d, const int64_t *idx)
{
    int64_t i = 0;
    for (int k = 0; k < rank; k++)
        i = i * d[k] + idx[k];
    return i;
}

#define TOL(ref) (1e-5 * fabs(ref) + 1e-6)

static void test_conversions(void)
{
    for (int i = 0; i < 20000; i++) {
        float f = (float)(unit_uniform(-1, 1) * pow(2.0, (double)randint(-30, 20)));
        CHECK(tgk_f32_to_f16(f) == tg_f32_to_f16(f));
        CHECK(tgk_f32_to_bf16(f) == tg_f32_to_bf16(f));
        CHECK(tgk_f32_to_f8e4m3(f) == tg_f32_to_f8e4m3(f));
        CHECK(tgk_f32_to_f8e5m2(f) == tg_f32_to_f8e5m2(f));
    }
    for (int b = 0; b < 65536; b++) {
        float a = tgk_f16_to_f32((uint16_t)b), r = tg_f16_to_f32((uint16_t)b);
        CHECK((a != a && r != r) || memcmp(&a, &r, 4) == 0);
    }
    for (int b = 0; b < 256; b++) {
        float a = tgk_f8e4m3_to_f32((uint8_t)b), r = tg_f8e4m3_to_f32((uint8_t)b);
        CHECK((a != a && r != r) || a == r);
        a = tgk_f8e5m2_to_f32((uint8_t)b), r = tg_f8e5m2_to_f32((uint8_t)b);
        CHECK((a != a && r != r) || a == r);
    }
    /* cast: truncation toward zero, saturation, NaN to 0, exact integers */
    float src[5] = { 2.7f, -2.7f, 1e10f, -1e10f, NAN };
    int32_t i32[5];
    tgk_cast(TGK_I32, i32, TGK_F32, src, 5);
    CHECK(i32[0] == 2 && i32[1] == -2 && i32[2] == INT32_MAX && i32[3] == INT32_MIN && i32[4] == 0);
    int64_t big[2] = { (INT64_C(1) << 62) + 1, -5 };
    int64_t back[2];
    int32_t mid[2];
    tgk_cast(TGK_I32, mid, TGK_I64, big, 2);
    tgk_cast(TGK_I64, back, TGK_I32, mid, 2);
    CHECK(back[0] == 1 && back[1] == -5);
    uint8_t bools[3];
    float bsrc[3] = { 0.0f, -0.5f, 3.0f };
    tgk_cast(TGK_BOOL, bools, TGK_F32, bsrc, 3);
    CHECK(bools[0] == 0 && bools[1] == 1 && bools[2] == 1);
}

static double ref_unary(tgk_unary_op op, double v, const tgk_unary_param *p)
{
    switch (op) {
    case TGK_NEG: return -v;
    case TGK_ABS: return fabs(v);
    case TGK_EXP: return exp(v);
    case TGK_LOG: return log(v);
    case TGK_SQRT: return sqrt(v);
    case TGK_RSQRT: return 1 / sqrt(v);
    case TGK_RECIPROCAL: return 1 / v;
    case TGK_SIN: return sin(v);
    case TGK_COS: return cos(v);
    case TGK_TANH: return tanh(v);
    case TGK_TAN: return tan(v);
    case TGK_ASIN: return asin(v);
    case TGK_ACOS: return acos(v);
    case TGK_ATAN: return atan(v);
    case TGK_SINH: return sinh(v);
    case TGK_COSH: return cosh(v);
    case TGK_ASINH: return asinh(v);
    case TGK_ACOSH: return acosh(v);
    case TGK_ATANH: return atanh(v);
    case TGK_ERF: return erf(v);
    case TGK_SIGMOID: return 1 / (1 + exp(-v));
    case TGK_RELU: return v > 0 ? v : 0;
    case TGK_GELU: return v * 0.5 * erfc(-v / sqrt(2.0));
    case TGK_GELU_TANH: return 0.5 * v * (1 + tanh(sqrt(2 / M_PI) * (v + 0.044715 * pow(v, 3))));
    case TGK_SILU: return v / (1 + exp(-v));
    case TGK_HARDSWISH: return v <= -3 ? 0 : v >= 3 ? v : v * (v + 3) / 6;
    case TGK_HARDSIGMOID: return v <= -3 ? 0 : v >= 3 ? 1 : v / 6 + 0.5;
    case TGK_LEAKY_RELU: return v > 0 ? v : p->alpha * v;
    case TGK_ELU: return v > 0 ? v : p->alpha * (exp(v) - 1);
    case TGK_FLOOR: return floor(v);
    case TGK_CEIL: return ceil(v);
    case TGK_ROUND: return v - floor(v) == 0.5 ? 2 * round(v / 2) : round(v);
    case TGK_CLAMP: return fmin(fmax(v, p->lo), p->hi);
    default: return NAN;
    }
}

static void test_unary(void)
{
    int64_t n = randint(1000, 70000);
    float *x = rand_f32(n, -4, 4), *y = malloc(sizeof(float) * (size_t)n);
    tgk_unary_param p = { unit_uniform(0.01, 2), unit_uniform(-2, 0), unit_uniform(0, 2) };
    for (int i = 0; i < 40; i++)                /* exact halves for round */
        x[randint(0, n)] = (float)randint(-8, 8) + 0.5f;
    for (tgk_unary_op op = 0; op < TGK_LOGICAL_NOT; op++) {
        bool positive = op == TGK_LOG || op == TGK_SQRT || op == TGK_RSQRT;
        bool unit = op == TGK_ASIN || op == TGK_ACOS || op == TGK_ATANH;   /* their domains */
        bool own = positive || unit || op == TGK_ACOSH;
        float *in = positive ? rand_f32(n, 0.01, 4) : unit ? rand_f32(n, -0.99, 0.99)
                  : op == TGK_ACOSH ? rand_f32(n, 1, 5) : x;
        CHECK(tgk_unary(op, TGK_F32, n, in, y, &p) == 0);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            double r = ref_unary(op, in[i], &p);
            bad += !(fabs(y[i] - r) <= 2e-6 * fabs(r) + 2e-6);
        }
        if (bad)
            fprintf(stderr, "unary op %d: %d of %lld off\n", op, bad, (long long)n);
        CHECK(bad == 0);
        if (own)
            free(in);
    }
    /* f64 and integer paths; float-only ops refuse integers */
    double xd[4] = { -1.5, 0.25, 2.5, -0.0 }, yd[4];
    CHECK(tgk_unary(TGK_EXP, TGK_F64, 4, xd, yd, NULL) == 0);
    CHECK_NEAR(yd[2], exp(2.5), 1e-12);
    int64_t xi[4] = { -3, 0, 7, INT64_MIN }, yi[4];
    CHECK(tgk_unary(TGK_ABS, TGK_I64, 4, xi, yi, NULL) == 0);
    CHECK(yi[0] == 3 && yi[2] == 7 && yi[3] == INT64_MIN);
    CHECK(tgk_unary(TGK_EXP, TGK_I64, 4, xi, yi, NULL) == -1);
    uint8_t nb[4];
    CHECK(tgk_unary(TGK_LOGICAL_NOT, TGK_I64, 4, xi, nb, NULL) == 0);
    CHECK(nb[0] == 0 && nb[1] == 1 && nb[2] == 0);
    /* clamp with min > max is max everywhere (f32, f64, i64) */
    tgk_unary_param crossed = { 0, unit_uniform(0.5, 2), unit_uniform(-2, 0) };
    CHECK(tgk_unary(TGK_CLAMP, TGK_F32, n, x, y, &crossed) == 0);
    int64_t off = 0;
    for (int64_t i = 0; i < n; i++)
        off += y[i] != (float)crossed.hi;
    CHECK(off == 0);
    CHECK(tgk_unary(TGK_CLAMP, TGK_F64, 4, xd, yd, &crossed) == 0);
    CHECK(yd[0] == crossed.hi && yd[3] == crossed.hi);
    CHECK(tgk_unary(TGK_CLAMP, TGK_I64, 4, xi, yi, &crossed) == 0);
    CHECK(yi[1] == (int64_t)floor(crossed.hi) && yi[2] == (int64_t)floor(crossed.hi));
    free(x);
    free(y);
}

/* A random shape of rank r and a random broadcast partner of it. */
static void rand_bcast(int r, int64_t *out, int *ra, int64_t *a, int *rb, int64_t *b)
{
    for (int k = 0; k < r; k++)
        out[k] = randint(1, 6);
    *ra = r;
    *rb = (int)randint(0, r + 1);
    for (int k = 0; k < r; k++)
        a[k] = randint(0, 3) ? out[k] : 1;
    for (int k = 0; k < *rb; k++)
        b[k] = randint(0, 3) ? out[r - *rb + k] : 1;
}

static double ref_binary(tgk_binary_op op, double u, double v)
{
    switch (op) {
    case TGK_ADD: return u + v;
    case TGK_SUB: return u - v;
    case TGK_MUL: return u * v;
    case TGK_DIV: return u / v;
    case TGK_POW: return pow(u, v);
    case TGK_MAXIMUM: return fmax(u, v);
    case TGK_MINIMUM: return fmin(u, v);
    case TGK_REMAINDER: return u - floor(u / v) * v;
    case TGK_FMOD: return u - trunc(u / v) * v;
    case TGK_EQ: return u == v;
    case TGK_NE: return u != v;
    case TGK_LT: return u < v;
    case TGK_LE: return u <= v;
    case TGK_GT: return u > v;
    case TGK_GE: return u >= v;
    case TGK_LOGICAL_AND: return u && v;
    case TGK_LOGICAL_OR: return u || v;
    default: return NAN;
    }
}

/* Element of an input broadcast to out's multi-index. */
static int64_t bcast_at(int r, const int64_t *idx, int ri, const int64_t *d)
{
    int64_t off = 0;
    for (int k = 0; k < ri; k++)
        off = off * d[k] + (d[k] == 1 ? 0 : idx[r - ri + k]);
    return off;
}

static void test_binary(void)
{
    for (int trial = 0; trial < 60; trial++) {
        int r = (int)randint(0, 5), ra, rb;
        int64_t od[8], ad[8], bd[8], sa[8], sb[8], idx[8];
        rand_bcast(r, od, &ra, ad, &rb, bd);
        if (trial % 2)                              /* both ways round */
            for (int k = 0; k < r; k++) {
                int64_t t = ad[k];
                ad[k] = r - rb <= k ? bd[k - (r - rb)] : 1;
                if (r - rb <= k)
                    bd[k - (r - rb)] = t;
            }
        int64_t n = numel(r, od), na = numel(ra, ad), nb = numel(rb, bd);
        float *a = rand_f32(na, 0.5, 2), *b = rand_f32(nb, 0.5, 2);
        for (int64_t i = 0; i < nb; i += 3)         /* some equal pairs for compares */
            if (na)
                b[i] = a[i % na];
        void *y = malloc(sizeof(float) * (size_t)(n ? n : 1));
        tgk_broadcast_strides(r, od, ra, ad, sa);
        tgk_broadcast_strides(r, od, rb, bd, sb);
        for (tgk_binary_op op = 0; op < TGK_BINARY_COUNT; op++) {
            if (op >= TGK_BITWISE_AND && op <= TGK_SHR) {     /* integers only */
                CHECK(tgk_binary(op, TGK_F32, r, od, a, sa, b, sb, y) == -1);
                continue;
            }
            CHECK(tgk_binary(op, TGK_F32, r, od, a, sa, b, sb, y) == 0);
            int bad = 0;
            for (int64_t i = 0; i < n; i++) {
                unravel(i, r, od, idx);
                double u = a[bcast_at(r, idx, ra, ad)], v = b[bcast_at(r, idx, rb, bd)];
                double ref = ref_binary(op, u, v);
                double got = op >= TGK_EQ ? ((uint8_t *)y)[i] : ((float *)y)[i];
                bad += !(fabs(got - ref) <= TOL(ref));
            }
            CHECK(bad == 0);
        }
        free(a);
        free(b);
        free(y);
    }
    /* integers: exact, truncating division, division by zero reported */
    int64_t a[4] = { 7, -7, INT64_MIN, 9 }, b[4] = { 2, 2, -1, 0 }, y[4], d4[1] = { 3 };
    int64_t st[1] = { 1 }, d3[1] = { 3 };
    CHECK(tgk_binary(TGK_DIV, TGK_I64, 1, d4, a, st, b, st, y) == 0);
    CHECK(y[0] == 3 && y[1] == -3 && y[2] == INT64_MIN);
    d4[0] = 4;
    CHECK(tgk_binary(TGK_DIV, TGK_I64, 1, d4, a, st, b, st, y) == -1);
    CHECK(tgk_binary(TGK_POW, TGK_I64, 1, d4, b, st, b, st, y) == 0);
    CHECK(y[0] == 4 && y[1] == 4 && y[3] == 1);
    /* remainder takes the divisor's sign, fmod the dividend's; INT64_MIN % -1 is 0 */
    int64_t ma[4] = { 7, -7, INT64_MIN, -9 }, mb[4] = { -2, 2, -1, -4 };
    d4[0] = 4;
    CHECK(tgk_binary(TGK_REMAINDER, TGK_I64, 1, d4, ma, st, mb, st, y) == 0);
    CHECK(y[0] == -1 && y[1] == 1 && y[2] == 0 && y[3] == -1);
    CHECK(tgk_binary(TGK_FMOD, TGK_I64, 1, d4, ma, st, mb, st, y) == 0);
    CHECK(y[0] == 1 && y[1] == -1 && y[2] == 0 && y[3] == -1);
    CHECK(tgk_binary(TGK_REMAINDER, TGK_I64, 1, d4, a, st, b, st, y) == -1);   /* 9 % 0 */
    float ra[3] = { 5.5f, -5.5f, 1e10f }, rb[3] = { -2, 2, 3 }, ry[3];
    d3[0] = 3;
    CHECK(tgk_binary(TGK_REMAINDER, TGK_F32, 1, d3, ra, st, rb, st, ry) == 0);
    CHECK(ry[0] == -0.5f && ry[1] == 0.5f && ry[2] == fmodf(1e10f, 3));
    CHECK(tgk_binary(TGK_FMOD, TGK_F32, 1, d3, ra, st, rb, st, ry) == 0);
    CHECK(ry[0] == 1.5f && ry[1] == -1.5f && ry[2] == 1.0f);
    int32_t c[3] = { 1, 5, -2 }, e[1] = { 1 };
    uint8_t cmp[3];
    int64_t s0[1] = { 0 };
    CHECK(tgk_binary(TGK_GT, TGK_I32, 1, d3, c, st, e, s0, cmp) == 0);
    CHECK(cmp[0] == 0 && cmp[1] == 1 && cmp[2] == 0);
    /* max/min propagate NaN */
    float fa[2] = { NAN, 1 }, fb[2] = { 0, NAN }, fy[2];
    int64_t d2[1] = { 2 };
    tgk_binary(TGK_MAXIMUM, TGK_F32, 1, d2, fa, st, fb, st, fy);
    CHECK(isnan(fy[0]) && isnan(fy[1]));
}

/* Bitwise ops and shifts against C's own operators in each width: the
 * reference is written per type, the kernel widens to int64 and truncates. */
#define BITWISE_REF(T, W, SIGNED) do { \
        const T *A = (const T *)a, *B = (const T *)b, *Y = (const T *)y; \
        for (int64_t i = 0; i < n; i++) { \
            T u = A[i], v = B[i], r; \
            int64_t cv = (int64_t)v, su = (int64_t)u; \
            bool out = cv < 0 || cv >= W; \
            switch (op) { \
            case TGK_BITWISE_AND: r = (T)(u & v); break; \
            case TGK_BITWISE_OR: r = (T)(u | v); break; \
            case TGK_BITWISE_XOR: r = (T)(u ^ v); break; \
            case TGK_SHL: r = out ? 0 : (T)((uint64_t)u << v); break; \
            default: r = out ? (T)(SIGNED && su < 0 ? -1 : 0) : (T)(u >> v); \
            } \
            bad += Y[i] != r; \
        } \
    } while (0)

static void test_bitwise(void)
{
    static const tgk_dtype types[] = { TGK_U8, TGK_I8, TGK_I16, TGK_I32, TGK_I64, TGK_U16,
                                       TGK_U32, TGK_U64 };
    int64_t n = randint(1, 5000), d[1] = { n }, st[1] = { 1 };
    uint8_t *a = malloc(8 * (size_t)n), *bits = malloc(8 * (size_t)n), *cnt = malloc(8 * (size_t)n),
            *y = malloc(8 * (size_t)n);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        tgk_dtype t = types[k];
        size_t es = tgk_dtype_size(t);
        for (int64_t i = 0; i < n * (int64_t)es; i++) {
            a[i] = (uint8_t)unit_next();
            bits[i] = (uint8_t)unit_next();
        }
        for (int64_t i = 0; i < n; i++)         /* counts: in range, past the width, negative */
            tgk_store_i64(t, cnt, i, i % 3 ? randint(0, 8 * (int64_t)es) : randint(-4, 70));
        for (tgk_binary_op op = TGK_BITWISE_AND; op <= TGK_SHR; op++) {
            const uint8_t *b = op < TGK_SHL ? bits : cnt;
            CHECK(tgk_binary(op, t, 1, d, a, st, b, st, y) == 0);
            int bad = 0;
            switch (t) {
            case TGK_U8: BITWISE_REF(uint8_t, 8, 0); break;
            case TGK_I8: BITWISE_REF(int8_t, 8, 1); break;
            case TGK_I16: BITWISE_REF(int16_t, 16, 1); break;
            case TGK_I32: BITWISE_REF(int32_t, 32, 1); break;
            case TGK_U16: BITWISE_REF(uint16_t, 16, 0); break;
            case TGK_U32: BITWISE_REF(uint32_t, 32, 0); break;
            case TGK_U64: BITWISE_REF(uint64_t, 64, 0); break;
            default: BITWISE_REF(int64_t, 64, 1); break;
            }
            if (bad)
                fprintf(stderr, "bitwise op %d on dtype %d: %d of %lld off\n", op, t, bad,
                        (long long)n);
            CHECK(bad == 0);
        }
        CHECK(tgk_unary(TGK_BITWISE_NOT, t, n, a, y, NULL) == 0);
        int bad = 0;
        for (int64_t i = 0; i < n * (int64_t)es; i++)
            bad += y[i] != (uint8_t)~a[i];
        CHECK(bad == 0);
    }
    /* ONNX BitShift's examples (uint8) */
    uint8_t x[3] = { 16, 4, 1 }, c[3] = { 1, 2, 3 }, z[3];
    int64_t d3[1] = { 3 };
    CHECK(tgk_binary(TGK_SHR, TGK_U8, 1, d3, x, st, c, st, z) == 0);
    CHECK(z[0] == 8 && z[1] == 1 && z[2] == 0);
    CHECK(tgk_binary(TGK_SHL, TGK_U8, 1, d3, x, st, c, st, z) == 0);
    CHECK(z[0] == 32 && z[1] == 16 && z[2] == 8);
    /* floats and bool are refused */
    float f[3] = { 1, 2, 3 };
    CHECK(tgk_binary(TGK_BITWISE_AND, TGK_F32, 1, d3, f, st, f, st, f) == -1);
    CHECK(tgk_binary(TGK_SHL, TGK_BOOL, 1, d3, x, st, c, st, z) == -1);
    CHECK(tgk_unary(TGK_BITWISE_NOT, TGK_F32, 3, f, f, NULL) == -1);
    CHECK(tgk_unary(TGK_BITWISE_NOT, TGK_BOOL, 3, x, z, NULL) == -1);
    free(a);
    free(bits);
    free(cnt);
    free(y);
}

/* u16, u32, u64 against C's unsigned arithmetic in each width: every binary op,
 * abs/neg/relu/clamp, max/min/sum/argmax reductions and conversions, on values
 * over the whole range (u64 from 2^63 up reads negative as int64). */
#define UNSIGNED_BIN_REF(T) do { \
        const T *A = (const T *)a, *B = (const T *)b; \
        for (int64_t i = 0; i < n; i++) { \
            T u = A[i], v = B[i]; \
            uint64_t r; \
            switch (op) { \
            case TGK_ADD: r = (T)(u + v); break; \
            case TGK_SUB: r = (T)(u - v); break; \
            case TGK_MUL: r = (T)((uint64_t)u * v); break; \
            case TGK_DIV: r = u / v; break; \
            case TGK_REMAINDER: case TGK_FMOD: r = u % v; break; \
            case TGK_MAXIMUM: r = u > v ? u : v; break; \
            case TGK_MINIMUM: r = u < v ? u : v; break; \
            case TGK_EQ: r = u == v; break; \
            case TGK_NE: r = u != v; break; \
            case TGK_LT: r = u < v; break; \
            case TGK_LE: r = u <= v; break; \
            case TGK_GT: r = u > v; break; \
            default: r = u >= v; break; \
            } \
            uint64_t got = op >= TGK_EQ ? ((const uint8_t *)y)[i] : (uint64_t)((const T *)y)[i]; \
            bad += got != r; \
        } \
    } while (0)

#define UNSIGNED_RED_REF(T) do { \
        const T *X = (const T *)a; \
        for (int64_t o = 0; o < rows; o++) { \
            T mx = 0, mn = (T)~(T)0, sum = 0; \
            int64_t am = 0; \
            for (int64_t j = 0; j < cols; j++) { \
                T v = X[o * cols + j]; \
                if (v > mx) mx = v, am = j; \
                if (v < mn) mn = v; \
                sum = (T)(sum + v); \
            } \
            bad += ((const T *)rmax)[o] != mx || ((const T *)rmin)[o] != mn || \
                   ((const T *)rsum)[o] != sum || amax[o] != am; \
        } \
    } while (0)

static uint64_t rand_unsigned(int bits)
{
    uint64_t v = unit_next();
    switch (unit_next() % 4) {           /* small, near the top, anything */
    case 0: v %= 8; break;
    case 1: v = ~(v % 8); break;
    default: break;
    }
    return bits == 64 ? v : v & ((UINT64_C(1) << bits) - 1);
}

static void test_unsigned(void)
{
    static const tgk_dtype types[] = { TGK_U16, TGK_U32, TGK_U64 };
    int64_t rows = randint(1, 40), cols = randint(1, 60), n = rows * cols, d[1] = { n },
            st[1] = { 1 }, d2[2] = { rows, cols };
    uint8_t *a = malloc(8 * (size_t)n), *b = malloc(8 * (size_t)n), *y = malloc(8 * (size_t)n),
            *rmax = malloc(8 * (size_t)rows), *rmin = malloc(8 * (size_t)rows),
            *rsum = malloc(8 * (size_t)rows);
    int64_t *amax = malloc(8 * (size_t)rows);
    for (size_t k = 0; k < sizeof types / sizeof types[0]; k++) {
        tgk_dtype t = types[k];
        int bits = 8 * (int)tgk_dtype_size(t);
        for (int64_t i = 0; i < n; i++) {
            tgk_store_i64(t, a, i, (int64_t)rand_unsigned(bits));
            uint64_t v = rand_unsigned(bits);
            tgk_store_i64(t, b, i, (int64_t)(v ? v : 3));      /* divisors */
        }
        static const tgk_binary_op ops[] = { TGK_ADD, TGK_SUB, TGK_MUL, TGK_DIV, TGK_REMAINDER,
                                             TGK_FMOD, TGK_MAXIMUM, TGK_MINIMUM, TGK_EQ, TGK_NE,
                                             TGK_LT, TGK_LE, TGK_GT, TGK_GE };
        for (size_t j = 0; j < sizeof ops / sizeof ops[0]; j++) {
            tgk_binary_op op = ops[j];
            CHECK(tgk_binary(op, t, 1, d, a, st, b, st, y) == 0);
            int bad = 0;
            switch (t) {
            case TGK_U16: UNSIGNED_BIN_REF(uint16_t); break;
            case TGK_U32: UNSIGNED_BIN_REF(uint32_t); break;
            default: UNSIGNED_BIN_REF(uint64_t); break;
            }
            if (bad)
                fprintf(stderr, "unsigned op %d on dtype %d: %d of %lld off\n", op, t, bad,
                        (long long)n);
            CHECK(bad == 0);
        }
        /* abs and relu are the value; neg wraps; clamp compares unsigned */
        tgk_unary_param cl = { 0, 5, (double)(UINT64_C(1) << 62) };
        int bad = 0;
        for (int u = 0; u < 4; u++) {
            tgk_unary_op op = u == 0 ? TGK_ABS : u == 1 ? TGK_RELU : u == 2 ? TGK_NEG : TGK_CLAMP;
            CHECK(tgk_unary(op, t, n, a, y, &cl) == 0);
            for (int64_t i = 0; i < n; i++) {
                uint64_t v = (uint64_t)tgk_load_i64(t, a, i), mask = bits == 64 ? ~UINT64_C(0)
                                                                    : (UINT64_C(1) << bits) - 1;
                uint64_t r = op == TGK_NEG ? (0 - v) & mask
                           : op != TGK_CLAMP ? v
                           : v < 5 ? 5 : (double)v > cl.hi ? (uint64_t)cl.hi : v;
                bad += (uint64_t)tgk_load_i64(t, y, i) != r;
            }
        }
        /* reductions over the last axis */
        uint32_t last = 2;
        CHECK(tgk_reduce(TGK_REDUCE_MAX, t, 2, d2, last, 0, a, rmax) == 0);
        CHECK(tgk_reduce(TGK_REDUCE_MIN, t, 2, d2, last, 0, a, rmin) == 0);
        CHECK(tgk_reduce(TGK_REDUCE_SUM, t, 2, d2, last, 0, a, rsum) == 0);
        tgk_arg_reduce(true, t, 2, d2, 1, a, amax);
        switch (t) {
        case TGK_U16: UNSIGNED_RED_REF(uint16_t); break;
        case TGK_U32: UNSIGNED_RED_REF(uint32_t); break;
        default: UNSIGNED_RED_REF(uint64_t); break;
        }
        /* to floats: correctly rounded from the exact value (C's own conversion) */
        float f[8];
        double g[8];
        for (int64_t i = 0; i < n; i += 8) {
            int64_t m = n - i < 8 ? n - i : 8;
            const uint8_t *src = a + i * (int64_t)tgk_dtype_size(t);
            tgk_cast(TGK_F32, f, t, src, m);
            tgk_cast(TGK_F64, g, t, src, m);
            for (int64_t q = 0; q < m; q++) {
                uint64_t v = (uint64_t)tgk_load_i64(t, src, q);
                bad += f[q] != (float)v || g[q] != (double)v;
            }
        }
        CHECK(bad == 0);
    }
    /* double rounding would give 2^63 for each (ties broken by bits below f64's) */
    uint64_t u[2] = { (UINT64_C(1) << 63) + (UINT64_C(1) << 39) + 1,
                      ~UINT64_C(0) - (UINT64_C(1) << 39) };
    int64_t s[2] = { -(INT64_C(1) << 62) - (INT64_C(1) << 38) - 1, INT64_MAX };
    float fu[2], fs[2];
    tgk_cast(TGK_F32, fu, TGK_U64, u, 2);
    tgk_cast(TGK_F32, fs, TGK_I64, s, 2);
    CHECK(fu[0] == (float)u[0] && fu[1] == (float)u[1] && fs[0] == (float)s[0] &&
          fs[1] == (float)s[1]);
    CHECK(fu[0] == 0x1.000002p63f && fs[0] == -0x1.000002p62f);
    /* from floats: truncated, saturated to [0, max], NaN 0 */
    float from[6] = { 2.9f, -3.0f, 1e30f, NAN, 0x1p63f, 65535.5f };
    uint64_t u64[6];
    uint32_t u32[6];
    uint16_t u16[6];
    tgk_cast(TGK_U64, u64, TGK_F32, from, 6);
    tgk_cast(TGK_U32, u32, TGK_F32, from, 6);
    tgk_cast(TGK_U16, u16, TGK_F32, from, 6);
    CHECK(u64[0] == 2 && u64[1] == 0 && u64[2] == UINT64_MAX && u64[3] == 0 &&
          u64[4] == UINT64_C(1) << 63 && u64[5] == 65535);
    CHECK(u32[0] == 2 && u32[1] == 0 && u32[2] == UINT32_MAX && u32[3] == 0 &&
          u32[4] == UINT32_MAX && u32[5] == 65535);
    CHECK(u16[0] == 2 && u16[1] == 0 && u16[2] == UINT16_MAX && u16[3] == 0 &&
          u16[4] == UINT16_MAX && u16[5] == 65535);
    /* integer to integer wraps, like NumPy's astype */
    int64_t neg[2] = { -1, INT64_MIN };
    tgk_cast(TGK_U64, u64, TGK_I64, neg, 2);
    tgk_cast(TGK_U16, u16, TGK_I64, neg, 2);
    CHECK(u64[0] == UINT64_MAX && u64[1] == UINT64_C(1) << 63 && u16[0] == 65535 && u16[1] == 0);
    free(a);
    free(b);
    free(y);
    free(rmax);
    free(rmin);
    free(rsum);
    free(amax);
}

static void test_where(void)
{
    for (int trial = 0; trial < 20; trial++) {
        int r = (int)randint(1, 5), ra, rb;
        int64_t od[8], cd[8], ad[8], bd[8], sc[8], sa[8], sb[8], idx[8];
        rand_bcast(r, od, &ra, cd, &rb, ad);
        for (int k = 0; k < r; k++)
            bd[k] = randint(0, 2) ? od[k] : 1;
        int64_t n = numel(r, od), nc = numel(r, cd), na = numel(rb, ad), nb = numel(r, bd);
        uint8_t *c = malloc((size_t)nc);
        for (int64_t i = 0; i < nc; i++)
            c[i] = randint(0, 2);
        float *a = rand_f32(na, -1, 1), *b = rand_f32(nb, -1, 1), *y = malloc(4 * (size_t)n);
        tgk_broadcast_strides(r, od, r, cd, sc);
        tgk_broadcast_strides(r, od, rb, ad, sa);
        tgk_broadcast_strides(r, od, r, bd, sb);
        tgk_where(4, r, od, c, sc, a, sa, b, sb, y);
        int bad = 0;
        for (int64_t i = 0; i < n; i++) {
            unravel(i, r, od, idx);
            float ref = c[bcast_at(r, idx, r, cd)] ? a[bcast_at(r, idx, rb, ad)]
                                                   : b[bcast_at(r, idx, r, bd)];
            bad += y[i] != ref;
        }
        CHECK(bad == 0);
        free(c);
        free(a);
        free(b);
        free(y);
    }
}

static void test_reduce(void)
{
    for (int trial = 0; trial < 40; trial++) {
        int r = (int)randint(1, 5);
        int64_t d[8], kd[8], idx[8], kidx[8];
        for (int k = 0; k < r; k++)
            d[k] = randint(1, 7);
        uint32_t axes = (uint32_t)randint(1, 1 << r);
        int kr = 0;
        for (int k = 0; k < r; k++)
            if (!(axes >> k & 1))
                kd[kr++] = d[k];
        int64_t n = numel(r, d), no = numel(kr, kd);
        float *x = rand_f32(n, 0.5, 1.5), *y = malloc(4 * (size_t)no);
        double *acc = malloc(8 * (size_t)no), *acc2 = malloc(8 * (size_t)no);
        int64_t cnt = n / no;
        for (tgk_reduce_op op = 0; op < TGK_REDUCE_ANY; op++) {
            CHECK(tgk_reduce(op, TGK_F32, r, d, axes, 1, x, y) == 0);
            for (int64_t o = 0; o < no; o++) {
                acc[o] = op == TGK_REDUCE_PROD ? 1 : op == TGK_REDUCE_MAX ? -INFINITY
                         : op == TGK_REDUCE_MIN ? INFINITY : 0;
                acc2[o] = 0;
            }
            for (int pass = 0; pass < (op == TGK_REDUCE_VAR ? 2 : 1); pass++)
                for (int64_t i = 0; i < n; i++) {
                    unravel(i, r, d, idx);
                    int kk = 0;
                    for (int k = 0; k < r; k++)
                        if (!(axes >> k & 1))
                            kidx[kk++] = idx[k];
                    int64_t o = ravel(kr, kd, kidx);
                    double v = x[i];
                    switch (op) {
                    case TGK_REDUCE_SUM: case TGK_REDUCE_MEAN: acc[o] += v; break;
                    case TGK_REDUCE_PROD: acc[o] *= v; break;
                    case TGK_REDUCE_MAX: acc[o] = fmax(acc[o], v); break;
                    case TGK_REDUCE_MIN: acc[o] = fmin(acc[o], v); break;
                    case TGK_REDUCE_VAR:
                        if (pass == 0)
                            acc2[o] += v / (double)cnt;
                        else
                            acc[o] += (v - acc2[o]) * (v - acc2[o]) / (double)(cnt - 1);
                        break;
                    default: break;
                    }
                }
            int bad = 0;
            for (int64_t o = 0; o < no; o++) {
                double ref = op == TGK_REDUCE_MEAN ? acc[o] / (double)cnt : acc[o];
                if (op == TGK_REDUCE_VAR && cnt == 1)
                    continue;                       /* 0/0 */
                bad += !(fabs(y[o] - ref) <= TOL(ref));
            }
            CHECK(bad == 0);
        }
        /* argmax / argmin along one axis */
        int axis = (int)randint(0, r);
        int64_t *ai = malloc(8 * (size_t)(n / d[axis]));
        for (int mx = 0; mx < 2; mx++) {
            tgk_arg_reduce(mx, TGK_F32, r, d, axis, x, ai);
            int64_t inner = numel(r - axis - 1, d + axis + 1), bad = 0;
            for (int64_t o = 0; o < n / d[axis]; o++) {
                int64_t base = o / inner * d[axis] * inner + o % inner, best = 0;
                for (int64_t j = 1; j < d[axis]; j++)
                    if (mx ? x[base + j * inner] > x[base + best * inner]
                           : x[base + j * inner] < x[base + best * inner])
                        best = j;
                bad += ai[o] != best;
            }
            CHECK(bad == 0);
        }
        free(ai);
        free(x);
        free(y);
        free(acc);
        free(acc2);
    }
    /* integers and any */
    int32_t xi[6] = { 1, -2, 3, 4, 5, -6 }, yi[2];
    int64_t d[2] = { 2, 3 };
    CHECK(tgk_reduce(TGK_REDUCE_SUM, TGK_I32, 2, d, 2, 0, xi, yi) == 0);
    CHECK(yi[0] == 2 && yi[1] == 3);
    CHECK(tgk_reduce(TGK_REDUCE_MEAN, TGK_I32, 2, d, 2, 0, xi, yi) == -1);
    uint8_t b[6] = { 0, 0, 0, 0, 1, 0 }, by[2];
    CHECK(tgk_reduce(TGK_REDUCE_ANY, TGK_BOOL, 2, d, 2, 0, b, by) == 0);
    CHECK(by[0] == 0 && by[1] == 1);
}

/* tgk_permute of x [r, d] by perm into y, against the index-by-index
 * reference: the count of wrong elements. */
static int permute_errors(int r, const int64_t *d, const int64_t *perm, const int32_t *x,
                          int32_t *y)
{
    int64_t od[8], idx[8], sidx[8], n = numel(r, d);
    int bad = 0;
    tgk_permute(4, r, d, perm, x, y);
    for (int k = 0; k < r; k++)
        od[k] = d[perm[k]];
    for (int64_t i = 0; i < n; i++) {
        unravel(i, r, od, idx);
        for (int k = 0; k < r; k++)
            sidx[perm[k]] = idx[k];
        bad += y[i] != x[ravel(r, d, sidx)];
    }
    return bad;
}

/* Movement kernels against index-by-index references, on int32 data (exact). */
static void test_movement(void)
{
    /* a transpose big enough to be split into tasks (movement.c's GRAIN_SLOW) */
    int64_t td[3] = {2, randint(150, 300), randint(60, 90)}, tperm[3] = {0, 2, 1};
    int64_t tn = numel(3, td);
    int32_t *tx = malloc(4 * (size_t)tn), *ty = malloc(4 * (size_t)tn);
    for (int64_t i = 0; i < tn; i++)
        tx[i] = (int32_t)unit_next();
    CHECK(permute_errors(3, td, tperm, tx, ty) == 0);
    free(tx);
    free(ty);

    /* short rows (movement.c's SHORT_ROW) of 1, 2, 4 and 8-byte elements: a
     * slice of the last axis, enough rows to be split into tasks */
    for (size_t es = 1; es <= 8; es *= 2) {
        int64_t sd[3] = {3, randint(600, 900), 24}, st = randint(0, 12), sl = randint(1, 12);
        size_t nb = (size_t)numel(3, sd) * es;
        unsigned char *sx = malloc(nb), *sy = malloc(nb);
        for (size_t i = 0; i < nb; i++)
            sx[i] = (unsigned char)unit_next();
        tgk_slice(es, 3, sd, 2, st, 1, sl, sx, sy);
        int bad = 0;
        for (int64_t row = 0; row < sd[0] * sd[1]; row++)
            bad += memcmp(sy + (size_t)(row * sl) * es, sx + (size_t)(row * 24 + st) * es,
                          (size_t)sl * es) != 0;
        CHECK(bad == 0);
        free(sx);
        free(sy);
    }

    for (int trial = 0; trial < 30; trial++) {
        int r = (int)randint(1, 6);
        int64_t d[8], od[8], idx[8], perm[8];
        for (int k = 0; k < r; k++) {
            d[k] = randint(1, 6);
            perm[k] = k;
        }
        for (int k = r - 1; k > 0; k--) {
            int j = (int)randint(0, k + 1);
            int64_t t = perm[k];
            perm[k] = perm[j];
            perm[j] = t;
        }
        int64_t n = numel(r, d), room = 1;
        for (int k = 0; k < r; k++)
            room *= d[k] + 4;                       /* the largest pad or tile result */
        int32_t *x = malloc(4 * (size_t)n), *y = malloc(4 * (size_t)(room + 9 * n)); /* or concat */
        for (int64_t i = 0; i < n; i++)
            x[i] = (int32_t)unit_next();
        CHECK(permute_errors(r, d, perm, x, y) == 0);
        int bad = 0;
        /* slice */
        int axis = (int)randint(0, r);
        int64_t start = randint(0, d[axis]), step = randint(1, 3);
        int64_t len = (d[axis] - start + step - 1) / step;
        tgk_slice(4, r, d, axis, start, step, len, x, y);
        memcpy(od, d, sizeof od);
        od[axis] = len;
        bad = 0;
        for (int64_t i = 0; i < numel(r, od); i++) {
            unravel(i, r, od, idx);
            idx[axis] = start + idx[axis] * step;
            bad += y[i] != x[ravel(r, d, idx)];
        }
        CHECK(bad == 0);
        /* pad (negative amounts crop) */
        int64_t before[8], after[8];
        for (int k = 0; k < r; k++) {
            before[k] = randint(-(d[k] / 2), 3);
            after[k] = randint(-(d[k] / 2), 3);
            od[k] = d[k] + before[k] + after[k];
        }
        int32_t fill = 12345;
        tgk_pad(4, r, d, before, after, &fill, x, y);
        bad = 0;
        for (int64_t i = 0; i < numel(r, od); i++) {
            unravel(i, r, od, idx);
            bool in = true;
            for (int k = 0; k < r; k++) {
                idx[k] -= before[k];
                in = in && idx[k] >= 0 && idx[k] < d[k];
            }
            bad += y[i] != (in ? x[ravel(r, d, idx)] : fill);
        }
        CHECK(bad == 0);
        /* tile */
        int64_t reps[8];
        for (int k = 0; k < r; k++) {
            reps[k] = randint(0, 3);
            od[k] = d[k] * reps[k];
        }
        tgk_tile(4, r, d, reps, x, y);
        bad = 0;
        for (int64_t i = 0; i < numel(r, od); i++) {
            unravel(i, r, od, idx);
            for (int k = 0; k < r; k++)
                idx[k] %= d[k];
            bad += y[i] != x[ravel(r, d, idx)];
        }
        CHECK(bad == 0);
        /* expand: x viewed with some dims 1 */
        int64_t sd[8];
        for (int k = 0; k < r; k++)
            sd[k] = randint(0, 2) ? d[k] : 1;
        tgk_expand(4, r, d, r, sd, x, y);
        bad = 0;
        for (int64_t i = 0; i < n; i++) {
            unravel(i, r, d, idx);
            bad += y[i] != x[bcast_at(r, idx, r, sd)];
        }
        CHECK(bad == 0);
        /* concat of three along a random axis: x split in three */
        int64_t outer = numel(axis, d), inner = numel(r - axis - 1, d + axis + 1);
        int64_t lens[3] = { randint(0, 4), randint(1, 4), randint(0, 4) };
        int64_t tot = lens[0] + lens[1] + lens[2];
        const void *parts[3];
        int32_t *buf[3];
        for (int p = 0; p < 3; p++) {
            buf[p] = malloc(4 * (size_t)(outer * lens[p] * inner + 1));
            for (int64_t i = 0; i < outer * lens[p] * inner; i++)
                buf[p][i] = (int32_t)unit_next();
            parts[p] = buf[p];
        }
        tgk_concat(4, outer, inner, 3, parts, lens, y);
        bad = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t j = 0; j < tot; j++)
                for (int64_t i = 0; i < inner; i++) {
                    int p = j < lens[0] ? 0 : j < lens[0] + lens[1] ? 1 : 2;
                    int64_t jj = j - (p > 0 ? lens[0] : 0) - (p > 1 ? lens[1] : 0);
                    bad += y[(o * tot + j) * inner + i] != buf[p][(o * lens[p] + jj) * inner + i];
                }
        CHECK(bad == 0);
        for (int p = 0; p < 3; p++)
            free(buf[p]);
        /* tril / triu over the last two dims */
        if (r >= 2) {
            int64_t rows = d[r - 2], cols = d[r - 1], k = randint(-3, 4);
            for (int up = 0; up < 2; up++) {
                tgk_tri(4, up, n / (rows * cols), rows, cols, k, x, y);
                bad = 0;
                for (int64_t i = 0; i < n; i++) {
                    int64_t c = i % cols, rr = i / cols % rows;
                    bool keep = up ? c - rr >= k : c - rr <= k;
                    bad += y[i] != (keep ? x[i] : 0);
                }
                CHECK(bad == 0);
            }
        }
        free(x);
        free(y);
    }
}

static void test_index(void)
{
    int64_t outer = randint(1, 5), nrow = randint(1, 9), inner = randint(1, 40), nidx = randint(1, 30);
    float *x = rand_f32(outer * nrow * inner, -1, 1), *y = malloc(4 * (size_t)(outer * nidx * inner));
    int64_t *idx = malloc(8 * (size_t)nidx), bad_idx = 0;
    for (int64_t j = 0; j < nidx; j++)
        idx[j] = randint(-nrow, nrow);
    CHECK(tgk_index_select(4, outer, nrow, inner, x, nidx, idx, y, &bad_idx) == 0);
    int bad = 0;
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++)
            for (int64_t i = 0; i < inner; i++) {
                int64_t row = idx[j] < 0 ? idx[j] + nrow : idx[j];
                bad += y[(o * nidx + j) * inner + i] != x[(o * nrow + row) * inner + i];
            }
    CHECK(bad == 0);
    idx[nidx / 2] = nrow;
    CHECK(tgk_index_select(4, outer, nrow, inner, x, nidx, idx, y, &bad_idx) == -1);
    CHECK(bad_idx == nrow);
    free(y);
    free(idx);
    /* gather along each axis of a rank-3 tensor */
    int64_t xd[3] = { outer, nrow, inner };
    for (int axis = 0; axis < 3; axis++) {
        int64_t id[3] = { randint(1, xd[0] + 1), randint(1, xd[1] + 1), randint(1, xd[2] + 1) };
        id[axis] = randint(1, 6);
        int64_t n = numel(3, id), ix[3];
        int64_t *gi = malloc(8 * (size_t)n);
        float *gy = malloc(4 * (size_t)n);
        for (int64_t i = 0; i < n; i++)
            gi[i] = randint(0, xd[axis]);
        CHECK(tgk_gather(4, 3, xd, id, axis, x, gi, gy, &bad_idx) == 0);
        bad = 0;
        for (int64_t i = 0; i < n; i++) {
            unravel(i, 3, id, ix);
            ix[axis] = gi[i];
            bad += gy[i] != x[ravel(3, xd, ix)];
        }
        CHECK(bad == 0);
        gi[n - 1] = -xd[axis] - 1;
        CHECK(tgk_gather(4, 3, xd, id, axis, x, gi, gy, &bad_idx) == -1);
        CHECK(bad_idx == -xd[axis] - 1);
        free(gi);
        free(gy);
    }
    free(x);
}

/* index_copy against a plain loop over the indices in order (the last of a
 * repeated index wins), into a copy and in place; cumsum against a double
 * (float) or exact (int64) running sum, forward and reverse, inclusive and
 * exclusive. */
static void test_index_copy_cumsum(void)
{
    int64_t outer = randint(1, 5), n = randint(1, 9), inner = randint(1, 40), nidx = randint(1, 12);
    int64_t total = outer * n * inner, bad_idx = 0;
    float *x = rand_f32(total, -1, 1), *src = rand_f32(outer * nidx * inner, -1, 1);
    float *y = malloc(4 * (size_t)total), *ref = malloc(4 * (size_t)total);
    int64_t *idx = malloc(8 * (size_t)nidx);
    for (int64_t j = 0; j < nidx; j++)
        idx[j] = randint(-n, n);
    memcpy(ref, x, 4 * (size_t)total);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t j = 0; j < nidx; j++)
            memcpy(ref + (o * n + (idx[j] < 0 ? idx[j] + n : idx[j])) * inner,
                   src + (o * nidx + j) * inner, 4 * (size_t)inner);
    CHECK(tgk_index_copy(4, outer, n, inner, x, nidx, idx, src, y, &bad_idx) == 0);
    CHECK(memcmp(y, ref, 4 * (size_t)total) == 0);
    CHECK(tgk_index_copy(4, outer, n, inner, x, nidx, idx, src, x, &bad_idx) == 0);
    CHECK(memcmp(x, ref, 4 * (size_t)total) == 0);
    idx[0] = -n - 1;
    CHECK(tgk_index_copy(4, outer, n, inner, x, nidx, idx, src, y, &bad_idx) == -1);
    CHECK(bad_idx == -n - 1);
    int64_t *xi = malloc(8 * (size_t)total), *yi = malloc(8 * (size_t)total);
    for (int64_t i = 0; i < total; i++)
        xi[i] = randint(-1000, 1000);
    for (int mode = 0; mode < 4; mode++) {
        bool excl = mode & 1, rev = mode & 2;
        CHECK(tgk_cumsum(TGK_F32, outer, n, inner, excl, rev, x, y) == 0);
        CHECK(tgk_cumsum(TGK_I64, outer, n, inner, excl, rev, xi, yi) == 0);
        double worst = 0;
        int bad = 0;
        for (int64_t o = 0; o < outer; o++)
            for (int64_t i = 0; i < inner; i++) {
                double s = 0;
                int64_t si = 0;
                for (int64_t j = 0; j < n; j++) {
                    int64_t at = (o * n + (rev ? n - 1 - j : j)) * inner + i;
                    double want = excl ? s : s + x[at];
                    int64_t want_i = excl ? si : si + xi[at];
                    s += x[at];
                    si += xi[at];
                    double e = fabs(y[at] - want);
                    worst = e > worst ? e : worst;
                    bad += yi[at] != want_i;
                }
            }
        CHECK(worst <= 1e-6 * n);
        CHECK(bad == 0);
    }
    CHECK(tgk_cumsum(TGK_BOOL, outer, n, inner, false, false, x, y) == -1);
    free(x);
    free(src);
    free(y);
    free(ref);
    free(idx);
    free(xi);
    free(yi);
}

static void test_gen_quant(void)
{
    int64_t n = randint(1, 100000), start = randint(-50, 50), step = randint(-3, 4);
    step = step ? step : 1;
    int64_t *ai = malloc(8 * (size_t)n);
    float *af = malloc(4 * (size_t)n);
    tgk_arange(TGK_I64, n, start, step, ai);
    tgk_arange(TGK_F32, n, start, step, af);
    int bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += ai[i] != start + i * step || af[i] != (float)(start + i * step);
    CHECK(bad == 0);
    double v = unit_uniform(-3, 3);
    tgk_full(TGK_F32, n, v, af);
    tgk_full(TGK_I64, n, 7.9, ai);
    bad = 0;
    for (int64_t i = 0; i < n; i++)
        bad += af[i] != (float)v || ai[i] != 7;
    CHECK(bad == 0);
    free(ai);
    free(af);

    /* per-channel int8 and uint8 round trips: error at most half a step */
    int64_t nch = randint(1, 5), inner = randint(1, 50), m = nch * inner * randint(1, 4);
    float *x = rand_f32(m, -2, 2), *xr = malloc(4 * (size_t)m), scale[8];
    int32_t zero[8];
    int8_t *q = malloc((size_t)m);
    for (int u = 0; u < 2; u++) {
        for (int64_t c = 0; c < nch; c++) {
            scale[c] = (float)unit_uniform(4.0 / 250, 0.1);
            zero[c] = u ? 128 : (int32_t)randint(-3, 4);
        }
        tgk_dtype qt = u ? TGK_U8 : TGK_I8;
        CHECK(tgk_quantize_f32(m, x, qt, scale, zero, nch, inner, q) == 0);
        CHECK(tgk_dequantize_f32(m, q, qt, scale, zero, nch, inner, xr) == 0);
        bad = 0;
        for (int64_t i = 0; i < m; i++) {
            int64_t c = i / inner % nch;
            double qr = nearbyint(x[i] / scale[c]) + zero[c];
            qr = fmin(fmax(qr, u ? 0 : -128), u ? 255 : 127);
            int64_t got = u ? ((uint8_t *)q)[i] : q[i];
            bad += got != (int64_t)qr || fabs(xr[i] - (qr - zero[c]) * scale[c]) > 1e-6;
        }
        CHECK(bad == 0);
    }
    CHECK(tgk_quantize_f32(m, x, TGK_I16, scale, zero, 1, m, q) == -1);
    free(x);
    free(xr);
    free(q);
}

int main(void)
{
    unit_seed("test_tensor_ops");
    tgk_set_num_threads(0);
    test_conversions();
    test_unary();
    test_binary();
    test_bitwise();
    test_unsigned();
    test_where();
    test_reduce();
    test_movement();
    test_index();
    test_index_copy_cumsum();
    test_gen_quant();
    tgk_set_num_threads(1);                     /* the inline path too */
    test_binary();
    test_reduce();
    return unit_report();
}
