#!/usr/bin/env python3
"""Compile time over the model zoo: tcompile against torch.compile and
AOTInductor, as wall time and as CPU time (user + sys of the compiler and the
processes it waits for), since on a loaded machine only the CPU time says
what the work is.

    python3 bench/zoo/compile_time.py --work DIR [--tools DIR] [--baseline DIR]
        [--engines tcompile,compile,aoti] [--threads 2] MODEL...

Each MODEL is a directory of DIR holding m.pt2 and in0.b1.npy ... (as
zoo.py --export-only writes it). tcompile compiles m.tg (texport'ed from
m.pt2 once, not timed); --baseline DIR times another build's tools/tcompile
(with its libtgkernels.a) beside it, one after the other. torch.compile
(dynamic=True, as speed.py sets it up) is timed over its first call on the
batch-1 inputs, less one eager call; AOTInductor over
aoti_compile_and_package. Both run in a fresh process with Inductor's caches
off (TORCHINDUCTOR_FORCE_DISABLE_CACHES=1, an empty cache directory) and its
compile workers in-process (TORCHINDUCTOR_COMPILE_THREADS=1), so that every
compiler process is a child that is waited for and counted. Prints one
markdown row per model: wall s, CPU s, and the load before.
"""
import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def cpu_children():
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def timed(cmd, env=None):
    """(wall s, user + sys s of cmd and what it waited for)"""
    c0, t0 = cpu_children(), time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall, cpu = time.perf_counter() - t0, cpu_children() - c0
    if p.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0])}: {p.stderr.strip()[-300:]}")
    return wall, cpu, p.stdout


def tcompile(tools, d):
    tg, so = os.path.join(d, "m.tg"), os.path.join(d, "ct.so")
    env = dict(os.environ, TGRAPH_RUNTIME_DIR=os.path.realpath(os.path.join(tools, "..")))
    wall, cpu, _ = timed([os.path.join(tools, "tcompile"), tg, "-o", so], env)
    os.unlink(so)
    return wall, cpu


# the torch side, run as `compile_time.py --torch ENGINE DIR THREADS` in a fresh
# process: prints "wall cpu" of the compile (its own and its children's CPU)
def torch_side(engine, d, threads):
    import glob
    import numpy as np
    import torch
    torch.set_num_threads(threads)
    torch.set_num_interop_threads(1)
    ep = torch.export.load(os.path.join(d, "m.pt2"))
    xs = [torch.from_numpy(np.load(f))
          for f in sorted(glob.glob(os.path.join(d, "in*.b1.npy")))]

    def cpu():
        s = resource.getrusage(resource.RUSAGE_SELF)
        c = resource.getrusage(resource.RUSAGE_CHILDREN)
        return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

    if engine == "compile":
        module = ep.module()
        with torch.inference_mode():
            c0, t0 = cpu(), time.perf_counter()
            module(*xs)
            eager_wall, eager_cpu = time.perf_counter() - t0, cpu() - c0
            f = torch.compile(module, dynamic=True)
            c0, t0 = cpu(), time.perf_counter()
            f(*xs)
            wall, c = time.perf_counter() - t0 - eager_wall, cpu() - c0 - eager_cpu
    else:
        with tempfile.TemporaryDirectory() as tmp:
            c0, t0 = cpu(), time.perf_counter()
            torch._inductor.aoti_compile_and_package(ep, package_path=os.path.join(tmp, "m.pt2"))
            wall, c = time.perf_counter() - t0, cpu() - c0
    print(f"{wall:.2f} {c:.2f}")


def torch_engine(engine, d, threads):
    with tempfile.TemporaryDirectory() as cache:
        env = dict(os.environ, TORCHINDUCTOR_FORCE_DISABLE_CACHES="1",
                   TORCHINDUCTOR_CACHE_DIR=cache, TORCHINDUCTOR_COMPILE_THREADS="1")
        _, _, out = timed([sys.executable, os.path.abspath(__file__), "--torch", engine, d,
                           str(threads)], env)
    wall, cpu = out.split()[-2:]
    return float(wall), float(cpu)


def main():
    if len(sys.argv) == 5 and sys.argv[1] == "--torch":
        return torch_side(sys.argv[2], sys.argv[3], int(sys.argv[4]))
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", required=True)
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "..", "tools"))
    ap.add_argument("--baseline", help="another tgraph build directory, timed beside")
    ap.add_argument("--engines", default="tcompile,compile,aoti")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("models", nargs="+")
    a = ap.parse_args()
    engines = a.engines.split(",")
    names = {"tcompile": "tcompile", "compile": "torch.compile", "aoti": "AOTInductor"}
    cols = ([f"tcompile {os.path.basename(os.path.realpath(a.baseline))}"] if a.baseline else []) + \
        [names[e] for e in engines]
    print("| model | " + " | ".join(f"{c} wall s | {c} CPU s" for c in cols) + " | load |")
    print("|---|" + "---:|---:|" * len(cols) + "---:|")
    for m in a.models:
        d = os.path.join(a.work, m)
        tg = os.path.join(d, "m.tg")
        if not os.path.exists(tg):
            subprocess.run([os.path.join(a.tools, "texport"), os.path.join(d, "m.pt2"), "-o", tg],
                           check=True, capture_output=True)
        load = os.getloadavg()[0]
        row = []
        for e in (["base"] if a.baseline else []) + engines:
            try:
                if e in ("base", "tcompile"):
                    w, c = tcompile(os.path.join(a.baseline, "tools") if e == "base" else a.tools, d)
                else:
                    w, c = torch_engine(e, d, a.threads)
                row += [f"{w:.2f}", f"{c:.2f}"]
            except (RuntimeError, ValueError) as err:
                print(f"{m} {e}: {err}", file=sys.stderr)
                row += ["fail", "fail"]
        print(f"| {m} | " + " | ".join(row) + f" | {load:.1f} |", flush=True)


if __name__ == "__main__":
    main()
