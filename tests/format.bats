#!/usr/bin/env bats
# The TG file (tgraph-format(5)): round trips, an independent safetensors reader that
# loads every tensor, and one clear line (exit 1) for each kind of bad file.
# Graphs come from the unit test's helper: seed-0 small, seed-1 every dtype and
# attribute kind, seed-2 empty.

load common

ST_CHECK=$BATS_TEST_DIRNAME/tools/st_check.py

setup() {
    common_setup
    "$UNIT/test_format" --seed "$TMP"
    SMALL=$TMP/seed-0 FULL=$TMP/seed-1 EMPTY=$TMP/seed-2
}

# mutate IN OUT FROM TO [graph]: IN with the first FROM replaced by TO in the
# header JSON (or, with "graph", in the graph JSON inside it); data unchanged.
mutate() {
    python3 - "$@" <<'EOF'
import json, struct, sys
src, dst, a, b = sys.argv[1:5]
data = open(src, 'rb').read()
n, = struct.unpack('<Q', data[:8])
h = data[8:8 + n].decode()
if len(sys.argv) > 5:
    j = json.loads(h)
    g = j['__metadata__']['tgraph']
    assert a in g, a
    j['__metadata__']['tgraph'] = g.replace(a, b, 1)
    h = json.dumps(j, separators=(',', ':'))
else:
    assert a in h, a
    h = h.replace(a, b, 1)
hb = h.encode()
open(dst, 'wb').write(struct.pack('<Q', len(hb)) + hb + data[8 + n:])
EOF
}

# rejected FILE PATTERN: tlog exits 1, writes nothing on stdout and exactly one
# line "tlog: FILE: ..." matching PATTERN on stderr.
rejected() {
    run_fails 1 "^tlog: $1: .*$2" "$TLOG" -q "$1"
    [ -z "$output" ]
    [ "$(printf '%s\n' "$stderr" | wc -l)" -eq 1 ]
}

@test "a graph read and written again is byte-identical" {
    for f in "$SMALL" "$FULL" "$EMPTY"; do
        run_ok "$UNIT/test_format" --rewrite "$f" "$TMP/again"
        cmp "$f" "$TMP/again"
    done
}

@test "the header is padded to a multiple of 8 bytes" {
    for f in "$SMALL" "$FULL" "$EMPTY"; do
        n=$(od -An -tu8 -N8 "$f" | tr -d ' ')
        [ $((n % 8)) -eq 0 ]
    done
}

@test "tlog reads a TG file and passes it through unchanged" {
    "$TLOG" -q "$FULL" >"$TMP/out"
    cmp "$FULL" "$TMP/out"
}

@test "tlog reads a TG file from a pipe" {
    cat "$FULL" | "$TLOG" -q >"$TMP/out"
    cmp "$FULL" "$TMP/out"
}

@test "a plain safetensors reader loads every tensor of a TG file" {
    run_ok python3 "$ST_CHECK" "$FULL"
    [ "${#lines[@]}" -eq 17 ]
    printf '%s\n' "${lines[@]}" | grep -q '^fc1.weight F32 \[3,4\] crc32=[0-9a-f]\{8\}$'
    printf '%s\n' "${lines[@]}" | grep -q '^k.bool BOOL \[2,14\] '
    printf '%s\n' "${lines[@]}" | grep -q '^scalar F64 \[\] '
    printf '%s\n' "${lines[@]}" | grep -q '^empty F32 \[0,3\] crc32=00000000$'
    # the tensors are exactly the graph's constants
    printf '%s\n' "${lines[@]}" | cut -d' ' -f1 | sort >"$TMP/tensors"
    python3 "$ST_CHECK" --consts "$FULL" | sort >"$TMP/consts"
    cmp "$TMP/tensors" "$TMP/consts"
}

@test "the safetensors package loads every tensor as st_check does (when installed)" {
    python3 -c 'import safetensors.torch' 2>/dev/null ||
        skip "python3 has no safetensors and torch packages"
    python3 - "$FULL" <<'EOF' | sort >"$TMP/ref"
import sys, zlib, torch
from safetensors.torch import load_file
st = {torch.float32: 'F32', torch.float64: 'F64', torch.float16: 'F16', torch.bfloat16: 'BF16',
      torch.float8_e4m3fn: 'F8_E4M3', torch.float8_e5m2: 'F8_E5M2', torch.int8: 'I8',
      torch.uint8: 'U8', torch.int16: 'I16', torch.int32: 'I32', torch.int64: 'I64',
      torch.bool: 'BOOL'}
for k, v in load_file(sys.argv[1]).items():
    b = v.reshape(-1).view(torch.uint8).numpy().tobytes() if v.numel() else b''
    print(k, st[v.dtype], '[' + ','.join(map(str, v.shape)) + ']',
          'crc32=%08x' % (zlib.crc32(b) & 0xffffffff))
EOF
    python3 "$ST_CHECK" "$FULL" | sort >"$TMP/ours"
    [ "$(wc -l <"$TMP/ref")" -eq 17 ]
    cmp "$TMP/ref" "$TMP/ours"
}

@test "exported models rewrite byte-identical and st_check loads all their constants" {
    for m in mlp.pt2 tinygpt.pt2 cnn.onnx; do
        run_ok "$TEXPORT" -o "$TMP/m.tg" "$FIX/$m"
        run_ok "$UNIT/test_format" --rewrite "$TMP/m.tg" "$TMP/again.tg"
        cmp "$TMP/m.tg" "$TMP/again.tg"
        python3 "$ST_CHECK" "$TMP/m.tg" | cut -d' ' -f1 | sort >"$TMP/tensors"
        python3 "$ST_CHECK" --consts "$TMP/m.tg" | sort >"$TMP/consts"
        [ -s "$TMP/tensors" ]
        cmp "$TMP/tensors" "$TMP/consts"
    done
}

@test "the metadata names the format and version and holds the graph JSON" {
    run_ok python3 "$ST_CHECK" --meta format "$SMALL"
    [ "$output" = tgraph ]
    run_ok python3 "$ST_CHECK" --meta version "$SMALL"
    [ "$output" = 1 ]
    run_ok python3 "$ST_CHECK" --meta tgraph "$SMALL"
    [[ "$output" == '{"version":1,"symbols":[{"name":"n","min":1,"max":64}],"inputs":["x"]'* ]]
}

@test "a hole in the data is rejected, by st_check too" {
    mutate "$FULL" "$TMP/bad" '"shape":[2,4],"data_offsets":[0,64]' '"shape":[2,3],"data_offsets":[0,48]'
    run_fails 1 "^st_check: $TMP/bad: .*starts at 64, expected 48" python3 "$ST_CHECK" "$TMP/bad"
    rejected "$TMP/bad" "header: bytes 48..64 of the data belong to no tensor \(before 'k.i64'\)"
}

@test "an empty file is rejected" {
    : >"$TMP/empty"
    rejected "$TMP/empty" "empty input"
}

@test "a file cut short anywhere is rejected" {
    size=$(wc -c <"$SMALL")
    for n in 1 7 8 9 100 $((size - 40)) $((size - 1)); do
        head -c "$n" "$SMALL" >"$TMP/cut"
        rejected "$TMP/cut" "truncated|out of range"
    done
}

@test "garbage is rejected" {
    head -c 4096 /dev/urandom >"$TMP/garbage"
    rejected "$TMP/garbage" ""
    printf 'not a graph at all\n' >"$TMP/text"
    rejected "$TMP/text" "a text file, not a TG graph"
}

@test "a header length beyond 100000000 bytes is rejected before reading it" {
    printf '\000\000\000\100\000\000\000\000{}' >"$TMP/huge"
    rejected "$TMP/huge" "header length 1073741824 exceeds the limit of 100000000 bytes"
}

@test "a safetensors file without a graph is rejected" {
    python3 -c 'import struct,sys; h=b"{\"w\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}"; sys.stdout.buffer.write(struct.pack("<Q",len(h))+h+b"abcd")' >"$TMP/plain"
    rejected "$TMP/plain" "header: no __metadata__ \(a safetensors file but not a TG graph\)"
}

@test "data_offsets outside the data are rejected" {
    mutate "$SMALL" "$TMP/bad" '"shape":[1],"data_offsets":[0,4]' '"shape":[1000],"data_offsets":[0,4000]'
    rejected "$TMP/bad" "header: data_offsets of 'k' out of range \(the data is 4 bytes\)"
}

@test "data_offsets that disagree with dtype and shape are rejected" {
    mutate "$SMALL" "$TMP/bad" '"shape":[1]' '"shape":[2]'
    rejected "$TMP/bad" "header: data_offsets of 'k' hold 4 bytes but dtype F32 and its shape need 8"
}

@test "a shape whose size overflows is rejected" {
    mutate "$SMALL" "$TMP/bad" '"shape":[1]' '"shape":[4294967296,4294967296,2]'
    rejected "$TMP/bad" "header: tensor 'k': shape overflows 64 bits"
}

@test "a file of a newer format version is rejected" {
    mutate "$SMALL" "$TMP/bad" '"version":"1"' '"version":"3"'
    rejected "$TMP/bad" "file format version 3 is newer than this reader \(2\)"
}

@test "a graph with control flow is version 2; a version 1 file may not hold a subgraph" {
    run_ok "$TEXPORT" -o "$TMP/cf.tg" "$FIX/onnx/control_flow.onnx"
    run grep -c '"version":"2"' "$TMP/cf.tg"
    [ "$output" = 1 ]
    mutate "$TMP/cf.tg" "$TMP/bad" '"version":"2"' '"version":"1"'
    mutate "$TMP/bad" "$TMP/bad1" '{\"version\":2,' '{\"version\":1,'
    rejected "$TMP/bad1" "a graph attribute needs format version 2, the file is version 1"
}

@test "an unknown op is rejected with the node's name" {
    mutate "$SMALL" "$TMP/bad" '"op":"add"' '"op":"frobnicate"' graph
    rejected "$TMP/bad" "graph: node 'y': unknown op frobnicate"
}

@test "a reference to a value defined later is rejected" {
    mutate "$SMALL" "$TMP/bad" '"inputs":["x","k"]' '"inputs":["x","y"]' graph
    rejected "$TMP/bad" "graph: node 'y': 'y' is not defined before use \(cycle or undefined value\)"
}

@test "a stored shape that shape inference contradicts is rejected" {
    mutate "$SMALL" "$TMP/bad" '"kind":"node","dtype":"f32","shape":["n"]' \
        '"kind":"node","dtype":"f32","shape":["2*n"]' graph
    rejected "$TMP/bad" "output 'y' is stored as f32\[2\*n\] but infers as f32\[n\]"
}

@test "a constant without its tensor is rejected" {
    mutate "$SMALL" "$TMP/bad" '"k":{"dtype"' '"k2":{"dtype"'
    rejected "$TMP/bad" "header: tensor 'k2' is not a constant of the graph"
}
