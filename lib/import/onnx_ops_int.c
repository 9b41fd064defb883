/* ONNX integer operators: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and
 * BitShift, each onto the tgraph op of the same meaning (ops.def: bitwise_*,
 * shl, shr; integer dtypes, NumPy broadcasting). */
#include <string.h>

#include "../error.h"
#include "onnx_internal.h"
#include "onnx_node.h"

static int map_bitwise_not(onnx_ctx *c, const onnx_op_map *m)
{
    return def_out(c, 0, unary_on(c, m->op, NULL, in_val(c, 0), 0, NULL));
}

static int map_bitwise(onnx_ctx *c, const onnx_op_map *m)
{
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    return b < 0 ? -1 : def_out(c, 0, binary_on(c, m->op, NULL, a, b));
}

/* BitShift: direction (string, required) "LEFT" or "RIGHT"; a count of at
 * least the width shifts every bit out, as shl and shr do. */
static int map_bitshift(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    const char *d = onnx_attr_string(N(c), "direction", NULL);
    if (!d) return tg_err("attribute direction is required");
    tg_op op = !strcmp(d, "LEFT") ? TG_OP_SHL : !strcmp(d, "RIGHT") ? TG_OP_SHR : TG_OP_NONE;
    if (op == TG_OP_NONE) return tg_err("direction '%s' is not LEFT or RIGHT", d);
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    return b < 0 ? -1 : def_out(c, 0, binary_on(c, op, NULL, a, b));
}

const onnx_op_map onnx_int_ops[] = {
    {"BitwiseAnd", map_bitwise, TG_OP_BITWISE_AND}, {"BitwiseOr", map_bitwise, TG_OP_BITWISE_OR},
    {"BitwiseXor", map_bitwise, TG_OP_BITWISE_XOR}, {"BitwiseNot", map_bitwise_not, TG_OP_BITWISE_NOT},
    {"BitShift", map_bitshift, TG_OP_NONE},
};
const int onnx_int_nops = (int)(sizeof onnx_int_ops / sizeof onnx_int_ops[0]);
