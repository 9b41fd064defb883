/* Elementwise families: unary and binary kernel ops (opmap.h), where, cast,
 * and the aliases (reshape, identity), which copy their input's bytes. */
#include <string.h>

#include "opmap.h"
#include "run.h"

int tg_run_unary(const tg_run_ctx *c)
{
    tgk_unary_op k;
    tgk_unary_param p;
    const tg_tensor *x = c->in[0];
    tg_cpu_unary_desc(c->n, &k, &p);
    if (tgk_unary(k, tg_run_kt(x->dtype), tg_run_numel(x), x->data, c->out[0]->data, &p))
        return tg_err("not defined for dtype %s", tg_dtype_name(x->dtype));
    return 0;
}

int tg_run_binary(const tg_run_ctx *c)
{
    const tg_tensor *a = c->in[0], *b = c->in[1], *y = c->out[0];
    tgk_binary_op k = tg_cpu_binary_kop[c->n->op];
    int64_t sa[TG_MAX_RANK], sb[TG_MAX_RANK];
    tgk_broadcast_strides(y->rank, y->dims, a->rank, a->dims, sa);
    tgk_broadcast_strides(y->rank, y->dims, b->rank, b->dims, sb);
    if (tgk_binary(k, tg_run_kt(a->dtype), y->rank, y->dims, a->data, sa, b->data, sb, y->data))
        return tg_err((k == TGK_DIV || k == TGK_REMAINDER || k == TGK_FMOD) &&
                              !tg_dtype_is_float(a->dtype)
                          ? "integer division by zero"
                          : "not defined for dtype %s", tg_dtype_name(a->dtype));
    return 0;
}

TG_FAMILY_HANDLES(where, 1);
int tg_run_where(const tg_run_ctx *c)
{
    const tg_tensor *cond = c->in[0], *a = c->in[1], *b = c->in[2], *y = c->out[0];
    int64_t sc[TG_MAX_RANK], sa[TG_MAX_RANK], sb[TG_MAX_RANK];
    tgk_broadcast_strides(y->rank, y->dims, cond->rank, cond->dims, sc);
    tgk_broadcast_strides(y->rank, y->dims, a->rank, a->dims, sa);
    tgk_broadcast_strides(y->rank, y->dims, b->rank, b->dims, sb);
    tgk_where(tg_dtype_size(y->dtype), y->rank, y->dims, cond->data, sc, a->data, sa, b->data,
              sb, y->data);
    return 0;
}

TG_FAMILY_HANDLES(cast, 1);
int tg_run_cast(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    tgk_cast(tg_run_kt(c->out[0]->dtype), c->out[0]->data, tg_run_kt(x->dtype), x->data,
             tg_run_numel(x));
    return 0;
}

int tg_run_alias(const tg_run_ctx *c)
{
    memcpy(c->out[0]->data, c->in[0]->data, c->out[0]->nbytes);
    return 0;
}
