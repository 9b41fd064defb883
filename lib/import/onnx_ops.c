/* ONNX operators to tgraph ops. One function per operator family; the table at
 * the end names every supported op_type. Shape arithmetic (Shape, Gather,
 * Concat, Slice, ... over int64 shape vectors) is evaluated here on symbolic
 * dims, so that what feeds Reshape or Expand becomes a static attribute and a
 * dynamic batch survives. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"
#include "../ops/shape_util.h"
#include "../render.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"
#include "onnx_rt.h"

/* ---- elementwise --------------------------------------------------------------------- */

int onnx_map_unary(onnx_ctx *c, const onnx_op_map *m)
{
    return def_out(c, 0, unary_on(c, m->op, NULL, in_val(c, 0), 0, NULL));
}

/* Identity: the output is the input, whatever it stands for. */
static int map_alias(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *e = in_req(c, 0);
    if (!e || (m->op != TG_OP_IDENTITY && only_first_output(c))) return -1;
    if (e->kind == ONNX_ENT_VALUE) return def_out(c, 0, onnx_value(c, e));
    if (e->kind == ONNX_ENT_SYMS) return onnx_def_syms(c, N(c)->output[0], e->rank, e->nsyms, e->syms);
    void *copy = malloc(e->nbytes ? e->nbytes : 1);
    if (!copy) return tg_err("out of memory");
    memcpy(copy, e->data, e->nbytes);
    return onnx_def_const(c, N(c)->output[0], e->dtype, e->rank, e->dims, copy);
}

/* Dropout at inference: the input, and a mask of all true. training_mode
 * (opset 12 on: an input) must be a constant false: random dropout is refused. */
static int map_dropout(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *t = in_opt(c, 2);
    double train = 0;
    if (t && (t->kind != ONNX_ENT_CONST || onnx_scalar_f64(t, &train)))
        return tg_err("training_mode must be a constant (random dropout is not supported)");
    if (train != 0) return tg_err("training_mode=true (random dropout) is not supported");
    if (N(c)->n_output < 2 || !*N(c)->output[1]) return map_alias(c, m);
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    tg_attr a[3] = {tg_attr_dims("shape", s.rank, s.d), tg_attr_float("value", 1), tg_attr_dtype("dtype", TG_BOOL)};
    if (def_out(c, 0, x)) return -1;
    return def_out(c, 1, onnx_add(c, TG_OP_FULL, "mask", 0, NULL, 3, a));
}

static int map_leaky_relu(onnx_ctx *c, const onnx_op_map *m)
{
    tg_attr a = tg_attr_float("alpha", onnx_attr_float(N(c), "alpha", m->op == TG_OP_ELU ? 1.0 : 0.01));
    return def_out(c, 0, unary_on(c, m->op, NULL, in_val(c, 0), 1, &a));
}

static int map_gelu(onnx_ctx *c, const onnx_op_map *m)
{
    const char *ap = onnx_attr_string(N(c), "approximate", "none");
    if (strcmp(ap, "none") && strcmp(ap, "tanh")) return tg_err("Gelu approximate='%s'", ap);
    tg_attr a = tg_attr_string("approximate", ap);
    return def_out(c, 0, unary_on(c, TG_OP_GELU, NULL, in_val(c, 0), 1, &a));
}

/* HardSigmoid(alpha, beta) = clamp(alpha*x + beta, 0, 1); PyTorch's is alpha 1/6. */
static int map_hard_sigmoid(onnx_ctx *c, const onnx_op_map *m)
{
    double alpha = onnx_attr_float(N(c), "alpha", 0.2), beta = onnx_attr_float(N(c), "beta", 0.5);
    int x = in_val(c, 0);
    if (x < 0) return -1;
    if (fabs(alpha - 1.0 / 6) < 1e-6 && beta == 0.5)
        return def_out(c, 0, unary_on(c, TG_OP_HARDSIGMOID, NULL, x, 0, NULL));
    tg_dtype dt = dtype_of(c, x);
    int y = binary_on(c, TG_OP_MUL, "scale", x, scalar_const(c, "alpha", dt, alpha));
    y = y < 0 ? -1 : binary_on(c, TG_OP_ADD, "shift", y, scalar_const(c, "beta", dt, beta));
    tg_attr a[2] = {tg_attr_float("min", 0), tg_attr_float("max", 1)};
    return def_out(c, 0, y < 0 ? -1 : unary_on(c, TG_OP_CLAMP, NULL, y, 2, a));
}

/* log(1 + exp(x)) as relu(x) + log(1 + exp(-|x|)), which does not overflow. */
static int softplus_on(onnx_ctx *c, int x, const char *sfx)
{
    tg_dtype dt = dtype_of(c, x);
    int t = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL);
    t = t < 0 ? -1 : unary_on(c, TG_OP_NEG, "neg", t, 0, NULL);
    t = t < 0 ? -1 : unary_on(c, TG_OP_EXP, "exp", t, 0, NULL);
    t = t < 0 ? -1 : binary_on(c, TG_OP_ADD, "one_plus", t, scalar_const(c, "one", dt, 1));
    t = t < 0 ? -1 : unary_on(c, TG_OP_LOG, "log", t, 0, NULL);
    int r = t < 0 ? -1 : unary_on(c, TG_OP_RELU, "relu", x, 0, NULL);
    return r < 0 ? -1 : binary_on(c, TG_OP_ADD, sfx, r, t);
}

/* The activations ONNX defines as functions, in tgraph's ops:
 * Softplus, Mish x*tanh(softplus x), Softsign x/(1+|x|), Swish x*sigmoid(alpha x),
 * Selu gamma*elu(x, alpha), Celu alpha*elu(x/alpha, 1), ThresholdedRelu
 * x > alpha ? x : 0, Shrink (x < -lambd: x + bias; x > lambd: x - bias; else 0),
 * Sign (x itself where it is 0 or NaN). */
static int map_activation(onnx_ctx *c, const onnx_op_map *m)
{
    const char *t = N(c)->op_type;
    int x = in_val(c, 0), y = -1;
    if (x < 0) return -1;
    tg_dtype dt = dtype_of(c, x);
    double alpha = onnx_attr_float(N(c), "alpha", 1.0);
    if (!strcmp(t, "Softplus")) {
        y = softplus_on(c, x, NULL);
    } else if (!strcmp(t, "Mish")) {
        y = softplus_on(c, x, "softplus");
        y = y < 0 ? -1 : unary_on(c, TG_OP_TANH, "tanh", y, 0, NULL);
        y = y < 0 ? -1 : binary_on(c, TG_OP_MUL, NULL, x, y);
    } else if (!strcmp(t, "Softsign")) {
        y = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL);
        y = y < 0 ? -1 : binary_on(c, TG_OP_ADD, "one_plus", y, scalar_const(c, "one", dt, 1));
        y = y < 0 ? -1 : binary_on(c, TG_OP_DIV, NULL, x, y);
    } else if (!strcmp(t, "Swish")) {
        if (alpha == 1.0) return def_out(c, 0, unary_on(c, TG_OP_SILU, NULL, x, 0, NULL));
        y = binary_on(c, TG_OP_MUL, "scaled", x, scalar_const(c, "alpha", dt, alpha));
        y = y < 0 ? -1 : unary_on(c, TG_OP_SIGMOID, "sigmoid", y, 0, NULL);
        y = y < 0 ? -1 : binary_on(c, TG_OP_MUL, NULL, x, y);
    } else if (!strcmp(t, "Selu")) {
        tg_attr a = tg_attr_float("alpha", onnx_attr_float(N(c), "alpha", 1.67326319217681884765625));
        y = unary_on(c, TG_OP_ELU, "elu", x, 1, &a);
        y = y < 0 ? -1 : binary_on(c, TG_OP_MUL, NULL, y,
                                   scalar_const(c, "gamma", dt, onnx_attr_float(N(c), "gamma", 1.05070102214813232421875)));
    } else if (!strcmp(t, "Celu")) {
        tg_attr a = tg_attr_float("alpha", 1.0);
        if (alpha == 1.0) return def_out(c, 0, unary_on(c, TG_OP_ELU, NULL, x, 1, &a));
        y = binary_on(c, TG_OP_DIV, "scaled", x, scalar_const(c, "alpha", dt, alpha));
        y = y < 0 ? -1 : unary_on(c, TG_OP_ELU, "elu", y, 1, &a);
        y = y < 0 ? -1 : binary_on(c, TG_OP_MUL, NULL, y, scalar_const(c, "alpha_out", dt, alpha));
    } else if (!strcmp(t, "ThresholdedRelu")) {
        y = where_on(c, NULL, binary_on(c, TG_OP_GT, "over", x, scalar_const(c, "alpha", dt, alpha)), x,
                     scalar_const(c, "zero", dt, 0));
    } else if (!strcmp(t, "Shrink")) {
        double l = onnx_attr_float(N(c), "lambd", 0.5), b = onnx_attr_float(N(c), "bias", 0);
        int lo = binary_on(c, TG_OP_LT, "below", x, scalar_const(c, "neg_lambd", dt, -l));
        int hi = binary_on(c, TG_OP_GT, "above", x, scalar_const(c, "lambd", dt, l));
        int up = binary_on(c, TG_OP_ADD, "plus_bias", x, scalar_const(c, "bias", dt, b));
        int down = binary_on(c, TG_OP_SUB, "minus_bias", x, scalar_const(c, "bias_sub", dt, b));
        y = where_on(c, NULL, lo, up, where_on(c, "upper", hi, down, scalar_const(c, "zero", dt, 0)));
    } else {                                    /* Sign */
        int pos = binary_on(c, TG_OP_GT, "positive", x, scalar_const(c, "zero", dt, 0));
        int neg = binary_on(c, TG_OP_LT, "negative", x, scalar_const(c, "zero_neg", dt, 0));
        y = where_on(c, NULL, pos, scalar_const(c, "one", dt, 1),
                     where_on(c, "nonpositive", neg, scalar_const(c, "minus_one", dt, -1), x));
    }
    return def_out(c, 0, y);
}

/* Clip(x, min?, max?): bounds that are not constants are read at run time. */
static int map_clip(onnx_ctx *c, const onnx_op_map *m)
{
    tg_attr a[2];
    int na = 0, in[3] = {in_val(c, 0)}, nin = 1;
    const char *names[2] = {"min", "max"};
    if (c->opset < 11) {                        /* min and max were attributes */
        const Onnx__AttributeProto *lo = onnx_attr(N(c), "min"), *hi = onnx_attr(N(c), "max");
        if (lo) a[na++] = tg_attr_float("min", lo->f);
        if (hi) a[na++] = tg_attr_float("max", hi->f);
    }
    for (int i = 1; i <= 2 && c->opset >= 11; i++) {
        onnx_ent *e = in_opt(c, i);
        double v;
        if (!e) continue;
        if (e->kind != ONNX_ENT_CONST) {
            if ((in[nin] = onnx_value(c, e)) < 0) return -1;
            a[na++] = tg_attr_input(names[i - 1], nin++, TG_ATTR_FLOAT);
            continue;
        }
        if (onnx_scalar_f64(e, &v)) return -1;
        a[na++] = tg_attr_float(names[i - 1], v);
    }
    if (in[0] < 0) return -1;
    if (nin == 1) return def_out(c, 0, unary_on(c, TG_OP_CLAMP, NULL, in[0], na, a));
    for (int i = 0; i + 1 < na; i++)            /* the run-time ones last, as their inputs */
        if (a[i].kind == TG_ATTR_INPUT && a[i + 1].kind != TG_ATTR_INPUT) {
            tg_attr t = a[i];
            a[i] = a[i + 1];
            a[i + 1] = t;
        }
    tg_shape s = shape_of(c, in[0]);
    return def_out(c, 0, onnx_add_dynamic(c, TG_OP_CLAMP, NULL, nin, in, na, a, dtype_of(c, in[0]), &s));
}

bool onnx_is_f8(tg_dtype t)
{
    return t == TG_F8E4M3 || t == TG_F8E5M2 || t == TG_F8E4M3FNUZ || t == TG_F8E5M2FNUZ;
}

/* ONNX's float8 overflow rules on top of cast's own (e4m3fn and the fnuz types
 * saturate, e5m2 overflows to inf): with saturate, e5m2 clamps to +-57344 (NaN
 * kept); without, e4m3fn and the fnuz types turn what rounds past their
 * largest value (and inf) into NaN: 448 rounds down from below 464 and at it
 * (to even), 240 and 57344 (odd mantissas) below 248 and 61440 only. */
int onnx_f8_range(onnx_ctx *c, int x, tg_dtype to, bool saturate)
{
    tg_dtype dt = dtype_of(c, x);
    if (to == TG_F8E5M2 && saturate) {
        int hi = scalar_const(c, "max", dt, 57344), lo = scalar_const(c, "min", dt, -57344);
        int over = hi < 0 ? -1 : binary_on(c, TG_OP_GT, "over", x, hi);
        int under = lo < 0 || over < 0 ? -1 : binary_on(c, TG_OP_LT, "under", x, lo);
        int in1[3] = {over, hi, x};
        int y = under < 0 ? -1 : onnx_add(c, TG_OP_WHERE, "saturate_hi", 3, in1, 0, NULL);
        int in2[3] = {under, lo, y};
        return y < 0 ? -1 : onnx_add(c, TG_OP_WHERE, "saturate", 3, in2, 0, NULL);
    }
    if (to != TG_F8E5M2 && onnx_is_f8(to) && !saturate) {
        double limit = to == TG_F8E4M3 ? 464 : to == TG_F8E4M3FNUZ ? 248 : 61440;
        int ax = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL);
        int lim = scalar_const(c, "limit", dt, limit);
        int over = ax < 0 ? -1 : binary_on(c, to == TG_F8E4M3 ? TG_OP_GT : TG_OP_GE, "over", ax, lim);
        int in[3] = {over, scalar_const(c, "nan", dt, NAN), x};
        return over < 0 || in[1] < 0 ? -1 : onnx_add(c, TG_OP_WHERE, "overflow", 3, in, 0, NULL);
    }
    return x;
}

static int map_cast(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *e = in_req(c, 0);
    if (!e) return -1;
    tg_dtype to;
    if (m->op == TG_OP_CAST) {
        to = onnx_elem_dtype((int32_t)onnx_attr_int(N(c), "to", 0));
        if (to == TG_DTYPE_NONE) return tg_err("Cast to unsupported type %lld", (long long)onnx_attr_int(N(c), "to", 0));
    } else {                    /* CastLike */
        onnx_ent *like = in_req(c, 1);
        if (!like) return -1;
        int lv = like->kind == ONNX_ENT_VALUE ? onnx_value(c, like) : 0;
        if (lv < 0) return -1;
        to = like->kind == ONNX_ENT_VALUE ? dtype_of(c, lv) : like->kind == ONNX_ENT_CONST ? like->dtype : TG_I64;
    }
    if (e->kind == ONNX_ENT_SYMS && (to == TG_I64 || to == TG_I32))
        return onnx_def_syms(c, N(c)->output[0], e->rank, e->nsyms, e->syms);
    if (e->kind == ONNX_ENT_CONST && !onnx_is_f8(to)) {
        /* a constant stays one (CastLike's like may be run-time data) */
        size_t n = e->nbytes / tg_dtype_size(e->dtype);
        void *p = malloc(n ? n * tg_dtype_size(to) : 1);
        if (!p) return tg_err("out of memory");
        tg_convert(to, p, e->dtype, e->data, n);
        return onnx_def_const(c, N(c)->output[0], to, e->rank, e->dims, p);
    }
    int x = onnx_value(c, e);
    if (x < 0) return -1;
    if (dtype_of(c, x) == to) return def_out(c, 0, x);
    if (onnx_is_f8(to) && tg_dtype_is_float(dtype_of(c, x)) &&
        (x = onnx_f8_range(c, x, to, onnx_attr_int(N(c), "saturate", 1) != 0)) < 0)
        return -1;
    tg_attr a = tg_attr_dtype("dtype", to);
    return def_out(c, 0, unary_on(c, TG_OP_CAST, NULL, x, 1, &a));
}

/* BitCast (opset 26): the same bytes as another type of the same size. */
static int map_bitcast(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    int64_t code = onnx_attr_int(N(c), "to", 0);
    tg_dtype to = onnx_elem_dtype((int32_t)code);
    if (to == TG_DTYPE_NONE) return tg_err("BitCast to unsupported type %lld", (long long)code);
    tg_attr a = tg_attr_dtype("dtype", to);
    return def_out(c, 0, unary_on(c, TG_OP_BITCAST, NULL, in_val(c, 0), 1, &a));
}

/* Shape arithmetic: an elementwise op over int64 shape vectors (or scalars), at
 * least one of them symbolic. Returns 1 when the inputs are not of that kind or
 * the result is no dim expression. */
static int fold_shape_binary(onnx_ctx *c, tg_op op)
{
    onnx_ent *a = in_req(c, 0), *b = a ? in_req(c, 1) : NULL;
    if (!a || !b) return -1;
    if (a->kind == ONNX_ENT_VALUE || b->kind == ONNX_ENT_VALUE) return 1;
    if (a->kind != ONNX_ENT_SYMS && b->kind != ONNX_ENT_SYMS) return 1;
    tg_dim x[MAXV], y[MAXV], r[MAXV];
    int nx, ny;
    if (onnx_dim_list(c, a, MAXV, x, &nx) || onnx_dim_list(c, b, MAXV, y, &ny)) return -1;
    int n = nx > ny ? nx : ny;
    if ((nx != n && nx != 1) || (ny != n && ny != 1)) return tg_err("shape vectors of %d and %d elements", nx, ny);
    for (int i = 0; i < n; i++) {
        tg_dim p = x[nx == 1 ? 0 : i], q = y[ny == 1 ? 0 : i];
        int rc = op == TG_OP_ADD ? tg_dim_add(p, q, &r[i]) : op == TG_OP_SUB ? tg_dim_sub(p, q, &r[i])
               : op == TG_OP_MUL ? tg_dim_mul(p, q, &r[i]) : tg_dim_div(p, q, &r[i]);
        if (rc) {               /* not a dim expression (an inexact quotient): computed at run time */
            tg_err_clear();
            return 1;
        }
    }
    return def_shape_vec(c, a->rank > b->rank ? a->rank : b->rank, n, r);
}

/* Opset < 7: with broadcast=1, B's dims line up with A's from attribute axis
 * on (absent: from the end, which is NumPy's rule); trailing ones make it NumPy. */
static int legacy_broadcast(onnx_ctx *c, int a, int b)
{
    const Onnx__AttributeProto *ax = onnx_attr(N(c), "axis");
    if (!onnx_attr_int(N(c), "broadcast", 0) || !ax) return b;
    tg_shape sa = shape_of(c, a), sb = shape_of(c, b);
    int axis = 0;
    if (axis_norm(ax->i, sa.rank, &axis)) return -1;
    int trail = sa.rank - axis - sb.rank;
    if (trail < 0) return tg_err("broadcast axis %d leaves no room for B's %d dims", axis, sb.rank);
    for (int i = 0; i < trail; i++) sb.d[sb.rank++] = tg_dim_const(1);
    tg_attr r = tg_attr_dims("shape", sb.rank, sb.d);
    return trail ? unary_on(c, TG_OP_RESHAPE, "broadcast", b, 1, &r) : b;
}

int onnx_map_binary(onnx_ctx *c, const onnx_op_map *m)
{
    if (m->op == TG_OP_ADD || m->op == TG_OP_SUB || m->op == TG_OP_MUL || m->op == TG_OP_DIV) {
        int rc = fold_shape_binary(c, m->op);
        if (rc <= 0) return rc;
    }
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    if (b < 0 || (c->opset < 7 && (b = legacy_broadcast(c, a, b)) < 0)) return -1;
    if (m->op == TG_OP_POW && dtype_of(c, b) != dtype_of(c, a)) {
        tg_attr t = tg_attr_dtype("dtype", dtype_of(c, a));
        if ((b = unary_on(c, TG_OP_CAST, "exponent", b, 1, &t)) < 0) return -1;
    }
    return def_out(c, 0, binary_on(c, m->op, NULL, a, b));
}

/* Mod: fmod=0 is the floor remainder (the divisor's sign), fmod=1 C's fmod. */
static int map_mod(onnx_ctx *c, const onnx_op_map *m)
{
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    if (b < 0) return -1;
    bool fm = onnx_attr_int(N(c), "fmod", 0);
    return def_out(c, 0, binary_on(c, fm ? TG_OP_FMOD : TG_OP_REMAINDER, NULL, a, b));
}

/* IsNaN is x != x; IsInf compares with the infinities it detects. */
static int map_isnan_isinf(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    if (m->op == TG_OP_NE) return def_out(c, 0, binary_on(c, TG_OP_NE, NULL, x, x));
    bool pos = onnx_attr_int(N(c), "detect_positive", 1), neg = onnx_attr_int(N(c), "detect_negative", 1);
    tg_dtype dt = dtype_of(c, x);
    if (!pos && !neg) {
        tg_shape s = shape_of(c, x);
        tg_attr a[3] = {tg_attr_dims("shape", s.rank, s.d), tg_attr_float("value", 0), tg_attr_dtype("dtype", TG_BOOL)};
        return def_out(c, 0, onnx_add(c, TG_OP_FULL, NULL, 0, NULL, 3, a));
    }
    if (pos && neg && (x = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL)) < 0) return -1;
    return def_out(c, 0, binary_on(c, TG_OP_EQ, NULL, x, scalar_const(c, "inf", dt, neg && !pos ? -INFINITY : INFINITY)));
}

/* Min, Max, Sum over any number of inputs; Mean is the Sum divided by the count. */
static int map_variadic(onnx_ctx *c, const onnx_op_map *m)
{
    bool mean = m->op == TG_OP_DIV;
    int acc = in_val(c, 0), n = (int)N(c)->n_input;
    for (int i = 1; acc >= 0 && i < n; i++) {
        int b = in_val(c, i);
        acc = b < 0 ? -1 : binary_on(c, mean ? TG_OP_ADD : m->op, i + 1 < n || mean ? "partial" : NULL, acc, b);
    }
    if (mean && acc >= 0) acc = binary_on(c, TG_OP_DIV, NULL, acc, scalar_const(c, "count", dtype_of(c, acc), n));
    return def_out(c, 0, acc);
}

static int map_where(onnx_ctx *c, const onnx_op_map *m)
{
    int in[3];
    for (int i = 0; i < 3; i++)
        if ((in[i] = in_val(c, i)) < 0) return -1;
    return def_out(c, 0, onnx_add(c, TG_OP_WHERE, NULL, 3, in, 0, NULL));
}

/* ---- reductions and softmax ------------------------------------------------------------- */

/* Softmax, LogSoftmax. Before opset 13 the input is seen as 2-D, [prod(dims
 * before axis), prod(the rest)] (axis default 1), and normalized over its rows. */
static int map_softmax(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    int axis = 0;
    if (c->opset >= 13 || axis_norm(onnx_attr_int(N(c), "axis", 1), s.rank, &axis) || axis >= s.rank - 1) {
        tg_err_clear();
        tg_attr a = tg_attr_int("axis", onnx_attr_int(N(c), "axis", c->opset >= 13 ? -1 : 1));
        return def_out(c, 0, unary_on(c, m->op, NULL, x, 1, &a));
    }
    tg_dim d[2] = {tg_dim_const(1), tg_dim_const(1)};
    for (int i = 0; i < s.rank; i++)
        if (tg_dim_mul(d[i >= axis], s.d[i], &d[i >= axis])) return -1;
    tg_attr r = tg_attr_dims("shape", 2, d), a = tg_attr_int("axis", 1), back = tg_attr_dims("shape", s.rank, s.d);
    int y = unary_on(c, TG_OP_RESHAPE, "rows", x, 1, &r);
    y = y < 0 ? -1 : unary_on(c, m->op, "rowwise", y, 1, &a);
    return def_out(c, 0, y < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, NULL, y, 1, &back));
}

/* The axes of a reduction: constant (n < 0: all), or read at run time from value
 * rt, n of them; then the reductions declare their outputs, with keepdim 1 and 0,
 * in data symbols that the interpreter binds (tgraph-format(5)). */
typedef struct {
    int n;
    int64_t axes[TG_MAX_RANK];
    int rt;
    tg_shape kept, dropped;
} reduce_axes;

/* The cached declared outputs for axes rt on shape xs, a new entry when none. */
static onnx_rt_reduce *rt_reduce_entry(onnx_ctx *c, int rt, const tg_shape *xs)
{
    for (int i = 0; i < c->nrt_reduce; i++)
        if (c->rt_reduce[i].rt == rt && tg_shape_eq(&c->rt_reduce[i].xs, xs))
            return &c->rt_reduce[i];
    if (c->nrt_reduce == TG_MAX_SYMS)
        return tg_err("its output's shape is only known at run time, and too many symbols (at "
                      "most %d)", TG_MAX_SYMS), NULL;
    onnx_rt_reduce *e = &c->rt_reduce[c->nrt_reduce++];
    memset(e, 0, sizeof *e);
    e->rt = rt;
    e->xs = *xs;
    return e;
}

/* Axes from value rt at run time: n is its static length; the declared outputs
 * keep a constant 1 where x has one and take a data symbol elsewhere. */
static int runtime_axes(onnx_ctx *c, int x, int rt, bool want_kept, bool want_dropped,
                        reduce_axes *ra)
{
    const tg_value *a = &c->g->values[rt];
    int64_t n = 1;
    if (!tg_dtype_is_int(a->dtype) || a->shape.rank > 1 ||
        (a->shape.rank == 1 && !tg_dim_is_const(a->shape.d[0], &n)))
        return tg_err("'%s' (the axes) must be a vector of integers of static length", a->name);
    tg_shape xs = shape_of(c, x);
    if (n > xs.rank) return tg_err("%lld axes for rank %d", (long long)n, xs.rank);
    ra->n = (int)n;
    ra->rt = n ? rt : -1;                   /* no axes: a constant case */
    if (!n) return 0;
    onnx_rt_reduce *e = rt_reduce_entry(c, rt, &xs);
    if (!e) return -1;
    int64_t lo, hi, top = 1;
    for (int k = 0; k < xs.rank; k++) {
        tg_dim_range(xs.d[k], c->g->sym, &lo, &hi);
        top = hi > top ? hi : top;
        if (e->has_kept || !want_kept) continue;
        e->kept.d[k] = tg_dim_const(1);
        if (!tg_dim_eq(xs.d[k], tg_dim_const(1)) && data_dim(c, hi, &e->kept.d[k])) return -1;
    }
    e->kept.rank = xs.rank;
    e->has_kept |= want_kept;
    e->dropped.rank = xs.rank - (int)n;
    for (int k = 0; want_dropped && !e->has_dropped && k < e->dropped.rank; k++)
        if (data_dim(c, top, &e->dropped.d[k])) return -1;
    e->has_dropped |= want_dropped;
    ra->kept = e->kept;
    ra->dropped = e->dropped;
    return 0;
}

/* A reduction over ra's axes, keepdim as given. */
static int reduce_ax(onnx_ctx *c, tg_op op, const char *sfx, int x, const reduce_axes *ra, int keep)
{
    tg_attr a[2] = {tg_attr_int("keepdim", keep), tg_attr_ints("axes", ra->n, ra->axes)};
    if (ra->rt < 0) return unary_on(c, op, sfx, x, ra->n < 0 ? 1 : 2, a);
    int in[2] = {x, ra->rt};
    a[1] = tg_attr_input("axes", 1, TG_ATTR_INTS);
    return onnx_add_dynamic(c, op, sfx, 2, in, 2, a, dtype_of(c, x), keep ? &ra->kept : &ra->dropped);
}

/* A reduction over constant axes (n < 0: all). */
static int reduce_on(onnx_ctx *c, tg_op op, const char *sfx, int x, int n, const int64_t *axes, int keep)
{
    reduce_axes ra = {.n = n, .rt = -1};
    for (int k = 0; k < n; k++) ra.axes[k] = axes[k];
    return reduce_ax(c, op, sfx, x, &ra, keep);
}

/* Node op on x whose last attribute is run-time input 1 (value rt): its output
 * has x's dtype and shape (an attribute such as Trilu's k or CumSum's axis). */
static int same_shape_rt(onnx_ctx *c, tg_op op, int x, int rt, int nattr, const tg_attr *a)
{
    int in[2] = {x, rt};
    tg_shape s = shape_of(c, x);
    return onnx_add_dynamic(c, op, NULL, 2, in, nattr, a, dtype_of(c, x), &s);
}

/* The Reduce* family. Those without an op of their own are made of one:
 * L1 = sum |x|, L2 = sqrt(sum x^2), SumSquare = sum x^2, LogSum = log sum x,
 * LogSumExp = log(sum exp(x - max)) + max (the max keeps exp from overflowing).
 * m->op names the extra step: ABS, SQRT, MUL, LOG, EXP. Axes from an input that
 * is not a constant are read at run time. */
static int map_reduce(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    reduce_axes ra = {.n = -1, .rt = -1};
    int keep = (int)onnx_attr_int(N(c), "keepdims", 1);
    tg_op op = m->op;
    onnx_ent *ax = in_opt(c, 1);
    if (ax && ax->kind != ONNX_ENT_CONST) {
        int rt = onnx_value(c, ax);
        if (rt < 0 || runtime_axes(c, x, rt, keep || op == TG_OP_EXP, !keep, &ra)) return -1;
    } else if (ax) {
        if (onnx_int_list(ax, TG_MAX_RANK, ra.axes, &ra.n)) return -1;
    } else if (attr_ints(c, "axes", TG_MAX_RANK, ra.axes, &ra.n))
        return -1;
    if (ra.n == 0) ra.n = -1;           /* empty axes: all, unless noop_with_empty_axes */
    switch (op) {
    case TG_OP_ABS: case TG_OP_SQRT: case TG_OP_MUL: case TG_OP_LOG: case TG_OP_EXP: break;
    default:
        if (ra.n < 0 && onnx_attr_int(N(c), "noop_with_empty_axes", 0)) return def_out(c, 0, x);
        if (dtype_of(c, x) == TG_BOOL && (op == TG_OP_REDUCE_MAX || op == TG_OP_REDUCE_MIN)) {
            /* any / all: the max or min of the 0/1 bytes */
            int r = reduce_ax(c, op, "u8", cast_as(c, x, TG_U8, "u8_in"), &ra, keep);
            return def_out(c, 0, cast_as(c, r, TG_BOOL, NULL));
        }
        return def_out(c, 0, reduce_ax(c, op, NULL, x, &ra, keep));
    }
    if (ra.n < 0 && onnx_attr_int(N(c), "noop_with_empty_axes", 0)) {
        /* no reduction: the elementwise part alone */
        if (op == TG_OP_ABS || op == TG_OP_LOG) return def_out(c, 0, unary_on(c, op, NULL, x, 0, NULL));
        if (op == TG_OP_MUL) return def_out(c, 0, binary_on(c, TG_OP_MUL, NULL, x, x));
        if (op == TG_OP_SQRT) return def_out(c, 0, unary_on(c, TG_OP_ABS, NULL, x, 0, NULL));
        return def_out(c, 0, x);                /* LogSumExp of one element */
    }
    int t = x, mx = -1;
    if (op == TG_OP_ABS) t = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL);
    else if (op == TG_OP_SQRT || op == TG_OP_MUL) t = binary_on(c, TG_OP_MUL, "square", x, x);
    else if (op == TG_OP_EXP) {
        mx = reduce_ax(c, TG_OP_REDUCE_MAX, "max", x, &ra, 1);
        int d = mx < 0 ? -1 : binary_on(c, TG_OP_SUB, "shifted", x, mx);
        t = d < 0 ? -1 : unary_on(c, TG_OP_EXP, "exp", d, 0, NULL);
    }
    bool last = op == TG_OP_ABS || op == TG_OP_MUL;
    int r = t < 0 ? -1 : reduce_ax(c, TG_OP_REDUCE_SUM, last ? NULL : "sum", t, &ra, keep);
    if (r < 0 || last) return def_out(c, 0, r);
    if (op == TG_OP_SQRT) return def_out(c, 0, unary_on(c, TG_OP_SQRT, NULL, r, 0, NULL));
    if (op == TG_OP_LOG) return def_out(c, 0, unary_on(c, TG_OP_LOG, NULL, r, 0, NULL));
    int lg = unary_on(c, TG_OP_LOG, "log", r, 0, NULL);
    if (lg >= 0 && !keep) mx = reduce_ax(c, TG_OP_REDUCE_MAX, "max_out", x, &ra, 0);
    return def_out(c, 0, lg < 0 || mx < 0 ? -1 : binary_on(c, TG_OP_ADD, NULL, lg, mx));
}

/* ArgMax, ArgMin. select_last_index: the first index of the reversed axis,
 * counted back from its end (the axis must have a static size). */
static int map_arg_reduce(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), axis = 0;
    if (x < 0) return -1;
    tg_attr a[2] = {tg_attr_int("axis", onnx_attr_int(N(c), "axis", 0)),
                    tg_attr_int("keepdim", onnx_attr_int(N(c), "keepdims", 1))};
    if (!onnx_attr_int(N(c), "select_last_index", 0)) return def_out(c, 0, unary_on(c, m->op, NULL, x, 2, a));
    tg_shape s = shape_of(c, x);
    int64_t len;
    if (axis_norm(onnx_attr_int(N(c), "axis", 0), s.rank, &axis)) return -1;
    if (!tg_dim_is_const(s.d[axis], &len) || len < 1 || len > INT32_MAX)
        return tg_err("select_last_index=1 needs a static, non-empty axis");
    tg_dim end = tg_dim_const(-1);
    tg_attr r[4] = {tg_attr_int("start", len - 1), tg_attr_dims("end", 1, &end), tg_attr_int("step", -1),
                    tg_attr_dtype("dtype", TG_I64)};
    int idx = onnx_add(c, TG_OP_ARANGE, "reversed", 0, NULL, 4, r);
    tg_attr ia = tg_attr_int("axis", axis);
    int in[2] = {x, idx};
    int rev = idx < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "reverse", 2, in, 1, &ia);
    int first = rev < 0 ? -1 : unary_on(c, m->op, "first", rev, 2, a);
    int last = first < 0 ? -1 : scalar_const(c, "last", TG_I64, (double)(len - 1));
    return def_out(c, 0, last < 0 ? -1 : binary_on(c, TG_OP_SUB, NULL, last, first));
}

/* LpNormalization: x / ||x||_p along axis (p 1 or 2), 0 where the norm is 0. */
static int map_lp_norm(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), axis = 0;
    if (x < 0) return -1;
    int64_t p = onnx_attr_int(N(c), "p", 2);
    if (p != 1 && p != 2) return tg_err("p=%lld (only 1 and 2 are defined)", (long long)p);
    if (axis_norm(onnx_attr_int(N(c), "axis", -1), shape_of(c, x).rank, &axis)) return -1;
    int64_t ax = axis;
    int t = p == 1 ? unary_on(c, TG_OP_ABS, "abs", x, 0, NULL) : binary_on(c, TG_OP_MUL, "square", x, x);
    int nrm = t < 0 ? -1 : reduce_on(c, TG_OP_REDUCE_SUM, "sum", t, 1, &ax, 1);
    if (nrm >= 0 && p == 2) nrm = unary_on(c, TG_OP_SQRT, "norm", nrm, 0, NULL);
    int zero = nrm < 0 ? -1 : scalar_const(c, "zero", dtype_of(c, x), 0);
    int q = zero < 0 ? -1 : binary_on(c, TG_OP_DIV, "quotient", x, nrm);
    int isz = q < 0 ? -1 : binary_on(c, TG_OP_EQ, "is_zero", nrm, zero);
    int in[3] = {isz, zero, q};
    return def_out(c, 0, isz < 0 ? -1 : onnx_add(c, TG_OP_WHERE, NULL, 3, in, 0, NULL));
}

/* Hardmax: 1 at the first maximum along axis, 0 elsewhere: the argmax
 * compared with the positions along the axis (a static size). Before opset 13
 * the input is seen as 2-D from axis on, as for Softmax. */
static int map_hardmax(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), axis = 0;
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x), w = s;
    if (axis_norm(onnx_attr_int(N(c), "axis", c->opset >= 13 ? -1 : 1), s.rank, &axis)) return -1;
    if (c->opset < 13) {                        /* [dims before axis, the rest] */
        tg_dim d[2] = {tg_dim_const(1), tg_dim_const(1)};
        for (int i = 0; i < s.rank; i++)
            if (tg_dim_mul(d[i >= axis], s.d[i], &d[i >= axis])) return -1;
        tg_attr r = tg_attr_dims("shape", 2, d);
        if ((x = unary_on(c, TG_OP_RESHAPE, "rows", x, 1, &r)) < 0) return -1;
        w = shape_of(c, x);
        axis = 1;
    }
    int64_t len;
    if (!tg_dim_is_const(w.d[axis], &len)) return tg_err("the axis must have a static size");
    tg_attr a[2] = {tg_attr_int("axis", axis), tg_attr_int("keepdim", 1)};
    int am = unary_on(c, TG_OP_ARGMAX, "argmax", x, 2, a);
    tg_dim end = tg_dim_const(len);
    tg_attr r[4] = {tg_attr_int("start", 0), tg_attr_dims("end", 1, &end), tg_attr_int("step", 1),
                    tg_attr_dtype("dtype", TG_I64)};
    int pos = am < 0 ? -1 : onnx_add(c, TG_OP_ARANGE, "positions", 0, NULL, 4, r);
    tg_dim pd[TG_MAX_RANK];
    for (int i = 0; i < w.rank; i++) pd[i] = tg_dim_const(i == axis ? len : 1);
    tg_attr pr = tg_attr_dims("shape", w.rank, pd), ca = tg_attr_dtype("dtype", dtype_of(c, x));
    pos = pos < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, "positions_axis", pos, 1, &pr);
    int hit = pos < 0 ? -1 : binary_on(c, TG_OP_EQ, "hit", pos, am);
    int y = hit < 0 ? -1 : unary_on(c, TG_OP_CAST, c->opset < 13 ? "one_hot" : NULL, hit, 1, &ca);
    if (y < 0 || c->opset >= 13) return def_out(c, 0, y);
    tg_attr back = tg_attr_dims("shape", s.rank, s.d);
    return def_out(c, 0, unary_on(c, TG_OP_RESHAPE, NULL, y, 1, &back));
}

/* CumSum: the axis a constant; exclusive and reverse as the cumsum op has them. */
static int map_cumsum(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *ax = x < 0 ? NULL : in_req(c, 1);
    int64_t axis;
    int n;
    if (!ax) return -1;
    tg_attr a[3] = {tg_attr_int("exclusive", onnx_attr_int(N(c), "exclusive", 0)),
                    tg_attr_int("reverse", onnx_attr_int(N(c), "reverse", 0)), tg_attr_input("axis", 1, TG_ATTR_INT)};
    if (ax->kind != ONNX_ENT_CONST) {          /* the axis read at run time */
        int rt = onnx_value(c, ax);
        return def_out(c, 0, rt < 0 ? -1 : same_shape_rt(c, TG_OP_CUMSUM, x, rt, 3, a));
    }
    if (onnx_int_list(ax, 1, &axis, &n)) return -1;
    a[2] = tg_attr_int("axis", axis);
    return def_out(c, 0, unary_on(c, TG_OP_CUMSUM, NULL, x, 3, a));
}

/* ---- linear algebra ---------------------------------------------------------------------- */

static int map_matmul(onnx_ctx *c, const onnx_op_map *m)
{
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1);
    return def_out(c, 0, b < 0 ? -1 : binary_on(c, TG_OP_MATMUL, NULL, a, b));
}

/* Gemm: Y = alpha * A' * B' + beta * C. A weight B becomes a linear layer. */
static int map_gemm(onnx_ctx *c, const onnx_op_map *m)
{
    int a = in_val(c, 0), b = a < 0 ? -1 : in_val(c, 1), cc = b < 0 ? -1 : in_val_opt(c, 2);
    if (b < 0 || (cc < 0 && in_opt(c, 2))) return -1;
    double alpha = onnx_attr_float(N(c), "alpha", 1), beta = onnx_attr_float(N(c), "beta", 1);
    int64_t perm[2] = {1, 0};
    tg_attr tp = tg_attr_ints("perm", 2, perm);
    if (onnx_attr_int(N(c), "transA", 0) && (a = unary_on(c, TG_OP_PERMUTE, "transA", a, 1, &tp)) < 0) return -1;
    /* linear wants the weight as [N, K]: that is B when transB, else B transposed. */
    if (!onnx_attr_int(N(c), "transB", 0) && (b = unary_on(c, TG_OP_PERMUTE, "transB", b, 1, &tp)) < 0) return -1;
    tg_dtype dt = dtype_of(c, a);
    /* a bias that broadcasts (one element, or a row) is added after the product */
    bool bias_fits = cc >= 0 && beta == 1 && alpha == 1 && shape_of(c, cc).rank == 1 &&
                     tg_dim_eq(shape_of(c, cc).d[0], shape_of(c, b).d[0]);
    int in[3] = {a, b, bias_fits ? cc : -1};
    int y = onnx_add(c, TG_OP_LINEAR, bias_fits || cc < 0 ? NULL : "linear", 3, in, 0, NULL);
    if (y >= 0 && alpha != 1) y = binary_on(c, TG_OP_MUL, "alpha", y, scalar_const(c, "alpha", dt, alpha));
    if (y >= 0 && cc >= 0 && !bias_fits) {
        int bc = cc;
        if (beta != 1) bc = binary_on(c, TG_OP_MUL, "beta", cc, scalar_const(c, "beta", dt, beta));
        y = bc < 0 ? -1 : binary_on(c, TG_OP_ADD, NULL, y, bc);
    }
    return def_out(c, 0, y);
}

/* total padding (negative: extension) split over the two ends, as ONNX's
 * reference does with floor division: the odd one at the end for upper. */
static void split_pad(int64_t total, bool upper, int64_t *begin, int64_t *end)
{
    int64_t half = total >= 0 ? total / 2 : -((-total + 1) / 2);
    *begin = upper ? half : total - half;
    *end = total - *begin;
}

/* Explicit pads [begin..., end...] for auto_pad SAME_* from static spatial sizes.
 * Conv and the pools aim at out = ceil(in / stride); ConvTranspose at in * stride,
 * cropping total = stride*(in-1) + output_padding + span - in*stride. An odd total
 * puts the extra one at the end for SAME_UPPER, at the start for SAME_LOWER. */
static int auto_pads(onnx_ctx *c, const tg_shape *x, int nsp, const int64_t *k, const int64_t *st,
                     const int64_t *dil, const int64_t *outpad, int64_t *pads)
{
    const char *ap = onnx_attr_string(N(c), "auto_pad", "NOTSET");
    if (!strcmp(ap, "NOTSET")) return 0;
    if (!strcmp(ap, "VALID")) {
        memset(pads, 0, sizeof *pads * 2 * nsp);
        return 0;
    }
    bool upper = !strcmp(ap, "SAME_UPPER");
    if (!upper && strcmp(ap, "SAME_LOWER")) return tg_err("auto_pad '%s' is not one ONNX defines", ap);
    for (int i = 0; i < nsp; i++) {
        int64_t in;
        if (!tg_dim_is_const(x->d[2 + i], &in)) return tg_err("auto_pad %s on a dynamic spatial size", ap);
        if (in > INT32_MAX) return tg_err("spatial size %lld too large", (long long)in);
        int64_t span = (k[i] - 1) * dil[i] + 1, total;
        if (outpad)
            total = st[i] * (in - 1) + outpad[i] + span - in * st[i];
        else
            total = ((in + st[i] - 1) / st[i] - 1) * st[i] + span - in;
        if (total < 0 && !outpad) total = 0;
        split_pad(total, upper, &pads[i], &pads[nsp + i]);
    }
    return 0;
}

/* Read kernel/stride/dilation/pads [begin..., end...] for conv and pools.
 * outpad: ConvTranspose's output_padding (NULL for the others). */
int onnx_window_attrs(onnx_ctx *c, const tg_shape *x, const tg_shape *w, int64_t *k,
                        int64_t *st, int64_t *dil, const int64_t *outpad, int64_t *pads, int *nsp_out)
{
    int nsp = x->rank - 2, n;
    if (nsp < 1 || nsp > 3) return tg_err("input of rank %d: expected 3 to 5", x->rank);
    memset(pads, 0, sizeof *pads * 6);
    if (attr_ints(c, "kernel_shape", 3, k, &n)) return -1;
    if (n < 0) {
        if (!w) return tg_err("kernel_shape is required");
        for (int i = 0; i < nsp; i++)
            if (!tg_dim_is_const(w->d[2 + i], &k[i])) return tg_err("dynamic kernel size");
    } else if (n != nsp) return tg_err("kernel_shape has %d values for %d spatial dims", n, nsp);
    if (attr_ints(c, "strides", 3, st, &n) || (n >= 0 && n != nsp)) return n >= 0 ? tg_err("bad strides") : -1;
    if (n < 0) for (int i = 0; i < nsp; i++) st[i] = 1;
    if (attr_ints(c, "dilations", 3, dil, &n) || (n >= 0 && n != nsp)) return n >= 0 ? tg_err("bad dilations") : -1;
    if (n < 0) for (int i = 0; i < nsp; i++) dil[i] = 1;
    if (attr_ints(c, "pads", 6, pads, &n) || (n >= 0 && n != 2 * nsp)) return n >= 0 ? tg_err("bad pads") : -1;
    for (int i = 0; i < nsp; i++)
        if (k[i] < 1 || st[i] < 1 || dil[i] < 1 || k[i] > INT32_MAX || st[i] > INT32_MAX || dil[i] > INT32_MAX)
            return tg_err("kernel, stride and dilation must be positive");
    for (int i = 0; i < 2 * nsp; i++)
        if (pads[i] < -INT32_MAX || pads[i] > INT32_MAX) return tg_err("pads out of range");
    if (auto_pads(c, x, nsp, k, st, dil, outpad, pads)) return -1;
    *nsp_out = nsp;
    return 0;
}

/* x padded explicitly on its spatial dims: pads [begin..., end...], value v. */
static int pad_spatial(onnx_ctx *c, int x, int nsp, const int64_t *pads, double v, const char *sfx)
{
    int rank = 2 + nsp;
    int64_t p[2 * TG_MAX_RANK] = {0};
    for (int i = 0; i < nsp; i++) {
        p[2 + i] = pads[i];
        p[rank + 2 + i] = pads[nsp + i];
    }
    tg_attr a[2] = {tg_attr_ints("pads", 2 * rank, p), tg_attr_float("value", v)};
    return unary_on(c, TG_OP_PAD, sfx, x, 2, a);
}

static bool pads_symmetric(int nsp, const int64_t *pads)
{
    for (int i = 0; i < nsp; i++)
        if (pads[i] != pads[nsp + i]) return false;
    return true;
}

/* ConvTranspose: pads crop the full result [s*(in-1) + span] at both ends and
 * output_padding extends its end. torch's form (one padding for both ends,
 * output_padding < stride or dilation) when it fits; otherwise the full result
 * without bias, cropped or extended by a pad op, plus the bias. */
int onnx_conv_transpose(onnx_ctx *c, int x, int w, int b, int nsp, const int64_t *st,
                        const int64_t *dil, const int64_t *pads, int64_t *op, tg_attr *a)
{
    int64_t zero[3] = {0, 0, 0}, cut[6];
    bool torch_form = pads_symmetric(nsp, pads);
    for (int i = 0; i < nsp; i++)
        torch_form &= pads[i] >= 0 && op[i] >= 0 && (op[i] < st[i] || op[i] < dil[i]);
    int in[3] = {x, w, torch_form ? b : -1};
    if (torch_form) return onnx_add(c, TG_OP_CONV, NULL, 3, in, 6, a);
    a[1] = tg_attr_ints("padding", nsp, zero);
    a[5] = tg_attr_ints("output_padding", nsp, zero);
    int y = onnx_add(c, TG_OP_CONV, "full", 2, in, 6, a);
    for (int i = 0; i < nsp; i++) {
        cut[i] = -pads[i];
        cut[nsp + i] = op[i] - pads[nsp + i];
    }
    y = y < 0 ? -1 : pad_spatial(c, y, nsp, cut, 0, b < 0 ? NULL : "crop");
    if (y < 0 || b < 0) return y;
    tg_dim bd[TG_MAX_RANK];
    bd[0] = shape_of(c, b).d[0];
    for (int i = 0; i < nsp; i++) bd[1 + i] = tg_dim_const(1);
    tg_attr r = tg_attr_dims("shape", 1 + nsp, bd);
    int bb = unary_on(c, TG_OP_RESHAPE, "bias", b, 1, &r);
    return bb < 0 ? -1 : binary_on(c, TG_OP_ADD, NULL, y, bb);
}

static int map_conv(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), w = x < 0 ? -1 : in_val(c, 1), b = w < 0 ? -1 : in_val_opt(c, 2);
    if (w < 0 || (b < 0 && in_opt(c, 2))) return -1;
    tg_shape xs = shape_of(c, x), ws = shape_of(c, w);
    int64_t k[3], st[3], dil[3], pads[6], op[3] = {0, 0, 0};
    int nsp, n;
    bool transposed = m->op == TG_OP_NONE;  /* ConvTranspose */
    if (transposed) {
        if (attr_ints(c, "output_padding", 3, op, &n)) return -1;
        if (n < 0) op[0] = op[1] = op[2] = 0;
    }
    if (onnx_window_attrs(c, &xs, &ws, k, st, dil, transposed ? op : NULL, pads, &nsp)) return -1;
    if (transposed && onnx_attr(N(c), "output_shape")) {
        int64_t want[3];
        if (attr_ints(c, "output_shape", 3, want, &n)) return -1;
        if (n != nsp) return tg_err("output_shape has %d values for %d spatial dims", n, nsp);
        bool upper = !strcmp(onnx_attr_string(N(c), "auto_pad", "NOTSET"), "SAME_UPPER");
        for (int i = 0; i < nsp; i++) {
            int64_t in;
            if (!tg_dim_is_const(xs.d[2 + i], &in)) return tg_err("output_shape with a dynamic spatial size");
            split_pad(st[i] * (in - 1) + op[i] + (k[i] - 1) * dil[i] + 1 - want[i], upper,
                      &pads[i], &pads[nsp + i]);
        }
    }
    int64_t pad[3];
    for (int i = 0; i < nsp; i++) pad[i] = pads[i];
    tg_attr a[6] = {tg_attr_ints("stride", nsp, st), tg_attr_ints("padding", nsp, pad),
                    tg_attr_ints("dilation", nsp, dil), tg_attr_int("groups", onnx_attr_int(N(c), "group", 1)),
                    tg_attr_int("transposed", transposed), tg_attr_ints("output_padding", nsp, op)};
    if (transposed) return def_out(c, 0, onnx_conv_transpose(c, x, w, b, nsp, st, dil, pads, op, a));
    if (!pads_symmetric(nsp, pads)) {           /* asymmetric: the padding as its own op */
        if ((x = pad_spatial(c, x, nsp, pads, 0, "pad")) < 0) return -1;
        memset(pad, 0, sizeof pad);
        a[1] = tg_attr_ints("padding", nsp, pad);
    }
    int in[3] = {x, w, b};
    return def_out(c, 0, onnx_add(c, TG_OP_CONV, NULL, 3, in, 4, a));
}

/* ---- normalization ------------------------------------------------------------------------- */

/* running * momentum + batch * (1 - momentum): a training-mode running statistic. */
static int bn_running(onnx_ctx *c, int running, int batch, double momentum, const char *sfx)
{
    char name[64];
    tg_dtype dt = dtype_of(c, batch);
    snprintf(name, sizeof name, "%s_momentum", sfx);
    int r = binary_on(c, TG_OP_MUL, name, running, scalar_const(c, name, dt, momentum));
    snprintf(name, sizeof name, "%s_batch", sfx);
    int b = binary_on(c, TG_OP_MUL, name, batch, scalar_const(c, name, dt, 1 - momentum));
    return r < 0 || b < 0 ? -1 : binary_on(c, TG_OP_ADD, sfx, r, b);
}

/* BatchNormalization. training_mode=1 (opset 14 on) normalizes with the batch's
 * mean and population variance over every axis but 1, and outputs the running
 * statistics updated with them. */
static int map_batch_norm(onnx_ctx *c, const onnx_op_map *m)
{
    bool train = onnx_attr_int(N(c), "training_mode", 0);
    if (!onnx_attr_int(N(c), "spatial", 1)) return tg_err("spatial=0 (statistics per element) is not supported");
    if (!train && only_first_output(c)) return -1;
    int in[5];
    int order[5] = {0, 3, 4, 1, 2};     /* ONNX: X, scale, B, mean, var */
    for (int i = 0; i < 5; i++)
        if ((in[i] = in_val(c, order[i])) < 0) return -1;
    tg_attr a = tg_attr_float("eps", onnx_attr_float(N(c), "epsilon", 1e-5));
    if (!train) return def_out(c, 0, onnx_add(c, TG_OP_BATCH_NORM, NULL, 5, in, 1, &a));
    int rank = shape_of(c, in[0]).rank, n = 0;
    int64_t axes[TG_MAX_RANK];
    if (rank < 2) return tg_err("training_mode=1 needs an input of rank 2 or more");
    for (int i = 0; i < rank; i++)
        if (i != 1) axes[n++] = i;
    tg_attr ra[3] = {tg_attr_ints("axes", n, axes), tg_attr_int("keepdim", 0), tg_attr_int("correction", 0)};
    int mean = unary_on(c, TG_OP_REDUCE_MEAN, "batch_mean", in[0], 2, ra);
    int var = mean < 0 ? -1 : unary_on(c, TG_OP_REDUCE_VAR, "batch_var", in[0], 3, ra);
    if (var < 0) return -1;
    int running_mean = in[1], running_var = in[2];
    in[1] = mean, in[2] = var;
    if (def_out(c, 0, onnx_add(c, TG_OP_BATCH_NORM, NULL, 5, in, 1, &a))) return -1;
    double mom = onnx_attr_float(N(c), "momentum", 0.9);
    if (N(c)->n_output > 1 && def_out(c, 1, bn_running(c, running_mean, mean, mom, "running_mean"))) return -1;
    return N(c)->n_output > 2 ? def_out(c, 2, bn_running(c, running_var, var, mom, "running_var")) : 0;
}

/* x over the normalized axes [axis, rank) of LayerNormalization and
 * RMSNormalization, in float32 (stash_type 1) unless it is float64; *n axes. */
static int norm_axes(onnx_ctx *c, int x, int64_t *axes, int *n, int *xs)
{
    int rank = shape_of(c, x).rank, axis = 0;
    if (axis_norm(onnx_attr_int(N(c), "axis", -1), rank, &axis)) return -1;
    for (*n = 0; axis + *n < rank; (*n)++) axes[*n] = axis + *n;
    tg_dtype dt = dtype_of(c, x);
    if (onnx_attr_int(N(c), "stash_type", 1) != 1) return tg_err("stash_type %lld is not supported",
                                                                (long long)onnx_attr_int(N(c), "stash_type", 1));
    tg_attr f = tg_attr_dtype("dtype", TG_F32);
    *xs = dt == TG_F32 || dt == TG_F64 ? x : unary_on(c, TG_OP_CAST, "stash", x, 1, &f);
    return *xs < 0 ? -1 : 0;
}

/* LayerNormalization; the Mean and InvStdDev outputs, when asked for, are
 * computed beside it in the stash type. */
static int map_layer_norm(onnx_ctx *c, const onnx_op_map *m)
{
    int in[3] = {in_val(c, 0), in_val_opt(c, 1), in_val_opt(c, 2)};
    if (in[0] < 0 || (in[1] < 0 && in_opt(c, 1)) || (in[2] < 0 && in_opt(c, 2))) return -1;
    double eps = onnx_attr_float(N(c), "epsilon", 1e-5);
    tg_attr a[2] = {tg_attr_int("axis", onnx_attr_int(N(c), "axis", -1)), tg_attr_float("eps", eps)};
    if (def_out(c, 0, onnx_add(c, TG_OP_LAYER_NORM, NULL, 3, in, 2, a))) return -1;
    bool stats = false;
    for (size_t k = 1; k < N(c)->n_output && k < 3; k++) stats |= *N(c)->output[k] != 0;
    if (!stats) return only_first_output(c);
    int64_t axes[TG_MAX_RANK];
    int n, xs;
    if (norm_axes(c, in[0], axes, &n, &xs)) return -1;
    int mean = reduce_on(c, TG_OP_REDUCE_MEAN, "mean", xs, n, axes, 1);
    tg_attr va[3] = {tg_attr_int("keepdim", 1), tg_attr_ints("axes", n, axes), tg_attr_int("correction", 0)};
    int var = mean < 0 ? -1 : unary_on(c, TG_OP_REDUCE_VAR, "var", xs, 3, va);
    int ve = var < 0 ? -1 : binary_on(c, TG_OP_ADD, "var_eps", var, scalar_const(c, "eps", dtype_of(c, xs), eps));
    int inv = ve < 0 ? -1 : unary_on(c, TG_OP_RSQRT, "inv_std", ve, 0, NULL);
    return inv < 0 || def_out(c, 1, mean) ? -1 : def_out(c, 2, inv);
}

/* RMSNormalization: x / sqrt(mean(x^2) + epsilon) * scale over [axis, rank),
 * in the stash type, the result in x's. */
static int map_rms_norm(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), w = x < 0 ? -1 : in_val(c, 1);
    if (w < 0 || only_first_output(c)) return -1;
    int64_t axes[TG_MAX_RANK];
    int n, xs;
    if (norm_axes(c, x, axes, &n, &xs)) return -1;
    tg_dtype st = dtype_of(c, xs);
    int sq = binary_on(c, TG_OP_MUL, "square", xs, xs);
    int ms = sq < 0 ? -1 : reduce_on(c, TG_OP_REDUCE_MEAN, "mean_square", sq, n, axes, 1);
    int me = ms < 0 ? -1 : binary_on(c, TG_OP_ADD, "eps", ms,
                                     scalar_const(c, "epsilon", st, onnx_attr_float(N(c), "epsilon", 1e-5)));
    int inv = me < 0 ? -1 : unary_on(c, TG_OP_RSQRT, "inv_rms", me, 0, NULL);
    int y = inv < 0 ? -1 : binary_on(c, TG_OP_MUL, "normalized", xs, inv);
    tg_attr back = tg_attr_dtype("dtype", dtype_of(c, x));
    if (y >= 0 && st != dtype_of(c, x)) y = unary_on(c, TG_OP_CAST, "unstash", y, 1, &back);
    return def_out(c, 0, y < 0 ? -1 : binary_on(c, TG_OP_MUL, NULL, y, w));
}

/* A per-group parameter [G] as per-channel [C] (GroupNormalization before opset 21). */
static int per_channel(onnx_ctx *c, onnx_ent *e, int64_t groups, int64_t channels)
{
    if (e->kind == ONNX_ENT_CONST && e->rank == 1 && e->dims[0] == groups && groups != channels
        && e->dtype == TG_F32) {
        float *p = malloc(sizeof *p * channels);
        if (!p) return tg_err("out of memory");
        for (int64_t i = 0; i < channels; i++) p[i] = ((const float *)e->data)[i / (channels / groups)];
        tg_shape s = tg_shape_of(1, &channels);
        char name[300];
        snprintf(name, sizeof name, "%s/per_channel", e->name);
        return tg_graph_add_const(c->g, name, TG_F32, &s, p, sizeof *p * channels);
    }
    return onnx_value(c, e);
}

static int map_group_norm(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t ch;
    if (xs.rank < 3 || !tg_dim_is_const(xs.d[1], &ch)) return tg_err("needs a static channel dim");
    bool instance = m->op == TG_OP_NONE;    /* InstanceNormalization */
    int64_t groups = instance ? ch : onnx_attr_int(N(c), "num_groups", 0);
    if (groups <= 0 || ch % groups) return tg_err("num_groups %lld does not divide %lld channels",
                                                (long long)groups, (long long)ch);
    onnx_ent *w = in_req(c, 1), *b = w ? in_req(c, 2) : NULL;
    if (!b) return -1;
    int in[3] = {x, per_channel(c, w, groups, ch), per_channel(c, b, groups, ch)};
    if (in[1] < 0 || in[2] < 0) return -1;
    tg_attr a[2] = {tg_attr_int("groups", groups), tg_attr_float("eps", onnx_attr_float(N(c), "epsilon", 1e-5))};
    return def_out(c, 0, onnx_add(c, TG_OP_GROUP_NORM, NULL, 3, in, 2, a));
}

/* ---- pooling ---------------------------------------------------------------------------- */

/* A pool op over nsp spatial dims. The pool op takes 1 or 2; 3-D windows are
 * boxes, and max, sum and window count all factor over the dims (each dim's
 * padding and ceil_mode are its own), so a 3-D pool is a 2-D pool over
 * [N, C*D, H, W] and then a 1-D pool over D, moved last: [N, C*H'*W', D]. */
static int pool_on(onnx_ctx *c, tg_op op, const char *sfx, int x, int nsp, const int64_t *k, const int64_t *st,
                   const int64_t *pad, const int64_t *dil, int64_t ceil, int64_t include_pad)
{
    if (x < 0) return -1;
    if (nsp < 3) {
        tg_attr a[6] = {tg_attr_ints("kernel", nsp, k), tg_attr_ints("stride", nsp, st),
                        tg_attr_ints("padding", nsp, pad), tg_attr_int("ceil_mode", ceil),
                        tg_attr_ints("dilation", nsp, dil), tg_attr_int("count_include_pad", include_pad)};
        return unary_on(c, op, sfx, x, op == TG_OP_AVG_POOL ? 6 : 5, a);
    }
    tg_shape xs = shape_of(c, x);
    tg_dim cd, r[5];
    if (tg_dim_mul(xs.d[1], xs.d[2], &cd)) return -1;
    tg_dim d1[4] = {xs.d[0], cd, xs.d[3], xs.d[4]};
    int hw = pool_on(c, op, "pool_hw", reshape_to(c, x, 4, d1, "depth_in_channels"), 2, k + 1, st + 1, pad + 1,
                     dil + 1, ceil, include_pad);
    if (hw < 0) return -1;
    tg_shape hs = shape_of(c, hw);
    tg_dim hwd, chw;
    if (tg_dim_mul(hs.d[2], hs.d[3], &hwd) || tg_dim_mul(xs.d[1], hwd, &chw)) return -1;
    tg_dim d2[4] = {xs.d[0], xs.d[1], xs.d[2], hwd}, d3[3] = {xs.d[0], chw, xs.d[2]};
    int t = permute_to(c, reshape_to(c, hw, 4, d2, "depth_apart"), 4, (int64_t[]){0, 1, 3, 2}, "depth_last");
    int dd = pool_on(c, op, "pool_d", reshape_to(c, t, 3, d3, "depth_rows"), 1, k, st, pad, dil, ceil, include_pad);
    if (dd < 0) return -1;
    r[0] = xs.d[0], r[1] = xs.d[1], r[2] = hs.d[2], r[3] = hs.d[3], r[4] = shape_of(c, dd).d[2];
    return permute_to(c, reshape_to(c, dd, 5, r, "depth_back"), 5, (int64_t[]){0, 1, 4, 2, 3}, sfx);
}

/* MaxPool and AveragePool. Pads the pool op cannot take (asymmetric, or more
 * than half the kernel) become a pad op: -inf for max; for an average that
 * leaves the padding out, the window sums over the padded input divided by the
 * window counts of a padded all-ones tensor. */
/* x[..., start:start + (n-1)*step + 1:step] on spatial axis i (of 2 + i). */
static int slice_strided(onnx_ctx *c, int x, int axis, int64_t start, int64_t n, int64_t step)
{
    tg_dim s = tg_dim_const(start), e = tg_dim_const(start + (n - 1) * step + 1);
    tg_attr a[4] = {tg_attr_int("axis", axis), tg_attr_dims("start", 1, &s), tg_attr_dims("end", 1, &e),
                    tg_attr_int("step", step)};
    return x < 0 ? -1 : unary_on(c, TG_OP_SLICE, "tap", x, 4, a);
}

/* MaxPool's Indices output for pooled y: each window's first maximum in
 * row-major order, as a flat index into x (N, C, then the spatial dims, which
 * storage_order 1 takes column-major). x, padded with -inf (and at the end as
 * far as the last window reaches), and the index table are sliced once per
 * window offset; from the last offset to the first, where the slice equals y
 * its index wins. */
static int pool_indices(onnx_ctx *c, int x, int y, int nsp, const int64_t *k, const int64_t *st,
                        const int64_t *dil, const int64_t *pads)
{
    tg_shape xs = shape_of(c, x), ys = shape_of(c, y);
    int64_t in[3], out[3], pp[6], numel = 1, sp[TG_MAX_RANK] = {1, 1};
    if (!tg_dtype_is_float(dtype_of(c, x))) return tg_err("the Indices output needs a floating-point input");
    for (int i = 0; i < nsp; i++) {
        if (!tg_dim_is_const(xs.d[2 + i], &in[i]) || !tg_dim_is_const(ys.d[2 + i], &out[i]))
            return tg_err("the Indices output needs static spatial dims");
        if (pads[i] < 0 || pads[nsp + i] < 0) return tg_err("the Indices output needs pads >= 0");
        int64_t reach = (k[i] - 1) * dil[i] + (out[i] - 1) * st[i] + 1, have = pads[i] + in[i] + pads[nsp + i];
        pp[i] = pads[i];
        pp[nsp + i] = pads[nsp + i] + (reach > have ? reach - have : 0);
        numel *= in[i];
        sp[2 + i] = in[i];
    }
    if (numel > INT32_MAX) return tg_err("spatial size too large");
    bool colmajor = onnx_attr_int(N(c), "storage_order", 0);
    int64_t *tab = malloc(sizeof *tab * (size_t)(numel ? numel : 1));
    if (!tab) return tg_err("out of memory");
    for (int64_t f = 0; f < numel; f++) {       /* f row-major; its index in the storage order */
        int64_t rest = f, v = 0, mul = 1;
        for (int i = nsp - 1; i >= 0; i--) {
            int64_t p = rest % in[i];
            rest /= in[i];
            if (colmajor) {
                int64_t m2 = 1;
                for (int j = 0; j < i; j++) m2 *= in[j];
                v += p * m2;
            } else {
                v += p * mul;
                mul *= in[i];
            }
        }
        tab[f] = v;
    }
    int idx = pad_spatial(c, const_named(c, "index_table", TG_I64, 2 + nsp, sp, tab), nsp, pp, 0, "index_pad");
    int px = pad_spatial(c, x, nsp, pp, -INFINITY, "value_pad");
    int res = -1;
    int64_t total = 1;
    for (int i = 0; i < nsp; i++) total *= k[i];
    for (int64_t o = total - 1; o >= 0 && px >= 0 && idx >= 0; o--) {
        int xv = px, iv = idx;
        int64_t rest = o;
        for (int i = nsp - 1; i >= 0; i--) {
            int64_t off = (rest % k[i]) * dil[i];
            rest /= k[i];
            xv = slice_strided(c, xv, 2 + i, off, out[i], st[i]);
            iv = slice_strided(c, iv, 2 + i, off, out[i], st[i]);
        }
        res = res < 0 ? iv : where_on(c, "first_max", binary_on(c, TG_OP_EQ, "is_max", xv, y), iv, res);
        if (res < 0) return -1;
    }
    /* plus (n*C + c) * numel */
    tg_dim nc;
    if (res < 0 || tg_dim_mul(xs.d[0], xs.d[1], &nc)) return -1;
    tg_attr ar[3] = {tg_attr_int("start", 0), tg_attr_dims("end", 1, &nc), tg_attr_dtype("dtype", TG_I64)};
    int plane = onnx_add(c, TG_OP_ARANGE, "plane", 0, NULL, 3, ar);
    tg_dim pd[TG_MAX_RANK] = {xs.d[0], xs.d[1]};
    for (int i = 0; i < nsp; i++) pd[2 + i] = tg_dim_const(1);
    int base = binary_on(c, TG_OP_MUL, "plane_base", plane, scalar_const(c, "plane_size", TG_I64, (double)numel));
    base = reshape_to(c, base, 2 + nsp, pd, "plane_placed");
    return base < 0 ? -1 : binary_on(c, TG_OP_ADD, "indices", res, base);
}

/* MaxUnpool: zeros of the unpooled shape (output_shape, or per spatial axis
 * (in - 1) * stride - pads + kernel) with x's values copied to the flat
 * positions I gives (MaxPool's Indices, over the whole tensor). */
static int map_max_unpool(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), ix = x < 0 ? -1 : in_val(c, 1);
    if (ix < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t k[3], st[3], dil[3], pads[6], xd[TG_MAX_RANK], od[TG_MAX_RANK];
    int nsp;
    if (onnx_window_attrs(c, &xs, NULL, k, st, dil, NULL, pads, &nsp)) return -1;
    if (!tg_shape_eq(&xs, &c->g->values[ix].shape) || !tg_dtype_is_int(dtype_of(c, ix)))
        return tg_err("I must be integers of X's shape");
    onnx_ent *os = in_opt(c, 2);
    int n = xs.rank;
    if (os && (onnx_int_list(os, TG_MAX_RANK, od, &n) || n != xs.rank))
        return n != xs.rank ? tg_err("output_shape has %d values for rank %d", n, xs.rank) : -1;
    tg_dim yd[TG_MAX_RANK], total = tg_dim_const(1), count = tg_dim_const(1);
    for (int i = 0; i < xs.rank; i++) {
        if (i >= 2 && !tg_dim_is_const(xs.d[i], &xd[i])) return tg_err("needs static spatial dims");
        yd[i] = os ? tg_dim_const(od[i]) : i < 2 ? xs.d[i]
              : tg_dim_const((xd[i] - 1) * st[i - 2] - pads[i - 2] - pads[nsp + i - 2] + k[i - 2]);
        if (!tg_dim_is_const(yd[i], &od[i])) od[i] = 0;
        if (od[i] < 0) return tg_err("the output shape has a negative dim");
        if (tg_dim_mul(total, yd[i], &total) || tg_dim_mul(count, xs.d[i], &count)) return -1;
    }
    tg_attr z[3] = {tg_attr_dims("shape", 1, &total), tg_attr_float("value", 0), tg_attr_dtype("dtype", dtype_of(c, x))};
    tg_attr ax = tg_attr_int("axis", 0);
    int in[3] = {onnx_add(c, TG_OP_FULL, "zeros", 0, NULL, 3, z), reshape_to(c, ix, 1, &count, "flat_indices"),
                 reshape_to(c, x, 1, &count, "flat_values")};
    if (in[0] < 0 || in[1] < 0 || in[2] < 0) return -1;
    int y = onnx_add(c, TG_OP_INDEX_COPY, "scatter", 3, in, 1, &ax);
    return def_out(c, 0, reshape_to(c, y, xs.rank, yd, NULL));
}

static int map_pool(onnx_ctx *c, const onnx_op_map *m)
{
    bool indices = m->op == TG_OP_MAX_POOL && N(c)->n_output > 1 && *N(c)->output[1];
    if (!indices && only_first_output(c)) return -1;
    if (!indices && onnx_attr_int(N(c), "storage_order", 0))
        return tg_err("storage_order=1 is only supported with the Indices output");
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t k[3], st[3], dil[3], pads[6], pad[3] = {0, 0, 0};
    int nsp;
    if (onnx_window_attrs(c, &xs, NULL, k, st, dil, NULL, pads, &nsp)) return -1;
    bool avg = m->op == TG_OP_AVG_POOL, include_pad = onnx_attr_int(N(c), "count_include_pad", 0);
    int64_t ceil = onnx_attr_int(N(c), "ceil_mode", 0);
    bool inline_pad = pads_symmetric(nsp, pads);
    for (int i = 0; i < nsp; i++) {
        inline_pad &= pads[i] >= 0 && 2 * pads[i] <= k[i];
        pad[i] = pads[i];
    }
    if (!inline_pad) memset(pad, 0, sizeof pad);
    if (indices) {
        int y = inline_pad ? pool_on(c, m->op, NULL, x, nsp, k, st, pad, dil, ceil, include_pad)
                           : pool_on(c, m->op, NULL, pad_spatial(c, x, nsp, pads, -INFINITY, "pad"), nsp, k, st, pad,
                                     dil, ceil, 1);
        return def_out(c, 0, y) ? -1 : def_out(c, 1, y < 0 ? -1 : pool_indices(c, x, y, nsp, k, st, dil, pads));
    }
    if (inline_pad) return def_out(c, 0, pool_on(c, m->op, NULL, x, nsp, k, st, pad, dil, ceil, include_pad));
    int px = pad_spatial(c, x, nsp, pads, avg ? 0 : -INFINITY, "pad");
    if (!avg || include_pad) return def_out(c, 0, pool_on(c, m->op, NULL, px, nsp, k, st, pad, dil, ceil, 1));
    int sum = pool_on(c, m->op, "sum", px, nsp, k, st, pad, dil, ceil, 1);
    tg_attr one[3] = {tg_attr_dims("shape", xs.rank, xs.d), tg_attr_float("value", 1),
                      tg_attr_dtype("dtype", dtype_of(c, x))};
    int ones = sum < 0 ? -1 : onnx_add(c, TG_OP_FULL, "ones", 0, NULL, 3, one);
    int pones = ones < 0 ? -1 : pad_spatial(c, ones, nsp, pads, 0, "ones_pad");
    int cnt = pool_on(c, m->op, "count", pones, nsp, k, st, pad, dil, ceil, 1);
    return def_out(c, 0, cnt < 0 ? -1 : binary_on(c, TG_OP_DIV, NULL, sum, cnt));
}

/* LpPool: (sum over the window of |x|^p)^(1/p), the sum a grouped convolution
 * with ones over x zero-padded (any padding, 1 to 3 spatial dims). */
static int map_lp_pool(onnx_ctx *c, const onnx_op_map *m)
{
    if (onnx_attr_int(N(c), "ceil_mode", 0)) return tg_err("ceil_mode=1 is not supported");
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    int64_t k[3], st[3], dil[3], pads[6], zero[3] = {0, 0, 0}, wd[5], ch;
    int nsp;
    if (onnx_window_attrs(c, &xs, NULL, k, st, dil, NULL, pads, &nsp)) return -1;
    if (!tg_dim_is_const(xs.d[1], &ch)) return tg_err("needs a static channel dim");
    int64_t p = onnx_attr_int(N(c), "p", 2);
    if (p < 1) return tg_err("p=%lld is not positive", (long long)p);
    tg_dtype dt = dtype_of(c, x);
    int ax = unary_on(c, TG_OP_ABS, "abs", x, 0, NULL);
    int pw = ax < 0 || p == 1 ? ax : p == 2 ? binary_on(c, TG_OP_MUL, "power", ax, ax)
                                 : binary_on(c, TG_OP_POW, "power", ax, scalar_const(c, "p", dt, (double)p));
    bool padded = false;
    for (int i = 0; i < 2 * nsp; i++) padded |= pads[i] != 0;
    int px = pw < 0 || !padded ? pw : pad_spatial(c, pw, nsp, pads, 0, "pad");
    wd[0] = ch, wd[1] = 1;
    for (int i = 0; i < nsp; i++) wd[2 + i] = k[i];
    int64_t n = tg_tensor_numel(2 + nsp, wd);
    void *ones = calloc((size_t)(n ? n : 1), tg_dtype_size(dt));
    if (!ones) return tg_err("out of memory");
    for (int64_t i = 0; i < n; i++) tg_store_f64(dt, ones, (size_t)i, 1);
    int w = const_named(c, "ones", dt, 2 + nsp, wd, ones);
    tg_attr a[5] = {tg_attr_ints("stride", nsp, st), tg_attr_ints("padding", nsp, zero),
                    tg_attr_ints("dilation", nsp, dil), tg_attr_int("groups", ch), tg_attr_int("transposed", 0)};
    int in[2] = {px, w};
    int sum = px < 0 || w < 0 ? -1 : onnx_add(c, TG_OP_CONV, "window_sum", 2, in, 5, a);
    int y = sum < 0 || p == 1 ? sum : p == 2 ? unary_on(c, TG_OP_SQRT, NULL, sum, 0, NULL)
                              : binary_on(c, TG_OP_POW, NULL, sum, scalar_const(c, "inv_p", dt, 1.0 / (double)p));
    return def_out(c, 0, y);
}

static int map_global_pool(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    int rank = shape_of(c, x).rank;
    if (rank < 3) return tg_err("input of rank %d: expected 3 or more", rank);
    int64_t axes[TG_MAX_RANK];
    for (int i = 2; i < rank; i++) axes[i - 2] = i;
    tg_attr a[2] = {tg_attr_ints("axes", rank - 2, axes), tg_attr_int("keepdim", 1)};
    return def_out(c, 0, unary_on(c, m->op, NULL, x, 2, a));
}

/* ---- shapes and data movement -------------------------------------------------------------- */

static int map_shape(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *e = in_req(c, 0);
    if (!e) return -1;
    tg_dim d[TG_MAX_RANK];
    int rank, v = -1;
    if (e->kind == ONNX_ENT_VALUE) {
        if ((v = onnx_value(c, e)) < 0) return -1;
        tg_shape s = shape_of(c, v);
        rank = s.rank;
        memcpy(d, s.d, sizeof d[0] * rank);
        if (!tg_shape_uses_data(c->g, &s)) v = -1;     /* else the dims as data, read at run time */
    } else {
        rank = e->rank;
        for (int i = 0; i < rank; i++) d[i] = tg_dim_const(e->kind == ONNX_ENT_SYMS ? e->nsyms : e->dims[i]);
    }
    if (m->op == TG_OP_REDUCE_PROD) {      /* Size */
        tg_dim n = tg_dim_const(1);
        for (int i = 0; i < rank && v < 0; i++)
            if (tg_dim_mul(n, d[i], &n)) return -1;
        return v < 0 ? onnx_def_syms(c, N(c)->output[0], 0, 1, &n) : def_out(c, 0, onnx_shape_data(c, v, 0, 0, true));
    }
    int64_t start = onnx_attr_int(N(c), "start", 0), end = onnx_attr_int(N(c), "end", rank);
    if (start < 0) start += rank;
    if (end < 0) end += rank;
    start = start < 0 ? 0 : start > rank ? rank : start;
    end = end < start ? start : end > rank ? rank : end;
    if (v >= 0) return def_out(c, 0, onnx_shape_data(c, v, start, end, false));
    return onnx_def_syms(c, N(c)->output[0], 1, (int)(end - start), d + start);
}

/* Reshape to a shape read at run time from value s (int64, static length n): its 0
 * entries (but with allowzero) copy the input's dim and a -1 takes the rest, both
 * resolved by nodes before the reshape, whose output dims are data symbols. */
static int reshape_runtime(onnx_ctx *c, int x, int s, bool allowzero)
{
    const tg_value *sv = &c->g->values[s];
    tg_shape xs = shape_of(c, x), ys = {0};
    int64_t n = 0, xd[TG_MAX_RANK];
    if (sv->dtype != TG_I64 || sv->shape.rank != 1 || !tg_dim_is_const(sv->shape.d[0], &n) || n > TG_MAX_RANK)
        return tg_err("'%s' (the shape) must be an int64 vector of static length", sv->name);
    int zero = scalar_const(c, "zero", TG_I64, 0), cv, count;
    int64_t hi = 0;                             /* an empty input: its largest dim */
    if (tg_shape_uses_data(c->g, &xs)) {        /* the input's dims as the run has them */
        if (onnx_dims_data(c, x, (int)n, &cv, &count)) return -1;
        int64_t numel = 1;
        for (int i = 0; i < xs.rank; i++) {
            int64_t lo, h;
            tg_dim_range(xs.d[i], c->g->sym, &lo, &h);
            hi = hi > h ? hi : h;
            if (__builtin_mul_overflow(numel, h, &numel)) numel = INT64_MAX;
        }
        hi = hi > numel ? hi : numel;
    } else {
        if (const_dims(xs, xs.rank, xd) >= 0) return tg_err("a shape given at run time needs a static input shape");
        int64_t numel = tg_tensor_numel(xs.rank, xd), *cp = calloc(n ? (size_t)n : 1, sizeof(int64_t));
        if (!cp) return tg_err("out of memory");
        for (int i = 0; i < n && i < xs.rank; i++) cp[i] = xd[i];
        cv = const_named(c, "input_dims", TG_I64, 1, &n, cp);
        count = scalar_const(c, "count", TG_I64, (double)numel);
        hi = numel;
        for (int i = 0; i < xs.rank; i++) hi = xd[i] > hi ? xd[i] : hi;
    }
    if (!allowzero)
        s = where_on(c, "zero_copied", binary_on(c, TG_OP_EQ, "is_zero", s, zero), cv, s);
    int rest = s < 0 ? -1 : binary_on(c, TG_OP_EQ, "is_rest", s, scalar_const(c, "minus_one", TG_I64, -1));
    int known = where_on(c, "known", rest, scalar_const(c, "one", TG_I64, 1), s);
    int prod = known < 0 ? -1 : reduce_on(c, TG_OP_REDUCE_PROD, "known_count", known, -1, NULL, 0);
    prod = prod < 0 ? -1 : binary_on(c, TG_OP_MAXIMUM, "known_nonzero", prod, scalar_const(c, "one_min", TG_I64, 1));
    s = where_on(c, "resolved", rest, prod < 0 || count < 0 ? -1 : binary_on(c, TG_OP_DIV, "rest", count, prod), s);
    ys.rank = (int)n;
    for (int i = 0; i < n; i++)
        if (data_dim(c, hi, &ys.d[i])) return -1;
    tg_attr a = tg_attr_input("shape", 1, TG_ATTR_DIMS);
    int in[2] = {x, s};
    return s < 0 ? -1 : onnx_add_dynamic(c, TG_OP_RESHAPE, NULL, 2, in, 1, &a, dtype_of(c, x), &ys);
}

static int map_reshape(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *data = in_req(c, 0), *sh = data ? in_req(c, 1) : NULL;
    if (!sh) return -1;
    if (sh->kind == ONNX_ENT_VALUE) {
        int x = onnx_value(c, data), s = x < 0 ? -1 : onnx_value(c, sh);
        return def_out(c, 0, s < 0 ? -1 : reshape_runtime(c, x, s, onnx_attr_int(N(c), "allowzero", 0)));
    }
    tg_dim dims[TG_MAX_RANK];
    int n;
    if (onnx_dim_list(c, sh, TG_MAX_RANK, dims, &n)) return -1;
    if (is_shape_vec(data) && n <= 1) {        /* a shape vector reshaped: to 1-D or scalar */
        tg_dim v[MAXV];
        int nv;
        if (onnx_dim_list(c, data, MAXV, v, &nv)) return -1;
        return def_shape_vec(c, n, nv, v);
    }
    int x = onnx_value(c, data);
    if (x < 0) return -1;
    tg_shape xs = shape_of(c, x);
    bool allowzero = onnx_attr_int(N(c), "allowzero", 0);
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (!allowzero && tg_dim_is_const(dims[i], &v) && v == 0) {
            if (i >= xs.rank) return tg_err("shape entry %d is 0 but the input has rank %d", i, xs.rank);
            dims[i] = xs.d[i];
        }
    }
    if (tg_reshape_resolve(&xs, n, dims)) return -1;
    return def_out(c, 0, reshape_to(c, x, n, dims, NULL));
}

static int map_flatten(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    int64_t axis = onnx_attr_int(N(c), "axis", 1);
    if (axis < 0) axis += s.rank;
    if (axis < 0 || axis > s.rank) return tg_err("axis out of range");
    tg_dim d[2] = {tg_dim_const(1), tg_dim_const(1)};
    for (int i = 0; i < s.rank; i++)
        if (tg_dim_mul(d[i >= axis], s.d[i], &d[i >= axis])) return -1;
    return def_out(c, 0, reshape_to(c, x, 2, d, NULL));
}

/* Axes of Squeeze/Unsqueeze: input 1 (opset >= 13) or attribute. n = -1: absent. */
static int axes_of(onnx_ctx *c, int64_t *axes, int *n)
{
    onnx_ent *e = in_opt(c, 1);
    if (e) return onnx_int_list(e, TG_MAX_RANK, axes, n);
    return attr_ints(c, "axes", TG_MAX_RANK, axes, n);
}

static int map_squeeze(onnx_ctx *c, const onnx_op_map *m)
{
    bool unsq = m->op == TG_OP_NONE;
    onnx_ent *e = in_req(c, 0);
    int64_t axes[TG_MAX_RANK];
    int na;
    onnx_ent *ae = e ? in_opt(c, 1) : NULL;
    if (ae && ae->kind == ONNX_ENT_VALUE) {     /* axes read at run time */
        int x = onnx_value(c, e), av = x < 0 ? -1 : onnx_value(c, ae);
        return def_out(c, 0, av < 0 ? -1 : onnx_rt_squeeze(c, x, av, unsq));
    }
    if (!e || axes_of(c, axes, &na)) return -1;
    if (is_shape_vec(e) && (unsq ? e->rank == 0 : e->rank == 1)) {
        tg_dim v[MAXV];                         /* scalar <-> 1-element vector */
        int n;
        if (onnx_dim_list(c, e, MAXV, v, &n)) return -1;
        if (unsq || n == 1) return def_shape_vec(c, unsq ? 1 : 0, n, v);
    }                                           /* else as data (all its dims known) */
    int x = onnx_value(c, e);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    bool mark[TG_MAX_RANK * 2] = {0};
    int out_rank = unsq ? s.rank + (na < 0 ? 0 : na) : s.rank;
    if (unsq && na < 0) return tg_err("Unsqueeze needs axes");
    if (out_rank > TG_MAX_RANK) return tg_err("rank too large");
    for (int i = 0; i < na; i++) {
        int a = 0;
        if (axis_norm(axes[i], out_rank, &a)) return -1;
        mark[a] = true;
    }
    tg_dim d[TG_MAX_RANK];
    int n = 0;
    if (unsq) {
        for (int i = 0, j = 0; i < out_rank; i++) d[n++] = mark[i] ? tg_dim_const(1) : s.d[j++];
    } else {
        for (int i = 0; i < s.rank; i++) {
            int64_t v;
            bool one = tg_dim_is_const(s.d[i], &v) && v == 1;
            if (na >= 0 && mark[i] && !one) return tg_err("cannot squeeze axis %d: its size is not 1", i);
            if (na < 0 ? one : mark[i]) continue;
            d[n++] = s.d[i];
        }
    }
    return def_out(c, 0, reshape_to(c, x, n, d, NULL));
}

static int map_transpose(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    int rank = shape_of(c, x).rank, n;
    int64_t perm[TG_MAX_RANK];
    if (attr_ints(c, "perm", TG_MAX_RANK, perm, &n)) return -1;
    if (n < 0)
        for (n = 0; n < rank; n++) perm[n] = rank - 1 - n;
    tg_attr a = tg_attr_ints("perm", n, perm);
    return def_out(c, 0, unary_on(c, TG_OP_PERMUTE, NULL, x, 1, &a));
}

static int map_concat(onnx_ctx *c, const onnx_op_map *m)
{
    int nin = (int)N(c)->n_input;
    bool shapes = true;     /* all int64 vectors known here: shape arithmetic */
    for (int i = 0; i < nin; i++) {
        onnx_ent *e = in_req(c, i);
        if (!e) return -1;
        shapes &= e->kind == ONNX_ENT_SYMS ||
                  (e->kind == ONNX_ENT_CONST && e->dtype == TG_I64 && e->rank == 1);
    }
    if (shapes) {                               /* concatenating shape vectors */
        tg_dim all[MAXV];
        int n = 0;
        for (int i = 0; i < nin; i++) {
            int k;
            if (onnx_dim_list(c, in_req(c, i), MAXV - n, all + n, &k)) return -1;
            n += k;
        }
        return onnx_def_syms(c, N(c)->output[0], 1, n, all);
    }
    int *in = malloc(sizeof *in * (size_t)(nin > 0 ? nin : 1));
    if (!in) return tg_err("out of memory");
    int rc = 0;
    for (int i = 0; i < nin && !rc; i++)
        if ((in[i] = in_val(c, i)) < 0) rc = -1;
    tg_attr a = tg_attr_int("axis", onnx_attr_int(N(c), "axis", 0));
    if (!rc) rc = def_out(c, 0, onnx_add(c, TG_OP_CONCAT, NULL, nin, in, 1, &a));
    free(in);
    return rc;
}

static int slice_on(onnx_ctx *c, int x, int axis, tg_dim start, tg_dim end, int64_t step, const char *sfx)
{
    tg_attr a[4] = {tg_attr_int("axis", axis), tg_attr_dims("start", 1, &start),
                    tg_attr_dims("end", 1, &end), tg_attr_int("step", step)};
    return unary_on(c, TG_OP_SLICE, sfx, x, 4, a);
}

static int map_split(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    int axis = 0, nout = (int)N(c)->n_output, n;
    if (axis_norm(onnx_attr_int(N(c), "axis", 0), s.rank, &axis)) return -1;
    int64_t sizes[64];
    if (nout > 64) return tg_err("too many outputs");
    onnx_ent *sp = in_opt(c, 1);
    if (sp && sp->kind == ONNX_ENT_VALUE) {
        int v = onnx_value(c, sp);
        return v < 0 ? -1 : onnx_rt_split(c, x, axis, v, nout);
    }
    if (sp) {
        if (onnx_int_list(sp, 64, sizes, &n)) return -1;
    } else if (attr_ints(c, "split", 64, sizes, &n))
        return -1;
    tg_dim start = tg_dim_const(0);
    if (n < 0) {                                 /* equal parts; the last may be smaller */
        int64_t d;
        if (!tg_dim_is_const(s.d[axis], &d)) return tg_err("splitting a dynamic dim needs explicit sizes");
        int64_t parts = onnx_attr_int(N(c), "num_outputs", nout);
        if (parts != nout) return tg_err("num_outputs %lld for %d outputs", (long long)parts, nout);
        int64_t each = (d + parts - 1) / parts;
        for (n = 0; n < nout; n++) sizes[n] = d - n * each < each ? d - n * each : each;
    }
    if (n != nout) return tg_err("%d split sizes for %d outputs", n, nout);
    for (int k = 0; k < nout; k++) {
        tg_dim end;
        char sfx[32];
        snprintf(sfx, sizeof sfx, "%d", k);
        if (tg_dim_add(start, tg_dim_const(sizes[k]), &end)) return -1;
        if (def_out(c, k, slice_on(c, x, axis, start, end, 1, sfx))) return -1;
        start = end;
    }
    return 0;
}

/* Clamp an ONNX slice bound against dim d the way ONNX does, symbolically where d
 * is: negative counts from the end, huge means the end. */
static int slice_bound(tg_dim d, int64_t v, tg_dim *out)
{
    int64_t dv;
    bool known = tg_dim_is_const(d, &dv);
    if (v >= (int64_t)INT32_MAX) return *out = d, 0;
    if (v < 0) {
        if (known) {
            v += dv;
            *out = tg_dim_const(v < 0 ? 0 : v);
            return 0;
        }
        return tg_dim_add(d, tg_dim_const(v), out);
    }
    if (known && v > dv) v = dv;
    *out = tg_dim_const(v);
    return 0;
}

/* Slice where a start, end, axis or step is read at run time: constant axes
 * stay constant (only those axes change), the rest become values. */
static int slice_runtime(onnx_ctx *c, onnx_ent *data, onnx_ent *es, onnx_ent *ee, onnx_ent *ea, onnx_ent *esp)
{
    int64_t ax[TG_MAX_RANK];
    int na = -1, x = onnx_value(c, data), st = x < 0 ? -1 : onnx_value(c, es), en = st < 0 ? -1 : onnx_value(c, ee);
    int av = ea && ea->kind == ONNX_ENT_VALUE ? onnx_value(c, ea) : -1, sp = esp ? onnx_value(c, esp) : -1;
    if (en < 0 || (ea && ea->kind == ONNX_ENT_VALUE && av < 0) || (esp && sp < 0) ||
        (ea && av < 0 && onnx_int_list(ea, TG_MAX_RANK, ax, &na)))
        return -1;
    return onnx_rt_slice(c, x, st, en, av, na, ax, sp);
}

static int map_slice(onnx_ctx *c, const onnx_op_map *m)
{
    int64_t st[TG_MAX_RANK], en[TG_MAX_RANK], ax[TG_MAX_RANK], sp[TG_MAX_RANK];
    int n, n2, na = -1, ns = -1;
    onnx_ent *data = in_req(c, 0);
    if (!data) return -1;
    if (c->opset < 10) {                        /* starts, ends, axes were attributes */
        if (attr_ints(c, "starts", TG_MAX_RANK, st, &n) || attr_ints(c, "ends", TG_MAX_RANK, en, &n2) ||
            attr_ints(c, "axes", TG_MAX_RANK, ax, &na))
            return -1;
        if (n < 0 || n2 < 0) return tg_err("attributes starts and ends are required");
    } else {
        onnx_ent *es = in_req(c, 1), *ee = es ? in_req(c, 2) : NULL;
        if (!ee) return -1;
        onnx_ent *ea = in_opt(c, 3), *esp = in_opt(c, 4);
        if (es->kind == ONNX_ENT_VALUE || ee->kind == ONNX_ENT_VALUE || (ea && ea->kind == ONNX_ENT_VALUE) ||
            (esp && esp->kind == ONNX_ENT_VALUE))
            return def_out(c, 0, slice_runtime(c, data, es, ee, ea, esp));
        if (onnx_int_list(es, TG_MAX_RANK, st, &n) || onnx_int_list(ee, TG_MAX_RANK, en, &n2)) return -1;
        if ((ea && onnx_int_list(ea, TG_MAX_RANK, ax, &na)) || (esp && onnx_int_list(esp, TG_MAX_RANK, sp, &ns)))
            return -1;
    }
    if (n != n2) return tg_err("starts and ends differ in length");
    for (int i = 0; i < n; i++) {
        if (na < 0) ax[i] = i;
        if (ns < 0) sp[i] = 1;
        if (sp[i] == 0) return tg_err("Slice with step 0");
    }
    if (is_shape_vec(data) && data->rank == 1 && (n != 1 || sp[0] > 0)) { /* slicing a shape vector */
        tg_dim v[MAXV], out[MAXV];
        int nv, k = 0;
        if (n != 1 || onnx_dim_list(c, data, MAXV, v, &nv)) return n != 1 ? tg_err("bad slice of a shape vector") : -1;
        tg_dim d = tg_dim_const(nv), b, e;
        int64_t bi = 0, ei = 0;
        if (slice_bound(d, st[0], &b) || slice_bound(d, en[0], &e)) return -1;
        tg_dim_is_const(b, &bi);
        tg_dim_is_const(e, &ei);
        for (int64_t i = bi; i < ei; i = sp[0] < ei - i ? i + sp[0] : ei) out[k++] = v[i];
        return def_shape_vec(c, 1, k, out);
    }
    int x = onnx_value(c, data);
    if (x < 0) return -1;
    tg_shape s = shape_of(c, x);
    for (int i = 0; i < n && x >= 0; i++) {
        int a = 0;
        tg_dim b, e;
        if (axis_norm(ax[i], s.rank, &a) || slice_bound(s.d[a], st[i], &b) ||
            slice_bound(s.d[a], en[i], &e))
            return -1;
        x = sp[i] < 0 ? onnx_slice_down(c, x, a, st[i], en[i], sp[i], i + 1 < n ? "part" : NULL)
                      : slice_on(c, x, a, b, e, sp[i], i + 1 < n ? "part" : NULL);
    }
    return def_out(c, 0, x);
}

static int map_gather(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *data = in_req(c, 0), *idx = data ? in_req(c, 1) : NULL;
    if (!idx) return -1;
    int64_t axis = onnx_attr_int(N(c), "axis", 0);
    if (is_shape_vec(data) && data->rank == 1 && idx->kind == ONNX_ENT_CONST && idx->rank <= 1) {
        int64_t iv[MAXV];                        /* picking shape entries */
        int ni, nd;
        tg_dim d[MAXV], out[MAXV];
        if (onnx_int_list(idx, MAXV, iv, &ni) || onnx_dim_list(c, data, MAXV, d, &nd)) return -1;
        for (int i = 0; i < ni; i++) {
            int64_t k = iv[i] < 0 ? iv[i] + nd : iv[i];
            if (k < 0 || k >= nd) return tg_err("index %lld out of range", (long long)iv[i]);
            out[i] = d[k];
        }
        return def_shape_vec(c, idx->rank, ni, out);
    }
    int x = onnx_value(c, data), i = x < 0 ? -1 : onnx_value(c, idx);
    if (i < 0) return -1;
    tg_attr a = tg_attr_int("axis", axis);
    int in[2] = {x, i};
    return def_out(c, 0, onnx_add(c, m->op, NULL, 2, in, 1, &a));
}

static int map_expand(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *sh = x < 0 ? NULL : in_req(c, 1);
    if (!sh) return -1;
    if (sh->kind == ONNX_ENT_VALUE) {
        int v = onnx_value(c, sh);
        return def_out(c, 0, v < 0 ? -1 : onnx_rt_expand(c, x, v));
    }
    tg_dim want[TG_MAX_RANK], out[TG_MAX_RANK];
    int n;
    if (onnx_dim_list(c, sh, TG_MAX_RANK, want, &n)) return -1;
    tg_shape s = shape_of(c, x);
    int rank = n > s.rank ? n : s.rank;
    for (int i = 0; i < rank; i++) {             /* ONNX Expand broadcasts both ways */
        int iw = i - (rank - n), ix = i - (rank - s.rank);
        tg_dim a = ix >= 0 ? s.d[ix] : tg_dim_const(1), b = iw >= 0 ? want[iw] : tg_dim_const(1);
        int64_t v;
        out[i] = tg_dim_is_const(b, &v) && v == 1 ? a : b;
    }
    tg_attr a = tg_attr_dims("shape", rank, out);
    return def_out(c, 0, unary_on(c, TG_OP_EXPAND, NULL, x, 1, &a));
}

static int map_tile(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *r = x < 0 ? NULL : in_req(c, 1);
    int64_t rep[TG_MAX_RANK];
    int n;
    if (r && r->kind == ONNX_ENT_VALUE) {
        int v = onnx_value(c, r);
        return def_out(c, 0, v < 0 ? -1 : onnx_rt_tile(c, x, v));
    }
    if (!r || onnx_int_list(r, TG_MAX_RANK, rep, &n)) return -1;
    tg_attr a = tg_attr_ints("repeats", n, rep);
    return def_out(c, 0, unary_on(c, TG_OP_TILE, NULL, x, 1, &a));
}

static int map_pad(onnx_ctx *c, const onnx_op_map *m)
{
    char mode[16];      /* the pad op's mode: ONNX's names */
    snprintf(mode, sizeof mode, "%s", onnx_attr_string(N(c), "mode", "constant"));
    if (strcmp(mode, "constant") && strcmp(mode, "edge") && strcmp(mode, "reflect") && strcmp(mode, "wrap"))
        return tg_err("Pad mode '%s' is not one ONNX defines", mode);
    int x = in_val(c, 0);
    int64_t p[2 * TG_MAX_RANK], axes[TG_MAX_RANK], pads[2 * TG_MAX_RANK] = {0};
    int np, na = -1, rank = x < 0 ? 0 : shape_of(c, x).rank;
    double value = onnx_attr_float(N(c), "value", 0);
    if (x < 0) return -1;
    if (c->opset < 11) {                        /* pads and value were attributes */
        if (attr_ints(c, "pads", 2 * TG_MAX_RANK, p, &np)) return -1;
        if (np < 0) return tg_err("attribute pads is required");
    } else {
        onnx_ent *pe = in_req(c, 1), *ve = in_opt(c, 2), *ae = in_opt(c, 3);
        value = 0;
        if (pe && (pe->kind == ONNX_ENT_VALUE || (ve && ve->kind == ONNX_ENT_VALUE))) {
            int pv = onnx_value(c, pe), vv = ve && ve->kind == ONNX_ENT_VALUE ? onnx_value(c, ve) : -1;
            if (pv < 0 || (ve && ve->kind == ONNX_ENT_VALUE && vv < 0) ||
                (ve && vv < 0 && onnx_scalar_f64(ve, &value)))
                return -1;
            int av = ae && ae->kind == ONNX_ENT_VALUE ? onnx_value(c, ae) : -1;
            if ((ae && ae->kind == ONNX_ENT_VALUE && av < 0) || (ae && av < 0 && onnx_int_list(ae, TG_MAX_RANK, axes, &na)))
                return -1;
            return def_out(c, 0, onnx_rt_pad(c, x, pv, na, axes, av, value, vv, mode));
        }
        if (!pe || onnx_int_list(pe, 2 * TG_MAX_RANK, p, &np) || (ve && onnx_scalar_f64(ve, &value)) ||
            (ae && onnx_int_list(ae, TG_MAX_RANK, axes, &na)))
            return -1;
    }
    if (na < 0)
        for (na = 0; na < rank; na++) axes[na] = na;
    if (np != 2 * na) return tg_err("pads has %d values for %d axes", np, na);
    for (int i = 0; i < na; i++) {
        int a = 0;
        if (axis_norm(axes[i], rank, &a)) return -1;
        pads[a] = p[i];
        pads[rank + a] = p[na + i];
    }
    tg_attr a[3] = {tg_attr_ints("pads", 2 * rank, pads), tg_attr_float("value", value), tg_attr_string("mode", mode)};
    return def_out(c, 0, unary_on(c, TG_OP_PAD, NULL, x, 3, a));
}

/* TopK (opset 10 on: k an input; 1 to 9: an attribute), sorted either way. */
static int map_topk(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), kv = -1, vals, idx, n = 1;
    int64_t k = onnx_attr_int(N(c), "k", 1);
    onnx_ent *ke = x < 0 || c->opset < 10 ? NULL : in_req(c, 1);
    if (x < 0 || (c->opset >= 10 && !ke)) return -1;
    if (ke && ke->kind == ONNX_ENT_VALUE) {
        if ((kv = onnx_value(c, ke)) < 0) return -1;
    } else if (ke && (onnx_int_list(ke, 1, &k, &n) || n != 1))
        return n != 1 ? tg_err("k must hold one value") : -1;
    if (onnx_rt_topk(c, x, (int)onnx_attr_int(N(c), "axis", -1), kv, k, onnx_attr_int(N(c), "largest", 1) != 0,
                     &vals, &idx))
        return -1;
    return def_out(c, 0, vals) || def_out(c, 1, idx) ? -1 : 0;
}

static int map_trilu(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0);
    onnx_ent *ke = x < 0 ? NULL : in_opt(c, 1);
    tg_op op = onnx_attr_int(N(c), "upper", 1) ? TG_OP_TRIU : TG_OP_TRIL;
    if (ke && ke->kind != ONNX_ENT_CONST) {     /* k read at run time */
        int rt = onnx_value(c, ke);
        tg_attr a = tg_attr_input("k", 1, TG_ATTR_INT);
        return def_out(c, 0, rt < 0 ? -1 : same_shape_rt(c, op, x, rt, 1, &a));
    }
    double k = 0;
    if (x < 0 || (ke && onnx_scalar_f64(ke, &k))) return -1;
    if (!(fabs(k) < 1e9)) return tg_err("Trilu k=%g is out of range", k);
    tg_attr a = tg_attr_int("k", (int64_t)k);
    return def_out(c, 0, unary_on(c, op, NULL, x, 1, &a));
}

/* ---- GatherND, ScatterND, ScatterElements: index_select / index_copy over rows ------------- */

static int reduce_last(onnx_ctx *c, tg_op op, const char *sfx, int x)
{
    tg_attr a[2] = {tg_attr_ints("axes", 1, (int64_t[]){-1}), tg_attr_int("keepdim", 0)};
    return x < 0 ? -1 : unary_on(c, op, sfx, x, 2, a);
}

/* The row each index vector of idx picks (its last axis: k entries addressing
 * dims d[0..k), row-major, each stride times unit), plus off (a value, or -1):
 * negative entries count from the end, and a vector with an entry out of range
 * gets `total`, past the last row, which the index op then reports. d[0] < 0: a
 * dynamic first dim, left to the index op, which counts a negative row from the
 * end of all rows (the same for the first entry) and reports one past them. */
static int linear_rows(onnx_ctx *c, int idx, int k, const int64_t *d, int64_t unit, int off, int64_t total)
{
    int64_t n = k, rows = unit, *v[4];
    for (int i = 0; i < 4; i++)
        if (!(v[i] = malloc(sizeof(int64_t) * (size_t)k))) {
            while (i--) free(v[i]);
            return tg_err("out of memory");
        }
    for (int j = k - 1; j >= 0; j--) {          /* wrap by, strides, lowest, past the highest */
        bool dyn = d[j] < 0;
        v[0][j] = dyn ? 0 : d[j];
        v[1][j] = rows;
        v[2][j] = dyn ? INT64_MIN / 2 : 0;
        v[3][j] = dyn ? INT64_MAX / 2 : d[j];
        rows *= dyn ? 1 : d[j];
    }
    int wrap = const_named(c, "dims", TG_I64, 1, &n, v[0]), strides = const_named(c, "strides", TG_I64, 1, &n, v[1]);
    int lo = const_named(c, "lowest", TG_I64, 1, &n, v[2]), hi = const_named(c, "past_highest", TG_I64, 1, &n, v[3]);
    int zero = scalar_const(c, "zero", TG_I64, 0);
    if (idx < 0 || wrap < 0 || strides < 0 || lo < 0 || hi < 0 || zero < 0) return -1;
    int w = where_on(c, "wrapped", binary_on(c, TG_OP_LT, "negative", idx, zero),
                     binary_on(c, TG_OP_ADD, "from_end", idx, wrap), idx);
    int bad = w < 0 ? -1 : binary_on(c, TG_OP_LOGICAL_OR, "out_of_range", binary_on(c, TG_OP_LT, "below", w, lo),
                                     binary_on(c, TG_OP_GE, "above", w, hi));
    int lin = reduce_last(c, TG_OP_REDUCE_SUM, "row", w < 0 ? -1 : binary_on(c, TG_OP_MUL, "scaled", w, strides));
    if (off >= 0 && lin >= 0) lin = binary_on(c, TG_OP_ADD, "offset", lin, off);
    return where_on(c, "rows", reduce_last(c, TG_OP_REDUCE_ANY, "any_out", bad),
                    scalar_const(c, "past_end", TG_I64, (double)total), lin);
}

/* Indices as int64 (ONNX allows int32 for the element forms). */
static int as_i64(onnx_ctx *c, int idx)
{
    tg_attr t = tg_attr_dtype("dtype", TG_I64);
    return idx < 0 || dtype_of(c, idx) == TG_I64 ? idx : unary_on(c, TG_OP_CAST, "indices_i64", idx, 1, &t);
}

/* GatherND: the k dims after data's batch dims flattened into rows, each index
 * vector one row, read by index_select (no batch dims) or, per batch, by gather
 * over [batch, rows, inner] (the batch dims may be symbolic). */
static int map_gather_nd(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), idx = x < 0 ? -1 : as_i64(c, in_val(c, 1));
    if (idx < 0) return -1;
    tg_shape xs = shape_of(c, x), is = shape_of(c, idx);
    int64_t b = onnx_attr_int(N(c), "batch_dims", 0), k = 0, d[TG_MAX_RANK], rows = 1;
    if (is.rank < 1 || !tg_dim_is_const(is.d[is.rank - 1], &k) || k < 1 || b < 0 || b >= is.rank || b + k > xs.rank)
        return tg_err("indices of rank %d with a last dim that is no constant in [1, %lld] (batch_dims %lld)",
                      is.rank, (long long)(xs.rank - b), (long long)b);
    tg_dim rd = tg_dim_const(1);                /* rows, symbolic with a dynamic first dim */
    for (int j = (int)b; j < b + k; j++) {
        if (!tg_dim_is_const(xs.d[j], &d[j]) && (j > 0 || (d[j] = -1) > 0))
            return tg_err("data's dim %d is not a constant (of the indexed dims, only the first of data's"
                          " may be dynamic)", j);
        rows *= d[j] < 0 ? 1 : d[j];
        if (tg_dim_mul(rd, xs.d[j], &rd)) return -1;
    }
    int lin = linear_rows(c, idx, (int)k, d + b, 1, -1, d[b] < 0 ? INT64_MAX : rows);
    tg_dim bd = tg_dim_const(1), md = tg_dim_const(1), inner = tg_dim_const(1), r[TG_MAX_RANK];
    int nr = 0;
    for (int i = 0; i < b; i++)
        if (tg_dim_mul(bd, xs.d[i], &bd)) return -1;
    for (int i = (int)(b + k); i < xs.rank; i++)
        if (tg_dim_mul(inner, xs.d[i], &inner)) return -1;
    for (int i = (int)b; i < is.rank - 1; i++)
        if (tg_dim_mul(md, is.d[i], &md)) return -1;
    if (b == 0) {
        r[nr++] = rd;
        for (int i = (int)k; i < xs.rank; i++) r[nr++] = xs.d[i];
        int in[2] = {reshape_to(c, x, nr, r, "rows_of"), lin};
        tg_attr a = tg_attr_int("axis", 0);
        return def_out(c, 0, in[0] < 0 || lin < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, NULL, 2, in, 1, &a));
    }
    tg_dim xd[3] = {bd, tg_dim_const(rows), inner}, ld[3] = {bd, md, tg_dim_const(1)}, ed[3] = {bd, md, inner};
    tg_attr e = tg_attr_dims("shape", 3, ed), a = tg_attr_int("axis", 1);
    int le = reshape_to(c, lin, 3, ld, "row_per_batch");
    int in[2] = {reshape_to(c, x, 3, xd, "rows_per_batch"), le < 0 ? -1 : unary_on(c, TG_OP_EXPAND, "row_index", le, 1, &e)};
    int y = in[0] < 0 || in[1] < 0 ? -1 : onnx_add(c, TG_OP_GATHER, "rows", 2, in, 1, &a);
    for (int i = 0; i < is.rank - 1; i++) r[nr++] = is.d[i];
    for (int i = (int)(b + k); i < xs.rank; i++) r[nr++] = xs.d[i];
    return def_out(c, 0, reshape_to(c, y, nr, r, NULL));
}

/* ScatterND, ScatterElements (and opset 9's Scatter): the row (ND) or element of
 * data each update goes to, as one index list for index_copy over data's rows;
 * a reduction is index_copy's reduce, applied in the updates' order. */
static int map_scatter(onnx_ctx *c, const onnx_op_map *m)
{
    char red[16];       /* index_copy's reduce: ONNX's names */
    snprintf(red, sizeof red, "%s", onnx_attr_string(N(c), "reduction", "none"));
    if (strcmp(red, "none") && strcmp(red, "add") && strcmp(red, "mul") && strcmp(red, "max") && strcmp(red, "min"))
        return tg_err("reduction '%s' is not one ONNX defines", red);
    bool nd = !strcmp(N(c)->op_type, "ScatterND");
    int x = in_val(c, 0), idx = x < 0 ? -1 : as_i64(c, in_val(c, 1)), upd = idx < 0 ? -1 : in_val(c, 2);
    if (upd < 0) return -1;
    tg_shape xs = shape_of(c, x), is = shape_of(c, idx);
    int64_t d[TG_MAX_RANK], id[TG_MAX_RANK], k = 1, numel = 1;
    int j, lin, axis = 0;
    if (nd) {
        if (is.rank < 1 || !tg_dim_is_const(is.d[is.rank - 1], &k) || k < 1 || k > xs.rank)
            return tg_err("indices' last dim must be a constant in [1, %d]", xs.rank);
        if ((j = const_dims(xs, (int)k, d)) >= 0)
            return tg_err("data's dim %d is not a constant (dynamic indexed dims are not supported)", j);
        for (int i = 0; i < k; i++) numel *= d[i];
        lin = linear_rows(c, idx, (int)k, d, 1, -1, numel);
    } else {                                    /* every element of idx: its own coordinates */
        if (axis_norm(onnx_attr_int(N(c), "axis", 0), xs.rank, &axis)) return -1;
        if (const_dims(xs, xs.rank, d) >= 0 || const_dims(is, is.rank, id) >= 0 || is.rank != xs.rank)
            return tg_err("data and indices must have one rank and constant dims");
        int64_t stride[TG_MAX_RANK], n = tg_tensor_numel(is.rank, id), *base = malloc(sizeof(int64_t) * (size_t)(n ? n : 1));
        if (!base) return tg_err("out of memory");
        for (int i = xs.rank - 1; i >= 0; i--) stride[i] = numel, numel *= d[i];
        for (int64_t e = 0; e < n; e++) {       /* the offset of element e off the axis */
            int64_t r = e, o = 0;
            for (int i = is.rank - 1; i >= 0; i--) {
                o += i == axis ? 0 : (r % id[i]) * stride[i];
                r /= id[i];
            }
            base[e] = o;
        }
        int off = const_named(c, "element_base", TG_I64, is.rank, id, base);
        tg_dim ud[TG_MAX_RANK + 1];
        for (int i = 0; i < is.rank; i++) ud[i] = is.d[i];
        ud[is.rank] = tg_dim_const(1);
        lin = off < 0 ? -1 : linear_rows(c, reshape_to(c, idx, is.rank + 1, ud, "index_vectors"), 1, &d[axis],
                                         stride[axis], off, numel);
        k = xs.rank;
    }
    tg_dim n = tg_dim_const(1), r[TG_MAX_RANK + 1];
    for (int i = 0; i < is.rank - (nd ? 1 : 0); i++)
        if (tg_dim_mul(n, is.d[i], &n)) return -1;
    r[0] = n;
    for (int i = (int)k; i < xs.rank; i++) r[i - k + 1] = xs.d[i];
    int upd_rows = reshape_to(c, upd, xs.rank - (int)k + 1, r, "update_rows");
    r[0] = tg_dim_const(numel);
    int rows = reshape_to(c, x, xs.rank - (int)k + 1, r, "rows_of");
    lin = reshape_to(c, lin, 1, &n, "row_list");
    tg_attr a[2] = {tg_attr_int("axis", 0), tg_attr_string("reduce", red)};
    int in[3] = {rows, lin, upd_rows};
    int y = rows < 0 || lin < 0 || upd_rows < 0 ? -1 : onnx_add(c, TG_OP_INDEX_COPY, "rows", 3, in, strcmp(red, "none") ? 2 : 1, a);
    return def_out(c, 0, reshape_to(c, y, xs.rank, xs.d, NULL));
}

/* ---- constants and generators ----------------------------------------------------------- */

static int map_constant(onnx_ctx *c, const onnx_op_map *m)
{
    const Onnx__NodeProto *n = N(c);
    const Onnx__AttributeProto *a;
    const char *out = n->output[0];
    if ((a = onnx_attr(n, "value")) && a->t) {
        tg_dtype dt;
        int rank;
        int64_t dims[TG_MAX_RANK];
        void *data;
        size_t nb;
        if (onnx_tensor_decode(c, a->t, &dt, &rank, dims, &data, &nb)) return -1;
        return onnx_def_const(c, out, dt, rank, dims, data);
    }
    bool many_f = (a = onnx_attr(n, "value_floats")) != NULL, one_f = !many_f && onnx_attr(n, "value_float");
    bool many_i = !many_f && !one_f && onnx_attr(n, "value_ints"), one_i = !many_f && !one_f && !many_i && onnx_attr(n, "value_int");
    if (!many_f && !one_f && !many_i && !one_i) return tg_err("Constant without a supported value attribute");
    a = onnx_attr(n, many_f ? "value_floats" : one_f ? "value_float" : many_i ? "value_ints" : "value_int");
    int64_t cnt = many_f ? (int64_t)a->n_floats : many_i ? (int64_t)a->n_ints : 1;
    tg_dtype dt = many_f || one_f ? TG_F32 : TG_I64;
    void *p = malloc(8 * (cnt ? cnt : 1));
    if (!p) return tg_err("out of memory");
    for (int64_t i = 0; i < cnt; i++)
        tg_store_f64(dt, p, i, many_f ? a->floats[i] : one_f ? a->f : 0);
    if (many_i && cnt) memcpy(p, a->ints, 8 * cnt);
    if (one_i) memcpy(p, &a->i, 8);
    return onnx_def_const(c, out, dt, many_f || many_i ? 1 : 0, &cnt, p);
}

static int map_constant_of_shape(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *sh = in_req(c, 0);
    tg_dim d[TG_MAX_RANK];
    int n = 0;
    if (!sh || (sh->kind != ONNX_ENT_VALUE && onnx_dim_list(c, sh, TG_MAX_RANK, d, &n))) return -1;
    tg_dtype dt = TG_F32;
    double value = 0;
    const Onnx__AttributeProto *a = onnx_attr(N(c), "value");
    if (a && a->t) {
        int rank;
        int64_t dims[TG_MAX_RANK];
        void *data;
        size_t nb;
        if (onnx_tensor_decode(c, a->t, &dt, &rank, dims, &data, &nb)) return -1;
        value = nb ? tg_load_f64(dt, data, 0) : 0;
        free(data);
    }
    if (sh->kind == ONNX_ENT_VALUE) return def_out(c, 0, onnx_rt_full(c, sh->value, value, dt));
    tg_attr at[3] = {tg_attr_dims("shape", n, d), tg_attr_float("value", value), tg_attr_dtype("dtype", dt)};
    return def_out(c, 0, onnx_add(c, TG_OP_FULL, NULL, 0, NULL, 3, at));
}

/* Range of floating-point constants, folded: start + i delta for i < n =
 * max(ceil((limit - start) / delta), 0), in float64, stored in start's dtype. */
static int range_const(onnx_ctx *c, onnx_ent **e)
{
    double v[3];
    for (int i = 0; i < 3; i++)
        if (onnx_scalar_f64(e[i], &v[i])) return -1;
    double n = v[2] ? ceil((v[1] - v[0]) / v[2]) : NAN;
    if (!(n < (double)(1 << 24))) return tg_err("Range from %g to %g by %g is too long", v[0], v[1], v[2]);
    int64_t len = n > 0 ? (int64_t)n : 0;
    void *p = calloc(len ? (size_t)len : 1, tg_dtype_size(e[0]->dtype));
    if (!p) return tg_err("out of memory");
    for (int64_t i = 0; i < len; i++) tg_store_f64(e[0]->dtype, p, (size_t)i, v[0] + (double)i * v[2]);
    return const_named(c, "values", e[0]->dtype, 1, &len, p);
}

static int map_range(onnx_ctx *c, const onnx_op_map *m)
{
    onnx_ent *e[3];
    for (int i = 0; i < 3; i++)
        if (!(e[i] = in_req(c, i))) return -1;
    tg_dim start, end, step;
    int n, v[3];
    if (e[0]->kind == ONNX_ENT_CONST && e[1]->kind == ONNX_ENT_CONST && e[2]->kind == ONNX_ENT_CONST &&
        !tg_dtype_is_int(e[0]->dtype))
        return def_out(c, 0, range_const(c, e));
    for (int i = 0; i < 3; i++)                 /* read at run time */
        if (e[i]->kind == ONNX_ENT_VALUE || (e[i]->kind == ONNX_ENT_CONST && !tg_dtype_is_int(e[i]->dtype))) {
            for (int k = 0; k < 3; k++)
                if ((v[k] = onnx_value(c, e[k])) < 0) return -1;
            return def_out(c, 0, onnx_rt_range(c, v[0], v[1], v[2]));
        }
    if (onnx_dim_list(c, e[0], 1, &start, &n) || onnx_dim_list(c, e[1], 1, &end, &n) ||
        onnx_dim_list(c, e[2], 1, &step, &n))
        return -1;
    int64_t s0, st;
    if (!tg_dim_is_const(start, &s0) || !tg_dim_is_const(step, &st)) return tg_err("Range start and delta must be constant");
    tg_dtype dt = e[0]->kind == ONNX_ENT_CONST ? e[0]->dtype : TG_I64;
    tg_attr a[4] = {tg_attr_int("start", s0), tg_attr_dims("end", 1, &end), tg_attr_int("step", st),
                    tg_attr_dtype("dtype", dt)};
    return def_out(c, 0, onnx_add(c, TG_OP_ARANGE, NULL, 0, NULL, 4, a));
}

/* ---- losses ----------------------------------------------------------------------------- */

/* NegativeLogLikelihoodLoss of lp [N, C, d...] (log-probabilities) and
 * target [N, d...]: -lp[n, target, d...] weighted by weight[target] (0 where
 * target is ignore_index, which may lie outside [0, C)), then none, sum, or
 * mean (over the weights when there are any). */
static int nll_on(onnx_ctx *c, int lp, int target, int weight)
{
    const char *red = onnx_attr_string(N(c), "reduction", "mean");
    if (strcmp(red, "none") && strcmp(red, "sum") && strcmp(red, "mean"))
        return tg_err("reduction '%s' is not one ONNX defines", red);
    bool sum = !strcmp(red, "sum"), mean = !strcmp(red, "mean");
    tg_dtype dt = dtype_of(c, lp), it = dtype_of(c, target);
    tg_shape ts = shape_of(c, target);
    if (shape_of(c, lp).rank != ts.rank + 1 || ts.rank < 1) return tg_err("target must have one dim less than input");
    const Onnx__AttributeProto *ig = onnx_attr(N(c), "ignore_index");
    int mask = -1, t = target;
    if (ig) {
        int ii = scalar_const(c, "ignore_index", it, (double)ig->i);
        mask = ii < 0 ? -1 : binary_on(c, TG_OP_NE, "kept", target, ii);
        int in[3] = {mask, target, scalar_const(c, "zero_index", it, 0)};
        if (mask < 0 || in[2] < 0 || (t = onnx_add(c, TG_OP_WHERE, "target", 3, in, 0, NULL)) < 0) return -1;
    }
    tg_shape us = ts;                           /* target [N, 1, d...] for the gather */
    memmove(&us.d[2], &us.d[1], sizeof us.d[0] * (ts.rank - 1));
    us.d[1] = tg_dim_const(1);
    us.rank++;
    tg_attr ua = tg_attr_dims("shape", us.rank, us.d), ax1 = tg_attr_int("axis", 1), ax0 = tg_attr_int("axis", 0);
    tg_attr back = tg_attr_dims("shape", ts.rank, ts.d);
    int ut = unary_on(c, TG_OP_RESHAPE, "target_1", t, 1, &ua);
    int gin[2] = {lp, ut};
    int picked = ut < 0 ? -1 : onnx_add(c, TG_OP_GATHER, "picked", 2, gin, 1, &ax1);
    picked = picked < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, "picked_flat", picked, 1, &back);
    int loss = picked < 0 ? -1 : unary_on(c, TG_OP_NEG, "loss", picked, 0, NULL), w = -1;
    if (loss < 0) return -1;
    if (weight >= 0) {
        int win[2] = {weight, t};
        if ((w = onnx_add(c, TG_OP_INDEX_SELECT, "weight", 2, win, 1, &ax0)) < 0) return -1;
    }
    if (mask >= 0) {
        tg_attr ca = tg_attr_dtype("dtype", dt);
        int mf = unary_on(c, TG_OP_CAST, "kept_f", mask, 1, &ca);
        if (mf < 0 || (w = w < 0 ? mf : binary_on(c, TG_OP_MUL, "weight_kept", w, mf)) < 0) return -1;
    }
    if (w >= 0 && (loss = binary_on(c, TG_OP_MUL, sum || mean ? "weighted" : NULL, loss, w)) < 0) return -1;
    if (!sum && !mean) return loss;
    if (!mean || w < 0) return reduce_on(c, mean ? TG_OP_REDUCE_MEAN : TG_OP_REDUCE_SUM, NULL, loss, -1, NULL, 0);
    int num = reduce_on(c, TG_OP_REDUCE_SUM, "loss_sum", loss, -1, NULL, 0);
    int den = num < 0 ? -1 : reduce_on(c, TG_OP_REDUCE_SUM, "weight_sum", w, -1, NULL, 0);
    return den < 0 ? -1 : binary_on(c, TG_OP_DIV, NULL, num, den);
}

/* NegativeLogLikelihoodLoss, and SoftmaxCrossEntropyLoss: the same of
 * log_softmax over axis 1, which is its optional second output. */
static int map_loss(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), t = x < 0 ? -1 : in_val(c, 1), w = t < 0 ? -1 : in_val_opt(c, 2);
    if (t < 0 || (w < 0 && in_opt(c, 2))) return -1;
    if (m->op == TG_OP_LOG_SOFTMAX) {
        tg_attr a = tg_attr_int("axis", 1);
        if ((x = unary_on(c, TG_OP_LOG_SOFTMAX, "log_prob", x, 1, &a)) < 0) return -1;
        if (def_out(c, 1, x)) return -1;
    } else if (only_first_output(c))
        return -1;
    return def_out(c, 0, nll_on(c, x, t, w));
}

/* ---- the table ------------------------------------------------------------------------------ */

static const onnx_op_map onnx_ops[] = {
    {"Abs", onnx_map_unary, TG_OP_ABS}, {"Ceil", onnx_map_unary, TG_OP_CEIL}, {"Cos", onnx_map_unary, TG_OP_COS},
    {"Erf", onnx_map_unary, TG_OP_ERF}, {"Exp", onnx_map_unary, TG_OP_EXP}, {"Floor", onnx_map_unary, TG_OP_FLOOR},
    {"HardSwish", onnx_map_unary, TG_OP_HARDSWISH}, {"Log", onnx_map_unary, TG_OP_LOG},
    {"Neg", onnx_map_unary, TG_OP_NEG}, {"Not", onnx_map_unary, TG_OP_LOGICAL_NOT},
    {"Reciprocal", onnx_map_unary, TG_OP_RECIPROCAL}, {"Relu", onnx_map_unary, TG_OP_RELU},
    {"Round", onnx_map_unary, TG_OP_ROUND}, {"Sigmoid", onnx_map_unary, TG_OP_SIGMOID},
    {"Sin", onnx_map_unary, TG_OP_SIN}, {"Sqrt", onnx_map_unary, TG_OP_SQRT}, {"Tanh", onnx_map_unary, TG_OP_TANH},
    {"Tan", onnx_map_unary, TG_OP_TAN}, {"Asin", onnx_map_unary, TG_OP_ASIN}, {"Acos", onnx_map_unary, TG_OP_ACOS},
    {"Atan", onnx_map_unary, TG_OP_ATAN}, {"Sinh", onnx_map_unary, TG_OP_SINH}, {"Cosh", onnx_map_unary, TG_OP_COSH},
    {"Asinh", onnx_map_unary, TG_OP_ASINH}, {"Acosh", onnx_map_unary, TG_OP_ACOSH}, {"Atanh", onnx_map_unary, TG_OP_ATANH},
    {"Identity", map_alias, TG_OP_IDENTITY}, {"Dropout", map_dropout, 0},
    {"LeakyRelu", map_leaky_relu, TG_OP_LEAKY_RELU}, {"Elu", map_leaky_relu, TG_OP_ELU},
    {"Softplus", map_activation, 0}, {"Mish", map_activation, 0}, {"Softsign", map_activation, 0},
    {"Swish", map_activation, 0}, {"Selu", map_activation, 0}, {"Celu", map_activation, 0},
    {"ThresholdedRelu", map_activation, 0}, {"Shrink", map_activation, 0}, {"Sign", map_activation, 0},
    {"Gelu", map_gelu, 0}, {"HardSigmoid", map_hard_sigmoid, 0}, {"Clip", map_clip, 0},
    {"Cast", map_cast, TG_OP_CAST}, {"CastLike", map_cast, TG_OP_NONE}, {"BitCast", map_bitcast, 0},
    {"Add", onnx_map_binary, TG_OP_ADD}, {"Sub", onnx_map_binary, TG_OP_SUB}, {"Mul", onnx_map_binary, TG_OP_MUL},
    {"Div", onnx_map_binary, TG_OP_DIV}, {"Pow", onnx_map_binary, TG_OP_POW}, {"Mod", map_mod, 0},
    {"IsNaN", map_isnan_isinf, TG_OP_NE}, {"IsInf", map_isnan_isinf, TG_OP_EQ},
    {"Equal", onnx_map_binary, TG_OP_EQ}, {"Less", onnx_map_binary, TG_OP_LT},
    {"LessOrEqual", onnx_map_binary, TG_OP_LE}, {"Greater", onnx_map_binary, TG_OP_GT},
    {"GreaterOrEqual", onnx_map_binary, TG_OP_GE}, {"And", onnx_map_binary, TG_OP_LOGICAL_AND},
    {"Or", onnx_map_binary, TG_OP_LOGICAL_OR}, {"Xor", onnx_map_binary, TG_OP_NE},
    {"Min", map_variadic, TG_OP_MINIMUM}, {"Max", map_variadic, TG_OP_MAXIMUM},
    {"Sum", map_variadic, TG_OP_ADD}, {"Mean", map_variadic, TG_OP_DIV}, {"Where", map_where, 0},
    {"Softmax", map_softmax, TG_OP_SOFTMAX}, {"LogSoftmax", map_softmax, TG_OP_LOG_SOFTMAX},
    {"ReduceSum", map_reduce, TG_OP_REDUCE_SUM}, {"ReduceMean", map_reduce, TG_OP_REDUCE_MEAN},
    {"ReduceMax", map_reduce, TG_OP_REDUCE_MAX}, {"ReduceMin", map_reduce, TG_OP_REDUCE_MIN},
    {"ReduceProd", map_reduce, TG_OP_REDUCE_PROD}, {"ReduceL1", map_reduce, TG_OP_ABS},
    {"ReduceL2", map_reduce, TG_OP_SQRT}, {"ReduceSumSquare", map_reduce, TG_OP_MUL},
    {"ReduceLogSum", map_reduce, TG_OP_LOG}, {"ReduceLogSumExp", map_reduce, TG_OP_EXP},
    {"CumSum", map_cumsum, 0}, {"RMSNormalization", map_rms_norm, 0},
    {"LpNormalization", map_lp_norm, 0}, {"Hardmax", map_hardmax, 0}, {"NegativeLogLikelihoodLoss", map_loss, 0},
    {"SoftmaxCrossEntropyLoss", map_loss, TG_OP_LOG_SOFTMAX},
    {"ArgMax", map_arg_reduce, TG_OP_ARGMAX}, {"ArgMin", map_arg_reduce, TG_OP_ARGMIN},
    {"MatMul", map_matmul, 0}, {"Gemm", map_gemm, 0},
    {"Conv", map_conv, TG_OP_CONV}, {"ConvTranspose", map_conv, TG_OP_NONE},
    {"BatchNormalization", map_batch_norm, 0}, {"LayerNormalization", map_layer_norm, 0},
    {"GroupNormalization", map_group_norm, TG_OP_GROUP_NORM},
    {"InstanceNormalization", map_group_norm, TG_OP_NONE},
    {"MaxPool", map_pool, TG_OP_MAX_POOL}, {"AveragePool", map_pool, TG_OP_AVG_POOL},
    {"LpPool", map_lp_pool, 0}, {"MaxUnpool", map_max_unpool, 0},
    {"GlobalAveragePool", map_global_pool, TG_OP_REDUCE_MEAN},
    {"GlobalMaxPool", map_global_pool, TG_OP_REDUCE_MAX},
    {"Shape", map_shape, 0}, {"Size", map_shape, TG_OP_REDUCE_PROD},
    {"Reshape", map_reshape, 0}, {"Flatten", map_flatten, 0},
    {"Squeeze", map_squeeze, TG_OP_RESHAPE}, {"Unsqueeze", map_squeeze, TG_OP_NONE},
    {"Transpose", map_transpose, 0}, {"Concat", map_concat, 0}, {"Split", map_split, 0},
    {"Slice", map_slice, 0}, {"Gather", map_gather, TG_OP_INDEX_SELECT},
    {"GatherElements", map_gather, TG_OP_GATHER}, {"Expand", map_expand, 0},
    {"Tile", map_tile, 0}, {"Pad", map_pad, 0}, {"Trilu", map_trilu, 0}, {"TopK", map_topk, 0},
    {"Constant", map_constant, 0}, {"ConstantOfShape", map_constant_of_shape, 0},
    {"Range", map_range, 0}, {"GatherND", map_gather_nd, 0}, {"ScatterND", map_scatter, 0},
    {"ScatterElements", map_scatter, 0}, {"Scatter", map_scatter, 0},
};

int onnx_map_node(onnx_ctx *c, const Onnx__NodeProto *n)
{
    if (!n->op_type) return 1;
    const onnx_op_map *m = NULL;
    if (n->domain && !strcmp(n->domain, "com.microsoft"))
        for (int i = 0; i < onnx_quant_ms_nops && !m; i++)
            if (!strcmp(onnx_quant_ms_ops[i].type, n->op_type)) m = &onnx_quant_ms_ops[i];
    if (n->domain && !strcmp(n->domain, "ai.onnx.ml"))
        for (int i = 0; i < onnx_ml_nops && !m; i++)
            if (!strcmp(onnx_ml_ops[i].type, n->op_type)) m = &onnx_ml_ops[i];
    if (n->domain && *n->domain && strcmp(n->domain, "ai.onnx") && !m) return 1;
    for (size_t i = 0; i < sizeof onnx_ops / sizeof onnx_ops[0] && !m; i++)
        if (!strcmp(onnx_ops[i].type, n->op_type)) m = &onnx_ops[i];
    for (int i = 0; i < onnx_nn_nops && !m; i++)
        if (!strcmp(onnx_nn_ops[i].type, n->op_type)) m = &onnx_nn_ops[i];
    for (int i = 0; i < onnx_int_nops && !m; i++)
        if (!strcmp(onnx_int_ops[i].type, n->op_type)) m = &onnx_int_ops[i];
    for (int i = 0; i < onnx_spatial_nops && !m; i++)
        if (!strcmp(onnx_spatial_ops[i].type, n->op_type)) m = &onnx_spatial_ops[i];
    for (int i = 0; i < onnx_quant_nops && !m; i++)
        if (!strcmp(onnx_quant_ops[i].type, n->op_type)) m = &onnx_quant_ops[i];
    for (int i = 0; i < onnx_seq_nops && !m; i++)
        if (!strcmp(onnx_seq_ops[i].type, n->op_type)) m = &onnx_seq_ops[i];
    for (int i = 0; i < onnx_math_nops && !m; i++)
        if (!strcmp(onnx_math_ops[i].type, n->op_type)) m = &onnx_math_ops[i];
    for (int i = 0; i < onnx_data_nops && !m; i++)
        if (!strcmp(onnx_data_ops[i].type, n->op_type)) m = &onnx_data_ops[i];
    for (int i = 0; i < onnx_flow_nops && !m; i++)
        if (!strcmp(onnx_flow_ops[i].type, n->op_type)) m = &onnx_flow_ops[i];
    if (!m) return 1;
    if (n->n_output < 1) return tg_err("node has no outputs");
    int first = c->g->nnode;
    if (m->fn(c, m) < 0) return -1;
    tg_graph_log_mapped(c->g, first, n->op_type, n->name);
    return 0;
}
