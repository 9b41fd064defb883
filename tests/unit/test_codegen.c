/* The C code generator against the interpreter, one small graph per case
 * (ggml's test-backend-ops, here for compiled models): each graph goes
 * through the pass pipeline, is compiled to a .so (needs libtgkernels.a:
 * TGRAPH_RUNTIME_DIR, which make check sets), loaded with dlopen and run on
 * fresh random inputs at two batch sizes; outputs must match the interpreter
 * on the original graph within 1e-4 relative to the largest magnitude
 * (+1e-5 absolute). Cases cover what the fixtures do not: pooling with
 * padding, dilation and ceil mode, fused loops with broadcasting and
 * reductions, matmul broadcasting, movement ops, epilogues. */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <tgraph/model.h>

#include "codegen/codegen.h"
#include "error.h"
#include "exec/exec.h"
#include "passes/passes.h"
#include "randgraph.h"
#include "unit.h"


#define DIMS(...) (int64_t[]){__VA_ARGS__}, sizeof((int64_t[]){__VA_ARGS__}) / sizeof(int64_t)
#define NODE(g, op, na, at, ...) \
    tg_graph_add_node(g, TG_OP_##op, NULL, sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                      (int[]){__VA_ARGS__}, na, at)

/* x: f32 [batch, dims...], batch a symbol in 1..16. */
static int input(tg_graph *g, const char *name, const int64_t *dims, int rank)
{
    int b = tg_graph_find_symbol(g, "batch");
    if (b < 0)
        b = tg_graph_add_symbol(g, "batch", 1, 16);
    tg_shape s = {.rank = rank + 1, .d = {tg_dim_sym(b)}};
    for (int i = 0; i < rank; i++)
        s.d[i + 1] = tg_dim_const(dims[i]);
    return tg_graph_add_input(g, name, TG_F32, &s);
}

/* Compile g (a copy goes through the passes) into dir/name.so. */
static int compile(const tg_graph *g, const char *path)
{
    tg_graph *c = tg_graph_clone(g);
    tg_plan *p = c ? tg_passes_run(c, NULL) : NULL;
    FILE *f = fopen(path, "wb");
    /* a baseline CPU: the cases test the generated code, not -march, and must
     * also run under valgrind (no AVX-512 there); bats tests native builds */
    tg_build_opts o = {.cpu = "x86-64-v2"};
    int rc = p && f ? tg_codegen_build(c, p, &o, f) : -1;
    if (f && fclose(f))
        rc = -1;
    tg_plan_free(p);
    tg_graph_free(c);
    return rc;
}

static double compare(const tg_tensor *ref, const tgraph_tensor *got)
{
    if (got->rank != ref->rank || got->nbytes != ref->nbytes)
        return INFINITY;
    const float *a = ref->data, *b = got->data;
    double big = 0, err = 0;
    for (size_t i = 0; i < ref->nbytes / 4; i++) {
        big = fmax(big, fabs(a[i]));
        err = fmax(err, fabs((double)a[i] - b[i]) - 1e-5);
        if (isnan(a[i]) != isnan(b[i]))
            return INFINITY;
    }
    return err / fmax(big, 1e-6);
}

/* An input value: uniform, or for exact cases also NaNs of both signs (max
 * pooling must pick the same one) and zeros of both signs (ties keep the
 * first tap), so that a differing select order shows up. */
static float input_value(size_t k, bool exact)
{
    if (exact && k % 11 == 0)
        return k % 22 ? NAN : -NAN;
    if (exact && k % 5 == 0)
        return k % 10 ? 0.0f : -0.0f;
    return 3 * uniform();
}

/* Compile g, run it and the interpreter at batch 1 and 5, compare: within
 * the tolerance, or bit for bit when exact. */
static void check_case(const char *what, tg_graph *g, bool exact)
{
    char path[] = "/tmp/test_codegen.XXXXXX";
    int fd = mkstemp(path);
    close(fd);
    int ok = compile(g, path) == 0;
    if (!ok)
        fprintf(stderr, "%s: %s\n", what, tg_errmsg());
    CHECK(ok);
    void *dl = ok ? dlopen(path, RTLD_NOW | RTLD_LOCAL) : NULL;
    unlink(path);
    tgraph_model *(*open)(const char *) = dl ? dlsym(dl, "tgraph_model_open") : NULL;
    int (*run)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int) =
        dl ? dlsym(dl, "tgraph_model_run") : NULL;
    void (*close_m)(tgraph_model *) = dl ? dlsym(dl, "tgraph_model_close") : NULL;
    CHECK(open && run && close_m);
    tgraph_model *m = open ? open(NULL) : NULL;
    CHECK(m != NULL);
    for (int b = 1; m && b <= 5; b += 4) {
        tg_tensor in[4] = {{0}}, ref[4] = {{0}};
        tgraph_tensor tin[4], tout[4] = {{0}};
        for (int i = 0; i < g->ninput; i++) {
            const tg_value *v = &g->values[g->inputs[i]];
            int64_t sym[TG_MAX_SYMS] = {b};
            in[i].dtype = v->dtype;
            in[i].rank = v->shape.rank;
            tg_shape_eval(&v->shape, sym, in[i].dims);
            tg_tensor_alloc(&in[i]);
            for (size_t k = 0; k < in[i].nbytes / 4; k++)
                ((float *)in[i].data)[k] = input_value(k, exact);
            tin[i] = (tgraph_tensor){.data = in[i].data, .dtype = (tgraph_dtype)in[i].dtype,
                                     .rank = in[i].rank, .nbytes = in[i].nbytes};
            memcpy(tin[i].dims, in[i].dims, sizeof tin[i].dims);
        }
        tg_exec *e = tg_exec_new(g, 1);
        CHECK(e && tg_exec_run(e, in, ref) == 0);
        tg_exec_free(e);
        CHECK(run(m, tin, g->ninput, tout, g->noutput) == 0);
        for (int o = 0; o < g->noutput; o++) {
            double err = compare(&ref[o], &tout[o]);
            if (exact && err <= 1e-4 && memcmp(ref[o].data, tout[o].data, ref[o].nbytes))
                err = INFINITY;
            if (!(err <= 1e-4))
                fprintf(stderr, "%s, batch %d, output %d: relative error %g\n", what, b, o, err);
            CHECK(err <= 1e-4);
            tg_tensor_free(&ref[o]);
            free(tout[o].data);
        }
        for (int i = 0; i < g->ninput; i++)
            tg_tensor_free(&in[i]);
    }
    if (m)
        close_m(m);
    tg_graph_free(g);
}

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

    /* where with comparisons, and a large tensor split into blocks */
    g = tg_graph_new();
    x = input(g, "x", DIMS(70, 100));
    int zero = W(g, "z", 1);
    int lt = NODE(g, LT, 0, NULL, x, zero);
    int sg = NODE(g, SIGMOID, 0, NULL, x);
    tg_graph_add_output(g, NODE(g, WHERE, 0, NULL, lt, sg, x));
    check_case("where, comparison, sigmoid", g, false);
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

int main(void)
{
    if (!getenv("TGRAPH_RUNTIME_DIR")) {
        printf("TGRAPH_RUNTIME_DIR is not set: run through make check\n");
        return 77;
    }
    rng = (uint64_t)time(NULL);
    printf("seed %llu\n", (unsigned long long)rng);
    test_pools();
    test_loops();
    test_layers();
    test_views();
    test_shared_mask();
    return unit_report();
}
