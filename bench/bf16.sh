#!/usr/bin/env bash
# bench/bf16.sh: tcompile --dtype fp32 against --dtype bf16 on the same graph,
# side by side in one run: both .so built from GRAPH, then ROUNDS rounds of
# trun --bench on each in turn (the first alternating each round), so that the
# other load on the machine hits both alike. Prints each round's medians (ms),
# the median over rounds of each, their ratio, and the bf16 model's max abs
# error against the fp32 one on the same input. Timings only: callgrind
# cannot count the bf16 model (valgrind runs neither AMX nor AVX512_BF16, so
# it would count the portable path).
#
#   bench/bf16.sh GRAPH INPUT.npy... [-r ROUNDS] [-n RUNS] [-t THREADS] [-T TOOLS]
set -euo pipefail

top=$(cd "$(dirname "$0")/.." && pwd)
rounds=7 runs=5 threads=2 tools=$top/tools
[ $# -ge 2 ] || { echo "usage: bench/bf16.sh GRAPH INPUT.npy... [-r ROUNDS] [-n RUNS] [-t THREADS] [-T TOOLS]" >&2; exit 2; }
graph=$1
shift
inputs=()
while [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; do inputs+=("$1"); shift; done
while getopts r:n:t:T: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    n) runs=$OPTARG ;;
    t) threads=$OPTARG ;;
    T) tools=$OPTARG ;;
    *) exit 2 ;;
    esac
done
work=$(mktemp -d "${TMPDIR:-/tmp}/bf16.XXXXXX")
trap 'rm -rf "$work"' EXIT
export TGRAPH_RUNTIME_DIR=${TGRAPH_RUNTIME_DIR:-$(cd "$tools/.." && pwd)}

for d in fp32 bf16; do
    "$tools/tcompile" --dtype $d -o "$work/$d.so" "$graph"
done
"$tools/trun" "$work/fp32.so" "${inputs[@]}" -o "$work/fp32.npy"
err=$("$tools/trun" "$work/bf16.so" "${inputs[@]}" --check "$work/fp32.npy" --rtol 0 --atol 1e9 2>&1 |
      grep -o 'max abs error [^,]*' | head -n 1)

median() { sort -g | awk '{v[NR] = $1} END {print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2}'; }
bench() {   # the median ms of one trun --bench
    "$tools/trun" --threads "$threads" --bench "$runs" "$work/$1.so" "${inputs[@]}" -o /dev/null 2>&1 |
        grep -o 'median [0-9.]*' | cut -d' ' -f2
}
: >"$work/fp32.ms"
: >"$work/bf16.ms"
for ((r = 0; r < rounds; r++)); do
    order="fp32 bf16"
    [ $((r % 2)) = 1 ] && order="bf16 fp32"
    line="round $r:"
    for d in $order; do
        ms=$(bench $d)
        echo "$ms" >>"$work/$d.ms"
        line="$line $d $ms"
    done
    echo "$line"
done
f=$(median <"$work/fp32.ms") b=$(median <"$work/bf16.ms")
echo "$(basename "$graph"): fp32 $f ms, bf16 $b ms (medians of $rounds rounds of $runs runs," \
     "$threads threads): fp32/bf16 $(awk -v f="$f" -v b="$b" 'BEGIN {printf "%.2f", f / b}');" \
     "bf16 vs fp32 $err"
