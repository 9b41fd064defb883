/* Quantize and dequantize, per tensor or per channel along "axis". */
#include <stdlib.h>

#include "run.h"

/* scale and zero point attributes as per-channel arrays (nch = 1: per tensor). */
static int qparams(const tg_run_ctx *c, const tg_tensor *x, float **scale, int32_t **zero,
                   int64_t *nch, int64_t *inner)
{
    const tg_attr *sa = tg_node_attr(c->n, "scale"), *za = tg_node_attr(c->n, "zero_point");
    *nch = sa && sa->kind == TG_ATTR_FLOATS ? sa->n : 1;
    *inner = 1;
    if (sa && sa->kind == TG_ATTR_FLOATS) {
        int ax = tg_run_axis(c, "axis", 0, x->rank);
        if (ax < 0)
            return -1;
        if (x->dims[ax] != *nch)
            return tg_err("%lld scales for axis %d of size %lld", (long long)*nch, ax,
                          (long long)x->dims[ax]);
        *inner = tg_run_prod(x->dims, ax + 1, x->rank);
    }
    *scale = malloc(sizeof(float) * (size_t)*nch);
    *zero = malloc(sizeof(int32_t) * (size_t)*nch);
    if (!*scale || !*zero)
        return tg_err("out of memory");
    for (int64_t i = 0; i < *nch; i++) {
        (*scale)[i] = !sa ? 1.0f : sa->kind == TG_ATTR_FLOATS ? (float)sa->u.floats[i]
                                                              : (float)sa->u.f;
        (*zero)[i] = !za ? 0 : za->kind == TG_ATTR_INTS ? (int32_t)za->u.ints[i]
                                                        : (int32_t)za->u.i;
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
