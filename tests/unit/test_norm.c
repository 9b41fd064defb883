/* Layer, group and batch norm and (log-)softmax against float64 references on
 * fresh random inputs, including rows offset far from zero (where a one-pass
 * variance would cancel), odd sizes, NULL weight/bias, softmax over inner
 * axes wider than one block, -inf entries, and in-place softmax.
 * Tolerances: norms 1e-5 normalized max error; softmax 1e-5 elementwise
 * relative; log_softmax 1e-5 relative to |ref| + 1. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

/* mean and variance of x[i*stride], i < n, in float64 */
static void moments(const float *x, int64_t n, double *mean, double *var)
{
    double m = 0, v = 0;
    for (int64_t i = 0; i < n; i++)
        m += x[i];
    m /= n;
    for (int64_t i = 0; i < n; i++)
        v += (x[i] - m) * (x[i] - m);
    *mean = m;
    *var = v / n;
}

static void test_layer_norm(int64_t rows, int64_t cols, double offset, int affine)
{
    float eps = 1e-5f;
    float *x = kc_rand(rows * cols, offset - 1, offset + 1), *y = kc_out(rows * cols);
    float *w = affine & 1 ? kc_rand(cols, 0.5, 1.5) : NULL;
    float *b = affine & 2 ? kc_rand(cols, -1, 1) : NULL;
    double *ref = kc_ref(rows * cols);
    for (int64_t r = 0; r < rows; r++) {
        double m, v;
        moments(x + r * cols, cols, &m, &v);
        for (int64_t i = 0; i < cols; i++)
            ref[r * cols + i] = (x[r * cols + i] - m) / sqrt(v + eps) * (w ? w[i] : 1) + (b ? b[i] : 0);
    }
    tgk_layer_norm_f32(x, w, b, y, rows, cols, eps);
    KC_EXPECT(kc_norm_err(y, ref, rows * cols), 1e-5, "layer_norm %lldx%lld offset %g affine %d",
              (long long)rows, (long long)cols, offset, affine);
    CHECK(kc_guard_ok(y, rows * cols));
    free(x), free(y), free(w), free(b), free(ref);
}

static void test_group_norm(int64_t n, int64_t c, int64_t sp, int64_t groups, int affine)
{
    float eps = 1e-5f;
    int64_t cg = c / groups;
    float *x = kc_rand(n * c * sp, 2, 4), *y = kc_out(n * c * sp);
    float *w = affine ? kc_rand(c, 0.5, 1.5) : NULL, *b = affine ? kc_rand(c, -1, 1) : NULL;
    double *ref = kc_ref(n * c * sp);
    for (int64_t i = 0; i < n * groups; i++) {
        double m, v;
        moments(x + i * cg * sp, cg * sp, &m, &v);
        for (int64_t k = 0; k < cg * sp; k++) {
            int64_t ch = i % groups * cg + k / sp;
            ref[i * cg * sp + k] = (x[i * cg * sp + k] - m) / sqrt(v + eps) * (w ? w[ch] : 1) + (b ? b[ch] : 0);
        }
    }
    tgk_group_norm_f32(x, w, b, y, n, c, sp, groups, eps);
    KC_EXPECT(kc_norm_err(y, ref, n * c * sp), 1e-5, "group_norm n=%lld c=%lld sp=%lld groups=%lld",
              (long long)n, (long long)c, (long long)sp, (long long)groups);
    CHECK(kc_guard_ok(y, n * c * sp));
    free(x), free(y), free(w), free(b), free(ref);
}

static void test_batch_norm(int64_t n, int64_t c, int64_t sp, int affine)
{
    float eps = 1e-3f;
    float *x = kc_rand(n * c * sp, -3, 3), *y = kc_out(n * c * sp);
    float *mean = kc_rand(c, -1, 1), *var = kc_rand(c, 0.1, 2);
    float *w = affine ? kc_rand(c, 0.5, 1.5) : NULL, *b = affine ? kc_rand(c, -1, 1) : NULL;
    double *ref = kc_ref(n * c * sp);
    for (int64_t i = 0; i < n * c * sp; i++) {
        int64_t ch = i / sp % c;
        ref[i] = (x[i] - (double)mean[ch]) / sqrt((double)var[ch] + eps) * (w ? w[ch] : 1) + (b ? b[ch] : 0);
    }
    tgk_batch_norm_f32(x, mean, var, w, b, y, n, c, sp, eps);
    KC_EXPECT(kc_norm_err(y, ref, n * c * sp), 1e-5, "batch_norm n=%lld c=%lld sp=%lld",
              (long long)n, (long long)c, (long long)sp);
    CHECK(kc_guard_ok(y, n * c * sp));
    free(x), free(y), free(mean), free(var), free(w), free(b), free(ref);
}

/* masked: a third of the entries 100 lower (Swin's -100 mask), whose
 * probabilities must come out 0, never denormal */
static void test_softmax_ex(int64_t outer, int64_t len, int64_t inner, bool logsm, bool inplace,
                            bool masked)
{
    int64_t n = outer * len * inner;
    float *x = kc_rand(n, -10, 10), *y = inplace ? x : kc_out(n);
    for (int64_t i = 0; i < n; i++)
        if (kc_int(0, 19) == 0)
            x[i] = -INFINITY;
        else if (masked && kc_int(0, 2) == 0)
            x[i] -= 100.0f;
    /* keep at least one finite entry per softmax row */
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++)
            x[o * len * inner + i] = (float)unit_uniform(-1, 1);
    double *ref = kc_ref(n);
    for (int64_t o = 0; o < outer; o++)
        for (int64_t i = 0; i < inner; i++) {
            double m = -INFINITY, s = 0;
            for (int64_t l = 0; l < len; l++)
                m = fmax(m, x[(o * len + l) * inner + i]);
            for (int64_t l = 0; l < len; l++)
                s += exp(x[(o * len + l) * inner + i] - m);
            for (int64_t l = 0; l < len; l++) {
                double v = x[(o * len + l) * inner + i] - m;
                ref[(o * len + l) * inner + i] = logsm ? v - log(s) : exp(v) / s;
            }
        }
    tgk_softmax_f32(x, y, outer, len, inner, logsm);
    if (logsm) {
        /* -inf entries stay -inf; compare the finite ones */
        int inf_ok = 1;
        for (int64_t i = 0; i < n; i++)
            if (ref[i] == -INFINITY) {
                inf_ok &= y[i] == -INFINITY;
                y[i] = 0, ref[i] = 0;
            }
        CHECK(inf_ok);
    }
    int denormal = 0;
    for (int64_t i = 0; i < n; i++)
        denormal += !logsm && ref[i] < 1e-40 && y[i] != 0.0f;    /* exp() < 2^-126: 0 */
    CHECK(denormal == 0);
    KC_EXPECT(kc_rel_err(y, ref, n, logsm ? 1.0 : 1e-30), 1e-5,
              "softmax outer=%lld len=%lld inner=%lld log=%d inplace=%d masked=%d",
              (long long)outer, (long long)len, (long long)inner, logsm, inplace, masked);
    CHECK(kc_guard_ok(y, n));
    free(x), free(ref);
    if (!inplace)
        free(y);
}

static void test_softmax(int64_t outer, int64_t len, int64_t inner, bool logsm, bool inplace)
{
    test_softmax_ex(outer, len, inner, logsm, inplace, false);
}

int main(void)
{
    unit_seed("test_norm");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        static const int64_t cols[] = {1, 2, 15, 16, 17, 100, 768, 4099};
        for (size_t i = 0; i < sizeof cols / sizeof *cols; i++)
            for (int affine = 0; affine < 4; affine++) {
                test_layer_norm(kc_int(1, 40), cols[i], 0, affine);
                test_layer_norm(3, cols[i], 1000, affine);
            }
        test_layer_norm(1, 200000, 100, 3);
        test_group_norm(2, 6, 10, 3, 1);
        test_group_norm(1, 32, 33, 32, 0);
        test_group_norm(3, 64, 1025, 8, 1);
        test_group_norm(1, 5, 1, 1, 1);
        test_batch_norm(2, 3, 17, 1);
        test_batch_norm(4, 64, 49, 0);
        test_batch_norm(1, 1, 1, 1);
        for (int logsm = 0; logsm < 2; logsm++)
            for (int inplace = 0; inplace < 2; inplace++) {
                test_softmax(7, 1, 1, logsm, inplace);
                test_softmax(5, 33, 1, logsm, inplace);
                test_softmax(2, 1000, 1, logsm, inplace);
                test_softmax(3, 7, 5, logsm, inplace);
                test_softmax(2, 9, 300, logsm, inplace);  /* two inner blocks */
                test_softmax_ex(64, 49, 1, logsm, inplace, true);
                test_softmax_ex(3, 49, 17, logsm, inplace, true);
                test_softmax(1, 4, 1000, logsm, inplace);
            }
    }
    return unit_report();
}
