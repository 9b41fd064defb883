"""Time one model in ONNX Runtime (CPU) and PyTorch (eager, torch.compile,
AOTInductor) on given .npy inputs, with a fixed number of threads.

    python3 frameworks.py --pt2 M.pt2 --onnx M.onnx --threads 2 --runs 20 \
        --aoti-dir DIR in_b1.npy in_b3.npy ...

Prints one line per engine and input: "ENGINE FILE MEDIAN_MS" (or
"ENGINE FILE - REASON" when the engine cannot run it). Called by run.sh.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np


def median_ms(fn, runs, warmup):
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    return statistics.median(times) * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pt2", required=True)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--aoti-dir", required=True)
    ap.add_argument("--engines", default="ort,eager,compile,aoti")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()
    engines = a.engines.split(",")
    inputs = [(p, np.load(p)) for p in a.inputs]

    def report(engine, path, fn):
        try:
            print(f"{engine} {path} {median_ms(fn, a.runs, a.warmup):.4f}", flush=True)
        except Exception as e:  # an engine that cannot run a case says why
            print(f"{engine} {path} - {type(e).__name__}: {str(e).splitlines()[0][:120]}",
                  flush=True)

    if "ort" in engines:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        for path, x in inputs:
            report("onnxruntime", path, lambda x=x: sess.run(None, {name: x}))
        # ORT's idle workers spin for a while after each run: gone before torch runs
        del sess

    import torch
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    ep = torch.export.load(a.pt2)
    module = ep.module()

    def torch_fn(f, x):
        t = torch.from_numpy(x)
        def run():
            with torch.inference_mode():
                f(t)
        return run

    if "eager" in engines:
        for path, x in inputs:
            report("torch-eager", path, torch_fn(module, x))
    if "compile" in engines:
        compiled = torch.compile(module, dynamic=True)
        for path, x in inputs:
            report("torch.compile", path, torch_fn(compiled, x))
    if "aoti" in engines:
        pkg = os.path.join(a.aoti_dir, os.path.basename(a.pt2) + ".aoti.pt2")
        try:
            if not os.path.exists(pkg):
                torch._inductor.aoti_compile_and_package(ep, package_path=pkg)
            runner = torch._inductor.aoti_load_package(pkg)
        except Exception as e:
            for path, _ in inputs:
                print(f"aotinductor {path} - {type(e).__name__}: {str(e).splitlines()[0][:120]}")
            return
        for path, x in inputs:
            report("aotinductor", path, torch_fn(runner, x))


if __name__ == "__main__":
    sys.exit(main())
