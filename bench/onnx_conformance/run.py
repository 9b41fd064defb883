#!/usr/bin/env python3
"""ONNX backend conformance: tgraph (texport + trun) and ONNX Runtime on the same cases.

The cases are the installed onnx package's own: the node tests that
onnx.backend.test.case.node.collect_testcases() generates, and the `simple`,
`pytorch-converted` and `pytorch-operator` model sets in its wheel
(onnx/backend/test/data). Each case runs
  texport model.onnx -o model.tg        (per-command timeout)
  tcompile -o model.so model.tg         (with --compile: trun then runs model.so)
  trun -o OUT model.tg NAME=input.npy   (once per data set)
and its outputs are compared the way onnx's backend test runner does: same
number of outputs, exact shape, exact dtype, then np.testing.assert_allclose
with the case's rtol/atol (bfloat16 at least 2**-6), strings exactly.

Outcome of a case (tgraph): pass; refused (texport, tcompile or trun exits 1 or 2 with a
message, or an input the runner cannot hand to trun, such as a sequence);
wrong (outputs produced but not equal); crash (killed by a signal or an exit
status other than 0, 1, 2); timeout (a command ran past --timeout). ONNX
Runtime (CPU provider, one thread) runs the same model and data: pass,
refused (session or run raised), or wrong.

Usage:
  bench/onnx_conformance/run.py [--bin DIR] [--filter REGEX] [--timeout S]
      [--json FILE] [--markdown FILE] [--details FILE] [--no-ort] [--compile]
      [--constant NAME,...]
Run it under nice -n 19 on a shared machine. Needs onnx, onnxruntime, numpy
(and ml_dtypes for the float8/bfloat16 cases).
"""
import argparse
import collections
import glob
import json
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings

import numpy as np
import onnx
from onnx import numpy_helper

SETS = ("simple", "pytorch-converted", "pytorch-operator")
OUTCOMES = ("pass", "refused", "wrong", "crash", "timeout")


class Case:
    def __init__(self, name, group, model, data_sets, rtol, atol):
        self.name, self.group, self.model = name, group, model
        self.data_sets, self.rtol, self.atol = data_sets, rtol, atol


def first_op(model):
    ops = [n.op_type for n in model.graph.node if n.op_type != "Constant"]
    return ops[0] if ops else "Constant"


def node_cases():
    from onnx.backend.test.case import node as node_mod
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        tcs = node_mod.collect_testcases(None)
    ops = {t.name: first_op(t.model) for t in tcs}
    for t in tcs:
        base = re.sub(r"_expanded(_ver\d+)?$", "", t.name)
        yield Case(t.name, ops.get(base, ops[t.name]), t.model, t.data_sets, t.rtol, t.atol)


def load_proto(path, type_proto):
    with open(path, "rb") as f:
        raw = f.read()
    if type_proto.HasField("tensor_type"):
        t = onnx.TensorProto()
        t.ParseFromString(raw)
        return numpy_helper.to_array(t)
    if type_proto.HasField("sequence_type"):
        s = onnx.SequenceProto()
        s.ParseFromString(raw)
        return numpy_helper.to_list(s)
    o = onnx.OptionalProto()
    o.ParseFromString(raw)
    return numpy_helper.to_optional(o)


def set_cases(name):
    from onnx.backend.test import loader
    for t in sorted(loader.load_model_tests(kind=name), key=lambda t: t.name):
        if not t.model_dir:
            continue                    # downloaded models, not in the wheel
        model = onnx.load(os.path.join(t.model_dir, "model.onnx"))
        data = []
        for d in sorted(glob.glob(os.path.join(t.model_dir, "test_data_set*"))):
            ins = [load_proto(os.path.join(d, f"input_{i}.pb"), model.graph.input[i].type)
                   for i in range(len(glob.glob(os.path.join(d, "input_*.pb"))))]
            outs = [load_proto(os.path.join(d, f"output_{i}.pb"), model.graph.output[i].type)
                    for i in range(len(glob.glob(os.path.join(d, "output_*.pb"))))]
            data.append((ins, outs))
        yield Case(t.name, name, model, data, t.rtol, t.atol)


def bake(case, names):
    """case with its graph inputs named in names made initializers of the values
    every data set gives them (inputs whose values differ stay inputs), for
    tcompile, which needs what a node reads as an attribute constant."""
    inputs = [i.name for i in case.model.graph.input]
    keep = list(range(len(inputs)))
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    for j, name in enumerate(inputs):
        vals = [tensor(ins[j]) for ins, _ in case.data_sets if j < len(ins)]
        if name not in names or not vals or not all(
                isinstance(v, np.ndarray) and np.array_equal(v, vals[0]) for v in vals):
            continue
        model.graph.initializer.append(numpy_helper.from_array(vals[0], name))
        model.graph.input.remove(next(i for i in model.graph.input if i.name == name))
        keep.remove(j)
    data = [([ins[j] for j in keep if j < len(ins)], refs) for ins, refs in case.data_sets]
    return Case(case.name, case.group, model, data, case.rtol, case.atol)


def tensor(x):
    if isinstance(x, onnx.TensorProto):
        return numpy_helper.to_array(x)
    return np.asarray(x) if isinstance(x, np.generic) else x


def compare(refs, outs, rtol, atol):
    """None when equal, else why not (onnx's assert_similar_outputs, plus a list check)."""
    if len(outs) != len(refs):
        return f"{len(outs)} outputs, expected {len(refs)}"
    for i, (r, o) in enumerate(zip(refs, outs)):
        if isinstance(r, list) or isinstance(o, list):
            if not (isinstance(r, list) and isinstance(o, list)) or len(r) != len(o):
                return f"output {i}: sequence mismatch"
            why = compare(r, o, rtol, atol)
            if why:
                return f"output {i}: {why}"
            continue
        if r is None or o is None:
            if r is not o:
                return f"output {i}: optional mismatch"
            continue
        if tuple(o.shape) != tuple(r.shape):
            return f"output {i}: shape {list(o.shape)}, expected {list(r.shape)}"
        if r.dtype == object:
            if not np.array_equal(o, r):
                return f"output {i}: strings differ"
            continue
        if o.dtype != r.dtype:
            return f"output {i}: dtype {o.dtype}, expected {r.dtype}"
        rt = max(rtol, 2 ** -6) if o.dtype.name == "bfloat16" else rtol
        if o.dtype.name == "bfloat16" or o.dtype.name.startswith(("float8", "float4")):
            o, r = o.astype(np.float32), r.astype(np.float32)   # numpy cannot promote these
        try:
            np.testing.assert_allclose(o, r, rtol=rt, atol=atol)
        except AssertionError as e:
            lines = [ln.strip() for ln in str(e).splitlines() if ln.strip()]
            return f"output {i}: " + "; ".join(lines[1:4])
    return None


def run_ort(case):
    import onnxruntime as ort
    so = ort.SessionOptions()
    so.intra_op_num_threads = 1
    so.inter_op_num_threads = 1
    so.log_severity_level = 4
    try:
        sess = ort.InferenceSession(case.model.SerializeToString(), so,
                                    providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        for ins, refs in case.data_sets:
            feed = {n: tensor(v) for n, v in zip(names, ins)}
            outs = sess.run(None, feed)
            why = compare([tensor(r) for r in refs], list(outs), case.rtol, case.atol)
            if why:
                return "wrong", why
    except Exception as e:          # noqa: BLE001 - any failure of ORT is a refusal
        return "refused", str(e).splitlines()[0][:300] if str(e) else type(e).__name__
    return "pass", ""


def tool(cmd, timeout):
    """(outcome, message): ok, refused, crash or timeout."""
    try:
        p = subprocess.run(cmd, capture_output=True, timeout=timeout, text=True, errors="replace")
    except subprocess.TimeoutExpired:
        return "timeout", f"{os.path.basename(cmd[0])} ran past {timeout} s"
    # the tool's own lines, without the temporary model path they start with
    err = " | ".join(re.sub(r"^\S+: \S*/tgconf\.[^/]+/\S+: ", "", ln).strip()
                     for ln in p.stderr.strip().splitlines()[-6:])
    if p.returncode == 0:
        return "ok", err
    if p.returncode in (1, 2):
        return "refused", err
    sig = f"signal {-p.returncode}" if p.returncode < 0 else f"exit status {p.returncode}"
    return "crash", f"{os.path.basename(cmd[0])}: {sig}: {err}"


def run_tgraph(case, bindir, timeout, tmp, compile_so=False):
    model_path = os.path.join(tmp, "model.onnx")
    onnx.save(case.model, model_path)
    tg = os.path.join(tmp, "model.tg")
    out, msg = tool([os.path.join(bindir, "texport"), "-o", tg, model_path], timeout)
    if out != "ok":
        return out, "texport: " + msg
    if compile_so:
        so = os.path.join(tmp, "model.so")
        out, msg = tool([os.path.join(bindir, "tcompile"), "-o", so, tg], timeout)
        if out != "ok":
            return out, "tcompile: " + msg
        tg = so
    inputs = [i.name for i in case.model.graph.input]
    for k, (ins, refs) in enumerate(case.data_sets):
        args = []
        for j, v in enumerate(ins):
            v = tensor(v)
            if not isinstance(v, np.ndarray) or v.dtype == object:
                return "refused", f"runner: input {j} is a {type(v).__name__}, not a numeric tensor"
            p = os.path.join(tmp, f"in{k}_{j}.npy")
            np.save(p, v)
            args.append(f"{inputs[j]}={p}")
        odir = os.path.join(tmp, f"out{k}")
        os.mkdir(odir)
        nout = len(case.model.graph.output)
        dest = odir if nout > 1 else os.path.join(odir, "out0.npy")
        out, msg = tool([os.path.join(bindir, "trun"), "-o", dest, tg] + args, timeout)
        if out != "ok":
            return out, "trun: " + msg
        try:
            outs = [np.load(os.path.join(odir, f"out{i}.npy")) for i in range(nout)]
        except (OSError, ValueError) as e:
            return "wrong", f"trun wrote no readable output: {e}"
        why = compare([tensor(r) for r in refs], outs, case.rtol, case.atol)
        if why:
            return "wrong", why
    return "pass", ""


def table(results):
    rows = collections.OrderedDict()
    for r in sorted(results, key=lambda r: r["group"].lower()):
        row = rows.setdefault(r["group"], collections.Counter())
        row["cases"] += 1
        row[r["tgraph"]] += 1
        row["ort"] += r["ort"] == "pass"
        row["both"] += r["ort"] == "pass" and r["tgraph"] == "pass"
    total = sum(rows.values(), collections.Counter())
    head = "| op / set | cases | ORT pass | tgraph pass | of ORT's | refused | wrong | crash | timeout |"
    lines = [head, "|" + "---|" * 9]

    def line(name, c):
        return (f"| {name} | {c['cases']} | {c['ort']} | {c['pass']} | {c['both']} | {c['refused']} "
                f"| {c['wrong']} | {c['crash']} | {c['timeout']} |")
    lines.append(line("**total**", total))
    lines += [line(k, v) for k, v in rows.items()]
    return total, "\n".join(lines)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--bin", default=os.path.join(here, "..", "..", "tools"),
                    help="folder with texport, tcompile and trun (default: the build's tools/)")
    ap.add_argument("--filter", default="", help="only cases whose name matches this regex")
    ap.add_argument("--timeout", type=float, default=60, help="seconds per command (default 60)")
    ap.add_argument("--json", help="write every case's outcome and message here")
    ap.add_argument("--markdown", help="write the per-op table here")
    ap.add_argument("--details", help="write each case that is not a pass, with its message, here")
    ap.add_argument("--no-ort", action="store_true", help="do not run ONNX Runtime")
    ap.add_argument("--compile", action="store_true",
                    help="run each model compiled: tcompile, then trun on the .so")
    ap.add_argument("--constant", default="",
                    help="comma-separated input names made initializers of the case's values"
                         " (the values its data sets agree on), as tcompile needs, say, NMS's"
                         " limits")
    a = ap.parse_args()
    flt = re.compile(a.filter)
    cases = [c for c in node_cases() if flt.search(c.name)]
    for s in SETS:
        cases += [c for c in set_cases(s) if flt.search(c.name)]
    if a.constant:
        cases = [bake(c, a.constant.split(",")) for c in cases]
    results = []
    t0 = time.time()
    for i, c in enumerate(cases):
        with tempfile.TemporaryDirectory(prefix="tgconf.") as tmp:
            tg, msg = run_tgraph(c, a.bin, a.timeout, tmp, a.compile)
        ort, omsg = ("refused", "not run") if a.no_ort else run_ort(c)
        results.append({"name": c.name, "group": c.group, "tgraph": tg, "message": msg,
                        "ort": ort, "ort_message": omsg})
        if sys.stderr.isatty():
            print(f"\r{i + 1}/{len(cases)} {c.name[:60]:60}", end="", file=sys.stderr)
    if sys.stderr.isatty():
        print(file=sys.stderr)
    total, md = table(results)
    both = total["both"]
    summary = (f"{len(results)} cases in {time.time() - t0:.0f} s: ONNX Runtime passes {total['ort']}; "
               f"tgraph passes {total['pass']} ({both} of ORT's, "
               f"{100.0 * both / max(total['ort'], 1):.1f}%), refuses {total['refused']}, "
               f"wrong {total['wrong']}, crash {total['crash']}, timeout {total['timeout']}")
    print(summary)
    for r in results:
        if r["tgraph"] in ("wrong", "crash", "timeout"):
            print(f"  {r['tgraph']}: {r['name']}: {r['message']}")
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(summary + "\n\n" + md + "\n")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(results, f, indent=1)
    if a.details:
        with open(a.details, "w") as f:
            for r in results:
                if r["tgraph"] != "pass":
                    f.write(f"{r['tgraph']}\t{r['name']}\t(ORT {r['ort']})\t{r['message']}\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
