/* Resize against float64 references written from the definitions (ONNX
 * Resize, PyTorch's upsample kernels): every mode, coordinate rule and
 * nearest rounding, 1-D and 2-D, sizes up and down, with and without
 * explicit scales, cubic with exclude_outside. The source coordinate is
 * taken as the op defines it (float arithmetic, so that nearest picks the
 * same index at ties); taps, clamping and weights (Keys' kernel as a
 * function of distance) are computed here in double.
 * Antialiased shrinking and tf_crop_and_resize against ONNX's reference
 * algorithm (neighbors found by sorting, weights in double).
 * Tolerance: |err| <= 1e-6 (|ref| + 1), 1e-5 for the ONNX cases, inputs in
 * [-5, 5); nearest is exact. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

static double coord(const tgk_resize_desc *d, int ax, int64_t o)
{
    int64_t in = d->in[ax], out = d->out[ax];
    float r = d->scale[ax] > 0 ? (float)(1.0 / d->scale[ax]) : (float)in / (float)out;
    float c = (float)o + 0.5f;
    switch (d->coord) {
    case TGK_COORD_ALIGN_CORNERS: {   /* with a scale, ONNX's unfloored length in * scale */
        float len = d->scale[ax] > 0 ? (float)((double)in * d->scale[ax]) : (float)out;
        return out > 1 ? (float)(in - 1) / (len - 1) * (float)o : 0.0f;
    }
    case TGK_COORD_PYTORCH_HALF_PIXEL: return out > 1 ? r * c - 0.5f : 0.0f;
    case TGK_COORD_ASYMMETRIC: return r * (float)o;
    case TGK_COORD_TF_HALF_PIXEL_FOR_NN: return r * c;
    case TGK_COORD_HALF_PIXEL_SYMMETRIC:
        return (float)in / 2 * (1 - (float)out * r / (float)in) + r * c - 0.5f;
    default: return r * c - 0.5f;
    }
}

static int64_t clampi(int64_t i, int64_t n)
{
    return i < 0 ? 0 : i >= n ? n - 1 : i;
}

static double keys(double t, double a)
{
    t = fabs(t);
    return t <= 1 ? ((a + 2) * t - (a + 3)) * t * t + 1
         : t < 2 ? a * t * t * t - 5 * a * t * t + 8 * a * t - 4 * a : 0;
}

/* taps (index, weight) of output o along axis ax; the count */
static int taps(const tgk_resize_desc *d, int ax, int64_t o, int64_t *idx, double *w)
{
    int64_t in = d->in[ax];
    double s = coord(d, ax, o), f = floor(s);
    if (d->mode == TGK_RESIZE_NEAREST) {
        double r = d->nearest == TGK_NEAREST_FLOOR ? f
                 : d->nearest == TGK_NEAREST_CEIL ? ceil(s)
                 : s - f == 0.5 ? (d->nearest == TGK_NEAREST_ROUND_PREFER_CEIL ? f + 1 : f)
                 : floor(s + 0.5);
        idx[0] = clampi((int64_t)r, in);
        w[0] = 1;
        return 1;
    }
    if (d->mode == TGK_RESIZE_LINEAR) {
        s = s < 0 ? 0 : s;
        f = floor(s);
        idx[0] = clampi((int64_t)f, in);
        idx[1] = clampi((int64_t)f + 1, in);
        w[0] = 1 - (s - f);
        w[1] = s - f;
        return 2;
    }
    double sum = 0;
    for (int t = 0; t < 4; t++) {
        int64_t i = (int64_t)f - 1 + t;
        w[t] = d->exclude_outside && (i < 0 || i >= in) ? 0 : keys(s - (double)i, d->cubic_a);
        idx[t] = clampi(i, in);
        sum += w[t];
    }
    for (int t = 0; d->exclude_outside && t < 4; t++)
        w[t] /= sum;
    return 4;
}

static void reference(const tgk_resize_desc *d, const float *x, double *y)
{
    tgk_resize_desc e = *d;
    if (d->nsp == 1) {      /* 1-D as a height of 1 */
        e.in[1] = d->in[0], e.out[1] = d->out[0], e.scale[1] = d->scale[0];
        e.in[0] = e.out[0] = 1, e.scale[0] = 0;
    }
    for (int64_t p = 0; p < d->nc; p++)
        for (int64_t oy = 0; oy < e.out[0]; oy++)
            for (int64_t ox = 0; ox < e.out[1]; ox++) {
                int64_t iy[4], ix[4];
                double wy[4], wx[4], acc = 0;
                int ny = d->nsp == 1 ? (iy[0] = 0, wy[0] = 1, 1) : taps(&e, 0, oy, iy, wy);
                int nx = taps(&e, 1, ox, ix, wx);
                for (int a = 0; a < ny; a++)
                    for (int b = 0; b < nx; b++)
                        acc += wy[a] * wx[b] * x[(p * e.in[0] + iy[a]) * e.in[1] + ix[b]];
                y[(p * e.out[0] + oy) * e.out[1] + ox] = acc;
            }
}

/* ONNX's reference (onnx.reference's Resize) for one axis: its source
 * coordinate in double, weights of the ratio in (0, 1], the n nearest indices
 * of the edge-padded input found by sorting. Returns the tap count. */
static int onnx_taps(const tgk_resize_desc *d, int ax, int64_t o, int64_t *idx, double *w, bool *outside)
{
    double in = (double)d->in[ax], sc = d->scale[ax] > 0 ? d->scale[ax] : (double)d->out[ax] / in;
    double len = sc * in, x;
    if (d->coord == TGK_COORD_TF_CROP_AND_RESIZE) {
        double r0 = d->roi[ax][0], r1 = d->roi[ax][1];
        x = (len == 1 ? (r1 - r0) * (in - 1) / 2 : (double)o * (r1 - r0) * (in - 1) / (len - 1)) + r0 * (in - 1);
    } else {
        x = ((double)o + 0.5) / sc - 0.5;   /* half_pixel */
    }
    *outside = d->coord == TGK_COORD_TF_CROP_AND_RESIZE && (x < 0 || x > in - 1);
    double ratio = x == floor(x) ? 1 : x - floor(x), s = sc < 1 && d->antialias ? sc : 1, sum = 0;
    int lin = d->mode == TGK_RESIZE_LINEAR, start = (int)floor((lin ? -1.0 : -2.0) / s) + 1, n = 2 - 2 * start;
    for (int t = 0; t < n; t++) {
        double v = s * ((double)(start + t) - ratio);
        w[t] = lin ? fmax(0, fmin(1, 1 - fabs(v))) : keys(v, d->cubic_a);
        sum += w[t];
    }
    int pad = (n + 1) / 2, limit = (int)d->in[ax] + 2 * pad;
    bool used[256] = {0};
    for (int t = 0; t < n; t++) {       /* the n nearest to x + pad, ties to the lower */
        int best = -1;
        for (int i = 0; i < limit; i++)
            if (!used[i] && (best < 0 || fabs(x + pad - i) < fabs(x + pad - best))) best = i;
        used[best] = true;
    }
    for (int i = 0, t = 0; i < limit; i++)
        if (used[i]) idx[t] = clampi(i - pad, d->in[ax]), w[t] /= sum, t++;
    return n;
}

static void run_onnx_case(tgk_resize_mode mode, bool crop)
{
    tgk_resize_desc d = {.nsp = 2, .nc = kc_int(1, 4), .mode = mode, .cubic_a = -0.75f,
                         .coord = crop ? TGK_COORD_TF_CROP_AND_RESIZE : TGK_COORD_HALF_PIXEL,
                         .antialias = !crop, .extrapolation = (float)unit_uniform(-3, 3)};
    for (int i = 0; i < 2; i++) {
        d.in[i] = kc_int(2, 20);
        d.out[i] = crop ? kc_int(1, 12) : kc_int(1, (int)d.in[i]);
        d.roi[i][0] = unit_uniform(-0.3, 0.6);
        d.roi[i][1] = unit_uniform(0.4, 1.3);
    }
    int64_t isp = d.in[0] * d.in[1], osp = d.out[0] * d.out[1];
    float *x = kc_rand(d.nc * isp, -5, 5), *y = kc_out(d.nc * osp);
    double *ref = kc_ref(d.nc * osp);
    for (int64_t p = 0; p < d.nc; p++)
        for (int64_t oy = 0; oy < d.out[0]; oy++)
            for (int64_t ox = 0; ox < d.out[1]; ox++) {
                int64_t iy[128], ix[128];
                double wy[128], wx[128], acc = 0;
                bool oh, ow;
                int ny = onnx_taps(&d, 0, oy, iy, wy, &oh), nx = onnx_taps(&d, 1, ox, ix, wx, &ow);
                for (int a = 0; a < ny; a++)
                    for (int b = 0; b < nx; b++)
                        acc += wy[a] * wx[b] * x[(p * d.in[0] + iy[a]) * d.in[1] + ix[b]];
                ref[(p * d.out[0] + oy) * d.out[1] + ox] = oh || ow ? d.extrapolation : acc;
            }
    CHECK(tgk_resize_f32(&d, x, y) == 0);
    KC_EXPECT(kc_rel_err(y, ref, d.nc * osp, 1.0), 1e-5, "resize onnx mode=%d crop=%d in=%lld,%lld out=%lld,%lld",
              mode, crop, (long long)d.in[0], (long long)d.in[1], (long long)d.out[0], (long long)d.out[1]);
    CHECK(kc_guard_ok(y, d.nc * osp));
    free(x), free(y), free(ref);
}

static void run_case(int nsp, tgk_resize_mode mode, tgk_resize_coord coord, bool scaled)
{
    tgk_resize_desc d = {.nsp = nsp, .nc = kc_int(1, 6), .mode = mode, .coord = coord,
                         .nearest = (tgk_resize_nearest)kc_int(0, 3),
                         .cubic_a = kc_int(0, 1) ? -0.75f : -0.5f,
                         .exclude_outside = kc_int(0, 1)};
    int64_t isp = 1, osp = 1;
    for (int i = 0; i < nsp; i++) {
        d.in[i] = kc_int(1, 9);
        if (scaled) {           /* ONNX: out = floor(in * scale), the scale maps coordinates */
            d.scale[i] = unit_uniform(0.3, 3.5);
            d.out[i] = (int64_t)((double)d.in[i] * d.scale[i]);
            d.out[i] = d.out[i] < 1 ? 1 : d.out[i];
        } else {
            d.out[i] = kc_int(1, 13);
        }
        isp *= d.in[i];
        osp *= d.out[i];
    }
    float *x = kc_rand(d.nc * isp, -5, 5), *y = kc_out(d.nc * osp);
    double *ref = kc_ref(d.nc * osp);
    reference(&d, x, ref);
    CHECK(tgk_resize_f32(&d, x, y) == 0);
    KC_EXPECT(kc_rel_err(y, ref, d.nc * osp, 1.0), mode == TGK_RESIZE_NEAREST ? 0 : 1e-6,
              "resize nsp=%d mode=%d coord=%d nearest=%d in=%lld,%lld out=%lld,%lld "
              "scale=%g,%g a=%g exclude=%d", nsp, mode, coord, d.nearest, (long long)d.in[0],
              (long long)d.in[1], (long long)d.out[0], (long long)d.out[1], d.scale[0],
              d.scale[1], d.cubic_a, d.exclude_outside);
    CHECK(kc_guard_ok(y, d.nc * osp));
    free(x), free(y), free(ref);
}

int main(void)
{
    unit_seed("test_resize");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int r = 0; r < 8; r++)
            for (int m = 0; m < 3; m++)
                for (int c = 0; c <= TGK_COORD_HALF_PIXEL_SYMMETRIC; c++)
                    run_case(1 + r % 2, (tgk_resize_mode)m, (tgk_resize_coord)c, r % 4 >= 2);
    }
    /* ONNX's antialiased shrinking (linear, cubic) and tf_crop_and_resize (linear) */
    for (int r = 0; r < 12; r++) {
        run_onnx_case(r % 2 ? TGK_RESIZE_CUBIC : TGK_RESIZE_LINEAR, false);
        run_onnx_case(TGK_RESIZE_LINEAR, true);
    }
    /* an empty input resized to something is refused; empty outputs are fine */
    tgk_resize_desc bad = {.nsp = 1, .nc = 1, .in = {0}, .out = {3}};
    float y[3];
    CHECK(tgk_resize_f32(&bad, y, y) == -1);
    tgk_resize_desc none = {.nsp = 2, .nc = 2, .in = {3, 3}, .out = {0, 4}};
    CHECK(tgk_resize_f32(&none, y, y) == 0);
    return unit_report();
}
