#!/usr/bin/env bash
# bench/ab.sh: two tgraph builds side by side, before and after a change, on
# bench/run.sh's fixture models and batches: the compiled .so and the
# interpreter, each build's trun --bench in turn (A B A B ..., the first
# alternating each round), so that this VM's drift and the other load hit
# both alike. Prints per case the median over the rounds of each build's
# round median (ms) and B/A; then, deterministic, the instructions of a trun
# process under callgrind (the model loaded, 11 runs on one thread), and B/A.
#
#   bench/ab.sh BUILD_A BUILD_B [-r ROUNDS] [-n RUNS] [-t THREADS]
#               [-m "mlp cnn tinygpt"] [-b "1 3 64"] [-i "1 3"] [-c]
#
# BUILD_A, BUILD_B: configured and built trees (tools/texport, tools/tcompile,
# tools/trun, libtgkernels.a). Each build exports and compiles the models
# itself. -i: the batches counted under callgrind (it runs ~50x slower than
# the CPU); -c: callgrind only.
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
[ $# -ge 2 ] || { echo "usage: bench/ab.sh BUILD_A BUILD_B [-r ROUNDS] [-n RUNS] [-t THREADS] [-m MODELS] [-b BATCHES] [-i BATCHES] [-c]" >&2; exit 2; }
A=$(cd "$1" && pwd) B=$(cd "$2" && pwd)
shift 2
rounds=7 runs=20 threads=$(nproc) models="mlp cnn tinygpt" batches="1 3 64" ibatches="1 3"
timing=1
while getopts r:n:t:m:b:i:c opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    n) runs=$OPTARG ;;
    t) threads=$OPTARG ;;
    m) models=$OPTARG ;;
    b) batches=$OPTARG ;;
    i) ibatches=$OPTARG ;;
    c) timing= ;;
    *) exit 2 ;;
    esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/ab.XXXXXX")
trap 'rm -rf "$work"' EXIT
fix=$top/tests/fixtures

# per build and model: the graph and the .so (same source graph, each build's tools)
for side in A B; do
    build=${!side}
    for m in $models; do
        "$build/tools/texport" "$fix/$m.pt2" -o "$work/$side.$m.tg"
        TGRAPH_RUNTIME_DIR=$build "$build/tools/tcompile" "$work/$side.$m.tg" -o "$work/$side.$m.so"
    done
done
# the batch symbol: the graph's first (its header's JSON, escaped in a string)
sym() {
    head -c 65536 "$work/A.$1.tg" | tr -d '\\' | grep -ao '"symbols":\[{"name":"[^"]*' | head -1 | sed 's/.*"//'
}

median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

if [ -n "$timing" ]; then
    res=$work/times.txt
    : >"$res"
    for m in $models; do
        s=$(sym "$m")
        for b in $batches; do
            for kind in so tg; do
                for ((r = 0; r < rounds; r++)); do
                    order="A B"
                    [ $((r % 2)) -eq 1 ] && order="B A"
                    for side in $order; do
                        build=${!side}
                        t=$(TGRAPH_RUNTIME_DIR=$build "$build/tools/trun" "$work/$side.$m.$kind" --random \
                            --dim "$s=$b" --bench="$runs" --warmup=0.3s --threads="$threads" -o /dev/null 2>&1 |
                            sed -n 's/.*median \([0-9.]*\) ms.*/\1/p')
                        echo "$m $b $kind $side $t" >>"$res"
                    done
                done
            done
        done
    done
    echo "threads $threads; median over $rounds rounds (A and B in turn) of each round's median of $runs runs (ms)"
    echo
    echo "| model | batch | path | A | B | B/A |"
    echo "|---|---:|---|---:|---:|---:|"
    for m in $models; do
        for b in $batches; do
            for kind in so tg; do
                a=$(awk -v m="$m" -v b="$b" -v k="$kind" '$1 == m && $2 == b && $3 == k && $4 == "A" { print $5 }' "$res" | median)
                bb=$(awk -v m="$m" -v b="$b" -v k="$kind" '$1 == m && $2 == b && $3 == k && $4 == "B" { print $5 }' "$res" | median)
                name=$([ "$kind" = so ] && echo ".so" || echo "interpreter")
                echo "| $m | $b | $name | $a | $bb | $(echo "$bb $a" | awk '{ printf "%.3f", $1 / $2 }') |"
            done
        done
    done
    echo
fi

# instructions of one trun process, 10 runs on one thread (Ir, callgrind)
ir() {
    local out=$work/cg.out
    TGRAPH_RUNTIME_DIR=$1 valgrind --tool=callgrind --callgrind-out-file="$out" \
        "$1/tools/trun" "$2" --random --dim "$3" --threads=1 --bench=10 --warmup=1 \
        -o /dev/null >/dev/null 2>&1
    callgrind_annotate "$out" 2>/dev/null | sed -n 's/^ *\([0-9,]*\) .*PROGRAM TOTALS.*/\1/p' | tr -d ,
}
echo "instructions of one trun process (load, 1 + 10 runs, one thread; callgrind Ir)"
echo
echo "| model | batch | path | A | B | B/A |"
echo "|---|---:|---|---:|---:|---:|"
for m in $models; do
    s=$(sym "$m")
    for b in $ibatches; do
        for kind in so tg; do
            a=$(ir "$A" "$work/A.$m.$kind" "$s=$b")
            bb=$(ir "$B" "$work/B.$m.$kind" "$s=$b")
            name=$([ "$kind" = so ] && echo ".so" || echo "interpreter")
            echo "| $m | $b | $name | $a | $bb | $(echo "$bb $a" | awk '{ printf "%.4f", $1 / $2 }') |"
        done
    done
done
