/* Resizing the spatial dims of NCL or NCHW inputs (ONNX Resize, PyTorch's
 * upsample_* and interpolate). */
#include "resize.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "infer.h"

/* The index of s in names[0..n), or -1 with tg_err naming the choices. */
static int choice(const tg_node *n, const char *attr, const char *dflt,
                  const char *const *names, int count)
{
    const char *s;
    if (tg_attr_get_string(n, attr, dflt, &s))
        return -1;
    for (int i = 0; i < count; i++)
        if (!strcmp(s, names[i]))
            return i;
    char all[256] = "";
    for (int i = 0; i < count; i++)
        snprintf(all + strlen(all), sizeof all - strlen(all), "%s\"%s\"", i ? ", " : "", names[i]);
    return tg_err("attribute '%s' is \"%s\", expected one of %s", attr, s, all);
}

/* in the order of resize.h's enums */
static const char *const modes[] = {"nearest", "linear", "cubic"};
static const char *const coords[] = {"half_pixel", "pytorch_half_pixel", "align_corners",
                                     "asymmetric", "tf_half_pixel_for_nn",
                                     "half_pixel_symmetric", "tf_crop_and_resize"};
static const char *const nearests[] = {"round_prefer_floor", "round_prefer_ceil", "floor",
                                       "ceil"};

int tg_resize_read(const tg_node *n, int nsp, tg_resize *r)
{
    int mode = choice(n, "mode", "nearest", modes, 3),
        coord = choice(n, "coord", "half_pixel", coords, 7),
        near = choice(n, "nearest_mode", "round_prefer_floor", nearests, 4), excl, aa;
    if (mode < 0 || coord < 0 || near < 0 ||
        tg_attr_get_float(n, "cubic_a", -0.75, &r->cubic_a) ||
        tg_attr_get_flag(n, "exclude_outside", 0, &excl) ||
        tg_attr_get_flag(n, "antialias", 0, &aa) ||
        tg_attr_get_float(n, "extrapolation", 0, &r->extrapolation))
        return -1;
    r->mode = (tg_resize_mode)mode;
    r->coord = (tg_resize_coord)coord;
    r->nearest = (tg_resize_nearest)near;
    r->exclude_outside = excl;
    r->antialias = aa;
    r->scale[0] = r->scale[1] = 0;
    for (int i = 0; i < 2; i++)
        r->roi[i][0] = 0, r->roi[i][1] = 1;
    if (r->coord == TG_COORD_TF_CROP_AND_RESIZE) {
        const double *v;
        int nr = tg_node_attr(n, "roi") ? tg_node_floats(n, "roi", &v) : -1;
        if (nr != 2 * nsp && nr != 2 * (nsp + 2))
            return tg_err("tf_crop_and_resize needs attribute 'roi': %d floats, the starts then the "
                          "ends of the spatial axes (or %d, of every axis)", 2 * nsp, 2 * (nsp + 2));
        int all = nr / 2;
        if (nr == 2 * (nsp + 2)) {  /* an importer's run-time roi over all axes */
            for (int i = 0; i < 2; i++)
                if (v[i] != 0 || v[all + i] != 1)
                    return tg_err("the roi of the batch and channel axes must be 0 to 1");
        }
        for (int i = 0; i < nsp; i++)
            r->roi[i][0] = v[all - nsp + i], r->roi[i][1] = v[nr - nsp + i];
    }
    if (!tg_node_attr(n, "scales"))
        return 0;
    const double *s;
    int ns = tg_node_floats(n, "scales", &s);
    if (ns != nsp && ns != nsp + 2)
        return tg_err("attribute 'scales' must be %d floats, one per spatial axis (or %d, one "
                      "per axis)", nsp, nsp + 2);
    if (ns == nsp + 2) {        /* an importer's run-time scales over all axes */
        if (s[0] != 1 || s[1] != 1)
            return tg_err("scales %g and %g of the batch and channel axes must be 1", s[0], s[1]);
        s += 2;
    }
    for (int i = 0; i < nsp; i++) {
        if (!(s[i] > 0) || !isfinite(s[i]))
            return tg_err("scale %g must be positive and finite (spatial axis %d)", s[i], i);
        r->scale[i] = s[i];
    }
    return 0;
}

int tg_infer_resize(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    const tg_node *n = tg_infer_node(g, node);
    tg_resize r;
    tg_dim size[TG_MAX_RANK];
    int count;
    if (!x || tg_check_float(x, 0) || tg_check_rank(x, 0, 3, 4))
        return -1;
    int nsp = x->shape.rank - 2;
    if (tg_resize_read(n, nsp, &r) || tg_attr_dim_list(n, "size", TG_MAX_RANK, size, &count))
        return -1;
    if (count == nsp + 2) {     /* over all axes: the batch and channel ones kept */
        for (int i = 0; i < 2; i++)
            if (!tg_dim_eq(size[i], x->shape.d[i]))
                return tg_err("attribute 'size' changes axis %d (batch or channel)", i);
        memmove(size, size + 2, sizeof size[0] * (size_t)nsp);
    } else if (count != nsp)
        return tg_err("attribute 'size' has %d values for %d spatial axes", count, nsp);
    tg_shape s = x->shape;
    for (int i = 0; i < nsp; i++) {
        int64_t in, out;
        if (tg_dim_check_nonneg(size[i], "an output size"))
            return -1;
        if (tg_dim_is_const(size[i], &out) && out > 0 && tg_dim_is_const(s.d[2 + i], &in) &&
            in == 0)
            return tg_err("spatial axis %d: an empty input cannot be resized to %" PRId64,
                          i, out);
        s.d[2 + i] = size[i];
    }
    return tg_infer_set(g, node, x->dtype, &s);
}

static const char *const grid_modes[] = {"linear", "nearest", "cubic"};
static const char *const grid_pads[] = {"zeros", "border", "reflection"};

int tg_grid_sample_read(const tg_node *n, tg_grid_sample *r)
{
    int mode = choice(n, "mode", "linear", grid_modes, 3),
        pad = choice(n, "padding", "zeros", grid_pads, 3), align;
    if (mode < 0 || pad < 0 || tg_attr_get_flag(n, "align_corners", 0, &align))
        return -1;
    r->mode = (tg_grid_mode)mode;
    r->padding = (tg_grid_padding)pad;
    r->align_corners = align;
    return 0;
}

int tg_infer_grid_sample(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0), *grid = tg_infer_in(g, node, 1);
    tg_grid_sample r;
    if (!x || !grid || tg_check_float(x, 0) || tg_check_rank(x, 0, 3, 5) ||
        tg_check_same_dtype(grid, 1, x, 0) || tg_grid_sample_read(tg_infer_node(g, node), &r))
        return -1;
    int nsp = x->shape.rank - 2;
    int64_t last;
    if (grid->shape.rank != nsp + 2 || !tg_dim_is_const(grid->shape.d[nsp + 1], &last) ||
        last != nsp)
        return tg_err("input 1 (grid) must be [N, %d output dims, %d] for %d spatial dims",
                      nsp, nsp, nsp);
    int64_t gn, xn;     /* symbolic batch dims are compared when the node runs */
    if (tg_dim_is_const(grid->shape.d[0], &gn) && tg_dim_is_const(x->shape.d[0], &xn) && gn != xn)
        return tg_err("input 1 (grid) has batch dim %" PRId64 ", input 0 %" PRId64, gn, xn);
    tg_shape s = x->shape;
    for (int i = 0; i < nsp; i++)
        s.d[2 + i] = grid->shape.d[1 + i];
    return tg_infer_set(g, node, x->dtype, &s);
}
