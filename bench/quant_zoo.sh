#!/bin/sh
# int8 against float32 on zoo models (bench/zoo): each exported model's
# graph quantized with `tquant --calib` (static, minmax) on random inputs of
# the zoo's kind, both compiled, then timed side by side and compared.
#
#   bench/quant_zoo.sh BUILD_DIR WORK [MODEL...]
#
# WORK holds the zoo's exports (zoo.py --export-only --formats pt2 --work
# WORK: WORK/M/m.pt2 and its batch-1 input in0.b1.npy). Default models:
# resnet18 resnet50 mobilenet_v2 efficientnet_b0 vit_tiny bert.
# Calibration: CALIB (default 16) inputs drawn like the zoo's (images
# standard normal, token ids uniform); accuracy on EVAL (default 8) other
# inputs: top-1 agreement of the int8 .so with the float .so (argmax over
# the last axis, every row) and the max abs error over max|float output|.
# Timing: `trun --bench=RUNS --threads THREADS` (default 20, 2) at batch
# 1 and 8, the float and the int8 .so in turn, ROUNDS times (default 3);
# the best over rounds of each run's minimum (on a shared machine the
# fastest run is the one least slowed by others; STAT=median takes the
# median over rounds of each run's median instead; STAT=cpu the CPU time a
# run, user and system, of RUNS + 1 runs less that of 1 (the least over
# rounds): under others' load the fastest wall-clock run can still be a
# slowed one, CPU time much less so; with THREADS=1 it is the one-core
# cost). Needs NumPy at $PYTHON.
# Writes a Markdown table on stdout.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "$1" && pwd)
work=$(cd "$2" && pwd)
shift 2
T=$build/tools
PYTHON=${PYTHON:-/work/venv/bin/python3}
STAT=${STAT:-min} ROUNDS=${ROUNDS:-3} RUNS=${RUNS:-20} THREADS=${THREADS:-2} CALIB=${CALIB:-16} EVAL=${EVAL:-8}
export TGRAPH_RUNTIME_DIR=${TGRAPH_RUNTIME_DIR:-$build}
export TGRAPH_INCLUDE_DIR=${TGRAPH_INCLUDE_DIR:-$src/include}
models=${*:-resnet18 resnet50 mobilenet_v2 efficientnet_b0 vit_tiny bert}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# inputs LIKE DIR COUNT SEED BATCH: COUNT inputs shaped like LIKE (an .npy
# of batch 1) with batch BATCH, DIR/s0000.npy ...
inputs() {
    "$PYTHON" - "$@" <<'PY'
import os, sys, numpy as np
like, d, n, seed, batch = sys.argv[1], sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
ref = np.load(like)
os.makedirs(d, exist_ok=True)
g = np.random.default_rng(seed)
shape = (batch,) + ref.shape[1:]
for i in range(n):
    if ref.dtype.kind == "f":
        a = g.standard_normal(shape).astype(ref.dtype)
    else:       # token ids, as bench/zoo/models.py draws them
        a = g.integers(3, 1000, shape).astype(ref.dtype)
    np.save(os.path.join(d, "s%04d.npy" % i), a)
PY
}

# accuracy DIR: top-1 agreement and max error of DIR/q*.npy against DIR/f*.npy
accuracy() {
    "$PYTHON" - "$1" "$EVAL" <<'PY'
import sys, numpy as np
d, n = sys.argv[1], int(sys.argv[2])
same = rows = 0
err = mag = 0.0
for i in range(n):
    f, q = np.load("%s/f%d.npy" % (d, i)), np.load("%s/q%d.npy" % (d, i))
    f2, q2 = f.reshape(-1, f.shape[-1]), q.reshape(-1, q.shape[-1])
    same += int((f2.argmax(1) == q2.argmax(1)).sum())
    rows += f2.shape[0]
    err = max(err, float(np.abs(f - q).max()))
    mag = max(mag, float(np.abs(f).max()))
print("%d/%d | %.3g | %.3g" % (same, rows, err, err / mag))
PY
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# cpu_ms MODEL INPUT: CPU ms a run (trun's rusage as a child, RUNS + 1
# runs less 1: loading and the first run cancel)
cpu_ms() {
    "$PYTHON" - "$T/trun" "$1" "$2" "$THREADS" "$RUNS" <<'PY'
import resource, subprocess, sys
trun, model, x, threads, runs = sys.argv[1:6]
def cpu(n):
    a = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run([trun, model, x, "--threads", threads, "--warmup=0", "--bench=%d" % n],
                   check=True, capture_output=True)
    b = resource.getrusage(resource.RUSAGE_CHILDREN)
    return b.ru_utime + b.ru_stime - a.ru_utime - a.ru_stime
print("%.3f" % ((cpu(1 + int(runs)) - cpu(1)) * 1000 / int(runs)))
PY
}

latency() {
    if [ "$STAT" = cpu ]; then cpu_ms "$1" "$2"; return; fi
    "$T/trun" "$1" "$2" --threads "$THREADS" --warmup=200ms --bench="$RUNS" 2>&1 |
        sed -n "s/.* $STAT \([0-9.]*\) ms.*/\1/p"
}

# the best (min, cpu) or the median of numbers on stdin
pick() { if [ "$STAT" = median ]; then median; else sort -g | head -1; fi; }

echo "| model | top-1 same | max abs error | / max abs output | b1 f32 ms | b1 int8 ms | b1 speed-up | b8 f32 ms | b8 int8 ms | b8 speed-up |"
echo "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"
for m in $models; do
    like=$work/$m/in0.b1.npy
    "$T/texport" "$work/$m/m.pt2" -o "$tmp/$m.tg"
    inputs "$like" "$tmp/cal-$m" "$CALIB" 100 1
    inputs "$like" "$tmp/eval-$m" "$EVAL" 200 1
    inputs "$like" "$tmp/b8-$m" 1 300 8
    "$T/tquant" -q --calib "$tmp/cal-$m" "$tmp/$m.tg" -o "$tmp/$m.q.tg"
    "$T/tcompile" "$tmp/$m.tg" -o "$tmp/$m.so"
    "$T/tcompile" "$tmp/$m.q.tg" -o "$tmp/$m.q.so"
    mkdir -p "$tmp/out-$m"
    i=0
    while [ "$i" -lt "$EVAL" ]; do
        x=$tmp/eval-$m/$(printf 's%04d.npy' "$i")
        "$T/trun" "$tmp/$m.so" "$x" -o "$tmp/out-$m/f$i.npy"
        "$T/trun" "$tmp/$m.q.so" "$x" -o "$tmp/out-$m/q$i.npy"
        i=$((i + 1))
    done
    row="| $m | $(accuracy "$tmp/out-$m")"
    for b in 1 8; do
        x=$tmp/eval-$m/s0000.npy
        [ "$b" = 8 ] && x=$tmp/b8-$m/s0000.npy
        : >"$tmp/f" && : >"$tmp/q"
        r=0
        while [ "$r" -lt "$ROUNDS" ]; do
            latency "$tmp/$m.so" "$x" >>"$tmp/f"
            latency "$tmp/$m.q.so" "$x" >>"$tmp/q"
            r=$((r + 1))
        done
        f=$(pick <"$tmp/f") q=$(pick <"$tmp/q")
        row="$row | $f | $q | $(awk -v f="$f" -v q="$q" 'BEGIN { printf "%.2fx", f / q }')"
    done
    echo "$row |"
done
