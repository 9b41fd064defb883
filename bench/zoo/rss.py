#!/usr/bin/env python3
"""Peak resident memory of a run over the model zoo: tgraph's compiled .so
against ONNX Runtime, each in a process of its own.

    python3 bench/zoo/rss.py [--tools DIR] [--work DIR] [--onnx-dir DIR]
        [--out DIR] [--threads N] [--batches 1,8] [--runs N] MODEL...

For each model, WORK/M/m.pt2 (zoo.py's export) is imported and compiled
into OUT/M/m.so; ONNX Runtime reads ONNX_DIR/M/m.onnx (default WORK). At
each batch a random input like the export's is made, and each contender
runs it RUNS times, 2 threads by default, under /usr/bin/time: its maximum
resident set size (the kernel's ru_maxrss) is the cell. The .so runs twice:
in bench/zoo/rss_host.c ("host": a C program linking only libc and libdl,
what the model costs an embedder) and in trun (whose process also holds
tgraph's own code: a few MB, "floor" below is trun --help; with CUDA
configured too, since the cuda device is a shared object loaded only for
--device cuda). ONNX Runtime runs in a Python
process (its set-up as bench/frameworks.py's); its floor is that process
without a session (Python, numpy, onnxruntime imported, the input loaded),
so ORT - floor is what the model itself costs it. Prints a Markdown table;
OUT/rss.json keeps the numbers.
"""
import argparse
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import speed  # noqa: E402  (make_inputs: random inputs like the export's)


def ort_worker(onnx, x, runs, threads):
    """runs the model (onnx None: no session, the floor) and exits"""
    import numpy as np
    import onnxruntime as ort
    a = np.load(x)
    if onnx is None:
        return
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    sess = ort.InferenceSession(onnx, so, providers=["CPUExecutionProvider"])
    name = sess.get_inputs()[0].name
    for _ in range(runs):
        sess.run(None, {name: a})


def max_rss_mb(cmd):
    """the command's peak resident set (MB), by /usr/bin/time"""
    p = subprocess.run(["/usr/bin/time", "-f", "RSS %M"] + cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0])}: {p.stderr.strip()[-300:]}")
    return int(p.stderr.strip().splitlines()[-1].split()[1]) / 1024


def build(args, name, out):
    so = os.path.join(out, "m.so")
    if not os.path.exists(so):
        tg = os.path.join(out, "m.tg")
        for cmd in ([os.path.join(args.tools, "texport"), os.path.join(args.work, name, "m.pt2"),
                     "-o", tg],
                    [os.path.join(args.tools, "tcompile"), tg, "-o", so]):
            p = subprocess.run(cmd, capture_output=True, text=True)
            if p.returncode:
                raise RuntimeError(p.stderr.strip()[:300])
    return so


def run_model(args, name):
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    ref = os.path.join(out, "in0.b1.npy")
    if not os.path.exists(ref):
        os.symlink(os.path.join(args.work, name, "in0.b1.npy"), ref)
    so = build(args, name, out)
    onnx = os.path.join(args.onnx_dir, name, "m.onnx")
    inputs = speed.make_inputs(out, args.batches, False)
    me = [sys.executable, os.path.abspath(__file__), "--ort-worker"]
    row = {"weights_mb": os.path.getsize(so) / 2**20}
    for b, x in inputs.items():
        row[f"host b{b}"] = max_rss_mb([args.host, so, str(b), str(args.runs), str(args.threads)])
        row[f"trun b{b}"] = max_rss_mb([os.path.join(args.tools, "trun"), so, x, "-o", "/dev/null",
                                        f"--bench={args.runs}", "--warmup=1",
                                        f"--threads={args.threads}"])
        w = [x, str(args.runs), str(args.threads)]
        row[f"ort b{b}"] = max_rss_mb(me + [onnx] + w)
        row[f"floor b{b}"] = max_rss_mb(me + ["-"] + w)
    return row


def each_model(args, fn, json_name):
    """{model: fn(args, model), or {"error": ...}} over args.models, each
    row on stderr as it comes, all in OUT/json_name"""
    rows = {}
    for name in args.models:
        try:
            rows[name] = fn(args, name)
        except (RuntimeError, OSError) as e:
            rows[name] = {"error": str(e).splitlines()[0][:200]}
        print(name, json.dumps(rows[name]), file=sys.stderr, flush=True)
    with open(os.path.join(args.out, json_name), "w") as f:
        json.dump(rows, f, indent=1)
    return rows


def table(args, rows):
    bs = args.batches
    head = ["model", ".so MB"] + [f"{e} b{b}" for b in bs
                                  for e in ("host", "trun", "ORT", "ORT - floor")]
    lines = ["| " + " | ".join(head) + " |", "|---" + "|---:" * (len(head) - 1) + "|"]
    for name, r in rows.items():
        if "error" in r:
            lines.append(f"| {name} | error: {r['error']} |")
            continue
        cells = [f"{r['weights_mb']:.1f}"]
        for b in bs:
            h, t, o, f = r[f"host b{b}"], r[f"trun b{b}"], r[f"ort b{b}"], r[f"floor b{b}"]
            cells += [f"{h:.0f}", f"{t:.0f}", f"{o:.0f}", f"{o - f:.0f}"]
        lines.append(f"| {name} | " + " | ".join(cells) + " |")
    floor = max_rss_mb([os.path.join(args.tools, "trun"), "--help"])
    return "\n".join(lines) + f"\n\ntrun's floor (trun --help): {floor:.0f} MB"


def main():
    if sys.argv[1:2] == ["--ort-worker"]:
        onnx, x, runs, threads = sys.argv[2:6]
        ort_worker(None if onnx == "-" else onnx, x, int(runs), int(threads))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "..", "tools"))
    ap.add_argument("--work", default=os.path.join(HERE, "work"))
    ap.add_argument("--onnx-dir")
    ap.add_argument("--out", default="rss-work")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    args.onnx_dir = args.onnx_dir or args.work
    os.makedirs(args.out, exist_ok=True)
    args.host = os.path.join(args.out, "rss_host")
    subprocess.run(["cc", "-O2", "-I", os.path.join(HERE, "..", "..", "include"), "-o", args.host,
                    os.path.join(HERE, "rss_host.c"), "-ldl"], check=True)
    print(table(args, each_model(args, run_model, "rss.json")))


if __name__ == "__main__":
    main()
