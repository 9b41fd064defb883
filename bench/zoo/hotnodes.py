#!/usr/bin/env python3
"""Where a compiled model's time goes: `trun --profile` per node, with each
node's arithmetic (conv and linear) and GFLOP/s.

    python3 bench/zoo/hotnodes.py [-n N] [--peak GFLOPS] MODEL.tg PROFILE BATCH

MODEL.tg is the graph tcompile compiled (its node names are the profile's:
a fused group is named by its last node); PROFILE is `trun MODEL.so
--profile PROFILE --bench ...` at batch BATCH. A node's time is its median
over the runs (a loaded machine's outliers fall out), or with --min its
fastest run (on a machine so loaded that most runs are preempted somewhere:
preemption only adds). Its FLOPs are those of the conv or linear its fused
group ends (walking back through the elementwise nodes fused after it; a
group without one, a pool say, has none): 2 x output elements x the
weight's elements per output channel.
Prints the N heaviest nodes (default 25) as a Markdown table: op, kind
(depthwise, 1x1, KxK, grouped, linear), output shape, ms, share, GFLOP/s and
its fraction of PEAK (default 500, 2 Zen 4 cores' f32 FMA peak).
"""
import argparse
import json
import re
import statistics
import subprocess
import sys
from collections import defaultdict

LABEL = re.compile(r'^\s*(\w+) \[label="([^"]*)"')
EDGE = re.compile(r'^\s*(\w+) -> (\w+);')


def shape_of(text, batch):
    m = re.search(r"\w+\[([^\]]*)\]", text)
    if not m:
        return None
    dims = [d.strip() for d in m.group(1).split(",") if d.strip()]
    return [batch if not d.isdigit() else int(d) for d in dims]


def read_graph(tg, batch, tlog):
    """name -> (op, shape, [input ids]); id -> (name or constant, shape)"""
    dot = subprocess.run([tlog, "--dot", tg], capture_output=True, text=True, check=True).stdout
    nodes, ins = {}, defaultdict(list)
    for line in dot.splitlines():
        m = LABEL.match(line)
        if m:
            parts = m.group(2).split("\\n")
            if m.group(1).startswith("n"):
                if len(parts) == 2:     # a node named as its op has its name left out
                    parts.insert(1, parts[0])
                nodes[m.group(1)] = {"op": parts[0], "name": parts[1],
                                     "shape": shape_of(parts[2], batch)}
            else:
                nodes[m.group(1)] = {"op": "value", "name": parts[0],
                                     "shape": shape_of(parts[1], batch)}
            continue
        m = EDGE.match(line)
        if m:
            ins[m.group(2)].append(m.group(1))
    return nodes, ins


def prod(xs):
    p = 1
    for x in xs:
        p *= x
    return p


def ended_by(nid, nodes, ins, ops=None):
    """the conv or linear node that node nid's fused group ends (walking
    back through the elementwise nodes after it), or nid itself. With ops
    (the group's ops, as the profile names them: conv+sigmoid+mul) each step
    back takes the input whose op is the group's one before (SE's mul reads
    the block's input too), the latest of several (a residual add of two
    convolutions: the one computed first is the residual); a batch_norm
    (tcompile folds it into the convolution before it) is passed through."""
    if ops:
        want = list(reversed(ops[:-1]))
        while want:
            data = [i for i in ins[nid] if i.startswith("n")]
            cand = [i for i in data if nodes[i]["op"] == want[0]]
            if cand:
                want.pop(0)
            else:
                cand = [i for i in data if nodes[i]["op"] == "batch_norm"]
                if not cand:
                    break
            nid = max(cand, key=lambda i: int(i[1:]))
        return nid
    seen = 0
    while nodes[nid]["op"] not in ("conv", "linear") and seen < 8:
        data = [i for i in ins[nid] if i.startswith("n")]
        if len(data) < 1:
            break
        nid = data[0]
        seen += 1
    return nid


def arithmetic(nid, nodes, ins):
    """(kind, flops) of the conv or linear that node nid ends, or (op, 0)"""
    nid = ended_by(nid, nodes, ins)
    nd = nodes[nid]
    if nd["op"] not in ("conv", "linear"):
        return nodes[nid]["op"], 0
    src, w = nodes[ins[nid][0]], nodes[ins[nid][1]]
    out = prod(nd["shape"])
    flops = 2 * out * prod(w["shape"][1:])
    if nd["op"] == "linear":
        return "linear", flops
    ks = "x".join(str(k) for k in w["shape"][2:])
    cin, k, per = src["shape"][1], w["shape"][0], w["shape"][1]
    if per == 1 and cin == k and k > 1:
        kind = f"depthwise {ks}"
    elif per != cin:
        kind = f"grouped {ks}"
    else:
        kind = f"{ks} conv"
    stride = src["shape"][-1] // nd["shape"][-1]
    return kind + (f" /{stride}" if stride > 1 else ""), flops


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("-n", type=int, default=25)
    ap.add_argument("--peak", type=float, default=500.0)
    ap.add_argument("--tlog", default="tlog")
    ap.add_argument("--min", action="store_true", help="each node's fastest run, not its median")
    ap.add_argument("tg")
    ap.add_argument("profile")
    ap.add_argument("batch", type=int)
    a = ap.parse_args()
    nodes, ins = read_graph(a.tg, a.batch, a.tlog)
    by_name = {nd["name"]: nid for nid, nd in nodes.items() if nid.startswith("n")}
    times, ops = defaultdict(list), {}
    with open(a.profile) as f:
        for line in f:
            r = json.loads(line).get("fields", {})
            if "us" in r:
                times[r["node"]].append(r["us"])
                ops[r["node"]] = r["op"]
    stat = min if a.min else statistics.median
    med = {k: stat(v) / 1e3 for k, v in times.items()}
    total = sum(med.values())
    rows, by_kind = [], defaultdict(lambda: [0.0, 0.0])
    for name, ms in med.items():
        kind, flops = arithmetic(by_name[name], nodes, ins) if name in by_name else ("?", 0)
        if not any(k.startswith(("conv", "linear")) for k in ops[name].split("+")):
            kind, flops = ops[name], 0
        shape = nodes[by_name[name]]["shape"] if name in by_name else None
        rows.append((ms, name, ops[name], kind, shape, flops))
        family = kind.split(" /")[0]
        by_kind[family][0] += ms
        by_kind[family][1] += flops
    rows.sort(reverse=True)
    print(f"total {total:.3f} ms a run (sum of node {'minima' if a.min else 'medians'}), "
          f"{sum(r[5] for r in rows) / 1e9:.3f} GFLOP\n")
    print("| kind | ms | share | GFLOP | GFLOP/s | of peak |")
    print("|---|---:|---:|---:|---:|---:|")
    for family, (ms, flops) in sorted(by_kind.items(), key=lambda kv: -kv[1][0]):
        gfs = flops / ms / 1e6 if flops else 0
        print(f"| {family} | {ms:.3f} | {100 * ms / total:.1f}% | {flops / 1e9:.3f} | "
              + (f"{gfs:.1f} | {100 * gfs / a.peak:.1f}% |" if flops else "| |"))
    print("\n| node | op | kind | output | ms | share | GFLOP/s | of peak |")
    print("|---|---|---|---|---:|---:|---:|---:|")
    for ms, name, op, kind, shape, flops in rows[:a.n]:
        gfs = flops / ms / 1e6 if flops else 0
        print(f"| {name} | {op} | {kind} | {shape} | {ms:.3f} | {100 * ms / total:.1f}% | "
              + (f"{gfs:.1f} | {100 * gfs / a.peak:.1f}% |" if flops else "| |"))


if __name__ == "__main__":
    sys.exit(main())
