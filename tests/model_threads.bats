#!/usr/bin/env bats
# A compiled model driven from several threads at once (tests/model_threads.c):
# one handle shared by 4 threads, and the threads each run is given. Its own
# file so that make check-sanitizers runs it under ThreadSanitizer too, where
# the tools, model_threads and the .so (built with $CC, which carries
# -fsanitize=thread there) are all instrumented.

load common

setup_file() {
    "$TEXPORT" "$FIX/tinygpt.pt2" -o "$BATS_FILE_TMPDIR/tinygpt.tg"
}

@test "one model handle runs from 4 threads at once, at batch 1 and 3 side by side" {
    run_ok "$TCOMPILE" "$BATS_FILE_TMPDIR/tinygpt.tg" -o "$TMP/m.so"
    run_ok "$TG_TOOLS/../tests/model_threads" "$TMP/m.so" \
        "$FIX/tinygpt.in0.b1.npy" "$FIX/tinygpt.out0.b1.npy" \
        "$FIX/tinygpt.in0.b3.npy" "$FIX/tinygpt.out0.b3.npy"
    [[ "$output" == *", 0 failed"* ]]
}

@test "runs at once share the threads tgraph_set_num_threads gave, and leave the environment and that count alone" {
    run_ok "$TCOMPILE" "$BATS_FILE_TMPDIR/tinygpt.tg" -o "$TMP/m.so"
    run_ok "$TG_TOOLS/../tests/model_threads" -t 3 "$TMP/m.so" \
        "$FIX/tinygpt.in0.b1.npy" "$FIX/tinygpt.out0.b1.npy" \
        "$FIX/tinygpt.in0.b3.npy" "$FIX/tinygpt.out0.b3.npy"
    [[ "$output" == *"4 runs at once sharing 3 threads: "[12]" workers"* ]]
    [[ "$output" == *", 0 failed"* ]]
}
