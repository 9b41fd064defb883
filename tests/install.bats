#!/usr/bin/env bats
# What `make install` gives a user, installed once for the file with DESTDIR
# into a temporary root: tgraph.mk found by its own include line through
# pkg-config, and a manual in which `man NAME` finds what a reader expects
# (the overview for tgraph, a page for every function of <tgraph/model.h>),
# every page a page names exists, and the pages render as written.

load common

setup_file() {
    export ROOT=$BATS_FILE_TMPDIR/root
    make -s -C "$TGRAPH_RUNTIME_DIR" install DESTDIR="$ROOT" >"$BATS_FILE_TMPDIR/install.log" 2>&1 ||
        { cat "$BATS_FILE_TMPDIR/install.log" >&2; return 1; }
    prefix=$(PKG_CONFIG_PATH=$TGRAPH_RUNTIME_DIR pkg-config --variable=prefix tgraph)
    export MANDIR=$ROOT$prefix/share/man
    export PCDIR=$ROOT$prefix/lib/pkgconfig
}

# man_of ARGS...: man ARGS over the installed pages only, 80 columns.
man_of() {
    need man man-db || return
    run --separate-stderr env MANPATH="$MANDIR" MANWIDTH=80 man "$@"
}

@test "pkg-config's pkgdatadir is where make install puts tgraph.mk" {
    run_ok env PKG_CONFIG_PATH="$PCDIR" pkg-config --variable=pkgdatadir tgraph
    [ -f "$ROOT$output/tgraph.mk" ]
    grep -qF 'include $(shell pkg-config --variable=pkgdatadir tgraph)/tgraph.mk' "$ROOT$output/tgraph.mk"
}

@test "man tgraph opens the overview, tgraph(7); the file format is tgraph-format(5)" {
    man_of -w tgraph
    [ "$output" = "$MANDIR/man7/tgraph.7" ]
    man_of -w tgraph-format
    [ "$output" = "$MANDIR/man5/tgraph-format.5" ]
}

@test "man finds the model ABI's page for every function of <tgraph/model.h>" {
    fns=$(sed -n 's/^TGRAPH_API .*[ *]\(tgraph_[a-z_]*\)(.*/\1/p' "$TG_SRCDIR/include/tgraph/model.h")
    [ "$(wc -w <<<"$fns")" -ge 16 ]
    # whatis and apropos read the NAME section as lexgrog does
    run_ok lexgrog "$MANDIR/man3/tgraph_model.3"
    names=$output
    for fn in $fns; do
        man_of "$fn"
        [ "$status" -eq 0 ] || { echo "man $fn: $stderr"; false; }
        [[ "$output" == "TGRAPH_MODEL(3)"* ]]
        grep -q "\"$fn - the C ABI of a model compiled by tcompile\"" <<<"$names" ||
            { echo "$fn is not in tgraph_model(3)'s NAME section"; false; }
    done
}

@test "every tgraph page that a page refers to is installed" {
    refs=$(cat "$MANDIR"/man*/* | sed 's/\\-/-/g' |
        grep -oE '\b(tgraph[a-z_-]*|texport|trun|tcompile|tquant|tsparse|tlog) \([1-8]\)' | sort -u)
    [ "$(wc -l <<<"$refs")" -ge 8 ]
    while read -r name sect; do
        sect=${sect//[()]/}
        [ -f "$MANDIR/man$sect/$name.$sect" ] || { echo "$name($sect) is referred to but not installed"; false; }
    done <<<"$refs"
}

@test "the man pages render CC=\"cc -DTG_LOG_DISABLE\" with its space" {
    for page in tgraph_model tgraph; do
        man_of "$page"
        [[ "$output" == *'CC="cc -DTG_LOG_DISABLE"'* ]] || { echo "man $page: no CC=\"cc -DTG_LOG_DISABLE\""; false; }
    done
}

@test "the installed trun looks for devices in pkglibdir, where a CUDA build installs the cuda device" {
    libdir=$(PKG_CONFIG_PATH=$PCDIR pkg-config --variable=libdir tgraph)
    bindir=$ROOT$(PKG_CONFIG_PATH=$PCDIR pkg-config --variable=exec_prefix tgraph)/bin
    "$bindir/texport" "$FIX/mlp.pt2" -o "$TMP/mlp.tg"
    run_fails 2 "no libtgraph-backend-nope.so in TG_BACKEND_PATH or $libdir/tgraph\\)$" \
        "$bindir/trun" --device nope --random "$TMP/mlp.tg"
    if grep -q '^#define HAVE_CUDA 1' "$TGRAPH_RUNTIME_DIR/config.h"; then
        [ -f "$ROOT$libdir/tgraph/libtgraph-backend-cuda.so" ]
        # on the GPU, or each node refused for want of one and run on the CPU
        TG_BACKEND_PATH=$ROOT$libdir/tgraph TLOG=+run run_ok "$bindir/trun" --device cuda \
            --random "$TMP/mlp.tg" -o "$TMP/y.npy"
        grep -q 'on cuda$\|cuda refused it' <<<"$stderr"
    else
        [ ! -e "$ROOT$libdir/tgraph/libtgraph-backend-cuda.so" ]
    fi
}
