/* The int8 2:4 sparse GEMM (qgemm24.c) on every path this CPU runs
 * (avx512vnni, scalar) against the dense int8 GEMM (tgk_qgemm_u8s8) on the
 * same pruned weights and a 64-bit reference: the integer sums must be equal,
 * exactly. Fresh random inputs: odd M and N (partial tiles and panels), K
 * with an odd number of groups (a half pair of metadata), extreme values
 * (u8 255 against s8 -128), sizes split across the thread pool. Then the
 * quantized layer (tgk_qlinear_f32_on) against the dense one: the same
 * integers through the float epilogue, which may fuse its multiply-add,
 * so relative 1e-6 of the largest output. */
#include "check24.h"

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/qgemm.h"
#include "sparse/sparse.h"

/* random w [N,K] pruned to 2:4 (compressed into v, m, and expanded into wd);
 * some weights at -128, some groups with fewer than two nonzeros */
static void rand_pruned(int64_t N, int64_t K, int8_t *v, uint8_t *m, int8_t *wd)
{
    int8_t *w = malloc((size_t)(N * K) + 1);
    for (int64_t i = 0; i < N * K; i++) {
        int64_t r = kc_int(0, 15);
        w[i] = (int8_t)(r == 0 ? 0 : r == 1 ? -128 : kc_int(-127, 127));
    }
    tg_sparse24_compress_i8(w, N, K, v, m);
    tg_sparse24_expand_i8(v, m, N, K, wd);
    free(w);
}

static int checked;

static void check_gemm(int64_t M, int64_t N, int64_t K)
{
    int64_t MB = tg_sparse24_meta_bytes(K), lda = K + kc_int(0, 3);
    uint8_t *a = malloc((size_t)(M * lda) + 1), *m = malloc((size_t)(N * MB) + 1);
    int8_t *v = malloc((size_t)(N * K / 2) + 1), *wd = malloc((size_t)(N * K) + 1);
    int32_t *got = malloc(sizeof *got * (size_t)(M * N + 16)), *dense = malloc(sizeof *dense * (size_t)(M * N + 1));
    void *pk = malloc(tgk_qgemm24_packed_size(N, K)), *pd = malloc(tgk_qgemm_packed_size(N, K));
    for (int64_t i = 0; i < M * lda; i++)
        a[i] = (uint8_t)kc_int(0, 255);
    if (M > 1)
        memset(a, 255, (size_t)K);
    int32_t zero = (int32_t)kc_int(0, 255);
    rand_pruned(N, K, v, m, wd);
    tgk_qgemm24_pack(N, K, v, m, pk);
    tgk_qgemm_pack(N, K, wd, pd);
    for (int i = 0; i < 16; i++)
        got[M * N + i] = 0x5a5a5a5a;        /* sentinels */
    tgk_qgemm24_u8s8(M, N, K, a, lda, zero, pk, got, N);
    tgk_qgemm_u8s8(M, N, K, a, lda, zero, pd, dense, N);
    int64_t bad = 0, bad_ref = 0;
    for (int64_t i = 0; i < M; i++)
        for (int64_t n = 0; n < N; n++) {
            int64_t s = 0;
            for (int64_t k = 0; k < K; k++)
                s += ((int64_t)a[i * lda + k] - zero) * wd[n * K + k];
            bad += got[i * N + n] != dense[i * N + n];
            bad_ref += got[i * N + n] != s;
        }
    for (int i = 0; i < 16; i++)
        bad += got[M * N + i] != 0x5a5a5a5a;
    if (bad || bad_ref)
        fprintf(stderr, "qgemm24 %s M%lld N%lld K%lld: %lld differ from dense, %lld from the"
                " reference\n", tgk_qgemm24_path(), (long long)M, (long long)N, (long long)K,
                (long long)bad, (long long)bad_ref);
    CHECK(bad == 0 && bad_ref == 0);
    checked++;
    free(a), free(m), free(v), free(wd), free(got), free(dense), free(pk), free(pd);
}

static void check_qlinear(int64_t M, int64_t N, int64_t K, int dynamic, bool bias)
{
    int64_t MB = tg_sparse24_meta_bytes(K);
    float *x = kc_rand(M * K, -2, 3), *ws = kc_rand(N, 0.001, 0.01), *b = kc_rand(N, -1, 1);
    float *ys = kc_out(M * N), *yd = kc_out(M * N);
    uint8_t *m = malloc((size_t)(N * MB) + 1);
    int8_t *v = malloc((size_t)(N * K / 2) + 1), *wd = malloc((size_t)(N * K) + 1);
    void *pk = malloc(tgk_qgemm24_packed_size(N, K)), *pd = malloc(tgk_qgemm_packed_size(N, K));
    rand_pruned(N, K, v, m, wd);
    tgk_qgemm24_pack(N, K, v, m, pk);
    tgk_qgemm_pack(N, K, wd, pd);
    CHECK(tgk_qlinear_f32_on(tgk_qgemm24_u8s8_f32, M, N, K, x, 0.02f, 100, dynamic, pk, ws,
                             bias ? b : NULL, ys) == 0);
    CHECK(tgk_qlinear_f32(M, N, K, x, 0.02f, 100, dynamic, pd, ws, bias ? b : NULL, yd) == 0);
    double *ref = kc_ref(M * N);
    for (int64_t i = 0; i < M * N; i++)
        ref[i] = yd[i];
    KC_EXPECT(kc_norm_err(ys, ref, M * N), 1e-6, "qlinear24 %s M%lld N%lld K%lld dynamic %d"
              " bias %d vs dense", tgk_qgemm24_path(), (long long)M, (long long)N,
              (long long)K, dynamic, bias);
    CHECK(kc_guard_ok(ys, M * N));
    free(x), free(ws), free(b), free(ys), free(yd), free(m), free(v), free(wd), free(pk);
    free(pd), free(ref);
}

static void test_path(void)
{
    kc_shapes24(check_gemm);
    check_qlinear(kc_int(1, 13), 70, 36, 0, true);
    check_qlinear(kc_int(1, 13), 33, 260, 1, false);
    check_qlinear(64, 300, 516, 0, true);
}

static void test_paths(void)
{
    static const char *const paths[] = {"avx512vnni", "scalar"};
    CHECK(kc_paths24(paths, 2, tgk_qgemm24_path, tgk_qgemm24_set_path, test_path) >= 1);
    printf("best path %s, %d GEMMs equal to the dense int8 GEMM\n", tgk_qgemm24_path(), checked);
}

int main(void)
{
    unit_seed("test_qgemm24");
    test_paths();
    return unit_report();
}
