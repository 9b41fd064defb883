#!/bin/sh
# One round on the GPU machine, from the repository root: build the kernels,
# run their tests (plain, then under compute-sanitizer memcheck), then the
# bench against torch. Logs under $OUT (the device tool's) or cuda-build/.
#   bench/cuda/attention/run.sh [--quick]
set -u
out=${OUT:-cuda-build}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv | tee "$out/gpu.txt"
make -s -f lib/backend/cuda/flash.mk -j16 cuda || exit 1
cuda-build/test_flash >"$out/test.log" 2>&1
echo "test_flash: exit $?"; cat "$out/test.log"
timeout 300 compute-sanitizer --tool memcheck --error-exitcode 3 cuda-build/test_flash \
    >"$out/memcheck.log" 2>&1
echo "memcheck: exit $?"; tail -n 2 "$out/memcheck.log"
PYTHONUNBUFFERED=1 python3 bench/cuda/attention/bench.py cuda-build/libtgflash.so "$@" \
    2>&1 | tee "$out/bench.log"
