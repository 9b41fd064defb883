/* The 2:4 sparse linear layer (tgk_linear24_f32) against tgraph's dense one
 * on pre-packed weights (tgk_linear_packed_f32, what tcompile emits for a
 * float linear), on the same pruned weights, side by side: each repetition
 * times both, in alternating order, each for at least 0.15 s; the medians
 * are reported (the machine may be shared: interleaving spreads the load
 * over both contenders).
 *   usage: sparse_bench [THREADS...]   (build and run: sparse.sh) */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"
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
    const float *x, *b, *wp;
    const void *sp;
    float *y;
} lin;

/* seconds a call, over at least 0.15 s */
static double timed(const lin *l, int sparse)
{
    int n = 0;
    double t0 = now(), t;
    do {
        if (sparse)
            tgk_linear24_f32(l->x, l->sp, l->b, l->y, l->M, l->N, l->K);
        else
            tgk_linear_packed_f32(l->x, l->wp, l->b, l->y, l->M, l->N, l->K);
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
    tg_sparse24_compress(w, N, K, v, m);
    tg_sparse24_expand(v, m, N, K, w);
    lin l = {0, N, K, filled((size_t)(Mmax * K)), filled((size_t)N),
             alloc(sizeof(float) * (size_t)tgk_packed_size(N, K)),
             alloc(tgk_sparse24_packed_size(N, K)), alloc(sizeof(float) * (size_t)(Mmax * N))};
    tgk_pack_weight_f32(w, K, N, K, (float *)l.wp);
    tgk_sparse24_pack(N, K, v, m, (void *)l.sp);
    free(w), free(v), free(m);
    for (int t = 0; t < nt; t++) {
        tgk_set_num_threads(threads[t]);
        for (int i = 0; i < nm; i++) {
            double td[REPS], ts[REPS];
            l.M = Ms[i];
            for (int r = 0; r < REPS; r++) {
                int first = r % 2;
                double a = timed(&l, first), b = timed(&l, !first);
                ts[r] = first ? a : b;
                td[r] = first ? b : a;
            }
            double d = median(td), s = median(ts);
            printf("linear %lld->%lld  batch %3lld  threads %d\tdense %8.3f ms  sparse 2:4 "
                   "%8.3f ms  speedup %.2fx\n", (long long)K, (long long)N, (long long)l.M,
                   threads[t], d * 1e3, s * 1e3, d / s);
            fflush(stdout);
        }
    }
    free((void *)l.x), free((void *)l.b), free((void *)l.wp), free((void *)l.sp), free(l.y);
}

int main(int argc, char **argv)
{
    int threads[8] = {1, 2}, nt = 2;
    if (argc > 1)
        for (nt = 0; nt < argc - 1 && nt < 8; nt++)
            threads[nt] = atoi(argv[nt + 1]);
    static const int64_t Ms[] = {1, 64};
    printf("kernel path: %s; medians of %d interleaved repetitions\n", tgk_sparse24_path(),
           REPS);
    bench(4096, 4096, Ms, 2, threads, nt);
    bench(11008, 4096, Ms, 2, threads, nt);
    bench(4096, 11008, Ms, 2, threads, nt);
    return 0;
}
