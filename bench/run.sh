#!/usr/bin/env bash
# bench/run.sh: the compiled .so (tcompile) side by side with the interpreter
# (trun on the graph), ONNX Runtime CPU and PyTorch CPU (eager, torch.compile,
# AOTInductor) on the fixture models at batch 1, 3 and 64, every engine on the
# same number of threads. Prints, for each case and engine, the median over
# the rounds of each round's median latency, and its ratio to the .so's, as a
# Markdown table (bench/RESULTS.md keeps one).
#
#   bench/run.sh [-t THREADS] [-n RUNS] [-w WARMUP] [-r ROUNDS]
#                [-m "mlp cnn tinygpt"] [-b "1 3 64"] [-e ENGINES]
#
# ROUNDS (default 5): this VM's speed drifts by up to 2x over tens of seconds,
# so a case's engines are not timed one block after another: each round runs
# every engine on the case in turn, WARMUP untimed runs then RUNS timed ones
# (default 20), starting one engine further along each round, so that drift
# hits all engines alike. The .so and the interpreter are one trun process a
# round; the Python engines live in one bench/frameworks.py --serve a model,
# set up (imports, sessions, torch.compile's compilations) before the model's
# first round; it pauses after each turn until its idle threads stop spinning.
#
# WARMUP: untimed runs before the timed ones, for the Python engines (default
# 10: thread pools and caches settle). A trun process is new each round: it
# warms up for TRUN_SETTLE instead, past what a new process does in its first
# ~0.1 s and the long-lived Python engines did before their first round
# (OpenBLAS's idle thread spins, new threads move between cores: a
# fraction-of-a-millisecond model's 30 runs fell entirely in that time, at up
# to 2.5x its steady latency).
#
# ENGINES: comma list of ort,eager,compile,aoti (default all).
# Environment: PYTHON, a Python with torch and onnxruntime (default python3);
# TG_BUILD, a configured tgraph build tree (default .bench/build, configured
# and built here on first use).
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
threads=$(nproc)
runs=20
warmup=10
rounds=5
models="mlp cnn tinygpt"
batches="1 3 64"
engines=ort,eager,compile,aoti
while getopts t:n:w:r:m:b:e: opt; do
    case $opt in
    t) threads=$OPTARG ;;
    n) runs=$OPTARG ;;
    w) warmup=$OPTARG ;;
    r) rounds=$OPTARG ;;
    m) models=$OPTARG ;;
    b) batches=$OPTARG ;;
    e) engines=$OPTARG ;;
    *) echo "usage: bench/run.sh [-t THREADS] [-n RUNS] [-w WARMUP] [-r ROUNDS] [-m MODELS] [-b BATCHES] [-e ENGINES]" >&2
       exit 2 ;;
    esac
done
py=${PYTHON:-python3}
build=${TG_BUILD:-$top/.bench/build}
work=$top/.bench/work
fix=$top/tests/fixtures
mkdir -p "$work"

if [ ! -x "$build/tools/tcompile" ]; then
    echo "bench: building tgraph in $build" >&2
    (cd "$top" && { [ -f configure ] || autoreconf -fi >/dev/null; })
    mkdir -p "$build"
    (cd "$build" && "$top/configure" -q &&
        make -j"$(nproc)" tools/texport tools/tcompile tools/trun libtgkernels.a >/dev/null)
fi
export TGRAPH_RUNTIME_DIR=$build
T=$build/tools

TRUN_SETTLE=0.5s

# median milliseconds from trun --bench's report
trun_median() {
    "$T/trun" "$@" --bench="$runs" --warmup="$TRUN_SETTLE" --threads="$threads" -o /dev/null 2>&1 |
        sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}

# one engine's turn on input $2 of model $m: a line "ENGINE INPUT MEDIAN_MS"
# (or "ENGINE INPUT - REASON" from frameworks.py; no median if trun failed)
turn() {
    case $1 in
    so) echo "$1 $2 $(trun_median "$work/$m.so" "$2")" ;;
    interpreter) echo "$1 $2 $(trun_median "$work/$m.tg" "$2")" ;;
    *)
        # once a request fails, frameworks.py is gone: ask it nothing more
        if [ -n "$fw_in" ] && echo "$1 $2 $runs $warmup" >&"$fw_in" && read -r reply <&"$fw_out"; then
            echo "$reply"
        else
            fw_in=
            echo "$1 $2 - frameworks.py stopped"
        fi ;;
    esac
}

results=$work/results.txt
: >"$results"
# inputs like the fixtures', at each batch: floats N(0,1), token ids in their
# range; all made before any timing (a trun started right after a Python
# process ran up to 2x slow here for its whole life)
for m in $models; do
    for b in $batches; do
        "$py" -c '
import sys, numpy as np
ref = np.load(sys.argv[1]); b = int(sys.argv[2]); rng = np.random.default_rng(b)
shape = (b,) + ref.shape[1:]
x = (rng.integers(0, int(ref.max()) + 1, shape) if ref.dtype.kind in "iu"
     else rng.standard_normal(shape)).astype(ref.dtype)
np.save(sys.argv[3], x)' "$fix/$m.in0.b1.npy" "$b" "$work/$m.in.b$b.npy"
    done
done
for m in $models; do
    "$T/texport" "$fix/$m.pt2" -o "$work/$m.tg"
    t0=$(date +%s.%N)
    "$T/tcompile" "$work/$m.tg" -o "$work/$m.so"
    t1=$(date +%s.%N)
    echo "compile $m $(echo "$t1 - $t0" | bc)" >>"$results"
    ins=()
    for b in $batches; do
        ins+=("$work/$m.in.b$b.npy")
    done
    coproc FW { exec "$py" "$top/bench/frameworks.py" --serve --pt2 "$fix/$m.pt2" --onnx "$fix/$m.onnx" \
        --threads "$threads" --aoti-dir "$work" --engines "$engines" "${ins[@]}" 2>"$work/$m.frameworks.log"; }
    fw_out=${FW[0]} fw_in=${FW[1]} fw_pid=$FW_PID
    # the first line names its engines once they are set up: no timing before
    engs=(so interpreter)
    if read -ra ready <&"$fw_out" && [ "${ready[0]-}" = ready ]; then
        engs+=("${ready[@]:1}")
    else
        echo "bench: $m: frameworks.py failed, see $work/$m.frameworks.log" >&2
    fi
    for x in "${ins[@]}"; do
        for ((r = 0; r < rounds; r++)); do
            for ((i = 0; i < ${#engs[@]}; i++)); do
                turn "${engs[(r + i) % ${#engs[@]}]}" "$x" >>"$results"
            done
        done
    done
    [ -z "$fw_in" ] || exec {fw_in}>&-
    wait "$fw_pid" || echo "bench: $m: frameworks.py exited $?, see $work/$m.frameworks.log" >&2
done

# the table: one row per model and batch, each engine's median over the
# rounds and its ratio to the .so's
awk -v models="$models" -v batches="$batches" -v threads="$threads" -v runs="$runs" \
    -v rounds="$rounds" '
$1 == "compile" { comp[$2] = $3; next }
{
    n = split($2, p, "/"); f = p[n]; sub(/\.npy$/, "", f)
    split(f, q, "."); key = q[1] " " substr(q[3], 2)
    if ($3 != "" && $3 != "-") v[key, $1, ++nv[key, $1]] = $3
    if (!($1 in seen)) { seen[$1] = 1; order[++ne] = $1 }
}
# median of the rounds of engine e on case key, "" if none
function median(key, e,    n, i, j, x, s) {
    n = nv[key, e]
    for (i = 1; i <= n; i++) {
        x = v[key, e, i] + 0
        for (j = i - 1; j >= 1 && s[j] > x; j--) s[j + 1] = s[j]
        s[j + 1] = x
    }
    return n == 0 ? "" : n % 2 ? s[(n + 1) / 2] : (s[n / 2] + s[n / 2 + 1]) / 2
}
END {
    printf "threads %d; median over %d rounds (engines in turn, order rotating) of the round'"'"'s median of %d runs (ms); in parentheses: time / .so time\n\n", threads, rounds, runs
    printf "| model | batch |"; for (i = 1; i <= ne; i++) printf " %s |", order[i]; printf "\n"
    printf "|---|---:|"; for (i = 1; i <= ne; i++) printf "---:|"; printf "\n"
    nm = split(models, M, " "); nb = split(batches, B, " ")
    for (a = 1; a <= nm; a++) for (b = 1; b <= nb; b++) {
        key = M[a] " " B[b]; so = median(key, "so")
        printf "| %s | %s |", M[a], B[b]
        for (i = 1; i <= ne; i++) {
            t = median(key, order[i])
            if (t == "") printf " - |"
            else if (order[i] == "so" || so == "") printf " %.3f |", t
            else printf " %.3f (%.2fx) |", t, t / so
        }
        printf "\n"
    }
    printf "\ntcompile time (s):"
    for (a = 1; a <= nm; a++) printf " %s %.2f", M[a], comp[M[a]]
    printf "\n"
}' "$results"
