/* Quantize and dequantize: affine maps q = round(x / scale) + zero_point, per
 * tensor (scalar scale) or per channel along "axis" (one scale per index). */
#include "infer.h"

#include <inttypes.h>
#include <math.h>

/* Representable range of a quantized dtype; false for dtypes that are not one. */
static bool quant_range(tg_dtype t, int64_t *lo, int64_t *hi)
{
    switch (t) {
    case TG_I8: *lo = INT8_MIN; *hi = INT8_MAX; return true;
    case TG_U8: *lo = 0; *hi = UINT8_MAX; return true;
    case TG_I32: *lo = INT32_MIN; *hi = INT32_MAX; return true;
    /* fp8 quantization is scale-only: zero point 0 */
    case TG_F8E4M3: case TG_F8E5M2: *lo = 0; *hi = 0; return true;
    default: *lo = 0; *hi = 0; return false;
    }
}

/* Check scale / zero_point / axis against x and the quantized dtype q. */
static int check_qparams(const tg_node *n, const tg_value *x, tg_dtype q)
{
    const tg_attr *sa = tg_node_attr(n, "scale"), *za = tg_node_attr(n, "zero_point");
    int64_t lo, hi;
    int count = 1;
    quant_range(q, &lo, &hi);
    if (!sa)
        return tg_err("attribute 'scale' is required");
    if (sa->kind == TG_ATTR_FLOATS) {
        int64_t a, c;
        int ax;
        count = sa->n;
        if (tg_attr_req_int(n, "axis", &a) || tg_axis_norm(a, x->shape.rank, &ax))
            return -1;
        if (tg_dim_is_const(x->shape.d[ax], &c) && c != count)
            return tg_err("attribute 'scale' has %d values, but axis %d has %" PRId64,
                          count, ax, c);
    } else if (sa->kind != TG_ATTR_FLOAT) {
        return tg_err("attribute 'scale' must be a float or floats");
    }
    for (int i = 0; i < count; i++) {
        double s = sa->kind == TG_ATTR_FLOAT ? sa->u.f : sa->u.floats[i];
        if (!(s > 0) || isinf(s))
            return tg_err("scale %g must be positive and finite", s);
    }
    if (!za)
        return 0;
    if (za->kind != TG_ATTR_INT && za->kind != TG_ATTR_INTS)
        return tg_err("attribute 'zero_point' must be an int or ints");
    if (za->kind == TG_ATTR_INTS && za->n != count)
        return tg_err("attribute 'zero_point' has %d values, 'scale' %d", za->n, count);
    for (int i = 0; i < (za->kind == TG_ATTR_INT ? 1 : za->n); i++) {
        int64_t z = za->kind == TG_ATTR_INT ? za->u.i : za->u.ints[i];
        if (z < lo || z > hi)
            return tg_err("zero point %" PRId64 " outside %s's range [%" PRId64 ", %" PRId64 "]",
                          z, tg_dtype_name(q), lo, hi);
    }
    return 0;
}

int tg_infer_quantize(tg_graph *g, int node)
{
    const tg_node *n = tg_infer_node(g, node);
    const tg_value *x = tg_infer_in(g, node, 0);
    tg_dtype q;
    int64_t lo, hi;
    if (!x || tg_check_float(x, 0) || tg_attr_get_dtype(n, "dtype", TG_I8, &q))
        return -1;
    if (q == TG_I32 || !quant_range(q, &lo, &hi))
        return tg_err("attribute 'dtype' is %s, expected i8, u8, f8e4m3 or f8e5m2",
                      tg_dtype_name(q));
    if (check_qparams(n, x, q))
        return -1;
    return tg_infer_set(g, node, q, &x->shape);
}

int tg_infer_dequantize(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    int64_t lo, hi;
    if (!x)
        return -1;
    if (!quant_range(x->dtype, &lo, &hi))
        return tg_err("input 0 has dtype %s, expected i8, u8, i32, f8e4m3 or f8e5m2",
                      tg_dtype_name(x->dtype));
    if (check_qparams(tg_infer_node(g, node), x, x->dtype))
        return -1;
    return tg_infer_set(g, node, TG_F32, &x->shape);
}
