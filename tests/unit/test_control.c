/* Control flow (ops.def: if, loop): subgraphs built through the API, their
 * declared outputs, the interpreter against references written out here on
 * fresh random inputs (seed printed; TG_SEED=N repeats), the TG file round
 * trip, and the refusals: constants in a subgraph, a carried value that
 * changes dtype, nesting too deep, damaged files. Results are sums of a few
 * float32 terms: within 1e-5 relative. */
#define _GNU_SOURCE /* memmem */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "exec/exec.h"
#include "format.h"
#include "graph.h"
#include "ops/control.h"
#include "unit.h"

static tg_tensor f32(int rank, const int64_t *dims)
{
    tg_tensor t = {.dtype = TG_F32, .rank = rank};
    memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    tg_tensor_alloc(&t);
    for (size_t i = 0; i < t.nbytes / 4; i++)
        ((float *)t.data)[i] = (float)unit_uniform(-2, 2);
    return t;
}

static tg_tensor scalar(tg_dtype dt, double v)
{
    tg_tensor t = {.dtype = dt};
    tg_tensor_alloc(&t);
    tg_store_f64(dt, t.data, 0, v);
    return t;
}

/* A subgraph of inputs x, y (f32 of shape s): op(x, y). */
static tg_graph *binary_sub(const tg_graph *outer, tg_op op, const tg_shape *s)
{
    tg_graph *g = tg_graph_new();
    for (int k = 0; k < outer->nsym; k++)
        tg_graph_add_symbol(g, outer->sym[k].name, outer->sym[k].min, outer->sym[k].max);
    int in[2] = {tg_graph_add_input(g, "x", TG_F32, s), tg_graph_add_input(g, "y", TG_F32, s)};
    tg_graph_add_output(g, tg_graph_add_node(g, op, "r", 2, in, 0, NULL));
    return g;
}

static int run(const tg_graph *g, const tg_tensor *in, tg_tensor *out)
{
    tg_exec *e = tg_exec_new(g, 1);
    int rc = e ? tg_exec_run(e, in, out) : -1;
    if (rc)
        fprintf(stderr, "run: %s\n", tg_errmsg());
    tg_exec_free(e);
    return rc;
}

/* g written as a TG file and read back. */
static tg_graph *round_trip(const tg_graph *g, char **bytes, size_t *len)
{
    FILE *f = open_memstream(bytes, len);
    int rc = tg_graph_write(g, f);
    fclose(f);
    CHECK(rc == 0);
    tg_graph *r = rc ? NULL : tg_graph_read_mem((const uint8_t *)*bytes, *len);
    if (!r)
        fprintf(stderr, "round trip: %s\n", tg_errmsg());
    return r;
}

/* if c: x + y else x * y, on x, y f32[n, 3] (n symbolic). */
static void test_if(void)
{
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 16);
    tg_shape s = {.rank = 2, .d = {tg_dim_sym(n), tg_dim_const(3)}}, s0 = {0};
    int in[3] = {tg_graph_add_input(g, "c", TG_BOOL, &s0), tg_graph_add_input(g, "x", TG_F32, &s),
                 tg_graph_add_input(g, "y", TG_F32, &s)};
    tg_graph *then = binary_sub(g, TG_OP_ADD, &s), *els = binary_sub(g, TG_OP_MUL, &s);
    tg_attr a[2] = {tg_attr_graph("then", then), tg_attr_graph("else", els)};
    int y = tg_control_add(g, TG_OP_IF, "if", 3, in, 2, a);
    CHECK(y >= 0);
    if (y < 0)
        fprintf(stderr, "if: %s\n", tg_errmsg());
    CHECK(y >= 0 && tg_shape_eq(&g->values[y].shape, &s));   /* shared, not a data symbol */
    tg_graph_add_output(g, y);
    CHECK(tg_graph_validate(g) == 0);
    char *bytes = NULL;
    size_t len = 0;
    tg_graph *r = round_trip(g, &bytes, &len);
    for (int c = 0; c < 2; c++) {
        int64_t d[2] = {5, 3};
        tg_tensor t[3] = {scalar(TG_BOOL, c), f32(2, d), f32(2, d)}, out[2];
        CHECK(run(g, t, &out[0]) == 0 && r && run(r, t, &out[1]) == 0);
        const float *x = t[1].data, *w = t[2].data;
        for (int i = 0; i < 15; i++) {
            double want = c ? (double)x[i] + w[i] : (double)x[i] * w[i];
            CHECK_NEAR(((float *)out[0].data)[i], want, 1e-5 * (1 + fabs(want)));
            CHECK(((float *)out[1].data)[i] == ((float *)out[0].data)[i]);
        }
        for (int k = 0; k < 3; k++)
            tg_tensor_free(&t[k]);
        tg_tensor_free(&out[0]);
        tg_tensor_free(&out[1]);
    }
    /* the same bytes again: the file form is deterministic through subgraphs */
    char *again = NULL;
    size_t len2 = 0;
    tg_graph *r2 = r ? round_trip(r, &again, &len2) : NULL;
    CHECK(again && len2 == len && !memcmp(again, bytes, len));
    free(bytes);
    free(again);
    tg_graph_free(r);
    tg_graph_free(r2);
    tg_graph_free(then);
    tg_graph_free(els);
    tg_graph_free(g);
}

/* for M steps: acc += b, scan acc; acc, b f32[3]. M a constant (the trip
 * count is known: scan [M, 3]) or an input (a data symbol). */
static tg_graph *for_loop(int64_t m, bool m_input)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = {.rank = 1, .d = {tg_dim_const(3)}}, s0 = {0};
    int in[4] = {m_input ? tg_graph_add_input(g, "m", TG_I64, &s0) : tg_graph_add_scalar(g, "m", TG_I64, (double)m),
                 -1, tg_graph_add_input(g, "a", TG_F32, &s), tg_graph_add_input(g, "b", TG_F32, &s)};
    tg_graph *body = tg_graph_new();
    int bi[4] = {tg_graph_add_input(body, "i", TG_I64, &s0), tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "acc", TG_F32, &s), tg_graph_add_input(body, "b", TG_F32, &s)};
    int sum = tg_graph_add_node(body, TG_OP_ADD, "sum", 2, bi + 2, 0, NULL);
    tg_graph_add_output(body, bi[1]);
    tg_graph_add_output(body, sum);
    tg_graph_add_output(body, sum);
    tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
    int y = tg_control_add(g, TG_OP_LOOP, "loop", 4, in, 2, a);
    if (y < 0)
        fprintf(stderr, "loop: %s\n", tg_errmsg());
    CHECK(y >= 0);
    tg_graph_add_output(g, y);
    tg_graph_add_output(g, g->nodes[g->nnode - 1].out[1]);
    tg_graph_free(body);
    return g;
}

static void test_for(void)
{
    for (int64_t m = 0; m <= 4; m += 4) {
        tg_graph *g = for_loop(m, false);
        const tg_value *scan = &g->values[g->outputs[1]];
        int64_t dims[2];
        CHECK(tg_shape_is_const(&scan->shape, dims) && dims[0] == m && dims[1] == 3);
        int64_t d[1] = {3};
        tg_tensor t[2] = {f32(1, d), f32(1, d)}, out[2];
        CHECK(run(g, t, out) == 0);
        const float *a = t[0].data, *b = t[1].data;
        for (int j = 0; j < 3; j++) {
            double acc = a[j];
            for (int64_t i = 0; i < m; i++) {
                acc = (float)(acc + b[j]);
                CHECK_NEAR(((float *)out[1].data)[i * 3 + j], acc, 1e-5 * (1 + fabs(acc)));
            }
            CHECK_NEAR(((float *)out[0].data)[j], acc, 1e-5 * (1 + fabs(acc)));
        }
        CHECK(out[1].rank == 2 && out[1].dims[0] == m && out[1].dims[1] == 3);
        for (int k = 0; k < 2; k++)
            tg_tensor_free(&t[k]), tg_tensor_free(&out[k]);
        tg_graph_free(g);
    }
    /* M read at run time: the scan's length is a data symbol, bound when it runs */
    tg_graph *g = for_loop(0, true);
    char *bytes = NULL;
    size_t len = 0;
    tg_graph *r = round_trip(g, &bytes, &len);
    int64_t d[1] = {3};
    tg_tensor t[3] = {scalar(TG_I64, 6), f32(1, d), f32(1, d)}, out[2];
    CHECK(r && run(r, t, out) == 0 && out[1].dims[0] == 6);
    CHECK_NEAR(((float *)out[0].data)[2], ((float *)t[1].data)[2] + 6.0 * ((float *)t[2].data)[2], 1e-4);
    for (int k = 0; k < 3; k++)
        tg_tensor_free(&t[k]);
    tg_tensor_free(&out[0]);
    tg_tensor_free(&out[1]);
    tg_graph_free(r);
    free(bytes);
    tg_graph_free(g);
}

/* while iter < limit: x = x + x; scan iter. Runs limit + 1 times. */
static void test_while(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = {.rank = 1, .d = {tg_dim_const(2)}}, s0 = {0};
    int in[4] = {-1, tg_graph_add_input(g, "go", TG_BOOL, &s0), tg_graph_add_input(g, "x", TG_F32, &s),
                 tg_graph_add_input(g, "limit", TG_I64, &s0)};
    tg_graph *body = tg_graph_new();
    int bi[4] = {tg_graph_add_input(body, "i", TG_I64, &s0), tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "x", TG_F32, &s), tg_graph_add_input(body, "limit", TG_I64, &s0)};
    int lt_in[2] = {bi[0], bi[3]}, x2[2] = {bi[2], bi[2]};
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_LT, "more", 2, lt_in, 0, NULL));
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_ADD, "twice", 2, x2, 0, NULL));
    tg_graph_add_output(body, bi[0]);
    tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
    int y = tg_control_add(g, TG_OP_LOOP, "loop", 4, in, 2, a);
    CHECK(y >= 0);
    tg_graph_add_output(g, y);
    tg_graph_add_output(g, g->nodes[g->nnode - 1].out[1]);
    int64_t d[1] = {2};
    for (int go = 0; go < 2; go++) {
        tg_tensor t[3] = {scalar(TG_BOOL, go), f32(1, d), scalar(TG_I64, 3)}, out[2];
        int trips = go ? 4 : 0;
        int rc = run(g, t, out);
        if (!go) {      /* no iteration: the scan's step shape [] is known, so [0] */
            CHECK(rc == 0 && out[1].dims[0] == 0);
        } else {
            CHECK(rc == 0 && out[1].dims[0] == trips);
            for (int i = 0; rc == 0 && i < trips; i++)
                CHECK(((int64_t *)out[1].data)[i] == i);
        }
        CHECK(rc == 0 && ((float *)out[0].data)[1] == ((float *)t[1].data)[1] * (float)(1 << trips));
        for (int k = 0; k < 3; k++)
            tg_tensor_free(&t[k]);
        if (rc == 0)
            tg_tensor_free(&out[0]), tg_tensor_free(&out[1]);
    }
    tg_graph_free(body);
    tg_graph_free(g);
}

static bool err_has(const char *s)
{
    bool has = strstr(tg_errmsg(), s) != NULL;
    if (!has)
        fprintf(stderr, "expected '%s' in: %s\n", s, tg_errmsg());
    return has;
}

/* A loop that declares its trip count, the symbol n of x f32[n, 3] (torch's
 * map over a dynamic dim): scan x[i] * 2, max_trip m an input. The scan is
 * f32[n, 3] in the graph, the file keeps it, and a run whose m is not n is
 * refused when the loop ends, naming the dim. */
static void test_declared_trips(void)
{
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 16);
    tg_shape s = {.rank = 2, .d = {tg_dim_sym(n), tg_dim_const(3)}}, row = {.rank = 1, .d = {tg_dim_const(3)}},
             s0 = {0};
    int in[3] = {tg_graph_add_input(g, "m", TG_I64, &s0), -1, tg_graph_add_input(g, "x", TG_F32, &s)};
    tg_graph *body = tg_control_subgraph(g);
    int bi[3] = {tg_graph_add_input(body, "i", TG_I64, &s0), tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "x", TG_F32, &s)};
    tg_attr ax = tg_attr_int("axis", 0);
    int sin[2] = {bi[2], bi[0]};
    int xi = tg_graph_add_node(body, TG_OP_INDEX_SELECT, "xi", 2, sin, 1, &ax);
    int two[2] = {xi, xi};
    tg_graph_add_output(body, bi[1]);
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_ADD, "twice", 2, two, 0, NULL));
    CHECK(tg_shape_eq(&body->values[xi].shape, &row));
    tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 0)};
    int y = tg_control_add_loop(g, "map", 3, in, 2, a, tg_dim_sym(n));
    if (y < 0)
        fprintf(stderr, "loop: %s\n", tg_errmsg());
    CHECK(y >= 0 && tg_shape_eq(&g->values[y].shape, &s) && g->nsym == 1);
    tg_graph_add_output(g, y);
    char *bytes = NULL;
    size_t len = 0;
    tg_graph *r = round_trip(g, &bytes, &len);
    CHECK(r && tg_shape_eq(&r->values[r->outputs[0]].shape, &s));
    int64_t d[2] = {5, 3};
    for (int64_t m = 5; m >= 4; m--) {
        tg_tensor t[2] = {scalar(TG_I64, (double)m), f32(2, d)}, out;
        tg_exec *e = r ? tg_exec_new(r, 1) : NULL;
        int rc = e ? tg_exec_run(e, t, &out) : -1;
        if (m == 5) {
            CHECK(rc == 0);
            for (int i = 0; !rc && i < 15; i++)
                CHECK(((float *)out.data)[i] == 2 * ((float *)t[1].data)[i]);
            if (!rc)
                tg_tensor_free(&out);
        } else {
            CHECK(rc < 0 && strstr(tg_errmsg(), "dim 0 is 4 at run time, the graph says n"));
        }
        tg_exec_free(e);
        tg_tensor_free(&t[0]);
        tg_tensor_free(&t[1]);
    }
    free(bytes);
    tg_graph_free(r);
    tg_graph_free(body);
    tg_graph_free(g);
}

static void test_refusals(void)
{
    tg_shape s = {.rank = 1, .d = {tg_dim_const(3)}}, s0 = {0};
    /* a constant in a branch */
    tg_graph *g = tg_graph_new();
    int in[2] = {tg_graph_add_input(g, "c", TG_BOOL, &s0), tg_graph_add_input(g, "x", TG_F32, &s)};
    tg_graph *b = tg_graph_new();
    int bx = tg_graph_add_input(b, "x", TG_F32, &s), k = tg_graph_add_scalar(b, "k", TG_F32, 2);
    int bin[2] = {bx, k};
    tg_graph_add_output(b, tg_graph_add_node(b, TG_OP_MUL, "m", 2, bin, 0, NULL));
    tg_attr a[2] = {tg_attr_graph("then", b), tg_attr_graph("else", b)};
    CHECK(tg_control_add(g, TG_OP_IF, "if", 2, in, 2, a) < 0 && err_has("constant"));
    /* a branch of the wrong arity */
    CHECK(tg_control_add(g, TG_OP_IF, "if", 1, in, 2, a) < 0 && err_has("inputs"));
    /* control ops declare their outputs */
    CHECK(tg_graph_add_node(g, TG_OP_IF, "if", 2, in, 2, a) < 0 && err_has("declares"));
    tg_graph_free(b);
    /* a carried value that changes dtype */
    tg_graph *body = tg_graph_new();
    int bi[3] = {tg_graph_add_input(body, "i", TG_I64, &s0), tg_graph_add_input(body, "c", TG_BOOL, &s0),
                 tg_graph_add_input(body, "x", TG_F32, &s)};
    tg_attr cast = tg_attr_dtype("dtype", TG_F64);
    tg_graph_add_output(body, bi[1]);
    tg_graph_add_output(body, tg_graph_add_node(body, TG_OP_CAST, "wide", 1, bi + 2, 1, &cast));
    int lin[3] = {-1, in[0], in[1]};
    tg_attr la[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 1)};
    CHECK(tg_control_add(g, TG_OP_LOOP, "loop", 3, lin, 2, la) < 0 && err_has("keeps its dtype"));
    tg_graph_free(body);
    /* ifs nested deeper than TG_MAX_GRAPH_DEPTH */
    tg_graph *inner = NULL;
    int rc = 0;
    for (int depth = 0; depth <= TG_MAX_GRAPH_DEPTH + 1 && rc >= 0; depth++) {
        tg_graph *h = tg_graph_new();
        int hin[2] = {tg_graph_add_input(h, "c", TG_BOOL, &s0), tg_graph_add_input(h, "x", TG_F32, &s)};
        if (!inner) {
            rc = hin[1];
        } else {
            tg_attr ha[2] = {tg_attr_graph("then", inner), tg_attr_graph("else", inner)};
            int args[3] = {hin[0], hin[0], hin[1]};
            rc = tg_control_add(h, TG_OP_IF, "if", 3, args, 2, ha);
        }
        if (rc >= 0)
            tg_graph_add_output(h, rc);
        tg_graph_free(inner);
        inner = h;
    }
    CHECK(rc < 0 && err_has("deeper"));
    tg_graph_free(inner);
    tg_graph_free(g);
}

/* Every byte of a TG file with a loop changed in turn: read errors or a
 * graph that validates, never a crash (ASan builds check the rest). */
static void test_damaged_file(void)
{
    tg_graph *g = for_loop(3, true);
    char *bytes = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&bytes, &len);
    CHECK(tg_graph_write(g, f) == 0);
    fclose(f);
    static const char key[] = "\\\"body\\\"";
    const char *meta = memmem(bytes, len, key, strlen(key));
    CHECK(meta != NULL);
    int read = 0, refused = 0;
    for (size_t i = meta ? (size_t)(meta - bytes) : len; i < len && i < (size_t)(meta - bytes) + 600; i++) {
        char keep = bytes[i];
        bytes[i] = (char)(keep == 'x' ? 'y' : keep == '"' ? ' ' : 'x');
        tg_graph *r = tg_graph_read_mem((const uint8_t *)bytes, len);
        if (r) {
            CHECK(tg_graph_validate(r) == 0);
            read++;
        } else {
            CHECK(*tg_errmsg());
            refused++;
        }
        tg_graph_free(r);
        bytes[i] = keep;
    }
    CHECK(refused > 0);
    printf("damaged subgraph bytes: %d refused, %d read\n", refused, read);
    free(bytes);
    tg_graph_free(g);
}

int main(void)
{
    unit_seed("test_control");
    test_if();
    test_for();
    test_while();
    test_declared_trips();
    test_refusals();
    test_damaged_file();
    return unit_report();
}
