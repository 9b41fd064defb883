#!/bin/sh
# On the GPU machine, from the repository root: build bench.cu against the
# cuSPARSELt that torch's environment carries (PyPI nvidia-cusparselt-cu13;
# header and .so both ship in the wheel) and cuBLASLt, then run it over the
# issue's shapes (or the T N K triples given). Logs under $OUT or cuda-build/.
#   bench/cuda/sparse24/run.sh [--quick] [T N K ...]
set -u
out=${OUT:-cuda-build}
mkdir -p "$out" cuda-build
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,clocks.mem,power.limit \
    --format=csv | tee "$out/gpu.txt"
. bench/cuda/sparse24/locate.sh
# The header may come from elsewhere (CUSPARSELT_INC) where the wheel lacks it.
I=${CUSPARSELT_INC:-$S/include}
if [ ! -f "$I/cusparseLt.h" ] || [ ! -e "$S/lib/libcusparseLt.so.0" ]; then
    echo "cuSPARSELt not found (set CUSPARSELT_DIR to the wheel's nvidia/cusparselt)" >&2
    exit 1
fi
echo "cuSPARSELt: $S (header from $I)"
nvcc -O2 -std=c++17 -gencode arch=compute_90,code=sm_90 -I"$I" \
    bench/cuda/sparse24/bench.cu -o cuda-build/bench24 -lcublasLt \
    -L"$S/lib" -l:libcusparseLt.so.0 -Xlinker -rpath -Xlinker "$S/lib" || exit 1
cuda-build/bench24 "$@" 2>&1 | tee "$out/bench24.log"
