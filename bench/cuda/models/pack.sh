#!/bin/sh
# pack.sh DEST: from a tree built here with CUDA (./configure --with-cuda &&
# make && make tests/unit/test_backend_ops), what run.sh needs on the GPU
# machine, into DEST (a folder .git/info/exclude ignores, for run's carry):
# texport, tcompile, the cuda device's shared object (where the build has it),
# the runtime archives tcompile links, the headers, the bench scripts and
# test_backend_ops, without debug info. Built here, the
# call spends no time on configure and make (about two minutes of 16 cores
# there).
set -eu
dest=$1
rm -rf "$dest"
mkdir -p "$dest/tools" "$dest/bench/cuda" "$dest/bench/zoo" "$dest/tests/unit"
cp tools/texport tools/tcompile "$dest/tools/"
cp libtgcuda.a libtgkernels.a "$dest/"
mkdir -p "$dest/lib/backend/cuda/.libs"
cp lib/backend/cuda/.libs/libtgraph-backend-cuda.so "$dest/lib/backend/cuda/.libs/"
cp -r include "$dest/"
cp -r bench/cuda/models "$dest/bench/cuda/"
cp bench/zoo/zoo.py "$dest/bench/zoo/"
cp tests/unit/test_backend_ops "$dest/tests/unit/"
# no debug info: the call carries at most 64 MiB with the repository
strip --strip-debug "$dest"/tools/* "$dest/tests/unit/test_backend_ops" "$dest"/*.a \
    "$dest"/lib/backend/cuda/.libs/*.so
du -sh "$dest"
