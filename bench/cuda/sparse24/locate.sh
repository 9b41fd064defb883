# Sourced by run.sh, backend.sh and tests/cuda/sparse24.sh: S is the folder
# of the cuSPARSELt that torch's environment carries (PyPI
# nvidia-cusparselt-cu13: lib/libcusparseLt.so.0 and include/cusparseLt.h),
# or CUSPARSELT_DIR when set; empty when python3 knows of none.
# nvidia/cusparselt is a namespace package: take its first path.
S=${CUSPARSELT_DIR:-$(python3 -c 'import nvidia.cusparselt as m; print(list(m.__path__)[0])' 2>/dev/null)}
[ -n "$S" ] || S=$(dirname "$(dirname "$(python3 -c 'import site; print(site.getsitepackages()[0])' 2>/dev/null)/nvidia/cusparselt/lib/x")")
[ -e "$S/lib/libcusparseLt.so.0" ] || S=
