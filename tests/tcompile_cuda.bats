#!/usr/bin/env bats
# tcompile --target cuda (CUDA in tgraph(7)). Everywhere with a CUDA build:
# --help, the refusals (every node the GPU cannot run listed at once,
# --weights), the .so's libraries and exports. On a GPU (skipped only when
# the CUDA runtime finds no device): every fixture's compiled model against
# PyTorch's outputs at batch 1 and 3, and tests/cuda/model_cuda (shapes
# captured and replayed, the caller's stream, device memory, threads).
# --dtype: fp16 and tf32 refused on the cpu target (everywhere); bf16 and fp16 weights
# written in half (a CUDA build); each type's outputs against PyTorch's (GPU).
# Without CUDA built, the target is unknown: that is tested, the rest skips.

load common

setup_file() {
    export GRAPHS=$BATS_FILE_TMPDIR
    "$TEXPORT" "$FIX/mlp.pt2" -o "$GRAPHS/mlp.tg"
}

setup() {
    common_setup
}

# cuda_build_or_skip: skip when this build has no CUDA backend (no
# libtgraph-backend-cuda.so: it is then unknown to tcompile, which the first
# test checks); one that is there but does not load fails
cuda_build_or_skip() {
    if ! "$TCOMPILE" --target cuda "$GRAPHS/mlp.tg" -o "$TMP/probe.so" 2>"$TMP/probe.err"; then
        grep -q "no device 'cuda' (.*no libtgraph-backend-cuda.so in" "$TMP/probe.err" &&
            skip "no libtgraph-backend-cuda.so: built without CUDA, or TG_BACKEND_PATH names no build's lib/backend/cuda/.libs"
        cat "$TMP/probe.err"
        return 1
    fi
}

# gpu_or_skip: also skip when the CUDA runtime finds no usable device here
gpu_or_skip() {
    cuda_build_or_skip
    if ! "$TRUN" "$TMP/probe.so" "$FIX/mlp.in0.b1.npy" -o "$TMP/probe.npy" 2>"$TMP/probe.err"; then
        grep -Eq "cudaErrorNoDevice|cudaErrorInsufficientDriver" "$TMP/probe.err" &&
            skip "no CUDA device here: $(head -1 "$TMP/probe.err")"
        cat "$TMP/probe.err"
        return 1
    fi
}

@test "tcompile --help names the cuda target" {
    run_ok "$TCOMPILE" --help
    [[ "$output" == *"cuda: an NVIDIA"* ]]
    [[ "$output" == *"libtgcuda.a"* ]]
}

@test "tcompile --target cuda without CUDA built is a usage error naming the known devices" {
    run --separate-stderr "$TCOMPILE" --target cuda "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    if [ "$status" -eq 0 ]; then
        [ -s "$TMP/m.so" ]      # built with CUDA: it compiles
    else
        [ "$status" -eq 2 ]
        [[ "$stderr" == *"no device 'cuda' (known: cpu"* ]]
    fi
}

@test "tcompile --dtype: fp32 on any target, bf16 for cpu and cuda, fp16 and tf32 for cuda only, else a usage error" {
    run_ok "$TCOMPILE" --help
    [[ "$output" == *"--dtype=TYPE"* ]]
    run_ok "$TCOMPILE" --dtype fp32 "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    [ -s "$TMP/m.so" ]
    for d in fp16 tf32; do     # bf16 on the cpu: tcompile_bf16.bats
        run_fails 2 "^tcompile: --dtype $d: the cpu target compiles float32 and bf16 only" \
            "$TCOMPILE" --dtype $d "$GRAPHS/mlp.tg" -o "$TMP/$d.so"
        [ ! -e "$TMP/$d.so" ]
    done
    run_fails 2 "--dtype: 'int8' is not fp32, bf16, fp16 or tf32" \
        "$TCOMPILE" --dtype int8 "$GRAPHS/mlp.tg" -o "$TMP/i.so"
    run_fails 2 "--dtype: 'BF16' is not" "$TCOMPILE" --dtype BF16 "$GRAPHS/mlp.tg" -o "$TMP/i.so"
}

@test "tcompile --target cuda --dtype bf16 and fp16 carry the GEMMs' weights in half, tf32 in float32" {
    cuda_build_or_skip
    for d in fp32 bf16 fp16 tf32; do
        run_ok "$TCOMPILE" --target cuda --dtype $d "$GRAPHS/mlp.tg" -o "$TMP/$d.so"
    done
    size() { stat -c %s "$1"; }
    # mlp's linear weights: 2 bytes an element fewer
    [ "$(size "$TMP/bf16.so")" -lt "$(size "$TMP/fp32.so")" ]
    [ "$(size "$TMP/bf16.so")" -eq "$(size "$TMP/fp16.so")" ]
    [ "$(size "$TMP/tf32.so")" -eq "$(size "$TMP/fp32.so")" ]
}

@test "tcompile --target cuda lists every node the GPU cannot run, each with its reason" {
    cuda_build_or_skip
    "$TQUANT" --scheme dynamic "$GRAPHS/mlp.tg" -o "$TMP/q.tg" 2>/dev/null
    run_fails 1 "target cuda cannot compile [0-9]+ nodes:" "$TCOMPILE" --target cuda "$TMP/q.tg" \
        -o "$TMP/q.so"
    n=$(grep -c ":   node '.*' (qlinear): quantized ops have no CUDA kernels yet$" <<<"$stderr")
    [ "$n" -ge 3 ]
    [[ "$stderr" == *"cannot compile $n nodes:"* ]]
    [ ! -e "$TMP/q.so" ]
}

@test "tcompile --target cuda refuses --weights: the model carries its weights" {
    cuda_build_or_skip
    run_fails 1 "weights: a CUDA model carries its weights in the .so" \
        "$TCOMPILE" --target cuda --weights "$TMP/w.bin" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
}

@test "a cuda model needs only the CUDA runtime, cuBLASLt (cuDNN where built with it) and the C library" {
    cuda_build_or_skip
    need readelf binutils
    needed=$(readelf -d "$TMP/probe.so" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' | sort | tr '\n' ' ')
    echo "NEEDED: $needed"
    [[ "$needed" == *libcudart.so* && "$needed" == *libcublasLt.so* ]]
    for lib in $needed; do
        [[ "$lib" =~ ^lib(cudart|cublasLt|cudnn|c|m|pthread|dl|rt|stdc\+\+|gcc_s)\.so ]] ||
            [[ "$lib" =~ ^ld-linux ]] || { echo "unexpected: $lib"; return 1; }
    done
    ! grep -q "tgraph\|cjson\|protobuf\|libz" <<<"$needed"
}

@test "a cuda model exports only the ABI and carries its version note" {
    cuda_build_or_skip
    need nm binutils
    syms=$(nm -D --defined-only "$TMP/probe.so" | awk '{print $3}')
    [ -n "$syms" ]
    ! grep -v '^tgraph_' <<<"$syms"
    grep -qx tgraph_model_run_ex <<<"$syms"
    readelf -n "$TMP/probe.so" | grep -q tgraph
}

@test "every fixture compiled for cuda matches PyTorch's outputs at batch 1 and 3 (GPU)" {
    gpu_or_skip
    local n=0
    for m in mlp cnn tinygpt; do
        "$TEXPORT" "$FIX/$m.pt2" -o "$TMP/$m.tg"
        run_ok "$TCOMPILE" --target cuda "$TMP/$m.tg" -o "$TMP/$m.so"
        for b in 1 3; do
            run_ok "$TRUN" "$TMP/$m.so" "$FIX/$m.in0.b$b.npy" --check "$FIX/$m.out0.b$b.npy" \
                --rtol 1e-4 --atol 1e-4
            n=$((n + 1))
        done
    done
    [ "$n" -eq 6 ]
}

# --dtype's tolerances against PyTorch's float32: bf16 keeps 8 significant
# bits (the operands of every product rounded), fp16 and tf32 11; attention
# (tinygpt, hf_llama) in bf16/fp16 through the flash kernels where they take it
@test "every fixture compiled for cuda with --dtype bf16, fp16, tf32 stays near PyTorch's outputs (GPU)" {
    gpu_or_skip
    local n=0
    for m in mlp cnn tinygpt hf_llama; do
        "$TEXPORT" "$FIX/$m.pt2" -o "$TMP/$m.tg"
        for d in bf16:5e-2 fp16:1e-2 tf32:1e-2; do
            run_ok "$TCOMPILE" --target cuda --dtype ${d%:*} "$TMP/$m.tg" -o "$TMP/$m.so"
            for b in 1 3; do
                if [ $m = hf_llama ]; then     # one batch, two inputs (ids and mask)
                    [ $b = 1 ] || continue
                    set -- "$FIX/$m.in0.npy" "$FIX/$m.in1.npy" --check "$FIX/$m.out0.npy"
                else
                    set -- "$FIX/$m.in0.b$b.npy" --check "$FIX/$m.out0.b$b.npy"
                fi
                run_ok "$TRUN" "$TMP/$m.so" "$@" --rtol ${d#*:} --atol ${d#*:}
                n=$((n + 1))
            done
        done
    done
    [ "$n" -eq 21 ]
}

@test "a cuda model: shapes replayed, the caller's stream, device memory, threads (GPU)" {
    gpu_or_skip
    "$TEXPORT" "$FIX/cnn.pt2" -o "$TMP/cnn.tg"
    run_ok "$TCOMPILE" --target cuda "$TMP/cnn.tg" -o "$TMP/cnn.so"
    run --separate-stderr "$UNIT/../cuda/model_cuda" "$TMP/cnn.so" "$FIX/cnn.in0.b1.npy" \
        "$FIX/cnn.in0.b3.npy"
    [ "$status" -ne 77 ] || skip "no CUDA device"
    [ "$status" -eq 0 ] || { tg_show_run; return 1; }
    [[ "$output" == *" passed, 0 failed" ]]
}

@test "a cuda model reports an index out of range as bad data, naming the node (GPU)" {
    gpu_or_skip
    "$TEXPORT" "$FIX/kvcache.pt2" -o "$TMP/kv.tg"
    run_ok "$TCOMPILE" --target cuda "$TMP/kv.tg" -o "$TMP/kv.so"
    run_ok "$TRUN" "$TMP/kv.so" "$FIX/kvcache.in0.npy" "$FIX/kvcache.in1.npy" \
        --check "$FIX/kvcache.out0.npy" --rtol 1e-4 --atol 1e-4
    # positions of 64 random bits: out of range (the chance of two in range: 2^-120)
    random_npy '<i8' "2," 8 "$TMP/bad.npy"
    run_fails 1 "node '.*' \\([a-z_]+\\): index -?[0-9]+ is out of range" \
        "$TRUN" "$TMP/kv.so" "$FIX/kvcache.in0.npy" "$TMP/bad.npy" -o "$TMP/y.npy"
}

@test "tcompile --target cuda refuses if and loop, listing each node" {
    cuda_build_or_skip
    "$TEXPORT" -o "$TMP/cf.tg" "$FIX/onnx/control_flow.onnx"
    run_fails 1 "target cuda cannot compile 3 nodes:" "$TCOMPILE" --target cuda "$TMP/cf.tg" -o "$TMP/cf.so"
    n=$(grep -Ec "node '.*' \((if|loop)\): control flow \((if|loop)\) has no CUDA code generator" <<<"$stderr")
    [ "$n" -eq 3 ]
}
