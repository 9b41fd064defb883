/* Op table and shape/dtype inference: each op family on small graphs, with
 * symbolic dims, and the errors bad graphs must give. Sizes in the property
 * checks are random (the seed is printed). */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "graph.h"
#include "ops/shape_util.h"
#include "unit.h"

static tg_graph *G;
static tg_dim S0, S1;

static tg_dim C(int64_t v) { return tg_dim_const(v); }

static tg_dim mul(tg_dim a, tg_dim b)
{
    tg_dim r;
    return tg_dim_mul(a, b, &r) ? C(-999) : r;
}

static tg_dim add(tg_dim a, tg_dim b)
{
    tg_dim r;
    return tg_dim_add(a, b, &r) ? C(-999) : r;
}

static tg_shape shp(int rank, ...)
{
    va_list ap;
    tg_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank;
    va_start(ap, rank);
    for (int i = 0; i < rank; i++)
        s.d[i] = va_arg(ap, tg_dim);
    va_end(ap);
    return s;
}

static int input(tg_dtype dt, tg_shape s)
{
    static int k;
    char name[32];
    snprintf(name, sizeof name, "in%d", k++);
    return tg_graph_add_input(G, name, dt, &s);
}

static int node(tg_op op, int nin, const int *in, int nattr, const tg_attr *a)
{
    return tg_graph_add_node(G, op, NULL, nin, in, nattr, a);
}

#define NODE(op, ins, attrs) \
    node(op, (int)(sizeof(ins) / sizeof(int)), ins, (int)(sizeof(attrs) / sizeof(tg_attr)), attrs)
#define NODE0(op, ins) node(op, (int)(sizeof(ins) / sizeof(int)), ins, 0, NULL)

/* Value v exists with dtype dt and shape want; prints both shapes otherwise. */
static bool has(int v, tg_dtype dt, tg_shape want)
{
    char a[200], b[200];
    if (v < 0) {
        fprintf(stderr, "  unexpected error: %s\n", tg_errmsg());
        return false;
    }
    const tg_value *val = &G->values[v];
    if (val->dtype == dt && tg_shape_eq(&val->shape, &want))
        return true;
    tg_shape_format(&val->shape, G->sym, a, sizeof a);
    tg_shape_format(&want, G->sym, b, sizeof b);
    fprintf(stderr, "  got %s%s, expected %s%s\n", tg_dtype_name(val->dtype), a,
            tg_dtype_name(dt), b);
    return false;
}

/* The add failed and the message contains text. */
static bool fails(int v, const char *text)
{
    if (v >= 0) {
        fprintf(stderr, "  expected an error containing \"%s\", got success\n", text);
        return false;
    }
    if (!strstr(tg_errmsg(), text)) {
        fprintf(stderr, "  error \"%s\" lacks \"%s\"\n", tg_errmsg(), text);
        return false;
    }
    return true;
}

static void test_table(void)
{
    CHECK(strcmp(tg_op_name(TG_OP_ADD), "add") == 0);
    CHECK(strcmp(tg_op_name(TG_OP_ADAPTIVE_AVG_POOL), "adaptive_avg_pool") == 0);
    CHECK(tg_op_from_name("index_select") == TG_OP_INDEX_SELECT);
    CHECK(tg_op_from_name("conv2d") == TG_OP_NONE);
    CHECK(tg_op_from_name(NULL) == TG_OP_NONE);
    CHECK(strcmp(tg_op_name(TG_OP_COUNT), "?") == 0);
    int ok = 1;
    for (int i = 1; i < TG_OP_COUNT; i++)
        ok &= tg_op_from_name(tg_op_name((tg_op)i)) == (tg_op)i && tg_op_table[i].infer &&
              tg_op_table[i].min_in >= 0 &&
              (tg_op_table[i].max_in < 0 || tg_op_table[i].max_in >= tg_op_table[i].min_in);
    CHECK(ok);
    CHECK(tg_op_table[TG_OP_CONCAT].max_in == -1);
    CHECK(tg_op_table[TG_OP_BATCH_NORM].min_in == 3 && tg_op_table[TG_OP_BATCH_NORM].max_in == 5);
}

static void test_unary(void)
{
    int x = input(TG_F32, shp(2, S0, C(3)));
    int xi = input(TG_I64, shp(1, C(5)));
    int xb = input(TG_BOOL, shp(2, C(2), S1));
    CHECK(has(NODE0(TG_OP_RELU, ((int[]){ xi })), TG_I64, shp(1, C(5))));
    CHECK(has(NODE0(TG_OP_TANH, ((int[]){ x })), TG_F32, shp(2, S0, C(3))));
    CHECK(fails(NODE0(TG_OP_EXP, ((int[]){ xi })),
                "input 0 has dtype i64, expected a floating-point dtype"));
    CHECK(fails(NODE0(TG_OP_NEG, ((int[]){ xb })), "input 0 has dtype bool"));
    CHECK(has(NODE0(TG_OP_IDENTITY, ((int[]){ xb })), TG_BOOL, shp(2, C(2), S1)));
    CHECK(has(NODE0(TG_OP_LOGICAL_NOT, ((int[]){ xb })), TG_BOOL, shp(2, C(2), S1)));
    CHECK(fails(NODE0(TG_OP_LOGICAL_NOT, ((int[]){ x })), "input 0 has dtype f32, expected bool"));
    tg_attr cast[] = { tg_attr_dtype("dtype", TG_BF16) };
    CHECK(has(NODE(TG_OP_CAST, ((int[]){ xi }), cast), TG_BF16, shp(1, C(5))));
    CHECK(fails(NODE0(TG_OP_CAST, ((int[]){ xi })), "attribute 'dtype' is required"));
    tg_attr castname[] = { tg_attr_string("dtype", "u8") };
    CHECK(has(NODE(TG_OP_CAST, ((int[]){ x }), castname), TG_U8, shp(2, S0, C(3))));
    tg_attr bc_i32[] = { tg_attr_dtype("dtype", TG_I32) }, bc_u64[] = { tg_attr_dtype("dtype", TG_U64) },
            bc_bool[] = { tg_attr_dtype("dtype", TG_BOOL) }, bc_u8[] = { tg_attr_dtype("dtype", TG_U8) };
    CHECK(has(NODE(TG_OP_BITCAST, ((int[]){ x }), bc_i32), TG_I32, shp(2, S0, C(3))));
    CHECK(has(NODE(TG_OP_BITCAST, ((int[]){ xi }), bc_u64), TG_U64, shp(1, C(5))));
    CHECK(has(NODE(TG_OP_BITCAST, ((int[]){ xb }), bc_u8), TG_U8, shp(2, C(2), S1)));
    CHECK(fails(NODE(TG_OP_BITCAST, ((int[]){ xi }), bc_i32), "the element sizes differ (8 and 4 bytes)"));
    CHECK(fails(NODE(TG_OP_BITCAST, ((int[]){ xb }), bc_i32), "element sizes differ"));
    int x8 = input(TG_U8, shp(1, C(4)));
    CHECK(fails(NODE(TG_OP_BITCAST, ((int[]){ x8 }), bc_bool), "bool holds only the bytes 0 and 1"));
    CHECK(fails(NODE0(TG_OP_BITCAST, ((int[]){ x })), "attribute 'dtype' is required"));
    tg_attr gelu_bad[] = { tg_attr_string("approximate", "erf") };
    CHECK(fails(NODE(TG_OP_GELU, ((int[]){ x }), gelu_bad), "\"none\" or \"tanh\""));
    tg_attr gelu_tanh[] = { tg_attr_string("approximate", "tanh") };
    CHECK(has(NODE(TG_OP_GELU, ((int[]){ x }), gelu_tanh), TG_F32, shp(2, S0, C(3))));
    tg_attr alpha_bad[] = { tg_attr_string("alpha", "0.1") };
    CHECK(fails(NODE(TG_OP_LEAKY_RELU, ((int[]){ x }), alpha_bad),
                "attribute 'alpha' is string, expected float"));
    tg_attr clampr[] = { tg_attr_float("min", -1.5), tg_attr_int("max", 6) };
    CHECK(has(NODE(TG_OP_CLAMP, ((int[]){ x }), clampr), TG_F32, shp(2, S0, C(3))));
    CHECK(fails(NODE0(TG_OP_RELU, ((int[]){ 9999 })), "does not exist"));
}

static void test_binary(void)
{
    int a = input(TG_F32, shp(3, S0, C(1), C(5)));
    int b = input(TG_F32, shp(2, C(4), C(1)));
    int c = input(TG_F32, shp(1, C(4)));
    int d = input(TG_F32, shp(1, S1));
    int e = input(TG_F64, shp(1, C(5)));
    int sc = input(TG_F32, shp(0));
    int m = input(TG_BOOL, shp(3, S0, C(1), C(1)));
    CHECK(has(NODE0(TG_OP_ADD, ((int[]){ a, b })), TG_F32, shp(3, S0, C(4), C(5))));
    CHECK(has(NODE0(TG_OP_MUL, ((int[]){ b, a })), TG_F32, shp(3, S0, C(4), C(5))));
    CHECK(has(NODE0(TG_OP_SUB, ((int[]){ sc, a })), TG_F32, shp(3, S0, C(1), C(5))));
    CHECK(fails(NODE0(TG_OP_ADD, ((int[]){ a, c })), "cannot broadcast [s0, 1, 5] with [4] (5 and 4 at axis -1)"));
    /* two different symbols do not broadcast, a symbol and 1 do */
    int ds0 = input(TG_F32, shp(1, S0));
    CHECK(fails(NODE0(TG_OP_ADD, ((int[]){ ds0, d })), "(s0 and s1 at axis -1)"));
    int one = input(TG_F32, shp(2, S1, C(1)));
    CHECK(has(NODE0(TG_OP_ADD, ((int[]){ one, ds0 })), TG_F32, shp(2, S1, S0)));
    CHECK(fails(NODE0(TG_OP_ADD, ((int[]){ a, e })),
                "input 1 has dtype f64, expected f32 like input 0"));
    CHECK(has(NODE0(TG_OP_LT, ((int[]){ a, b })), TG_BOOL, shp(3, S0, C(4), C(5))));
    CHECK(fails(NODE0(TG_OP_LOGICAL_AND, ((int[]){ a, b })), "expected bool"));
    CHECK(has(NODE0(TG_OP_LOGICAL_OR, ((int[]){ m, m })), TG_BOOL, shp(3, S0, C(1), C(1))));
    CHECK(fails(NODE0(TG_OP_ADD, ((int[]){ m, m })), "input 0 has dtype bool"));
    /* where: three-way broadcast of [s0,1,1], [4,1], [5] */
    int w5 = input(TG_F32, shp(1, C(5)));
    CHECK(has(NODE0(TG_OP_WHERE, ((int[]){ m, b, w5 })), TG_F32, shp(3, S0, C(4), C(5))));
    CHECK(fails(NODE0(TG_OP_WHERE, ((int[]){ a, b, w5 })), "input 0 has dtype f32, expected bool"));
    CHECK(fails(NODE0(TG_OP_WHERE, ((int[]){ m, b, e })), "input 2 has dtype f64"));
    CHECK(fails(NODE0(TG_OP_ADD, ((int[]){ a })), "takes 2 inputs"));
    /* the public broadcast helper */
    tg_shape l = shp(2, S0, C(1)), r = shp(3, C(2), C(1), C(7)), o;
    CHECK(tg_shape_broadcast(G, &l, &r, &o) == 0 && o.rank == 3 && tg_dim_eq(o.d[0], C(2)) && tg_dim_eq(o.d[1], S0) &&
          tg_dim_eq(o.d[2], C(7)));
}

static void test_reduce(void)
{
    int x = input(TG_F32, shp(3, S0, C(8), C(16)));
    int xi = input(TG_I32, shp(2, C(3), C(4)));
    tg_attr last[] = { tg_attr_ints("axes", 1, (int64_t[]){ -1 }) };
    CHECK(has(NODE(TG_OP_REDUCE_SUM, ((int[]){ x }), last), TG_F32, shp(2, S0, C(8))));
    tg_attr keep[] = { tg_attr_ints("axes", 2, (int64_t[]){ 0, 2 }), tg_attr_int("keepdim", 1) };
    CHECK(has(NODE(TG_OP_REDUCE_MAX, ((int[]){ x }), keep), TG_F32, shp(3, C(1), C(8), C(1))));
    CHECK(has(NODE0(TG_OP_REDUCE_PROD, ((int[]){ xi })), TG_I32, shp(0)));
    tg_attr bad[] = { tg_attr_ints("axes", 1, (int64_t[]){ 3 }) };
    CHECK(fails(NODE(TG_OP_REDUCE_SUM, ((int[]){ x }), bad), "axis 3 out of range for rank 3"));
    tg_attr neg[] = { tg_attr_ints("axes", 1, (int64_t[]){ -4 }) };
    CHECK(fails(NODE(TG_OP_REDUCE_MIN, ((int[]){ x }), neg), "axis -4 out of range for rank 3"));
    tg_attr dup[] = { tg_attr_ints("axes", 2, (int64_t[]){ 1, -2 }) };
    CHECK(fails(NODE(TG_OP_REDUCE_SUM, ((int[]){ x }), dup), "appears twice"));
    tg_attr kd2[] = { tg_attr_int("keepdim", 2) };
    CHECK(fails(NODE(TG_OP_REDUCE_SUM, ((int[]){ x }), kd2), "expected 0 or 1"));
    tg_attr axes_int[] = { tg_attr_int("axes", 1) };
    CHECK(fails(NODE(TG_OP_REDUCE_SUM, ((int[]){ x }), axes_int),
                "attribute 'axes' is int, expected ints"));
    CHECK(fails(NODE0(TG_OP_REDUCE_MEAN, ((int[]){ xi })), "expected a floating-point dtype"));
    tg_attr corr[] = { tg_attr_int("correction", -1) };
    CHECK(fails(NODE(TG_OP_REDUCE_VAR, ((int[]){ x }), corr), "correction"));
    CHECK(has(NODE(TG_OP_REDUCE_ANY, ((int[]){ xi }), last), TG_BOOL, shp(1, C(3))));
    tg_attr am[] = { tg_attr_int("axis", 1) };
    CHECK(has(NODE(TG_OP_ARGMAX, ((int[]){ x }), am), TG_I64, shp(2, S0, C(16))));
    tg_attr amk[] = { tg_attr_int("axis", -1), tg_attr_int("keepdim", 1) };
    CHECK(has(NODE(TG_OP_ARGMIN, ((int[]){ xi }), amk), TG_I64, shp(2, C(3), C(1))));
    CHECK(has(NODE0(TG_OP_ARGMAX, ((int[]){ x })), TG_I64, shp(0)));
    tg_attr sm[] = { tg_attr_int("axis", 1) };
    CHECK(has(NODE(TG_OP_SOFTMAX, ((int[]){ x }), sm), TG_F32, shp(3, S0, C(8), C(16))));
    tg_attr smbad[] = { tg_attr_int("axis", 2) };
    CHECK(fails(NODE(TG_OP_LOG_SOFTMAX, ((int[]){ xi }), smbad), "expected a floating-point"));
    int x2 = input(TG_F16, shp(2, C(2), C(2)));
    CHECK(fails(NODE(TG_OP_SOFTMAX, ((int[]){ x2 }), smbad), "axis 2 out of range for rank 2"));
}

static void test_norm(void)
{
    int x = input(TG_F32, shp(3, S0, C(8), C(16)));
    int w816 = input(TG_F32, shp(2, C(8), C(16)));
    int w16 = input(TG_F32, shp(1, C(16)));
    int w8 = input(TG_F32, shp(1, C(8)));
    int w7 = input(TG_F32, shp(1, C(7)));
    int w8h = input(TG_F16, shp(1, C(8)));
    tg_attr ax[] = { tg_attr_int("axis", -2), tg_attr_float("eps", 1e-6) };
    CHECK(has(NODE(TG_OP_LAYER_NORM, ((int[]){ x, w816, w816 }), ax), TG_F32,
              shp(3, S0, C(8), C(16))));
    CHECK(fails(NODE(TG_OP_LAYER_NORM, ((int[]){ x, w16 }), ax),
                "input 1 has shape [16], expected [8, 16]"));
    CHECK(has(NODE0(TG_OP_LAYER_NORM, ((int[]){ x, -1, w16 })), TG_F32,
              shp(3, S0, C(8), C(16))));
    tg_attr eps_neg[] = { tg_attr_float("eps", -1) };
    CHECK(fails(NODE(TG_OP_LAYER_NORM, ((int[]){ x }), eps_neg), "eps"));
    tg_attr g4[] = { tg_attr_int("groups", 4) }, g3[] = { tg_attr_int("groups", 3) };
    CHECK(has(NODE(TG_OP_GROUP_NORM, ((int[]){ x, w8, w8 }), g4), TG_F32,
              shp(3, S0, C(8), C(16))));
    CHECK(fails(NODE(TG_OP_GROUP_NORM, ((int[]){ x }), g3), "groups 3 does not divide channels 8"));
    CHECK(fails(NODE0(TG_OP_GROUP_NORM, ((int[]){ x })), "attribute 'groups' is required"));
    CHECK(has(NODE0(TG_OP_BATCH_NORM, ((int[]){ x, w8, w8, w8, w8 })), TG_F32,
              shp(3, S0, C(8), C(16))));
    CHECK(fails(NODE0(TG_OP_BATCH_NORM, ((int[]){ x, w8, w7 })), "input 2 has shape [7]"));
    CHECK(fails(NODE0(TG_OP_BATCH_NORM, ((int[]){ x, w8, w8h })),
                "input 2 has dtype f16, expected f32 like input 0"));
    CHECK(fails(NODE0(TG_OP_BATCH_NORM, ((int[]){ w8, w8, w8 })),
                "input 0 has rank 1, expected at least 2"));
}

static void test_matmul_linear(void)
{
    int a = input(TG_F32, shp(3, S0, C(3), C(4)));
    int b = input(TG_F32, shp(2, C(4), C(5)));
    int v4 = input(TG_F32, shp(1, C(4)));
    int b3 = input(TG_F32, shp(3, C(2), C(4), C(5)));
    int m34 = input(TG_F32, shp(2, C(3), C(4)));
    int p = input(TG_F32, shp(4, C(2), C(1), C(3), C(4)));
    int q = input(TG_F32, shp(3, C(5), C(4), C(6)));
    CHECK(has(NODE0(TG_OP_MATMUL, ((int[]){ a, b })), TG_F32, shp(3, S0, C(3), C(5))));
    CHECK(has(NODE0(TG_OP_MATMUL, ((int[]){ v4, v4 })), TG_F32, shp(0)));
    CHECK(has(NODE0(TG_OP_MATMUL, ((int[]){ v4, b3 })), TG_F32, shp(2, C(2), C(5))));
    CHECK(has(NODE0(TG_OP_MATMUL, ((int[]){ m34, v4 })), TG_F32, shp(1, C(3))));
    CHECK(has(NODE0(TG_OP_MATMUL, ((int[]){ p, q })), TG_F32, shp(4, C(2), C(5), C(3), C(6))));
    CHECK(fails(NODE0(TG_OP_MATMUL, ((int[]){ b, a })), "matmul inner dims differ: 5 != 3"));

    int x = input(TG_F32, shp(2, S0, C(784)));
    int w = input(TG_F32, shp(2, C(10), C(784)));
    int wt = input(TG_F32, shp(2, C(784), C(10)));
    int bias = input(TG_F32, shp(1, C(10)));
    int bias11 = input(TG_F32, shp(1, C(11)));
    CHECK(has(NODE0(TG_OP_LINEAR, ((int[]){ x, w, bias })), TG_F32, shp(2, S0, C(10))));
    CHECK(has(NODE0(TG_OP_LINEAR, ((int[]){ x, w, -1 })), TG_F32, shp(2, S0, C(10))));
    CHECK(fails(NODE0(TG_OP_LINEAR, ((int[]){ x, wt })), "784 != 10"));
    CHECK(fails(NODE0(TG_OP_LINEAR, ((int[]){ x, w, bias11 })),
                "input 2 has shape [11], expected [10]"));
    CHECK(fails(NODE0(TG_OP_LINEAR, ((int[]){ x, bias })), "input 1 has rank 1, expected 2"));
    /* a constant weight infers like an input */
    int64_t wd[2] = { 3, 784 };
    tg_shape ws = tg_shape_of(2, wd);
    int wc = tg_graph_add_const(G, "w_const", TG_F32, &ws, calloc(3 * 784, 4), 3 * 784 * 4);
    CHECK(has(NODE0(TG_OP_LINEAR, ((int[]){ x, wc })), TG_F32, shp(2, S0, C(3))));
}

/* Conv output size by counting window positions (the definition), not the formula. */
static int64_t conv_positions(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d)
{
    int64_t n = 0;
    for (int64_t start = -p; start + d * (k - 1) <= in - 1 + p; start += s)
        n++;
    return n;
}

/* Transposed conv size: one past the last output index any input reaches, plus
 * output_padding. */
static int64_t convt_size(int64_t in, int64_t k, int64_t s, int64_t p, int64_t d, int64_t op)
{
    int64_t last = 0;
    for (int64_t i = 0; i < in; i++)
        for (int64_t j = 0; j < k; j++)
            if (i * s + j * d > last)
                last = i * s + j * d;
    return last + 1 - 2 * p + op;
}

static void test_conv(void)
{
    int x = input(TG_F32, shp(4, S0, C(3), C(32), C(32)));
    int w = input(TG_F32, shp(4, C(16), C(3), C(3), C(3)));
    int bias = input(TG_F32, shp(1, C(16)));
    tg_attr pad1[] = { tg_attr_ints("padding", 1, (int64_t[]){ 1 }) };
    CHECK(has(NODE(TG_OP_CONV, ((int[]){ x, w, bias }), pad1), TG_F32,
              shp(4, S0, C(16), C(32), C(32))));
    tg_attr s2[] = { tg_attr_ints("stride", 2, (int64_t[]){ 2, 2 }),
                     tg_attr_ints("padding", 2, (int64_t[]){ 1, 0 }) };
    CHECK(has(NODE(TG_OP_CONV, ((int[]){ x, w }), s2), TG_F32,
              shp(4, S0, C(16), C(16), C(15))));
    tg_attr s3[] = { tg_attr_ints("stride", 3, (int64_t[]){ 2, 2, 2 }) };
    CHECK(fails(NODE(TG_OP_CONV, ((int[]){ x, w }), s3),
                "attribute 'stride' has 3 values, expected 1 or 2"));
    tg_attr huge[] = { tg_attr_ints("dilation", 1, (int64_t[]){ INT64_MAX }) };
    CHECK(fails(NODE(TG_OP_CONV, ((int[]){ x, w }), huge),
                "attribute 'dilation' value 9223372036854775807 is out of range"));
    int w4 = input(TG_F32, shp(4, C(16), C(4), C(3), C(3)));
    CHECK(fails(NODE0(TG_OP_CONV, ((int[]){ x, w4 })), "input channels differ from the weight's: 3 != 4"));
    /* depthwise */
    int xd = input(TG_F32, shp(4, C(1), C(8), C(10), C(10)));
    int wd = input(TG_F32, shp(4, C(8), C(1), C(3), C(3)));
    tg_attr g8[] = { tg_attr_int("groups", 8) }, g3[] = { tg_attr_int("groups", 3) };
    CHECK(has(NODE(TG_OP_CONV, ((int[]){ xd, wd }), g8), TG_F32, shp(4, C(1), C(8), C(8), C(8))));
    CHECK(fails(NODE(TG_OP_CONV, ((int[]){ xd, wd }), g3), "groups 3 does not divide"));
    /* 1-D and 3-D */
    int x1 = input(TG_F32, shp(3, S0, C(4), S1));
    int w1 = input(TG_F32, shp(3, C(6), C(4), C(5)));
    CHECK(has(NODE0(TG_OP_CONV, ((int[]){ x1, w1 })), TG_F32,
              shp(3, S0, C(6), add(S1, C(-4)))));
    int x3 = input(TG_F32, shp(5, C(2), C(2), C(5), C(6), C(7)));
    int w3 = input(TG_F32, shp(5, C(4), C(2), C(3), C(3), C(3)));
    CHECK(has(NODE0(TG_OP_CONV, ((int[]){ x3, w3 })), TG_F32,
              shp(5, C(2), C(4), C(3), C(4), C(5))));
    CHECK(fails(NODE0(TG_OP_CONV, ((int[]){ x3, w })), "input 1 has rank 4, expected 5"));
    int tiny = input(TG_F32, shp(4, C(1), C(3), C(2), C(2)));
    CHECK(fails(NODE0(TG_OP_CONV, ((int[]){ tiny, w })), "input too small"));
    /* symbolic spatial size: exact when the stride divides the symbolic part */
    int xs = input(TG_F32, shp(4, C(1), C(3), mul(C(2), S1), mul(C(2), S1)));
    tg_attr s2p1[] = { tg_attr_ints("stride", 1, (int64_t[]){ 2 }),
                       tg_attr_ints("padding", 1, (int64_t[]){ 1 }) };
    CHECK(has(NODE(TG_OP_CONV, ((int[]){ xs, w }), s2p1), TG_F32, shp(4, C(1), C(16), S1, S1)));
    CHECK(fails(NODE(TG_OP_CONV, ((int[]){ x1, w1 }), s2p1),
                "spatial axis 0 of size s1: the symbolic part is not a multiple of 2"));
    /* transposed: weight [C, K/groups, *k] */
    int xt = input(TG_F32, shp(4, S0, C(16), C(7), C(7)));
    int wt = input(TG_F32, shp(4, C(16), C(8), C(4), C(4)));
    tg_attr tr[] = { tg_attr_int("transposed", 1), tg_attr_ints("stride", 1, (int64_t[]){ 2 }),
                     tg_attr_ints("padding", 1, (int64_t[]){ 1 }) };
    CHECK(has(NODE(TG_OP_CONV, ((int[]){ xt, wt }), tr), TG_F32, shp(4, S0, C(8), C(14), C(14))));
    tg_attr opad[] = { tg_attr_ints("output_padding", 1, (int64_t[]){ 1 }) };
    CHECK(fails(NODE(TG_OP_CONV, ((int[]){ x, w }), opad), "needs transposed=1"));

    /* random sizes against the definitions */
    int ok = 1;
    for (int t = 0; t < 40; t++) {
        int64_t in = 3 + rand() % 30, k = 1 + rand() % 4, s = 1 + rand() % 3, p = rand() % 3;
        int64_t d = 1 + rand() % 2, op = rand() % s;
        int64_t expect = conv_positions(in, k, s, p, d);
        int xr = input(TG_F32, shp(3, C(1), C(2), C(in)));
        int wr = input(TG_F32, shp(3, C(3), C(2), C(k)));
        tg_attr at[] = { tg_attr_ints("stride", 1, &s), tg_attr_ints("padding", 1, &p),
                         tg_attr_ints("dilation", 1, &d), tg_attr_int("transposed", 1),
                         tg_attr_ints("output_padding", 1, &op) };
        int v = node(TG_OP_CONV, 2, (int[]){ xr, wr }, 3, at);
        if (expect >= 1)
            ok &= has(v, TG_F32, shp(3, C(1), C(3), C(expect)));
        else
            ok &= fails(v, "input too small");
        /* transposed: weight [C=2, K=3, k]; skip when padding eats the whole output */
        int wrt = input(TG_F32, shp(3, C(2), C(3), C(k)));
        int64_t texp = convt_size(in, k, s, p, d, op);
        v = node(TG_OP_CONV, 2, (int[]){ xr, wrt }, 5, at);
        if (texp >= 1 && (op < s || op < d))
            ok &= has(v, TG_F32, shp(3, C(1), C(3), C(texp)));
    }
    CHECK(ok);
}

static void test_sdpa(void)
{
    int q = input(TG_F16, shp(4, S0, C(8), S1, C(64)));
    int kv = input(TG_F16, shp(4, S0, C(2), S1, C(64)));
    int kv3 = input(TG_F16, shp(4, S0, C(3), S1, C(64)));
    int v32 = input(TG_F16, shp(4, S0, C(8), S1, C(32)));
    int k8 = input(TG_F16, shp(4, S0, C(8), S1, C(64)));
    int mask = input(TG_BOOL, shp(2, S1, S1));
    int mbad = input(TG_BOOL, shp(2, C(5), C(5)));
    int mi = input(TG_I64, shp(2, S1, S1));
    tg_attr gqa[] = { tg_attr_int("gqa", 1) };
    CHECK(has(NODE(TG_OP_SDPA, ((int[]){ q, kv, kv }), gqa), TG_F16, shp(4, S0, C(8), S1, C(64))));
    CHECK(fails(NODE0(TG_OP_SDPA, ((int[]){ q, kv, kv })), "set gqa=1"));
    CHECK(fails(NODE(TG_OP_SDPA, ((int[]){ q, kv3, kv3 }), gqa), "multiple of k heads (3)"));
    CHECK(has(NODE0(TG_OP_SDPA, ((int[]){ q, k8, v32 })), TG_F16, shp(4, S0, C(8), S1, C(32))));
    CHECK(has(NODE0(TG_OP_SDPA, ((int[]){ q, k8, k8, mask })), TG_F16,
              shp(4, S0, C(8), S1, C(64))));
    CHECK(fails(NODE0(TG_OP_SDPA, ((int[]){ q, k8, k8, mbad })), "does not broadcast to the scores"));
    CHECK(fails(NODE0(TG_OP_SDPA, ((int[]){ q, k8, k8, mi })), "expected bool or f16"));
    tg_attr causal[] = { tg_attr_int("causal", 1), tg_attr_float("scale", 0.125) };
    CHECK(has(NODE(TG_OP_SDPA, ((int[]){ q, k8, k8 }), causal), TG_F16,
              shp(4, S0, C(8), S1, C(64))));
    CHECK(fails(NODE(TG_OP_SDPA, ((int[]){ q, k8, k8, mask }), causal), "ambiguous"));
    int k32 = input(TG_F16, shp(4, S0, C(8), S1, C(32)));
    CHECK(fails(NODE0(TG_OP_SDPA, ((int[]){ q, k32, k32 })), "head sizes (E) differ: 64 != 32"));
    int q3 = input(TG_F16, shp(2, S1, C(64)));
    CHECK(fails(NODE0(TG_OP_SDPA, ((int[]){ q3, q3, q3 })), "input 0 has rank 2, expected at least 3"));
}

static void test_pool(void)
{
    int x = input(TG_F32, shp(4, S0, C(16), C(32), C(32)));
    tg_attr k2[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 2 }) };
    CHECK(has(NODE(TG_OP_MAX_POOL, ((int[]){ x }), k2), TG_F32, shp(4, S0, C(16), C(16), C(16))));
    CHECK(fails(NODE0(TG_OP_MAX_POOL, ((int[]){ x })), "attribute 'kernel' is required"));
    /* torch: MaxPool1d(3, 2) on 6 gives 2, with ceil_mode 3 */
    int x6 = input(TG_F32, shp(3, C(1), C(1), C(6)));
    tg_attr k3s2[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 3 }),
                       tg_attr_ints("stride", 1, (int64_t[]){ 2 }), tg_attr_int("ceil_mode", 0) };
    CHECK(has(NODE(TG_OP_MAX_POOL, ((int[]){ x6 }), k3s2), TG_F32, shp(3, C(1), C(1), C(2))));
    k3s2[2] = tg_attr_int("ceil_mode", 1);
    CHECK(has(NODE(TG_OP_AVG_POOL, ((int[]){ x6 }), k3s2), TG_F32, shp(3, C(1), C(1), C(3))));
    /* ceil_mode drops a last window that would start in the right padding:
     * kernel 2, stride 2, padding 1 on 5: ceil gives 4, the 4th starts at 6 = 5+1 */
    int x5 = input(TG_F32, shp(3, C(1), C(1), C(5)));
    tg_attr drop[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 2 }),
                       tg_attr_ints("padding", 1, (int64_t[]){ 1 }), tg_attr_int("ceil_mode", 1) };
    CHECK(has(NODE(TG_OP_MAX_POOL, ((int[]){ x5 }), drop), TG_F32, shp(3, C(1), C(1), C(3))));
    /* symbolic: exact with floor when the stride divides, refused for an inexact ceil */
    int xs = input(TG_F32, shp(4, C(1), C(2), mul(C(2), S0), S1));
    tg_attr k2s[] = { tg_attr_ints("kernel", 2, (int64_t[]){ 2, 1 }) };
    CHECK(has(NODE(TG_OP_MAX_POOL, ((int[]){ xs }), k2s), TG_F32, shp(4, C(1), C(2), S0, S1)));
    tg_attr k2c[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 2 }), tg_attr_int("ceil_mode", 1) };
    CHECK(fails(NODE(TG_OP_MAX_POOL, ((int[]){ xs }), k2c), "spatial axis 1 of size s1"));
    tg_attr avgdil[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 2 }),
                         tg_attr_ints("dilation", 1, (int64_t[]){ 2 }) };
    /* dilated average: (32 - 2*(2-1) - 1) / 2 + 1 = 15 */
    CHECK(has(NODE(TG_OP_AVG_POOL, ((int[]){ x }), avgdil), TG_F32, shp(4, S0, C(16), C(15), C(15))));
    tg_attr bigpad[] = { tg_attr_ints("kernel", 1, (int64_t[]){ 3 }),
                         tg_attr_ints("padding", 1, (int64_t[]){ 2 }) };
    CHECK(fails(NODE(TG_OP_MAX_POOL, ((int[]){ x }), bigpad), "half the kernel"));
    int x5d = input(TG_F32, shp(5, C(1), C(1), C(4), C(4), C(4)));
    CHECK(fails(NODE(TG_OP_MAX_POOL, ((int[]){ x5d }), k2), "input 0 has rank 5, expected 3 to 4"));
    int xi = input(TG_I8, shp(3, C(1), C(1), C(4)));
    CHECK(has(NODE(TG_OP_MAX_POOL, ((int[]){ xi }), k2), TG_I8, shp(3, C(1), C(1), C(2))));
    CHECK(fails(NODE(TG_OP_AVG_POOL, ((int[]){ xi }), k2), "expected a floating-point dtype"));
    int xr = input(TG_F32, shp(4, S0, C(512), C(7), C(7)));
    tg_attr os[] = { tg_attr_ints("output_size", 1, (int64_t[]){ 1 }) };
    CHECK(has(NODE(TG_OP_ADAPTIVE_AVG_POOL, ((int[]){ xr }), os), TG_F32,
              shp(4, S0, C(512), C(1), C(1))));
    tg_attr os0[] = { tg_attr_ints("output_size", 2, (int64_t[]){ 3, 0 }) };
    CHECK(fails(NODE(TG_OP_ADAPTIVE_AVG_POOL, ((int[]){ xr }), os0), "must be positive"));
}

static void test_resize(void)
{
    int x = input(TG_F32, shp(4, S0, C(3), C(7), S1));
    tg_dim up[2] = { C(14), mul(S1, C(2)) };
    tg_attr lin[] = { tg_attr_dims("size", 2, up), tg_attr_string("mode", "linear"),
                      tg_attr_string("coord", "align_corners") };
    CHECK(has(NODE(TG_OP_RESIZE, ((int[]){ x }), lin), TG_F32, shp(4, S0, C(3), C(14), mul(S1, C(2)))));
    int x1 = input(TG_F16, shp(3, C(2), C(3), C(5)));
    tg_attr cub[] = { tg_attr_ints("size", 1, (int64_t[]){ 9 }), tg_attr_string("mode", "cubic"),
                      tg_attr_floats("scales", 1, (double[]){ 1.8 }),
                      tg_attr_int("exclude_outside", 1), tg_attr_float("cubic_a", -0.5) };
    CHECK(has(NODE(TG_OP_RESIZE, ((int[]){ x1 }), cub), TG_F16, shp(3, C(2), C(3), C(9))));
    tg_attr two[] = { tg_attr_ints("size", 2, (int64_t[]){ 4, 4 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), two), "'size' has 2 values for 1 spatial axes"));
    tg_attr nosize[] = { tg_attr_string("mode", "linear") };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), nosize), "attribute 'size' is required"));
    tg_attr badmode[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }), tg_attr_string("mode", "area") };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), badmode),
                "'mode' is \"area\", expected one of \"nearest\", \"linear\", \"cubic\""));
    tg_attr badcoord[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }),
                           tg_attr_string("coord", "crop_and_resize") };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), badcoord), "'coord' is \"crop_and_resize\""));
    tg_attr noroi[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }),
                        tg_attr_string("coord", "tf_crop_and_resize") };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), noroi), "tf_crop_and_resize needs attribute 'roi'"));
    tg_attr badroi[] = { tg_attr_ints("size", 3, (int64_t[]){ 2, 3, 4 }), tg_attr_string("coord", "tf_crop_and_resize"),
                         tg_attr_floats("roi", 6, (double[]){ 0.1, 0, 0, 1, 1, 1 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), badroi), "the roi of the batch and channel axes must be 0 to 1"));
    tg_attr badnear[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }),
                          tg_attr_string("nearest_mode", "round") };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), badnear), "'nearest_mode' is \"round\""));
    tg_attr badscale[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }),
                           tg_attr_floats("scales", 1, (double[]){ -2 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), badscale), "scale -2 must be positive"));
    tg_attr scales2[] = { tg_attr_ints("size", 1, (int64_t[]){ 4 }),
                          tg_attr_floats("scales", 2, (double[]){ 2, 2 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), scales2), "'scales' must be 1 floats"));
    tg_attr neg[] = { tg_attr_ints("size", 1, (int64_t[]){ -1 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x1 }), neg), "negative"));
    int xe = input(TG_F32, shp(3, C(2), C(3), C(0)));
    tg_attr some[] = { tg_attr_ints("size", 1, (int64_t[]){ 3 }) };
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ xe }), some), "an empty input cannot be resized"));
    int xi = input(TG_I32, shp(4, C(1), C(1), C(4), C(4)));
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ xi }), two), "expected a floating-point dtype"));
    int x5 = input(TG_F32, shp(5, C(1), C(1), C(4), C(4), C(4)));
    CHECK(fails(NODE(TG_OP_RESIZE, ((int[]){ x5 }), two), "rank 5, expected 3 to 4"));
}

static void test_reshape(void)
{
    int x = input(TG_F32, shp(3, S0, C(64), C(128)));
    tg_dim flat[2] = { mul(S0, C(64)), C(128) };
    tg_attr r1[] = { tg_attr_dims("shape", 2, flat) };
    CHECK(has(NODE(TG_OP_RESHAPE, ((int[]){ x }), r1), TG_F32, shp(2, mul(S0, C(64)), C(128))));
    tg_attr r2[] = { tg_attr_ints("shape", 3, (int64_t[]){ 64, 2, 64 }) };
    CHECK(fails(NODE(TG_OP_RESHAPE, ((int[]){ x }), r2), "cannot reshape [s0, 64, 128]"));
    tg_dim neg[2] = { C(-1), C(128) };
    tg_attr r3[] = { tg_attr_dims("shape", 2, neg) };
    CHECK(fails(NODE(TG_OP_RESHAPE, ((int[]){ x }), r3), "negative dim at 0"));
    CHECK(fails(NODE0(TG_OP_RESHAPE, ((int[]){ x })), "attribute 'shape' is required"));
    /* resolving -1 for importers */
    tg_shape in = shp(3, S0, C(64), C(128));
    tg_dim d[3] = { C(-1), C(128) };
    CHECK(tg_reshape_resolve(&in, 2, d) == 0 && tg_dim_eq(d[0], mul(S0, C(64))));
    tg_dim d2[3] = { S0, C(-1), C(32) };
    CHECK(tg_reshape_resolve(&in, 3, d2) == 0 && tg_dim_eq(d2[1], C(256)));
    tg_dim d3[3] = { C(-1), C(-1) };
    CHECK(fails(tg_reshape_resolve(&in, 2, d3), "-1 at both dims 0 and 1"));
    tg_dim d4[3] = { C(-1), C(3) };
    CHECK(fails(tg_reshape_resolve(&in, 2, d4), "no exact value"));
    tg_dim d5[3] = { C(-1), C(-2) };
    CHECK(fails(tg_reshape_resolve(&in, 2, d5), "dim 1 is -2"));
    tg_dim d6[3] = { S0, C(8192) };
    CHECK(tg_reshape_resolve(&in, 2, d6) == 0 && tg_dim_eq(d6[1], C(8192)));
}

static void test_movement(void)
{
    int x = input(TG_F32, shp(3, S0, C(3), C(5)));
    tg_attr perm[] = { tg_attr_ints("perm", 3, (int64_t[]){ 2, 0, -2 }) };
    CHECK(has(NODE(TG_OP_PERMUTE, ((int[]){ x }), perm), TG_F32, shp(3, C(5), S0, C(3))));
    tg_attr pdup[] = { tg_attr_ints("perm", 3, (int64_t[]){ 0, 0, 1 }) };
    CHECK(fails(NODE(TG_OP_PERMUTE, ((int[]){ x }), pdup), "names axis 0 twice"));
    tg_attr pshort[] = { tg_attr_ints("perm", 2, (int64_t[]){ 0, 1 }) };
    CHECK(fails(NODE(TG_OP_PERMUTE, ((int[]){ x }), pshort), "has 2 values, expected 3"));

    int e = input(TG_F32, shp(2, C(1), C(4)));
    tg_dim to[3] = { S0, C(3), C(4) };
    tg_attr ex[] = { tg_attr_dims("shape", 3, to) };
    CHECK(has(NODE(TG_OP_EXPAND, ((int[]){ e }), ex), TG_F32, shp(3, S0, C(3), C(4))));
    tg_attr exbad[] = { tg_attr_ints("shape", 2, (int64_t[]){ 5, 3 }) };
    CHECK(fails(NODE(TG_OP_EXPAND, ((int[]){ e }), exbad), "cannot expand [1, 4] to [5, 3]"));
    tg_attr exshort[] = { tg_attr_ints("shape", 1, (int64_t[]){ 4 }) };
    CHECK(fails(NODE(TG_OP_EXPAND, ((int[]){ e }), exshort), "cannot expand"));

    int s = input(TG_I64, shp(2, S0, C(10)));
    tg_attr sl[] = { tg_attr_int("axis", 1), tg_attr_int("start", 2), tg_attr_int("end", 9),
                     tg_attr_int("step", 3) };
    CHECK(has(NODE(TG_OP_SLICE, ((int[]){ s }), sl), TG_I64, shp(2, S0, C(3))));
    tg_attr slend[] = { tg_attr_int("axis", 1), tg_attr_int("end", 11) };
    CHECK(fails(NODE(TG_OP_SLICE, ((int[]){ s }), slend), "end 11 is past the end of axis 1 (size 10"));
    tg_attr slsym[] = { tg_attr_int("axis", 0), tg_attr_int("start", 1) };
    CHECK(has(NODE(TG_OP_SLICE, ((int[]){ s }), slsym), TG_I64, shp(2, add(S0, C(-1)), C(10))));
    tg_dim endd = add(S0, C(-2));
    tg_attr slsym2[] = { tg_attr_int("axis", -2), tg_attr_dims("end", 1, &endd) };
    CHECK(has(NODE(TG_OP_SLICE, ((int[]){ s }), slsym2), TG_I64, shp(2, add(S0, C(-2)), C(10))));
    tg_attr slstep0[] = { tg_attr_int("axis", 1), tg_attr_int("step", 0) };
    CHECK(fails(NODE(TG_OP_SLICE, ((int[]){ s }), slstep0), "'step' is 0, must be positive"));
    tg_attr slback[] = { tg_attr_int("axis", 1), tg_attr_int("start", 7), tg_attr_int("end", 3) };
    CHECK(fails(NODE(TG_OP_SLICE, ((int[]){ s }), slback), "slice start 7 is after its end 3"));
    CHECK(fails(NODE0(TG_OP_SLICE, ((int[]){ s })), "attribute 'axis' is required"));

    int c1 = input(TG_F32, shp(2, S0, C(3))), c2 = input(TG_F32, shp(2, S0, C(5)));
    int c3 = input(TG_F32, shp(2, C(2), C(3))), c4 = input(TG_F64, shp(2, S0, C(5)));
    tg_attr ax1[] = { tg_attr_int("axis", 1) }, ax0[] = { tg_attr_int("axis", 0) };
    CHECK(has(NODE(TG_OP_CONCAT, ((int[]){ c1, c2, c1 }), ax1), TG_F32, shp(2, S0, C(11))));
    CHECK(has(NODE(TG_OP_CONCAT, ((int[]){ c1, c3 }), ax0), TG_F32, shp(2, add(S0, C(2)), C(3))));
    CHECK(fails(NODE(TG_OP_CONCAT, ((int[]){ c1, c2 }), ax0), "outside axis 0"));
    CHECK(fails(NODE(TG_OP_CONCAT, ((int[]){ c2, c4 }), ax1), "input 1 has dtype f64"));

    tg_attr pads[] = { tg_attr_ints("pads", 6, (int64_t[]){ 0, 1, 2, 0, 1, -1 }),
                       tg_attr_float("value", -3.5) };
    CHECK(has(NODE(TG_OP_PAD, ((int[]){ x }), pads), TG_F32, shp(3, S0, C(5), C(6))));
    tg_attr pads4[] = { tg_attr_ints("pads", 4, (int64_t[]){ 0, 1, 2, 0 }) };
    CHECK(fails(NODE(TG_OP_PAD, ((int[]){ x }), pads4), "has 4 values, expected 6"));
    tg_attr crop[] = { tg_attr_ints("pads", 6, (int64_t[]){ 0, -2, 0, 0, -2, 0 }) };
    CHECK(fails(NODE(TG_OP_PAD, ((int[]){ x }), crop), "crop axis 1 to -1"));

    tg_attr rep[] = { tg_attr_ints("repeats", 3, (int64_t[]){ 2, 1, 3 }) };
    CHECK(has(NODE(TG_OP_TILE, ((int[]){ x }), rep), TG_F32, shp(3, mul(S0, C(2)), C(3), C(15))));
    tg_attr rep2[] = { tg_attr_ints("repeats", 2, (int64_t[]){ 2, 1 }) };
    CHECK(fails(NODE(TG_OP_TILE, ((int[]){ x }), rep2), "expected 3"));

    tg_attr k1[] = { tg_attr_int("k", 1) };
    CHECK(has(NODE(TG_OP_TRIU, ((int[]){ x }), k1), TG_F32, shp(3, S0, C(3), C(5))));
    int v = input(TG_F32, shp(1, C(4)));
    CHECK(fails(NODE(TG_OP_TRIL, ((int[]){ v }), k1), "input 0 has rank 1, expected at least 2"));
}

static void test_index(void)
{
    int emb = input(TG_F32, shp(2, C(1000), C(64)));
    int ids = input(TG_I64, shp(2, S0, S1));
    int fids = input(TG_F32, shp(2, S0, S1));
    tg_attr ax0[] = { tg_attr_int("axis", 0) }, ax1[] = { tg_attr_int("axis", 1) };
    CHECK(has(NODE(TG_OP_INDEX_SELECT, ((int[]){ emb, ids }), ax0), TG_F32, shp(3, S0, S1, C(64))));
    CHECK(has(NODE(TG_OP_INDEX_SELECT, ((int[]){ emb, ids }), ax1), TG_F32,
              shp(3, C(1000), S0, S1)));
    CHECK(fails(NODE(TG_OP_INDEX_SELECT, ((int[]){ emb, fids }), ax0),
                "input 1 has dtype f32, expected i64 or i32"));
    tg_attr ax2[] = { tg_attr_int("axis", 2) };
    CHECK(fails(NODE(TG_OP_INDEX_SELECT, ((int[]){ emb, ids }), ax2), "axis 2 out of range for rank 2"));
    int i32 = input(TG_I32, shp(0));
    CHECK(has(NODE(TG_OP_INDEX_SELECT, ((int[]){ emb, i32 }), ax0), TG_F32, shp(1, C(64))));

    int x = input(TG_F32, shp(2, C(5), C(6)));
    int gi = input(TG_I64, shp(2, C(5), C(2)));
    int gbig = input(TG_I64, shp(2, C(7), C(2)));
    CHECK(has(NODE(TG_OP_GATHER, ((int[]){ x, gi }), ax1), TG_F32, shp(2, C(5), C(2))));
    CHECK(fails(NODE(TG_OP_GATHER, ((int[]){ x, gbig }), ax1), "index dim 0 is 7"));
    int g1 = input(TG_I64, shp(1, C(2)));
    CHECK(fails(NODE(TG_OP_GATHER, ((int[]){ x, g1 }), ax1), "input 1 has rank 1, expected 2"));

    /* index_copy: src has x's shape but the index's length on the axis */
    int cache = input(TG_F32, shp(3, S0, C(8), C(4)));
    int pos = input(TG_I64, shp(1, C(2)));
    int kv = input(TG_F32, shp(3, S0, C(2), C(4)));
    CHECK(has(NODE(TG_OP_INDEX_COPY, ((int[]){ cache, pos, kv }), ax1), TG_F32,
              shp(3, S0, C(8), C(4))));
    CHECK(fails(NODE(TG_OP_INDEX_COPY, ((int[]){ cache, pos, kv }), ax2), "input 2 has shape"));
    CHECK(fails(NODE(TG_OP_INDEX_COPY, ((int[]){ cache, gi, kv }), ax1),
                "input 1 has rank 2, expected 1"));
    int kv64 = input(TG_F64, shp(3, S0, C(2), C(4)));
    CHECK(fails(NODE(TG_OP_INDEX_COPY, ((int[]){ cache, pos, kv64 }), ax1), "dtype f64"));
    /* cumsum keeps shape and dtype; bool has no sum */
    CHECK(has(NODE(TG_OP_CUMSUM, ((int[]){ ids }), ax1), TG_I64, shp(2, S0, S1)));
    int mask = input(TG_BOOL, shp(1, C(3)));
    CHECK(fails(NODE(TG_OP_CUMSUM, ((int[]){ mask }), ax0), "bool"));
    CHECK(fails(node(TG_OP_CUMSUM, 1, (int[]){ ids }, 0, NULL), "axis"));
}

static void test_gen(void)
{
    tg_dim sh[2] = { S0, C(4) };
    tg_attr full[] = { tg_attr_dims("shape", 2, sh), tg_attr_float("value", 0.5),
                       tg_attr_dtype("dtype", TG_F16) };
    CHECK(has(node(TG_OP_FULL, 0, NULL, 3, full), TG_F16, shp(2, S0, C(4))));
    tg_attr full0[] = { tg_attr_ints("shape", 0, NULL) };
    CHECK(has(node(TG_OP_FULL, 0, NULL, 1, full0), TG_F32, shp(0)));
    tg_attr fullneg[] = { tg_attr_ints("shape", 1, (int64_t[]){ -3 }) };
    CHECK(fails(node(TG_OP_FULL, 0, NULL, 1, fullneg), "is -3, must not be negative"));

    tg_attr ar[] = { tg_attr_dims("end", 1, &S0) };
    CHECK(has(node(TG_OP_ARANGE, 0, NULL, 1, ar), TG_I64, shp(1, S0)));
    tg_attr ar2[] = { tg_attr_int("start", 2), tg_attr_int("end", 11), tg_attr_int("step", 3),
                      tg_attr_dtype("dtype", TG_F32) };
    CHECK(has(node(TG_OP_ARANGE, 0, NULL, 4, ar2), TG_F32, shp(1, C(3))));
    tg_dim twice = mul(C(2), S0);
    tg_attr ar3[] = { tg_attr_dims("end", 1, &twice), tg_attr_int("step", 2) };
    CHECK(has(node(TG_OP_ARANGE, 0, NULL, 2, ar3), TG_I64, shp(1, S0)));
    tg_attr ar4[] = { tg_attr_dims("end", 1, &S0), tg_attr_int("step", 2) };
    CHECK(fails(node(TG_OP_ARANGE, 0, NULL, 2, ar4), "arange to s0 by 2: the symbolic part"));
    tg_attr ar5[] = { tg_attr_int("start", 10), tg_attr_int("end", 0), tg_attr_int("step", -3) };
    CHECK(has(node(TG_OP_ARANGE, 0, NULL, 3, ar5), TG_I64, shp(1, C(4))));
    tg_attr ar6[] = { tg_attr_int("start", 10), tg_attr_int("end", 0) };
    CHECK(fails(node(TG_OP_ARANGE, 0, NULL, 2, ar6), "from 10 by 1 never reaches its end 0"));
    tg_attr ar7[] = { tg_attr_int("end", 5), tg_attr_int("step", 0) };
    CHECK(fails(node(TG_OP_ARANGE, 0, NULL, 2, ar7), "must not be 0"));
    CHECK(fails(node(TG_OP_ARANGE, 0, NULL, 0, NULL), "attribute 'end' is required"));
}

static void test_quant(void)
{
    int x = input(TG_F32, shp(2, S0, C(16)));
    int xi = input(TG_I32, shp(2, S0, C(16)));
    tg_attr q[] = { tg_attr_float("scale", 0.05), tg_attr_int("zero_point", 3),
                    tg_attr_dtype("dtype", TG_U8) };
    int qv = NODE(TG_OP_QUANTIZE, ((int[]){ x }), q);
    CHECK(has(qv, TG_U8, shp(2, S0, C(16))));
    CHECK(has(NODE(TG_OP_DEQUANTIZE, ((int[]){ qv }), q), TG_F32, shp(2, S0, C(16))));
    double sc[16];
    for (int i = 0; i < 16; i++)
        sc[i] = 0.01 * (i + 1);
    tg_attr pc[] = { tg_attr_floats("scale", 16, sc), tg_attr_int("axis", -1) };
    CHECK(has(NODE(TG_OP_QUANTIZE, ((int[]){ x }), pc), TG_I8, shp(2, S0, C(16))));
    tg_attr pc15[] = { tg_attr_floats("scale", 15, sc), tg_attr_int("axis", 1) };
    CHECK(fails(NODE(TG_OP_QUANTIZE, ((int[]){ x }), pc15), "has 15 values, but axis 1 has 16"));
    tg_attr pcnoax[] = { tg_attr_floats("scale", 16, sc) };
    CHECK(fails(NODE(TG_OP_QUANTIZE, ((int[]){ x }), pcnoax), "attribute 'axis' is required"));
    tg_attr zp[] = { tg_attr_float("scale", 0.1), tg_attr_int("zero_point", 300),
                     tg_attr_dtype("dtype", TG_U8) };
    CHECK(fails(NODE(TG_OP_QUANTIZE, ((int[]){ x }), zp), "zero point 300 outside u8's range [0, 255]"));
    tg_attr s0[] = { tg_attr_float("scale", 0) };
    CHECK(fails(NODE(TG_OP_QUANTIZE, ((int[]){ x }), s0), "must be positive and finite"));
    tg_attr f32[] = { tg_attr_float("scale", 0.1), tg_attr_dtype("dtype", TG_F32) };
    CHECK(fails(NODE(TG_OP_QUANTIZE, ((int[]){ x }), f32), "expected i8, u8, f8e4m3 or f8e5m2"));
    tg_attr f8[] = { tg_attr_float("scale", 0.1), tg_attr_dtype("dtype", TG_F8E4M3) };
    CHECK(has(NODE(TG_OP_QUANTIZE, ((int[]){ x }), f8), TG_F8E4M3, shp(2, S0, C(16))));
    tg_attr sc1[] = { tg_attr_float("scale", 0.1) };
    CHECK(has(NODE(TG_OP_DEQUANTIZE, ((int[]){ xi }), sc1), TG_F32, shp(2, S0, C(16))));
    CHECK(fails(NODE(TG_OP_DEQUANTIZE, ((int[]){ x }), sc1), "input 0 has dtype f32"));
    CHECK(fails(NODE0(TG_OP_DEQUANTIZE, ((int[]){ xi })), "attribute 'scale' is required"));
}

/* The 2:4 sparse linears (compressed weights, tgraph-format(5)): shapes,
 * and the refusals that name what is wrong. */
static void test_sparse24(void)
{
    int x = input(TG_F32, shp(2, S0, C(20))), x6 = input(TG_F32, shp(2, S0, C(6)));
    int vf = input(TG_F32, shp(2, C(8), C(10))), m = input(TG_U8, shp(2, C(8), C(3)));
    int vq = input(TG_I8, shp(2, C(8), C(10))), s = input(TG_F32, shp(1, C(8)));
    int m2 = input(TG_U8, shp(2, C(8), C(2))), s7 = input(TG_F32, shp(1, C(7)));
    CHECK(has(NODE0(TG_OP_LINEAR_24, ((int[]){ x, vf, m })), TG_F32, shp(2, S0, C(8))));
    tg_attr st[] = { tg_attr_string("scheme", "static"), tg_attr_float("x_scale", 0.1) };
    tg_attr dyn[] = { tg_attr_string("scheme", "dynamic") };
    tg_attr wo[] = { tg_attr_string("scheme", "weight_only") };
    CHECK(has(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s }), st), TG_F32, shp(2, S0, C(8))));
    CHECK(has(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s, s }), dyn), TG_F32,
              shp(2, S0, C(8))));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s }), wo),
                "qlinear_24 takes scheme static or dynamic"));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vf, m, s }), dyn), "input 1 has dtype f32"));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x6, vq, m, s }), dyn), "constant multiple of 4"));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m2, s }), dyn), "input 2"));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s7 }), dyn), "input 3"));
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s, s7 }), dyn), "input 4"));
    tg_attr st0[] = { tg_attr_string("scheme", "static") };
    CHECK(fails(NODE(TG_OP_QLINEAR_24, ((int[]){ x, vq, m, s }), st0), "needs attribute 'x_scale'"));
}

/* Random inputs and attributes on every op: each add succeeds with a sane shape or
 * fails with a message, and never crashes (run under the sanitizers). */
static void test_random_nodes(void)
{
    static const char *names[] = { "axis", "axes", "keepdim", "shape", "perm", "stride",
                                   "padding", "kernel", "groups", "pads", "start", "end",
                                   "step", "dtype", "scale", "zero_point", "repeats",
                                   "output_size", "transposed", "eps", "gqa", "k" };
    int nname = (int)(sizeof names / sizeof *names);
    int vals[24], ok = 1;
    for (int i = 0; i < 24; i++) {
        tg_shape s = { .rank = rand() % 6 };
        for (int d = 0; d < s.rank; d++)
            s.d[d] = rand() % 5 ? C(1 + rand() % 6) : (rand() % 2 ? S0 : S1);
        vals[i] = input((tg_dtype)(1 + rand() % (TG_DTYPE_COUNT - 1)), s);
    }
    for (int t = 0; t < 3000; t++) {
        tg_op op = (tg_op)(1 + rand() % (TG_OP_COUNT - 1));
        int in[4], nattr = rand() % 4;
        int nin = tg_op_table[op].min_in + rand() % 2;
        if (nin > 4 || (tg_op_table[op].max_in >= 0 && nin > tg_op_table[op].max_in))
            nin = tg_op_table[op].min_in;
        for (int i = 0; i < nin; i++)
            in[i] = vals[rand() % 24];
        int64_t ints[4];
        double floats[4];
        tg_dim dims[4];
        for (int i = 0; i < 4; i++) {
            static const int64_t pick[] = { -3, -1, 0, 1, 2, 3, 4, 7, INT64_MAX, INT64_MIN };
            ints[i] = pick[rand() % 10];
            floats[i] = (double)(rand() % 7) - 2;
            dims[i] = rand() % 3 ? C(ints[i]) : S0;
        }
        tg_attr a[3];
        for (int i = 0; i < nattr && i < 3; i++) {
            const char *nm = names[rand() % nname];
            int cnt = rand() % 5;
            switch (rand() % 6) {
            case 0: a[i] = tg_attr_int(nm, ints[0]); break;
            case 1: a[i] = tg_attr_ints(nm, cnt, ints); break;
            case 2: a[i] = tg_attr_float(nm, floats[0]); break;
            case 3: a[i] = tg_attr_floats(nm, cnt, floats); break;
            case 4: a[i] = tg_attr_dims(nm, cnt, dims); break;
            default: a[i] = tg_attr_dtype(nm, (tg_dtype)(rand() % TG_DTYPE_COUNT)); break;
            }
        }
        for (int i = 1; i < nattr && i < 3; i++)   /* no duplicate names */
            if (!strcmp(a[i].name, a[0].name) || (i == 2 && !strcmp(a[2].name, a[1].name)))
                nattr = i;
        int v = node(op, nin, in, nattr > 3 ? 3 : nattr, a);
        if (v >= 0)
            ok &= G->values[v].shape.rank >= 0 && G->values[v].shape.rank <= TG_MAX_RANK &&
                  G->values[v].dtype > TG_DTYPE_NONE && G->values[v].dtype < TG_DTYPE_COUNT;
        else
            ok &= tg_errmsg()[0] != '\0';
    }
    CHECK(ok);
}

int main(void)
{
    unsigned seed = (unsigned)time(NULL);
    printf("seed %u\n", seed);
    srand(seed);
    G = tg_graph_new();
    S0 = tg_dim_sym(tg_graph_add_symbol(G, "s0", 1, 4096));
    S1 = tg_dim_sym(tg_graph_add_symbol(G, "s1", 1, 2048));
    test_table();
    test_unary();
    test_binary();
    test_reduce();
    test_norm();
    test_matmul_linear();
    test_conv();
    test_sdpa();
    test_pool();
    test_resize();
    test_reshape();
    test_movement();
    test_index();
    test_gen();
    test_quant();
    test_sparse24();
    test_random_nodes();
    CHECK(tg_graph_validate(G) == 0);
    if (unit_fail)
        fprintf(stderr, "last error: %s\n", tg_errmsg());
    tg_graph_free(G);
    return unit_report();
}
