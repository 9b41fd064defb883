#!/usr/bin/env python3
"""The depthwise nodes of zoo models compiled with --layout=nchw and with
--layout=nhwc, per node, one thread: trun --profile over 15 runs of each .so
(--bench=15), each node's fastest run, summed over the nodes whose emitted
descriptor has groups == c > 1.

    python3 bench/layout_dw_nodes.py TOOLS WORK TMP MODEL...

TOOLS: a built tree; WORK: a zoo work folder (WORK/M/m.tg, in0.b1.npy,
in.b8.npy); TMP: a folder for the .so's, their C and the profiles.
"""
import collections
import json
import os
import re
import subprocess
import sys

tools, work, tmp = sys.argv[1:4]
env = dict(os.environ, TGRAPH_RUNTIME_DIR=tools, TGRAPH_INCLUDE_DIR=tools + "/include")
print("| model | batch | depthwise nodes | NCHW .so ms | NHWC .so ms | NCHW / NHWC |")
print("|---|---|---|---|---|---|")
for m in sys.argv[4:]:
    so, dw = {}, set()
    for lay in ("nchw", "nhwc"):
        so[lay] = os.path.join(tmp, "%s.%s.so" % (m, lay))
        c = os.path.join(tmp, "%s.%s.c" % (m, lay))
        subprocess.run([tools + "/tools/tcompile", "--layout=" + lay, os.path.join(work, m, "m.tg"),
                        "-o", so[lay], "--emit-c=" + c], check=True, env=env)
        src = open(c).read()
        # a node's block: its PROF_END names it; depthwise: groups == c (> 1)
        for blk in src.split("TGRT_PROF_BEGIN(T0);")[1:]:
            g = re.search(r"d\.groups = (\d+);", blk); cc = re.search(r"d\.c = (\d+);", blk)
            e = re.search(r'TGRT_PROF_END\(T0, "([^"]+)"', blk)
            if g and cc and e and int(g.group(1)) > 1 and g.group(1) == cc.group(1):
                dw.add((lay, e.group(1)))
    for b, x in (("8", "in.b8.npy"), ("1", "in0.b1.npy")):
        tot = {}
        for lay in (("nchw", "nhwc") if b == "8" else ("nhwc", "nchw")):
            p = os.path.join(tmp, "prof.%s.%s.jsonl" % (m, lay))
            subprocess.run([tools + "/tools/trun", so[lay], os.path.join(work, m, x), "--threads=1",
                            "--bench=15", "--profile=" + p], check=True, capture_output=True)
            best = collections.defaultdict(lambda: 1e30)
            for l in open(p):
                f = json.loads(l)["fields"]
                best[f["node"]] = min(best[f["node"]], f["us"])
            names = [n for (l2, n) in dw if l2 == lay]
            tot[lay] = (len(names), sum(best[n] for n in names) / 1000)
        print("| %s | %s | %d / %d | %.3f | %.3f | %.2f |" % (m, b, tot["nchw"][0], tot["nhwc"][0],
              tot["nchw"][1], tot["nhwc"][1], tot["nchw"][1] / tot["nhwc"][1]))
        sys.stdout.flush()
