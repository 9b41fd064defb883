#!/usr/bin/env python3
"""Speed over the model zoo: tgraph's compiled .so against ONNX Runtime,
OpenVINO, torch eager, torch.compile and AOTInductor on the CPU.

    python3 bench/zoo/speed.py [--tools DIR] [--work DIR] [--threads N]
        [--batches 1,8] [--rounds R] [--runs N] [--engines LIST]
        [--quiet CORES] [--retries N] MODEL...

Each model (single-input ones) is built and exported as `make zoo` does
(zoo.py's export worker: seeded weights, M.pt2 and M.onnx), then imported
(texport) and compiled (tcompile, timed). Inputs are random at each batch.
Every engine runs in its own process (bench/frameworks.py --serve, one a
Python engine; trun for the .so), so each one's peak RSS is its own. Outputs
are checked once per batch against torch eager's (max abs error / max|ref|
<= 1e-4, else the engine's times are flagged); without eager among the
engines, at a batch the export saved an input for (1 and 3), that input is
timed and the export's eager output is the reference; at other batches the
first other engine's output is (ONNX Runtime's by default). Then ROUNDS rounds (default
5): each runs every engine in turn, WARMUP untimed runs and RUNS timed ones,
starting one engine further along each round, so load and drift hit all
alike; a cell is the median over the rounds of each round's median (and its
90th percentile). The table also has compile/set-up times and, per batch,
the geometric mean over the models of tgraph's time over the fastest other
engine's. --baseline DIR adds the .so compiled by another tgraph build (its
tools/tcompile and libtgkernels.a) as one more contender, "tgraph baseline":
a change's speed-up side by side with the others. Results go to
WORK/M/speed.json; WORK/SPEED.md is written from every model's there
(the source tree stays clean: bench/RESULTS.md quotes what it keeps).

The machine's load (os.getloadavg) is recorded with each run: times under
load are comparable side by side only, as ratios. Each turn (one engine's
WARMUP and RUNS) also measures what else used the CPUs meanwhile: the busy
and stolen time of /proc/stat less the engine process's own CPU time (and
this script's), in cores; a turn where others took more than --quiet cores
(or the hypervisor stole that much) is run again, up to --retries times,
and the table gives the largest such share each model's accepted turns
saw. tgraph's ratio to the fastest other is taken within each round (its
median over that round's fastest other's) and the cell is the median over
the rounds: a machine whose speed drifts over minutes (this VM's host: every
engine 10-40% slower for a minute, then not) moves both sides of a round's
ratio alike, where the medians of separate turns could catch the drift on
one side only.
"""
import argparse
import json
import math
import os
import re
import resource
import statistics
import subprocess
import sys
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import zoo  # noqa: E402  (the export worker and output comparison, shared)

ENGINES = {"ort": "onnxruntime", "ov": "openvino", "eager": "torch-eager",
           "compile": "torch.compile", "aoti": "aotinductor"}
SO = "tgraph .so"
BASE = "tgraph baseline"
TRUN_SETTLE = "0.3s"
HZ = os.sysconf("SC_CLK_TCK")


def machine_cpu():
    """(busy, stolen) seconds of every CPU so far (/proc/stat)"""
    with open("/proc/stat") as f:
        v = [int(x) for x in f.readline().split()[1:]]
    # user nice system idle iowait irq softirq steal (guest is within user)
    return (v[0] + v[1] + v[2] + v[5] + v[6]) / HZ, v[7] / HZ


def self_cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def children_cpu():
    """CPU time of the children reaped so far: a trun turn's is its own"""
    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def proc_cpu(pid):
    """a live process's CPU time, all its threads (/proc/PID/stat)"""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / HZ


class Others:
    """What else ran on the machine during a turn, in cores: busy and
    stolen CPU time over the turn's wall time, less the engine's own CPU
    time (given at stop) and this script's."""

    def __init__(self):
        self.busy, self.steal = machine_cpu()
        self.mine, self.t = self_cpu(), time.perf_counter()

    def stop(self, engine_cpu):
        busy, steal = machine_cpu()
        wall = time.perf_counter() - self.t
        others = busy - self.busy - engine_cpu - (self_cpu() - self.mine)
        return max(others, 0.0) / wall, (steal - self.steal) / wall


def tool(args, name):
    return os.path.join(args.tools, name)


def timed(cmd, timeout, env=None):
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    if p.returncode:
        raise RuntimeError(f"{os.path.basename(cmd[0])}: {p.stderr.strip()[:300]}")
    return time.perf_counter() - t0


def peak_rss_mb(pid):
    """the process's peak resident memory so far (VmHWM: ru_maxrss of a
    child starts from its parent's), 0 once it is gone"""
    try:
        with open(f"/proc/{pid}/status") as f:
            return next(int(ln.split()[1]) for ln in f if ln.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return 0


def trun_bench(args, so, x):
    """(median ms, p90 ms, peak RSS MB, (others' cores, stolen cores)) of one
    trun --bench process"""
    others, cpu0 = Others(), children_cpu()
    p = subprocess.Popen([tool(args, "trun"), so, x, "-o", "/dev/null", f"--bench={args.runs}",
                          f"--warmup={TRUN_SETTLE}", f"--threads={args.threads}"],
                         stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    rss = 0
    while p.poll() is None:     # its report is a few lines: the pipe does not fill
        rss = max(rss, peak_rss_mb(p.pid))
        time.sleep(0.02)
    busy = others.stop(children_cpu() - cpu0)
    err = p.stderr.read()
    m = re.search(r"median ([0-9.]+) ms, p90 ([0-9.]+) ms", err)
    if p.returncode or not m:
        raise RuntimeError(f"trun: {err.strip()[:300]}")
    return float(m.group(1)), float(m.group(2)), rss, busy


class Server:
    """one bench/frameworks.py --serve process running one engine"""

    def __init__(self, args, work, engine, inputs):
        self.p = subprocess.Popen(
            [sys.executable, os.path.join(HERE, "..", "frameworks.py"), "--serve",
             "--pt2", os.path.join(work, "m.pt2"), "--onnx", os.path.join(work, "m.onnx"),
             "--threads", str(args.threads), "--aoti-dir", work, "--engines", engine] + inputs,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
            stderr=open(os.path.join(work, f"frameworks.{engine}.log"), "w"), text=True)
        line = self.p.stdout.readline().split()
        self.name = line[1] if line[:1] == ["ready"] and len(line) > 1 else None

    def ask(self, *words):
        self.p.stdin.write(" ".join(str(w) for w in words) + "\n")
        self.p.stdin.flush()
        return self.p.stdout.readline().split()

    def timed(self, x, runs, warmup):
        """its reply to a timing request and (others' cores, stolen cores)"""
        others, cpu0 = Others(), proc_cpu(self.p.pid)
        reply = self.ask(self.name, x, runs, warmup)
        return reply, others.stop(proc_cpu(self.p.pid) - cpu0)

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def make_inputs(work, batches, exported):
    """in.bB.npy at each batch, random like the b1 input the export saved;
    with exported, the export's own input at a batch it saved one for (its
    out0.bB.npy, eager's output, is then the reference: no eager run)"""
    ref = np.load(os.path.join(work, "in0.b1.npy"))
    paths = {}
    for b in batches:
        if exported and os.path.exists(os.path.join(work, f"out0.b{b}.npy")):
            paths[b] = os.path.join(work, f"in0.b{b}.npy")
            continue
        rng = np.random.default_rng(b)
        shape = (b,) + ref.shape[1:]
        x = (rng.integers(0, int(ref.max()) + 1, shape) if ref.dtype.kind in "iu"
             else rng.standard_normal(shape)).astype(ref.dtype)
        paths[b] = os.path.join(work, f"in.b{b}.npy")
        np.save(paths[b], x)
    return paths


def check(got_path, ref_path):
    if not os.path.exists(got_path):
        return "no output"
    _, rel, bad = zoo.compare(np.load(got_path), np.load(ref_path))
    return bad or f"ok {rel:.1e}"


def run_model(name, args):
    work = os.path.join(args.work, name.replace("+", "_"))
    os.makedirs(work, exist_ok=True)
    res = {"name": name, "threads": args.threads, "rounds": args.rounds, "runs": args.runs,
           "load_before": os.getloadavg()[0], "compile_s": {}, "rss_mb": {}, "check": {},
           "times": {}}
    if not os.path.exists(os.path.join(work, "m.onnx")):
        subprocess.run([sys.executable, os.path.join(HERE, "zoo.py"), "--export-worker", name,
                        work, "pt2,onnx"], check=True, timeout=args.export_timeout,
                       capture_output=True)
    inputs = sorted(f for f in os.listdir(work) if f.startswith("in") and f.endswith(".b1.npy"))
    if len(inputs) != 1:
        sys.exit(f"speed: {name}: only single-input models are timed here ({work} holds {', '.join(inputs)})")
    tg, so = os.path.join(work, "m.tg"), os.path.join(work, "m.so")
    res["compile_s"]["texport"] = round(timed([tool(args, "texport"),
                                               os.path.join(work, "m.pt2"), "-o", tg], 900), 2)
    res["compile_s"][SO] = round(timed([tool(args, "tcompile"), tg, "-o", so], 900), 2)
    sos = {SO: so}
    if args.baseline:
        sos[BASE] = os.path.join(work, "baseline.so")
        env = dict(os.environ, TGRAPH_RUNTIME_DIR=args.baseline)
        res["compile_s"][BASE] = round(timed([os.path.join(args.baseline, "tools", "tcompile"),
                                              tg, "-o", sos[BASE]], 900, env), 2)
    inputs = make_inputs(work, args.batches, "eager" not in args.engines)
    servers = [Server(args, work, e, list(inputs.values())) for e in args.engines]
    servers = [s for s in servers if s.name]
    eager = next((s for s in servers if s.name == "torch-eager"), None)
    for b, x in inputs.items():
        ref, have_ref = os.path.join(work, f"ref.b{b}.npy"), True
        if eager:
            eager.ask("save", eager.name, x, ref)
        elif x.endswith(f"in0.b{b}.npy"):
            ref = os.path.join(work, f"out0.b{b}.npy")
        elif servers:
            # no eager output at this batch: the first other engine's output is
            # the reference, so every engine is still checked against one
            ref = os.path.join(work, f"{servers[0].name}.b{b}.npy")
            servers[0].ask("save", servers[0].name, x, ref)
        else:
            have_ref = False
        for t, path in sos.items():
            got = path[:-3] + f".b{b}.npy"
            subprocess.run([tool(args, "trun"), path, x, "-o", got, f"--threads={args.threads}"],
                           capture_output=True)
            res["check"][f"{t} b{b}"] = check(got, ref) if have_ref else "no reference"
        for s in servers:
            got = os.path.join(work, f"{s.name}.b{b}.npy")
            s.ask("save", s.name, x, got)
            res["check"][f"{s.name} b{b}"] = check(got, ref) if have_ref else "no reference"
    turns = list(sos) + [s.name for s in servers]
    res["others"], res["retries"], res["ratios"] = {}, 0, {}
    for b, x in inputs.items():
        rounds = {t: [] for t in turns}
        seen = []           # (others' cores, stolen) of the accepted turns
        for r in range(args.rounds):
            for i in range(len(turns)):
                t = turns[(r + i) % len(turns)]
                for attempt in range(args.retries + 1):
                    if t in sos:
                        med, p90, rss, busy = trun_bench(args, sos[t], x)
                        res["rss_mb"][t] = max(res["rss_mb"].get(t, 0), round(rss))
                        got = (med, p90)
                    else:
                        reply, busy = next(s for s in servers if s.name == t).timed(
                            x, args.runs, args.warmup)
                        got = ((float(reply[2]), float(reply[3]))
                               if len(reply) >= 4 and reply[2] != "-" else None)
                    if max(busy) <= args.quiet or attempt == args.retries:
                        break
                    res["retries"] += 1
                seen.append(busy)
                rounds[t].append(got)
        res["others"][f"b{b}"] = [round(max(o for o, _ in seen), 3),
                                  round(max(st for _, st in seen), 3)]
        ok = {t for t in turns if t not in sos and
              res["check"].get(f"{t} b{b}", "").startswith("ok")}
        per_round = [rounds[SO][r][0] / min(rounds[t][r][0] for t in ok if rounds[t][r])
                     for r in range(args.rounds)
                     if SO in rounds and any(rounds[t][r] for t in ok)]
        if per_round:
            res["ratios"][f"b{b}"] = round(statistics.median(per_round), 4)
        res["times"][f"b{b}"] = {t: [statistics.median(m for m, _ in v),
                                     statistics.median(p for _, p in v)]
                                 for t, v in ((t, [g for g in v if g]) for t, v in rounds.items())
                                 if v}
    for s in servers:
        st = s.ask("stats", s.name)
        res["compile_s"][s.name] = float(st[2])
        res["rss_mb"][s.name] = float(st[3])
        s.close()
    res["load_after"] = os.getloadavg()[0]
    with open(os.path.join(work, "speed.json"), "w") as f:
        json.dump(res, f, indent=1)
    return res


def write_table(args, results):
    engines = [SO] + ([BASE] if any(BASE in r["compile_s"] for r in results) else []) + \
        [ENGINES[e] for e in ENGINES]
    lines = ["# Model zoo: speed on the CPU", "",
             "Written by bench/zoo/speed.py: tgraph's .so (tcompile) against ONNX Runtime,",
             "OpenVINO (CPU, f32 hint), torch eager, torch.compile and AOTInductor, each in its",
             "own process, interleaved in rounds (order rotating). A cell: median over the",
             "rounds of each round's median latency in ms, its p90 after the slash, and",
             "(tgraph's row) the ratio to the fastest other engine. Outputs checked against",
             "torch eager, or where eager did not run at a batch the first other engine",
             "(max rel error <= 1e-4); `!` marks an engine that failed the check.",
             "The ratio is the median over the rounds of each round's own ratio.",
             "Others: CPU time other processes took during a turn (or the host stole), in",
             "cores; turns above --quiet were rerun (--retries).",
             "Peak RSS: the engine's process (MB). Compile: tcompile, or the engine's",
             "set-up (session, compilation, first run on each input). A loaded machine",
             "slows every engine alike only on average: compare ratios.", ""]
    for r in results:
        busy = "; ".join(f"{b}: others {o:.2f} cores, stolen {st:.2f}"
                         for b, (o, st) in r.get("others", {}).items())
        lines.append(f"- {r['name']}: {r['threads']} threads, {r['rounds']} rounds of "
                     f"{r['runs']} runs; load average {r['load_before']:.1f} before, "
                     f"{r['load_after']:.1f} after" +
                     (f"; the most other work in a turn ({busy}), "
                      f"{r.get('retries', 0)} turns rerun" if busy else ""))
    lines.append("")
    geo, base = {}, BASE in engines
    for batch in [f"b{b}" for b in args.batches]:
        lines += [f"## Batch {batch[1:]}", "",
                  "| model | " + " | ".join(engines) + " | tgraph / best other |" +
                  (" tgraph / baseline |" if base else ""),
                  "|---|" + "---:|" * (len(engines) + 1 + base)]
        for r in results:
            t = r["times"].get(batch, {})
            others = [v[0] for e, v in t.items() if e not in (SO, BASE) and
                      r["check"].get(f"{e} {batch}", "").startswith("ok")]
            ratio = r.get("ratios", {}).get(batch) or (
                t[SO][0] / min(others) if SO in t and others else None)
            if ratio:
                geo.setdefault(batch, []).append(ratio)
            cells = []
            for e in engines:
                if e not in t:
                    cells.append("-")
                    continue
                ok = r["check"].get(f"{e} {batch}", "").startswith("ok")
                cells.append(f"{t[e][0]:.2f} / {t[e][1]:.2f}" + ("" if ok else " !"))
            vs_base = f" {t[SO][0] / t[BASE][0]:.2f}x |" if SO in t and BASE in t else " - |"
            lines.append(f"| {r['name']} | " + " | ".join(cells) + " | " +
                         (f"{ratio:.2f}x" if ratio else "-") + " |" + (vs_base if base else ""))
        if batch in geo:
            g = math.exp(sum(math.log(x) for x in geo[batch]) / len(geo[batch]))
            lines += ["", f"**Geometric mean of tgraph / fastest other at batch {batch[1:]}: "
                      f"{g:.2f}x over {len(geo[batch])} models.**"]
        lines.append("")
    lines += ["## Compile time (s) and peak RSS (MB)", "",
              "| model | texport | " + " | ".join(engines) + " | " +
              " | ".join(f"RSS {e}" for e in engines) + " |",
              "|---|---:|" + "---:|" * (2 * len(engines))]
    for r in results:
        c, m = r["compile_s"], r["rss_mb"]
        lines.append(f"| {r['name']} | {c.get('texport', '-')} | " +
                     " | ".join(f"{c[e]:.1f}" if e in c else "-" for e in engines) + " | " +
                     " | ".join(f"{m[e]:.0f}" if e in m else "-" for e in engines) + " |")
    with open(os.path.join(args.work, "SPEED.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


def main():
    from models import ZOO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "..", "tools"))
    ap.add_argument("--work", default="zoo-work")
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batches", default="1,8")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--runs", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=10)
    ap.add_argument("--engines", default=",".join(ENGINES),
                    help="comma list of " + ", ".join(ENGINES))
    ap.add_argument("--export-timeout", type=int, default=900)
    ap.add_argument("--baseline", help="another tgraph build directory, timed beside")
    ap.add_argument("--quiet", type=float, default=0.1,
                    help="cores other processes may take during a turn before it is rerun")
    ap.add_argument("--retries", type=int, default=2, help="reruns of a turn that was not quiet")
    ap.add_argument("models", nargs="+")
    args = ap.parse_args()
    args.batches = [int(b) for b in args.batches.split(",")]
    args.engines = args.engines.split(",")
    if not set(args.engines) <= set(ENGINES) or any(m not in ZOO for m in args.models):
        sys.exit(f"speed: engines are {', '.join(ENGINES)}; models {', '.join(ZOO)}")
    for m in args.models:
        r = run_model(m, args)
        print(f"{m}: " + "; ".join(f"{b} " + ", ".join(f"{e} {v[0]:.2f}" for e, v in t.items())
                                   for b, t in r["times"].items()), flush=True)
    results = []
    for d in sorted(os.listdir(args.work)):
        p = os.path.join(args.work, d, "speed.json")
        if os.path.exists(p):
            with open(p) as f:
                results.append(json.load(f))
    order = list(ZOO)
    results.sort(key=lambda r: order.index(r["name"]) if r["name"] in order else len(order))
    write_table(args, results)


if __name__ == "__main__":
    main()
