/* The FlashAttention-2 forward tile kernel (mma.sync m16n8k16, sm_80 and up).
 *
 * A block owns BM query rows of one (batch, head group) and walks key tiles
 * of BN rows: S = Q K^T on the tensor cores (fp32), the masks, the online
 * softmax in the exp2 domain (running max m and sum l per row, the
 * accumulator rescaled when m grows), then O += P V with P reused from the
 * score registers as the A operand. K and V tiles go through a ring of
 * STAGES buffers in shared memory with cp.async, the next STAGES - 1 pairs
 * loading while this one is used (one block barrier a tile).
 * Each warp owns 16 * MT rows, so no block-level reduction is needed.
 *
 * Rows: row r of a (batch, head group) is head h_base + r / L, query r % L.
 * With pack = 1 that is one head (prefill); with pack = hq / hk (decode) all
 * the query heads sharing one kv head are rows of the same tile, so K and V
 * are read once per group. blockIdx.z splits the key tiles (flash-decoding):
 * each split writes its normalized partial output and log-sum-exp, and
 * flash_combine merges them. */
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <stdint.h>

namespace tgf {

struct Params {
    const void *q, *k, *v;
    void *o;
    int64_t qs[3], ks[3], vs[3], os[3];
    const void *mask;
    int mask_kind;
    int64_t ms[4];
    int hq, hk, L, S;
    int group;                  /* hq / hk */
    int pack;                   /* query heads a block's rows span: 1 or group */
    int tiles_per_split;        /* key tiles a blockIdx.z covers */
    int causal;
    float scale_log2;           /* scale * log2(e) */
    float *part_o;              /* [split][batch][hq][L][D] when gridDim.z > 1 */
    float *part_lse;            /* [split][batch][hq][L], log2 domain */
};

/* m16n8k16 mma.sync, fp32 accumulators, and the packing of two floats into
 * the operand type's pair (CT: its C type, PT: PTX's name, P2: the pair) */
template <typename T> struct Mma;
#define TGF_MMA(CT, PT, P2, CVT)                                                              \
    template <> struct Mma<CT> {                                                              \
        static constexpr bool is_half = sizeof(PT) == sizeof("f16");                          \
        static __device__ __forceinline__ void run(float c[4], const uint32_t a[4],           \
                                                   uint32_t b0, uint32_t b1)                  \
        {                                                                                     \
            asm volatile("mma.sync.aligned.m16n8k16.row.col.f32." PT "." PT ".f32 "           \
                         "{%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"            \
                         : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])                     \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));     \
        }                                                                                     \
        static __device__ __forceinline__ uint32_t pack(float lo, float hi)                   \
        {                                                                                     \
            P2 v = CVT(lo, hi);                                                               \
            return *reinterpret_cast<uint32_t *>(&v);                                         \
        }                                                                                     \
    };
TGF_MMA(__nv_bfloat16, "bf16", __nv_bfloat162, __floats2bfloat162_rn)
TGF_MMA(__half, "f16", __half2, __floats2half2_rn)

__device__ __forceinline__ uint32_t smem_addr(const void *p)
{
    return (uint32_t)__cvta_generic_to_shared(p);
}

/* 16 bytes global -> shared, zeros when !valid (rows past L or S) */
__device__ __forceinline__ void cp_async16(void *dst, const void *src, bool valid)
{
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_addr(dst)),
                 "l"(src), "r"(valid ? 16 : 0));
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n"); }
template <int N> __device__ __forceinline__ void cp_async_wait()
{
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t r[4], const void *p)
{
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_addr(p)));
}

__device__ __forceinline__ float ex2(float x)
{
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

/* ---- the per-thread row state and softmax, shared by both kernels ---------
 * Scores and accumulators are the m16n8 tensor-core fragments (mma.sync's
 * C, and wgmma's D per warp): element (mt, j, e) of a thread is row
 * 16 mt + g + 8 (e >> 1) of its warp's rows, column 8 j + 2 tg + (e & 1).
 * Arrays are flat, [(mt * N8 + j) * 4 + e]. */

/* a thread's query rows: per m-tile and half (row g or g + 8) */
template <int MT> struct Rows {
    int l[MT][2], h[MT][2];
    int64_t mask[MT][2];        /* the mask row's offset */

    /* row0: the warp's first row in its (batch, head group); rows: how many */
    __device__ __forceinline__ void init(const Params &p, int b, int h_base, int row0, int rows,
                                         int g)
    {
#pragma unroll
        for (int mt = 0; mt < MT; mt++)
#pragma unroll
            for (int hf = 0; hf < 2; hf++) {
                int r = min(row0 + mt * 16 + g + 8 * hf, rows - 1);
                h[mt][hf] = h_base + r / p.L;
                l[mt][hf] = r % p.L;
                mask[mt][hf] = b * p.ms[0] + h[mt][hf] * p.ms[1] + l[mt][hf] * p.ms[2];
            }
    }
};

/* scores into the exp2 domain; masks only on tiles that can have any: keys
 * past S, the causal diagonal, a mask tensor */
template <int MT, int NB>
__device__ __forceinline__ void scale_and_mask(float *s, const Params &p, const Rows<MT> &rw,
                                               int n0, bool edge, int tg)
{
    if (!edge && p.mask_kind == 0) {
#pragma unroll
        for (int i = 0; i < MT * NB * 4; i++)
            s[i] *= p.scale_log2;
        return;
    }
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int j = 0; j < NB; j++)
#pragma unroll
            for (int e = 0; e < 4; e++) {
                const int hf = e >> 1, key = n0 + j * 8 + 2 * tg + (e & 1);
                float x = s[(mt * NB + j) * 4 + e] * p.scale_log2;
                if (p.mask_kind != 0 && key < p.S) {
                    int64_t off = rw.mask[mt][hf] + key * p.ms[3];
                    if (p.mask_kind == 1)
                        x = static_cast<const uint8_t *>(p.mask)[off] ? x : -INFINITY;
                    else
                        x += static_cast<const float *>(p.mask)[off] * 1.4426950408889634f;
                }
                if (key >= p.S || (p.causal && key > rw.l[mt][hf]))
                    x = -INFINITY;
                s[(mt * NB + j) * 4 + e] = x;
            }
}

/* online softmax step: s -> exp2(c s - m_new), l rescaled and summed, alpha =
 * exp2(m_old - m_new) for the accumulator (rescale, once nothing writes it).
 * c > 0 multiplies the scores first: 1 when scale_and_mask already did, the
 * scale itself where the exp2's FFMA takes it. m is in the scaled domain.
 * A row with no visible key so far keeps m = -inf and takes 0 as its
 * reference, so exp2 gives 0, never NaN. l stays a per-thread partial sum. */
template <int MT, int NB>
__device__ __forceinline__ void softmax_step(float *s, float (*m)[2], float (*l)[2],
                                             float (*alpha)[2], float c)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float *sr = s + mt * NB * 4 + 2 * hf;
            float mx = -INFINITY;
#pragma unroll
            for (int j = 0; j < NB; j++)
                mx = fmaxf(mx, fmaxf(sr[j * 4], sr[j * 4 + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffff, mx, 2));
            mx = fmaxf(m[mt][hf], mx * c);
            const float ref = mx == -INFINITY ? 0.f : mx;
            alpha[mt][hf] = ex2(m[mt][hf] - ref);
            m[mt][hf] = mx;
            float sum = 0.f;
#pragma unroll
            for (int j = 0; j < NB; j++) {
                sr[j * 4] = ex2(fmaf(sr[j * 4], c, -ref));
                sr[j * 4 + 1] = ex2(fmaf(sr[j * 4 + 1], c, -ref));
                sum += sr[j * 4] + sr[j * 4 + 1];
            }
            l[mt][hf] = l[mt][hf] * alpha[mt][hf] + sum;
        }
}

/* acc rows times a per-row factor (alpha; 1 / l at the end) */
template <int MT, int ND>
__device__ __forceinline__ void scale_rows(float *acc, const float (*f)[2])
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float *ar = acc + mt * ND * 4 + 2 * hf;
#pragma unroll
            for (int j = 0; j < ND; j++) {
                ar[j * 4] *= f[mt][hf];
                ar[j * 4 + 1] *= f[mt][hf];
            }
        }
}

/* P as the A operand of the P V product: keys 16 kk .. 16 kk + 15 */
template <typename T, int NB>
__device__ __forceinline__ void p_operand(uint32_t a[4], const float *s, int mt, int kk)
{
    const float *c0 = s + (mt * NB + 2 * kk) * 4, *c1 = c0 + 4;
    a[0] = Mma<T>::pack(c0[0], c0[1]);
    a[1] = Mma<T>::pack(c0[2], c0[3]);
    a[2] = Mma<T>::pack(c1[0], c1[1]);
    a[3] = Mma<T>::pack(c1[2], c1[3]);
}

/* o = acc / l, l summed over the quad first; a fully masked row (l = 0) gives 0 */
template <int MT, int ND>
__device__ __forceinline__ void normalize(float *acc, float (*l)[2])
{
    float inv[MT][2];
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            float sum = l[mt][hf];
            sum += __shfl_xor_sync(0xffffffff, sum, 1);
            sum += __shfl_xor_sync(0xffffffff, sum, 2);
            l[mt][hf] = sum;
            inv[mt][hf] = sum > 0.f ? 1.f / sum : 0.f;
        }
    scale_rows<MT, ND>(acc, inv);
}

/* a split's normalized rows (fp32) and log-sum-exp, for flash_combine */
template <int MT, int ND>
__device__ __forceinline__ void store_partials(const Params &p, const float *acc, float (*m)[2],
                                               float (*l)[2], const Rows<MT> &rw, int row0,
                                               int rows, int b, int batch, int g, int tg)
{
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++) {
            if (row0 + mt * 16 + g + 8 * hf >= rows)
                continue;
            int64_t row = ((int64_t)(blockIdx.z * batch + b) * p.hq + rw.h[mt][hf]) * p.L +
                          rw.l[mt][hf];
            float *po = p.part_o + row * ND * 8;
            const float *ar = acc + mt * ND * 4 + 2 * hf;
#pragma unroll
            for (int j = 0; j < ND; j++)
                *reinterpret_cast<float2 *>(po + j * 8 + 2 * tg) = make_float2(ar[j * 4], ar[j * 4 + 1]);
            if (tg == 0)
                p.part_lse[row] = l[mt][hf] > 0.f ? m[mt][hf] + __log2f(l[mt][hf]) : -INFINITY;
        }
}

/* the block's place: batch, first head of its group, kv head, its key
 * tiles; rb: its block of bm rows (blockIdx.x, or another order of them);
 * bh: its (batch, head group), blockIdx.y unless a persistent block walks
 * several */
struct Place {
    int b, h_base, kvh, rows, r0, t_begin, t_end, l_min;

    __device__ __forceinline__ Place(const Params &p, int bm, int bn, int rb)
        : Place(p, bm, bn, rb, blockIdx.y)
    {
    }
    __device__ __forceinline__ Place(const Params &p, int bm, int bn, int rb, int bh)
    {
        const int heads = p.hq / p.pack;
        b = bh / heads;
        h_base = (bh % heads) * p.pack;
        kvh = h_base / p.group;
        rows = p.pack * p.L;
        r0 = rb * bm;
        const int ntiles = (p.S + bn - 1) / bn;
        t_begin = blockIdx.z * p.tiles_per_split;
        t_end = min(t_begin + p.tiles_per_split, ntiles);
        l_min = p.pack == 1 ? r0 : 0;
        if (p.causal) {     /* no key past the block's last query */
            int l_max = p.pack == 1 ? min(r0 + bm, p.L) - 1 : p.L - 1;
            t_end = min(t_end, l_max / bn + 1);
        }
    }
    /* does key tile n0 need masking: keys past S or past a row's diagonal */
    __device__ __forceinline__ bool edge(const Params &p, int n0, int bn) const
    {
        return n0 + bn > p.S || (p.causal && n0 + bn - 1 > l_min);
    }
};

/* the block's query rows into a tile laid out by Layout::at(row, chunk) */
template <typename T, int D, int BM, int NT, typename Layout>
__device__ __forceinline__ void load_queries(T *sQ, const Params &p, const Place &pc)
{
    constexpr int CH = D / 8;
    for (int i = threadIdx.x; i < BM * CH; i += NT) {
        int row = i / CH, c = i % CH, r = pc.r0 + row;
        bool ok = r < pc.rows;
        int h = pc.h_base + (ok ? r / p.L : 0), l = ok ? r % p.L : 0;
        const T *src = static_cast<const T *>(p.q) + pc.b * p.qs[0] + h * p.qs[1] +
                       (int64_t)l * p.qs[2] + c * 8;
        cp_async16(sQ + Layout::at(row, c), src, ok);
    }
}

/* rows [row0, row0 + ROWS) of a [.., n, D] operand into a tile */
template <typename T, int D, int ROWS, int NT, typename Layout>
__device__ __forceinline__ void load_tile(T *dst, const T *base, int64_t row_stride, int row0,
                                          int n)
{
    constexpr int CH = D / 8;
#pragma unroll
    for (int i = threadIdx.x; i < ROWS * CH; i += NT) {
        int row = i / CH, c = i % CH;
        bool ok = row0 + row < n;
        const T *src = ok ? base + (int64_t)(row0 + row) * row_stride + c * 8 : base;
        cp_async16(dst + Layout::at(row, c), src, ok);
    }
}

/* FA2's tiles: rows of D elements, 16-byte chunks XOR swizzled by row so
 * that ldmatrix's eight row addresses hit distinct banks */
template <int D> struct RowSwizzle {
    static __device__ __forceinline__ int at(int row, int chunk)
    {
        return row * D + ((chunk ^ (row & 7)) << 3);
    }
};

template <typename T, int D, int WARPS, int MT, int BN, int STAGES>
__global__ void __launch_bounds__(32 * WARPS) flash_fwd(const Params p)
{
    constexpr int BM = 16 * MT * WARPS, NT = 32 * WARPS, NB = BN / 8, ND = D / 8;
    static_assert(D % 64 == 0 && BN % 16 == 0 && STAGES >= 2, "tile shape");
    using L = RowSwizzle<D>;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T *sQ = reinterpret_cast<T *>(smem_raw);
    T *sK = sQ + BM * D;            /* [STAGES][BN][D] */
    T *sV = sK + STAGES * BN * D;   /* [STAGES][BN][D] */

    const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;
    const int g = lane >> 2, tg = lane & 3;
    const Place pc(p, BM, BN, blockIdx.x);
    const T *K = static_cast<const T *>(p.k) + pc.b * p.ks[0] + pc.kvh * p.ks[1];
    const T *V = static_cast<const T *>(p.v) + pc.b * p.vs[0] + pc.kvh * p.vs[1];
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    /* a split lets the merge start now: it waits for this grid's end, and
     * its blocks take a multiprocessor's spare threads meanwhile */
    if (gridDim.z > 1)
        asm volatile("griddepcontrol.launch_dependents;\n" ::: "memory");
#endif

    /* the first STAGES - 1 key tiles in flight (the queries with the first):
     * one commit group a tile, empty ones too, so that waiting for all but
     * the newest STAGES - 2 groups means this tile has landed */
    load_queries<T, D, BM, NT, L>(sQ, p, pc);
#pragma unroll
    for (int i = 0; i < STAGES - 1; i++) {
        if (pc.t_begin + i < pc.t_end) {
            load_tile<T, D, BN, NT, L>(sK + i * BN * D, K, p.ks[2], (pc.t_begin + i) * BN, p.S);
            load_tile<T, D, BN, NT, L>(sV + i * BN * D, V, p.vs[2], (pc.t_begin + i) * BN, p.S);
        }
        cp_async_commit();
    }

    const int row0 = pc.r0 + warp * 16 * MT;
    Rows<MT> rw;
    rw.init(p, pc.b, pc.h_base, row0, pc.rows, g);
    float acc[MT * ND * 4];
    float m[MT][2], l[MT][2];
#pragma unroll
    for (int i = 0; i < MT * ND * 4; i++)
        acc[i] = 0.f;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
        m[mt][0] = m[mt][1] = -INFINITY, l[mt][0] = l[mt][1] = 0.f;

    const T *wQ = sQ + warp * 16 * MT * D;
    for (int t = pc.t_begin; t < pc.t_end; t++) {
        /* this tile's buffer, and tile t-1's, which loads t + STAGES - 1 */
        const unsigned i = t - pc.t_begin, buf = i % STAGES, next = (i + STAGES - 1) % STAGES;
        cp_async_wait<STAGES - 2>();
        /* every thread's copies are in, and every warp is done with tile
         * t-1, whose buffers take tile t + STAGES - 1 */
        __syncthreads();
        if (t + STAGES - 1 < pc.t_end) {
            load_tile<T, D, BN, NT, L>(sK + next * BN * D, K, p.ks[2], (t + STAGES - 1) * BN, p.S);
            load_tile<T, D, BN, NT, L>(sV + next * BN * D, V, p.vs[2], (t + STAGES - 1) * BN, p.S);
            cp_async_commit();
        } else if (STAGES > 2) {
            cp_async_commit();  /* two stages wait for every group anyway */
        }
        const T *tK = sK + buf * BN * D, *tV = sV + buf * BN * D;

        /* S = Q K^T */
        float s[MT * NB * 4];
#pragma unroll
        for (int i = 0; i < MT * NB * 4; i++)
            s[i] = 0.f;
#pragma unroll
        for (int kk = 0; kk < D / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                ldmatrix_x4(a[mt], wQ + L::at(mt * 16 + (lane & 15), kk * 2 + (lane >> 4)));
#pragma unroll
            for (int nn = 0; nn < BN / 16; nn++) {
                uint32_t bf[4];
                ldmatrix_x4(bf, tK + L::at(nn * 16 + (lane & 7) + ((lane >> 4) << 3),
                                           kk * 2 + ((lane >> 3) & 1)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    Mma<T>::run(s + (mt * NB + 2 * nn) * 4, a[mt], bf[0], bf[1]);
                    Mma<T>::run(s + (mt * NB + 2 * nn + 1) * 4, a[mt], bf[2], bf[3]);
                }
            }
        }
        scale_and_mask<MT, NB>(s, p, rw, t * BN, pc.edge(p, t * BN, BN), tg);
        float alpha[MT][2];
        softmax_step<MT, NB>(s, m, l, alpha, 1.f);
        scale_rows<MT, ND>(acc, alpha);

        /* O += P V, P from the score registers */
#pragma unroll
        for (int kk = 0; kk < BN / 16; kk++) {
            uint32_t a[MT][4];
#pragma unroll
            for (int mt = 0; mt < MT; mt++)
                p_operand<T, NB>(a[mt], s, mt, kk);
#pragma unroll
            for (int dd = 0; dd < D / 16; dd++) {
                uint32_t bf[4];
                ldmatrix_x4_trans(bf, tV + L::at(kk * 16 + (lane & 7) + (((lane >> 3) & 1) << 3),
                                                 dd * 2 + (lane >> 4)));
#pragma unroll
                for (int mt = 0; mt < MT; mt++) {
                    Mma<T>::run(acc + (mt * ND + 2 * dd) * 4, a[mt], bf[0], bf[1]);
                    Mma<T>::run(acc + (mt * ND + 2 * dd + 1) * 4, a[mt], bf[2], bf[3]);
                }
            }
        }
    }
    cp_async_wait<0>();         /* no tile: the query load is still pending */
    normalize<MT, ND>(acc, l);

    if (gridDim.z > 1) {
        store_partials<MT, ND>(p, acc, m, l, rw, row0, pc.rows, pc.b, gridDim.y / (p.hq / p.pack),
                               g, tg);
        return;
    }
    /* stage the warp's rows in its own query rows, then 16-byte stores */
    T *wO = sQ + warp * 16 * MT * D;
#pragma unroll
    for (int mt = 0; mt < MT; mt++)
#pragma unroll
        for (int hf = 0; hf < 2; hf++)
#pragma unroll
            for (int j = 0; j < ND; j++)
                *reinterpret_cast<uint32_t *>(wO + L::at(mt * 16 + g + 8 * hf, j) + 2 * tg) =
                    Mma<T>::pack(acc[(mt * ND + j) * 4 + 2 * hf], acc[(mt * ND + j) * 4 + 2 * hf + 1]);
    __syncwarp();
    for (int i = lane; i < 16 * MT * ND; i += 32) {
        int row = i / ND, c = i % ND, r = row0 + row;
        if (r >= pc.rows)
            continue;
        int h = pc.h_base + r / p.L, lq = r % p.L;
        T *dst = static_cast<T *>(p.o) + pc.b * p.os[0] + h * p.os[1] + (int64_t)lq * p.os[2] + c * 8;
        *reinterpret_cast<uint4 *>(dst) = *reinterpret_cast<const uint4 *>(wO + L::at(row, c));
    }
}

/* o[row] = sum_s w_s o_s / sum_s w_s, w_s = 2^(lse_s - max lse); every split
 * empty (a fully masked row): 0. One thread: 4 elements of one row, the
 * splits in one pass (the running max rescales what is summed). Its loads'
 * latency is the merge's time, and the branches a split likely keep them
 * one split at a time (run 10, H100: launched after the splits, 2-3 us
 * slower than two branch-free passes at d64 S=32k's 24 splits).
 * Launched as the splits' programmatic dependent (flash.cu), it waits for
 * their grid to finish first; launched after them, the wait returns. */
template <typename T, int D>
__global__ void flash_combine(const Params p, int batch, int splits)
{
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    asm volatile("griddepcontrol.wait;\n" ::: "memory");
#endif
    int64_t i = (int64_t)blockIdx.x * blockDim.x + threadIdx.x;
    int64_t rows = (int64_t)batch * p.hq * p.L;
    if (i >= rows * (D / 4))
        return;
    int64_t row = i / (D / 4);
    int c = (int)(i % (D / 4)) * 4;
    float mx = -INFINITY, o[4] = {0.f, 0.f, 0.f, 0.f}, wsum = 0.f;
#pragma unroll 8
    for (int s = 0; s < splits; s++) {
        const float lse = p.part_lse[s * rows + row];
        const float4 v = *reinterpret_cast<const float4 *>(p.part_o + (s * rows + row) * D + c);
        if (lse == -INFINITY)
            continue;
        if (lse > mx) {     /* ex2(-inf) = 0: nothing summed yet */
            const float f = ex2(mx - lse);
            o[0] *= f, o[1] *= f, o[2] *= f, o[3] *= f, wsum *= f;
            mx = lse;
        }
        const float w = ex2(lse - mx);
        o[0] += w * v.x, o[1] += w * v.y, o[2] += w * v.z, o[3] += w * v.w;
        wsum += w;
    }
    float inv = wsum > 0.f ? 1.f / wsum : 0.f;
    int lq = (int)(row % p.L), h = (int)(row / p.L % p.hq), b = (int)(row / p.L / p.hq);
    T *dst = static_cast<T *>(p.o) + b * p.os[0] + h * p.os[1] + (int64_t)lq * p.os[2] + c;
    uint2 out;
    out.x = Mma<T>::pack(o[0] * inv, o[1] * inv);
    out.y = Mma<T>::pack(o[2] * inv, o[3] * inv);
    *reinterpret_cast<uint2 *>(dst) = out;
}

} // namespace tgf

namespace tgf {
/* the Hopper kernel's key tile: 128 where its score registers fit beside
 * the accumulator's, 64 at d256 */
#ifndef TGF_SM90_BN
#define TGF_SM90_BN 128     /* settable at build time for tuning */
#endif
__host__ __device__ constexpr int sm90_bn(int D) { return D == 256 ? 64 : TGF_SM90_BN; }
/* the Hopper kernel's launch (flash_sm90.cu, built for sm_90a): grid as the
 * FA2 kernel's with BM = 128, BN = sm90_bn(D) */
template <typename T, int D> cudaError_t launch_sm90(const Params &p, dim3 grid, cudaStream_t stream);

/* a launch function's instances: both dtypes, the three head dims */
#define TGF_LAUNCH_INSTANCES(fn)                                                              \
    template cudaError_t fn<__nv_bfloat16, 64>(const Params &, dim3, cudaStream_t);          \
    template cudaError_t fn<__nv_bfloat16, 128>(const Params &, dim3, cudaStream_t);         \
    template cudaError_t fn<__nv_bfloat16, 256>(const Params &, dim3, cudaStream_t);         \
    template cudaError_t fn<__half, 64>(const Params &, dim3, cudaStream_t);                 \
    template cudaError_t fn<__half, 128>(const Params &, dim3, cudaStream_t);                \
    template cudaError_t fn<__half, 256>(const Params &, dim3, cudaStream_t);

/* the FA3 kernel's key tile and pipeline depth (settable at build time) */
#ifndef TGF_FA3_BN128
#define TGF_FA3_BN128 128
#endif
#ifndef TGF_FA3_STAGES
#define TGF_FA3_STAGES 2
#endif
#ifndef TGF_FA3_PINGPONG
#define TGF_FA3_PINGPONG true
#endif
__host__ __device__ constexpr int fa3_bn(int D) { return D == 256 ? 64 : D == 128 ? TGF_FA3_BN128 : 128; }
/* d256: two stages of K and V is all shared memory holds beside Q */
__host__ __device__ constexpr int fa3_stages(int D) { return D == 256 ? 2 : TGF_FA3_STAGES; }
/* the FA3 kernel's query tile: 128 rows (two consumer warpgroups), or 192
 * (three) at d64, where the softmax is the largest share */
__host__ __device__ constexpr int fa3_bm(int D, bool rows192) { return D == 64 && rows192 ? 192 : 128; }
/* the FA3 kernel's launch (flash_fa3.cu, sm_90a): grid as the FA2 kernel's
 * with BM = bm (fa3_bm), pack 1, a block a work tile or (persistent) one a
 * multiprocessor walking them; cudaErrorNotSupported when the bulk tensor
 * copy cannot describe q, k or v */
template <typename T, int D>
cudaError_t launch_fa3(const Params &p, dim3 grid, int bm, bool persistent, cudaStream_t stream);
}
