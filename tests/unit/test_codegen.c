/* The C code generator against the interpreter on the shapes the fixtures
 * do not reach (cgcheck.h compiles and compares): pooling with padding,
 * dilation and ceil mode, fused loops with broadcasting and reductions,
 * matmul broadcasting, movement ops, views read in place, every fusion
 * candidate of fuse_act (anchors and what follows them), masks shared by
 * several attentions, lengths the data set (and their ABI), a loop's scan of a
 * length only the run sets (its ABI), concats whose operands are written in
 * place (every convolution path at a stride). */
#include "cgcheck.h"
#include "format.h"

static void pool_case(tg_op op, const int64_t *k, const int64_t *s, const int64_t *p,
                      const int64_t *d, int ceil_mode, int include_pad, int h, int w)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(3, h, w));
    bool max = op == TG_OP_MAX_POOL;
    tg_attr a[6] = {tg_attr_ints("kernel", 2, k), tg_attr_ints("stride", 2, s),
                    tg_attr_ints("padding", 2, p), tg_attr_int("ceil_mode", ceil_mode),
                    tg_attr_ints("dilation", 2, d), tg_attr_int("count_include_pad", include_pad)};
    int y = tg_graph_add_node(g, op, NULL, 1, &x, max ? 5 : 6, a);
    tg_graph_add_output(g, y);
    char what[128];
    snprintf(what, sizeof what, "%s k%ldx%ld s%ld p%ld d%ld ceil%d pad%d %dx%d",
             tg_op_name(op), (long)k[0], (long)k[1], (long)s[0], (long)p[0], (long)d[0],
             ceil_mode, include_pad, h, w);
    check_case(what, g, max);
}

static void test_pools(void)
{
    int64_t k2[] = {2, 2}, k3[] = {3, 3}, k32[] = {3, 2}, s1[] = {1, 1}, s2[] = {2, 2};
    int64_t s21[] = {2, 1}, p0[] = {0, 0}, p1[] = {1, 1}, d1[] = {1, 1}, d2[] = {2, 2};
    pool_case(TG_OP_MAX_POOL, k2, s2, p0, d1, 0, 1, 8, 8);
    pool_case(TG_OP_MAX_POOL, k3, s2, p1, d1, 0, 1, 9, 7);
    pool_case(TG_OP_MAX_POOL, k3, s2, p1, d1, 1, 1, 10, 10);
    pool_case(TG_OP_MAX_POOL, k3, s1, p1, d2, 0, 1, 9, 9);
    pool_case(TG_OP_MAX_POOL, k32, s21, p0, d1, 0, 1, 6, 5);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d1, 0, 1, 9, 7);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d1, 0, 0, 9, 7);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d1, 1, 1, 10, 10);
    pool_case(TG_OP_AVG_POOL, k2, s2, p0, d1, 0, 1, 8, 8);
    pool_case(TG_OP_AVG_POOL, k3, s1, p1, d2, 0, 0, 9, 9);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d2, 1, 1, 10, 9);
    /* rows of whole vectors and a remainder (emit_pool.c's loops run the
     * last 16 again where that is exact): SqueezeNet's 3x3 / 2 in ceil mode,
     * stride 3 with dilation (two phases read), stride 1 (no phases), and a
     * row past the emitted line (the kernel call) */
    int64_t s3[] = {3, 3}, k15[] = {1, 5};
    pool_case(TG_OP_MAX_POOL, k3, s2, p0, d1, 1, 1, 63, 63);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d1, 1, 0, 31, 37);
    pool_case(TG_OP_MAX_POOL, k3, s3, p1, d2, 1, 1, 20, 70);
    pool_case(TG_OP_AVG_POOL, k3, s3, p1, d1, 0, 1, 20, 70);
    pool_case(TG_OP_MAX_POOL, k15, s1, p0, d1, 0, 1, 5, 41);
    pool_case(TG_OP_AVG_POOL, k15, s1, p0, d1, 0, 1, 5, 41);
    pool_case(TG_OP_MAX_POOL, k3, s2, p1, d1, 0, 1, 2, 4200);
    /* rows shorter than a vector, in loops of the largest power of two in
     * their length, the last one again (SqueezeNet's 31 -> 15 and 15 -> 7:
     * 8 + 8 and 4 + 4; 13 -> 6; 5 -> 2), and the stride phases copied in one
     * loop over groups of sw input floats with each phase's leftovers after
     * (padding: phases that start and end apart; stride 3, all three read;
     * a 1x1 kernel reads one phase of two: a loop of its own) */
    int64_t k1[] = {1, 1};
    pool_case(TG_OP_MAX_POOL, k3, s2, p0, d1, 0, 1, 31, 31);
    pool_case(TG_OP_MAX_POOL, k3, s2, p0, d1, 0, 1, 15, 15);
    pool_case(TG_OP_MAX_POOL, k3, s2, p1, d1, 1, 1, 12, 11);
    pool_case(TG_OP_AVG_POOL, k3, s2, p1, d1, 0, 0, 15, 13);
    pool_case(TG_OP_AVG_POOL, k3, s2, p0, d1, 0, 1, 6, 5);
    pool_case(TG_OP_MAX_POOL, k3, s3, p0, d1, 0, 1, 17, 29);
    pool_case(TG_OP_MAX_POOL, k3, s3, p1, d1, 1, 1, 8, 16);
    pool_case(TG_OP_MAX_POOL, k1, s2, p0, d1, 0, 1, 9, 9);
}

static void test_loops(void)
{
    /* a chain with a row broadcast, a scalar and transcendental ops */
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(4, 300));
    int b = W(g, "b", 300), k = W(g, "k", 1), c = W(g, "c", 4, 1);
    int a = NODE(g, ADD, 0, NULL, x, b);
    int t = NODE(g, TANH, 0, NULL, a);
    int m = NODE(g, MUL, 0, NULL, t, k);
    int s = NODE(g, SUB, 0, NULL, m, c);          /* column broadcast */
    int e = NODE(g, EXP, 0, NULL, s);
    int y = NODE(g, MAXIMUM, 0, NULL, e, a);
    tg_graph_add_output(g, y);
    check_case("elementwise chain", g, false);

    /* a reduction over the trailing axes after elementwise ops, and a mean */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 6, 7));
    int sq = NODE(g, MUL, 0, NULL, x, x);
    tg_attr ax = tg_attr_ints("axes", 2, (int64_t[]){2, 3});
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_SUM, NULL, 1, &sq, 1, &ax));
    int r = NODE(g, RELU, 0, NULL, x);
    tg_attr ax2[2] = {tg_attr_ints("axes", 1, (int64_t[]){-1}), tg_attr_int("keepdim", 1)};
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_MEAN, NULL, 1, &r, 2, ax2));
    int n = NODE(g, NEG, 0, NULL, x);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_MAX, NULL, 1, &n, 1, ax2));
    check_case("elementwise + reductions", g, false);

    /* sums over rows longer than a loop's tile (256), not a multiple of the
     * accumulator lanes (8), and shorter than them */
    for (int len = 3; len <= 611; len += 608) {
        g = tg_graph_new();
        x = input(g, "x", DIMS(3, len));
        sq = NODE(g, MUL, 0, NULL, x, x);
        tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_MEAN, NULL, 1, &sq, 2, ax2));
        tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_SUM, NULL, 1, &x, 2, ax2));
        check_case(len == 3 ? "mean of squares, sum: rows of 3" : "mean of squares, sum: rows of 611",
                   g, false);
    }

    /* where with comparisons, and a large tensor split into blocks */
    g = tg_graph_new();
    x = input(g, "x", DIMS(70, 100));
    int zero = W(g, "z", 1);
    int lt = NODE(g, LT, 0, NULL, x, zero);
    int sg = NODE(g, SIGMOID, 0, NULL, x);
    tg_graph_add_output(g, NODE(g, WHERE, 0, NULL, lt, sg, x));
    check_case("where, comparison, sigmoid", g, false);

    /* ops the loop runs through their kernel op over a tile (kernel_call),
     * on broadcast inputs spread into tiles; well conditioned */
    g = tg_graph_new();
    x = input(g, "x", DIMS(4, 300));
    b = W(g, "b", 300);
    c = W(g, "c", 4, 1);
    int ex = NODE(g, EXP, 0, NULL, x), ec = NODE(g, EXP, 0, NULL, c);
    int u = input(g, "u", DIMS(4, 1));
    tg_graph_add_output(g, NODE(g, ADD, 0, NULL, NODE(g, SIN, 0, NULL, u), x));
    tg_graph_add_output(g, NODE(g, POW, 0, NULL, ex, b));
    tg_graph_add_output(g, NODE(g, FMOD, 0, NULL, x, ec));
    tg_graph_add_output(g, NODE(g, REMAINDER, 0, NULL, x, ec));
    tg_graph_add_output(g, NODE(g, LOG, 0, NULL, NODE(g, ADD, 0, NULL, ex, ec)));
    check_case("log, sin, pow, fmod, remainder by their kernels", g, false);

    /* values one a row, computed once a row (row_invariant): an RMS norm's
     * x * rsqrt(m + eps) with m [batch, 5, 1], and m's row value spread into
     * a tile for a vec call (exp) and a kernel call (sin) */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 300));
    u = input(g, "u", DIMS(5, 1));
    int ms = NODE(g, ADD, 0, NULL, NODE(g, MUL, 0, NULL, u, u), W(g, "eps", 1));
    tg_graph_add_output(g, NODE(g, MUL, 0, NULL, x, NODE(g, RSQRT, 0, NULL, ms)));
    int u1 = NODE(g, MUL, 0, NULL, u, W(g, "h", 1)), u2 = NODE(g, MUL, 0, NULL, u, W(g, "h2", 1));
    tg_graph_add_output(g, NODE(g, ADD, 0, NULL, x, NODE(g, EXP, 0, NULL, u1)));
    tg_graph_add_output(g, NODE(g, MUL, 0, NULL, x, NODE(g, SIN, 0, NULL, u2)));
    check_case("row values once a row: rsqrt, spread for exp and sin", g, false);

    /* T5's RMS norm, x.pow(2).mean(-1): pow by a constant 2 is x * x in the
     * loop, GPT-2's GELU's x.pow(3) x * x * x; by constants not all equal
     * (one 3 among 2s) still its kernel */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 64));
    int two = W(g, "two", 1), three = W(g, "three", 1), e23 = W(g, "e23", 64);
    ((float *)g->values[two].data)[0] = 2;
    ((float *)g->values[three].data)[0] = 3;
    for (int i = 0; i < 64; i++)
        ((float *)g->values[e23].data)[i] = i == 7 ? 3 : 2;
    tg_attr mk[2] = {tg_attr_ints("axes", 1, (int64_t[]){-1}), tg_attr_int("keepdim", 1)};
    int sq2 = NODE(g, POW, 0, NULL, x, two);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_MEAN, NULL, 1, &sq2, 2, mk));
    tg_graph_add_output(g, NODE(g, POW, 0, NULL, NODE(g, NEG, 0, NULL, x), e23));
    tg_graph_add_output(g, NODE(g, ADD, 0, NULL, x, NODE(g, POW, 0, NULL, x, three)));
    check_case("pow by a constant 2 (x * x) or 3 (x * x * x), and by 2s and a 3", g, false);
}

static void test_layers(void)
{
    /* linear + gelu epilogue, matmul on a broadcast constant, batch matmul */
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(6, 10));
    int w = W(g, "w", 12, 10), bi = W(g, "bias", 12), w2 = W(g, "w2", 12, 7);
    int l = NODE(g, LINEAR, 0, NULL, x, w, bi);
    tg_attr approx = tg_attr_string("approximate", "tanh");
    int ge = NODE(g, GELU, 1, &approx, l);
    int mm = NODE(g, MATMUL, 0, NULL, ge, w2);
    tg_attr perm = tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1});
    int tr = tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &mm, 1, &perm);
    tg_graph_add_output(g, NODE(g, MATMUL, 0, NULL, tr, mm));
    check_case("linear+gelu, matmul, batch matmul", g, false);

    /* conv + bias + batch norm + relu, then slices and a concat */
    g = tg_graph_new();
    x = input(g, "x", DIMS(3, 9, 9));
    w = W(g, "w", 4, 3, 3, 3);
    int mean = W(g, "mean", 4), var = W(g, "var", 4), gm = W(g, "gamma", 4), bt = W(g, "beta", 4);
    for (int i = 0; i < 4; i++)
        ((float *)g->values[var].data)[i] += 2;
    tg_attr ca[2] = {tg_attr_ints("padding", 2, (int64_t[]){1, 1}),
                     tg_attr_ints("stride", 2, (int64_t[]){2, 2})};
    int cv = NODE(g, CONV, 2, ca, x, w);
    int bn = NODE(g, BATCH_NORM, 0, NULL, cv, mean, var, gm, bt);
    int re = NODE(g, RELU, 0, NULL, bn);
    tg_attr sl[3] = {tg_attr_int("axis", 1), tg_attr_int("start", 1), tg_attr_int("end", 3)};
    int s1 = tg_graph_add_node(g, TG_OP_SLICE, NULL, 1, &re, 3, sl);
    tg_attr cat = tg_attr_int("axis", 1);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_CONCAT, NULL, 2, (int[]){s1, re}, 1, &cat));
    check_case("conv+bn+relu, slice, concat", g, false);
}

static void test_views(void)
{
    /* attention's input split: slice -> reshape -> permute, three times */
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(5, 24));
    for (int h = 0; h < 3; h++)
        tg_graph_add_output(g, head_split(g, x, h, 5, (int64_t[]){0, 2, 1, 3}));
    check_case("slice+reshape+permute views", g, false);

    /* the same read in place by attention (a STRIDED group), causal */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 24));
    int qkv[3];
    for (int h = 0; h < 3; h++)
        qkv[h] = head_split(g, x, h, 5, (int64_t[]){0, 2, 1, 3});
    tg_attr causal = tg_attr_int("causal", 1);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SDPA, NULL, 3, qkv, 1, &causal));
    check_case("q, k, v views read in place by sdpa", g, false);

    /* timm's: slices of one shared permute, each then reshaped (unshared,
     * then read in place) */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 24));
    qkv_split(g, x, 5, qkv);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SDPA, NULL, 3, qkv, 0, NULL));
    check_case("q, k, v slices of one permute read in place by sdpa", g, false);

    /* and its result written with the heads merged back, through the
     * permute and reshape the output projection reads */
    g = tg_graph_new();
    x = input(g, "x", DIMS(5, 24));
    for (int h = 0; h < 3; h++)
        qkv[h] = head_split(g, x, h, 5, (int64_t[]){0, 2, 1, 3});
    int a = tg_graph_add_node(g, TG_OP_SDPA, NULL, 3, qkv, 1, &causal);
    tg_attr merge = tg_attr_ints("perm", 4, (int64_t[]){0, 2, 1, 3});
    int mh = tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &a, 1, &merge);
    tg_attr flat = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(5),
                                                       tg_dim_const(8)});
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &mh, 1, &flat));
    check_case("sdpa written through the permute that merges its heads", g, false);

    /* a strided slice, then an expand of a permuted constant */
    g = tg_graph_new();
    x = input(g, "x", DIMS(7, 6));
    tg_attr sl[4] = {tg_attr_int("axis", 1), tg_attr_int("start", 1), tg_attr_int("end", 7),
                     tg_attr_int("step", 2)};
    int s = tg_graph_add_node(g, TG_OP_SLICE, NULL, 1, &x, 4, sl);
    tg_attr perm = tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1});
    int t = tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &s, 1, &perm);
    tg_graph_add_output(g, NODE(g, NEG, 0, NULL, t));
    check_case("strided slice + permute", g, false);
}

/* ---- every fusion candidate of fuse_act: each anchor, then each thing
 * that can follow it; whatever fuse_act makes of it must compile and match */

enum { A_LINEAR, A_LINEAR_W, A_MATMUL, A_CONV, A_CONV1X1, A_QLINEAR, A_NANCHOR };

/* An anchor on x (its own weights, named after k); its result. */
static int anchor(tg_graph *g, int kind, int x, int k)
{
    char name[32], bname[32];
    snprintf(name, sizeof name, "w%d", k);
    snprintf(bname, sizeof bname, "b%d", k);
    switch (kind) {
    case A_LINEAR:          /* pre-packed at -O1 */
        return NODE(g, LINEAR, 0, NULL, x, W(g, name, 16, 16), W(g, bname, 16));
    case A_LINEAR_W: {      /* a computed weight: stays linear */
        tg_shape s = tg_shape_of(2, (int64_t[]){16, 16});
        int w = tg_graph_add_input(g, name, TG_F32, &s);
        return NODE(g, LINEAR, 0, NULL, x, w);
    }
    case A_MATMUL: return NODE(g, MATMUL, 0, NULL, x, W(g, name, 16, 16));
    case A_CONV: {
        tg_attr pad = tg_attr_ints("padding", 2, (int64_t[]){1, 1});
        return NODE(g, CONV, 1, &pad, x, W(g, name, 4, 4, 3, 3), W(g, bname, 4));
    }
    case A_CONV1X1:         /* pointwise: the GEMM over pixels, epilogue in cache */
        return NODE(g, CONV, 0, NULL, x, W(g, name, 4, 4, 1, 1), W(g, bname, 4));
    default: {              /* qlinear, dynamic */
        int w = cg_const(g, name, TG_I8, (int64_t[]){16, 16}, 2, &(cg_case){.lo = -127, .hi = 128});
        tg_attr sch = tg_attr_string("scheme", "dynamic");
        int sc = cg_const(g, bname, TG_F32, (int64_t[]){16}, 1,
                          &(cg_case){.lo = 0.001, .hi = 0.01});
        return NODE(g, QLINEAR, 1, &sch, x, w, sc);
    }
    }
}

enum {
    T_ACT,                  /* one activation (each of them) */
    T_RELU_TANH, T_GELU_CLAMP, T_RESIDUAL, T_TWO_ANCHORS, T_BIAS, T_BROADCAST,
    T_ACT_RESIDUAL, T_POOL, T_RELU_POOL, T_GELU_POOL, T_OVERLAPPING_POOL, T_READ_TWICE,
    T_RESIDUAL_ACT,         /* a residual, then one activation (each of them) */
    T_NTAIL
};

static int activation(tg_graph *g, int which, int y)
{
    tg_attr a;
    switch (which) {
    case 0: return NODE(g, RELU, 0, NULL, y);
    case 1: a = tg_attr_string("approximate", "tanh"); return NODE(g, GELU, 1, &a, y);
    case 2: return NODE(g, GELU, 0, NULL, y);
    case 3: return NODE(g, SILU, 0, NULL, y);
    case 4: return NODE(g, SIGMOID, 0, NULL, y);
    case 5: return NODE(g, TANH, 0, NULL, y);
    case 6: a = tg_attr_float("alpha", 0.25); return NODE(g, LEAKY_RELU, 1, &a, y);
    case 7: a = tg_attr_float("alpha", 1); return NODE(g, ELU, 1, &a, y);
    case 8: return NODE(g, HARDSWISH, 0, NULL, y);
    case 9: return NODE(g, HARDSIGMOID, 0, NULL, y);
    default: {              /* relu6 */
        tg_attr mm[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};
        return NODE(g, CLAMP, 2, mm, y);
    }
    }
}
#define NACTIVATION 11

static int max_pool(tg_graph *g, int y, int64_t k, int64_t s)
{
    bool conv = g->values[y].shape.rank == 4;
    tg_attr pa[2] = {tg_attr_ints("kernel", conv ? 2 : 1, (int64_t[]){k, k}),
                     tg_attr_ints("stride", conv ? 2 : 1, (int64_t[]){s, s})};
    return tg_graph_add_node(g, TG_OP_MAX_POOL, NULL, 1, &y, 2, pa);
}

static tg_graph *epilogue_case(int a, int t, int act)
{
    tg_graph *g = tg_graph_new();
    bool conv = a == A_CONV || a == A_CONV1X1;
    int x = conv ? input(g, "x", DIMS(4, 8, 8)) : input(g, "x", DIMS(6, 16));
    int y = anchor(g, a, x, 0);
    int res = conv ? input(g, "r", DIMS(4, 8, 8)) : x;
    switch (t) {
    case T_ACT: y = activation(g, act, y); break;
    case T_RELU_TANH: y = NODE(g, TANH, 0, NULL, activation(g, 0, y)); break;
    case T_GELU_CLAMP: y = activation(g, 10, activation(g, 2, y)); break;
    case T_RESIDUAL: y = NODE(g, ADD, 0, NULL, res, y); break;
    case T_TWO_ANCHORS: y = NODE(g, ADD, 0, NULL, y, anchor(g, a, x, 1)); break;
    case T_BIAS:
        y = NODE(g, ADD, 0, NULL, y, conv ? W(g, "bias", 4, 1, 1) : W(g, "bias", 16));
        break;
    case T_BROADCAST: y = NODE(g, MUL, 0, NULL, y, conv ? W(g, "v", 8) : W(g, "v", 6, 1)); break;
    case T_ACT_RESIDUAL: y = NODE(g, ADD, 0, NULL, activation(g, 3, y), res); break;
    case T_RESIDUAL_ACT: y = activation(g, act, NODE(g, ADD, 0, NULL, res, y)); break;
    case T_POOL: y = max_pool(g, y, 2, 2); break;
    case T_RELU_POOL: y = max_pool(g, activation(g, 0, y), 2, 2); break;
    case T_GELU_POOL: y = max_pool(g, activation(g, 2, y), 2, 2); break;
    case T_OVERLAPPING_POOL: y = max_pool(g, activation(g, 0, y), 2, 1); break;
    default:                /* the anchor's result also an output */
        tg_graph_add_output(g, y);
        y = activation(g, 0, y);
    }
    tg_graph_add_output(g, y);
    return g;
}

static void test_epilogues(void)
{
    static const char *const anchors[] = {"linear", "linear (computed weight)", "matmul",
                                          "conv", "conv 1x1", "qlinear"};
    static const char *const tails[] = {
        "activation", "relu, tanh", "gelu, clamp", "+ residual", "+ a second anchor",
        "+ bias", "* broadcast vector", "silu + residual", "max pool", "relu, max pool",
        "gelu, max pool", "relu, overlapping max pool", "read twice",
        "+ residual, activation",
    };
    for (int a = 0; a < A_NANCHOR; a++)
        for (int t = 0; t < T_NTAIL; t++)
            for (int act = 0; act < (t == T_ACT || t == T_RESIDUAL_ACT ? NACTIVATION : 1);
                 act++) {
                char what[128];
                snprintf(what, sizeof what, "%s, %s %d", anchors[a], tails[t], act);
                check_case(what, epilogue_case(a, t, act), false);
            }
}

/* ---- concats whose operands their producers write in place (memplan's
 * parts): at batch > 1 each image's channels a stride apart */

static int conv_node(tg_graph *g, int x, const char *w, int64_t k, int64_t c, int64_t kh,
                     int64_t stride, int64_t pad, int64_t groups, bool transposed)
{
    char bname[32];
    snprintf(bname, sizeof bname, "%s.b", w);
    tg_attr a[4] = {tg_attr_ints("padding", 2, (int64_t[]){pad, pad}),
                    tg_attr_ints("stride", 2, (int64_t[]){stride, stride}),
                    tg_attr_int("groups", groups), tg_attr_int("transposed", transposed)};
    int wt = transposed ? W(g, w, c, k / groups, kh, kh) : W(g, w, k, c / groups, kh, kh);
    return NODE(g, CONV, 4, a, x, wt, W(g, bname, k));
}

static int concat(tg_graph *g, int axis, int n, const int *in)
{
    tg_attr a = tg_attr_int("axis", axis);
    return tg_graph_add_node(g, TG_OP_CONCAT, NULL, n, in, 1, &a);
}

/* GoogLeNet's inception: a 1x1 + relu, a 1x1 then 3x3 (the implicit
 * im2col), a 3x3 pool then a 1x1, beside a loop's result and the input (copied), the concat read by the
 * next block's convolution and itself an output; a concat of one holding
 * parts (not itself written in place); along the batch axis, any producer. */
static tg_graph *inception_case(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(4, 8, 8));
    int a = NODE(g, RELU, 0, NULL, conv_node(g, x, "a", 6, 4, 1, 1, 0, 1, false));
    int b = conv_node(g, conv_node(g, x, "b1", 32, 4, 1, 1, 0, 1, false), "b", 5, 32, 3, 1, 1,
                      1, false);
    tg_attr pa[3] = {tg_attr_ints("kernel", 2, (int64_t[]){3, 3}),
                     tg_attr_ints("stride", 2, (int64_t[]){1, 1}),
                     tg_attr_ints("padding", 2, (int64_t[]){1, 1})};
    int pool = tg_graph_add_node(g, TG_OP_MAX_POOL, NULL, 1, &x, 3, pa);
    int c = NODE(g, RELU, 0, NULL, conv_node(g, pool, "c", 2, 4, 1, 1, 0, 1, false));
    int e = NODE(g, EXP, 0, NULL, x);
    int cat = concat(g, 1, 5, (int[]){a, b, c, e, x});
    tg_graph_add_output(g, cat);
    int next = NODE(g, RELU, 0, NULL, conv_node(g, cat, "n", 7, 21, 3, 1, 1, 1, false));
    int d = conv_node(g, x, "d", 3, 4, 3, 1, 1, 1, false);
    tg_graph_add_output(g, concat(g, 1, 2, (int[]){next, d}));
    int h = concat(g, 1, 2, (int[]){conv_node(g, x, "h1", 2, 4, 1, 1, 0, 1, false),
                                    conv_node(g, x, "h2", 3, 4, 3, 1, 1, 1, false)});
    tg_graph_add_output(g, concat(g, 1, 2, (int[]){h, conv_node(g, x, "f", 2, 4, 1, 1, 0, 1,
                                                                 false)}));
    int t = NODE(g, TANH, 0, NULL, x);
    tg_graph_add_output(g, concat(g, 0, 2, (int[]){t, NODE(g, NEG, 0, NULL, x)}));
    return g;
}

/* Convolutions on each path as parts: depthwise, transposed, direct,
 * im2col (stride 2, 288 taps), a relu + max pool the kernel applies, one pixel an image,
 * a residual added. */
static tg_graph *conv_paths_case(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(4, 8, 8)), r = input(g, "r", DIMS(3, 8, 8));
    int dw = conv_node(g, x, "dw", 4, 4, 3, 1, 1, 4, false);
    int tr = conv_node(g, x, "tr", 3, 4, 3, 1, 1, 1, true);
    int direct = conv_node(g, x, "direct", 5, 4, 3, 1, 1, 1, false);
    int res = NODE(g, ADD, 0, NULL, conv_node(g, x, "res", 3, 4, 1, 1, 0, 1, false), r);
    tg_graph_add_output(g, concat(g, 1, 4, (int[]){dw, tr, direct, res}));
    int pooled = max_pool(g, NODE(g, RELU, 0, NULL, conv_node(g, x, "p", 4, 4, 3, 1, 1, 1,
                                                              false)), 2, 2);
    int wide = conv_node(g, x, "wide", 32, 4, 1, 1, 0, 1, false);
    int strided = conv_node(g, wide, "s", 6, 32, 3, 2, 1, 1, false);
    tg_graph_add_output(g, concat(g, 1, 2, (int[]){pooled, strided}));
    int one = input(g, "one", DIMS(8, 1, 1));
    tg_graph_add_output(g, concat(g, 1, 2, (int[]){conv_node(g, one, "o", 5, 8, 1, 1, 0, 1,
                                                               false), one}));
    return g;
}

/* How many concat operands the CPU's pipeline (-O1) writes in place in g. */
static int parts_of(const tg_graph *g)
{
    tg_graph *c = tg_graph_clone(g);
    tg_passes_opts po = {.level = 1, .target = &tg_backend_cpu};
    tg_plan *p = c ? tg_passes_run(c, &po) : NULL;
    int n = p ? 0 : -1;
    for (int v = 0; p && v < c->nvalue; v++)
        n += p->part[v] >= 0 && c->nodes[p->part[v]].in[p->part_in[v]] == v;
    tg_plan_free(p);
    tg_graph_free(c);
    return n;
}

static void test_concats(void)
{
    tg_graph *g = inception_case();
    CHECK(tg_graph_validate(g) == 0);
    CHECK(parts_of(g) == 10);   /* 3 of the first concat, 2, 2 + 1 (not h), 2 */
    check_case("concat: an inception block's", g, false);
    g = conv_paths_case();
    CHECK(tg_graph_validate(g) == 0);
    CHECK(parts_of(g) == 7);    /* 4, 2, 1 (not the input) */
    check_case("concat: each conv path as a part", g, false);
}

/* Two attentions reading one boolean mask (as every layer of BERT or ViT
 * does): prepack makes its additive form once for both. */
static void test_shared_mask(void)
{
    for (int computed = 0; computed < 2; computed++) {
        tg_graph *g = tg_graph_new();
        int x = input(g, "x", DIMS(5, 24));
        int qkv[3];
        for (int h = 0; h < 3; h++)
            qkv[h] = head_split(g, x, h, 5, (int64_t[]){0, 2, 1, 3});
        /* constant: causal; computed: random, or the diagonal, so that no
         * row is fully masked */
        uint8_t *tri = calloc(25, 1);
        for (int i = 0; i < 5; i++)
            for (int j = computed ? i : 0; j <= i; j++)
                tri[i * 5 + j] = 1;
        tg_shape ts = tg_shape_of(2, (int64_t[]){5, 5});
        int mask = tg_graph_add_const(g, "tri", TG_BOOL, &ts, tri, 25);
        if (computed) {
            int m = input(g, "m", DIMS(1, 5, 5)), zero = W(g, "zero", 1);
            mask = NODE(g, LOGICAL_OR, 0, NULL, NODE(g, GT, 0, NULL, m, zero), mask);
        }
        int a = NODE(g, SDPA, 0, NULL, qkv[0], qkv[1], qkv[2], mask);
        int b = NODE(g, SDPA, 0, NULL, qkv[1], qkv[0], qkv[2], mask);
        tg_graph_add_output(g, NODE(g, ADD, 0, NULL, a, b));
        check_case(computed ? "two sdpa, one computed bool mask" : "two sdpa, one bool constant mask",
                   g, false);
    }
}

/* nonzero over [batch, 3, 5]: its count a data symbol. */
static tg_graph *nonzero_graph(int *x, int *y)
{
    tg_graph *g = tg_graph_new();
    *x = input(g, "x", DIMS(3, 5));
    *y = NODE(g, NONZERO, 0, NULL, *x);
    return g;
}

/* Lengths the data set, on the shapes the op cases do not reach: a nonzero of
 * what a nonzero selected (its bound the first's length), a fused loop and a
 * reduction over such a length, a compress (index_select by the indices)
 * read by a matmul. */
static void test_data_lengths(void)
{
    int x, y;
    tg_attr ax0 = tg_attr_int("axis", 0), ax1 = tg_attr_int("axis", 1);
    tg_graph *g = nonzero_graph(&x, &y);
    int64_t last = 2;
    int row = tg_graph_add_const_copy(g, "row", TG_I64, &(tg_shape){0}, &last);
    int flat = NODE(g, RESHAPE, 1, (tg_attr[]){tg_attr_ints("shape", 1, (int64_t[]){-1})}, x);
    int idx = NODE(g, INDEX_SELECT, 1, &ax0, y, row);              /* [n] */
    int picked = NODE(g, INDEX_SELECT, 1, &ax0, flat, idx);         /* [n] */
    int again = NODE(g, NONZERO, 0, NULL, picked);                  /* [1, m], m <= n */
    int scaled = NODE(g, RELU, 0, NULL, NODE(g, MUL, 0, NULL, picked, W(g, "two", 1)));
    tg_graph_add_output(g, again);
    tg_graph_add_output(g, scaled);
    tg_graph_add_output(g, NODE(g, REDUCE_SUM, 0, NULL, scaled));
    check_case("nonzero of a nonzero's selection, a fused loop and a sum over its length", g, true);

    g = tg_graph_new();
    tg_shape six = tg_shape_of(1, (int64_t[]){6});
    int a = input(g, "a", DIMS(6, 4)), cond = tg_graph_add_input(g, "c", TG_BOOL, &six);
    int keep = NODE(g, RESHAPE, 1, (tg_attr[]){tg_attr_ints("shape", 1, (int64_t[]){-1})},
                    NODE(g, NONZERO, 0, NULL, cond));              /* [n] */
    int rows = NODE(g, INDEX_SELECT, 1, &ax1, a, keep);             /* [batch, n, 4] */
    tg_graph_add_output(g, NODE(g, MATMUL, 0, NULL, rows, W(g, "w", 4, 3)));
    check_case("compress of a matrix's rows, then a matmul", g, false);
}

/* The ABI of a length the data set (tgraph_model(3)): output_dims gives the
 * bound (batch x 15) and its bytes, a buffer one byte short of it is
 * TGRAPH_E_SPACE, and the run gives the length found, its bytes and the
 * interpreter's indices. */
static void test_data_abi(void)
{
    int x, y;
    tg_graph *g = nonzero_graph(&x, &y);
    tg_graph_add_output(g, y);
    cg_model cm;
    bool loaded = cg_load("nonzero ABI", &tg_backend_cpu, g, 1, &cm);
    CHECK(loaded);
    float v[2 * 15];
    int64_t found = 0;
    for (int k = 0; k < 30; k++) {
        v[k] = k % 3 ? (float)k : 0.0f;
        found += k % 3 != 0;
    }
    tgraph_tensor in = {v, TGRAPH_F32, 3, {2, 3, 5}, sizeof v}, out = {0};
    tg_tensor tin = {.data = v, .dtype = TG_F32, .rank = 3, .dims = {2, 3, 5}, .nbytes = sizeof v};
    tg_tensor ref;
    CHECK(cg_interpret(g, &tin, &ref) && ref.dims[1] == found);
    CHECK(loaded && cm.dims(cm.m, &in, 1, &out, 1) == 0 && out.rank == 2 && out.dims[0] == 3 &&
          out.dims[1] == 30 && out.nbytes == 3 * 30 * 8);
    size_t need = out.nbytes;
    unsigned char *buf = malloc(need);
    out = (tgraph_tensor){.data = buf, .nbytes = need - 1};
    CHECK(loaded && cm.run(cm.m, &in, 1, &out, 1) == TGRAPH_E_SPACE);
    out = (tgraph_tensor){.data = buf, .nbytes = need};
    CHECK(loaded && cm.run(cm.m, &in, 1, &out, 1) == 0 && out.data == buf && out.rank == 2 &&
          out.dims[1] == found && out.nbytes == (size_t)(3 * found * 8) &&
          !memcmp(buf, ref.data, out.nbytes));
    free(buf);
    tg_tensor_free(&ref);
    if (loaded)
        cg_unload(&cm);
    tg_graph_free(g);
}

/* A loop run m times (m read at run time) scanning a, a + b, ...: the scan's
 * length has no bound before the run, so output_dims gives it as -1 and 0
 * bytes; a run with no buffer hands over [m, 3] as the interpreter makes it,
 * a caller's buffer one step short is TGRAPH_E_SPACE, one that fits gets it. */
static void test_control_abi(void)
{
    tg_graph *g = tg_graph_new(), *body = tg_graph_new();
    tg_shape s = {.rank = 1, .d = {tg_dim_const(3)}}, s0 = {0};
    int in[4] = {tg_graph_add_input(g, "m", TG_I64, &s0), -1, tg_graph_add_input(g, "a", TG_F32, &s),
                 tg_graph_add_input(g, "b", TG_F32, &s)};
    int bi[4] = {tg_graph_add_input(body, "i", TG_I64, &s0), tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "acc", TG_F32, &s), tg_graph_add_input(body, "b", TG_F32, &s)};
    tg_graph_add_output(body, bi[1]);
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_ADD, "sum", 2, bi + 2, 0, NULL));
    tg_graph_add_output(body, bi[2]);
    tg_attr at[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
    int y = tg_control_add(g, TG_OP_LOOP, "loop", 4, in, 2, at);
    CHECK(y >= 0);
    tg_graph_add_output(g, g->nodes[g->nnode - 1].out[1]);
    tg_graph_free(body);
    cg_model cm;
    bool loaded = cg_load("loop ABI", &tg_backend_cpu, g, 1, &cm);
    CHECK(loaded);
    int64_t m = 5;
    float a[3] = {1, -2, 0.5f}, b[3] = {0.25f, 3, -1};
    tgraph_tensor tin[3] = {{&m, TGRAPH_I64, 0, {0}, 8}, {a, TGRAPH_F32, 1, {3}, sizeof a},
                            {b, TGRAPH_F32, 1, {3}, sizeof b}}, out = {0};
    tg_tensor rin[3] = {{.data = &m, .dtype = TG_I64, .nbytes = 8},
                        {.data = a, .dtype = TG_F32, .rank = 1, .dims = {3}, .nbytes = sizeof a},
                        {.data = b, .dtype = TG_F32, .rank = 1, .dims = {3}, .nbytes = sizeof b}};
    tg_tensor ref;
    CHECK(cg_interpret(g, rin, &ref) && ref.dims[0] == m);
    CHECK(loaded && cm.dims(cm.m, tin, 3, &out, 1) == 0 && out.rank == 2 && out.dims[0] == -1 &&
          out.dims[1] == 3 && out.nbytes == 0);
    out = (tgraph_tensor){0};
    CHECK(loaded && cm.run(cm.m, tin, 3, &out, 1) == 0 && out.rank == 2 && out.dims[0] == m &&
          out.dims[1] == 3 && out.nbytes == ref.nbytes && !memcmp(out.data, ref.data, ref.nbytes));
    free(out.data);
    unsigned char buf[5 * 3 * 4];
    out = (tgraph_tensor){.data = buf, .nbytes = sizeof buf - 12};
    CHECK(loaded && cm.run(cm.m, tin, 3, &out, 1) == TGRAPH_E_SPACE);
    out = (tgraph_tensor){.data = buf, .nbytes = sizeof buf};
    CHECK(loaded && cm.run(cm.m, tin, 3, &out, 1) == 0 && out.data == buf && out.dims[0] == m &&
          !memcmp(buf, ref.data, ref.nbytes));
    tg_tensor_free(&ref);
    if (loaded)
        cg_unload(&cm);
    tg_graph_free(g);
}

/* tcompile refuses a dim the data set broadcast against another (the run
 * decides whether it is 1), naming the node. */
static void test_data_broadcast(void)
{
    int x, y;
    tg_graph *g = nonzero_graph(&x, &y);
    int64_t five[5] = {0};
    tg_shape s15 = tg_shape_of(2, (int64_t[]){1, 5});
    int c = tg_graph_add_const_copy(g, "five", TG_I64, &s15, five);
    int z = NODE(g, ADD, 0, NULL, y, c);                    /* [3, n] with [1, 5]: [3, 5] */
    CHECK(z >= 0 && tg_graph_add_output(g, z) >= 0);
    char path[] = "/tmp/test_codegen.XXXXXX";
    close(mkstemp(path));
    CHECK(cg_compile(&tg_backend_cpu, g, 1, path) < 0 &&
          strstr(tg_errmsg(), "(add): ") &&
          strstr(tg_errmsg(), "a dim the data sets broadcast against another; tcompile needs them equal"));
    unlink(path);
    tg_graph_free(g);
}

/* A run whose length makes a later dim negative (a slice from 2 of fewer
 * indices) fails naming the node, as the interpreter does. */
static void test_data_negative(void)
{
    int x, y;
    tg_graph *g = nonzero_graph(&x, &y);
    tg_attr a[2] = {tg_attr_int("axis", 1), tg_attr_int("start", 2)};
    tg_graph_add_output(g, NODE(g, SLICE, 2, a, y));
    cg_model cm;
    bool loaded = cg_load("nonzero then slice", &tg_backend_cpu, g, 1, &cm);
    CHECK(loaded);
    float v[15] = {[7] = 1};
    tgraph_tensor in = {v, TGRAPH_F32, 3, {1, 3, 5}, sizeof v}, out = {0};
    tg_tensor tin = {.data = v, .dtype = TG_F32, .rank = 3, .dims = {1, 3, 5}, .nbytes = sizeof v};
    tg_tensor ref;
    CHECK(!cg_interpret(g, &tin, &ref));
    const char *(*last_error)(void) = loaded ? dlsym(cm.dl, "tgraph_last_error") : NULL;
    CHECK(loaded && cm.run(cm.m, &in, 1, &out, 1) == TGRAPH_E_DATA && last_error &&
          !strcmp(last_error(), "node 'nonzero_0' (nonzero): length 1 makes a dim negative"));
    if (loaded)
        cg_unload(&cm);
    tg_graph_free(g);
}

/* A data op's output as a file declares it (not inferred): tcompile takes it
 * only as the op makes it, its length's range up to the most it can make. */
static void test_data_declared(void)
{
    for (int k = 0; k < 2; k++) {
        tg_graph *g = tg_graph_new();
        int x = input(g, "x", DIMS(3, 5)), d = tg_graph_add_data_symbol(g, 0, k ? 1000 : 4);
        tg_shape s = {.rank = 2, .d = {tg_dim_const(k ? 2 : 3), tg_dim_sym(d)}};
        int y = tg_graph_add_dynamic_node(g, TG_OP_NONZERO, "nz", 1, &x, 0, NULL, TG_I64, &s);
        CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0);
        char path[] = "/tmp/test_codegen.XXXXXX";
        close(mkstemp(path));
        bool refused = cg_compile(&tg_backend_cpu, g, 1, path) < 0 &&
                       strstr(tg_errmsg(), k ? "node 'nz' (nonzero): its output is declared i64 "
                                               "[2, _d0], the op makes i64 [3, n] with n a data "
                                               "symbol"
                                             : "node 'nz' (nonzero): data symbol _d0 ranges up to "
                                               "4, the op can make 240");
        CHECK(refused);
        if (!refused)
            fprintf(stderr, "declared output %d: %s\n", k, tg_errmsg());
        unlink(path);
        tg_graph_free(g);
    }
}

/* A graph of TG_MAX_SYMS symbols: the batch and a data symbol for each of
 * 15 nonzero nodes (each one's length its own), written and read back, run
 * interpreted and compiled. */
static void test_data_symbols_max(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(4));
    for (int k = 1; k < TG_MAX_SYMS; k++)
        tg_graph_add_output(g, NODE(g, NONZERO, 0, NULL, k % 2 ? x : NODE(g, RELU, 0, NULL, x)));
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(f && tg_graph_write(g, f) == 0);
    if (f)
        fclose(f);
    tg_graph *r = buf ? tg_graph_read_mem((const uint8_t *)buf, len) : NULL;
    CHECK(g->nsym == TG_MAX_SYMS && r && r->nsym == TG_MAX_SYMS && r->sym[TG_MAX_SYMS - 1].data);
    free(buf);
    check_case("16 symbols: the batch and 15 nonzero lengths", r ? r : g, true);
    if (r)
        tg_graph_free(g);
}

int main(void)
{
    if (!cg_start())
        return 77;
    test_pools();
    test_loops();
    test_layers();
    test_views();
    test_shared_mask();
    test_concats();
    test_epilogues();
    test_data_lengths();
    test_data_abi();
    test_data_broadcast();
    test_data_negative();
    test_data_declared();
    test_control_abi();
    test_data_symbols_max();
    return unit_report();
}
