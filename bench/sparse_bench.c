/* The 2:4 sparse linear layers against tgraph's dense ones on the same pruned
 * weights, side by side: float32 (tgk_linear24_f32 against
 * tgk_linear_packed_f32 on pre-packed weights, what tcompile emits for a
 * float linear) and int8 (qlinear_24's tgk_qgemm24_u8s8_f32 against
 * qlinear's tgk_qgemm_u8s8_f32, both through tgk_qlinear_f32_on, static
 * scheme). Each repetition times all four, starting one further on each
 * time, each for at least 0.15 s; the medians are reported (the machine may
 * be shared: interleaving spreads the load over the contenders).
 *   usage: sparse_bench [THREADS...]   (build and run: sparse.sh) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/qgemm.h"
#include "sparse/sparse.h"

#define REPS 7

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static void *alloc(size_t n)
{
    void *p = malloc(n);
    if (!p) {
        fprintf(stderr, "sparse_bench: out of memory\n");
        exit(1);
    }
    return p;
}

static float *filled(size_t n)
{
    float *p = alloc(n * sizeof *p);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    return p;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static double median(double *t)
{
    qsort(t, REPS, sizeof *t, cmp);
    return t[REPS / 2];
}

typedef struct {
    int64_t M, N, K;
    const float *x, *b, *wp, *ws;
    const void *sp, *qp, *qsp;  /* packed: f32 2:4, int8 dense, int8 2:4 */
    float *y;
} lin;

enum { F32_DENSE, F32_SPARSE, I8_DENSE, I8_SPARSE, NKIND };
static const char *const kind_name[NKIND] = {"f32 dense", "f32 2:4", "int8 dense", "int8 2:4"};

/* one call of contender k: the layer as a compiled model runs it (the int8
 * ones quantize x, static scheme, then the integer GEMM and its epilogue) */
static void call(const lin *l, int k)
{
    switch (k) {
    case F32_DENSE: tgk_linear_packed_f32(l->x, l->wp, l->b, l->y, l->M, l->N, l->K); break;
    case F32_SPARSE: tgk_linear24_f32(l->x, l->sp, l->b, l->y, l->M, l->N, l->K); break;
    case I8_DENSE:
        tgk_qlinear_f32(l->M, l->N, l->K, l->x, 4.0f / 255, 128, 0, l->qp, l->ws, l->b, l->y);
        break;
    default:
        tgk_qlinear_f32_on(tgk_qgemm24_u8s8_f32, l->M, l->N, l->K, l->x, 4.0f / 255, 128, 0,
                           l->qsp, l->ws, l->b, l->y);
    }
}

/* seconds a call, over at least 0.15 s */
static double timed(const lin *l, int k)
{
    int n = 0;
    double t0 = now(), t;
    do {
        call(l, k);
        n++;
    } while ((t = now() - t0) < 0.15);
    return t / n;
}

static void bench(int64_t N, int64_t K, const int64_t *Ms, int nm, const int *threads, int nt)
{
    int64_t MB = tg_sparse24_meta_bytes(K), Mmax = 0;
    for (int i = 0; i < nm; i++)
        Mmax = Ms[i] > Mmax ? Ms[i] : Mmax;
    float *w = filled((size_t)(N * K)), *v = alloc(sizeof(float) * (size_t)(N * K / 2));
    uint8_t *m = alloc((size_t)(N * MB));
    int8_t *w8 = alloc((size_t)(N * K)), *v8 = alloc((size_t)(N * K / 2));
    tg_sparse24_compress(w, N, K, v, m);
    tg_sparse24_expand(v, m, N, K, w);
    lin l = {0, N, K, filled((size_t)(Mmax * K)), filled((size_t)N),
             alloc(sizeof(float) * (size_t)tgk_packed_size(N, K)), filled((size_t)N),
             alloc(tgk_sparse24_packed_size(N, K)), alloc(tgk_qgemm_packed_size(N, K)),
             alloc(tgk_qgemm24_packed_size(N, K)), alloc(sizeof(float) * (size_t)(Mmax * N))};
    tgk_pack_weight_f32(w, K, N, K, (float *)l.wp);
    tgk_sparse24_pack(N, K, v, m, (void *)l.sp);
    /* int8 weights pruned to 2:4 the same way (tsparse | tquant makes such) */
    for (int64_t i = 0; i < N * K; i++)
        w8[i] = (int8_t)(rand() % 255 - 127);
    tg_sparse24_compress_i8(w8, N, K, v8, m);
    tg_sparse24_expand_i8(v8, m, N, K, w8);
    tgk_qgemm_pack(N, K, w8, (void *)l.qp);
    tgk_qgemm24_pack(N, K, v8, m, (void *)l.qsp);
    for (int64_t i = 0; i < N; i++)
        ((float *)l.ws)[i] = 1e-3f;
    free(w), free(v), free(m), free(w8), free(v8);
    for (int t = 0; t < nt; t++) {
        tgk_set_num_threads(threads[t]);
        for (int i = 0; i < nm; i++) {
            double tk[NKIND][REPS], med[NKIND];
            l.M = Ms[i];
            for (int r = 0; r < REPS; r++)      /* each repetition starts one further on */
                for (int c = 0; c < NKIND; c++) {
                    int k = (r + c) % NKIND;
                    tk[k][r] = timed(&l, k);
                }
            printf("linear %lld->%lld  batch %3lld  threads %d", (long long)K, (long long)N,
                   (long long)l.M, threads[t]);
            for (int k = 0; k < NKIND; k++)
                printf("  %s %8.3f ms", kind_name[k], (med[k] = median(tk[k])) * 1e3);
            printf("  f32 2:4/dense %.2fx  int8 2:4/dense %.2fx\n", med[F32_DENSE] / med[F32_SPARSE],
                   med[I8_DENSE] / med[I8_SPARSE]);
            fflush(stdout);
        }
    }
    free((void *)l.x), free((void *)l.b), free((void *)l.wp), free((void *)l.ws);
    free((void *)l.sp), free((void *)l.qp), free((void *)l.qsp), free(l.y);
}

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, nt = 2;
    if (argc > 1)
        for (nt = 0; nt < argc - 1 && nt < 8; nt++)
            threads[nt] = atoi(argv[nt + 1]);
    static const int64_t Ms[] = {1, 64};
    printf("kernel paths: f32 2:4 %s, int8 %s, int8 2:4 %s; medians of %d interleaved"
           " repetitions\n", tgk_sparse24_path(), tgk_qgemm_path(), tgk_qgemm24_path(), REPS);
    bench(4096, 4096, Ms, 2, threads, nt);
    bench(11008, 4096, Ms, 2, threads, nt);
    bench(4096, 11008, Ms, 2, threads, nt);
    return 0;
}
