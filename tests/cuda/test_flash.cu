/* The flash-attention kernels against a float64 reference on the host.
 *
 * Each case draws fresh inputs (rounded to bf16 or fp16; the reference reads
 * the rounded values), poisons the output with NaN, runs the kernel and
 * compares every element: max |o - ref|, and ||o - ref|| / ||ref||. Rows with
 * every key masked must be exactly 0, as the CPU kernel gives. Tolerances:
 * bf16 max 1.6e-2, rel 1e-2; fp16 max 4e-3, rel 2.5e-3 (P and o are rounded
 * to the input type, 2^-8 and 2^-11 relative). Every case runs three times:
 * on the kernel the device picks (FA3 on Hopper), on the portable one and on
 * the first wgmma kernel (the portable one again where there is no Hopper).
 * Then the refusals: one line each. Exit status 0 when every case passes. */
#include "backend/cuda/flash.h"

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <vector>

#define CUDA_OK(x)                                                                     \
    do {                                                                               \
        cudaError_t e_ = (x);                                                          \
        if (e_ != cudaSuccess) {                                                       \
            fprintf(stderr, "%s:%d: %s: %s\n", __FILE__, __LINE__, #x,                 \
                    cudaGetErrorString(e_));                                           \
            exit(2);                                                                   \
        }                                                                              \
    } while (0)

static uint64_t rng = 0x9e3779b97f4a7c15ull;
static double uniform(void)     /* [-1, 1) */
{
    rng ^= rng << 13, rng ^= rng >> 7, rng ^= rng << 17;
    return (double)(rng >> 11) / 4503599627370496.0 - 1.0;
}

typedef struct {
    const char *name;
    int dtype;
    int64_t batch, hq, hk, L, S, D;
    double scale;               /* 0: 1/sqrt(D) */
    int causal;
    int mask_kind;
    int bcast;                  /* mask dims broadcast: 1 batch, 2 heads, 4 rows */
    int masked_rows;            /* every 7th query row (from 3) fully masked */
    int qkv_packed;             /* q, k, v slices of one [b, L, 3, h, D], o [b, L, h, D] */
} Case;

/* round to the input type and back */
static float round_to(int dtype, float x)
{
    return dtype == TGF_BF16 ? __bfloat162float(__float2bfloat16(x))
                             : __half2float(__float2half(x));
}
static uint16_t bits_of(int dtype, float x)
{
    if (dtype == TGF_BF16)
        return __nv_bfloat16_raw(__float2bfloat16(x)).x;
    return __half_raw(__float2half(x)).x;
}
static float float_of(int dtype, uint16_t u)
{
    uint32_t w = (uint32_t)u << 16;
    float f;
    if (dtype == TGF_BF16) {    /* bf16 is the top half of a float */
        memcpy(&f, &w, 4);
        return f;
    }
    __half_raw r;
    r.x = u;
    return __half2float(__half(r));
}

static int run_case(const Case *c, int kernel)
{
    const int64_t B = c->batch, HQ = c->hq, HK = c->hk, L = c->L, S = c->S, D = c->D;
    const double scale = c->scale ? c->scale : 1.0 / sqrt((double)D);
    /* host copies in the kernel's layout, values already rounded */
    int64_t qs[3], ks[3], vs[3], os[3], k_off, v_off;
    size_t in_elems, o_elems;
    if (c->qkv_packed) {        /* hq == hk, L == S */
        int64_t row = 3 * HQ * D;
        qs[0] = ks[0] = vs[0] = L * row;
        qs[1] = ks[1] = vs[1] = D;
        qs[2] = ks[2] = vs[2] = row;
        k_off = HQ * D, v_off = 2 * HQ * D;
        in_elems = (size_t)(B * L * row);
        os[0] = L * HQ * D, os[1] = D, os[2] = HQ * D;
    } else {
        qs[0] = HQ * L * D, qs[1] = L * D, qs[2] = D;
        ks[0] = vs[0] = HK * S * D, ks[1] = vs[1] = S * D, ks[2] = vs[2] = D;
        k_off = B * HQ * L * D;
        v_off = k_off + B * HK * S * D;
        in_elems = (size_t)(v_off + B * HK * S * D);
        os[0] = HQ * L * D, os[1] = L * D, os[2] = D;
    }
    o_elems = (size_t)(B * HQ * L * D);
    std::vector<uint16_t> in(in_elems);
    std::vector<float> inf(in_elems);
    for (size_t i = 0; i < in_elems; i++) {
        float x = round_to(c->dtype, (float)uniform());
        inf[i] = x;
        in[i] = bits_of(c->dtype, x);
    }

    /* the mask, [mb, mh, ml, S] with broadcast dims of size 1 */
    int64_t mb = c->bcast & 1 ? 1 : B, mh = c->bcast & 2 ? 1 : HQ, ml = c->bcast & 4 ? 1 : L;
    int64_t ms[4] = {c->bcast & 1 ? 0 : mh * ml * S, c->bcast & 2 ? 0 : ml * S,
                     c->bcast & 4 ? 0 : S, 1};
    size_t m_elems = c->mask_kind ? (size_t)(mb * mh * ml * S) : 0;
    std::vector<uint8_t> mbool(c->mask_kind == TGF_MASK_BOOL ? m_elems : 0);
    std::vector<float> madd(c->mask_kind == TGF_MASK_ADD ? m_elems : 0);
    for (size_t i = 0; i < m_elems; i++) {
        int64_t lq = (int64_t)(i / S) % ml;
        bool cut = c->masked_rows && lq % 7 == 3;
        double u = uniform();
        if (c->mask_kind == TGF_MASK_BOOL)
            mbool[i] = !cut && u > -0.4;
        else
            madd[i] = cut || u < -0.7 ? -INFINITY : (float)(2.0 * uniform());
    }

    /* float64 reference */
    std::vector<double> ref(o_elems), sc(S > 0 ? S : 1);
    std::vector<char> dead((size_t)(B * HQ * L));
    double ref_max = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t l = 0; l < L; l++) {
                int64_t kvh = h / (HQ / HK);
                const float *qr = &inf[b * qs[0] + h * qs[1] + l * qs[2]];
                double mx = -INFINITY;
                for (int64_t s = 0; s < S; s++) {
                    const float *kr = &inf[k_off + b * ks[0] + kvh * ks[1] + s * ks[2]];
                    double dot = 0;
                    for (int64_t e = 0; e < D; e++)
                        dot += (double)qr[e] * kr[e];
                    double x = dot * scale;
                    int64_t mo = b * ms[0] + h * ms[1] + l * ms[2] + s;
                    if (c->mask_kind == TGF_MASK_BOOL && !mbool[mo])
                        x = -INFINITY;
                    if (c->mask_kind == TGF_MASK_ADD)
                        x += madd[mo];
                    if (c->causal && s > l)
                        x = -INFINITY;
                    sc[s] = x;
                    mx = x > mx ? x : mx;
                }
                double *o = &ref[((b * HQ + h) * L + l) * D];
                for (int64_t e = 0; e < D; e++)
                    o[e] = 0;
                dead[(b * HQ + h) * L + l] = mx == -INFINITY;
                if (mx == -INFINITY)
                    continue;
                double sum = 0;
                for (int64_t s = 0; s < S; s++) {
                    double p = exp(sc[s] - mx);
                    sum += p;
                    if (p == 0)
                        continue;
                    const float *vr = &inf[v_off + b * vs[0] + kvh * vs[1] + s * vs[2]];
                    for (int64_t e = 0; e < D; e++)
                        o[e] += p * vr[e];
                }
                for (int64_t e = 0; e < D; e++) {
                    o[e] /= sum;
                    ref_max = fabs(o[e]) > ref_max ? fabs(o[e]) : ref_max;
                }
            }

    /* the kernel */
    uint16_t *d_in, *d_o;
    void *d_mask = NULL, *d_ws = NULL;
    size_t o_alloc = c->qkv_packed ? (size_t)(B * L * HQ * D) : o_elems;
    CUDA_OK(cudaMalloc(&d_in, in_elems * 2));
    CUDA_OK(cudaMalloc(&d_o, o_alloc * 2));
    CUDA_OK(cudaMemcpy(d_in, in.data(), in_elems * 2, cudaMemcpyHostToDevice));
    CUDA_OK(cudaMemset(d_o, 0xff, o_alloc * 2));    /* NaN in both types */
    tgf_attn_desc d = {};
    d.dtype = c->dtype;
    d.batch = B, d.hq = HQ, d.hk = HK, d.L = L, d.S = S, d.D = D;
    d.scale = (float)scale;
    d.causal = c->causal;
    d.mask_kind = c->mask_kind;
    d.kernel = kernel;
    if (c->mask_kind) {
        size_t mbytes = m_elems * (c->mask_kind == TGF_MASK_BOOL ? 1 : 4);
        CUDA_OK(cudaMalloc(&d_mask, mbytes ? mbytes : 1));
        CUDA_OK(cudaMemcpy(d_mask,
                           c->mask_kind == TGF_MASK_BOOL ? (void *)mbool.data()
                                                         : (void *)madd.data(),
                           mbytes, cudaMemcpyHostToDevice));
        d.mask = d_mask;
        memcpy(d.mask_stride, ms, sizeof ms);
    }
    memcpy(d.q_stride, qs, sizeof qs);
    memcpy(d.k_stride, ks, sizeof ks);
    memcpy(d.v_stride, vs, sizeof vs);
    memcpy(d.o_stride, os, sizeof os);
    size_t ws = tgf_attn_workspace(&d);
    if (ws)
        CUDA_OK(cudaMalloc(&d_ws, ws));
    const char *why = NULL;
    if (tgf_attn_forward(&d, d_in, d_in + k_off, d_in + v_off, d_o, d_ws, ws, 0, &why)) {
        printf("FAIL %-28s refused: %s\n", c->name, why);
        return 1;
    }
    CUDA_OK(cudaGetLastError());
    CUDA_OK(cudaDeviceSynchronize());
    std::vector<uint16_t> out(o_alloc);
    CUDA_OK(cudaMemcpy(out.data(), d_o, o_alloc * 2, cudaMemcpyDeviceToHost));

    double max_err = 0, e2 = 0, r2 = 0;
    long bad = 0, dead_rows = 0, dead_bad = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < HQ; h++)
            for (int64_t l = 0; l < L; l++) {
                bool is_dead = dead[(b * HQ + h) * L + l];
                dead_rows += is_dead;
                for (int64_t e = 0; e < D; e++) {
                    float got = float_of(c->dtype, out[b * os[0] + h * os[1] + l * os[2] + e]);
                    double want = ref[((b * HQ + h) * L + l) * D + e];
                    if (!isfinite(got)) {
                        bad++;
                        continue;
                    }
                    if (is_dead && got != 0.0f)
                        dead_bad++;
                    double err = fabs(got - want);
                    max_err = err > max_err ? err : max_err;
                    e2 += err * err, r2 += want * want;
                }
            }
    double rel = r2 > 0 ? sqrt(e2 / r2) : sqrt(e2);
    double tol_max = c->dtype == TGF_BF16 ? 1.6e-2 : 4e-3;
    double tol_rel = c->dtype == TGF_BF16 ? 1e-2 : 2.5e-3;
    bool ok = !bad && !dead_bad && max_err <= tol_max && rel <= tol_rel;
    printf("%s %-28s %s %-34s max_err %.2e rel %.2e max|ref| %.3f masked rows %ld", ok ? "ok  " : "FAIL",
           c->name, c->dtype == TGF_BF16 ? "bf16" : "fp16", tgf_attn_kernel(&d), max_err, rel,
           ref_max, dead_rows);
    if (bad || dead_bad)
        printf(" (%ld unwritten or NaN, %ld masked rows not 0)", bad, dead_bad);
    printf("\n");
    cudaFree(d_in), cudaFree(d_o), cudaFree(d_mask), cudaFree(d_ws);
    return !ok;
}

/* descriptors the kernels must refuse with a reason, without running */
static int refusals(void)
{
    int fails = 0;
    void *p = NULL;
    CUDA_OK(cudaMalloc(&p, 1 << 20));
    struct {
        const char *name;
        tgf_attn_desc d;
        const void *q;
    } r[] = {
        {"head dim 96", {0, 0, 1, 2, 2, 8, 8, 96, 0.1f}, p},
        {"hq not a multiple of hk", {0, 0, 1, 3, 2, 8, 8, 64, 0.1f}, p},
        {"misaligned q", {0, 0, 1, 2, 2, 8, 8, 64, 0.1f}, (char *)p + 2},
        {"mask kind without mask", {0, TGF_MASK_BOOL, 1, 2, 2, 8, 8, 64, 0.1f}, p},
        {"dtype 7", {7, 0, 1, 2, 2, 8, 8, 64, 0.1f}, p},
        {"infinite scale", {0, 0, 1, 2, 2, 8, 8, 64, INFINITY}, p},
        {"kernel 3", {0, 0, 1, 2, 2, 8, 8, 64, 0.1f}, p},
    };
    r[sizeof r / sizeof r[0] - 1].d.kernel = 3;
    for (size_t i = 0; i < sizeof r / sizeof r[0]; i++) {
        const char *why = tgf_attn_check(&r[i].d, r[i].q, p, p, p);
        const char *fwhy = NULL;
        int rc = tgf_attn_forward(&r[i].d, r[i].q, p, p, p, NULL, 0, 0, &fwhy);
        bool ok = why && rc == -1 && fwhy && !strchr(why, '\n');
        printf("%s refuse %-28s %s\n", ok ? "ok  " : "FAIL", r[i].name, why ? why : "(accepted)");
        fails += !ok;
    }
    /* a decode split given too little workspace */
    tgf_attn_desc d = {0, 0, 1, 8, 8, 1, 4096, 64, 0.1f};
    const char *why = NULL;
    int rc = tgf_attn_forward(&d, p, p, p, p, p, tgf_attn_workspace(&d) - 1, 0, &why);
    bool ok = tgf_attn_workspace(&d) > 0 && rc == -1 && why;
    printf("%s refuse %-28s %s\n", ok ? "ok  " : "FAIL", "short workspace", why ? why : "(accepted)");
    fails += !ok;
    cudaFree(p);
    return fails;
}

int main(void)
{
    const Case cases[] = {
        /* name                       dtype     B  hq hk  L    S    D  scale c mask bc rows packed */
        {"d64 plain",                 TGF_BF16, 2, 4, 4, 100, 100, 64, 0, 0, 0, 0, 0, 0},
        {"d64 causal fp16",           TGF_F16, 2, 4, 4, 200, 200, 64, 0, 1, 0, 0, 0, 0},
        {"d128 causal gqa L>S",       TGF_F16, 1, 8, 2, 257, 131, 128, 0, 1, 0, 0, 0, 0},
        {"d128 L<S odd",              TGF_BF16, 2, 4, 1, 67, 333, 128, 0, 0, 0, 0, 0, 0},
        {"d256 causal",               TGF_BF16, 1, 2, 2, 77, 300, 256, 0, 1, 0, 0, 0, 0},
        {"d256 fp16 scale 0.3",       TGF_F16, 1, 4, 2, 150, 90, 256, 0.3, 0, 0, 0, 0, 0},
        {"d128 negative scale",       TGF_BF16, 2, 2, 2, 150, 300, 128, -0.15, 0, 0, 0, 0, 0},
        {"d64 negative scale causal", TGF_F16, 1, 2, 2, 140, 140, 64, -0.2, 1, 0, 0, 0, 0},
        {"d128 add mask bcast b",     TGF_BF16, 2, 4, 4, 130, 170, 128, 0, 0, TGF_MASK_ADD, 1, 1, 0},
        {"d64 bool mask bcast h mqa", TGF_F16, 2, 4, 1, 99, 129, 64, 0, 0, TGF_MASK_BOOL, 2, 1, 0},
        {"d64 bool key padding",      TGF_BF16, 3, 2, 2, 65, 80, 64, 0.5, 1, TGF_MASK_BOOL, 6, 0, 0},
        {"d256 add mask causal",      TGF_F16, 1, 2, 1, 70, 70, 256, 0, 1, TGF_MASK_ADD, 3, 1, 0},
        {"d128 qkv packed",           TGF_BF16, 2, 4, 4, 96, 96, 128, 0, 1, 0, 0, 0, 1},
        {"d128 one key",              TGF_BF16, 1, 2, 2, 33, 1, 128, 0, 0, 0, 0, 0, 0},
        {"d64 no keys",               TGF_F16, 1, 2, 2, 20, 0, 64, 0, 0, 0, 0, 0, 0},
        /* many key tiles: the copy ring wraps several times */
        {"d128 long keys",            TGF_BF16, 1, 2, 2, 300, 1500, 128, 0, 0, 0, 0, 0, 0},
        {"d64 long causal fp16",      TGF_F16, 1, 2, 1, 1100, 1100, 64, 0, 1, 0, 0, 0, 0},
        {"d256 long keys bool",       TGF_BF16, 1, 1, 1, 200, 700, 256, 0, 0, TGF_MASK_BOOL, 1, 1, 0},
        /* more row blocks than an H200 has multiprocessors: a persistent
         * block walks several, the copy ring running on across them */
        {"d128 many tiles causal gqa", TGF_BF16, 4, 16, 4, 300, 300, 128, 0, 1, 0, 0, 0, 0},
        {"d64 many tiles add mask",   TGF_F16, 8, 8, 8, 400, 200, 64, 0, 0, TGF_MASK_ADD, 1, 1, 0},
        {"d256 many tiles gqa",       TGF_BF16, 2, 24, 8, 330, 150, 256, 0, 0, 0, 0, 0, 0},
        /* d64 from 2k queries without causal or a mask: 192-row tiles */
        {"d64 long queries",          TGF_BF16, 1, 2, 2, 2100, 300, 64, 0, 0, 0, 0, 0, 0},
        {"decode d128 L1 gqa",        TGF_BF16, 2, 32, 8, 1, 20000, 128, 0, 0, 0, 0, 0, 0},
        {"decode d128 L16 bool",      TGF_F16, 1, 8, 2, 16, 3001, 128, 0, 0, TGF_MASK_BOOL, 1, 1, 0},
        {"decode d64 L4 causal mqa",  TGF_BF16, 2, 8, 1, 4, 5000, 64, 0, 1, 0, 0, 0, 0},
        {"decode d256 L2 add",        TGF_BF16, 1, 4, 4, 2, 4099, 256, 0, 0, TGF_MASK_ADD, 1, 1, 0},
        {"decode d128 L3 qkv packed", TGF_F16, 2, 4, 4, 3, 3, 128, 0, 1, 0, 0, 0, 1},
    };
    int fails = 0;
    int n = sizeof cases / sizeof cases[0];
    /* each case on the kernel the device picks, the portable one and the
     * first wgmma kernel (all three run and pass on a GPU without Hopper) */
    for (int kernel = TGF_KERNEL_AUTO; kernel <= TGF_KERNEL_WGMMA; kernel++)
        for (int i = 0; i < n; i++)
            fails += run_case(&cases[i], kernel);
    fails += refusals();
    printf("%d of %d checks failed\n", fails, 3 * n + 8);
    return fails ? 1 : 0;
}
