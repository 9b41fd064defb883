/* tgk_conv_nhwc_f32 (channels-last, the weight packed by
 * tgk_pack_conv_nhwc_f32 from the conv op's OIHW layout) against a float64
 * direct convolution on fresh random inputs: one group, depthwise, and
 * groups of 16-channel multiples; odd sizes, channel counts past and within
 * a panel of 16, padding up to the kernel's reach, strides 1-3, dilation;
 * the zoo's shapes (ResNet's 1x1, 3x3, strided 3x3 and 1x1 shortcuts, its
 * 7x7/2 stem); bias or none; the epilogue: a residual, relu, hardswish and
 * relu6 (on the tile's registers), sigmoid (a call); y a channel slice of a
 * wider buffer (y_ld > k: the floats between untouched); each register tile
 * the CPU runs, 1 and 2 threads. Invalid descriptors are refused.
 * Tolerance: max error over the largest magnitude of the summed terms 1e-5
 * (x 1 + terms/1000), as test_conv. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

#define TOL 1e-5

typedef struct {
    tgk_conv_nhwc_desc d;
    bool bias, res;
    int act;            /* 0 none, 1 hardswish, 2 relu6, 3 sigmoid */
} ncase;

static double act_ref(int act, double v)
{
    switch (act) {
    case 1: return v * fmin(fmax(v + 3, 0), 6) / 6;
    case 2: return fmin(fmax(v, 0), 6);
    case 3: return 1 / (1 + exp(-v));
    }
    return v;
}

static tgk_vec_fn act_fn(int act)
{
    static const tgk_vec_fn fns[] = {NULL, tgk_vec_hardswish_f32, tgk_vec_relu6_f32,
                                     tgk_vec_sigmoid_f32};
    return fns[act];
}

/* y [n, oh, ow, k] and mag, the sum of the magnitudes of each output's terms */
static void reference(const tgk_conv_nhwc_desc *d, const float *x, const float *w,
                      const float *b, double *y, double *mag)
{
    int64_t cg = d->c / d->groups, kg = d->k / d->groups;
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t oh = 0; oh < d->out[0]; oh++)
            for (int64_t ow = 0; ow < d->out[1]; ow++)
                for (int64_t o = 0; o < d->k; o++) {
                    int64_t g = o / kg, at = ((n * d->out[0] + oh) * d->out[1] + ow) * d->k + o;
                    double s = b ? b[o] : 0, m = b ? fabs(b[o]) : 0;
                    for (int64_t r = 0; r < d->kernel[0]; r++)
                        for (int64_t q = 0; q < d->kernel[1]; q++) {
                            int64_t ih = oh * d->stride[0] - d->pad[0] + r * d->dil[0];
                            int64_t iw = ow * d->stride[1] - d->pad[1] + q * d->dil[1];
                            if (ih < 0 || ih >= d->in[0] || iw < 0 || iw >= d->in[1])
                                continue;
                            for (int64_t ic = 0; ic < cg; ic++) {
                                double t = (double)w[((o * cg + ic) * d->kernel[0] + r) *
                                                         d->kernel[1] + q] *
                                           x[((n * d->in[0] + ih) * d->in[1] + iw) * d->c +
                                             g * cg + ic];
                                s += t, m += fabs(t);
                            }
                        }
                    y[at] = s, mag[at] = m;
                }
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dil)
{
    int64_t span = dil * (k - 1) + 1;
    return in + 2 * p < span ? 0 : (in + 2 * p - span) / s + 1;
}

/* the case's geometry: n, c, k, groups, h, w, kernel, stride, pad, dil (both axes alike) */
static ncase make(int64_t n, int64_t c, int64_t k, int64_t g, int64_t h, int64_t w,
                  int64_t ker, int64_t s, int64_t p, int64_t dil)
{
    ncase nc = {.d = {.n = n, .c = c, .k = k, .groups = g, .in = {h, w}, .kernel = {ker, ker},
                      .stride = {s, s}, .pad = {p, p}, .dil = {dil, dil}}};
    for (int a = 0; a < 2; a++)
        nc.d.out[a] = out_size(nc.d.in[a], ker, s, p, dil);
    return nc;
}

static void run_case(ncase *nc)
{
    tgk_conv_nhwc_desc d = nc->d;
    int64_t cg = d.c / d.groups, taps = d.kernel[0] * d.kernel[1];
    int64_t pix = d.n * d.out[0] * d.out[1], ny = pix * d.k, ld = d.y_ld ? d.y_ld : d.k;
    float *x = kc_rand(d.n * d.in[0] * d.in[1] * d.c, -1, 1), *w = kc_rand(d.k * cg * taps, -1, 1);
    float *b = nc->bias ? kc_rand(d.k, -1, 1) : NULL, *res = nc->res ? kc_rand(ny, -1, 1) : NULL;
    int64_t np = tgk_conv_nhwc_packed_size(d.c, d.k, d.groups, d.kernel[0], d.kernel[1]);
    CHECK(np == (d.k + 15) / 16 * 16 * taps * cg);
    float *wp = kc_out(np);
    tgk_pack_conv_nhwc_f32(w, d.c, d.k, d.groups, d.kernel[0], d.kernel[1], wp);
    CHECK(kc_guard_ok(wp, np));
    double *ref = kc_ref(ny), *mag = kc_ref(ny);
    reference(&d, x, w, b, ref, mag);
    for (int64_t i = 0; i < ny; i++) {
        ref[i] += res ? res[i] : 0;
        mag[i] += res ? fabs(res[i]) : 0;
        ref[i] = d.relu && ref[i] < 0 ? 0 : act_ref(nc->act, ref[i]);
    }
    d.res = res;
    d.act = act_fn(nc->act);
    /* y: ld floats a pixel, the k of them the result, sentinels between */
    int64_t total = pix * ld;
    float *y = kc_out(total), mark = -12345.5f;
    for (int64_t i = 0; i < total; i++)
        y[i] = i % ld < d.k ? NAN : mark;
    CHECK(tgk_conv_nhwc_f32(&d, x, wp, b, y) == 0);
    float *got = malloc((size_t)(ny > 0 ? ny : 1) * sizeof *got);
    CHECK(got != NULL);
    int64_t touched = 0;
    for (int64_t i = 0; i < total; i++) {
        if (i % ld < d.k)
            got[i / ld * d.k + i % ld] = y[i];
        else
            touched += memcmp(&y[i], &mark, sizeof mark) != 0;
    }
    KC_EXPECT(kc_mag_err(got, ref, mag, ny), TOL * (1 + cg * taps / 1000.0),
              "conv_nhwc n=%lld c=%lld k=%lld g=%lld in=%lldx%lld out=%lldx%lld ker=%lldx%lld "
              "str=%lld,%lld pad=%lld,%lld dil=%lld,%lld y_ld=%lld bias=%d res=%d relu=%d act=%d "
              "threads=%d",
              (long long)d.n, (long long)d.c, (long long)d.k, (long long)d.groups,
              (long long)d.in[0], (long long)d.in[1], (long long)d.out[0], (long long)d.out[1],
              (long long)d.kernel[0], (long long)d.kernel[1], (long long)d.stride[0],
              (long long)d.stride[1], (long long)d.pad[0], (long long)d.pad[1],
              (long long)d.dil[0], (long long)d.dil[1], (long long)d.y_ld, nc->bias, nc->res,
              d.relu, nc->act, tgk_num_threads());
    CHECK(touched == 0);
    CHECK(kc_guard_ok(y, total));
    free(x), free(w), free(b), free(res), free(wp), free(ref), free(mag), free(y), free(got);
}

/* A random case of group kind gk (0: one group, 1: depthwise, 2: groups of
 * 16-channel multiples), each axis its own kernel, stride, padding and
 * dilation, a random epilogue and y_ld. */
static void random_case(int gk)
{
    for (;;) {
        int64_t g = gk == 0 ? 1 : gk == 1 ? kc_int(1, 40) : kc_int(2, 3);
        int64_t c = gk == 0 ? kc_int(1, 40) : gk == 1 ? g : g * 16 * kc_int(1, 2);
        int64_t k = gk == 0 ? kc_int(1, 40) : gk == 1 ? g : g * 16 * kc_int(1, 2);
        ncase nc = {.d = {.n = kc_int(1, 3), .c = c, .k = k, .groups = g}};
        for (int a = 0; a < 2; a++) {
            tgk_conv_nhwc_desc *d = &nc.d;
            d->in[a] = kc_int(1, 12);
            d->kernel[a] = kc_int(0, 5) ? kc_int(1, 3) : 5;
            d->stride[a] = kc_int(1, 3);
            d->dil[a] = kc_int(1, 2);
            d->pad[a] = kc_int(0, d->dil[a] * (d->kernel[a] - 1));
            d->out[a] = out_size(d->in[a], d->kernel[a], d->stride[a], d->pad[a], d->dil[a]);
        }
        if (nc.d.out[0] < 1 || nc.d.out[1] < 1)
            continue;
        int e = (int)kc_int(0, 4);
        nc.d.relu = e == 1;
        nc.act = e > 1 ? e - 1 : 0;
        nc.bias = kc_int(0, 1);
        nc.res = kc_int(0, 1);
        nc.d.y_ld = kc_int(0, 1) ? 0 : k + kc_int(1, 20);
        run_case(&nc);
        return;
    }
}

int main(void)
{
    unit_seed("test_conv_nhwc");
    static const char *const tiles[] = {"base", "avx2", "avx512"};
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int i = 0; i < 3 * 40; i++) {
            if (!tgk_gemm_packed_isa(tiles[i % 3]))
                continue;
            random_case(i / 3 % 3);
        }
    }
    CHECK(tgk_gemm_packed_isa(NULL));
    /* the zoo's shapes (ResNet-50's 1x1 and 3x3 at 32x32-8x8, strided 3x3,
     * the 1x1/2 shortcut, the 7x7/2 stem; ResNeXt/RegNet's groups;
     * MobileNet's depthwise 3x3 and 5x5, strided) and odd ones, with each
     * register tile, 1 and 2 threads: n, c, k, groups, h, w, kernel, stride,
     * pad, dil, epilogue (0 none, 1 res + relu, 2 relu, 3 hardswish, 4
     * relu6, 5 sigmoid, 6 res), y_ld - k */
    static const int64_t zoo[][12] = {
        {2, 64, 64, 1, 32, 32, 1, 1, 0, 1, 2, 0},
        {1, 64, 256, 1, 16, 16, 1, 1, 0, 1, 1, 0},
        {2, 256, 64, 1, 8, 8, 1, 1, 0, 1, 2, 64},
        {1, 64, 64, 1, 32, 32, 3, 1, 1, 1, 2, 0},
        {2, 128, 128, 1, 16, 16, 3, 1, 1, 1, 1, 0},
        {1, 256, 256, 1, 8, 8, 3, 1, 1, 1, 2, 0},
        {2, 128, 128, 1, 17, 17, 3, 2, 1, 1, 2, 0},
        {1, 256, 512, 1, 16, 16, 1, 2, 0, 1, 0, 0},
        {2, 64, 128, 1, 15, 15, 1, 2, 0, 1, 6, 32},
        {1, 3, 64, 1, 38, 38, 7, 2, 3, 1, 2, 0},
        {2, 3, 24, 1, 33, 31, 3, 2, 1, 1, 3, 8},
        {2, 128, 128, 4, 9, 9, 3, 2, 1, 1, 2, 0},
        {1, 64, 64, 4, 10, 10, 3, 1, 1, 1, 1, 0},
        {1, 96, 96, 96, 14, 14, 3, 1, 1, 1, 4, 0},
        {2, 144, 144, 144, 11, 11, 5, 2, 2, 1, 3, 16},
        {1, 40, 40, 40, 7, 9, 3, 1, 2, 2, 6, 0},
        {3, 37, 21, 1, 1, 1, 1, 1, 0, 1, 1, 0},
        {2, 24, 40, 1, 9, 11, 3, 1, 1, 2, 5, 3},
        {1, 17, 33, 1, 13, 5, 5, 3, 2, 1, 1, 7},
    };
    for (size_t i = 0; i < sizeof zoo / sizeof *zoo * 3; i++) {
        const int64_t *r = zoo[i / 3];
        if (!tgk_gemm_packed_isa(tiles[i % 3]))
            continue;
        tgk_set_num_threads(1 + (int)(i % 2));
        ncase nc = make(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9]);
        nc.bias = i % 2 == 0;
        nc.res = r[10] == 1 || r[10] == 6;
        nc.d.relu = r[10] == 1 || r[10] == 2;
        nc.act = r[10] >= 3 && r[10] <= 5 ? (int)r[10] - 2 : 0;
        nc.d.y_ld = r[11] ? r[2] + r[11] : 0;
        run_case(&nc);
    }
    CHECK(tgk_gemm_packed_isa(NULL));
    tgk_set_num_threads(2);

    /* which grouping the kernel takes */
    CHECK(tgk_conv_nhwc_supported(3, 64, 1));
    CHECK(tgk_conv_nhwc_supported(32, 32, 32));
    CHECK(tgk_conv_nhwc_supported(64, 128, 4));
    CHECK(!tgk_conv_nhwc_supported(32, 64, 32));    /* a depthwise multiplier */
    CHECK(!tgk_conv_nhwc_supported(48, 48, 6));     /* 8 channels a group */
    CHECK(!tgk_conv_nhwc_supported(4, 6, 4));
    /* invalid descriptors are refused, not run */
    ncase nc = make(1, 4, 4, 1, 5, 5, 3, 1, 1, 1);
    tgk_conv_nhwc_desc bad = nc.d;
    bad.groups = 3;
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    bad = nc.d;
    bad.stride[0] = 0;
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    bad = nc.d;
    bad.out[1] = 4;
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    bad = nc.d;
    bad.y_ld = 3;
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    bad = nc.d;
    bad.relu = true;
    bad.act = tgk_vec_sigmoid_f32;
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    bad = nc.d;
    bad.kernel[0] = 9;      /* wider than the padded input */
    CHECK(tgk_conv_nhwc_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    return unit_report();
}
