#!/usr/bin/env python3
"""The serial share of a compiled model's run at 2 threads, and Amdahl's
bound on its 1 -> 2 thread speed-up, measured on a loaded machine.

    python3 bench/zoo/serial_share.py [--tools DIR] [--runs N] [-n N] MODEL.so INPUT.npy

Runs `trun MODEL.so INPUT.npy --threads=2 --bench=N` under `perf record
--call-graph dwarf` and sorts each sample of the run: split work (a chunk of
a loop the thread pool shares, run_chunks on its stack, on either thread),
the caller's serial work (anything else on the caller's thread inside the
run: code between loops, and loops run inline because they are too small to
split) or waiting (the caller in tgk_parallel_for, a worker spinning or
asleep). A descheduled thread is not sampled, so the share does not depend
on the load. Serial share s = serial / (serial + split work); the bound is
1 / (s + (1 - s) / 2). Prints the counts, the share, the bound and the N
(default 8) commonest serial stacks. Needs perf (linux-perf) and a build
with symbols (the default -g).
"""
import argparse
import collections
import os
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))


def samples(script):
    """(thread id, [frames, innermost first]) of `perf script -F tid,ip,sym`"""
    tid, frames = None, None
    for line in script.splitlines():
        if not line.strip():
            if frames is not None:
                yield tid, frames
            frames = None
        elif not line[0].isspace():
            tid, frames = line.split()[0], []
        elif frames is not None:
            parts = line.split(None, 1)
            frames.append(parts[1].strip() if len(parts) > 1 else "?")
    if frames is not None:
        yield tid, frames


def classify(stacks):
    """counts by kind, and the caller's serial stacks"""
    caller = collections.Counter(t for t, _ in stacks).most_common(1)[0][0]
    kinds, serial = collections.Counter(), collections.Counter()
    for t, s in stacks:
        split = any("run_chunks" in f for f in s)
        if t != caller:
            kinds["worker: split work" if split else "worker: waiting"] += 1
        elif not any("tgrt_run" in f for f in s):
            kinds["caller: outside the run"] += 1
        elif split:
            kinds["caller: split work"] += 1
        elif s[0].startswith("tgk_parallel_for") or "cpu_relax" in s[0]:
            kinds["caller: waiting"] += 1
        else:
            kinds["caller: serial work"] += 1
            serial[" < ".join(s[:4])] += 1
    return kinds, serial


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tools", default=os.path.join(HERE, "..", "..", "tools"))
    ap.add_argument("--runs", type=int, default=5)
    ap.add_argument("-n", type=int, default=8)
    ap.add_argument("model")
    ap.add_argument("input")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        data = os.path.join(tmp, "perf.data")
        subprocess.run(["perf", "record", "-q", "-F", "999", "--call-graph", "dwarf,16384",
                        "-o", data, os.path.join(args.tools, "trun"), args.model, args.input,
                        "-o", "/dev/null", "--threads=2", f"--bench={args.runs}",
                        "--warmup=1"], check=True)
        script = subprocess.run(["perf", "script", "-i", data, "-F", "tid,ip,sym"],
                                capture_output=True, text=True, check=True).stdout
    kinds, serial = classify(list(samples(script)))
    total = sum(kinds.values())
    for k in sorted(kinds):
        print(f"{k:28s} {kinds[k]:7d} {100 * kinds[k] / total:5.1f}%")
    work = kinds["caller: split work"] + kinds["worker: split work"]
    s = kinds["caller: serial work"] / max(1, kinds["caller: serial work"] + work)
    print(f"serial share {100 * s:.1f}%, 2-thread bound {1 / (s + (1 - s) / 2):.2f}x")
    for stack, n in serial.most_common(args.n):
        print(f"{n:5d}  {stack}")


if __name__ == "__main__":
    sys.exit(main())
