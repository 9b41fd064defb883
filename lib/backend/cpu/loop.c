/* What the C emitter's fused loop (emit_loop.c) computes: the CPU's answer
 * to the grouping rules' loop_supports (lib/passes/passes.h). */
#include "cpu.h"

static bool plain_type(tg_dtype t)
{
    return t == TG_F32 || t == TG_BOOL || t == TG_I64 || t == TG_I32 || t == TG_U8 ||
           t == TG_I8 || t == TG_I16;
}

bool tg_cpu_loop_supports(const tg_graph *g, const tg_node *nd, const char **why)
{
    const tg_value *y = &g->values[nd->out[0]];
    tg_dtype t = nd->nin ? g->values[nd->in[nd->op == TG_OP_WHERE ? 1 : 0]].dtype : y->dtype;
    *why = NULL;
    switch (nd->op) {   /* the reductions emit_loop ends a loop with */
    case TG_OP_REDUCE_SUM: case TG_OP_REDUCE_MEAN: case TG_OP_REDUCE_MAX: case TG_OP_REDUCE_MIN:
        if (t == TG_F32)
            return true;
        return *why = "a reduction of another dtype than f32", false;
    case TG_OP_REDUCE_ANY:
        if (plain_type(t))
            return true;
        return *why = "reduce_any of a dtype that is not plain", false;
    default:
        break;
    }
    if (!tg_op_is_elementwise(nd->op) && nd->op != TG_OP_IDENTITY)
        return *why = "not elementwise", false;
    for (int i = 0; i < nd->nin; i++)
        if (nd->in[i] < 0 || !plain_type(g->values[nd->in[i]].dtype))
            return *why = "an input is not f32, bool or a plain integer", false;
    if (!plain_type(y->dtype))
        return *why = "the result is not f32, bool or a plain integer", false;
    if (t == TG_F32 || nd->op == TG_OP_LOGICAL_NOT || nd->op == TG_OP_IDENTITY ||
        nd->op == TG_OP_WHERE)
        return true;
    switch (nd->op) {   /* integer and bool operands */
    case TG_OP_NEG: case TG_OP_ABS: case TG_OP_RELU: case TG_OP_ADD: case TG_OP_SUB:
    case TG_OP_MUL: case TG_OP_MAXIMUM: case TG_OP_MINIMUM: case TG_OP_EQ: case TG_OP_NE:
    case TG_OP_LT: case TG_OP_LE: case TG_OP_GT: case TG_OP_GE: case TG_OP_LOGICAL_AND:
    case TG_OP_LOGICAL_OR:
        return true;
    case TG_OP_CAST:
        if (y->dtype == TG_F32 || y->dtype == TG_BOOL)
            return true;
        return *why = "integer casts saturate", false;
    default:
        return *why = "integer op left to its kernel (division, rounding, math)", false;
    }
}

