/* Reductions over axes, argmax/argmin, softmax and log_softmax. */
#include "../../ops/infer.h"
#include "opmap.h"
#include "run.h"

int tg_run_reduce_mask(const tg_run_ctx *c, uint32_t *mask)
{
    const tg_tensor *x = c->in[0];
    const int64_t *axes;
    int k;
    *mask = 0;
    if (tg_attr_get_ints(c->n, "axes", &axes, &k))
        return -1;
    for (int i = 0; i < (k < 0 ? x->rank : k); i++) {
        int a = i;
        if (k >= 0 && tg_axis_norm(axes[i], x->rank, &a))
            return -1;
        *mask |= 1u << a;
    }
    return 0;
}

int tg_run_reduce(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    uint32_t mask;
    int64_t correction = tg_node_int(c->n, "correction", 1);
    if (tg_run_reduce_mask(c, &mask))
        return -1;
    if (tgk_reduce(tg_cpu_reduce_kop[c->n->op], tg_run_kt(x->dtype), x->rank, x->dims, mask, correction, x->data,
                   c->out[0]->data))
        return tg_err("not defined for dtype %s", tg_dtype_name(x->dtype));
    return 0;
}

TG_FAMILY_HANDLES(arg_reduce, 2);
int tg_run_arg_reduce(const tg_run_ctx *c)
{
    bool max = c->n->op == TG_OP_ARGMAX;
    const tg_tensor *x = c->in[0];
    if (!tg_node_attr(c->n, "axis")) {         /* over the flattened input */
        int64_t n = tg_run_numel(x);
        tgk_arg_reduce(max, tg_run_kt(x->dtype), 1, &n, 0, x->data, c->out[0]->data);
        return 0;
    }
    int ax = tg_run_axis(c, "axis", 0, x->rank);
    if (ax < 0)
        return -1;
    tgk_arg_reduce(max, tg_run_kt(x->dtype), x->rank, x->dims, ax, x->data, c->out[0]->data);
    return 0;
}

TG_FAMILY_HANDLES(softmax, 2);
int tg_run_softmax(const tg_run_ctx *c)
{
    bool log = c->n->op == TG_OP_LOG_SOFTMAX;
    const tg_tensor *x = c->in[0];
    int ax = x->rank ? tg_run_axis(c, "axis", -1, x->rank) : 0;
    if (ax < 0)
        return -1;
    int64_t len = x->rank ? x->dims[ax] : 1;
    int64_t outer = tg_run_prod(x->dims, 0, ax), inner = tg_run_prod(x->dims, ax + 1, x->rank);
    tg_run_f32 io;
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    tgk_softmax_f32(io.in[0], io.out, outer, len, inner, log);
    return tg_run_f32_close(c, &io, 0);
}
