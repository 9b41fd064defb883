#!/usr/bin/env bats
# tlog: the pipeline tap (summary on stderr, bytes unchanged on stdout), --dot,
# diff, and the TLOG settings every tool shares. Graphs come from the mkgraph
# test helper (tests/unit/mkgraph.c) with a fresh random seed per test.

load common

setup() {
    common_setup
    SEED=$RANDOM$RANDOM
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
}

@test "tlog --help prints usage on stdout and exits 0" {
    run_ok "$TLOG" --help
    [[ "$output" == *"Usage: tlog [OPTION]... [FILE]"* ]]
    [[ "$output" == *"tlog diff"* ]]
    [ -z "$stderr" ]
}

@test "tlog --version prints the package version" {
    run_ok "$TLOG" --version
    [ "$output" = "tlog (tgraph) 0.1.0" ]
}

@test "tlog with an unknown option is a usage error pointing to --help" {
    run_fails 2 "Try 'tlog --help'" "$TLOG" --bogus "$TMP/g.tg"
    [ -z "$output" ]
}

@test "tlog with two inputs is a usage error" {
    run_fails 2 'one input at most.*tlog diff' "$TLOG" "$TMP/g.tg" "$TMP/g.tg"
}

@test "tlog as a pipe tap passes the graph through byte for byte" {
    "$TLOG" -q <"$TMP/g.tg" >"$TMP/out.tg"
    cmp "$TMP/g.tg" "$TMP/out.tg"
}

@test "tlog FILE passes the graph to a pipe" {
    run_ok bash -c '"$1" -q "$2" | cmp - "$2"' _ "$TLOG" "$TMP/g.tg"
}

@test "tlog writes no graph to a terminal" {
    on_tty "$TLOG" "$TMP/g.tg"
    [ "$status" -eq 0 ]
    [[ "$output" == *"inputs:"* ]]        # the summary, on the terminal's stderr
    [[ "$output" != *"__metadata__"* ]]   # but not the file
}

@test "tlog -o writes into a FIFO or device in place, never replacing it" {
    mkfifo "$TMP/fifo"
    cat "$TMP/fifo" >"$TMP/from-fifo" &
    run_ok "$TLOG" -q "$TMP/g.tg" -o "$TMP/fifo"
    wait
    [ -p "$TMP/fifo" ]
    cmp "$TMP/from-fifo" "$TMP/g.tg"
    run_ok "$TLOG" -q "$TMP/g.tg" -o /dev/null
    [ -c /dev/null ]
}

@test "tlog summary lists inputs and outputs with dtype and symbolic shape" {
    run_ok "$TLOG" "$TMP/g.tg" -o /dev/null
    [[ "$stderr" == *"graph: 4 nodes, 1 input, 1 output, 5 constants, 1 symbol"* ]]
    grep -Eq '^  x +f32\[batch, 8\]$' <<<"$stderr"
    grep -Eq '^  out +f32\[batch, 4\]$' <<<"$stderr"
}

@test "tlog summary lists symbols with their ranges" {
    run_ok "$TLOG" "$TMP/g.tg" -o /dev/null
    grep -Eq '^  batch +1\.\.64$' <<<"$stderr"
}

@test "tlog summary counts ops, most frequent first" {
    run_ok "$TLOG" "$TMP/g.tg" -o /dev/null
    ops=$(sed -n '/^ops:/,/^parameters:/p' <<<"$stderr")
    [ "$(sed -n 1p <<<"$ops")" = "ops: 3 kinds" ]
    grep -Eq '^  linear +2$' <<<"$(sed -n 2p <<<"$ops")"
    grep -Eq '^  (mul|relu) +1$' <<<"$(sed -n 3p <<<"$ops")"
}

@test "tlog summary counts parameters and bytes by dtype" {
    # 16*8 + 16 + 4*16 + 4 + 1 = 213 f32 elements
    run_ok "$TLOG" "$TMP/g.tg" -o /dev/null
    [[ "$stderr" == *"parameters: 213 elements, 852 bytes"* ]]
    grep -Eq '^  f32 +213 elements, 852 bytes$' <<<"$stderr"
}

@test "tlog -q prints no summary" {
    run_ok "$TLOG" -q "$TMP/g.tg" -o "$TMP/out.tg"
    [ -z "$stderr" ]
    cmp "$TMP/g.tg" "$TMP/out.tg"
}

@test "tlog -o FILE writes the graph there and nothing on stdout" {
    run_ok "$TLOG" -o "$TMP/out.tg" <"$TMP/g.tg"
    [ -z "$output" ]
    cmp "$TMP/g.tg" "$TMP/out.tg"
}

@test "tlog -o into a missing folder fails and leaves nothing behind" {
    run_fails 1 "^tlog: $TMP/no/out.tg: No such file or directory$" "$TLOG" -q -o "$TMP/no/out.tg" "$TMP/g.tg"
    [ "$(ls "$TMP")" = g.tg ]
}

@test "tlog reports a write error on a full disk" {
    run_fails 1 '^tlog: .*No space left on device' bash -c '"$1" -q "$2" >/dev/full' _ "$TLOG" "$TMP/g.tg"
}

@test "tlog rejects garbage with exit 1 and writes nothing" {
    head -c 4096 /dev/urandom >"$TMP/bad.tg"
    run_fails 1 '^tlog: -: ' "$TLOG" <"$TMP/bad.tg"
    [ -z "$output" ]
}

@test "tlog of a .pt2 archive on stdin says to run texport first" {
    run_fails 1 "^tlog: -: a PyTorch archive \(.pt2\), not a TG graph: run texport first$" \
        "$TLOG" <"$FIX/mlp.pt2"
    [ -z "$output" ]
}

@test "tlog into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    run_fails 1 "^tlog: -: write error: Broken pipe$" closed_pipe "$TLOG" -q "$TMP/g.tg"
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
}

@test "tlog rejects a truncated graph with exit 1 and writes nothing" {
    size=$(stat -c %s "$TMP/g.tg")
    head -c $((size - 7)) "$TMP/g.tg" >"$TMP/short.tg"
    run_fails 1 '^tlog: -: ' "$TLOG" <"$TMP/short.tg"
    [ -z "$output" ]
}

@test "tlog rejects empty input" {
    run_fails 1 '^tlog: -: ' "$TLOG" </dev/null
    [ -z "$output" ]
}

@test "tlog names a missing file" {
    run_fails 1 "^tlog: $TMP/nope.tg: No such file or directory$" "$TLOG" "$TMP/nope.tg"
}

@test "tlog --dot writes a digraph with ops, names, shapes and styled inputs" {
    run_ok "$TLOG" --dot "$TMP/g.tg"
    [[ "$output" == "digraph tgraph {"* ]]
    [[ "$output" == *'label="linear\nfc1\nf32[batch, 16]"'* ]]
    grep -q 'label="input x\\nf32\[batch, 8\]", shape=ellipse' <<<"$output"
    grep -q 'output 0\\nout' <<<"$output"
    [ -z "$stderr" ]
}

@test "tlog --dot summarizes big weights and shows tiny ones" {
    run_ok "$TLOG" --dot "$TMP/g.tg"
    grep -q 'fc1.weight\\nf32\[16, 8\]\\n128 elements", shape=note' <<<"$output"
    grep -Eq 'scale\\nf32\[\]\\n= -?[0-9.e-]+", shape=note' <<<"$output"
}

@test "tlog --dot output renders with Graphviz" {
    need dot graphviz
    "$TLOG" --dot "$TMP/g.tg" -o "$TMP/g.dot"
    dot -Tsvg "$TMP/g.dot" -o "$TMP/g.svg"
    grep -q '<svg' "$TMP/g.svg"
    grep -q 'fc1.weight' "$TMP/g.svg"
}

@test "tlog logs the graph it read as a TLOG json record" {
    TLOG=graph TLOG_FORMAT=json TLOG_FILE="$TMP/log" "$TLOG" -q "$TMP/g.tg" -o /dev/null
    [ "$(wc -l <"$TMP/log")" -ge 1 ]
    grep -q '^{"tool":"tlog","comp":"graph","level":"info","time":[0-9.e+]*,"pid":[0-9]*,"msg":"' "$TMP/log"
    grep -q '"fields":{"nodes":4,"inputs":1,"outputs":1,"constants":5}}$' "$TMP/log"
}

@test "TLOG=help lists every component and exits 0" {
    run_ok env TLOG=help "$TLOG" "$TMP/g.tg"
    for c in import graph passes fusion memory codegen quant sparse run perf format; do
        grep -Eq "^  $c " <<<"$output"
    done
}

@test "tgraph(7) documents every TLOG component the tools know" {
    man7=${TG_SRCDIR:-$BATS_TEST_DIRNAME/..}/man/man7/tgraph.7
    run_ok env TLOG=help "$TLOG"
    comps=$(sed -n 's/^  \([a-z]*\) .*/\1/p' <<<"$output")
    [ "$(wc -w <<<"$comps")" -ge 10 ]
    for c in $comps; do
        grep -qx "\.B $c" "$man7" || { echo "$c is not in $man7"; false; }
    done
}

@test "an unknown TLOG component is a usage error listing the known ones" {
    run_fails 2 "TLOG: unknown component 'fusoin' \(known: all, import, .*format" env TLOG=fusoin "$TLOG" "$TMP/g.tg"
    [ -z "$output" ]
}

@test "tlog diff of a graph with itself prints nothing and exits 0" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/h.tg"
    run_ok "$TLOG" diff "$TMP/g.tg" "$TMP/h.tg"
    [ -z "$output" ]
}

@test "tlog diff reports changed weights with the max abs difference, exit 1" {
    "$UNIT/mkgraph" mlp $((SEED + 1)) >"$TMP/h.tg"
    run --separate-stderr "$TLOG" diff "$TMP/g.tg" "$TMP/h.tg"
    [ "$status" -eq 1 ]
    grep -Eq '^const fc1.weight: data changed, [0-9]+ of 128 elements, max abs difference [0-9.e-]+$' <<<"$output"
    [ "$(grep -c 'data changed' <<<"$output")" -eq 5 ]
}

@test "tlog diff reports ops added and removed by kind" {
    "$UNIT/mkgraph" mlp-gelu "$SEED" >"$TMP/h.tg"
    run --separate-stderr "$TLOG" diff "$TMP/g.tg" "$TMP/h.tg"
    [ "$status" -eq 1 ]
    [[ "$output" == *"op relu: 1 -> 0 (-1)"* ]]
    [[ "$output" == *"op gelu: 0 -> 1 (+1)"* ]]
}

@test "tlog diff reports values whose shape changed" {
    "$UNIT/mkgraph" mlp-wide "$SEED" >"$TMP/h.tg"
    run --separate-stderr "$TLOG" diff "$TMP/g.tg" "$TMP/h.tg"
    [ "$status" -eq 1 ]
    [[ "$output" == *"value fc1: f32[batch, 16] -> f32[batch, 32]"* ]]
    [[ "$output" == *"const fc1.weight: f32[16, 8] -> f32[32, 8]"* ]]
}

@test "tlog diff -q prints nothing but exits 1 on a difference" {
    "$UNIT/mkgraph" mlp-gelu "$SEED" >"$TMP/h.tg"
    run --separate-stderr "$TLOG" diff -q "$TMP/g.tg" "$TMP/h.tg"
    [ "$status" -eq 1 ]
    [ -z "$output" ]
}

@test "tlog diff reads one side from stdin" {
    run_ok bash -c '"$1" diff - "$2" <"$2"' _ "$TLOG" "$TMP/g.tg"
}

@test "tlog diff with a bad graph exits 2" {
    printf 'not a graph' >"$TMP/bad.tg"
    run_fails 2 "^tlog: $TMP/bad.tg: " "$TLOG" diff "$TMP/g.tg" "$TMP/bad.tg"
}

@test "tlog diff with one graph is a usage error" {
    run_fails 2 'diff needs two graphs' "$TLOG" diff "$TMP/g.tg"
}

# --- on the real pipeline: texport's graphs of the fixture models

@test "tlog passes texport's tinygpt graph through a pipe unchanged" {
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/ref.tg"
    run_ok bash -c 'set -o pipefail; "$1" "$2" | "$3" -q | cmp - "$4"' _ \
        "$TEXPORT" "$FIX/tinygpt.pt2" "$TLOG" "$TMP/ref.tg"
}

@test "tlog summarizes tinygpt: token ids with a dynamic batch, PyTorch's parameter count" {
    # 560,640 is the parameter count torch reported (fixtures/manifest.json)
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/t.tg"
    run_ok "$TLOG" "$TMP/t.tg" -o /dev/null
    grep -Eq '^  idx +i64\[s0, 64\]$' <<<"$stderr"
    grep -Eq '^  s0 +1\.\.1024$' <<<"$stderr"
    grep -Eq '^  [a-z_0-9]+ +f32\[s0, 64, 512\]$' <<<"$stderr"
    grep -Eq '^  sdpa +2$' <<<"$stderr"
    [[ "$stderr" == *"parameters: 560,640 elements, 2,242,560 bytes"* ]]
}

@test "tlog counts mlp's parameters as PyTorch does" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok "$TLOG" "$TMP/m.tg" -o /dev/null
    [[ "$stderr" == *"parameters: 235,146 elements"* ]]
}

@test "tlog --dot of tinygpt renders with Graphviz" {
    need dot graphviz
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/t.tg"
    "$TLOG" --dot "$TMP/t.tg" | dot -Tsvg >"$TMP/t.svg"
    grep -q '<svg' "$TMP/t.svg"
    grep -q 'sdpa' "$TMP/t.svg"
}

@test "tlog diff of mlp exported from .pt2 and from its Core ATen form shows only renames" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/a.tg"
    "$TEXPORT" "$FIX/mlp.core.pt2" -o "$TMP/b.tg"
    run --separate-stderr "$TLOG" diff "$TMP/a.tg" "$TMP/b.tg"
    [ "$status" -le 1 ]
    # the same weights and the same ops: no constant or op line
    ! grep -Eq '^(const|op) ' <<<"$output" || false
}

# --- profiles: trun --profile, then tlog trace and tlog report

# A profile of the mlp graph: 4 nodes, 3 runs (1 warm-up + 2).
profile() {
    "$TRUN" --random --seed "$SEED" --bench=2 --warmup=1 --profile "$TMP/p.jsonl" "$TMP/g.tg"
}

@test "tlog trace turns a trun profile into valid JSON" {
    profile
    run_ok "$TLOG" trace "$TMP/p.jsonl"
    python3 -m json.tool <<<"$output" >/dev/null
}

@test "tlog trace writes one complete event per node timing and one per run" {
    profile
    "$TLOG" trace "$TMP/p.jsonl" -o "$TMP/t.json"
    python3 - "$TMP/t.json" <<'PY'
import json, sys
t = json.load(open(sys.argv[1]))
ev = t["traceEvents"]
assert isinstance(ev, list)
x = [e for e in ev if e["ph"] == "X"]
for e in x:
    assert isinstance(e["name"], str) and e["ts"] >= 0 and e["dur"] >= 0
    assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
nodes = [e for e in x if e["cat"] != "run"]
runs = [e for e in x if e["cat"] == "run"]
assert len(nodes) == 12, len(nodes)
assert sorted(e["name"] for e in runs) == ["run 0", "run 1", "run 2"]
assert {e["name"] for e in nodes} == {"fc1", "act", "fc2", "out"}
assert {e["args"]["op"] for e in nodes} == {"linear", "relu", "mul"}
# every node lies inside its run, and nodes of one run do not overlap
for r in runs:
    mine = sorted((e for e in nodes if e["args"]["run"] == int(r["name"][4:])), key=lambda e: e["ts"])
    assert len(mine) == 4
    for a, b in zip(mine, mine[1:]):
        assert a["ts"] + a["dur"] <= b["ts"] + 1e-3
    assert r["ts"] <= mine[0]["ts"] and mine[-1]["ts"] + mine[-1]["dur"] <= r["ts"] + r["dur"] + 1e-3
meta = [e for e in ev if e["ph"] == "M"]
assert meta[0]["name"] == "process_name" and meta[0]["args"]["name"] == "trun"
PY
}

@test "tlog trace skips records that are not timings" {
    TLOG=graph TLOG_FORMAT=json TLOG_FILE="$TMP/p.jsonl" "$TLOG" -q "$TMP/g.tg" -o /dev/null
    profile
    run_ok "$TLOG" trace "$TMP/p.jsonl"
    [ "$(python3 -c 'import json,sys; print(sum(e["ph"]=="X" and e["cat"]!="run" for e in json.load(sys.stdin)["traceEvents"]))' <<<"$output")" -eq 12 ]
}

@test "tlog trace of a text log says it wants JSON records, exit 1" {
    TLOG=graph TLOG_FILE="$TMP/text.log" "$TLOG" -q "$TMP/g.tg" -o /dev/null
    run_fails 1 "^tlog: $TMP/text.log: line 1: not a TLOG JSON record \(TLOG_FORMAT=json" \
        "$TLOG" trace "$TMP/text.log"
    [ -z "$output" ]
}

@test "tlog trace of a log without timings fails with exit 1" {
    TLOG=graph TLOG_FORMAT=json TLOG_FILE="$TMP/g.log" "$TLOG" -q "$TMP/g.tg" -o /dev/null
    run_fails 1 "no per-node timings \(trun --profile" "$TLOG" trace "$TMP/g.log"
    [ -z "$output" ]
}

@test "tlog trace rejects a timing with a bad duration, naming the line" {
    profile
    sed -i '2s/"us":[0-9.e-]*/"us":"fast"/' "$TMP/p.jsonl"
    run_fails 1 "line 2: \"us\" is not a number" "$TLOG" trace "$TMP/p.jsonl"
}

@test "tlog trace without a profile is a usage error" {
    run_fails 2 "trace needs one PROFILE" "$TLOG" trace
}

@test "tlog report lists op kinds and nodes with their share, heaviest first" {
    profile
    run_ok "$TLOG" report "$TMP/p.jsonl"
    [[ "$output" == "profile: 12 timings over 3 runs, "*" ms in all, "*" ms a run"* ]]
    ops=$(sed -n '/^by op/,/^$/p' <<<"$output" | grep -E '^  (linear|relu|mul) ')
    [ "$(wc -l <<<"$ops")" -eq 3 ]
    grep -Eq '^  linear +6 ' <<<"$ops"
    nodes=$(sed -n '/^by node/,$p' <<<"$output" | grep -E '^  (fc1|act|fc2|out) ')
    [ "$(wc -l <<<"$nodes")" -eq 4 ]
    grep -Eq '^  fc1 +linear +3 ' <<<"$nodes"
    # shares add up to 100% (to rounding), and the rows are sorted by time
    awk '{ s += $NF } END { exit !(s > 99.5 && s < 100.5) }' <<<"$nodes"
    sort -s -k4,4 -g -r -c <<<"$nodes"
}

@test "tlog report -n limits the rows of each table" {
    profile
    run_ok "$TLOG" report -n 1 "$TMP/p.jsonl"
    [[ "$output" == *"by op (heaviest 1 of 3):"* ]]
    [[ "$output" == *"by node (heaviest 1 of 4):"* ]]
}

@test "tlog report reads a profile from standard input" {
    profile
    run_ok bash -c '"$1" report - <"$2"' _ "$TLOG" "$TMP/p.jsonl"
    [[ "$output" == "profile: 12 timings over 3 runs"* ]]
}

# --- fused groups from a tcompile log, drawn as clusters

# The log line tcompile writes for a fused group (TLOG=fusion TLOG_FORMAT=json).
fusion_record() {
    printf '{"tool":"tcompile","comp":"fusion","level":"info","time":1,"pid":1,"msg":"group","fields":{"group":%s,"kind":"%s","nodes":[%s]}}\n' "$@"
}

@test "tlog --dot --log draws fused groups as clusters" {
    fusion_record 1 epilogue '"fc1","act"' >"$TMP/c.log"
    run_ok "$TLOG" --dot --log "$TMP/c.log" "$TMP/g.tg"
    cluster=$(sed -n '/subgraph cluster_0 {/,/^  }/p' <<<"$output")
    [[ "$cluster" == *'label="group 1: epilogue";'* ]]
    grep -q '^    n[0-9]* \[label="linear\\nfc1\\nf32\[batch, 16\]"\];' <<<"$cluster"
    grep -q '^    n[0-9]* \[label="relu\\nact\\nf32\[batch, 16\]"\];' <<<"$cluster"
    [ "$(grep -c '\[label=' <<<"$cluster")" -eq 2 ]
    # each node is drawn once
    [ "$(grep -c 'label="linear\\nfc1' <<<"$output")" -eq 1 ]
}

@test "tlog --dot --log output renders with Graphviz" {
    need dot graphviz
    fusion_record 0 epilogue '"fc1","act"' >"$TMP/c.log"
    fusion_record 1 loop '"fc2","out"' >>"$TMP/c.log"
    "$TLOG" --dot --log "$TMP/c.log" "$TMP/g.tg" | dot -Tsvg >"$TMP/g.svg"
    grep -q '<svg' "$TMP/g.svg"
    grep -q 'group 0: epilogue' "$TMP/g.svg"
    grep -q 'group 1: loop' "$TMP/g.svg"
}

@test "tlog --dot --log warns when no group names a node of the graph" {
    fusion_record 0 epilogue '"nope"' >"$TMP/c.log"
    run_ok "$TLOG" --dot --log "$TMP/c.log" "$TMP/g.tg"
    [[ "$stderr" == *"warning: no fused group names a node of this graph"* ]]
    [[ "$output" != *"subgraph"* ]]
}

@test "tlog --log without --dot is a usage error" {
    fusion_record 0 epilogue '"fc1"' >"$TMP/c.log"
    run_fails 2 "\-\-log draws fused groups: it goes with --dot" "$TLOG" --log "$TMP/c.log" "$TMP/g.tg"
}

# --- what the other tools log (TLOG components across the toolchain)

@test "texport TLOG=graph logs the imported graph, one line per node with shapes" {
    run_ok env TLOG=graph "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    [[ "$stderr" == *"[texport:graph] import: 5 nodes"* ]]
    grep -Eq '^inputs: x f32\[s0, 784\]$' <<<"$stderr"
    grep -Eq '^  linear = linear\(x, fc1.weight, fc1.bias\) : f32\[s0, 256\]$' <<<"$stderr"
    grep -Eq '^outputs: linear_2$' <<<"$stderr"
}

@test "texport TLOG=import logs each decomposition with the ops it became" {
    run_ok env TLOG=import "$TEXPORT" "$FIX/tinygpt.pt2" -o "$TMP/t.tg"
    grep -Eq '^\[texport:import\] decomposed split \(torch.ops.aten.split.Tensor\) -> slice, slice, slice$' <<<"$stderr"
    # single mappings only at debug level
    ! grep -q ' -> linear$' <<<"$stderr" || false
}

@test "texport TLOG=+import logs every operator mapped, for .pt2 and ONNX" {
    run_ok env TLOG=+import "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    grep -Eq '^\[texport:import\] linear \(torch.ops.aten.linear.default\) -> linear$' <<<"$stderr"
    run_ok env TLOG=+import TLOG_FORMAT=json "$TEXPORT" "$FIX/cnn.onnx" -o "$TMP/c.tg"
    grep -q '"fields":{"source_op":"Conv","node":"[^"]*","ops":\["conv"\]}' <<<"$stderr"
}

@test "tcompile TLOG=passes,graph logs each pass and the graph after those that changed it" {
    "$UNIT/mkgraph" mlp "$SEED" >"$TMP/g.tg"
    run_ok env TLOG=passes,graph "$TCOMPILE" "$TMP/g.tg" -o "$TMP/g.so"
    grep -Eq '^\[tcompile:passes\] dce: 0 changes, 4 -> 4 nodes' <<<"$stderr"
    grep -q '^\[tcompile:graph\] import: 4 nodes$' <<<"$stderr"
    ! grep -q '^\[tcompile:graph\] after dce: [0-9]' <<<"$stderr" || false
    grep -q '^\[tcompile:graph\] after dce: unchanged$' <<<"$stderr"
}

@test "tcompile TLOG=fusion logs fused groups that tlog --dot --log draws" {
    need dot graphviz
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    TLOG=fusion TLOG_FORMAT=json TLOG_FILE="$TMP/c.log" "$TCOMPILE" "$TMP/m.tg" -o "$TMP/m.so"
    grep -q '"comp":"fusion".*"fields":{"group":0,"kind":"epilogue","nodes":\["linear","relu"\]}' "$TMP/c.log"
    run_ok "$TLOG" --dot --log "$TMP/c.log" "$TMP/m.tg"
    [ "$(grep -c 'subgraph cluster_' <<<"$output")" -eq 2 ]
    dot -Tsvg <<<"$output" >"$TMP/m.svg"
    grep -q 'group 1: epilogue' "$TMP/m.svg"
}

@test "a conv that bn_fold folded keeps its name, so tlog --dot --log draws it in its group" {
    "$TEXPORT" "$FIX/cnn.pt2" -o "$TMP/c.tg"
    TLOG=fusion TLOG_FORMAT=json TLOG_FILE="$TMP/c.log" "$TCOMPILE" "$TMP/c.tg" -o "$TMP/c.so"
    grep -q '"msg":"bn_fold: batch_norm_1 folded into conv2d_1"' "$TMP/c.log"
    grep -q '"nodes":\["conv2d_1","relu_1"' "$TMP/c.log"
    run_ok "$TLOG" --dot --log "$TMP/c.log" "$TMP/c.tg"
    # both convs inside a cluster (indented by 4), none drawn outside (indented by 2)
    [ "$(grep -c '^    n[0-9]* \[label="conv\\n' <<<"$output")" -eq 2 ]
    [ "$(grep -c '^  n[0-9]* \[label="conv\\n' <<<"$output")" -eq 0 ]
}

@test "trun TLOG=perf logs the totals: runs, time, peak memory" {
    run_ok env TLOG=perf TLOG_FORMAT=json "$TRUN" --random --bench=3 --warmup=1 "$TMP/g.tg"
    grep -Eq '"comp":"perf".*"msg":"4 runs in [0-9.]+ ms \([0-9.]+ ms a run\), peak memory [0-9]+ KiB","fields":\{"runs":4,"ms":[0-9.]+,"ms_per_run":[0-9.]+,"max_rss_kib":[0-9]+\}' <<<"$stderr"
}

@test "trun TLOG=+run logs each node's time as records tlog report reads" {
    TLOG=+run TLOG_FORMAT=json TLOG_FILE="$TMP/r.log" "$TRUN" --random --bench=1 --warmup=0 "$TMP/g.tg"
    # a timing per node, after the record of the device each runs on
    [ "$(grep -c '"comp":"run","level":"debug".*"fields":{"node":.*"us":' "$TMP/r.log")" -eq 4 ]
    [ "$(grep -c '"comp":"run","level":"debug".*"backend":"cpu"}' "$TMP/r.log")" -eq 4 ]
    run_ok "$TLOG" report "$TMP/r.log"
    [[ "$output" == "profile: 4 timings over 1 run, "* ]]
}

@test "trun --profile of a compiled model times each kernel, fused ones as one, and tlog traces it" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    "$TCOMPILE" "$TMP/m.tg" -o "$TMP/m.so"
    run_ok "$TRUN" --random --dim s0=3 --bench=1 --warmup=1 --profile "$TMP/p.jsonl" "$TMP/m.so"
    # linear_packed+relu twice (fused), then the last linear_packed: 3 kernels x 2 runs
    [ "$(wc -l <"$TMP/p.jsonl")" -eq 6 ]
    grep -q '"fields":{"node":"relu","op":"linear_packed+relu","us":[0-9.e-]*,"run":1}' "$TMP/p.jsonl"
    grep -q '"fields":{"node":"linear_2","op":"linear_packed","us":[0-9.e-]*,"run":0}' "$TMP/p.jsonl"
    run_ok "$TLOG" trace "$TMP/p.jsonl"
    python3 -m json.tool <<<"$output" >/dev/null
    run_ok "$TLOG" report "$TMP/p.jsonl"
    grep -Eq '^  linear_packed\+relu +4 ' <<<"$output"
}

@test "tquant TLOG=graph logs the quantized graph, which tlog diff compares" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_ok env TLOG=graph "$TQUANT" --scheme=dynamic "$TMP/m.tg" -o "$TMP/q.tg"
    [[ "$stderr" == *"[tquant:graph] quant: 5 nodes"* ]]
    grep -Eq '^  linear = qlinear\(x, fc1.weight.q, fc1.weight.scale, fc1.bias\) : f32\[s0, 256\]$' <<<"$stderr"
    run --separate-stderr "$TLOG" diff "$TMP/m.tg" "$TMP/q.tg"
    [ "$status" -eq 1 ]
    [[ "$output" == *"op qlinear: 0 -> 3 (+3)"* ]]
    [[ "$output" == *"const fc1.weight.q: added (i8[256, 784])"* ]]
}
