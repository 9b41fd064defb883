#!/bin/sh
# What TLOG costs when it is off: the same models run by the interpreter and
# as compiled .so files, with logging compiled in (TLOG unset) and compiled
# out (-DTG_LOG_DISABLE: every TG_LOG a constant 0, the .so's per-kernel
# profile checks gone).
#
#   usage: bench/tlog_cost.sh ON_BUILD OFF_BUILD [ROUNDS]
#
# ON_BUILD is an ordinary build tree; OFF_BUILD one configured with
#   .../configure CPPFLAGS=-DTG_LOG_DISABLE
# The compiled pair comes from ON_BUILD's tcompile, with CC plain and with
# CC="cc -DTG_LOG_DISABLE". Each round runs every pair once, in alternating
# order (the machine's cores are shared), as `trun --bench` on one thread,
# each bench's latency taken as its mean (from its runs/s: trun's median has
# only microsecond digits). Load on a shared machine drifts, so the two sides
# are compared run by run: the table has the median latencies over rounds,
# then the median of the per-round ratios off/on with their interquartile
# range. A range that contains 1 means: no difference measurable.
set -eu
if [ $# -lt 2 ]; then
    echo "usage: $0 ON_BUILD OFF_BUILD [ROUNDS]" >&2
    exit 2
fi
on=$(cd "$1" && pwd)
off=$(cd "$2" && pwd)
rounds=${3:-21}
src=$(cd "$(dirname "$0")/.." && pwd)
fix=$src/tests/fixtures
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
unset TLOG TLOG_FILE TLOG_FORMAT
export TGRAPH_RUNTIME_DIR=$on TGRAPH_INCLUDE_DIR=$src/include

# model, symbol binding, runs per bench: small models show a per-node cost best
models="mlp:s0=1:5000 tinygpt:s0=1:100 cnn:s0=1:400"
for m in $models; do
    name=${m%%:*}
    src_model=$fix/$name.pt2
    [ -f "$src_model" ] || src_model=$fix/$name.onnx
    "$on/tools/texport" "$src_model" -o "$tmp/$name.tg"
    "$on/tools/tcompile" "$tmp/$name.tg" -o "$tmp/$name.on.so"
    CC="${CC:-cc} -DTG_LOG_DISABLE" "$on/tools/tcompile" "$tmp/$name.tg" -o "$tmp/$name.off.so"
done

# mean latency (ms) of one trun --bench
bench() {
    "$1" --threads=1 --random --dim "$2" --bench="$3" --warmup=20 "$4" 2>&1 |
        sed -n 's/.* \([0-9.]*\) runs\/s$/\1/p' | awk '{ printf "%.6f\n", 1000 / $1 }'
}

for r in $(seq "$rounds"); do
    for m in $models; do
        name=${m%%:*}
        rest=${m#*:}
        dim=${rest%%:*}
        n=${rest#*:}
        # interpreter: the same graph, trun with and without logging calls;
        # compiled: the two .so files, run by the same trun
        for pair in "interp $on/tools/trun $tmp/$name.tg $off/tools/trun $tmp/$name.tg" \
                    "so $on/tools/trun $tmp/$name.on.so $on/tools/trun $tmp/$name.off.so"; do
            set -- $pair
            if [ $((r % 2)) -eq 1 ]; then
                a=$(bench "$2" "$dim" "$n" "$3"); b=$(bench "$4" "$dim" "$n" "$5")
            else
                b=$(bench "$4" "$dim" "$n" "$5"); a=$(bench "$2" "$dim" "$n" "$3")
            fi
            echo "$name $1 $a $b" >>"$tmp/times"
        done
    done
done

# quantile q of numbers on stdin (linear between ranks)
quantile() { sort -g | awk -v q="$1" '{ v[NR] = $1 } END { p = 1 + q * (NR - 1); i = int(p); f = p - i; print (i < NR) ? v[i] + f * (v[i + 1] - v[i]) : v[i] }'; }

printf '%-8s %-7s %6s %10s %10s %8s %16s\n' model engine rounds "on ms" "off ms" "off/on" "off/on IQR"
for m in $models; do
    name=${m%%:*}
    for e in interp so; do
        sel() { awk -v m="$name" -v e="$e" "\$1 == m && \$2 == e { print $1 }" "$tmp/times"; }
        printf '%-8s %-7s %6d %10.4f %10.4f %8.3f %7.3f..%-7.3f\n' "$name" "$e" "$rounds" \
            "$(sel '$3' | quantile 0.5)" "$(sel '$4' | quantile 0.5)" \
            "$(sel '$4 / $3' | quantile 0.5)" "$(sel '$4 / $3' | quantile 0.25)" \
            "$(sel '$4 / $3' | quantile 0.75)"
    done
done
