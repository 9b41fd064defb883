#!/usr/bin/env python3
"""Accuracy of tcompile --dtype bf16 over the model zoo, against float32.

    python3 bench/zoo/bf16_acc.py [--tools DIR] [--work DIR] [--out DIR] MODEL...

For each model, WORK/M/m.pt2 (zoo.py's export) is imported and compiled
twice, --dtype fp32 and --dtype bf16, into OUT/M; both .so run the export's
batch-3 input, and each output is compared with eager PyTorch's float32 one
(WORK/M/out0.b3.npy): max abs error over max |reference|, and for an output
of rank 2 (logits) the rows whose argmax (top-1) agrees with eager's. Prints
a Markdown table; OUT/bf16_acc.json keeps the numbers.
"""
import argparse
import os
import subprocess
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import rss  # noqa: E402  (each_model: the loop over the models)


def run(cmd):
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0])}: {p.stderr.strip()[:300]}")


def compare(got, ref):
    rel = float(np.abs(got.astype(np.float64) - ref).max() / max(np.abs(ref).max(), 1e-30))
    top1 = None
    if ref.ndim == 2 and ref.shape[1] > 1:
        top1 = int((got.argmax(1) == ref.argmax(1)).sum())
    return rel, top1


def run_model(args, name):
    out = os.path.join(args.out, name)
    os.makedirs(out, exist_ok=True)
    tg, x = os.path.join(out, "m.tg"), os.path.join(args.work, name, "in0.b3.npy")
    ref = np.load(os.path.join(args.work, name, "out0.b3.npy"))
    if not os.path.exists(tg):
        run([os.path.join(args.tools, "texport"), os.path.join(args.work, name, "m.pt2"), "-o", tg])
    row = {"rows": int(ref.shape[0]) if ref.ndim == 2 else None}
    for dt in ("fp32", "bf16"):
        so, y = os.path.join(out, f"{dt}.so"), os.path.join(out, f"{dt}.b3.npy")
        run([os.path.join(args.tools, "tcompile"), "--dtype", dt, tg, "-o", so])
        run([os.path.join(args.tools, "trun"), so, x, "-o", y])
        row[dt] = compare(np.load(y), ref)
    return row


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default=os.path.join(here, "..", "..", "tools"))
    ap.add_argument("--work", default=os.path.join(here, "work"))
    ap.add_argument("--out", default="bf16-work")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = rss.each_model(args, run_model, "bf16_acc.json")
    print("| model | fp32 .so err / max|ref| | bf16 .so err / max|ref| | bf16 top-1 = eager's |")
    print("|---|---:|---:|---:|")
    for name, r in rows.items():
        if "error" in r:
            print(f"| {name} | error: {r['error']} | | |")
            continue
        t = r["bf16"][1]
        top1 = f"{t}/{r['rows']}" if t is not None else "-"
        print(f"| {name} | {r['fp32'][0]:.1e} | {r['bf16'][0]:.1e} | {top1} |")


if __name__ == "__main__":
    main()
