/* aten operators on values: elementwise math, comparisons, reductions,
 * casts, generators, and the integer arithmetic on symbolic sizes. */
#include <math.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

/* ---- elementwise unary ---- */

static const struct {
    const char *name;
    tg_op op;
    bool floating;          /* ints and bools are computed in float32, as torch does */
} unary_ops[] = {
    {"neg", TG_OP_NEG, false}, {"abs", TG_OP_ABS, false}, {"relu", TG_OP_RELU, false},
    {"floor", TG_OP_FLOOR, false}, {"ceil", TG_OP_CEIL, false}, {"round", TG_OP_ROUND, false},
    {"exp", TG_OP_EXP, true}, {"log", TG_OP_LOG, true}, {"sqrt", TG_OP_SQRT, true},
    {"rsqrt", TG_OP_RSQRT, true}, {"reciprocal", TG_OP_RECIPROCAL, true},
    {"sin", TG_OP_SIN, true}, {"cos", TG_OP_COS, true}, {"tanh", TG_OP_TANH, true},
    {"erf", TG_OP_ERF, true}, {"sigmoid", TG_OP_SIGMOID, true}, {"silu", TG_OP_SILU, true},
    {"hardswish", TG_OP_HARDSWISH, true}, {"hardsigmoid", TG_OP_HARDSIGMOID, true},
};

static int h_unary(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    int x;
    pt2_op_name(node, name, sizeof name);
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    for (size_t i = 0; i < sizeof unary_ops / sizeof *unary_ops; i++) {
        if (strcmp(unary_ops[i].name, name))
            continue;
        if (unary_ops[i].floating && !tg_dtype_is_float(pt2_dt(c, x)))
            x = pt2_cast(c, false, x, TG_F32);
        else if (pt2_dt(c, x) != TG_BOOL && (unary_ops[i].op == TG_OP_FLOOR ||
                                              unary_ops[i].op == TG_OP_CEIL ||
                                              unary_ops[i].op == TG_OP_ROUND) &&
                 !tg_dtype_is_float(pt2_dt(c, x)))
            return pt2_set_out(c, 0, x);   /* integers are already whole */
        return pt2_set_out(c, 0, pt2_unary(c, true, unary_ops[i].op, x));
    }
    return tg_err("no unary mapping for %s", name);
}

static int float_input(pt2_ctx *c, const cJSON *node, const char *arg, int *x)
{
    if (pt2_tensor(c, node, arg, x) < 0)
        return -1;
    if (!tg_dtype_is_float(pt2_dt(c, *x)))
        *x = pt2_cast(c, false, *x, TG_F32);
    return *x < 0 ? -1 : 0;
}

static int h_gelu(pt2_ctx *c, const cJSON *node)
{
    int x;
    const char *approx = pt2_string(node, "approximate", "none");
    if (strcmp(approx, "none") && strcmp(approx, "tanh"))
        return tg_err("gelu approximate='%s' not supported", approx);
    if (float_input(c, node, "self", &x) < 0)
        return -1;
    tg_attr a = tg_attr_string("approximate", approx);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_GELU, 1, &x, 1, &a));
}

static int h_leaky_relu(pt2_ctx *c, const cJSON *node)
{
    int x;
    double slope;
    if (float_input(c, node, "self", &x) < 0 ||
        pt2_float(c, node, "negative_slope", 0.01, &slope) < 0)
        return -1;
    tg_attr a = tg_attr_float("alpha", slope);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_LEAKY_RELU, 1, &x, 1, &a));
}

/* elu(x, alpha, scale, input_scale) = scale * (x > 0 ? x : alpha * (exp(input_scale * x) - 1)) */
static int h_elu(pt2_ctx *c, const cJSON *node)
{
    int x;
    double alpha, scale, in_scale;
    if (float_input(c, node, "self", &x) < 0 || pt2_float(c, node, "alpha", 1, &alpha) < 0 ||
        pt2_float(c, node, "scale", 1, &scale) < 0 ||
        pt2_float(c, node, "input_scale", 1, &in_scale) < 0)
        return -1;
    if (in_scale != 1)
        return tg_err("elu with input_scale != 1 not supported");
    tg_attr a = tg_attr_float("alpha", alpha);
    int y = pt2_emit(c, scale == 1, TG_OP_ELU, 1, &x, 1, &a);
    if (scale != 1)
        y = pt2_binary(c, true, TG_OP_MUL, y,
                       pt2_const(c, (pt2_scalar){.kind = PT2_S_FLOAT, .f = scale}, pt2_dt(c, x)));
    return pt2_set_out(c, 0, y);
}

/* clamp, clamp_min, clamp_max, hardtanh, relu6: scalar bounds become the
 * clamp op's attributes, tensor bounds maximum/minimum. */
static int h_clamp(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool ht = !strcmp(name, "hardtanh"), r6 = !strcmp(name, "relu6");
    const char *bn[2] = {ht ? "min_val" : "min", ht ? "max_val" : "max"};
    pt2_scalar s[2] = {{0}, {0}};
    int t[2] = {-1, -1}, x;
    bool has[2] = {false, false};
    pt2_promo p = {0};
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    pt2_promo_tensor(&p, pt2_dt(c, x), pt2_rank(c, x));
    for (int k = 0; k < 2; k++) {
        const cJSON *a = pt2_arg(node, bn[k]);
        if (r6 || (ht && !a)) {
            s[k] = (pt2_scalar){.kind = PT2_S_FLOAT, .f = r6 ? 6.0 * k : k ? 1 : -1};
            has[k] = true;
        } else if (a && !strcmp(pt2_key(a), "as_tensor")) {
            if (pt2_tensor(c, node, bn[k], &t[k]) < 0)
                return -1;
            pt2_promo_tensor(&p, pt2_dt(c, t[k]), pt2_rank(c, t[k]));
        } else if (!pt2_arg_none(node, bn[k])) {
            if (pt2_scalar_arg(c, node, bn[k], &s[k]) < 0)
                return -1;
            pt2_promo_scalar(&p, &s[k]);
            has[k] = true;
        }
    }
    tg_dtype dt = pt2_promo_result(&p);
    x = pt2_cast(c, false, x, dt);
    bool tensors = t[0] >= 0 || t[1] >= 0;
    if (has[0] || has[1]) {
        tg_attr a[2];
        int na = 0;
        for (int k = 0; k < 2; k++)
            if (has[k])
                a[na++] = tg_attr_float(k ? "max" : "min", s[k].kind == PT2_S_FLOAT ? s[k].f
                                                                               : (double)s[k].i);
        x = x < 0 ? -1 : pt2_emit(c, !tensors, TG_OP_CLAMP, 1, &x, na, a);
    }
    if (t[0] >= 0)
        x = pt2_binary(c, t[1] < 0, TG_OP_MAXIMUM, x, t[0]);
    if (t[1] >= 0)
        x = pt2_binary(c, true, TG_OP_MINIMUM, x, t[1]);
    return pt2_set_out(c, 0, x);
}

/* ---- elementwise binary ---- */

static const struct {
    const char *name;
    tg_op op;
} binary_ops[] = {
    {"add", TG_OP_ADD}, {"sub", TG_OP_SUB}, {"rsub", TG_OP_SUB}, {"mul", TG_OP_MUL},
    {"div", TG_OP_DIV}, {"true_divide", TG_OP_DIV}, {"floor_divide", TG_OP_DIV},
    {"remainder", TG_OP_SUB}, {"fmod", TG_OP_SUB}, {"pow", TG_OP_POW},
    {"maximum", TG_OP_MAXIMUM}, {"minimum", TG_OP_MINIMUM}, {"max", TG_OP_MAXIMUM},
    {"min", TG_OP_MINIMUM}, {"eq", TG_OP_EQ}, {"ne", TG_OP_NE}, {"lt", TG_OP_LT},
    {"le", TG_OP_LE}, {"gt", TG_OP_GT}, {"ge", TG_OP_GE},
    {"logical_and", TG_OP_LOGICAL_AND}, {"logical_or", TG_OP_LOGICAL_OR},
    {"logical_xor", TG_OP_NE}, {"bitwise_and", TG_OP_LOGICAL_AND},
    {"bitwise_or", TG_OP_LOGICAL_OR}, {"bitwise_xor", TG_OP_NE},
    {"__and__", TG_OP_LOGICAL_AND}, {"__or__", TG_OP_LOGICAL_OR}, {"__xor__", TG_OP_NE},
};

static int promo_arg(pt2_ctx *c, const cJSON *node, const char *name, pt2_promo *p)
{
    const cJSON *a = pt2_arg(node, name);
    int v;
    pt2_scalar s;
    if (a && !strcmp(pt2_key(a), "as_tensor")) {
        if (pt2_tensor(c, node, name, &v) < 0)
            return -1;
        pt2_promo_tensor(p, pt2_dt(c, v), pt2_rank(c, v));
        return 0;
    }
    if (pt2_scalar_arg(c, node, name, &s) < 0)
        return -1;
    pt2_promo_scalar(p, &s);
    return 0;
}

static int scalar_c(pt2_ctx *c, double v, tg_dtype dt)
{
    return pt2_const(c, (pt2_scalar){.kind = PT2_S_FLOAT, .f = v}, dt);
}

/* trunc(q) for floating q: toward zero. */
static int trunc_float(pt2_ctx *c, bool final, int q)
{
    int neg = pt2_binary(c, false, TG_OP_LT, q, scalar_c(c, 0, pt2_dt(c, q)));
    int in[3] = {neg, pt2_unary(c, false, TG_OP_CEIL, q), pt2_unary(c, false, TG_OP_FLOOR, q)};
    if (in[0] < 0 || in[1] < 0 || in[2] < 0)
        return -1;
    return pt2_emit(c, final, TG_OP_WHERE, 3, in, 0, NULL);
}

/* Division rounded "trunc" or "floor" (Python's //). Integer DIV truncates;
 * floor subtracts one where the remainder is non-zero and its sign differs
 * from the divisor's. */
static int div_rounded(pt2_ctx *c, bool final, int a, int b, bool floor_mode)
{
    tg_dtype dt = pt2_dt(c, a);
    bool is_float = tg_dtype_is_float(dt);
    int q = pt2_binary(c, !is_float && !floor_mode && final, TG_OP_DIV, a, b);
    if (is_float)
        return floor_mode ? pt2_unary(c, final, TG_OP_FLOOR, q) : trunc_float(c, final, q);
    if (!floor_mode)
        return q;
    int zero = scalar_c(c, 0, dt);
    int r = pt2_binary(c, false, TG_OP_SUB, a, pt2_binary(c, false, TG_OP_MUL, q, b));
    int fix = pt2_binary(c, false, TG_OP_LOGICAL_AND, pt2_binary(c, false, TG_OP_NE, r, zero),
                         pt2_binary(c, false, TG_OP_NE, pt2_binary(c, false, TG_OP_LT, r, zero),
                                    pt2_binary(c, false, TG_OP_LT, b, zero)));
    return pt2_binary(c, final, TG_OP_SUB, q, pt2_cast(c, false, fix, dt));
}

static int h_binary(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    tg_op op = TG_OP_NONE;
    for (size_t i = 0; i < sizeof binary_ops / sizeof *binary_ops; i++)
        if (!strcmp(binary_ops[i].name, name))
            op = binary_ops[i].op;
    const char *an = "self", *bn = pt2_arg(node, "other") ? "other" : "exponent";
    /* bitwise_and, __and__ ...: supported on bool only, where they are logical */
    bool bitwise = !strncmp(name, "bitwise_", 8) || !strncmp(name, "__", 2);
    bool logical = op == TG_OP_LOGICAL_AND || op == TG_OP_LOGICAL_OR ||
                   !strcmp(name, "logical_xor") || bitwise;
    const char *mode = pt2_string(node, "rounding_mode", NULL);
    if (!strcmp(name, "floor_divide"))
        mode = "floor";
    pt2_promo p = {0};
    if (promo_arg(c, node, an, &p) < 0 || promo_arg(c, node, bn, &p) < 0)
        return -1;
    tg_dtype dt = pt2_promo_result(&p);
    if (bitwise && dt != TG_BOOL)
        return tg_err("%s on integers is not supported (only on bool)", name);
    if (logical)
        dt = TG_BOOL;
    else if (op == TG_OP_DIV && !mode && !tg_dtype_is_float(dt))
        dt = TG_F32;    /* true division */
    int a, b;
    if (pt2_operand(c, node, an, dt, &a) < 0 || pt2_operand(c, node, bn, dt, &b) < 0)
        return -1;
    if (!strcmp(name, "rsub")) {
        int t = a;
        a = b;
        b = t;
    }
    double alpha = 1;
    if (pt2_float(c, node, "alpha", 1, &alpha) < 0)
        return -1;
    if (alpha != 1)
        b = pt2_binary(c, false, TG_OP_MUL, b, scalar_c(c, alpha, dt));
    if (mode && strcmp(mode, "trunc") && strcmp(mode, "floor"))
        return tg_err("rounding_mode '%s' not supported", mode);
    if (!strcmp(name, "remainder") || !strcmp(name, "fmod")) {
        /* a - b * (a // b), floored for remainder, truncated for fmod */
        int q = div_rounded(c, false, a, b, !strcmp(name, "remainder"));
        return pt2_set_out(c, 0, pt2_binary(c, true, TG_OP_SUB, a,
                                            pt2_binary(c, false, TG_OP_MUL, q, b)));
    }
    if (op == TG_OP_DIV && mode)
        return pt2_set_out(c, 0, div_rounded(c, true, a, b, !strcmp(mode, "floor")));
    return pt2_set_out(c, 0, pt2_binary(c, true, op, a, b));
}

static int h_logical_not(pt2_ctx *c, const cJSON *node)
{
    int x;
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    char name[64];
    pt2_op_name(node, name, sizeof name);
    if (!strcmp(name, "bitwise_not") && pt2_dt(c, x) != TG_BOOL)
        return tg_err("bitwise_not on integers is not supported (only on bool)");
    return pt2_set_out(c, 0, pt2_unary(c, true, TG_OP_LOGICAL_NOT, pt2_cast(c, false, x, TG_BOOL)));
}

static int h_where(pt2_ctx *c, const cJSON *node)
{
    int in[3];
    pt2_promo p = {0};
    if (promo_arg(c, node, "self", &p) < 0 || promo_arg(c, node, "other", &p) < 0)
        return -1;
    tg_dtype dt = pt2_promo_result(&p);
    if (pt2_tensor(c, node, "condition", &in[0]) < 0 ||
        pt2_operand(c, node, "self", dt, &in[1]) < 0 ||
        pt2_operand(c, node, "other", dt, &in[2]) < 0)
        return -1;
    in[0] = pt2_cast(c, false, in[0], TG_BOOL);
    return pt2_set_out(c, 0, in[0] < 0 ? -1 : pt2_emit(c, true, TG_OP_WHERE, 3, in, 0, NULL));
}

/* masked_fill(self, mask, value) = where(mask, value, self), in self's dtype. */
static int h_masked_fill(pt2_ctx *c, const cJSON *node)
{
    int in[3];
    if (pt2_tensor(c, node, "self", &in[2]) < 0 || pt2_tensor(c, node, "mask", &in[0]) < 0 ||
        pt2_operand(c, node, "value", pt2_dt(c, in[2]), &in[1]) < 0)
        return -1;
    in[0] = pt2_cast(c, false, in[0], TG_BOOL);
    return pt2_set_out(c, 0, in[0] < 0 ? -1 : pt2_emit(c, true, TG_OP_WHERE, 3, in, 0, NULL));
}

/* ---- reductions ---- */

/* The "dim" argument as normalized axes; 0 axes means all. */
static int reduce_axes(pt2_ctx *c, const cJSON *node, int rank, int64_t *axes)
{
    if (pt2_arg_none(node, "dim"))
        return 0;
    int n = pt2_ints(c, node, "dim", axes, TG_MAX_RANK);
    for (int i = 0; i < n; i++) {
        int ax;
        if (pt2_axis(axes[i], rank, &ax) < 0)
            return -1;
        axes[i] = ax;
    }
    return rank == 0 ? 0 : n;
}

static int reduce(pt2_ctx *c, const char *name, tg_op op, int x, int nax, const int64_t *axes,
                  bool keepdim, int64_t correction)
{
    tg_attr a[3];
    int na = 0;
    if (nax)
        a[na++] = tg_attr_ints("axes", nax, axes);
    a[na++] = tg_attr_int("keepdim", keepdim);
    if (op == TG_OP_REDUCE_VAR)
        a[na++] = tg_attr_int("correction", correction);
    return x < 0 ? -1 : pt2_emit_named(c, name, op, 1, &x, na, a);
}

static const struct {
    const char *name;
    tg_op op;
} reduce_ops[] = {
    {"sum", TG_OP_REDUCE_SUM}, {"mean", TG_OP_REDUCE_MEAN}, {"amax", TG_OP_REDUCE_MAX},
    {"amin", TG_OP_REDUCE_MIN}, {"prod", TG_OP_REDUCE_PROD}, {"any", TG_OP_REDUCE_ANY},
    {"all", TG_OP_REDUCE_ANY}, {"var", TG_OP_REDUCE_VAR}, {"std", TG_OP_REDUCE_VAR},
    {"max", TG_OP_REDUCE_MAX}, {"min", TG_OP_REDUCE_MIN},
};

static int h_reduce(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    tg_op op = TG_OP_NONE;
    for (size_t i = 0; i < sizeof reduce_ops / sizeof *reduce_ops; i++)
        if (!strcmp(reduce_ops[i].name, name))
            op = reduce_ops[i].op;
    if ((!strcmp(name, "max") || !strcmp(name, "min")) && pt2_arg(node, "other"))
        return h_binary(c, node);       /* max.other: elementwise */
    int x, nax;
    int64_t axes[TG_MAX_RANK];
    bool keepdim, unbiased;
    double corr;
    tg_dtype dt;
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (nax = reduce_axes(c, node, pt2_rank(c, x), axes)) < 0 ||
        pt2_bool(node, "keepdim", false, &keepdim) < 0 ||
        pt2_bool(node, "unbiased", true, &unbiased) < 0 ||
        pt2_float(c, node, "correction", unbiased ? 1 : 0, &corr) < 0)
        return -1;
    tg_dtype in = pt2_dt(c, x);
    bool floating = op == TG_OP_REDUCE_MEAN || op == TG_OP_REDUCE_VAR;
    tg_dtype dflt = floating && !tg_dtype_is_float(in) ? TG_F32
                  : (op == TG_OP_REDUCE_SUM || op == TG_OP_REDUCE_PROD) && !tg_dtype_is_float(in)
                  ? TG_I64 : in;   /* integer sums accumulate in int64, as torch's */
    if (pt2_dtype_arg(node, "dtype", dflt, &dt) < 0)
        return -1;
    if (op != TG_OP_REDUCE_ANY)
        x = pt2_cast(c, false, x, dt);
    if (!strcmp(name, "all"))
        x = pt2_unary(c, false, TG_OP_LOGICAL_NOT, pt2_cast(c, false, x, TG_BOOL));
    bool post = !strcmp(name, "all") || !strcmp(name, "std");
    bool two = pt2_out_count(node) > 1;      /* max.dim: values and indices */
    int y = reduce(c, post ? NULL : pt2_out_name(node, 0), op, x, nax, axes, keepdim,
                   (int64_t)corr);
    if (!strcmp(name, "all"))
        y = pt2_unary(c, true, TG_OP_LOGICAL_NOT, y);
    if (!strcmp(name, "std"))
        y = pt2_unary(c, true, TG_OP_SQRT, y);
    if (pt2_set_out(c, 0, y) < 0)
        return -1;
    if (!two)
        return 0;
    tg_attr a[2] = {tg_attr_int("axis", axes[0]), tg_attr_int("keepdim", keepdim)};
    return pt2_set_out(c, 1, pt2_emit_named(c, pt2_out_name(node, 1),
                                            op == TG_OP_REDUCE_MAX ? TG_OP_ARGMAX : TG_OP_ARGMIN,
                                            1, &x, 2, a));
}

/* cumsum: integers and bool sum in int64 unless a dtype is given, as torch's */
static int h_cumsum(pt2_ctx *c, const cJSON *node)
{
    int x, ax;
    int64_t dim;
    tg_dtype dt;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x), &ax) < 0 ||
        pt2_dtype_arg(node, "dtype", tg_dtype_is_float(pt2_dt(c, x)) ? pt2_dt(c, x) : TG_I64,
                      &dt) < 0)
        return -1;
    x = pt2_cast(c, false, x, dt);
    tg_attr a = tg_attr_int("axis", ax);
    return pt2_set_out(c, 0, x < 0 ? -1 : pt2_emit(c, true, TG_OP_CUMSUM, 1, &x, 1, &a));
}

static int h_argmax(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    int x, ax;
    int64_t dim;
    bool keepdim;
    pt2_op_name(node, name, sizeof name);
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_bool(node, "keepdim", false, &keepdim) < 0)
        return -1;
    tg_attr a[2];
    int na = 0;
    if (!pt2_arg_none(node, "dim")) {
        if (pt2_int(c, node, "dim", 0, &dim) < 0 || pt2_axis(dim, pt2_rank(c, x), &ax) < 0)
            return -1;
        a[na++] = tg_attr_int("axis", ax);
    }
    a[na++] = tg_attr_int("keepdim", keepdim);
    tg_op op = !strcmp(name, "argmax") ? TG_OP_ARGMAX : TG_OP_ARGMIN;
    return pt2_set_out(c, 0, pt2_emit(c, true, op, 1, &x, na, a));
}

static int h_softmax(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    int x, ax;
    int64_t dim;
    tg_dtype dt;
    pt2_op_name(node, name, sizeof name);
    if (float_input(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", -1, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x), &ax) < 0 ||
        pt2_dtype_arg(node, "dtype", pt2_dt(c, x), &dt) < 0)
        return -1;
    x = pt2_cast(c, false, x, dt);
    tg_attr a = tg_attr_int("axis", ax);
    tg_op op = strstr(name, "log_") ? TG_OP_LOG_SOFTMAX : TG_OP_SOFTMAX;
    return pt2_set_out(c, 0, x < 0 ? -1 : pt2_emit(c, true, op, 1, &x, 1, &a));
}

/* ---- identities and casts ---- */

/* clone, detach, contiguous, dropout ...: the input itself, no node. */
static int h_identity(pt2_ctx *c, const cJSON *node)
{
    int x;
    if (pt2_tensor(c, node, pt2_arg(node, "self") ? "self" : "input", &x) < 0)
        return -1;
    return pt2_set_out(c, 0, x);
}

/* Assertions and constraints check things at export time: nothing to do. */
static int h_drop(pt2_ctx *c, const cJSON *node)
{
    (void)c;
    (void)node;
    return 0;
}

static int h_to(pt2_ctx *c, const cJSON *node)
{
    int x, other;
    tg_dtype dt;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_opt_tensor(c, node, "other", &other) < 0 ||
        pt2_dtype_arg(node, "dtype", pt2_dt(c, x), &dt) < 0)
        return -1;
    if (other >= 0)
        dt = pt2_dt(c, other);
    return pt2_set_out(c, 0, pt2_cast(c, true, x, dt));
}

/* ---- generators ---- */

static tg_dtype scalar_dtype(const pt2_scalar *s)
{
    return s->kind == PT2_S_BOOL ? TG_BOOL : s->kind == PT2_S_INT ? TG_I64 : TG_F32;
}

static int full(pt2_ctx *c, int rank, const tg_dim *shape, double value, tg_dtype dt)
{
    tg_attr a[3] = {tg_attr_dims("shape", rank, shape), tg_attr_float("value", value),
                    tg_attr_dtype("dtype", dt)};
    return pt2_emit(c, true, TG_OP_FULL, 0, NULL, 3, a);
}

/* full, zeros, ones, empty and their _like and new_ forms. */
static int h_full(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    tg_dim shape[TG_MAX_RANK];
    int rank = 0, self = -1;
    tg_dtype dflt = TG_F32, dt;
    pt2_scalar fill = {.kind = PT2_S_INT, .i = !!strstr(name, "ones")};
    if (pt2_opt_tensor(c, node, "self", &self) < 0)
        return -1;
    if (self >= 0) {
        dflt = pt2_dt(c, self);
        rank = pt2_rank(c, self);
        memcpy(shape, pt2_val(c, self)->shape.d, (size_t)rank * sizeof *shape);
    }
    if (pt2_arg(node, "size") && (rank = pt2_dims(c, node, "size", shape, TG_MAX_RANK)) < 0)
        return -1;
    if (strstr(name, "full")) {
        if (pt2_scalar_arg(c, node, "fill_value", &fill) < 0)
            return -1;
        if (self < 0)
            dflt = scalar_dtype(&fill);
    }
    if (pt2_dtype_arg(node, "dtype", dflt, &dt) < 0)
        return -1;
    return pt2_set_out(c, 0, full(c, rank, shape, fill.kind == PT2_S_FLOAT ? fill.f
                                                                          : (double)fill.i, dt));
}

/* fill(x, value) and zero(x): x's shape and dtype, one value (a scalar, or
 * a rank-0 tensor broadcast). */
static int h_fill(pt2_ctx *c, const cJSON *node)
{
    int x, v;
    pt2_scalar s = {.kind = PT2_S_INT, .i = 0};
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    const tg_shape shape = pt2_val(c, x)->shape, *sh = &shape;   /* a copy: values grow below */
    const cJSON *a = pt2_arg(node, "value");
    if (a && !strcmp(pt2_key(a), "as_tensor")) {
        if (pt2_tensor(c, node, "value", &v) < 0 ||
            (v = pt2_reshape(c, false, pt2_cast(c, false, v, pt2_dt(c, x)), 0, sh->d)) < 0)
            return -1;
        tg_attr e = tg_attr_dims("shape", sh->rank, sh->d);
        return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_EXPAND, 1, &v, 1, &e));
    }
    if (a && pt2_scalar_arg(c, node, "value", &s) < 0)
        return -1;
    return pt2_set_out(c, 0, full(c, sh->rank, sh->d, s.kind == PT2_S_FLOAT ? s.f : (double)s.i,
                                  pt2_dt(c, x)));
}

/* copy_(x, src): src in x's dtype, broadcast to x's shape */
static int h_copy(pt2_ctx *c, const cJSON *node)
{
    int x, src;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_tensor(c, node, "src", &src) < 0 ||
        (src = pt2_cast(c, false, src, pt2_dt(c, x))) < 0)
        return -1;
    const tg_shape *s = &pt2_val(c, x)->shape;
    if (tg_shape_eq(&pt2_val(c, src)->shape, s))
        return pt2_set_out(c, 0, src);
    tg_attr e = tg_attr_dims("shape", s->rank, s->d);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_EXPAND, 1, &src, 1, &e));
}

static int h_scalar_tensor(pt2_ctx *c, const cJSON *node)
{
    pt2_scalar s;
    tg_dtype dt;
    if (pt2_scalar_arg(c, node, "s", &s) < 0 || pt2_dtype_arg(node, "dtype", TG_F32, &dt) < 0)
        return -1;
    /* a full node rather than a constant, so it carries the torch name */
    tg_dim none[1];
    return pt2_set_out(c, 0, full(c, 0, none, s.kind == PT2_S_FLOAT ? s.f : (double)s.i, dt));
}

/* arange(start=0, end, step=1): integer ranges map to the op; fractional ones
 * are computed as start + step * arange(n). */
static int h_arange(pt2_ctx *c, const cJSON *node)
{
    pt2_scalar s[3] = {{.kind = PT2_S_INT, .i = 0}, {0}, {.kind = PT2_S_INT, .i = 1}};
    static const char *names[3] = {"start", "end", "step"};
    tg_dim end;
    bool sym_end = false;
    const cJSON *e = pt2_arg(node, "end");
    if (e && !strcmp(pt2_key(e), "as_sym_int")) {
        if (pt2_dim(c, node, "end", tg_dim_const(0), &end) < 0)
            return -1;
        sym_end = !tg_dim_is_const(end, &s[1].i);
        s[1].kind = PT2_S_INT;
    }
    bool any_float = false;
    for (int k = 0; k < 3; k++) {
        if ((k == 1 && s[1].kind) || (k != 1 && pt2_arg_none(node, names[k])))
            continue;
        if (pt2_scalar_arg(c, node, names[k], &s[k]) < 0)
            return -1;
        any_float |= s[k].kind == PT2_S_FLOAT;
    }
    tg_dtype dt;
    if (pt2_dtype_arg(node, "dtype", any_float ? TG_F32 : TG_I64, &dt) < 0)
        return -1;
    if (!any_float && s[2].i > 0) {
        if (!sym_end)
            end = tg_dim_const(s[1].i < s[0].i ? s[0].i : s[1].i);
        tg_attr a[4] = {tg_attr_int("start", s[0].i), tg_attr_dims("end", 1, &end),
                        tg_attr_int("step", s[2].i), tg_attr_dtype("dtype", dt)};
        return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_ARANGE, 0, NULL, 4, a));
    }
    if (sym_end)
        return tg_err("arange with a dynamic end and a fractional or negative step");
    double v[3];
    for (int k = 0; k < 3; k++)
        v[k] = s[k].kind == PT2_S_FLOAT ? s[k].f : (double)s[k].i;
    if (v[2] == 0)
        return tg_err("arange step must be non-zero");
    double n = ceil((v[1] - v[0]) / v[2]);
    tg_dim nd = tg_dim_const(n > 0 ? (int64_t)n : 0);
    tg_attr a[4] = {tg_attr_int("start", 0), tg_attr_dims("end", 1, &nd),
                    tg_attr_int("step", 1), tg_attr_dtype("dtype", TG_I64)};
    tg_dtype work = tg_dtype_is_float(dt) ? (dt == TG_F64 ? TG_F64 : TG_F32) : TG_I64;
    int i = pt2_cast(c, false, pt2_emit(c, false, TG_OP_ARANGE, 0, NULL, 4, a), work);
    int y = pt2_binary(c, false, TG_OP_ADD, pt2_binary(c, false, TG_OP_MUL, i,
                                                       scalar_c(c, v[2], work)),
                       scalar_c(c, v[0], work));
    return pt2_set_out(c, 0, pt2_cast(c, true, y, dt));
}

/* ---- symbolic integers ---- */

static int h_sym_size(pt2_ctx *c, const cJSON *node)
{
    int x, ax;
    int64_t dim;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x), &ax) < 0)
        return -1;
    return pt2_bind_dim(c, pt2_out_name(node, 0), pt2_val(c, x)->shape.d[ax]);
}

static int h_sym_numel(pt2_ctx *c, const cJSON *node)
{
    int x;
    tg_dim n;
    if (pt2_tensor(c, node, "self", &x) < 0 || tg_shape_numel(&pt2_val(c, x)->shape, &n) < 0)
        return -1;
    return pt2_bind_dim(c, pt2_out_name(node, 0), n);
}

/* Argument k of an _operator call, by position (the names are a, b). */
static int operand_dim(pt2_ctx *c, const cJSON *node, int k, tg_dim *d)
{
    const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(node, "inputs"), k);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(in, "name");
    if (!cJSON_IsString(n))
        return tg_err("operand %d missing", k);
    return pt2_dim(c, node, n->valuestring, tg_dim_const(0), d);
}

static int h_operator(pt2_ctx *c, const cJSON *node)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, "target");
    const char *fn = strchr(t->valuestring, '.') + 1;
    tg_dim a, b, r;
    int64_t x, y;
    if (operand_dim(c, node, 0, &a) < 0)
        return -1;
    if (!strcmp(fn, "neg")) {
        if (tg_dim_sub(tg_dim_const(0), a, &r) < 0)
            return -1;
        return pt2_bind_dim(c, pt2_out_name(node, 0), r);
    }
    if (operand_dim(c, node, 1, &b) < 0)
        return -1;
    int rc;
    if (!strcmp(fn, "add"))
        rc = tg_dim_add(a, b, &r);
    else if (!strcmp(fn, "sub"))
        rc = tg_dim_sub(a, b, &r);
    else if (!strcmp(fn, "mul"))
        rc = tg_dim_mul(a, b, &r);
    else if (tg_dim_is_const(a, &x) && tg_dim_is_const(b, &y)) {
        if (y == 0)
            return tg_err("division by zero");
        int64_t q = x / y - ((x % y != 0) && ((x < 0) != (y < 0)));   /* Python // */
        r = tg_dim_const(!strcmp(fn, "floordiv") ? q : x - q * y);
        rc = 0;
    } else if (!strcmp(fn, "floordiv"))
        rc = tg_dim_div(a, b, &r) < 0 ? tg_err("floor division of sizes is only supported "
                                               "when exact") : 0;
    else
        rc = tg_err("_operator.%s on dynamic sizes is not supported", fn);
    return rc < 0 ? -1 : pt2_bind_dim(c, pt2_out_name(node, 0), r);
}

/* getitem on a list of tensors (multi-output results are usually unpacked
 * already in the serialized graph). */
static int h_getitem(pt2_ctx *c, const cJSON *node)
{
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(node, "inputs");
    const cJSON *n0 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ins, 0), "name");
    const cJSON *n1 = cJSON_GetObjectItemCaseSensitive(cJSON_GetArrayItem(ins, 1), "name");
    int v[64], n;
    int64_t i;
    if (!cJSON_IsString(n0) || !cJSON_IsString(n1) ||
        pt2_tensors(c, node, n0->valuestring, v, 64, &n) < 0 ||
        pt2_int(c, node, n1->valuestring, 0, &i) < 0)
        return -1;
    if (i < 0)
        i += n;
    if (i < 0 || i >= n || v[i] < 0)
        return tg_err("getitem index %lld out of range", (long long)i);
    return pt2_set_out(c, 0, v[i]);
}

const pt2_op_entry pt2_ops_tensor[] = {
    {"neg", "default", h_unary}, {"abs", "default", h_unary}, {"relu", "default", h_unary},
    {"floor", "default", h_unary}, {"ceil", "default", h_unary}, {"round", "default", h_unary},
    {"exp", "default", h_unary}, {"log", "default", h_unary}, {"sqrt", "default", h_unary},
    {"rsqrt", "default", h_unary}, {"reciprocal", "default", h_unary},
    {"sin", "default", h_unary}, {"cos", "default", h_unary}, {"tanh", "default", h_unary},
    {"erf", "default", h_unary}, {"sigmoid", "default", h_unary},
    {"silu", "default", h_unary}, {"hardswish", "default", h_unary},
    {"hardsigmoid", "default", h_unary},
    {"gelu", "default", h_gelu}, {"leaky_relu", "default", h_leaky_relu},
    {"elu", "default", h_elu},
    {"clamp", "default Tensor", h_clamp}, {"clamp_min", "default Tensor", h_clamp},
    {"clamp_max", "default Tensor", h_clamp}, {"hardtanh", "default", h_clamp},
    {"relu6", "default", h_clamp},
    {"add", "Tensor Scalar", h_binary}, {"sub", "Tensor Scalar", h_binary},
    {"rsub", "Tensor Scalar", h_binary}, {"mul", "Tensor Scalar", h_binary},
    {"div", "Tensor Scalar Tensor_mode Scalar_mode", h_binary},
    {"true_divide", "Tensor Scalar", h_binary}, {"floor_divide", "default Scalar", h_binary},
    {"remainder", "Tensor Scalar", h_binary}, {"fmod", "Tensor Scalar", h_binary},
    {"pow", "Tensor_Tensor Tensor_Scalar Scalar", h_binary},
    {"maximum", "default", h_binary}, {"minimum", "default", h_binary},
    {"eq", "Tensor Scalar", h_binary}, {"ne", "Tensor Scalar", h_binary},
    {"lt", "Tensor Scalar", h_binary}, {"le", "Tensor Scalar", h_binary},
    {"gt", "Tensor Scalar", h_binary}, {"ge", "Tensor Scalar", h_binary},
    {"logical_and", "default", h_binary}, {"logical_or", "default", h_binary},
    {"logical_xor", "default", h_binary},
    {"bitwise_and", "Tensor Scalar", h_binary}, {"bitwise_or", "Tensor Scalar", h_binary},
    {"bitwise_xor", "Tensor Scalar", h_binary}, {"__and__", "Tensor Scalar", h_binary},
    {"__or__", "Tensor Scalar", h_binary}, {"__xor__", "Tensor Scalar", h_binary},
    {"logical_not", "default", h_logical_not}, {"bitwise_not", "default", h_logical_not},
    {"where", "self ScalarSelf ScalarOther Scalar", h_where},
    {"masked_fill", "Scalar Tensor", h_masked_fill},
    {"sum", "default dim_IntList", h_reduce}, {"mean", "default dim", h_reduce},
    {"amax", "default", h_reduce}, {"amin", "default", h_reduce},
    {"prod", "default dim_int", h_reduce}, {"any", "default dim dims", h_reduce},
    {"all", "default dim dims", h_reduce}, {"var", "default dim correction", h_reduce},
    {"std", "default dim correction", h_reduce}, {"max", "default dim other", h_reduce},
    {"min", "default dim other", h_reduce},
    {"argmax", "default", h_argmax}, {"argmin", "default", h_argmax},
    {"cumsum", "default", h_cumsum},
    {"softmax", "int", h_softmax}, {"_softmax", "default", h_softmax},
    {"log_softmax", "int", h_softmax}, {"_log_softmax", "default", h_softmax},
    {"clone", "default", h_identity}, {"alias", "default", h_identity},
    {"detach", "default", h_identity}, {"contiguous", "default", h_identity},
    {"lift_fresh_copy", "default", h_identity}, {"dropout", "default", h_identity},
    {"feature_dropout", "default", h_identity}, {"alpha_dropout", "default", h_identity},
    {"native_dropout", "default", h_identity},
    {"_assert_tensor_metadata", "default", h_drop}, {"_assert_scalar", "default", h_drop},
    {"sym_constrain_range", "default", h_drop},
    {"sym_constrain_range_for_size", "default", h_drop}, {"_assert_async", "msg", h_drop},
    {"to", "dtype dtype_layout device other", h_to}, {"_to_copy", "default", h_to},
    {"type_as", "default", h_to},
    {"full", "default", h_full}, {"full_like", "default", h_full},
    {"zeros", "default", h_full}, {"ones", "default", h_full},
    {"zeros_like", "default", h_full}, {"ones_like", "default", h_full},
    {"empty", "memory_format", h_full}, {"empty_like", "default", h_full},
    {"new_zeros", "default", h_full}, {"new_ones", "default", h_full},
    {"new_full", "default", h_full}, {"new_empty", "default", h_full},
    {"fill", "Scalar Tensor", h_fill}, {"zero", "default", h_fill}, {"copy", "default", h_copy},
    {"scalar_tensor", "default", h_scalar_tensor},
    {"arange", "default start start_step", h_arange},
    {"sym_size", "int", h_sym_size}, {"sym_numel", "default", h_sym_numel},
    {"_operator.add", "default", h_operator}, {"_operator.sub", "default", h_operator},
    {"_operator.mul", "default", h_operator}, {"_operator.floordiv", "default", h_operator},
    {"_operator.mod", "default", h_operator}, {"_operator.neg", "default", h_operator},
    {"_operator.getitem", "default", h_getitem},
    /* comparisons of sizes feed only assertions, which are dropped */
    {"_operator.eq", "default", h_drop}, {"_operator.ne", "default", h_drop},
    {"_operator.lt", "default", h_drop}, {"_operator.le", "default", h_drop},
    {"_operator.gt", "default", h_drop}, {"_operator.ge", "default", h_drop},
    {"_operator.and_", "default", h_drop}, {"_operator.or_", "default", h_drop},
    {"_operator.not_", "default", h_drop},
    {NULL, NULL, NULL},
};
