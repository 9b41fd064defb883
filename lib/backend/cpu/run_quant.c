/* Quantize and dequantize, per tensor or per channel along "axis". */
#include <stdlib.h>

#include "opmap.h"
#include "run.h"

/* The scale and zero point as per-channel arrays (nch = 1: per tensor). */
static int qparams(const tg_run_ctx *c, const tg_tensor *x, float **scale, int32_t **zero,
                   int64_t *nch, int64_t *inner)
{
    tg_cpu_quant d;
    *scale = NULL;
    *zero = NULL;
    if (tg_cpu_quant_desc(c->n, x->rank, &d))
        return -1;
    *nch = d.nch;
    *inner = 1;
    if (d.per_axis) {
        if (x->dims[d.axis] != d.nch)
            return tg_err("%lld scales for axis %d of size %lld", (long long)d.nch, d.axis,
                          (long long)x->dims[d.axis]);
        *inner = tg_run_prod(x->dims, d.axis + 1, x->rank);
    }
    *scale = malloc(sizeof(float) * (size_t)d.nch);
    *zero = malloc(sizeof(int32_t) * (size_t)d.nch);
    if (!*scale || !*zero)
        return tg_err("out of memory");
    for (int64_t i = 0; i < d.nch; i++) {
        (*scale)[i] = tg_cpu_quant_scale(&d, i);
        (*zero)[i] = tg_cpu_quant_zero(&d, i);
    }
    return 0;
}

TG_FAMILY_HANDLES(quant, 2);
int tg_run_quant(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    tg_tensor *y = c->out[0];
    float *scale = NULL;
    int32_t *zero = NULL;
    int64_t nch, inner;
    int rc = qparams(c, x, &scale, &zero, &nch, &inner);
    if (rc == 0 && c->n->op == TG_OP_QUANTIZE) {
        float *tmp;
        const float *xf = tg_run_in_f32(x, &tmp);
        if (!xf)
            rc = -1;
        else if (tgk_quantize_f32(tg_run_numel(x), xf, tg_run_kt(y->dtype), scale, zero, nch,
                                  inner, y->data))
            rc = tg_err("cannot quantize to %s", tg_dtype_name(y->dtype));
        free(tmp);
    } else if (rc == 0 &&
               tgk_dequantize_f32(tg_run_numel(x), x->data, tg_run_kt(x->dtype), scale, zero, nch,
                                  inner, y->data)) {
        rc = tg_err("cannot dequantize %s", tg_dtype_name(x->dtype));
    }
    free(scale);
    free(zero);
    return rc;
}
