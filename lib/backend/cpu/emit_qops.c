/* The quantized layers (qlinear, qlinear_24, qconv) as calls into the int8 and
 * weight-only kernels (qgemm.h). int8 weights are packed into the GEMM's
 * layout at the first run and kept: every instance of a compiled model has
 * the same weights (the blob's hash is checked at open), so one packed copy
 * per node serves them all. */
#include "cg.h"

#include <inttypes.h>

#include "../../error.h"
#include "../../ops/infer.h"
#include "../../ops/qops.h"

/* input i (the bias, after the scales) or NULL */
static const char *bias_ptr(tg_cg *c, const tg_node *nd, int i)
{
    return nd->nin > i && nd->in[i] >= 0 ? cg_ptr(c, nd->in[i]) : "NULL";
}

/* `if (call) return tgrt_fail(status, "node 'n' (op): what");` */
static void fail_if(tg_cg *c, const tg_node *nd, const char *call, const char *status,
                    const char *what)
{
    fprintf(c->f, "    if (%s)\n        return tgrt_fail(%s, %s);\n", call, status,
            cg_quote(c, cg_str(c, "node '%s' (%s): %s", nd->name, tg_op_name(nd->op), what)));
}

/* The node's int8 weights packed once (a static slot per node), as `pk`:
 * `args` are tgk_<kind>_pack_once's arguments after the slot and before the
 * weights, `more` those after them ("" or ", ..."). */
static void packed_weights(tg_cg *c, const tg_node *nd, const char *kind, const char *args,
                           const char *more)
{
    fprintf(c->f, "    static void *pk_slot;\n"
            "    const void *pk = tgk_%s_pack_once(&pk_slot, %s, (const int8_t *)%s%s);\n", kind,
            args, cg_ptr(c, nd->in[1]), more);
    fail_if(c, nd, "!pk", "TGRAPH_E_NOMEM", "out of memory for the packed weights");
}

/* The static or dynamic int8 layer through tgk_qlinear_f32_on(gemm, ...) on
 * `pk`, w_scale input si and bias? si + 1. */
static void int8_linear(tg_cg *c, const tg_node *nd, const tg_qlayer *q, const char *gemm,
                        int si)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *s = tg_node_input(c->g, nd, si);
    const char *M = cg_prod(c, &x->shape, 0, x->shape.rank - 1);
    const char *N = cg_dim(c, s->shape.d[0]), *K = cg_dim(c, x->shape.d[x->shape.rank - 1]);
    fail_if(c, nd,
            cg_str(c, "tgk_qlinear_f32_on(%s, %s, %s, %s, %s, %s, %d, %d, pk, %s, %s, %s)", gemm,
                   M, N, K, cg_ptr(c, nd->in[0]), cg_float(c, q->x_scale), (int)q->x_zero_u8,
                   q->scheme == TG_QSCHEME_DYNAMIC, cg_ptr(c, nd->in[si]),
                   bias_ptr(c, nd, si + 1), cg_ptr(c, nd->out[0])),
            "TGRAPH_E_NOMEM", "out of memory");
}

/* `qa`, the activations of a static or dynamic qconv or qlinear as
 * tgk_qact: u8 on either side, a fused activation's table made once. */
static void emit_qact(tg_cg *c, const tg_node *nd, const tg_qlayer *q)
{
    bool xq = tg_node_input(c->g, nd, 0)->dtype == TG_U8;
    fprintf(c->f, "    tgk_qact qa = {0};\n    qa.%s = %s;\n    qa.x_scale = %s;\n"
            "    qa.x_zero = %d;\n    qa.dynamic = %d;\n    qa.%s = %s;\n", xq ? "xq" : "x",
            cg_ptr(c, nd->in[0]), cg_float(c, q->x_scale), (int)q->x_zero_u8,
            q->scheme == TG_QSCHEME_DYNAMIC, q->y_u8 ? "yq" : "y", cg_ptr(c, nd->out[0]));
    if (q->y_u8)
        fprintf(c->f, "    qa.y_scale = %s;\n    qa.y_zero = %d;\n    qa.y_lo = %d;\n"
                "    qa.y_hi = %d;\n", cg_float(c, q->y_scale), (int)q->y_zero, (int)q->y_lo,
                (int)q->y_hi);
    if (q->y_act) {     /* the table made once, as the packed weights */
        fprintf(c->f, "    qa.y_act = %d;\n    qa.p_scale = %s;\n    qa.p_zero = %d;\n"
                "    static void *lut_slot;\n    qa.lut = tgk_act_lut_once(&lut_slot, qa.y_act,"
                " qa.p_scale, qa.p_zero, qa.y_scale, qa.y_zero, qa.y_lo, qa.y_hi);\n", q->y_act,
                cg_float(c, q->p_scale), (int)q->p_zero);
        fail_if(c, nd, "!qa.lut", "TGRAPH_E_NOMEM", "out of memory for the activation's table");
    }
}

static int emit_qlinear(tg_cg *c, const tg_node *nd, const tg_qlayer *q)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *w = tg_node_input(c->g, nd, 1);
    const char *M = cg_prod(c, &x->shape, 0, x->shape.rank - 1);
    const char *N = cg_dim(c, w->shape.d[0]), *K = cg_dim(c, x->shape.d[x->shape.rank - 1]);
    const char *y = cg_ptr(c, nd->out[0]);
    if (q->scheme == TG_QSCHEME_WEIGHT_ONLY) {
        fail_if(c, nd,
                cg_str(c, "tgk_wlinear_f32(%s, %s, %s, %s, %s, %d, %" PRId64 ", %s, %s, %s)", M,
                       N, K, cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]), q->bits, q->group,
                       cg_ptr(c, nd->in[2]), bias_ptr(c, nd, 3), y),
                "TGRAPH_E_NOMEM", "out of memory");
        return 0;
    }
    packed_weights(c, nd, "qgemm", cg_str(c, "%s, %s", N, K), "");
    if (x->dtype != TG_U8 && !q->y_u8) {
        int8_linear(c, nd, q, "tgk_qgemm_u8s8_f32", 2);
        return 0;
    }
    emit_qact(c, nd, q);
    fail_if(c, nd,
            cg_str(c, "tgk_qlinear(%s, %s, %s, &qa, pk, %s, %s)", M, N, K, cg_ptr(c, nd->in[2]),
                   bias_ptr(c, nd, 3)),
            "TGRAPH_E_NOMEM", "out of memory");
    return 0;
}

/* qlinear_24: its compressed weight packed once for the sparse GEMM */
static int emit_qlinear_24(tg_cg *c, const tg_node *nd, const tg_qlayer *q)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *v = tg_node_input(c->g, nd, 1);
    packed_weights(c, nd, "qgemm24",
                   cg_str(c, "%s, %s", cg_dim(c, v->shape.d[0]),
                          cg_dim(c, x->shape.d[x->shape.rank - 1])),
                   cg_str(c, ", (const uint8_t *)%s", cg_ptr(c, nd->in[2])));
    int8_linear(c, nd, q, "tgk_qgemm24_u8s8_f32", 3);
    return 0;
}

static int emit_qconv(tg_cg *c, const tg_node *nd, const tg_qlayer *q)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *w = tg_node_input(c->g, nd, 1);
    const tg_value *y = &c->g->values[nd->out[0]];
    int nsp = x->shape.rank - 2;
    int64_t groups = tg_node_int(nd, "groups", 1), v[3][3];
    static const char *const attr[3] = {"stride", "padding", "dilation"};
    static const char *const field[3] = {"stride", "pad", "dil"};
    for (int a = 0; a < 3; a++)
        if (tg_attr_per_axis(nd, attr[a], nsp, a == 1 ? 0 : 1, v[a]))
            return tg_err("node '%s': %s", nd->name, tg_errmsg());
    fprintf(c->f, "    tgk_conv_desc d = {0};\n    d.nsp = %d;\n    d.n = %s;\n    d.c = %s;\n"
            "    d.k = %s;\n    d.groups = %" PRId64 ";\n", nsp, cg_dim(c, x->shape.d[0]),
            cg_dim(c, x->shape.d[1]), cg_dim(c, y->shape.d[1]), groups);
    for (int i = 0; i < nsp; i++) {
        fprintf(c->f, "    d.in[%d] = %s;\n    d.out[%d] = %s;\n    d.kernel[%d] = %s;\n", i,
                cg_dim(c, x->shape.d[2 + i]), i, cg_dim(c, y->shape.d[2 + i]), i,
                cg_dim(c, w->shape.d[2 + i]));
        for (int a = 0; a < 3; a++)
            fprintf(c->f, "    d.%s[%d] = %" PRId64 ";\n", field[a], i, v[a][i]);
    }
    packed_weights(c, nd, "qconv", "&d", "");
    emit_qact(c, nd, q);
    fail_if(c, nd,
            cg_str(c, "tgk_qconv(&d, &qa, pk, %s, %s)", cg_ptr(c, nd->in[2]),
                   bias_ptr(c, nd, 3)),
            "TGRAPH_E_NOMEM", "out of memory");
    return 0;
}

TG_FAMILY_HANDLES(qops, 3);
int cg_node_qops(tg_cg *c, const tg_node *nd)
{
    tg_qlayer q;
    if (tg_qlayer_read(nd, &q))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    switch (nd->op) {
    case TG_OP_QCONV: return emit_qconv(c, nd, &q);
    case TG_OP_QLINEAR_24: return emit_qlinear_24(c, nd, &q);
    default: return emit_qlinear(c, nd, &q);
    }
}
