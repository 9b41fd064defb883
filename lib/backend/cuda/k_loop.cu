/* A LOOP group's program (kern.h, tgc_loop): one thread an element, or one
 * warp an output row where the root reduces. Index arithmetic in 32 bits
 * where every offset fits (I): the per-node kernels' 64-bit divisions are
 * most of their time on memory-bound shapes. */
#include "k_common.cuh"
#include "../cpu/kernels/scalar_ops.h"

/* The group's value at offsets off (one per input): its steps in order,
 * each result rounded to float32; r holds them (local memory: the program
 * is data). */
template <typename I>
__device__ __forceinline__ float operand(const tgc_loop &l, const float *r, const I *off, int o)
{
    return o < 0 ? l.in[-1 - o][off[-1 - o]] : r[o];
}

template <typename I>
__device__ float eval(const tgc_loop &l, const I *off)
{
    float r[TGC_LOOP_MAX_STEPS];
    for (int s = 0; s < l.nstep; s++) {
        const tgc_loop_step &st = l.step[s];
        double a = operand(l, r, off, st.a);
        r[s] = st.binary ? (float)tgk_binary_f64((tgk_binary_op)st.op, a, operand(l, r, off, st.b))
                         : (float)tgk_unary_f64((tgk_unary_op)st.op, a, &st.p);
    }
    return operand(l, r, off, l.res);
}

/* off[k] += input k's offset of index i over dims [from, to) */
template <typename I>
__device__ __forceinline__ void offsets(const tgc_loop &l, int from, int to, I i, I *off)
{
    for (int d = to - 1; d >= from; d--) {
        I n = (I)l.dims[d], c = i % n;
        i /= n;
        for (int k = 0; k < l.nin; k++)
            off[k] += c * (I)l.st[k][d];
    }
}

template <typename I>
__global__ void loop_k(tgc_loop l, float *y, I n)
{
    for (I i = blockIdx.x * (I)blockDim.x + threadIdx.x; i < n; i += (I)gridDim.x * blockDim.x) {
        I off[TGC_LOOP_MAX_IN] = {0};
        offsets(l, 0, l.rank, i, off);
        y[i] = eval(l, off);
    }
}

#define WARPS 8

/* one warp a row of the kept dims; lanes stride over the reduced ones and
 * combine by shuffles, as tgc_reduce does */
template <typename I>
__global__ void loop_reduce_k(tgc_loop l, float *y, I rows, I len)
{
    I w = blockIdx.x * (I)WARPS + threadIdx.x / 32, lane = threadIdx.x % 32;
    for (I row = w; row < rows; row += (I)gridDim.x * WARPS) {
        I base[TGC_LOOP_MAX_IN] = {0};
        offsets(l, 0, l.nkeep, row, base);
        double acc = 0;
        for (I j = lane; j < len; j += 32) {
            I off[TGC_LOOP_MAX_IN];
            for (int k = 0; k < l.nin; k++)
                off[k] = base[k];
            offsets(l, l.nkeep, l.rank, j, off);
            acc += eval(l, off);
        }
        for (int o = 16; o; o /= 2)
            acc += __shfl_xor_sync(~0u, acc, o);
        if (lane == 0)
            y[row] = (float)(l.red == TGK_REDUCE_MEAN ? acc / (double)len : acc);
    }
}

template <typename I>
static void launch(const tgc_loop *l, float *y, int64_t rows, int64_t len, cudaStream_t s)
{
    if (l->nkeep == l->rank)
        loop_k<I><<<tgc_blocks(rows), TGC_THREADS, 0, s>>>(*l, y, (I)rows);
    else
        loop_reduce_k<I><<<tgc_blocks(rows, WARPS), WARPS * 32, 0, s>>>(*l, y, (I)rows, (I)len);
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
        launch<uint32_t>(l, y, rows, len, s);
    else
        launch<int64_t>(l, y, rows, len, s);
    return tgc_launched();
}
