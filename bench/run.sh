#!/usr/bin/env bash
# bench/run.sh: the compiled .so (tcompile) side by side with the interpreter
# (trun on the graph), ONNX Runtime CPU and PyTorch CPU (eager, torch.compile,
# AOTInductor) on the fixture models at batch 1, 3 and 64, every engine on the
# same number of threads. Prints the median latency of each case and its ratio
# to the .so's, as a Markdown table (bench/RESULTS.md keeps one).
#
#   bench/run.sh [-t THREADS] [-n RUNS] [-w WARMUP] [-m "mlp cnn tinygpt"]
#                [-b "1 3 64"] [-e ENGINES]
#
# WARMUP: untimed runs before the timed ones, for every engine (default 10:
# thread pools and caches settle, and a fraction-of-a-millisecond model's 3
# warm-up runs were over before the first thread had started spinning).
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
models="mlp cnn tinygpt"
batches="1 3 64"
engines=ort,eager,compile,aoti
while getopts t:n:w:m:b:e: opt; do
    case $opt in
    t) threads=$OPTARG ;;
    n) runs=$OPTARG ;;
    w) warmup=$OPTARG ;;
    m) models=$OPTARG ;;
    b) batches=$OPTARG ;;
    e) engines=$OPTARG ;;
    *) echo "usage: bench/run.sh [-t THREADS] [-n RUNS] [-w WARMUP] [-m MODELS] [-b BATCHES] [-e ENGINES]" >&2
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

# median milliseconds from trun --bench's report
trun_median() {
    "$T/trun" "$@" --bench="$runs" --warmup="$warmup" --threads="$threads" -o /dev/null 2>&1 |
        sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
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
        echo "so $work/$m.in.b$b.npy $(trun_median "$work/$m.so" "$work/$m.in.b$b.npy")" >>"$results"
        echo "interpreter $work/$m.in.b$b.npy $(trun_median "$work/$m.tg" "$work/$m.in.b$b.npy")" \
            >>"$results"
    done
    "$py" "$top/bench/frameworks.py" --pt2 "$fix/$m.pt2" --onnx "$fix/$m.onnx" \
        --threads "$threads" --runs "$runs" --warmup "$warmup" --aoti-dir "$work" --engines "$engines" \
        "${ins[@]}" >>"$results" 2>"$work/$m.frameworks.log" ||
        echo "bench: $m: frameworks.py failed, see $work/$m.frameworks.log" >&2
done

# the table: one row per model and batch, each engine's median and ratio to the .so
awk -v models="$models" -v batches="$batches" -v threads="$threads" -v runs="$runs" '
$1 == "compile" { comp[$2] = $3; next }
{
    n = split($2, p, "/"); f = p[n]; sub(/\.npy$/, "", f)
    split(f, q, "."); key = q[1] " " substr(q[3], 2)
    t[key, $1] = $3
    if (!($1 in seen)) { seen[$1] = 1; order[++ne] = $1 }
}
END {
    printf "threads %d, median of %d runs (ms); in parentheses: time / .so time\n\n", threads, runs
    printf "| model | batch |"; for (i = 1; i <= ne; i++) printf " %s |", order[i]; printf "\n"
    printf "|---|---:|"; for (i = 1; i <= ne; i++) printf "---:|"; printf "\n"
    nm = split(models, M, " "); nb = split(batches, B, " ")
    for (a = 1; a <= nm; a++) for (b = 1; b <= nb; b++) {
        key = M[a] " " B[b]; so = t[key, "so"]
        printf "| %s | %s |", M[a], B[b]
        for (i = 1; i <= ne; i++) {
            v = t[key, order[i]]
            if (v == "" || v == "-") printf " - |"
            else if (order[i] == "so" || so == "") printf " %.3f |", v
            else printf " %.3f (%.2fx) |", v, v / so
        }
        printf "\n"
    }
    printf "\ntcompile time (s):"
    for (a = 1; a <= nm; a++) printf " %s %.2f", M[a], comp[M[a]]
    printf "\n"
}' "$results"
