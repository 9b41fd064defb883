/* Errors of the CUDA runtime and of cuBLASLt as tg_err messages naming the
 * step (cuda.h). Apart from cuda.c, so that a compiled model's runtime
 * (libtgcuda.a) takes them without the backend's struct and compiler. */
#include "cuda.h"

#include "../../error.h"

int tgc_fail(int err, const char *what)
{
    return tg_err("cuda: %s: %s (%s)", what, cudaGetErrorString((cudaError_t)err),
                  cudaGetErrorName((cudaError_t)err));
}

int tgc_blas_fail(cublasStatus_t st, const char *what)
{
    return tg_err("cuda: %s: cuBLASLt status %d", what, (int)st);
}
