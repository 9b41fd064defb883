#!/bin/sh
# build.sh WORK [MODEL...]: as each of bench.py's exports WORK/MODEL.I.pt2
# appears, texport it and `tcompile --target $TARGET --dtype $DTYPE` it
# (default cuda, bf16), all rows at once, and each in float32 too
# (MODEL.I.f32.so); WORK/MODEL.I.so.ok when it built,
# WORK/MODEL.I.fail naming the step that failed and its first error lines;
# tcompile's log has each pass's changes (TLOG, default passes).
# Run from a built source tree or pack.sh's folder; logs in $OUT or WORK.
set -u
work=$1; shift
models=${*:-resnet50 vit_b_16 bert llama150m}
target=${TARGET:-cuda} dtype=${DTYPE:-bf16} wait=${WAIT:-300}
logs=${OUT:-$work}
export TGRAPH_RUNTIME_DIR=$PWD TGRAPH_INCLUDE_DIR=$PWD/include
export TG_BACKEND_PATH=$PWD/lib/backend/cuda/.libs     # the cuda device, uninstalled
one() {     # MODEL.I
    b=$work/$1 t0=$(date +%s)
    while [ ! -f "$b.pt2" ] && [ ! -f "$b.fail" ] && [ $(($(date +%s) - t0)) -lt "$wait" ]; do
        sleep 1
    done
    [ -f "$b.fail" ] && return
    [ -f "$b.pt2" ] || { echo "no export after $wait s" >"$b.fail"; return; }
    t1=$(date +%s)
    if ! timeout 240 ./tools/texport -o "$b.tg" "$b.pt2" >"$logs/texport.$1.log" 2>&1; then
        { echo "texport:"; head -5 "$logs/texport.$1.log"; } >"$b.fail"; return
    fi
    t2=$(date +%s)
    if ! TLOG=${TLOG:-passes} timeout 240 ./tools/tcompile --target "$target" --dtype "$dtype" \
            -o "$b.so" "$b.tg" \
            >"$logs/tcompile.$1.log" 2>&1; then
        { echo "tcompile --target $target:"; head -8 "$logs/tcompile.$1.log"; } >"$b.fail"; return
    fi
    touch "$b.so.ok"
    echo "$1: texport $((t2 - t1)) s, tcompile $(($(date +%s) - t2)) s, .so $(wc -c <"$b.so") bytes"
    # in float32 too: the backend's paths against torch's float32 model
    timeout 240 ./tools/tcompile --target "$target" -o "$b.f32.so" "$b.tg" \
        >"$logs/tcompile.$1.f32.log" 2>&1 && touch "$b.f32.so.ok"
}
for m in $models; do
    for i in 0 1; do
        one "$m.$i" &
    done
done
wait
for f in "$work"/*.fail; do
    [ -f "$f" ] && echo "FAILED $(basename "$f" .fail): $(tr '\n' ' ' <"$f" | cut -c1-300)"
done
exit 0
