# Shared setup for every bats file:  load common
#
# Gives each test a fresh $TMP (removed afterwards), LC_ALL=C, the tools as
# $TEXPORT $TRUN $TCOMPILE $TQUANT $TSPARSE $TLOG (from $TG_TOOLS, which
# `make check` sets; default: ../tools beside this file, for in-tree builds),
# the fixtures as $FIX (from $TG_FIXTURES), the unit helpers' folder as $UNIT
# (from $TG_UNIT), and assertion helpers. With TG_VALGRIND=1 every tool runs
# under valgrind, and a memory error fails the test (exit 99).
#
# A file that needs its own setup or teardown defines it and calls
# common_setup / common_teardown from it.

bats_require_minimum_version 1.5.0   # run --separate-stderr

export LC_ALL=C
TG_TOOLS=${TG_TOOLS:-$BATS_TEST_DIRNAME/../tools}
TG_FIXTURES=${TG_FIXTURES:-$BATS_TEST_DIRNAME/fixtures}
TG_SRCDIR=${TG_SRCDIR:-$BATS_TEST_DIRNAME/..}
TG_UNIT=${TG_UNIT:-$TG_TOOLS/../tests/unit}
FIX=$TG_FIXTURES
UNIT=$TG_UNIT

# The path a tool is run by: the binary, or a valgrind wrapper around it.
tg_tool_path() {
    if [ "${TG_VALGRIND:-0}" != 1 ]; then
        printf '%s\n' "$TG_TOOLS/$1"
        return
    fi
    local dir=$BATS_RUN_TMPDIR/tg-valgrind
    mkdir -p "$dir"
    if [ ! -x "$dir/$1" ]; then
        printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "%s" "$@"\n' \
            "$TG_TOOLS/$1" >"$dir/$1.tmp" && chmod +x "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"
    fi
    printf '%s\n' "$dir/$1"
}

TEXPORT=$(tg_tool_path texport)
TRUN=$(tg_tool_path trun)
TCOMPILE=$(tg_tool_path tcompile)
TQUANT=$(tg_tool_path tquant)
TSPARSE=$(tg_tool_path tsparse)
TLOG=$(tg_tool_path tlog)

common_setup() {
    TMP=$(mktemp -d "${TMPDIR:-/tmp}/tgtest.XXXXXX")
}

common_teardown() {
    [ -n "${TMP:-}" ] && rm -rf "$TMP"
}

setup() { common_setup; }
teardown() { common_teardown; }

# Show what a command did when an assertion about it fails.
tg_show_run() {
    echo "command: ${BATS_RUN_COMMAND:-?}"
    echo "exit status: $status"
    echo "--- stdout:"
    printf '%s\n' "$output"
    echo "--- stderr:"
    printf '%s\n' "${stderr:-}"
}

# run_ok CMD...: CMD exits 0. Its stdout is in $output, stderr in $stderr.
run_ok() {
    run --separate-stderr "$@"
    if [ "$status" -ne 0 ]; then
        tg_show_run
        return 1
    fi
}

# run_fails CODE PATTERN CMD...: CMD exits CODE and its stderr matches the
# extended regular expression PATTERN. (Whether stdout stayed empty is for
# the test to check: `[ -z "$output" ]`.)
run_fails() {
    local code=$1 pattern=$2
    shift 2
    run --separate-stderr "$@"
    if [ "$status" -ne "$code" ]; then
        echo "expected exit status $code"
        tg_show_run
        return 1
    fi
    if ! printf '%s\n' "$stderr" | grep -Eq -- "$pattern"; then
        echo "expected stderr to match: $pattern"
        tg_show_run
        return 1
    fi
}

# skip_unless_cmd CMD [PACKAGE]: skip the test, saying why, when CMD is missing.
skip_unless_cmd() {
    command -v "$1" >/dev/null 2>&1 ||
        skip "'$1' is not installed (Debian package ${2:-$1})"
}

# closed_pipe CMD...: CMD with its stdout a pipe whose reading end is closed
# before it starts, so its first write meets EPIPE whatever its size (SIGPIPE
# back to the default first: python3 ignores it, and exec would keep that).
closed_pipe() {
    python3 -c 'import os, signal, sys
signal.signal(signal.SIGPIPE, signal.SIG_DFL)
r, w = os.pipe()
os.close(r)
os.dup2(w, 1)
os.execvp(sys.argv[1], sys.argv[1:])' "$@"
}
