/* The kernel descriptors of opmap.h: a node's attributes as its kernel's
 * descriptor, everything but the sizes. The interpreter's glue (run_*.c, and
 * through it the CUDA glue) adds the concrete sizes, the C emitter writes the
 * same fields as constants and the sizes as expressions of the symbols. */
#include "opmap.h"

#include <string.h>

#include "../../error.h"
#include "../../ops/infer.h"
#include "../../ops/resize.h"

int tg_cpu_conv_desc(const tg_node *n, int nsp, tgk_conv_desc *d)
{
    *d = (tgk_conv_desc){ .nsp = nsp, .groups = tg_node_int(n, "groups", 1),
                          .transposed = tg_node_int(n, "transposed", 0) != 0 };
    return tg_attr_per_axis(n, "stride", nsp, 1, d->stride) ||
                   tg_attr_per_axis(n, "padding", nsp, 0, d->pad) ||
                   tg_attr_per_axis(n, "dilation", nsp, 1, d->dil)
               ? -1
               : 0;
}

int tg_cpu_conv_nhwc_desc(const tg_node *n, tgk_conv_nhwc_desc *d)
{
    *d = (tgk_conv_nhwc_desc){ .k = tg_node_int(n, "k", 0), .groups = tg_node_int(n, "groups", 1) };
    return tg_attr_per_axis(n, "kernel", 2, 0, d->kernel) ||
                   tg_attr_per_axis(n, "stride", 2, 1, d->stride) ||
                   tg_attr_per_axis(n, "padding", 2, 0, d->pad) ||
                   tg_attr_per_axis(n, "dilation", 2, 1, d->dil)
               ? -1
               : 0;
}

TG_FAMILY_HANDLES(pool, 3);
int tg_cpu_pool_desc(const tg_node *n, int nsp, tgk_pool_desc *d)
{
    *d = (tgk_pool_desc){ .nsp = nsp,
                          .count_include_pad = tg_node_int(n, "count_include_pad", 1) != 0,
                          .channels_last = tg_node_int(n, "channels_last", 0) != 0 };
    if (n->op == TG_OP_ADAPTIVE_AVG_POOL)   /* the window follows from the sizes */
        return 0;
    if (tg_attr_per_axis(n, "kernel", nsp, 0, d->kernel) ||
        tg_attr_per_axis(n, "padding", nsp, 0, d->pad) ||
        tg_attr_per_axis(n, "dilation", nsp, 1, d->dil) ||
        tg_attr_per_axis(n, "stride", nsp, 0, d->stride))
        return -1;
    if (!tg_node_attr(n, "stride"))             /* torch: stride defaults to the kernel */
        for (int i = 0; i < nsp; i++)
            d->stride[i] = d->kernel[i];
    return 0;
}

TG_FAMILY_HANDLES(norm, 3);
int tg_cpu_norm_desc(const tg_node *n, int rank, tg_cpu_norm *d)
{
    int64_t a;
    *d = (tg_cpu_norm){ .eps = (float)tg_node_float(n, "eps", 1e-5),
                        .groups = tg_node_int(n, "groups", 1) };
    if (n->op == TG_OP_LAYER_NORM &&
        (tg_attr_get_int(n, "axis", -1, &a) || tg_axis_norm(a, rank, &d->axis)))
        return -1;
    return 0;
}

void tg_cpu_sdpa_desc(const tg_node *n, tgk_sdpa_desc *d)
{
    *d = (tgk_sdpa_desc){ .scale = (float)tg_node_float(n, "scale", 0),
                          .causal = tg_node_int(n, "causal", 0) != 0 };
}

/* the kernel's enums list the choices in the op's order */
#define SAME(a, b) _Static_assert((int)TG_##a == (int)TGK_##b, #a)
SAME(RESIZE_CUBIC, RESIZE_CUBIC);
SAME(COORD_HALF_PIXEL_SYMMETRIC, COORD_HALF_PIXEL_SYMMETRIC);
SAME(COORD_TF_CROP_AND_RESIZE, COORD_TF_CROP_AND_RESIZE);
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
    d->antialias = r.antialias;
    for (int i = 0; i < 2; i++)
        d->roi[i][0] = r.roi[i][0], d->roi[i][1] = r.roi[i][1];
    d->extrapolation = (float)r.extrapolation;
    return 0;
}

/* Attribute name's count ints into v. */
static int ints(const tg_node *n, const char *name, int count, int64_t *v)
{
    const int64_t *a;
    int k;
    if (tg_attr_get_ints(n, name, &a, &k) || k != count)
        return tg_err("attribute '%s' needs %d values", name, count);
    memcpy(v, a, sizeof *v * (size_t)count);
    return 0;
}

static int axis(const tg_node *n, int rank, int *ax)
{
    int64_t a;
    return tg_attr_get_int(n, "axis", 0, &a) || tg_axis_norm(a, rank, ax) ? -1 : 0;
}

TG_FAMILY_HANDLES(movement, 8);
int tg_cpu_movement_desc(const tg_node *n, int rank, tg_cpu_movement *d)
{
    tg_dim zero = tg_dim_const(0);
    *d = (tg_cpu_movement){ .start = zero, .step = tg_node_int(n, "step", 1),
                            .value = tg_node_float(n, "value", 0), .k = tg_node_int(n, "k", 0) };
    switch (n->op) {
    case TG_OP_PERMUTE:
        if (ints(n, "perm", rank, d->v))
            return -1;
        for (int i = 0; i < rank; i++)
            d->v[i] += d->v[i] < 0 ? rank : 0;
        return 0;
    case TG_OP_PAD:
        return ints(n, "pads", 2 * rank, d->v) || (d->mode = tg_pad_mode(n)) < 0 ? -1 : 0;
    case TG_OP_TILE:
        return ints(n, "repeats", rank, d->v);
    case TG_OP_SLICE:
        if (tg_attr_get_dim(n, "start", &zero, &d->start))
            return -1;
        return axis(n, rank, &d->axis);
    case TG_OP_CONCAT:
        return axis(n, rank, &d->axis);
    default:                /* expand; tril, triu: k */
        return 0;
    }
}

TG_FAMILY_HANDLES(index, 3);
int tg_cpu_index_desc(const tg_node *n, int rank, tg_cpu_index *d)
{
    d->reduce = n->op == TG_OP_INDEX_COPY ? tg_index_reduce_mode(n) : 0;
    return d->reduce < 0 ? -1 : axis(n, rank, &d->axis);
}

TG_FAMILY_HANDLES(gen, 2);
void tg_cpu_gen_desc(const tg_node *n, tg_cpu_gen *d)
{
    *d = (tg_cpu_gen){ .value = tg_node_float(n, "value", 0), .start = tg_node_int(n, "start", 0),
                       .step = tg_node_int(n, "step", 1) };
}

TG_FAMILY_HANDLES(quant, 2);
int tg_cpu_quant_desc(const tg_node *n, int rank, tg_cpu_quant *d)
{
    const tg_attr *sa = tg_node_attr(n, "scale");
    *d = (tg_cpu_quant){ .per_axis = sa && sa->kind == TG_ATTR_FLOATS, .nch = 1, .scale = sa,
                         .zero = tg_node_attr(n, "zero_point") };
    if (d->per_axis) {
        d->nch = sa->n;
        return axis(n, rank, &d->axis);
    }
    return 0;
}

float tg_cpu_quant_scale(const tg_cpu_quant *d, int64_t i)
{
    const tg_attr *a = d->scale;
    return !a ? 1.0f : a->kind == TG_ATTR_FLOATS ? (float)a->u.floats[i] : (float)a->u.f;
}

int32_t tg_cpu_quant_zero(const tg_cpu_quant *d, int64_t i)
{
    const tg_attr *a = d->zero;
    return !a ? 0 : a->kind == TG_ATTR_INTS ? (int32_t)a->u.ints[i] : (int32_t)a->u.i;
}
