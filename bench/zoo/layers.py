#!/usr/bin/env python3
"""Per convolution shape: tgraph's compiled model against OpenVINO's, one
thread each, from their own per-node profiles.

    python3 bench/zoo/layers.py [--tools DIR] [--runs N] [--batch B] [-n N] DIR

DIR holds a zoo model's m.so, m.tg (the graph tcompile compiled) and m.onnx
(bench/zoo/zoo.py's work folder). Ours: `trun m.so --profile --threads=1
--bench=N` on a random input of batch B, each node's median over the runs.
OpenVINO's: the ONNX model at batch B compiled for the CPU at one thread, f32
precision hint (as bench/frameworks.py), PERF_COUNT on, each node's median
real time over N inferences, back to back with ours. On a loaded machine
the wall times of both are inflated by preemption: each engine's node
times are scaled to sum to its CPU time a run (getrusage: trun's N + 1 runs
less 1 run; OpenVINO's process over its N inferences), so a node keeps its
share of the run and the runs compare by CPU time. Both fuse the
elementwise nodes after a convolution into it; a node is matched to its
convolution by shape (input channels, output channels, kernel, stride,
groups, output map), so layers of one shape are summed together. Prints a
Markdown table per shape, the largest summed gap (ours - theirs) first: how
many layers, our ms and theirs, the ratio, GFLOP/s of each, the path ours
takes (conv.c's choice, replayed here) and OpenVINO's primitive; then the
totals of the convolutions and of everything else (OpenVINO's layout
reorders among them); then both summed by kind (depthwise, 1x1, squeeze-
excite's 1x1s on one pixel, dense; global pools, squeeze-excite's scaling
multiply, the rest per engine), the largest gap first.
"""
import argparse
import collections
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import json

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hotnodes  # noqa: E402  (the graph's nodes and fused groups, shared)

PANEL = 16


def our_path(cin, k, g, kh, kw, s, oh, ow):
    """the path tgk_conv_f32 takes (conv.c: is_pointwise,
    is_strided_pointwise, use_direct, the depthwise test, use_implicit),
    replayed for 2-D convolutions without a pool"""
    if g == 1 and kh == kw == 1:
        return "1x1 gemm" if s == 1 else "strided 1x1"
    cg = cin // g
    if cin * kh * kw <= 256 * g and (g == 1 or (cg > 1 and ow >= 8)):
        return "direct"
    if g == cin and g > 1 and cin == k:
        return "depthwise"
    grid = (oh * (ow + kw - 1) + PANEL - 1) // PANEL
    panels = (oh * ow + PANEL - 1) // PANEL
    if s == 1 and (grid - panels) * (k // g) < 64 * panels:
        return "implicit"
    return "im2col"


def kind(cin, k, g, kh, kw, oh, ow):
    """the kind a convolution's time is summed under"""
    if g == cin and g > 1:
        return f"depthwise {kh}x{kw}"
    if g == 1 and kh == kw == 1:
        return "1x1 on one pixel (SE)" if oh * ow == 1 else "1x1"
    return f"{'grouped' if g > 1 else 'dense'} {kh}x{kw}"


def rest_kind(op, engine):
    """the kind any other node's time is summed under: global pools and
    squeeze-excite's scaling (OpenVINO's Subgraph: the multiply with its
    hardsigmoid) on both sides, the rest per engine and op"""
    if op in ("adaptive_avg_pool", "reduce_mean", "mean", "ReduceMean"):
        return "global pools"
    if op in ("mul", "Subgraph", "Multiply", "HardSigmoid"):
        return "SE scale (multiply)"
    if op in ("linear", "linear_packed", "FullyConnected"):
        return "linear (the head)"
    return f"{engine}: {op}"


def key(cin, k, g, kh, kw, s, oh, ow):
    return f"{kh}x{kw}/{s} {cin}->{k}" + (f" g{g}" if g > 1 else "") + f" {oh}x{ow}"


def cpu_s(who):
    r = resource.getrusage(who)
    return r.ru_utime + r.ru_stime


def trun_cpu(a, x_path, runs, profile=None):
    """CPU seconds of one trun process of that many runs"""
    t0 = cpu_s(resource.RUSAGE_CHILDREN)
    subprocess.run([os.path.join(a.tools, "trun"), os.path.join(a.dir, "m.so"), x_path,
                    "-o", "/dev/null", "--threads=1", f"--bench={runs}", "--warmup=0"]
                   + (["--profile", profile] if profile else []), check=True,
                   capture_output=True)
    return cpu_s(resource.RUSAGE_CHILDREN) - t0


def scaled(per, rest, cpu_ms):
    """per-node wall times (inflated by a loaded machine's preemption)
    scaled to sum to the run's CPU time"""
    f = cpu_ms / (sum(per.values()) + sum(rest.values()))
    return {k: v * f for k, v in per.items()}, {k: v * f for k, v in rest.items()}


def ours(a, x_path):
    """{shape key: ms}, {kind of the rest: ms}, {key: path}, {key: GFLOP}, {key: kind}"""
    nodes, ins = hotnodes.read_graph(os.path.join(a.dir, "m.tg"), a.batch,
                                     os.path.join(a.tools, "tlog"))
    by_name = {nd["name"]: nid for nid, nd in nodes.items() if nid.startswith("n")}
    with tempfile.NamedTemporaryFile(suffix=".json") as prof:
        cpu_ms = (trun_cpu(a, x_path, a.runs + 1, prof.name) - trun_cpu(a, x_path, 1)) \
            / a.runs * 1e3
        times, ops = collections.defaultdict(list), {}
        with open(prof.name) as f:
            for line in f:
                r = json.loads(line).get("fields", {})
                if "us" in r:
                    times[r["node"]].append(r["us"] / 1e3)
                    ops[r["node"]] = r["op"].split("+")
    per, paths, flops, kinds = collections.defaultdict(float), {}, {}, {}
    rest = collections.defaultdict(float)
    for name, ts in times.items():
        ms = statistics.median(ts)
        nid = hotnodes.ended_by(by_name[name], nodes, ins, ops[name]) \
            if name in by_name and ops[name][0] == "conv" else None
        if nid is None or nodes[nid]["op"] != "conv":
            rest[rest_kind(ops[name][0], "ours")] += ms
            continue
        src, w, out = (nodes[ins[nid][0]]["shape"], nodes[ins[nid][1]]["shape"],
                       nodes[nid]["shape"])
        if len(out) != 4:
            rest[rest_kind(ops[name][0], "ours")] += ms
            continue
        cin, k, g = src[1], w[0], src[1] // w[1]
        s = src[2] // out[2]
        kk = key(cin, k, g, w[2], w[3], s, out[2], out[3])
        per[kk] += ms
        paths[kk] = our_path(cin, k, g, w[2], w[3], s, out[2], out[3])
        kinds[kk] = kind(cin, k, g, w[2], w[3], out[2], out[3])
        flops[kk] = flops.get(kk, 0) + 2 * hotnodes.prod(out) * hotnodes.prod(w[1:]) / 1e9
    return (*scaled(per, rest, cpu_ms), paths, flops, kinds)


def theirs(a, x):
    """{shape key: ms}, {kind of the rest: ms}, {key: primitives}, layer count per key,
    {key: kind}"""
    import onnx
    import openvino as ov
    model = onnx.load(os.path.join(a.dir, "m.onnx"))
    dims = model.graph.input[0].type.tensor_type.shape.dim
    dims[0].Clear()
    dims[0].dim_value = a.batch
    model = onnx.shape_inference.infer_shapes(model)
    shapes = {v.name: [d.dim_value for d in v.type.tensor_type.shape.dim]
              for v in list(model.graph.value_info) + list(model.graph.input)
              + list(model.graph.output)}
    inits = {t.name: list(t.dims) for t in model.graph.initializer}
    convs, kinds = {}, {}
    for n in model.graph.node:
        if n.op_type != "Conv" or n.input[1] not in inits or n.output[0] not in shapes:
            continue
        w, out = inits[n.input[1]], shapes[n.output[0]]
        g = next((at.i for at in n.attribute if at.name == "group"), 1)
        s = next((at.ints[-1] for at in n.attribute if at.name == "strides"), 1)
        if len(w) == 4:
            convs[n.name] = key(w[1] * g, w[0], g, w[2], w[3], s, out[2], out[3])
            kinds[convs[n.name]] = kind(w[1] * g, w[0], g, w[2], w[3], out[2], out[3])
    core = ov.Core()
    m = core.read_model(os.path.join(a.dir, "m.onnx"))
    m.reshape({m.inputs[0]: list(x.shape)})
    req = core.compile_model(m, "CPU", {"INFERENCE_NUM_THREADS": 1, "NUM_STREAMS": 1,
                                        "INFERENCE_PRECISION_HINT": "f32",
                                        "PERFORMANCE_HINT": "LATENCY",
                                        "PERF_COUNT": "YES"}).create_infer_request()
    times, prims, types = collections.defaultdict(list), {}, {}
    req.infer({0: x})
    cpu_ms = 0.0
    for i in range(a.runs):
        t0 = cpu_s(resource.RUSAGE_SELF)
        req.infer({0: x})
        cpu_ms += (cpu_s(resource.RUSAGE_SELF) - t0) * 1e3 / a.runs
        for p in req.get_profiling_info():
            if p.status.name != "NOT_RUN":
                times[p.node_name].append(p.real_time.total_seconds() * 1e3)
                prims[p.node_name] = p.exec_type
                types[p.node_name] = p.node_type
    per, used, count = collections.defaultdict(float), {}, collections.Counter()
    rest = collections.defaultdict(float)
    for name, ts in times.items():
        kk = convs.get(name.split("/")[0])
        if kk is None:
            rest[rest_kind(types[name], "OpenVINO")] += statistics.median(ts)
            continue
        per[kk] += statistics.median(ts)
        count[kk] += 1
        used.setdefault(kk, set()).add(prims[name])
    return (*scaled(per, rest, cpu_ms), used, count, kinds)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=os.path.join(os.path.dirname(__file__), "..", "..",
                                                    "tools"))
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("-n", type=int, default=20, help="rows of the table")
    ap.add_argument("dir")
    a = ap.parse_args()
    import onnx
    dims = onnx.load(os.path.join(a.dir, "m.onnx"), load_external_data=False) \
        .graph.input[0].type.tensor_type.shape.dim
    shape = [a.batch] + [d.dim_value for d in dims[1:]]
    x = np.random.default_rng(0).standard_normal(shape, dtype=np.float32)
    with tempfile.NamedTemporaryFile(suffix=".npy") as f:
        np.save(f.name, x)
        mine, mine_rest, paths, flops, kinds = ours(a, f.name)
    ov, ov_rest, prims, count, ov_kinds = theirs(a, x)
    mine_other, ov_other = sum(mine_rest.values()), sum(ov_rest.values())
    rows = sorted(set(mine) | set(ov), key=lambda kk: -(mine.get(kk, 0) - ov.get(kk, 0)))
    print(f"{os.path.basename(os.path.normpath(a.dir))} b{a.batch}, one thread, medians of "
          f"{a.runs} runs\n")
    print("| shape (k/stride cin->cout map) | n | ours ms | OpenVINO ms | ratio | gap ms "
          "| ours GFLOP/s | theirs GFLOP/s | our path | OpenVINO's |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---|---|")
    for kk in rows[:a.n]:
        m, o, fl = mine.get(kk, 0), ov.get(kk, 0), flops.get(kk, 0)
        print(f"| {kk} | {count.get(kk, '?')} | {m:.2f} | {o:.2f} | "
              f"{m / o if o else float('nan'):.2f} | {m - o:+.2f} | "
              f"{fl / m * 1e3 if m else 0:.0f} | {fl / o * 1e3 if o else 0:.0f} | "
              f"{paths.get(kk, '?')} | {','.join(sorted(prims.get(kk, [])))} |")
    cm, co = sum(mine.values()), sum(ov.values())
    print(f"\nconvolutions: ours {cm:.2f} ms, OpenVINO {co:.2f} ms ({cm / co:.2f}x); "
          f"the rest: ours {mine_other:.2f}, OpenVINO {ov_other:.2f} ms; "
          f"total {cm + mine_other:.2f} vs {co + ov_other:.2f} "
          f"({(cm + mine_other) / (co + ov_other):.2f}x)")
    by = collections.defaultdict(lambda: [0.0, 0.0])
    for kk, ms in mine.items():
        by[kinds[kk]][0] += ms
    for kk, ms in ov.items():
        by[ov_kinds.get(kk, kinds.get(kk, "?"))][1] += ms
    for i, rest in enumerate((mine_rest, ov_rest)):
        for k, ms in rest.items():
            by[k][i] += ms
    print("\n| kind | ours ms | OpenVINO ms | gap ms | ratio |\n|---|---:|---:|---:|---:|")
    for k, (m, o) in sorted(by.items(), key=lambda kv: kv[1][1] - kv[1][0]):
        print(f"| {k} | {m:.2f} | {o:.2f} | {m - o:+.2f} | "
              f"{m / o if o else float('nan'):.2f} |")


if __name__ == "__main__":
    sys.exit(main())
