/* The Hopper forward kernel (sm_90a): the FA2 algorithm of flash_fwd.cuh with
 * both products on wgmma, the warpgroup-wide asynchronous tensor-core
 * instruction that reads its operands from shared memory through matrix
 * descriptors. Built only for sm_90a (flash.mk); flash.cu runs it on compute
 * capability 9.0 for prefill.
 *
 * A block is two warpgroups, 64 query rows each (BM = 128), over key tiles
 * of BN = sm90_bn(D). S = Q K^T is an m64n64k16 wgmma per 64 keys and 16 of
 * D, both operands in shared memory; the softmax runs on its accumulators in registers (the same
 * fragment layout as mma.sync's, so flash_fwd.cuh's row code is reused);
 * O += P V takes P from registers as the A operand and V from shared memory,
 * transposed by the descriptor, D / 64 m64n64k16 wgmmas per 16 keys. Tiles
 * are in the 128-byte swizzled layout wgmma reads: [D / 64][rows][64], each
 * 1024-byte atom of 8 rows of 128 bytes with its 16-byte chunks XORed by row.
 * K and V are double-buffered through cp.async, made visible to the tensor
 * cores' async proxy by a proxy fence before the block barrier. Each tile's
 * softmax overlaps the previous tile's P V on the tensor cores. */
#include "backend/cuda/wgmma.cuh"

namespace tgf {

/* the 128-byte swizzle of a tile of R rows: [D / 64][R][64] */
template <int R> struct WgmmaSwizzle {
    static __device__ __forceinline__ int at(int row, int chunk)
    {
        return (chunk >> 3) * R * 64 + row * 64 + (((chunk & 7) ^ (row & 7)) << 3);
    }
};

template <typename T, int D>
__global__ void __launch_bounds__(256, 1) flash_fwd_sm90(const Params p)
{
#if defined(__CUDA_ARCH_FEAT_SM90_ALL)
    constexpr int BM = 128, BN = sm90_bn(D), NT = 256, NB = BN / 8, ND = D / 8;
    using LQ = WgmmaSwizzle<BM>;
    using LK = WgmmaSwizzle<BN>;
    extern __shared__ unsigned char smem_raw[];
    /* 1024-byte atoms: the swizzle is on absolute address bits */
    T *sQ = reinterpret_cast<T *>(((uintptr_t)smem_raw + 1023) & ~(uintptr_t)1023);
    T *sK = sQ + BM * D;        /* [2][D / 64][BN][64] */
    T *sV = sK + 2 * BN * D;

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, wg = warp >> 2;
    const int g = lane >> 2, tg = lane & 3;
    const Place pc(p, BM, BN, blockIdx.x);
    const T *K = static_cast<const T *>(p.k) + pc.b * p.ks[0] + pc.kvh * p.ks[1];
    const T *V = static_cast<const T *>(p.v) + pc.b * p.vs[0] + pc.kvh * p.vs[1];

    load_queries<T, D, BM, NT, LQ>(sQ, p, pc);
    if (pc.t_begin < pc.t_end)
        load_tile<T, D, BN, NT, LK>(sK, K, p.ks[2], pc.t_begin * BN, p.S);
    cp_async_commit();

    const int row0 = pc.r0 + warp * 16;
    Rows<1> rw;
    rw.init(p, pc.b, pc.h_base, row0, pc.rows, g);
    float acc[ND * 4];
    float m[1][2] = {{-INFINITY, -INFINITY}}, l[1][2] = {{0.f, 0.f}};
#pragma unroll
    for (int i = 0; i < ND * 4; i++)
        acc[i] = 0.f;

    /* Software pipeline: tile t's S = Q K_t^T and the previous tile's
     * O += P V go to the tensor cores together; the softmax of S_t then runs
     * while P V still does, and the accumulator is rescaled once it is done.
     * V lags K by one tile, so two buffers of each suffice. */
    const T *wQ = sQ + wg * 64 * 64;    /* the warpgroup's 64 rows of each 64-column block */
    uint32_t a[BN / 16][4];             /* the previous tile's P */
    for (int t = pc.t_begin; t < pc.t_end; t++) {
        const int kb = (t - pc.t_begin) & 1;
        cp_async_wait<0>();     /* K_t and V_(t-1) have landed */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        /* every thread's copies are in, and every warpgroup is done with
         * tile t-1: K_(t-1)'s and V_(t-2)'s buffers take the next tiles */
        __syncthreads();
        if (t + 1 < pc.t_end)
            load_tile<T, D, BN, NT, LK>(sK + (kb ^ 1) * BN * D, K, p.ks[2], (t + 1) * BN, p.S);
        load_tile<T, D, BN, NT, LK>(sV + kb * BN * D, V, p.vs[2], t * BN, p.S);
        cp_async_commit();

        /* S = Q K^T: K-major both; a k16 step is 32 bytes along a 128-byte row;
         * each 64 keys is one wgmma */
        const T *tK = sK + kb * BN * D;
        float s[NB * 4];
        wgmma_fence();
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++)
#pragma unroll
            for (int nc = 0; nc < BN / 64; nc++)
                Wgmma<T, 64>::ss(s + nc * 32, gmma_desc(wQ + (kk >> 2) * BM * 64 + (kk & 3) * 16, 16, 1024),
                             gmma_desc(tK + (kk >> 2) * BN * 64 + nc * 64 * 64 + (kk & 3) * 16, 16, 1024),
                             kk > 0);
        wgmma_commit();
        if (t > pc.t_begin) {
            issue_pv<T, D, BN, 64>(acc, a, sV + (kb ^ 1) * BN * D);
            wgmma_wait<1>();
        } else {
            wgmma_wait<0>();
        }
        fence_regs<NB * 4>(s);

        scale_and_mask<1, NB>(s, p, rw, t * BN, pc.edge(p, t * BN, BN), tg);
        float alpha[1][2];
        softmax_step<1, NB>(s, m, l, alpha, 1.f);
        wgmma_wait<0>();
        fence_regs<ND * 4>(acc);
        scale_rows<1, ND>(acc, alpha);
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++)
            p_operand<T, NB>(a[kk], s, 0, kk);
    }
    cp_async_wait<0>();
    if (pc.t_begin < pc.t_end) {    /* the last tile's P V */
        asm volatile("fence.proxy.async.shared::cta;\n" ::: "memory");
        __syncthreads();
        issue_pv<T, D, BN, 64>(acc, a, sV + ((pc.t_end - 1 - pc.t_begin) & 1) * BN * D);
        wgmma_wait<0>();
        fence_regs<ND * 4>(acc);
    }
    normalize<1, ND>(acc, l);
    if (gridDim.z > 1) {
        store_partials<1, ND>(p, acc, m, l, rw, row0, pc.rows, pc.b, gridDim.y / (p.hq / p.pack),
                              g, tg);
        return;
    }
    store_rows<T, ND>(p, acc, rw, row0, pc.rows, pc.b, g, tg);
#else
    __trap();   /* built for sm_90a only: flash.cu never launches it elsewhere */
#endif
}

template <typename T, int D> cudaError_t launch_sm90(const Params &p, dim3 grid, cudaStream_t stream)
{
    constexpr size_t smem = (size_t)(128 + 4 * sm90_bn(D)) * D * sizeof(T) + 1024;
    auto kernel = flash_fwd_sm90<T, D>;
    cudaError_t e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e != cudaSuccess)
        return e;
    kernel<<<grid, 256, smem, stream>>>(p);
    return cudaGetLastError();
}

TGF_LAUNCH_INSTANCES(launch_sm90)

} // namespace tgf
