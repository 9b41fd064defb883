/* The int8 GEMM on every path the CPU has (VNNI, AVX2, scalar) against exact
 * integer arithmetic, and the quantized linear layer against the same math
 * done step by step. Integers must match exactly; so must the floats, since
 * the reference performs the same float32 operations in the same order. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "kernels/cpu/kernels.h"
#include "kernels/cpu/qgemm.h"
#include "unit.h"

static uint64_t rng_state;

static uint32_t rnd(void)
{
    rng_state ^= rng_state << 13, rng_state ^= rng_state >> 7, rng_state ^= rng_state << 17;
    return (uint32_t)(rng_state >> 11);
}

static float rndf(float lo, float hi) { return lo + (hi - lo) * (rnd() / 2097152.0f / 2048.0f); }

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
    for (int64_t i = 0; i < M * K; i++) a[i] = (uint8_t)rnd();
    for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)rnd();
    /* extremes too: all-255 rows against all -128 weights */
    if (M > 1) memset(a, 255, K);
    if (N > 1) memset(w, 0x80, K);
    int32_t zero = (int32_t)(rnd() % 256);
    ref_qgemm(M, N, K, a, zero, w, want);
    tgk_qgemm_pack(N, K, w, packed);
    const char *paths[] = {"scalar", "avx2", "avx512vnni"};
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
    for (int64_t i = 0; i < N * K; i++) w[i] = (int8_t)rnd();
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
    tgk_qlinear_f32(M, N, K, x, dynamic ? 0.0f : xs, dynamic ? 0 : xz, dynamic, packed, ws, b, got);
    int64_t bad = 0;
    for (int64_t m = 0; m < M; m++)
        for (int64_t n = 0; n < N; n++) {
            float want = (float)acc[m * N + n] * (xs * ws[n]) + b[n];
            bad += memcmp(&want, &got[m * N + n], sizeof want) != 0;
        }
    CHECK(bad == 0);
    free(x), free(ws), free(b), free(got), free(w), free(xq), free(acc), free(packed);
}

int main(void)
{
    rng_state = (uint64_t)time(NULL) * 2654435761u | 1;
    printf("seed %llu, best path %s\n", (unsigned long long)rng_state, tgk_qgemm_path());
    const int64_t sizes[][3] = {{1, 1, 1}, {1, 16, 4}, {3, 17, 5}, {4, 16, 64}, {5, 33, 7},
                                {7, 10, 130}, {9, 48, 255}, {64, 70, 384}, {2, 1, 1023}};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; i++)
        check_qgemm(sizes[i][0], sizes[i][1], sizes[i][2]);
    for (int t = 0; t < 20; t++) check_qgemm(1 + rnd() % 40, 1 + rnd() % 80, 1 + rnd() % 300);
    if (tgk_qgemm_set_path("avx512vnni")) tgk_qgemm_set_path("avx2");   /* back to the best */
    check_qlinear(5, 19, 37, 0);
    check_qlinear(33, 64, 256, 1);
    return unit_report();
}
