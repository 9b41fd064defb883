#!/bin/sh
# Build bench/kernels_bench.c against a build's libtgkernels.a (the kernels
# exactly as compiled models get them) and run it.
#   bench/kernels_bench.sh [BUILD_DIR]   (default .bench/build, as bench/run.sh)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/.bench/build}
[ -f "$build/libtgkernels.a" ] || { echo "kernels_bench: no $build/libtgkernels.a (make it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/kernels_bench" "$src/bench/kernels_bench.c" \
    "$build/libtgkernels.a" -lpthread -lm
"$tmp/kernels_bench"
