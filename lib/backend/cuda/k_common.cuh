/* What the CUDA kernels share: elements of any dtype read as double or int64
 * and written back with the CPU's rules (lib/elem.h: float to integer
 * truncates and saturates, NaN gives 0, bool is x != 0, integers wrap), an
 * iteration space's offsets, and the launch shape. */
#ifndef TG_BACKEND_CUDA_K_COMMON_CUH
#define TG_BACKEND_CUDA_K_COMMON_CUH

#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <math.h>
#include <stdint.h>

#include "kern.h"

#define TGC_THREADS 256

static inline unsigned tgc_blocks(int64_t n, int per = TGC_THREADS)
{
    int64_t b = (n + per - 1) / per;
    return (unsigned)(b < 1 ? 1 : b > 0x7fffffff ? 0x7fffffff : b);
}

/* grid-stride loop over [0, n) */
#define TGC_FOR(i, n) \
    for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < (n); \
         i += (int64_t)gridDim.x * blockDim.x)

__device__ __forceinline__ bool tgc_is_float(int t)
{
    return t >= TGK_F32 && t <= TGK_BF16;
}

__device__ __forceinline__ double tgc_ld_f(int t, const void *p, int64_t i)
{
    switch (t) {
    case TGK_F32: return ((const float *)p)[i];
    case TGK_F64: return ((const double *)p)[i];
    case TGK_F16: return (double)__half2float(((const __half *)p)[i]);
    case TGK_BF16: return (double)__bfloat162float(((const __nv_bfloat16 *)p)[i]);
    case TGK_I8: return ((const int8_t *)p)[i];
    case TGK_U8: return ((const uint8_t *)p)[i];
    case TGK_I16: return ((const int16_t *)p)[i];
    case TGK_I32: return ((const int32_t *)p)[i];
    case TGK_I64: return (double)((const int64_t *)p)[i];
    case TGK_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return 0;
    }
}

__device__ __forceinline__ int64_t tgc_f_to_i64(double v)
{
    if (v != v)
        return 0;
    if (v <= -9223372036854775808.0)
        return INT64_MIN;
    if (v >= 9223372036854775807.0)
        return INT64_MAX;
    return (int64_t)v;
}

__device__ __forceinline__ int64_t tgc_ld_i(int t, const void *p, int64_t i)
{
    switch (t) {
    case TGK_I8: return ((const int8_t *)p)[i];
    case TGK_U8: return ((const uint8_t *)p)[i];
    case TGK_I16: return ((const int16_t *)p)[i];
    case TGK_I32: return ((const int32_t *)p)[i];
    case TGK_I64: return ((const int64_t *)p)[i];
    case TGK_BOOL: return ((const uint8_t *)p)[i] != 0;
    default: return tgc_f_to_i64(tgc_ld_f(t, p, i));
    }
}

/* an integer into type t: wraps, like NumPy's astype */
__device__ __forceinline__ void tgc_st_i(int t, void *p, int64_t i, int64_t v)
{
    switch (t) {
    case TGK_I8: ((int8_t *)p)[i] = (int8_t)v; break;
    case TGK_U8: ((uint8_t *)p)[i] = (uint8_t)v; break;
    case TGK_I16: ((int16_t *)p)[i] = (int16_t)v; break;
    case TGK_I32: ((int32_t *)p)[i] = (int32_t)v; break;
    case TGK_I64: ((int64_t *)p)[i] = v; break;
    case TGK_BOOL: ((uint8_t *)p)[i] = v != 0; break;
    case TGK_F32: ((float *)p)[i] = (float)v; break;
    case TGK_F64: ((double *)p)[i] = (double)v; break;
    case TGK_F16: ((__half *)p)[i] = __double2half((double)v); break;
    case TGK_BF16: ((__nv_bfloat16 *)p)[i] = __double2bfloat16((double)v); break;
    default: break;
    }
}

/* a double into type t: narrow floats rounded from the double, integers
 * truncated and saturated to their range */
__device__ __forceinline__ void tgc_st_f(int t, void *p, int64_t i, double v)
{
    switch (t) {
    case TGK_F32: ((float *)p)[i] = (float)v; return;
    case TGK_F64: ((double *)p)[i] = v; return;
    case TGK_F16: ((__half *)p)[i] = __double2half(v); return;
    case TGK_BF16: ((__nv_bfloat16 *)p)[i] = __double2bfloat16(v); return;
    case TGK_BOOL: ((uint8_t *)p)[i] = v != 0; return;
    default: break;
    }
    int64_t x = tgc_f_to_i64(v), lo, hi;
    switch (t) {
    case TGK_I8: lo = -128; hi = 127; break;
    case TGK_U8: lo = 0; hi = 255; break;
    case TGK_I16: lo = -32768; hi = 32767; break;
    case TGK_I32: lo = INT32_MIN; hi = INT32_MAX; break;
    default: lo = INT64_MIN; hi = INT64_MAX; break;
    }
    tgc_st_i(t, p, i, x < lo ? lo : x > hi ? hi : x);
}

/* grid-stride loop over [0, n) in index type I */
#define TGC_FOR_I(I, i, n) \
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < (n); i += (I)gridDim.x * blockDim.x)

/* The offsets of element i of it's space in operands 0..nop-1, in index
 * type I: int64_t, or uint32_t where tgc_fits32 says all fit (a 64-bit
 * division costs several times a 32-bit one, and these are most of a
 * strided kernel's work). */
template <int NOP, typename I = int64_t>
__device__ __forceinline__ void tgc_offsets(const tgc_iter &it, I i, I *off)
{
    for (int k = 0; k < NOP; k++)
        off[k] = 0;
    for (int d = it.rank - 1; d >= 0; d--) {
        I n = (I)it.dims[d], c = i % n;
        i /= n;
        for (int k = 0; k < NOP; k++)
            off[k] += c * (I)it.st[k][d];
    }
}

static inline int64_t tgc_numel(const tgc_iter *it)
{
    int64_t n = 1;
    for (int d = 0; d < it->rank; d++)
        n *= it->dims[d];
    return n;
}

/* Whether it's element count and operands 0..nop-1's offsets fit
 * uint32_t: strides not negative, the last element's offsets under 2^31. */
static inline bool tgc_fits32(const tgc_iter *it, int nop)
{
    if (tgc_numel(it) >= INT32_MAX)
        return false;
    for (int k = 0; k < nop; k++) {
        int64_t reach = 0;
        for (int d = 0; d < it->rank; d++) {
            if (it->st[k][d] < 0 || it->st[k][d] >= INT32_MAX)
                return false;
            reach += (it->dims[d] > 0 ? it->dims[d] - 1 : 0) * it->st[k][d];
            if (reach >= INT32_MAX)
                return false;
        }
    }
    return true;
}

/* the last launch's error, as every launcher returns it */
static inline int tgc_launched(void)
{
    return (int)cudaGetLastError();
}

#endif
