/* tgk_gemm_f32, tgk_linear_f32, tgk_linear_packed_f32 and tgk_matmul_f32's
 * batched and broadcast products against a float64 reference, on fresh random
 * inputs: odd sizes, all transposes, leading dimensions wider than the rows,
 * alpha/beta, and products large enough to be split across the pool (also
 * from several threads at once). Tolerance: max error over the largest
 * magnitude of the summed terms 1e-5 (scaled up a little for long K). */
#include "kcheck.h"

#include <pthread.h>

#include "backend/cpu/kernels/kernels.h"

#define TOL 1e-5

typedef struct {
    bool ta, tb;
    int64_t M, N, K, lda, ldb, ldc;
    float alpha, beta;
    float *A, *B, *C;
    double *ref;
    double mag;     /* largest |alpha| sum_k |a*b| + |beta*c|: what rounding scales with */
} gcase;

static void gcase_make(gcase *g, bool ta, bool tb, int64_t M, int64_t N, int64_t K)
{
    g->ta = ta;
    g->tb = tb;
    g->M = M;
    g->N = N;
    g->K = K;
    g->lda = (ta ? M : K) + kc_int(0, 3);
    g->ldb = (tb ? K : N) + kc_int(0, 3);
    g->ldc = N + kc_int(0, 3);
    g->alpha = (float)unit_uniform(0.5, 2);
    g->beta = kc_int(0, 1) ? 0.0f : (float)unit_uniform(-1, 1);
    g->A = kc_rand((ta ? K : M) * g->lda, -1, 1);
    g->B = kc_rand((tb ? N : K) * g->ldb, -1, 1);
    g->C = kc_rand(M * g->ldc, -1, 1);
    g->ref = kc_ref(M * N);
    g->mag = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = 0, m = 0;
            for (int64_t k = 0; k < K; k++) {
                double p = (double)(ta ? g->A[k * g->lda + i] : g->A[i * g->lda + k]) *
                           (double)(tb ? g->B[j * g->ldb + k] : g->B[k * g->ldb + j]);
                s += p;
                m += fabs(p);
            }
            double c = g->beta == 0.0f ? 0.0 : g->beta * (double)g->C[i * g->ldc + j];
            g->ref[i * N + j] = g->alpha * s + c;
            m = fabs(g->alpha) * m + fabs(c);
            g->mag = m > g->mag ? m : g->mag;
        }
    if (g->beta == 0.0f) /* beta = 0 must not read C: poison it */
        for (int64_t i = 0; i < M * g->ldc; i++)
            g->C[i] = NAN;
}

static void gcase_run(gcase *g)
{
    tgk_gemm_f32(g->ta, g->tb, g->M, g->N, g->K, g->alpha, g->A, g->lda, g->B, g->ldb,
                 g->beta, g->C, g->ldc);
}

/* Max error over the magnitude of the terms summed, not of the result: a sum
 * of a few products can cancel to near zero, and rounding does not. */
static double gcase_err(const gcase *g)
{
    double err = 0;
    for (int64_t i = 0; i < g->M; i++)
        for (int64_t j = 0; j < g->N; j++) {
            double e = fabs(g->C[i * g->ldc + j] - g->ref[i * g->N + j]);
            if (!(e <= err)) err = e;       /* NaN sticks */
        }
    return g->mag > 0 ? err / g->mag : err;
}

static void gcase_check(gcase *g)
{
    KC_EXPECT(gcase_err(g), TOL * (1 + g->K / 256.0), "gemm ta=%d tb=%d M=%lld N=%lld K=%lld",
              g->ta, g->tb, (long long)g->M, (long long)g->N, (long long)g->K);
    CHECK(kc_guard_ok(g->C, g->M * g->ldc));
    free(g->A);
    free(g->B);
    free(g->C);
    free(g->ref);
}

static void test_shapes(void)
{
    static const int64_t sz[][3] = {{1, 1, 1},   {1, 7, 5},    {5, 1, 3},   {3, 5, 1},
                                    {17, 13, 9}, {1, 300, 129}, {64, 64, 64}, {33, 65, 127},
                                    {200, 3, 50}, {129, 257, 70}, {7, 1000, 3},
                                    {2, 40, 33}, {4, 9, 170}};   /* M <= 4: GEMVs */
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++)
        for (int t = 0; t < 4; t++) {
            gcase g;
            gcase_make(&g, t & 1, t >> 1, sz[s][0], sz[s][1], sz[s][2]);
            gcase_run(&g);
            gcase_check(&g);
        }
}

static void *gcase_thread(void *arg)
{
    gcase_run(arg);
    return NULL;
}

/* Large enough to split; two callers at once share (or miss) the pool. */
static void test_concurrent(void)
{
    gcase g[2];
    pthread_t t[2];
    for (int i = 0; i < 2; i++)
        gcase_make(&g[i], i, !i, 150 + i, 170, 120);
    for (int i = 0; i < 2; i++)
        CHECK(pthread_create(&t[i], NULL, gcase_thread, &g[i]) == 0);
    for (int i = 0; i < 2; i++) {
        pthread_join(t[i], NULL);
        gcase_check(&g[i]);
    }
}

/* GEMMs called from pool tasks run inline and still get everything right. */
static void nested_task(void *ctx, int64_t begin, int64_t end)
{
    gcase *g = ctx;
    for (int64_t i = begin; i < end; i++)
        gcase_run(&g[i]);
}

static void test_nested(void)
{
    gcase g[4];
    for (int i = 0; i < 4; i++)
        gcase_make(&g[i], false, true, 130, 140 + i, 150);
    tgk_parallel_for(4, 1, nested_task, g);
    for (int i = 0; i < 4; i++)
        gcase_check(&g[i]);
}

/* y = x w^T + b in float64 */
static double *linear_ref(const float *x, const float *w, const float *b, int64_t M, int64_t N,
                          int64_t K)
{
    double *ref = kc_ref(M * N);
    for (int64_t i = 0; i < M; i++)
        for (int64_t j = 0; j < N; j++) {
            double s = b ? b[j] : 0;
            for (int64_t k = 0; k < K; k++)
                s += (double)x[i * K + k] * w[j * K + k];
            ref[i * N + j] = s;
        }
    return ref;
}

static void check_linear(int64_t M, int64_t N, int64_t K, bool with_bias, bool packed)
{
    float *x = kc_rand(M * K, -1, 1), *w = kc_rand(N * K, -1, 1);
    float *b = with_bias ? kc_rand(N, -1, 1) : NULL, *y = kc_out(M * N);
    double *ref = linear_ref(x, w, b, M, N, K);
    if (packed) {
        float *wp = kc_out(tgk_packed_size(N, K));
        tgk_pack_weight_f32(w, K, N, K, wp);
        CHECK(kc_guard_ok(wp, tgk_packed_size(N, K)));
        tgk_linear_packed_f32(x, wp, b, y, M, N, K);
        free(wp);
    } else {
        tgk_linear_f32(x, w, b, y, M, N, K);
    }
    KC_EXPECT(kc_norm_err(y, ref, M * N), TOL, "linear%s M=%lld N=%lld K=%lld bias=%d",
              packed ? " packed" : "", (long long)M, (long long)N, (long long)K, with_bias);
    CHECK(kc_guard_ok(y, M * N));
    free(x), free(w), free(b), free(y), free(ref);
}

static void test_linear(void)
{
    static const int64_t sz[][3] = {{1, 10, 7}, {3, 1, 5}, {4, 33, 65}, {130, 96, 200}};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++)
        for (int with_bias = 0; with_bias < 2; with_bias++)
            check_linear(sz[s][0], sz[s][1], sz[s][2], with_bias, false);
}

/* Every row remainder of every register tile (1-9 rows, and past the 48-row
 * chunks), ragged last panels, the 4-panel single-row path, K = 1, and
 * sizes large enough to be split across the pool. */
static void test_linear_packed(void)
{
    static const int64_t rows[] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 13, 17, 49, 64, 97};
    static const int64_t cols[] = {1, 15, 16, 17, 33, 64, 100};
    static const int64_t depth[] = {1, 7, 128};
    for (size_t r = 0; r < sizeof rows / sizeof *rows; r++)
        for (size_t c = 0; c < sizeof cols / sizeof *cols; c++)
            check_linear(rows[r], cols[c], depth[(r + c) % 3], (r + c) % 2, true);
    check_linear(1, 256, 784, true, true);
    check_linear(64, 384, 128, true, true);
    check_linear(200, 130, 300, false, true);
}

/* tgk_gemm_packed_f32 with rows wider than the matrix and accumulation into
 * y, the weight packed from its [K, N] transpose (tgk_pack_kn_f32): y0 +
 * x b, the form attention's P V takes. */
static void test_gemm_packed_strided(void)
{
    static const int64_t sz[][3] = {{1, 16, 5}, {7, 33, 64}, {64, 32, 64}, {13, 100, 9}};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++) {
        int64_t M = sz[s][0], N = sz[s][1], K = sz[s][2];
        int64_t ldx = K + kc_int(0, 5), ldb = N + kc_int(0, 5), ldy = N + kc_int(0, 5);
        float *x = kc_rand(M * ldx, -1, 1), *b = kc_rand(K * ldb, -1, 1);
        float *y = kc_rand(M * ldy, -1, 1), *bp = kc_out(tgk_packed_size(N, K));
        double *ref = kc_ref(M * N);
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double acc = y[i * ldy + j];
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[i * ldx + k] * b[k * ldb + j];
                ref[i * N + j] = acc;
            }
        tgk_pack_kn_f32(b, ldb, K, N, bp);
        tgk_gemm_packed_f32(M, N, K, x, ldx, bp, NULL, true, y, ldy, TGK_NO_DIAG, TGK_NO_DIAG);
        double err = 0;
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double e = fabs(y[i * ldy + j] - ref[i * N + j]) / (1 + fabs(ref[i * N + j]));
                err = e > err || e != e ? e : err;
            }
        KC_EXPECT(err, TOL, "gemm packed strided M=%lld N=%lld K=%lld", (long long)M,
                  (long long)N, (long long)K);
        CHECK(kc_guard_ok(y, M * ldy));
        free(x), free(b), free(y), free(bp), free(ref);
    }
}

/* The causal cuts of attention's two products: y_diag, only y[i][j] for j <
 * i + d is compared (the rest is undefined); x_diag, x is zero from column
 * i + d of row i on, and the products against float64 over the whole rows.
 * Cuts left of the first column, inside and right of the last. */
static void test_gemm_packed_causal(void)
{
    static const int64_t sz[][3] = {{32, 64, 32}, {13, 40, 21}, {1, 48, 7}, {50, 17, 64}};
    static const int64_t diags[] = {-3, 1, 6, 17, 100};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++)
        for (size_t d = 0; d < sizeof diags / sizeof *diags; d++)
            for (int cut_x = 0; cut_x < 2; cut_x++) {
                int64_t M = sz[s][0], N = sz[s][1], K = sz[s][2], dg = diags[d];
                float *x = kc_rand(M * K, -1, 1), *w = kc_rand(N * K, -1, 1);
                float *y = kc_out(M * N), *wp = kc_out(tgk_packed_size(N, K));
                double *ref = kc_ref(M * N);
                for (int64_t i = 0; cut_x && i < M; i++)
                    for (int64_t k = i + dg < 0 ? 0 : i + dg; k < K; k++)
                        x[i * K + k] = 0.0f;
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < N; j++) {
                        double acc = 0;
                        for (int64_t k = 0; k < K; k++)
                            acc += (double)x[i * K + k] * w[j * K + k];
                        ref[i * N + j] = acc;
                    }
                tgk_pack_weight_f32(w, K, N, K, wp);
                tgk_gemm_packed_f32(M, N, K, x, K, wp, NULL, false, y, N,
                                    cut_x ? TGK_NO_DIAG : dg, cut_x ? dg : TGK_NO_DIAG);
                double err = 0;
                for (int64_t i = 0; i < M; i++)
                    for (int64_t j = 0; j < (cut_x || i + dg > N ? N : i + dg); j++) {
                        double e = fabs(y[i * N + j] - ref[i * N + j]) / (1 + fabs(ref[i * N + j]));
                        err = e > err || e != e ? e : err;
                    }
                KC_EXPECT(err, TOL, "gemm packed %s cut %lld M=%lld N=%lld K=%lld",
                          cut_x ? "x" : "y", (long long)dg, (long long)M, (long long)N,
                          (long long)K);
                CHECK(kc_guard_ok(y, M * N));
                free(x), free(w), free(y), free(wp), free(ref);
            }
}

/* tgk_linear_packed_ex_f32: without a residual, bit for bit the linear layer
 * then the activation over its result, whatever blocks the pool computes it
 * in (relu and hardswish in the register tiles, the others a call on each
 * block); with one, the float64 x w^T + b + res then the activation. */
static void test_linear_ex(void)
{
    static const int64_t sz[][3] = {{1, 20, 7},   {5, 64, 33},  {64, 512, 128}, {97, 130, 16},
                                    {3, 37, 9},   {17, 50, 40}, {1, 100, 64},   {33, 16, 5}};
    static const tgk_vec_fn act[] = {tgk_vec_relu_f32, tgk_vec_gelu_tanh_f32, NULL,
                                     tgk_vec_hardswish_f32};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++) {
        int64_t M = sz[s][0], N = sz[s][1], K = sz[s][2];
        tgk_vec_fn f = act[s % 4];
        float *x = kc_rand(M * K, -2, 2), *w = kc_rand(N * K, -1, 1), *b = kc_rand(N, -1, 1);
        float *wp = kc_out(tgk_packed_size(N, K)), *y = kc_out(M * N), *z = kc_out(M * N);
        float *res = kc_rand(M * N, -3, 3), *out = kc_out(M * N);
        tgk_pack_weight_f32(w, K, N, K, wp);
        tgk_linear_packed_f32(x, wp, b, z, M, N, K);
        if (f)
            f(M * N, z, z);
        tgk_linear_packed_ex_f32(x, wp, b, NULL, y, M, N, K, f);
        CHECK(memcmp(y, z, sizeof *y * (size_t)(M * N)) == 0);
        CHECK(kc_guard_ok(y, M * N));
        /* the residual: z = act(x w^T + b + res) in float64, rounded */
        for (int64_t i = 0; i < M; i++)
            for (int64_t n = 0; n < N; n++) {
                double acc = (double)b[n] + res[i * N + n];
                for (int64_t k = 0; k < K; k++)
                    acc += (double)x[i * K + k] * w[n * K + k];
                z[i * N + n] = (float)acc;
            }
        if (f)
            f(M * N, z, z);
        tgk_linear_packed_ex_f32(x, wp, b, res, out, M, N, K, f);
        double err = 0;
        for (int64_t i = 0; i < M * N; i++) {
            double d = fabs(out[i] - z[i]) / (1 + fabs(z[i]));
            err = d > err || d != d ? d : err;
        }
        KC_EXPECT(err, TOL, "linear + residual M=%lld N=%lld K=%lld", (long long)M,
                  (long long)N, (long long)K);
        CHECK(kc_guard_ok(out, M * N));
        free(x), free(w), free(b), free(wp), free(y), free(z), free(res), free(out);
    }
}

/* A weight whose rows are ldw > K apart packs as its compact copy does (the
 * keys of attention, rows of a wider qkv projection). */
static void test_pack_strided_rows(void)
{
    static const int64_t sz[][2] = {{1, 1}, {16, 32}, {17, 5}, {40, 64}, {32, 13}};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++) {
        int64_t N = sz[s][0], K = sz[s][1], ldw = K + kc_int(1, 9);
        float *w = kc_rand(N * ldw, -1, 1), *c = kc_out(N * K);
        float *a = kc_out(tgk_packed_size(N, K)), *b = kc_out(tgk_packed_size(N, K));
        for (int64_t n = 0; n < N; n++)
            memcpy(c + n * K, w + n * ldw, sizeof *c * (size_t)K);
        tgk_pack_weight_f32(w, ldw, N, K, a);
        tgk_pack_weight_f32(c, K, N, K, b);
        CHECK(memcmp(a, b, sizeof *a * (size_t)tgk_packed_size(N, K)) == 0);
        bool laid_out = true;   /* panel n / 16, row k, column n % 16; zeros past N */
        for (int64_t n = 0; n < (N + TGK_PANEL - 1) / TGK_PANEL * TGK_PANEL; n++)
            for (int64_t k = 0; k < K; k++)
                laid_out &= a[(n / TGK_PANEL * K + k) * TGK_PANEL + n % TGK_PANEL] ==
                            (n < N ? w[n * ldw + k] : 0.0f);
        CHECK(laid_out);
        CHECK(kc_guard_ok(a, tgk_packed_size(N, K)));
        free(w), free(c), free(a), free(b);
    }
}

/* NumPy matmul of [2, B, M, K] and [B, K, N] (b broadcast over the first
 * dim), B batches of products small enough to run a batch a task (Swin's
 * windows) or big enough to be split themselves. */
static void test_matmul_batched(void)
{
    static const int64_t sz[][4] = {{3, 7, 9, 5}, {17, 49, 49, 32}, {2, 96, 130, 70}};
    for (size_t s = 0; s < sizeof sz / sizeof *sz; s++) {
        int64_t B = sz[s][0], M = sz[s][1], N = sz[s][2], K = sz[s][3];
        int64_t ad[4] = {2, B, M, K}, bd[3] = {B, K, N};
        float *a = kc_rand(2 * B * M * K, -1, 1), *b = kc_rand(B * K * N, -1, 1);
        float *y = kc_out(2 * B * M * N);
        double *ref = kc_ref(2 * B * M * N);
        for (int64_t i = 0; i < 2 * B; i++)
            for (int64_t m = 0; m < M; m++)
                for (int64_t n = 0; n < N; n++) {
                    double acc = 0;
                    for (int64_t k = 0; k < K; k++)
                        acc += (double)a[(i * M + m) * K + k] * b[(i % B * K + k) * N + n];
                    ref[(i * M + m) * N + n] = acc;
                }
        tgk_matmul_f32(4, ad, a, 3, bd, b, y);
        KC_EXPECT(kc_norm_err(y, ref, 2 * B * M * N), TOL,
                  "matmul [2,%lld,%lld,%lld] @ [%lld,%lld,%lld]", (long long)B, (long long)M,
                  (long long)K, (long long)B, (long long)K, (long long)N);
        CHECK(kc_guard_ok(y, 2 * B * M * N));
        free(a), free(b), free(y), free(ref);
    }
}

int main(void)
{
    unit_seed("test_gemm");
    test_pack_strided_rows();
    for (int nt = 1; nt <= 3; nt++) {
        tgk_set_num_threads(nt);
        test_shapes();
        test_linear();
        test_linear_packed();
        test_gemm_packed_strided();
        test_gemm_packed_causal();
        test_linear_ex();
        test_matmul_batched();
    }
    /* every register tile this CPU runs, not only its widest (2 threads) */
    static const char *const isa[] = {"base", "avx2", "avx512"};
    tgk_set_num_threads(2);
    for (size_t i = 0; i < sizeof isa / sizeof *isa; i++) {
        if (!tgk_gemm_packed_isa(isa[i])) {
            printf("# packed GEMM %s: not on this CPU\n", isa[i]);
            continue;
        }
        printf("# packed GEMM %s\n", isa[i]);
        test_linear_packed();
        test_gemm_packed_strided();
        test_gemm_packed_causal();
        test_linear_ex();
    }
    CHECK(!tgk_gemm_packed_isa("sse9") && tgk_gemm_packed_isa(NULL));
    tgk_set_num_threads(2);
    test_concurrent();
    test_nested();
    return unit_report();
}
