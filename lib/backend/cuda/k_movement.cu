/* Data movement and indexing on the device: any type, by element size. */
#include "k_common.cuh"

template <typename T, typename I>
__global__ void copy_k(tgc_iter it, I n, const T *x, T *y)
{
    TGC_FOR_I(I, i, n) {
        I off[2];
        tgc_offsets<2>(it, i, off);
        y[off[0]] = x[off[1]];
    }
}

#define BY_SIZE(es, K) \
    switch (es) { \
    case 1: K(uint8_t); break; \
    case 2: K(uint16_t); break; \
    case 4: K(uint32_t); break; \
    case 8: K(uint64_t); break; \
    default: return (int)cudaErrorInvalidValue; \
    }

extern "C" int tgc_copy(size_t es, const tgc_iter *it, const void *x, void *y, cudaStream_t s)
{
    int64_t n = tgc_numel(it);
    if (n == 0)
        return 0;
    unsigned g = tgc_blocks(n);
    if (tgc_fits32(it, 2)) {
#define K(T) copy_k<T, uint32_t><<<g, TGC_THREADS, 0, s>>>(*it, (uint32_t)n, (const T *)x, (T *)y)
        BY_SIZE(es, K)
#undef K
    } else {
#define K(T) copy_k<T, int64_t><<<g, TGC_THREADS, 0, s>>>(*it, n, (const T *)x, (T *)y)
        BY_SIZE(es, K)
#undef K
    }
    return tgc_launched();
}

template <typename T>
__global__ void fill_k(int64_t n, T v, T *y)
{
    TGC_FOR(i, n)
        y[i] = v;
}

extern "C" int tgc_fill(size_t es, int64_t n, const void *value, void *y, cudaStream_t s)
{
    if (n == 0)
        return 0;
    unsigned g = tgc_blocks(n);
#define K(T) fill_k<T><<<g, TGC_THREADS, 0, s>>>(n, *(const T *)value, (T *)y)
    BY_SIZE(es, K)
#undef K
    return tgc_launched();
}

__global__ void arange_k(int t, int64_t n, int64_t start, int64_t step, void *y)
{
    TGC_FOR(i, n) {
        if (tgc_is_float(t))
            tgc_st_f(t, y, i, (double)start + (double)i * (double)step);
        else
            tgc_st_i(t, y, i, start + i * step);
    }
}

extern "C" int tgc_arange(tgk_dtype t, int64_t n, int64_t start, int64_t step, void *y,
                          cudaStream_t s)
{
    if (n == 0)
        return 0;
    arange_k<<<tgc_blocks(n), TGC_THREADS, 0, s>>>(t, n, start, step, y);
    return tgc_launched();
}

template <typename T>
__global__ void tri_k(bool upper, int64_t n, int64_t rows, int64_t cols, int64_t k, const T *x,
                      T *y)
{
    TGC_FOR(i, n) {
        int64_t c = i % cols, r = i / cols % rows;
        bool keep = upper ? c - r >= k : c - r <= k;
        y[i] = keep ? x[i] : T(0);
    }
}

extern "C" int tgc_tri(size_t es, bool upper, int64_t batch, int64_t rows, int64_t cols,
                       int64_t k, const void *x, void *y, cudaStream_t s)
{
    int64_t n = batch * rows * cols;
    if (n == 0)
        return 0;
    unsigned g = tgc_blocks(n);
#define K(T) tri_k<T><<<g, TGC_THREADS, 0, s>>>(upper, n, rows, cols, k, (const T *)x, (T *)y)
    BY_SIZE(es, K)
#undef K
    return tgc_launched();
}

/* ---- indexing ------------------------------------------------------------------ */

/* idx[i] normalized to [0, n), or false after recording it in *bad */
__device__ __forceinline__ bool index_at(int it, const void *idx, int64_t i, int64_t n,
                                         int64_t *bad, int64_t *out)
{
    int64_t v = it == TGK_I32 ? ((const int32_t *)idx)[i] : ((const int64_t *)idx)[i];
    int64_t w = v < 0 ? v + n : v;
    if (w < 0 || w >= n) {
        atomicCAS((unsigned long long *)bad, (unsigned long long)INT64_MIN,
                  (unsigned long long)v);
        return false;
    }
    *out = w;
    return true;
}

template <typename T>
__global__ void index_select_k(int64_t total, int64_t n, int64_t inner, const T *x, int64_t nidx,
                               int it, const void *idx, T *y, int64_t *bad)
{
    TGC_FOR(i, total) {
        int64_t in = i % inner, j = i / inner % nidx, o = i / inner / nidx, w;
        if (index_at(it, idx, j, n, bad, &w))
            y[i] = x[(o * n + w) * inner + in];
    }
}

extern "C" int tgc_index_select(size_t es, int64_t outer, int64_t n, int64_t inner,
                                const void *x, int64_t nidx, tgk_dtype it, const void *idx,
                                void *y, int64_t *bad, cudaStream_t s)
{
    int64_t total = outer * nidx * inner;
    if (total == 0)
        return 0;
    unsigned g = tgc_blocks(total);
#define K(T) index_select_k<T><<<g, TGC_THREADS, 0, s>>>(total, n, inner, (const T *)x, nidx, it, \
                                                           idx, (T *)y, bad)
    BY_SIZE(es, K)
#undef K
    return tgc_launched();
}

template <typename T>
__global__ void gather_k(int64_t total, tgc_iter geo, int axis, const T *x, int it,
                         const void *idx, T *y, int64_t *bad)
{
    /* geo: dims = idx's; st[0] = x's contiguous strides */
    TGC_FOR(i, total) {
        int64_t r = i, off = 0, w;
        for (int d = geo.rank - 1; d >= 0; d--) {
            int64_t c = r % geo.dims[d];
            r /= geo.dims[d];
            if (d != axis)
                off += c * geo.st[0][d];
        }
        if (index_at(it, idx, i, geo.st[1][axis], bad, &w))
            y[i] = x[off + w * geo.st[0][axis]];
    }
}

extern "C" int tgc_gather(size_t es, int rank, const int64_t *xdims, const int64_t *idims,
                          int axis, const void *x, tgk_dtype it, const void *idx, void *y,
                          int64_t *bad, cudaStream_t s)
{
    tgc_iter geo = {.rank = rank};
    int64_t total = 1, st = 1;
    for (int d = rank - 1; d >= 0; d--) {
        geo.dims[d] = idims[d];
        geo.st[0][d] = st;
        geo.st[1][d] = xdims[d];        /* the axis' size, read at [axis] */
        st *= xdims[d];
        total *= idims[d];
    }
    if (total == 0)
        return 0;
    unsigned g = tgc_blocks(total);
#define K(T) gather_k<T><<<g, TGC_THREADS, 0, s>>>(total, geo, axis, (const T *)x, it, idx, \
                                                     (T *)y, bad)
    BY_SIZE(es, K)
#undef K
    return tgc_launched();
}

/* One thread a destination element: the last j naming its row wins, as on
 * the CPU, whatever the order threads run in. */
template <typename T>
__global__ void index_copy_k(int64_t total, int64_t n, int64_t inner, int64_t nidx, int it,
                             const void *idx, const T *src, T *y, int64_t *bad)
{
    TGC_FOR(i, total) {
        int64_t in = i % inner, row = i / inner % n, o = i / inner / n, w, last = -1;
        for (int64_t j = 0; j < nidx; j++)
            if (index_at(it, idx, j, n, bad, &w) && w == row)
                last = j;
        if (last >= 0)
            y[i] = src[(o * nidx + last) * inner + in];
    }
}

extern "C" int tgc_index_copy(size_t es, int64_t outer, int64_t n, int64_t inner, int64_t nidx,
                              tgk_dtype it, const void *idx, const void *src, void *y,
                              int64_t *bad, cudaStream_t s)
{
    int64_t total = outer * n * inner;
    if (total == 0)
        return 0;
    unsigned g = tgc_blocks(total);
#define K(T) index_copy_k<T><<<g, TGC_THREADS, 0, s>>>(total, n, inner, nidx, it, idx, \
                                                         (const T *)src, (T *)y, bad)
    BY_SIZE(es, K)
#undef K
    return tgc_launched();
}
