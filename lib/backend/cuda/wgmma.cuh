/* Hopper tensor-core building blocks for the sm_90a kernels (flash_sm90.cu,
 * flash_fa3.cu): wgmma m64nNk16 with fp32 accumulators, shared-memory matrix
 * descriptors for the 128-byte swizzle, and the fences and waits around them.
 *
 * Accumulators are the m16n8 fragments per warp (flash_fwd.cuh): a thread
 * holds N / 2 floats, [j * 4 + e] = row g + 8 (e >> 1) of its warp's 16,
 * column 8 j + 2 tg + (e & 1). Tiles in shared memory are [cols / 64][rows][64]
 * with each 1024-byte atom of 8 rows of 128 bytes XOR-swizzled by row, which
 * is also what the bulk tensor copy writes with CU_TENSOR_MAP_SWIZZLE_128B. */
#pragma once
#include "backend/cuda/flash_fwd.cuh"

namespace tgf {

/* a shared-memory matrix descriptor, 128-byte swizzle; offsets in bytes.
 * K-major operands: sbo = 1024 (8-row groups), lbo unused. N-major (V, read
 * transposed): lbo = the stride of 64-column blocks, sbo = 1024 (8 keys). */
__device__ __forceinline__ uint64_t gmma_desc(const void *p, uint32_t lbo, uint32_t sbo)
{
    uint64_t a = smem_addr(p);
    return ((a & 0x3ffff) >> 4) | (uint64_t)((lbo >> 4) & 0x3fff) << 16 |
           (uint64_t)((sbo >> 4) & 0x3fff) << 32 | (uint64_t)1 << 62;
}

/* the asm operand lists: N / 2 accumulators %0 .. %(N/2 - 1), then the rest */
#define TGF_R0 "%0, %1, %2, %3, %4, %5, %6, %7"
#define TGF_R1 "%8, %9, %10, %11, %12, %13, %14, %15"
#define TGF_R2 "%16, %17, %18, %19, %20, %21, %22, %23"
#define TGF_R3 "%24, %25, %26, %27, %28, %29, %30, %31"
#define TGF_R4 "%32, %33, %34, %35, %36, %37, %38, %39"
#define TGF_R5 "%40, %41, %42, %43, %44, %45, %46, %47"
#define TGF_R6 "%48, %49, %50, %51, %52, %53, %54, %55"
#define TGF_R7 "%56, %57, %58, %59, %60, %61, %62, %63"
#define TGF_R8 "%64, %65, %66, %67, %68, %69, %70, %71"
#define TGF_R9 "%72, %73, %74, %75, %76, %77, %78, %79"
#define TGF_R10 "%80, %81, %82, %83, %84, %85, %86, %87"
#define TGF_R11 "%88, %89, %90, %91, %92, %93, %94, %95"
#define TGF_R12 "%96, %97, %98, %99, %100, %101, %102, %103"
#define TGF_R13 "%104, %105, %106, %107, %108, %109, %110, %111"
#define TGF_R14 "%112, %113, %114, %115, %116, %117, %118, %119"
#define TGF_R15 "%120, %121, %122, %123, %124, %125, %126, %127"
#define TGF_A8(d, i)                                                                          \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), \
        "+f"(d[i + 6]), "+f"(d[i + 7])
#define TGF_A32(d, i) TGF_A8(d, i), TGF_A8(d, i + 8), TGF_A8(d, i + 16), TGF_A8(d, i + 24)
#define TGF_A64(d, i) TGF_A32(d, i), TGF_A32(d, i + 32)
#define TGF_RS32 TGF_R0 ", " TGF_R1 ", " TGF_R2 ", " TGF_R3
#define TGF_RS64 TGF_RS32 ", " TGF_R4 ", " TGF_R5 ", " TGF_R6 ", " TGF_R7
#define TGF_RS88 TGF_RS64 ", " TGF_R8 ", " TGF_R9 ", " TGF_R10
#define TGF_RS128 TGF_RS64 ", " TGF_R8 ", " TGF_R9 ", " TGF_R10 ", " TGF_R11 ", " TGF_R12 ", " \
    TGF_R13 ", " TGF_R14 ", " TGF_R15

template <typename T, int N> struct Wgmma;
/* CT: the operand's C type, PT: PTX's name; REGS, ACC: the N / 2 accumulators;
 * I0..I4: the numbers of the operands after them */
#define TGF_WGMMA(CT, PT, N, REGS, ACC, I0, I1, I2, I3, I4)                                 \
    template <> struct Wgmma<CT, N> {                                                         \
        /* d (+)= A B, A and B K-major in shared memory; d overwritten when !accumulate */    \
        static __device__ __forceinline__ void ss(float *d, uint64_t a, uint64_t b,           \
                                                  int accumulate)                             \
        {                                                                                     \
            asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, %" #I2 ", 0;\n"                    \
                         "wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT "." PT " {" REGS \
                         "}, %" #I0 ", %" #I1 ", p, 1, 1, 0, 0;\n}\n"                         \
                         : ACC                                                                \
                         : "l"(a), "l"(b), "r"(accumulate));                                  \
        }                                                                                     \
        /* d += A B, A in registers (the m16n8k16 A fragment), B N-major in shared memory */  \
        static __device__ __forceinline__ void rs(float *d, const uint32_t a[4], uint64_t b)  \
        {                                                                                     \
            asm volatile("wgmma.mma_async.sync.aligned.m64n" #N "k16.f32." PT "." PT " {" REGS \
                         "}, {%" #I0 ", %" #I1 ", %" #I2 ", %" #I3 "}, %" #I4 ", 1, 1, 1, 1;\n" \
                         : ACC                                                                \
                         : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(b));               \
        }                                                                                     \
    };
#define TGF_WGMMA_ALL_N(CT, PT)                                                               \
    TGF_WGMMA(CT, PT, 64, TGF_RS32, TGF_A32(d, 0), 32, 33, 34, 35, 36)                        \
    TGF_WGMMA(CT, PT, 80, TGF_RS32 ", " TGF_R4, TGF_A32(d, 0) TGF_COMMA TGF_A8(d, 32), 40, 41,  \
              42, 43, 44)                                                                     \
    TGF_WGMMA(CT, PT, 128, TGF_RS64, TGF_A64(d, 0), 64, 65, 66, 67, 68)                       \
    TGF_WGMMA(CT, PT, 176, TGF_RS88, TGF_A64(d, 0) TGF_COMMA TGF_A8(d, 64) TGF_COMMA          \
              TGF_A8(d, 72) TGF_COMMA TGF_A8(d, 80), 88, 89, 90, 91, 92)                       \
    TGF_WGMMA(CT, PT, 256, TGF_RS128, TGF_A64(d, 0) TGF_COMMA TGF_A64(d, 64), 128, 129, 130,    \
              131, 132)
#define TGF_COMMA ,
TGF_WGMMA_ALL_N(__nv_bfloat16, "bf16")
TGF_WGMMA_ALL_N(__half, "f16")

__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;\n" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;\n" ::: "memory"); }
/* until at most N committed groups are still running */
template <int N> __device__ __forceinline__ void wgmma_wait()
{
    asm volatile("wgmma.wait_group.sync.aligned %0;\n" ::"n"(N) : "memory");
}
/* registers the wgmmas in flight write: not to be read or moved before the wait */
template <int N> __device__ __forceinline__ void fence_regs(float *r)
{
#pragma unroll
    for (int i = 0; i < N; i++)
        asm volatile("" : "+f"(r[i])::"memory");
}

/* O += P V, committed: P (keys 16 kk ..) from registers, V N-major in
 * shared memory (d contiguous), read transposed: its 64-column blocks
 * BN * 128 bytes apart, 8-key groups 1024; D / N wgmmas of width N a 16 keys */
template <typename T, int D, int BN, int N>
__device__ __forceinline__ void issue_pv(float *acc, const uint32_t (*a)[4], const T *tV)
{
    fence_regs<D / 2>(acc);
    wgmma_fence();
#pragma unroll
    for (int kk = 0; kk < BN / 16; kk++)
#pragma unroll
        for (int nd = 0; nd < D / N; nd++)
            Wgmma<T, N>::rs(acc + nd * N / 2, a[kk],
                            gmma_desc(tV + nd * (N / 64) * BN * 64 + kk * 16 * 64, BN * 128, 1024));
    wgmma_commit();
}

/* a warpgroup kernel's output rows from the accumulators (one 16-row
 * m-tile a warp, already normalized) into o, in the output type */
template <typename T, int ND>
__device__ __forceinline__ void store_rows(const Params &p, const float *acc, const Rows<1> &rw,
                                           int row0, int rows, int b, int g, int tg)
{
#pragma unroll
    for (int hf = 0; hf < 2; hf++) {
        int r = row0 + g + 8 * hf;
        if (r >= rows)
            continue;
        T *dst = static_cast<T *>(p.o) + b * p.os[0] + rw.h[0][hf] * p.os[1] +
                 (int64_t)rw.l[0][hf] * p.os[2] + 2 * tg;
#pragma unroll
        for (int j = 0; j < ND; j++)
            *reinterpret_cast<uint32_t *>(dst + j * 8) =
                Mma<T>::pack(acc[j * 4 + 2 * hf], acc[j * 4 + 2 * hf + 1]);
    }
}

} // namespace tgf
