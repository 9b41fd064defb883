#!/usr/bin/env bats
# trun: running TG graphs on the reference interpreter. The fixture models
# (texport of tests/fixtures/*.pt2) must match PyTorch's outputs within
# rtol 1e-4 (each |out-ref| <= 1e-5 + 1e-4 * |ref|) for batch 1 and 3 through
# one graph; the other behaviours use a small MLP from the mkgraph helper
# (x f32[batch, 8], batch in 1..64) with a fresh random seed per test, and
# fresh random inputs (trun --random with a random seed, or /dev/urandom).

load common

setup() {
    common_setup
    SEED=$RANDOM$RANDOM
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
}

# make_npy FILE DESCR SHAPE: a .npy of random bytes, e.g. make_npy x.npy '<f4' '(2, 8)'
make_npy() {
    local file=$1 descr=$2 shape=$3
    local hdr="{'descr': '$descr', 'fortran_order': False, 'shape': $shape, }"
    local len=$(( (10 + ${#hdr} + 1 + 63) / 64 * 64 - 10 ))
    local n=1 d
    for d in $(tr -c '0-9' ' ' <<<"$shape"); do n=$((n * d)); done
    local size=${descr:2}
    {
        printf '\x93NUMPY\x01\x00'
        printf "\\x$(printf %02x $((len & 255)))\\x$(printf %02x $((len >> 8)))"
        printf '%-*s\n' $((len - 1)) "$hdr"
        head -c $((n * size)) /dev/urandom
    } >"$file"
}

# check_fixture MODEL VARIANT: texport, then both batches through one graph
# (and once straight from the pipe, texport M | trun -).
check_fixture() {
    "$TEXPORT" "$FIX/$1.$2" >"$TMP/m.tg"
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.tg" "$FIX/$1.in0.b$b.npy" --check "$FIX/$1.out0.b$b.npy"
        echo "$1.$2 batch $b: $output" >&3
        [[ "$output" == *": ok" ]]
    done
    run_ok bash -c '"$1" "$2" | "$3" - "$4" --check "$5"' _ "$TEXPORT" "$FIX/$1.$2" "$TRUN" \
        "$FIX/$1.in0.b3.npy" "$FIX/$1.out0.b3.npy"
    [[ "$output" == *": ok" ]]
}

@test "trun --help prints usage on stdout and exits 0" {
    run_ok "$TRUN" --help
    [[ "$output" == *"Usage: trun [OPTION]... MODEL"* ]]
    [[ "$output" == *"--check"* && "$output" == *"--bench"* ]]
    [ -z "$stderr" ]
}

@test "trun --help says that it runs both TG graphs and compiled shared objects" {
    run_ok "$TRUN" --help
    [[ "$output" == *"MODEL is a TG graph (run by the reference"* ]]
    [[ "$output" == *"or a shared object compiled by tcompile; - reads either from"* ]]
}

@test "trun --help names the environment variables it reads" {
    run_ok "$TRUN" --help
    for v in TGRAPH_LOOP_MAX TLOG TG_BACKEND_PATH TG_CUDA_MATH TG_CUSPARSELT; do
        [[ "$output" == *"$v"* ]] || { echo "no $v"; false; }
    done
}

@test "trun --version prints the package version" {
    run_ok "$TRUN" --version
    [ "$output" = "trun (tgraph) 0.1.0" ]
}

@test "trun with no model is a usage error" {
    run_fails 2 "no model given" "$TRUN"
    run_fails 2 "Try 'trun --help'" "$TRUN"
}

@test "trun with an unknown option is a usage error" {
    run_fails 2 "Try 'trun --help'" "$TRUN" --bogus "$TMP/g.tg"
    [ -z "$output" ]
}

@test "trun with a bad option value is a usage error" {
    run_fails 2 "threads" "$TRUN" --threads=-3 --random "$TMP/g.tg"
    run_fails 2 "rtol" "$TRUN" --rtol=abc --random "$TMP/g.tg"
}

@test "mlp.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture mlp pt2
}

@test "mlp.core.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture mlp core.pt2
}

@test "cnn.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture cnn pt2
}

@test "cnn.core.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture cnn core.pt2
}

@test "tinygpt.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture tinygpt pt2
}

@test "tinygpt.core.pt2 through texport matches PyTorch for batch 1 and 3" {
    check_fixture tinygpt core.pt2
}

@test "mlp.onnx through texport matches PyTorch for batch 1 and 3" {
    check_fixture mlp onnx
}

@test "cnn.onnx through texport matches PyTorch for batch 1 and 3" {
    check_fixture cnn onnx
}

@test "tinygpt.onnx through texport matches PyTorch for batch 1 and 3" {
    check_fixture tinygpt onnx
}

@test "trun reads the model from stdin as -" {
    "$TRUN" --random --seed "$SEED" "$TMP/g.tg" -o "$TMP/a.npy"
    "$TRUN" --random --seed "$SEED" - -o "$TMP/b.npy" <"$TMP/g.tg"
    cmp "$TMP/a.npy" "$TMP/b.npy"
}

@test "trun writes the output to stdout and -o alike" {
    make_npy "$TMP/in.npy" '<f4' '(5, 8)'
    "$TRUN" "$TMP/g.tg" "$TMP/in.npy" >"$TMP/a.npy"
    "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/b.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
    [ "$(head -c 6 "$TMP/a.npy" | tail -c 5)" = "NUMPY" ]
    grep -aq "'shape': (5, 4)" "$TMP/a.npy"
}

@test "trun reads and writes uint16, uint32 and uint64 .npy files as NumPy does" {
    local o=$FIX/onnx
    run_ok "$TEXPORT" -o "$TMP/u.tg" "$o/unsigned.onnx"
    # shellcheck disable=SC2046
    run_ok "$TRUN" "$TMP/u.tg" $(ls "$o"/unsigned.in*.b3.npy) -o "$TMP/out"
    # outputs 0 (u64, values over 2^63), 9 (u32), 11 (u16): NumPy's very bytes
    for k in 0 9 11; do
        cmp "$TMP/out/out$k.npy" "$o/unsigned.out$k.b3.npy"
    done
    grep -aq "'descr': '<u8'" "$TMP/out/out0.npy"
    grep -aq "'descr': '<u2'" "$TMP/out/out11.npy"
}

@test "trun reads and writes bf16 and float8 .npy files as ml_dtypes names them" {
    # fixtures by tests/fixtures/ml_dtypes/gen.py: descr 'bfloat16' / 'float8_e4m3fn' /
    # 'float8_e5m2', which np.load reads back as those dtypes after import ml_dtypes
    local m=$FIX/ml_dtypes
    run_ok "$TEXPORT" -o "$TMP/n.tg" "$m/narrow.onnx"
    run_ok "$TRUN" "$TMP/n.tg" "$m/narrow.in0.npy" "$m/narrow.in1.npy" -o "$TMP/out"
    cmp "$TMP/out/out0.npy" "$m/narrow.out0.npy"
    cmp "$TMP/out/out1.npy" "$m/narrow.out1.npy"
    grep -aq "'descr': 'bfloat16'" "$TMP/out/out0.npy"
    grep -aq "'descr': 'float8_e5m2'" "$TMP/out/out1.npy"
    run_ok "$TRUN" "$TMP/n.tg" "$m/narrow.in0.npy" "$m/narrow.in1.npy" \
        --check "$m/narrow.out0.npy,$m/narrow.out1.npy"
    [[ "$output" == *"output 1 'ye' f8e5m2[4]: max abs error 0, max rel error 0: ok"* ]]
}

@test "trun reads np.save's raw '<V2' and '<V1' only as the model input's bf16 and float8" {
    local m=$FIX/ml_dtypes
    run_ok "$TEXPORT" -o "$TMP/n.tg" "$m/narrow.onnx"
    grep -aq "'descr': '<V2'" "$m/narrow.in0.raw.npy"
    run_ok "$TRUN" "$TMP/n.tg" "$m/narrow.in0.raw.npy" "$m/narrow.in1.raw.npy" -o "$TMP/out"
    cmp "$TMP/out/out0.npy" "$m/narrow.out0.npy"
    cmp "$TMP/out/out1.npy" "$m/narrow.out1.npy"
    # one-byte raw data given for the bf16 input: refused, naming the descr
    run_fails 1 "descr '<V1' is raw 1-byte data, which is not read as bf16" \
        "$TRUN" "$TMP/n.tg" xb="$m/narrow.in1.raw.npy" xe="$m/narrow.in1.raw.npy" -o "$TMP/o2"
}

@test "int4, uint4, float4_e2m1fn and the fnuz float8s convert exactly as ml_dtypes does" {
    # fixtures by tests/fixtures/ml_dtypes/gen.py: casts from f32 onto every code
    # and rounding tie of each type, every code back to f32, and packed int4/uint4/
    # float4e2m1 initializers (raw_data and int32_data) unpacked by texport
    local m=$FIX/ml_dtypes args=() k
    run_ok "$TEXPORT" -o "$TMP/f.tg" "$m/fourbit.onnx"
    for k in $(seq 0 7); do args+=("$m/fourbit.in$k.npy"); done
    run_ok "$TRUN" "$TMP/f.tg" "${args[@]}" -o "$TMP/out"
    for k in $(seq 0 12); do cmp "$TMP/out/out$k.npy" "$m/fourbit.out$k.npy"; done
    grep -aq "'descr': 'float8_e4m3fnuz'" "$TMP/out/out0.npy"
    grep -aq "'descr': 'int4'" "$TMP/out/out3.npy"
    # np.save's raw '<V1' is read as the model input's type (c0: f8e4m3fnuz)
    # compiled: the same bytes
    run_ok "$TCOMPILE" -o "$TMP/f.so" "$TMP/f.tg"
    run_ok "$TRUN" "$TMP/f.so" "${args[@]}" -o "$TMP/out3"
    for k in $(seq 0 12); do cmp "$TMP/out3/out$k.npy" "$m/fourbit.out$k.npy"; done
    args[3]=$m/fourbit.in3.raw.npy
    run_ok "$TRUN" "$TMP/f.tg" "${args[@]}" -o "$TMP/out2"
    cmp "$TMP/out2/out5.npy" "$m/fourbit.out5.npy"
}

@test "trun takes inputs by name" {
    make_npy "$TMP/in.npy" '<f4' '(2, 8)'
    "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/a.npy"
    "$TRUN" "$TMP/g.tg" x="$TMP/in.npy" -o "$TMP/b.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
}

@test "trun reads an input from stdin as -" {
    make_npy "$TMP/in.npy" '<f4' '(3, 8)'
    "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/a.npy"
    "$TRUN" "$TMP/g.tg" - -o "$TMP/b.npy" <"$TMP/in.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
}

@test "trun refuses stdin for both the model and an input" {
    run_fails 1 "stdin can feed one file only" "$TRUN" - - <"$TMP/g.tg"
}

@test "trun rejects an input of the wrong dtype" {
    make_npy "$TMP/in.npy" '<i8' '(2, 8)'
    run_fails 1 "input 0 'x': wrong dtype: got i64\[2,8\], expected f32\[batch, 8\]" \
        "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/y.npy"
    [ ! -e "$TMP/y.npy" ]
}

@test "trun rejects an input of the wrong rank" {
    make_npy "$TMP/in.npy" '<f4' '(2, 8, 1)'
    run_fails 1 "input 0 'x': wrong rank: got f32\[2,8,1\], expected f32\[batch, 8\]" \
        "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/y.npy"
}

@test "trun rejects an input with a wrong dim" {
    make_npy "$TMP/in.npy" '<f4' '(2, 9)'
    run_fails 1 "input 0 'x': dim 1 does not match: got f32\[2,9\], expected f32\[batch, 8\]" \
        "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/y.npy"
}

@test "trun rejects a symbol outside its range, naming symbol, value and range" {
    make_npy "$TMP/in.npy" '<f4' '(65, 8)'
    run_fails 1 "symbol 'batch' = 65 is outside its range \[1, 64\]" \
        "$TRUN" "$TMP/g.tg" "$TMP/in.npy" -o "$TMP/y.npy"
}

@test "trun reports a missing input" {
    run_fails 1 "missing input 0 'x'" "$TRUN" "$TMP/g.tg" -o "$TMP/y.npy"
}

@test "trun reports an extra input" {
    make_npy "$TMP/in.npy" '<f4' '(2, 8)'
    run_fails 1 "one input too many: the model takes 1 input" \
        "$TRUN" "$TMP/g.tg" "$TMP/in.npy" "$TMP/in.npy" -o "$TMP/y.npy"
}

@test "trun reports an unreadable or missing .npy file" {
    head -c 100 /dev/urandom >"$TMP/bad.npy"
    run_fails 1 "bad.npy: .*npy" "$TRUN" "$TMP/g.tg" "$TMP/bad.npy" -o "$TMP/y.npy"
    run_fails 1 "nope.npy: No such file" "$TRUN" "$TMP/g.tg" "$TMP/nope.npy" -o "$TMP/y.npy"
}

@test "trun reports a truncated .npy file" {
    make_npy "$TMP/in.npy" '<f4' '(4, 8)'
    head -c 150 "$TMP/in.npy" >"$TMP/cut.npy"
    run_fails 1 "cut.npy: " "$TRUN" "$TMP/g.tg" "$TMP/cut.npy" -o "$TMP/y.npy"
}

@test "trun reports a model file that is not a graph" {
    head -c 1000 /dev/urandom >"$TMP/bad.tg"
    run_fails 1 "^trun: .*bad.tg: " "$TRUN" --random "$TMP/bad.tg" -o "$TMP/y.npy"
}

@test "trun of a .pt2 archive says what it is and to run texport first" {
    run_fails 1 "^trun: $FIX/mlp.pt2: a PyTorch archive \(.pt2\), not a TG graph: run texport first$" \
        "$TRUN" "$FIX/mlp.pt2" "$FIX/mlp.in0.b1.npy"
    [ -z "$output" ]
}

@test "trun of an ONNX model says what it is and to run texport first" {
    run_fails 1 "^trun: $FIX/mlp.onnx: an ONNX model, not a TG graph: run texport first$" \
        "$TRUN" "$FIX/mlp.onnx" "$FIX/mlp.in0.b1.npy"
}

@test "trun with an input before the model says to give the model first" {
    "$TRUN" --random "$TMP/g.tg" -o "$TMP/x.npy"
    run_fails 1 "^trun: $TMP/x.npy: a NumPy array \(.npy\), not a TG graph: give the model first, then its inputs$" \
        "$TRUN" "$TMP/x.npy" "$TMP/g.tg"
}

@test "trun with a .pt2 archive as an input says it is not a .npy file" {
    run_fails 1 "^trun: $FIX/mlp.pt2: a PyTorch archive \(.pt2\), not a .npy file$" \
        "$TRUN" "$TMP/g.tg" "$FIX/mlp.pt2" -o "$TMP/y.npy"
}

@test "trun of a text file says it is text, not a graph" {
    printf 'x = 1, y = 2\n' >"$TMP/m.txt"
    run_fails 1 "^trun: $TMP/m.txt: a text file, not a TG graph: a graph is a binary TG file \(tgraph-format\(5\)\)$" \
        "$TRUN" --random "$TMP/m.txt" -o "$TMP/y.npy"
}

@test "trun into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    run_fails 1 "^trun: -: write error: Broken pipe$" closed_pipe "$TRUN" --random "$TMP/g.tg"
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
}

@test "trun --check prints max abs and max rel error and passes on a match" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    run_ok "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" --check "$TMP/ref.npy"
    [ "$output" = "output 0 'out' f32[7,4]: max abs error 0, max rel error 0: ok" ]
}

@test "trun --check exits 1 when an output is over tolerance" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    run --separate-stderr "$TRUN" --random --seed $((SEED + 1)) --dim batch=7 "$TMP/g.tg" \
        --check "$TMP/ref.npy"
    [ "$status" -eq 1 ]
    [[ "$output" == *"max abs error "*": FAIL" ]]
}

# npy_set FILE INDEX VALUE: element INDEX (flat) of FILE, a float32 .npy that
# trun wrote, becomes VALUE (a Python float: 1.5, inf, -inf, nan).
npy_set() {
    python3 - "$@" <<'EOF'
import struct, sys
p, i, v = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
b = bytearray(open(p, "rb").read())
struct.pack_into("<f", b, 10 + struct.unpack("<H", b[8:10])[0] + 4 * i, v)
open(p, "wb").write(b)
EOF
}

@test "trun --check counts the failing elements and names the worst one" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    npy_set "$TMP/ref.npy" 9 1e3
    npy_set "$TMP/ref.npy" 14 -inf
    run --separate-stderr "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" \
        --check "$TMP/ref.npy"
    [ "$status" -eq 1 ]
    [[ "$output" =~ ^"output 0 'out' f32[7,4]: max abs error inf, max rel error "[0-9.e+-]+", 2 of 28 elements over atol + rtol*|ref|, the worst [3,2]: "[0-9.e+-]+", reference -inf: FAIL"$ ]]
}

@test "trun --check fails an output where the reference has an inf" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    npy_set "$TMP/ref.npy" 5 inf
    run --separate-stderr "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" \
        --check "$TMP/ref.npy"
    [ "$status" -eq 1 ]
    [[ "$output" == *", 1 of 28 elements over atol + rtol*|ref|, the worst [1,1]: "*", reference inf: FAIL" ]]
}

# make_x FILE SCALE [nan]: f32[2,8] uniform in [-1, 1) from $SEED, row 0 times
# SCALE, element 3 NaN when asked
make_x() {
    python3 - "$SEED" "$@" <<'EOF'
import random, struct, sys
random.seed(int(sys.argv[1]))
x = [random.uniform(-1, 1) * (float(sys.argv[3]) if i < 8 else 1) for i in range(16)]
if len(sys.argv) > 4:
    x[3] = float("nan")
h = b"{'descr': '<f4', 'fortran_order': False, 'shape': (2, 8), }"
h += b" " * (63 - (10 + len(h)) % 64) + b"\n"
open(sys.argv[2], "wb").write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h +
                              struct.pack("<16f", *x))
EOF
}

@test "trun --check bounds each element by its own reference, not the largest one" {
    make_x "$TMP/x.npy" 1e4
    "$TRUN" "$TMP/g.tg" "$TMP/x.npy" -o "$TMP/ref.npy"
    # row 0 is large: under max|ref| its bound would cover row 1's small errors
    python3 - "$TMP/ref.npy" <<'EOF'
import struct, sys
b = bytearray(open(sys.argv[1], "rb").read())
off = 10 + struct.unpack("<H", b[8:10])[0]
v = list(struct.unpack_from("<8f", b, off))
k = min(range(4, 8), key=lambda i: abs(v[i]))
v[k] += 2 * (1e-5 + 1e-4 * abs(v[k]))
struct.pack_into("<8f", b, off, *v)
open(sys.argv[1], "wb").write(b)
EOF
    run --separate-stderr "$TRUN" "$TMP/g.tg" "$TMP/x.npy" --check "$TMP/ref.npy"
    [ "$status" -eq 1 ]
    [[ "$output" == *", 1 of 8 elements over atol + rtol*|ref|, the worst [1,"* ]]
}

@test "trun --check passes NaN where the reference has NaN" {
    make_x "$TMP/xnan.npy" 1 nan
    "$TRUN" "$TMP/g.tg" "$TMP/xnan.npy" -o "$TMP/refnan.npy"
    run_ok "$TRUN" "$TMP/g.tg" "$TMP/xnan.npy" --check "$TMP/refnan.npy"
    [[ "$output" == *": ok" ]]
}

@test "trun --check fails NaN where the reference has a number" {
    make_x "$TMP/x.npy" 1
    make_x "$TMP/xnan.npy" 1 nan
    "$TRUN" "$TMP/g.tg" "$TMP/x.npy" -o "$TMP/ref.npy"
    run --separate-stderr "$TRUN" "$TMP/g.tg" "$TMP/xnan.npy" --check "$TMP/ref.npy"
    [ "$status" -eq 1 ]
    [[ "$output" == *", 4 of 8 elements over atol + rtol*|ref|, the worst [0,0]: nan, reference "*": FAIL" ]]
}

@test "trun --check fails on a reference of another dtype" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    python3 - "$TMP/ref.npy" <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read()
off = 10 + struct.unpack("<H", b[8:10])[0]
h = b[10:off].replace(b"<f4", b"<f8")
v = struct.unpack_from("<28f", b, off)
open(sys.argv[1], "wb").write(b[:8] + struct.pack("<H", len(h)) + h + struct.pack("<28d", *v))
EOF
    run_fails 1 "output 0 'out' is f32\[7,4\], the reference f64\[7,4\]" \
        "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" --check "$TMP/ref.npy"
}

@test "trun --check with a loose --atol passes what the default fails" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    run_ok "$TRUN" --random --seed $((SEED + 1)) --dim batch=7 "$TMP/g.tg" \
        --check "$TMP/ref.npy" --atol 1e30
    [[ "$output" == *": ok" ]]
}

@test "trun --check fails on a reference of another shape" {
    "$TRUN" --random --seed "$SEED" --dim batch=7 "$TMP/g.tg" -o "$TMP/ref.npy"
    run_fails 1 "output 0 'out' is f32\[6,4\], the reference f32\[7,4\]" \
        "$TRUN" --random --dim batch=6 "$TMP/g.tg" --check "$TMP/ref.npy"
}

@test "trun --check with a different number of references is a usage error" {
    "$TRUN" --random "$TMP/g.tg" -o "$TMP/ref.npy"
    run_fails 2 "--check has 2 references, the model has 1 output" \
        "$TRUN" --random "$TMP/g.tg" --check "$TMP/ref.npy,$TMP/ref.npy"
}

@test "trun --random is deterministic for a seed and differs between seeds" {
    "$TRUN" --random --seed "$SEED" "$TMP/g.tg" -o "$TMP/a.npy"
    "$TRUN" --random --seed "$SEED" "$TMP/g.tg" -o "$TMP/b.npy"
    "$TRUN" --random --seed $((SEED + 1)) "$TMP/g.tg" -o "$TMP/c.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
    ! cmp -s "$TMP/a.npy" "$TMP/c.npy" || false
}

@test "trun --random uses the symbol's minimum, or --dim" {
    "$TRUN" --random "$TMP/g.tg" -o "$TMP/a.npy"
    grep -aq "'shape': (1, 4)" "$TMP/a.npy"
    "$TRUN" --random --dim batch=64 "$TMP/g.tg" -o "$TMP/b.npy"
    grep -aq "'shape': (64, 4)" "$TMP/b.npy"
}

@test "trun --dim with an unknown symbol is a usage error" {
    run_fails 2 "--dim seq: the model has no such symbol \(it has: batch\)" \
        "$TRUN" --random --dim seq=4 "$TMP/g.tg"
}

@test "trun --dim outside the symbol's range is an error" {
    run_fails 1 "symbol 'batch' = 65 is outside its range \[1, 64\]" \
        "$TRUN" --random --dim batch=65 "$TMP/g.tg" -o "$TMP/y.npy"
}

@test "trun --random makes valid embedding indices" {
    "$TEXPORT" "$FIX/tinygpt.pt2" >"$TMP/m.tg"
    run_ok "$TRUN" --random --seed "$SEED" --dim s0=2 "$TMP/m.tg" -o "$TMP/y.npy"
    grep -aq "'shape': (2, 64, 512)" "$TMP/y.npy"
}

@test "trun --bench prints latency percentiles and throughput on stderr" {
    run_ok "$TRUN" --random --bench=7 --warmup=1 "$TMP/g.tg"
    [ -z "$output" ]
    [[ "$stderr" =~ "bench: 7 runs after 1 warm-up: min "[0-9.]+" ms, median "[0-9.]+" ms, p90 "[0-9.]+" ms, p99 "[0-9.]+" ms, "[0-9.]+" runs/s" ]]
}

@test "trun --bench without a count times 10 runs" {
    run_ok "$TRUN" --random --bench "$TMP/g.tg"
    [[ "$stderr" == *"bench: 10 runs after 2 warm-up"* ]]
}

@test "trun --bench N with a space takes N as the count, not as a file" {
    run_ok "$TRUN" --random --bench 7 --warmup=1 "$TMP/g.tg"
    [[ "$stderr" == *"bench: 7 runs after 1 warm-up"* ]]
    run_ok "$TRUN" "$TMP/g.tg" --random --bench 4 --warmup=1
    [[ "$stderr" == *"bench: 4 runs after 1 warm-up"* ]]
}

@test "trun --warmup with a unit warms up for that long, however many runs it takes" {
    run_ok "$TRUN" --random --bench=3 --warmup=50ms "$TMP/g.tg"
    [[ "$stderr" =~ "bench: 3 runs after "([0-9]+)" warm-up" ]]
    [ "${BASH_REMATCH[1]}" -gt 2 ]
}

@test "trun --warmup that is neither a count nor a time is a usage error" {
    run_fails 2 "warmup: '5x' is not an integer" "$TRUN" --random --bench=3 --warmup=5x "$TMP/g.tg"
    run_fails 2 "--warmup: '-1s' is not a number of runs or a time up to 3600s" \
        "$TRUN" --random --bench=3 --warmup=-1s "$TMP/g.tg"
}

@test "trun --threads 1 gives the same output as all threads" {
    "$TRUN" --random --seed "$SEED" --dim batch=64 "$TMP/g.tg" -o "$TMP/a.npy"
    run_ok "$TRUN" --threads 1 --random --seed "$SEED" --dim batch=64 "$TMP/g.tg" \
        --check "$TMP/a.npy" --rtol 1e-6 --atol 0
}

@test "trun --device cpu gives the default's output, bit for bit" {
    "$TRUN" --random --seed "$SEED" --dim batch=5 "$TMP/g.tg" -o "$TMP/a.npy"
    run_ok "$TRUN" --device cpu --random --seed "$SEED" --dim batch=5 "$TMP/g.tg" -o "$TMP/b.npy"
    cmp "$TMP/a.npy" "$TMP/b.npy"
}

@test "trun --device with an unknown name is a usage error listing the devices" {
    run_fails 2 "^trun: --device: no device 'gpu9' \\(known: cpu" "$TRUN" --device gpu9 --random "$TMP/g.tg"
}

# cuda_or_skip: skip, saying why, when this build has no cuda device (no
# libtgraph-backend-cuda.so: make check names the build's in TG_BACKEND_PATH);
# one that is there but does not load fails
cuda_or_skip() {
    if ! "$TRUN" --device cuda --random "$TMP/g.tg" -o "$TMP/probe.npy" 2>"$TMP/probe.err"; then
        grep -q "no device 'cuda' (.*no libtgraph-backend-cuda.so in" "$TMP/probe.err" &&
            skip "no libtgraph-backend-cuda.so: built without CUDA, or TG_BACKEND_PATH names no build's lib/backend/cuda/.libs"
        cat "$TMP/probe.err" >&2
        return 1
    fi
}

@test "no tool links a CUDA library: the cuda device is a shared object loaded when asked for" {
    need ldd libc-bin
    for t in trun tcompile texport tquant tsparse tlog; do
        run_ok ldd "$TG_TOOLS/$t"
        [[ "$output" != *libcuda* && "$output" != *libcublas* ]] ||
            { echo "$t links $(grep -o 'libcu[a-zA-Z]*' <<<"$output" | sort -u | xargs)"; false; }
    done
}

@test "trun --device cuda matches the CPU, on the GPU or, without one, on the CPU" {
    cuda_or_skip
    "$TRUN" --random --seed "$SEED" --dim batch=5 "$TMP/g.tg" -o "$TMP/a.npy"
    TLOG=+run run_ok "$TRUN" --device cuda --random --seed "$SEED" --dim batch=5 "$TMP/g.tg" \
        --check "$TMP/a.npy"
    # each of the 4 nodes on the GPU, or refused for want of one
    [ "$(grep -c 'on cuda$\|cuda refused it (no CUDA device' <<<"$stderr")" -eq 4 ]
}

@test "trun --device cuda with no GPU refuses each node with the reason and runs it on the CPU" {
    cuda_or_skip
    TLOG=run run_ok "$TRUN" --device cuda --random "$TMP/g.tg" -o "$TMP/y.npy"
    grep -q 'cuda refused it' <<<"$stderr" || skip "a GPU is present: nothing falls back"
    grep -q "^\[trun:run\] fc1 (linear): cuda refused it (no CUDA device (.*)); on cpu$" <<<"$stderr"
}

@test "trun TLOG=+run records which device runs each node" {
    TLOG=+run TLOG_FORMAT=json run_ok "$TRUN" --random "$TMP/g.tg" -o "$TMP/y.npy"
    [ "$(grep -c '"comp":"run".*"fields":{"node":"[^"]*","op":"[^"]*","backend":"cpu"}' <<<"$stderr")" -eq 4 ]
    grep -q '"msg":"fc1 (linear): on cpu"' <<<"$stderr"
}

@test "trun --profile writes one TLOG JSON record per node and run" {
    run_ok "$TRUN" --random --bench=2 --warmup=1 --profile "$TMP/p.jsonl" "$TMP/g.tg"
    [ "$(wc -l <"$TMP/p.jsonl")" -eq 12 ]   # 4 nodes x 3 runs
    grep -q '"tool":"trun","comp":"run","level":"info"' "$TMP/p.jsonl"
    grep -q '"fields":{"node":"fc1","op":"linear","us":[0-9.e-]*,"run":2}' "$TMP/p.jsonl"
}

@test "trun refuses to write .npy to a terminal (exit 2)" {
    refuses_tty .npy "$TRUN" --random "$TMP/g.tg"
}

@test "trun writes several outputs to -o DIR as out0.npy, out1.npy" {
    "$UNIT/mkgraph_outputs" >"$TMP/two.tg"
    run_ok "$TRUN" --random --seed "$SEED" --dim batch=4 "$TMP/two.tg" -o "$TMP/dir"
    [ -z "$output" ]
    grep -aq "'shape': (4, 3)" "$TMP/dir/out0.npy"
    grep -aq "'shape': (4, 3)" "$TMP/dir/out1.npy"
    run_ok "$TRUN" --random --seed "$SEED" --dim batch=4 "$TMP/two.tg" \
        --check "$TMP/dir/out0.npy,$TMP/dir/out1.npy"
    [[ "$output" == *"output 0 'e' f32[4,3]"*": ok"*"output 1 'n' f32[4,3]"*": ok" ]]
}

@test "trun with several outputs and no -o DIR is a usage error" {
    "$UNIT/mkgraph_outputs" >"$TMP/two.tg"
    run_fails 2 "the model has 2 outputs: give -o DIR" "$TRUN" --random "$TMP/two.tg"
    touch "$TMP/file"
    run_fails 2 "the model has 2 outputs: give -o DIR" "$TRUN" --random "$TMP/two.tg" -o "$TMP/file"
}

@test "trun stops a loop that never ends after TGRAPH_LOOP_MAX iterations, naming the node" {
    "$UNIT/mkgraph" forever "$SEED" >"$TMP/f.tg"
    TGRAPH_LOOP_MAX=50 run_fails 1 "node 'forever' .*did not end after 50 iterations \(TGRAPH_LOOP_MAX" \
        "$TRUN" "$TMP/f.tg" --random
}

@test "trun refuses a TGRAPH_LOOP_MAX that is not a count" {
    "$UNIT/mkgraph" forever "$SEED" >"$TMP/f.tg"
    TGRAPH_LOOP_MAX=lots run_fails 1 "TGRAPH_LOOP_MAX='lots' is not a count of iterations" \
        "$TRUN" "$TMP/f.tg" --random
}
