#!/usr/bin/env bats
# tcompile: TG graph -> standalone .so. Every fixture compiles and matches
# PyTorch's outputs (trun --check: rtol 1e-4, atol 1e-5) at batch 1 and 3; the
# .so needs only libc and libm, exports only the ABI, is the same
# bytes for the same graph and checks its inputs (model_threads.bats: threads).
# Random inputs come from trun --random with a fresh seed per test.

load common

setup_file() {
    # the fixtures exported once for the whole file
    export GRAPHS=$BATS_FILE_TMPDIR
    for m in mlp cnn tinygpt; do
        "$TEXPORT" "$FIX/$m.pt2" -o "$GRAPHS/$m.tg"
        "$TEXPORT" "$FIX/$m.core.pt2" -o "$GRAPHS/$m.core.tg"
        "$TEXPORT" "$FIX/$m.onnx" -o "$GRAPHS/$m.onnx.tg"
    done
}

setup() {
    common_setup
    SEED=$RANDOM$RANDOM
}

@test "tcompile --help prints usage on stdout and exits 0" {
    run_ok "$TCOMPILE" --help
    [[ "$output" == *"Usage: tcompile [OPTION]... [GRAPH]"* ]]
    [[ "$output" == *"--weights=FILE"* ]]
}

@test "tcompile --version prints the package version" {
    run_ok "$TCOMPILE" --version
    [ "$output" = "tcompile (tgraph) 0.1.0" ]
}

@test "tcompile with an unknown option is a usage error" {
    run_fails 2 "Try 'tcompile --help'" "$TCOMPILE" --bogus "$GRAPHS/mlp.tg"
    [ -z "$output" ]
}

@test "trun reads a compiled model from stdin as -, as it reads a file" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    "$TRUN" --random --seed "$SEED" --dim s0=3 "$TMP/m.so" -o "$TMP/a.npy"
    "$TRUN" --random --seed "$SEED" --dim s0=3 - -o "$TMP/b.npy" <"$TMP/m.so"
    cmp "$TMP/a.npy" "$TMP/b.npy"
    run_ok bash -c '"$1" "$2" | "$3" - "$4" --check "$5"' _ "$TCOMPILE" "$GRAPHS/mlp.tg" "$TRUN" \
        "$FIX/mlp.in0.b3.npy" "$FIX/mlp.out0.b3.npy"
    [[ "$output" == *": ok" ]]
}

@test "libtgkernels.a, the kernels in every model, builds at -O3 whatever CFLAGS say" {
    for flags in "" "CFLAGS=-g -O1"; do
        run_ok make -C "$TGRAPH_RUNTIME_DIR" -n V=1 ${flags:+"$flags"} \
            -W lib/backend/cpu/kernels/conv.c lib/backend/cpu/kernels/libtgkernels_a-conv.o
        cmd=$(grep -- '-o lib/backend/cpu/kernels/libtgkernels_a-conv.o' <<<"$output")
        [ "$(grep -oE -- ' -O([0-9s]|fast)' <<<"$cmd" | tail -n 1)" = " -O3" ]
    done
}

@test "tcompile refuses to write a shared object to a terminal (exit 2)" {
    refuses_tty "a shared object" "$TCOMPILE" "$GRAPHS/mlp.tg"
}

@test "tcompile --target cpu builds the default's shared object, byte for byte" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/a.so"
    run_ok "$TCOMPILE" --target cpu "$GRAPHS/mlp.tg" -o "$TMP/b.so"
    cmp "$TMP/a.so" "$TMP/b.so"
}

@test "tcompile --target with an unknown name is a usage error listing the targets" {
    run_fails 2 "^tcompile: --target: no device 'gpu9' \\(known: cpu" "$TCOMPILE" --target gpu9 \
        "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    [ ! -e "$TMP/m.so" ]
}

@test "tcompile TLOG=+codegen records the target of each node" {
    TLOG=+codegen run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    grep -Eq '^\[tcompile:codegen\] [a-z_0-9]+ \(linear_packed\): cpu$' <<<"$stderr"
}

@test "tcompile refuses a --cpu value that is not a CPU name" {
    run_fails 2 "not a CPU name" "$TCOMPILE" --cpu=-fplugin=x "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    [ ! -e "$TMP/m.so" ]
}

@test "tcompile rejects a file that is not a TG graph, writing nothing" {
    printf 'not a graph' >"$TMP/bad.tg"
    run_fails 1 "^tcompile: .*bad.tg: " "$TCOMPILE" "$TMP/bad.tg" -o "$TMP/m.so"
    [ ! -e "$TMP/m.so" ]
}

@test "tcompile of a compiled model says it is compiled already" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    run_fails 1 "^tcompile: $TMP/m.so: a compiled model \(.so\), not a TG graph: already compiled; trun runs it$" \
        "$TCOMPILE" "$TMP/m.so" -o "$TMP/m2.so"
    [ ! -e "$TMP/m2.so" ]
}

# fixture_check FILE: texport and tcompile a fixture, then run the .so on each
# of its inputs (NAME.inK.npy, or NAME.inK.bB.npy per batch B) against
# PyTorch's outputs (NAME.outK[.bB].npy) and against the interpreter's.
fixture_check() {
    local file=$1 dir name batch ins refs interp
    dir=$(dirname "$file")
    name=$(basename "$file")
    name=${name%%.*}
    run_ok "$TEXPORT" "$file" -o "$TMP/f.tg"
    run_ok "$TCOMPILE" "$TMP/f.tg" -o "$TMP/f.so"
    for batch in "" .b1 .b3; do
        ins=$(ls "$dir/$name".in*"$batch".npy 2>/dev/null | grep -E "\.in[0-9]+$batch\.npy$" | sort -V)
        [ -n "$ins" ] || continue
        refs=$(ls "$dir/$name".out*"$batch".npy | grep -E "\.out[0-9]+$batch\.npy$" | sort -V |
               paste -sd, -)
        # shellcheck disable=SC2086
        run_ok "$TRUN" "$TMP/f.so" $ins --check "$refs" ${TOL[@]+"${TOL[@]}"}
        # one output: a file; several: a directory of out0.npy ...
        rm -rf "$TMP/interp"
        interp=$TMP/interp
        if [[ "$refs" == *,* ]]; then
            mkdir "$interp"
            interp=$(echo "$refs" | tr , '\n' | sed "s|.*\.out\([0-9]*\).*|$interp/out\1.npy|" |
                     paste -sd, -)
        fi
        # shellcheck disable=SC2086
        run_ok "$TRUN" "$TMP/f.tg" $ins -o "$TMP/interp"
        # shellcheck disable=SC2086
        run_ok "$TRUN" "$TMP/f.so" $ins --check "$interp" ${TOL[@]+"${TOL[@]}"}
    done
}

@test "tcompile into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    run_fails 1 "^tcompile: -: write error: Broken pipe$" closed_pipe "$TCOMPILE" "$TMP/g.tg"
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
}

@test "trun refuses a truncated compiled model, before dlopen would die of SIGBUS" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    head -c 100000 "$TMP/m.so" >"$TMP/t.so"
    run_fails 1 "^trun: $TMP/t.so: truncated ELF file \(segment [0-9]+ needs bytes [0-9]+\.\.[0-9]+, the file has 100000\)$" \
        "$TRUN" "$TMP/t.so" --random -o "$TMP/y.npy"
    [ ! -e "$TMP/y.npy" ]
}

@test "trun refuses a compiled model cut anywhere, with one line and exit 1" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    size=$(stat -c %s "$TMP/m.so")
    for n in 4 63 64 100 1000 5000 50000 $((size / 2)) $((size - 1)); do
        head -c "$n" "$TMP/m.so" >"$TMP/t.so"
        run_fails 1 "^trun: $TMP/t.so: truncated" "$TRUN" "$TMP/t.so" --random -o "$TMP/y.npy"
        [ "$(wc -l <<<"$stderr")" -eq 1 ]
    done
}

# Rewrites the tgraph ABI note of compiled model $1 (<tgraph/model.h>): owner
# $2, version $3.
edit_abi_note() {
    python3 - "$@" <<'PY'
import struct, sys
path, owner, version = sys.argv[1], sys.argv[2].encode(), int(sys.argv[3])
b = open(path, "rb").read()
note = struct.pack("<III8sI", 7, 4, 1, b"tgraph", 1)
assert b.count(note) == 1, "one tgraph note"
new = struct.pack("<III8sI", 7, 4, 1, owner, version)
open(path, "wb").write(b.replace(note, new))
PY
}

@test "a compiled model carries its ABI version as an ELF note (readelf -n)" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    run_ok readelf -n "$TMP/m.so"
    grep -A2 'Displaying notes found in: .note.tgraph' <<<"$output" | grep -Eq '^ +tgraph +0x00000004'
    grep -A3 'Displaying notes found in: .note.tgraph' <<<"$output" | grep -q 'description data: 01 00 00 00'
}

@test "trun refuses a model of another ABI version before dlopen, naming both versions" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    edit_abi_note "$TMP/m.so" tgraph 2
    # the model's own tgraph_abi_version() still says 1: only the note, read
    # before dlopen, can refuse it
    run_fails 1 "^trun: $TMP/m.so: model ABI version 2, this tgraph reads version 1: recompile it with tcompile$" \
        "$TRUN" "$TMP/m.so" --random -o "$TMP/y.npy"
    [ ! -e "$TMP/y.npy" ]
}

@test "trun runs a model without the ABI note (tcompile before it), checking the version after dlopen" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    "$TRUN" "$TMP/m.so" --random --seed 3 -o "$TMP/ref.npy"
    edit_abi_note "$TMP/m.so" other 2
    run_ok "$TRUN" "$TMP/m.so" --random --seed 3 -o "$TMP/y.npy"
    cmp "$TMP/ref.npy" "$TMP/y.npy"
}

@test "trun refuses a shared object that lacks a function of the model ABI" {
    printf '#include <stdint.h>\nuint32_t tgraph_abi_version(void) { return 1; }\n' >"$TMP/x.c"
    cc -shared -fPIC -o "$TMP/x.so" "$TMP/x.c"
    run_fails 1 "^trun: $TMP/x.so: not a compiled tgraph model: no tgraph_strerror$" \
        "$TRUN" "$TMP/x.so" --random -o "$TMP/y.npy"
}

@test "trun refuses an ELF file that is not a shared object" {
    printf 'int f(void) { return 1; }\n' >"$TMP/x.c"
    cc -c -o "$TMP/x.o" "$TMP/x.c"
    run_fails 1 "^trun: $TMP/x.o: an ELF object file \(.o\), not a shared object$" \
        "$TRUN" "$TMP/x.o" --random -o "$TMP/y.npy"
}

# every fixture with reference outputs (the others are refusal cases)
fixtures() {
    local f name
    for f in "$@"; do
        name=$(basename "$f")
        ls "$(dirname "$f")/${name%%.*}".out0*.npy >/dev/null 2>&1 && echo "$f"
    done
}

@test "every .pt2 fixture (export IR) compiles and matches PyTorch and the interpreter" {
    for f in $(fixtures "$FIX"/*.pt2 | grep -v '\.core\.pt2$'); do
        echo "# $f"
        fixture_check "$f"
    done
}

@test "every .core.pt2 fixture (Core ATen IR) compiles and matches PyTorch and the interpreter" {
    for f in $(fixtures "$FIX"/*.core.pt2); do
        echo "# $f"
        fixture_check "$f"
    done
}

# (runtime_*, resize_runtime, resize_onnx, pad_modes, shape_data,
# affine_grid, data_ops, data_ops_more and data_shapes have run-time
# attributes: texport_onnx.bats checks that tcompile refuses them. data_static
# compiles with a batch range of its own, there. control_flow's if and loops
# and scan*'s loops compile, scan outputs of run-time length handed over as
# the run made them; loop_scan_used reads one, which is refused (below).
# qop_ops' reference is ONNX Runtime's com.microsoft kernels, whose
# requantization rounds differently: one step, as texport_onnx.bats allows;
# the .so's pools sum in another order than the interpreter's, so its
# requantized average pool may round the other way too. attention_fp16_expanded's
# reference is the onnx suite's float16 output, checked with the suite's tolerance
# as texport_onnx.bats does.)
@test "every ONNX fixture compiles and matches PyTorch (ONNX Runtime) and the interpreter" {
    local TOL
    for f in $(fixtures "$FIX"/*.onnx "$FIX"/onnx/*.onnx |
               grep -Ev '/(runtime_[a-z]+|resize_runtime|resize_onnx|pad_modes|shape_data|affine_grid|data_[a-z_]+|loop_scan_used)\.onnx$'); do
        echo "# $f"
        TOL=()
        [[ $f == */qop_ops.onnx ]] && TOL=(--rtol=0 --atol=1)
        [[ $f == */attention_fp16_expanded.onnx ]] && TOL=(--rtol=1e-3 --atol=1e-7)
        fixture_check "$f"
    done
}

@test "the .so matches the interpreter on random inputs at several batch sizes" {
    "$UNIT/mkgraph" mlp-gelu "$SEED" >"$TMP/g.tg"
    run_ok "$TCOMPILE" "$TMP/g.tg" -o "$TMP/g.so"
    for b in 1 7 64; do
        "$TRUN" "$TMP/g.tg" --random --seed "$SEED" --dim batch=$b -o "$TMP/ref.npy"
        run_ok "$TRUN" "$TMP/g.so" --random --seed "$SEED" --dim batch=$b --check "$TMP/ref.npy"
    done
}

@test "TGRAPH_RUNTIME_DIR relative to the working directory finds the runtime" {
    local dir
    dir=$(cd "$TGRAPH_RUNTIME_DIR" && pwd)
    (cd "$(dirname "$dir")" &&
        TGRAPH_RUNTIME_DIR=$(basename "$dir") "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so")
    run_ok "$TRUN" "$TMP/m.so" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy"
}

@test "tcompile reads the graph from stdin and writes the .so to stdout" {
    "$TCOMPILE" <"$GRAPHS/mlp.tg" >"$TMP/m.so"
    run_ok "$TRUN" "$TMP/m.so" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy"
}

@test "the same graph compiles to the same bytes" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/a.so"
    (cd "$TMP" && TMPDIR="$TMP" "$TCOMPILE" <g.tg >b.so)
    cmp "$TMP/a.so" "$TMP/b.so"
}

@test "the .so needs only libc and libm" {
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so"
    run_ok readelf -d "$TMP/m.so"
    # (and, in a sanitizer build, which gives the models its flags, its runtimes)
    needed=$(printf '%s\n' "$output" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p' |
        grep -Ev '^lib(a|ub|t)san\.so' | sort | tr '\n' ' ')
    [[ "$needed" =~ ^(ld-linux[^ ]*\ )?libc\.so\.6\ libm\.so\.6\ $ ]] ||
        { echo "needed: $needed"; false; }
}

@test "the .so exports only the tgraph_ ABI" {
    run_ok "$TCOMPILE" "$GRAPHS/cnn.tg" -o "$TMP/m.so"
    run_ok nm -D --defined-only "$TMP/m.so"
    [ -n "$output" ]
    [ -z "$(printf '%s\n' "$output" | awk '$3 !~ /^tgraph_/')" ]
    [[ "$output" == *" T tgraph_model_run"* ]]
}

@test "--weights writes the weights apart, and the .so maps them from beside itself" {
    mkdir "$TMP/dir"
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/dir/m.so" --weights "$TMP/dir/m.weights"
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/whole.so"
    local w=$(stat -c %s "$TMP/dir/m.weights")
    [ "$w" -gt 2000000 ]
    # the weights left the .so: it is smaller than the whole one by (nearly) their size,
    # whatever the size of its code (a sanitizer build's is megabytes)
    [ "$(stat -c %s "$TMP/dir/m.so")" -lt $(( $(stat -c %s "$TMP/whole.so") - w * 9 / 10 )) ]
    cd "$TMP"
    run_ok "$TRUN" dir/m.so "$FIX/tinygpt.in0.b3.npy" --check "$FIX/tinygpt.out0.b3.npy"
}

@test "a .so built with --weights fails cleanly when its weights are missing or not its own" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/a.tg"
    "$UNIT/mkgraph" mlp "$((SEED + 1))" >"$TMP/b.tg"
    "$TCOMPILE" "$TMP/a.tg" -o "$TMP/a.so" --weights "$TMP/a.w"
    "$TCOMPILE" "$TMP/b.tg" -o "$TMP/b.so" --weights "$TMP/b.w"
    mv "$TMP/a.w" "$TMP/keep.w"
    run_fails 1 "a.w: No such file" "$TRUN" "$TMP/a.so" --random -o "$TMP/y.npy"
    cp "$TMP/b.w" "$TMP/a.w"
    run_fails 1 "a.w: weights of another model" "$TRUN" "$TMP/a.so" --random -o "$TMP/y.npy"
}

@test "--cpu x86-64-v3 builds a model that runs here" {
    grep -qw avx2 /proc/cpuinfo || skip "this CPU has no AVX2"
    run_ok "$TCOMPILE" --cpu x86-64-v3 "$GRAPHS/cnn.tg" -o "$TMP/m.so"
    run_ok "$TRUN" "$TMP/m.so" "$FIX/cnn.in0.b3.npy" --check "$FIX/cnn.out0.b3.npy"
}

@test "--emit-c writes the C source and --header the model's macros" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c" --header "$TMP/mlp.h"
    grep -q 'TGRAPH_API int tgraph_model_run' "$TMP/m.c"
    grep -q '^#define MLP_NUM_INPUTS 1$' "$TMP/mlp.h"
    grep -q '^#define MLP_INPUT_X_DTYPE TGRAPH_F32$' "$TMP/mlp.h"
    grep -q '^#define MLP_SYMBOL_S0_MAX 1024$' "$TMP/mlp.h"
    # the header compiles against <tgraph/model.h>
    printf '#include "mlp.h"\nint main(void) { return MLP_NUM_OUTPUTS - 1; }\n' >"$TMP/t.c"
    cc -I"$TG_SRCDIR/include" -o "$TMP/t" "$TMP/t.c"
    "$TMP/t"
}

@test "the --emit-c source builds a working model with nothing but libtgkernels.a" {
    run_ok "$TCOMPILE" "$GRAPHS/cnn.tg" -o "$TMP/m.so" --weights "$TMP/m.w" --emit-c "$TMP/m.c"
    cc -shared -fPIC -O1 -o "$TMP/m2.so" "$TMP/m.c" "$TGRAPH_RUNTIME_DIR/libtgkernels.a" \
        -lm
    run_ok "$TRUN" "$TMP/m2.so" "$FIX/cnn.in0.b3.npy" --check "$FIX/cnn.out0.b3.npy"
}

@test "the .so rejects an input of the wrong dtype" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    run_fails 1 "input 'x': dtype i64, expected f32" \
        "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b1.npy" -o "$TMP/y.npy"
}

@test "the .so rejects an input of the wrong shape" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    run_fails 1 "input 'x': dims \[1, 3, 32, 32\], expected \[s0, 784\]|input 'x': rank 4" \
        "$TRUN" "$TMP/m.so" "$FIX/cnn.in0.b1.npy" -o "$TMP/y.npy"
}

@test "the .so rejects a symbol outside its range" {
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    random_npy '<f4' '1025, 784' 4 "$TMP/x.npy"
    run_fails 1 "input 'x': dim 0 gives s0 = 1025, outside \[1, 1024\]" \
        "$TRUN" "$TMP/m.so" "$TMP/x.npy" -o "$TMP/y.npy"
}

@test "the .so reports an index out of range instead of crashing" {
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so"
    random_npy '<i8' '1, 64' 8 "$TMP/tok.npy"   # 64-bit ids: far out of range
    run_fails 1 "index out of range" "$TRUN" "$TMP/m.so" "$TMP/tok.npy" -o "$TMP/y.npy"
}

@test "a version 1 caller (tgraph_model_run) and tgraph_model_run_ex callers get the same outputs" {
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so"
    run_ok "$TG_TOOLS/../tests/model_run_ex" same "$TMP/m.so" "$FIX/tinygpt.in0.b3.npy"
    [[ "$output" == "7 passed, 0 failed" ]]
}

@test "tgraph_model_run_ex refuses options of an unknown version, a short size or a bad placement, saying which" {
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so"
    run_ok "$TG_TOOLS/../tests/model_run_ex" refuse "$TMP/m.so" "$FIX/tinygpt.in0.b1.npy"
    [[ "$output" == *"version 2: run options of version 2: this model knows 1 to 1"* ]]
    [[ "$output" == *"size 8: run options of 8 bytes: version 1 has 24"* ]]
    [[ "$output" == *"14 passed, 0 failed" ]]
}

@test "the .so calls nothing that changes its host's environment or BLAS settings" {
    run_ok "$TCOMPILE" "$GRAPHS/cnn.tg" -o "$TMP/m.so"
    run_ok nm -D --undefined-only "$TMP/m.so"
    [[ "$output" == *" U malloc"* ]]
    ! grep -Ei ' U (setenv|unsetenv|putenv|clearenv|openblas_|cblas_|goto|omp_)' <<<"$output"
}

@test "TLOG shows the graph after each pass, fusion decisions, the memory plan and the compiler" {
    TLOG=graph,passes,fusion,memory,codegen run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    [[ "$stderr" == *"after dce"* ]]
    [[ "$stderr" == *"after fold"* ]]
    [[ "$stderr" == *"act: linear (linear_packed) + relu (relu) in place"* ]]
    [[ "$stderr" == *"workspace: "*" slots"* ]]
    [[ "$stderr" == *"compiler: "*"-shared"* ]]
    [[ "$stderr" == *"compiler took"* ]]
}

@test "tcompile compiles the hot loops at -O3, the plan at -O1 and the weights at once, then links" {
    TLOG=codegen run_ok "$TCOMPILE" "$GRAPHS/tinygpt.core.tg" -o "$TMP/m.so"
    grep -qE 'compiler: .* -O3 .* -c -o hot\.o hot\.c$' <<<"$stderr"
    grep -qE 'compiler: .* -O1 .* -c -o model\.o model\.c$' <<<"$stderr"
    grep -qE 'compiler: .* -c -o weights\.o weights\.c$' <<<"$stderr"
    grep -qE 'compiler: .* -shared .* -o model\.so hot\.o model\.o weights\.o ' <<<"$stderr"
    # with --weights nothing is embedded: no weights unit
    TLOG=codegen run_ok "$TCOMPILE" "$GRAPHS/tinygpt.core.tg" -o "$TMP/n.so" --weights "$TMP/n.w"
    ! grep -q 'weights\.c' <<<"$stderr" || false
    for so in m n; do
        run_ok "$TRUN" "$TMP/$so.so" "$FIX/tinygpt.in0.b3.npy" --check "$FIX/tinygpt.out0.b3.npy"
    done
}

@test "a fused loop met twice is one function, called twice" {
    # tinygpt.core's two blocks: the same two loops each (after the GEMMs)
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.core.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    defs=$(grep -cE '^void [a-z0-9_]*loop_[0-9]+\(void \*ctx' "$TMP/m.c")
    calls=$(grep -cE 'tgk_parallel_for\(.*, [a-z0-9_]*loop_[0-9]+, &L\);' "$TMP/m.c")
    [ "$defs" -ge 1 ] && [ "$calls" -ge $((defs + 2)) ]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b$b.npy" --check "$FIX/tinygpt.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "a compiler error fails tcompile with the compiler's message and writes nothing" {
    printf '#error planted in every unit\n' >"$TMP/bad.h"
    CC="cc -include $TMP/bad.h" run_fails 1 "the C compiler failed \\(exit 1\\)" \
        "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so"
    [[ "$stderr" == *"planted in every unit"* ]]
    [ ! -e "$TMP/m.so" ]
}

@test "TLOG=fusion reports tinygpt.core.pt2's Core ATen attention (flattened bmm's, the masked-row guard) fused into causal sdpa" {
    TLOG=fusion run_ok "$TCOMPILE" "$GRAPHS/tinygpt.core.tg" -o "$TMP/m.so"
    [ "$(grep -c 'fuse_attention: bmm_[0-9]* fused into sdpa (scale 0.176777, causal)' <<<"$stderr")" -eq 2 ]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b$b.npy" --check "$FIX/tinygpt.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "TLOG=fusion reports tinygpt.onnx's attention fused into causal sdpa, and the .so still matches" {
    TLOG=fusion run_ok "$TCOMPILE" "$GRAPHS/tinygpt.onnx.tg" -o "$TMP/m.so"
    [[ "$stderr" == *"fuse_attention: node_scaled_dot_product_attention fused into sdpa (scale 0.176777, causal)"* ]]
    [[ "$stderr" == *"fuse_attention: node_scaled_dot_product_attention_1 fused into sdpa (scale 0.176777, causal)"* ]]
    [[ "$stderr" != *"fuse_attention: "*"refused"* ]]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b$b.npy" --check "$FIX/tinygpt.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "TLOG=fusion reports tinygpt's q, k and v read in place by sdpa and its heads merged in place, and the .so still matches" {
    TLOG=fusion run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so"
    [ "$(grep -c 'view: .* read in place by scaled_dot_product_attention (sdpa)' <<<"$stderr")" -eq 3 ]
    [[ "$stderr" == *"view: transpose_3 written in place by scaled_dot_product_attention (sdpa)"* ]]
    [[ "$stderr" == *"(strided): "*"scaled_dot_product_attention_1"* ]]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b$b.npy" --check "$FIX/tinygpt.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "the cnn's first conv, its relu and its max pool run as one conv kernel" {
    TLOG=fusion run_ok "$TCOMPILE" "$GRAPHS/cnn.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    [[ "$stderr" == *"act: conv2d (conv) + max_pool2d (max_pool) in the conv kernel"* ]]
    grep -q 'd.pool = 2;' "$TMP/m.c"
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/cnn.in0.b$b.npy" --check "$FIX/cnn.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "tcompile --layout=nhwc runs the cnn's convs and pools channels-last (its 1-channel stem stays NCHW), matching PyTorch" {
    TLOG=passes run_ok "$TCOMPILE" --layout=nhwc "$GRAPHS/cnn.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    [[ "$stderr" == *"channels_last: 1 convs and 1 pools channels-last, 2 permutes moved, 1 reshapes, 1 permutes left"* ]]
    grep -q 'tgk_conv_nhwc_f32(&d, ' "$TMP/m.c"
    grep -q 'tgk_adaptive_avg_pool_nhwc_f32(' "$TMP/m.c"
    [ "$(grep -c 'tgk_conv_f32(&d, ' "$TMP/m.c")" -eq 1 ]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/cnn.in0.b$b.npy" --check "$FIX/cnn.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

@test "tcompile --layout=nhwc is the cpu target's default: the same bytes" {
    run_ok "$TCOMPILE" --layout=nhwc "$GRAPHS/cnn.tg" -o "$TMP/a.so"
    run_ok "$TCOMPILE" "$GRAPHS/cnn.tg" -o "$TMP/b.so"
    cmp "$TMP/a.so" "$TMP/b.so"
}

@test "tcompile --layout=nchw runs no channels-last lowering, matching PyTorch" {
    TLOG=passes run_ok "$TCOMPILE" --layout=nchw "$GRAPHS/cnn.tg" -o "$TMP/a.so" --emit-c "$TMP/a.c"
    [[ "$stderr" != *channels_last* ]]
    ! grep -q 'tgk_conv_nhwc_f32' "$TMP/a.c"
    run_ok "$TRUN" "$TMP/a.so" "$FIX/cnn.in0.b3.npy" --check "$FIX/cnn.out0.b3.npy"
}

@test "tcompile --layout with another name is a usage error" {
    run_fails 2 "--layout: 'nchwc' is not nchw or nhwc" "$TCOMPILE" --layout=nchwc "$GRAPHS/cnn.tg" -o "$TMP/m.so"
    [ ! -e "$TMP/m.so" ]
}

@test "the linear kernel applies its activation itself: no loop of its own" {
    run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    [ "$(grep -c 'tgk_linear_packed_ex_f32(.*, tgk_vec_gelu_tanh_f32);' "$TMP/m.c")" -eq 2 ]
    ! grep -q 'tgk_vec_gelu_tanh_f32(n, yr, yr)' "$TMP/m.c" || false
    run_ok "$TCOMPILE" "$GRAPHS/mlp.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    grep -q 'tgk_linear_packed_ex_f32(.*, tgk_vec_relu_f32);' "$TMP/m.c"
}

@test "tinygpt's four residual adds run in the GEMMs before them" {
    TLOG=fusion run_ok "$TCOMPILE" "$GRAPHS/tinygpt.tg" -o "$TMP/m.so" --emit-c "$TMP/m.c"
    [ "$(grep -c 'act: linear_[0-9]* (linear_packed) + add_[0-9]* (add) in the GEMM' <<<"$stderr")" -eq 4 ]
    [ "$(grep -c 'tgk_linear_packed_ex_f32(v[0-9]*, v[0-9]*, v[0-9]*, v[0-9]*, ' "$TMP/m.c")" -eq 4 ]
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.so" "$FIX/tinygpt.in0.b$b.npy" --check "$FIX/tinygpt.out0.b$b.npy"
        [[ "$output$stderr" == *": ok"* ]]
    done
}

# The example program of tgraph_model(3) as $TMP/run_model, built as a user
# builds it: the headers as installed (<tgraph/...>), linked to libtgraph (with
# the sanitizers when this build of libtgraph has them).
build_example() {
    sed -n '/example-begin/,/example-end/p' "$TG_SRCDIR/man/man3/tgraph_model.3" |
        sed -e '1d' -e '$d' -e 's/\\e/\\/g' -e 's/\\-/-/g' >"$TMP/run_model.c"
    mkdir -p "$TMP/include/tgraph"
    cp "$TG_SRCDIR/include/tgraph/model.h" "$TG_SRCDIR/lib/error.h" "$TG_SRCDIR/lib/modelcheck.h" \
        "$TMP/include/tgraph/"
    local lib=${TGRAPH_RUNTIME_DIR:-$TG_TOOLS/..}/.libs san=
    nm -D "$lib/libtgraph.so" | grep -q ' U __asan_init' && san=-fsanitize=address,undefined
    cc -std=gnu11 -Wall -Werror $san -I"$TMP/include" -o "$TMP/run_model" "$TMP/run_model.c" \
        -L"$lib" -Wl,-rpath,"$lib" -ltgraph -ldl
}

@test "the example program of tgraph_model(3) compiles and runs a compiled model" {
    build_example
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    run_ok "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    run_ok "$TMP/run_model" "$TMP/m.so" 5
    [[ "$output" == *"input 0 'x': dtype 1, dims [batch, 8]"* ]]
    [[ "$output" == *"output 0: rank 2, dims [5, 4]"* ]]
}

@test "the example program of tgraph_model(3) refuses a truncated model instead of crashing" {
    build_example
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    "$TCOMPILE" "$TMP/g.tg" -o "$TMP/m.so"
    head -c 100000 "$TMP/m.so" >"$TMP/t.so"
    run_fails 1 "^$TMP/t.so: truncated ELF file \(segment [0-9]+ needs bytes [0-9]+\.\.[0-9]+, the file has 100000\)$" \
        "$TMP/run_model" "$TMP/t.so"
}

@test "tgraph.mk builds a .so from a .pt2 and from an .onnx through their .tg" {
    cp "$FIX/mlp.pt2" "$FIX/cnn.onnx" "$TMP/"
    printf 'include %s/share/tgraph/tgraph.mk\nall: mlp.so cnn.so\n' "$TG_SRCDIR" >"$TMP/Makefile"
    run_ok make -C "$TMP" TEXPORT="$TEXPORT" TCOMPILE="$TCOMPILE" TCOMPILE_FLAGS=-O1
    [ -f "$TMP/mlp.tg" ] && [ -f "$TMP/cnn.tg" ]
    run_ok "$TRUN" "$TMP/mlp.so" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy"
    run_ok "$TRUN" "$TMP/cnn.so" "$FIX/cnn.in0.b1.npy" --check "$FIX/cnn.out0.b1.npy"
    run_ok make -C "$TMP" TEXPORT="$TEXPORT" TCOMPILE="$TCOMPILE"
    [[ "$output" == *"Nothing to be done"* ]]
}

@test "tgraph.mk makes NAME.q8.tg with tquant from NAME.tg" {
    cp "$FIX/mlp.pt2" "$TMP/"
    printf 'include %s/share/tgraph/tgraph.mk\n' "$TG_SRCDIR" >"$TMP/Makefile"
    run_ok make -n -C "$TMP" TQUANT=tq mlp.q8.tg
    [[ "$output" == *"texport "*"-o mlp.tg mlp.pt2"* ]]
    [[ "$output" == *"tq "*"-o mlp.q8.tg mlp.tg"* ]]
}

@test "a compiled loop that never ends stops after TGRAPH_LOOP_MAX iterations, naming the node" {
    "$UNIT/mkgraph" forever "$SEED" >"$TMP/f.tg"
    run_ok "$TCOMPILE" -o "$TMP/f.so" "$TMP/f.tg"
    TGRAPH_LOOP_MAX=50 run_fails 1 "node 'forever' \(loop\): the loop did not end after 50 iterations \(TGRAPH_LOOP_MAX" \
        "$TRUN" "$TMP/f.so" --random --seed "$SEED"
}

@test "a compiled loop refuses a TGRAPH_LOOP_MAX that is not a count" {
    "$UNIT/mkgraph" forever "$SEED" >"$TMP/f.tg"
    run_ok "$TCOMPILE" -o "$TMP/f.so" "$TMP/f.tg"
    TGRAPH_LOOP_MAX=0 run_fails 1 "TGRAPH_LOOP_MAX='0' is not a count of iterations" \
        "$TRUN" "$TMP/f.so" --random --seed "$SEED"
}

@test "tcompile refuses a scan output of run-time length that another node reads, naming both" {
    "$TEXPORT" -o "$TMP/s.tg" "$FIX/onnx/loop_scan_used.onnx"
    run_fails 1 "node 'scanner' \(loop\): target cpu cannot compile it: output 'scanner:1' has a shape set as it runs \(a data symbol\)" \
        "$TCOMPILE" -o "$TMP/s.so" "$TMP/s.tg"
    [ ! -e "$TMP/s.so" ]
}

@test "tcompile --emit-c writes each if and loop subgraph as a model table of its own" {
    "$TEXPORT" -o "$TMP/cf.tg" "$FIX/onnx/control_flow.onnx"
    run_ok "$TCOMPILE" -o "$TMP/cf.so" --emit-c "$TMP/cf.c" "$TMP/cf.tg"
    # if (2 branches), loop (body, whose if has 2), while loop (body)
    [ "$(grep -c '^static const tgrt_model sg[0-9]*_MODEL = {' "$TMP/cf.c")" -eq 6 ]
    grep -q 'tgrt_control_loop(&sg' "$TMP/cf.c"
    grep -q 'tgrt_control_if(&sg' "$TMP/cf.c"
}
