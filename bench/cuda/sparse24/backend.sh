#!/bin/sh
# The CUDA backend's linear_24 (cuSPARSELt) against its dense bf16 linear,
# from a tree built with CUDA, on the GPU machine: per shape, a graph of
# 2:4 weights (tests/unit/mkgraph mlp24: one linear, or llama-7B's MLP
# 4096 -> 11008 -> relu -> 4096), compiled twice with tcompile --target cuda
# --dtype bf16: as it is (dense linear) and after tsparse (linear_24); then
# backend.c times both side by side. Rows as backend.c prints them, to
# stdout and $OUT/sparse24_backend.md (or cuda-build/).
#   bench/cuda/sparse24/backend.sh
set -u
out=${OUT:-cuda-build}
mkdir -p "$out"
. bench/cuda/sparse24/locate.sh
[ -n "$S" ] || { echo "backend.sh: no cuSPARSELt (set CUSPARSELT_DIR)" >&2; exit 1; }
export TG_CUSPARSELT=$S/lib/libcusparseLt.so.0
export TG_BACKEND_PATH=$PWD/lib/backend/cuda/.libs     # the cuda device, uninstalled
cflags=$(sed -n 's/^CUDA_CFLAGS = //p' Makefile) libdir=$(sed -n 's/^CUDA_LIBDIR = //p' Makefile)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -O2 -std=gnu11 -Iinclude $cflags bench/cuda/sparse24/backend.c -o "$tmp/backend" \
    -L"$libdir" -Wl,-rpath,"$libdir" -lcudart -ldl -lm || exit 1
{
    echo "| T | N | K | dense ms | sparse ms | dense TF/s | sparse TF/s | ratio | rel diff |"
    echo "|--:|--:|--:|--:|--:|--:|--:|--:|--:|"
} | tee "$out/sparse24_backend.md"
shape() {   # SPEC K N FLOP_PER_TOKEN T...
    spec=$1 K=$2 N=$3 f=$4
    shift 4
    tests/unit/mkgraph "mlp24:$spec" 1 >"$tmp/d.tg" &&
        ./tools/tsparse "$tmp/d.tg" -o "$tmp/s.tg" &&
        ./tools/tcompile --target cuda --dtype bf16 "$tmp/d.tg" -o "$tmp/d.so" &&
        ./tools/tcompile --target cuda --dtype bf16 "$tmp/s.tg" -o "$tmp/s.so" || return
    echo "<!-- $spec -->" >>"$out/sparse24_backend.md"
    "$tmp/backend" "$tmp/d.so" "$tmp/s.so" "$K" "$N" "$f" "$@" | tee -a "$out/sparse24_backend.md"
}
shape 8192,8192 8192 8192 $((2 * 8192 * 8192)) 8192
shape 4096,11008 4096 11008 $((2 * 4096 * 11008)) 2048 4096 8192 16384
shape 11008,4096 11008 4096 $((2 * 4096 * 11008)) 2048 4096 8192 16384
shape 4096,11008,4096 4096 4096 $((4 * 4096 * 11008)) 2048 4096 8192 16384
