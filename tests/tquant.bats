#!/usr/bin/env bats
# tquant: static / dynamic / weight-only quantization of the fixtures, the
# accuracy report, observers, --skip, bad calibration data, the pipeline.
# Calibration inputs are made here (python3 stdlib writes .npy; no numpy):
# "pixels" uniform in [0, 1) like the 8-bit images mlp (28x28) and cnn
# (3x32x32) stand for, from a fixed seed so the accuracy bounds are stable.

load common

# mkcal DIR COUNT DTYPE SHAPE...: COUNT .npy files s0000.npy ... (f4: floats
# in [0, 1); i8: token ids in [0, 512)), seeded by $SEED (default 1).
mkcal() {
    python3 "$TG_SRCDIR/tests/tools/mkcal.py" "$@"
}

# top1 STDERR: the top-1 agreement percentage the report printed, as an integer x100
top1() {
    printf '%s\n' "$1" | sed -n 's/.*top-1 agreement \([0-9]*\)\.\([0-9]*\)%.*/\1\2/p' | head -1
}

# field NAME STDERR: "max abs err" or "mean abs err" value from the report
field() {
    printf '%s\n' "$2" | sed -n "s/.*$1 \([0-9.e+-]*\).*/\1/p" | head -1
}

# ops TG: "op count" lines of tlog's summary
ops() {
    "$TLOG" "$1" 2>&1 >/dev/null | sed -n 's/^  \([a-z_]*\) *\([0-9]*\)$/\1 \2/p'
}

@test "tquant --help and --version" {
    run_ok "$TQUANT" --help
    [[ "$output" == *"--observer"* ]]
    run_ok "$TQUANT" --version
    [[ "$output" == tquant* ]]
}

@test "tquant refuses to write a graph to a terminal (exit 2)" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    refuses_tty "a graph" "$TQUANT" --scheme=dynamic "$TMP/m.tg"
}

@test "static int8: mlp on 256 random inputs keeps top-1 agreement >= 99%" {
    mkcal "$TMP/cal" 256 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/m.tg" -o "$TMP/q.tg"
    [[ "$stderr" == *"3 layers quantized (static, minmax)"* ]]
    [[ "$stderr" == *"on 256 calibration samples"* ]]
    [ "$(top1 "$stderr")" -ge 9900 ]
    ops "$TMP/q.tg" | grep -qx "qlinear 3"
    ! ops "$TMP/q.tg" | grep -q "^linear " || false
}

@test "static int8: cnn convolutions become qconv, top-1 agreement >= 99%" {
    mkcal "$TMP/cal" 256 f4 1 3 32 32
    "$TEXPORT" "$FIX/cnn.pt2" -o "$TMP/c.tg"
    run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/q.tg"
    [ "$(top1 "$stderr")" -ge 9900 ]
    ops "$TMP/q.tg" | grep -qx "qconv 2"
    ops "$TMP/q.tg" | grep -qx "qlinear 1"
    ! ops "$TMP/q.tg" | grep -q "^conv " || false
}

@test "static int8: tinygpt logits stay within 0.1 (max abs) of the float graph" {
    mkcal "$TMP/cal" 8 i8 1 64
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/g.tg"
    run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/g.tg" -o "$TMP/q.tg"
    awk -v e="$(field 'max abs err' "$stderr")" 'BEGIN { exit !(e < 0.1) }'
}

@test "dynamic int8 needs no calibration data" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TQUANT" --scheme dynamic "$TMP/m.tg" -o "$TMP/q.tg"
    [[ "$stderr" == *"3 layers quantized (dynamic)"* ]]
    [[ "$stderr" != *accuracy* ]]
    run_ok "$TRUN" "$TMP/q.tg" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy" --atol 0.02
}

@test "weight-only int4 with groups of 32 on tinygpt: logits within 0.5, int8 within 0.1" {
    mkcal "$TMP/cal" 4 i8 1 64
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/g.tg"
    run_ok "$TQUANT" --scheme weight-int4 --group 32 --calib "$TMP/cal" "$TMP/g.tg" -o "$TMP/q4.tg"
    awk -v e="$(field 'max abs err' "$stderr")" 'BEGIN { exit !(e < 0.5) }'
    [[ "$("$TLOG" diff "$TMP/g.tg" "$TMP/q4.tg")" == *"head.weight.q4: added (u8[512, 64])"* ]]
    run_ok "$TQUANT" --scheme weight-int8 --calib "$TMP/cal" "$TMP/g.tg" -o "$TMP/q8.tg"
    awk -v e="$(field 'max abs err' "$stderr")" 'BEGIN { exit !(e < 0.1) }'
}

@test "every observer calibrates and reports" {
    mkcal "$TMP/cal" 32 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    for o in minmax moving-average percentile entropy histogram; do
        run_ok "$TQUANT" --observer "$o" --calib "$TMP/cal" "$TMP/m.tg" -o "$TMP/q.tg"
        [[ "$stderr" == *"top-1 agreement"* ]]
    done
    run_fails 2 "observer" "$TQUANT" --observer nope --calib "$TMP/cal" "$TMP/m.tg"
}

@test "--skip keeps a named node or an op kind in float" {
    mkcal "$TMP/cal" 4 f4 1 3 32 32
    "$TEXPORT" "$FIX/cnn.pt2" -o "$TMP/c.tg"
    run_ok "$TQUANT" --skip conv2d_1 --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/q.tg"
    ops "$TMP/q.tg" | grep -qx "conv 1"
    ops "$TMP/q.tg" | grep -qx "qconv 1"
    run_ok "$TQUANT" --skip linear --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/q.tg"
    [[ "$(ops "$TMP/q.tg")" != *qlinear* ]]
    run_fails 1 "neither a node" "$TQUANT" --skip nosuch --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/q.tg"
}

@test "a quantized graph is a TG file: tlog diff lists the change" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TQUANT" --scheme dynamic "$TMP/m.tg" -o "$TMP/q.tg"
    run "$TLOG" diff "$TMP/m.tg" "$TMP/q.tg"
    [ "$status" -eq 1 ]
    [[ "$output" == *"op qlinear: 0 -> 3"* && "$output" == *"fc1.weight.q: added (i8[256, 784])"* ]]
}

@test "pipeline: texport | tquant --calib | trun, against PyTorch's float output" {
    # calibrated on the fixture's own input (a file of batch 3: one sample)
    "$TEXPORT" "$FIX/cnn.pt2" | "$TQUANT" -q --calib "$FIX/cnn.in0.b3.npy" >"$TMP/q.tg"
    run_ok "$TRUN" "$TMP/q.tg" "$FIX/cnn.in0.b3.npy" --check "$FIX/cnn.out0.b3.npy" --atol 0.02
}

@test "the report also goes to TLOG=quant as JSON records" {
    mkcal "$TMP/cal" 8 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    TLOG=quant TLOG_FORMAT=json TLOG_FILE="$TMP/log" run_ok "$TQUANT" -q --calib "$TMP/cal" "$TMP/m.tg" -o "$TMP/q.tg"
    [ -z "$stderr" ]
    grep -q '"top1_rows":8' "$TMP/log"
    grep -q 'input scale' "$TMP/log"
}

@test "calibration files: a batch dim splits, a missing batch dim is added" {
    mkcal "$TMP/cal" 2 f4 784
    mkcal "$TMP/cal2" 1 f4 5 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TQUANT" --calib "$TMP/cal" --calib "$TMP/cal2/s0000.npy" "$TMP/m.tg" -o "$TMP/q.tg"
    [[ "$stderr" == *"on 3 calibration samples"* ]]
    [[ "$stderr" == *"(7/7)"* || "$stderr" == *"/7)"* ]]
}

@test "bad calibration data: empty folder, wrong dtype, wrong shape, missing path" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    mkdir "$TMP/empty"
    run_fails 1 "no \.npy files" "$TQUANT" --calib "$TMP/empty" "$TMP/m.tg" -o "$TMP/q.tg"
    [ ! -e "$TMP/q.tg" ]
    mkcal "$TMP/ints" 1 i8 1 784
    run_fails 1 "dtype i64, but input 'x' is f32" "$TQUANT" --calib "$TMP/ints" "$TMP/m.tg" -o "$TMP/q.tg"
    mkcal "$TMP/shape" 1 f4 1 783
    run_fails 1 "does not fit input 'x'" "$TQUANT" --calib "$TMP/shape" "$TMP/m.tg" -o "$TMP/q.tg"
    run_fails 1 "no such file" "$TQUANT" --calib "$TMP/nothere" "$TMP/m.tg" -o "$TMP/q.tg"
    printf 'not npy' >"$TMP/bad.npy"
    run_fails 1 "bad.npy" "$TQUANT" --calib "$TMP/bad.npy" "$TMP/m.tg" -o "$TMP/q.tg"
}

@test "tquant into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_fails 1 "^tquant: -: write error: Broken pipe$" closed_pipe "$TQUANT" --scheme=dynamic "$TMP/m.tg"
}

@test "tquant of an ONNX model says to run texport first" {
    run_fails 1 "^tquant: $FIX/mlp.onnx: an ONNX model, not a TG graph: run texport first$" \
        "$TQUANT" --scheme=dynamic "$FIX/mlp.onnx" -o "$TMP/q.tg"
}

@test "usage errors exit 2: static without --calib, bad scheme, --group with static" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_fails 2 "needs --calib" "$TQUANT" "$TMP/m.tg" -o "$TMP/q.tg"
    run_fails 2 "scheme" "$TQUANT" --scheme int3 "$TMP/m.tg"
    run_fails 2 "weight-only" "$TQUANT" --scheme dynamic --group 8 "$TMP/m.tg"
    run_fails 2 "help" "$TQUANT" --nope
}

@test "compiled: texport | tquant | tcompile gives the interpreter's output bit for bit" {
    mkcal "$TMP/cal" 4 f4 1 3 32 32
    "$TEXPORT" "$FIX/cnn.pt2" | "$TQUANT" -q --calib "$TMP/cal" | tee "$TMP/q.tg" | "$TCOMPILE" >"$TMP/q.so"
    run_ok "$TRUN" "$TMP/q.so" "$FIX/cnn.in0.b3.npy" -o "$TMP/so.npy"
    run_ok "$TRUN" "$TMP/q.tg" "$FIX/cnn.in0.b3.npy" -o "$TMP/tg.npy"
    cmp "$TMP/so.npy" "$TMP/tg.npy"
}

@test "compiled: dynamic and weight-only int4 tinygpt match the interpreter" {
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/g.tg"
    for s in dynamic weight-int4; do
        "$TQUANT" -q --scheme "$s" "$TMP/g.tg" -o "$TMP/q.tg"
        "$TCOMPILE" "$TMP/q.tg" -o "$TMP/q.so"
        run_ok "$TRUN" "$TMP/q.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/so.npy"
        run_ok "$TRUN" "$TMP/q.tg" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/tg.npy"
        cmp "$TMP/so.npy" "$TMP/tg.npy"
    done
}

@test "several graph inputs: calibration files are NAME.KEY.npy, a missing one is an error" {
    "$TEXPORT" "$FIX/layers.pt2" -o "$TMP/l.tg"
    mkdir "$TMP/cal"
    for k in a b; do
        cp "$FIX/layers.in0.npy" "$TMP/cal/x.$k.npy"
        cp "$FIX/layers.in1.npy" "$TMP/cal/tok.$k.npy"
    done
    run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/l.tg" -o "$TMP/q.tg"
    [[ "$stderr" == *"on 2 calibration samples"* ]]
    ops "$TMP/q.tg" | grep -qx "qconv 4"
    cp "$FIX/layers.in0.npy" "$TMP/cal/x.c.npy"
    run_fails 1 "sample 'c': no file for input 'tok' \(tok.c.npy\)" "$TQUANT" --calib "$TMP/cal" "$TMP/l.tg" -o "$TMP/q.tg"
    cp "$FIX/layers.in0.npy" "$TMP/cal/other.npy"
    rm "$TMP/cal/x.c.npy"
    run_fails 1 "other.npy: names no graph input" "$TQUANT" --calib "$TMP/cal" "$TMP/l.tg" -o "$TMP/q.tg"
}

@test "--qdq writes quantize/dequantize pairs; tquant folds them into the same quantized graph" {
    mkcal "$TMP/cal" 8 f4 1 3 32 32
    "$TEXPORT" "$FIX/cnn.pt2" -o "$TMP/c.tg"
    run_ok "$TQUANT" --qdq --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/qdq.tg"
    ops "$TMP/qdq.tg" | grep -qx "quantize 3"
    ops "$TMP/qdq.tg" | grep -qx "dequantize 6"
    ops "$TMP/qdq.tg" | grep -qx "conv 2"
    # folding needs no calibration: nothing is left in float
    run_ok "$TQUANT" "$TMP/qdq.tg" -o "$TMP/fold.tg"
    [[ "$stderr" == *"3 layers folded from quantize/dequantize pairs"* ]]
    ops "$TMP/fold.tg" | grep -qx "qconv 2"
    run_ok "$TQUANT" -q --calib "$TMP/cal" "$TMP/c.tg" -o "$TMP/q.tg"
    run_ok "$TRUN" "$TMP/fold.tg" "$FIX/cnn.in0.b3.npy" -o "$TMP/fold.npy"
    run_ok "$TRUN" "$TMP/q.tg" "$FIX/cnn.in0.b3.npy" -o "$TMP/q.npy"
    cmp "$TMP/fold.npy" "$TMP/q.npy"
    # the float simulation agrees with the integer kernels to float rounding
    run_ok "$TRUN" "$TMP/qdq.tg" "$FIX/cnn.in0.b3.npy" --check "$TMP/q.npy" --atol 1e-4 --rtol 1e-4
    run_fails 2 "static" "$TQUANT" --qdq --scheme dynamic "$TMP/c.tg"
}

@test "static: a qconv read only by qconvs hands them u8; --no-chain keeps float; the same output bit for bit" {
    # qop_chain: 30 QLinearConvs in a row (ONNX Runtime's reference output)
    "$TEXPORT" "$FIX/onnx/qop_chain.onnx" -o "$TMP/g.tg"
    TLOG=quant TLOG_FILE="$TMP/log" run_ok "$TQUANT" -q "$TMP/g.tg" -o "$TMP/c.tg"
    [ "$(grep -c 'u8 output for the next layer' "$TMP/log")" -eq 29 ]
    TLOG=quant TLOG_FILE="$TMP/log0" run_ok "$TQUANT" -q --no-chain "$TMP/g.tg" -o "$TMP/n.tg"
    ! grep -q 'u8 output' "$TMP/log0" || false
    "$TCOMPILE" "$TMP/c.tg" -o "$TMP/c.so"
    x="$FIX/onnx/qop_chain.in0.b3.npy"
    for m in g.tg n.tg c.tg c.so; do run_ok "$TRUN" "$TMP/$m" "$x" -o "$TMP/$m.npy"; done
    cmp "$TMP/g.tg.npy" "$TMP/n.tg.npy"
    cmp "$TMP/g.tg.npy" "$TMP/c.tg.npy"
    cmp "$TMP/g.tg.npy" "$TMP/c.so.npy"
    run_fails 2 "no-chain" "$TQUANT" --scheme dynamic --no-chain "$TMP/g.tg"
}

@test "static: a silu between qconvs is fused (y_act silu), so EfficientNet's depthwise runs int8; .so equals the interpreter" {
    # mbconv: stem, two MBConv blocks (expand -> silu -> depthwise -> silu ->
    # squeeze-excite -> project); the expand and the squeeze convs hand u8
    # through their silu
    mkcal "$TMP/cal" 64 f4 1 3 32 32
    "$TEXPORT" "$FIX/mbconv.pt2" -o "$TMP/m.tg"
    TLOG=quant TLOG_FILE="$TMP/log" run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/m.tg" -o "$TMP/q.tg"
    [ "$(grep -c 'u8 output for the next layer, fused silu' "$TMP/log")" -eq 4 ]
    [ "$(top1 "$stderr")" -ge 9000 ]
    ops "$TMP/q.tg" | grep -qx "qconv 11"
    ! ops "$TMP/q.tg" | grep -q "^conv " || false
    "$TCOMPILE" "$TMP/q.tg" -o "$TMP/q.so"
    x="$FIX/mbconv.in0.npy"
    run_ok "$TRUN" "$TMP/q.tg" "$x" -o "$TMP/i.npy"
    run_ok "$TRUN" "$TMP/q.so" "$x" -o "$TMP/s.npy"
    cmp "$TMP/i.npy" "$TMP/s.npy"
    # against PyTorch's float output
    run_ok "$TRUN" "$TMP/q.so" "$x" --check "$FIX/mbconv.out0.npy" --atol 0.05 --rtol 0
}

@test "static: a gelu between qlinears is fused (y_act gelu, a table), fc2 reads u8; .so equals the interpreter" {
    # tinygpt: two blocks, each fc1 -> gelu -> fc2
    mkcal "$TMP/cal" 8 i8 1 64
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/g.tg"
    TLOG=quant TLOG_FILE="$TMP/log" run_ok "$TQUANT" --calib "$TMP/cal" "$TMP/g.tg" -o "$TMP/q.tg"
    [ "$(grep -c 'u8 output for the next layer, fused gelu' "$TMP/log")" -eq 2 ]
    awk -v e="$(field 'max abs err' "$stderr")" 'BEGIN { exit !(e < 0.1) }'
    ! ops "$TMP/q.tg" | grep -q "^gelu " || false
    "$TCOMPILE" "$TMP/q.tg" -o "$TMP/q.so"
    run_ok "$TRUN" "$TMP/q.so" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/so.npy"
    run_ok "$TRUN" "$TMP/q.tg" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/tg.npy"
    cmp "$TMP/so.npy" "$TMP/tg.npy"
    # --no-chain keeps the gelu in float
    run_ok "$TQUANT" --no-chain --calib "$TMP/cal" "$TMP/g.tg" -o "$TMP/n.tg"
    ops "$TMP/n.tg" | grep -qx "gelu 2"
}
