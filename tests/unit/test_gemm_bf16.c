/* tgk_linear_packed_bf16 against a float64 reference computed from the
 * bf16-rounded inputs (x and w rounded to nearest even by tgk_f32_to_bf16, the
 * library's own encoder): fresh random inputs with ties planted (values
 * exactly halfway between two bf16), odd K, N off the panel width, row tails,
 * bias, residual and activation, 1-3 threads, on every path this CPU runs
 * (AMX, vdpbf16ps, AVX-512 FMAs and the portable one). Tolerance: max error
 * over the largest magnitude of the summed terms 1e-5 (scaled up a little for
 * long K), the float32 accumulation's rounding; the products of bf16 are
 * exact. The portable path, vdpbf16ps and the FMAs must agree bit for bit
 * (normal inputs: the portable path computes what the instruction does). */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"
#include "elem.h"

#define TOL 1e-5

/* x with every 7th value a tie: a bf16 plus half its last place */
static float *rand_ties(int64_t n, double lo, double hi)
{
    float *x = kc_rand(n, lo, hi);
    for (int64_t i = 0; i < n; i += 7) {
        uint32_t u;
        memcpy(&u, &x[i], sizeof u);
        u = (u & 0xffff0000u) | 0x8000u;
        memcpy(&x[i], &u, sizeof u);
    }
    return x;
}

static double rounded(float f)
{
    return tgk_bf16_to_f32(tgk_f32_to_bf16(f));
}

/* The case's output on the current path, checked against the reference;
 * returned for the paths' comparison. */
static float *run_case(int64_t M, int64_t N, int64_t K, int variant, const float *x,
                       const float *w, const float *b, const float *res)
{
    static const tgk_vec_fn acts[] = {NULL, tgk_vec_relu_f32, tgk_vec_gelu_tanh_f32};
    tgk_vec_fn act = acts[variant % 3];
    const float *bias = variant % 2 ? b : NULL, *r = variant % 4 >= 2 ? res : NULL;
    uint16_t *wp = malloc((size_t)tgk_packed_bf16_size(N, K) * sizeof *wp);
    float *y = kc_out(M * N), *z = kc_out(M * N);
    tgk_pack_weight_bf16(w, K, N, K, wp);
    CHECK(tgk_linear_packed_bf16(x, wp, bias, r, y, M, N, K, act) == 0);
    double mag = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) {
            double acc = (bias ? bias[n] : 0) + (r ? r[i * N + n] : 0);
            double m = fabs(acc);
            for (int64_t k = 0; k < K; k++) {
                double p = rounded(x[i * K + k]) * rounded(w[n * K + k]);
                acc += p;
                m += fabs(p);
            }
            z[i * N + n] = (float)acc;
            mag = m > mag ? m : mag;
        }
    if (act)
        act(M * N, z, z);
    double err = 0;
    for (int64_t i = 0; i < M * N; i++) {
        double d = fabs(y[i] - z[i]);
        err = d > err || d != d ? d : err;
    }
    KC_EXPECT(err / (mag > 0 ? mag : 1), TOL * (1 + K / 256.0),
              "bf16 linear %s M=%lld N=%lld K=%lld variant %d", tgk_gemm_bf16_path(),
              (long long)M, (long long)N, (long long)K, variant);
    CHECK(kc_guard_ok(y, M * N));
    free(wp), free(z);
    return y;
}

static const int64_t sizes[][3] = {{1, 1, 1},   {1, 20, 7},   {3, 16, 2},    {5, 64, 33},
                                   {8, 32, 64}, {9, 33, 17},  {64, 512, 128}, {97, 130, 16},
                                   {17, 48, 301}, {128, 96, 768}};

static const char *const isa[] = {"base", "avx512bf16", "avx512fma", "amx"};

/* Every case on the paths in isa[] (those this CPU has); the portable
 * path's output, vdpbf16ps's and the FMAs' compared bit for bit (AMX sums in
 * another order). */
static void test_paths(void)
{
    for (size_t s = 0; s < sizeof sizes / sizeof *sizes; s++) {
        int64_t M = sizes[s][0], N = sizes[s][1], K = sizes[s][2];
        float *x = rand_ties(M * K, -2, 2), *w = rand_ties(N * K, -1, 1);
        float *b = kc_rand(N, -1, 1), *res = kc_rand(M * N, -3, 3);
        float *first = NULL;
        for (size_t i = 0; i < sizeof isa / sizeof *isa; i++) {
            if (!tgk_gemm_bf16_isa(isa[i]))
                continue;
            float *y = run_case(M, N, K, (int)s, x, w, b, res);
            if (!first) {
                first = y;
                continue;
            }
            if (strcmp(isa[i], "amx"))
                CHECK(memcmp(first, y, sizeof *y * (size_t)(M * N)) == 0);
            free(y);
        }
        free(first), free(x), free(w), free(b), free(res);
    }
    CHECK(tgk_gemm_bf16_isa(NULL));
}

/* The packed layout: panel n / 16, pair k / 2, column n % 16, k % 2; K
 * rounded up to 32, zeros past N and K. */
static void test_pack(void)
{
    static const int64_t sz[][2] = {{1, 1}, {16, 32}, {17, 5}, {40, 64}, {32, 13}};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++) {
        int64_t N = sz[s][0], K = sz[s][1], kp = (K + 31) / 32 * 16;
        float *w = rand_ties(N * K, -1, 1);
        uint16_t *a = malloc((size_t)tgk_packed_bf16_size(N, K) * sizeof *a);
        tgk_pack_weight_bf16(w, K, N, K, a);
        CHECK(tgk_packed_bf16_size(N, K) == (N + 15) / 16 * kp * 32);
        bool laid_out = true;
        for (int64_t n = 0; n < (N + 15) / 16 * 16; n++)
            for (int64_t k = 0; k < 2 * kp; k++)
                laid_out &= a[(n / 16 * kp + k / 2) * 32 + n % 16 * 2 + k % 2] ==
                            (n < N && k < K ? tgk_f32_to_bf16(w[n * K + k]) : 0);
        CHECK(laid_out);
        free(w), free(a);
    }
}

int main(void)
{
    unit_seed("test_gemm_bf16");
    test_pack();
    printf("# bf16 GEMM: %s by default\n", tgk_gemm_bf16_path());
    for (size_t i = 0; i < sizeof isa / sizeof *isa; i++)
        printf("# %s: %s\n", isa[i], tgk_gemm_bf16_isa(isa[i]) ? "here" : "not on this CPU");
    for (int nt = 1; nt <= 3; nt++) {
        tgk_set_num_threads(nt);
        test_paths();
    }
    CHECK(!tgk_gemm_bf16_isa("sse9"));
    return unit_report();
}
