#!/usr/bin/env python3
"""Per layer, our compiled model against OpenVINO's, one thread each.

    python3 bench/zoo/layers_mobile.py [--runs N] [--tlog TLOG] [--trun TRUN] DIR BATCH

DIR holds zoo.py's m.tg, m.so, m.onnx and the input (in0.b1.npy at batch 1,
in.b8.npy at batch 8). Runs `trun m.so --threads=1 --profile` and OpenVINO
(PERF_COUNT, INFERENCE_NUM_THREADS 1, f32) on the same input N times each
(default 20), back to back, and takes every node's fastest run (a loaded
machine's preemption only adds). Convolutions are matched in execution
order by (kind, output shape): our fused group ending in the conv against
OpenVINO's Convolution / GroupConvolution (its bias and activations fused
in); what is left of either side (pools, squeeze-excite's multiply, OV's
reorders) is summed by node type. Prints Markdown: per layer shape, ours,
theirs, ratio and GFLOP/s; then the summed gap by kind.
"""
import argparse
import json
import os
import subprocess
import sys
from collections import defaultdict

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hotnodes import arithmetic, read_graph  # noqa: E402


def family(kind, shape):
    """the kind a layer's time is summed under"""
    k = kind.split(" /")[0]
    if k.startswith("depthwise"):
        return k
    if k == "1x1 conv" or k == "linear":
        return "1x1 on 1x1 (SE, head)" if shape and len(shape) == 4 and shape[2] * shape[3] == 1 \
            or k == "linear" else "1x1 conv"
    return "stem / dense " + k if "conv" in k else k


def other_family(op, side):
    """the kind a node other than a conv is summed under: the pools (SE's
    and the head's) and squeeze-excite's scaling (OpenVINO's Subgraph: the
    multiply with its hardsigmoid) on both sides, the rest per engine"""
    first = op.split("+")[0]
    if first in ("adaptive_avg_pool", "reduce_mean", "mean", "ReduceMean"):
        return "global pools"
    if first in ("mul", "Subgraph", "Multiply", "HardSigmoid"):
        return "SE scale (multiply)"
    if op == "FullyConnected":
        return "1x1 on 1x1 (SE, head)"
    return side + op


def ours(d, batch, runs, trun, tlog):
    inp = os.path.join(d, "in0.b1.npy" if batch == 1 else f"in.b{batch}.npy")
    prof = os.path.join(d, f"ours.b{batch}.jsonl")
    subprocess.run([trun, os.path.join(d, "m.so"), inp, "--threads=1", f"--bench={runs}",
                    "--warmup=2", f"--profile={prof}", "-o", os.devnull],
                   check=True, capture_output=True)
    nodes, ins = read_graph(os.path.join(d, "m.tg"), batch, tlog)
    by_name = {nd["name"]: nid for nid, nd in nodes.items() if nid.startswith("n")}
    times, order, ops = defaultdict(list), [], {}
    with open(prof) as f:
        for line in f:
            r = json.loads(line).get("fields", {})
            if "us" not in r:
                continue
            if r["node"] not in times:
                order.append(r["node"])
            times[r["node"]].append(r["us"])
            ops[r["node"]] = r["op"]
    convs, other = [], defaultdict(float)
    for name in order:
        us = min(times[name])
        is_conv = any(k.startswith(("conv", "linear")) for k in ops[name].split("+"))
        if is_conv and name in by_name:
            kind, flops = arithmetic(by_name[name], nodes, ins)
            shape = nodes[by_name[name]]["shape"]
            convs.append({"name": name, "kind": kind, "shape": shape, "flops": flops, "us": us,
                          "fam": family(kind, shape)})
        else:
            other[ops[name]] += us
    return convs, other


def onnx_shapes(path, batch):
    import onnx
    m = onnx.load(path)
    for i in m.graph.input:
        d = i.type.tensor_type.shape.dim
        if d and not d[0].dim_value:
            d[0].ClearField("dim_param")
            d[0].dim_value = batch
    m = onnx.shape_inference.infer_shapes(m)
    shp = {}
    for v in list(m.graph.value_info) + list(m.graph.output) + list(m.graph.input):
        shp[v.name] = [x.dim_value for x in v.type.tensor_type.shape.dim]
    for t in m.graph.initializer:
        shp[t.name] = list(t.dims)
    return {n.name: n for n in m.graph.node}, shp


def theirs(d, batch, runs):
    import openvino as ov
    inp = os.path.join(d, "in0.b1.npy" if batch == 1 else f"in.b{batch}.npy")
    x = np.load(inp)
    core = ov.Core()
    m = core.read_model(os.path.join(d, "m.onnx"))
    m.reshape({m.inputs[0].get_any_name(): list(x.shape)})
    cm = core.compile_model(m, "CPU", {"PERF_COUNT": "YES", "INFERENCE_NUM_THREADS": "1",
                                       "INFERENCE_PRECISION_HINT": "f32", "NUM_STREAMS": "1"})
    req = cm.create_infer_request()
    for _ in range(2):
        req.infer({0: x})
    times, order, types = defaultdict(list), [], {}
    for _ in range(runs):
        req.infer({0: x})
        for p in req.get_profiling_info():
            if p.status != p.Status.EXECUTED:
                continue
            if p.node_name not in times:
                order.append(p.node_name)
            times[p.node_name].append(p.real_time.total_seconds() * 1e6)
            types[p.node_name] = p.node_type
    onodes, shp = onnx_shapes(os.path.join(d, "m.onnx"), batch)
    convs, other = [], defaultdict(float)
    for name in order:
        us = min(times[name])
        base = name.split("/")[0]
        on = onodes.get(base[5:] if base.startswith("node_") and base[5:] in onodes else base)
        if on is None:
            on = onodes.get(base)
        if types[name] in ("Convolution", "GroupConvolution", "FullyConnected") and on is not None:
            w = shp.get(on.input[1], [])
            y = shp.get(on.output[0], [])
            if on.op_type in ("Gemm", "MatMul"):
                kind, flops = "linear", 2 * int(np.prod(y)) * (w[1] if on.op_type == "Gemm" else w[0])
            else:
                xs = shp.get(on.input[0], [])
                ks = "x".join(str(k) for k in w[2:])
                if w[1] == 1 and xs[1] == w[0] and w[0] > 1:
                    kind = f"depthwise {ks}"
                elif w[1] != xs[1]:
                    kind = f"grouped {ks}"
                else:
                    kind = f"{ks} conv"
                stride = xs[-1] // y[-1]
                kind += f" /{stride}" if stride > 1 else ""
                flops = 2 * int(np.prod(y)) * int(np.prod(w[1:]))
            convs.append({"name": name, "kind": kind, "shape": y, "flops": flops, "us": us,
                          "fam": family(kind, y)})
        else:
            other[types[name]] += us
    return convs, other


def match(a, b):
    """pairs of a's and b's convolutions, in order, by kind and output shape"""
    pairs, j = [], 0
    for x in a:
        for k in range(j, min(j + 4, len(b))):
            if b[k]["kind"] == x["kind"] and b[k]["shape"] == x["shape"]:
                pairs.append((x, b[k]))
                j = k + 1
                break
        else:
            pairs.append((x, None))
    used = {id(p[1]) for p in pairs}
    return pairs, [y for y in b if id(y) not in used]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--tlog", default="tlog")
    ap.add_argument("--trun", default="trun")
    ap.add_argument("dir")
    ap.add_argument("batch", type=int)
    a = ap.parse_args()
    oc, oo = ours(a.dir, a.batch, a.runs, a.trun, a.tlog)
    tc, to = theirs(a.dir, a.batch, a.runs)
    pairs, left = match(oc, tc)
    fam = defaultdict(lambda: [0.0, 0.0, 0.0])
    print("| our node | kind | output | ours us | OV us | ratio | ours GFLOP/s | OV GFLOP/s |")
    print("|---|---|---|---:|---:|---:|---:|---:|")
    for x, y in pairs:
        f = fam[x["fam"]]
        f[0] += x["us"]
        f[2] += x["flops"]
        if y is None:
            print(f"| {x['name']} | {x['kind']} | {x['shape']} | {x['us']:.0f} | - | | "
                  f"{x['flops'] / x['us'] / 1e3:.1f} | |")
            continue
        f[1] += y["us"]
        print(f"| {x['name']} | {x['kind']} | {x['shape']} | {x['us']:.0f} | {y['us']:.0f} | "
              f"{x['us'] / y['us']:.2f} | {x['flops'] / x['us'] / 1e3:.1f} | "
              f"{y['flops'] / y['us'] / 1e3:.1f} |")
    for y in left:
        fam[y["fam"]][1] += y["us"]
    for k, us in oo.items():
        fam[other_family(k, "ours: ")][0] += us
    for k, us in to.items():
        fam[other_family(k, "OV: ")][1] += us
    tot_o, tot_t = sum(f[0] for f in fam.values()), sum(f[1] for f in fam.values())
    print(f"\nsum of node minima: ours {tot_o / 1e3:.3f} ms, OpenVINO {tot_t / 1e3:.3f} ms "
          f"({tot_o / tot_t:.2f}x); unmatched OV convs: {len(left)}\n")
    print("| kind | ours ms | OV ms | gap ms | ratio | ours GFLOP/s |")
    print("|---|---:|---:|---:|---:|---:|")
    for k, (o, t, fl) in sorted(fam.items(), key=lambda kv: -(kv[1][0] - kv[1][1])):
        print(f"| {k} | {o / 1e3:.3f} | {t / 1e3:.3f} | {(o - t) / 1e3:+.3f} | "
              + (f"{o / t:.2f}" if t else "") + " | "
              + (f"{fl / o / 1e3:.1f}" if fl and o else "") + " |")


if __name__ == "__main__":
    sys.exit(main())
