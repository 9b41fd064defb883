/* Reductions, arg reductions, softmax and cumsum: one warp an output (a
 * row), its lanes striding over the reduced elements, then combined by
 * shuffles. As the CPU (reduce.c): floats accumulate in double, integers in
 * wrapping int64; max/min propagate NaN. */
#include "k_common.cuh"

#define WARPS 8         /* a block: 8 warps, 8 outputs */

__device__ __forceinline__ double shfl(double v, int o) { return __shfl_xor_sync(~0u, v, o); }
__device__ __forceinline__ int64_t shfl(int64_t v, int o)
{
    return (int64_t)__shfl_xor_sync(~0u, (long long)v, o);
}

template <typename A>
__device__ __forceinline__ A combine(int op, A a, A v)
{
    switch (op) {
    case TGK_REDUCE_SUM: case TGK_REDUCE_MEAN: case TGK_REDUCE_VAR:
        return (A)((uint64_t)a + (uint64_t)v);
    case TGK_REDUCE_PROD: return (A)((uint64_t)a * (uint64_t)v);
    case TGK_REDUCE_MAX: return v > a ? v : a;
    case TGK_REDUCE_MIN: return v < a ? v : a;
    default: return (a != 0 || v != 0);       /* any */
    }
}

template <>
__device__ __forceinline__ double combine<double>(int op, double a, double v)
{
    switch (op) {
    case TGK_REDUCE_SUM: case TGK_REDUCE_MEAN: case TGK_REDUCE_VAR: return a + v;
    case TGK_REDUCE_PROD: return a * v;
    case TGK_REDUCE_MAX: return v > a || v != v || a != a ? (a != a ? a : v) : a;
    case TGK_REDUCE_MIN: return v < a || v != v || a != a ? (a != a ? a : v) : a;
    default: return a != 0 || v != 0;
    }
}

template <typename A>
__device__ __forceinline__ A start(int op)
{
    switch (op) {
    case TGK_REDUCE_PROD: return (A)1;
    case TGK_REDUCE_MAX: return sizeof(A) == 8 && (A)0.5 == 0 ? (A)INT64_MIN : (A)-INFINITY;
    case TGK_REDUCE_MIN: return sizeof(A) == 8 && (A)0.5 == 0 ? (A)INT64_MAX : (A)INFINITY;
    default: return (A)0;
    }
}

template <typename A>
__device__ __forceinline__ A load(int t, const void *x, int64_t i);
template <>
__device__ __forceinline__ double load<double>(int t, const void *x, int64_t i)
{
    return tgc_ld_f(t, x, i);
}
template <>
__device__ __forceinline__ int64_t load<int64_t>(int t, const void *x, int64_t i)
{
    return tgc_ld_i(t, x, i);
}

/* it: kept dims [0, nkeep), reduced dims after; st[1]: x's strides */
template <typename A>
__device__ A warp_reduce(int op, int t, const tgc_iter &it, int nkeep, int64_t base,
                         int64_t nred, const void *x, A mean)
{
    A acc = start<A>(op);
    for (int64_t r = threadIdx.x % 32; r < nred; r += 32) {
        int64_t off = base, q = r;
        for (int d = it.rank - 1; d >= nkeep; d--) {
            off += q % it.dims[d] * it.st[1][d];
            q /= it.dims[d];
        }
        A v = load<A>(t, x, off);
        if (op == TGK_REDUCE_VAR) {
            A dv = v - mean;
            v = dv * dv;
        }
        acc = combine<A>(op, acc, v);
    }
    for (int o = 16; o; o >>= 1)
        acc = combine<A>(op, acc, shfl(acc, o));
    return acc;
}

template <typename A>
__global__ void reduce_k(int op, int t, tgc_iter it, int nkeep, int64_t nout, int64_t nred,
                         int64_t correction, const void *x, void *y)
{
    int64_t o = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32;
    if (o >= nout)
        return;
    int64_t base = 0, q = o;
    for (int d = nkeep - 1; d >= 0; d--) {
        base += q % it.dims[d] * it.st[1][d];
        q /= it.dims[d];
    }
    A r;
    if (op == TGK_REDUCE_MEAN || op == TGK_REDUCE_VAR) {
        A sum = warp_reduce<A>(TGK_REDUCE_SUM, t, it, nkeep, base, nred, x, (A)0);
        A mean = sum / (A)nred;
        r = mean;
        if (op == TGK_REDUCE_VAR)
            r = warp_reduce<A>(TGK_REDUCE_VAR, t, it, nkeep, base, nred, x, mean) /
                (A)(nred - correction);
    } else {
        r = warp_reduce<A>(op, t, it, nkeep, base, nred, x, (A)0);
    }
    if (threadIdx.x % 32)
        return;
    if (op == TGK_REDUCE_ANY)
        ((uint8_t *)y)[o] = r != 0;
    else if (sizeof(A) == 8 && (A)0.5 != 0)
        tgc_st_f(t, y, o, (double)r);
    else
        tgc_st_i(t, y, o, (int64_t)r);
}

extern "C" int tgc_reduce(tgk_reduce_op op, tgk_dtype t, const tgc_iter *it, int nkeep,
                          int64_t correction, const void *x, void *y, cudaStream_t s)
{
    int64_t nout = 1, nred = 1;
    for (int d = 0; d < it->rank; d++)
        *(d < nkeep ? &nout : &nred) *= it->dims[d];
    if (nout == 0)
        return 0;
    unsigned g = tgc_blocks(nout, WARPS);
    bool fl = t == TGK_F32 || t == TGK_F64 || t == TGK_F16 || t == TGK_BF16;
    if (fl || op == TGK_REDUCE_MEAN || op == TGK_REDUCE_VAR)
        reduce_k<double><<<g, 32 * WARPS, 0, s>>>(op, t, *it, nkeep, nout, nred, correction, x, y);
    else
        reduce_k<int64_t><<<g, 32 * WARPS, 0, s>>>(op, t, *it, nkeep, nout, nred, correction, x,
                                                    y);
    return tgc_launched();
}

/* ---- argmax, argmin: the first among equals, NaN the largest and smallest ------ */

__device__ __forceinline__ bool better(bool max, double v, int64_t j, double bv, int64_t bj)
{
    if (bj < 0)
        return true;
    bool vn = v != v, bn = bv != bv;
    if (vn || bn)
        return vn && (!bn || j < bj);
    if (v == bv)
        return j < bj;
    return max ? v > bv : v < bv;
}

__global__ void arg_k(bool max, int t, int64_t nout, int64_t n, int64_t inner, const void *x,
                      int64_t *y)
{
    int64_t o = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32;
    if (o >= nout)
        return;
    int64_t base = o / inner * n * inner + o % inner, bj = -1;
    double bv = 0;
    bool fl = tgc_is_float(t);
    for (int64_t j = threadIdx.x % 32; j < n; j += 32) {
        /* integers compare exactly: as int64 through the double's bits is
         * not exact past 2^53, so large i64 compare in int64 below */
        double v = fl ? tgc_ld_f(t, x, base + j * inner) : 0;
        if (!fl) {
            int64_t iv = tgc_ld_i(t, x, base + j * inner);
            if (bj < 0 || (max ? iv > __double_as_longlong(bv) : iv < __double_as_longlong(bv))) {
                bv = __longlong_as_double(iv);
                bj = j;
            }
            continue;
        }
        if (better(max, v, j, bv, bj)) {
            bv = v;
            bj = j;
        }
    }
    for (int o2 = 16; o2; o2 >>= 1) {
        double v = __shfl_xor_sync(~0u, bv, o2);
        int64_t j = (int64_t)__shfl_xor_sync(~0u, (long long)bj, o2);
        if (j < 0)
            continue;
        bool take;
        if (fl) {
            take = better(max, v, j, bv, bj);
        } else {
            int64_t iv = __double_as_longlong(v), ib = __double_as_longlong(bv);
            take = bj < 0 || (max ? iv > ib : iv < ib) || (iv == ib && j < bj);
        }
        if (take) {
            bv = v;
            bj = j;
        }
    }
    if (threadIdx.x % 32 == 0)
        y[o] = bj < 0 ? 0 : bj;
}

extern "C" int tgc_arg_reduce(bool max, tgk_dtype t, int64_t outer, int64_t n, int64_t inner,
                              const void *x, int64_t *y, cudaStream_t s)
{
    int64_t nout = outer * inner;
    if (nout == 0)
        return 0;
    arg_k<<<tgc_blocks(nout, WARPS), 32 * WARPS, 0, s>>>(max, t, nout, n, inner, x, y);
    return tgc_launched();
}

/* ---- softmax, log_softmax over the middle axis of [outer, len, inner] ----------- */

__global__ void softmax_k(const float *x, float *y, int64_t rows, int64_t len, int64_t inner,
                          bool log)
{
    int64_t r = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32;
    if (r >= rows)
        return;
    int lane = threadIdx.x % 32;
    int64_t base = r / inner * len * inner + r % inner;
    float m = -INFINITY;
    for (int64_t j = lane; j < len; j += 32)
        m = fmaxf(m, x[base + j * inner]);
    for (int o = 16; o; o >>= 1)
        m = fmaxf(m, __shfl_xor_sync(~0u, m, o));
    float ref = m == -INFINITY ? 0.0f : m;     /* a row of -inf: exp gives 0, not NaN */
    float sum = 0;
    for (int64_t j = lane; j < len; j += 32)
        sum += expf(x[base + j * inner] - ref);
    for (int o = 16; o; o >>= 1)
        sum += __shfl_xor_sync(~0u, sum, o);
    float shift = ref + logf(sum), inv = 1.0f / sum;
    for (int64_t j = lane; j < len; j += 32) {
        float v = x[base + j * inner];
        y[base + j * inner] = log ? v - shift : expf(v - ref) * inv;
    }
}

extern "C" int tgc_softmax_f32(const float *x, float *y, int64_t outer, int64_t len,
                               int64_t inner, bool log, cudaStream_t s)
{
    int64_t rows = outer * inner;
    if (rows == 0 || len == 0)
        return 0;
    softmax_k<<<tgc_blocks(rows, WARPS), 32 * WARPS, 0, s>>>(x, y, rows, len, inner, log);
    return tgc_launched();
}

/* ---- cumsum: one thread a line ---------------------------------------------------- */

__global__ void cumsum_k(int t, int64_t lines, int64_t n, int64_t inner, bool exclusive,
                         bool reverse, const void *x, void *y)
{
    TGC_FOR(l, lines) {
        int64_t base = l / inner * n * inner + l % inner;
        double fa = 0;
        int64_t ia = 0;
        bool fl = tgc_is_float(t);
        for (int64_t k = 0; k < n; k++) {
            int64_t j = base + (reverse ? n - 1 - k : k) * inner;
            double fv = fl ? tgc_ld_f(t, x, j) : 0;
            int64_t iv = fl ? 0 : tgc_ld_i(t, x, j);
            if (!exclusive) {
                fa += fv;
                ia = (int64_t)((uint64_t)ia + (uint64_t)iv);
            }
            if (fl)
                tgc_st_f(t, y, j, fa);
            else
                tgc_st_i(t, y, j, ia);
            if (exclusive) {
                fa += fv;
                ia = (int64_t)((uint64_t)ia + (uint64_t)iv);
            }
        }
    }
}

extern "C" int tgc_cumsum(tgk_dtype t, int64_t outer, int64_t n, int64_t inner, bool exclusive,
                          bool reverse, const void *x, void *y, cudaStream_t s)
{
    int64_t lines = outer * inner;
    if (lines == 0 || n == 0)
        return 0;
    cumsum_k<<<tgc_blocks(lines), TGC_THREADS, 0, s>>>(t, lines, n, inner, exclusive, reverse, x,
                                                        y);
    return tgc_launched();
}
