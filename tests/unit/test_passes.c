/* Graph and plan passes (lib/passes): each pass on small graphs built here,
 * checking what it changed and, for graph passes, that the interpreter gives
 * the same outputs before and after on fresh random inputs (float32: within
 * 1e-5 absolute + 1e-5 relative). */
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "backend/cpu/cpu.h"
#include "exec/exec.h"
#include "passes/passes.h"
#include "randgraph.h"
#include "unit.h"


#define NODE(g, op, name, ...) \
    tg_graph_add_node(g, TG_OP_##op, name, sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                      (int[]){__VA_ARGS__}, 0, NULL)

/* A plan the CPU's grouping rules bound, as tcompile's pipeline makes it. */
static tg_plan *cpu_plan(const tg_graph *g)
{
    tg_plan *p = tg_plan_new(g);
    if (p)
        p->rules = tg_backend_cpu.groups;
    return p;
}

/* x: f32 [batch, dims...] with batch a symbol in 1..8. */
static int input(tg_graph *g, int rank, const int64_t *dims)
{
    int b = tg_graph_add_symbol(g, "batch", 1, 8);
    tg_shape s = {.rank = rank + 1, .d = {tg_dim_sym(b)}};
    for (int i = 0; i < rank; i++)
        s.d[i + 1] = tg_dim_const(dims[i]);
    return tg_graph_add_input(g, "x", TG_F32, &s);
}

static int count_op(const tg_graph *g, tg_op op)
{
    int n = 0;
    for (int i = 0; i < g->nnode; i++)
        n += g->nodes[i].op == op;
    return n;
}

/* Apply pass to g and check the outputs did not change; returns its result. */
static int same_after(tg_graph *g, int (*pass)(tg_graph *))
{
    tg_tensor a[4] = {{0}}, b[4] = {{0}};
    uint64_t seed = unit_rng ^ 0x9e3779b97f4a7c15u;
    CHECK(run_random(g, seed, 1, a) == 0);
    int r = pass(g);
    CHECK(r >= 0);
    CHECK(tg_graph_validate(g) == 0);
    CHECK(run_random(g, seed, 1, b) == 0);
    for (int i = 0; i < g->noutput; i++) {
        CHECK(a[i].nbytes == b[i].nbytes);
        double err = 0;
        for (size_t k = 0; k < a[i].nbytes / 4 && k < b[i].nbytes / 4; k++) {
            double x = ((float *)a[i].data)[k], y = ((float *)b[i].data)[k];
            double e = fabs(x - y) - 1e-5 * fabs(x);
            err = e > err ? e : err;
        }
        CHECK_NEAR(err, 0, 1e-5);
        tg_tensor_free(&a[i]);
        tg_tensor_free(&b[i]);
    }
    return r;
}

static void test_dce(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 1, (int64_t[]){4});
    int unused = W(g, "unused", 4);
    int r = NODE(g, RELU, "r", x);
    NODE(g, EXP, "dead", r);                     /* nothing reads it */
    NODE(g, ADD, "dead2", x, unused);
    tg_graph_add_output(g, r);
    CHECK(same_after(g, tg_pass_dce) == 3);      /* two nodes and a constant */
    CHECK(g->nnode == 1 && tg_graph_find_value(g, "unused") < 0);
    tg_graph_free(g);
}

static void test_fold(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){4, 3});
    int w = W(g, "w", 3, 4);
    tg_attr perm = tg_attr_ints("perm", 2, (int64_t[]){1, 0});
    int wt = tg_graph_add_node(g, TG_OP_PERMUTE, "wt", 1, &w, 1, &perm);
    int e = NODE(g, EXP, "e", wt);               /* constant too */
    int y = NODE(g, MUL, "y", x, e);
    tg_graph_add_output(g, y);
    CHECK(same_after(g, tg_pass_fold) == 2);
    CHECK(g->nnode == 1 && count_op(g, TG_OP_MUL) == 1);
    int c = tg_graph_find_value(g, "e");         /* the result keeps its name */
    CHECK(c >= 0 && g->values[c].kind == TG_VALUE_CONST);
    tg_graph_free(g);

    /* a result far larger than its inputs stays a node */
    g = tg_graph_new();
    x = input(g, 1, (int64_t[]){4});
    int s = W(g, "s", 1);
    tg_attr shape = tg_attr_dims("shape", 2, (tg_dim[]){tg_dim_const(512), tg_dim_const(512)});
    int big = tg_graph_add_node(g, TG_OP_EXPAND, "big", 1, &s, 1, &shape);
    int sum = tg_graph_add_node(g, TG_OP_REDUCE_SUM, "sum", 1, &big, 0, NULL);
    tg_graph_add_output(g, NODE(g, ADD, "y", x, sum));
    CHECK(tg_pass_fold(g) == 0);
    CHECK(count_op(g, TG_OP_EXPAND) == 1);
    tg_graph_free(g);
}

static void test_cse(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 1, (int64_t[]){6});
    int a = W(g, "a", 6);
    int b = tg_graph_add_const_copy(g, "b", TG_F32, &g->values[a].shape, g->values[a].data);
    int r1 = NODE(g, ADD, "r1", x, a), r2 = NODE(g, ADD, "r2", x, b);   /* equal once a is b */
    int t1 = NODE(g, TANH, "t1", r1), t2 = NODE(g, TANH, "t2", r2);
    tg_graph_add_output(g, NODE(g, MUL, "y", t1, t2));
    CHECK(same_after(g, tg_pass_cse) == 3);      /* one constant, two nodes */
    CHECK(count_op(g, TG_OP_ADD) == 1 && count_op(g, TG_OP_TANH) == 1);
    tg_graph_free(g);
}

static void test_bn_fold(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 3, (int64_t[]){3, 6, 6});
    int w = W(g, "w", 5, 3, 3, 3), b = W(g, "b", 5);
    int mean = W(g, "mean", 5), var = W(g, "var", 5), gm = W(g, "gamma", 5), bt = W(g, "beta", 5);
    float *v = g->values[var].data;
    for (int i = 0; i < 5; i++)
        v[i] = v[i] * v[i] + 0.1f;               /* variances are positive */
    int c = NODE(g, CONV, "conv", x, w, b);
    int n = NODE(g, BATCH_NORM, "bn", c, mean, var, gm, bt);
    tg_graph_add_output(g, NODE(g, RELU, "y", n));
    CHECK(same_after(g, tg_pass_bn_fold) == 1);
    CHECK(count_op(g, TG_OP_BATCH_NORM) == 0 && count_op(g, TG_OP_CONV) == 1);
    tg_graph_free(g);

    /* a conv result that something else reads keeps its batch norm */
    g = tg_graph_new();
    x = input(g, 1, (int64_t[]){4});
    w = W(g, "w", 5, 4);
    mean = W(g, "mean", 5), var = W(g, "var", 5);
    int l = NODE(g, LINEAR, "lin", x, w);
    n = NODE(g, BATCH_NORM, "bn", l, mean, var);
    tg_graph_add_output(g, NODE(g, ADD, "y", n, l));
    CHECK(tg_pass_bn_fold(g) == 0);
    tg_graph_free(g);
}

static void test_fuse_bias(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 1, (int64_t[]){4});
    int w = W(g, "w", 5, 4), b = W(g, "b", 1, 5);
    int l = NODE(g, LINEAR, "lin", x, w);
    int y = NODE(g, ADD, "y", l, b);
    tg_graph_add_output(g, y);
    CHECK(same_after(g, tg_pass_fuse_bias) == 1);
    CHECK(g->nnode == 1 && g->nodes[0].nin == 3);
    CHECK(strcmp(g->values[g->outputs[0]].name, "y") == 0);   /* the output keeps its name */
    tg_graph_free(g);
}

static void test_layout(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){4, 6});
    tg_attr p1 = tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1});
    int a = tg_graph_add_node(g, TG_OP_PERMUTE, "p1", 1, &x, 1, &p1);
    int b = tg_graph_add_node(g, TG_OP_PERMUTE, "p2", 1, &a, 1, &p1);   /* back again */
    int w = W(g, "w", 6, 5);
    tg_attr shape = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(6),
                                                        tg_dim_const(5)});
    int e = tg_graph_add_node(g, TG_OP_EXPAND, "e", 1, &w, 1, &shape);
    int m = NODE(g, MATMUL, "mm", b, e);
    tg_graph_add_output(g, m);
    CHECK(same_after(g, tg_pass_layout) >= 2);
    CHECK(tg_pass_dce(g) >= 1);                  /* the first permute, now unread */
    CHECK(count_op(g, TG_OP_PERMUTE) == 0 && count_op(g, TG_OP_MATMUL) == 0);
    CHECK(count_op(g, TG_OP_LINEAR) == 1);
    tg_graph_free(g);

    /* a pad by nothing is its input; one that pads a side stays */
    g = tg_graph_new();
    x = input(g, 2, (int64_t[]){4, 6});
    tg_attr none[2] = {tg_attr_ints("pads", 6, (int64_t[]){0, 0, 0, 0, 0, 0}),
                       tg_attr_float("value", 0)};
    tg_attr one[2] = {tg_attr_ints("pads", 6, (int64_t[]){0, 0, 1, 0, 0, 0}),
                      tg_attr_float("value", 0)};
    a = tg_graph_add_node(g, TG_OP_PAD, "p0", 1, &x, 2, none);
    b = tg_graph_add_node(g, TG_OP_PAD, "p1", 1, &a, 2, one);
    tg_graph_add_output(g, NODE(g, RELU, "y", b));
    tg_graph_add_output(g, a);                   /* an output itself: x is now */
    CHECK(same_after(g, tg_pass_layout) == 1);
    CHECK(count_op(g, TG_OP_PAD) == 1);
    CHECK(g->values[g->outputs[1]].kind == TG_VALUE_INPUT);
    tg_graph_free(g);
}

static void test_prepack(void)
{
    tg_graph *g = tg_graph_new();
    int64_t d[] = {2, 5, 4};
    int x = input(g, 3, d);
    bool *mask = malloc(25);
    for (int i = 0; i < 25; i++)
        mask[i] = i % 5 <= i / 5;                /* causal */
    tg_shape ms = tg_shape_of(2, (int64_t[]){5, 5});
    int m = tg_graph_add_const(g, "mask", TG_BOOL, &ms, mask, 25);
    tg_graph_add_output(g, NODE(g, SDPA, "att", x, x, x, m));
    CHECK(same_after(g, tg_cpu_prepack) == 1);
    const tg_node *n = &g->nodes[0];
    CHECK(n->op == TG_OP_SDPA && g->values[n->in[3]].dtype == TG_F32);
    tg_graph_free(g);
}

/* Linears on constant float weights, one with a bias and one without, two
 * sharing a weight (tied): each becomes a linear_packed, the shared weight
 * is packed once. Odd sizes leave the last 16-column panel partial. */
static void test_prepack_linear(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){3, 19});
    int w = W(g, "w", 21, 19), w2 = W(g, "w2", 19, 21);
    int bs = W(g, "b", 21);
    int l = NODE(g, LINEAR, "lin", x, w, bs);
    int l2 = NODE(g, LINEAR, "lin2", l, w2);
    tg_graph_add_output(g, NODE(g, LINEAR, "lin3", l2, w));
    CHECK(same_after(g, tg_cpu_prepack) == 3);
    CHECK(count_op(g, TG_OP_LINEAR) == 0 && count_op(g, TG_OP_LINEAR_PACKED) == 3);
    CHECK(tg_pass_dce(g) >= 0);
    CHECK(tg_graph_find_value(g, "w.packed") >= 0 && tg_graph_find_value(g, "w") < 0);
    const tg_value *p = &g->values[tg_graph_find_value(g, "w.packed")];
    int64_t dims[3];
    CHECK(tg_shape_is_const(&p->shape, dims) && dims[0] == 2 && dims[1] == 19 && dims[2] == 16);
    tg_graph_free(g);
}

static void test_fuse_act(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 1, (int64_t[]){4});
    int w = W(g, "w", 5, 4), w2 = W(g, "w2", 5, 5);
    int l = NODE(g, LINEAR, "lin", x, w);
    int r = NODE(g, RELU, "r", l);
    int l2 = NODE(g, LINEAR, "lin2", r, w2);     /* read twice: no fusion */
    int t = NODE(g, TANH, "t", l2);
    tg_graph_add_output(g, NODE(g, ADD, "y", t, l2));
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_act(g, p) == 1);
    CHECK(p->root[0] == 1 && p->kind[1] == TG_GROUP_EPILOGUE);
    CHECK(p->root[2] == 2 && p->kind[2] == TG_GROUP_SINGLE);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* conv -> relu -> max pool whose windows tile the result: one group the conv
 * kernel runs; a pool with overlapping windows (stride 1) stays its own */
static void test_fuse_conv_pool(int64_t stride)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 3, (int64_t[]){3, 8, 8});
    int w = W(g, "w", 4, 3, 3, 3), b = W(g, "b", 4);
    tg_attr pad = tg_attr_ints("padding", 2, (int64_t[]){1, 1});
    int c = tg_graph_add_node(g, TG_OP_CONV, "conv", 3, (int[]){x, w, b}, 1, &pad);
    int r = NODE(g, RELU, "relu", c);
    tg_attr pa[2] = {tg_attr_ints("kernel", 2, (int64_t[]){2, 2}),
                     tg_attr_ints("stride", 2, (int64_t[]){stride, stride})};
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_MAX_POOL, "pool", 1, &r, 2, pa));
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_act(g, p) == 1);
    int last = stride == 2 ? 2 : 1;
    CHECK(p->root[0] == last && p->root[1] == last && p->kind[last] == TG_GROUP_EPILOGUE);
    CHECK(p->root[2] == 2);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* x + proj(x), proj pre-packed: the GEMM adds the residual (one group); an
 * add that broadcasts (a per-column vector) stays a loop of its own */
static void test_fuse_residual(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){3, 16});
    int w = W(g, "w", 16, 16), w2 = W(g, "w2", 16, 16), v = W(g, "v", 16);
    int l = NODE(g, LINEAR, "proj", x, w);
    int a = NODE(g, ADD, "res", x, l);
    int l2 = NODE(g, LINEAR, "proj2", a, w2);
    tg_graph_add_output(g, NODE(g, ADD, "bcast", l2, v));
    CHECK(tg_cpu_prepack(g) == 2 && tg_pass_dce(g) >= 0);
    int lin = -1, add = -1, bc = -1;
    for (int n = 0; n < g->nnode; n++) {
        const char *name = g->nodes[n].name;
        lin = !strcmp(name, "proj") ? n : lin;
        add = !strcmp(name, "res") ? n : add;
        bc = !strcmp(name, "bcast") ? n : bc;
    }
    CHECK(lin >= 0 && add >= 0 && bc >= 0 && g->nodes[lin].op == TG_OP_LINEAR_PACKED);
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_act(g, p) == 1);
    CHECK(p->root[lin] == add && p->kind[add] == TG_GROUP_EPILOGUE);
    CHECK(p->root[bc] == bc && p->kind[bc] == TG_GROUP_SINGLE);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* x + conv(x), then relu: a pointwise conv adds the residual in its GEMM and
 * applies the relu after it (one group, rooted at the relu; a tanh after the
 * add stays out); a 3x3 one leaves the add to join the loop after it */
static void test_fuse_conv_residual(void)
{
    for (int k = 1; k <= 3; k += 2)
        for (int tanh = 0; tanh < 2; tanh++) {
            tg_graph *g = tg_graph_new();
            int x = input(g, 3, (int64_t[]){8, 5, 5});
            tg_attr pad = tg_attr_ints("padding", 2, (int64_t[]){k / 2, k / 2});
            int in[2] = {x, W(g, "w", 8, 8, k, k)};
            int c = tg_graph_add_node(g, TG_OP_CONV, "conv", 2, in, 1, &pad);
            int a = NODE(g, ADD, "res", x, c);
            int r = tanh ? NODE(g, TANH, "tanh", a) : NODE(g, RELU, "relu", a);
            tg_graph_add_output(g, r);
            tg_plan *p = cpu_plan(g);
            int cn = g->values[c].producer, an = g->values[a].producer;
            int rn = g->values[r].producer, root = tanh ? an : rn;
            CHECK(tg_pass_fuse_act(g, p) == (k == 1));
            CHECK(k == 1 ? p->root[cn] == root && p->root[an] == root &&
                               p->kind[root] == TG_GROUP_EPILOGUE
                         : p->root[cn] == cn && p->kind[an] == TG_GROUP_SINGLE);
            CHECK(!tanh || p->root[rn] == rn);
            tg_plan_free(p);
            tg_graph_free(g);
        }
}

static bool no_activation(const tg_graph *g, const tg_node *nd)
{
    return false;
}

/* The plan passes form only the groups the target's rules allow: none
 * without rules, no loop without loops, an epilogue without its pool, no
 * epilogue of an activation the target's epilogues refuse. */
static void test_group_rules(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 3, (int64_t[]){3, 8, 8});
    int w = W(g, "w", 4, 3, 3, 3);
    int c = NODE(g, CONV, "conv", x, w);
    int r = NODE(g, RELU, "relu", c);
    tg_attr pa = tg_attr_ints("kernel", 2, (int64_t[]){2, 2});
    int mp = tg_graph_add_node(g, TG_OP_MAX_POOL, "pool", 1, &r, 1, &pa);
    tg_graph_add_output(g, NODE(g, EXP, "e", NODE(g, NEG, "n", mp)));
    tg_group_rules rules = *tg_backend_cpu.groups;
    tg_plan *p = tg_plan_new(g);
    CHECK(tg_pass_fuse_act(g, p) == 0 && tg_pass_fuse_elementwise(g, p) == 0 &&
          tg_pass_fuse_views(g, p) == 0);
    tg_plan_free(p);
    rules.loop = rules.conv_pool = false;
    p = tg_plan_new(g);
    p->rules = &rules;
    CHECK(tg_pass_fuse_act(g, p) == 1 && tg_pass_fuse_elementwise(g, p) == 0);
    CHECK(p->root[0] == 1 && p->root[1] == 1 && p->root[2] == 2 && p->root[3] == 3);
    tg_plan_free(p);
    rules.epilogue_supports = no_activation;
    p = tg_plan_new(g);
    p->rules = &rules;
    CHECK(tg_pass_fuse_act(g, p) == 0 && p->root[0] == 0 && p->kind[1] == TG_GROUP_SINGLE);
    tg_plan_free(p);
    p = cpu_plan(g);
    CHECK(tg_pass_fuse_act(g, p) == 1 && tg_pass_fuse_elementwise(g, p) == 1);
    CHECK(p->root[0] == 2 && p->root[1] == 2 && p->root[3] == 4);
    tg_plan_free(p);
    tg_graph_free(g);
}

static void test_fuse_elementwise(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){4, 8});
    int b = W(g, "b", 8), k = W(g, "k", 1);
    int a = NODE(g, ADD, "a", x, b);             /* broadcast along the rows */
    int t = NODE(g, TANH, "t", a);
    int m = NODE(g, MUL, "m", t, k);
    int e = NODE(g, EXP, "e", m);
    tg_attr ax = tg_attr_ints("axes", 1, (int64_t[]){-1});
    int s = tg_graph_add_node(g, TG_OP_REDUCE_SUM, "s", 1, &e, 1, &ax);
    tg_graph_add_output(g, s);
    tg_graph_add_output(g, m);                   /* m is an output: the loop stops there */
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_elementwise(g, p) == 2);
    CHECK(p->kind[4] == TG_GROUP_LOOP && p->root[3] == 4);            /* exp + sum */
    CHECK(p->kind[2] == TG_GROUP_LOOP && p->root[0] == 2 && p->root[1] == 2);
    tg_loop l;
    CHECK(tg_loop_analyze(g, p, 2, &l) == 0);
    CHECK(l.nin == 3 && l.rank == 2 && !l.reduce);
    CHECK(tg_loop_analyze(g, p, 4, &l) == 0 && l.reduce && l.nin == 1);
    tg_plan_free(p);
    tg_graph_free(g);
}

static void test_fuse_views(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){4, 24});           /* [batch, 4, 24] */
    tg_attr sl[3] = {tg_attr_int("axis", 2), tg_attr_int("start", 8), tg_attr_int("end", 16)};
    int s = tg_graph_add_node(g, TG_OP_SLICE, "s", 1, &x, 3, sl);
    tg_attr shape = tg_attr_dims("shape", 4, (tg_dim[]){tg_dim_sym(0), tg_dim_const(4),
                                                        tg_dim_const(2), tg_dim_const(4)});
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, "r", 1, &s, 1, &shape);
    tg_attr perm = tg_attr_ints("perm", 4, (int64_t[]){0, 2, 1, 3});
    int t = tg_graph_add_node(g, TG_OP_PERMUTE, "t", 1, &r, 1, &perm);
    tg_graph_add_output(g, t);
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_views(g, p) == 1);
    CHECK(p->kind[2] == TG_GROUP_VIEW && p->root[0] == 2 && p->root[1] == 2);
    tg_view w;
    CHECK(tg_view_analyze(g, p, 2, &w) == 0);
    CHECK(w.base == x && w.rank == 4 && tg_dim_eq(w.offset, tg_dim_const(8)));
    int64_t want[4] = {96, 4, 24, 1}, v;           /* [batch, 2, 4, 4] of the [batch, 4, 24] input */
    for (int i = 0; i < 4; i++)
        CHECK(tg_dim_is_const(w.strides[i], &v) && v == want[i]);
    tg_plan_free(p);
    tg_graph_free(g);

    /* a reshape that would merge non-adjacent strides stops the chain there:
     * the slice takes the reshape, the permute stays a copy of its own */
    g = tg_graph_new();
    x = input(g, 2, (int64_t[]){4, 6});
    tg_attr p2 = tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1});
    t = tg_graph_add_node(g, TG_OP_PERMUTE, "t", 1, &x, 1, &p2);
    tg_attr flat = tg_attr_dims("shape", 2, (tg_dim[]){tg_dim_sym(0), tg_dim_const(24)});
    r = tg_graph_add_node(g, TG_OP_RESHAPE, "r", 1, &t, 1, &flat);
    tg_attr sl2[3] = {tg_attr_int("axis", 1), tg_attr_int("start", 2), tg_attr_int("end", 20)};
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SLICE, "s", 1, &r, 3, sl2));
    p = cpu_plan(g);
    CHECK(tg_pass_fuse_views(g, p) == 1);
    CHECK(p->root[0] == 0 && p->root[1] == 2 && p->kind[0] == TG_GROUP_SINGLE);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* q, k, v: a [batch, 4, 24] tensor's columns 0-8, 8-16, 16-24 as [batch, 2,
 * 4, 4] (two heads), read in place by the sdpa; unless q_rows_contiguous, the
 * view of q also swaps its last two dims, so its rows are not contiguous and
 * it stays a copy */
static void test_views_into_sdpa(bool q_rows_contiguous)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 2, (int64_t[]){4, 24}), qkv[3], chain_end[3];
    for (int i = 0; i < 3; i++) {
        qkv[i] = head_split(g, x, i, 4, i == 0 && !q_rows_contiguous ? (int64_t[]){0, 2, 3, 1}
                                                                      : (int64_t[]){0, 2, 1, 3});
        chain_end[i] = g->nnode - 1;
    }
    int a = tg_graph_add_node(g, TG_OP_SDPA, "a", 3, qkv, 0, NULL), sdpa = g->nnode - 1;
    tg_graph_add_output(g, a);
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_views(g, p) == (q_rows_contiguous ? 6 : 5));
    CHECK(p->kind[sdpa] == TG_GROUP_STRIDED);
    CHECK(p->root[chain_end[1]] == sdpa && p->root[chain_end[1] - 2] == sdpa);
    CHECK(p->root[chain_end[0]] == (q_rows_contiguous ? sdpa : chain_end[0]));
    tg_view w;
    CHECK(tg_view_analyze(g, p, chain_end[2], &w) == 0);
    int64_t want[4] = {96, 4, 24, 1}, v;          /* v: [batch, 2, 4, 4] of x, from column 16 */
    CHECK(w.base == x && w.rank == 4 && tg_dim_eq(w.offset, tg_dim_const(16)));
    for (int i = 0; i < 4; i++)
        CHECK(tg_dim_is_const(w.strides[i], &v) && v == want[i]);
    /* the chains read in place own no memory; x lives until the sdpa runs */
    CHECK(tg_pass_memplan(g, p) >= 0);
    CHECK(p->slot[qkv[1]] == -1 && p->slot[qkv[2]] == -1);
    CHECK((p->slot[qkv[0]] == -1) == q_rows_contiguous);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* The permute that merges attention's heads back (0, 2, 1, 3) takes the
 * sdpa (and the views it reads in place) into its STRIDED group: the sdpa's
 * result then owns no memory. Not a permute that moves the last axis, nor
 * when the sdpa's result has another reader (here: it is an output too). */
static void test_sdpa_into_permute(void)
{
    static const int64_t merge[] = {0, 2, 1, 3}, swap_last[] = {0, 1, 3, 2};
    for (int c = 0; c < 3; c++) {
        tg_graph *g = tg_graph_new();
        int x = input(g, 2, (int64_t[]){4, 24}), qkv[3];
        for (int i = 0; i < 3; i++)
            qkv[i] = head_split(g, x, i, 4, (int64_t[]){0, 2, 1, 3});
        int a = tg_graph_add_node(g, TG_OP_SDPA, "a", 3, qkv, 0, NULL), sdpa = g->nnode - 1;
        tg_attr perm = tg_attr_ints("perm", 4, c == 1 ? swap_last : merge);
        tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_PERMUTE, "t", 1, &a, 1, &perm));
        if (c == 2)
            tg_graph_add_output(g, a);
        int t = g->nnode - 1;
        tg_plan *p = cpu_plan(g);
        tg_pass_fuse_views(g, p);
        bool fused = c == 0;
        int q_chain = g->values[qkv[0]].producer;
        CHECK((p->root[sdpa] == t) == fused && (p->root[q_chain] == t) == fused);
        CHECK(p->kind[t] == (fused ? TG_GROUP_STRIDED : TG_GROUP_SINGLE));
        CHECK(p->kind[sdpa] == (fused ? TG_GROUP_SINGLE : TG_GROUP_STRIDED));
        CHECK(tg_strided_kernel(g, t) == sdpa && tg_strided_kernel(g, sdpa) == sdpa);
        CHECK(tg_pass_memplan(g, p) >= 0);
        CHECK((p->slot[a] == -1 && p->output[a] == -1) == fused);
        tg_plan_free(p);
        tg_graph_free(g);
    }
}

/* timm's q, k, v: one permute that three slices read (qkv_split). Unshared,
 * each slice has a permute and a reshape of its own (the reshapes after the
 * slices are one reader's already), and all three chains, with the reshape
 * after each slice, are read in place by the sdpa: x lives until it runs,
 * no chain owns memory. Not unshared: a permute that a graph output reads
 * too, or that a non-movement node reads. */
static void test_unshare_views(void)
{
    for (int c = 0; c < 4; c++) {
        tg_graph *g = tg_graph_new();
        int x = input(g, 2, (int64_t[]){4, 24}), qkv[3];
        qkv_split(g, x, 4, qkv);
        int t = g->nodes[1].out[0];
        if (c == 3) {   /* a clone's name taken already: it gets one made up */
            char taken[256];
            snprintf(taken, sizeof taken, "%s/2", g->nodes[1].name);
            tg_graph_add_output(g, NODE(g, RELU, taken, x));
        }
        if (c == 1)
            tg_graph_add_output(g, t);
        if (c == 2)
            tg_graph_add_output(g, NODE(g, RELU, "r", t));
        tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SDPA, "a", 3, qkv, 0, NULL));
        int before = g->nnode;
        bool unshared = c == 0 || c == 3;
        CHECK(tg_pass_unshare_views(g) == (unshared ? 4 : 0));
        CHECK(g->nnode == before + (unshared ? 4 : 0) && tg_graph_validate(g) == 0);
        CHECK(count_op(g, TG_OP_PERMUTE) == (unshared ? 3 : 1));
        tg_plan *p = cpu_plan(g);
        tg_pass_fuse_views(g, p);
        int sdpa = tg_graph_find_node(g, "a");
        CHECK(p->kind[sdpa] == (unshared ? TG_GROUP_STRIDED : TG_GROUP_SINGLE));
        for (int n = 0; unshared && n < sdpa; n++)
            CHECK(p->root[n] == sdpa || g->nodes[n].op == TG_OP_RELU);
        CHECK(tg_pass_memplan(g, p) >= 0);
        for (int n = 0; unshared && n < sdpa; n++)
            CHECK(p->slot[g->nodes[n].out[0]] == -1 || g->nodes[n].op == TG_OP_RELU);
        tg_plan_free(p);
        tg_graph_free(g);
    }
}

static void test_memplan(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 1, (int64_t[]){16});
    int v = x;
    for (int i = 0; i < 6; i++)
        v = i % 2 ? NODE(g, EXP, NULL, v) : NODE(g, NEG, NULL, v);
    tg_attr shape = tg_attr_dims("shape", 3, (tg_dim[]){tg_dim_sym(0), tg_dim_const(4),
                                                        tg_dim_const(4)});
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, "view", 1, &v, 1, &shape);
    tg_graph_add_output(g, r);
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_memplan(g, p) == 2);           /* a chain needs two slots, not five */
    CHECK(p->alias[r] == v && p->output[v] == 0 && p->slot[v] == -1);
    CHECK(p->slot[x] == -1);
    tg_plan_free(p);
    tg_graph_free(g);
}

/* Concats written in place: at batch > 1 (a symbol) a convolution's result
 * (alone, or under the relu its kernel applies) is a part, at its channel
 * offset, rows a stride apart; a loop's result, the input and an operand
 * read twice are copied; along the batch axis any producer's result is a
 * part. The concat's result lives from its first part's producer on: no
 * value made between shares its slot. Without writes_rows, none. */
static void test_memplan_concat(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, 3, (int64_t[]){3, 8, 8});
    tg_attr pad = tg_attr_ints("padding", 2, (int64_t[]){1, 1});
    int c1 = NODE(g, CONV, "c1", x, W(g, "w1", 4, 3, 1, 1));
    int r1 = NODE(g, RELU, "r1", c1);
    int c2 = tg_graph_add_node(g, TG_OP_CONV, "c2", 2, (int[]){x, W(g, "w2", 5, 3, 3, 3)}, 1,
                               &pad);
    int e = NODE(g, EXP, "e", x);
    int twice = NODE(g, CONV, "twice", x, W(g, "w3", 2, 3, 1, 1));
    tg_attr ax1 = tg_attr_int("axis", 1), ax0 = tg_attr_int("axis", 0);
    int cat = tg_graph_add_node(g, TG_OP_CONCAT, "cat", 6, (int[]){r1, c2, e, x, twice, twice},
                                1, &ax1);
    tg_graph_add_output(g, NODE(g, NEG, "out", cat));
    int t = NODE(g, TANH, "t", x);
    int cat0 = tg_graph_add_node(g, TG_OP_CONCAT, "cat0", 2, (int[]){t, x}, 1, &ax0);
    tg_graph_add_output(g, cat0);
    tg_plan *p = cpu_plan(g);
    CHECK(tg_pass_fuse_act(g, p) == 1 && tg_pass_fuse_elementwise(g, p) >= 0);
    CHECK(tg_pass_memplan(g, p) > 0);
    int n = g->values[cat].producer;
    CHECK(p->part[r1] == n && p->part_in[r1] == 0 && p->part[c1] == n && p->alias[c1] == cat);
    CHECK(p->part[c2] == n && p->part_in[c2] == 1 && p->alias[c2] == cat);
    CHECK(p->part[e] == -1 && p->part[x] == -1 && p->part[twice] == -1 && p->part[cat] == -1);
    CHECK(p->slot[cat] >= 0 && p->slot[r1] == -1 && p->slot[c2] == -1);
    CHECK(p->slot[e] >= 0 && p->slot[e] != p->slot[cat]);
    CHECK(p->slot[twice] >= 0 && p->slot[twice] != p->slot[cat]);
    tg_part pt;
    int64_t v[4], sym[1] = {3};
    CHECK(tg_plan_part(g, p, c2, &pt) == 0 && pt.axis == 1);
    CHECK(tg_dim_eval(pt.offset, sym, &v[0]) == 0 && tg_dim_eval(pt.row, sym, &v[1]) == 0 &&
          tg_dim_eval(pt.stride, sym, &v[2]) == 0 && tg_dim_eval(pt.outer, sym, &v[3]) == 0);
    CHECK(v[0] == 4 * 64 && v[1] == 5 * 64 && v[2] == (4 + 5 + 3 + 3 + 2 + 2) * 64 && v[3] == 3);
    CHECK(p->part[t] == g->values[cat0].producer && p->alias[t] == cat0 &&
          p->output[cat0] == 1 && p->slot[t] == -1);
    tg_plan_free(p);
    tg_group_rules rules = *tg_backend_cpu.groups;
    rules.writes_rows = NULL;
    p = tg_plan_new(g);
    p->rules = &rules;
    CHECK(tg_pass_fuse_act(g, p) == 1 && tg_pass_memplan(g, p) > 0);
    for (int i = 0; i < g->nvalue; i++)
        CHECK(p->part[i] == -1 && (g->values[i].kind != TG_VALUE_NODE || p->alias[i] != cat ||
                                   i == cat));
    tg_plan_free(p);
    tg_graph_free(g);
}

int main(void)
{
    unit_seed("test_passes");
    test_dce();
    test_fold();
    test_cse();
    test_bn_fold();
    test_fuse_bias();
    test_layout();
    test_prepack();
    test_prepack_linear();
    test_fuse_act();
    test_group_rules();
    test_fuse_elementwise();
    test_fuse_residual();
    test_fuse_conv_residual();
    test_fuse_conv_pool(2);
    test_fuse_conv_pool(1);
    test_fuse_views();
    test_views_into_sdpa(true);
    test_sdpa_into_permute();
    test_views_into_sdpa(false);
    test_unshare_views();
    test_memplan();
    test_memplan_concat();
    return unit_report();
}
