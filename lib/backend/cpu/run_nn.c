/* Normalizations, pooling and resizing: float32 kernels; other float types
 * (and integer max_pool) go through float32 copies. */
#include "../../ops/infer.h"
#include "../../ops/resize.h"
#include "run.h"

TG_FAMILY_HANDLES(norm, 3);
int tg_run_norm(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    float eps = (float)tg_node_float(c->n, "eps", 1e-5);
    tg_run_f32 io;
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    int64_t spatial = tg_run_prod(x->dims, 2, x->rank);
    if (c->n->op == TG_OP_LAYER_NORM) {
        int ax = tg_run_axis(c, "axis", -1, x->rank);
        if (ax < 0)
            return tg_run_f32_close(c, &io, -1);
        tgk_layer_norm_f32(io.in[0], io.in[1], io.in[2], io.out, tg_run_prod(x->dims, 0, ax),
                           tg_run_prod(x->dims, ax, x->rank), eps);
    } else if (c->n->op == TG_OP_GROUP_NORM) {
        tgk_group_norm_f32(io.in[0], io.in[1], io.in[2], io.out, x->dims[0], x->dims[1], spatial,
                           tg_node_int(c->n, "groups", 1), eps);
    } else {
        tgk_batch_norm_f32(io.in[0], io.in[1], io.in[2], io.in[3], io.in[4], io.out, x->dims[0],
                           x->dims[1], spatial, eps);
    }
    return tg_run_f32_close(c, &io, 0);
}

int tg_run_pool_desc(const tg_run_ctx *c, tgk_pool_desc *d)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    const tg_node *n = c->n;
    int nsp = x->rank - 2;
    *d = (tgk_pool_desc){ .nsp = nsp, .n = x->dims[0], .c = x->dims[1] };
    if (n->op != TG_OP_ADAPTIVE_AVG_POOL &&
        (tg_attr_per_axis(n, "kernel", nsp, 0, d->kernel) ||
         tg_attr_per_axis(n, "padding", nsp, 0, d->pad) ||
         tg_attr_per_axis(n, "dilation", nsp, 1, d->dil) ||
         tg_attr_per_axis(n, "stride", nsp, 0, d->stride)))
        return -1;
    for (int i = 0; i < nsp; i++) {
        d->in[i] = x->dims[2 + i];
        d->out[i] = y->dims[2 + i];
        if (!tg_node_attr(n, "stride"))         /* torch: stride defaults to the kernel */
            d->stride[i] = d->kernel[i];
    }
    d->count_include_pad = tg_node_int(n, "count_include_pad", 1) != 0;
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
    else
        tgk_adaptive_avg_pool_f32(d.n * d.c, nsp == 2 ? d.in[0] : 1, d.in[nsp - 1],
                                  nsp == 2 ? d.out[0] : 1, d.out[nsp - 1], io.in[0], io.out);
    return tg_run_f32_close(c, &io, 0);
}

/* the kernel's enums list the choices in the op's order */
#define SAME(a, b) _Static_assert((int)TG_##a == (int)TGK_##b, #a)
SAME(RESIZE_CUBIC, RESIZE_CUBIC);
SAME(COORD_HALF_PIXEL_SYMMETRIC, COORD_HALF_PIXEL_SYMMETRIC);
SAME(COORD_TF_HALF_PIXEL_FOR_NN, COORD_TF_HALF_PIXEL_FOR_NN);
SAME(COORD_ALIGN_CORNERS, COORD_ALIGN_CORNERS);
SAME(NEAREST_CEIL, NEAREST_CEIL);
SAME(NEAREST_ROUND_PREFER_CEIL, NEAREST_ROUND_PREFER_CEIL);
#undef SAME

int tg_cpu_resize_desc(const tg_node *n, int nsp, tgk_resize_desc *d)
{
    tg_resize r;
    if (tg_resize_read(n, nsp, &r))
        return -1;
    d->nsp = nsp;
    d->mode = (tgk_resize_mode)r.mode;
    d->coord = (tgk_resize_coord)r.coord;
    d->nearest = (tgk_resize_nearest)r.nearest;
    d->scale[0] = r.scale[0];
    d->scale[1] = r.scale[1];
    d->cubic_a = (float)r.cubic_a;
    d->exclude_outside = r.exclude_outside;
    return 0;
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
    int rc = tgk_resize_f32(&d, io.in[0], io.out) ? tg_err("out of memory") : 0;
    return tg_run_f32_close(c, &io, rc);
}
