/* Throughput of the CPU kernels against what bounds them:
 *   conv (im2col + GEMM) against the GEMM of the same size alone;
 *   the linear layer on pre-packed weights against tgk_linear_f32 (packing as it goes);
 *   the tgk_vec_* activations against the scalar libm loop.
 *   usage: kernels_bench        (build and run: kernels_bench.sh) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p)
        exit(1);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    return p;
}

/* best of a few runs of at least 0.2 s */
#define TIME(best, stmt)                                            \
    do {                                                            \
        best = 1e30;                                                \
        for (int rep_ = 0; rep_ < 3; rep_++) {                      \
            int n_ = 0;                                             \
            double t0_ = now(), t_;                                 \
            do {                                                    \
                stmt;                                               \
                n_++;                                               \
            } while ((t_ = now() - t0_) < 0.2);                     \
            best = t_ / n_ < best ? t_ / n_ : best;                 \
        }                                                           \
    } while (0)

static void bench_conv(int64_t n, int64_t c, int64_t k, int64_t hw, int64_t ker, int64_t str,
                       int64_t groups)
{
    int64_t pad = ker / 2, out = (hw + 2 * pad - ker) / str + 1;
    tgk_conv_desc d = {.nsp = 2, .n = n, .c = c, .k = k, .groups = groups, .in = {hw, hw},
                       .out = {out, out}, .kernel = {ker, ker}, .stride = {str, str},
                       .pad = {pad, pad}, .dil = {1, 1}};
    float *x = filled((size_t)(n * c * hw * hw)), *w = filled((size_t)(k * c / groups * ker * ker));
    float *b = filled((size_t)k), *y = filled((size_t)(n * k * out * out));
    int64_t M = k / groups, K = c / groups * ker * ker, N = out * out;
    float *col = filled((size_t)(K * N));
    double tc, tg;
    TIME(tc, tgk_conv_f32(&d, x, w, b, y));
    TIME(tg, for (int64_t i = 0; i < n * groups; i++)
                 tgk_gemm_f32(false, false, M, N, K, 1.0f, w, K, col, N, 0.0f, y, N));
    double gf = 2.0 * n * k * (c / groups) * ker * ker * out * out * 1e-9;
    printf("conv n%lld c%lld k%lld %lldx%lld k%lld s%lld g%lld\t%.3f ms\t%.1f GFLOP/s\t"
           "GEMM alone %.3f ms\tconv/GEMM %.2f\n", (long long)n, (long long)c, (long long)k,
           (long long)hw, (long long)hw, (long long)ker, (long long)str, (long long)groups,
           tc * 1e3, gf / tc, tg * 1e3, tc / tg);
    free(x), free(w), free(b), free(y), free(col);
}

static void bench_linear(int64_t M, int64_t N, int64_t K)
{
    float *x = filled((size_t)(M * K)), *w = filled((size_t)(N * K)), *b = filled((size_t)N);
    float *y = filled((size_t)(M * N)), *wp = filled((size_t)tgk_packed_size(N, K));
    tgk_pack_weight_f32(w, K, N, K, wp);
    double tp, tb;
    TIME(tp, tgk_linear_packed_f32(x, wp, b, y, M, N, K));
    TIME(tb, tgk_linear_f32(x, w, b, y, M, N, K));
    double gf = 2.0 * M * N * K * 1e-9;
    printf("linear M%lld N%lld K%lld\tpacked %.4f ms %.1f GFLOP/s\tunpacked %.4f ms %.1f "
           "GFLOP/s\tspeedup %.2fx\n", (long long)M, (long long)N, (long long)K, tp * 1e3,
           gf / tp, tb * 1e3, gf / tb, tb / tp);
    free(x), free(w), free(b), free(y), free(wp);
}

typedef void (*vec_fn)(int64_t, const float *, float *);

static void scalar_exp(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = expf(x[i]);
}

static void scalar_tanh(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = tanhf(x[i]);
}

static void scalar_gelu(int64_t n, const float *x, float *y)
{
    for (int64_t i = 0; i < n; i++)
        y[i] = 0.5f * x[i] * (1.0f + erff(x[i] * 0.70710678f));
}

static void bench_vec(const char *name, vec_fn fn, vec_fn ref)
{
    int64_t n = 1 << 16;
    float *x = filled((size_t)n), *y = filled((size_t)n);
    double t, tr;
    TIME(t, fn(n, x, y));
    TIME(tr, ref(n, x, y));
    printf("vec %-8s\t%.2f Gelem/s\tlibm scalar %.2f Gelem/s\tspeedup %.1fx\n", name,
           n / t * 1e-9, n / tr * 1e-9, tr / t);
    free(x), free(y);
}

int main(void)
{
    printf("threads: %d\n", tgk_num_threads());
    bench_linear(1, 256, 784);
    bench_linear(64, 256, 784);
    bench_linear(64, 384, 128);
    bench_linear(64, 512, 128);
    bench_linear(64, 128, 512);
    bench_linear(4096, 384, 128);
    bench_linear(4096, 128, 512);
    bench_linear(1024, 1024, 1024);
    bench_conv(1, 64, 64, 56, 3, 1, 1);
    bench_conv(1, 128, 128, 28, 3, 1, 1);
    bench_conv(8, 64, 128, 28, 3, 2, 1);
    bench_conv(1, 256, 256, 14, 1, 1, 1);
    bench_conv(1, 3, 64, 224, 7, 2, 1);
    bench_conv(1, 64, 64, 56, 3, 1, 2);
    bench_vec("exp", tgk_vec_exp_f32, scalar_exp);
    bench_vec("tanh", tgk_vec_tanh_f32, scalar_tanh);
    bench_vec("gelu", tgk_vec_gelu_f32, scalar_gelu);
    return 0;
}
