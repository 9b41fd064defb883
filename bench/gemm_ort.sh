#!/bin/sh
# The packed GEMM of one or more builds against ONNX Runtime's MatMul, side
# by side in one process (bench/gemm_ort.py says how).
#   bench/gemm_ort.sh [-r ROUNDS] [-t THREADS] [BUILD_DIR[,LABEL]...] [-- MxNxK...]
# Default: .bench/build (as bench/run.sh), 30 rounds, all cores, the shapes of
# tinygpt at batch 64 (qkv, up-projection and LM head, down-projection,
# output projection) and mlp's first layer at batch 64. PYTHON: a Python with
# numpy, onnx and onnxruntime (default python3).
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
rounds=30 threads=$(nproc)
while getopts r:t: opt; do
    case $opt in
    r) rounds=$OPTARG ;;
    t) threads=$OPTARG ;;
    *) echo "usage: bench/gemm_ort.sh [-r ROUNDS] [-t THREADS] [BUILD_DIR[,LABEL]...] [-- MxNxK...]" >&2
       exit 2 ;;
    esac
done
shift $((OPTIND - 1))
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shims="" i=0
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    build=${1%%,*} label=${1#*,}
    [ "$label" = "$1" ] && label=$build
    [ -f "$build/libtgkernels.a" ] || { echo "gemm_ort: no $build/libtgkernels.a (make it first)" >&2; exit 1; }
    i=$((i + 1))
    ${CC:-cc} -std=gnu11 -O2 -fPIC -shared -I"$src/lib" -o "$tmp/shim$i.so" "$src/bench/gemm_ort.c" \
        "$build/libtgkernels.a" -lpthread -lm
    shims="$shims $tmp/shim$i.so,$label"
    shift
done
if [ -z "$shims" ]; then
    build=$src/.bench/build
    [ -f "$build/libtgkernels.a" ] || { echo "gemm_ort: no $build/libtgkernels.a (run bench/run.sh or name a build)" >&2; exit 1; }
    ${CC:-cc} -std=gnu11 -O2 -fPIC -shared -I"$src/lib" -o "$tmp/shim.so" "$src/bench/gemm_ort.c" \
        "$build/libtgkernels.a" -lpthread -lm
    shims="$tmp/shim.so,tgraph"
fi
[ "${1:-}" = "--" ] && shift
[ $# -gt 0 ] || set -- 4096x384x128 4096x512x128 4096x128x512 4096x128x128 64x256x784
# shellcheck disable=SC2086
exec "${PYTHON:-python3}" "$src/bench/gemm_ort.py" "$rounds" "$threads" $shims -- "$@"
