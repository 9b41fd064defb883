#!/bin/sh
# Latency of int8 (tquant static, minmax) against float32 compiled models:
# the fixtures mlp, cnn, tinygpt and a 4-layer 512-wide MLP (made with
# PyTorch when $PYTHON has it), at batch 1 and 64, one thread.
#
#   bench/quant.sh [BUILD_DIR]      (default: the current directory)
#
# Each (model, batch) runs the float and the int8 .so in turn, ROUNDS times
# (default 5), each time `trun --bench=RUNS` (default 200); the table gives
# the median over rounds of each run's median latency, so load from other
# processes hits both sides alike. Writes a Markdown table on stdout.
set -eu
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(cd "${1:-.}" && pwd)
T=$build/tools
PYTHON=${PYTHON:-/work/venv/bin/python3}
ROUNDS=${ROUNDS:-5}
RUNS=${RUNS:-200}
export TGRAPH_RUNTIME_DIR=${TGRAPH_RUNTIME_DIR:-$build}
export TGRAPH_INCLUDE_DIR=${TGRAPH_INCLUDE_DIR:-$src/include}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# mkcal DIR COUNT DTYPE SHAPE...: calibration .npy files (floats in [0, 1)
# or token ids in [0, 512)), by the tests' own generator.
mkcal() {
    python3 "$src/tests/tools/mkcal.py" "$@"
}

mlp512() {
    "$PYTHON" - "$1" <<'PY'
import sys, torch
torch.manual_seed(0)
class M(torch.nn.Module):
    def __init__(s):
        super().__init__()
        s.l = torch.nn.ModuleList([torch.nn.Linear(512, 512) for _ in range(4)])
    def forward(s, x):
        for i, l in enumerate(s.l):
            x = l(x)
            if i < 3:
                x = torch.relu(x)
        return x
b = torch.export.Dim("batch", min=1, max=1024)
ep = torch.export.export(M().eval(), (torch.randn(2, 512),), dynamic_shapes=({0: b},))
torch.export.save(ep, sys.argv[1])
PY
}

# median of numbers on stdin
median() { sort -g | awk '{ v[NR] = $1 } END { print NR % 2 ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

# latency SO SYM BATCH: one trun --bench median in ms
latency() {
    "$T/trun" "$1" --random --dim "$2=$3" --threads 1 --bench="$RUNS" -o /dev/null 2>&1 |
        sed -n 's/.*median \([0-9.]*\) ms.*/\1/p'
}

cp "$src/tests/fixtures/mlp.pt2" "$src/tests/fixtures/cnn.pt2" "$src/tests/fixtures/tinygpt.pt2" "$tmp/"
models="mlp cnn tinygpt"
if "$PYTHON" -c 'import torch' 2>/dev/null && mlp512 "$tmp/mlp512.pt2"; then
    models="$models mlp512"
else
    echo "(no PyTorch at $PYTHON: mlp512 left out)" >&2
fi
mkcal "$tmp/cal-mlp" 16 f4 1 784
mkcal "$tmp/cal-cnn" 16 f4 1 3 32 32
mkcal "$tmp/cal-tinygpt" 8 i8 1 64
mkcal "$tmp/cal-mlp512" 16 f4 1 512

echo "| model | batch | float32 ms | int8 ms | speed-up |"
echo "|---|---:|---:|---:|---:|"
for m in $models; do
    "$T/texport" "$tmp/$m.pt2" -o "$tmp/$m.tg"
    "$T/tquant" -q --calib "$tmp/cal-$m" "$tmp/$m.tg" -o "$tmp/$m.q.tg"
    "$T/tcompile" "$tmp/$m.tg" -o "$tmp/$m.so"
    "$T/tcompile" "$tmp/$m.q.tg" -o "$tmp/$m.q.so"
    sym=$("$T/tlog" "$tmp/$m.tg" 2>&1 >/dev/null | sed -n '/^symbols:/{n;s/^  \([^ ]*\).*/\1/p;}')
    sym=${sym:-s0}
    for b in 1 64; do
        : >"$tmp/f" && : >"$tmp/q"
        r=0
        while [ "$r" -lt "$ROUNDS" ]; do
            latency "$tmp/$m.so" "$sym" "$b" >>"$tmp/f"
            latency "$tmp/$m.q.so" "$sym" "$b" >>"$tmp/q"
            r=$((r + 1))
        done
        f=$(median <"$tmp/f") q=$(median <"$tmp/q")
        echo "| $m | $b | $f | $q | $(awk -v f="$f" -v q="$q" 'BEGIN { printf "%.2fx", f / q }') |"
    done
done
