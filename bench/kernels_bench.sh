#!/bin/sh
# Build bench/kernels_bench.c against the kernel sources (libtgkernels.a's
# flags) and run it.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
k=$src/lib/kernels/cpu
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/kernels_bench" "$src/bench/kernels_bench.c" \
    "$k/conv.c" "$k/gemm.c" "$k/parallel.c" "$k/vec.c" -lopenblas -lpthread -lm
"$tmp/kernels_bench"
