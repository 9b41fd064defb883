/* Operators of the ai.onnx.ml domain that are plain tensor arithmetic:
 * Binarizer and ArrayFeatureExtractor. */
#include "../error.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* Binarizer: 1 where x > threshold, else 0, in x's type. */
static int map_binarizer(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    int t = scalar_const(c, "threshold", dtype_of(c, x), onnx_attr_float(N(c), "threshold", 0));
    int gt = t < 0 ? -1 : binary_on(c, TG_OP_GT, "above", x, t);
    return def_out(c, 0, cast_as(c, gt, dtype_of(c, x), NULL));
}

/* ArrayFeatureExtractor: the elements of x's last axis at the given indices
 * (flattened); a 1-D x is read as one row [1, n]. */
static int map_array_feature_extractor(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), idx = x < 0 ? -1 : in_val(c, 1);
    if (idx < 0) return -1;
    tg_shape xs = shape_of(c, x), is = shape_of(c, idx);
    if (xs.rank < 1) return tg_err("x must have rank 1 or more");
    if (!tg_dtype_is_int(dtype_of(c, idx))) return tg_err("the indices must be integers");
    if (xs.rank == 1) {
        tg_dim row[2] = {tg_dim_const(1), xs.d[0]};
        x = reshape_to(c, x, 2, row, "row");
        xs.rank = 2;
    }
    if (is.rank != 1) {
        tg_dim n = tg_dim_const(1);
        for (int i = 0; i < is.rank; i++)
            if (tg_dim_mul(n, is.d[i], &n)) return -1;
        idx = reshape_to(c, idx, 1, &n, "flat_indices");
    }
    tg_attr a = tg_attr_int("axis", xs.rank - 1);
    int in[2] = {x, idx};
    return def_out(c, 0, x < 0 || idx < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, NULL, 2, in, 1, &a));
}

const onnx_op_map onnx_ml_ops[] = {
    {"Binarizer", map_binarizer, TG_OP_NONE}, {"ArrayFeatureExtractor", map_array_feature_extractor, TG_OP_NONE},
};
const int onnx_ml_nops = (int)(sizeof onnx_ml_ops / sizeof onnx_ml_ops[0]);
