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
    local dir=$BATS_RUN_TMPDIR/tg-valgrind cpu=
    # valgrind knows no AVX-512: under it, models are built for a CPU it can run
    # (an explicit --cpu given by a test comes later and wins)
    [ "$1" = tcompile ] && cpu=--cpu=x86-64-v2
    mkdir -p "$dir"
    if [ ! -x "$dir/$1" ]; then
        printf '#!/bin/sh\nexec valgrind -q --error-exitcode=99 --leak-check=full --errors-for-leak-kinds=definite "%s" %s "$@"\n' \
            "$TG_TOOLS/$1" "$cpu" >"$dir/$1.tmp" && chmod +x "$dir/$1.tmp" && mv "$dir/$1.tmp" "$dir/$1"
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

# need CMD [PACKAGE]: fail the test, naming the package, when CMD is missing.
# A test must not pass or skip when a tool it needs is absent: the package
# belongs in share/tgraph/debian-packages.
need() {
    command -v "$1" >/dev/null 2>&1 && return 0
    echo "this test needs '$1' (Debian package ${2:-$1}; list it in share/tgraph/debian-packages)" >&2
    return 1
}

# on_tty CMD...: run CMD on a terminal (script(1)'s pseudo-terminal for stdin,
# stdout and stderr); $status and $output (both streams) as after `run`.
on_tty() {
    need script bsdutils || return
    run script -qec "$(printf '%q ' "$@")" /dev/null
}

# refuses_tty WHAT CMD...: CMD, its output on a terminal, refuses with the one
# wording every tool uses for binary output, as a usage error (exit 2).
refuses_tty() {
    local what=$1
    shift
    on_tty "$@"
    if [ "$status" -ne 2 ] ||
        [[ "$output" != *"refusing to write $what to a terminal: use -o FILE or redirect"* ]]; then
        echo "expected exit 2 and 'refusing to write $what to a terminal: use -o FILE or redirect'"
        tg_show_run
        return 1
    fi
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

# random_npy DESCR SHAPE ITEMSIZE FILE: a .npy of random bytes ("<i8" "1, 64" 8 f),
# for inputs that trun --random would refuse to make. One dim: "2,".
random_npy() {
    local dict="{'descr': '$1', 'fortran_order': False, 'shape': ($2), }"
    local n=$(( $(echo "$2" | sed 's/, *$//' | tr ',' '*') * $3 ))
    { printf '\x93NUMPY\x01\x00\x76\x00%s%*s\n' "$dict" $((117 - ${#dict})) ''
      head -c "$n" /dev/urandom; } >"$4"
}
