#!/usr/bin/env python3
"""Issue 18's speed table: tgraph's `tcompile --target cuda --dtype bf16` .so
against torch eager, torch.compile (default) and torch.compile
(mode="reduce-overhead"), all bf16, side by side in one run.

    bench.py workers --work DIR --out DIR --budget S [--small] [--device cpu] [MODEL...]
    bench.py worker MODEL --work DIR ...     (one model; workers starts them)
    bench.py table --work DIR [--out DIR] [--wait S]

workers starts one worker process per model, all at once: each builds its
model with seeded random weights, exports every row's shape with
torch.export (float32, static shapes) to DIR/MODEL.I.pt2 for build.sh
(texport, tcompile), and compiles the torch contenders (the slow part, while
tgraph builds). When every worker has compiled and DIR/builds.done exists,
the workers take turns on the GPU (a lock): per row, each contender is
warmed up, then ROUNDS rounds run the contenders in turn, N calls a round
timed with CUDA events on one stream; the median round. Our .so is called
through tgraph_model_run_ex with the input and output in device memory on
that stream (float32 image or int64 ids in, float32 out; the image is
rounded to bf16 first so every contender reads the same values). Error:
max |y - ref| where ref is the float32 model on the device with TF32 off;
every row also compiled without --dtype (float32): its error checks our paths.
Where our time goes: one run of the .so under torch.profiler (CUPTI sees
the kernels of the .so's CUDA graph), its kernels' time summed by name (and
each launch in order in DIR/MODEL.json's ours_trace). OURS_ALT=VAR=VALUE
(TG_CUDNN=off, say): the same .so opened a second time with VAR set, timed
in the same rounds as one more contender, its kernels summed too.

--device cpu --small --torch eager is the dry run: the same steps on the
CPU with small models (ours: the .so build.sh made with TARGET=cpu, through
the same ctypes path)."""
import argparse
import ctypes
import fcntl
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
sys.path.append(os.path.join(HERE, "..", "..", "zoo"))
import models  # noqa: E402

ROUNDS = 5
ROUND_MS = 40.0
CONTENDERS = ["ours", "eager", "compile", "reduce-overhead"]
ALT = os.environ.get("OURS_ALT", "")


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def touch(path, text=""):
    with open(path + ".tmp", "w") as f:
        f.write(text)
    os.replace(path + ".tmp", path)


def wait_for(paths, until):
    """Waits until one of paths exists (or until the deadline): the first found."""
    while time.time() < until:
        for p in paths:
            if os.path.exists(p):
                return p
        time.sleep(0.5)
    return None


# ---- our .so through ctypes ----

class Tensor(ctypes.Structure):
    _fields_ = [("data", ctypes.c_void_p), ("dtype", ctypes.c_int), ("rank", ctypes.c_int),
                ("dims", ctypes.c_int64 * 8), ("nbytes", ctypes.c_size_t)]


class RunOpts(ctypes.Structure):
    _fields_ = [("size", ctypes.c_uint32), ("version", ctypes.c_uint32),
                ("stream", ctypes.c_void_p), ("inputs", ctypes.c_int),
                ("outputs", ctypes.c_int)]


DTYPES = {1: "float32", 11: "int64"}


class Ours:
    """A .so of tcompile, run on device (or, on the CPU, host) tensors."""
    def __init__(self, path, x, stream):
        import torch
        self.lib = ctypes.CDLL(path)
        self.lib.tgraph_model_open.restype = ctypes.c_void_p
        self.lib.tgraph_last_error.restype = ctypes.c_char_p
        self.m = self.lib.tgraph_model_open(None)
        if not self.m:
            raise RuntimeError(self.lib.tgraph_last_error().decode())
        self.x = x.contiguous()
        self.inp = Tensor(self.x.data_ptr(), {torch.float32: 1, torch.int64: 11}[x.dtype],
                          x.dim(), (ctypes.c_int64 * 8)(*x.shape), x.numel() * x.element_size())
        out = Tensor()
        self.check(self.lib.tgraph_model_output_dims(ctypes.c_void_p(self.m),
                                                     ctypes.byref(self.inp), 1,
                                                     ctypes.byref(out), 1))
        if out.dtype != 1:
            raise RuntimeError(f"output dtype {out.dtype}, expected float32")
        self.y = torch.empty([out.dims[i] for i in range(out.rank)], dtype=torch.float32,
                             device=x.device)
        self.out = Tensor(self.y.data_ptr(), 1, out.rank, out.dims, out.nbytes)
        self.opts = RunOpts(ctypes.sizeof(RunOpts), 1, stream, 1, 1)
        self.run_ex = self.lib.tgraph_model_run_ex

    def check(self, rc):
        if rc:
            raise RuntimeError(self.lib.tgraph_last_error().decode())

    def __call__(self):
        self.check(self.run_ex(ctypes.c_void_p(self.m), ctypes.byref(self.inp), 1,
                               ctypes.byref(self.out), 1, ctypes.byref(self.opts)))
        return self.y


# ---- one model ----

class Timer:
    def __init__(self, torch, device):
        self.torch, self.cuda = torch, device == "cuda"

    def ms(self, fn, n):
        torch = self.torch
        if self.cuda:
            a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            a.record()
            for _ in range(n):
                fn()
            b.record()
            b.synchronize()
            return a.elapsed_time(b) / n
        t = time.perf_counter()
        for _ in range(n):
            fn()
        return (time.perf_counter() - t) * 1e3 / n


def where_time_goes(torch, fn, top=6):
    """Our kernels' device time in one run, summed by kernel name: [(name, us, calls)],
    and each launch in order: [(name, us)]."""
    from torch.profiler import ProfilerActivity, profile
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    rows, trace = {}, []
    for e in sorted((e for e in prof.events() if e.device_type.name == "CUDA"),
                    key=lambda e: e.time_range.start):
        us = e.time_range.elapsed_us()
        trace.append((e.name[:90], round(us, 2)))
        k = rows.setdefault(e.name[:90], [0.0, 0])
        k[0] += us
        k[1] += 1
    total = sum(v[0] for v in rows.values())
    best = sorted(rows.items(), key=lambda kv: -kv[1][0])[:top]
    return total, [(n, round(v[0], 1), v[1]) for n, v in best], trace


def worker(a):
    import numpy as np
    import torch
    from zoo import nontrivial_weights
    torch.set_num_threads(4 if a.device == "cuda" else 1)
    deadline = a.deadline
    name = a.models[0]
    res = {"model": name, "rows": [], "device": a.device}
    model, rows, make = models.get(name, a.small)
    nontrivial_weights(model, make((2,) + rows[0][1:], 99))
    res["params"] = sum(p.numel() for p in model.parameters())
    inputs = [make(shape, 1 + i) for i, shape in enumerate(rows)]
    # exports first: build.sh waits for them
    for i, shape in enumerate(rows):
        base = os.path.join(a.work, f"{name}.{i}")
        t = time.time()
        try:
            with torch.no_grad():
                prog = torch.export.export(model, inputs[i])
            torch.export.save(prog, base + ".tmp.pt2")
            os.replace(base + ".tmp.pt2", base + ".pt2")
            np.save(base + ".in0.npy", inputs[i][0].numpy())
            log(name, shape, f"exported in {time.time() - t:.1f} s")
        except Exception as e:      # noqa: BLE001 - the table says why
            touch(base + ".fail", f"torch.export: {type(e).__name__}: {str(e)[:300]}")
            log(name, shape, "export failed:", e)
    dev = a.device
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    model = model.to(dev)
    stream = torch.cuda.Stream() if dev == "cuda" else None
    ctx = torch.cuda.stream(stream) if dev == "cuda" else torch.no_grad()
    import copy
    with ctx, torch.no_grad():
        xs = [tuple(t.to(dev) for t in inp) for inp in inputs]
        refs = [model(*x).float() for x in xs]
        m16 = copy.deepcopy(model).to(torch.bfloat16)
        model.cpu()
        del model
        x16 = [tuple(t.to(torch.bfloat16) if t.is_floating_point() else t for t in x) for x in xs]
        torch._dynamo.config.cache_size_limit = 64
        fns = {"eager": m16}
        if "compile" in a.torch.split(","):
            fns["compile"] = torch.compile(copy.deepcopy(m16), dynamic=False)
        if "reduce-overhead" in a.torch.split(","):
            fns["reduce-overhead"] = torch.compile(copy.deepcopy(m16), mode="reduce-overhead",
                                                   dynamic=False)
        # compile (warm up) every torch contender on every row while tgraph builds
        failed = {}
        for i in range(len(rows)):
            for k, f in fns.items():
                if k in failed:
                    continue
                t = time.time()
                try:
                    for _ in range(3):
                        f(*x16[i])
                    if dev == "cuda":
                        torch.cuda.synchronize()
                    log(name, rows[i], k, f"warm in {time.time() - t:.1f} s")
                except Exception as e:  # noqa: BLE001
                    failed[k] = f"{type(e).__name__}: {str(e)[:200]}"
                    log(name, rows[i], k, "failed:", failed[k])
                if time.time() > deadline - 100:
                    failed.setdefault("compile", "no time left to compile")
                    failed.setdefault("reduce-overhead", "no time left to compile")
        touch(os.path.join(a.work, f"{name}.compiled"))
        # everyone compiled and every .so built: then the GPU is ours alone
        need = [os.path.join(a.work, f"{m}.compiled") for m in a.all_models]
        while time.time() < deadline - 80 and not all(os.path.exists(p) for p in need):
            time.sleep(0.5)
        wait_for([os.path.join(a.work, "builds.done")], deadline - 80)
        with open(os.path.join(a.work, "gpu.lock"), "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            log(name, "has the GPU")
            for i, shape in enumerate(rows):
                if time.time() > deadline - 15:
                    log(name, shape, "no time left")
                    break
                row = time_row(a, torch, name, i, shape, xs[i], x16[i], refs[i], fns, failed,
                               stream, Timer(torch, dev))
                res["rows"].append(row)
                with open(os.path.join(a.work, f"{name}.json"), "w") as f:
                    json.dump(res, f)
                print(table_line(row), flush=True)
    return 0


def time_row(a, torch, name, i, shape, x, x16, ref, fns, failed, stream, timer):
    base = os.path.join(a.work, f"{name}.{i}")
    row = {"label": models.label(name, shape), "ms": {}, "err": {}, "why": dict(failed),
           "max_ref": float(ref.abs().max())}
    calls = {k: (lambda f=f: f(*x16)) for k, f in fns.items() if k not in failed}
    if os.path.exists(base + ".so.ok"):
        try:
            ours = Ours(base + ".so", x[0], stream.cuda_stream if stream is not None else None)
            calls = {"ours": ours, **calls}
        except Exception as e:      # noqa: BLE001
            row["why"]["ours"] = f"open/run: {e}"
        if ALT and "ours" in calls:     # the same .so, opened with ALT's variable set
            var, val = ALT.split("=", 1)
            was = os.environ.get(var)
            os.environ[var] = val
            try:
                calls["ours " + ALT] = Ours(base + ".so", x[0],
                                            stream.cuda_stream if stream is not None else None)
            except Exception as e:  # noqa: BLE001
                row["why"]["ours " + ALT] = f"open/run: {e}"
            if was is None:
                del os.environ[var]
            else:
                os.environ[var] = was
    else:
        fail = base + ".fail"
        row["why"]["ours"] = open(fail).read().strip() if os.path.exists(fail) else "not built"
    n = {}
    for k, f in list(calls.items()):
        try:
            f()
            t = timer.ms(f, 2)
            n[k] = max(1, min(200, int(ROUND_MS / max(t, 1e-3))))
            y = f().float()
            row["err"][k] = float((y - ref).abs().max())
        except Exception as e:      # noqa: BLE001
            row["why"][k] = f"{type(e).__name__}: {str(e)[:200]}"
            del calls[k]
    if os.path.exists(base + ".f32.so.ok"):     # the same graph in float32: the paths' error
        try:
            ours32 = Ours(base + ".f32.so", x[0], stream.cuda_stream if stream is not None else None)
            row["err"]["ours fp32"] = float((ours32() - ref).abs().max())
            del ours32
        except Exception as e:      # noqa: BLE001
            row["why"]["ours fp32"] = f"open/run: {e}"
    times = {k: [] for k in calls}
    for _ in range(ROUNDS):
        for k, f in calls.items():
            times[k].append(timer.ms(f, n[k]))
    row["ms"] = {k: statistics.median(v) for k, v in times.items()}
    for k, key in (("ours", "ours"), ("ours " + ALT, "alt")):
        if k in calls and a.device == "cuda":
            try:
                row[key + "_kernels_us"], row[key + "_top"], row[key + "_trace"] = \
                    where_time_goes(torch, calls[k])
            except Exception as e:      # noqa: BLE001
                row["why"]["profile " + k] = str(e)[:200]
    return row


# ---- the table ----

HEAD = ("| row | ours | eager | compile | reduce-overhead | ours / best torch "
        "| max err ours (torch eager bf16; fp32 .so) | max abs ref |\n"
        "|:--|--:|--:|--:|--:|--:|--:|--:|")


def table_line(r):
    ms = r["ms"]
    cell = [f"{ms[k]:.3f}" if k in ms else "-" for k in CONTENDERS]
    torch_best = min([ms[k] for k in CONTENDERS[1:] if k in ms], default=None)
    ratio = f"**{ms['ours'] / torch_best:.2f}**" if "ours" in ms and torch_best else "-"
    err = r["err"]
    e = (f"{err['ours']:.3g}" if "ours" in err else "-") + \
        (f" ({err['eager']:.3g})" if "eager" in err else "") + \
        (f"; fp32 .so {err['ours fp32']:.2g}" if "ours fp32" in err else "")
    return f"| {r['label']} | " + " | ".join(cell) + f" | {ratio} | {e} | {r['max_ref']:.3g} |"


def table(a):
    if a.wait:
        wait_for([os.path.join(a.work, "workers.done")], time.time() + a.wait)
    lines, notes = [HEAD], []
    for name in models.MODELS:
        p = os.path.join(a.work, f"{name}.json")
        if not os.path.exists(p):
            lines.append(f"| {name} | (no result) | | | | | | |")
            continue
        res = json.load(open(p))
        for r in res["rows"]:
            lines.append(table_line(r))
            for k, why in r["why"].items():
                notes.append(f"- {r['label']}, {k}: {why}")
            for k in r["ms"]:
                if k not in CONTENDERS:
                    notes.append(f"- {r['label']}, {k}: {r['ms'][k]:.3f} ms, max err "
                                 f"{r['err'].get(k, float('nan')):.3g}")
            for key, who in (("ours", "ours'"), ("alt", f"ours {ALT}:")):
                if r.get(key + "_top"):
                    tops = "; ".join(f"{n} {us / 1e3:.2f} ms ({c})" for n, us, c in r[key + "_top"])
                    notes.append(f"- {r['label']}, {who} kernels "
                                 f"{r[key + '_kernels_us'] / 1e3:.2f} ms: {tops}")
    text = "\n".join(lines + [""] + notes) + "\n"
    print(text)
    if a.out:
        with open(os.path.join(a.out, "table.md"), "w") as f:
            f.write(text)
    return 0


def workers(a):
    procs = []
    for name in a.models:
        cmd = [sys.executable, os.path.abspath(__file__), "worker", name, "--work", a.work,
               "--device", a.device, "--deadline", str(a.deadline),
               "--all-models", ",".join(a.models), "--torch", a.torch] + \
            (["--small"] if a.small else [])
        out = open(os.path.join(a.out or a.work, f"worker.{name}.log"), "w")
        procs.append(subprocess.Popen(cmd, stdout=out, stderr=subprocess.STDOUT))
    for p in procs:
        try:
            p.wait(timeout=max(1, a.deadline - time.time()))
        except subprocess.TimeoutExpired:
            p.kill()
    touch(os.path.join(a.work, "workers.done"))
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("what", choices=["workers", "worker", "table"])
    ap.add_argument("models", nargs="*")
    ap.add_argument("--work", required=True)
    ap.add_argument("--out")
    ap.add_argument("--device", default="cuda", choices=["cuda", "cpu"])
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--budget", type=float, default=540, help="seconds the workers may take")
    ap.add_argument("--deadline", type=float)
    ap.add_argument("--all-models", default="")
    ap.add_argument("--wait", type=float, default=0)
    ap.add_argument("--torch", default=",".join(CONTENDERS[1:]),
                    help="torch's contenders (eager is always one)")
    a = ap.parse_args()
    a.models = a.models or list(models.MODELS)
    a.all_models = a.all_models.split(",") if a.all_models else a.models
    a.deadline = a.deadline or time.time() + a.budget
    os.makedirs(a.work, exist_ok=True)
    return {"workers": workers, "worker": worker, "table": table}[a.what](a)


if __name__ == "__main__":
    sys.exit(main())
