/* ONNX neural-network operators that onnx_ops.c does not map: resizing,
 * attention. Each
 * maps onto existing tgraph ops; what those have no form for is refused by name. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* ---- Resize, Upsample ------------------------------------------------------------------- */

/* How large a resized dim read at run time may be. */
#define RESIZE_MAX_DIM ((int64_t)1 << 31)

typedef struct {
    int rank;
    int naxes;
    int64_t axes[TG_MAX_RANK];  /* the axes the scales / sizes input lists, in its order */
    int policy;                 /* keep_aspect_ratio_policy: 0 stretch, 1 not_larger, 2 not_smaller */
} resize_axes;

static int resize_axes_read(onnx_ctx *c, int rank, resize_axes *ra)
{
    int n;
    ra->rank = rank;
    if (attr_ints(c, "axes", TG_MAX_RANK, ra->axes, &n)) return -1;
    if (n < 0)
        for (n = 0; n < rank; n++) ra->axes[n] = n;
    for (int i = 0; i < n; i++) {
        int a = 0;
        if (axis_norm(ra->axes[i], rank, &a)) return -1;
        for (int j = 0; j < i; j++)
            if (ra->axes[j] == a) return tg_err("attribute axes repeats axis %d", a);
        ra->axes[i] = a;
    }
    ra->naxes = n;
    const char *p = onnx_attr_string(N(c), "keep_aspect_ratio_policy", "stretch");
    ra->policy = !strcmp(p, "stretch") ? 0 : !strcmp(p, "not_larger") ? 1 : !strcmp(p, "not_smaller") ? 2 : -1;
    if (ra->policy < 0) return tg_err("keep_aspect_ratio_policy '%s' is not one of stretch, not_larger, not_smaller", p);
    return 0;
}

/* Static scales and sizes over all axes from constant scales or sizes (one
 * per listed axis), as ONNX computes them: a size of floor(in * scale); from
 * sizes, a scale of size/in, or one scale for all listed axes with a
 * keep_aspect_ratio_policy (and sizes rounded half up). */
static int resize_static(onnx_ctx *c, const tg_shape *xs, const resize_axes *ra, const onnx_ent *e,
                         bool sizes, double *scale, tg_dim *size)
{
    double v[TG_MAX_RANK];
    int64_t iv[TG_MAX_RANK];
    int n;
    if (sizes ? onnx_int_list(e, TG_MAX_RANK, iv, &n) : 0) return -1;
    if (!sizes) {
        n = (int)tg_tensor_numel(e->rank, e->dims);
        if (n > TG_MAX_RANK) return tg_err("scales has %d values for rank %d", n, ra->rank);
        for (int i = 0; i < n; i++) v[i] = tg_load_f64(e->dtype, e->data, (size_t)i);
    }
    if (n != ra->naxes)
        return tg_err("%s has %d values for %d axes", sizes ? "sizes" : "scales", n, ra->naxes);
    for (int i = 0; i < ra->rank; i++) scale[i] = 1, size[i] = xs->d[i];
    double keep = ra->policy == 1 ? INFINITY : -INFINITY;
    for (int k = 0; k < n; k++) {
        int a = (int)ra->axes[k];
        int64_t in;
        bool known = tg_dim_is_const(xs->d[a], &in);
        if (sizes) {
            if (iv[k] < 0) return tg_err("sizes[%d] = %lld is negative", k, (long long)iv[k]);
            if (!known) return tg_err("axis %d is dynamic: a size needs its input size known", a);
            scale[a] = in ? (double)iv[k] / (double)in : 1;
            size[a] = tg_dim_const(iv[k]);
            keep = ra->policy == 1 ? fmin(keep, scale[a]) : fmax(keep, scale[a]);
            continue;
        }
        if (!(v[k] > 0) || !isfinite(v[k])) return tg_err("scales[%d] = %g is not positive and finite", k, v[k]);
        scale[a] = v[k];
        if (v[k] == 1) continue;
        if (!known) return tg_err("axis %d is dynamic: a scale other than 1 needs its input size known", a);
        size[a] = tg_dim_const((int64_t)floor((double)in * v[k]));
    }
    if (sizes && ra->policy)
        for (int k = 0; k < n; k++) {
            int a = (int)ra->axes[k];
            int64_t in;
            tg_dim_is_const(xs->d[a], &in);
            scale[a] = keep;
            size[a] = tg_dim_const((int64_t)(keep * (double)in + 0.5));
        }
    return 0;
}

/* A constant vector of the input's dims (f64), which must be static. */
static int dims_f64(onnx_ctx *c, const tg_shape *xs, const char *sfx)
{
    int64_t r = xs->rank, in;
    double *p = malloc(sizeof(double) * TG_MAX_RANK);
    if (!p) return tg_err("out of memory");
    for (int i = 0; i < xs->rank; i++) {
        if (!tg_dim_is_const(xs->d[i], &in)) {
            free(p);
            return tg_err("scales or sizes given at run time need a static input shape");
        }
        p[i] = (double)in;
    }
    return const_named(c, sfx, TG_F64, 1, &r, p);
}

/* Run-time vector v (one value per listed axis) over all axes, dflt where an
 * axis is not listed: an index_select of v followed by the defaults. */
static int resize_full_vec(onnx_ctx *c, int v, const resize_axes *ra, int dflt, const char *sfx)
{
    int64_t n = ra->rank, *idx = malloc(sizeof(int64_t) * TG_MAX_RANK), len;
    if (!idx) return tg_err("out of memory");
    tg_shape vs = shape_of(c, v);
    if (vs.rank != 1 || !tg_dim_is_const(vs.d[0], &len) || len != ra->naxes) {
        free(idx);
        return tg_err("'%s' must be a vector of %d values, one per axis", c->g->values[v].name, ra->naxes);
    }
    for (int i = 0; i < ra->rank; i++) idx[i] = len + i;
    for (int k = 0; k < ra->naxes; k++) idx[ra->axes[k]] = k;
    tg_attr ax = tg_attr_int("axis", 0);
    int cat_in[2] = {v, dflt};
    int all = dflt < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, sfx, 2, cat_in, 1, &ax);
    int in[2] = {all, const_named(c, "axes_index", TG_I64, 1, &n, idx)};
    return all < 0 || in[1] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, sfx, 2, in, 1, &ax);
}

static int cast_to(onnx_ctx *c, int x, tg_dtype dt, const char *sfx)
{
    tg_attr a = tg_attr_dtype("dtype", dt);
    return x < 0 ? -1 : unary_on(c, TG_OP_CAST, sfx, x, 1, &a);
}

/* Scales and sizes over all axes as run-time values (f64 and i64), from a
 * run-time scales or sizes input e: computed by graph nodes as resize_static
 * computes them. */
static int resize_runtime(onnx_ctx *c, const tg_shape *xs, const resize_axes *ra, int e, bool sizes,
                          int *scale, int *size)
{
    int in = dims_f64(c, xs, "input_dims");
    int64_t r = ra->rank;
    if (in < 0) return -1;
    double *ones = malloc(sizeof(double) * TG_MAX_RANK);
    if (!ones) return tg_err("out of memory");
    for (int i = 0; i < ra->rank; i++) ones[i] = 1;
    int one = const_named(c, "unit_scales", TG_F64, 1, &r, ones);
    if (!sizes) {
        *scale = resize_full_vec(c, cast_to(c, e, TG_F64, "scales_f64"), ra, one, "scales");
        int f = *scale < 0 ? -1 : unary_on(c, TG_OP_FLOOR, "size_f64", binary_on(c, TG_OP_MUL, "scaled", *scale, in), 0, NULL);
        *size = cast_to(c, f, TG_I64, "size");
        return *size < 0 ? -1 : 0;
    }
    int full = resize_full_vec(c, cast_to(c, e, TG_F64, "sizes_f64"), ra, in, "sizes");
    int ratio = full < 0 ? -1 : binary_on(c, TG_OP_DIV, "ratio", full, in);
    if (!ra->policy) {
        *scale = ratio;
        *size = cast_to(c, full, TG_I64, "size");
        return *size < 0 ? -1 : 0;
    }
    /* one scale for the listed axes: the other axes' ratios (1) left out by +-inf */
    bool *listed = calloc(TG_MAX_RANK, sizeof(bool));
    if (!listed) return tg_err("out of memory");
    for (int k = 0; k < ra->naxes; k++) listed[ra->axes[k]] = true;
    int lv = const_named(c, "listed", TG_BOOL, 1, &r, listed);
    double skip = ra->policy == 1 ? INFINITY : -INFINITY;
    int only = where_on(c, "listed_ratio", lv, ratio, scalar_const(c, "skip", TG_F64, skip));
    int64_t ax = 0;
    tg_attr ra_[2] = {tg_attr_ints("axes", 1, &ax), tg_attr_int("keepdim", 1)};
    int keep = only < 0 ? -1 : unary_on(c, ra->policy == 1 ? TG_OP_REDUCE_MIN : TG_OP_REDUCE_MAX, "keep_scale", only, 2, ra_);
    *scale = where_on(c, "scales", lv, keep, one);
    int half = *scale < 0 ? -1 : binary_on(c, TG_OP_ADD, "size_half", binary_on(c, TG_OP_MUL, "scaled", *scale, in),
                                           scalar_const(c, "half", TG_F64, 0.5));
    *size = cast_to(c, half < 0 ? -1 : unary_on(c, TG_OP_FLOOR, "size_f64", half, 0, NULL), TG_I64, "size");
    return *size < 0 ? -1 : 0;
}

/* The resize op's string attributes from the ONNX node's (copied into s:
 * onnx_attr_string's buffer holds one); legacy (Upsample, Resize-10) is
 * asymmetric with floor, which is what their nearest repeats. */
static int resize_modes(onnx_ctx *c, bool legacy, char (*s)[64], tg_attr *a, int *na)
{
    char *mode = s[0], *coord = s[1], *near = s[2];
    snprintf(mode, 64, "%s", onnx_attr_string(N(c), "mode", "nearest"));
    snprintf(coord, 64, "%s", legacy ? "asymmetric" : onnx_attr_string(N(c), "coordinate_transformation_mode", "half_pixel"));
    snprintf(near, 64, "%s", legacy ? "floor" : onnx_attr_string(N(c), "nearest_mode", "round_prefer_floor"));
    if (!strcmp(mode, "bilinear")) snprintf(mode, 64, "linear");
    if (strcmp(mode, "nearest") && strcmp(mode, "linear") && strcmp(mode, "cubic"))
        return tg_err("mode '%s' is not one of nearest, linear, cubic", mode);
    a[(*na)++] = tg_attr_string("mode", mode);
    a[(*na)++] = tg_attr_string("coord", coord);
    a[(*na)++] = tg_attr_string("nearest_mode", near);
    a[(*na)++] = tg_attr_float("cubic_a", onnx_attr_float(N(c), "cubic_coeff_a", -0.75));
    a[(*na)++] = tg_attr_int("exclude_outside", onnx_attr_int(N(c), "exclude_outside", 0));
    a[(*na)++] = tg_attr_int("antialias", legacy ? 0 : onnx_attr_int(N(c), "antialias", 0));
    a[(*na)++] = tg_attr_float("extrapolation", onnx_attr_float(N(c), "extrapolation_value", 0));
    return 0;
}

/* tf_crop_and_resize's region of interest over all axes, [starts..., ends...]
 * (0 and 1 where an axis is not listed): constant into roi (*rv -1), else as a
 * run-time f64 vector *rv. */
static int resize_roi(onnx_ctx *c, const resize_axes *ra, double *roi, int *rv)
{
    onnx_ent *e = in_req(c, 1);
    if (!e) return tg_err("tf_crop_and_resize needs the roi input");
    for (int i = 0; i < ra->rank; i++) roi[i] = 0, roi[ra->rank + i] = 1;
    *rv = -1;
    if (e->kind == ONNX_ENT_CONST) {
        if (tg_tensor_numel(e->rank, e->dims) != 2 * ra->naxes)
            return tg_err("roi has %lld values for %d axes", (long long)tg_tensor_numel(e->rank, e->dims), ra->naxes);
        for (int k = 0; k < ra->naxes; k++) {
            roi[ra->axes[k]] = tg_load_f64(e->dtype, e->data, (size_t)k);
            roi[ra->rank + ra->axes[k]] = tg_load_f64(e->dtype, e->data, (size_t)(ra->naxes + k));
        }
        return 0;
    }
    int v = cast_to(c, onnx_value(c, e), TG_F64, "roi_f64");
    int64_t r = ra->rank;
    double *z = malloc(sizeof(double) * TG_MAX_RANK), *o = malloc(sizeof(double) * TG_MAX_RANK);
    if (!z || !o) return free(z), free(o), tg_err("out of memory");
    for (int i = 0; i < ra->rank; i++) z[i] = 0, o[i] = 1;
    int zv = const_named(c, "roi_starts_default", TG_F64, 1, &r, z), ov = const_named(c, "roi_ends_default", TG_F64, 1, &r, o);
    int st = resize_full_vec(c, slice_range(c, v, 0, 0, ra->naxes, "roi_given_starts"), ra, zv, "roi_starts");
    int en = resize_full_vec(c, slice_range(c, v, 0, ra->naxes, 2 * ra->naxes, "roi_given_ends"), ra, ov, "roi_ends");
    tg_attr ax = tg_attr_int("axis", 0);
    int in[2] = {st, en};
    *rv = st < 0 || en < 0 ? -1 : onnx_add(c, TG_OP_CONCAT, "roi", 2, in, 1, &ax);
    return *rv < 0 ? -1 : 0;
}

/* Static resize of x: the resized axes must be the last one or two; other
 * leading layouts than [N, C, sp...] are reshaped to [1, rest, sp...]. */
static int resize_static_on(onnx_ctx *c, int x, const double *scale, const tg_dim *size, tg_attr *a, int na)
{
    tg_shape xs = shape_of(c, x);
    int first = xs.rank;                        /* first resized axis */
    for (int i = 0; i < xs.rank; i++)
        if (scale[i] != 1 || !tg_dim_eq(size[i], xs.d[i])) {
            first = i;
            break;
        }
    if (first == xs.rank) return x;             /* nothing to resize */
    if (xs.rank - first > 2)
        return tg_err("resizing %d axes (%d..%d) is not supported: at most the last two", xs.rank - first, first,
                      xs.rank - 1);
    int nsp = xs.rank - first, y = x;
    if (xs.rank >= 3 && first >= 2 && xs.rank <= 4) nsp = xs.rank - 2;
    bool flat = xs.rank - nsp != 2;
    if (flat) {                                 /* [1, prod(leading), sp...] */
        tg_dim d[4] = {tg_dim_const(1), tg_dim_const(1)};
        for (int i = 0; i < xs.rank - nsp; i++)
            if (tg_dim_mul(d[1], xs.d[i], &d[1])) return -1;
        for (int i = 0; i < nsp; i++) d[2 + i] = xs.d[xs.rank - nsp + i];
        tg_attr r = tg_attr_dims("shape", 2 + nsp, d);
        if ((y = unary_on(c, TG_OP_RESHAPE, "nc", x, 1, &r)) < 0) return -1;
    }
    a[na++] = tg_attr_dims("size", nsp, size + xs.rank - nsp);
    a[na++] = tg_attr_floats("scales", nsp, scale + xs.rank - nsp);
    y = unary_on(c, TG_OP_RESIZE, flat ? "resize" : NULL, y, na, a);
    if (!flat || y < 0) return y;
    tg_dim back[TG_MAX_RANK];
    for (int i = 0; i < xs.rank; i++) back[i] = size[i];
    tg_attr r = tg_attr_dims("shape", xs.rank, back);
    return unary_on(c, TG_OP_RESHAPE, NULL, y, 1, &r);
}

/* Resize (opsets 10-19) and Upsample (7-9): the resize op on the last one or
 * two axes. Scales or sizes given at run time make the resized dims data
 * symbols and the op's size and scales run-time attributes over all axes,
 * whose batch and channel entries the op checks are left as they are. */
static int map_resize(onnx_ctx *c, const onnx_op_map *m)
{
    bool upsample = m->op == TG_OP_NONE, legacy = upsample || c->opset < 11;
    int x = in_val(c, 0), na = 0;
    tg_attr a[12];
    char strs[3][64];
    if (x < 0 || resize_modes(c, legacy, strs, a, &na)) return -1;
    tg_shape xs = shape_of(c, x);
    resize_axes ra;
    if (resize_axes_read(c, xs.rank, &ra)) return -1;
    onnx_ent *sc = legacy ? in_opt(c, 1) : in_opt(c, 2), *sz = legacy ? NULL : in_opt(c, 3);
    const Onnx__AttributeProto *sattr = upsample ? onnx_attr(N(c), "scales") : NULL;
    double scale[TG_MAX_RANK];
    tg_dim size[TG_MAX_RANK];
    if (sattr) {                                /* Upsample-7 */
        if ((int)sattr->n_floats != xs.rank) return tg_err("attribute scales must have one value per axis");
        for (int i = 0; i < xs.rank; i++) scale[i] = sattr->floats[i];
        int64_t n = xs.rank;
        float *p = malloc(sizeof(float) * TG_MAX_RANK);
        if (!p) return tg_err("out of memory");
        memcpy(p, sattr->floats, sizeof(float) * (size_t)n);
        onnx_ent tmp = {.kind = ONNX_ENT_CONST, .dtype = TG_F32, .rank = 1, .dims = {n}, .data = p};
        int rc = resize_static(c, &xs, &ra, &tmp, false, scale, size);
        free(p);
        return rc ? -1 : def_out(c, 0, resize_static_on(c, x, scale, size, a, na));
    }
    if (sc && tg_tensor_numel(sc->rank, sc->dims) == 0 && sc->kind == ONNX_ENT_CONST) sc = NULL;
    if (!sc == !sz) return tg_err("exactly one of scales and sizes must be given");
    onnx_ent *e = sc ? sc : sz;
    double roi[2 * TG_MAX_RANK];
    int rv = -1;
    bool crop = !strcmp(strs[1], "tf_crop_and_resize");
    if (crop) {                 /* the op over every axis, the region of interest as an attribute */
        if (xs.rank != 3 && xs.rank != 4) return tg_err("tf_crop_and_resize needs a 3-D or 4-D input");
        if (sc) return tg_err("tf_crop_and_resize with scales is not supported (give sizes)");
        if (resize_roi(c, &ra, roi, &rv)) return -1;
        if (rv < 0 && e->kind == ONNX_ENT_CONST) {
            if (resize_static(c, &xs, &ra, e, true, scale, size)) return -1;
            a[na++] = tg_attr_dims("size", xs.rank, size);
            a[na++] = tg_attr_floats("scales", xs.rank, scale);
            a[na++] = tg_attr_floats("roi", 2 * xs.rank, roi);
            return def_out(c, 0, unary_on(c, TG_OP_RESIZE, NULL, x, na, a));
        }
        if (rv < 0) {
            int64_t r2 = 2 * xs.rank;
            double *p = malloc(sizeof roi);
            if (!p) return tg_err("out of memory");
            memcpy(p, roi, sizeof roi);
            if ((rv = const_named(c, "roi", TG_F64, 1, &r2, p)) < 0) return -1;
        }
    }
    if (e->kind != ONNX_ENT_VALUE && !crop) {
        if (e->kind == ONNX_ENT_SYMS) {
            tg_dim d[TG_MAX_RANK];
            int n;
            int64_t *v = malloc(sizeof(int64_t) * TG_MAX_RANK), dn = 0;
            if (!v || onnx_dim_list(c, e, TG_MAX_RANK, d, &n)) return free(v), -1;
            if (n != ra.naxes) return free(v), tg_err("sizes has %d values for %d axes", n, ra.naxes);
            /* A symbolic size equal to its axis' input dim (torch.onnx's
             * Concat(Shape(x)[:2], [H, W])) leaves that axis as it is: drop
             * it from the axes, unless a policy scales all listed axes alike. */
            int keep = 0;
            for (int i = 0; i < n; i++) {
                if (tg_dim_is_const(d[i], &v[dn])) {
                    ra.axes[keep++] = ra.axes[i], dn++;
                    continue;
                }
                if (ra.policy || !tg_dim_eq(d[i], xs.d[ra.axes[i]]))
                    return free(v), tg_err("sizes must be known at import or given at run time as data");
            }
            ra.naxes = keep;
            onnx_ent tmp = {.kind = ONNX_ENT_CONST, .dtype = TG_I64, .rank = 1, .dims = {dn}, .data = v};
            int rc = resize_static(c, &xs, &ra, &tmp, true, scale, size);
            free(v);
            if (rc) return -1;
        } else if (resize_static(c, &xs, &ra, e, !sc, scale, size))
            return -1;
        return def_out(c, 0, resize_static_on(c, x, scale, size, a, na));
    }
    if (xs.rank != 3 && xs.rank != 4) return tg_err("scales or sizes given at run time need a 3-D or 4-D input");
    int rs = -1, rz = -1, ev = onnx_value(c, e);
    if (ev < 0 || resize_runtime(c, &xs, &ra, ev, !sc, &rs, &rz)) return -1;
    tg_shape ys = xs;
    for (int i = 2; i < xs.rank; i++)
        if (data_dim(c, RESIZE_MAX_DIM, &ys.d[i])) return -1;
    a[na++] = tg_attr_input("size", 1, TG_ATTR_DIMS);
    a[na++] = tg_attr_input("scales", 2, TG_ATTR_FLOATS);
    if (crop) a[na++] = tg_attr_input("roi", 3, TG_ATTR_FLOATS);
    int in[4] = {x, rz, rs, rv};
    return def_out(c, 0, onnx_add_dynamic(c, TG_OP_RESIZE, NULL, crop ? 4 : 3, in, na, a, dtype_of(c, x), &ys));
}

/* ---- attention ------------------------------------------------------------------------------ */

/* [B, S, H*E] -> [B, H, S, E] (3-D Attention inputs). */
static int split_heads(onnx_ctx *c, int x, int64_t heads, const char *sfx)
{
    tg_shape s = shape_of(c, x);
    int64_t hidden;
    if (!tg_dim_is_const(s.d[2], &hidden) || heads < 1 || hidden % heads)
        return tg_err("hidden size of input '%s' is not a multiple of %lld heads",
                      c->g->values[x].name, (long long)heads);
    tg_dim d[4] = {s.d[0], s.d[1], tg_dim_const(heads), tg_dim_const(hidden / heads)};
    int64_t perm[4] = {0, 2, 1, 3};
    tg_attr r = tg_attr_dims("shape", 4, d), p = tg_attr_ints("perm", 4, perm);
    int y = unary_on(c, TG_OP_RESHAPE, sfx, x, 1, &r);
    return y < 0 ? -1 : unary_on(c, TG_OP_PERMUTE, sfx, y, 1, &p);
}

/* The mask Attention applies when is_causal is set together with attn_mask:
 * key j is seen from query i when j <= i (no cache: top-left aligned), so a
 * bool mask is and-ed with the lower triangle, an additive one gets -inf above it. */
static int causal_mask(onnx_ctx *c, int mask, tg_dim l, tg_dim s)
{
    tg_dim d[2] = {l, s};
    tg_attr f[3] = {tg_attr_dims("shape", 2, d), tg_attr_float("value", 1), tg_attr_dtype("dtype", TG_F32)};
    tg_attr k = tg_attr_int("k", 0);
    int ones = onnx_add(c, TG_OP_FULL, "causal_ones", 0, NULL, 3, f);
    int tri = ones < 0 ? -1 : unary_on(c, TG_OP_TRIL, "causal_tri", ones, 1, &k);
    int keep = tri < 0 ? -1 : binary_on(c, TG_OP_GT, "causal", tri, scalar_const(c, "zero", TG_F32, 0));
    if (keep < 0) return -1;
    tg_dtype dt = dtype_of(c, mask);
    if (dt == TG_BOOL) return binary_on(c, TG_OP_LOGICAL_AND, "mask", mask, keep);
    int in[3] = {keep, mask, scalar_const(c, "neg_inf", dt, -INFINITY)};
    return in[2] < 0 ? -1 : onnx_add(c, TG_OP_WHERE, "mask", 3, in, 0, NULL);
}

static int reshape_dims(onnx_ctx *c, int x, int n, const tg_dim *d, const char *sfx)
{
    tg_attr a = tg_attr_dims("shape", n, d);
    return x < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, sfx, x, 1, &a);
}

/* [0, n) as int64 of shape [n] reshaped to shape (n at position at of rank). */
static int positions(onnx_ctx *c, tg_dim n, int rank, int at, const char *sfx)
{
    tg_attr a[2] = {tg_attr_dims("end", 1, &n), tg_attr_dtype("dtype", TG_I64)};
    tg_dim d[4] = {tg_dim_const(1), tg_dim_const(1), tg_dim_const(1), tg_dim_const(1)};
    d[at] = n;
    return reshape_dims(c, onnx_add(c, TG_OP_ARANGE, sfx, 0, NULL, 2, a), rank, d, sfx);
}

static int and_on(onnx_ctx *c, int a, int b, const char *sfx)
{
    return a < 0 ? b : b < 0 ? a : binary_on(c, TG_OP_LOGICAL_AND, sfx, a, b);
}

/* Where key j may be seen from query i, as ONNX's Attention decides it, or -2
 * when every key may: the causal rule j <= i + offset and the window
 * i + offset - left <= j <= i + offset + right, where offset is the past
 * length, or per batch nonpad_kv_seqlen - L (nonpad >= 0: [B] int64, which
 * also hides keys j >= nonpad_kv_seqlen). Shape [L, S] or [B, 1, L, S]. */
static int attention_allowed(onnx_ctx *c, tg_dim l, tg_dim s, int64_t past, int nonpad, bool causal,
                             int64_t left, int64_t right)
{
    if (!causal && left < 0 && right < 0 && nonpad < 0) return -2;
    int rank = nonpad >= 0 ? 4 : 2, allowed = -1;
    int i = positions(c, l, rank, rank - 2, "query_pos"), j = positions(c, s, rank, rank - 1, "key_pos");
    int off = scalar_const(c, "past_len", TG_I64, (double)past), seen = -1;
    if (nonpad >= 0) {
        tg_dim d[4] = {shape_of(c, nonpad).d[0], tg_dim_const(1), tg_dim_const(1), tg_dim_const(1)};
        int64_t lv;
        if (!tg_dim_is_const(l, &lv)) return tg_err("nonpad_kv_seqlen needs a static query length");
        int np = reshape_dims(c, cast_to(c, nonpad, TG_I64, "nonpad_i64"), 4, d, "nonpad");
        seen = np < 0 ? -1 : binary_on(c, TG_OP_LT, "key_valid", j, np);
        off = seen < 0 ? -1 : binary_on(c, TG_OP_SUB, "offset", np, scalar_const(c, "query_len", TG_I64, (double)lv));
        allowed = seen;
    }
    int diff = i < 0 || j < 0 || off < 0 ? -1 : binary_on(c, TG_OP_SUB, "distance", binary_on(c, TG_OP_ADD, "query_abs", i, off), j);
    if (diff < 0) return -1;
    if (causal) allowed = and_on(c, allowed, binary_on(c, TG_OP_GE, "causal", diff, scalar_const(c, "zero", TG_I64, 0)), "causal_seen");
    if (left >= 0)
        allowed = and_on(c, allowed, binary_on(c, TG_OP_LE, "left_window", diff, scalar_const(c, "left", TG_I64, (double)left)), "left_seen");
    if (right >= 0)
        allowed = and_on(c, allowed, binary_on(c, TG_OP_GE, "right_window", diff, scalar_const(c, "right", TG_I64, -(double)right)), "right_seen");
    return allowed;
}

/* [B, H, S, E] -> [B, H*r, S, E], each head repeated r times in place (GQA). */
static int repeat_heads(onnx_ctx *c, int x, int64_t r, const char *sfx)
{
    tg_shape s = shape_of(c, x);
    int64_t h;
    if (!tg_dim_is_const(s.d[1], &h)) return tg_err("dynamic head count");
    tg_dim d5[5] = {s.d[0], s.d[1], tg_dim_const(1), s.d[2], s.d[3]};
    int y = reshape_dims(c, x, 5, d5, sfx);
    d5[2] = tg_dim_const(r);
    tg_attr e = tg_attr_dims("shape", 5, d5);
    y = y < 0 ? -1 : unary_on(c, TG_OP_EXPAND, sfx, y, 1, &e);
    tg_dim d4[4] = {s.d[0], tg_dim_const(h * r), s.d[2], s.d[3]};
    return reshape_dims(c, y, 4, d4, sfx);
}

/* Attention written out (past key/value, softcap, windows, nonpad_kv_seqlen,
 * qk_matmul_output): as onnx's reference: scores of q and k each scaled by
 * sqrt(scale), softcap, plus the bias (mask, causal, windows, padding),
 * softmax (a row with no key seen gives 0), times v. q, k, v are 4-D, k and v
 * with the past already prepended; mask -1 or padded to the key length. */
static int attention_explicit(onnx_ctx *c, int q, int k, int v, int mask, int64_t past, int nonpad)
{
    tg_shape qs = shape_of(c, q), ks = shape_of(c, k);
    tg_dtype dt = dtype_of(c, q);
    int64_t e, hq, hk;
    if (!tg_dim_is_const(qs.d[3], &e) || !tg_dim_is_const(qs.d[1], &hq) || !tg_dim_is_const(ks.d[1], &hk))
        return tg_err("dynamic head count or size");
    if (hq != hk && (hk < 1 || hq % hk)) return tg_err("%lld query heads are not a multiple of %lld key heads", (long long)hq, (long long)hk);
    if (hq != hk && ((k = repeat_heads(c, k, hq / hk, "k_repeat")) < 0 || (v = repeat_heads(c, v, hq / hk, "v_repeat")) < 0))
        return -1;
    double scale = onnx_attr_float(N(c), "scale", 1 / sqrt((double)e));
    int sq = scalar_const(c, "scale_sqrt", dt, sqrt(scale));
    int64_t perm[4] = {0, 1, 3, 2};
    tg_attr p = tg_attr_ints("perm", 4, perm);
    int kt = unary_on(c, TG_OP_PERMUTE, "k_t", k, 1, &p);
    int scores = kt < 0 || sq < 0 ? -1 : binary_on(c, TG_OP_MATMUL, "scores", binary_on(c, TG_OP_MUL, "q_scaled", q, sq),
                                                   binary_on(c, TG_OP_MUL, "k_scaled", kt, sq));
    double cap = onnx_attr_float(N(c), "softcap", 0);
    if (cap > 0) {
        int cv = scalar_const(c, "softcap", dt, cap);
        int t = scores < 0 || cv < 0 ? -1 : unary_on(c, TG_OP_TANH, "capped_tanh", binary_on(c, TG_OP_DIV, "capped_in", scores, cv), 0, NULL);
        scores = t < 0 ? -1 : binary_on(c, TG_OP_MUL, "capped", t, cv);
    }
    if (scores < 0) return -1;
    int neg = scalar_const(c, "neg_inf", dt, -INFINITY), zero = scalar_const(c, "zero_bias", dt, 0), bias = -1;
    if (mask >= 0) bias = dtype_of(c, mask) == TG_BOOL ? where_on(c, "mask_bias", mask, zero, neg) : mask;
    int allowed = attention_allowed(c, qs.d[2], ks.d[2], past, nonpad, onnx_attr_int(N(c), "is_causal", 0),
                                    onnx_attr_int(N(c), "left_window_size", -1), onnx_attr_int(N(c), "right_window_size", -1));
    if (allowed == -1 || (mask >= 0 && bias < 0)) return -1;
    if (allowed >= 0) {
        int ab = where_on(c, "seen_bias", allowed, zero, neg);
        bias = bias < 0 ? ab : ab < 0 ? -1 : binary_on(c, TG_OP_ADD, "bias", bias, ab);
        if (bias < 0) return -1;
    }
    int biased = bias < 0 ? scores : binary_on(c, TG_OP_ADD, "biased", scores, bias);
    tg_dtype sdt = dt;
    const Onnx__AttributeProto *sp = onnx_attr(N(c), "softmax_precision");
    if (sp && (sdt = onnx_elem_dtype((int32_t)sp->i)) != TG_F32 && sdt != TG_F16 && sdt != TG_F64 && sdt != TG_BF16)
        return tg_err("softmax_precision %lld is not a floating-point type", (long long)sp->i);
    tg_attr ax = tg_attr_int("axis", -1);
    int pr = sdt == dt ? biased : cast_to(c, biased, sdt, "softmax_in");
    pr = pr < 0 ? -1 : unary_on(c, TG_OP_SOFTMAX, "probs", pr, 1, &ax);
    if (sdt != dt) pr = cast_to(c, pr, dt, "probs_cast");
    if (bias >= 0) {                            /* a row with no key seen: 0 */
        int64_t last = -1;
        tg_attr ra[2] = {tg_attr_ints("axes", 1, &last), tg_attr_int("keepdim", 1)};
        int mx = unary_on(c, TG_OP_REDUCE_MAX, "bias_max", bias, 2, ra);
        int none = mx < 0 ? -1 : binary_on(c, TG_OP_EQ, "none_seen", mx, neg);
        pr = pr < 0 ? -1 : where_on(c, "probs_seen", none, zero, pr);
    }
    if (pr < 0) return -1;
    if (N(c)->n_output > 3 && *N(c)->output[3]) {
        int64_t mode = onnx_attr_int(N(c), "qk_matmul_output_mode", 0);
        if (mode < 0 || mode > 3) return tg_err("qk_matmul_output_mode %lld is not 0 to 3", (long long)mode);
        if (def_out(c, 3, mode == 3 ? pr : mode == 2 ? biased : scores)) return -1;
    }
    return binary_on(c, TG_OP_MATMUL, "heads_out", pr, v);
}

/* Attention (opsets 23-25): scaled dot-product attention over 4-D inputs, or
 * 3-D ones split into heads; a mask shorter than the keys is padded as ONNX
 * does (false, -inf). The sdpa op runs it unless it needs what sdpa has no
 * form for (a KV cache, softcap, windows, nonpad_kv_seqlen, the scores as an
 * output): then it is written out. */
static int map_attention(onnx_ctx *c, const onnx_op_map *m)
{
    int in[4] = {in_val(c, 0), in_val(c, 1), in_val(c, 2), in_val_opt(c, 3)};
    int pk = in_val_opt(c, 4), pv = in_val_opt(c, 5), nonpad = in_val_opt(c, 6);
    if (in[0] < 0 || in[1] < 0 || in[2] < 0 || (in[3] < 0 && in_opt(c, 3)) || (pk < 0 && in_opt(c, 4)) ||
        (pv < 0 && in_opt(c, 5)) || (nonpad < 0 && in_opt(c, 6)))
        return -1;
    if ((pk < 0) != (pv < 0)) return tg_err("past_key and past_value must be given together");
    if (pk >= 0 && nonpad >= 0) return tg_err("nonpad_kv_seqlen cannot be combined with past_key/past_value");
    tg_shape q = shape_of(c, in[0]);
    int rank = q.rank;
    if (rank == 3) {
        int64_t qh = onnx_attr_int(N(c), "q_num_heads", 0), kh = onnx_attr_int(N(c), "kv_num_heads", 0);
        if ((in[0] = split_heads(c, in[0], qh, "q_heads")) < 0 || (in[1] = split_heads(c, in[1], kh, "k_heads")) < 0 ||
            (in[2] = split_heads(c, in[2], kh, "v_heads")) < 0)
            return -1;
        q = shape_of(c, in[0]);
    }
    if (q.rank != 4 || shape_of(c, in[1]).rank != 4 || shape_of(c, in[2]).rank != 4)
        return tg_err("inputs must be 4-D [batch, heads, seq, dim] or 3-D [batch, seq, hidden]");
    int64_t past = 0;
    if (pk >= 0) {                              /* the cache: past then new keys */
        tg_attr ax = tg_attr_int("axis", 2);
        int kin[2] = {pk, in[1]}, vin[2] = {pv, in[2]};
        if (!tg_dim_is_const(shape_of(c, pk).d[2], &past)) return tg_err("past_key needs a static length");
        if ((in[1] = onnx_add(c, TG_OP_CONCAT, "present_key", 2, kin, 1, &ax)) < 0 ||
            (in[2] = onnx_add(c, TG_OP_CONCAT, "present_value", 2, vin, 1, &ax)) < 0)
            return -1;
    }
    if (def_out(c, 1, in[1]) || def_out(c, 2, in[2])) return -1;
    tg_shape k = shape_of(c, in[1]);
    if (in[3] >= 0) {
        tg_shape ms = shape_of(c, in[3]);
        int64_t mlen, klen;
        if (ms.rank < 1) return tg_err("attn_mask must have at least one dim");
        if (!tg_dim_eq(ms.d[ms.rank - 1], k.d[2])) {
            if (!tg_dim_is_const(ms.d[ms.rank - 1], &mlen) || !tg_dim_is_const(k.d[2], &klen) || mlen > klen)
                return tg_err("attn_mask's last dim does not match the key length");
            int64_t pads[2 * TG_MAX_RANK] = {0};
            pads[2 * ms.rank - 1] = klen - mlen;
            bool b = dtype_of(c, in[3]) == TG_BOOL;
            tg_attr pa[2] = {tg_attr_ints("pads", 2 * ms.rank, pads), tg_attr_float("value", b ? 0 : -INFINITY)};
            if ((in[3] = unary_on(c, TG_OP_PAD, "mask_pad", in[3], 2, pa)) < 0) return -1;
        }
    }
    bool causal = onnx_attr_int(N(c), "is_causal", 0), qk_out = N(c)->n_output > 3 && *N(c)->output[3];
    int y;
    if (pk >= 0 || nonpad >= 0 || qk_out || onnx_attr_float(N(c), "softcap", 0) != 0 ||
        onnx_attr_int(N(c), "left_window_size", -1) != -1 || onnx_attr_int(N(c), "right_window_size", -1) != -1) {
        y = attention_explicit(c, in[0], in[1], in[2], in[3], past, nonpad);
    } else {
        if (in[3] >= 0 && causal && (in[3] = causal_mask(c, in[3], q.d[2], k.d[2])) < 0) return -1;
        tg_attr a[3] = {tg_attr_int("causal", causal && in[3] < 0),
                        tg_attr_float("scale", onnx_attr_float(N(c), "scale", 0)),
                        tg_attr_int("gqa", !tg_dim_eq(q.d[1], k.d[1]))};
        y = onnx_add(c, TG_OP_SDPA, rank == 3 ? "heads" : NULL, in[3] < 0 ? 3 : 4, in, 3, a);
    }
    if (y < 0 || rank == 4) return def_out(c, 0, y);
    int64_t perm[4] = {0, 2, 1, 3}, e, h;        /* back to [B, S, H*Ev] */
    tg_shape ys = shape_of(c, y);
    tg_attr p = tg_attr_ints("perm", 4, perm);
    if (!tg_dim_is_const(ys.d[3], &e) || !tg_dim_is_const(ys.d[1], &h)) return tg_err("dynamic head count or size");
    tg_dim d[3] = {ys.d[0], ys.d[2], tg_dim_const(e * h)};
    y = unary_on(c, TG_OP_PERMUTE, "merge", y, 1, &p);
    return def_out(c, 0, reshape_dims(c, y, 3, d, NULL));
}

/* ---- the table ------------------------------------------------------------------------------ */

const onnx_op_map onnx_nn_ops[] = {
    {"Resize", map_resize, TG_OP_RESIZE}, {"Upsample", map_resize, TG_OP_NONE},
    {"Attention", map_attention, 0},
};
const int onnx_nn_nops = (int)(sizeof onnx_nn_ops / sizeof onnx_nn_ops[0]);
