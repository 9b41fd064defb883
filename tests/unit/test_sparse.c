/* 2:4 sparsity: compression round-trips exactly, and the sparse linear kernel
 * (every path this CPU runs: avx512, avx2, scalar) matches the dense kernel
 * (tgk_linear_f32) on the same pruned weights and a float64 reference, on
 * fresh random inputs: odd M and N (partial tiles and panels), K with an odd
 * number of groups (a half byte of metadata), with and without bias, sizes
 * split across the thread pool. Tolerance: error over the output's largest
 * magnitude 1e-5. */
#include "check24.h"

#include "backend/cpu/kernels/kernels.h"
#include "sparse/sparse.h"

#define TOL 1e-5

/* random w [N,K] with some groups holding fewer than two nonzeros */
static float *rand_weight(int64_t N, int64_t K)
{
    float *w = kc_rand(N * K, -1, 1);
    for (int64_t i = 0; i < N * K; i++)
        if (kc_int(0, 7) == 0)
            w[i] = 0.0f;
    return w;
}

static void test_roundtrip(void)
{
    int64_t N = 37, K = 44, KH = K / 2, MB = tg_sparse24_meta_bytes(K);
    float *w = rand_weight(N, K), *pruned = kc_rand(N * K, 0, 1), *again = kc_rand(N * K, 0, 1);
    float *v = kc_rand(N * KH, 0, 1), *v2 = kc_rand(N * KH, 0, 1);
    uint8_t *m = malloc((size_t)(N * MB)), *m2 = malloc((size_t)(N * MB));
    tg_sparse24_compress(w, N, K, v, m);
    tg_sparse24_expand(v, m, N, K, pruned);
    /* the two largest of each group survive, in place; the others are zero */
    int kept_ok = 1;
    for (int64_t i = 0; i < N * K; i += 4)
        for (int t = 0; t < 4; t++) {
            int larger = 0;
            for (int u = 0; u < 4; u++)
                larger += fabsf(w[i + u]) > fabsf(w[i + t]);
            if (pruned[i + t] != (larger < 2 ? w[i + t] : 0.0f) && larger < 2 &&
                fabsf(w[i + t]) != 0.0f)
                kept_ok = 0;
            if (larger >= 2 && pruned[i + t] != 0.0f)
                kept_ok = 0;
        }
    CHECK(kept_ok);
    /* a 2:4 weight compresses to the same values and metadata and expands
     * back bit for bit */
    tg_sparse24_compress(pruned, N, K, v2, m2);
    tg_sparse24_expand(v2, m2, N, K, again);
    CHECK(!memcmp(v, v2, sizeof *v * (size_t)(N * KH)));
    CHECK(!memcmp(m, m2, (size_t)(N * MB)));
    CHECK(!memcmp(pruned, again, sizeof *pruned * (size_t)(N * K)));
    /* indices in order, and the last half byte (K/4 odd) unused */
    int order_ok = 1;
    for (int64_t i = 0; i < N * MB; i++)
        for (int h = 0; h < 2; h++) {
            int bits = m[i] >> (4 * h) & 15;
            if (h == 1 && i % MB == MB - 1 && (K / 4) % 2)
                order_ok &= bits == 0;
            else
                order_ok &= (bits & 3) < (bits >> 2);
        }
    CHECK(order_ok);
    free(w), free(pruned), free(again), free(v), free(v2), free(m), free(m2);
}

/* one shape on the current path, with or without bias: sparse against
 * dense and float64 */
static void check_linear(int64_t M, int64_t N, int64_t K)
{
    bool bias = kc_int(0, 1);
    int64_t MB = tg_sparse24_meta_bytes(K);
    float *w = rand_weight(N, K), *x = kc_rand(M * K, -1, 1), *b = kc_rand(N, -1, 1);
    float *v = kc_rand(N * K / 2, 0, 1), *wd = kc_rand(N * K, 0, 1);
    float *ys = kc_out(M * N), *yd = kc_out(M * N);
    uint8_t *m = malloc((size_t)(N * MB) + 1);
    void *packed = malloc(tgk_sparse24_packed_size(N, K));
    double *ref = kc_ref(M * N), *dense = kc_ref(M * N);
    tg_sparse24_compress(w, N, K, v, m);
    tg_sparse24_expand(v, m, N, K, wd);
    tgk_sparse24_pack(N, K, v, m, packed);
    tgk_linear24_f32(x, packed, bias ? b : NULL, ys, M, N, K);
    tgk_linear_f32(x, wd, bias ? b : NULL, yd, M, N, K);
    for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) {
            double s = bias ? b[n] : 0.0;
            for (int64_t k = 0; k < K; k++)
                s += (double)x[i * K + k] * wd[n * K + k];
            ref[i * N + n] = s;
            dense[i * N + n] = yd[i * N + n];
        }
    const char *path = tgk_sparse24_path();
    KC_EXPECT(kc_norm_err(ys, ref, M * N), TOL, "%s M%lld N%lld K%lld bias %d vs float64", path,
              (long long)M, (long long)N, (long long)K, bias);
    KC_EXPECT(kc_norm_err(ys, dense, M * N), TOL, "%s M%lld N%lld K%lld bias %d vs dense",
              path, (long long)M, (long long)N, (long long)K, bias);
    CHECK(kc_guard_ok(ys, M * N));
    free(w), free(x), free(b), free(v), free(wd), free(ys), free(yd), free(m), free(packed);
    free(ref), free(dense);
}

static void test_path(void)
{
    kc_shapes24(check_linear);
}

static void test_paths(void)
{
    static const char *const paths[] = {"avx512", "avx2", "scalar"};
    /* the scalar reference and the best path at least */
    CHECK(kc_paths24(paths, 3, tgk_sparse24_path, tgk_sparse24_set_path, test_path) >= 2);
}

int main(void)
{
    unit_seed("test_sparse");
    test_roundtrip();
    test_paths();
    return unit_report();
}
