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
    skip_unless_cmd script bsdutils
    run_ok script -qec "'$TLOG' '$TMP/g.tg'" /dev/null
    [[ "$output" == *"inputs:"* ]]        # the summary, on the terminal's stderr
    [[ "$output" != *"__metadata__"* ]]   # but not the file
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
    skip_unless_cmd dot graphviz
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
    skip_unless_cmd dot graphviz
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
    ! grep -Eq '^(const|op) ' <<<"$output"
}
