#!/bin/sh
# Build bench/conv_nhwc_bench.c against a build's libtgkernels.a (the kernels
# exactly as compiled models get them) and run it: channels-last convolutions
# against the NCHW kernel, one thread, CPU time, rounds interleaved.
#   bench/conv_nhwc.sh [BUILD_DIR] [ROUNDS]   (default .bench/build, 5 rounds)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src/.bench/build}
[ $# -gt 0 ] && shift
[ -f "$build/libtgkernels.a" ] || { echo "conv_nhwc.sh: no $build/libtgkernels.a (make it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/conv_nhwc_bench" "$src/bench/conv_nhwc_bench.c" \
    "$build/libtgkernels.a" -lpthread -lm
"$tmp/conv_nhwc_bench" "$@"
