/* Quantized layers (qlinear, qlinear_24, qconv): attributes and shapes to the int8 and
 * weight-only kernels (qgemm.h). The interpreter packs int8 weights at each
 * run; compiled models pack them once. */
#include <stdlib.h>

#include "kernels/qgemm.h"
#include "../../ops/infer.h"
#include "../../ops/qops.h"
#include "run.h"

/* An int8 linear layer on its packed weights (freed here) and the GEMM that
 * reads them; w_scale and bias? are inputs si, si + 1. */
static int int8_linear(const tg_run_ctx *c, const tg_qlayer *q, tgk_qgemm_f32_fn gemm,
                       void *packed, int si)
{
    const tg_tensor *x = c->in[0], *b = c->n->nin > si + 1 ? c->in[si + 1] : NULL;
    int64_t K = x->dims[x->rank - 1], N = c->in[si]->dims[0];
    int64_t M = tg_run_numel(x) / (K ? K : 1);
    int rc = tgk_qlinear_f32_on(gemm, M, N, K, x->data, q->x_scale, q->x_zero_u8,
                                q->scheme == TG_QSCHEME_DYNAMIC, packed, c->in[si]->data,
                                b ? b->data : NULL, c->out[0]->data);
    free(packed);
    return rc ? tg_err("out of memory") : 0;
}

/* The activations of a qconv or qlinear as tgk_qact, a fused activation's
 * table made into lut. */
static tgk_qact qact(const tg_run_ctx *c, const tg_qlayer *q, uint8_t *lut)
{
    tgk_qact a = {.x_scale = q->x_scale, .x_zero = q->x_zero_u8,
                  .dynamic = q->scheme == TG_QSCHEME_DYNAMIC, .y_scale = q->y_scale,
                  .y_zero = q->y_zero, .y_lo = q->y_lo, .y_hi = q->y_hi, .y_act = q->y_act,
                  .p_scale = q->p_scale, .p_zero = q->p_zero};
    if (q->y_act) {
        tgk_act_lut(q->y_act, q->p_scale, q->p_zero, q->y_scale, q->y_zero, q->y_lo, q->y_hi,
                    lut);
        a.lut = lut;
    }
    if (c->in[0]->dtype == TG_U8)
        a.xq = c->in[0]->data;
    else
        a.x = c->in[0]->data;
    if (q->y_u8)
        a.yq = c->out[0]->data;
    else
        a.y = c->out[0]->data;
    return a;
}

static int run_qlinear(const tg_run_ctx *c, const tg_qlayer *q)
{
    const tg_tensor *x = c->in[0], *w = c->in[1], *s = c->in[2];
    const tg_tensor *b = c->n->nin > 3 ? c->in[3] : NULL;
    int64_t K = x->dims[x->rank - 1], N = w->dims[0], M = tg_run_numel(x) / (K ? K : 1);
    const float *bias = b ? b->data : NULL;
    if (q->scheme == TG_QSCHEME_WEIGHT_ONLY) {
        if (tgk_wlinear_f32(M, N, K, x->data, w->data, q->bits, q->group, s->data, bias,
                            c->out[0]->data))
            return tg_err("out of memory");
        return 0;
    }
    void *packed = malloc(tgk_qgemm_packed_size(N, K));
    if (!packed)
        return tg_err("out of memory");
    tgk_qgemm_pack(N, K, w->data, packed);
    if (x->dtype != TG_U8 && !q->y_u8)
        return int8_linear(c, q, tgk_qgemm_u8s8_f32, packed, 2);
    uint8_t lut[256];
    tgk_qact a = qact(c, q, lut);
    int rc = tgk_qlinear(M, N, K, &a, packed, s->data, bias);
    free(packed);
    return rc ? tg_err("out of memory") : 0;
}

/* qlinear_24: its compressed weight packed for the sparse GEMM (qgemm24.c).
 * Every metadata byte is valid (2-bit indices), so a graph from elsewhere
 * cannot make the kernel read out of bounds. */
static int run_qlinear_24(const tg_run_ctx *c, const tg_qlayer *q)
{
    const tg_tensor *x = c->in[0], *v = c->in[1], *m = c->in[2];
    int64_t K = x->dims[x->rank - 1], N = v->dims[0];
    void *packed = malloc(tgk_qgemm24_packed_size(N, K));
    if (!packed)
        return tg_err("out of memory");
    tgk_qgemm24_pack(N, K, v->data, m->data, packed);
    return int8_linear(c, q, tgk_qgemm24_u8s8_f32, packed, 3);
}

static int run_qconv(const tg_run_ctx *c, const tg_qlayer *q)
{
    const tg_tensor *x = c->in[0], *w = c->in[1], *y = c->out[0];
    const tg_tensor *b = c->n->nin > 3 ? c->in[3] : NULL;
    const tg_node *n = c->n;
    int nsp = x->rank - 2;
    tgk_conv_desc d = { .nsp = nsp, .n = x->dims[0], .c = x->dims[1], .k = y->dims[1],
                        .groups = tg_node_int(n, "groups", 1) };
    if (tg_attr_per_axis(n, "stride", nsp, 1, d.stride) ||
        tg_attr_per_axis(n, "padding", nsp, 0, d.pad) ||
        tg_attr_per_axis(n, "dilation", nsp, 1, d.dil))
        return -1;
    for (int i = 0; i < nsp; i++) {
        d.in[i] = x->dims[2 + i];
        d.out[i] = y->dims[2 + i];
        d.kernel[i] = w->dims[2 + i];
    }
    void *packed = malloc(tgk_qconv_packed_size(&d));
    if (!packed || tgk_qconv_pack(&d, w->data, packed)) {
        free(packed);
        return tg_err("out of memory");
    }
    uint8_t lut[256];
    tgk_qact a = qact(c, q, lut);
    int rc = tgk_qconv(&d, &a, packed, c->in[2]->data, b ? b->data : NULL);
    free(packed);
    return rc ? tg_err("out of memory for the quantized convolution") : 0;
}

TG_FAMILY_HANDLES(qops, 3);
int tg_run_qops(const tg_run_ctx *c)
{
    tg_qlayer q;
    if (tg_qlayer_read(c->n, &q))
        return -1;
    switch (c->n->op) {
    case TG_OP_QLINEAR: return run_qlinear(c, &q);
    case TG_OP_QCONV: return run_qconv(c, &q);
    case TG_OP_QLINEAR_24: return run_qlinear_24(c, &q);
    default: return tg_err("not a quantized layer");
    }
}
