#!/usr/bin/env bats
# A third party's backend from a shared object: tests/backend_plugin/toy.c,
# built here with cc against the headers in their installed layout (as an
# out-of-tree backend is), loaded by trun --device by name (TG_BACKEND_PATH)
# or by path. toy runs add, mul and relu of float32 in memory of its own and
# refuses the rest, so on the mkgraph "chain" graph (x -> linear fc1 -> add
# shift -> relu -> mul scale) fc1 falls back to the CPU and the chain runs
# on toy as one fused group. Results must equal the CPU's bit for bit on
# fresh random inputs. Then the loader's refusals, one per test.

load common

setup_file() {
    local d=$BATS_FILE_TMPDIR
    mkdir -p "$d/inc" "$d/plugins" "$d/other"
    ln -s "$TG_SRCDIR/lib" "$d/inc/tgraph"      # <tgraph/...> as installed
    toy_cc() {
        ${CC:-cc} -shared -fPIC -O2 -ffp-contract=off -I"$d/inc" "$@" \
            "$TG_SRCDIR/tests/backend_plugin/toy.c"
    }
    toy_cc -o "$d/plugins/libtgraph-backend-toy.so"
    toy_cc -DTOY_ABI=99 -o "$d/other/libtgraph-backend-old.so"
    toy_cc -o "$d/other/libtgraph-backend-misnamed.so"
    # one that needs a library which is gone when it is loaded (as the cuda
    # device's on a machine without the CUDA libraries)
    echo 'int tg_toy_gone(void) { return 0; }' | ${CC:-cc} -shared -fPIC -x c -o "$d/libtgtoygone.so" -
    toy_cc -L"$d" -Wl,--no-as-needed -ltgtoygone -o "$d/other/libtgraph-backend-needy.so"
    rm "$d/libtgtoygone.so"
    echo 'int not_a_backend = 1;' | ${CC:-cc} -shared -fPIC -x c -o "$d/other/nobackend.so" -
    echo 'not ELF' >"$d/other/libtgraph-backend-text.so"
}

setup() {
    common_setup
    SEED=$RANDOM$RANDOM
    PLUGINS=$BATS_FILE_TMPDIR/plugins
    OTHER=$BATS_FILE_TMPDIR/other
    "$UNIT/mkgraph" chain "$SEED" >"$TMP/g.tg"
}

@test "trun --device toy loads libtgraph-backend-toy.so from TG_BACKEND_PATH and matches the CPU bit for bit" {
    "$TRUN" --random --seed "$SEED" --dim batch=5 "$TMP/g.tg" -o "$TMP/cpu.npy"
    TG_BACKEND_PATH=/nonexistent:$PLUGINS run_ok "$TRUN" --device toy --random --seed "$SEED" \
        --dim batch=5 "$TMP/g.tg" -o "$TMP/toy.npy"
    cmp "$TMP/cpu.npy" "$TMP/toy.npy"
}

@test "trun --device PATH loads the backend of that shared object" {
    "$TRUN" --random --seed "$SEED" --dim batch=3 "$TMP/g.tg" -o "$TMP/cpu.npy"
    run_ok "$TRUN" --device "$PLUGINS/libtgraph-backend-toy.so" --random --seed "$SEED" \
        --dim batch=3 "$TMP/g.tg" -o "$TMP/toy.npy"
    cmp "$TMP/cpu.npy" "$TMP/toy.npy"
}

@test "TLOG=+run says which backend ran each node and why toy refused fc1" {
    TG_BACKEND_PATH=$PLUGINS TLOG=+run run_ok "$TRUN" --device toy --random "$TMP/g.tg" -o "$TMP/y.npy"
    grep -q 'fc1 (linear): toy refused it (toy runs add, mul and relu, not linear); on cpu' <<<"$stderr"
    grep -q 'shifted (add): on toy' <<<"$stderr"
    grep -q 'act (relu): on toy' <<<"$stderr"
    grep -q 'out (mul): on toy' <<<"$stderr"
    grep -q '3 of 4 nodes on toy, the rest on cpu' <<<"$stderr"
}

@test "toy gets its fused chain of add, relu and mul as one group" {
    TG_BACKEND_PATH=$PLUGINS TLOG=+run run_ok "$TRUN" --device toy --random "$TMP/g.tg" -o "$TMP/y.npy"
    grep -q 'out (mul): a group of 3 nodes on toy' <<<"$stderr"
}

@test "a constant is uploaded to the device once for all runs, a value each run" {
    TG_BACKEND_PATH=$PLUGINS TLOG=+run run_ok "$TRUN" --device toy --random --bench=3 --warmup=1 \
        "$TMP/g.tg" -o /dev/null
    [ "$(grep -c 'shift: 64 bytes uploaded to toy' <<<"$stderr")" -eq 1 ]
    [ "$(grep -c 'scale: 64 bytes uploaded to toy' <<<"$stderr")" -eq 1 ]
    # fc1's result, made on the CPU, goes up in each of the 4 runs
    [ "$(grep -c 'bytes uploaded to toy' <<<"$stderr")" -eq 6 ]
}

@test "--device with a name no folder of TG_BACKEND_PATH nor the package's holds is a usage error" {
    TG_BACKEND_PATH=$OTHER run_fails 2 \
        "^trun: --device: no device 'nope' \\(known: cpu; no libtgraph-backend-nope.so in TG_BACKEND_PATH or /[^ ]*/tgraph\\)$" \
        "$TRUN" --device nope --random "$TMP/g.tg"
}

@test "--device with the path of a missing file says so" {
    run_fails 2 "^trun: --device: $TMP/none.so: No such file or directory$" \
        "$TRUN" --device "$TMP/none.so" --random "$TMP/g.tg"
}

@test "a shared object that defines no tg_backend_entry is not a backend" {
    run_fails 2 "^trun: --device: $OTHER/nobackend.so: not a tgraph backend \\(it defines no tg_backend_entry\\)$" \
        "$TRUN" --device "$OTHER/nobackend.so" --random "$TMP/g.tg"
}

@test "a file that is no shared object is refused with the loader's reason" {
    TG_BACKEND_PATH=$OTHER run_fails 2 \
        "^trun: --device: no device 'text': $OTHER/libtgraph-backend-text.so: cannot load: .*(invalid ELF header|file too short)" \
        "$TRUN" --device text --random "$TMP/g.tg"
}

@test "a backend whose library is missing is refused with the loader's reason, naming the library" {
    TG_BACKEND_PATH=$OTHER run_fails 2 \
        "^trun: --device: no device 'needy': $OTHER/libtgraph-backend-needy.so: cannot load: libtgtoygone.so: cannot open shared object file" \
        "$TRUN" --device needy --random "$TMP/g.tg"
    TG_BACKEND_PATH=$OTHER run_fails 2 "^tcompile: --target: no device 'needy': .*libtgtoygone.so" \
        "$TCOMPILE" --target needy "$TMP/g.tg" -o "$TMP/g.so"
}

@test "a backend built for another interface version is refused, naming both" {
    abi=$(sed -n 's/^#define TG_BACKEND_ABI \([0-9]*\)$/\1/p' "$TG_SRCDIR/lib/backend/backend.h")
    [ -n "$abi" ]
    TG_BACKEND_PATH=$OTHER run_fails 2 \
        "^trun: --device: no device 'old': $OTHER/libtgraph-backend-old.so: built for device interface version 99, this tgraph's is $abi$" \
        "$TRUN" --device old --random "$TMP/g.tg"
}

@test "a backend named other than its file is refused" {
    TG_BACKEND_PATH=$OTHER run_fails 2 \
        "^trun: --device: no device 'misnamed': $OTHER/libtgraph-backend-misnamed.so: its backend is named 'toy', not 'misnamed'$" \
        "$TRUN" --device misnamed --random "$TMP/g.tg"
}

@test "tcompile --target toy: a loaded backend that only runs graphs compiles none" {
    TG_BACKEND_PATH=$PLUGINS run_fails 2 "^tcompile: --target: toy runs graphs \\(trun --device\\) but compiles none" \
        "$TCOMPILE" --target toy "$TMP/g.tg" -o "$TMP/g.so"
}

@test "test_backend_ops runs its cases on a backend TG_BACKEND_PATH names, listing its refusals" {
    TG_BACKEND_PATH=$PLUGINS TG_BACKEND_OPS=toy run_ok "$UNIT/test_backend_ops"
    [[ "$output" =~ "backend toy: "([0-9]+)" cases run interpreted: "([0-9]+)" all on it, "([0-9]+)" partly" ]]
    # toy runs the float32 nodes of the add, mul and relu cases, the CPU the rest
    [ "${BASH_REMATCH[1]}" -gt 100 ] && [ "${BASH_REMATCH[2]}" -ge 0 ] && [ "${BASH_REMATCH[3]}" -ge 3 ]
    grep -q '^unsupported: exp: .*, toy interpreted: .*toy runs add, mul and relu, not exp$' <<<"$output"
    [[ "$output" != *"backend cpu"* ]]
}
