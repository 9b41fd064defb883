/* Peak memory and time of one attention call: tgk_sdpa_f32 (flash) or, with
 * --naive, the textbook sgemm + softmax + sgemm that materializes the L x S
 * scores of a head. batch 1, 8 heads, E = Ev = 64, L = S.
 *   usage: sdpa_memory [--naive] [--causal] S
 * Prints: S, extra peak RSS in MiB (ru_maxrss minus the RSS before the
 * tensors were allocated, minus the q/k/v/o bytes), seconds, GFLOP/s.
 * Run each size in a fresh process (ru_maxrss only grows): sdpa_memory.sh. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"

#define HEADS 8
#define DIM 64

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static double peak_rss_bytes(void)
{
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return 1024.0 * (double)ru.ru_maxrss;
}

static float *filled(size_t n, unsigned seed)
{
    float *p = malloc(n * sizeof *p);
    if (!p) {
        perror("malloc");
        exit(1);
    }
    srand(seed);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX - 0.5f;
    return p;
}

/* per head: P = softmax(scale Q K^T (+ causal)), O = P V; P is L x S */
static int naive(const tgk_sdpa_desc *d, const float *q, const float *k, const float *v, float *o)
{
    float *p = malloc(sizeof(float) * (size_t)(d->L * d->S));
    if (!p)
        return -1;
    for (int64_t h = 0; h < d->hq; h++) {
        const float *qh = q + h * d->L * d->E, *kh = k + h * d->S * d->E;
        tgk_gemm_f32(false, true, d->L, d->S, d->E, d->scale, qh, d->E, kh, d->E, 0.0f, p, d->S);
        if (d->causal)
            for (int64_t l = 0; l < d->L; l++)
                for (int64_t s = l + 1; s < d->S; s++)
                    p[l * d->S + s] = -INFINITY;
        tgk_softmax_f32(p, p, d->L, d->S, 1, false);
        tgk_gemm_f32(false, false, d->L, d->Ev, d->S, 1.0f, p, d->S, v + h * d->S * d->Ev, d->Ev,
                     0.0f, o + h * d->L * d->Ev, d->Ev);
    }
    free(p);
    return 0;
}

int main(int argc, char **argv)
{
    bool use_naive = false, causal = false;
    int64_t S = 0;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--naive") == 0)
            use_naive = true;
        else if (strcmp(argv[i], "--causal") == 0)
            causal = true;
        else
            S = strtoll(argv[i], NULL, 10);
    }
    if (S <= 0) {
        fprintf(stderr, "usage: sdpa_memory [--naive] [--causal] S\n");
        return 2;
    }
    tgk_sdpa_desc d = {.batch = 1, .hq = HEADS, .hk = HEADS, .L = S, .S = S, .E = DIM,
                       .Ev = DIM, .scale = 1.0f / sqrtf((float)DIM), .causal = causal};
    /* warm up the pool outside the measurement */
    static float w[4][HEADS * DIM];
    tgk_sdpa_desc wd = d;
    wd.L = wd.S = 1;
    tgk_sdpa_f32(&wd, w[0], w[1], w[2], w[3]);

    double base = peak_rss_bytes();
    size_t n = (size_t)(HEADS * S * DIM);
    float *q = filled(n, 1), *k = filled(n, 2), *v = filled(n, 3), *o = filled(n, 4);
    double t0 = now();
    int rc = use_naive ? naive(&d, q, k, v, o) : tgk_sdpa_f32(&d, q, k, v, o);
    double t = now() - t0;
    if (rc != 0) {
        fprintf(stderr, "sdpa_memory: out of memory\n");
        return 1;
    }
    double extra = peak_rss_bytes() - base - 4.0 * n * sizeof(float);
    double flops = 4.0 * HEADS * (double)S * (double)S * DIM * (causal ? 0.5 : 1.0);
    printf("%lld\t%.1f\t%.3f\t%.1f\n", (long long)S, extra / 1048576.0, t, flops / t * 1e-9);
    free(q), free(k), free(v), free(o);
    return 0;
}
