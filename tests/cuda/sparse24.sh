#!/bin/sh
# linear_24 through cuSPARSELt on a GPU machine (issue 20), from a built
# tree (gpu_check.sh runs it): a 2:4 MLP (tests/unit/mkgraph mlp24: x
# [tokens,256] -> fc1 512 (+bias) -> relu -> fc2 256 (+bias), weights 2:4
# already) pruned by tsparse (its linear_24 nodes keep the weights exactly),
# compiled with tcompile --target cuda --dtype bf16 (then fp16), against the
# dense model compiled from the same weights in that type, and against the
# CPU's float32 interpreter; trun --device cuda with TG_CUDA_MATH=bf16
# (fp16) likewise, TLOG=run naming cuSPARSELt for both nodes; then cuSPARSELt made absent
# (TG_CUSPARSELT=/nonexistent): the same checks pass on the dense path and
# TLOG says why. Tolerance: rtol = atol = 2e-2 (bf16 operands: 8 significant
# bits; the dense and sparse products accumulate in float32 in different
# orders; cuSPARSELt's output in bf16 adds half an ulp). Token counts 384
# and 100 (cuSPARSELt refuses 100 columns: x is padded to 128 rows).
#   tests/cuda/sparse24.sh [LOGDIR]   exit 0: all passed; 77: no cuSPARSELt
set -u
log=${1:-.}
mkdir -p "$log"
. bench/cuda/sparse24/locate.sh
if [ -z "$S" ]; then
    echo "sparse24: no cuSPARSELt (set CUSPARSELT_DIR)"
    exit 77
fi
export TG_CUSPARSELT=$S/lib/libcusparseLt.so.0
export TG_BACKEND_PATH=$PWD/lib/backend/cuda/.libs     # the cuda device, uninstalled
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
pass=0 fail=0
ok() {   # WHAT STATUS
    if [ "$2" = 0 ]; then pass=$((pass + 1)); echo "pass $1" >>"$log/sparse24.log"
    else fail=$((fail + 1)); echo "FAIL $1" >>"$log/sparse24.log"; fi
}
tol="--rtol=2e-2 --atol=2e-2"
tests/unit/mkgraph mlp24:256,512,256:bias 7 >"$tmp/d.tg"
./tools/tsparse "$tmp/d.tg" -o "$tmp/s.tg" --report >"$log/sparse24_tsparse.txt" 2>&1
ok "tsparse" $?
for dt in bf16 fp16; do
    ./tools/tcompile --target cuda --dtype $dt "$tmp/d.tg" -o "$tmp/d.so" 2>>"$log/sparse24.log" &&
        ./tools/tcompile --target cuda --dtype $dt "$tmp/s.tg" -o "$tmp/s.so" 2>>"$log/sparse24.log"
    ok "$dt: tcompile --target cuda --dtype $dt, dense and pruned" $?
    for T in 384 100; do
        r="--random --seed=$T --dim=tokens=$T"
        ./tools/trun "$tmp/d.tg" $r -o "$tmp/f32.npy" 2>>"$log/sparse24.log"
        ./tools/trun "$tmp/d.so" $r -o "$tmp/dense.npy" 2>>"$log/sparse24.log"
        for ref in dense f32; do
            ./tools/trun "$tmp/s.so" $r --check "$tmp/$ref.npy" $tol >"$tmp/r" 2>&1
            st=$?
            echo "  $dt T $T, sparse .so vs $ref: $(grep -o 'max abs error.*' "$tmp/r")" >>"$log/sparse24.log"
            ok "$dt T $T: the pruned .so (cuSPARSELt) matches the $ref model" $st
            TG_CUSPARSELT=/nonexistent ./tools/trun "$tmp/s.so" $r --check "$tmp/$ref.npy" $tol \
                >"$tmp/r" 2>&1
            st=$?
            echo "  $dt T $T, sparse .so without cuSPARSELt vs $ref: $(grep -o 'max abs error.*' "$tmp/r")" >>"$log/sparse24.log"
            ok "$dt T $T: the pruned .so without cuSPARSELt (dense path) matches the $ref model" $st
        done
        # a compiled model logs nothing: that cuSPARSELt ran shows as an output
        # that differs from the same model's dense path (another summation order)
        ./tools/trun "$tmp/s.so" $r -o "$tmp/lt.npy" 2>>"$log/sparse24.log"
        TG_CUSPARSELT=/nonexistent ./tools/trun "$tmp/s.so" $r --check "$tmp/lt.npy" --rtol 0 \
            --atol 0 >"$tmp/r" 2>&1
        st=$?
        echo "  $dt T $T, sparse .so with vs without cuSPARSELt: $(grep -o 'max abs error.*' "$tmp/r")" >>"$log/sparse24.log"
        [ "$st" = 1 ]
        ok "$dt T $T: the compiled model's cuSPARSELt output differs from its dense path's" $?
        TG_CUDA_MATH=$dt TLOG=run ./tools/trun --device cuda "$tmp/s.tg" $r --check "$tmp/dense.npy" \
            $tol >"$tmp/r" 2>"$tmp/tlog"
        st=$?
        cat "$tmp/r" "$tmp/tlog" | grep -v 'refused\|^$' | grep 'linear_24\|error' >>"$log/sparse24.log"
        ok "$dt T $T: trun --device cuda TG_CUDA_MATH=$dt matches the dense model" $st
        n=$(grep -c '(linear_24): cuSPARSELt' "$tmp/tlog")
        echo "  $dt T $T: $n of 2 linear_24 nodes through cuSPARSELt (trun --device cuda)" >>"$log/sparse24.log"
        [ "$n" = 2 ]
        ok "$dt T $T: TLOG=run names cuSPARSELt for both nodes" $?
        TG_CUSPARSELT=/nonexistent TG_CUDA_MATH=$dt TLOG=run ./tools/trun --device cuda "$tmp/s.tg" $r \
            --check "$tmp/dense.npy" $tol >"$tmp/r" 2>"$tmp/tlog"
        st=$?
        ok "$dt T $T: trun --device cuda without cuSPARSELt matches the dense model" $st
        grep -q 'dense, expanded, cuBLASLt: cuSPARSELt not loaded' "$tmp/tlog"
        ok "$dt T $T: TLOG=run says why cuSPARSELt was not taken" $?
    done
done
echo "sparse24 (linear_24 through cuSPARSELt vs dense bf16): $pass passed, $fail failed"
[ "$fail" = 0 ]
