/* The packed GEMM of a build's libtgkernels.a behind a few exported names,
 * for bench/gemm_ort.py (ctypes): the library itself hides its symbols. */
#include "backend/cpu/kernels/kernels.h"

#define EXPORT __attribute__((visibility("default")))

EXPORT void gemm_threads(int n) { tgk_set_num_threads(n); }

EXPORT int64_t gemm_packed_size(int64_t N, int64_t K) { return tgk_packed_size(N, K); }

EXPORT void gemm_pack(const float *w, int64_t N, int64_t K, float *wp)
{
    tgk_pack_weight_f32(w, K, N, K, wp);
}

EXPORT void gemm_linear(const float *x, const float *wp, const float *b, float *y, int64_t M,
                        int64_t N, int64_t K)
{
    tgk_linear_packed_f32(x, wp, b, y, M, N, K);
}
