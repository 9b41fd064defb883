/* Depthwise convolution channels last (conv_dw_nhwc.c) against a float64
 * reference: 3x3 and 5x5 (and other sizes), strides 1 and 2, padding,
 * dilation, odd plane sizes, channels not a multiple of 16 (the masked
 * tail), bias or none, a residual, relu / relu6 / hardswish (on the
 * registers) and SiLU (a call after the row), y a channel slice of a wider
 * tensor (y_ld > k: the columns between stay untouched); on each instruction
 * set the CPU has, one and two threads. The weight is packed by
 * tgk_pack_conv_nhwc_f32. Tolerance: |err| <= 1e-5 of the output's largest
 * value (sums of up to 25 products of inputs in [-1, 1)); relu6 and
 * hardswish elementwise as PyTorch defines them. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

enum { A_NONE, A_RELU, A_RELU6, A_HARDSWISH, A_SILU, A_COUNT };

static const tgk_vec_fn acts[A_COUNT] = {NULL, NULL, tgk_vec_relu6_f32, tgk_vec_hardswish_f32,
                                         tgk_vec_silu_f32};

static double act_ref(int a, double v)
{
    switch (a) {
    case A_RELU: return v < 0 ? 0 : v;
    case A_RELU6: return v < 0 ? 0 : v > 6 ? 6 : v;
    case A_HARDSWISH: return v * (v + 3 < 0 ? 0 : v + 3 > 6 ? 6 : v + 3) / 6;
    case A_SILU: return v / (1 + exp(-v));
    default: return v;
    }
}

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dil)
{
    return (in + 2 * p - dil * (k - 1) - 1) / s + 1;
}

/* n, c, ih, iw, kh, kw, stride, pad, dil: stride, padding and dilation the
 * same along both axes */
static void run_case(const int64_t *r, bool bias, bool res, int act, int64_t extra_ld)
{
    tgk_conv_nhwc_desc d = {.n = r[0], .c = r[1], .k = r[1], .groups = r[1],
                            .in = {r[2], r[3]}, .kernel = {r[4], r[5]}, .stride = {r[6], r[6]},
                            .pad = {r[7], r[7]}, .dil = {r[8], r[8]}, .relu = act == A_RELU,
                            .act = acts[act]};
    for (int i = 0; i < 2; i++)
        d.out[i] = out_size(d.in[i], d.kernel[i], d.stride[i], d.pad[i], d.dil[i]);
    int64_t c = d.c, taps = d.kernel[0] * d.kernel[1], ldy = c + extra_ld;
    int64_t npix = d.n * d.out[0] * d.out[1], ny = npix * ldy;
    d.y_ld = extra_ld ? ldy : 0;
    float *x = kc_rand(d.n * d.in[0] * d.in[1] * c, -1, 1), *w = kc_rand(c * taps, -1, 1);
    float *b = bias ? kc_rand(c, -1, 1) : NULL, *rs = res ? kc_rand(npix * c, -1, 1) : NULL;
    float *wp = kc_out(tgk_conv_nhwc_packed_size(c, c, c, d.kernel[0], d.kernel[1]));
    float *y = kc_out(ny);
    double *ref = kc_ref(npix * c);
    d.res = rs;
    tgk_pack_conv_nhwc_f32(w, c, c, c, d.kernel[0], d.kernel[1], wp);
    for (int64_t i = 0; i < d.n; i++)
        for (int64_t oy = 0; oy < d.out[0]; oy++)
            for (int64_t ox = 0; ox < d.out[1]; ox++)
                for (int64_t ch = 0; ch < c; ch++) {
                    double s = b ? b[ch] : 0;
                    for (int64_t a = 0; a < d.kernel[0]; a++)
                        for (int64_t e = 0; e < d.kernel[1]; e++) {
                            int64_t yy = oy * d.stride[0] - d.pad[0] + a * d.dil[0];
                            int64_t xx = ox * d.stride[1] - d.pad[1] + e * d.dil[1];
                            if (yy >= 0 && yy < d.in[0] && xx >= 0 && xx < d.in[1])
                                s += (double)x[((i * d.in[0] + yy) * d.in[1] + xx) * c + ch] *
                                     w[ch * taps + a * d.kernel[1] + e];
                        }
                    int64_t p = (i * d.out[0] + oy) * d.out[1] + ox;
                    ref[p * c + ch] = act_ref(act, s + (rs ? rs[p * c + ch] : 0));
                }
    CHECK(tgk_conv_dw_nhwc_f32(&d, x, wp, b, y) == 0);
    /* the slice's columns, gathered; those between must be untouched */
    float *got = kc_out(npix * c);
    bool gaps = true;
    for (int64_t p = 0; p < npix; p++) {
        memcpy(got + p * c, y + p * ldy, sizeof(float) * (size_t)c);
        for (int64_t e = c; e < ldy; e++)
            gaps = gaps && y[p * ldy + e] != y[p * ldy + e];
    }
    KC_EXPECT(kc_norm_err(got, ref, npix * c), 1e-5,
              "dw nhwc n=%lld c=%lld in=%lldx%lld k=%lldx%lld s=%lld p=%lld dil=%lld bias=%d "
              "res=%d act=%d ld+%lld", (long long)d.n, (long long)c, (long long)d.in[0],
              (long long)d.in[1], (long long)d.kernel[0], (long long)d.kernel[1],
              (long long)d.stride[0], (long long)d.pad[0], (long long)d.dil[0], bias, res, act,
              (long long)extra_ld);
    CHECK(gaps);
    CHECK(kc_guard_ok(y, ny));
    free(x), free(w), free(b), free(rs), free(wp), free(y), free(ref), free(got);
}

int main(void)
{
    unit_seed("test_conv_dw_nhwc");
    /* the mobile nets' layers, shrunk where they are large, and odd ones */
    static const int64_t cases[][9] = {
        {2, 32, 16, 16, 3, 3, 1, 1, 1},  {1, 144, 14, 14, 3, 3, 2, 1, 1},
        {2, 72, 9, 9, 5, 5, 2, 2, 1},    {1, 120, 7, 7, 5, 5, 1, 2, 1},
        {2, 200, 4, 4, 3, 3, 1, 1, 1},   {1, 184, 4, 4, 3, 3, 1, 1, 1},
        {1, 960, 7, 7, 5, 5, 1, 2, 1},   {2, 16, 8, 8, 5, 5, 2, 2, 1},
        {1, 3, 5, 7, 3, 3, 1, 1, 1},     {1, 17, 13, 11, 3, 3, 2, 0, 1},
        {3, 40, 10, 9, 3, 3, 1, 2, 2},   {1, 33, 12, 19, 5, 5, 1, 4, 2},
        {1, 48, 2, 3, 5, 5, 1, 2, 1},    {1, 7, 1, 1, 3, 3, 1, 1, 1},
        {1, 24, 6, 25, 3, 5, 2, 1, 1},   {1, 96, 21, 21, 3, 3, 1, 1, 1},
        {2, 80, 3, 30, 1, 7, 1, 3, 1},   {1, 65, 9, 9, 2, 2, 2, 0, 1},
    };
    static const char *const isas[] = {"base", "avx2", "avx512"};
    int64_t n = sizeof cases / sizeof *cases;
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int isa = 0; isa < 3; isa++) {
            if (!tgk_conv_dw_nhwc_isa(isas[isa]))
                continue;
            for (int64_t i = 0; i < n; i++) {
                run_case(cases[i], true, false, A_NONE, 0);
                run_case(cases[i], kc_int(0, 1), kc_int(0, 1), (int)kc_int(0, A_COUNT - 1),
                         kc_int(0, 1) * kc_int(1, 40));
            }
            for (int r = 0; r < 40; r++) {   /* random geometry */
                int64_t k = kc_int(1, 5), dil = kc_int(1, 2), in = kc_int(1, 12);
                int64_t rc[9] = {kc_int(1, 2), kc_int(1, 70), in, kc_int(1, 12), k, kc_int(1, 5),
                                 kc_int(1, 3), kc_int(0, 3), dil};
                if (rc[2] + 2 * rc[7] < dil * (k - 1) + 1 || rc[3] + 2 * rc[7] < dil * (rc[5] - 1) + 1)
                    continue;
                run_case(rc, kc_int(0, 1), kc_int(0, 1), (int)kc_int(0, A_COUNT - 1),
                         kc_int(0, 1) * kc_int(1, 20));
            }
        }
    }
    CHECK(tgk_conv_dw_nhwc_isa(NULL));
    return unit_report();
}
