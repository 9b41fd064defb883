/* Normalizations, pooling and resizing: float32 kernels; other float types
 * (and integer max_pool) go through float32 copies. */
#include "opmap.h"
#include "run.h"

TG_FAMILY_HANDLES(norm, 3);
int tg_run_norm(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    tg_cpu_norm d;
    tg_run_f32 io;
    if (tg_cpu_norm_desc(c->n, x->rank, &d))
        return -1;
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    int64_t spatial = tg_run_prod(x->dims, 2, x->rank);
    if (c->n->op == TG_OP_LAYER_NORM) {
        tgk_layer_norm_f32(io.in[0], io.in[1], io.in[2], io.out,
                           tg_run_prod(x->dims, 0, d.axis), tg_run_prod(x->dims, d.axis, x->rank),
                           d.eps);
    } else if (c->n->op == TG_OP_GROUP_NORM) {
        tgk_group_norm_f32(io.in[0], io.in[1], io.in[2], io.out, x->dims[0], x->dims[1], spatial,
                           d.groups, d.eps);
    } else {
        tgk_batch_norm_f32(io.in[0], io.in[1], io.in[2], io.in[3], io.in[4], io.out, x->dims[0],
                           x->dims[1], spatial, d.eps);
    }
    return tg_run_f32_close(c, &io, 0);
}

int tg_run_pool_desc(const tg_run_ctx *c, tgk_pool_desc *d)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    if (tg_cpu_pool_desc(c->n, x->rank - 2, d))
        return -1;
    int sp0 = d->channels_last ? 1 : 2;     /* [N, H, W, C] or [N, C, *sp] */
    d->n = x->dims[0];
    d->c = x->dims[d->channels_last ? x->rank - 1 : 1];
    for (int i = 0; i < d->nsp; i++) {
        d->in[i] = x->dims[sp0 + i];
        d->out[i] = y->dims[sp0 + i];
    }
    return 0;
}

TG_FAMILY_HANDLES(pool, 3);
int tg_run_pool(const tg_run_ctx *c)
{
    const tg_node *n = c->n;
    int nsp = c->in[0]->rank - 2;
    tgk_pool_desc d;
    tg_run_f32 io;
    if (tg_run_pool_desc(c, &d))
        return -1;
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    if (n->op == TG_OP_MAX_POOL)
        tgk_max_pool_f32(&d, io.in[0], io.out);
    else if (n->op == TG_OP_AVG_POOL)
        tgk_avg_pool_f32(&d, io.in[0], io.out);
    else if (d.channels_last)
        tgk_adaptive_avg_pool_nhwc_f32(d.n, d.c, d.in[0], d.in[1], d.out[0], d.out[1], io.in[0],
                                       io.out);
    else
        tgk_adaptive_avg_pool_f32(d.n * d.c, nsp == 2 ? d.in[0] : 1, d.in[nsp - 1],
                                  nsp == 2 ? d.out[0] : 1, d.out[nsp - 1], io.in[0], io.out);
    return tg_run_f32_close(c, &io, 0);
}

TG_FAMILY_HANDLES(resize, 1);
int tg_run_resize(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    tgk_resize_desc d = {.nc = x->dims[0] * x->dims[1]};
    tg_run_f32 io;
    if (tg_cpu_resize_desc(c->n, x->rank - 2, &d))
        return -1;
    for (int i = 0; i < d.nsp; i++) {
        d.in[i] = x->dims[2 + i];
        d.out[i] = y->dims[2 + i];
        if (d.in[i] == 0 && d.out[i] > 0)
            return tg_err("spatial axis %d: an empty input cannot be resized", i);
    }
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    int rc = tgk_resize_f32(&d, io.in[0], io.out)
                 ? tg_err("out of memory, or an antialiasing filter of over 256 taps (a scale below about 1/64)")
                 : 0;
    return tg_run_f32_close(c, &io, rc);
}
