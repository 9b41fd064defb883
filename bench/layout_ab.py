#!/usr/bin/env python3
"""tcompile --layout=nchw against --layout=nhwc on whole zoo models, one
thread, CPU time.

    python3 bench/layout_ab.py TOOLS WORK [-m MODELS] [-b BATCHES] [-r ROUNDS] [-n RUNS]

TOOLS: a built tree (tools/tcompile, tools/trun, libtgkernels.a). WORK: a
zoo work folder (bench/zoo/zoo.py --work) with WORK/M/m.tg and the inputs
WORK/M/in0.b1.npy and WORK/M/in.b8.npy. Each model is compiled both ways;
the two .so's outputs at each batch are compared (max |nhwc - nchw| / max
|nchw|, printed). Then ROUNDS rounds (default 5), each timing both layouts
in turn, the first alternating: a trun process's CPU time (rusage of the
child) for 1 + RUNS runs less that of 1 run (loading and the first run
cancel), over RUNS. Prints the median over the rounds as a Markdown table.
"""
import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile

import numpy as np


def cpu_ms(trun, so, x, runs):
    def cpu(n):
        a = resource.getrusage(resource.RUSAGE_CHILDREN)
        subprocess.run([trun, so, x, "--threads=1", "--warmup=0", "--bench=%d" % n],
                       check=True, capture_output=True)
        b = resource.getrusage(resource.RUSAGE_CHILDREN)
        return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime
    return (cpu(1 + runs) - cpu(1)) * 1000 / runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("tools")
    ap.add_argument("work")
    ap.add_argument("-m", default="mobilenet_v2 mobilenet_v3_large efficientnet_b0")
    ap.add_argument("-b", default="8 1")
    ap.add_argument("-r", type=int, default=5)
    ap.add_argument("-n", type=int, default=10)
    a = ap.parse_args()
    tcompile = os.path.join(a.tools, "tools", "tcompile")
    trun = os.path.join(a.tools, "tools", "trun")
    env = dict(os.environ, TGRAPH_RUNTIME_DIR=a.tools,
               TGRAPH_INCLUDE_DIR=os.path.join(a.tools, "include"))
    tmp = tempfile.mkdtemp(prefix="layout_ab.")
    print("| model | batch | max rel diff | nchw ms | nhwc ms | nchw / nhwc |")
    print("|---|---|---|---|---|---|")
    for m in a.m.split():
        so = {}
        for lay in ("nchw", "nhwc"):
            so[lay] = os.path.join(tmp, "%s.%s.so" % (m, lay))
            subprocess.run([tcompile, "--layout=" + lay, os.path.join(a.work, m, "m.tg"),
                            "-o", so[lay]], check=True, env=env)
        for b in a.b.split():
            x = os.path.join(a.work, m, "in0.b1.npy" if b == "1" else "in.b%s.npy" % b)
            out = {}
            for lay in ("nchw", "nhwc"):
                o = os.path.join(tmp, "%s.%s.b%s.npy" % (m, lay, b))
                subprocess.run([trun, so[lay], x, "-o", o], check=True)
                out[lay] = np.load(o)
            diff = float(np.abs(out["nhwc"] - out["nchw"]).max() / np.abs(out["nchw"]).max())
            t = {"nchw": [], "nhwc": []}
            for r in range(a.r):
                for lay in (("nchw", "nhwc") if r % 2 == 0 else ("nhwc", "nchw")):
                    t[lay].append(cpu_ms(trun, so[lay], x, a.n))
            c, h = statistics.median(t["nchw"]), statistics.median(t["nhwc"])
            print("| %s | %s | %.1e | %.2f | %.2f | %.2f |" % (m, b, diff, c, h, c / h))
            sys.stdout.flush()


if __name__ == "__main__":
    main()
