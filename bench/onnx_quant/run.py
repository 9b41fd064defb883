#!/usr/bin/env python3
"""ONNX Runtime's static quantization through tgraph: QDQ and QOperator models.

Builds small real models with random weights (fixed seeds): torchvision's
resnet18 at 64x64, an MLP, and a transformer encoder block; exports each to
ONNX (opset 17), runs ORT's quant_pre_process, quantizes it with onnxruntime.quantization.quantize_static
(int8 symmetric weights per tensor or per output channel, uint8 or int8
activations; MinMax calibration on 8 random inputs) in QDQ and in QOperator
format, then runs the quantized model
  texport -o m.tg m.onnx;  trun -o y.npy m.tg x.npy          (interpreter)
  tcompile -o m.so m.tg;   trun -o y.npy m.so x.npy          (compiled)
and ONNX Runtime (CPU provider) on a fresh random input, and prints, per
model and format:
  - the largest |tgraph - ORT| over the output, in units of the output's
    quantization step (the scale of the DequantizeLinear that makes the
    output; target: <= 1), and how many elements differ at all; the same
    against ORT with graph optimizations off ("unfused": ORT then runs each
    QDQ pair in float and each QOperator op as written, instead of its fused
    int8 kernels);
  - which layers ran on the int8 kernels: the node ops of the `trun
    --profile` of the interpreter run (qconv/qlinear: int8 kernels; conv,
    linear, matmul: float32).

Usage: bench/onnx_quant/run.py [--bin DIR] [--work DIR] [--markdown FILE]
Needs torch, torchvision, onnx, onnxruntime. Run it under nice on a shared
machine (about a minute).
"""
import argparse
import collections
import json
import os
import subprocess
import sys
import tempfile

import numpy as np
import onnx
import onnxruntime as ort
import torch
from onnx import numpy_helper
from onnxruntime.quantization import (CalibrationDataReader, QuantFormat, QuantType,
                                      quantize_static)
from onnxruntime.quantization.shape_inference import quant_pre_process


class Mlp(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.net = torch.nn.Sequential(torch.nn.Linear(64, 256), torch.nn.ReLU(),
                                       torch.nn.Linear(256, 128), torch.nn.ReLU(),
                                       torch.nn.Linear(128, 10))

    def forward(self, x):
        return self.net(x)


def models():
    torch.manual_seed(0)
    import torchvision
    r18 = torchvision.models.resnet18(weights=None, num_classes=100)
    block = torch.nn.TransformerEncoderLayer(64, 4, 128, dropout=0.0, batch_first=True)
    return [("resnet18_64", r18.eval(), (1, 3, 64, 64)),
            ("mlp", Mlp().eval(), (4, 64)),
            ("transformer_block", block.eval(), (1, 16, 64))]


# format, weights per output channel, activation type (weights: int8 symmetric)
VARIANTS = [(f, pc, act) for f in (QuantFormat.QDQ, QuantFormat.QOperator) for pc, act in
            ((False, QuantType.QUInt8), (True, QuantType.QUInt8), (True, QuantType.QInt8))]


class Reader(CalibrationDataReader):
    def __init__(self, name, shape, n=8):
        rng = np.random.default_rng(1)
        self.data = iter([{name: rng.standard_normal(shape).astype(np.float32)} for _ in range(n)])

    def get_next(self):
        return next(self.data, None)


def export(model, shape, path):
    x = torch.randn(*shape)
    try:
        torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"], opset_version=17,
                          dynamo=False)
    except Exception:   # the exporter of torch.export
        torch.onnx.export(model, (x,), path, input_names=["x"], output_names=["y"], opset_version=17)
    onnx.save(onnx.load(path), path)   # one file: the pre-processing copies it elsewhere


def output_step(path):
    """Scale of the DequantizeLinear that makes the graph output (None: float output)."""
    m = onnx.load(path)
    inits = {t.name: numpy_helper.to_array(t) for t in m.graph.initializer}
    out = m.graph.output[0].name
    for n in m.graph.node:
        if out in n.output and n.op_type == "DequantizeLinear" and n.input[1] in inits:
            return float(np.max(inits[n.input[1]]))
    return None


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(" ".join(cmd) + ": " + p.stderr.strip()[-400:])
    return p


def profile_ops(path):
    ops = collections.Counter()
    with open(path) as f:
        for line in f:
            try:
                r = json.loads(line)
            except ValueError:
                continue
            op = r.get("op") or (r.get("fields") or {}).get("op")
            if op:
                ops[op] += 1
    return ops


def one(bin_dir, work, name, qpath, x, ref, step):
    tg, so = os.path.join(work, name + ".tg"), os.path.join(work, name + ".so")
    xin, prof = os.path.join(work, name + ".x.npy"), os.path.join(work, name + ".prof")
    np.save(xin, x)
    run([os.path.join(bin_dir, "texport"), "-o", tg, qpath])
    row = {}
    for kind, model in (("trun", tg), ("tcompile", so)):
        if kind == "tcompile":
            try:
                run([os.path.join(bin_dir, "tcompile"), "-o", so, tg])
            except RuntimeError as e:
                row[kind] = str(e)
                continue
        y = os.path.join(work, f"{name}.{kind}.npy")
        cmd = [os.path.join(bin_dir, "trun"), "-o", y, model, xin]
        if kind == "trun":
            cmd[1:1] = ["--profile", prof]
        run(cmd)
        got = np.load(y)
        d = np.abs(got.astype(np.float64) - ref.astype(np.float64))
        row[kind] = (float(d.max()), int((d > 0).sum()), d.size)
    ops = profile_ops(prof)
    return row, ops


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=os.path.join(here, "..", "..", "tools"),
                    help="folder with texport, trun and tcompile (default: the build's tools/)")
    ap.add_argument("--work", help="keep the models here (default: a temporary folder)")
    ap.add_argument("--markdown", help="write the table here")
    a = ap.parse_args()
    work = a.work or tempfile.mkdtemp(prefix="onnx_quant.")
    os.makedirs(work, exist_ok=True)
    rows = []
    for name, model, shape in models():
        fp32 = os.path.join(work, name + ".onnx")
        export(model, shape, fp32 + ".raw")
        # ORT's recommended step: constants to initializers (the biases), shapes inferred
        quant_pre_process(fp32 + ".raw", fp32, skip_symbolic_shape=True)
        x = np.random.default_rng(7).standard_normal(shape).astype(np.float32)
        for fmt, pc, act in VARIANTS:
            tag = (f"{name}.{'qdq' if fmt == QuantFormat.QDQ else 'qop'}{'.per_channel' if pc else ''}"
                   f"{'.s8' if act == QuantType.QInt8 else ''}")
            qpath = os.path.join(work, tag + ".onnx")
            quantize_static(fp32, qpath, Reader("x", shape), quant_format=fmt, per_channel=pc,
                            activation_type=act, weight_type=QuantType.QInt8)
            qops = collections.Counter(n.op_type for n in onnx.load(qpath).graph.node)
            sess = ort.InferenceSession(qpath, providers=["CPUExecutionProvider"])
            ref = sess.run(None, {"x": x})[0]
            so = ort.SessionOptions()
            so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
            plain = ort.InferenceSession(qpath, so, providers=["CPUExecutionProvider"]).run(None, {"x": x})[0]
            step = output_step(qpath)
            try:
                res, ops = one(a.bin, work, tag, qpath, x, ref, step)
                y = np.load(os.path.join(work, f"{tag}.trun.npy")).astype(np.float64)
                res["plain"] = (float(np.abs(y - plain).max()), 0, 0)
            except RuntimeError as e:
                res, ops = {"trun": str(e)}, collections.Counter()
            rows.append((tag, qops, step, res, ops))
            print(tag, step, res, dict(ops), file=sys.stderr)
    lines = ["| model | ONNX quantized ops | out step | trun max diff (steps) | differing | tcompile max diff (steps) |"
             " vs ORT unfused (steps) | int8 layers (qconv/qlinear) | float layers (conv/linear/matmul) |",
             "|---|---|---|---|---|---|---|---|---|"]
    for tag, qops, step, res, ops in rows:
        q = ", ".join(f"{k} {v}" for k, v in sorted(qops.items()) if k.startswith(("QLinear", "Quantize",
                                                                                   "Dequantize", "Q")))

        def cell(r):
            if isinstance(r, str) or r is None:
                return "failed: " + (r or "")[:120].replace("|", "/")
            mx = r[0] / step if step else r[0]
            return f"{mx:.3g}" + ("" if step else " (abs, float output)")
        t = res.get("trun")
        diff = f"{t[1]} of {t[2]}" if isinstance(t, tuple) else ""
        lines.append(f"| {tag} | {q} | {f'{step:.4g}' if step else '-'} | {cell(t)} | {diff} | "
                     f"{cell(res.get('tcompile'))} | {cell(res.get('plain'))} | "
                     f"{ops['qconv'] + ops['qlinear']} | {ops['conv'] + ops['linear'] + ops['matmul']} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
