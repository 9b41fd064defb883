/* Max, average and adaptive average pooling against float64 references written
 * the way PyTorch's CPU kernels compute their windows: 1-D and 2-D, padding,
 * dilation (max), ceil-mode output sizes, count_include_pad; channels first
 * and channels last (the reference on the input transposed to channels
 * first, up to 150 channels: blocks of 64 and what is left).
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

/* x [n, sp, c] -> [n, c, sp] (back: sp and c swapped) */
static float *to_planes(const float *x, int64_t n, int64_t sp, int64_t c)
{
    float *t = kc_out(n * sp * c);
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < sp; p++)
            for (int64_t ch = 0; ch < c; ch++)
                t[(i * c + ch) * sp + p] = x[(i * sp + p) * c + ch];
    return t;
}

static double *ref_to_last(double *r, int64_t n, int64_t c, int64_t sp)
{
    double *t = kc_ref(n * sp * c);
    for (int64_t i = 0; i < n; i++)
        for (int64_t p = 0; p < sp; p++)
            for (int64_t ch = 0; ch < c; ch++)
                t[(i * sp + p) * c + ch] = r[(i * c + ch) * sp + p];
    free(r);
    return t;
}

static void run_case(int nsp, bool max, bool last)
{
    tgk_pool_desc d = {.nsp = nsp, .n = kc_int(1, 2), .c = last ? kc_int(1, 150) : kc_int(1, 5),
                       .count_include_pad = kc_int(0, 1), .channels_last = last};
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
    if (last) {
        float *planes = to_planes(x, d.n, isp, d.c);
        reference(&d, planes, ref, max);
        ref = ref_to_last(ref, d.n, d.c, osp);
        free(planes);
    } else {
        reference(&d, x, ref, max);
    }
    (max ? tgk_max_pool_f32 : tgk_avg_pool_f32)(&d, x, y);
    KC_EXPECT(kc_rel_err(y, ref, d.n * d.c * osp, 1.0), 1e-6,
              "%s pool%s nsp=%d c=%lld in=%lld,%lld k=%lld,%lld s=%lld,%lld p=%lld,%lld "
              "dil=%lld,%lld include_pad=%d ceil=%d", max ? "max" : "avg",
              last ? " channels last" : "", nsp, (long long)d.c, (long long)d.in[0],
              (long long)d.in[1], (long long)d.kernel[0], (long long)d.kernel[1],
              (long long)d.stride[0], (long long)d.stride[1], (long long)d.pad[0],
              (long long)d.pad[1], (long long)d.dil[0], (long long)d.dil[1],
              d.count_include_pad, ceil_mode);
    CHECK(kc_guard_ok(y, d.n * d.c * osp));
    free(x), free(y), free(ref);
}

/* last: nc is n * c, x [n, ih, iw, c] (c = nc / n) */
static void run_adaptive(int64_t nc, int64_t ih, int64_t iw, int64_t oh, int64_t ow, int64_t n,
                         bool last, double lo, double hi)
{
    float *xin = kc_rand(nc * ih * iw, lo, hi), *y = kc_out(nc * oh * ow);
    float *x = last ? to_planes(xin, n, ih * iw, nc / n) : xin;
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
    if (last) {
        ref = ref_to_last(ref, n, nc / n, oh * ow);
        tgk_adaptive_avg_pool_nhwc_f32(n, nc / n, ih, iw, oh, ow, xin, y);
        free(x);
    } else {
        tgk_adaptive_avg_pool_f32(nc, ih, iw, oh, ow, x, y);
    }
    KC_EXPECT(kc_rel_err(y, ref, nc * oh * ow, 1.0), 1e-6,
              "adaptive%s c=%lld %lldx%lld -> %lldx%lld", last ? " channels last" : "",
              (long long)(nc / n), (long long)ih, (long long)iw, (long long)oh, (long long)ow);
    CHECK(kc_guard_ok(y, nc * oh * ow));
    free(xin), free(y), free(ref);
}

int main(void)
{
    unit_seed("test_pool");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int r = 0; r < 150; r++) {
            run_case(1 + r % 2, true, false);
            run_case(1 + r % 2, false, false);
            run_case(1 + r % 2, true, true);
            run_case(1 + r % 2, false, true);
        }
        for (int last = 0; last <= 1; last++) {
            run_adaptive(3, 7, 7, 1, 1, 1, last, -5, 5);
            run_adaptive(2, 10, 13, 3, 4, 2, last, -5, 5);
            /* output larger than input: overlapping bins */
            run_adaptive(5, 5, 6, 7, 9, 1, last, -5, 5);
            run_adaptive(64, 14, 14, 6, 6, 2, last, -5, 5);
            /* global pools as SE blocks and heads have them: 2 images of
             * c channels (blocks of 64 and a rest), large positive planes */
            run_adaptive(2 * 72, 56, 56, 1, 1, 2, last, 0, 6);
            run_adaptive(2 * 32, 112, 112, 1, 1, 2, last, 0, 6);
            run_adaptive(2 * 1280, 7, 7, 1, 1, 2, last, -5, 5);
            run_adaptive(2 * 19, 9, 11, 1, 1, 2, last, -5, 5);
            run_adaptive(3 * 67, 11, 9, 2, 3, 3, last, -5, 5);
        }
    }
    return unit_report();
}
