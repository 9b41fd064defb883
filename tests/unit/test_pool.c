/* Max, average and adaptive average pooling against float64 references written
 * the way PyTorch's CPU kernels compute their windows: 1-D and 2-D, padding,
 * dilation (max), ceil-mode output sizes, count_include_pad.
 * Tolerance: |err| <= 1e-6 (|ref| + 1), inputs in [-5, 5) (max is exact). */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

static int64_t out_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t dil, bool ceil_mode)
{
    int64_t num = in + 2 * p - dil * (k - 1) - 1;
    int64_t o = (ceil_mode ? (num + s - 1) / s : num / s) + 1;
    if (ceil_mode && (o - 1) * s >= in + p) /* last window must start inside */
        o--;
    return o;
}

static void reference(const tgk_pool_desc *d, const float *x, double *y, bool max)
{
    int64_t ih = d->nsp == 2 ? d->in[0] : 1, iw = d->in[d->nsp - 1];
    int64_t oh = d->nsp == 2 ? d->out[0] : 1, ow = d->out[d->nsp - 1];
    int a = d->nsp == 2 ? 0 : -1;
    int64_t kh = a ? 1 : d->kernel[0], kw = d->kernel[a + 1], sh = a ? 1 : d->stride[0];
    int64_t sw = d->stride[a + 1], ph = a ? 0 : d->pad[0], pw = d->pad[a + 1];
    int64_t dh = a ? 1 : d->dil[0], dw = d->dil[a + 1];
    for (int64_t p = 0; p < d->n * d->c; p++)
        for (int64_t oy = 0; oy < oh; oy++)
            for (int64_t ox = 0; ox < ow; ox++) {
                double acc = max ? -INFINITY : 0;
                int64_t hs = oy * sh - ph, ws = ox * sw - pw;
                if (max) {
                    for (int64_t i = 0; i < kh; i++)
                        for (int64_t j = 0; j < kw; j++) {
                            int64_t yy = hs + i * dh, xx = ws + j * dw;
                            if (yy >= 0 && yy < ih && xx >= 0 && xx < iw)
                                acc = fmax(acc, x[(p * ih + yy) * iw + xx]);
                        }
                } else {
                    /* PyTorch avg_pool2d: pool_size before clipping to the input */
                    int64_t he = hs + kh < ih + ph ? hs + kh : ih + ph;
                    int64_t we = ws + kw < iw + pw ? ws + kw : iw + pw;
                    int64_t pool_size = (he - hs) * (we - ws);
                    int64_t h0 = hs > 0 ? hs : 0, w0 = ws > 0 ? ws : 0;
                    he = he < ih ? he : ih;
                    we = we < iw ? we : iw;
                    for (int64_t yy = h0; yy < he; yy++)
                        for (int64_t xx = w0; xx < we; xx++)
                            acc += x[(p * ih + yy) * iw + xx];
                    acc /= d->count_include_pad ? pool_size : (he - h0) * (we - w0);
                }
                y[(p * oh + oy) * ow + ox] = acc;
            }
}

static void run_case(int nsp, bool max)
{
    tgk_pool_desc d = {.nsp = nsp, .n = kc_int(1, 2), .c = kc_int(1, 5),
                       .count_include_pad = kc_int(0, 1)};
    bool ceil_mode = kc_int(0, 1);
    for (int i = 0; i < nsp; i++) {
        d.kernel[i] = kc_int(1, 4);
        d.stride[i] = kc_int(1, 3);
        d.pad[i] = kc_int(0, d.kernel[i] / 2);
        d.dil[i] = max ? kc_int(1, 2) : 1;
        d.in[i] = kc_int(d.dil[i] * (d.kernel[i] - 1) + 1, 17);
        d.out[i] = out_size(d.in[i], d.kernel[i], d.stride[i], d.pad[i], d.dil[i], ceil_mode);
    }
    int64_t isp = d.in[0] * (nsp == 2 ? d.in[1] : 1), osp = d.out[0] * (nsp == 2 ? d.out[1] : 1);
    float *x = kc_rand(d.n * d.c * isp, -5, 5), *y = kc_out(d.n * d.c * osp);
    double *ref = kc_ref(d.n * d.c * osp);
    reference(&d, x, ref, max);
    (max ? tgk_max_pool_f32 : tgk_avg_pool_f32)(&d, x, y);
    KC_EXPECT(kc_rel_err(y, ref, d.n * d.c * osp, 1.0), 1e-6,
              "%s pool nsp=%d in=%lld,%lld k=%lld,%lld s=%lld,%lld p=%lld,%lld dil=%lld,%lld "
              "include_pad=%d ceil=%d", max ? "max" : "avg", nsp, (long long)d.in[0],
              (long long)d.in[1], (long long)d.kernel[0], (long long)d.kernel[1],
              (long long)d.stride[0], (long long)d.stride[1], (long long)d.pad[0],
              (long long)d.pad[1], (long long)d.dil[0], (long long)d.dil[1],
              d.count_include_pad, ceil_mode);
    CHECK(kc_guard_ok(y, d.n * d.c * osp));
    free(x), free(y), free(ref);
}

static void run_adaptive(int64_t nc, int64_t ih, int64_t iw, int64_t oh, int64_t ow)
{
    float *x = kc_rand(nc * ih * iw, -5, 5), *y = kc_out(nc * oh * ow);
    double *ref = kc_ref(nc * oh * ow);
    for (int64_t p = 0; p < nc; p++)
        for (int64_t a = 0; a < oh; a++)
            for (int64_t b = 0; b < ow; b++) {
                int64_t h0 = (int64_t)floor((double)a * ih / oh), h1 = (int64_t)ceil((double)(a + 1) * ih / oh);
                int64_t w0 = (int64_t)floor((double)b * iw / ow), w1 = (int64_t)ceil((double)(b + 1) * iw / ow);
                double s = 0;
                for (int64_t i = h0; i < h1; i++)
                    for (int64_t j = w0; j < w1; j++)
                        s += x[(p * ih + i) * iw + j];
                ref[(p * oh + a) * ow + b] = s / (double)((h1 - h0) * (w1 - w0));
            }
    tgk_adaptive_avg_pool_f32(nc, ih, iw, oh, ow, x, y);
    KC_EXPECT(kc_rel_err(y, ref, nc * oh * ow, 1.0), 1e-6, "adaptive %lldx%lld -> %lldx%lld",
              (long long)ih, (long long)iw, (long long)oh, (long long)ow);
    CHECK(kc_guard_ok(y, nc * oh * ow));
    free(x), free(y), free(ref);
}

int main(void)
{
    unit_seed("test_pool");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int r = 0; r < 150; r++) {
            run_case(1 + r % 2, true);
            run_case(1 + r % 2, false);
        }
        run_adaptive(3, 7, 7, 1, 1);
        run_adaptive(2, 10, 13, 3, 4);
        run_adaptive(5, 5, 6, 7, 9); /* output larger than input: overlapping bins */
        run_adaptive(64, 14, 14, 6, 6);
    }
    return unit_report();
}
