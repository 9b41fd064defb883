#!/bin/sh
# Peak extra memory and time of tgk_sdpa_f32 (flash) against the naive
# sgemm + softmax + sgemm, at S = 1024 .. 16384 (batch 1, 8 heads, E 64),
# one fresh process per size. Builds bench/sdpa_memory from the kernel sources
# with the compiler flags of libtgkernels.a.
#   usage: bench/sdpa_memory.sh [--causal] [sizes...]
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
causal=
if [ "${1:-}" = --causal ]; then causal=--causal; shift; fi
sizes=${*:-1024 2048 4096 8192 16384}
k=$src/lib/backend/cpu/kernels
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/sdpa_memory" "$src/bench/sdpa_memory.c" \
    "$k/sdpa.c" "$k/gemm.c" "$k/gemm_packed.c" "$k/parallel.c" "$k/softmax.c" -lpthread -lm
printf 'S\tflash MiB\tflash s\tflash GFLOP/s\tnaive MiB\tnaive s\tnaive GFLOP/s\n'
for s in $sizes; do
    f=$("$tmp/sdpa_memory" $causal "$s" | cut -f2-)
    n=$("$tmp/sdpa_memory" --naive $causal "$s" | cut -f2-)
    printf '%s\t%s\t%s\n' "$s" "$f" "$n"
done
