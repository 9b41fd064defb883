/* Flash attention forward: descriptor checks, the kernel choice (prefill or
 * split-K decode, tile shape by head dim) and the launches. */
#include "backend/cuda/flash.h"
#include "backend/cuda/flash_fwd.cuh"

#include <math.h>
#include <stdio.h>

#include <atomic>

#ifndef TGF_DECODE_PDL
#define TGF_DECODE_PDL 1     /* 0: the merge launched after the splits (tuning) */
#endif

namespace {

using tgf::Params;

/* The tile shapes: warps along the rows, 16-row m-tiles a warp, keys a tile.
 * Prefill's can be set at build time (-DTGF_PREFILL_D128=4,2,32) for tuning. */
struct Shape {
    int warps, mt, bn;
    int stages = 2;             /* K and V buffers in the cp.async ring */
};
#ifndef TGF_PREFILL_D64
#define TGF_PREFILL_D64 4, 2, 32
#endif
#ifndef TGF_PREFILL_D128
#define TGF_PREFILL_D128 4, 2, 32
#endif
#ifndef TGF_PREFILL_D256
#define TGF_PREFILL_D256 4, 1, 32
#endif
constexpr Shape prefill_shape(int64_t D)
{
    return D == 64 ? Shape{TGF_PREFILL_D64} : D == 128 ? Shape{TGF_PREFILL_D128}
                                                       : Shape{TGF_PREFILL_D256};
}
/* decode: one warp when a kv head's rows fit one m-tile, with small key
 * tiles so that several blocks share a multiprocessor, K and V three tiles
 * deep (run 9, S = 32k: d128 3.9 -> 4.1 TB/s, d256 3.6 -> 4.1; d64 3.7 ->
 * 3.4, so two there), d64 64 keys a tile (run 10, H100, S = 32k: 2.76 ->
 * 2.82 TB/s, 12 splits instead of 24); else four warps. d64's one-warp key
 * tile and stages can be set at build time (-DTGF_DECODE_D64_BN=32) for
 * tuning. */
#ifndef TGF_DECODE_D64_BN
#define TGF_DECODE_D64_BN 64
#endif
#ifndef TGF_DECODE_D64_STAGES
#define TGF_DECODE_D64_STAGES 2
#endif
constexpr Shape decode_shape(int64_t D, int64_t rows)
{
    return rows > 16   ? Shape{4, 1, D == 256 ? 32 : 64, 2}
           : D == 64 ? Shape{1, 1, TGF_DECODE_D64_BN, TGF_DECODE_D64_STAGES}
                     : Shape{1, 1, D == 256 ? 16 : 32, 3};
}
constexpr int DECODE_MAX_L = 16;    /* queries up to which decode splits the keys */

enum Kernel { FA2, WGMMA, FA3 };
const char *const kernel_names[] = {"fa2", "wgmma", "fa3"};

struct Plan {
    bool decode, persistent;
    Kernel kernel;
    Shape shape;
    int pack, row_blocks, heads, splits, tiles_per_split;
};

/* The current device's attributes the plan reads, queried once a device
 * and thread: a decode call's host time is in its latency (run 9b: d64 S=32k
 * takes 73 us, of which the queries were a few). A failed query gives the
 * fallback (an H100's figures, no Hopper kernels); no device, every one. */
struct DeviceInfo {
    int sms, smem_per_sm, threads_per_sm, reserved_smem;
    bool hopper;        /* sm_90a machine code runs on compute capability 9.0 only */
    bool pdl;           /* programmatic dependent launch: 9.0 and up */
};

int device_attr(cudaDeviceAttr a, int dev, int fallback)
{
    int v = 0;
    return cudaDeviceGetAttribute(&v, a, dev) == cudaSuccess ? v : fallback;
}

const DeviceInfo &device_info()
{
    thread_local int cached = -2;
    thread_local DeviceInfo info;
    int dev = -1;
    if (cudaGetDevice(&dev) != cudaSuccess)
        dev = -1;
    if (dev != cached) {
        const int major = device_attr(cudaDevAttrComputeCapabilityMajor, dev, 0);
        const int minor = device_attr(cudaDevAttrComputeCapabilityMinor, dev, 0);
        info.sms = device_attr(cudaDevAttrMultiProcessorCount, dev, 132);
        info.smem_per_sm = device_attr(cudaDevAttrMaxSharedMemoryPerMultiprocessor, dev, 233472);
        info.threads_per_sm = device_attr(cudaDevAttrMaxThreadsPerMultiProcessor, dev, 2048);
        info.reserved_smem = device_attr(cudaDevAttrReservedSharedMemoryPerBlock, dev, 1024);
        info.hopper = major == 9 && minor == 0;
        info.pdl = major >= 9;
        cached = dev;
    }
    return info;
}

bool hopper_device() { return device_info().hopper; }
/* two warpgroups of 64 rows */
constexpr Shape hopper_shape(int64_t D) { return Shape{8, 1, tgf::sm90_bn((int)D)}; }

/* blocks of a decode shape resident on one multiprocessor, by shared memory
 * and threads (its registers allow more) */
int resident_blocks(const Shape &sh, int64_t D)
{
    const DeviceInfo &di = device_info();
    const int64_t smem = (16 * sh.mt * sh.warps + 2 * sh.stages * sh.bn) * D * 2 + di.reserved_smem;
    int64_t n = di.smem_per_sm / smem;
    int64_t by_threads = di.threads_per_sm / (32 * sh.warps);
    n = n < by_threads ? n : by_threads;
    return n < 1 ? 1 : n > 32 ? 32 : (int)n;
}

/* How many blocks share a decode row block's keys. Each split streams its
 * keys at about the same rate, so the time is that of the multiprocessor
 * with the most blocks: the split count whose blocks fill the resident
 * slots best (one round of them; the largest of the best). Run 8's eight
 * blocks a multiprocessor left 1.4 rounds at S = 32k: 3.5 -> 3.9 TB/s. */
int decode_splits(const tgf_attn_desc *d, const Plan &pl, int ntiles)
{
    const int64_t base = d->batch * pl.heads * pl.row_blocks;
    const int64_t cap = device_info().sms * resident_blocks(pl.shape, d->D);
    int64_t most = (cap + base - 1) / base, best = 1;
    double best_fill = 0.0;
    most = most < ntiles ? most : ntiles;
    for (int64_t s = 1; s <= most; s++) {
        const int64_t blocks = base * s, rounds = (blocks + cap - 1) / cap;
        const double fill = (double)blocks / (double)(rounds * cap);
        if (fill >= best_fill - 0.01) {
            best = s;
            best_fill = fill > best_fill ? fill : best_fill;
        }
    }
    return (int)best;
}

Plan plan(const tgf_attn_desc *d)
{
    Plan pl;
    pl.decode = d->L <= DECODE_MAX_L;
    pl.pack = pl.decode ? (int)(d->hq / d->hk) : 1;
    int64_t rows = pl.pack * d->L;
    pl.kernel = pl.decode || d->kernel == TGF_KERNEL_FA2 || !hopper_device() ? FA2
                : d->kernel == TGF_KERNEL_WGMMA                              ? WGMMA
                                                                             : FA3;
    /* d64 without causal or masks: 192 query rows a block from 2k on (run 9:
     * +3-13% there, less below 2k and with causal, where the 160 registers
     * of three consumers spill in the masking path) */
    const bool rows192 = !d->causal && d->mask_kind == TGF_MASK_NONE && d->L >= 2048;
    pl.shape = pl.decode                ? decode_shape(d->D, rows)
               : pl.kernel == FA3       ? Shape{tgf::fa3_bm((int)d->D, rows192) / 16, 1, tgf::fa3_bn((int)d->D)}
               : pl.kernel == WGMMA     ? hopper_shape(d->D)
                                        : prefill_shape(d->D);
    int bm = 16 * pl.shape.mt * pl.shape.warps;
    pl.row_blocks = (int)((rows + bm - 1) / bm);
    pl.heads = (int)(d->hq / pl.pack);
    int ntiles = (int)((d->S + pl.shape.bn - 1) / pl.shape.bn);
    /* FA3: persistent where work tiles are short (a block's start and end,
     * about 3 key tiles' worth, then overlap the next tile's); one block a
     * tile where they are long, which the hardware's block scheduler
     * balances better than a fixed round robin (run 9: causal d256 16k 511
     * against 568 TFLOP/s) */
    pl.persistent = pl.kernel == FA3 && (ntiles <= 32 || pl.shape.warps == 12);
    pl.splits = 1;
    if (pl.decode && ntiles > 1)
        pl.splits = decode_splits(d, pl, ntiles);
    pl.tiles_per_split = (ntiles + pl.splits - 1) / pl.splits;
    if (pl.tiles_per_split == 0)
        pl.tiles_per_split = 1;
    pl.splits = ntiles ? (ntiles + pl.tiles_per_split - 1) / pl.tiles_per_split : 1;
    return pl;
}

size_t workspace_bytes(const tgf_attn_desc *d, const Plan &pl)
{
    if (pl.splits <= 1)
        return 0;
    return (size_t)pl.splits * d->batch * d->hq * d->L * (d->D + 1) * sizeof(float);
}

thread_local char why_buf[200];

const char *say(const char *fmt, long long a)
{
    snprintf(why_buf, sizeof why_buf, fmt, a);
    return why_buf;
}

bool misaligned(const void *p, const int64_t st[3])
{
    return (uintptr_t)p % 16 || st[0] % 8 || st[1] % 8 || st[2] % 8;
}

void fill_strides(const int64_t given[3], int64_t heads, int64_t rows, int64_t cols, int64_t st[3])
{
    bool set = given[0] || given[1] || given[2];
    st[0] = set ? given[0] : heads * rows * cols;
    st[1] = set ? given[1] : rows * cols;
    st[2] = set ? given[2] : cols;
}

/* the dynamic shared memory a kernel may take over the default 48 KB, set
 * once a device (bit dev of set_on; devices past 31 set it every call) */
template <typename K>
cudaError_t allow_smem(K kernel, size_t smem, std::atomic<unsigned> &set_on)
{
    if (smem <= 48 * 1024)
        return cudaSuccess;
    int dev = 0;
    cudaError_t e = cudaGetDevice(&dev);
    if (e != cudaSuccess)
        return e;
    const unsigned bit = dev < 32 ? 1u << dev : 0u;
    if (bit && (set_on.load(std::memory_order_relaxed) & bit))
        return cudaSuccess;
    e = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, (int)smem);
    if (e == cudaSuccess)
        set_on.fetch_or(bit, std::memory_order_relaxed);
    return e;
}

template <typename T, int D, int WARPS, int MT, int BN, int STAGES>
cudaError_t launch_tiles(const Params &p, const Plan &pl, int64_t batch, cudaStream_t stream)
{
    auto kernel = tgf::flash_fwd<T, D, WARPS, MT, BN, STAGES>;
    constexpr int BM = 16 * MT * WARPS;
    constexpr size_t smem = (size_t)(BM + 2 * STAGES * BN) * D * sizeof(T);
    static std::atomic<unsigned> smem_set{0};
    cudaError_t e = allow_smem(kernel, smem, smem_set);
    if (e != cudaSuccess)
        return e;
    dim3 grid(pl.row_blocks, (unsigned)(batch * pl.heads), pl.splits);
    kernel<<<grid, 32 * WARPS, smem, stream>>>(p);
    e = cudaGetLastError();
    if (e != cudaSuccess || pl.splits == 1)
        return e;
    /* the merge, launched while the splits run where the device allows
     * (programmatic dependent launch: it waits in griddepcontrol.wait for
     * their results), so that no launch gap follows the last split */
    int64_t threads = batch * p.hq * p.L * (D / 4);
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3((unsigned)((threads + 255) / 256));
    cfg.blockDim = dim3(256);
    cfg.stream = stream;
    cudaLaunchAttribute overlap[1];
    overlap[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
    overlap[0].val.programmaticStreamSerializationAllowed = 1;
    cfg.attrs = overlap;
    cfg.numAttrs = TGF_DECODE_PDL && device_info().pdl ? 1 : 0;
    return cudaLaunchKernelEx(&cfg, tgf::flash_combine<T, D>, p, (int)batch, pl.splits);
}

/* the shape's instantiation for one dtype and head dim */
template <typename T, int D>
cudaError_t launch_dim(const Params &p, const Plan &pl, int64_t batch, cudaStream_t stream)
{
    constexpr Shape one = decode_shape(D, 16), four = decode_shape(D, 17), pre = prefill_shape(D);
    const dim3 grid(pl.row_blocks, (unsigned)(batch * pl.heads), 1);
    if (pl.kernel == FA3) {
        cudaError_t e = tgf::launch_fa3<T, D>(p, grid, 16 * pl.shape.warps, pl.persistent, stream);
        if (e != cudaErrorNotSupported)
            return e;
    }
    if (pl.kernel != FA2)   /* strides the tensor maps cannot describe: the first wgmma kernel */
        return tgf::launch_sm90<T, D>(p, dim3((p.L + 127) / 128, grid.y, 1), stream);
    if (!pl.decode)
        return launch_tiles<T, D, pre.warps, pre.mt, pre.bn, pre.stages>(p, pl, batch, stream);
    if (pl.shape.warps == one.warps)
        return launch_tiles<T, D, one.warps, one.mt, one.bn, one.stages>(p, pl, batch, stream);
    return launch_tiles<T, D, four.warps, four.mt, four.bn, four.stages>(p, pl, batch, stream);
}

template <typename T>
cudaError_t launch(const Params &p, const Plan &pl, const tgf_attn_desc *d, cudaStream_t stream)
{
    switch (d->D) {
    case 64: return launch_dim<T, 64>(p, pl, d->batch, stream);
    case 128: return launch_dim<T, 128>(p, pl, d->batch, stream);
    default: return launch_dim<T, 256>(p, pl, d->batch, stream);
    }
}

/* what is wrong with the descriptor alone, or NULL */
const char *desc_problem(const tgf_attn_desc *d)
{
    if (!d)
        return "no descriptor";
    if (d->dtype != TGF_BF16 && d->dtype != TGF_F16)
        return say("dtype %lld: bf16 (0) or fp16 (1)", d->dtype);
    if (d->batch < 0 || d->L < 0 || d->S < 0 || d->hq <= 0 || d->hk <= 0)
        return "negative sizes, or no heads";
    if (d->hq % d->hk)
        return say("%lld query heads do not divide over the key/value heads", d->hq);
    if (d->D != 64 && d->D != 128 && d->D != 256)
        return say("head dim %lld: the flash kernels are built for 64, 128 and 256", d->D);
    if (d->L > INT32_MAX / 16 || d->S > INT32_MAX - 256 || d->hq > 65535)
        return "sequence or head count too large for the kernels' 32-bit row indices";
    if (!isfinite(d->scale))
        return "the scale is not finite";
    if (d->mask_kind < TGF_MASK_NONE || d->mask_kind > TGF_MASK_ADD)
        return say("mask kind %lld: none (0), bool (1) or additive float32 (2)", d->mask_kind);
    if (d->kernel < TGF_KERNEL_AUTO || d->kernel > TGF_KERNEL_WGMMA)
        return say("kernel %lld: auto (0), fa2 (1) or wgmma (2)", d->kernel);
    if (d->mask_kind != TGF_MASK_NONE && !d->mask)
        return "a mask kind but no mask";
    if (d->batch > 0 && d->L > 0 && d->batch * plan(d).heads > 65535)
        return say("batch x heads %lld is over the grid's 65535", d->batch * plan(d).heads);
    return NULL;
}

} // namespace

extern "C" const char *tgf_attn_check(const tgf_attn_desc *d, const void *q, const void *k,
                                      const void *v, const void *o)
{
    const char *bad = desc_problem(d);
    if (bad || d->batch == 0 || d->L == 0)
        return bad;
    if (!q || !k || !v || !o)
        return "a NULL tensor";
    if (misaligned(q, d->q_stride) || misaligned(k, d->k_stride) || misaligned(v, d->v_stride) ||
        misaligned(o, d->o_stride))
        return "q, k, v and o need 16-byte aligned pointers and strides that are multiples of 8";
    return NULL;
}

extern "C" size_t tgf_attn_workspace(const tgf_attn_desc *d)
{
    if (desc_problem(d) || d->batch == 0 || d->L == 0)
        return 0;
    return workspace_bytes(d, plan(d));
}

extern "C" const char *tgf_attn_kernel(const tgf_attn_desc *d)
{
    if (!d || d->L <= 0 || d->hk <= 0 || d->hq % d->hk)
        return "none";
    Plan pl = plan(d);
    snprintf(why_buf, sizeof why_buf, "%s %s d%lld bm%d bn%d splits %d%s", kernel_names[pl.kernel],
             pl.decode ? "decode" : "prefill", (long long)d->D, 16 * pl.shape.mt * pl.shape.warps, pl.shape.bn,
             pl.splits, pl.persistent ? " persistent" : "");
    return why_buf;
}

extern "C" int tgf_attn_forward(const tgf_attn_desc *d, const void *q, const void *k,
                                const void *v, void *o, void *workspace, size_t ws_bytes,
                                cudaStream_t stream, const char **why)
{
    const char *bad = tgf_attn_check(d, q, k, v, o);
    if (bad) {
        *why = bad;
        return -1;
    }
    if (d->batch == 0 || d->L == 0)
        return 0;
    Plan pl = plan(d);
    size_t need = workspace_bytes(d, pl);
    if (need > ws_bytes || (need && !workspace)) {
        *why = say("the decode split needs %lld bytes of workspace", (long long)need);
        return -1;
    }
    Params p = {};
    p.q = q, p.k = k, p.v = v, p.o = o;
    fill_strides(d->q_stride, d->hq, d->L, d->D, p.qs);
    fill_strides(d->k_stride, d->hk, d->S, d->D, p.ks);
    fill_strides(d->v_stride, d->hk, d->S, d->D, p.vs);
    fill_strides(d->o_stride, d->hq, d->L, d->D, p.os);
    p.mask = d->mask;
    p.mask_kind = d->mask_kind;
    for (int i = 0; i < 4; i++)
        p.ms[i] = d->mask_stride[i];
    p.hq = (int)d->hq, p.hk = (int)d->hk, p.L = (int)d->L, p.S = (int)d->S;
    p.group = (int)(d->hq / d->hk);
    p.pack = pl.pack;
    p.tiles_per_split = pl.tiles_per_split;
    p.causal = d->causal != 0;
    p.scale_log2 = d->scale * 1.4426950408889634f;
    if (pl.splits > 1) {
        p.part_o = static_cast<float *>(workspace);
        p.part_lse = p.part_o + (size_t)pl.splits * d->batch * d->hq * d->L * d->D;
    }
    cudaError_t e = d->dtype == TGF_BF16 ? launch<__nv_bfloat16>(p, pl, d, stream)
                                         : launch<__half>(p, pl, d, stream);
    if (e != cudaSuccess) {
        *why = cudaGetErrorString(e);
        return -1;
    }
    return 0;
}
