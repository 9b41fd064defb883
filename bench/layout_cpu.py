#!/usr/bin/env python3
"""tcompile --layout=nchw against --layout=nhwc on zoo models: one-thread CPU time.

    bench/layout_cpu.py [--tools DIR] [--work DIR] [--rounds R] [--runs N]
                        [--threads T] [--batch B] [MODEL...]

WORK holds the zoo's exports (bench/zoo/zoo.py --work WORK: WORK/M/m.tg, or
m.pt2 which texport reads, and its batch-1 input in0.b1.npy; --batch B tiles
it to batch B). Each model is compiled both ways; the nhwc compile's
TLOG=passes line says how many convs and pools went channels-last and how
many permutes (copies) are left. Timing: the CPU time (user + system,
getrusage of trun as a child) of `trun --threads=T --warmup=0 --bench=N+1`
less that of `--bench=1`, over N: a run's one-core cost, which others' load
on a shared machine inflates far less than wall-clock time; the two layouts
in turn, R rounds, the least of each. Outputs are checked against each
other (max abs difference / max |nchw output|). Writes a Markdown table.
"""
import argparse
import os
import re
import resource
import subprocess
import sys
import tempfile

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
MODELS = ["resnet18", "resnet50", "mobilenet_v2", "efficientnet_b0", "googlenet",
          "squeezenet1_1", "regnet_y_400mf", "convnext_tiny"]


def cpu_seconds(cmd):
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(cmd, check=True, capture_output=True)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime


def run_ms(trun, so, x, threads, runs):
    base = [trun, so, x, f"--threads={threads}", "--warmup=0"]
    return (cpu_seconds(base + [f"--bench={runs + 1}"]) -
            cpu_seconds(base + ["--bench=1"])) * 1000 / runs


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "tools"))
    ap.add_argument("--work", default="zoo-work")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=1)
    ap.add_argument("models", nargs="*")
    a = ap.parse_args()
    tool = {t: os.path.join(a.tools, t) for t in ("texport", "tcompile", "trun")}
    tmp = tempfile.mkdtemp(prefix="layout_cpu.")
    print(f"| model | convs, pools nhwc | permutes left | nchw ms | nhwc ms | nchw / nhwc |"
          f" max diff / max out |")
    print("|---|---:|---:|---:|---:|---:|---:|")
    for m in a.models or MODELS:
        d = os.path.join(a.work, m)
        tg = os.path.join(d, "m.tg")
        if not os.path.exists(tg):
            tg = os.path.join(tmp, m + ".tg")
            subprocess.run([tool["texport"], os.path.join(d, "m.pt2"), "-o", tg], check=True)
        x = np.load(os.path.join(d, "in0.b1.npy"))
        xin = os.path.join(tmp, m + ".in.npy")
        np.save(xin, np.concatenate([x] * a.batch))
        so = {}
        for lay in ("nchw", "nhwc"):
            so[lay] = os.path.join(tmp, f"{m}.{lay}.so")
            p = subprocess.run([tool["tcompile"], f"--layout={lay}", tg, "-o", so[lay]],
                               check=True, capture_output=True, text=True,
                               env=dict(os.environ, TLOG="passes"))
            if lay == "nhwc":
                s = re.search(r"channels_last: (\d+) convs and (\d+) pools .* (\d+) permutes left",
                              p.stderr)
                conv, pool, left = s.groups() if s else ("0", "0", "-")
        out = {}
        for lay in so:
            out[lay] = os.path.join(tmp, f"{m}.{lay}.out.npy")
            subprocess.run([tool["trun"], so[lay], xin, "-o", out[lay]], check=True,
                           capture_output=True)
        r, q = np.load(out["nchw"]), np.load(out["nhwc"])
        diff = float(np.abs(r - q).max() / np.abs(r).max())
        best = {lay: float("inf") for lay in so}
        for _ in range(a.rounds):
            for lay in so:
                best[lay] = min(best[lay], run_ms(tool["trun"], so[lay], xin, a.threads, a.runs))
        print(f"| {m} | {conv}, {pool} | {left} | {best['nchw']:.2f} | {best['nhwc']:.2f} |"
              f" {best['nchw'] / best['nhwc']:.2f}x | {diff:.1e} |", flush=True)
    subprocess.run(["rm", "-rf", tmp])


if __name__ == "__main__":
    sys.exit(main())
