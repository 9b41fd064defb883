"""Time one model in ONNX Runtime (CPU), OpenVINO (CPU, f32) and PyTorch
(eager, torch.compile, AOTInductor) on .npy inputs, with a fixed number of
threads.

    python3 frameworks.py --pt2 M.pt2 --onnx M.onnx --threads 2 --aoti-dir DIR \
        [--engines ort,ov,eager,compile,aoti] [--runs 20 --warmup 10 | --serve] in_b1.npy ...

Sets every engine up once and runs each once on every input (torch.compile
compiles lazily, per input shape; OpenVINO compiles the model for each input
shape), then answers timing requests "ENGINE FILE RUNS WARMUP" (WARMUP
untimed runs, then RUNS timed ones) with one line "ENGINE FILE MEDIAN_MS
P90_MS", or "ENGINE FILE - REASON" when the engine cannot run it. Two more
requests: "save ENGINE FILE OUT" runs the engine once on FILE and writes its
(first) output to OUT.npy, answering "saved ENGINE FILE OUT"; "stats ENGINE"
answers "stats ENGINE SETUP_S RSS_MB", the seconds its set-up took (sessions,
compilations: its first run on each input included) and this process's peak
resident memory. With --serve it first prints "ready ENGINE..." (the engines'
names) and reads requests from stdin, one a line, until EOF (bench/run.sh
and bench/zoo/speed.py drive it so, interleaving it with other engines);
without, it times every engine on every input.
"""
import argparse
import os
import statistics
import sys
import time

import numpy as np

# ONNX Runtime's idle workers spin 35-55 ms after a run here, libgomp's
# (PyTorch's) ~10 ms: let them park before another engine runs, in this
# process or in another
SETTLE_S = 0.1


def failing(e):
    """A stand-in for an engine that could not be set up: raises its error."""
    def fn(*_):
        raise e
    return fn


def makers(a):
    """Engine name -> function of an input array that returns a function
    running the engine on it (input conversion stays out of the timing)."""
    want = a.engines.split(",")
    made = {}
    if "ort" in want:
        import onnxruntime as ort
        so = ort.SessionOptions()
        so.intra_op_num_threads = a.threads
        so.inter_op_num_threads = 1
        so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
        # ORT's default, spelled out since torch shares the process now:
        # workers spin between runs (turning that off would slow ORT; the
        # SETTLE_S pause keeps the spinning out of the other engines' turns)
        so.add_session_config_entry("session.intra_op.allow_spinning", "1")
        sess = ort.InferenceSession(a.onnx, so, providers=["CPUExecutionProvider"])
        name = sess.get_inputs()[0].name
        made["onnxruntime"] = lambda x: lambda: sess.run(None, {name: x})[0]
    if "ov" in want:
        made["openvino"] = openvino_maker(a)
    if not set(want) & {"eager", "compile", "aoti"}:
        return made

    import torch
    torch.set_num_threads(a.threads)
    torch.set_num_interop_threads(1)
    ep = torch.export.load(a.pt2)
    module = ep.module()

    def torch_maker(f):
        def make(x):
            t = torch.from_numpy(x)
            def run():
                with torch.inference_mode():
                    out = f(t)
                return (out if torch.is_tensor(out) else out[0]).numpy()
            return run
        return make

    if "eager" in want:
        made["torch-eager"] = torch_maker(module)
    if "compile" in want:
        made["torch.compile"] = torch_maker(torch.compile(module, dynamic=True))
    if "aoti" in want:
        pkg = os.path.join(a.aoti_dir, os.path.basename(a.pt2) + ".aoti.pt2")
        try:
            if not os.path.exists(pkg):
                torch._inductor.aoti_compile_and_package(ep, package_path=pkg)
            runner = torch._inductor.aoti_load_package(pkg)
        except Exception as e:
            runner = failing(e)
        made["aotinductor"] = torch_maker(runner)
    return made


def openvino_maker(a):
    """OpenVINO on the CPU, f32 precision hint, the model compiled for each
    input's shape (static shapes: OpenVINO's fastest)."""
    import openvino as ov
    core = ov.Core()
    config = {"INFERENCE_NUM_THREADS": a.threads, "INFERENCE_PRECISION_HINT": "f32",
              "PERFORMANCE_HINT": "LATENCY"}

    def make(x):
        model = core.read_model(a.onnx)
        model.reshape({model.inputs[0].any_name: list(x.shape)})
        req = core.compile_model(model, "CPU", config).create_infer_request()
        return lambda: req.infer({0: x})[0]
    return make


def reason(e):
    return f"- {type(e).__name__}: {(str(e).splitlines() or [''])[0][:120]}"


def timed_ms(fn, runs, warmup):
    """median and 90th percentile of runs timed runs, in ms"""
    for _ in range(warmup):
        fn()
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t)
    times.sort()
    return statistics.median(times) * 1e3, times[min(len(times) - 1, int(0.9 * len(times)))] * 1e3


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pt2", required=True)
    ap.add_argument("--onnx", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--aoti-dir", required=True)
    ap.add_argument("--engines", default="ort,eager,compile,aoti",
                    help="comma list of ort, ov, eager, compile, aoti")
    ap.add_argument("--serve", action="store_true")
    ap.add_argument("inputs", nargs="+")
    a = ap.parse_args()

    # (engine, file) -> its run function, or why it has none; the first run
    # (a compilation for torch.compile) happens here, not in a timed request
    prepared, setup = {}, {}
    t0 = time.perf_counter()
    made = makers(a)
    shared = time.perf_counter() - t0   # loading the model, AOTInductor's compilation
    for path in a.inputs:
        x = np.load(path)
        for engine, make in made.items():
            t0 = time.perf_counter()
            try:
                fn = make(x)
                fn()
                prepared[engine, path] = fn
            except Exception as e:  # an engine that cannot run a case says why
                prepared[engine, path] = reason(e)
            setup[engine] = setup.get(engine, shared) + time.perf_counter() - t0
    time.sleep(SETTLE_S)

    if a.serve:
        print("ready", *made, flush=True)
        requests = (line.split() for line in sys.stdin)
    else:
        requests = ([e, p, a.runs, a.warmup] for e in made for p in a.inputs)
    for req in requests:
        if req[0] == "stats":
            with open("/proc/self/status") as f:    # VmHWM: ru_maxrss starts from the parent's
                rss = next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM")) / 1024
            print("stats", req[1], f"{setup.get(req[1], 0):.2f}", f"{rss:.0f}", flush=True)
            continue
        save = req[0] == "save"
        engine, path = req[1:3] if save else req[:2]
        fn = prepared.get((engine, path), "- no such engine or file here")
        if isinstance(fn, str):
            answer = fn
        elif save:
            np.save(req[3], fn())
            answer = req[3]
        else:
            try:
                answer = "%.4f %.4f" % timed_ms(fn, int(req[2]), int(req[3]))
            except Exception as e:
                answer = reason(e)
            time.sleep(SETTLE_S)
        print(*(["saved"] if save else []), engine, path, answer, flush=True)


if __name__ == "__main__":
    sys.exit(main())
