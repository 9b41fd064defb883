/* Normalization, pooling, direct convolution and attention in float32 on the
 * device: simple kernels, one thread (or warp, or block) an output, each the
 * CPU kernel's definition (norm.c, pool.c, conv.c, sdpa.c). */
#include "k_common.cuh"

#define SDPA_MAX_D 256          /* head dims a warp holds in registers: 8 a lane */

/* ---- layer and group norm: one block a row, statistics in double ------------- */

__device__ double block_sum(double v, double *sh)
{
    for (int o = 16; o; o >>= 1)
        v += __shfl_xor_sync(~0u, v, o);
    int w = threadIdx.x / 32, nw = blockDim.x / 32;
    __syncthreads();
    if (threadIdx.x % 32 == 0)
        sh[w] = v;
    __syncthreads();
    double s = 0;
    for (int i = 0; i < nw; i++)
        s += sh[i];
    return s;
}

/* rows of len elements, normalized; element j of row r has channel
 * r % groups * cpg + j / spatial (layer norm: one group, spatial 1) */
__global__ void norm_rows_k(const float *x, const float *w, const float *b, float *y,
                             int64_t len, int64_t spatial, int64_t cpg, int64_t groups, float eps)
{
    __shared__ double sh[32];
    int64_t row = blockIdx.x;
    const float *xr = x + row * len;
    float *yr = y + row * len;
    double s = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x)
        s += xr[j];
    double mean = block_sum(s, sh) / (double)len;
    s = 0;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
        double d = xr[j] - mean;
        s += d * d;
    }
    float rstd = 1.0f / sqrtf((float)(block_sum(s, sh) / (double)len) + eps);
    int64_t c0 = row % groups * cpg;
    for (int64_t j = threadIdx.x; j < len; j += blockDim.x) {
        int64_t ch = spatial == 1 ? c0 + j : c0 + j / spatial;     /* layer norm: no division */
        float v = (float)(xr[j] - mean) * rstd;
        yr[j] = v * (w ? w[ch] : 1.0f) + (b ? b[ch] : 0.0f);
    }
}

extern "C" int tgc_layer_norm_f32(const float *x, const float *w, const float *b, float *y,
                                  int64_t rows, int64_t len, float eps, cudaStream_t s)
{
    if (rows == 0 || len == 0)
        return 0;
    norm_rows_k<<<(unsigned)rows, TGC_THREADS, 0, s>>>(x, w, b, y, len, 1, len, 1, eps);
    return tgc_launched();
}

extern "C" int tgc_group_norm_f32(const float *x, const float *w, const float *b, float *y,
                                  int64_t n, int64_t c, int64_t spatial, int64_t groups,
                                  float eps, cudaStream_t s)
{
    int64_t cpg = c / groups, rows = n * groups;
    if (rows == 0 || cpg * spatial == 0)
        return 0;
    norm_rows_k<<<(unsigned)rows, TGC_THREADS, 0, s>>>(x, w, b, y, cpg * spatial, spatial, cpg,
                                                         groups, eps);
    return tgc_launched();
}

__global__ void batch_norm_k(const float *x, const float *mean, const float *var, const float *w,
                             const float *b, float *y, int64_t total, int64_t c, int64_t spatial,
                             float eps)
{
    TGC_FOR(i, total) {
        int64_t ch = i / spatial % c;
        float rs = 1.0f / sqrtf(var[ch] + eps);
        y[i] = (x[i] - mean[ch]) * rs * (w ? w[ch] : 1.0f) + (b ? b[ch] : 0.0f);
    }
}

extern "C" int tgc_batch_norm_f32(const float *x, const float *mean, const float *var,
                                  const float *w, const float *b, float *y, int64_t n, int64_t c,
                                  int64_t spatial, float eps, cudaStream_t s)
{
    int64_t total = n * c * spatial;
    if (total == 0)
        return 0;
    batch_norm_k<<<tgc_blocks(total), TGC_THREADS, 0, s>>>(x, mean, var, w, b, y, total, c,
                                                            spatial, eps);
    return tgc_launched();
}

/* ---- pooling: one thread an output ---------------------------------------------- */

/* the taps [i0, i1) of a window from start, k taps dil apart, inside [0, lim) */
__device__ __forceinline__ void taps(int64_t start, int64_t k, int64_t dil, int64_t lim,
                                     int64_t *i0, int64_t *i1)
{
    int64_t lo = start < 0 ? (-start + dil - 1) / dil : 0;
    int64_t hi = start < lim ? (lim - start + dil - 1) / dil : 0;
    hi = hi < k ? hi : k;
    *i0 = lo;
    *i1 = hi > lo ? hi : lo;
}

__global__ void pool_k(tgk_pool_desc d, bool max, const float *x, float *y, int64_t total)
{
    /* 1-D pools run as 2-D ones of height 1 */
    bool two = d.nsp == 2;
    int64_t ih = two ? d.in[0] : 1, iw = d.in[d.nsp - 1], oh = two ? d.out[0] : 1,
            ow = d.out[d.nsp - 1];
    int64_t kh = two ? d.kernel[0] : 1, kw = d.kernel[d.nsp - 1];
    int64_t sh = two ? d.stride[0] : 1, sw = d.stride[d.nsp - 1];
    int64_t ph = two ? d.pad[0] : 0, pw = d.pad[d.nsp - 1];
    int64_t dh = two ? d.dil[0] : 1, dw = d.dil[d.nsp - 1];
    TGC_FOR(i, total) {
        int64_t ox = i % ow, oy = i / ow % oh, p = i / ow / oh;
        const float *xp = x + p * ih * iw;
        int64_t hs = oy * sh - ph, ws = ox * sw - pw, a0, a1, b0, b1, u, pa1, pb1;
        taps(hs, kh, dh, ih, &a0, &a1);
        taps(hs, kh, dh, ih + ph, &u, &pa1);
        taps(ws, kw, dw, iw, &b0, &b1);
        taps(ws, kw, dw, iw + pw, &u, &pb1);
        float acc = max ? -INFINITY : 0.0f;
        for (int64_t a = a0; a < a1; a++)
            for (int64_t bb = b0; bb < b1; bb++) {
                float v = xp[(hs + a * dh) * iw + ws + bb * dw];
                if (max)
                    acc = acc != acc || v != v ? (acc != acc ? acc : v) : fmaxf(acc, v);
                else
                    acc += v;
            }
        if (!max) {
            int64_t cnt = d.count_include_pad ? pa1 * pb1 : (a1 - a0) * (b1 - b0);
            acc = cnt > 0 ? acc / (float)cnt : 0.0f;
        }
        y[i] = acc;
    }
}

extern "C" int tgc_pool_f32(const tgk_pool_desc *d, bool max, const float *x, float *y,
                            cudaStream_t s)
{
    int64_t total = d->n * d->c * d->out[0] * (d->nsp == 2 ? d->out[1] : 1);
    if (total == 0)
        return 0;
    pool_k<<<tgc_blocks(total), TGC_THREADS, 0, s>>>(*d, max, x, y, total);
    return tgc_launched();
}

__global__ void adaptive_k(int64_t total, int64_t ih, int64_t iw, int64_t oh, int64_t ow,
                           const float *x, float *y)
{
    TGC_FOR(i, total) {
        int64_t ox = i % ow, oy = i / ow % oh, p = i / ow / oh;
        int64_t h0 = oy * ih / oh, h1 = ((oy + 1) * ih + oh - 1) / oh;
        int64_t w0 = ox * iw / ow, w1 = ((ox + 1) * iw + ow - 1) / ow;
        const float *xp = x + p * ih * iw;
        float s = 0.0f;
        for (int64_t h = h0; h < h1; h++)
            for (int64_t w = w0; w < w1; w++)
                s += xp[h * iw + w];
        int64_t cnt = (h1 - h0) * (w1 - w0);
        y[i] = cnt > 0 ? s / (float)cnt : 0.0f;
    }
}

extern "C" int tgc_adaptive_avg_pool_f32(int64_t nc, int64_t in_h, int64_t in_w, int64_t out_h,
                                         int64_t out_w, const float *x, float *y, cudaStream_t s)
{
    int64_t total = nc * out_h * out_w;
    if (total == 0)
        return 0;
    adaptive_k<<<tgc_blocks(total), TGC_THREADS, 0, s>>>(total, in_h, in_w, out_h, out_w, x, y);
    return tgc_launched();
}

/* ---- convolution ------------------------------------------------------------------ */

/* A convolution's spatial dims as 3-D: 1-D and 2-D with leading dims of 1. */
struct conv3 {
    int64_t in[3], out[3], ker[3], str[3], pad[3], dil[3];
};

__device__ __forceinline__ conv3 conv3_of(const tgk_conv_desc &d)
{
    conv3 c;
    for (int k = 0; k < 3; k++) {
        int s = k - (3 - d.nsp);
        bool on = s >= 0;
        c.in[k] = on ? d.in[s] : 1;
        c.out[k] = on ? d.out[s] : 1;
        c.ker[k] = on ? d.kernel[s] : 1;
        c.str[k] = on ? d.stride[s] : 1;
        c.pad[k] = on ? d.pad[s] : 0;
        c.dil[k] = on ? d.dil[s] : 1;
    }
    return c;
}

/* Direct, one thread an output element: what the products (tgc_patches) do
 * not take, grouped and transposed convolutions. */
__global__ void conv_k(tgk_conv_desc d, const float *x, const float *w, const float *b, float *y,
                       int64_t total)
{
    conv3 cv = conv3_of(d);
    int64_t *in = cv.in, *out = cv.out, *ker = cv.ker, *str = cv.str, *pad = cv.pad, *dil = cv.dil;
    int64_t kg = d.k / d.groups, cg = d.c / d.groups, ksz = ker[0] * ker[1] * ker[2];
    int64_t isz = in[0] * in[1] * in[2];
    TGC_FOR(i, total) {
        int64_t o2 = i % out[2], o1 = i / out[2] % out[1], o0 = i / out[2] / out[1] % out[0];
        int64_t k = i / (out[0] * out[1] * out[2]) % d.k, n = i / (out[0] * out[1] * out[2]) / d.k;
        int64_t g = k / kg;
        float acc = b ? b[k] : 0.0f;
        for (int64_t c = 0; c < cg; c++) {
            int64_t ci = g * cg + c;
            const float *xc = x + (n * d.c + ci) * isz;
            /* weight [K, C/g, *k], or transposed [C, K/g, *k] */
            const float *wc = d.transposed ? w + (ci * kg + k % kg) * ksz : w + (k * cg + c) * ksz;
            for (int64_t a = 0; a < ker[0]; a++)
                for (int64_t bb = 0; bb < ker[1]; bb++)
                    for (int64_t e = 0; e < ker[2]; e++) {
                        int64_t t[3] = {a, bb, e}, o[3] = {o0, o1, o2}, p[3];
                        bool ok = true;
                        for (int q = 0; q < 3 && ok; q++) {
                            if (d.transposed) {     /* o = p*stride - pad + t*dil */
                                int64_t num = o[q] + pad[q] - t[q] * dil[q];
                                ok = num >= 0 && num % str[q] == 0;
                                p[q] = num / str[q];
                            } else {
                                p[q] = o[q] * str[q] - pad[q] + t[q] * dil[q];
                            }
                            ok = ok && p[q] >= 0 && p[q] < in[q];
                        }
                        if (ok)
                            acc += xc[(p[0] * in[1] + p[1]) * in[2] + p[2]] *
                                   wc[(a * ker[1] + bb) * ker[2] + e];
                    }
        }
        y[i] = acc;
    }
}

extern "C" int tgc_conv_f32(const tgk_conv_desc *d, const float *x, const float *w,
                            const float *b, float *y, cudaStream_t s)
{
    int64_t total = d->n * d->k;
    for (int i = 0; i < d->nsp; i++)
        total *= d->out[i];
    if (total == 0)
        return 0;
    conv_k<<<tgc_blocks(total), TGC_THREADS, 0, s>>>(*d, x, w, b, y, total);
    return tgc_launched();
}

__device__ __forceinline__ void put(float *p, float v) { *p = v; }
__device__ __forceinline__ void put(__nv_bfloat16 *p, float v) { *p = __float2bfloat16(v); }
__device__ __forceinline__ void put(__half *p, float v) { *p = __float2half(v); }

/* col[(n * P + p) * ld + c * ks + t]: x under output p's window at kernel
 * tap t, 0 in the padding and in the columns from C * ks to ld. One block a
 * row (n, p), decoded once; its columns across the threads, so the stores
 * are coalesced; index arithmetic in I (32 bits where it fits). */
template <typename T, typename I>
__global__ void patches_k(tgk_conv_desc d, const float *x, T *col, I ld, I rows)
{
    conv3 cv = conv3_of(d);
    I ks = (I)(cv.ker[0] * cv.ker[1] * cv.ker[2]), k12 = (I)(cv.ker[1] * cv.ker[2]);
    I k2 = (I)cv.ker[2], o12 = (I)(cv.out[1] * cv.out[2]), o2 = (I)cv.out[2];
    I P = (I)cv.out[0] * o12, C = (I)d.c;
    I plane = (I)(cv.in[0] * cv.in[1] * cv.in[2]);
    for (I row = blockIdx.x; row < rows; row += gridDim.x) {
        I n = row / P, p = row - n * P;
        I q0 = p / o12, r = p - q0 * o12, q1 = r / o2, q2 = r - q1 * o2;
        int64_t b0 = q0 * cv.str[0] - cv.pad[0], b1 = q1 * cv.str[1] - cv.pad[1];
        int64_t b2 = q2 * cv.str[2] - cv.pad[2];
        const float *xn = x + (size_t)n * C * plane;
        T *cr = col + (size_t)row * ld;
        for (I j = threadIdx.x; j < ld; j += blockDim.x) {
            I c = j / ks, t = j - c * ks;
            I t0 = t / k12, tr = t - t0 * k12, t1 = tr / k2, t2 = tr - t1 * k2;
            int64_t y0 = b0 + t0 * cv.dil[0], y1 = b1 + t1 * cv.dil[1], y2 = b2 + t2 * cv.dil[2];
            bool ok = c < C && y0 >= 0 && y0 < cv.in[0] && y1 >= 0 && y1 < cv.in[1] && y2 >= 0 &&
                      y2 < cv.in[2];
            put(cr + j, ok ? xn[c * plane + (I)((y0 * cv.in[1] + y1) * cv.in[2] + y2)] : 0.0f);
        }
    }
}

template <typename T>
static void patches(const tgk_conv_desc *d, const float *x, T *col, int64_t ld, int64_t rows,
                    cudaStream_t s)
{
    int64_t xn = d->n * d->c;
    for (int i = 0; i < d->nsp; i++)
        xn *= d->in[i];
    unsigned g = (unsigned)(rows < 0x7fffffff ? rows : 0x7fffffff);
    unsigned th = ld >= TGC_THREADS ? TGC_THREADS : (unsigned)(ld + 31) / 32 * 32;
    if (rows * ld < INT32_MAX && xn < INT32_MAX)
        patches_k<T, uint32_t><<<g, th, 0, s>>>(*d, x, col, (uint32_t)ld, (uint32_t)rows);
    else
        patches_k<T, int64_t><<<g, th, 0, s>>>(*d, x, col, ld, rows);
}

extern "C" int tgc_patches(const tgk_conv_desc *d, const float *x, tgk_dtype t, void *col,
                           int64_t ld, cudaStream_t s)
{
    int64_t rows = d->n;
    for (int i = 0; i < d->nsp; i++)
        rows *= d->out[i];
    if (rows == 0 || ld == 0)
        return 0;
    if (t == TGK_BF16)
        patches(d, x, (__nv_bfloat16 *)col, ld, rows, s);
    else if (t == TGK_F16)
        patches(d, x, (__half *)col, ld, rows, s);
    else
        patches(d, x, (float *)col, ld, rows, s);
    return tgc_launched();
}

/* A convolution's result into float32: one block a plane (image and channel),
 * its bias read once, the residual added (an EPILOGUE group's) before the
 * relu, as the graph's add then relu round it. */
__device__ __forceinline__ float as_f(float v) { return v; }
__device__ __forceinline__ float as_f(__nv_bfloat16 v) { return __bfloat162float(v); }
__device__ __forceinline__ float as_f(__half v) { return __half2float(v); }

template <typename T>
__global__ void conv_out_k(const T *t, const float *b, const float *z, bool relu, float *y,
                           int64_t K, int64_t P)
{
    int64_t q = blockIdx.x, o = q * P;
    float bias = b ? b[q % K] : 0.0f;
    for (int64_t p = threadIdx.x; p < P; p += blockDim.x) {
        float v = as_f(t[o + p]) + bias;
        if (z)
            v += z[o + p];
        y[o + p] = relu && v < 0 ? 0.0f : v;
    }
}

extern "C" int tgc_conv_out(tgk_dtype tt, const void *t, const float *b, const float *z, bool relu,
                            float *y, int64_t planes, int64_t K, int64_t P, cudaStream_t s)
{
    if (planes == 0 || P == 0)
        return 0;
    if (planes > 0x7fffffff)
        return (int)cudaErrorInvalidConfiguration;
    int th = P >= 256 ? 256 : P > 64 ? 128 : 64;
    if (tt == TGK_BF16)
        conv_out_k<<<(unsigned)planes, th, 0, s>>>((const __nv_bfloat16 *)t, b, z, relu, y, K, P);
    else if (tt == TGK_F16)
        conv_out_k<<<(unsigned)planes, th, 0, s>>>((const __half *)t, b, z, relu, y, K, P);
    else
        conv_out_k<<<(unsigned)planes, th, 0, s>>>((const float *)t, b, z, relu, y, K, P);
    return tgc_launched();
}

/* ---- attention: one warp a query row, an online softmax over the keys ------------ */

__global__ void sdpa_k(tgk_sdpa_desc d, const void *mask, bool mask_bool, const float *q,
                       const float *k, const float *v, float *o, int64_t rows)
{
    int64_t r = blockIdx.x * (int64_t)(TGC_THREADS / 32) + threadIdx.x / 32;
    if (r >= rows)
        return;
    int lane = threadIdx.x % 32;
    int64_t l = r % d.L, h = r / d.L % d.hq, bt = r / d.L / d.hq;
    int64_t hk = h / (d.hq / d.hk);
    const float *qr = q + r * d.E;
    const float *kb = k + (bt * d.hk + hk) * d.S * d.E;
    const float *vb = v + (bt * d.hk + hk) * d.S * d.Ev;
    float qv[SDPA_MAX_D / 32], acc[SDPA_MAX_D / 32];
#pragma unroll
    for (int i = 0; i < SDPA_MAX_D / 32; i++) {
        int e = lane + 32 * i;
        qv[i] = e < d.E ? qr[e] : 0.0f;
        acc[i] = 0.0f;
    }
    float m = -INFINITY, sum = 0.0f;
    int64_t send = d.causal ? (l + 1 < d.S ? l + 1 : d.S) : d.S;
    for (int64_t s = 0; s < send; s++) {
        const float *kr = kb + s * d.E;
        float dot = 0.0f;
#pragma unroll
        for (int i = 0; i < SDPA_MAX_D / 32; i++) {
            int e = lane + 32 * i;
            if (e < d.E)
                dot += qv[i] * kr[e];
        }
        for (int off = 16; off; off >>= 1)
            dot += __shfl_xor_sync(~0u, dot, off);
        float sc = dot * d.scale;
        if (mask) {
            int64_t mi = bt * d.mask_stride[0] + h * d.mask_stride[1] + l * d.mask_stride[2] +
                         s * d.mask_stride[3];
            if (mask_bool)
                sc = ((const uint8_t *)mask)[mi] ? sc : -INFINITY;
            else
                sc += ((const float *)mask)[mi];
        }
        if (sc == -INFINITY)
            continue;
        float mn = fmaxf(m, sc), corr = expf(m - mn), p = expf(sc - mn);
        sum = sum * corr + p;
        m = mn;
        const float *vr = vb + s * d.Ev;
#pragma unroll
        for (int i = 0; i < SDPA_MAX_D / 32; i++) {
            int e = lane + 32 * i;
            acc[i] = acc[i] * corr + (e < d.Ev ? p * vr[e] : 0.0f);
        }
    }
    float inv = sum > 0 ? 1.0f / sum : 0.0f;   /* a row with no key: 0 */
    float *orow = o + r * d.Ev;
#pragma unroll
    for (int i = 0; i < SDPA_MAX_D / 32; i++) {
        int e = lane + 32 * i;
        if (e < d.Ev)
            orow[e] = acc[i] * inv;
    }
}

extern "C" int tgc_sdpa_f32(const tgk_sdpa_desc *d, const void *mask, bool mask_bool,
                            const float *q, const float *k, const float *v, float *o,
                            cudaStream_t s)
{
    int64_t rows = d->batch * d->hq * d->L;
    if (rows == 0 || d->Ev == 0)
        return 0;
    if (d->E > SDPA_MAX_D || d->Ev > SDPA_MAX_D)
        return (int)cudaErrorInvalidValue;
    sdpa_k<<<tgc_blocks(rows, TGC_THREADS / 32), TGC_THREADS, 0, s>>>(*d, mask, mask_bool, q, k, v,
                                                                      o, rows);
    return tgc_launched();
}

/* ---- 2:4 sparse weights: one thread a group of four ----------------------------- */

/* The dense w [N,K] of linear_24's values [N,K/2] and meta [N,ceil(K/8)], as
 * tg_sparse24_expand (compress.c): indices that coincide (only in a file made
 * elsewhere) add up, as the CPU kernel's two products do. */
__global__ void expand24_k(const float *v, const uint8_t *m, float *w, int64_t K, int64_t mb,
                           int64_t groups)
{
    TGC_FOR(i, groups) {
        int64_t n = i / (K / 4), g = i % (K / 4);
        int bits = m[n * mb + g / 2] >> (g % 2 * 4);
        float q[4] = {0, 0, 0, 0};
        q[bits & 3] += v[n * (K / 2) + 2 * g];
        q[bits >> 2 & 3] += v[n * (K / 2) + 2 * g + 1];
        for (int j = 0; j < 4; j++)
            w[n * K + 4 * g + j] = q[j];
    }
}

extern "C" int tgc_expand24_f32(const float *values, const uint8_t *meta, float *w, int64_t N,
                                int64_t K, cudaStream_t s)
{
    int64_t groups = N * (K / 4);
    if (groups == 0)
        return 0;
    expand24_k<<<tgc_blocks(groups), TGC_THREADS, 0, s>>>(values, meta, w, K, (K / 4 + 1) / 2,
                                                          groups);
    return tgc_launched();
}
