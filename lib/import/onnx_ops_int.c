/* ONNX integer operators: BitwiseAnd, BitwiseOr, BitwiseXor, BitwiseNot and
 * BitShift, each onto the tgraph op of the same meaning (ops.def: bitwise_*,
 * shl, shr; integer dtypes, NumPy broadcasting). */
#include <string.h>

#include "../error.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* BitShift: direction (string, required) "LEFT" or "RIGHT"; a count of at
 * least the width shifts every bit out, as shl and shr do. */
static int map_bitshift(onnx_ctx *c, const onnx_op_map *m)
{
    const char *d = onnx_attr_string(N(c), "direction", NULL);
    if (!d) return tg_err("attribute direction is required");
    tg_op op = !strcmp(d, "LEFT") ? TG_OP_SHL : !strcmp(d, "RIGHT") ? TG_OP_SHR : TG_OP_NONE;
    if (op == TG_OP_NONE) return tg_err("direction '%s' is not LEFT or RIGHT", d);
    onnx_op_map shift = *m;
    shift.op = op;
    return onnx_map_binary(c, &shift);
}

const onnx_op_map onnx_int_ops[] = {
    {"BitwiseAnd", onnx_map_binary, TG_OP_BITWISE_AND}, {"BitwiseOr", onnx_map_binary, TG_OP_BITWISE_OR},
    {"BitwiseXor", onnx_map_binary, TG_OP_BITWISE_XOR}, {"BitwiseNot", onnx_map_unary, TG_OP_BITWISE_NOT},
    {"BitShift", map_bitshift, TG_OP_NONE},
};
const int onnx_int_nops = (int)(sizeof onnx_int_ops / sizeof onnx_int_ops[0]);
