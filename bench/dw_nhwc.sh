#!/bin/sh
# Build bench/dw_nhwc.c against a build's libtgkernels.a (the kernels exactly
# as compiled models get them) and run it: depthwise channels last against
# channels first, one thread, CPU time.
#   bench/dw_nhwc.sh [BUILD_DIR [ROUNDS]]   (default: this tree's build, 5 rounds)
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=${1:-$src}
[ -f "$build/libtgkernels.a" ] || { echo "dw_nhwc: no $build/libtgkernels.a (make it first)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
${CC:-cc} -std=gnu11 -O3 -I"$src/lib" -o "$tmp/dw_nhwc" "$src/bench/dw_nhwc.c" \
    "$build/libtgkernels.a" -lpthread -lm
"$tmp/dw_nhwc" "${2:-5}"
