#!/bin/sh
# The speed table of issue 18 (must-show 5) in one call on the GPU machine,
# run from what pack.sh put together:
#   cd PACK && sh bench/cuda/models/run.sh
# bench.py's workers start first (exports, then the torch contenders' warm-
# ups); the debs in DEBS (default ../debs: cJSON and protobuf-c, which the
# tools link) are unpacked; test_backend_ops on the cuda device starts beside
# them (TBO_SHARDS processes, default 8, sharing its cases: TG_SHARD; with
# cuDNN, then again with TG_CUDNN=off; each at most
# TBO_LIMIT seconds, default 300) and build.sh makes our models as the
# exports appear; the timing starts once both are done (builds.done),
# so nothing else runs on the GPU then; when the workers have timed every
# row, the table. WORK (default /tmp/tgbench) holds the exports and models,
# $OUT the logs and table.md. BUDGET: seconds from the start to the workers'
# end (default 540); BENCH_ARGS: more of bench.py's options (the dry run on
# the CPU: BENCH_ARGS='--small --device cpu --torch eager' TARGET=cpu
# DTYPE=fp32).
set -u
work=${WORK:-/tmp/tgbench} out=${OUT:-$work/out} budget=${BUDGET:-540}
t0=$(date +%s)
mkdir -p "$work" "$out"
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.max.sm,power.limit \
    --format=csv,noheader >"$out/gpu.txt" 2>&1
python3 -c 'import torch, torchvision, transformers as t; print("torch", torch.__version__,
    "torchvision", torchvision.__version__, "transformers", t.__version__)' >"$out/versions.txt" 2>&1
pfx=/tmp/tgpfx
mkdir -p "$pfx"
# a build with cuDNN (configure --with-cudnn) needs libcudnn.so.9: PyTorch's
# wheel (nvidia/cudnn/lib) has it; tcompile links it by the name libcudnn.so
cudnn=$(find $(python3 -c 'import site; print(" ".join(site.getsitepackages()))') \
    -name libcudnn.so.9 2>/dev/null | head -1)
if [ -n "$cudnn" ]; then
    mkdir -p "$pfx/cudnn" && ln -sf "$cudnn" "$pfx/cudnn/libcudnn.so"
    export LD_LIBRARY_PATH=$(dirname "$cudnn"):${LD_LIBRARY_PATH:-} LIBRARY_PATH=$pfx/cudnn
fi
nohup python3 bench/cuda/models/bench.py workers --work "$work" --out "$out" --budget "$budget" \
    ${BENCH_ARGS:-} >"$out/workers.log" 2>&1 &
for d in "${DEBS:-../debs}"/*.deb; do [ -f "$d" ] && dpkg -x "$d" "$pfx"; done
export LD_LIBRARY_PATH=$pfx/usr/lib/x86_64-linux-gnu:${LD_LIBRARY_PATH:-}
export TG_BACKEND_PATH=$PWD/lib/backend/cuda/.libs     # the cuda device, uninstalled
shards=${TBO_SHARDS:-8}
tbo() {     # with cuDNN (where the build has it), then TG_CUDNN=off: the product path
    for dnn in on off; do
        i=0
        while [ "$i" -lt "$shards" ]; do
            TGRAPH_RUNTIME_DIR=$PWD TGRAPH_INCLUDE_DIR=$PWD/include TG_BACKEND_OPS=cuda \
                TG_CUDNN=$dnn TG_SHARD=$i/$shards timeout "${TBO_LIMIT:-300}" \
                tests/unit/test_backend_ops >"$out/test_backend_ops.$dnn.$i.log" 2>&1 &
            i=$((i + 1))
        done
        wait
    done
}
tbo &
tbo=$!
sh bench/cuda/models/build.sh "$work" >"$out/builds.log" 2>&1
wait "$tbo"
cat "$out"/test_backend_ops.on.*.log "$out"/test_backend_ops.off.*.log >"$out/test_backend_ops.log"
for dnn in on off; do
    echo "test_backend_ops (cuda, TG_CUDNN=$dnn, $shards shards): done after" \
        "$(($(date +%s) - t0)) s; $(cat "$out"/test_backend_ops.$dnn.*.log |
        grep -cE '^[0-9]+ passed, 0 failed') of $shards passed"
done
grep -E '^(backend cuda|[0-9]+ passed)|times the tolerance|fail' "$out/test_backend_ops.log" |
    head -40
touch "$work/builds.done"       # the timing starts when the warm-ups are done too
python3 bench/cuda/models/bench.py table --work "$work" --out "$out" \
    --wait $((t0 + budget + 10 - $(date +%s)))
cat "$out/builds.log" "$out/gpu.txt" "$out/versions.txt"
