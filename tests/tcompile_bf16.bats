#!/usr/bin/env bats
# tcompile --dtype bf16: linear layers on constant weights compute in bf16
# (weights rounded at compile time, inputs at run time, float32 sums and
# results). Every fixture with linears matches PyTorch's float32 outputs within
# bf16's error (trun --check, rtol and atol 2e-2; measured worst 4.5e-2 abs on
# outputs up to 15 in magnitude, 0.3% of it); the portable path gives the same
# bytes as vdpbf16ps and the AVX-512 FMAs (on a CPU without them: the same
# path again), and every path (TGRAPH_CPU_BF16: AMX, vdpbf16ps, FMAs,
# portable; one the CPU lacks is the best it has) is within the tolerance.

load common

setup_file() {
    export GRAPHS=$BATS_FILE_TMPDIR
    for m in mlp cnn tinygpt hf_roberta hf_llama layers tied; do
        "$TEXPORT" "$FIX/$m.pt2" -o "$GRAPHS/$m.tg"
    done
    "$TEXPORT" "$FIX/tinygpt.onnx" -o "$GRAPHS/tinygpt.onnx.tg"
}

# the fixture's inputs and outputs: batch 3 where it has batches
fixture_io() {
    if [ -f "$FIX/$1.in0.b3.npy" ]; then
        INS=("$FIX/$1.in0.b3.npy")
        OUT=$FIX/$1.out0.b3.npy
    else
        INS=("$FIX/$1".in*.npy)
        OUT=$FIX/$1.out0.npy
    fi
}

@test "tcompile --help and tcompile(1) describe --dtype" {
    run_ok "$TCOMPILE" --help
    [[ "$output" == *"--dtype=TYPE"*"the cpu target takes fp32 or"*"bf16"* ]]
    grep -q -- 'TGRAPH_CPU_BF16' "$TG_SRCDIR/man/man1/tcompile.1"
}

@test "tcompile --dtype bf16: each fixture's linears in bf16, outputs within 2e-2 of PyTorch's" {
    for m in mlp cnn tinygpt hf_roberta hf_llama layers tied tinygpt.onnx; do
        run_ok "$TCOMPILE" --dtype bf16 --emit-c "$TMP/$m.c" -o "$TMP/$m.so" "$GRAPHS/$m.tg"
        run_ok "$TCOMPILE" --emit-c "$TMP/$m.f32.c" -o "$TMP/$m.f32.so" "$GRAPHS/$m.tg"
        # every GEMM the float32 build packs runs in bf16, and no float32 one is left
        nf=$(grep -c '    tgk_linear_packed_\(ex_\)\?f32(' "$TMP/$m.f32.c" || true)
        [ "$nf" -gt 0 ]
        [ "$(grep -c '    if (tgk_linear_packed_bf16(' "$TMP/$m.c")" = "$nf" ]
        ! grep -q '    tgk_linear_packed_\(ex_\)\?f32(' "$TMP/$m.c"
        fixture_io "${m%.onnx}"
        run_ok "$TRUN" "$TMP/$m.so" "${INS[@]}" --check "$OUT" --rtol 2e-2 --atol 2e-2
        [[ "$output" == *": ok" ]]
    done
}

@test "tcompile --dtype bf16: the portable path gives the bytes vdpbf16ps and the FMAs give, AMX the same within 2e-2" {
    run_ok "$TCOMPILE" --dtype bf16 -o "$TMP/m.so" "$GRAPHS/tinygpt.tg"
    TGRAPH_CPU_BF16=avx512bf16 "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/a.npy"
    TGRAPH_CPU_BF16=base "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/b.npy"
    TGRAPH_CPU_BF16=avx512fma "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/c.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
    cmp "$TMP/c.npy" "$TMP/b.npy"
    for isa in amx avx512bf16 avx512fma base; do
        TGRAPH_CPU_BF16=$isa run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b3.npy" \
            --check "$FIX/tinygpt.out0.b3.npy" --rtol 2e-2 --atol 2e-2
    done
    # and not the float32 model's bytes
    run_ok "$TCOMPILE" -o "$TMP/f.so" "$GRAPHS/tinygpt.tg"
    "$TRUN" "$TMP/f.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/f.npy"
    ! cmp -s "$TMP/a.npy" "$TMP/f.npy"
}

@test "tcompile --dtype fp32 is the default; bf16 weights take half the bytes" {
    mkdir "$TMP/a" "$TMP/b" "$TMP/c"
    run_ok "$TCOMPILE" -o "$TMP/a/m.so" --weights "$TMP/a/m.w" "$GRAPHS/mlp.tg"
    run_ok "$TCOMPILE" --dtype fp32 -o "$TMP/b/m.so" --weights "$TMP/b/m.w" "$GRAPHS/mlp.tg"
    cmp "$TMP/a/m.so" "$TMP/b/m.so"
    cmp "$TMP/a/m.w" "$TMP/b/m.w"
    run_ok "$TCOMPILE" --dtype bf16 -o "$TMP/c/m.so" --weights "$TMP/c/m.w" "$GRAPHS/mlp.tg"
    a=$(stat -c %s "$TMP/a/m.w") c=$(stat -c %s "$TMP/c/m.w")
    [ $((c * 100)) -lt $((a * 55)) ]
    run_ok "$TRUN" "$TMP/c/m.so" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy" \
        --rtol 2e-2 --atol 2e-2
}

@test "tcompile --dtype fp16 or tf32 for the cpu target is a usage error (exit 2)" {
    for t in fp16 tf32; do
        run_fails 2 "--dtype $t: the cpu target compiles float32 and bf16 only" \
            "$TCOMPILE" --dtype $t "$GRAPHS/mlp.tg"
        [ -z "$output" ]
    done
}
