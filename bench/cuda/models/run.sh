#!/bin/sh
# The speed table of issue 18 (must-show 5) in one call on the GPU machine,
# from a source tree, in three steps around the build (.cuda-dev/run.sh):
#   run.sh start     bench.py's workers in the background: exports, then
#                    torch.compile's warm-ups while tgraph builds
#   run.sh build     (in the built tree) build.sh: texport and tcompile
#                    --target cuda --dtype bf16 of each export, then
#                    test_backend_ops on the cuda device; then the timing
#                    may start
#   run.sh finish    the table, when the workers are done
# WORK (default /tmp/tgbench) holds the exports and models; logs and
# table.md go to $OUT. BUDGET: seconds from start to the workers' end
# (default 540); BENCH_ARGS: more of bench.py's options (the dry run on the
# CPU: BENCH_ARGS='--small --device cpu --torch eager' TARGET=cpu DTYPE=fp32).
set -u
work=${WORK:-/tmp/tgbench} out=${OUT:-$work/out}
mkdir -p "$work" "$out"
env="TGRAPH_RUNTIME_DIR=$PWD TGRAPH_INCLUDE_DIR=$PWD/include TG_UNIT=$PWD/tests/unit"
case $1 in
start)
    date +%s >"$work/t0"
    nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit \
        --format=csv,noheader >"$out/gpu.txt" 2>&1
    python3 -c 'import torch, torchvision, transformers as t; print("torch", torch.__version__,
        "torchvision", torchvision.__version__, "transformers", t.__version__)' >"$out/versions.txt" 2>&1
    nohup python3 bench/cuda/models/bench.py workers --work "$work" --out "$out" \
        --budget "${BUDGET:-540}" ${BENCH_ARGS:-} >"$out/workers.log" 2>&1 &
    ;;
build)
    make -j8 tests/unit/test_backend_ops >"$out/build_tests.log" 2>&1 &
    sh bench/cuda/models/build.sh "$work" >"$out/builds.log" 2>&1
    wait
    # before the timing starts: the torch contenders are still warming up
    env $env TG_BACKEND_OPS=cuda timeout "${TEST_S:-90}" tests/unit/test_backend_ops \
        >"$out/test_backend_ops.log" 2>&1
    echo "test_backend_ops (cuda): exit $?" >>"$out/test_backend_ops.log"
    touch "$work/builds.done"
    ;;
finish)
    touch "$work/builds.done"       # the build may have failed: the workers go on without us
    t0=$(cat "$work/t0")
    python3 bench/cuda/models/bench.py table --work "$work" --out "$out" \
        --wait $((t0 + ${BUDGET:-540} + 10 - $(date +%s)))
    cat "$out/builds.log" "$out/gpu.txt" "$out/versions.txt"
    grep -E '^(test_backend_ops|backend cuda|[0-9]+ passed)|times the tolerance|fails' "$out/test_backend_ops.log" | head -30
    ;;
*)
    echo "usage: run.sh start|build|finish" >&2; exit 2
    ;;
esac
