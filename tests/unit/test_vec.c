/* The tgk_vec_* activations against float64 libm on fresh random inputs over
 * several ranges, plus special values (0, -0, +-inf, NaN, overflow and
 * underflow edges), and in place (x == y). Tolerances: elementwise relative
 * error 4e-7 (about 3 ulp) for exp, sigmoid, tanh, erf, silu, hardswish
 * (measured 0.8-2.1e-7); gelu 2e-6 (measured 7e-7); gelu_tanh 1e-5 (measured 5.6e-6 at
 * x = -8: its argument 2y grows as x^3 and its float rounding, ~|2y| ulp,
 * carries into exp; PyTorch's float form 1 + tanh loses everything there). Results below a floor
 * are compared absolutely, as if they were the floor: 2^-100 (1e-30, where
 * float intermediates turn denormal), for the GELUs 1e-20 (x < -9, where the
 * rounded argument costs relative accuracy). Results beyond FLT_MAX must be
 * inf. */
#include "kcheck.h"

#include <float.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

typedef void (*vec_fn)(int64_t, const float *, float *);
typedef double (*ref_fn)(double);

static double ref_relu(double x) { return x < 0 ? 0 : x; }
static double ref_relu6(double x) { return x < 0 ? 0 : x > 6 ? 6 : x; }
static double ref_hardswish(double x) { return x * fmin(fmax(x + 3, 0), 6) / 6; }
static double ref_sigmoid(double x) { return 1 / (1 + exp(-x)); }
static double ref_silu(double x) { return x / (1 + exp(-x)); }
static double ref_gelu(double x) { return 0.5 * x * erfc(-x / sqrt(2.0)); }
/* 0.5 x (1 + tanh y) = x / (1 + exp(-2y)): the same, without cancelling to 0 */
static double ref_gelu_tanh(double x)
{
    return x / (1 + exp(-2 * sqrt(2 / M_PI) * (x + 0.044715 * x * x * x)));
}

static const struct {
    const char *name;
    vec_fn fn;
    ref_fn ref;
    double lo, hi, tol, floor;
} fns[] = {
    {"exp", tgk_vec_exp_f32, exp, -104, 89, 4e-7, 0x1p-100},
    {"tanh", tgk_vec_tanh_f32, tanh, -12, 12, 4e-7, 0x1p-100},
    {"sigmoid", tgk_vec_sigmoid_f32, ref_sigmoid, -100, 100, 4e-7, 0x1p-100},
    {"silu", tgk_vec_silu_f32, ref_silu, -100, 100, 4e-7, 0x1p-100},
    {"erf", tgk_vec_erf_f32, erf, -6, 6, 4e-7, 0x1p-100},
    {"gelu", tgk_vec_gelu_f32, ref_gelu, -12, 12, 2e-6, 1e-20},
    {"gelu_tanh", tgk_vec_gelu_tanh_f32, ref_gelu_tanh, -12, 12, 1e-5, 1e-20},
    {"relu", tgk_vec_relu_f32, ref_relu, -100, 100, 0, 0x1p-100},
    {"relu6", tgk_vec_relu6_f32, ref_relu6, -100, 100, 0, 0x1p-100},
    {"hardswish", tgk_vec_hardswish_f32, ref_hardswish, -10, 10, 4e-7, 0x1p-100},
};

static double elem_err(float got, double ref, double floor)
{
    if (isnan(ref))
        return isnan(got) ? 0 : INFINITY;
    if (fabs(ref) > FLT_MAX)
        return got == copysign(INFINITY, ref) ? 0 : INFINITY;
    return fabs(got - ref) / fmax(fabs(ref), floor);
}

static void test_fn(size_t f, int64_t n, double lo, double hi)
{
    float *x = kc_rand(n, lo, hi), *y = kc_out(n);
    /* a third of the values near zero, where relative accuracy is hardest */
    for (int64_t i = 0; i < n / 3; i++)
        x[i] = (float)(unit_uniform(-1, 1) * pow(10, unit_uniform(-8, 0)));
    fns[f].fn(n, x, y);
    double err = 0;
    int64_t worst = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = elem_err(y[i], fns[f].ref(x[i]), fns[f].floor);
        if (!(e <= err))
            err = e, worst = i;
    }
    KC_EXPECT(err, fns[f].tol, "%s over [%g, %g): x = %.9g gives %.9g, want %.9g", fns[f].name,
              lo, hi, x[worst], y[worst], fns[f].ref(x[worst]));
    CHECK(kc_guard_ok(y, n));
    /* in place gives the same */
    float *z = kc_rand(n, 0, 1);
    memcpy(z, x, sizeof(float) * (size_t)n);
    fns[f].fn(n, z, z);
    CHECK(memcmp(z, y, sizeof(float) * (size_t)n) == 0);
    free(x), free(y), free(z);
}

static void test_specials(size_t f)
{
    static const float sp[] = {0.0f, -0.0f, INFINITY, -INFINITY, NAN, 88.7f, 88.73f, -87.4f,
                               -103.0f, -110.0f, 1e-30f, -1e-30f, 1.0f, -1.0f, 0.625f, 0x1p-149f};
    int64_t n = sizeof sp / sizeof *sp;
    float y[sizeof sp / sizeof *sp];
    fns[f].fn(n, sp, y);
    for (int64_t i = 0; i < n; i++) {
        double ref = fns[f].ref(sp[i]);
        /* gelu(-inf) = -inf * 0: libm says NaN, as does the float formula */
        double e = elem_err(y[i], ref, fns[f].floor);
        KC_EXPECT(e, fns[f].tol, "%s(%g) = %.9g, want %.9g", fns[f].name, sp[i], y[i], ref);
    }
}

/* The reductions every length takes through their 16-, 8- and 1-float
 * steps: tgk_sum against float64 (relative to the sum of magnitudes, 1e-6),
 * tgk_max exact; a NaN anywhere wins the max, +inf wins over finite, and
 * all -inf (or nothing) is -inf. */
static void test_reductions(void)
{
    for (int64_t n = 0; n <= 70; n++) {
        float *x = kc_rand(n + 1, -100, 100);
        double sum = 0, mag = 0, mx = -INFINITY;
        for (int64_t i = 0; i < n; i++) {
            sum += x[i], mag += fabs(x[i]);
            mx = x[i] > mx ? x[i] : mx;
        }
        KC_EXPECT(fabs(tgk_sum(x, n) - sum) / (1 + mag), 1e-6, "sum of %lld", (long long)n);
        CHECK(tgk_max(x, n) == (float)mx);
        if (n > 0) {
            int64_t at = kc_int(0, n - 1);
            x[at] = INFINITY;
            CHECK(tgk_max(x, n) == INFINITY);
            x[kc_int(0, n - 1)] = NAN;
            CHECK(isnan(tgk_max(x, n)));
            for (int64_t i = 0; i < n; i++)
                x[i] = -INFINITY;
            CHECK(tgk_max(x, n) == -INFINITY);
        }
        free(x);
    }
}

int main(void)
{
    unit_seed("test_vec");
    for (size_t f = 0; f < sizeof fns / sizeof *fns; f++) {
        test_fn(f, 100003, fns[f].lo, fns[f].hi);
        test_fn(f, 31, -3, 3);
        test_fn(f, 20000, -1.5, 1.5);
        test_specials(f);
    }
    test_reductions();
    return unit_report();
}
