/* The graph IR: building, inference through the op table, validation that reports
 * every problem, editing for passes, cloning; also tensors and the error buffer. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "tensor.h"
#include "unit.h"

static bool has(const char *msg, const char *part)
{
    bool ok = strstr(msg, part) != NULL;
    if (!ok)
        fprintf(stderr, "  message \"%s\" lacks \"%s\"\n", msg, part);
    return ok;
}

static int count_lines(const char *s)
{
    int n = *s != '\0';
    for (; *s; s++)
        n += *s == '\n';
    return n;
}

/* x [batch, 16] f32 -> matmul w [16, 32] -> add b [32] -> relu -> output */
typedef struct {
    tg_graph *g;
    int batch, x, w, b, mm, add, relu;
} mlp;

static float frand(void) { return (float)rand() / RAND_MAX * 2 - 1; }

static mlp build_mlp(void)
{
    mlp m;
    m.g = tg_graph_new();
    m.batch = tg_graph_add_symbol(m.g, "batch", 1, 64);
    tg_shape xs = {.rank = 2};
    xs.d[0] = tg_dim_sym(m.batch);
    xs.d[1] = tg_dim_const(16);
    m.x = tg_graph_add_input(m.g, "x", TG_F32, &xs);
    float w[16 * 32], b[32];
    for (int i = 0; i < 16 * 32; i++)
        w[i] = frand();
    for (int i = 0; i < 32; i++)
        b[i] = frand();
    tg_shape ws = tg_shape_of(2, (int64_t[]){16, 32}), bs = tg_shape_of(1, (int64_t[]){32});
    m.w = tg_graph_add_const_copy(m.g, "w", TG_F32, &ws, w);
    m.b = tg_graph_add_const_copy(m.g, "b", TG_F32, &bs, b);
    m.mm = tg_graph_add_node(m.g, TG_OP_MATMUL, "mm", 2, (int[]){m.x, m.w}, 0, NULL);
    m.add = tg_graph_add_node(m.g, TG_OP_ADD, NULL, 2, (int[]){m.mm, m.b}, 0, NULL);
    m.relu = tg_graph_add_node(m.g, TG_OP_RELU, NULL, 1, &m.add, 0, NULL);
    tg_graph_add_output(m.g, m.relu);
    return m;
}

static void test_build(void)
{
    mlp m = build_mlp();
    tg_graph *g = m.g;
    CHECK(m.batch == 0 && m.x == 0 && m.w == 1 && m.b == 2);
    CHECK(m.mm >= 0 && m.add >= 0 && m.relu >= 0);
    CHECK(g->nnode == 3 && g->nvalue == 6 && g->ninput == 1 && g->noutput == 1);
    CHECK(strcmp(g->values[m.add].name, "add_1") == 0);
    CHECK(strcmp(g->nodes[2].name, "relu_2") == 0);
    CHECK(g->values[m.relu].producer == 2 && g->nodes[2].out[0] == m.relu);
    char buf[64];
    tg_shape_format(&g->values[m.relu].shape, g->sym, buf, sizeof buf);
    CHECK(strcmp(buf, "[batch, 32]") == 0);
    CHECK(g->values[m.relu].dtype == TG_F32);
    CHECK(tg_graph_find_value(g, "mm") == m.mm && tg_graph_find_value(g, "nope") == -1);
    CHECK(tg_graph_find_node(g, "relu_2") == 2);
    CHECK(tg_graph_find_symbol(g, "batch") == 0);
    CHECK(tg_graph_validate(g) == 0);
    if (*tg_errmsg())
        fprintf(stderr, "  validate: %s\n", tg_errmsg());
    tg_graph_set_source(g, m.relu, "model.py:42");
    CHECK(strcmp(g->nodes[2].source, "model.py:42") == 0);

    /* made-up names stay unique even when a user took the obvious one */
    int r2 = tg_graph_add_node(g, TG_OP_RELU, "relu_3", 1, &m.relu, 0, NULL);
    int r3 = tg_graph_add_node(g, TG_OP_RELU, NULL, 1, &m.relu, 0, NULL);
    CHECK(r2 >= 0 && r3 >= 0 && strcmp(g->values[r3].name, "relu_4") == 0);

    /* scalar constants */
    int s = tg_graph_add_scalar(g, "half", TG_BF16, 0.5);
    CHECK(s >= 0 && g->values[s].shape.rank == 0 && g->values[s].nbytes == 2);
    CHECK(tg_load_f64(TG_BF16, g->values[s].data, 0) == 0.5);
    CHECK(tg_graph_validate(g) == 0);
    tg_graph_free(g);
}

static void test_add_errors(void)
{
    mlp m = build_mlp();
    tg_graph *g = m.g;
    int nv = g->nvalue, nn = g->nnode;
    CHECK(tg_graph_add_node(g, (tg_op)9999, "z", 1, &m.x, 0, NULL) == -1);
    CHECK(tg_graph_add_node(g, TG_OP_NONE, "z", 1, &m.x, 0, NULL) == -1);
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "z", 2, (int[]){m.x, m.x}, 0, NULL) == -1);
    CHECK(has(tg_errmsg(), "node z (relu): takes 1 inputs, got 2"));
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "z", 1, (int[]){77}, 0, NULL) == -1);
    CHECK(has(tg_errmsg(), "does not exist"));
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "z", 1, (int[]){-1}, 0, NULL) == -1);
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "mm", 1, &m.x, 0, NULL) == -1);
    CHECK(has(tg_errmsg(), "name already used"));
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "w", 1, &m.x, 0, NULL) == -1);
    CHECK(tg_graph_add_node(g, TG_OP_RELU, "", 1, &m.x, 0, NULL) == -1);
    /* inference failure: [batch,16] @ [batch,16] */
    CHECK(tg_graph_add_node(g, TG_OP_MATMUL, "bad_mm", 2, (int[]){m.x, m.x}, 0, NULL) == -1);
    CHECK(has(tg_errmsg(), "node bad_mm (matmul): "));
    CHECK(tg_graph_add_node(g, TG_OP_CAST, NULL, 1, &m.x, 0, NULL) == -1);
    CHECK(has(tg_errmsg(), "(cast): ") && has(tg_errmsg(), "dtype"));
    tg_attr dup[2] = {tg_attr_dtype("dtype", TG_F16), tg_attr_dtype("dtype", TG_F16)};
    CHECK(tg_graph_add_node(g, TG_OP_CAST, NULL, 1, &m.x, 2, dup) == -1);
    CHECK(has(tg_errmsg(), "twice"));
    tg_attr badkind = {.name = "dtype", .kind = (tg_attr_kind)42};
    CHECK(tg_graph_add_node(g, TG_OP_CAST, NULL, 1, &m.x, 1, &badkind) == -1);
    tg_attr noname = tg_attr_int(NULL, 3);
    CHECK(tg_graph_add_node(g, TG_OP_CAST, NULL, 1, &m.x, 1, &noname) == -1);
    tg_attr nulls = tg_attr_ints("perm", 2, NULL);
    CHECK(tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &m.x, 1, &nulls) == -1);
    /* nothing of the failed nodes stays behind */
    CHECK(g->nvalue == nv && g->nnode == nn);
    CHECK(tg_graph_find_value(g, "bad_mm") == -1 && tg_graph_find_node(g, "z") == -1);
    CHECK(tg_graph_validate(g) == 0);

    /* inputs, constants, symbols */
    tg_shape s1 = tg_shape_of(1, (int64_t[]){4});
    CHECK(tg_graph_add_input(g, "x", TG_F32, &s1) == -1);
    CHECK(tg_graph_add_input(g, "y", TG_DTYPE_NONE, &s1) == -1);
    CHECK(tg_graph_add_input(g, NULL, TG_F32, &s1) == -1);
    tg_shape neg = tg_shape_of(1, (int64_t[]){-4});
    CHECK(tg_graph_add_input(g, "y", TG_F32, &neg) == -1);
    tg_shape undef = {.rank = 1};
    undef.d[0] = tg_dim_sym(5);
    CHECK(tg_graph_add_input(g, "y", TG_F32, &undef) == -1);
    CHECK(has(tg_errmsg(), "symbol"));
    tg_shape r9 = {.rank = 9};
    CHECK(tg_graph_add_input(g, "y", TG_F32, &r9) == -1);
    CHECK(tg_graph_add_const(g, "c", TG_F32, &s1, malloc(15), 15) == -1);
    CHECK(has(tg_errmsg(), "16"));
    CHECK(tg_graph_add_const(g, "c", TG_F32, &g->values[m.x].shape, malloc(16), 16) == -1);
    CHECK(tg_graph_add_const(g, "c", TG_F32, &s1, NULL, 16) == -1);
    CHECK(tg_graph_add_output(g, 1000) == -1);
    CHECK(tg_graph_add_symbol(g, "batch", 1, 2) == -1);
    CHECK(tg_graph_add_symbol(g, "2x", 1, 2) == -1);
    CHECK(tg_graph_add_symbol(g, "n", 5, 2) == -1);
    CHECK(g->nvalue == nv && g->ninput == 1);
    for (int i = 1; i < TG_MAX_SYMS; i++) {
        char nm[16];
        snprintf(nm, sizeof nm, "n%d", i);
        CHECK(tg_graph_add_symbol(g, nm, 1, 8) == i);
    }
    CHECK(tg_graph_add_symbol(g, "one_too_many", 1, 8) == -1);
    tg_shape empty = tg_shape_of(2, (int64_t[]){0, 3});
    CHECK(tg_graph_add_const(g, "empty", TG_F32, &empty, NULL, 0) >= 0);
    CHECK(tg_graph_validate(g) == 0);
    tg_graph_free(g);
}

static void test_attrs(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(3, (int64_t[]){2, 3, 4});
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    int64_t perm[3] = {2, 0, 1};
    char str[8] = "tanh";
    tg_attr a[3] = {tg_attr_ints("perm", 3, perm), tg_attr_string("note", str),
                    tg_attr_float("alpha", 0.5)};
    int p = tg_graph_add_node(g, TG_OP_PERMUTE, "p", 1, &x, 3, a);
    CHECK(p >= 0);
    perm[0] = 1;                 /* the node kept its own copy */
    str[0] = 'X';
    const tg_node *n = &g->nodes[0];
    const int64_t *pv;
    CHECK(tg_node_ints(n, "perm", &pv) == 3 && pv[0] == 2 && pv[2] == 1);
    CHECK(strcmp(tg_node_string(n, "note", "?"), "tanh") == 0);
    CHECK(tg_node_float(n, "alpha", 1) == 0.5);
    CHECK(tg_node_float(n, "beta", 1) == 1);
    CHECK(tg_node_int(n, "alpha", 7) == 7);      /* wrong kind: the default */
    CHECK(tg_node_ints(n, "note", &pv) == -1 && pv == NULL);
    const tg_dim *dv;
    CHECK(tg_node_dims(n, "perm", &dv) == -1);
    char buf[32];
    tg_shape_format(&g->values[p].shape, NULL, buf, sizeof buf);
    CHECK(strcmp(buf, "[4, 2, 3]") == 0);
    CHECK(tg_node_input(g, n, 0) == &g->values[x] && tg_node_input(g, n, 1) == NULL);

    /* dims attributes with symbols: reshape [2,3,4] -> [6, 4] */
    tg_dim d[2] = {tg_dim_const(6), tg_dim_const(4)};
    tg_attr ra = tg_attr_dims("shape", 2, d);
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &x, 1, &ra);
    CHECK(r >= 0 && g->values[r].shape.rank == 2);
    d[0] = tg_dim_const(5);
    CHECK(tg_graph_add_node(g, TG_OP_RESHAPE, "r5", 1, &x, 1, &ra) == -1);
    CHECK(has(tg_errmsg(), "node r5 (reshape): "));
    tg_attr ca = tg_attr_dtype("dtype", TG_F16);
    int c = tg_graph_add_node(g, TG_OP_CAST, NULL, 1, &x, 1, &ca);
    CHECK(c >= 0 && g->values[c].dtype == TG_F16);
    CHECK(tg_node_int(&g->nodes[2], "dtype", 0) == TG_F16);
    CHECK(tg_graph_validate(g) == 0);
    tg_graph_free(g);
}

static void test_shapes(void)
{
    tg_symbol syms[2] = {{"n", 1, 8, false}, {"m", 1, 8, false}};
    tg_shape s = {.rank = 3};
    s.d[0] = tg_dim_sym(0);
    s.d[1] = tg_dim_const(64);
    tg_dim_mul(tg_dim_sym(0), tg_dim_const(2), &s.d[2]);
    char buf[64];
    CHECK(tg_shape_format(&s, syms, buf, sizeof buf) == 12 && strcmp(buf, "[n, 64, 2*n]") == 0);
    tg_dim numel;
    CHECK(tg_shape_numel(&s, &numel) == 0);
    tg_dim_format(numel, syms, buf, sizeof buf);
    CHECK(strcmp(buf, "128*n*n") == 0);
    int64_t dims[3], vals[2] = {3, 0};
    CHECK(!tg_shape_is_const(&s, dims));
    CHECK(tg_shape_eval(&s, vals, dims) == 0 && dims[0] == 3 && dims[1] == 64 && dims[2] == 6);
    tg_shape c = tg_shape_of(2, (int64_t[]){5, 7});
    CHECK(tg_shape_is_const(&c, dims) && dims[0] == 5 && dims[1] == 7);
    CHECK(tg_shape_eq(&c, &c) && !tg_shape_eq(&c, &s));
    tg_shape scalar = tg_shape_of(0, NULL);
    CHECK(tg_shape_numel(&scalar, &numel) == 0 && tg_dim_eq(numel, tg_dim_const(1)));
    CHECK(tg_shape_format(&scalar, NULL, buf, sizeof buf) == 2 && strcmp(buf, "[]") == 0);
    tg_shape negs = {.rank = 1};
    tg_dim_sub(tg_dim_sym(0), tg_dim_const(5), &negs.d[0]);
    CHECK(tg_shape_eval(&negs, vals, dims) == -1);
    tg_shape big = tg_shape_of(3, (int64_t[]){INT64_C(1) << 40, INT64_C(1) << 40, 1 << 20});
    CHECK(tg_shape_numel(&big, &numel) == -1);
}

/* Corrupt a valid graph several ways; validate lists each problem on its own line. */
static void test_validate_reports_all(void)
{
    mlp m = build_mlp();
    tg_graph *g = m.g;
    tg_graph *g2 = tg_graph_clone(g);
    free(g->values[m.add].name);
    g->values[m.add].name = strdup("mm");                  /* duplicate value name */
    g->values[m.relu].shape.d[1] = tg_dim_const(31);       /* stale inferred shape */
    g->values[m.b].nbytes = 12;                            /* constant size mismatch */
    g->nodes[0].in[1] = 99;                                /* dangling reference */
    CHECK(tg_graph_validate(g) == -1);
    const char *msg = tg_errmsg();
    CHECK(count_lines(msg) >= 4);
    CHECK(has(msg, "value mm: name used twice"));
    CHECK(has(msg, "node relu_2 (relu): output relu_2 has shape [batch, 31], inference gives "
                   "[batch, 32]"));
    CHECK(has(msg, "value b: 12 bytes of data"));
    CHECK(has(msg, "node mm (matmul): input 1 refers to value 99"));
    tg_graph_free(g);

    /* order, dtype, lists */
    g = g2;
    tg_node t = g->nodes[0];
    g->nodes[0] = g->nodes[1];
    g->nodes[1] = t;
    g->values[m.mm].producer = 1;
    g->values[m.add].producer = 0;
    g->values[m.x].dtype = TG_DTYPE_NONE;
    g->outputs[0] = -3;
    CHECK(tg_graph_validate(g) == -1);
    msg = tg_errmsg();
    CHECK(has(msg, "not topological"));
    CHECK(has(msg, "value x: no dtype"));
    CHECK(has(msg, "graph output 0"));
    tg_graph_free(g);
}

/* Random damage to fields a bad file or a buggy pass could leave: validate never
 * crashes, and it reports something unless the damage happened to be harmless. */
static void test_validate_fuzz(void)
{
    int crashes_avoided = 0, reported = 0;
    for (int it = 0; it < 3000; it++) {
        mlp m = build_mlp();
        tg_graph *g = m.g;
        for (int k = 0; k < 1 + rand() % 3; k++) {
            int i = rand() % g->nnode, v = rand() % g->nvalue;
            switch (rand() % 9) {
            case 0:
                if (g->nodes[i].nin)
                    g->nodes[i].in[rand() % g->nodes[i].nin] = rand() % (g->nvalue + 6) - 3;
                break;
            case 1: g->values[v].producer = rand() % 7 - 2; break;
            case 2: g->values[v].dtype = (tg_dtype)(rand() % 16); break;
            case 3: g->values[v].shape.rank = rand() % 12 - 1; break;
            case 4: g->values[v].shape.d[0].nterms = rand() % 7 - 1; break;
            case 5: g->values[v].kind = (tg_value_kind)(rand() % 4); break;
            case 6: g->nodes[i].op = (tg_op)(rand() % (TG_OP_COUNT + 2) - 1); break;
            case 7: g->nodes[i].nin = rand() % (g->nodes[i].nin + 1); break;
            case 8: g->outputs[0] = rand() % (g->nvalue + 4) - 2; break;
            }
        }
        reported += tg_graph_validate(g) < 0;
        crashes_avoided++;
        tg_graph_free(g);
    }
    CHECK(crashes_avoided == 3000);
    CHECK(reported > 2500);
}

/* x -> relu -> neg -> out; insert abs between relu and neg, drop nothing else. */
static void test_edit(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(1, (int64_t[]){8});
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    float cdata[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    int unused = tg_graph_add_const_copy(g, "unused", TG_F32, &s, cdata);
    int r = tg_graph_add_node(g, TG_OP_RELU, "r", 1, &x, 0, NULL);
    int n = tg_graph_add_node(g, TG_OP_NEG, "n", 1, &r, 0, NULL);
    tg_graph_add_output(g, n);
    tg_graph_add_output(g, r);
    CHECK(unused == 1);
    int *uc = tg_graph_use_counts(g);
    CHECK(uc && uc[x] == 1 && uc[unused] == 0 && uc[r] == 2 && uc[n] == 1);
    free(uc);

    int a = tg_graph_add_node(g, TG_OP_ABS, "a", 1, &r, 0, NULL);
    tg_graph_replace_uses(g, r, a);
    CHECK(g->nodes[2].in[0] == r);          /* the new node still reads r */
    CHECK(g->nodes[1].in[0] == a && g->outputs[1] == a);
    CHECK(tg_graph_validate(g) == -1 && has(tg_errmsg(), "not topological"));
    CHECK(tg_graph_compact(g) == 0);
    CHECK(tg_graph_validate(g) == 0);
    CHECK(g->nnode == 3 && g->nvalue == 4);  /* the unused constant is gone */
    CHECK(tg_graph_find_value(g, "unused") == -1);
    CHECK(strcmp(g->nodes[0].name, "r") == 0 && strcmp(g->nodes[1].name, "a") == 0 &&
          strcmp(g->nodes[2].name, "n") == 0);

    /* kill a node whose output is still read: compact refuses and changes nothing */
    int ai = tg_graph_find_node(g, "a");
    tg_graph_kill_node(g, ai);
    CHECK(tg_graph_compact(g) == -1 && has(tg_errmsg(), "removed node"));
    CHECK(g->nnode == 3);
    CHECK(tg_graph_validate(g) == -1 && has(tg_errmsg(), "removed"));
    /* rewire around it, then compact drops it */
    g->nodes[ai].op = TG_OP_ABS;
    int av = g->nodes[ai].out[0], rv = g->nodes[ai].in[0];
    tg_graph_kill_node(g, ai);
    tg_graph_replace_uses(g, av, rv);
    CHECK(tg_graph_compact(g) == 0);
    CHECK(g->nnode == 2 && g->nvalue == 3 && tg_graph_validate(g) == 0);
    CHECK(g->values[g->outputs[0]].producer == 1 && g->nodes[1].in[0] == g->outputs[1]);

    /* a cycle is refused */
    tg_graph *c = tg_graph_clone(g);
    c->nodes[0].in[0] = c->nodes[1].out[0];
    CHECK(tg_graph_compact(c) == -1 && has(tg_errmsg(), "cycle"));
    tg_graph_free(c);

    /* clone is deep */
    c = tg_graph_clone(g);
    CHECK(c && c->nnode == g->nnode && tg_graph_validate(c) == 0);
    CHECK(c->values[0].name != g->values[0].name && c->nodes[0].in != g->nodes[0].in);
    tg_graph_free(c);
    tg_graph_free(g);
}

/* Lookups by name stay right through renames, removals and direct edits. */
static void test_names(void)
{
    mlp m = build_mlp();
    tg_graph *g = m.g;
    CHECK(tg_graph_rename_value(g, m.add, "hidden") == 0);
    CHECK(tg_graph_find_value(g, "hidden") == m.add && tg_graph_find_value(g, "add_1") == -1);
    CHECK(tg_graph_rename_value(g, m.add, "mm") == -1 && has(tg_errmsg(), "already"));
    CHECK(tg_graph_rename_value(g, m.add, "") == -1);
    CHECK(tg_graph_rename_value(g, 99, "q") == -1);
    CHECK(tg_graph_rename_value(g, m.add, "hidden") == 0);
    /* a pass that swaps a name in place (free + new string): the old name misses,
     * and taking it again for a new value works */
    char *old = g->values[m.mm].name;
    g->values[m.mm].name = strdup("mm.folded");
    free(old);
    CHECK(tg_graph_find_value(g, "mm") == -1);
    float c[32] = {0};
    tg_shape s = tg_shape_of(1, (int64_t[]){32});
    int k = tg_graph_add_const_copy(g, "mm", TG_F32, &s, c);
    CHECK(k >= 0 && tg_graph_find_value(g, "mm") == k);
    /* failed adds leave no trace in the index */
    CHECK(tg_graph_add_node(g, TG_OP_MATMUL, "bad", 2, (int[]){m.x, m.x}, 0, NULL) == -1);
    CHECK(tg_graph_find_node(g, "bad") == -1 && tg_graph_find_value(g, "bad") == -1);
    int r = tg_graph_add_node(g, TG_OP_RELU, "bad", 1, &m.x, 0, NULL);
    CHECK(r >= 0 && tg_graph_find_value(g, "bad") == r);
    CHECK(tg_graph_find_value(g, NULL) == -1);
    tg_graph_free(g);
}

/* A long chain, compacted after appending a node that must move to the front. */
static void test_compact_long(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(1, (int64_t[]){4});
    int x = tg_graph_add_input(g, "x", TG_F32, &s), v = x;
    enum { N = 20000 };
    for (int i = 0; i < N; i++)
        v = tg_graph_add_node(g, i % 2 ? TG_OP_RELU : TG_OP_NEG, NULL, 1, &v, 0, NULL);
    tg_graph_add_output(g, v);
    int first = g->nodes[0].out[0];
    int e = tg_graph_add_node(g, TG_OP_EXP, "e", 1, &x, 0, NULL);
    g->nodes[0].in[0] = e;                   /* node 0 now reads the last node */
    CHECK(tg_graph_compact(g) == 0);
    CHECK(g->nnode == N + 1 && strcmp(g->nodes[0].name, "e") == 0);
    CHECK(g->nodes[1].out[0] == first + 1 || g->nodes[1].in[0] == g->nodes[0].out[0]);
    CHECK(tg_graph_validate(g) == 0);
    tg_graph_free(g);
}

static void test_tensor(void)
{
    tg_tensor t = {.dtype = TG_BF16, .rank = 2, .dims = {3, 5}};
    CHECK(tg_tensor_alloc(&t) == 0);
    CHECK(((uintptr_t)t.data & 63) == 0 && t.nbytes == 30);
    int zero = 1;
    for (size_t i = 0; i < t.nbytes; i++)
        zero &= ((unsigned char *)t.data)[i] == 0;
    CHECK(zero);
    char buf[32];
    CHECK(tg_tensor_describe(&t, buf, sizeof buf) == 9 && strcmp(buf, "bf16[3,5]") == 0);
    CHECK(tg_tensor_describe(&t, buf, 4) == 9 && strcmp(buf, "bf1") == 0);
    tg_tensor_free(&t);
    CHECK(t.data == NULL);
    tg_tensor e = {.dtype = TG_F32, .rank = 1, .dims = {0}};
    CHECK(tg_tensor_alloc(&e) == 0 && e.data && e.nbytes == 0);
    tg_tensor_free(&e);
    tg_tensor s = {.dtype = TG_I64, .rank = 0};
    CHECK(tg_tensor_alloc(&s) == 0 && s.nbytes == 8);
    CHECK(tg_tensor_describe(&s, buf, sizeof buf) == 5 && strcmp(buf, "i64[]") == 0);
    tg_tensor_free(&s);
    CHECK(tg_tensor_numel(3, (int64_t[]){INT64_C(1) << 40, 1 << 30, 1 << 30}) == -1);
    CHECK(tg_tensor_numel(1, (int64_t[]){-2}) == -1);
    CHECK(tg_tensor_numel(9, (int64_t[]){1}) == -1);
    tg_tensor huge = {.dtype = TG_F64, .rank = 1, .dims = {INT64_C(1) << 62}};
    CHECK(tg_tensor_alloc(&huge) == -1 && huge.data == NULL);
    tg_tensor none = {.rank = 1, .dims = {2}};
    CHECK(tg_tensor_alloc(&none) == -1);
}

static void test_error(void)
{
    tg_err_clear();
    CHECK(strcmp(tg_errmsg(), "") == 0);
    CHECK(tg_err("bad %d", 7) == -1 && strcmp(tg_errmsg(), "bad 7") == 0);
    CHECK(tg_err("wrapped: %s", tg_errmsg()) == -1 && strcmp(tg_errmsg(), "wrapped: bad 7") == 0);
    tg_err_clear();
    CHECK(tg_err_append("first") == -1 && strcmp(tg_errmsg(), "first") == 0);
    /* a long report grows past the fixed buffer and keeps every line */
    for (int i = 0; i < 1000; i++)
        tg_err_append("line %d of a long report", i);
    const char *m = tg_errmsg();
    CHECK(strlen(m) > 20000 && count_lines(m) == 1001);
    CHECK(has(m, "line 999 of a long report") && strncmp(m, "first\nline 0 ", 13) == 0);
    tg_err("again: %s", tg_errmsg());          /* self-reference from the heap buffer */
    CHECK(count_lines(tg_errmsg()) == 1001 && strncmp(tg_errmsg(), "again: first", 12) == 0);
    tg_err("short");
    CHECK(strcmp(tg_errmsg(), "short") == 0);
    char big[10000];
    memset(big, 'a', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    tg_err("%s", big);
    CHECK(strlen(tg_errmsg()) == sizeof big - 1);
    /* a hostile file's name reaches no terminal as control characters; the lines
     * and tabs of a report stay, and escaping twice changes nothing */
    tg_err("node '%s': bad", "a\033[2Jb\rc\177d\te\nf");
    CHECK(strcmp(tg_errmsg(), "node 'a\\x1b[2Jb\\x0dc\\x7fd\te\nf': bad") == 0);
    tg_err("%s", tg_errmsg());
    CHECK(strcmp(tg_errmsg(), "node 'a\\x1b[2Jb\\x0dc\\x7fd\te\nf': bad") == 0);
    tg_err_clear();
}

int main(void)
{
    srand(777);
    test_build();
    test_add_errors();
    test_attrs();
    test_shapes();
    test_validate_reports_all();
    test_validate_fuzz();
    test_edit();
    test_names();
    test_compact_long();
    test_tensor();
    test_error();
    return unit_report();
}
