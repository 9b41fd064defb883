/* Elementwise kernels: unary maps, broadcasting binary ops, where, casts.
 * Each op is the CPU's own definition (scalar_ops.h): floats in double
 * (float32 rounded once from it), integers and bool in int64 (wrapping);
 * float32 has kernels of its own that skip the dtype switch. */
#include "k_common.cuh"
#include "../cpu/kernels/scalar_ops.h"

/* ---- unary ------------------------------------------------------------------ */

__global__ void unary_f32_k(tgk_unary_op op, int64_t n, const float *x, float *y,
                            tgk_unary_param p)
{
    TGC_FOR(i, n)
        y[i] = (float)tgk_unary_f64(op, x[i], &p);
}

__global__ void unary_any_k(tgk_unary_op op, int t, int64_t n, const void *x, void *y,
                            tgk_unary_param p)
{
    TGC_FOR(i, n) {
        if (op == TGK_LOGICAL_NOT)
            ((uint8_t *)y)[i] = tgc_ld_f(t, x, i) == 0;
        else if (tgc_is_float(t))
            tgc_st_f(t, y, i, tgk_unary_f64(op, tgc_ld_f(t, x, i), &p));
        else
            tgc_st_i(t, y, i, tgk_unary_i64(op, tgc_ld_i(t, x, i), &p));
    }
}

extern "C" int tgc_unary(tgk_unary_op op, tgk_dtype t, int64_t n, const void *x, void *y,
                         const tgk_unary_param *p, cudaStream_t s)
{
    if (n == 0)
        return 0;
    if (t == TGK_F32 && op != TGK_LOGICAL_NOT)
        unary_f32_k<<<tgc_blocks(n), TGC_THREADS, 0, s>>>(op, n, (const float *)x, (float *)y, *p);
    else
        unary_any_k<<<tgc_blocks(n), TGC_THREADS, 0, s>>>(op, t, n, x, y, *p);
    return tgc_launched();
}

/* ---- binary ----------------------------------------------------------------- */

template <typename I>
__global__ void binary_f32_k(tgk_binary_op op, tgc_iter it, I n, const float *a,
                             const float *b, void *y)
{
    bool cmp = op >= TGK_EQ;
    TGC_FOR_I(I, i, n) {
        I off[3];
        tgc_offsets<3>(it, i, off);
        double r = tgk_binary_f64(op, a[off[1]], b[off[2]]);
        if (cmp)
            ((uint8_t *)y)[i] = r != 0;
        else
            ((float *)y)[i] = (float)r;
    }
}

__global__ void binary_any_k(tgk_binary_op op, int t, tgc_iter it, int64_t n, const void *a, const void *b,
                             void *y, int64_t *bad)
{
    int ot = op >= TGK_EQ ? TGK_BOOL : t;
    TGC_FOR(i, n) {
        int64_t off[3];
        tgc_offsets<3>(it, i, off);
        if (tgc_is_float(t)) {
            tgc_st_f(ot, y, i, tgk_binary_f64(op, tgc_ld_f(t, a, off[1]), tgc_ld_f(t, b, off[2])));
        } else {
            bool z = false;
            tgc_st_i(ot, y, i, tgk_binary_i64(op, tgc_ld_i(t, a, off[1]), tgc_ld_i(t, b, off[2]), &z));
            if (z)
                *bad = 1;
        }
    }
}

extern "C" int tgc_binary(tgk_binary_op op, tgk_dtype t, const tgc_iter *it, const void *a,
                          const void *b, void *y, int64_t *bad, cudaStream_t s)
{
    int64_t n = tgc_numel(it);
    if (n == 0)
        return 0;
    if (t == TGK_F32 && tgc_fits32(it, 3))
        binary_f32_k<uint32_t><<<tgc_blocks(n), TGC_THREADS, 0, s>>>(
            op, *it, (uint32_t)n, (const float *)a, (const float *)b, y);
    else if (t == TGK_F32)
        binary_f32_k<int64_t><<<tgc_blocks(n), TGC_THREADS, 0, s>>>(op, *it, n, (const float *)a,
                                                                      (const float *)b, y);
    else
        binary_any_k<<<tgc_blocks(n), TGC_THREADS, 0, s>>>(op, t, *it, n, a, b, y, bad);
    return tgc_launched();
}

/* ---- where, cast ---------------------------------------------------------------- */

template <typename T, typename I>
__global__ void where_k(tgc_iter it, I n, const uint8_t *c, const T *a, const T *b, T *y)
{
    TGC_FOR_I(I, i, n) {
        I off[4];
        tgc_offsets<4>(it, i, off);
        y[off[0]] = c[off[1]] ? a[off[2]] : b[off[3]];
    }
}

extern "C" int tgc_where(size_t es, const tgc_iter *it, const uint8_t *c, const void *a,
                         const void *b, void *y, cudaStream_t s)
{
    int64_t n = tgc_numel(it);
    unsigned g = tgc_blocks(n);
    if (n == 0)
        return 0;
    bool fits = tgc_fits32(it, 4);
#define W(T) fits ? where_k<T, uint32_t><<<g, TGC_THREADS, 0, s>>>(*it, (uint32_t)n, c, \
                        (const T *)a, (const T *)b, (T *)y) \
              : where_k<T, int64_t><<<g, TGC_THREADS, 0, s>>>(*it, n, c, (const T *)a, \
                        (const T *)b, (T *)y)
    switch (es) {
    case 1: W(uint8_t); break;
    case 2: W(uint16_t); break;
    case 4: W(uint32_t); break;
    case 8: W(uint64_t); break;
    default: return (int)cudaErrorInvalidValue;
    }
#undef W
    return tgc_launched();
}

__global__ void cast_k(int dt, void *y, int st, const void *x, int64_t n)
{
    TGC_FOR(i, n) {
        if (tgc_is_float(st) || tgc_is_float(dt))
            tgc_st_f(dt, y, i, tgc_ld_f(st, x, i));
        else
            tgc_st_i(dt, y, i, tgc_ld_i(st, x, i));
    }
}

/* float32 to and from bf16 and fp16, the conversions around half-precision
 * products: four elements a thread in 16- and 8-byte accesses (cast_k goes
 * one element at a time through double). The same roundings: a float32 is
 * a double exactly, so both round it once, to nearest even. */
__device__ __forceinline__ void to_half(float v, __nv_bfloat16 *h) { *h = __float2bfloat16(v); }
__device__ __forceinline__ void to_half(float v, __half *h) { *h = __float2half(v); }
__device__ __forceinline__ float of_half(__nv_bfloat16 h) { return __bfloat162float(h); }
__device__ __forceinline__ float of_half(__half h) { return __half2float(h); }

template <typename H>
__global__ void f32_to_half_k(const float4 *x, uint2 *y, int64_t n4)
{
    TGC_FOR(i, n4) {
        float4 v = x[i];
        union { uint2 u; H h[4]; } o;
        to_half(v.x, &o.h[0]);
        to_half(v.y, &o.h[1]);
        to_half(v.z, &o.h[2]);
        to_half(v.w, &o.h[3]);
        y[i] = o.u;
    }
}

template <typename H>
__global__ void half_to_f32_k(const uint2 *x, float4 *y, int64_t n4)
{
    TGC_FOR(i, n4) {
        union { uint2 u; H h[4]; } v;
        v.u = x[i];
        y[i] = make_float4(of_half(v.h[0]), of_half(v.h[1]), of_half(v.h[2]), of_half(v.h[3]));
    }
}

/* the vector kernel for n - n % 4 elements when the types and alignment
 * allow; false: cast_k does all */
static bool cast4(tgk_dtype dt, void *y, tgk_dtype st, const void *x, int64_t n4, cudaStream_t s)
{
    bool half_in = st == TGK_BF16 || st == TGK_F16, half_out = dt == TGK_BF16 || dt == TGK_F16;
    if (!((st == TGK_F32 && half_out) || (half_in && dt == TGK_F32)) ||
        ((uintptr_t)x | (uintptr_t)y) % 16 || n4 == 0)
        return false;
    unsigned g = tgc_blocks(n4);
    if (dt == TGK_BF16)
        f32_to_half_k<__nv_bfloat16><<<g, TGC_THREADS, 0, s>>>((const float4 *)x, (uint2 *)y, n4);
    else if (dt == TGK_F16)
        f32_to_half_k<__half><<<g, TGC_THREADS, 0, s>>>((const float4 *)x, (uint2 *)y, n4);
    else if (st == TGK_BF16)
        half_to_f32_k<__nv_bfloat16><<<g, TGC_THREADS, 0, s>>>((const uint2 *)x, (float4 *)y, n4);
    else
        half_to_f32_k<__half><<<g, TGC_THREADS, 0, s>>>((const uint2 *)x, (float4 *)y, n4);
    return true;
}

extern "C" int tgc_cast(tgk_dtype dt, void *y, tgk_dtype st, const void *x, int64_t n,
                        cudaStream_t s)
{
    if (n == 0)
        return 0;
    int64_t done = cast4(dt, y, st, x, n / 4, s) ? n / 4 * 4 : 0;
    /* the rest (after cast4, only float32 and the halves: 4 or 2 bytes) */
    int64_t xs = st == TGK_F32 ? 4 : 2, ys = dt == TGK_F32 ? 4 : 2;
    if (done < n)
        cast_k<<<tgc_blocks(n - done), TGC_THREADS, 0, s>>>(
            dt, (char *)y + done * ys, st, (const char *)x + done * xs, n - done);
    return tgc_launched();
}
