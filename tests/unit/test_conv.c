/* tgk_conv_f32 against a float64 direct convolution on fresh random inputs:
 * 1-, 2- and 3-D; stride, padding, dilation; groups and depthwise (strides
 * 1-3, dilation, multipliers, planes smaller than a vector, with each
 * instruction set's vectors the CPU runs); transposed
 * with output padding; pointwise, im2col's panels and stride 1's implicit
 * im2col (every register tile, tails of panels and rows, groups, strides,
 * dilation, batches of padded images); batches large enough to run images on different threads; the
 * direct path for small dense convolutions (c x taps <= 256), stride 1
 * and strided, in both of its ways of splitting work and with every tail of
 * its tiles; patch convolutions (kernel == stride, no padding). Every case
 * again with y_stride (each image's y a part of a wider result, as a concat
 * written in place): bit-identical to the contiguous y, nothing else written.
 * Tolerance: max error over the largest magnitude of the summed terms 1e-5
 * (x 1 + terms/1000). */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

#include <string.h>

#define TOL 1e-5

/* dims padded to 3 (leading 1s), like the shapes below */
typedef struct {
    tgk_conv_desc d;
    int64_t in[3], out[3], ker[3], str[3], pad[3], dil[3];
    bool res, hardswish, relu6; /* the epilogue: a residual added, then hardswish or relu6 */
} ccase;

static double hardswish(double v)
{
    return v * fmin(fmax(v + 3, 0), 6) / 6;
}

static int64_t prod3(const int64_t *v)
{
    return v[0] * v[1] * v[2];
}

/* y, and in mag the sum of the magnitudes of y's terms (what rounding scales with) */
static void reference(const ccase *c, const float *x, const float *w, const float *b, double *y,
                      double *mag)
{
    const tgk_conv_desc *d = &c->d;
    int64_t cg = d->c / d->groups, kg = d->k / d->groups;
    int64_t isp = prod3(c->in), osp = prod3(c->out), kp = prod3(c->ker);
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t k = 0; k < d->k; k++)
            for (int64_t o = 0; o < osp; o++) {
                y[(n * d->k + k) * osp + o] = b ? b[k] : 0;
                mag[(n * d->k + k) * osp + o] = b ? fabs(b[k]) : 0;
            }
    for (int64_t n = 0; n < d->n; n++)
        for (int64_t g = 0; g < d->groups; g++)
            for (int64_t ci = 0; ci < cg; ci++)
                for (int64_t ko = 0; ko < kg; ko++)
                    for (int64_t t = 0; t < kp; t++) {
                        int64_t kk[3] = {t / (c->ker[1] * c->ker[2]), t / c->ker[2] % c->ker[1], t % c->ker[2]};
                        /* forward: y[o] += x[o*s - p + kk*dil]; transposed: y[i*s - p + kk*dil] += x[i] */
                        int64_t ch_in = g * cg + ci, ch_out = g * kg + ko;
                        double wv = d->transposed ? w[(ch_in * kg + ko) * kp + t] : w[(ch_out * cg + ci) * kp + t];
                        const int64_t *src = d->transposed ? c->in : c->out;
                        const int64_t *dst = d->transposed ? c->out : c->in;
                        for (int64_t p = 0; p < prod3(src); p++) {
                            int64_t pos[3] = {p / (src[1] * src[2]), p / src[2] % src[1], p % src[2]}, q = 0;
                            int ok = 1;
                            for (int a = 0; a < 3; a++) {
                                int64_t v = pos[a] * c->str[a] - c->pad[a] + kk[a] * c->dil[a];
                                ok &= v >= 0 && v < dst[a];
                                q = q * dst[a] + v;
                            }
                            if (!ok)
                                continue;
                            int64_t yi = (n * d->k + ch_out) * osp + (d->transposed ? q : p);
                            double term = wv * x[(n * d->c + ch_in) * isp + (d->transposed ? p : q)];
                            y[yi] += term;
                            mag[yi] += fabs(term);
                        }
                    }
}

/* Fill the descriptor from padded-3 geometry; returns 0 if output would be empty. */
static int ccase_finish(ccase *c, int nsp, int64_t outpad)
{
    tgk_conv_desc *d = &c->d;
    d->nsp = nsp;
    for (int a = 0; a < 3; a++) {
        int64_t span = c->dil[a] * (c->ker[a] - 1) + 1;
        c->out[a] = d->transposed ? (c->in[a] - 1) * c->str[a] - 2 * c->pad[a] + span + (a >= 3 - nsp ? outpad : 0)
                                  : (c->in[a] + 2 * c->pad[a] - span) / c->str[a] + 1;
        if (c->out[a] < 1 || (!d->transposed && c->in[a] + 2 * c->pad[a] < span))
            return 0;
    }
    for (int i = 0; i < nsp; i++) {
        int a = 3 - nsp + i;
        d->in[i] = c->in[a];
        d->out[i] = c->out[a];
        d->kernel[i] = c->ker[a];
        d->stride[i] = c->str[a];
        d->pad[i] = c->pad[a];
        d->dil[i] = c->dil[a];
    }
    return 1;
}

/* ref and mag of [planes, oh, ow] pooled in place to [planes, oh / P, ow / P]:
 * each window's max (NaN: none here) and its largest magnitude */
static int64_t pool_ref(double *ref, double *mag, int64_t planes, int64_t oh, int64_t ow,
                        int64_t P)
{
    int64_t ph = oh / P, pw = ow / P, o = 0;
    for (int64_t p = 0; p < planes; p++)
        for (int64_t r = 0; r < ph; r++)
            for (int64_t q = 0; q < pw; q++, o++) {
                double m = -INFINITY, g = 0;
                for (int64_t a = 0; a < P; a++)
                    for (int64_t b = 0; b < P; b++) {
                        int64_t i = (p * oh + r * P + a) * ow + q * P + b;
                        m = ref[i] > m ? ref[i] : m;
                        g = mag[i] > g ? mag[i] : g;
                    }
                ref[o] = m, mag[o] = g;
            }
    return o;
}

/* The case again with every image's y a part of a wider result (y_stride:
 * a concat along the channels written in place; res stays contiguous),
 * lead floats into a buffer of sentinels: each part bit-identical to the
 * contiguous run's y (ny floats), every float around the parts untouched. */
static void strided_again(const ccase *c, const float *x, const float *w, const float *b,
                          const float *y, int64_t ny)
{
    tgk_conv_desc d = c->d;
    int64_t image = ny / d.n, lead = kc_int(0, 33);
    d.y_stride = image + kc_int(1, 40);
    int64_t total = lead + d.n * d.y_stride, bad = 0;
    float *z = malloc((size_t)total * sizeof *z), mark = -12345.5f;
    CHECK(z != NULL);
    for (int64_t i = 0; i < total; i++)
        z[i] = mark;
    CHECK(tgk_conv_f32(&d, x, w, b, z + lead) == 0);
    for (int64_t i = 0; i < total; i++) {
        int64_t k = i - lead, in = k >= 0 && k % d.y_stride < image;
        const float *want = in ? &y[k / d.y_stride * image + k % d.y_stride] : &mark;
        bad += memcmp(&z[i], want, sizeof *z) != 0;
    }
    if (bad)
        fprintf(stderr, "y_stride %lld (image %lld, lead %lld): %lld floats differ\n",
                (long long)d.y_stride, (long long)image, (long long)lead, (long long)bad);
    CHECK(bad == 0);
    free(z);
}

static void run_case(ccase *c, bool with_bias)
{
    const tgk_conv_desc *d = &c->d;
    int64_t kp = prod3(c->ker);
    int64_t nx = d->n * d->c * prod3(c->in), ny = d->n * d->k * prod3(c->out);
    int64_t nw = d->transposed ? d->c * (d->k / d->groups) * kp : d->k * (d->c / d->groups) * kp;
    float *x = kc_rand(nx, -1, 1), *w = kc_rand(nw, -1, 1);
    int64_t P = d->pool > 1 ? d->pool : 1, nyp = d->n * d->k * prod3(c->out) / c->out[1] /
                                                    c->out[2] * (c->out[1] / P) * (c->out[2] / P);
    float *b = with_bias ? kc_rand(d->k, -1, 1) : NULL, *y = kc_out(nyp);
    double *ref = kc_ref(ny), *mag = kc_ref(ny);
    reference(c, x, w, b, ref, mag);
    float *res = c->res ? kc_rand(ny, -1, 1) : NULL;
    for (int64_t i = 0; res && i < ny; i++)
        ref[i] += res[i], mag[i] += fabs(res[i]);
    for (int64_t i = 0; d->relu && i < ny; i++)     /* with res, relu(y + res) */
        ref[i] = ref[i] < 0 ? 0 : ref[i];
    for (int64_t i = 0; c->hardswish && i < ny; i++)
        ref[i] = hardswish(ref[i]);
    for (int64_t i = 0; c->relu6 && i < ny; i++)
        ref[i] = fmin(fmax(ref[i], 0), 6);
    c->d.res = res;
    c->d.act = c->hardswish ? tgk_vec_hardswish_f32 : c->relu6 ? tgk_vec_relu6_f32 : NULL;
    if (P > 1)
        ny = pool_ref(ref, mag, d->n * d->k, c->out[1], c->out[2], P);
    CHECK(tgk_conv_f32(d, x, w, b, y) == 0);
    int64_t terms = (d->c / d->groups) * kp;
    KC_EXPECT(kc_mag_err(y, ref, mag, ny), TOL * (1 + terms / 1000.0),
              "conv nsp=%d n=%lld c=%lld k=%lld g=%lld in=%lldx%lldx%lld ker=%lldx%lldx%lld "
              "str=%lld,%lld,%lld pad=%lld,%lld,%lld dil=%lld,%lld,%lld transposed=%d relu=%d "
              "pool=%lld res=%d hardswish=%d relu6=%d",
              d->nsp, (long long)d->n, (long long)d->c, (long long)d->k, (long long)d->groups,
              (long long)c->in[0], (long long)c->in[1], (long long)c->in[2], (long long)c->ker[0],
              (long long)c->ker[1], (long long)c->ker[2], (long long)c->str[0], (long long)c->str[1],
              (long long)c->str[2], (long long)c->pad[0], (long long)c->pad[1], (long long)c->pad[2],
              (long long)c->dil[0], (long long)c->dil[1], (long long)c->dil[2], d->transposed,
              d->relu, (long long)d->pool, c->res, c->hardswish, c->relu6);
    CHECK(kc_guard_ok(y, ny));
    strided_again(c, x, w, b, y, ny);
    free(x), free(w), free(b), free(y), free(ref), free(mag), free(res);
}

/* A random case: nsp dims, the rest of the 3 set to 1. */
static void random_case(int nsp, bool transposed, int group_kind)
{
    ccase c = {0};
    for (;;) {
        for (int a = 0; a < 3; a++) {
            bool have = a >= 3 - nsp;
            c.in[a] = have ? kc_int(1, nsp == 3 ? 6 : 12) : 1;
            c.ker[a] = have ? kc_int(1, 3) : 1;
            c.str[a] = have ? kc_int(1, 3) : 1;
            c.dil[a] = have ? kc_int(1, 2) : 1;
            c.pad[a] = have ? kc_int(0, c.ker[a] / 2 + 1) : 0;
        }
        int64_t g = group_kind == 0 ? 1 : kc_int(2, 3);
        c.d.n = kc_int(1, 2);
        c.d.groups = g;
        c.d.c = g * (group_kind == 2 ? 1 : kc_int(1, 4));
        c.d.k = g * kc_int(1, 4);
        c.d.transposed = transposed;
        int64_t maxpad = 0;
        for (int a = 0; a < 3; a++)
            maxpad = c.pad[a] > maxpad ? c.pad[a] : maxpad;
        int64_t outpad = transposed && c.str[2] > 1 ? kc_int(0, c.str[2] - 1) : 0;
        if (ccase_finish(&c, nsp, outpad))
            break;
    }
    run_case(&c, kc_int(0, 1));
}

static ccase fixed(int64_t n, int64_t c, int64_t k, int64_t g, int64_t h, int64_t w, int64_t kh,
                   int64_t kw, int64_t s, int64_t p, bool transposed)
{
    ccase cc = {.d = {.n = n, .c = c, .k = k, .groups = g, .transposed = transposed},
                .in = {1, h, w}, .ker = {1, kh, kw}, .str = {1, s, s}, .pad = {0, p, p},
                .dil = {1, 1, 1}};
    if (!ccase_finish(&cc, 2, 0))
        abort();
    return cc;
}

/* im2col's rows: n, c, k, groups, h, w, kh, kw, stride, pad, dil, relu */
static ccase im2col_case(const int64_t *r)
{
    ccase c = fixed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], false);
    c.dil[1] = c.dil[2] = r[10];
    CHECK(ccase_finish(&c, 2, 0));
    c.d.relu = r[11];
    return c;
}

/* a patch convolution's rows: nsp, n, c, k, groups, in (d, h, w), kernel
 * = stride (d, h, w), epilogue (1 relu, 2 a residual, 3 hardswish) */
static ccase patch_case(const int64_t *r)
{
    ccase c = {.d = {.n = r[1], .c = r[2], .k = r[3], .groups = r[4]},
               .in = {r[5], r[6], r[7]}, .ker = {r[8], r[9], r[10]},
               .str = {r[8], r[9], r[10]}, .dil = {1, 1, 1}};
    CHECK(ccase_finish(&c, (int)r[0], 0));
    c.d.relu = r[11] == 1;
    c.res = r[11] == 2;
    c.hardswish = r[11] == 3;
    return c;
}

/* Each case of rows with each register tile the CPU runs, 1 and 2 threads. */
static void each_tile(const int64_t (*rows)[12], size_t nrows, ccase (*make)(const int64_t *))
{
    static const char *const tiles[] = {"base", "avx2", "avx512"};
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (size_t i = 0; i < nrows * 3; i++) {
            if (!tgk_gemm_packed_isa(tiles[i % 3]))
                continue;
            ccase c = make(rows[i / 3]);
            run_case(&c, i % 2 == 0);
        }
    }
    CHECK(tgk_gemm_packed_isa(NULL));
}

int main(void)
{
    unit_seed("test_conv");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (int nsp = 1; nsp <= 3; nsp++)
            for (int tr = 0; tr < 2; tr++)
                for (int gk = 0; gk < 3; gk++)
                    for (int r = 0; r < 12; r++)
                        random_case(nsp, tr, gk);
    }
    tgk_set_num_threads(2);
    ccase c;
    c = fixed(1, 64, 16, 1, 66, 66, 3, 3, 1, 1, false);   /* several im2col slabs */
    run_case(&c, true);
    c = fixed(1, 288, 24, 1, 20, 20, 1, 1, 1, 0, false);  /* pointwise: no im2col */
    run_case(&c, true);
    c = fixed(1, 240, 960, 1, 1, 1, 1, 1, 1, 0, false);   /* pointwise, one pixel: a GEMV */
    run_case(&c, true);
    c = fixed(3, 37, 21, 1, 1, 1, 1, 1, 1, 0, false);     /* the same over a batch */
    c.d.relu = true;
    run_case(&c, false);
    c = fixed(9, 37, 21, 1, 1, 1, 1, 1, 1, 0, false);     /* more rows than a GEMV takes */
    c.d.relu = true;
    run_case(&c, true);
    /* strided 1x1 without padding: its pixels copied out, then the 1x1 GEMM
     * (the images merged on small maps); a residual, relu; 3-D, a stride a dim */
    c = fixed(3, 24, 20, 1, 9, 11, 1, 1, 2, 0, false);
    c.res = true;
    run_case(&c, true);
    c = fixed(8, 40, 36, 1, 8, 8, 1, 1, 2, 0, false);
    c.d.relu = true;
    run_case(&c, false);
    c = (ccase){.d = {.n = 2, .c = 7, .k = 9, .groups = 1}, .in = {5, 6, 7}, .ker = {1, 1, 1},
                .str = {2, 3, 1}, .dil = {1, 1, 1}};
    CHECK(ccase_finish(&c, 3, 0));
    run_case(&c, true);
    /* im2col over the merged images (an odd number of whole panels an
     * image: 4x4 maps, 6x8; strided), a residual, relu */
    c = fixed(5, 32, 64, 1, 4, 4, 3, 3, 1, 1, false);
    c.res = true;
    run_case(&c, true);
    c = fixed(3, 32, 70, 1, 6, 8, 3, 3, 1, 1, false);
    c.d.relu = true;
    run_case(&c, false);
    c = fixed(4, 30, 24, 1, 8, 8, 3, 3, 2, 1, false);
    run_case(&c, true);
    c = fixed(9, 6, 8, 2, 9, 11, 3, 3, 2, 1, false);      /* many images: one per thread */
    run_case(&c, false);
    c = fixed(2, 16, 16, 16, 30, 30, 3, 3, 1, 1, false);  /* depthwise */
    run_case(&c, true);
    c = fixed(1, 8, 16, 8, 20, 20, 5, 5, 2, 2, false);    /* depthwise, multiplier 2 */
    run_case(&c, true);
    c = fixed(2, 32, 16, 1, 40, 40, 4, 4, 2, 1, true);    /* transposed, several slabs */
    run_case(&c, true);
    /* 3-D depthwise on a one-deep input whose kernel is deeper and padded in
     * depth: one output slice, but not the in-place path's plane (its taps
     * and masks are a plane's: it read past the input) */
    c = (ccase){.d = {.n = 2, .c = 2, .k = 4, .groups = 2}, .in = {1, 3, 5}, .ker = {3, 2, 1},
                .str = {3, 1, 1}, .pad = {2, 0, 0}, .dil = {1, 1, 1}};
    if (!ccase_finish(&c, 3, 0))
        abort();
    run_case(&c, true);
    /* depthwise (conv_dw.c: phases of the padded input, flat vectors across
     * rows; on AVX-512 stride 1 with rows as long as the input's in place,
     * masked, and stride 2's column phases split in one pass):
     * MobileNetV3's and EfficientNet's shapes and odd ones, strides 1-3,
     * dilation, padding up to the kernel's reach and none, a multiplier, relu;
     * planes from a part of a vector to many vectors and a tail of each count;
     * in place with more output rows than input rows, with rows of 1 and 3
     * (16 positions over several rows), a multiplier on a 17x33 plane;
     * stride 2 with odd and even padding, odd widths, rows of several vectors;
     * rows of whole vectors (16 x 1-6 wide, shifted in registers), a multiplier
     * among them, fewer rows than the kernel; stride 2 on rows of 64-256 (even
     * and odd columns split in registers), odd rows */
    static const int64_t dw[][12] = {
        /* n, c, mult, h, w, kh, kw, stride, pad, dil, relu, bias */
        {1, 672, 1, 8, 8, 5, 5, 2, 2, 1, 0, 1},
        {1, 960, 1, 4, 4, 5, 5, 1, 2, 1, 1, 1},
        {1, 32, 1, 7, 7, 3, 3, 1, 1, 1, 1, 0},
        {2, 24, 1, 13, 9, 3, 3, 2, 1, 1, 0, 1},
        {1, 16, 1, 64, 64, 3, 3, 1, 1, 1, 1, 1},
        {3, 5, 1, 17, 23, 3, 5, 3, 2, 1, 1, 1},
        {1, 7, 1, 19, 11, 3, 3, 1, 2, 2, 0, 1},
        {1, 6, 3, 9, 14, 3, 3, 2, 0, 2, 1, 1},
        {2, 9, 2, 1, 37, 1, 5, 1, 2, 1, 0, 0},
        {1, 4, 1, 3, 2, 5, 5, 1, 3, 1, 0, 1},
        {2, 5, 1, 9, 13, 3, 5, 1, 2, 1, 1, 1},
        {1, 3, 1, 20, 1, 5, 1, 1, 0, 1, 0, 1},
        {2, 4, 1, 11, 3, 3, 3, 1, 1, 1, 1, 1},
        {1, 3, 3, 17, 33, 3, 3, 1, 1, 1, 0, 1},
        {1, 6, 1, 15, 29, 5, 5, 2, 2, 1, 1, 1},
        {1, 4, 1, 6, 70, 3, 3, 2, 1, 1, 0, 1},
        {2, 3, 2, 10, 47, 3, 3, 2, 0, 1, 1, 0},
        {1, 20, 1, 9, 9, 3, 3, 2, 2, 2, 1, 1},
        {2, 33, 1, 4, 4, 3, 3, 1, 2, 2, 0, 1},
        {1, 17, 1, 2, 3, 5, 5, 1, 2, 1, 1, 0},
        {2, 5, 1, 7, 32, 3, 3, 1, 1, 1, 0, 1},
        {1, 3, 1, 16, 16, 5, 5, 1, 2, 1, 1, 1},
        {1, 2, 1, 3, 96, 5, 5, 1, 2, 1, 0, 1},
        {1, 4, 2, 5, 48, 3, 3, 1, 1, 1, 1, 1},
        {1, 5, 1, 40, 64, 3, 3, 2, 1, 1, 1, 1},
        {1, 3, 1, 33, 96, 5, 5, 2, 2, 1, 0, 1},
        {2, 2, 1, 8, 256, 3, 3, 2, 1, 1, 1, 0},
    };
    static const char *const isas[] = {"base", "avx2", "avx512", NULL};
    for (size_t i = 0; i < sizeof dw / sizeof *dw * 4; i++) {
        const int64_t *r = dw[i / 4];
        if (!tgk_conv_dw_isa(isas[i % 4]))
            continue;
        c = (ccase){.d = {.n = r[0], .c = r[1], .k = r[1] * r[2], .groups = r[1],
                          .relu = r[10]},
                    .in = {1, r[3], r[4]}, .ker = {1, r[5], r[6]}, .str = {1, r[7], r[7]},
                    .pad = {0, r[8], r[8]}, .dil = {1, r[9], r[9]}};
        CHECK(ccase_finish(&c, 2, 0));
        run_case(&c, r[11]);
    }
    CHECK(tgk_conv_dw_isa(NULL));
    /* 3-D depthwise, stride and dilation per axis */
    c = (ccase){.d = {.n = 2, .c = 3, .k = 6, .groups = 3}, .in = {5, 7, 6}, .ker = {3, 2, 3},
                .str = {2, 1, 3}, .pad = {1, 0, 2}, .dil = {1, 2, 1}};
    CHECK(ccase_finish(&c, 3, 0));
    run_case(&c, true);
    /* direct: the cnn fixture's convs at batch 1 and 3 */
    for (int64_t n = 1; n <= 3; n += 2) {
        c = fixed(n, 3, 16, 1, 32, 32, 3, 3, 1, 1, false);
        run_case(&c, true);
        c = fixed(n, 16, 32, 1, 16, 16, 3, 3, 1, 1, false);
        run_case(&c, true);
    }
    /* direct, grouped (blocks of output channels within a group; kg past
     * and within a block, stride 2, one image split by channel blocks, many
     * split by row slabs, a residual, relu) */
    c = fixed(1, 48, 48, 6, 33, 35, 3, 3, 2, 1, false);
    run_case(&c, true);
    c = fixed(9, 24, 36, 3, 12, 16, 3, 3, 1, 1, false);
    c.d.relu = true;
    run_case(&c, false);
    c = fixed(2, 16, 20, 4, 9, 40, 1, 3, 1, 1, false);
    c.res = true;
    run_case(&c, true);
    /* direct, fewer images than 4 items a thread and work enough to share:
     * each image padded once, split by channel blocks, then by row slabs */
    c = fixed(2, 16, 32, 1, 24, 24, 3, 3, 1, 1, false);
    run_case(&c, true);
    c = fixed(1, 16, 5, 1, 64, 64, 3, 3, 1, 1, false);
    run_case(&c, false);
    c = fixed(1, 16, 12, 1, 1, 40, 1, 3, 1, 1, false);    /* direct: one row, 3 pixel blocks */
    run_case(&c, false);
    /* direct, an image too big to pad whole: row slabs that pad their own
     * rows; on one thread, as many as keep each slab's rows within 4 MiB */
    c = fixed(1, 16, 2, 1, 256, 256, 1, 1, 1, 0, false);
    run_case(&c, true);
    tgk_set_num_threads(1);
    c = fixed(1, 1, 1, 1, 16, 270000, 1, 3, 1, 1, false);
    run_case(&c, true);
    tgk_set_num_threads(2);
    /* direct: every c x k pairing below, k within, at and past the 4- and
     * 8-channel blocks; widths within, at and across the 8- and 16-pixel
     * vectors; odd row counts; padding up to the kernel size; batches below
     * and above 4 items a thread (the latter: row slabs that pad their own rows) */
    static const int64_t cs[] = {1, 3, 8, 16}, ks[] = {1, 5, 12, 16, 21, 32};
    for (int ci = 0; ci < 4; ci++)
        for (int ki = 0; ki < 6; ki++)
            for (int r = 0; r < 2; r++) {
                int64_t kh = kc_int(1, 3), kw = kc_int(1, 3);
                int64_t n = r ? kc_int(8, 10) : kc_int(1, 3), hw = r ? 20 : 33;
                c = fixed(n, cs[ci], ks[ki], 1, kc_int(5, hw), kc_int(5, hw), kh, kw, 1,
                          kc_int(0, kh < kw ? kh : kw), false);
                run_case(&c, kc_int(0, 1));
            }
    /* direct, strided (the input split by stride phase): MobileNetV3's and
     * EfficientNet's stem (3 -> 16/32, 3x3, stride 2) and ResNet's (3 -> 64,
     * 7x7, stride 2, padding 3), then strides 2-3 with kernels within and past
     * the stride, odd sizes, padding up to the kernel size, both ways of
     * splitting work */
    c = fixed(1, 3, 16, 1, 64, 64, 3, 3, 2, 1, false);
    run_case(&c, true);
    c = fixed(2, 3, 32, 1, 33, 31, 3, 3, 2, 1, false);
    run_case(&c, false);
    c = fixed(1, 3, 64, 1, 38, 38, 7, 7, 2, 3, false);
    run_case(&c, true);
    for (int r = 0; r < 24; r++) {
        int64_t kh = kc_int(1, 5), kw = kc_int(1, 5), h = kc_int(7, 29), w = kc_int(7, 29);
        c = (ccase){.d = {.n = r % 2 ? kc_int(8, 10) : kc_int(1, 3), .c = kc_int(1, 8),
                          .k = kc_int(1, 21), .groups = 1, .relu = r % 3 == 0},
                    .in = {1, h, w}, .ker = {1, kh, kw}, .str = {1, kc_int(1, 3), kc_int(2, 3)},
                    .pad = {0, kc_int(0, kh - 1), kc_int(0, kw - 1)}, .dil = {1, 1, 1}};
        CHECK(ccase_finish(&c, 2, 0));
        run_case(&c, kc_int(0, 1));
    }

    /* pointwise (tgk_pointwise_f32: images read in place as the packed GEMM's
     * panels, the last partial panel packed) with each register tile the CPU
     * runs, 1 and 2 threads: pixels below one panel, at whole panels, with a
     * tail; output channels within, at and past a tile's rows, one alone
     * (the 4-panel single-row tile); batches; relu. Small maps in a batch
     * go as one GEMM over every image's pixels (merged: 5x7, 4x4, 3x5, 7x7,
     * 13x13, SqueezeNet's 7x7 expand), panels spanning images. */
    static const int64_t pw[][6] = {
        /* n, c, k, h, w, relu */
        {1, 16, 64, 64, 64, 0},
        {8, 64, 256, 7, 7, 1},
        {8, 37, 40, 13, 13, 0},
        {3, 13, 7, 5, 7, 1},
        {2, 160, 960, 4, 4, 0},
        {1, 5, 1, 8, 8, 1},
        {1, 3, 1, 9, 9, 0},
        {4, 24, 12, 3, 5, 1},
        {2, 40, 25, 7, 7, 0},
        {1, 1, 6, 17, 3, 1},
    };
    static const char *const tiles[] = {"base", "avx2", "avx512", NULL};
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (size_t i = 0; i < sizeof pw / sizeof *pw * 3; i++) {
            const int64_t *r = pw[i / 3];
            if (!tgk_gemm_packed_isa(tiles[i % 3]))
                continue;
            c = fixed(r[0], r[1], r[2], 1, r[3], r[4], 1, 1, 1, 0, false);
            c.d.relu = r[5];
            run_case(&c, i % 2 == 0);
        }
    }
    CHECK(tgk_gemm_packed_isa(NULL));
    /* im2col straight into the GEMM's panels (tgk_conv_gemm_f32; strided)
     * and stride 1's implicit im2col (the padded image read in place at each
     * tap's offset) with each register tile the CPU runs, 1 and 2 threads:
     * DenseNet's 3x3 (128 -> 32) at 16x16 and at 4x4 (a grid of 6 x 4: one
     * whole panel and a partial one), SqueezeNet's 48 -> 192 at 7x7 (rows in
     * several chunks), RegNet's grouped 3x3 (8 channels a group, stride 2),
     * ResNet's strided 1x1 and 3x3, dilation, a single row of 7 taps, pixel
     * chunks spanning rows and ending in a partial panel, output channels
     * past a tile's rows, more tiles than one task takes (then the pixels
     * packed up front and rows split: 4x3 pixels), a batch of many (image,
     * group) GEMMs; relu on some */
    static const int64_t ic[][12] = {
        /* n, c, k, groups, h, w, kh, kw, stride, pad, dil, relu */
        {1, 128, 32, 1, 16, 16, 3, 3, 1, 1, 1, 0},
        {1, 128, 32, 1, 4, 4, 3, 3, 1, 1, 1, 1},
        {2, 48, 192, 1, 7, 7, 3, 3, 1, 1, 1, 1},
        {1, 40, 17, 1, 1, 37, 1, 7, 1, 3, 1, 0},
        {1, 48, 48, 6, 14, 14, 3, 3, 2, 1, 1, 1},
        {2, 320, 40, 1, 9, 9, 1, 1, 2, 0, 1, 0},
        {1, 32, 100, 1, 7, 5, 3, 3, 2, 1, 1, 1},
        {1, 24, 21, 3, 11, 13, 3, 3, 1, 2, 2, 0},
        {5, 16, 24, 2, 6, 7, 2, 3, 1, 1, 1, 1},
        {1, 56, 9, 1, 23, 3, 5, 1, 1, 2, 1, 0},
    };
    each_tile(ic, sizeof ic / sizeof *ic, im2col_case);
    /* patch convolutions (kernel == stride, no padding: conv_patch.c's
     * columns), 1-3 spatial dims, with each register tile, 1 and 2 threads:
     * CLIP's 16x16 patches (4x4 pixels: rows split) and over a batch, a
     * ViT's 196 pixels (chunks of 64, a partial panel), input rows and columns past the last window,
     * non-square windows, groups, 2x2 space-to-depth, a 3-D (video) one;
     * relu, a residual or hardswish on some */
    static const int64_t pt[][12] = {
        {2, 1, 3, 64, 1, 1, 64, 64, 1, 16, 16, 0},
        {2, 8, 3, 64, 1, 1, 64, 64, 1, 16, 16, 0},
        {2, 1, 3, 24, 1, 1, 224, 224, 1, 16, 16, 1},
        {2, 2, 8, 20, 1, 1, 37, 45, 1, 8, 6, 2},
        {2, 3, 20, 9, 1, 1, 15, 20, 1, 3, 5, 3},
        {2, 2, 6, 8, 2, 1, 12, 12, 1, 4, 4, 1},
        {2, 2, 96, 24, 1, 1, 10, 10, 1, 2, 2, 0},
        {1, 3, 64, 7, 1, 1, 1, 50, 1, 1, 5, 2},
        {3, 1, 3, 16, 1, 5, 16, 16, 2, 4, 4, 0},
    };
    each_tile(pt, sizeof pt / sizeof *pt, patch_case);
    tgk_set_num_threads(2);
    /* implicit im2col: padded images of ~16 MB, two a batch within its
     * 32 MiB (3 images: a batch of 2, then 1); one of ~68 MB: im2col */
    c = fixed(3, 32, 1, 1, 350, 350, 3, 3, 1, 1, false);
    run_case(&c, true);
    c = fixed(1, 32, 1, 1, 730, 730, 3, 3, 1, 1, false);
    run_case(&c, false);
    /* the epilogue, a residual, hardswish, a residual and then relu (ResNet's
     * add + relu) or relu6 (MobileNetV2's clamp): in the pointwise kernel's
     * blocks (hardswish and relu6 on its registers), on the depthwise's
     * registers, a pass after the other paths (direct, im2col, one pixel) */
    static const int64_t ep[][10] = {
        {1, 24, 40, 1, 8, 8, 1, 1, 1, 0},       /* pointwise */
        {2, 13, 7, 1, 5, 7, 1, 1, 1, 0},        /* pointwise, partial panels */
        {8, 24, 19, 1, 7, 7, 1, 1, 1, 0},       /* pointwise, images merged */
        {1, 16, 21, 1, 13, 19, 3, 3, 1, 1},     /* direct */
        {2, 3, 16, 1, 32, 30, 3, 3, 2, 1},      /* direct, strided (a stem) */
        {1, 64, 16, 1, 12, 12, 3, 3, 2, 1},     /* im2col */
        {2, 40, 24, 1, 9, 11, 3, 3, 1, 1},      /* implicit im2col */
        {2, 16, 16, 16, 10, 10, 3, 3, 1, 1},    /* depthwise */
        {2, 16, 16, 16, 11, 11, 3, 3, 2, 1},    /* depthwise, strided */
        {2, 16, 16, 16, 6, 32, 3, 3, 1, 1},     /* depthwise, rows of whole vectors */
        {1, 16, 16, 16, 20, 64, 3, 3, 2, 1},    /* the same, stride 2 */
        {3, 37, 21, 1, 1, 1, 1, 1, 1, 0},       /* one pixel */
    };
    for (size_t i = 0; i < sizeof ep / sizeof *ep * 4; i++) {
        const int64_t *r = ep[i / 4];
        c = fixed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], false);
        c.res = i % 4 == 0 || i % 4 == 2;
        c.hardswish = i % 4 == 1;
        c.d.relu = i % 4 == 2;
        c.relu6 = i % 4 == 3;
        run_case(&c, true);
    }

    /* relu applied by the kernel: as the direct path stores, after the others */
    static const int64_t rc[][10] = {
        {3, 3, 16, 1, 32, 32, 3, 3, 1, 1},     /* direct, cnn's first conv */
        {2, 16, 21, 1, 13, 19, 3, 3, 1, 1},    /* direct, partial blocks */
        {1, 64, 16, 1, 30, 30, 3, 3, 1, 1},    /* implicit im2col */
        {1, 288, 24, 1, 9, 9, 1, 1, 1, 0},     /* pointwise */
        {2, 16, 16, 16, 10, 10, 3, 3, 1, 1},   /* depthwise */
        {2, 6, 8, 2, 9, 11, 3, 3, 2, 1},       /* grouped, strided */
    };
    for (size_t i = 0; i < sizeof rc / sizeof *rc; i++) {
        const int64_t *r = rc[i];
        c = fixed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], false);
        c.d.relu = true;
        run_case(&c, i % 2 == 0);
    }
    c = fixed(2, 32, 16, 1, 12, 12, 4, 4, 2, 1, true);    /* transposed */
    c.d.relu = true;
    run_case(&c, true);

    /* max pool after the (relu'd) convolution: the direct path pools each
     * slab of rows, the others pool a full result; odd sizes drop the rows
     * and columns past the last whole window */
    static const int64_t pc[][11] = {
        {1, 3, 16, 1, 32, 32, 3, 3, 1, 1, 2},   /* direct, the cnn fixture's */
        {3, 16, 32, 1, 16, 16, 3, 3, 1, 1, 2},  /* direct, pre-padded, channel groups */
        {9, 3, 5, 1, 15, 17, 3, 3, 1, 1, 2},    /* direct, slabs, odd sizes */
        {2, 8, 12, 1, 19, 23, 3, 3, 1, 1, 3},   /* direct, pool 3 */
        {1, 64, 16, 1, 20, 20, 3, 3, 1, 1, 2},  /* im2col */
        {2, 16, 16, 16, 10, 11, 3, 3, 1, 1, 2}, /* depthwise */
    };
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (size_t i = 0; i < sizeof pc / sizeof *pc; i++) {
            const int64_t *r = pc[i];
            c = fixed(r[0], r[1], r[2], r[3], r[4], r[5], r[6], r[7], r[8], r[9], false);
            c.d.relu = i % 2 == 0;
            c.d.pool = r[10];
            run_case(&c, true);
        }
    }
    tgk_set_num_threads(1);     /* one thread: slabs that keep within 4 MiB */
    c = fixed(1, 16, 2, 1, 256, 250, 1, 1, 1, 0, false);
    c.d.pool = 2;
    run_case(&c, true);
    tgk_set_num_threads(2);
    c = fixed(1, 4, 4, 1, 5, 5, 3, 3, 1, 1, false);
    c.d.pool = 6;               /* a window bigger than the result */
    CHECK(tgk_conv_f32(&c.d, NULL, NULL, NULL, NULL) == -1);

    /* invalid descriptors are refused, not run */
    c = fixed(1, 4, 4, 1, 5, 5, 3, 3, 1, 1, false);
    c.d.groups = 3;
    CHECK(tgk_conv_f32(&c.d, NULL, NULL, NULL, NULL) == -1);
    c.d.groups = 1;
    c.d.stride[0] = 0;
    CHECK(tgk_conv_f32(&c.d, NULL, NULL, NULL, NULL) == -1);
    c.d.stride[0] = 1;
    c.d.nsp = 4;
    CHECK(tgk_conv_f32(&c.d, NULL, NULL, NULL, NULL) == -1);
    return unit_report();
}
