/* Elementwise activations y[i] = f(x[i]) over the inline math of vecmath.h.
 * Each loop is compiled three times (AVX-512, AVX2+FMA, baseline x86-64) and
 * picked at load time, so the interpreter stays portable and still runs the
 * wide loop where it can. The readable reference of each f is the libm
 * formula in its comment; tests/unit/test_vec.c checks against it in float64. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#define VEC_MAP(name, expr)                                                        \
    TGK_CLONES void tgk_vec_##name##_f32(int64_t n, const float *x, float *y)    \
    {                                                                              \
        for (int64_t i = 0; i < n; i++) {                                          \
            float v = x[i];                                                        \
            y[i] = (expr);                                                         \
        }                                                                          \
    }

/* expf(v) */
VEC_MAP(exp, tgk_exp(v))
/* tanhf(v) */
VEC_MAP(tanh, tgk_tanh(v))
/* 1 / (1 + expf(-v)) */
VEC_MAP(sigmoid, tgk_sigmoid(v))
/* v / (1 + expf(-v)) */
VEC_MAP(silu, v * tgk_sigmoid(v))
/* erff(v) */
VEC_MAP(erf, tgk_erf(v))
/* 0.5 v (1 + erff(v / sqrt 2)) */
VEC_MAP(gelu, 0.5f * v * tgk_gelu_phi(v))
/* 0.5 v (1 + tanhf(sqrt(2/pi) (v + 0.044715 v^3))) */
VEC_MAP(gelu_tanh, tgk_gelu_tanh(v))
/* v < 0 ? 0 : v */
VEC_MAP(relu, v < 0.0f ? 0.0f : v)
/* v < 0 ? 0 : v > 6 ? 6 : v: clamp(v, 0, 6) (ReLU6), as the clamp's loop
 * computes it; NaN and -0 stay */
VEC_MAP(relu6, tgk_clamp06(v))
/* v * fminf(fmaxf(v + 3, 0), 6) / 6, as selects (fminf and fmaxf do not
 * vectorize); NaN, -inf and inf give what the formula gives */
VEC_MAP(hardswish, v * tgk_clamp06(v + 3.0f) / 6.0f)
