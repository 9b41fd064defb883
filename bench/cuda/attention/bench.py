"""tgraph's flash-attention kernels side by side with torch's SDPA backends.

Run on the GPU machine: python3 bench.py LIBTGFLASH.so [--quick]
[--ours-only] [--variant] [--decode-only] [--dims=64,128] [--profile]. The same
q, k, v (bf16, [b, h, s, d], random normal) go to tgf_attn_forward through
ctypes ("ours": the kernel the device picks, FA3 on Hopper; "ours fa2": the
portable mma.sync kernel; "ours wgmma": the first Hopper kernel) and to torch.nn.functional.scaled_dot_product_attention under each
backend (default, CUDNN_ATTENTION, FLASH_ATTENTION, EFFICIENT_ATTENTION).
Time: CUDA events, median of the repeats after warm-up, two or three input sets
rotated so that nothing is timed out of L2. TFLOP/s = 4 b h s^2 d, half for
causal. Each of ours is checked against torch's flash (or math) output first:
max |diff| printed. Decode rows: GB/s of K and V read.
"""
import ctypes
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel


class Desc(ctypes.Structure):
    _fields_ = [("dtype", ctypes.c_int32), ("mask_kind", ctypes.c_int32),
                ("batch", ctypes.c_int64), ("hq", ctypes.c_int64), ("hk", ctypes.c_int64),
                ("L", ctypes.c_int64), ("S", ctypes.c_int64), ("D", ctypes.c_int64),
                ("scale", ctypes.c_float), ("causal", ctypes.c_int32),
                ("mask", ctypes.c_void_p), ("mask_stride", ctypes.c_int64 * 4),
                ("q_stride", ctypes.c_int64 * 3), ("k_stride", ctypes.c_int64 * 3),
                ("v_stride", ctypes.c_int64 * 3), ("o_stride", ctypes.c_int64 * 3),
                ("kernel", ctypes.c_int32)]


lib = ctypes.CDLL(sys.argv[1])
lib.tgf_attn_forward.restype = ctypes.c_int
lib.tgf_attn_forward.argtypes = [ctypes.POINTER(Desc)] + [ctypes.c_void_p] * 5 + \
    [ctypes.c_size_t, ctypes.c_void_p, ctypes.POINTER(ctypes.c_char_p)]
lib.tgf_attn_workspace.restype = ctypes.c_size_t
lib.tgf_attn_workspace.argtypes = [ctypes.POINTER(Desc)]
lib.tgf_attn_kernel.restype = ctypes.c_char_p
lib.tgf_attn_kernel.argtypes = [ctypes.POINTER(Desc)]
QUICK = "--quick" in sys.argv            # three sequence lengths
OURS_ONLY = "--ours-only" in sys.argv    # no torch rows: compare builds of ours
PROFILE = "--profile" in sys.argv        # one call of ours, d128 s=4096, for ncu
VARIANT = "--variant" in sys.argv        # the kernel ours picks alone: compare settings
DECODE_ONLY = "--decode-only" in sys.argv
OURS_ONLY = OURS_ONLY or VARIANT
DIMS = next((tuple(int(x) for x in a[7:].split(",")) for a in sys.argv if a.startswith("--dims=")),
            (64, 128, 256))            # prefill head dims


def ours(q, k, v, causal, kernel=0):
    b, hq, L, d = q.shape
    desc = Desc(dtype=0 if q.dtype == torch.bfloat16 else 1, batch=b, hq=hq, hk=k.shape[1],
                L=L, S=k.shape[2], D=d, scale=d ** -0.5, causal=int(causal), kernel=kernel)
    o = torch.empty_like(q)
    ws = torch.empty(max(1, lib.tgf_attn_workspace(ctypes.byref(desc))), dtype=torch.uint8,
                     device=q.device)
    why = ctypes.c_char_p()
    stream = torch.cuda.current_stream().cuda_stream

    def run():
        if lib.tgf_attn_forward(ctypes.byref(desc), q.data_ptr(), k.data_ptr(), v.data_ptr(),
                                o.data_ptr(), ws.data_ptr(), ws.numel(), stream,
                                ctypes.byref(why)):
            raise RuntimeError(why.value.decode())
        return o
    return run, lib.tgf_attn_kernel(ctypes.byref(desc)).decode()


def torch_sdpa(backend, q, k, v, causal):
    gqa = k.shape[1] != q.shape[1]

    def run():
        if backend is None:
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=gqa)
    return run


def median_ms(fns, reps):
    """fns: one callable per input set, rotated"""
    for f in fns:
        f()
    torch.cuda.synchronize()
    times = []
    for i in range(reps):
        a, z = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        fns[i % len(fns)]()
        z.record()
        z.synchronize()
        times.append(a.elapsed_time(z))
    return statistics.median(times)


BACKENDS = [("default", None), ("cudnn", SDPBackend.CUDNN_ATTENTION),
            ("flash", SDPBackend.FLASH_ATTENTION), ("efficient", SDPBackend.EFFICIENT_ATTENTION)]


def inputs(b, hq, hk, L, S, d, sets):
    g = torch.Generator(device="cuda").manual_seed(L * 7 + S + d)
    mk = lambda h, n: torch.randn(b, h, n, d, device="cuda", dtype=torch.bfloat16, generator=g)
    return [(mk(hq, L), mk(hk, S), mk(hk, S)) for _ in range(sets)]


def prefill_rows():
    out = []
    seqs = [512, 2048, 8192] if QUICK else [512, 1024, 2048, 4096, 8192, 16384]
    for d in DIMS:
        for s in seqs:
            for causal in (False, True):
                b, h = max(1, 16384 // s), 2048 // d
                sets = inputs(b, h, h, s, s, d, 2)
                flops = 4 * b * h * s * s * d / (2 if causal else 1)
                reps = 10 if s >= 8192 else 30
                q, k, v = sets[0]
                ref = torch_sdpa(SDPBackend.FLASH_ATTENTION, q, k, v, causal)()
                run, name = ours(q, k, v, causal)
                diff = (run().float() - ref.float()).abs().max().item()
                row = {"d": d, "s": s, "b": b, "h": h, "causal": causal, "kernel": name,
                       "diff": diff}
                runs = [ours(*x, causal)[0] for x in sets]
                row["ours"] = flops / median_ms(runs, reps) / 1e9
                for col, kernel in (("fa2", 1), ("wgmma", 2)):
                    row[col] = None if VARIANT else flops / median_ms(
                        [ours(*x, causal, kernel)[0] for x in sets], reps) / 1e9
                for bn, be in BACKENDS:
                    try:
                        if OURS_ONLY:
                            raise RuntimeError
                        fns = [torch_sdpa(be, *x, causal) for x in sets]
                        row[bn] = flops / median_ms(fns, reps) / 1e9
                    except RuntimeError:
                        row[bn] = None
                out.append(row)
                print(fmt_prefill(row), flush=True)
                del sets
    return out


def fmt(x):
    return "-" if x is None else f"{x:.0f}"


def fmt_prefill(r):
    best = max([r[k] for k in ("default", "cudnn", "flash", "efficient") if r[k]] or [r["ours"]])
    return (f"| {r['d']} | {r['s']} | {r['b']}x{r['h']} | {'yes' if r['causal'] else 'no'} | "
            f"{fmt(r['ours'])} | {fmt(r['fa2'])} | {fmt(r['wgmma'])} | {fmt(r['default'])} | {fmt(r['cudnn'])} | {fmt(r['flash'])} | "
            f"{fmt(r['efficient'])} | {r['ours'] / best:.2f} | {r['diff']:.1e} | {r['kernel']} |")


def decode_rows():
    out = []
    for d, L, S in [(128, 1, 8192), (128, 1, 32768), (128, 16, 32768), (64, 1, 32768),
                    (256, 1, 32768), (128, 4, 131072)]:
        b, hq, hk = (8, 32, 8) if S <= 32768 else (2, 32, 8)
        sets = inputs(b, hq, hk, L, S, d, 3)
        kv_bytes = 2 * b * hk * S * d * 2
        q, k, v = sets[0]
        ref = torch_sdpa(SDPBackend.MATH, q.float(), k.float(), v.float(), False)()
        run, name = ours(q, k, v, False)
        diff = (run().float() - ref).abs().max().item()
        row = {"d": d, "L": L, "S": S, "b": b, "hq": hq, "hk": hk, "kernel": name, "diff": diff}
        row["ours"] = kv_bytes / median_ms([ours(*x, False)[0] for x in sets], 50) / 1e6
        for bn, be in BACKENDS:
            try:
                if OURS_ONLY:
                    raise RuntimeError
                fns = [torch_sdpa(be, *x, False) for x in sets]
                row[bn] = kv_bytes / median_ms(fns, 50) / 1e6
            except RuntimeError:
                row[bn] = None
        out.append(row)
        print(f"| {d} | {L} | {S} | {b}x{hq}/{hk} | {fmt(row['ours'])} | {fmt(row['default'])} | "
              f"{fmt(row['cudnn'])} | {fmt(row['flash'])} | {fmt(row['efficient'])} | "
              f"{diff:.1e} | {name} |", flush=True)
    return out


if __name__ == "__main__":
    if PROFILE:
        q, k, v = inputs(4, 16, 16, 4096, 4096, 128, 1)[0]
        ours(q, k, v, False)[0]()
        torch.cuda.synchronize()
        sys.exit(0)
    print(torch.cuda.get_device_name(), "torch", torch.__version__)
    print("\nprefill, bf16, TFLOP/s (ours / best torch: the ratio column)")
    print("| d | seq | b x h | causal | ours | ours fa2 | ours wgmma | default | cudnn | flash "
          "| efficient | ratio | max diff | kernel |")
    print("|--:|--:|--:|:-:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|")
    if not DECODE_ONLY:
        prefill_rows()
    print("\ndecode, bf16, GB/s of K and V read")
    print("| d | L | S | b x hq/hk | ours | default | cudnn | flash | efficient | max diff | kernel |")
    print("|--:|--:|--:|--:|--:|--:|--:|--:|--:|--:|:--|")
    decode_rows()
