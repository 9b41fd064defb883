/* Elementwise ops: unary maps, broadcasting binary ops, where, cast, identity. */
#include <math.h>
#include <string.h>

#include "run.h"

static int unary_kernel(tg_op op, tgk_unary_op *k)
{
    switch (op) {
    case TG_OP_NEG: *k = TGK_NEG; break;
    case TG_OP_ABS: *k = TGK_ABS; break;
    case TG_OP_EXP: *k = TGK_EXP; break;
    case TG_OP_LOG: *k = TGK_LOG; break;
    case TG_OP_SQRT: *k = TGK_SQRT; break;
    case TG_OP_RSQRT: *k = TGK_RSQRT; break;
    case TG_OP_RECIPROCAL: *k = TGK_RECIPROCAL; break;
    case TG_OP_SIN: *k = TGK_SIN; break;
    case TG_OP_COS: *k = TGK_COS; break;
    case TG_OP_TANH: *k = TGK_TANH; break;
    case TG_OP_TAN: *k = TGK_TAN; break;
    case TG_OP_ASIN: *k = TGK_ASIN; break;
    case TG_OP_ACOS: *k = TGK_ACOS; break;
    case TG_OP_ATAN: *k = TGK_ATAN; break;
    case TG_OP_SINH: *k = TGK_SINH; break;
    case TG_OP_COSH: *k = TGK_COSH; break;
    case TG_OP_ASINH: *k = TGK_ASINH; break;
    case TG_OP_ACOSH: *k = TGK_ACOSH; break;
    case TG_OP_ATANH: *k = TGK_ATANH; break;
    case TG_OP_ERF: *k = TGK_ERF; break;
    case TG_OP_SIGMOID: *k = TGK_SIGMOID; break;
    case TG_OP_RELU: *k = TGK_RELU; break;
    case TG_OP_GELU: *k = TGK_GELU; break;
    case TG_OP_SILU: *k = TGK_SILU; break;
    case TG_OP_HARDSWISH: *k = TGK_HARDSWISH; break;
    case TG_OP_HARDSIGMOID: *k = TGK_HARDSIGMOID; break;
    case TG_OP_LEAKY_RELU: *k = TGK_LEAKY_RELU; break;
    case TG_OP_ELU: *k = TGK_ELU; break;
    case TG_OP_FLOOR: *k = TGK_FLOOR; break;
    case TG_OP_CEIL: *k = TGK_CEIL; break;
    case TG_OP_ROUND: *k = TGK_ROUND; break;
    case TG_OP_CLAMP: *k = TGK_CLAMP; break;
    case TG_OP_LOGICAL_NOT: *k = TGK_LOGICAL_NOT; break;
    default: return -1;
    }
    return 0;
}

static int binary_kernel(tg_op op, tgk_binary_op *k)
{
    switch (op) {
    case TG_OP_ADD: *k = TGK_ADD; break;
    case TG_OP_SUB: *k = TGK_SUB; break;
    case TG_OP_MUL: *k = TGK_MUL; break;
    case TG_OP_DIV: *k = TGK_DIV; break;
    case TG_OP_POW: *k = TGK_POW; break;
    case TG_OP_REMAINDER: *k = TGK_REM; break;
    case TG_OP_FMOD: *k = TGK_FMOD; break;
    case TG_OP_MAXIMUM: *k = TGK_MAX; break;
    case TG_OP_MINIMUM: *k = TGK_MIN; break;
    case TG_OP_EQ: *k = TGK_EQ; break;
    case TG_OP_NE: *k = TGK_NE; break;
    case TG_OP_LT: *k = TGK_LT; break;
    case TG_OP_LE: *k = TGK_LE; break;
    case TG_OP_GT: *k = TGK_GT; break;
    case TG_OP_GE: *k = TGK_GE; break;
    case TG_OP_LOGICAL_AND: *k = TGK_AND; break;
    case TG_OP_LOGICAL_OR: *k = TGK_OR; break;
    default: return -1;
    }
    return 0;
}

static int run_unary(const tg_run_ctx *c, tgk_unary_op k)
{
    const tg_node *n = c->n;
    tgk_unary_param p = { 0, -INFINITY, INFINITY };
    if (k == TGK_LEAKY_RELU)
        p.alpha = tg_node_float(n, "alpha", 0.01);
    else if (k == TGK_ELU)
        p.alpha = tg_node_float(n, "alpha", 1.0);
    else if (k == TGK_CLAMP) {
        p.lo = tg_node_float(n, "min", -INFINITY);
        p.hi = tg_node_float(n, "max", INFINITY);
    } else if (k == TGK_GELU && !strcmp(tg_node_string(n, "approximate", "none"), "tanh"))
        k = TGK_GELU_TANH;
    const tg_tensor *x = c->in[0];
    if (tgk_unary(k, tg_run_kt(x->dtype), tg_run_numel(x), x->data, c->out[0]->data, &p))
        return tg_err("not defined for dtype %s", tg_dtype_name(x->dtype));
    return 0;
}

static int run_binary(const tg_run_ctx *c, tgk_binary_op k)
{
    const tg_tensor *a = c->in[0], *b = c->in[1], *y = c->out[0];
    int64_t sa[TG_MAX_RANK], sb[TG_MAX_RANK];
    tgk_broadcast_strides(y->rank, y->dims, a->rank, a->dims, sa);
    tgk_broadcast_strides(y->rank, y->dims, b->rank, b->dims, sb);
    if (tgk_binary(k, tg_run_kt(a->dtype), y->rank, y->dims, a->data, sa, b->data, sb, y->data))
        return tg_err((k == TGK_DIV || k == TGK_REM || k == TGK_FMOD) && !tg_dtype_is_float(a->dtype)
                      ? "integer division by zero"
                      : "not defined for dtype %s", tg_dtype_name(a->dtype));
    return 0;
}

static int run_where(const tg_run_ctx *c)
{
    const tg_tensor *cond = c->in[0], *a = c->in[1], *b = c->in[2], *y = c->out[0];
    int64_t sc[TG_MAX_RANK], sa[TG_MAX_RANK], sb[TG_MAX_RANK];
    tgk_broadcast_strides(y->rank, y->dims, cond->rank, cond->dims, sc);
    tgk_broadcast_strides(y->rank, y->dims, a->rank, a->dims, sa);
    tgk_broadcast_strides(y->rank, y->dims, b->rank, b->dims, sb);
    tgk_where(tg_dtype_size(y->dtype), y->rank, y->dims, cond->data, sc, a->data, sa, b->data,
              sb, y->data);
    return 0;
}

int tg_run_elementwise(const tg_run_ctx *c)
{
    tgk_unary_op u;
    tgk_binary_op b;
    const tg_tensor *x = c->in[0];
    switch (c->n->op) {
    case TG_OP_IDENTITY:
        memcpy(c->out[0]->data, x->data, c->out[0]->nbytes);
        return 0;
    case TG_OP_CAST:
        tgk_cast(tg_run_kt(c->out[0]->dtype), c->out[0]->data, tg_run_kt(x->dtype), x->data,
                 tg_run_numel(x));
        return 0;
    case TG_OP_WHERE:
        return run_where(c);
    default:
        if (!unary_kernel(c->n->op, &u))
            return run_unary(c, u);
        if (!binary_kernel(c->n->op, &b))
            return run_binary(c, b);
        return tg_err("not an elementwise op");
    }
}
