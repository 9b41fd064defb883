#!/bin/sh
# The CUDA backend on a GPU machine, in one command from a configured or
# fresh source tree: build with --with-cuda, run the flash kernels' test
# (make check-cuda), test_backend (the device interface), test_backend_ops
# on the cuda device (every op of ops.def), then trun
# --device cuda against the references of the demo model and of every
# generated fixture, the same with each fixture compiled by tcompile --target
# cuda (and tests/tcompile_cuda.bats), linear_24 through cuSPARSELt
# (tests/cuda/sparse24.sh), each fixture (and ZOO's models)
# compiled with each tcompile --dtype against the float32 interpreter, then
# (ZOO=DIR) the zoo's transformer
# models with the flash-attention path on, and time the demo model on both
# devices and compiled. Logs go to LOGDIR (default .); the last lines printed
# are the summary.
#   tests/cuda/gpu_check.sh [LOGDIR]
set -u
log=${1:-.}
mkdir -p "$log"
jobs=$(nproc 2>/dev/null || echo 4)
say() { printf '%s\n' "$*" | tee -a "$log/summary.txt"; }

if [ ! -f Makefile ]; then
    ./configure --with-cuda >"$log/configure.log" 2>&1 || { tail -30 "$log/configure.log"; exit 1; }
fi
make -j"$jobs" >"$log/build.log" 2>&1 || { grep -E 'error|Error' "$log/build.log" | head -30; exit 1; }
make -j"$jobs" check TESTS= >>"$log/build.log" 2>&1 || { tail -30 "$log/build.log"; exit 1; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader >"$log/gpu.txt" 2>&1
say "gpu: $(cat "$log/gpu.txt")"

make check-cuda >"$log/check_cuda.log" 2>&1
say "make check-cuda (flash kernels): exit $? ($(grep -c -i 'ok\|pass' "$log/check_cuda.log") ok lines)"

env="TGRAPH_RUNTIME_DIR=$PWD TGRAPH_INCLUDE_DIR=$PWD/include TG_UNIT=$PWD/tests/unit"
export TG_BACKEND_PATH=$PWD/lib/backend/cuda/.libs     # the cuda device, uninstalled
env $env tests/unit/test_backend >"$log/test_backend.log" 2>&1
say "test_backend: exit $?; $(tail -1 "$log/test_backend.log")"
# the cuda device's paths only: make check runs the CPU's everywhere
env $env TG_BACKEND_OPS=cuda tests/unit/test_backend_ops >"$log/test_backend_ops.log" 2>&1
say "test_backend_ops (TG_BACKEND_OPS=cuda): exit $?; $(grep -E '^(coverage|backend cuda|[0-9]+ passed)' "$log/test_backend_ops.log" | tr '\n' ' ')"
say "  refused on cuda (cases): $(grep '^unsupported: .*cuda interpreted' "$log/test_backend_ops.log" | sed 's/.*cuda interpreted: [^(]*(\([a-z_0-9]*\)): /\1: /' | sort | uniq -c | sort -rn | tr -s ' \n' ' ')"

# the bats tests of the cuda device (bats may be missing on a GPU machine)
if command -v bats >/dev/null; then
    env $env TG_TOOLS=$PWD/tools TG_FIXTURES=$PWD/tests/fixtures TG_SRCDIR=$PWD \
        bats -f cuda tests/trun.bats >"$log/bats.log" 2>&1
    say "bats -f cuda tests/trun.bats: exit $?; $(grep -c '^ok' "$log/bats.log") ok, $(grep -c '^not ok' "$log/bats.log") not ok$(grep -c '# skip' "$log/bats.log" | sed 's/^0$//; s/^[1-9].*/ (some skipped)/')"
fi

# trun --device cuda against the references (the tolerance of texport.bats)
tol="--rtol=1e-4 --atol=1e-4"
fix=tests/fixtures
tmp=$(mktemp -d)
mkdir -p "$tmp/out"
pass=0 fail=0
check() {   # NAME TG INPUTS REFS
    if ./tools/trun --device cuda "$2" $3 --check "$4" -o "$tmp/out" $tol >"$tmp/r" 2>&1; then
        pass=$((pass + 1)); echo "pass $1: $(tail -1 "$tmp/r")" >>"$log/trun.log"
    else
        fail=$((fail + 1)); echo "FAIL $1: $(cat "$tmp/r")" >>"$log/trun.log"
    fi
    TLOG=run ./tools/trun --device cuda "$2" $3 -o "$tmp/out" 2>&1 | grep refused >>"$log/trun_refused.log"
}
./tools/texport -o "$tmp/convnet.tg" share/examples/convnet.pt2
check convnet "$tmp/convnet.tg" share/examples/convnet.in.npy share/examples/convnet.out.npy
for m in $(ls $fix/*.pt2 | sed 's|.*/||; s|\.core\.pt2$||; s|\.pt2$||' | sort -u); do
    for ir in pt2 core.pt2; do
        [ -f "$fix/$m.$ir" ] || continue
        ./tools/texport -o "$tmp/m.tg" "$fix/$m.$ir" 2>/dev/null || continue
        if ls $fix/$m.in0.b1.npy >/dev/null 2>&1; then
            for b in 1 3; do
                check "$m.$ir b$b" "$tmp/m.tg" "$fix/$m.in0.b$b.npy" "$fix/$m.out0.b$b.npy"
            done
        elif ls $fix/$m.in0.npy >/dev/null 2>&1; then
            check "$m.$ir" "$tmp/m.tg" "$(ls $fix/$m.in*.npy | sort | tr '\n' ' ')" \
                "$(ls $fix/$m.out*.npy | sort | paste -sd, -)"
        fi
    done
done
say "trun --device cuda against the references: $pass passed, $fail failed (trun.log; refused nodes: $(sort -u "$log/trun_refused.log" | sed 's/.*refused it (//; s/); on cpu//' | sort | uniq -c | sort -rn | head -5 | tr -s ' \n' ' '))"

# tcompile --target cuda: every fixture's compiled model against the same
# references, then its bats tests (shapes, streams, device memory, threads)
pass=0 fail=0
compiled() {   # NAME TG INPUTS REFS
    if ./tools/tcompile --target cuda "$2" -o "$tmp/m.so" >"$tmp/r" 2>&1 &&
        ./tools/trun "$tmp/m.so" $3 --check "$4" -o "$tmp/out" $tol >>"$tmp/r" 2>&1; then
        pass=$((pass + 1)); echo "pass $1: $(tail -1 "$tmp/r")" >>"$log/tcompile.log"
    else
        fail=$((fail + 1)); echo "FAIL $1: $(cat "$tmp/r")" >>"$log/tcompile.log"
    fi
}
compiled convnet "$tmp/convnet.tg" share/examples/convnet.in.npy share/examples/convnet.out.npy
for m in $(ls $fix/*.pt2 | sed 's|.*/||; s|\.core\.pt2$||; s|\.pt2$||' | sort -u); do
    for ir in pt2 core.pt2; do
        [ -f "$fix/$m.$ir" ] || continue
        ./tools/texport -o "$tmp/m.tg" "$fix/$m.$ir" 2>/dev/null || continue
        if ls $fix/$m.in0.b1.npy >/dev/null 2>&1; then
            for b in 1 3; do
                compiled "$m.$ir b$b" "$tmp/m.tg" "$fix/$m.in0.b$b.npy" "$fix/$m.out0.b$b.npy"
            done
        elif ls $fix/$m.in0.npy >/dev/null 2>&1; then
            compiled "$m.$ir" "$tmp/m.tg" "$(ls $fix/$m.in*.npy | sort | tr '\n' ' ')" \
                "$(ls $fix/$m.out*.npy | sort | paste -sd, -)"
        fi
    done
done
say "tcompile --target cuda, trun of the .so against the references: $pass passed, $fail failed (tcompile.log: $(grep '^FAIL' "$log/tcompile.log" | grep -o 'cannot compile.*' | sort | uniq -c | head -3 | tr -s ' \n' ' '))"
if command -v bats >/dev/null; then
    env $env TG_TOOLS=$PWD/tools TG_FIXTURES=$PWD/tests/fixtures TG_SRCDIR=$PWD \
        bats tests/tcompile_cuda.bats >"$log/bats_tcompile_cuda.log" 2>&1
    say "bats tests/tcompile_cuda.bats: exit $?; $(grep -c '^ok' "$log/bats_tcompile_cuda.log") ok, $(grep -c '^not ok' "$log/bats_tcompile_cuda.log") not ok, $(grep -c '# skip' "$log/bats_tcompile_cuda.log") skipped"
fi
# linear_24 through cuSPARSELt (issue 20): a tsparse'd model against the
# dense one on the same weights, compiled and in trun --device cuda, with
# and without the library (exit 77: no cuSPARSELt found)
sh tests/cuda/sparse24.sh "$log" >"$tmp/sp" 2>&1
st=$?
say "$(tail -1 "$tmp/sp"): exit $st (sparse24.log)"
# tcompile --target cuda --dtype: the max abs error of each type's compiled
# model against the CPU's float32 interpreter (and against PyTorch's, after
# the slash), every fixture at batch 1 and each of ZOO's models (DIR/M/m.pt2,
# in*.b1.npy, out0.b1.npy); trun --check at tolerance 0 gives the figure.
worst() { grep -o 'max abs error [^,]*' "$1" | awk '{print $4}' | sort -g | tail -1; }
dtypes() {   # NAME TG INPUTS REFS
    local cpu=$tmp/f32.npy line=""
    rm -rf "$tmp/f32"
    if [ "${4#*,}" != "$4" ]; then
        mkdir "$tmp/f32"; cpu=$tmp/f32
    fi
    ./tools/trun "$2" $3 -o "$cpu" >/dev/null 2>>"$log/dtype.log" || return
    [ -d "$cpu" ] && cpu=$(ls "$cpu"/out*.npy | sort | paste -sd, -)
    ./tools/trun "$2" $3 --check "$4" --rtol 0 --atol 0 >"$tmp/r" 2>&1
    line="interpreter/eager $(worst "$tmp/r");"
    for d in fp32 tf32 bf16 fp16; do
        if ./tools/tcompile --target cuda --dtype $d "$2" -o "$tmp/d.so" 2>>"$log/dtype.log"; then
            ./tools/trun "$tmp/d.so" $3 --check "$cpu" --rtol 0 --atol 0 >"$tmp/r" 2>&1
            ./tools/trun "$tmp/d.so" $3 --check "$4" --rtol 0 --atol 0 >"$tmp/r2" 2>&1
            line="$line $d $(worst "$tmp/r")/$(worst "$tmp/r2")"
            cat "$tmp/r" >>"$log/dtype.log"
        else
            line="$line $d not compiled"
        fi
    done
    say "dtype $1: $line"
}
for m in $(ls $fix/*.pt2 | sed 's|.*/||; s|\.core\.pt2$||; s|\.pt2$||' | sort -u); do
    [ -f "$fix/$m.pt2" ] && ./tools/texport -o "$tmp/m.tg" "$fix/$m.pt2" 2>/dev/null || continue
    if ls $fix/$m.in0.b1.npy >/dev/null 2>&1; then
        dtypes "$m" "$tmp/m.tg" "$fix/$m.in0.b1.npy" "$fix/$m.out0.b1.npy"
    elif ls $fix/$m.in0.npy >/dev/null 2>&1; then
        dtypes "$m" "$tmp/m.tg" "$(ls $fix/$m.in*.npy | sort | tr '\n' ' ')" \
            "$(ls $fix/$m.out*.npy | sort | paste -sd, -)"
    fi
done
for d in ${ZOO:+"$ZOO"/*/}; do
    ./tools/texport -o "$tmp/zoo.tg" "$d/m.pt2" 2>>"$log/dtype.log" || continue
    dtypes "zoo $(basename "$d")" "$tmp/zoo.tg" "$(ls "$d"/in*.b1.npy | sort | tr '\n' ' ')" \
        "$d/out0.b1.npy"
done

./tools/tcompile --target cuda "$tmp/convnet.tg" -o "$tmp/convnet.so"
./tools/trun "$tmp/convnet.so" share/examples/convnet.in.npy -o "$tmp/out" --bench 50 \
    2>"$log/bench_cuda_so.log" >/dev/null
say "convnet --bench 50, tcompile --target cuda .so: $(grep -i median "$log/bench_cuda_so.log" | head -1)"

# The zoo's transformer models (ZOO=DIR: a folder a model, with m.tg or m.pt2,
# its inputs in*.b1.npy and eager PyTorch's output out0.b1.npy) on cuda with
# float32 attention through the flash kernels in bf16 (TG_CUDA_MATH=bf16):
# the max error against eager and against the CPU's float32 interpreter, at
# bf16's tolerance (rtol and atol 2e-2: q, k, v rounded to 8 significant
# bits), the interpreter's own against eager, and which kernel each sdpa ran
# (TLOG=run).
if [ -n "${ZOO:-}" ]; then
    bf="--rtol=2e-2 --atol=2e-2"
    for d in "$ZOO"/*/; do
        m=$(basename "$d") g=$d/m.tg
        [ -f "$g" ] || { g=$tmp/zoo.tg; ./tools/texport -o "$g" "$d/m.pt2" 2>>"$log/zoo.log" || continue; }
        ins=$(ls "$d"/in*.b1.npy | sort | tr '\n' ' ')
        rm -f "$tmp/cpu.npy"
        ./tools/trun "$g" $ins --check "$d/out0.b1.npy" -o "$tmp/cpu.npy" $tol >"$tmp/r" 2>&1
        f32=$(grep -o 'max abs error [^,]*' "$tmp/r" | head -1)
        TG_CUDA_MATH=bf16 ./tools/trun --device cuda "$g" $ins --check "$d/out0.b1.npy" $bf \
            >"$tmp/r" 2>&1
        st=$?
        eager=$(grep -o 'max abs error [^,]*' "$tmp/r" | head -1)
        TG_CUDA_MATH=bf16 TLOG=run ./tools/trun --device cuda "$g" $ins \
            --check "$tmp/cpu.npy" $bf >"$tmp/r2" 2>"$tmp/tlog"
        st2=$?
        vs_cpu=$(grep -o 'max abs error [^,]*' "$tmp/r2" | head -1)
        kern=$(grep '(sdpa):' "$tmp/tlog" | sed 's/.*(sdpa): //' | sort | uniq -c | tr -s ' \n' ' ')
        [ $st = 0 ] && [ $st2 = 0 ] && r=pass || r=FAIL
        say "zoo $m, cuda TG_CUDA_MATH=bf16: $r; vs eager $eager (f32 interpreter: $f32); vs the f32 interpreter $vs_cpu; sdpa: $kern"
        cat "$tmp/r" "$tmp/r2" "$tmp/tlog" >>"$log/zoo.log"
    done
fi

for dev in cpu cuda; do
    ./tools/trun --device $dev "$tmp/convnet.tg" share/examples/convnet.in.npy -o "$tmp/out" \
        --bench 50 2>"$log/bench_$dev.log" >/dev/null
    say "convnet --bench 50 on $dev: $(grep -i median "$log/bench_$dev.log" | head -1)"
done
rm -rf "$tmp"
