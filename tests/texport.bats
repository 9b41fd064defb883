#!/usr/bin/env bats
# texport: .pt2 archives (both IR levels) to TG graphs, checked numerically
# against PyTorch's eager outputs with trun (rtol 1e-4, atol 1e-5), dynamic
# dimensions, weights, and every way an archive can be bad. Bad archives are
# made here from the fixtures with Python's zipfile (tests/fixtures/gen_pt2.py
# made the small op-coverage models; the tests never need torch).

load common

TOL=(--rtol=1e-4 --atol=1e-5)

# mutate SRC DST OP SUFFIX [CODE]: copy zip SRC to DST, changing the entry whose
# name ends in SUFFIX: drop, empty, half (first half of its bytes), json (run
# CODE on the parsed JSON `j`), text (CODE is an expression of its bytes `data`).
mutate() {
    python3 - "$@" <<'EOF'
import json, sys, zipfile
src, dst, op, suffix = sys.argv[1:5]
code = sys.argv[5] if len(sys.argv) > 5 else ""
with zipfile.ZipFile(src) as zi, zipfile.ZipFile(dst, "w") as zo:
    for info in zi.infolist():
        data = zi.read(info)
        if info.filename.endswith(suffix):
            if op == "drop":
                continue
            if op == "empty":
                data = b""
            if op == "half":
                data = data[: len(data) // 2]
            if op == "json":
                j = json.loads(data)
                exec(code)
                data = json.dumps(j).encode()
            if op == "text":
                data = eval(code)
        zo.writestr(info, data)
EOF
}

# entry ZIP SUFFIX: the bytes of the zip entry whose name ends in SUFFIX.
entry() {
    python3 -c 'import sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
sys.stdout.buffer.write(z.read(next(n for n in z.namelist() if n.endswith(sys.argv[2]))))' "$@"
}

# Names of the tensors in a TG file (its safetensors header), one per line.
tg_tensors() {
    python3 - "$1" <<'EOF'
import json, struct, sys
b = open(sys.argv[1], "rb").read()
n = struct.unpack("<Q", b[:8])[0]
print("\n".join(sorted(k for k in json.loads(b[8:8 + n]) if k != "__metadata__")))
EOF
}

# export_check M IR [BATCHES]: texport M.IR, then trun on each batch's input
# against the eager output.
export_check() {
    local m=$1 ir=$2
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$FIX/$m.$ir"
    for b in 1 3; do
        run_ok "$TRUN" "$TMP/m.tg" "$FIX/$m.in0.b$b.npy" --check "$FIX/$m.out0.b$b.npy" "${TOL[@]}"
    done
}

# gen_check M: both IR levels of a generated model against its references.
gen_check() {
    local m=$1 ir ins refs
    ins=$(ls "$FIX/$m".in*.npy | sort)
    refs=$(ls "$FIX/$m".out*.npy | sort | paste -sd, -)
    for ir in pt2 core.pt2; do
        run_ok "$TEXPORT" -o "$TMP/m.tg" "$FIX/$m.$ir"
        # shellcheck disable=SC2086
        run_ok "$TRUN" "$TMP/m.tg" $ins --check "$refs" -o "$TMP/out" "${TOL[@]}"
    done
}

# ---- usage ----

@test "texport --help prints usage on stdout and exits 0" {
    run_ok "$TEXPORT" --help
    [[ "$output" == *"Usage: texport [OPTION]... MODEL"* ]]
    [[ "$output" == *"--range"* ]]
    [ -z "$stderr" ]
}

@test "texport --version prints the package version" {
    run_ok "$TEXPORT" --version
    [ "$output" = "texport (tgraph) 0.1.0" ]
}

@test "texport with an unknown option is a usage error pointing to --help" {
    run_fails 2 "Try 'texport --help'" "$TEXPORT" --bogus "$FIX/mlp.pt2"
    [ -z "$output" ]
}

@test "texport without a model is a usage error" {
    run_fails 2 "no model file given" "$TEXPORT"
}

@test "texport refuses stdin as the model" {
    run_fails 2 "must be a file" "$TEXPORT" - <"$FIX/mlp.pt2"
}

@test "texport --range without MIN:MAX is a usage error" {
    run_fails 2 "expected NAME=MIN:MAX" "$TEXPORT" --range s0=4 "$FIX/mlp.pt2"
}

@test "texport --range with MIN above MAX is a usage error" {
    run_fails 2 "minimum 9 above maximum 2" "$TEXPORT" --range s0=9:2 "$FIX/mlp.pt2"
}

@test "texport refuses to write a graph to a terminal (exit 2)" {
    refuses_tty "a graph" "$TEXPORT" "$FIX/mlp.pt2"
}

@test "texport of a missing file fails with the system's reason" {
    run_fails 1 "^texport: $TMP/nope.pt2: cannot open: No such file" "$TEXPORT" "$TMP/nope.pt2"
    [ -z "$output" ]
}

@test "texport of a file of unknown type says which types it takes" {
    echo "hello, model" >"$TMP/model.txt"
    run_fails 1 "^texport: $TMP/model.txt: a text file, not a model texport reads \(a .pt2 archive or an .onnx file\)$" \
        "$TEXPORT" "$TMP/model.txt"
}

@test "texport of a TG graph says it is exported already and who reads it" {
    "$TEXPORT" "$FIX/mlp.pt2" -o "$TMP/m.tg"
    run_fails 1 "^texport: $TMP/m.tg: a TG graph, not a model to export: trun, tcompile, tquant and tlog read it$" \
        "$TEXPORT" "$TMP/m.tg"
}

@test "texport reads an ONNX model by its first bytes whatever its name" {
    cp "$FIX/mlp.onnx" "$TMP/model"
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$TMP/model"
    run_ok "$TRUN" "$TMP/m.tg" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy" "${TOL[@]}"
}

@test "texport dispatches .onnx files to the ONNX importer" {
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$FIX/mlp.onnx"
    run_ok "$TRUN" "$TMP/m.tg" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy" "${TOL[@]}"
}

@test "texport writes the graph to stdout" {
    "$TEXPORT" "$FIX/mlp.pt2" >"$TMP/a.tg"
    "$TEXPORT" -o "$TMP/b.tg" "$FIX/mlp.pt2"
    cmp "$TMP/a.tg" "$TMP/b.tg"
}

@test "texport into a closed pipe says write error and exits 1, not killed by SIGPIPE" {
    run_fails 1 "^texport: -: write error: Broken pipe$" closed_pipe "$TEXPORT" "$FIX/mlp.pt2"
    [ "$(wc -l <<<"$stderr")" -eq 1 ]
}

@test "texport -o leaves no file behind when the import fails" {
    run_fails 1 "could not be converted" "$TEXPORT" -o "$TMP/out.tg" "$FIX/unsupported.pt2"
    [ ! -e "$TMP/out.tg" ]
    [ -z "$(ls "$TMP")" ]
}

# ---- the fixtures, both IR levels, against PyTorch ----

@test "mlp.pt2 (export IR) matches PyTorch for batch 1 and 3" { export_check mlp pt2; }
@test "mlp.core.pt2 (Core ATen IR) matches PyTorch for batch 1 and 3" { export_check mlp core.pt2; }
@test "cnn.pt2 (export IR) matches PyTorch for batch 1 and 3" { export_check cnn pt2; }
@test "cnn.core.pt2 (Core ATen IR) matches PyTorch for batch 1 and 3" { export_check cnn core.pt2; }
@test "tinygpt.pt2 (export IR) matches PyTorch for batch 1 and 3" { export_check tinygpt pt2; }
@test "tinygpt.core.pt2 (Core ATen IR) matches PyTorch for batch 1 and 3" { export_check tinygpt core.pt2; }

@test "elementwise ops, comparisons, promotion and rounding match PyTorch" { gen_check elementwise; }
@test "reductions and softmax match PyTorch" { gen_check reduce; }
@test "views, slicing, splitting, indexing, padding and generators match PyTorch" { gen_check shape; }
@test "convolution, norms, pooling, embedding and matrix products match PyTorch" { gen_check layers; }
@test "attention (causal, bool and float masks, scale, GQA) matches PyTorch" { gen_check attention; }
@test "tied, strided, f16/bf16/int64 weights and constants match PyTorch" { gen_check tied; }
@test "indexing by several index tensors (mask construction, None slices, negatives) matches PyTorch" { gen_check index; }
@test "cumsum position ids, diff, roll, fill_, reshape_as, weight_norm, as_strided and in-place writes into views match PyTorch" { gen_check positions; }
@test "a key/value cache written by index_copy, index_put, slice_scatter, select_scatter and index_fill matches PyTorch" { gen_check kvcache; }
@test "interpolate (bilinear by size and scale, align_corners, nearest, bicubic, linear) matches PyTorch" { gen_check resize; }
@test "grid_sample (bilinear, nearest, bicubic; zeros, border, reflection; align_corners; 3-D) matches PyTorch" { gen_check grid_sample; }
@test "x[idx] += v with repeated indices (index_put accumulate) and index_add with alpha match PyTorch" { gen_check scatter_add; }
@test "F.pad reflect, replicate and circular (1-D to 3-D) match PyTorch" { gen_check pad_modes; }
@test "a tiny transformers LLaMA with an attention mask (its mask construction, RoPE, GQA) matches PyTorch" { gen_check hf_llama; }
@test "a tiny transformers RoBERTa with an attention mask (cumsum position ids) matches PyTorch" { gen_check hf_roberta; }

@test "Core ATen addmm with a transposed weight becomes linear" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/mlp.core.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  linear +3$' "$TMP/sum"
    ! grep -q 'matmul\|permute' "$TMP/sum" || false
}

# ---- dynamic dimensions ----

@test "the batch dimension becomes symbol s0 with the program's range" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/tinygpt.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  s0 +1\.\.1024$' "$TMP/sum"
    grep -Eq '^  idx +i64\[s0, 64\]$' "$TMP/sum"
    grep -Eq 'f32\[s0, 64, 512\]$' "$TMP/sum"
}

@test "a graph with a symbolic batch runs at other batch sizes" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/tinygpt.core.pt2"
    run_ok "$TRUN" --random --seed "$RANDOM" --dim s0=5 -o "$TMP/out.npy" "$TMP/m.tg"
    python3 -c "import struct,sys; h=open(sys.argv[1],'rb').read(128); assert b'(5, 64, 512)' in h, h" "$TMP/out.npy"
}

@test "--range overrides a symbol's range by its tgraph name" {
    "$TEXPORT" --range s0=2:16 -o "$TMP/m.tg" "$FIX/mlp.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  s0 +2\.\.16$' "$TMP/sum"
}

@test "--range also accepts torch's own symbol name" {
    "$TEXPORT" --range s77=3:9 -o "$TMP/m.tg" "$FIX/mlp.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  s0 +3\.\.9$' "$TMP/sum"
}

@test "--range for a dimension the program does not have fails, naming the program's dims" {
    run_fails 1 "^texport: $FIX/mlp.pt2: --range batch: the program has no such dynamic dimension \(its dims: s0 \(torch s77\)\)$" \
        "$TEXPORT" --range batch=1:64 "$FIX/mlp.pt2" -o "$TMP/m.tg"
    [ ! -e "$TMP/m.tg" ]
}

@test "an unbounded range gets the documented cap 2147483647" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json models/model.json \
        'j["range_constraints"]["s77"]["max_val"] = None'
    "$TEXPORT" -o "$TMP/m.tg" "$TMP/m.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  s0 +1\.\.2147483647$' "$TMP/sum"
}

@test "plain-text size expressions (older files) are read like sympy's" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" text models/model.json \
        "data.replace(b\"Symbol('s77', positive=True, integer=True)\", b's77')"
    run_ok entry "$TMP/m.pt2" models/model.json
    [[ "$output" != *"Symbol("* ]]
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$TMP/m.pt2"
    run_ok "$TRUN" "$TMP/m.tg" "$FIX/mlp.in0.b3.npy" --check "$FIX/mlp.out0.b3.npy" "${TOL[@]}"
}

@test "bare -Infinity tokens (older files) are read like the quoted form" {
    mutate "$FIX/tinygpt.core.pt2" "$TMP/m.pt2" text models/model.json \
        "data.replace(b'\"-Infinity\"', b'-Infinity')"
    run_ok entry "$TMP/m.pt2" models/model.json
    [[ "$output" == *": -Infinity"* ]]
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$TMP/m.pt2"
    run_ok "$TRUN" "$TMP/m.tg" "$FIX/tinygpt.in0.b3.npy" --check "$FIX/tinygpt.out0.b3.npy" "${TOL[@]}"
}

# ---- weights ----

@test "parameters are constants named by their FQN, user inputs as in the program" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/cnn.pt2"
    tg_tensors "$TMP/m.tg" >"$TMP/names"
    grep -qx 'c1.weight' "$TMP/names"
    grep -qx 'b1.running_var' "$TMP/names"
    grep -qx 'fc.bias' "$TMP/names"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  x +f32\[s0, 3, 32, 32\]$' "$TMP/sum"
}

@test "tied weights are stored once" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/tied.pt2"
    tg_tensors "$TMP/m.tg" >"$TMP/names"
    grep -qx 'emb.weight' "$TMP/names"
    ! grep -qx 'head.weight' "$TMP/names" || false
    [ "$(grep -c . "$TMP/names")" -eq 7 ]
}

@test "a 0-byte weight file stands for zeros" {
    mutate "$FIX/tied.pt2" "$TMP/m.pt2" empty data/weights/weight_4
    run_ok "$TEXPORT" -o "$TMP/m.tg" "$TMP/m.pt2"
    run_ok "$TRUN" "$TMP/m.tg" "$FIX/tied.in0.npy" --check "$FIX/tied.out0.npy" "${TOL[@]}"
}

@test "deflated and stored archives give the same graph" {
    python3 - "$FIX/cnn.pt2" "$TMP/d.pt2" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1]) as zi, zipfile.ZipFile(sys.argv[2], "w", zipfile.ZIP_DEFLATED) as zo:
    for i in zi.infolist():
        zo.writestr(i.filename, zi.read(i))
EOF
    "$TEXPORT" -o "$TMP/a.tg" "$FIX/cnn.pt2"
    "$TEXPORT" -o "$TMP/b.tg" "$TMP/d.pt2"
    cmp "$TMP/a.tg" "$TMP/b.tg"
}

@test "a pickled weight (tensor subclass) is refused clearly" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json model_weights_config.json \
        'j["config"]["fc2.bias"]["use_pickle"] = True'
    run_fails 1 "weight 'fc2.bias' is stored pickled" "$TEXPORT" "$TMP/m.pt2"
    [ -z "$output" ]
}

@test "a weight file shorter than its tensor is an error" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" half data/weights/weight_0
    run_fails 1 "weight 'fc1.weight': .*weight_0 holds 100352 elements, the tensor needs 200704 \(file too short\)" \
        "$TEXPORT" "$TMP/m.pt2"
}

# ---- unsupported operators ----

@test "every unsupported operator is listed with its node and source line" {
    run_fails 1 "3 of 4 operators could not be converted" "$TEXPORT" "$FIX/unsupported.pt2"
    [ -z "$output" ]
    [[ "$stderr" == *"gen_pt2.py:"*": node cumprod (torch.ops.aten.cumprod.default): unsupported operator"* ]]
    [[ "$stderr" == *"node flip (torch.ops.aten.flip.default): unsupported operator"* ]]
    [[ "$stderr" == *"node sort (torch.ops.aten.sort.default): unsupported operator"* ]]
    [ "$(grep -c 'unsupported operator' <<<"$stderr")" -eq 3 ]
}

@test "an operator used in an unsupported way says why" {
    mutate "$FIX/cnn.pt2" "$TMP/m.pt2" json models/model.json '
for n in j["graph_module"]["graph"]["nodes"]:
    for a in n["inputs"]:
        if n["name"] == "batch_norm" and a["name"] == "training":
            a["arg"] = {"as_bool": True}'
    run_fails 1 "models.py:[0-9]+: node batch_norm \(torch.ops.aten.batch_norm.default\): batch_norm in training mode" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "control characters from the file reach the terminal escaped, not raw" {
    mutate "$FIX/unsupported.pt2" "$TMP/m.pt2" json models/model.json '
for n in j["graph_module"]["graph"]["nodes"]:
    if n["name"] == "flip":
        n["target"] = "torch.ops.aten.fl\u001b[2Jip\u0007.default"'
    run_fails 1 'node flip \(torch\.ops\.aten\.fl\\x1b\[2Jip\\x07\.default\): unsupported operator' \
        "$TEXPORT" "$TMP/m.pt2"
    ! grep -q $'[\x01-\x08\x0b-\x1f\x7f]' <<<"$stderr"
}

# ---- bad archives ----

@test "a file that is not a zip archive is refused" {
    head -c 4096 /dev/urandom >"$TMP/m.pt2"
    run_fails 1 "not a zip archive" "$TEXPORT" "$TMP/m.pt2"
}

@test "a truncated archive is refused" {
    head -c 500000 "$FIX/mlp.pt2" >"$TMP/m.pt2"
    run_fails 1 "^texport: $TMP/m.pt2: not a zip archive or truncated" "$TEXPORT" "$TMP/m.pt2"
}

@test "an archive with a corrupted byte fails its CRC check" {
    cp "$FIX/mlp.pt2" "$TMP/m.pt2"
    chmod u+w "$TMP/m.pt2"
    python3 - "$TMP/m.pt2" <<'EOF'
import struct, sys, zipfile
p = sys.argv[1]
info = next(i for i in zipfile.ZipFile(p).infolist() if i.filename.endswith("weight_2"))
f = open(p, "r+b")
f.seek(info.header_offset + 26)
n, x = struct.unpack("<HH", f.read(4))
f.seek(info.header_offset + 30 + n + x + 1000)
b = f.read(1)
f.seek(-1, 1)
f.write(bytes([b[0] ^ 0x40]))
EOF
    run_fails 1 "zip entry 'mlp/data/weights/weight_2': CRC mismatch" "$TEXPORT" "$TMP/m.pt2"
}

@test "an archive without its program is refused" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" drop models/model.json
    run_fails 1 "archive entry mlp/models/model.json missing" "$TEXPORT" "$TMP/m.pt2"
}

@test "an archive without a weight file is refused" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" drop data/weights/weight_3
    run_fails 1 "weight 'fc2.bias': archive entry mlp/data/weights/weight_3 missing" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "malformed program JSON is refused" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" text models/model.json 'data[:-40]'
    run_fails 1 "mlp/models/model.json: malformed JSON" "$TEXPORT" "$TMP/m.pt2"
}

@test "the legacy layout of torch <= 2.8 is refused with advice" {
    python3 - "$TMP/m.pt2" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("serialized_exported_program.json", "{}")
    z.writestr("serialized_state_dict.pt", b"\x80\x02")
    z.writestr("version", "1")
EOF
    run_fails 1 "unsupported legacy .pt2 \(torch <= 2.8\); re-save with torch >= 2.9" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "a zip archive that is not from torch.export is refused" {
    python3 - "$TMP/m.pt2" <<'EOF'
import sys, zipfile
with zipfile.ZipFile(sys.argv[1], "w") as z:
    z.writestr("stuff/readme.txt", "hello")
EOF
    run_fails 1 "not a torch.export archive \(no archive_format entry\)" "$TEXPORT" "$TMP/m.pt2"
}

# in_256m CMD...: CMD with 256 MiB of data (RLIMIT_DATA: heap and private
# writable mappings, so a big malloc fails; not -v, address space, which the
# CUDA libraries of a --with-cuda build exceed by merely loading), so a test
# fails where CMD would allocate a bomb. Under valgrind, which needs more, without the cap; under
# AddressSanitizer, which reserves terabytes of address space for its shadow, no
# one allocation above 256 MiB instead (malloc returns NULL, as under the cap).
in_256m() {
    if [ "${TG_VALGRIND:-0}" = 1 ]; then
        "$@"
    elif [[ "${TG_SAN_CFLAGS:-}" == *address* ]]; then
        ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}max_allocation_size_mb=256:allocator_may_return_null=1 "$@"
    else
        (ulimit -d 262144 && exec "$@")
    fi
}

@test "a zip bomb (model.json inflating to 2 GiB from 2 MB) is refused before inflating" {
    python3 "$TG_SRCDIR/tests/tools/zipbomb.py" "$FIX/shape.pt2" "$TMP/m.pt2" 2147483648
    [ "$(stat -c %s "$TMP/m.pt2")" -lt 3000000 ]
    run_fails 1 "^texport: $TMP/m.pt2: zip entry 'shape/models/model.json' inflates to 2147483648 bytes, more than the limit of 1073741824 for a compressed entry \(a zip bomb\?\)$" \
        in_256m "$TEXPORT" "$TMP/m.pt2"
    [ "$(wc -l <<<"$stderr")" -eq 1 ] && [ -z "$output" ]
}

@test "a deflated entry over 100:1 is refused though under the size limit" {
    python3 "$TG_SRCDIR/tests/tools/zipbomb.py" "$FIX/shape.pt2" "$TMP/m.pt2" 209715200
    run_fails 1 "zip entry 'shape/models/model.json' inflates [0-9]+ bytes to 209715200, more than 100:1 \(a zip bomb\?\)$" \
        in_256m "$TEXPORT" "$TMP/m.pt2"
}

# ---- declared shapes that disagree with the graph ----

TV='j["graph_module"]["graph"]["tensor_values"]'

@test "a node's declared shape that inference contradicts names the value and both shapes" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json models/model.json "$TV[\"linear\"][\"sizes\"][1] = {\"as_int\": -3}"
    run_fails 1 "node linear \(torch.ops.aten.linear.default\): value 'linear': the program declares f32\[s0, -3\], the graph infers f32\[s0, 256\]$" \
        "$TEXPORT" "$TMP/m.pt2"
    [ -z "$output" ]
}

@test "a weight's declared shape that its weight file contradicts names the value and both shapes" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json models/model.json "$TV[\"p_fc1_weight\"][\"sizes\"][0] = {\"as_int\": 1 << 62}"
    run_fails 1 "^texport: $TMP/m.pt2: value 'p_fc1_weight': the program declares f32\[4611686018427387904, 784\], its weight file holds f32\[256, 784\]$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "a weight declared with a negative dim is refused" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json models/model.json "$TV[\"p_fc1_bias\"][\"sizes\"][0] = {\"as_int\": -3}"
    run_fails 1 "value 'p_fc1_bias': the program declares f32\[-3\], its weight file holds f32\[256\]$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "an input declared with a dim of 2^62 is refused, naming it" {
    mutate "$FIX/mlp.pt2" "$TMP/m.pt2" json models/model.json "$TV[\"x\"][\"sizes\"][1] = {\"as_int\": 1 << 62}"
    run_fails 1 "^texport: $TMP/m.pt2: value 'x': the program declares f32\[s0, 4611686018427387904\]: dimension 1 is past 2\^53$" \
        "$TEXPORT" "$TMP/m.pt2"
}

# ---- control flow (torch.cond, while_loop, map) ----

@test "torch.cond on a tensor predicate, both branches, three outputs, a parameter and a buffer, matches PyTorch" {
    gen_check cond
}
@test "while_loop with three carried values, an input bound and a parameter, ended by the data, matches PyTorch" {
    gen_check while_loop
}
@test "map over the dynamic batch of two tensors with a parameter and an argument matches PyTorch" {
    gen_check map
}
@test "cond nested in a map's body and in a while_loop's body matches PyTorch" { gen_check nested_flow; }
@test "cond on conditions on sizes (x.shape[0] > 2, x.shape[0] * 2 <= 5) matches PyTorch" { gen_check cond_shape; }

@test "cond becomes an if node whose branches take the operands and the scalars they use" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/cond.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  if +2$' "$TMP/sum"
    grep -Eq '^  cond +f32\[s0, 6\]$' "$TMP/sum"
    grep -Eq '^  cond:1 +f32\[s0\]$' "$TMP/sum"
    # the buffer and the linear's weights are passed, not copied into the branches
    [ "$(tg_tensors "$TMP/m.tg" | grep -c '^lin\.\|^shift$')" -eq 3 ]
    tg_tensors "$TMP/m.tg" | grep -q '^cond/true/'
}

@test "a map over the batch keeps s0 as its outputs' first dim and runs at another batch" {
    "$TEXPORT" -o "$TMP/m.tg" "$FIX/map.pt2"
    "$TLOG" "$TMP/m.tg" 2>"$TMP/sum" >/dev/null
    grep -Eq '^  map_impl +f32\[s0, 4, 3\]$' "$TMP/sum"
    run_ok "$TRUN" --random --seed "$RANDOM" --dim s0=7 -o "$TMP/out" "$TMP/m.tg"
    python3 -c "import sys; h=open(sys.argv[1],'rb').read(128); assert b'(7, 4, 3)' in h, h" "$TMP/out/out0.npy"
}

@test "an unsupported higher-order operator is refused, naming the node and what texport converts" {
    run_fails 1 "gen_pt2.py:[0-9]+: node scan \(torch.ops.higher_order.scan\): unsupported higher-order operator \(texport converts cond, while_loop and map\)$" \
        "$TEXPORT" "$FIX/unsupported_flow.pt2"
    [ -z "$output" ]
}

# flow_mutate M OP CODE: $TMP/m.pt2 from fixture M, CODE run on `n`, the
# program's first node of higher-order op OP.
flow_mutate() {
    mutate "$FIX/$1.pt2" "$TMP/m.pt2" json models/model.json \
        "n = next(n for n in j['graph_module']['graph']['nodes'] if n['target'].endswith('.$2'))
$3"
}

@test "a branch graph without its nodes is refused, naming the node and the graph" {
    flow_mutate cond cond "del n['inputs'][1]['arg']['as_graph']['graph']['nodes']"
    run_fails 1 "node cond \(torch.ops.higher_order.cond\): argument 1 \(true_fn\): graph true_graph_0 lacks inputs, outputs or nodes$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "a branch that takes fewer inputs than the operands is refused, naming the graph" {
    flow_mutate cond cond "n['inputs'][2]['arg']['as_graph']['graph']['inputs'].pop()"
    run_fails 1 "node cond \(torch.ops.higher_order.cond\): graph false_graph_0 takes 4 inputs, the node passes 5 operands$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "a node inside a branch that fails is reported with the graph it is in" {
    flow_mutate cond cond "n['inputs'][1]['arg']['as_graph']['graph']['nodes'][0]['target'] = 'torch.ops.aten.cumprod.default'"
    run_fails 1 "node cond \(torch.ops.higher_order.cond\): graph true_graph_0: 1 of [0-9]+ operators could not be converted:" \
        "$TEXPORT" "$TMP/m.pt2"
    [[ "$stderr" == *"(torch.ops.aten.cumprod.default): unsupported operator"* ]]
}

@test "a predicate on sizes other than one comparison of two is refused, naming what made it" {
    flow_mutate cond_shape gt "n['target'] = '_operator.and_'"
    run_fails 1 "node cond \(torch.ops.higher_order.cond\): the predicate 'gt' is a condition on sizes \(a SymBool\) made by _operator.and_; texport computes one comparison of two sizes \(_operator.gt, ge, lt, le, eq, ne\)$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "a while_loop body whose results do not fit the carried values is refused, naming the value" {
    flow_mutate while_loop while_loop "o = n['inputs'][1]['arg']['as_graph']['graph']['outputs']
o[1] = o[2]"
    run_fails 1 "node while_loop \(torch.ops.higher_order.while_loop\): node while_loop \(loop\): carried value 1 \('arg1_1'\) goes into the body as f32\[s0, 6\] and comes out as f32\[s0\]: a carried value keeps its dtype and shape$" \
        "$TEXPORT" "$TMP/m.pt2"
}

@test "torch's control flow compiles, and the .so equals the interpreter bit for bit" {
    local m ins refs
    for m in cond cond_shape while_loop map nested_flow; do
        "$TEXPORT" -o "$TMP/$m.tg" "$FIX/$m.pt2"
        run_ok "$TCOMPILE" -o "$TMP/$m.so" "$TMP/$m.tg"
        ins=$(ls "$FIX/$m".in*.npy | sort -V)
        rm -rf "$TMP/out" && mkdir "$TMP/out"
        # shellcheck disable=SC2086
        run_ok "$TRUN" -o "$TMP/out" "$TMP/$m.tg" $ins
        refs=$(ls "$TMP"/out/out*.npy | sort -V | paste -sd, -)
        # shellcheck disable=SC2086
        run_ok "$TRUN" "$TMP/$m.so" $ins --check "$refs" --rtol 0 --atol 0
    done
}
