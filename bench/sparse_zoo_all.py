#!/usr/bin/env python3
"""The zoo pruned to 2:4 through the whole pipeline, one table row per model.

For each model folder of bench/zoo/zoo.py --export-only (m.pt2, in*.b{1,3}.npy):
  texport m.pt2 | tsparse --report | tcompile          (fp32 2:4)
  texport m.pt2 | tsparse | tquant --calib | tcompile   (2:4 then int8)
and the dense model compiled beside them. Columns: layers pruned / eligible and the
mean relative weight error (tsparse --report), the output change of the sparse .so
against the dense .so at batch 3 (max abs, and relative to max|dense out|), the
sparse .so against the sparse graph in the interpreter (max abs error / max|out|),
the int8 order's qlinear_24 / all int8 layers and its output change against the
dense .so, and dense vs sparse .so median times at batch 1, 1 thread (trun --bench
10, interleaved, the median of REPS rounds). With random
weights the output change is large; the point is that every step works.
A failing step shows as `error: first line of its message`.
  bench/sparse_zoo_all.py WORK [MODEL...]   (TOOLS=dir of the tools, REPS=3)
"""
import json
import os
import re
import statistics
import struct
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
TOOLS = os.environ.get("TOOLS", os.path.join(HERE, "..", "tools"))
REPS = int(os.environ.get("REPS", "3"))
TIMEOUT = 900


class StepError(Exception):
    pass


def tool(name, *args, stdin=None):
    """Runs a tool; its stderr, or StepError with the step and its first error line."""
    try:
        p = subprocess.run([os.path.join(TOOLS, name), *args], stdin=stdin,
                           capture_output=True, text=True, timeout=TIMEOUT)
    except subprocess.TimeoutExpired:
        raise StepError(f"{name}: timeout {TIMEOUT} s")
    if p.returncode != 0:
        lines = [ln for ln in p.stderr.splitlines() if ln.strip()] or [f"exit {p.returncode}"]
        raise StepError(f"{name}: {lines[-1][:160]}")
    return p.stderr


def graph(tg):
    """A TG file's graph (its header: a length, then JSON metadata)."""
    with open(tg, "rb") as f:
        n = struct.unpack("<Q", f.read(8))[0]
        meta = json.loads(f.read(n))["__metadata__"]
    return json.loads(meta["tgraph"])


def outputs(model, ins, dest):
    """Runs model on ins; its outputs as arrays."""
    os.makedirs(dest, exist_ok=True)
    for f in os.listdir(dest):
        os.remove(os.path.join(dest, f))
    tool("trun", model, "-o", dest, *ins)
    return [np.load(os.path.join(dest, f)) for f in sorted(os.listdir(dest))]


def change(got, ref):
    """max |got - ref| over all outputs, and that over max |ref|."""
    err = max(float(np.max(np.abs(g.astype(np.float64) - r))) for g, r in zip(got, ref))
    top = max(float(np.max(np.abs(r))) for r in ref)
    return err, err / top if top else float("inf")


def median_ms(model, ins):
    err = tool("trun", model, *ins, "--bench", "10", "--threads", "1")
    m = re.search(r"median ([0-9.]+) ms", err)
    if not m:
        raise StepError("trun --bench: no median")
    return float(m.group(1))


def cell(fn):
    try:
        return fn()
    except StepError as e:
        return f"error: {e}"


def fmt_change(c):
    return c if isinstance(c, str) else f"{c[0]:.3g} ({c[1]:.2g})"


def calib_dir(tmp, work, names):
    """tquant/tsparse --calib: the files themselves for one input, NAME.KEY.npy for several."""
    d = os.path.join(tmp, "calib")
    os.makedirs(d, exist_ok=True)
    for b in (1, 3):
        for k, name in enumerate(names):
            src = os.path.join(work, f"in{k}.b{b}.npy")
            dst = os.path.join(d, f"{name}.b{b}.npy" if len(names) > 1 else f"b{b}.npy")
            if not os.path.exists(dst):
                os.symlink(src, dst)
    return d


def row(work, tmp):
    t = lambda f: os.path.join(tmp, f)
    ins = {b: sorted(os.path.join(work, f) for f in os.listdir(work)
                     if f.startswith("in") and f.endswith(f".b{b}.npy")) for b in (1, 3)}
    tool("texport", os.path.join(work, "m.pt2"), "-o", t("dense.tg"))
    calib = calib_dir(tmp, work, graph(t("dense.tg"))["inputs"])
    rep = tool("tsparse", "--report", t("dense.tg"), "-o", t("sparse.tg"))
    m = re.search(r"(\d+) of (\d+) layers pruned", rep)
    werr = [float(x) for x in re.findall(r"weight error ([0-9.e+-]+)", rep)]
    r = {"pruned": f"{m.group(1)}/{m.group(2)}" if m else "?",
         "werr": f"{statistics.mean(werr):.3f}" if werr else "-"}
    tool("tcompile", t("dense.tg"), "-o", t("dense.so"))
    dense = outputs(t("dense.so"), ins[3], t("o_dense"))
    eager = [np.load(os.path.join(work, f"out{k}.b3.npy")) for k in range(len(dense))]
    r["dense_eager"] = f"{change(dense, eager)[1]:.1g}"

    def sparse():
        tool("tcompile", t("sparse.tg"), "-o", t("sparse.so"))
        so = outputs(t("sparse.so"), ins[3], t("o_sparse"))
        interp = outputs(t("sparse.tg"), ins[3], t("o_interp"))
        r["so_interp"] = f"{change(so, interp)[1]:.1g}"
        return change(so, dense)
    r["change"] = cell(sparse)
    r.setdefault("so_interp", "-")

    def int8():
        with open(t("sparse.tg")) as f:
            tool("tquant", "--calib", calib, "-o", t("q.tg"), stdin=f)
        ops = [n["op"] for n in graph(t("q.tg"))["nodes"]]
        r["q24"] = f'{ops.count("qlinear_24")} / {sum(o.startswith("q") for o in ops)}'
        tool("tcompile", t("q.tg"), "-o", t("q.so"))
        return change(outputs(t("q.so"), ins[3], t("o_q")), dense)
    r["int8"] = cell(int8)
    r.setdefault("q24", "-")

    def bench():
        d, s = [], []
        for _ in range(REPS):
            d.append(median_ms(t("dense.so"), ins[1]))
            s.append(median_ms(t("sparse.so"), ins[1]))
        d, s = statistics.median(d), statistics.median(s)
        return f"{d:.3g} / {s:.3g} ({s / d:.2f}x)"
    r["time"] = cell(bench) if os.path.exists(t("sparse.so")) else "-"
    return r


def main():
    if len(sys.argv) < 2 or sys.argv[1] in ("-h", "--help"):
        sys.exit(__doc__)
    work = sys.argv[1]
    models = sys.argv[2:] or sorted(d for d in os.listdir(work)
                                    if os.path.exists(os.path.join(work, d, "m.pt2")))
    print("| model | pruned / eligible | weight err | dense .so vs eager (rel) "
          "| 2:4 .so vs dense: max abs (rel) | 2:4 .so vs interpreter (rel) "
          "| int8 layers: qlinear_24 / all | 2:4+int8 .so vs dense: max abs (rel) | b1 ms dense / 2:4 |")
    print("|---|---|---|---|---|---|---|---|---|")
    for name in models:
        with tempfile.TemporaryDirectory() as tmp:
            try:
                # zoo.py names a model's folder with "_" for "+" (bert+mask)
                r = row(os.path.join(work, name.replace("+", "_")), tmp)
                cells = [r["pruned"], r["werr"], r["dense_eager"], fmt_change(r["change"]),
                         r["so_interp"], r["q24"], fmt_change(r["int8"]), r["time"]]
            except StepError as e:
                cells = [f"error: {e}"] + ["-"] * 7
        print(f"| {name} | " + " | ".join(c.replace("|", "/") for c in cells) + " |",
              flush=True)


if __name__ == "__main__":
    main()
