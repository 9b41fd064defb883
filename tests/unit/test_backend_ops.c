/* Every op of ops.def on every path that runs a graph (cgcheck.h): for
 * each op, small graphs per attribute family, per shape family (same shape,
 * broadcasting, a symbolic batch dim, non-contiguous views that -O1 reads in
 * place, empty tensors) and per dtype the op takes, run interpreted and
 * compiled at -O0 (one kernel call per node) and -O1 (fused loops,
 * epilogues, pre-packing) on fresh random inputs and compared with the
 * float64 reference, compiled outputs between sentinel bytes.
 *
 * The list of ops comes from ops.def itself. An op whose shape inference is
 * one of the elementwise or reduction families (tg_infer_unary, _binary,
 * _compare, _reduce ...) gets its cases from the family with nothing to add;
 * any other op needs a builder in `cases` below, and an op with neither is a
 * failure naming it, so a new op in ops.def is never silently left out. The
 * program ends with that coverage report, the cases a path refused and, per
 * backend (cgcheck.h: the CPU and those TG_BACKEND_PATH names), the cases
 * it ran and those with a node it refused. */
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include "cgcheck.h"
#include "backend/cpu/cpu.h"
#include "backend/cpu/kernels/kernels.h"
#include "sparse/sparse.h"

static int covered[TG_OP_COUNT];
static char current[160];       /* the case running now, for on_kill */

/* Killed (a shard past its time limit): say where and how far it got, since
 * the summary at the end would never print. Only async-signal-safe calls. */
static void on_kill(int sig)
{
    char line[256], num[2][24];
    int v[2] = {unit_pass, unit_fail};
    for (int k = 0; k < 2; k++) {
        char *e = num[k] + sizeof num[k];
        *--e = 0;
        do *--e = (char)('0' + v[k] % 10); while (v[k] /= 10);
        memmove(num[k], e, strlen(e) + 1);
    }
    size_t n = 0;
    const char *part[] = {"test_backend_ops: killed during \"", current, "\": ", num[0], " passed, ",
                          num[1], " failed so far\n"};
    for (size_t k = 0; k < sizeof part / sizeof part[0]; k++)
        for (const char *c = part[k]; *c && n < sizeof line; c++) line[n++] = *c;
    if (write(2, line, n) < 0) {}
    _exit(128 + sig);
}

static void run(tg_op op, const char *what, tg_graph *g, cg_case o)
{
    snprintf(current, sizeof current, "%s: %s", tg_op_name(op), what);
    covered[op]++;
    if (!o.levels)
        o.levels = 3;
    check_case_with(current, g, &o);
}

/* One node of op on inputs in[0..n) with attributes; its value. */
static int node(tg_graph *g, tg_op op, int n, const int *in, int na, const tg_attr *a)
{
    return tg_graph_add_node(g, op, NULL, n, in, na, a);
}

static tg_graph *one_node(tg_graph *g, tg_op op, int n, const int *in, int na, const tg_attr *a)
{
    int y = node(g, op, n, in, na, a);
    CHECK(y >= 0);
    if (y < 0)
        fprintf(stderr, "%s: %s\n", tg_op_name(op), tg_errmsg());
    tg_graph_add_output(g, y);
    return g;
}

/* ---- the families ---------------------------------------------------------- */

static const char *dt(tg_dtype t)
{
    return tg_dtype_name(t);
}

/* the input range where an op is defined and its result stays moderate */
static cg_case unary_range(tg_op op)
{
    switch (op) {
    case TG_OP_LOG: case TG_OP_SQRT: case TG_OP_RSQRT: return (cg_case){.lo = 0.1, .hi = 4};
    case TG_OP_RECIPROCAL: return (cg_case){.lo = 0.5, .hi = 3};
    case TG_OP_ASIN: case TG_OP_ACOS: case TG_OP_ATANH: return (cg_case){.lo = -0.95, .hi = 0.95};
    case TG_OP_ACOSH: return (cg_case){.lo = 1.05, .hi = 4};
    case TG_OP_TAN: return (cg_case){.lo = -1.4, .hi = 1.4};
    default: return (cg_case){0};
    }
}

/* op on input x with attributes, one more output of g */
static void unary_out(tg_graph *g, tg_op op, int x, int na, const tg_attr *a)
{
    int y = node(g, op, 1, &x, na, a);
    CHECK(y >= 0);
    if (y < 0)
        fprintf(stderr, "%s: %s\n", tg_op_name(op), tg_errmsg());
    tg_graph_add_output(g, y);
}

/* x [batch,4,37] read through a view: a transpose, and every other column */
static int transposed(tg_graph *g, const char *name, tg_dtype t)
{
    int x = cg_input(g, name, t, DIMS(37, 4));
    tg_attr p = tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1});
    return node(g, TG_OP_PERMUTE, 1, &x, 1, &p);
}

static int strided(tg_graph *g, const char *name, tg_dtype t)
{
    int x = cg_input(g, name, t, DIMS(4, 74));
    tg_attr a[4] = {tg_attr_int("axis", -1), tg_attr_int("start", 1), tg_attr_int("end", 74),
                    tg_attr_int("step", 2)};
    return node(g, TG_OP_SLICE, 1, &x, 4, a);
}

/* the shape families of an elementwise op on dtype t: its input a
 * transposed and a strided view (non-contiguous: -O1 reads them in place),
 * and an empty tensor [batch,0,37] */
static void views_unary(tg_graph *g, tg_op op, tg_dtype t)
{
    unary_out(g, op, transposed(g, "x_t", t), 0, NULL);
    unary_out(g, op, strided(g, "x_s", t), 0, NULL);
    unary_out(g, op, cg_input(g, "x_e", t, DIMS(0, 37)), 0, NULL);
}

/* one graph: an input per dtype, the op and each of its attribute families
 * on it (integral float constants among them) */
static void family_unary(tg_op op, const tg_dtype *types, int nt)
{
    tg_graph *g = tg_graph_new();
    for (int i = 0; i < nt; i++) {
        tg_dtype t = types[i];
        char name[16];
        snprintf(name, sizeof name, "x_%s", dt(t));
        int x = cg_input(g, name, t, DIMS(4, 37));
        bool f = tg_dtype_is_float(t);
        unary_out(g, op, x, 0, NULL);
        if (op == TG_OP_LEAKY_RELU || op == TG_OP_ELU) {
            tg_attr a = tg_attr_float("alpha", 1);
            unary_out(g, op, x, 1, &a);
            a = tg_attr_float("alpha", 0.3);
            unary_out(g, op, x, 1, &a);
        } else if (op == TG_OP_GELU) {
            tg_attr a = tg_attr_string("approximate", "tanh");
            unary_out(g, op, x, 1, &a);
        } else if (op == TG_OP_CLAMP) {
            tg_attr mm[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};  /* relu6 */
            unary_out(g, op, x, 2, mm);
            tg_attr lo = tg_attr_float("min", f ? -0.5 : -1);
            unary_out(g, op, x, 1, &lo);
            tg_attr hi = tg_attr_float("max", f ? 1.25 : 2);
            unary_out(g, op, x, 1, &hi);
        }
    }
    views_unary(g, op, types[0]);
    run(op, "every dtype and attribute family, views, empty", g, unary_range(op));
}

/* the shape families of a binary op on dtype t, a [batch,4,37] and r
 * [batch,1,37]: a op a transposed and a strided view, r made [batch,4,37]
 * by an expand (a broadcast read in place), a column [batch,4,1] and a
 * rank-0 constant broadcast, and an empty [batch,0,37] op r */
static void views_binary(tg_graph *g, tg_op op, tg_dtype t, int a, int r, const cg_case *o)
{
    int b[5] = {transposed(g, "b_t", t), strided(g, "b_s", t)};
    tg_attr e = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(4),
                                                   tg_dim_const(37)});
    b[2] = node(g, TG_OP_EXPAND, 1, &r, 1, &e);
    b[3] = cg_input(g, "b_c", t, DIMS(4, 1));
    b[4] = cg_const(g, "b_0", t, (int64_t[]){0}, 0, o);
    for (int k = 0; k < 5; k++)
        tg_graph_add_output(g, node(g, op, 2, (int[]){a, b[k]}, 0, NULL));
    int empty = cg_input(g, "a_e", t, DIMS(0, 37));
    tg_graph_add_output(g, node(g, op, 2, (int[]){empty, r}, 0, NULL));
}

/* one graph: per dtype, a [batch,4,37] op b for b of the same shape,
 * [batch,1,37] and a constant [37] */
static void family_binary(tg_op op, const tg_dtype *types, int nt)
{
    tg_graph *g = tg_graph_new();
    bool f = true;
    for (int i = 0; i < nt; i++) {
        tg_dtype t = types[i];
        f = f && tg_dtype_is_float(t);
        cg_case o = op == TG_OP_POW && !tg_dtype_is_float(t) ? (cg_case){.lo = 0, .hi = 4}
                                                              : (cg_case){0};
        o.nonzero = op == TG_OP_DIV || op == TG_OP_REMAINDER || op == TG_OP_FMOD;
        char an[16], bn[16], rn[16], cn[16];
        snprintf(an, sizeof an, "a_%s", dt(t));
        snprintf(bn, sizeof bn, "b_%s", dt(t));
        snprintf(rn, sizeof rn, "r_%s", dt(t));
        snprintf(cn, sizeof cn, "c_%s", dt(t));
        int a = cg_input(g, an, t, DIMS(4, 37));
        int b[3] = {cg_input(g, bn, t, DIMS(4, 37)), cg_input(g, rn, t, DIMS(1, 37)),
                    cg_const(g, cn, t, DIMS(37), &o)};
        for (int k = 0; k < 3; k++)
            tg_graph_add_output(g, node(g, op, 2, (int[]){a, b[k]}, 0, NULL));
        if (i == 0)
            views_binary(g, op, t, a, b[1], &o);
    }
    /* pow: positive bases; integer pow: small exponents; integer div, remainder: no 0 */
    cg_case o = {0};
    if (op == TG_OP_POW)
        o = f ? (cg_case){.lo = 0.5, .hi = 2} : (cg_case){.lo = 0, .hi = 4};
    if (op == TG_OP_SHL || op == TG_OP_SHR)   /* counts past every width, and negative */
        o = (cg_case){.lo = -4, .hi = 70};
    o.nonzero = op == TG_OP_DIV || op == TG_OP_REMAINDER || op == TG_OP_FMOD;
    run(op, "every dtype, same shape, row broadcast, constant", g, o);
}

/* one graph per dtype: the trailing axis, middle axes, the last two kept,
 * everything; keepdim 0 and 1 (reduce_var: correction 0 and 1); an empty
 * tensor */
static void family_reduce(tg_op op, const tg_dtype *types, int nt)
{
    static const int64_t axes[][3] = {{1, -1}, {2, 1, 2}, {2, 2, 3}, {0}};
    for (int i = 0; i < nt; i++) {
        tg_dtype t = types[i];
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", t, DIMS(4, 5, 6));
        for (int k = 0; k < 4; k++)
            for (int keep = 0; keep < 2; keep++) {
                tg_attr a[3];
                int na = 0;
                if (axes[k][0])
                    a[na++] = tg_attr_ints("axes", (int)axes[k][0], &axes[k][1]);
                a[na++] = tg_attr_int("keepdim", keep);
                if (op == TG_OP_REDUCE_VAR)
                    a[na++] = tg_attr_int("correction", keep);
                unary_out(g, op, x, na, a);
            }
        /* an empty tensor, reduced along an axis that is not empty */
        int e = cg_input(g, "x_e", t, DIMS(0, 6));
        tg_attr a[2] = {tg_attr_ints("axes", 1, (int64_t[]){2}), tg_attr_int("correction", 0)};
        unary_out(g, op, e, op == TG_OP_REDUCE_VAR ? 2 : 1, a);
        cg_case o = op != TG_OP_REDUCE_PROD ? (cg_case){0}
                    : tg_dtype_is_float(t) ? (cg_case){.lo = 0.6, .hi = 1.4}
                                           : (cg_case){.lo = -1, .hi = 2};
        run(op, dt(t), g, o);
    }
}

/* ---- ops with cases of their own ------------------------------------------ */

static const tg_dtype FLOATS[] = {TG_F32, TG_F64};
static const tg_dtype ANY[] = {TG_F32, TG_F64, TG_I32, TG_I64, TG_I8};
/* unary ops take these in a graph of their own (a case has at most CG_MAX_IO outputs) */
static const tg_dtype UNSIGNED[] = {TG_U16, TG_U32, TG_U64};
static const tg_dtype INTS[] = {TG_I32, TG_I64, TG_I8, TG_U8, TG_U16, TG_U32, TG_U64};
#define NINTS ((int)(sizeof INTS / sizeof INTS[0]))
static const tg_dtype NUMS[] = {TG_F32, TG_I32, TG_I64};

/* op with attribute dtype = pairs[i][1] on an input of dtype pairs[i][0], a case each */
static void dtype_pairs(tg_op op, const tg_dtype (*pairs)[2], size_t n)
{
    for (size_t i = 0; i < n; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", pairs[i][0], DIMS(4, 37));
        tg_attr a = tg_attr_dtype("dtype", pairs[i][1]);
        char w[64];
        snprintf(w, sizeof w, "%s -> %s", dt(pairs[i][0]), dt(pairs[i][1]));
        run(op, w, one_node(g, op, 1, &x, 1, &a), (cg_case){0});
    }
}

static void case_cast(tg_op op)
{
    static const tg_dtype pairs[][2] = {
        {TG_F32, TG_I64}, {TG_I64, TG_F32}, {TG_F32, TG_BOOL}, {TG_BOOL, TG_F32},
        {TG_F32, TG_F16}, {TG_F16, TG_F32}, {TG_F32, TG_BF16}, {TG_F64, TG_F32},
        {TG_I32, TG_I64}, {TG_I64, TG_I8}, {TG_F32, TG_F32},
        {TG_U64, TG_F32}, {TG_F32, TG_U32}, {TG_U16, TG_I64}, {TG_I64, TG_U64},
        {TG_U64, TG_F16}, {TG_U32, TG_F64},
    };
    dtype_pairs(op, pairs, sizeof pairs / sizeof pairs[0]);
}

/* same-size pairs; the float ones compare against the interpreter (no f64 form) */
static void case_bitcast(tg_op op)
{
    static const tg_dtype pairs[][2] = {
        {TG_F32, TG_I32}, {TG_I32, TG_F32}, {TG_F64, TG_I64}, {TG_U64, TG_I64}, {TG_I8, TG_U8},
        {TG_BOOL, TG_U8}, {TG_F16, TG_U16}, {TG_U32, TG_U32},
    };
    dtype_pairs(op, pairs, sizeof pairs / sizeof pairs[0]);
}

static void case_identity(tg_op op)
{
    family_unary(op, (tg_dtype[]){TG_F32, TG_I64, TG_BOOL}, 3);
}

static void case_where(tg_op op)
{
    for (int i = 0; i < 3; i++) {
        tg_graph *g = tg_graph_new();
        int c = cg_input(g, "c", TG_BOOL, DIMS(4, 37));
        int a = cg_input(g, "a", NUMS[i], DIMS(1, 37));
        int b = cg_const(g, "b", NUMS[i], DIMS(37), NULL);
        run(op, dt(NUMS[i]), one_node(g, op, 3, (int[]){c, a, b}, 0, NULL), (cg_case){0});
    }
}

static void case_arg_reduce(tg_op op)
{
    static const tg_dtype types[] = {TG_F32, TG_I32, TG_I64, TG_U64};
    for (int i = 0; i < 4; i++)
        for (int k = 0; k < 3; k++) {
            tg_graph *g = tg_graph_new();
            int x = cg_input(g, "x", types[i], DIMS(5, 6));
            tg_attr a[2] = {tg_attr_int("axis", k == 0 ? 1 : -1), tg_attr_int("keepdim", k == 1)};
            char w[64];
            snprintf(w, sizeof w, "%s, %s", dt(types[i]),
                     k == 0 ? "axis 1" : k == 1 ? "axis -1 keepdim" : "flattened");
            run(op, w, one_node(g, op, 1, &x, k == 2 ? 0 : 2, a), (cg_case){0});
        }
}

static void case_softmax(tg_op op)
{
    for (int ax = -1; ax <= 1; ax += 2) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(5, 6));
        tg_attr a = tg_attr_int("axis", ax);
        run(op, ax < 0 ? "axis -1" : "axis 1", one_node(g, op, 1, &x, 1, &a), (cg_case){0});
    }
}

static void case_norm(tg_op op)
{
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(6, 4, 5)), in[5] = {x}, n = 1;
        tg_attr a[2] = {tg_attr_float("eps", k == 1 ? 1 : 1e-5)};    /* integral eps */
        int na = 1;
        if (op == TG_OP_LAYER_NORM) {
            if (k > 0) {
                a[na++] = tg_attr_int("axis", -2);
                in[n++] = W(g, "w", 4, 5);
            }
            if (k == 2)
                in[n++] = W(g, "b", 4, 5);
        } else if (op == TG_OP_GROUP_NORM) {
            a[na++] = tg_attr_int("groups", k == 0 ? 1 : k == 1 ? 2 : 3);
            if (k > 0) {
                in[n++] = W(g, "w", 6);
                in[n++] = W(g, "b", 6);
            }
        } else {
            in[n++] = W(g, "mean", 6);
            in[n++] = cg_const(g, "var", TG_F32, DIMS(6), &(cg_case){.lo = 0.5, .hi = 2});
            if (k > 0)
                in[n++] = W(g, "w", 6);
            if (k > 1)
                in[n++] = W(g, "b", 6);
        }
        char w[32];
        snprintf(w, sizeof w, "variant %d", k);
        run(op, w, one_node(g, op, n, in, na, a), (cg_case){0});
    }
}

static void case_matmul(tg_op op)
{
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        int a, b;
        if (k == 2) {   /* [batch,1,6,7] @ [3,7,9]: the batch dims broadcast */
            a = cg_input(g, "a", TG_F32, DIMS(1, 6, 7));
            b = W(g, "b", 3, 7, 9);
        } else {        /* a constant (linear at -O1), a batched input, a vector */
            a = cg_input(g, "a", TG_F32, DIMS(6, 7));
            b = k == 0 ? W(g, "b", 7, 9) : k == 1 ? cg_input(g, "b", TG_F32, DIMS(7, 9))
                                                  : W(g, "b", 7);
        }
        static const char *const what[] = {"constant", "batched", "broadcast", "1-D"};
        run(op, what[k], one_node(g, op, 2, (int[]){a, b}, 0, NULL), (cg_case){0});
    }
}

static void case_linear(tg_op op)
{
    for (int bias = 0; bias < 2; bias++)
        for (int computed = 0; computed < 2; computed++) {
            tg_graph *g = tg_graph_new();
            int x = cg_input(g, "x", TG_F32, DIMS(5, 19)), w;
            if (computed) {
                tg_shape s = tg_shape_of(2, (int64_t[]){21, 19});
                w = tg_graph_add_input(g, "w", TG_F32, &s);
            } else {
                w = W(g, "w", 21, 19);
            }
            int in[3] = {x, w, bias ? W(g, "b", 21) : -1};
            char what[48];
            snprintf(what, sizeof what, "%s weight, %s", computed ? "computed" : "constant",
                     bias ? "bias" : "no bias");
            run(op, what, one_node(g, op, bias ? 3 : 2, in, 0, NULL), (cg_case){0});
        }
}

/* linear_packed as tcompile's prepack makes it: a linear, packed here; the
 * linear is the reference */
static void case_linear_packed(tg_op op)
{
    for (int bias = 0; bias < 2; bias++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(5, 19));
        int in[3] = {x, W(g, "w", 37, 19), bias ? W(g, "b", 37) : -1};
        one_node(g, TG_OP_LINEAR, bias ? 3 : 2, in, 0, NULL);
        tg_graph *linear = tg_graph_clone(g);   /* the reference */
        CHECK(tg_cpu_prepack(g) == 1 && tg_pass_dce(g) >= 0);
        run(op, bias ? "bias" : "no bias", g, (cg_case){.reference = linear});
    }
}

/* conv_nhwc as tcompile --layout=nhwc makes it: a conv between permutes on
 * x [batch, H, W, C], lowered here (tg_cpu_channels_last, the permutes
 * cancelled); the conv is the reference. Plain, 1x1 stride 2, depthwise
 * stride 2, grouped (16 a group) with dilation 2; and with the epilogues
 * its kernel applies at -O1: residual + relu, hardswish. */
static void case_conv_nhwc(tg_op op)
{
    static const struct {
        int64_t c, k, kernel, stride, pad, dil, groups;
        int ep;     /* 0: none, 1: + residual, relu; 2: hardswish */
        const char *what;
    } cs[] = {
        {8, 24, 3, 1, 1, 1, 1, 0, "3x3"},
        {16, 20, 1, 2, 0, 1, 1, 0, "1x1 stride 2, no bias"},
        {16, 16, 3, 2, 1, 1, 16, 0, "depthwise 3x3 stride 2"},
        {32, 32, 3, 1, 2, 2, 2, 0, "groups of 16, dilation 2"},
        {8, 16, 3, 1, 1, 1, 1, 1, "3x3 + residual, relu"},
        {16, 16, 5, 1, 2, 1, 16, 2, "depthwise 5x5, hardswish"},
    };
    for (size_t i = 0; i < sizeof cs / sizeof cs[0]; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(7, 6, cs[i].c));
        int w = weight(g, "w", 4, (int64_t[]){cs[i].k, cs[i].c / cs[i].groups, cs[i].kernel,
                                              cs[i].kernel});
        int b = i == 1 ? -1 : W(g, "b", cs[i].k);
        tg_attr p = tg_attr_ints("perm", 4, (int64_t[]){0, 3, 1, 2});
        tg_attr a[4] = {tg_attr_int("groups", cs[i].groups),
                        tg_attr_ints("stride", 1, &cs[i].stride),
                        tg_attr_ints("padding", 1, &cs[i].pad),
                        tg_attr_ints("dilation", 1, &cs[i].dil)};
        int y = node(g, TG_OP_PERMUTE, 1, &x, 1, &p);
        y = node(g, TG_OP_CONV, 3, (int[]){y, w, b}, 4, a);
        p = tg_attr_ints("perm", 4, (int64_t[]){0, 2, 3, 1});
        y = node(g, TG_OP_PERMUTE, 1, &y, 1, &p);
        if (cs[i].ep == 1) {
            const tg_shape *s = &g->values[y].shape;
            int64_t d[3];
            for (int k = 0; k < 3; k++)
                tg_dim_is_const(s->d[1 + k], &d[k]);
            int r = cg_input(g, "res", TG_F32, d, 3);
            y = node(g, TG_OP_RELU, 1, (int[]){node(g, TG_OP_ADD, 2, (int[]){y, r}, 0, NULL)}, 0,
                     NULL);
        } else if (cs[i].ep == 2) {
            y = node(g, TG_OP_HARDSWISH, 1, &y, 0, NULL);
        }
        CHECK(y >= 0);
        tg_graph_add_output(g, y);
        tg_graph *ref = tg_graph_clone(g);
        CHECK(tg_cpu_channels_last(g) > 0 && tg_pass_dce(g) >= 0);
        for (int n = 0; n < g->nnode; n++)
            CHECK(g->nodes[n].op != TG_OP_PERMUTE && g->nodes[n].op != TG_OP_CONV);
        run(op, cs[i].what, g, (cg_case){.reference = ref});
    }
}

static void case_conv(tg_op op)
{
    for (int k = 0; k < 5; k++) {
        tg_graph *g = tg_graph_new();
        bool one_d = k == 4, tr = k == 3;
        int x = one_d ? cg_input(g, "x", TG_F32, DIMS(4, 11)) : cg_input(g, "x", TG_F32, DIMS(4, 7, 6));
        int64_t groups = k == 2 ? 2 : 1;
        int w = one_d ? W(g, "w", 6, 4, 3) : tr ? W(g, "w", 4, 3, 3, 3) : W(g, "w", 6, 4 / groups, 3, 3);
        /* attributes point at these arrays */
        int64_t pad[] = {k == 0 ? 0 : 1}, stride[] = {k == 1 || tr ? 2 : 1}, dil[] = {2};
        tg_attr a[5];
        int na = 0;
        a[na++] = tg_attr_ints("padding", 1, pad);
        a[na++] = tg_attr_ints("stride", 1, stride);
        a[na++] = tg_attr_int("groups", groups);
        if (k == 1)
            a[na++] = tg_attr_ints("dilation", 1, dil);
        if (tr)
            a[na++] = tg_attr_int("transposed", 1);
        int b = W(g, "b", tr ? 3 : 6);
        static const char *const what[] = {"plain", "stride 2 dilation 2", "groups 2",
                                           "transposed", "1-D"};
        run(op, what[k], one_node(g, op, k == 0 ? 2 : 3, (int[]){x, w, b}, na, a), (cg_case){0});
    }
}

/* sdpa in bf16 and fp16: on the cuda device, the flash kernels' cases (head
 * dims 64 and 128; lengths no multiple of a tile, prefill over 16 queries
 * and decode up to 16; causal, bool and additive masks broadcast, GQA, a
 * scale) and a head dim they refuse (40: the simple kernel, converted);
 * interpreted only: the CPU's code generator takes sdpa in f32 only */
static void sdpa_half(tg_op op, tg_dtype t, int k)
{
    static const struct {
        int64_t hq, hk, L, S, D;
        const char *what;
    } c[] = {
        {4, 2, 37, 45, 64, "d64 prefill causal gqa"},
        {4, 4, 5, 70, 128, "d128 decode bool mask [batch,1,L,S]"},
        {2, 1, 33, 19, 64, "d64 prefill additive mask [L,S], scale 0.3, mqa"},
        {2, 2, 7, 9, 40, "d40 (no flash kernel)"},
    };
    tg_graph *g = tg_graph_new();
    int q = cg_input(g, "q", t, DIMS(c[k].hq, c[k].L, c[k].D));
    int kk = cg_input(g, "k", t, DIMS(c[k].hk, c[k].S, c[k].D));
    int v = cg_input(g, "v", t, DIMS(c[k].hk, c[k].S, c[k].D));
    int in[4] = {q, kk, v}, n = 3;
    tg_attr a[2];
    int na = 0;
    if (k == 0)
        a[na++] = tg_attr_int("causal", 1);
    if (k == 0 || k == 2)
        a[na++] = tg_attr_int("gqa", 1);
    if (k == 1)
        in[n++] = cg_input(g, "mask", TG_BOOL, DIMS(1, c[k].L, c[k].S));
    if (k == 2) {
        in[n++] = cg_const(g, "mask", t, DIMS(c[k].L, c[k].S), NULL);
        a[na++] = tg_attr_float("scale", 0.3);
    }
    char what[96];
    snprintf(what, sizeof what, "%s, %s", dt(t), c[k].what);
    run(op, what, one_node(g, op, n, in, na, a), (cg_case){.interpreted = true});
}

static void case_sdpa(tg_op op)
{
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        int64_t hk = k == 3 ? 1 : 2;
        int q = cg_input(g, "q", TG_F32, DIMS(2, 5, 8));
        int kk = cg_input(g, "k", TG_F32, (int64_t[]){hk, 6, 8}, 3);
        int v = cg_input(g, "v", TG_F32, (int64_t[]){hk, 6, 4}, 3);
        int in[4] = {q, kk, v}, n = 3;
        tg_attr a[2];
        int na = 0;
        if (k == 0)
            a[na++] = tg_attr_int("causal", 1);
        if (k == 1) {
            in[n++] = W(g, "mask", 5, 6);
            a[na++] = tg_attr_float("scale", 1);        /* integral */
        }
        if (k == 2)
            a[na++] = tg_attr_float("scale", 0.3);
        if (k == 3)
            a[na++] = tg_attr_int("gqa", 1);
        static const char *const what[] = {"causal", "float mask, scale 1", "scale 0.3", "gqa"};
        run(op, what[k], one_node(g, op, n, in, na, a), (cg_case){0});
    }
    for (int t = 0; t < 2; t++)
        for (int k = 0; k < 4; k++)
            sdpa_half(op, t ? TG_F16 : TG_BF16, k);
}

static void case_pool(tg_op op)
{
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new();
        int x = k == 2 ? cg_input(g, "x", TG_F32, DIMS(3, 10)) : cg_input(g, "x", TG_F32, DIMS(3, 9, 8));
        int nsp = k == 2 ? 1 : 2;
        int64_t size[] = {k == 0 ? 1 : 4, k == 0 ? 1 : 3}, kern[] = {k == 0 ? 2 : 3},
                stride[] = {2}, pad[] = {k == 1};
        tg_attr a[4];
        int na = 0;
        if (op == TG_OP_ADAPTIVE_AVG_POOL) {
            a[na++] = tg_attr_ints("output_size", nsp, size);
        } else {
            a[na++] = tg_attr_ints("kernel", 1, kern);
            a[na++] = tg_attr_ints("stride", 1, stride);
            a[na++] = tg_attr_ints("padding", 1, pad);
            a[na++] = tg_attr_int("ceil_mode", k == 1);
        }
        static const char *const what[] = {"2-D", "2-D padded, ceil mode", "1-D"};
        run(op, what[k], one_node(g, op, 1, &x, na, a), (cg_case){.exact = op == TG_OP_MAX_POOL});
    }
    /* channels_last=1 on x [batch, H, W, C], as tcompile --layout=nhwc makes it
     * in a conv net (test_channels_last tests the pass): the pool on NCHW
     * between permutes is the reference */
    for (int k = 0; k < 2; k++) {
        int64_t size[] = {k ? 3 : 1, k ? 2 : 1}, kern[] = {3}, stride[] = {2}, pad[] = {k};
        tg_attr a[5];
        int na = 0;
        if (op == TG_OP_ADAPTIVE_AVG_POOL) {
            a[na++] = tg_attr_ints("output_size", 2, size);
        } else {
            a[na++] = tg_attr_ints("kernel", 1, kern);
            a[na++] = tg_attr_ints("stride", 1, stride);
            a[na++] = tg_attr_ints("padding", 1, pad);
            a[na++] = tg_attr_int("ceil_mode", k);
        }
        tg_graph *ref = tg_graph_new();
        int x = cg_input(ref, "x", TG_F32, DIMS(9, 8, 19));
        tg_attr p = tg_attr_ints("perm", 4, (int64_t[]){0, 3, 1, 2});
        int y = node(ref, TG_OP_PERMUTE, 1, &x, 1, &p);
        y = node(ref, op, 1, &y, na, a);
        p = tg_attr_ints("perm", 4, (int64_t[]){0, 2, 3, 1});
        tg_graph_add_output(ref, node(ref, TG_OP_PERMUTE, 1, &y, 1, &p));
        tg_graph *g = tg_graph_new();
        x = cg_input(g, "x", TG_F32, DIMS(9, 8, 19));
        a[na++] = tg_attr_int("channels_last", 1);
        run(op, k ? "channels-last, padded, ceil mode" : "channels-last", one_node(g, op, 1, &x, na, a),
            (cg_case){.exact = op == TG_OP_MAX_POOL, .reference = ref});
    }
}

static void case_resize(tg_op op)
{
    static const struct {
        const char *what, *mode, *coord, *nearest;
        int nsp;
        int64_t size[2];
        double scales[2], a;    /* scales {0}: none */
    } k[] = {
        {"2-D linear up, half_pixel", "linear", "half_pixel", "floor", 2, {13, 11}, {0}, -0.75},
        {"2-D nearest down, asymmetric floor", "nearest", "asymmetric", "floor", 2, {4, 3}, {0},
         -0.75},
        {"2-D cubic, align_corners, a -1", "cubic", "align_corners", "floor", 2, {5, 14}, {0}, -1},
        {"2-D nearest, integral scales 2", "nearest", "half_pixel", "round_prefer_ceil", 2,
         {18, 16}, {2, 2}, -0.75},
        {"1-D linear, scale 1.5", "linear", "pytorch_half_pixel", "floor", 1, {15}, {1.5},
         -0.75},
        {"2-D linear, align_corners, scales 1.6 and 0.7 (ONNX's length)", "linear",
         "align_corners", "floor", 2, {14, 5}, {1.6, 0.7}, -0.75},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        tg_graph *g = tg_graph_new();
        int x = k[i].nsp == 2 ? cg_input(g, "x", TG_F32, DIMS(3, 9, 8))
                              : cg_input(g, "x", TG_F32, DIMS(3, 10));
        tg_attr a[6] = {tg_attr_ints("size", k[i].nsp, k[i].size),
                        tg_attr_string("mode", k[i].mode), tg_attr_string("coord", k[i].coord),
                        tg_attr_string("nearest_mode", k[i].nearest),
                        tg_attr_float("cubic_a", k[i].a),
                        tg_attr_floats("scales", k[i].nsp, k[i].scales)};
        run(op, k[i].what, one_node(g, op, 1, &x, k[i].scales[0] > 0 ? 6 : 5, a),
            (cg_case){.exact = !strcmp(k[i].mode, "nearest")});
    }
    /* size and scales over all axes, the batch and channel ones as they are */
    tg_graph *g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(3, 6, 5));
    tg_dim size[4] = {g->values[x].shape.d[0], tg_dim_const(3), tg_dim_const(9), tg_dim_const(4)};
    double scales[4] = {1, 1, 1.5, 0.8};
    tg_attr a[3] = {tg_attr_dims("size", 4, size), tg_attr_string("mode", "cubic"),
                    tg_attr_floats("scales", 4, scales)};
    run(op, "2-D cubic, size and scales over all axes", one_node(g, op, 1, &x, 3, a),
        (cg_case){0});
    /* ONNX's antialiased shrinking, and tf_crop_and_resize with a value outside the region */
    static const char *const aa_modes[] = {"linear", "cubic"};
    for (int m = 0; m < 2; m++) {
        g = tg_graph_new();
        x = cg_input(g, "x", TG_F32, DIMS(2, 11, 9));
        int64_t sz[2] = {4, 5};
        tg_attr b[3] = {tg_attr_ints("size", 2, sz), tg_attr_string("mode", aa_modes[m]), tg_attr_int("antialias", 1)};
        run(op, m ? "2-D cubic antialiased, shrinking" : "2-D linear antialiased, shrinking",
            one_node(g, op, 1, &x, 3, b), (cg_case){0});
    }
    g = tg_graph_new();
    x = cg_input(g, "x", TG_F32, DIMS(2, 7, 6));
    int64_t sz[2] = {5, 8};
    double roi[4] = {0.2, -0.3, 0.9, 0.7};
    tg_attr b[5] = {tg_attr_ints("size", 2, sz), tg_attr_string("mode", "linear"),
                    tg_attr_string("coord", "tf_crop_and_resize"), tg_attr_floats("roi", 4, roi),
                    tg_attr_float("extrapolation", 2.5)};
    run(op, "2-D linear tf_crop_and_resize, extrapolated", one_node(g, op, 1, &x, 5, b), (cg_case){0});
}

static void case_reshape(tg_op op)
{
    tg_graph *g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(4, 6));
    tg_attr s = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(8), tg_dim_const(3)});
    int r = node(g, op, 1, &x, 1, &s);
    tg_graph_add_output(g, r);
    tg_graph_add_output(g, node(g, TG_OP_NEG, 1, &r, 0, NULL));
    run(op, "f32, and read by a loop", g, (cg_case){0});
}

static void case_permute(tg_op op)
{
    for (int i = 0; i < 3; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", NUMS[i], DIMS(4, 5, 6));
        tg_attr p = tg_attr_ints("perm", 4, (int64_t[]){0, 3, 1, -2});
        run(op, dt(NUMS[i]), one_node(g, op, 1, &x, 1, &p), (cg_case){0});
    }
}

static void case_expand(tg_op op)
{
    tg_graph *g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(1, 5));
    tg_attr s = tg_attr_dims("shape", 4, (tg_dim[]){tg_dim_const(3), tg_dim_sym(0),
                                                   tg_dim_const(4), tg_dim_const(5)});
    run(op, "broadcast a dim and a new one", one_node(g, op, 1, &x, 1, &s), (cg_case){0});
}

static void case_slice(tg_op op)
{
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k == 2 ? TG_I64 : TG_F32, DIMS(9, 7));
        tg_attr a[4] = {tg_attr_int("axis", k == 1 ? 0 : -1), tg_attr_int("start", k != 1),
                        tg_attr_int("end", k == 1 ? 1 : 6), tg_attr_int("step", k == 0 ? 2 : 1)};
        tg_dim batch[] = {tg_dim_sym(0)};  /* the attribute points at it */
        if (k == 1)     /* the batch axis, to its end */
            a[2] = tg_attr_dims("end", 1, batch);
        static const char *const what[] = {"step 2", "batch axis", "i64"};
        run(op, what[k], one_node(g, op, 1, &x, 4, a), (cg_case){0});
    }
}

static void case_concat(tg_op op)
{
    for (int ax = 1; ax <= 2; ax++) {
        tg_graph *g = tg_graph_new();
        int a = cg_input(g, "a", TG_F32, DIMS(3, 4));
        int b = ax == 2 ? cg_input(g, "b", TG_F32, DIMS(3, 2)) : cg_input(g, "b", TG_F32, DIMS(5, 4));
        tg_attr at = tg_attr_int("axis", ax);
        run(op, ax == 1 ? "axis 1" : "axis 2", one_node(g, op, 3, (int[]){a, b, a}, 1, &at),
            (cg_case){0});
    }
}

static void case_pad(tg_op op)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k ? TG_I64 : TG_F32, DIMS(5, 6));
        tg_attr a[2] = {tg_attr_ints("pads", 6, (int64_t[]){0, 1, -1, 0, 2, 3}),
                        tg_attr_float("value", k ? 2 : 1)};      /* integral */
        run(op, k ? "i64, value 2" : "f32, value 1, a crop", one_node(g, op, 1, &x, 2, a),
            (cg_case){0});
    }
    /* the other modes: pads past the axis (reflect and wrap go round more than
     * once), a crop, the batch axis padded too */
    static const char *const modes[] = {"edge", "reflect", "wrap", "reflect"};
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k == 3 ? TG_I64 : TG_F32, DIMS(4, 3));
        tg_attr a[2] = {tg_attr_ints("pads", 6, (int64_t[]){1, 5, -1, 0, 2, 7}),
                        tg_attr_string("mode", modes[k])};
        char w[32];
        snprintf(w, sizeof w, "mode %s, %s", modes[k], k == 3 ? "i64" : "f32");
        run(op, w, one_node(g, op, 1, &x, 2, a), (cg_case){0});
    }
}

static void case_tile(tg_op op)
{
    tg_graph *g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(2, 3));
    tg_attr r = tg_attr_ints("repeats", 3, (int64_t[]){2, 1, 3});
    run(op, "2, 1, 3", one_node(g, op, 1, &x, 1, &r), (cg_case){0});
}

/* index constants valid for an axis of n */
static int indices(tg_graph *g, const char *name, const int64_t *dims, int rank, int64_t n)
{
    return cg_const(g, name, TG_I64, dims, rank, &(cg_case){.lo = 0, .hi = (double)n});
}

static void case_gather(tg_op op)
{
    for (int ax = 0; ax < 2; ax++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(6, 5));
        /* index [batch,4,5] from an input: the batch dim must match */
        int ix = ax == 0 ? indices(g, "ix", DIMS(1, 4, 5), 6) : indices(g, "ix", DIMS(1, 6, 3), 5);
        tg_attr e = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(ax ? 6 : 4),
                                                       tg_dim_const(ax ? 3 : 5)});
        int ixb = node(g, TG_OP_EXPAND, 1, &ix, 1, &e);
        tg_attr a = tg_attr_int("axis", ax + 1);
        run(op, ax ? "axis 2" : "axis 1", one_node(g, op, 2, (int[]){x, ixb}, 1, &a), (cg_case){0});
    }
}

static void case_index_select(tg_op op)
{
    /* an embedding: ids from an input */
    tg_graph *g = tg_graph_new();
    int in[2] = {W(g, "table", 9, 4), cg_input(g, "ids", TG_I64, DIMS(5))};
    tg_attr a = tg_attr_int("axis", 0);
    run(op, "embedding", one_node(g, op, 2, in, 1, &a), (cg_case){.lo = 0, .hi = 9});
    /* a 2-D index on axis 1 */
    g = tg_graph_new();
    in[0] = cg_input(g, "x", TG_F32, DIMS(7, 3));
    in[1] = indices(g, "ix", DIMS(2, 2), 7);
    a = tg_attr_int("axis", 1);
    run(op, "axis 1, 2-D index", one_node(g, op, 2, in, 1, &a), (cg_case){0});
}

static void case_index_copy(tg_op op)
{
    tg_graph *g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(7, 3));
    int src = cg_input(g, "src", TG_F32, DIMS(2, 3));
    int64_t *ix = malloc(2 * sizeof *ix);
    ix[0] = (int64_t)((uniform() + 1) * 3.4), ix[1] = (ix[0] + 3) % 7;  /* distinct */
    tg_shape s = tg_shape_of(1, (int64_t[]){2});
    int iv = tg_graph_add_const(g, "ix", TG_I64, &s, ix, 2 * sizeof *ix);
    tg_attr a = tg_attr_int("axis", 1);
    run(op, "axis 1", one_node(g, op, 3, (int[]){x, iv, src}, 1, &a), (cg_case){0});
    /* reductions, an index repeated (and one negative): combined in order */
    static const char *const red[] = {"add", "mul", "max", "min", "add"};
    for (int k = 0; k < 5; k++) {
        tg_dtype t = k == 4 ? TG_I64 : TG_F32;
        g = tg_graph_new();
        x = cg_input(g, "x", t, DIMS(7, 3));
        src = cg_input(g, "src", t, DIMS(3, 3));
        ix = malloc(3 * sizeof *ix);
        ix[0] = (int64_t)((uniform() + 1) * 3.4), ix[1] = (ix[0] + 3) % 7, ix[2] = ix[0] - 7;
        s = tg_shape_of(1, (int64_t[]){3});
        iv = tg_graph_add_const(g, "ix", TG_I64, &s, ix, 3 * sizeof *ix);
        tg_attr ra[2] = {tg_attr_int("axis", 1), tg_attr_string("reduce", red[k])};
        char w[32];
        snprintf(w, sizeof w, "axis 1, reduce %s, %s", red[k], dt(t));
        run(op, w, one_node(g, op, 3, (int[]){x, iv, src}, 2, ra), (cg_case){0});
    }
}

static void case_tri(tg_op op)
{
    for (int k = -1; k <= 1; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(5, 6));
        tg_attr a = tg_attr_int("k", k);
        char w[16];
        snprintf(w, sizeof w, "k %d", k);
        run(op, w, one_node(g, op, 1, &x, 1, &a), (cg_case){0});
    }
}

/* generators: shapes that depend on the batch (else they fold to constants) */
static void case_full(tg_op op)
{
    static const tg_dtype types[] = {TG_F32, TG_I64, TG_BOOL, TG_F16};
    for (int i = 0; i < 4; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(2));
        tg_attr a[3] = {tg_attr_dims("shape", 2, (tg_dim[]){tg_dim_sym(0), tg_dim_const(3)}),
                        tg_attr_float("value", i == 0 ? 6 : 1), tg_attr_dtype("dtype", types[i])};
        tg_graph_add_output(g, x);
        run(op, dt(types[i]), one_node(g, op, 0, NULL, 3, a), (cg_case){0});
    }
}

static void case_arange(tg_op op)
{
    for (int i = 0; i < 2; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(2));
        tg_dim end;
        CHECK(tg_dim_mul(tg_dim_sym(0), tg_dim_const(3), &end) == 0);
        tg_attr a[4] = {tg_attr_int("start", 0), tg_attr_dims("end", 1, &end),
                        tg_attr_int("step", i ? 1 : 3), tg_attr_dtype("dtype", i ? TG_F32 : TG_I64)};
        tg_graph_add_output(g, x);
        run(op, i ? "f32" : "i64", one_node(g, op, 0, NULL, 4, a), (cg_case){0});
    }
}

static void case_quantize(tg_op op)
{
    static const tg_dtype types[] = {TG_I8, TG_U8, TG_F8E4M3};
    for (int i = 0; i < 4; i++) {
        tg_graph *g = tg_graph_new();
        bool q = op == TG_OP_QUANTIZE, per_ch = i == 3;
        tg_dtype t = types[per_ch ? 0 : i];
        int x = cg_input(g, "x", q ? TG_F32 : t, DIMS(4, 6));
        double scales[] = {1, 0.5, 0.02, 2};
        int64_t zeros[] = {0, 3, -2, 1};
        tg_attr a[4];
        int na = 0;
        if (per_ch) {
            a[na++] = tg_attr_floats("scale", 4, scales);
            a[na++] = tg_attr_ints("zero_point", 4, zeros);
            a[na++] = tg_attr_int("axis", 1);
        } else {
            a[na++] = tg_attr_float("scale", t == TG_F8E4M3 ? 0.5 : 1);  /* integral */
            if (t != TG_F8E4M3)
                a[na++] = tg_attr_int("zero_point", t == TG_U8 ? 100 : -3);
        }
        if (q)
            a[na++] = tg_attr_dtype("dtype", t);
        char w[48];
        snprintf(w, sizeof w, "%s%s", dt(t), per_ch ? " per channel" : "");
        cg_case o = q ? (cg_case){.lo = -40, .hi = 40} : t == TG_U8 ? (cg_case){.lo = 0, .hi = 255}
                                                              : (cg_case){.lo = -100, .hi = 100};
        if (!q && t == TG_F8E4M3)       /* a float8 input from its bit patterns */
            o = (cg_case){.lo = -6, .hi = 6};
        run(op, w, one_node(g, op, 1, &x, na, a), o);
    }
}

static void case_qlinear(tg_op op)
{
    static const char *const schemes[] = {"static", "dynamic", "weight_only", "weight_only"};
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        bool four = k == 3;
        int x = cg_input(g, "x", TG_F32, DIMS(3, 20));
        int w = four ? cg_const(g, "w", TG_U8, DIMS(5, 10), &(cg_case){.lo = 0, .hi = 256})
                     : cg_const(g, "w", TG_I8, DIMS(5, 20), &(cg_case){.lo = -127, .hi = 128});
        int sc = four ? cg_const(g, "s", TG_F32, DIMS(5, 3), &(cg_case){.lo = 0.01, .hi = 0.1})
                      : cg_const(g, "s", TG_F32, DIMS(5), &(cg_case){.lo = 0.01, .hi = 0.1});
        tg_attr a[4] = {tg_attr_string("scheme", schemes[k])};
        int na = 1;
        if (k == 0) {
            a[na++] = tg_attr_float("x_scale", 1.0 / 32);
            a[na++] = tg_attr_int("x_zero", 128);
        }
        if (four) {
            a[na++] = tg_attr_int("bits", 4);
            a[na++] = tg_attr_int("group", 8);
        }
        run(op, four ? "weight_only 4 bits, groups of 8" : schemes[k],
            one_node(g, op, 4, (int[]){x, w, sc, W(g, "b", 5)}, na, a), (cg_case){0});
    }
    /* int8 activations between layers, as qconv's below: a u8 output
     * (clamped to 0..6) from float, and u8 on both sides with a gelu
     * through its table; the reference quantizes as the layer should, in
     * f64, the scales powers of two so that it rounds where the kernels do */
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new(), *ref = tg_graph_new();
        bool xq = k == 1;
        int x = cg_input(g, "x", xq ? TG_U8 : TG_F32, DIMS(3, 2, 20));
        int xr = cg_input(ref, "x", xq ? TG_U8 : TG_F32, DIMS(3, 2, 20));
        int w = cg_const(g, "w", TG_I8, DIMS(5, 20), &(cg_case){.lo = -127, .hi = 128});
        tg_shape ws = tg_shape_of(2, (int64_t[]){5, 20}), ns = tg_shape_of(1, (int64_t[]){5});
        float sc[5], b[5];
        for (int i = 0; i < 5; i++) sc[i] = 0.0625f, b[i] = (float)(i * 7 - 13) * 0.0625f;
        int in[4] = {x, w, tg_graph_add_const_copy(g, "s", TG_F32, &ns, sc),
                     tg_graph_add_const_copy(g, "b", TG_F32, &ns, b)};
        int inr[4] = {xr, tg_graph_add_const_copy(ref, "w", TG_I8, &ws, g->values[w].data),
                      tg_graph_add_const_copy(ref, "s", TG_F32, &ns, sc),
                      tg_graph_add_const_copy(ref, "b", TG_F32, &ns, b)};
        tg_attr a[8] = {tg_attr_string("scheme", "static"), tg_attr_float("x_scale", 1),
                        tg_attr_int("x_zero", 3), tg_attr_float("y_scale", 0.25),
                        tg_attr_int("y_zero", 100), tg_attr_float("y_min", 0),
                        tg_attr_float("y_max", 6), tg_attr_int("p_zero", 90)};
        if (xq) {
            a[3] = tg_attr_float("y_scale", 0.125), a[5] = tg_attr_string("y_act", "gelu");
            a[6] = tg_attr_float("p_scale", 0.5);
            tg_attr f = tg_attr_dtype("dtype", TG_F32);
            int c = tg_graph_add_node(ref, TG_OP_CAST, NULL, 1, &xr, 1, &f);
            inr[0] = tg_graph_add_node(ref, TG_OP_SUB, NULL, 2,
                                       (int[]){c, tg_graph_add_scalar(ref, "z", TG_F32, 3)}, 0, NULL);
        }
        int y = tg_graph_add_node(ref, TG_OP_QLINEAR, "ref", 4, inr, 3, a);
        tg_attr pa[3] = {tg_attr_float("scale", 0.5), tg_attr_int("zero_point", 90),
                         tg_attr_dtype("dtype", TG_U8)};
        tg_attr qa[3] = {tg_attr_float("scale", xq ? 0.125 : 0.25),
                         tg_attr_int("zero_point", 100), tg_attr_dtype("dtype", TG_U8)};
        tg_attr cl[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};
        if (xq) {
            y = tg_graph_add_node(ref, TG_OP_QUANTIZE, NULL, 1, &y, 3, pa);
            y = tg_graph_add_node(ref, TG_OP_DEQUANTIZE, NULL, 1, &y, 2, pa);
            y = tg_graph_add_node(ref, TG_OP_GELU, NULL, 1, &y, 0, NULL);
        } else {
            y = tg_graph_add_node(ref, TG_OP_CLAMP, NULL, 1, &y, 2, cl);
        }
        y = tg_graph_add_node(ref, TG_OP_QUANTIZE, NULL, 1, &y, 3, qa);
        CHECK(y >= 0 && tg_graph_add_output(ref, y) == 0);
        run(op, xq ? "u8 input and output, gelu through its table" : "u8 output, clamp 0..6",
            one_node(g, op, 4, in, xq ? 8 : 7, a), (cg_case){.lo = xq ? 0 : -3, .hi = xq ? 256 : 200, .reference = ref});
    }
}

/* linear_24 as tsparse makes it: a linear whose weight is made 2:4 here, so
 * that the pass keeps it exactly; the linear is the reference. K / 4 odd
 * leaves half a byte of metadata. */
static void case_linear_24(tg_op op)
{
    static const int64_t Ks[2] = {20, 32};
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int64_t K = Ks[k], N = 17, MB = tg_sparse24_meta_bytes(K);
        int x = cg_input(g, "x", TG_F32, DIMS(3, 2, K)), w = W(g, "w", N, K);
        float *values = malloc(sizeof *values * (size_t)(N * K / 2));
        uint8_t *meta = malloc((size_t)(N * MB));
        tg_sparse24_compress(g->values[w].data, N, K, values, meta);
        tg_sparse24_expand(values, meta, N, K, g->values[w].data);
        free(values), free(meta);
        one_node(g, TG_OP_LINEAR, k ? 2 : 3, (int[]){x, w, k ? -1 : W(g, "b", N)}, 0, NULL);
        tg_graph *linear = tg_graph_clone(g);   /* the reference */
        tg_sparse_opts so;
        tg_sparse_result r;
        tg_sparse_opts_init(&so);
        CHECK(tg_sparse_prune(g, &so, &r) == 1 && r.layer[0].was_24);
        tg_sparse_result_free(&r);
        run(op, k ? "K 32, no bias" : "K 20, bias", g, (cg_case){.reference = linear});
    }
}

/* qlinear_24 as tquant makes it of a linear_24 (or tsparse of a qlinear):
 * an int8 weight pruned to 2:4 here; the reference is qlinear on the same
 * weight expanded. K 20 leaves half a pair of metadata. */
static void case_qlinear_24(tg_op op)
{
    static const int64_t Ks[2] = {20, 64};
    for (int k = 0; k < 2; k++) {
        int64_t K = Ks[k], N = 17, MB = tg_sparse24_meta_bytes(K);
        tg_graph *ref = tg_graph_new(), *g = tg_graph_new();
        int xr = cg_input(ref, "x", TG_F32, DIMS(3, K)), x = cg_input(g, "x", TG_F32, DIMS(3, K));
        int w = cg_const(ref, "w", TG_I8, DIMS(N, K), &(cg_case){.lo = -127, .hi = 128});
        int s = cg_const(ref, "s", TG_F32, DIMS(N), &(cg_case){.lo = 0.01, .hi = 0.1});
        int b = W(ref, "b", N);
        int8_t *v = malloc((size_t)(N * K / 2));
        uint8_t *m = malloc((size_t)(N * MB));
        float *sc = malloc(sizeof *sc * (size_t)N), *bc = malloc(sizeof *bc * (size_t)N);
        tg_sparse24_compress_i8(ref->values[w].data, N, K, v, m);
        tg_sparse24_expand_i8(v, m, N, K, ref->values[w].data);
        memcpy(sc, ref->values[s].data, sizeof *sc * (size_t)N);
        memcpy(bc, ref->values[b].data, sizeof *bc * (size_t)N);
        tg_shape vs = tg_shape_of(2, (int64_t[]){N, K / 2}), ms = tg_shape_of(2, (int64_t[]){N, MB});
        tg_shape ns = tg_shape_of(1, (int64_t[]){N});
        int in[5] = {x, tg_graph_add_const(g, "w.values", TG_I8, &vs, v, (size_t)(N * K / 2)),
                     tg_graph_add_const(g, "w.meta", TG_U8, &ms, m, (size_t)(N * MB)),
                     tg_graph_add_const(g, "s", TG_F32, &ns, sc, sizeof *sc * (size_t)N),
                     k ? -1 : tg_graph_add_const(g, "b", TG_F32, &ns, bc, sizeof *bc * (size_t)N)};
        if (k)
            free(bc);
        tg_attr a[3] = {tg_attr_string("scheme", k ? "dynamic" : "static"),
                        tg_attr_float("x_scale", 1.0 / 32), tg_attr_int("x_zero", 128)};
        one_node(ref, TG_OP_QLINEAR, k ? 3 : 4, (int[]){xr, w, s, b}, k ? 1 : 3, a);
        run(op, k ? "dynamic, K 64, no bias" : "static, K 20, bias",
            one_node(g, op, k ? 4 : 5, in, k ? 1 : 3, a), (cg_case){.reference = ref});
    }
}

static void case_qconv(tg_op op)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", TG_F32, DIMS(4, 7, 6));
        int w = cg_const(g, "w", TG_I8, DIMS(6, 4, 3, 3), &(cg_case){.lo = -127, .hi = 128});
        int sc = cg_const(g, "s", TG_F32, DIMS(6), &(cg_case){.lo = 0.01, .hi = 0.1});
        tg_attr a[4] = {tg_attr_string("scheme", k ? "dynamic" : "static"),
                        tg_attr_ints("padding", 1, (int64_t[]){1})};
        int na = 2;
        if (!k) {
            a[na++] = tg_attr_float("x_scale", 1);      /* integral */
            a[na++] = tg_attr_int("x_zero", 3);
        }
        run(op, k ? "dynamic" : "static, x_scale 1",
            one_node(g, op, 4, (int[]){x, w, sc, W(g, "b", 6)}, na, a),
            (cg_case){.lo = -3, .hi = 200});
    }
    /* int8 activations between layers: a u8 input (quantized already), a u8
     * output (quantized, with a fused clamp), both; the reference is qconv in
     * f32 reading cast(x) - x_zero (x_scale 1: the layer's quantize gives x
     * back) and giving quantize(clamp(y)). The weight scales are powers of
     * two and the biases multiples of them, so that the f64 reference rounds
     * where the kernels do: the u8 outputs are compared exactly. A fused
     * silu's reference quantizes the pre-activation with p_scale and p_zero,
     * dequantizes it, takes silu and quantizes that (in f64, as its table). */
    static const char *const what[4] = {"u8 input", "u8 output, clamp 0..6",
                                        "u8 input and output, relu",
                                        "u8 input and output, silu through its table"};
    for (int k = 0; k < 4; k++) {
        bool xq = k != 1, yq = k != 0;
        tg_graph *g = tg_graph_new(), *ref = tg_graph_new();
        int x = cg_input(g, "x", xq ? TG_U8 : TG_F32, DIMS(4, 7, 6));
        int xr = cg_input(ref, "x", xq ? TG_U8 : TG_F32, DIMS(4, 7, 6));
        int w = cg_const(g, "w", TG_I8, DIMS(6, 4, 3, 3), &(cg_case){.lo = -127, .hi = 128});
        tg_shape ws = tg_shape_of(4, (int64_t[]){6, 4, 3, 3}), ns = tg_shape_of(1, (int64_t[]){6});
        float sc[6], b[6];
        for (int i = 0; i < 6; i++) sc[i] = 0.0625f, b[i] = (float)(i * 5 - 13) * 0.0625f;
        int wr = tg_graph_add_const_copy(ref, "w", TG_I8, &ws, g->values[w].data);
        int in[4] = {x, w, tg_graph_add_const_copy(g, "s", TG_F32, &ns, sc),
                     tg_graph_add_const_copy(g, "b", TG_F32, &ns, b)};
        int inr[4] = {xr, wr, tg_graph_add_const_copy(ref, "s", TG_F32, &ns, sc),
                      tg_graph_add_const_copy(ref, "b", TG_F32, &ns, b)};
        tg_attr a[9] = {tg_attr_string("scheme", "static"), tg_attr_ints("padding", 1, (int64_t[]){1}),
                        tg_attr_float("x_scale", 1), tg_attr_int("x_zero", 3),
                        tg_attr_float("y_scale", 0.25), tg_attr_int("y_zero", 100),
                        tg_attr_float("y_min", 0), tg_attr_float("y_max", 6),
                        tg_attr_string("y_act", "silu")};
        if (k == 3) {
            a[4] = tg_attr_float("y_scale", 0.125), a[5] = tg_attr_int("y_zero", 40);
            a[6] = tg_attr_float("p_scale", 0.25), a[7] = tg_attr_int("p_zero", 100);
        }
        if (xq) {
            tg_attr f = tg_attr_dtype("dtype", TG_F32);
            int c = tg_graph_add_node(ref, TG_OP_CAST, NULL, 1, &xr, 1, &f);
            inr[0] = tg_graph_add_node(ref, TG_OP_SUB, NULL, 2,
                                       (int[]){c, tg_graph_add_scalar(ref, "z", TG_F32, 3)}, 0, NULL);
        }
        int y = tg_graph_add_node(ref, TG_OP_QCONV, "ref", 4, inr, 4, a);
        if (k == 3) {
            tg_attr pa[3] = {tg_attr_float("scale", 0.25), tg_attr_int("zero_point", 100),
                             tg_attr_dtype("dtype", TG_U8)};
            tg_attr qa[3] = {tg_attr_float("scale", 0.125), tg_attr_int("zero_point", 40),
                             tg_attr_dtype("dtype", TG_U8)};
            y = tg_graph_add_node(ref, TG_OP_QUANTIZE, NULL, 1, &y, 3, pa);
            y = tg_graph_add_node(ref, TG_OP_DEQUANTIZE, NULL, 1, &y, 2, pa);
            y = tg_graph_add_node(ref, TG_OP_SILU, NULL, 1, &y, 0, NULL);
            y = tg_graph_add_node(ref, TG_OP_QUANTIZE, NULL, 1, &y, 3, qa);
        } else if (yq) {
            tg_attr cl[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};
            tg_attr qa[3] = {tg_attr_float("scale", 0.25), tg_attr_int("zero_point", 100),
                             tg_attr_dtype("dtype", TG_U8)};
            y = tg_graph_add_node(ref, TG_OP_CLAMP, NULL, 1, &y, k == 1 ? 2 : 1, cl);
            y = tg_graph_add_node(ref, TG_OP_QUANTIZE, NULL, 1, &y, 3, qa);
        }
        CHECK(y >= 0 && tg_graph_add_output(ref, y) == 0);
        run(op, what[k], one_node(g, op, 4, in, k == 3 ? 9 : yq ? (k == 1 ? 8 : 7) : 4, a),
            (cg_case){.lo = xq ? 0 : -3, .hi = xq ? 256 : 200, .reference = ref});
    }
}

static void case_grid_sample(tg_op op)
{
    static const struct {
        const char *what, *mode, *padding;
        int align, nsp;
    } k[] = {
        {"2-D linear, zeros", "linear", "zeros", 0, 2},
        {"2-D nearest, border, align_corners", "nearest", "border", 1, 2},
        {"2-D cubic, reflection", "cubic", "reflection", 0, 2},
        {"2-D cubic, zeros, align_corners", "cubic", "zeros", 1, 2},
        {"3-D linear, reflection, align_corners", "linear", "reflection", 1, 3},
        {"3-D nearest, zeros", "nearest", "zeros", 0, 3},
        {"1-D linear, border", "linear", "border", 0, 1},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        tg_graph *g = tg_graph_new();
        int nsp = k[i].nsp, x, grid;
        if (nsp == 3) {
            x = cg_input(g, "x", TG_F32, DIMS(2, 4, 5, 3));
            grid = cg_input(g, "grid", TG_F32, DIMS(3, 2, 4, 3));
        } else if (nsp == 2) {
            x = cg_input(g, "x", TG_F32, DIMS(3, 5, 6));
            grid = cg_input(g, "grid", TG_F32, DIMS(4, 7, 2));
        } else {
            x = cg_input(g, "x", TG_F32, DIMS(2, 6));
            grid = cg_input(g, "grid", TG_F32, DIMS(9, 1));
        }
        tg_attr a[3] = {tg_attr_string("mode", k[i].mode), tg_attr_string("padding", k[i].padding),
                        tg_attr_int("align_corners", k[i].align)};
        /* grid points over [-1.3, 1.3): some outside the input */
        run(op, k[i].what, one_node(g, op, 2, (int[]){x, grid}, 3, a), (cg_case){.lo = -1.3, .hi = 1.3});
    }
}

static void case_cumsum(tg_op op)
{
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k == 2 ? TG_I64 : TG_F32, DIMS(5, 6));
        tg_attr a[3] = {tg_attr_int("axis", k == 1 ? 1 : -1), tg_attr_int("exclusive", k == 1),
                        tg_attr_int("reverse", k == 2)};
        static const char *const what[] = {"f32", "exclusive, axis 1", "i64 reverse"};
        run(op, what[k], one_node(g, op, 1, &x, 3, a), (cg_case){0});
    }
}

/* argsort: f32 with NaNs and zeros of both signs (exact: ties in index order,
 * NaN the largest), integers of six values (many ties), u64 and bool; along
 * the last axis, a middle one, and the batch (a symbol), up and down. */
static void case_argsort(tg_op op)
{
    static const struct {
        tg_dtype dt;
        int axis, descending;
        const char *what;
    } k[] = {
        {TG_F32, -1, 0, "f32 with NaN and -0"}, {TG_F32, 1, 1, "f32 descending, axis 1"},
        {TG_I64, 0, 1, "i64 descending, the batch axis"}, {TG_I32, 2, 0, "i32"},
        {TG_U64, -1, 1, "u64 descending"}, {TG_BOOL, -1, 0, "bool"},
    };
    for (size_t i = 0; i < sizeof k / sizeof k[0]; i++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k[i].dt, DIMS(5, 37));
        tg_attr a[2] = {tg_attr_int("axis", k[i].axis), tg_attr_int("descending", k[i].descending)};
        run(op, k[i].what, one_node(g, op, 1, &x, 2, a), (cg_case){.exact = true});
    }
}

/* nonzero over f32 with zeros of both signs and NaNs (exact inputs), and over
 * integers of which a third are 0; its length is a data symbol, which a sum
 * over an index_select by the indices reads. Compiled, the output is sized by
 * the bound (batch x 15) and comes back at the length found; CUDA refuses it. */
static void case_nonzero(tg_op op)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int x = cg_input(g, "x", k ? TG_I64 : TG_F32, DIMS(3, 5));
        int y = node(g, op, 1, &x, 0, NULL);
        int64_t last = 2;
        tg_attr ax = tg_attr_int("axis", 0);
        int row = tg_graph_add_const_copy(g, "row", TG_I64, &(tg_shape){0}, &last);
        int in[2] = {y, row}, r = node(g, TG_OP_INDEX_SELECT, 2, in, 1, &ax);
        int s = node(g, TG_OP_REDUCE_SUM, 1, &r, 0, NULL);
        CHECK(s >= 0 && tg_graph_add_output(g, y) >= 0 && tg_graph_add_output(g, s) >= 0);
        run(op, k ? "i64, a third 0; a sum of the last axis' indices" : "f32 with zeros and NaNs", g,
            k ? (cg_case){.lo = -1, .hi = 2} : (cg_case){.exact = true});
    }
}

/* shape: the dims as the run has them (the batch a symbol), of f32, of bool, of a
 * scalar; every path, compiled ones too. */
static void case_shape(tg_op op)
{
    for (int k = 0; k < 3; k++) {
        tg_graph *g = tg_graph_new();
        int x = k == 2 ? tg_graph_add_input(g, "x", TG_F32, &(tg_shape){0})
                       : cg_input(g, "x", k ? TG_BOOL : TG_F32, DIMS(3, 5));
        static const char *const what[] = {"f32 [batch,3,5]", "bool [batch,3,5]", "a scalar"};
        run(op, what[k], one_node(g, op, 1, &x, 0, NULL), (cg_case){0});
    }
}

/* nms of boxes [batch,6,4] (corners either way round) and scores [batch,2,6];
 * attributes constant, so compiled too (its bound batch x 2 x max_output). */
static void case_nms(tg_op op)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int in[2] = {cg_input(g, "boxes", TG_F32, DIMS(6, 4)), cg_input(g, "scores", TG_F32, DIMS(2, 6))};
        tg_attr a[4] = {tg_attr_int("max_output", k ? 2 : 6), tg_attr_float("iou_threshold", 0.2),
                        tg_attr_int("center_point_box", k), tg_attr_float("score_threshold", -1)};
        run(op, k ? "center boxes, 2 per class, no score threshold" : "corners, a score threshold",
            one_node(g, op, 2, in, k ? 3 : 4, a), (cg_case){0});
    }
}

/* A subgraph on g's symbols: inputs of the dtypes and shapes of g's values
 * in[0..n); the caller adds its nodes and outputs. */
static tg_graph *sub_of(const tg_graph *g, int n, const int *in, int *ids)
{
    tg_graph *s = tg_graph_new();
    for (int k = 0; k < g->nsym; k++)
        tg_graph_add_symbol(s, g->sym[k].name, g->sym[k].min, g->sym[k].max);
    for (int i = 0; i < n; i++) {
        char name[16];
        snprintf(name, sizeof name, "a%d", i);
        ids[i] = tg_graph_add_input(s, name, g->values[in[i]].dtype, &g->values[in[i]].shape);
    }
    return s;
}

static void control_out(tg_graph *g, tg_op op, int n, const int *in, int na, const tg_attr *a)
{
    int y = tg_control_add(g, op, NULL, n, in, na, a);
    CHECK(y >= 0);
    if (y < 0)
        fprintf(stderr, "%s: %s\n", tg_op_name(op), tg_errmsg());
    for (int k = 0; y >= 0 && k < g->nodes[g->nnode - 1].nout; k++)
        tg_graph_add_output(g, g->nodes[g->nnode - 1].out[k]);
}

/* if c: x + r else: x * r, and a branch that returns its input unchanged;
 * c a random bool scalar, drawn afresh for each batch */
static void case_if(tg_op op)
{
    tg_graph *g = tg_graph_new();
    tg_shape s0 = {0};
    int in[3] = {tg_graph_add_input(g, "c", TG_BOOL, &s0), cg_input(g, "x", TG_F32, DIMS(4, 37)),
                 cg_input(g, "r", TG_F32, DIMS(1, 37))}, a[2], b[2];
    tg_graph *then = sub_of(g, 2, in + 1, a), *els = sub_of(g, 2, in + 1, b);
    tg_graph_add_output(then, tg_graph_add_node(then, TG_OP_ADD, "sum", 2, a, 0, NULL));
    tg_graph_add_output(then, a[1]);
    tg_graph_add_output(els, tg_graph_add_node(els, TG_OP_MUL, "product", 2, b, 0, NULL));
    tg_graph_add_output(els, tg_graph_add_node(els, TG_OP_NEG, "negated", 1, b + 1, 0, NULL));
    tg_attr at[2] = {tg_attr_graph("then", then), tg_attr_graph("else", els)};
    control_out(g, op, 3, in, 2, at);
    tg_graph_free(then);
    tg_graph_free(els);
    run(op, "a branch per bool, two outputs, one passed through", g, (cg_case){0});
    /* then: x twice along the batch, else: -x: the output's first dim is
     * the branch's (a data symbol), handed over as the run made it */
    g = tg_graph_new();
    int c = tg_graph_add_input(g, "c", TG_BOOL, &s0), x = cg_input(g, "x", TG_F32, DIMS(3));
    then = sub_of(g, 1, &x, a);
    els = sub_of(g, 1, &x, b);
    tg_attr ax = tg_attr_int("axis", 0);
    tg_graph_add_output(then, tg_graph_add_node(then, TG_OP_CONCAT, "twice", 2,
                                                (int[]){a[0], a[0]}, 1, &ax));
    tg_graph_add_output(els, tg_graph_add_node(els, TG_OP_NEG, "negated", 1, b, 0, NULL));
    tg_attr at2[2] = {tg_attr_graph("then", then), tg_attr_graph("else", els)};
    control_out(g, op, 2, (int[]){c, x}, 2, at2);
    tg_graph_free(then);
    tg_graph_free(els);
    run(op, "branches whose output differs in shape", g, (cg_case){0});
}

/* acc = acc * 0.5 + x for 3 steps (a constant trip count: the scan of acc
 * is [3, batch, 37]); then a while loop, iter < 2, whose scan's length is a
 * data symbol */
static void case_loop(tg_op op)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        tg_shape s0 = {0};
        int half = tg_graph_add_scalar(g, "half", TG_F32, 0.5);
        int two = tg_graph_add_scalar(g, "two", TG_I64, 2);
        int in[6] = {k ? -1 : tg_graph_add_scalar(g, "m", TG_I64, 3),
                     k ? tg_graph_add_scalar(g, "go", TG_BOOL, 1) : -1,
                     cg_input(g, "acc", TG_F32, DIMS(4, 37)), cg_input(g, "x", TG_F32, DIMS(1, 37)),
                     half, two};
        tg_graph *body = tg_graph_new();
        for (int y = 0; y < g->nsym; y++)
            tg_graph_add_symbol(body, g->sym[y].name, g->sym[y].min, g->sym[y].max);
        int b[6] = {tg_graph_add_input(body, "i", TG_I64, &s0),
                    tg_graph_add_input(body, "c", TG_BOOL, &s0)};
        for (int i = 2; i < 6; i++) {
            const tg_value *v = &g->values[in[i]];
            char name[8];
            snprintf(name, sizeof name, "b%d", i);
            b[i] = tg_graph_add_input(body, name, v->dtype, &v->shape);
        }
        int scaled = tg_graph_add_node(body, TG_OP_MUL, "scaled", 2, (int[]){b[2], b[4]}, 0, NULL);
        int acc = tg_graph_add_node(body, TG_OP_ADD, "acc", 2, (int[]){scaled, b[3]}, 0, NULL);
        tg_graph_add_output(body, k ? tg_graph_add_node(body, TG_OP_LT, "more", 2,
                                                        (int[]){b[0], b[5]}, 0, NULL)
                                    : b[1]);
        tg_graph_add_output(body, acc);
        tg_graph_add_output(body, acc);
        tg_attr at[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
        control_out(g, op, 6, in, 2, at);
        tg_graph_free(body);
        run(op, k ? "while iter < 2, the scan's length a data symbol" : "3 steps, scanned", g,
            (cg_case){0});
    }
}

/* ---- the table: ops ops.def has whose inference is no family --------------- */

static const struct {
    tg_op op;
    void (*build)(tg_op op);
} cases[] = {
    {TG_OP_CAST, case_cast}, {TG_OP_IDENTITY, case_identity},
    {TG_OP_BITCAST, case_bitcast}, {TG_OP_WHERE, case_where},
    {TG_OP_ARGMAX, case_arg_reduce}, {TG_OP_ARGMIN, case_arg_reduce},
    {TG_OP_SOFTMAX, case_softmax}, {TG_OP_LOG_SOFTMAX, case_softmax},
    {TG_OP_LAYER_NORM, case_norm}, {TG_OP_GROUP_NORM, case_norm}, {TG_OP_BATCH_NORM, case_norm},
    {TG_OP_MATMUL, case_matmul}, {TG_OP_LINEAR, case_linear},
    {TG_OP_LINEAR_PACKED, case_linear_packed}, {TG_OP_CONV, case_conv}, {TG_OP_SDPA, case_sdpa},
    {TG_OP_CONV_NHWC, case_conv_nhwc},
    {TG_OP_MAX_POOL, case_pool}, {TG_OP_AVG_POOL, case_pool},
    {TG_OP_ADAPTIVE_AVG_POOL, case_pool}, {TG_OP_RESIZE, case_resize},
    {TG_OP_GRID_SAMPLE, case_grid_sample},
    {TG_OP_RESHAPE, case_reshape},
    {TG_OP_PERMUTE, case_permute}, {TG_OP_EXPAND, case_expand}, {TG_OP_SLICE, case_slice},
    {TG_OP_CONCAT, case_concat}, {TG_OP_PAD, case_pad}, {TG_OP_TILE, case_tile},
    {TG_OP_GATHER, case_gather}, {TG_OP_INDEX_SELECT, case_index_select},
    {TG_OP_INDEX_COPY, case_index_copy}, {TG_OP_TRIL, case_tri}, {TG_OP_TRIU, case_tri},
    {TG_OP_FULL, case_full}, {TG_OP_ARANGE, case_arange}, {TG_OP_QUANTIZE, case_quantize},
    {TG_OP_DEQUANTIZE, case_quantize}, {TG_OP_QLINEAR, case_qlinear},
    {TG_OP_QCONV, case_qconv}, {TG_OP_CUMSUM, case_cumsum},
    {TG_OP_ARGSORT, case_argsort},
    {TG_OP_LINEAR_24, case_linear_24}, {TG_OP_NONZERO, case_nonzero}, {TG_OP_NMS, case_nms},
    {TG_OP_QLINEAR_24, case_qlinear_24},
    {TG_OP_SHAPE, case_shape},
    {TG_OP_IF, case_if}, {TG_OP_LOOP, case_loop},
};

/* ---- fused groups ----------------------------------------------------------- */

/* Graphs whose nodes a target's grouping rules fuse (compiled -O1, and the
 * interpreter of a device that runs groups): a product and its activations
 * (EPILOGUE), elementwise trees over broadcast inputs, perhaps ending in a
 * sum or mean over trailing axes (LOOP), as transformers and CNNs have them. */
static int unary(tg_graph *g, tg_op op, int x)
{
    return node(g, op, 1, &x, 0, NULL);
}

static int binary(tg_graph *g, tg_op op, int a, int b)
{
    return node(g, op, 2, (int[]){a, b}, 0, NULL);
}

static void case_epilogues(void)
{
    for (int k = 0; k < 6; k++) {
        tg_graph *g = tg_graph_new();
        int y;
        if (k < 3) {                /* linear: bias + relu; relu + clamp; no bias, gelu + tanh */
            int x = cg_input(g, "x", TG_F32, DIMS(5, 19));
            int in[3] = {x, W(g, "w", 21, 19), k < 2 ? W(g, "b", 21) : -1};
            y = node(g, TG_OP_LINEAR, k < 2 ? 3 : 2, in, 0, NULL);
        } else if (k == 3) {        /* matmul of computed operands */
            int a = cg_input(g, "a", TG_F32, DIMS(3, 6, 9)), b = cg_input(g, "b", TG_F32, DIMS(3, 9, 7));
            y = binary(g, TG_OP_MATMUL, a, b);
        } else {                    /* conv, ungrouped and grouped */
            int64_t groups = k == 5 ? 2 : 1, pad[] = {1};
            int x = cg_input(g, "x", TG_F32, DIMS(4, 7, 6));
            tg_attr a[2] = {tg_attr_ints("padding", 1, pad), tg_attr_int("groups", groups)};
            y = node(g, TG_OP_CONV, 3, (int[]){x, W(g, "w", 6, 4 / groups, 3, 3), W(g, "b", 6)}, 2,
                     a);
        }
        if (k == 2) {
            y = unary(g, TG_OP_GELU, y);
            y = unary(g, TG_OP_TANH, y);
        } else {
            y = unary(g, TG_OP_RELU, y);
        }
        if (k == 1) {
            tg_attr mm[2] = {tg_attr_float("min", 0), tg_attr_float("max", 1.5)};
            y = node(g, TG_OP_CLAMP, 1, &y, 2, mm);
        }
        tg_graph_add_output(g, y);
        static const char *const what[] = {
            "then relu", "then relu and clamp", "no bias, then gelu and tanh", "then relu",
            "then relu", "groups 2, then relu"};
        run(k < 3 ? TG_OP_LINEAR : k == 3 ? TG_OP_MATMUL : TG_OP_CONV, what[k], g, (cg_case){0});
    }
}

/* A convolution's residual add and relu (ResNet's block end; CUDA's
 * conv_residual, the CPU's gemm_residual for the pointwise one): 3x3 with
 * bias, then relu; 3x3 without bias, the residual the add's first operand,
 * no relu; 1x1 with bias, then relu; 3x3 stride 2 with bias, then relu. */
static void case_conv_residual(void)
{
    for (int k = 0; k < 4; k++) {
        tg_graph *g = tg_graph_new();
        int64_t ks = k == 2 ? 1 : 3, pad[] = {k == 2 ? 0 : 1}, stride[] = {k == 3 ? 2 : 1};
        int64_t h = k == 3 ? 4 : 7, w = k == 3 ? 3 : 6;
        int x = cg_input(g, "x", TG_F32, DIMS(4, 7, 6));
        int r = cg_input(g, "r", TG_F32, DIMS(6, h, w));
        tg_attr a[2] = {tg_attr_ints("padding", 1, pad), tg_attr_ints("stride", 1, stride)};
        int in[3] = {x, W(g, "w", 6, 4, ks, ks), k == 1 ? -1 : W(g, "b", 6)};
        int y = node(g, TG_OP_CONV, k == 1 ? 2 : 3, in, 2, a);
        y = k == 1 ? binary(g, TG_OP_ADD, r, y) : binary(g, TG_OP_ADD, y, r);
        if (k != 1)
            y = unary(g, TG_OP_RELU, y);
        tg_graph_add_output(g, y);
        static const char *const what[] = {
            "3x3, plus a residual, then relu", "3x3 no bias, a residual plus it",
            "1x1, plus a residual, then relu", "3x3 stride 2, plus a residual, then relu"};
        run(TG_OP_CONV, what[k], g, (cg_case){0});
    }
}

static void case_loops(void)
{
    /* a residual add and relu, NCHW */
    tg_graph *g = tg_graph_new();
    int a = cg_input(g, "a", TG_F32, DIMS(8, 5, 5)), b = cg_input(g, "b", TG_F32, DIMS(8, 5, 5));
    tg_graph_add_output(g, unary(g, TG_OP_RELU, binary(g, TG_OP_ADD, a, b)));
    run(TG_OP_ADD, "then relu (a loop)", g, (cg_case){0});
    /* silu(gate) * up, gate and up computed */
    g = tg_graph_new();
    a = cg_input(g, "gate", TG_F32, DIMS(7, 44));
    b = cg_input(g, "up", TG_F32, DIMS(7, 44));
    tg_graph_add_output(g, binary(g, TG_OP_MUL, unary(g, TG_OP_SILU, a), b));
    run(TG_OP_MUL, "silu of one input times another (a loop)", g, (cg_case){0});
    /* RMSNorm as exported: x * rsqrt(mean(x^2, -1) + eps) * w */
    g = tg_graph_new();
    int x = cg_input(g, "x", TG_F32, DIMS(6, 32));
    int sq = binary(g, TG_OP_POW, x, cg_const(g, "two", TG_F32, DIMS(1), &(cg_case){.lo = 2, .hi = 2}));
    tg_attr r[2] = {tg_attr_ints("axes", 1, (int64_t[]){-1}), tg_attr_int("keepdim", 1)};
    int ms = node(g, TG_OP_REDUCE_MEAN, 1, &sq, 2, r);
    int eps = cg_const(g, "eps", TG_F32, DIMS(1), &(cg_case){.lo = 1e-5, .hi = 1e-5});
    int inv = unary(g, TG_OP_RSQRT, binary(g, TG_OP_ADD, ms, eps));
    tg_graph_add_output(g, binary(g, TG_OP_MUL, binary(g, TG_OP_MUL, x, inv), W(g, "w", 32)));
    run(TG_OP_REDUCE_MEAN, "RMSNorm: pow, mean, add, rsqrt, mul, mul (two loops)", g,
        (cg_case){0});
    /* a tree over inputs broadcast three ways, a member narrower than the
     * space, and a sum over two trailing axes */
    g = tg_graph_new();
    x = cg_input(g, "x", TG_F32, DIMS(4, 5, 6));
    int row = cg_input(g, "row", TG_F32, DIMS(1, 1, 6)), col = cg_input(g, "col", TG_F32, DIMS(4, 1, 1));
    int t = binary(g, TG_OP_ADD, binary(g, TG_OP_MUL, x, row), unary(g, TG_OP_NEG, col));
    tg_attr s2[1] = {tg_attr_ints("axes", 2, (int64_t[]){-2, -1})};
    tg_graph_add_output(g, node(g, TG_OP_REDUCE_SUM, 1, (int[]){unary(g, TG_OP_TANH, t)}, 1, s2));
    run(TG_OP_REDUCE_SUM, "of tanh(x * row - col) over two trailing axes (a loop)", g,
        (cg_case){0});
    g = tg_graph_new();
    x = cg_input(g, "x", TG_F32, DIMS(4, 5, 6));
    row = cg_input(g, "row", TG_F32, DIMS(1, 1, 6));
    col = cg_input(g, "col", TG_F32, DIMS(4, 1, 1));
    t = binary(g, TG_OP_SUB, unary(g, TG_OP_EXP, unary(g, TG_OP_NEG, col)),
               binary(g, TG_OP_DIV, x, unary(g, TG_OP_ABS, row)));
    tg_graph_add_output(g, binary(g, TG_OP_MAXIMUM, t, x));
    run(TG_OP_MAXIMUM, "of a tree over broadcast inputs (a loop)", g, (cg_case){.lo = 0.5, .hi = 3});
}

static void cover(tg_op op)
{
    tg_infer_fn f = tg_op_table[op].infer;
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
        if (cases[i].op == op) {
            cases[i].build(op);
            return;
        }
    if (f == tg_infer_unary) {
        family_unary(op, ANY, 5);
        family_unary(op, UNSIGNED, 3);
    } else if (f == tg_infer_unary_float)
        family_unary(op, FLOATS, 2);
    else if (f == tg_infer_unary_bool)
        family_unary(op, (tg_dtype[]){TG_BOOL}, 1);
    else if (f == tg_infer_binary)
        family_binary(op, (tg_dtype[]){TG_F32, TG_F64, TG_I32, TG_I64, TG_U16, TG_U32, TG_U64}, 7);
    else if (f == tg_infer_compare)     /* the interpreter orders no bools */
        family_binary(op, (tg_dtype[]){TG_F32, TG_I32, TG_I64, TG_U16, TG_U32, TG_U64, TG_BOOL},
                      op == TG_OP_EQ || op == TG_OP_NE ? 7 : 6);
    else if (f == tg_infer_logical)
        family_binary(op, (tg_dtype[]){TG_BOOL}, 1);
    else if (f == tg_infer_binary_int)
        family_binary(op, INTS, NINTS);
    else if (f == tg_infer_unary_int)
        family_unary(op, INTS, NINTS);
    else if (f == tg_infer_reduce && (op == TG_OP_REDUCE_MEAN || op == TG_OP_REDUCE_VAR))
        family_reduce(op, FLOATS, 2);
    else if (f == tg_infer_reduce)
        family_reduce(op, (tg_dtype[]){TG_F32, TG_F64, TG_I32, TG_I64, TG_U64}, 5);
    else if (f == tg_infer_reduce_bool)
        family_reduce(op, (tg_dtype[]){TG_BOOL, TG_F32}, 2);
}

int main(void)
{
    if (!cg_start())
        return 77;
    signal(SIGTERM, on_kill);
    signal(SIGINT, on_kill);
    int nop = 0, ncov = 0;
    for (int op = 1; op < TG_OP_COUNT; op++) {
        cover((tg_op)op);
        nop++;
        ncov += covered[op] > 0;
    }
    case_epilogues();
    case_conv_residual();
    case_loops();
    printf("coverage: %d of %d ops of ops.def run on every path; ops with no case:", ncov, nop);
    for (int op = 1; op < TG_OP_COUNT; op++)
        if (!covered[op])
            printf(" %s", tg_op_name((tg_op)op));
    printf("%s\n", ncov == nop ? " none" : " (their inference is no family of"
           " tests/unit/test_backend_ops.c: add a builder to its `cases`)");
    CHECK(ncov == nop);
    printf("unsupported: %d cases refused by a path%s\n", cg_nrefused,
           cg_nrefused ? " (listed above)" : "");
    cg_report_backends();
    printf("reference: float64 but for %d cases whose ops take no f64 (listed above) and %d"
           " with no f32 value (integers, bool, f16, f64: the interpreter, which is not"
           " compared with itself)\n", cg_own_reference, cg_no_f32);
    return unit_report();
}
