/* The int8 GEMM on every path the CPU has (VNNI, AVX2, scalar) against exact
 * integer arithmetic, and the quantized linear and convolution layers (with
 * float or u8 activations) against the same math done step by step. Integers must match exactly; so must the floats, since
 * the reference performs the same float32 operations in the same order. */
#include <float.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/qgemm.h"
#include "backend/cpu/kernels/qquant.h"
#include "unit.h"

static const char *const paths[] = {"scalar", "avx2", "avx512vnni"};

static float rndf(float lo, float hi) { return (float)unit_uniform(lo, hi); }

/* c[m,n] = sum (a - zero) * w exactly, in 64 bits. */
static void ref_qgemm(int64_t M, int64_t N, int64_t K, const uint8_t *a, int32_t zero,
                      const int8_t *w, int64_t *c)
{
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            int64_t s = 0;
            for (int64_t k = 0; k < K; k++) s += ((int64_t)a[m * K + k] - zero) * w[n * K + k];
            c[m * N + n] = s;
        }
}

static void check_qgemm(int64_t M, int64_t N, int64_t K)
{
    uint8_t *a = malloc(M * K);
    int8_t *w = malloc(N * K);
    int64_t *want = malloc(sizeof *want * M * N);
    int32_t *got = malloc(sizeof *got * (M * N + 16));
    void *packed = malloc(tgk_qgemm_packed_size(N, K));
    for (int64_t i = 0; i < M * K; i++) a[i] = (uint8_t)unit_next();
    for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)unit_next();
    /* extremes too: all-255 rows against all -128 weights */
    if (M > 1) memset(a, 255, K);
    if (N > 1) memset(w, 0x80, K);
    int32_t zero = (int32_t)(unit_next() % 256);
    ref_qgemm(M, N, K, a, zero, w, want);
    tgk_qgemm_pack(N, K, w, packed);

    for (int p = 0; p < 3; p++) {
        if (tgk_qgemm_set_path(paths[p])) continue;
        for (int i = 0; i < 16; i++) got[M * N + i] = 0x5a5a5a5a;      /* sentinels */
        tgk_qgemm_u8s8(M, N, K, a, K, zero, packed, got, N);
        int64_t bad = 0;
        for (int64_t i = 0; i < M * N; i++) bad += got[i] != want[i];
        if (bad) fprintf(stderr, "qgemm %s M=%lld N=%lld K=%lld: %lld wrong\n", paths[p],
                         (long long)M, (long long)N, (long long)K, (long long)bad);
        CHECK(bad == 0);
        CHECK(got[M * N] == 0x5a5a5a5a && got[M * N + 15] == 0x5a5a5a5a);
    }
    free(a), free(w), free(want), free(got), free(packed);
}

static void check_qlinear(int64_t M, int64_t N, int64_t K, int dynamic)
{
    float *x = malloc(sizeof *x * M * K), *ws = malloc(sizeof *ws * N), *b = malloc(sizeof *b * N);
    float *got = malloc(sizeof *got * M * N);
    int8_t *w = malloc(N * K);
    uint8_t *xq = malloc(M * K);
    int64_t *acc = malloc(sizeof *acc * M * N);
    void *packed = malloc(tgk_qgemm_packed_size(N, K));
    float lo = 1e30f, hi = -1e30f;
    for (int64_t i = 0; i < M * K; i++) {
        x[i] = rndf(-3, 5);
        lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
    }
    for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)unit_next();
    for (int64_t n = 0; n < N; n++) ws[n] = rndf(1e-3f, 1e-2f), b[n] = rndf(-1, 1);
    float xs;
    int32_t xz;
    tgk_qparams_u8(dynamic ? lo : -2.0f, dynamic ? hi : 4.0f, &xs, &xz);
    for (int64_t i = 0; i < M * K; i++) {
        float v = nearbyintf(x[i] / xs) + (float)xz;
        xq[i] = (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
    }
    ref_qgemm(M, N, K, xq, xz, w, acc);
    tgk_qgemm_pack(N, K, w, packed);
    CHECK(tgk_qlinear_f32(M, N, K, x, dynamic ? 0.0f : xs, dynamic ? 0 : xz, dynamic, packed, ws, b, got) == 0);
    int64_t bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float want = (float)acc[m * N + n] * (xs * ws[n]) + b[n];
            bad += memcmp(&want, &got[m * N + n], sizeof want) != 0;
        }
    CHECK(bad == 0);
    free(x), free(ws), free(b), free(got), free(w), free(xq), free(acc), free(packed);
}


/* tgk_qlinear with u8 on either side, on every path: a u8 output is each
 * exact sum requantized (tgk_requant1's formula here, the bounds random),
 * equal byte for byte; with an activation, the pre-activation requantized
 * with p_scale and p_zero through the table; within one step of float64
 * (plus, with an activation, what the pre-activation's step moves it). */
static void check_qlinear_u8(int64_t M, int64_t N, int64_t K, int act)
{
    uint8_t *xq = malloc(M * K), *yq = malloc(M * N + 1), lut[256];
    int8_t *w = malloc(N * K);
    float *ws = malloc(sizeof *ws * N), *b = malloc(sizeof *b * N);
    int64_t *acc = malloc(sizeof *acc * M * N);
    void *packed = malloc(tgk_qgemm_packed_size(N, K));
    for (int64_t i = 0; i < M * K; i++) xq[i] = (uint8_t)unit_next();
    for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)unit_next();
    for (int64_t n = 0; n < N; n++) ws[n] = rndf(1e-3f, 1e-2f), b[n] = rndf(-1, 1);
    float xs = rndf(0.01f, 0.05f), ys, ps;
    int32_t xz = (int32_t)(unit_next() % 256), yz, pz;
    ref_qgemm(M, N, K, xq, xz, w, acc);
    tgk_qgemm_pack(N, K, w, packed);
    float lo = 0, hi = 0;
    for (int64_t i = 0; i < M * N; i++) {
        float f = (float)acc[i] * (xs * ws[i % N]) + b[i % N];
        lo = f < lo ? f : lo, hi = f > hi ? f : hi;
    }
    tgk_qparams_u8(0.7f * lo, 0.7f * hi, &ys, &yz);
    tgk_qparams_u8(lo, hi, &ps, &pz);
    tgk_qact a = {.xq = xq, .x_scale = xs, .x_zero = xz, .yq = yq, .y_scale = ys, .y_zero = yz,
                  .y_lo = act ? 0 : (int32_t)(unit_next() % 80),
                  .y_hi = act ? 255 : 175 + (int32_t)(unit_next() % 81), .y_act = act,
                  .p_scale = ps, .p_zero = pz, .lut = act ? lut : NULL};
    if (act) tgk_act_lut(act, ps, pz, ys, yz, a.y_lo, a.y_hi, lut);
    for (int p = 0; p < 3; p++) {
        if (tgk_qgemm_set_path(paths[p])) continue;
        yq[M * N] = 77;
        CHECK(tgk_qlinear(M, N, K, &a, packed, ws, b) == 0);
        int64_t bad = 0, far = 0;
        for (int64_t i = 0; i < M * N; i++) {
            int64_t n = i % N;
            float s = xs * ws[n], qs = act ? ps : ys, q0 = (float)(act ? pz : yz);
            float m = (float)((double)s / qs), c = (float)((double)b[n] / qs + q0);
            float q = fmaf((float)acc[i], m, c);
            float qlo = act ? 0.0f : (float)a.y_lo, qhi = act ? 255.0f : (float)a.y_hi;
            uint8_t u = (uint8_t)nearbyintf(q < qlo ? qlo : q > qhi ? qhi : q);
            bad += yq[i] != (act ? lut[u] : u);
            double t = (double)acc[i] * s + b[n];
            double e = (act == TGK_QACT_GELU        ? 0.5 * t * (1 + erf(t / sqrt(2.0)))
                        : act == TGK_QACT_GELU_TANH ? 0.5 * t * (1 + tanh(sqrt(2 / M_PI) * (t + 0.044715 * t * t * t)))
                        : act                       ? t / (1 + exp(-t))
                                                    : t) / ys + yz;
            e = e < a.y_lo ? a.y_lo : e > a.y_hi ? a.y_hi : e;
            far += fabs(yq[i] - e) > 1 + (act ? 0.6 * ps / ys : 0);
        }
        if (bad || far) fprintf(stderr, "qlinear u8 %s M=%lld N=%lld K=%lld act %d: %lld wrong, %lld far\n",
                                paths[p], (long long)M, (long long)N, (long long)K, act, (long long)bad,
                                (long long)far);
        CHECK(bad == 0 && far == 0 && yq[M * N] == 77);
    }
    /* a u8 output with the dynamic scheme: refused */
    tgk_qact dyn = a;
    dyn.xq = NULL, dyn.x = ws, dyn.dynamic = 1;
    CHECK(tgk_qlinear(1, N, 1, &dyn, packed, ws, b) == -1);
    free(xq), free(yq), free(w), free(ws), free(b), free(acc), free(packed);
}

/* The quantization formula itself, in double where it is exact. */
static uint8_t ref_quant(float x, float s, int32_t z)
{
    float v = nearbyintf(x / s) + (float)z;
    if (v != v) return (uint8_t)z;
    return (uint8_t)(v < 0 ? 0 : v > 255 ? 255 : v);
}

static void check_quantize(int64_t n, float s)
{
    float *x = malloc(sizeof *x * (n + 1));
    uint8_t *q = malloc(n + 16);
    int32_t z = (int32_t)(unit_next() % 256);
    for (int64_t i = 0; i < n; i++) {
        switch (unit_next() % 8) {
        case 0: x[i] = ((int)(unit_next() % 600) - 300 + 0.5f) * s; break;   /* ties */
        case 1: x[i] = unit_next() % 2 ? NAN : (unit_next() % 2 ? INFINITY : -INFINITY); break;
        case 2:     /* a few ulps either side of a tie */
            x[i] = ((int)(unit_next() % 600) - 300 + 0.5f) * s;
            for (int k = (int)(unit_next() % 4); k > 0; k--) x[i] = nextafterf(x[i], unit_next() % 2 ? INFINITY : -INFINITY);
            break;
        default: x[i] = rndf(-10, 10);
        }
    }
    for (int p = 0; p < 3; p++) {
        if (tgk_qgemm_set_path(paths[p])) continue;
        memset(q + n, 0x5a, 16);
        tgk_quantize_u8(n, x, s, z, q);
        int64_t bad = 0;
        for (int64_t i = 0; i < n; i++) bad += q[i] != ref_quant(x[i], s, z);
        if (bad) fprintf(stderr, "quantize %s n=%lld: %lld wrong\n", paths[p], (long long)n, (long long)bad);
        CHECK(bad == 0 && q[n] == 0x5a);
    }
    float lo, hi, rlo = INFINITY, rhi = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (x[i] == x[i]) rlo = x[i] < rlo ? x[i] : rlo, rhi = x[i] > rhi ? x[i] : rhi;
    if (rlo > rhi)          /* nothing but NaN: the range is [0, 0] */
        rlo = rhi = 0.0f;
    tgk_minmax_f32(n, x, &lo, &hi);
    CHECK(n == 0 || (lo == rlo && hi == rhi));
    free(x), free(q);
}

/* tgk_lut_u8 on every path (VBMI's permutes; the loop) against indexing:
 * lengths around its 64-byte vectors and its tasks of 64 KiB. */
static void check_lut(int64_t n)
{
    uint8_t lut[256], *q = malloc(n + 64), *v = malloc(n + 64);
    for (int i = 0; i < 256; i++) lut[i] = (uint8_t)unit_next();
    for (int64_t i = 0; i < n + 64; i++) v[i] = (uint8_t)unit_next();
    for (int p = 0; p < 3; p++) {
        if (tgk_qgemm_set_path(paths[p])) continue;
        memcpy(q, v, n + 64);
        tgk_lut_u8(n, lut, q);
        int64_t bad = 0;
        for (int64_t i = 0; i < n + 64; i++) bad += q[i] != (i < n ? lut[v[i]] : v[i]);
        if (bad) fprintf(stderr, "lut %s n=%lld: %lld wrong\n", paths[p], (long long)n, (long long)bad);
        CHECK(bad == 0);
    }
    free(q), free(v);
}

/* The AVX-512 quantization divides by multiplying with 1/s in double and
 * rounding to float once (qgemm.c): that is the float quotient whenever
 * it is at least FLT_MIN, and rounds to the same integer when smaller.
 * Random bit patterns: every finite x, every positive normal s. */
static void check_recip_division(int64_t n)
{
    int64_t bad = 0;
    for (int64_t i = 0; i < n; i++) {
        uint32_t bx = (uint32_t)unit_next(), bs = (uint32_t)unit_next() & 0x7fffffffu;
        float x, s;
        memcpy(&x, &bx, 4), memcpy(&s, &bs, 4);
        if (!isfinite(x) || !isnormal(s)) continue;
        if (i % 4 == 0) x = (floorf(x / s) + 0.5f) * s;     /* near ties */
        float want = x / s, got = (float)((double)x * (1.0 / (double)s));
        bool same = fabsf(want) >= FLT_MIN ? memcmp(&want, &got, 4) == 0 || (want != want && got != got)
                                           : nearbyintf(want) == nearbyintf(got);
        bad += !same;
    }
    if (bad) fprintf(stderr, "x * (1/s) in double: %lld of %lld not x / s\n", (long long)bad, (long long)n);
    CHECK(bad == 0);
}

/* tgk_qconv with u8 on either side against tgk_qconv_f32's output y and the
 * exact sums acc (checked below): the input quantized already (xq) gives the
 * same floats; a u8 output (the output's parameters a scale that saturates
 * some of y, clamped to random bounds) is each sum requantized as qgemm.h
 * says, step by step here, each byte equal; and within one step of the
 * float64 value (acc * x_scale * w_scale + bias) / y_scale + y_zero rounded
 * and clamped. With a fused silu (variants 3 and 4: u8 or float in), each
 * byte is the sum requantized with the pre-activation's p_scale and p_zero
 * (the range of y, so nothing saturates there) through the table, whose
 * every entry is checked against float64 here; and within one step, plus
 * what quantizing the pre-activation moves silu (|silu'| < 1.1 times half
 * of p_scale), of silu(acc * x_scale * w_scale + bias) / y_scale + y_zero
 * in float64. */
static void check_qconv_u8(const tgk_conv_desc *d, const float *x, const uint8_t *xq, float xs,
                           int32_t xz, const void *packed, const float *ws, const float *b,
                           const float *y, const int64_t *accs, int64_t ny, int64_t outsp)
{
    float lo = 0, hi = 0, ys;
    int32_t yz;
    for (int64_t i = 0; i < ny; i++) lo = y[i] < lo ? y[i] : lo, hi = y[i] > hi ? y[i] : hi;
    tgk_qparams_u8(0.7f * lo, 0.7f * hi, &ys, &yz);
    float *yf = malloc(sizeof *yf * (ny + 1)), ps;
    uint8_t *yq = malloc(ny + 1), lut[256];
    int32_t pz;
    tgk_qparams_u8(lo, hi, &ps, &pz);
    for (int v = 0; v < 5; v++) {       /* u8 in; u8 out; both; silu: u8 in, float in */
        bool silu = v >= 3;
        tgk_qact a = {.x = v == 1 || v == 4 ? x : NULL, .xq = v == 1 || v == 4 ? NULL : xq,
                      .x_scale = xs, .x_zero = xz, .y = v == 0 ? yf : NULL,
                      .yq = v == 0 ? NULL : yq, .y_scale = ys, .y_zero = yz,
                      .y_lo = (int32_t)(unit_next() % 80),
                      .y_hi = 175 + (int32_t)(unit_next() % 81),
                      .y_act = silu ? TGK_QACT_SILU : TGK_QACT_NONE, .p_scale = ps,
                      .p_zero = pz, .lut = silu ? lut : NULL};
        if (silu && unit_next() % 2)    /* unclamped too: silu's negative side */
            a.y_lo = 0, a.y_hi = 255;
        if (silu) {
            tgk_act_lut(TGK_QACT_SILU, ps, pz, ys, yz, a.y_lo, a.y_hi, lut);
            for (int u = 0; u < 256; u++) {
                double t = (u - pz) * (double)ps, e = nearbyint(t / (1 + exp(-t)) / ys + yz);
                CHECK(lut[u] == (e < a.y_lo ? a.y_lo : e > a.y_hi ? a.y_hi : e));
            }
        }
        yf[ny] = 12345.0f, yq[ny] = 77;
        CHECK(tgk_qconv(d, &a, packed, ws, b) == 0);
        int64_t bad = 0, far = 0;
        for (int64_t i = 0; i < ny; i++) {
            if (v == 0) {
                bad += memcmp(&yf[i], &y[i], sizeof *y) != 0;
                continue;
            }
            int64_t ko = i / outsp % d->k;
            float s = xs * ws[ko];
            if (silu) {
                float m = (float)((double)s / ps), c = (float)((double)b[ko] / ps + pz);
                float q = fmaf((float)accs[i], m, c);
                bad += yq[i] != lut[(uint8_t)nearbyintf(q < 0 ? 0 : q > 255 ? 255 : q)];
                double t = (double)accs[i] * s + b[ko];
                double e = t / (1 + exp(-t)) / ys + yz;
                e = e < a.y_lo ? a.y_lo : e > a.y_hi ? a.y_hi : e;
                far += fabs(yq[i] - e) > 1 + 0.55 * ps / ys;
                continue;
            }
            float m = (float)((double)s / ys), c = (float)((double)b[ko] / ys + yz);
            float q = fmaf((float)accs[i], m, c);
            q = q < (float)a.y_lo ? (float)a.y_lo : q > (float)a.y_hi ? (float)a.y_hi : q;
            bad += yq[i] != (uint8_t)nearbyintf(q);
            double e = nearbyint(((double)accs[i] * s + b[ko]) / ys + yz);
            e = e < a.y_lo ? a.y_lo : e > a.y_hi ? a.y_hi : e;
            far += fabs(yq[i] - e) > 1;
        }
        if (bad) fprintf(stderr, "qconv %s nsp=%d c=%lld k=%lld g=%lld u8 variant %d: %lld wrong\n",
                         tgk_qgemm_path(), d->nsp, (long long)d->c, (long long)d->k,
                         (long long)d->groups, v, (long long)bad);
        if (far) fprintf(stderr, "qconv u8 output: %lld more than one step from float64\n", (long long)far);
        CHECK(bad == 0 && far == 0 && yf[ny] == 12345.0f && yq[ny] == 77);
    }
    /* a u8 input with the dynamic scheme, bounds outside u8: refused */
    tgk_qact bad_dyn = {.xq = xq, .x_scale = xs, .x_zero = xz, .dynamic = 1, .y = yf};
    tgk_qact bad_lo = {.x = x, .x_scale = xs, .x_zero = xz, .yq = yq, .y_scale = ys, .y_lo = 9, .y_hi = 8};
    /* a fused silu with a float output or without its table, an unknown
     * activation: refused */
    tgk_qact bad_act = {.x = x, .x_scale = xs, .x_zero = xz, .y = yf, .y_act = TGK_QACT_SILU,
                        .p_scale = ps, .lut = lut};
    tgk_qact no_lut = {.x = x, .x_scale = xs, .x_zero = xz, .yq = yq, .y_scale = ys, .y_hi = 255,
                       .y_act = TGK_QACT_SILU, .p_scale = ps};
    tgk_qact bad_kind = {.x = x, .x_scale = xs, .x_zero = xz, .yq = yq, .y_scale = ys, .y_hi = 255,
                         .y_act = 7};
    CHECK(tgk_qconv(d, &bad_dyn, packed, ws, b) == -1 && tgk_qconv(d, &bad_lo, packed, ws, b) == -1 &&
          tgk_qconv(d, &bad_act, packed, ws, b) == -1 && tgk_qconv(d, &bad_kind, packed, ws, b) == -1 &&
          tgk_qconv(d, &no_lut, packed, ws, b) == -1);
    free(yf), free(yq);
}

/* Quantized convolution against the same math done directly: quantize, sum
 * (xq - zero) * w over the window with padding reading the zero point, scale. */
static void check_qconv(int nsp, int64_t n, int64_t c, int64_t k, int64_t groups, int64_t in,
                        int64_t ker, int64_t stride, int64_t pad, int64_t dil, int dynamic)
{
    tgk_conv_desc d = {.nsp = nsp, .n = n, .c = c, .k = k, .groups = groups};
    int64_t insp = 1, outsp = 1, kp = 1, out = (in + 2 * pad - dil * (ker - 1) - 1) / stride + 1;
    if (out < 1) return;
    for (int i = 0; i < nsp; i++) {
        d.in[i] = in, d.out[i] = out, d.kernel[i] = ker, d.stride[i] = stride, d.pad[i] = pad,
        d.dil[i] = dil;
        insp *= in, outsp *= out, kp *= ker;
    }
    int64_t cg = c / groups, kg = k / groups, kk = cg * kp;
    float *x = malloc(sizeof *x * n * c * insp), *ws = malloc(sizeof *ws * k), *b = malloc(sizeof *b * k);
    float *y = malloc(sizeof *y * (n * k * outsp + 1));
    int64_t *accs = malloc(sizeof *accs * n * k * outsp);
    int8_t *w = malloc(k * kk);
    uint8_t *xq = malloc(n * c * insp);
    for (int64_t i = 0; i < n * c * insp; i++) x[i] = rndf(-2, 3);
    for (int64_t i = 0; i < k * kk; i++) w[i] = (int8_t)unit_next();
    for (int64_t i = 0; i < k; i++) ws[i] = rndf(1e-3f, 1e-2f), b[i] = rndf(-1, 1);
    float xs, lo = 1e30f, hi = -1e30f;
    int32_t xz;
    for (int64_t i = 0; i < n * c * insp; i++) lo = x[i] < lo ? x[i] : lo, hi = x[i] > hi ? x[i] : hi;
    tgk_qparams_u8(dynamic ? lo : -1.5f, dynamic ? hi : 2.5f, &xs, &xz);
    for (int64_t i = 0; i < n * c * insp; i++) xq[i] = ref_quant(x[i], xs, xz);
    /* weights packed under each path (VNNI's layout differs: panels), then
     * run on every path */
    for (int pp = 0; pp < 3; pp++) {
        if (tgk_qgemm_set_path(paths[pp])) continue;
        void *packed = malloc(tgk_qconv_packed_size(&d));
        CHECK(tgk_qconv_pack(&d, w, packed) == 0);
        void *slot = NULL, *once = tgk_qconv_pack_once(&slot, &d, w);
        CHECK(once && slot == once && tgk_qconv_pack_once(&slot, &d, w) == once &&
              memcmp(once, packed, tgk_qconv_packed_size(&d)) == 0);
        for (int p = 0; p < 3; p++) {
            if (tgk_qgemm_set_path(paths[p])) continue;
            y[n * k * outsp] = 12345.0f;
            CHECK(tgk_qconv_f32(&d, x, dynamic ? 0.0f : xs, dynamic ? 0 : xz, dynamic, packed, ws, b, y) == 0);
            int64_t bad = 0;
            int64_t o3[3] = {1, 1, 1}, i3[3] = {1, 1, 1};
            for (int i = 0; i < nsp; i++) o3[3 - nsp + i] = out, i3[3 - nsp + i] = in;
            int64_t k3[3] = {1, 1, 1};
            for (int i = 0; i < nsp; i++) k3[3 - nsp + i] = ker;
            for (int64_t im = 0; im < n; im++)
                for (int64_t ko = 0; ko < k; ko++)
                    for (int64_t pos = 0; pos < outsp; pos++) {
                        int64_t o[3] = {pos / (o3[1] * o3[2]), pos / o3[2] % o3[1], pos % o3[2]};
                        int64_t g = ko / kg, acc = 0;
                        for (int64_t ci = 0; ci < cg; ci++)
                            for (int64_t a = 0; a < k3[0]; a++)
                                for (int64_t bb = 0; bb < k3[1]; bb++)
                                    for (int64_t e = 0; e < k3[2]; e++) {
                                        int64_t ii[3] = {o[0] * (nsp == 3 ? stride : 1) - (nsp == 3 ? pad : 0) + a * (nsp == 3 ? dil : 1),
                                                         o[1] * (nsp >= 2 ? stride : 1) - (nsp >= 2 ? pad : 0) + bb * (nsp >= 2 ? dil : 1),
                                                         o[2] * stride - pad + e * dil};
                                        bool inside = ii[0] >= 0 && ii[0] < i3[0] && ii[1] >= 0 && ii[1] < i3[1] && ii[2] >= 0 && ii[2] < i3[2];
                                        int64_t xv = inside ? xq[((im * c + g * cg + ci) * i3[0] + ii[0]) * i3[1] * i3[2] + ii[1] * i3[2] + ii[2]] : xz;
                                        acc += (xv - xz) * w[ko * kk + (ci * k3[0] + a) * k3[1] * k3[2] + bb * k3[2] + e];
                                    }
                        accs[(im * k + ko) * outsp + pos] = acc;
                        float want = (float)acc * (xs * ws[ko]) + b[ko];
                        bad += memcmp(&want, &y[(im * k + ko) * outsp + pos], sizeof want) != 0;
                    }
            if (bad) fprintf(stderr, "qconv packed %s run %s nsp=%d c=%lld k=%lld g=%lld: %lld wrong\n",
                             paths[pp], paths[p], nsp, (long long)c, (long long)k, (long long)groups, (long long)bad);
            CHECK(bad == 0 && y[n * k * outsp] == 12345.0f);
            if (!dynamic)
                check_qconv_u8(&d, x, xq, xs, xz, packed, ws, b, y, accs, n * k * outsp, outsp);
        }
        free(packed);
    }
    free(x), free(ws), free(b), free(y), free(accs), free(w), free(xq);
}

/* Weight-only linear against float64: x * (q * scale) summed in double. */
static void check_wlinear(int64_t M, int64_t N, int64_t K, int bits, int64_t group)
{
    int64_t ng = group > 0 && group < K ? (K + group - 1) / group : 1, rb = bits == 4 ? (K + 1) / 2 : K;
    float *x = malloc(sizeof *x * M * K), *s = malloc(sizeof *s * N * ng), *b = malloc(sizeof *b * N);
    float *y = malloc(sizeof *y * M * N);
    uint8_t *q = malloc(N * rb);
    for (int64_t i = 0; i < M * K; i++) x[i] = rndf(-1, 1);
    for (int64_t i = 0; i < N * rb; i++) q[i] = (uint8_t)unit_next();
    for (int64_t i = 0; i < N * ng; i++) s[i] = rndf(0.001f, 0.1f);
    for (int64_t i = 0; i < N; i++) b[i] = rndf(-1, 1);
    CHECK(tgk_wlinear_f32(M, N, K, x, q, bits, group, s, b, y) == 0);
    double worst = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            double acc = b[n], mag = fabs(b[n]);
            for (int64_t k = 0; k < K; k++) {
                int32_t v = bits == 8 ? (int8_t)q[n * K + k]
                                      : (k % 2 ? q[n * rb + k / 2] >> 4 : q[n * rb + k / 2] & 15);
                if (bits == 4 && v >= 8) v -= 16;
                double wv = (double)((float)v * s[n * ng + (ng > 1 ? k / group : 0)]);
                acc += (double)x[m * K + k] * wv, mag += fabs((double)x[m * K + k] * wv);
                CHECK_NEAR(tgk_wq_weight(q, bits, K, ng > 1 ? group : 0, s, n, k), wv, 0);
            }
            double err = fabs(acc - y[m * N + n]) / (mag + 1e-30);
            worst = err > worst ? err : worst;
        }
    if (worst > 1e-5) fprintf(stderr, "wlinear M=%lld N=%lld K=%lld bits=%d: rel err %g\n",
                              (long long)M, (long long)N, (long long)K, bits, worst);
    CHECK(worst <= 1e-5);   /* float32 sums of K products, relative to sum |x w| */
    CHECK(tgk_wlinear_f32(M, N, K, x, q, 3, group, s, b, y) == -1);
    free(x), free(s), free(b), free(y), free(q);
}

int main(void)
{
    unit_seed("test_qgemm");
    printf("best path %s\n", tgk_qgemm_path());
    const int64_t sizes[][3] = {{1, 1, 1}, {1, 16, 4}, {3, 17, 5}, {4, 16, 64}, {5, 33, 7},
                                {7, 10, 130}, {9, 48, 255}, {64, 70, 384}, {2, 1, 1023},
                                /* batch 1, large: rows and columns split across threads */
                                {1, 1000, 512}, {3, 200, 768}, {37, 130, 600}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_qgemm(sizes[i][0], sizes[i][1], sizes[i][2]);
    for (int t = 0; t < 20; t++) check_qgemm(1 + unit_next() % 40, 1 + unit_next() % 80, 1 + unit_next() % 300);
    if (tgk_qgemm_set_path("avx512vnni")) tgk_qgemm_set_path("avx2");   /* back to the best */
    check_qlinear(5, 19, 37, 0);
    check_qlinear(33, 64, 256, 1);
    for (int act = 0; act < 4; act++) {
        check_qlinear_u8(1, 5, 7, act);
        check_qlinear_u8(13, 40, 70, act);
        check_qlinear_u8(197, 96, 192, act);
    }
    const int64_t qn[] = {0, 1, 15, 16, 17, 100, 1000, 70001};
    for (size_t i = 0; i < sizeof qn / sizeof qn[0]; i++) check_quantize(qn[i], rndf(0.01f, 0.1f));
    /* scales of other magnitudes, a power of two, an all-ones mantissa */
    const float scales[] = {1e-6f, 3e-4f, 0.5f, 0.1f, 7.3f, 1e3f, 0x1.fffffep-1f};
    for (size_t i = 0; i < sizeof scales / sizeof scales[0]; i++) check_quantize(70001, scales[i]);
    check_recip_division(1 << 22);
    const int64_t ln[] = {0, 1, 63, 64, 65, 200, 65536 + 17, 300001};
    for (size_t i = 0; i < sizeof ln / sizeof ln[0]; i++) check_lut(ln[i]);
    /* nsp, n, c, k, groups, in, kernel, stride, pad, dilation, dynamic */
    check_qconv(2, 2, 3, 16, 1, 8, 3, 1, 1, 1, 0);
    check_qconv(2, 1, 8, 12, 4, 7, 3, 2, 1, 1, 1);
    check_qconv(1, 3, 5, 7, 1, 11, 4, 1, 2, 2, 0);
    check_qconv(3, 1, 2, 4, 2, 5, 2, 1, 0, 1, 1);
    check_qconv(2, 1, 4, 4, 4, 6, 3, 1, 1, 1, 0);     /* depthwise */
    check_qconv(2, 2, 70, 33, 1, 5, 1, 1, 0, 1, 0);   /* pointwise, K not a multiple of 4 */
    /* the panel path: chunks of 64 pixels and their last partial panel
     * (1 to 4 panels), channel blocks of 6 and their tail, stride 2 */
    check_qconv(2, 2, 16, 23, 1, 13, 3, 1, 1, 1, 0);  /* 169 pixels: 2 chunks + 41 */
    check_qconv(2, 1, 9, 64, 1, 15, 3, 2, 1, 1, 0);   /* 8x8: one chunk of 4 panels */
    check_qconv(2, 1, 3, 8, 1, 19, 7, 2, 3, 1, 1);    /* an RGB stem */
    check_qconv(2, 1, 32, 40, 1, 4, 3, 1, 1, 1, 0);   /* 16 pixels: one panel */
    check_qconv(2, 1, 8, 12, 2, 7, 3, 1, 2, 2, 0);    /* groups, dilation: 49 = 3 panels + 1 */
    check_qconv(1, 2, 6, 10, 1, 40, 5, 3, 2, 1, 0);
    check_qconv(3, 1, 5, 7, 1, 6, 3, 2, 1, 1, 1);
    /* stride 1 reads the padded input in place: padding columns within a
     * panel (compressed stores), whole panels of them (kernel 9, dilation 3) */
    check_qconv(3, 2, 4, 9, 1, 7, 3, 1, 1, 1, 0);
    check_qconv(1, 1, 4, 6, 1, 30, 9, 1, 12, 3, 0);
    check_qconv(2, 1, 20, 30, 1, 9, 1, 1, 0, 1, 1);
    /* depthwise (qconv_dw.c): stride 2, a channel multiplier, 1-D and 3-D,
     * rows longer than its 256-column block */
    check_qconv(2, 2, 24, 24, 24, 15, 3, 2, 1, 1, 0);
    check_qconv(2, 1, 6, 12, 6, 9, 5, 1, 2, 2, 1);
    check_qconv(1, 1, 5, 5, 5, 600, 3, 1, 1, 1, 0);
    check_qconv(3, 1, 3, 3, 3, 6, 3, 1, 1, 1, 0);
    /* output rows narrower than 16: several a vector on VBMI (8x8 5x5: 2,
     * 4x4: 4, 7x7: 2, the last vector of rows short; stride 2 to 4x4) */
    check_qconv(2, 2, 16, 16, 16, 8, 5, 1, 2, 1, 0);
    check_qconv(2, 1, 8, 8, 8, 8, 5, 2, 2, 1, 0);
    check_qconv(2, 1, 8, 16, 8, 7, 3, 1, 1, 1, 0);
    check_qconv(2, 1, 8, 8, 8, 4, 3, 1, 1, 1, 1);
    check_qconv(2, 1, 4, 4, 4, 5, 3, 1, 1, 1, 0);
    if (tgk_qgemm_set_path("avx512vnni")) tgk_qgemm_set_path("avx2");
    check_wlinear(3, 70, 100, 8, 32);
    check_wlinear(1, 64, 64, 8, 0);
    check_wlinear(5, 130, 99, 4, 32);
    check_wlinear(2, 17, 256, 4, 128);
    return unit_report();
}
