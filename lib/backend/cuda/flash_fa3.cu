/* The FA3-style Hopper forward kernel (sm_90a), the prefill kernel flash.cu
 * picks on compute capability 9.0.
 *
 * A block owns work tiles of BM query rows of one (batch, head) (BM = 128;
 * 192 at d64 when flash.cu asks): one each, or, persistent, one block a
 * multiprocessor walks several, so that a tile's start (its Q and first K
 * and V in flight) overlaps the previous tile's end. It is 1 + BM / 64
 * warpgroups:
 * - warpgroup 0, the producer, gives up its registers (setmaxnreg) and one
 *   thread of it feeds the others: the query tile once, then K and V tiles of
 *   BN keys through the bulk tensor copy engine (cp.async.bulk.tensor, one
 *   tensor map each for q, k and v) into a ring of STAGES buffers, each
 *   buffer with a "full" mbarrier (the copy's bytes landed) and an "empty"
 *   one (every consumer warp is done reading it);
 * - warpgroups 1 .. BM / 64, the consumers, take the registers and own 64
 *   rows each. Per key tile: S = Q K^T (wgmma, both operands in shared memory, one
 *   m64nBNk16 a 16 of D), the online softmax on S in registers (exp2 with the
 *   scale folded into its FFMA), then O += P V with P from registers as the A
 *   operand (one m64nDk16 a 16 keys, V read transposed). Within a warpgroup
 *   tile j's softmax runs while the tensor cores do tile j-1's P V; between
 *   them, named barriers make them issue their products in turn
 *   (ping-pong), so one's softmax runs while another's products do.
 * Tiles are in the swizzled [D / 64][rows][64] layout of wgmma.cuh, written
 * by the copy engine itself (CU_TENSOR_MAP_SWIZZLE_128B); rows past L or S
 * arrive as zeros. */
#include "backend/cuda/wgmma.cuh"

#include <cuda.h>
#include <cudaTypedefs.h>

namespace tgf {

struct Fa3Maps {
    CUtensorMap q, k, v;
};

__device__ __forceinline__ void mbar_init(uint64_t *b, int count)
{
    asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;\n" ::"r"(smem_addr(b)), "r"(count));
}
/* the producer's arrival, announcing the bytes the copies will bring */
__device__ __forceinline__ void mbar_expect_tx(uint64_t *b, uint32_t bytes)
{
    asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\n" ::"r"(smem_addr(b)),
                 "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void mbar_arrive(uint64_t *b)
{
    asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];\n" ::"r"(smem_addr(b)) : "memory");
}
/* until the phase of this parity has completed */
__device__ __forceinline__ void mbar_wait(uint64_t *b, int parity)
{
    uint32_t done;
    do {
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}\n"
                     : "=r"(done)
                     : "r"(smem_addr(b)), "r"(parity)
                     : "memory");
    } while (!done);
}
/* 64 columns from col of rows [row, row + box rows) of one (batch, head) of a
 * [batch, heads, rows, D] tensor into a swizzled [rows][64] block */
__device__ __forceinline__ void tma_load(void *dst, const CUtensorMap *map, int col, int row,
                                         int head, int batch, uint64_t *bar)
{
    asm volatile("cp.async.bulk.tensor.4d.shared::cluster.global.tile.mbarrier::complete_tx::bytes"
                 " [%0], [%1, {%2, %3, %4, %5}], [%6];\n" ::"r"(smem_addr(dst)),
                 "l"(map), "r"(col), "r"(row), "r"(head), "r"(batch), "r"(smem_addr(bar))
                 : "memory");
}
/* named barriers 1 and 2: the consumers' turns */
__device__ __forceinline__ void bar_sync(int id) { asm volatile("bar.sync %0, 256;\n" ::"r"(id) : "memory"); }
__device__ __forceinline__ void bar_arrive(int id) { asm volatile("bar.arrive %0, 256;\n" ::"r"(id) : "memory"); }

/* the work tile a block takes in its round k (gridDim.x blocks take one
 * each a round), or one past the last when it has none */
__device__ __forceinline__ int fa3_tile(int k) { return k * (int)gridDim.x + (int)blockIdx.x; }

/* work tile w of a launch over row_blocks x bh tiles (a block of BM query
 * rows of one batch and head): causal takes the tiles with the most key
 * tiles first, across every head */
__device__ __forceinline__ Place fa3_place(const Params &p, int bm, int bn, int w, int row_blocks,
                                           int bh_count)
{
    if (p.causal)
        return Place(p, bm, bn, row_blocks - 1 - w / bh_count, w % bh_count);
    return Place(p, bm, bn, w % row_blocks, w / row_blocks);
}

template <typename T, int D, int BM, int BN, int STAGES, bool PINGPONG>
__global__ void __launch_bounds__(128 * (BM / 64 + 1), 1)
    flash_fwd_fa3(const __grid_constant__ Params p, const __grid_constant__ Fa3Maps maps,
                  int row_blocks, int bh_count)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    /* NC consumer warpgroups; their registers: what the producer's 24 leave */
    constexpr int NB = BN / 8, ND = D / 8, NC = BM / 64, CREGS = NC == 2 ? 240 : 160;
    static_assert(BM == 128 || BM == 192, "two or three consumer warpgroups");
    constexpr uint32_t TILE_BYTES = BN * D * sizeof(T);
    extern __shared__ unsigned char smem_raw[];
    /* 1024-byte atoms: the swizzle is on absolute address bits */
    T *sQ = reinterpret_cast<T *>(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    T *sK = sQ + BM * D;                /* [STAGES][D / 64][BN][64] */
    T *sV = sK + STAGES * BN * D;
    uint64_t *q_full = reinterpret_cast<uint64_t *>(sV + STAGES * BN * D), *q_empty = q_full + 1;
    uint64_t *k_full = q_full + 2, *k_empty = k_full + STAGES;
    uint64_t *v_full = k_empty + STAGES, *v_empty = v_full + STAGES;

    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, wg = warp >> 2;
    const int work = row_blocks * bh_count;
    if (threadIdx.x == 0) {
        mbar_init(q_full, 1);
        mbar_init(q_empty, 4 * NC);     /* one arrival per consumer warp */
        for (int s = 0; s < STAGES; s++) {
            mbar_init(k_full + s, 1);
            mbar_init(v_full + s, 1);
            mbar_init(k_empty + s, 4 * NC);
            mbar_init(v_empty + s, 4 * NC);
        }
        asm volatile("fence.mbarrier_init.release.cluster;\n" ::: "memory");
    }
    __syncthreads();

    /* The block walks its work tiles (fa3_tile): the K and V
     * ring runs on across them (it counts key tiles since the block's
     * start), and the next tile's Q loads once every consumer warp has done
     * its last S of this one, while they finish the softmax, P V and stores. */
    if (wg == 0) {
        asm volatile("setmaxnreg.dec.sync.aligned.u32 24;\n");
        if (threadIdx.x != 0)
            return;
        int it = 0;
        for (int tile = 0, w = fa3_tile(0); w < work; w = fa3_tile(++tile)) {
            const Place pc = fa3_place(p, BM, BN, w, row_blocks, bh_count);
            mbar_wait(q_empty, (tile & 1) ^ 1);
            mbar_expect_tx(q_full, BM * D * sizeof(T));
#pragma unroll
            for (int c = 0; c < D / 64; c++)
                tma_load(sQ + c * BM * 64, &maps.q, c * 64, pc.r0, pc.h_base, pc.b, q_full);
            for (int t = pc.t_begin; t < pc.t_end; t++, it++) {
                const int st = it % STAGES, phase = (it / STAGES) & 1;
                mbar_wait(k_empty + st, phase ^ 1);
                mbar_expect_tx(k_full + st, TILE_BYTES);
#pragma unroll
                for (int c = 0; c < D / 64; c++)
                    tma_load(sK + st * BN * D + c * BN * 64, &maps.k, c * 64, t * BN, pc.kvh, pc.b,
                             k_full + st);
                mbar_wait(v_empty + st, phase ^ 1);
                mbar_expect_tx(v_full + st, TILE_BYTES);
#pragma unroll
                for (int c = 0; c < D / 64; c++)
                    tma_load(sV + st * BN * D + c * BN * 64, &maps.v, c * 64, t * BN, pc.kvh, pc.b,
                             v_full + st);
            }
        }
        return;
    }
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;\n" ::"n"(CREGS));

    const int cw = wg - 1, g = lane >> 2, tg = lane & 3;
    /* the scale rides in the exp2's FFMA on tiles with nothing to mask */
    const bool fold = p.mask_kind == 0 && p.scale_log2 > 0.f;
    const T *wQ = sQ + cw * 64 * 64;    /* the warpgroup's 64 rows of each 64-column block */
    /* every tile has the same number of key tiles or none (S = 0); the turns
     * go round the consumers (named barrier 1 + c is consumer c's) across
     * tiles: the last one passes first, once, and keeps the block's very
     * last turn */
    if (PINGPONG && cw == NC - 1 && p.S > 0 && (int)blockIdx.x < work)
        bar_arrive(1);
    int it = 0;
    for (int tile = 0, w = fa3_tile(0); w < work; w = fa3_tile(++tile)) {
        const Place pc = fa3_place(p, BM, BN, w, row_blocks, bh_count);
        const int n = pc.t_end - pc.t_begin;
        const bool last_tile = fa3_tile(tile + 1) >= work;
        const int row0 = pc.r0 + cw * 64 + (warp & 3) * 16;
        Rows<1> rw;
        rw.init(p, pc.b, pc.h_base, row0, pc.rows, g);
        float acc[ND * 4];
        float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.f, 0.f}};
#pragma unroll
        for (int i = 0; i < ND * 4; i++)
            acc[i] = 0.f;
        uint32_t a[BN / 16][4];         /* the previous key tile's P */

        mbar_wait(q_full, tile & 1);
        if (n == 0 && lane == 0)
            mbar_arrive(q_empty);
        for (int i = 0; i < n; i++) {
            const int t = pc.t_begin + i, st = (it + i) % STAGES;
            const T *tK = sK + st * BN * D;
            float s[NB * 4];
            mbar_wait(k_full + st, ((it + i) / STAGES) & 1);
            if (PINGPONG)
                bar_sync(1 + cw);
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < D / 16; kk++)
                Wgmma<T, BN>::ss(s, gmma_desc(wQ + (kk >> 2) * BM * 64 + (kk & 3) * 16, 16, 1024),
                                 gmma_desc(tK + (kk >> 2) * BN * 64 + (kk & 3) * 16, 16, 1024), kk > 0);
            wgmma_commit();
            /* the other warpgroup's turn once these are issued; each branch
             * waits for its own groups, so that ptxas sees S complete on
             * every path */
            const bool pass = PINGPONG && !(cw == NC - 1 && last_tile && i == n - 1);
            if (i > 0) {
                const int ps = (it + i - 1) % STAGES;
                mbar_wait(v_full + ps, ((it + i - 1) / STAGES) & 1);
                issue_pv<T, D, BN, D>(acc, a, sV + ps * BN * D);
                if (pass)
                    bar_arrive(cw + 1 == NC ? 1 : cw + 2);
                wgmma_wait<1>();
            } else {
                if (pass)
                    bar_arrive(cw + 1 == NC ? 1 : cw + 2);
                wgmma_wait<0>();
            }
            fence_regs<NB * 4>(s);
            if (lane == 0) {
                mbar_arrive(k_empty + st);
                if (i == n - 1)         /* the tile's last read of Q */
                    mbar_arrive(q_empty);
            }

            const bool edge = pc.edge(p, t * BN, BN);
            float c = 1.f;
            if (fold && !edge)
                c = p.scale_log2;
            else
                scale_and_mask<1, NB>(s, p, rw, t * BN, edge, tg);
            float alpha[1][2];
            softmax_step<1, NB>(s, m, l, alpha, c);
            wgmma_wait<0>();
            fence_regs<ND * 4>(acc);
            if (i > 0 && lane == 0)
                mbar_arrive(v_empty + (it + i - 1) % STAGES);
            scale_rows<1, ND>(acc, alpha);
#pragma unroll
            for (int kk = 0; kk < BN / 16; kk++)
                p_operand<T, NB>(a[kk], s, 0, kk);
        }
        it += n;
        if (n > 0) {                    /* the last key tile's P V */
            const int ps = (it - 1) % STAGES;
            mbar_wait(v_full + ps, ((it - 1) / STAGES) & 1);
            issue_pv<T, D, BN, D>(acc, a, sV + ps * BN * D);
            wgmma_wait<0>();
            fence_regs<ND * 4>(acc);
            if (lane == 0)
                mbar_arrive(v_empty + ps);
        }
        normalize<1, ND>(acc, l);
        store_rows<T, ND>(p, acc, rw, row0, pc.rows, pc.b, g, tg);
    }
#else
    __trap();   /* built for sm_90a only: flash.cu never launches it elsewhere */
#endif
}

/* cuTensorMapEncodeTiled from the driver, through the runtime (no -lcuda) */
static PFN_cuTensorMapEncodeTiled_v12000 encode_fn()
{
    static PFN_cuTensorMapEncodeTiled_v12000 fn = nullptr;
    if (!fn) {
        void *f = nullptr;
        cudaDriverEntryPointQueryResult q;
        if (cudaGetDriverEntryPointByVersion("cuTensorMapEncodeTiled", &f, 12000, cudaEnableDefault, &q) ==
                cudaSuccess &&
            q == cudaDriverEntryPointSuccess)
            fn = reinterpret_cast<PFN_cuTensorMapEncodeTiled_v12000>(f);
    }
    return fn;
}

/* a [batch, heads, rows, D] operand (element strides st: batch, head, row)
 * read in boxes of 64 columns by box_rows rows */
template <typename T>
static bool encode_map(CUtensorMap *map, const void *base, const int64_t st[3], int batch, int heads,
                       int rows, int D, int box_rows)
{
    PFN_cuTensorMapEncodeTiled_v12000 fn = encode_fn();
    if (!fn)
        return false;
    const cuuint64_t dim[4] = {(cuuint64_t)D, (cuuint64_t)(rows > 0 ? rows : 1), (cuuint64_t)heads,
                               (cuuint64_t)batch};
    const cuuint64_t stride[3] = {st[2] * sizeof(T), st[1] * sizeof(T), st[0] * sizeof(T)};
    const cuuint32_t box[4] = {64, (cuuint32_t)box_rows, 1, 1}, one[4] = {1, 1, 1, 1};
    const CUtensorMapDataType ty = Mma<T>::is_half ? CU_TENSOR_MAP_DATA_TYPE_FLOAT16
                                                   : CU_TENSOR_MAP_DATA_TYPE_BFLOAT16;
    return fn(map, ty, 4, const_cast<void *>(base), dim, stride, box, one, CU_TENSOR_MAP_INTERLEAVE_NONE,
              CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
              CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE) == CUDA_SUCCESS;
}

template <typename T, int D>
cudaError_t launch_fa3(const Params &p, dim3 grid, int bm, bool persistent, cudaStream_t stream)
{
    constexpr int BN = fa3_bn(D), STAGES = fa3_stages(D);
    const size_t smem = (size_t)(bm + 2 * STAGES * BN) * D * sizeof(T) + (2 + 4 * STAGES) * 8 + 1024;
    const int batch = (int)(grid.y / p.hq);
    Fa3Maps maps;
    if (!encode_map<T>(&maps.q, p.q, p.qs, batch, p.hq, p.L, D, bm) ||
        !encode_map<T>(&maps.k, p.k, p.ks, batch, p.hk, p.S, D, BN) ||
        !encode_map<T>(&maps.v, p.v, p.vs, batch, p.hk, p.S, D, BN))
        return cudaErrorNotSupported;
    auto kernel = flash_fwd_fa3<T, D, 128, BN, STAGES, TGF_FA3_PINGPONG>;
    if constexpr (D == 64)
        if (bm == 192)
            kernel = flash_fwd_fa3<T, D, 192, BN, STAGES, TGF_FA3_PINGPONG>;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return e;
    /* persistent: one block a multiprocessor (a block fills one) */
    const int work = (int)(grid.x * grid.y);
    int dev = 0, sms = 132;
    if (cudaGetDevice(&dev) != cudaSuccess ||
        cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev) != cudaSuccess)
        sms = 132;
    const int blocks = persistent && sms < work ? sms : work;
    kernel<<<blocks, 128 * (bm / 64 + 1), smem, stream>>>(p, maps, (int)grid.x, (int)grid.y);
    return cudaGetLastError();
}

#define TGF_FA3_INSTANCE(T, D) \
    template cudaError_t launch_fa3<T, D>(const Params &, dim3, int, bool, cudaStream_t);
TGF_FA3_INSTANCE(__nv_bfloat16, 64)
TGF_FA3_INSTANCE(__nv_bfloat16, 128)
TGF_FA3_INSTANCE(__nv_bfloat16, 256)
TGF_FA3_INSTANCE(__half, 64)
TGF_FA3_INSTANCE(__half, 128)
TGF_FA3_INSTANCE(__half, 256)

} // namespace tgf
