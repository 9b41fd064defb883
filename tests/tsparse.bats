#!/usr/bin/env bats
# tsparse: 2:4 pruning of linear, matmul and 1x1 convolution weights, the
# layer choice, weights already 2:4, the report and the output change on
# calibration inputs, the interpreter against the compiled model, tquant in
# both orders, bad input.

load common

SEED=${SEED:-7}

mkcal() {
    python3 "$TG_SRCDIR/tests/tools/mkcal.py" "$@"
}

# ops TG: "op count" lines of tlog's summary
ops() {
    "$TLOG" "$1" 2>&1 >/dev/null | sed -n 's/^  \([a-z_0-9]*\) *\([0-9]*\)$/\1 \2/p'
}

@test "tsparse --help and --version" {
    run_ok "$TSPARSE" --help
    [[ "$output" == *"--min-size"* ]]
    run_ok "$TSPARSE" --version
    [[ "$output" == tsparse* ]]
}

@test "tsparse refuses to write a graph to a terminal (exit 2)" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/m.tg"
    refuses_tty "a graph" "$TSPARSE" "$TMP/m.tg"
}

@test "mlp: every linear becomes linear_24 with half its weights zero" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TSPARSE" --report "$TMP/m.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"3 of 3 layers pruned to 2:4"* ]]
    [ "$(grep -c 'sparsity 0.500, weight error 0.4' <<<"$stderr")" -eq 3 ]
    ops "$TMP/s.tg" | grep -qx "linear_24 3"
    ! ops "$TMP/s.tg" | grep -q "^linear " || false
}

@test "the compressed weight is ordinary safetensors: values f32 [N, K/2], meta u8 [N, K/8]" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    "$TSPARSE" -q "$TMP/m.tg" -o "$TMP/s.tg"
    python3 - "$TMP/s.tg" <<'EOF'
import json, struct, sys
data = open(sys.argv[1], 'rb').read()
n = struct.unpack('<Q', data[:8])[0]
h = json.loads(data[8:8 + n])
v = [t for k, t in h.items() if k.endswith('.values')]
m = [t for k, t in h.items() if k.endswith('.meta')]
assert len(v) == 3 and len(m) == 3, (v, m)
assert [256, 392] in [t['shape'] for t in v] and [256, 98] in [t['shape'] for t in m]
assert all(t['dtype'] == 'F32' for t in v) and all(t['dtype'] == 'U8' for t in m)
EOF
}

@test "a weight already 2:4 is kept exactly: the output is bit for bit the dense one" {
    "$UNIT/mkgraph" mlp-24 "$SEED" >"$TMP/d.tg"
    run_ok "$TSPARSE" --report --include fc1 "$TMP/d.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"fc1 (linear [16, 8]): sparsity 0.500, weight error 0 (already 2:4, kept exactly)"* ]]
    [[ "$stderr" == *"fc2 (linear [4, 16]): dense, not included"* ]]
    "$TRUN" "$TMP/d.tg" --random --dim batch=5 -o "$TMP/d.npy"
    run_ok "$TRUN" "$TMP/s.tg" --random --dim batch=5 --check "$TMP/d.npy" --atol 0 --rtol 0
}

@test "mkgraph mlp24 (the CUDA backend's cuSPARSELt test model): every layer 2:4 already, kept exactly" {
    "$UNIT/mkgraph" mlp24:64,96,32:bias "$SEED" >"$TMP/d.tg"
    run_ok "$TSPARSE" --report "$TMP/d.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"fc1 (linear [96, 64]): sparsity 0.500, weight error 0 (already 2:4, kept exactly)"* ]]
    [[ "$stderr" == *"fc2 (linear [32, 96]): sparsity 0.500, weight error 0 (already 2:4, kept exactly)"* ]]
    "$TRUN" "$TMP/d.tg" --random --dim tokens=7 -o "$TMP/d.npy"
    run_ok "$TRUN" "$TMP/s.tg" --random --dim tokens=7 --check "$TMP/d.npy" --atol 0 --rtol 0
    run "$UNIT/mkgraph" mlp24:64 "$SEED"
    [ "$status" -eq 1 ]
}

@test "--include, --exclude and --min-size choose the layers" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TSPARSE" --report --exclude 'linear_[12]' "$TMP/m.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"1 of 3 layers pruned"* ]]
    [[ "$stderr" == *"linear_2 (linear [10, 128]): dense, excluded"* ]]
    ops "$TMP/s.tg" | grep -qx "linear 2"
    run_ok "$TSPARSE" --report --include 'linear_*,nothing' --exclude linear_2 "$TMP/m.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"1 of 3 layers pruned"* ]]
    [[ "$stderr" == *"linear (linear [256, 784]): dense, not included"* ]]
    run_ok "$TSPARSE" --report --min-size 32768 "$TMP/m.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"2 of 3 layers pruned"* ]]
    [[ "$stderr" == *"linear_2 (linear [10, 128]): dense, smaller than the minimum size"* ]]
}

@test "1x1 convolutions: pruned through permutes, batch norm folded first; others stay dense" {
    "$UNIT/mkgraph" conv1x1 "$SEED" >"$TMP/c.tg"
    run_ok "$TSPARSE" --report "$TMP/c.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"2 of 4 layers pruned"* ]]
    [[ "$stderr" == *"c1 (conv [16, 8]): sparsity 0.500"* ]]
    [[ "$stderr" == *"c2 (conv [12, 16]): dense, 1x1 convolution with groups, stride"* ]]
    [[ "$stderr" == *"c4 (conv [4, 6]): dense, reduction dim not a multiple of 4"* ]]
    ops "$TMP/s.tg" | grep -qx "linear_24 2"
    ops "$TMP/s.tg" | grep -qx "conv 2"
    ! ops "$TMP/s.tg" | grep -q "^batch_norm " || false
}

@test "matmul with a constant operand: pruned along its rows, the shared weight compressed once" {
    "$TEXPORT" "$FIX/layers.pt2" -o "$TMP/l.tg"
    run_ok "$TSPARSE" --report "$TMP/l.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"4 of 4 layers pruned"* ]]
    [ "$(grep -c '(matmul \[5, 16\]): sparsity 0.500' <<<"$stderr")" -eq 3 ]
    ops "$TMP/s.tg" | grep -qx "linear_24 4"
    # one compressed weight for the linear, one for the three matmuls
    [ "$(grep -ao '[A-Za-z0-9_.]*\.values' "$TMP/s.tg" | sort -u | wc -l)" -eq 2 ]
}

@test "compiled: tsparse | tcompile gives the interpreter's output bit for bit" {
    "$UNIT/mkgraph" conv1x1 "$SEED" | "$TSPARSE" -q -o "$TMP/c.tg"
    "$TCOMPILE" "$TMP/c.tg" -o "$TMP/c.so"
    "$TRUN" "$TMP/c.tg" --random --dim batch=3 -o "$TMP/c.npy"
    run_ok "$TRUN" "$TMP/c.so" --random --dim batch=3 --check "$TMP/c.npy" --atol 0 --rtol 0
    "$TEXPORT" "$FIX/tinygpt.pt2" | "$TSPARSE" -q -o "$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/g.so"
    "$TRUN" "$TMP/g.tg" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/g.npy"
    run_ok "$TRUN" "$TMP/g.so" "$FIX/tinygpt.in0.b3.npy" --check "$TMP/g.npy" --atol 0 --rtol 0
}

@test "--calib reports the output change against the dense graph, also to TLOG=sparse" {
    mkcal "$TMP/cal" 8 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TSPARSE" --calib "$TMP/cal" "$TMP/m.tg" -o "$TMP/s.tg"
    [[ "$stderr" == *"output change against the dense graph on 8 calibration samples:"* ]]
    [[ "$stderr" =~ "output 'linear_2': max abs err "[0-9.e-]+", mean abs err "[0-9.e-]+", top-1 agreement" ]]
    TLOG=sparse TLOG_FORMAT=json TLOG_FILE="$TMP/log" run_ok "$TSPARSE" -q --calib "$TMP/cal" \
        --limit 4 "$TMP/m.tg" -o "$TMP/s.tg"
    [ -z "$stderr" ]
    grep -q '"top1_rows":4' "$TMP/log"
    grep -q 'linear_1: linear \[128, 256\] -> 2:4' "$TMP/log"
}

@test "with tquant, both orders: int8 qlinear_24; tquant | tsparse prunes its qlinear; .so equals trun" {
    mkcal "$TMP/cal" 8 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    "$TSPARSE" -q --exclude linear_2 "$TMP/m.tg" | "$TQUANT" -q --calib "$TMP/cal" -o "$TMP/sq.tg"
    ops "$TMP/sq.tg" | grep -qx "qlinear_24 2"
    ops "$TMP/sq.tg" | grep -qx "qlinear 1"
    ! ops "$TMP/sq.tg" | grep -q "^linear" || false
    "$TQUANT" -q --scheme dynamic --skip linear "$TMP/m.tg" >"$TMP/q.tg"
    run_ok "$TSPARSE" --report "$TMP/q.tg" -o "$TMP/qs.tg"
    [[ "$stderr" == *"3 of 3 layers pruned to 2:4"* ]]
    [[ "$stderr" == *"linear_1.q (qlinear [128, 256]): sparsity 0.500, weight error 0.4"* ]]
    ops "$TMP/qs.tg" | grep -qx "linear_24 1"
    ops "$TMP/qs.tg" | grep -qx "qlinear_24 2"
    for m in sq qs; do
        "$TCOMPILE" "$TMP/$m.tg" -o "$TMP/$m.so"
        "$TRUN" "$TMP/$m.tg" "$FIX/mlp.in0.b3.npy" -o "$TMP/$m.npy"
        run_ok "$TRUN" "$TMP/$m.so" "$FIX/mlp.in0.b3.npy" --check "$TMP/$m.npy" --atol 0 --rtol 0
    done
}

@test "texport | tsparse | tquant --calib | tcompile: the int8 2:4 model near the float 2:4 one" {
    mkcal "$TMP/cal" 16 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" | "$TSPARSE" -q -o "$TMP/s.tg"
    "$TEXPORT" "$FIX/mlp.pt2" | "$TSPARSE" -q | "$TQUANT" -q --calib "$TMP/cal" |
        "$TCOMPILE" -o "$TMP/sq.so"
    # on a calibration sample: within int8 rounding (outputs about 0.1-0.3)
    "$TRUN" "$TMP/s.tg" "$TMP/cal/s0003.npy" -o "$TMP/s.npy"
    run_ok "$TRUN" "$TMP/sq.so" "$TMP/cal/s0003.npy" --check "$TMP/s.npy" --atol 0.003 --rtol 0
    # the interpreter and the .so, bit for bit, at another batch
    "$TEXPORT" "$FIX/mlp.pt2" | "$TSPARSE" -q | "$TQUANT" -q --calib "$TMP/cal" -o "$TMP/sq.tg"
    ops "$TMP/sq.tg" | grep -qx "qlinear_24 3"
    "$TRUN" "$TMP/sq.tg" --random --dim s0=5 -o "$TMP/sq.npy"
    run_ok "$TRUN" "$TMP/sq.so" --random --dim s0=5 --check "$TMP/sq.npy" --atol 0 --rtol 0

    # a transformer, dynamic scheme: its 9 linears and matmuls on qlinear_24
    "$TEXPORT" "$FIX/tinygpt.pt2" | "$TSPARSE" -q -o "$TMP/g.tg"
    "$TQUANT" -q --scheme dynamic "$TMP/g.tg" -o "$TMP/gq.tg"
    ops "$TMP/gq.tg" | grep -qx "qlinear_24 9"
    "$TCOMPILE" "$TMP/gq.tg" -o "$TMP/gq.so"
    "$TRUN" "$TMP/gq.tg" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/gq.npy"
    run_ok "$TRUN" "$TMP/gq.so" "$FIX/tinygpt.in0.b3.npy" --check "$TMP/gq.npy" --atol 0 --rtol 0
    "$TRUN" "$TMP/g.tg" "$FIX/tinygpt.in0.b3.npy" -o "$TMP/g.npy"
    run_ok "$TRUN" "$TMP/gq.so" "$FIX/tinygpt.in0.b3.npy" --check "$TMP/g.npy" --atol 0.05 --rtol 0
}

@test "tquant's weight-only schemes and --qdq leave linear_24 in float32" {
    mkcal "$TMP/cal" 4 f4 1 784
    "$TEXPORT" "$FIX/mlp.pt2" | "$TSPARSE" -q -o "$TMP/s.tg"
    "$TQUANT" -q --scheme weight-int8 "$TMP/s.tg" -o "$TMP/w.tg"
    ops "$TMP/w.tg" | grep -qx "linear_24 3"
    "$TQUANT" -q --qdq --calib "$TMP/cal" "$TMP/s.tg" -o "$TMP/d.tg"
    ops "$TMP/d.tg" | grep -qx "linear_24 3"
}

@test "bad input: not a graph, an ONNX model, bad calibration data (exit 1, one line)" {
    printf 'garbage' >"$TMP/bad.tg"
    run_fails 1 "^tsparse: $TMP/bad.tg: " "$TSPARSE" "$TMP/bad.tg" -o "$TMP/s.tg"
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
    [ ! -e "$TMP/s.tg" ]
    run_fails 1 "an ONNX model, not a TG graph: run texport first" "$TSPARSE" "$FIX/mlp.onnx"
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    mkcal "$TMP/shape" 1 f4 1 783
    run_fails 1 "does not fit input 'x'" "$TSPARSE" --calib "$TMP/shape" "$TMP/m.tg" -o "$TMP/s.tg"
    [ ! -e "$TMP/s.tg" ]
}

@test "usage errors exit 2: bad option values, --limit without --calib, two graphs" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/m.tg"
    run_fails 2 "min-size" "$TSPARSE" --min-size -1 "$TMP/m.tg"
    run_fails 2 "min-size" "$TSPARSE" --min-size lots "$TMP/m.tg"
    run_fails 2 "--limit is for --calib" "$TSPARSE" --limit 3 "$TMP/m.tg"
    run_fails 2 "one graph at a time" "$TSPARSE" "$TMP/m.tg" "$TMP/m.tg"
    run_fails 2 "help" "$TSPARSE" --nope
}

@test "tsparse into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/m.tg"
    run_fails 1 "^tsparse: -: write error: Broken pipe$" closed_pipe "$TSPARSE" -q "$TMP/m.tg"
}
