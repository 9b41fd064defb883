/* Depthwise convolutions channels last (tgk_conv_dw_nhwc_f32) against the
 * channels-first kernel (tgk_conv_f32's depthwise paths, conv_dw.c) on the
 * mobile nets' depthwise layers at the zoo's 128x128 images (mobilenet_v2,
 * mobilenet_v3_large, efficientnet_b0, mnasnet1_0: their distinct layers, 64x64
 * down to 4x4 planes), bias and no activation, at batch 8 and 1. One thread,
 * CPU time (CLOCK_PROCESS_CPUTIME_ID), rounds interleaved: each round times
 * both layouts in turn, each its runs of at least 20 ms; the median over the
 * rounds. Buffers 64-byte aligned. Prints a Markdown table, then each model's sum over its layers (a
 * layer as often as the model has it).
 *   usage: dw_nhwc [ROUNDS]     (build and run: dw_nhwc.sh) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/cpu/kernels/kernels.h"

static double cpu_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

/* 64-byte aligned, as the runtime's tensors are */
static float *filled(size_t n)
{
    float *p = aligned_alloc(64, (n * sizeof *p + 63) / 64 * 64);
    if (!p)
        exit(1);
    for (size_t i = 0; i < n; i++)
        p[i] = (float)rand() / (float)RAND_MAX * 4.0f - 2.0f;
    return p;
}

/* a layer: channels, input plane, kernel, stride, and how often each model
 * has it (mobilenet_v2, mobilenet_v3_large, efficientnet_b0, mnasnet1_0) */
typedef struct {
    int64_t c, hw, ker, str;
    int count[4];
} layer;

static const layer layers[] = {
    {16, 64, 3, 1, {0, 1, 0, 0}},   {32, 64, 3, 1, {1, 0, 1, 1}},   {48, 64, 3, 2, {0, 0, 0, 1}},
    {64, 64, 3, 2, {0, 1, 0, 0}},   {96, 64, 3, 2, {1, 0, 1, 0}},   {72, 32, 3, 1, {0, 1, 0, 2}},
    {144, 32, 3, 1, {1, 0, 1, 0}},  {144, 32, 3, 2, {1, 0, 0, 0}},  {72, 32, 5, 2, {0, 1, 0, 1}},
    {144, 32, 5, 2, {0, 0, 1, 0}},  {192, 16, 3, 1, {2, 0, 0, 0}},  {120, 16, 5, 1, {0, 2, 0, 2}},
    {240, 16, 5, 1, {0, 0, 1, 0}},  {192, 16, 3, 2, {1, 0, 0, 0}},  {240, 16, 3, 2, {0, 1, 1, 0}},
    {240, 16, 5, 2, {0, 0, 0, 1}},  {184, 8, 3, 1, {0, 2, 0, 0}},   {200, 8, 3, 1, {0, 1, 0, 0}},
    {384, 8, 3, 1, {4, 0, 0, 0}},   {480, 8, 3, 1, {0, 1, 2, 1}},   {576, 8, 3, 1, {2, 0, 0, 1}},
    {672, 8, 3, 1, {0, 1, 0, 0}},   {480, 8, 5, 1, {0, 0, 1, 2}},   {672, 8, 5, 1, {0, 0, 2, 0}},
    {576, 8, 3, 2, {1, 0, 0, 0}},   {576, 8, 5, 2, {0, 0, 0, 1}},   {672, 8, 5, 2, {0, 1, 1, 0}},
    {960, 4, 3, 1, {3, 0, 0, 0}},   {1152, 4, 3, 1, {0, 0, 1, 1}},  {960, 4, 5, 1, {0, 2, 0, 0}},
    {1152, 4, 5, 1, {0, 0, 3, 3}},
};
static const char *const models[4] = {"mobilenet_v2", "mobilenet_v3_large", "efficientnet_b0",
                                      "mnasnet1_0"};

static int cmp(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* CPU seconds a run of what, its runs of at least 20 ms */
#define TIMED(out, what)                                                    \
    do {                                                                    \
        int n_ = 0;                                                         \
        double t0_ = cpu_now(), t_;                                         \
        do {                                                                \
            what;                                                           \
            n_++;                                                           \
        } while ((t_ = cpu_now() - t0_) < 0.02);                            \
        out = t_ / n_;                                                      \
    } while (0)

/* the median seconds of the two layouts' runs of l at batch n */
static void bench(const layer *l, int64_t n, int rounds, double *nchw, double *nhwc)
{
    int64_t c = l->c, hw = l->hw, k = l->ker, s = l->str, p = k / 2;
    int64_t o = (hw + 2 * p - k) / s + 1;
    float *x = filled((size_t)(n * c * hw * hw)), *w = filled((size_t)(c * k * k));
    float *b = filled((size_t)c), *y = filled((size_t)(n * c * o * o));
    float *wp = filled((size_t)tgk_conv_nhwc_packed_size(c, c, c, k, k));
    tgk_pack_conv_nhwc_f32(w, c, c, c, k, k, wp);
    tgk_conv_desc d = {.nsp = 2, .n = n, .c = c, .k = c, .groups = c, .in = {hw, hw},
                       .out = {o, o}, .kernel = {k, k}, .stride = {s, s}, .pad = {p, p},
                       .dil = {1, 1}};
    tgk_conv_nhwc_desc e = {.n = n, .c = c, .k = c, .groups = c, .in = {hw, hw}, .out = {o, o},
                            .kernel = {k, k}, .stride = {s, s}, .pad = {p, p}, .dil = {1, 1}};
    double *t1 = malloc(sizeof(double) * (size_t)rounds), *t2 = malloc(sizeof(double) * (size_t)rounds);
    for (int r = 0; r < rounds; r++) {
        TIMED(t1[r], tgk_conv_f32(&d, x, w, b, y));
        TIMED(t2[r], tgk_conv_nhwc_f32(&e, x, wp, b, y));
    }
    qsort(t1, (size_t)rounds, sizeof *t1, cmp);
    qsort(t2, (size_t)rounds, sizeof *t2, cmp);
    *nchw = t1[rounds / 2], *nhwc = t2[rounds / 2];
    free(x), free(w), free(b), free(y), free(wp), free(t1), free(t2);
}

int main(int argc, char **argv)
{
    int rounds = argc > 1 ? atoi(argv[1]) : 5;
    enum { NL = sizeof layers / sizeof *layers };
    static const int64_t batches[2] = {8, 1};
    double sum[2][4][2];
    memset(sum, 0, sizeof sum);
    tgk_set_num_threads(1);
    printf("| layer (c, plane, kernel, stride) | b8 NCHW ms | b8 NHWC ms | b8 NCHW/NHWC "
           "| b1 NCHW ms | b1 NHWC ms | b1 NCHW/NHWC |\n|---|---|---|---|---|---|---|\n");
    for (int i = 0; i < NL; i++) {
        const layer *l = &layers[i];
        printf("| %lld, %lldx%lld, %lldx%lld, /%lld", (long long)l->c, (long long)l->hw,
               (long long)l->hw, (long long)l->ker, (long long)l->ker, (long long)l->str);
        for (int bi = 0; bi < 2; bi++) {
            double a, b;
            bench(l, batches[bi], rounds, &a, &b);
            printf(" | %.4f | %.4f | %.2f", a * 1e3, b * 1e3, a / b);
            for (int m = 0; m < 4; m++)
                sum[bi][m][0] += l->count[m] * a, sum[bi][m][1] += l->count[m] * b;
        }
        printf(" |\n");
        fflush(stdout);
    }
    printf("\n| model: its depthwise layers | b8 NCHW ms | b8 NHWC ms | b8 NCHW/NHWC "
           "| b1 NCHW ms | b1 NHWC ms | b1 NCHW/NHWC |\n|---|---|---|---|---|---|---|\n");
    for (int m = 0; m < 4; m++)
        printf("| %s | %.3f | %.3f | %.2f | %.3f | %.3f | %.2f |\n", models[m],
               sum[0][m][0] * 1e3, sum[0][m][1] * 1e3, sum[0][m][0] / sum[0][m][1],
               sum[1][m][0] * 1e3, sum[1][m][1] * 1e3, sum[1][m][0] / sum[1][m][1]);
    return 0;
}
