#!/bin/sh
# Build bench/sparse_bench.c against a build's libtgkernels.a (the kernels
# exactly as compiled models get them; lib/sparse/compress.c prunes the
# weights) and run it: the 2:4 sparse linears (f32, int8) against the dense ones.
#   bench/sparse.sh [BUILD_DIR] [THREADS...]   (default .bench/build; threads 1 2)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/.bench/build}
[ $# -gt 0 ] && shift
[ -f "$build/libtgkernels.a" ] || { echo "sparse.sh: no $build/libtgkernels.a (make it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/sparse_bench" "$src/bench/sparse_bench.c" \
    "$src/lib/sparse/compress.c" "$build/libtgkernels.a" -lpthread -lm
"$tmp/sparse_bench" "$@"
