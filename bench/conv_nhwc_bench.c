/* Channels-last convolutions (tgk_conv_nhwc_f32, the weight packed once)
 * against the NCHW kernel (tgk_conv_f32) on the same convolution, one
 * thread, CPU time of the calling thread (the pool runs one-thread loops
 * inline), rounds interleaved: ResNet-50's layers at 128x128 images (the
 * zoo's), batch 8 and 1. Each pair's outputs are compared first (max error
 * over the largest |y|), so a fast wrong kernel shows.
 *   usage: conv_nhwc_bench [ROUNDS]   (build and run: conv_nhwc_bench.sh) */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"

#define PEAK 172.0      /* GFLOP/s: this core's FMA peak (16 lanes x 2 FMA units x 2.69 GHz x 2) */

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

static float *filled(size_t n)
{
    float *p = malloc(n * sizeof *p);
    if (!p)
        exit(1);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX * 2.0f - 1.0f;
    return p;
}

typedef struct {
    const char *name;
    int64_t c, k, hw, ker, str;
    int epi;            /* 1: a residual, then relu (the bottleneck's last 1x1) */
} shape;

typedef struct {
    tgk_conv_desc d;
    tgk_conv_nhwc_desc e;
    float *x, *xt, *w, *wp, *b, *res, *rest, *y, *yt;
} layer;

/* x [n, c, h, w] -> [n, h, w, c] */
static void to_nhwc(const float *x, int64_t n, int64_t c, int64_t hw, float *y)
{
    for (int64_t i = 0; i < n; i++)
        for (int64_t ch = 0; ch < c; ch++)
            for (int64_t p = 0; p < hw; p++)
                y[(i * hw + p) * c + ch] = x[(i * c + ch) * hw + p];
}

static layer make(const shape *s, int64_t n)
{
    int64_t pad = s->ker / 2, out = (s->hw + 2 * pad - s->ker) / s->str + 1;
    layer l = {.d = {.nsp = 2, .n = n, .c = s->c, .k = s->k, .groups = 1, .in = {s->hw, s->hw},
                     .out = {out, out}, .kernel = {s->ker, s->ker}, .stride = {s->str, s->str},
                     .pad = {pad, pad}, .dil = {1, 1}, .relu = s->epi == 1},
               .e = {.n = n, .c = s->c, .k = s->k, .groups = 1, .in = {s->hw, s->hw},
                     .out = {out, out}, .kernel = {s->ker, s->ker}, .stride = {s->str, s->str},
                     .pad = {pad, pad}, .dil = {1, 1}, .relu = s->epi == 1}};
    int64_t nx = n * s->c * s->hw * s->hw, ny = n * s->k * out * out;
    l.x = filled((size_t)nx), l.xt = filled((size_t)nx);
    to_nhwc(l.x, n, s->c, s->hw * s->hw, l.xt);
    l.w = filled((size_t)(s->k * s->c * s->ker * s->ker));
    l.wp = filled((size_t)tgk_conv_nhwc_packed_size(s->c, s->k, 1, s->ker, s->ker));
    tgk_pack_conv_nhwc_f32(l.w, s->c, s->k, 1, s->ker, s->ker, l.wp);
    l.b = filled((size_t)s->k);
    l.y = filled((size_t)ny), l.yt = filled((size_t)ny);
    if (s->epi == 1) {
        l.res = filled((size_t)ny), l.rest = filled((size_t)ny);
        to_nhwc(l.res, n, s->k, out * out, l.rest);
        l.d.res = l.res, l.e.res = l.rest;
    }
    return l;
}

static int run(const layer *l, bool nhwc)
{
    return nhwc ? tgk_conv_nhwc_f32(&l->e, l->xt, l->wp, l->b, l->yt)
                : tgk_conv_f32(&l->d, l->x, l->w, l->b, l->y);
}

/* CPU ms a call: calls until 0.1 s */
static double timed(const layer *l, bool nhwc)
{
    int calls = 0;
    double t0 = cpu_now(), t;
    do {
        if (run(l, nhwc) != 0)
            exit(1);
        calls++;
    } while ((t = cpu_now() - t0) < 0.1);
    return 1e3 * t / calls;
}

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    static const shape shapes[] = {
        {"1x1 64->64 32x32", 64, 64, 32, 1, 1, 0},
        {"1x1 64->256 32x32 +res+relu", 64, 256, 32, 1, 1, 1},
        {"1x1 256->64 32x32", 256, 64, 32, 1, 1, 0},
        {"1x1 512->128 16x16", 512, 128, 16, 1, 1, 0},
        {"3x3 64 32x32", 64, 64, 32, 3, 1, 0},
        {"3x3 128 16x16", 128, 128, 16, 3, 1, 0},
        {"3x3 256 8x8", 256, 256, 8, 3, 1, 0},
        {"3x3 512 4x4", 512, 512, 4, 3, 1, 0},
        {"3x3/2 128 32->16", 128, 128, 32, 3, 2, 0},
        {"3x3/2 256 16->8", 256, 256, 16, 3, 2, 0},
        {"1x1/2 256->512 32->16", 256, 512, 32, 1, 2, 0},
        {"1x1/2 512->1024 16->8", 512, 1024, 16, 1, 2, 0},
        {"7x7/2 3->64 128->64 (stem)", 3, 64, 128, 7, 2, 0},
    };
    tgk_set_num_threads(1);
    printf("| layer | batch | NCHW ms | NHWC ms | NHWC/NCHW | NCHW GFLOP/s | NHWC GFLOP/s | "
           "NHWC %% of peak | max err |\n|---|---:|---:|---:|---:|---:|---:|---:|---:|\n");
    for (int bi = 0; bi < 2; bi++)
        for (size_t i = 0; i < sizeof shapes / sizeof *shapes; i++) {
            const shape *s = &shapes[i];
            int64_t n = bi == 0 ? 8 : 1;
            layer l = make(s, n);
            int64_t out = l.d.out[0], ny = n * s->k * out * out;
            run(&l, false), run(&l, true);
            double err = 0, scale = 1e-30;
            for (int64_t q = 0; q < n; q++)
                for (int64_t o = 0; o < s->k; o++)
                    for (int64_t p = 0; p < out * out; p++) {
                        double a = l.y[(q * s->k + o) * out * out + p];
                        double e = fabs(a - l.yt[(q * out * out + p) * s->k + o]);
                        err = e > err ? e : err;
                        scale = fabs(a) > scale ? fabs(a) : scale;
                    }
            double tn[64], tt[64];
            for (int r = 0; r < rounds && r < 64; r++) {   /* interleaved, alternating first */
                if (r % 2)
                    tt[r] = timed(&l, true), tn[r] = timed(&l, false);
                else
                    tn[r] = timed(&l, false), tt[r] = timed(&l, true);
            }
            int m = rounds < 64 ? rounds : 64;
            qsort(tn, (size_t)m, sizeof *tn, cmp);
            qsort(tt, (size_t)m, sizeof *tt, cmp);
            double a = tn[m / 2], b = tt[m / 2];
            double gf = 2.0 * (double)ny * (double)(s->c * s->ker * s->ker) * 1e-9;
            printf("| %s | %lld | %.3f | %.3f | %.2f | %.0f | %.0f | %.0f%% | %.1e |\n", s->name,
                   (long long)n, a, b, b / a, gf / a * 1e3, gf / b * 1e3, gf / b * 1e3 / PEAK * 100,
                   err / scale);
            fflush(stdout);
            free(l.x), free(l.xt), free(l.w), free(l.wp), free(l.b), free(l.y), free(l.yt);
            free(l.res), free(l.rest);
        }
    return 0;
}
