/* Affine quantization, per tensor or per channel: integer types round half to
 * even, add the zero point and saturate; fp8 types only scale (zero point 0). */
#include <math.h>

#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    tgk_dtype qt;
    const float *x;
    float *xo;
    const void *q;
    void *qo;
    const float *scale;
    const int32_t *zero;
    int64_t nch, inner;
} quant_ctx;

static void quant_task(void *vctx, int64_t b, int64_t e)
{
    const quant_ctx *c = vctx;
    bool fp8 = tgk_dtype_is_float(c->qt);
    float lo = c->qt == TGK_I8 ? -128.0f : 0.0f, hi = c->qt == TGK_I8 ? 127.0f : 255.0f;
    for (int64_t i = b; i < e; i++) {
        int64_t ch = i / c->inner % c->nch;
        float v = c->x[i] / c->scale[ch];
        if (fp8) {
            tgk_store_f64(c->qt, c->qo, i, v);
            continue;
        }
        v = nearbyintf(v) + (float)c->zero[ch];
        v = v < lo ? lo : v > hi ? hi : v != v ? (float)c->zero[ch] : v;
        tgk_store_i64(c->qt, c->qo, i, (int64_t)v);
    }
}

static void dequant_task(void *vctx, int64_t b, int64_t e)
{
    const quant_ctx *c = vctx;
    bool fp8 = tgk_dtype_is_float(c->qt);
    for (int64_t i = b; i < e; i++) {
        int64_t ch = i / c->inner % c->nch;
        double q = fp8 ? tgk_load_f64(c->qt, c->q, i) : (double)tgk_load_i64(c->qt, c->q, i);
        c->xo[i] = (float)((q - c->zero[ch]) * c->scale[ch]);
    }
}

static bool quantized_type(tgk_dtype t)
{
    return t == TGK_I8 || t == TGK_U8 || t == TGK_I32 || t == TGK_F8E4M3 || t == TGK_F8E5M2;
}

int tgk_quantize_f32(int64_t n, const float *x, tgk_dtype qt, const float *scale,
                     const int32_t *zero, int64_t nch, int64_t inner, void *q)
{
    if (!quantized_type(qt) || qt == TGK_I32)
        return -1;
    quant_ctx c = { qt, x, NULL, NULL, q, scale, zero, nch, inner };
    tgk_parallel_for(n, 1 << 14, quant_task, &c);
    return 0;
}

int tgk_dequantize_f32(int64_t n, const void *q, tgk_dtype qt, const float *scale,
                       const int32_t *zero, int64_t nch, int64_t inner, float *x)
{
    if (!quantized_type(qt))
        return -1;
    quant_ctx c = { qt, NULL, x, q, NULL, scale, zero, nch, inner };
    tgk_parallel_for(n, 1 << 14, dequant_task, &c);
    return 0;
}
