/* A LOOP group's program (kern.h, tgc_loop): one thread an element, or one
 * warp an output row where the root reduces. Index arithmetic in 32 bits
 * where every offset fits (I): the per-node kernels' 64-bit divisions are
 * most of their time on memory-bound shapes. The loops over dims unrolled
 * to the space's rank R (a kernel each for ranks 1 to 4, one for any up to
 * TGK_MAX_RANK), so the coordinates stay in registers and no predicated
 * division or offset runs for a dim the space has not; the program's values
 * (its inputs', then its steps') live in shared memory, value v of thread t
 * at v * blockDim.x + t (a per-thread array indexed by the program is local
 * memory, spilled past L1 at a few hundred bytes a thread). */
#include "k_common.cuh"
#include "../cpu/kernels/scalar_ops.h"

#define WARPS 8

/* c[d] = index i's coordinate along dims [from, to) (the others untouched) */
template <typename I, int R>
__device__ __forceinline__ void coords(const tgc_loop &l, int from, int to, I i, I *c)
{
#pragma unroll
    for (int d = R - 1; d >= 0; d--)
        if (d >= from && d < to) {
            I n = (I)l.dims[d];
            c[d] = i % n;
            i /= n;
        }
}

/* A step's result: tgk_binary_f64 and tgk_unary_f64 (the node's own
 * kernel), but a square as a product: pow's general path is some hundred
 * double operations (RMSNorm's x ** 2), and a float squared is exact in
 * double, so the float it rounds to is the correctly rounded square. */
__device__ __forceinline__ float step_value(const tgc_loop_step &st, double a, double b)
{
    if (!st.binary)
        return (float)tgk_unary_f64((tgk_unary_op)st.op, a, &st.p);
    if (st.op == TGK_POW && b == 2.0)
        return (float)(a * a);
    return (float)tgk_binary_f64((tgk_binary_op)st.op, a, b);
}

/* The group's value at coordinates c: the inputs read into v, then its steps
 * in order, each result rounded to float32. */
template <typename I, int R>
__device__ float eval(const tgc_loop &l, const I *c, float *v)
{
    unsigned t = threadIdx.x, nt = blockDim.x;
    for (int k = 0; k < l.nin; k++) {
        I off = 0;
#pragma unroll
        for (int d = 0; d < R; d++)
            if (d < l.rank)
                off += c[d] * (I)l.st[k][d];
        v[k * nt + t] = l.in[k][off];
    }
    for (int s = 0; s < l.nstep; s++) {
        const tgc_loop_step &st = l.step[s];
        int ia = st.a < 0 ? -1 - st.a : l.nin + st.a, ib = st.b < 0 ? -1 - st.b : l.nin + st.b;
        v[(l.nin + s) * nt + t] = step_value(st, v[ia * nt + t], st.binary ? v[ib * nt + t] : 0);
    }
    int r = l.res < 0 ? -1 - l.res : l.nin + l.res;
    return v[r * nt + t];
}

template <typename I, int R>
__global__ void loop_k(tgc_loop l, float *y, I n)
{
    extern __shared__ float v[];
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I c[R];
        coords<I, R>(l, 0, l.rank, i, c);
        y[i] = eval<I, R>(l, c, v);
    }
}

/* one warp a row of the kept dims; lanes stride over the reduced ones and
 * combine by shuffles, as tgc_reduce does */
template <typename I, int R>
__global__ void loop_reduce_k(tgc_loop l, float *y, I rows, I len)
{
    extern __shared__ float v[];
    I w = blockIdx.x * (I)WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    for (I row = w; row < rows; row += (I)gridDim.x * WARPS) {
        I c[R];
        coords<I, R>(l, 0, l.nkeep, row, c);
        double acc = 0;
        for (I j = lane; j < len; j += 32) {
            coords<I, R>(l, l.nkeep, l.rank, j, c);
            acc += eval<I, R>(l, c, v);
        }
        for (int o = 16; o; o /= 2)
            acc += __shfl_xor_sync(~0u, acc, o);
        if (lane == 0)
            y[row] = (float)(l.red == TGK_REDUCE_MEAN ? acc / (double)len : acc);
    }
}

template <typename I, int R>
static void launch(const tgc_loop *l, float *y, int64_t rows, int64_t len, cudaStream_t s)
{
    size_t sh = (size_t)(l->nin + l->nstep) * TGC_THREADS * sizeof(float);
    if (l->nkeep == l->rank)
        loop_k<I, R><<<tgc_blocks(rows), TGC_THREADS, sh, s>>>(*l, y, (I)rows);
    else
        loop_reduce_k<I, R><<<tgc_blocks(rows, WARPS), WARPS * 32, sh, s>>>(*l, y, (I)rows,
                                                                             (I)len);
}

template <typename I>
static void launch_rank(const tgc_loop *l, float *y, int64_t rows, int64_t len, cudaStream_t s)
{
    switch (l->rank) {
    case 0: case 1: launch<I, 1>(l, y, rows, len, s); break;
    case 2: launch<I, 2>(l, y, rows, len, s); break;
    case 3: launch<I, 3>(l, y, rows, len, s); break;
    case 4: launch<I, 4>(l, y, rows, len, s); break;
    default: launch<I, TGK_MAX_RANK>(l, y, rows, len, s); break;
    }
}

extern "C" int tgc_loop_f32(const tgc_loop *l, float *y, cudaStream_t s)
{
    int64_t rows = 1, len = 1;
    for (int d = 0; d < l->rank; d++)
        *(d < l->nkeep ? &rows : &len) *= l->dims[d];
    if (rows == 0)
        return 0;
    /* every offset is below the element count: inputs broadcast into the space */
    if (rows * len < INT32_MAX)
        launch_rank<uint32_t>(l, y, rows, len, s);
    else
        launch_rank<int64_t>(l, y, rows, len, s);
    return tgc_launched();
}
