#!/bin/sh
# A zoo model pruned to 2:4 through the whole pipeline, against the dense one:
#   texport m.pt2 | tsparse --report --calib | tcompile -o sparse.so
# then trun on the model's inputs: the compiled sparse model against the
# sparse graph in the interpreter, both models' outputs against eager
# PyTorch's, and their median run times side by side (--bench, interleaved,
# REPS rounds). The output change is large with random weights; the point is
# that every step works and is measured.
#   bench/sparse_zoo.sh WORK [TOOLS]   WORK: a model's folder from
#   bench/zoo/zoo.py (m.pt2, in0.b{1,3}.npy, out0.b{1,3}.npy: one input)
# Over the whole zoo, one table row a model: bench/sparse_zoo_all.py.
set -eu
work=$1
tools=${2:-$(cd "$(dirname "$0")/../tools" && pwd)}
reps=${REPS:-3}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tools/texport" "$work/m.pt2" -o "$tmp/dense.tg"
"$tools/tcompile" "$tmp/dense.tg" -o "$tmp/dense.so"
"$tools/texport" "$work/m.pt2" |
    "$tools/tsparse" --report --calib "$work/in0.b1.npy" --calib "$work/in0.b3.npy" -o "$tmp/sparse.tg"
"$tools/tcompile" "$tmp/sparse.tg" -o "$tmp/sparse.so"
for b in 1 3; do
    echo "batch $b: compiled sparse model against the sparse graph (interpreter):"
    "$tools/trun" "$tmp/sparse.tg" "$work/in0.b$b.npy" -o "$tmp/s$b.npy"
    "$tools/trun" "$tmp/sparse.so" "$work/in0.b$b.npy" --check "$tmp/s$b.npy" || true
    for m in dense sparse; do
        echo "batch $b: compiled $m model against eager PyTorch (dense):"
        "$tools/trun" "$tmp/$m.so" "$work/in0.b$b.npy" --check "$work/out0.b$b.npy" || true
    done
done
for b in 1 3; do
    i=0
    while [ $i -lt "$reps" ]; do
        for m in dense sparse; do
            printf 'batch %s %s: ' "$b" "$m"
            "$tools/trun" "$tmp/$m.so" "$work/in0.b$b.npy" --bench 20 --threads 1 2>&1 >/dev/null |
                grep -i median || true
        done
        i=$((i + 1))
    done
done
