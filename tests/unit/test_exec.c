/* The reference interpreter (lib/exec): that every op has a kernel, input
 * checking and symbol binding, value lifetimes, and the per-op glue (shapes
 * and attributes to kernel calls) against float64 references written out
 * index by index, on fresh random inputs (seed printed; TG_SEED=N repeats).
 * Tolerance: float32 results within 1e-4 relative to the reference's largest
 * magnitude (GEMM and attention sums of a few hundred terms). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "backend/cpu/cpu.h"
#include "exec/exec.h"
#include "format.h"
#include "graph.h"
#include "unit.h"

static int64_t numel(int rank, const int64_t *d)
{
    int64_t n = 1;
    for (int k = 0; k < rank; k++)
        n *= d[k];
    return n;
}

static tg_tensor rand_tensor(tg_dtype dt, int rank, const int64_t *dims, double lo, double hi)
{
    tg_tensor t = { .dtype = dt, .rank = rank };
    if (rank)   /* dims may be NULL for a scalar */
        memcpy(t.dims, dims, sizeof(int64_t) * (size_t)rank);
    tg_tensor_alloc(&t);
    for (int64_t i = 0; i < numel(rank, dims); i++)
        tg_store_f64(dt, t.data, (size_t)i, dt == TG_F32 || dt == TG_F64 ? unit_uniform(lo, hi)
                                                                       : floor(unit_uniform(lo, hi)));
    return t;
}

static double at(const tg_tensor *t, int64_t i)
{
    return tg_load_f64(t->dtype, t->data, (size_t)i);
}

/* Run one op on tensors as graph inputs (constant shapes); out gets the first
 * output. Returns tg_exec_run's result (-1 also when the node is refused). */
static int run_op(tg_op op, int nin, const tg_tensor *in, int nattr, const tg_attr *attr,
                  tg_tensor *out)
{
    tg_graph *g = tg_graph_new();
    int ids[8];
    for (int i = 0; i < nin; i++) {
        char name[16];
        snprintf(name, sizeof name, "in%d", i);
        tg_shape s = tg_shape_of(in[i].rank, in[i].dims);
        ids[i] = tg_graph_add_input(g, name, in[i].dtype, &s);
    }
    int y = tg_graph_add_node(g, op, "op", nin, ids, nattr, attr);
    int rc = -1;
    if (y >= 0 && tg_graph_add_output(g, y) >= 0) {
        tg_exec *e = tg_exec_new(g, 0);
        rc = e ? tg_exec_run(e, in, out) : -1;
        tg_exec_free(e);
    }
    if (rc < 0)
        fprintf(stderr, "run_op %s: %s\n", tg_op_name(op), tg_errmsg());
    tg_graph_free(g);
    return rc;
}

/* max |got - ref| <= 1e-4 * max |ref| (+1e-6), over n values. */
static void check_close(const tg_tensor *got, const double *ref, int64_t n, const char *what)
{
    double maxabs = 0, maxref = 0;
    CHECK(numel(got->rank, got->dims) == n);
    for (int64_t i = 0; i < n && i < numel(got->rank, got->dims); i++) {
        double d = fabs(at(got, i) - ref[i]);
        if (!(d <= maxabs))
            maxabs = d;
        maxref = fmax(maxref, fabs(ref[i]));
    }
    if (!(maxabs <= 1e-4 * maxref + 1e-6))
        fprintf(stderr, "%s: max abs error %g, max |ref| %g\n", what, maxabs, maxref);
    CHECK(maxabs <= 1e-4 * maxref + 1e-6);
}

static void free_all(tg_tensor *t, int n)
{
    for (int i = 0; i < n; i++)
        tg_tensor_free(&t[i]);
}

/* ---- coverage, input checks, lifetimes --------------------------------------------- */

static void test_every_op_has_a_kernel(void)
{
    for (int op = 1; op < TG_OP_COUNT; op++) {
        if (!tg_cpu_has_kernel((tg_op)op))
            fprintf(stderr, "no kernel for %s\n", tg_op_name((tg_op)op));
        CHECK(tg_cpu_has_kernel((tg_op)op));
    }
    CHECK(!tg_cpu_has_kernel(TG_OP_NONE));
}

/* x f32[2*n, 3] -> x + 1, with n in [1, 8]: symbols bound from a derived dim. */
static void test_inputs(void)
{
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 8);
    tg_dim two_n;
    tg_dim_mul(tg_dim_const(2), tg_dim_sym(n), &two_n);
    tg_shape xs = { .rank = 2, .d = { two_n, tg_dim_const(3) } };
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int one = tg_graph_add_scalar(g, "one", TG_F32, 1.0);
    int y = tg_graph_add_node(g, TG_OP_ADD, "y", 2, (int[]){ x, one }, 0, NULL);
    tg_graph_add_output(g, y);
    tg_graph_add_output(g, x);                  /* an input as an output */
    tg_graph_add_output(g, y);                  /* the same value twice */
    tg_exec *e = tg_exec_new(g, 2);
    CHECK(e != NULL);

    tg_tensor in = rand_tensor(TG_F32, 2, (int64_t[]){ 6, 3 }, -1, 1), out[3];
    CHECK(tg_exec_run(e, &in, out) == 0);
    bool ok = out[0].dims[0] == 6 && out[1].dims[0] == 6 && out[2].dims[0] == 6;
    for (int64_t i = 0; ok && i < 18; i++)
        ok = at(&out[0], i) == (float)(at(&in, i) + 1) && at(&out[1], i) == at(&in, i) &&
             at(&out[2], i) == at(&out[0], i);
    CHECK(ok);
    CHECK(out[0].data != out[2].data && out[1].data != in.data);
    free_all(out, 3);
    tg_tensor_free(&in);

    struct { tg_dtype dt; int rank; int64_t d0, d1; const char *msg; } bad[] = {
        { TG_F64, 2, 6, 3, "input 0 'x': wrong dtype: got f64[6,3], expected f32[2*n, 3]" },
        { TG_F32, 1, 6, 0, "input 0 'x': wrong rank" },
        { TG_F32, 2, 6, 4, "input 0 'x': dim 1 does not match" },
        { TG_F32, 2, 5, 3, "input 0 'x': dim 0 does not match" },        /* odd: no n */
        { TG_F32, 2, 18, 3, "symbol 'n' = 9 is outside its range [1, 8]" },
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        int64_t dims[2] = { bad[i].d0, bad[i].d1 };
        in = rand_tensor(bad[i].dt, bad[i].rank, dims, -1, 1);
        CHECK(tg_exec_run(e, &in, out) == -1);
        if (!strstr(tg_errmsg(), bad[i].msg))
            fprintf(stderr, "expected '%s', got '%s'\n", bad[i].msg, tg_errmsg());
        CHECK(strstr(tg_errmsg(), bad[i].msg) != NULL);
        tg_tensor_free(&in);
    }
    tg_exec_free(e);
    tg_graph_free(g);
}

/* A chain long enough that intermediate values are freed along the way, and
 * a node error that names the node. */
static void test_chain_and_errors(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(1, (int64_t[]){ 1000 });
    int v = tg_graph_add_input(g, "x", TG_F32, &s);
    for (int i = 0; i < 50; i++)
        v = tg_graph_add_node(g, i % 2 ? TG_OP_NEG : TG_OP_ABS, NULL, 1, &v, 0, NULL);
    tg_graph_add_output(g, v);
    tg_exec *e = tg_exec_new(g, 0);
    tg_tensor in = rand_tensor(TG_F32, 1, (int64_t[]){ 1000 }, -1, 1), out;
    CHECK(tg_exec_run(e, &in, &out) == 0);
    bool ok = true;
    for (int i = 0; i < 1000; i++)
        ok &= at(&out, i) == -fabs(at(&in, i));
    CHECK(ok);
    tg_tensor_free(&out);
    tg_tensor_free(&in);
    tg_exec_free(e);
    tg_graph_free(g);

    /* integer division by zero and an index out of range are errors, not crashes */
    tg_tensor ab[2] = { rand_tensor(TG_I64, 1, (int64_t[]){ 4 }, 1, 9),
                        rand_tensor(TG_I64, 1, (int64_t[]){ 4 }, 0, 1) };
    CHECK(run_op(TG_OP_DIV, 2, ab, 0, NULL, &out) == -1);
    CHECK(strstr(tg_errmsg(), "node 'op' (div): integer division by zero") != NULL);
    free_all(ab, 2);
    tg_tensor xi[2] = { rand_tensor(TG_F32, 2, (int64_t[]){ 5, 3 }, -1, 1),
                        rand_tensor(TG_I64, 1, (int64_t[]){ 2 }, 5, 6) };
    tg_attr ax = tg_attr_int("axis", 0);
    CHECK(run_op(TG_OP_INDEX_SELECT, 2, xi, 1, &ax, &out) == -1);
    CHECK(strstr(tg_errmsg(), "index 5 is out of range for axis 0 of size 5") != NULL);
    free_all(xi, 2);
}

/* ---- linear algebra ------------------------------------------------------------------- */

/* a [ba..., M, K] @ b [bb..., K, N] with NumPy batch broadcasting, in double. */
static void test_matmul_case(int ra, const int64_t *da, int rb, const int64_t *db)
{
    tg_tensor in[2] = { rand_tensor(TG_F32, ra, da, -1, 1), rand_tensor(TG_F32, rb, db, -1, 1) };
    tg_tensor out;
    if (run_op(TG_OP_MATMUL, 2, in, 0, NULL, &out)) {
        CHECK(0);
        free_all(in, 2);
        return;
    }
    int64_t M = ra > 1 ? da[ra - 2] : 1, K = da[ra - 1], N = rb > 1 ? db[rb - 1] : 1;
    int64_t batch = numel(out.rank, out.dims) / (M * N);
    int brank = out.rank - (ra > 1) - (rb > 1);
    double *ref = calloc((size_t)(batch * M * N), sizeof(double));
    for (int64_t bi = 0; bi < batch; bi++) {
        int64_t oa = 0, ob = 0, rem = bi, sa = 1, sb = 1;
        for (int k = brank - 1; k >= 0; k--) {       /* broadcast batch index */
            int64_t ik = rem % out.dims[k];
            rem /= out.dims[k];
            int ka = k - (brank - (ra - 2)), kb = k - (brank - (rb - 2));
            if (ka >= 0) {
                oa += (da[ka] == 1 ? 0 : ik) * sa;
                sa *= da[ka];
            }
            if (kb >= 0) {
                ob += (db[kb] == 1 ? 0 : ik) * sb;
                sb *= db[kb];
            }
        }
        for (int64_t i = 0; i < M; i++)
            for (int64_t j = 0; j < N; j++) {
                double s = 0;
                for (int64_t k = 0; k < K; k++)
                    s += at(&in[0], oa * M * K + i * K + k) * at(&in[1], ob * K * N + k * N + j);
                ref[(bi * M + i) * N + j] = s;
            }
    }
    check_close(&out, ref, batch * M * N, "matmul");
    free(ref);
    tg_tensor_free(&out);
    free_all(in, 2);
}

static void test_matmul(void)
{
    test_matmul_case(2, (int64_t[]){ 7, 33 }, 2, (int64_t[]){ 33, 5 });
    test_matmul_case(3, (int64_t[]){ 4, 7, 9 }, 2, (int64_t[]){ 9, 6 });          /* shared b */
    test_matmul_case(4, (int64_t[]){ 2, 1, 3, 8 }, 3, (int64_t[]){ 5, 8, 4 });    /* broadcast */
    test_matmul_case(3, (int64_t[]){ 1, 5, 8 }, 3, (int64_t[]){ 3, 8, 2 });
    test_matmul_case(1, (int64_t[]){ 8 }, 3, (int64_t[]){ 2, 8, 3 });            /* 1-D a */
    test_matmul_case(3, (int64_t[]){ 2, 4, 8 }, 1, (int64_t[]){ 8 });            /* 1-D b */
}

static void test_linear(void)
{
    int64_t xd[3] = { 2, 3, 20 }, wd[2] = { 7, 20 }, bd[1] = { 7 };
    tg_tensor in[3] = { rand_tensor(TG_F32, 3, xd, -1, 1), rand_tensor(TG_F32, 2, wd, -1, 1),
                        rand_tensor(TG_F32, 1, bd, -1, 1) }, out;
    double ref[42];
    CHECK(run_op(TG_OP_LINEAR, 3, in, 0, NULL, &out) == 0);
    for (int r = 0; r < 6; r++)
        for (int n = 0; n < 7; n++) {
            double s = at(&in[2], n);
            for (int k = 0; k < 20; k++)
                s += at(&in[0], r * 20 + k) * at(&in[1], n * 20 + k);
            ref[r * 7 + n] = s;
        }
    check_close(&out, ref, 42, "linear");
    tg_tensor_free(&out);
    /* f64 goes through float32 copies */
    tg_tensor in64[3];
    for (int i = 0; i < 3; i++) {
        in64[i] = (tg_tensor){ .dtype = TG_F64, .rank = in[i].rank };
        memcpy(in64[i].dims, in[i].dims, sizeof in[i].dims);
        tg_tensor_alloc(&in64[i]);
        tg_convert(TG_F64, in64[i].data, TG_F32, in[i].data, (size_t)numel(in[i].rank, in[i].dims));
    }
    CHECK(run_op(TG_OP_LINEAR, 3, in64, 0, NULL, &out) == 0);
    CHECK(out.dtype == TG_F64);
    check_close(&out, ref, 42, "linear f64");
    tg_tensor_free(&out);
    free_all(in64, 3);
    free_all(in, 3);
}

/* The IR takes any constant panel width for linear_packed's weight; the CPU
 * reads panels of 16 and refuses others with the reason. */
static void test_linear_packed_panel(void)
{
    int64_t xd[2] = { 2, 5 }, wd[3] = { 1, 5, 8 };
    tg_tensor in[2] = { rand_tensor(TG_F32, 2, xd, -1, 1), rand_tensor(TG_F32, 3, wd, -1, 1) };
    tg_tensor out;
    tg_attr n = tg_attr_int("n", 7);
    CHECK(run_op(TG_OP_LINEAR_PACKED, 2, in, 1, &n, &out) == -1);
    CHECK(strstr(tg_errmsg(), "cpu cannot run it: weight in panels of other than 16 columns"));
    free_all(in, 2);
}

static void test_conv(void)
{
    /* 2-D, groups 2, stride 2, padding 1, dilation 2, with bias */
    int64_t N = 2, C = 4, H = 9, W = 8, K = 6, G = 2, kh = 3, kw = 2, st = 2, pd = 1, dl = 2;
    int64_t xd[4] = { N, C, H, W }, wd[4] = { K, C / G, kh, kw }, bd[1] = { K };
    tg_tensor in[3] = { rand_tensor(TG_F32, 4, xd, -1, 1), rand_tensor(TG_F32, 4, wd, -1, 1),
                        rand_tensor(TG_F32, 1, bd, -1, 1) }, out;
    tg_attr attrs[4] = { tg_attr_int("groups", G), tg_attr_ints("stride", 1, &st),
                         tg_attr_ints("padding", 1, &pd), tg_attr_ints("dilation", 1, &dl) };
    if (run_op(TG_OP_CONV, 3, in, 4, attrs, &out)) {
        CHECK(0);
        free_all(in, 3);
        return;
    }
    int64_t OH = out.dims[2], OW = out.dims[3];
    CHECK(OH == (H + 2 * pd - dl * (kh - 1) - 1) / st + 1);
    double *ref = malloc(sizeof(double) * (size_t)(N * K * OH * OW));
    for (int64_t n = 0; n < N; n++)
        for (int64_t k = 0; k < K; k++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double s = at(&in[2], k);
                    int64_t g = k / (K / G);
                    for (int64_t c = 0; c < C / G; c++)
                        for (int64_t i = 0; i < kh; i++)
                            for (int64_t j = 0; j < kw; j++) {
                                int64_t h = oh * st - pd + i * dl, w = ow * st - pd + j * dl;
                                if (h < 0 || h >= H || w < 0 || w >= W)
                                    continue;
                                s += at(&in[0], ((n * C + g * (C / G) + c) * H + h) * W + w) *
                                     at(&in[1], ((k * (C / G) + c) * kh + i) * kw + j);
                            }
                    ref[((n * K + k) * OH + oh) * OW + ow] = s;
                }
    check_close(&out, ref, N * K * OH * OW, "conv");
    free(ref);
    tg_tensor_free(&out);
    free_all(in, 3);
}

/* q [B, Hq, L, E], k/v [B, Hk, S, E]; mask (bool [L, S] or float [B, 1, L, S])
 * or causal; GQA when Hq > Hk. */
static void test_sdpa_case(int64_t B, int64_t Hq, int64_t Hk, int64_t L, int64_t S, int mode)
{
    int64_t E = 16, qd[4] = { B, Hq, L, E }, kd[4] = { B, Hk, S, E };
    tg_tensor in[4] = { rand_tensor(TG_F32, 4, qd, -1, 1), rand_tensor(TG_F32, 4, kd, -1, 1),
                        rand_tensor(TG_F32, 4, kd, -1, 1) }, out;
    int nin = 3, nattr = 0;
    tg_attr attrs[2];
    if (Hq != Hk)
        attrs[nattr++] = tg_attr_int("gqa", 1);
    if (mode == 1) {
        attrs[nattr++] = tg_attr_int("causal", 1);
    } else if (mode == 2) {                     /* bool [L, S], every row keeps one key */
        in[nin++] = rand_tensor(TG_BOOL, 2, (int64_t[]){ L, S }, 0, 2);
        for (int64_t l = 0; l < L; l++)
            ((uint8_t *)in[3].data)[l * S + l % S] = 1;
    } else if (mode == 3) {                     /* additive float [B, 1, L, S] */
        in[nin++] = rand_tensor(TG_F32, 4, (int64_t[]){ B, 1, L, S }, -2, 2);
    }
    if (run_op(TG_OP_SDPA, nin, in, nattr, attrs, &out)) {
        CHECK(0);
        free_all(in, nin);
        return;
    }
    double *ref = malloc(sizeof(double) * (size_t)(B * Hq * L * E)), *p = malloc(8 * (size_t)S);
    for (int64_t b = 0; b < B; b++)
        for (int64_t h = 0; h < Hq; h++)
            for (int64_t l = 0; l < L; l++) {
                int64_t hk = h / (Hq / Hk);
                double mx = -INFINITY, sum = 0;
                for (int64_t s = 0; s < S; s++) {
                    double d = 0;
                    for (int64_t e = 0; e < E; e++)
                        d += at(&in[0], ((b * Hq + h) * L + l) * E + e) *
                             at(&in[1], ((b * Hk + hk) * S + s) * E + e);
                    d /= sqrt((double)E);
                    if (mode == 1 && s > l)
                        d = -INFINITY;
                    if (mode == 2 && !((uint8_t *)in[3].data)[l * S + s])
                        d = -INFINITY;
                    if (mode == 3)
                        d += at(&in[3], (b * L + l) * S + s);
                    p[s] = d;
                    mx = fmax(mx, d);
                }
                for (int64_t s = 0; s < S; s++)
                    sum += (p[s] = exp(p[s] - mx));
                for (int64_t e = 0; e < E; e++) {
                    double o = 0;
                    for (int64_t s = 0; s < S; s++)
                        o += p[s] / sum * at(&in[2], ((b * Hk + hk) * S + s) * E + e);
                    ref[((b * Hq + h) * L + l) * E + e] = o;
                }
            }
    check_close(&out, ref, B * Hq * L * E, "sdpa");
    free(ref);
    free(p);
    tg_tensor_free(&out);
    free_all(in, nin);
}

static void test_sdpa(void)
{
    for (int mode = 0; mode < 4; mode++) {
        test_sdpa_case(2, 4, 4, 9, 9, mode);
        test_sdpa_case(1, 6, 2, 5, 11, mode == 1 ? 0 : mode);   /* GQA */
    }
}

/* ---- nn, reductions, movement ------------------------------------------------------- */

static void test_norm_softmax(void)
{
    int64_t d[3] = { 3, 5, 12 };
    tg_tensor x = rand_tensor(TG_F32, 3, d, -2, 2), out;
    double ref[180];
    /* layer_norm over the last two axes, no weight */
    tg_attr a = tg_attr_int("axis", 1);
    CHECK(run_op(TG_OP_LAYER_NORM, 1, &x, 1, &a, &out) == 0);
    for (int r = 0; r < 3; r++) {
        double m = 0, v = 0;
        for (int i = 0; i < 60; i++)
            m += at(&x, r * 60 + i) / 60;
        for (int i = 0; i < 60; i++)
            v += pow(at(&x, r * 60 + i) - m, 2) / 60;
        for (int i = 0; i < 60; i++)
            ref[r * 60 + i] = (at(&x, r * 60 + i) - m) / sqrt(v + 1e-5);
    }
    check_close(&out, ref, 180, "layer_norm");
    tg_tensor_free(&out);
    /* softmax and log_softmax over the middle axis */
    for (int lg = 0; lg < 2; lg++) {
        tg_attr ax = tg_attr_int("axis", -2);
        CHECK(run_op(lg ? TG_OP_LOG_SOFTMAX : TG_OP_SOFTMAX, 1, &x, 1, &ax, &out) == 0);
        for (int o = 0; o < 3; o++)
            for (int i = 0; i < 12; i++) {
                double s = 0;
                for (int j = 0; j < 5; j++)
                    s += exp(at(&x, (o * 5 + j) * 12 + i));
                for (int j = 0; j < 5; j++) {
                    double v = at(&x, (o * 5 + j) * 12 + i);
                    ref[(o * 5 + j) * 12 + i] = lg ? v - log(s) : exp(v) / s;
                }
            }
        check_close(&out, ref, 180, lg ? "log_softmax" : "softmax");
        tg_tensor_free(&out);
    }
    /* batch_norm on [N, C, L] */
    tg_tensor bn[5] = { x, rand_tensor(TG_F32, 1, (int64_t[]){ 5 }, -1, 1),
                        rand_tensor(TG_F32, 1, (int64_t[]){ 5 }, 0.5, 2),
                        rand_tensor(TG_F32, 1, (int64_t[]){ 5 }, -1, 1),
                        rand_tensor(TG_F32, 1, (int64_t[]){ 5 }, -1, 1) };
    CHECK(run_op(TG_OP_BATCH_NORM, 5, bn, 0, NULL, &out) == 0);
    for (int i = 0; i < 180; i++) {
        int c = i / 12 % 5;
        ref[i] = (at(&x, i) - at(&bn[1], c)) / sqrt(at(&bn[2], c) + 1e-5) * at(&bn[3], c) +
                 at(&bn[4], c);
    }
    check_close(&out, ref, 180, "batch_norm");
    tg_tensor_free(&out);
    free_all(bn + 1, 4);
    tg_tensor_free(&x);
}

static void test_pool(void)
{
    int64_t d[4] = { 2, 3, 7, 6 };
    tg_tensor x = rand_tensor(TG_F32, 4, d, -1, 1), out;
    int64_t k3 = 3, s2 = 2, p1 = 1;
    tg_attr a[3] = { tg_attr_ints("kernel", 1, &k3), tg_attr_ints("stride", 1, &s2),
                     tg_attr_ints("padding", 1, &p1) };
    for (int avg = 0; avg < 2; avg++) {
        if (run_op(avg ? TG_OP_AVG_POOL : TG_OP_MAX_POOL, 1, &x, 3, a, &out)) {
            CHECK(0);
            continue;
        }
        int64_t OH = out.dims[2], OW = out.dims[3];
        CHECK(OH == 4 && OW == 3);
        double ref[2 * 3 * 4 * 3];
        for (int64_t nc = 0; nc < 6; nc++)
            for (int64_t oh = 0; oh < OH; oh++)
                for (int64_t ow = 0; ow < OW; ow++) {
                    double m = -INFINITY, s = 0;
                    for (int i = 0; i < 3; i++)
                        for (int j = 0; j < 3; j++) {
                            int64_t h = oh * 2 - 1 + i, w = ow * 2 - 1 + j;
                            if (h < 0 || h >= 7 || w < 0 || w >= 6)
                                continue;
                            m = fmax(m, at(&x, (nc * 7 + h) * 6 + w));
                            s += at(&x, (nc * 7 + h) * 6 + w);
                        }
                    ref[(nc * OH + oh) * OW + ow] = avg ? s / 9 : m;   /* count_include_pad */
                }
        check_close(&out, ref, 6 * OH * OW, avg ? "avg_pool" : "max_pool");
        tg_tensor_free(&out);
    }
    tg_attr os = tg_attr_ints("output_size", 2, (int64_t[]){ 1, 1 });
    CHECK(run_op(TG_OP_ADAPTIVE_AVG_POOL, 1, &x, 1, &os, &out) == 0);
    double ref[6];
    for (int nc = 0; nc < 6; nc++) {
        ref[nc] = 0;
        for (int i = 0; i < 42; i++)
            ref[nc] += at(&x, nc * 42 + i) / 42;
    }
    check_close(&out, ref, 6, "adaptive_avg_pool");
    tg_tensor_free(&out);
    tg_tensor_free(&x);
}

static void test_reduce(void)
{
    int64_t d[3] = { 4, 5, 6 };
    tg_tensor x = rand_tensor(TG_F32, 3, d, -1, 1), out;
    tg_attr a[2] = { tg_attr_ints("axes", 2, (int64_t[]){ -1, 0 }), tg_attr_int("keepdim", 1) };
    CHECK(run_op(TG_OP_REDUCE_MEAN, 1, &x, 2, a, &out) == 0);
    CHECK(out.rank == 3 && out.dims[0] == 1 && out.dims[1] == 5 && out.dims[2] == 1);
    double ref[5] = { 0 };
    for (int i = 0; i < 120; i++)
        ref[i / 6 % 5] += at(&x, i) / 24;
    check_close(&out, ref, 5, "reduce_mean");
    tg_tensor_free(&out);
    /* argmax over the flattened input, and along axis 1 */
    CHECK(run_op(TG_OP_ARGMAX, 1, &x, 0, NULL, &out) == 0);
    int64_t best = 0;
    for (int i = 1; i < 120; i++)
        if (at(&x, i) > at(&x, best))
            best = i;
    CHECK(out.rank == 0 && out.dtype == TG_I64 && ((int64_t *)out.data)[0] == best);
    tg_tensor_free(&out);
    tg_attr ax = tg_attr_int("axis", 1);
    CHECK(run_op(TG_OP_ARGMIN, 1, &x, 1, &ax, &out) == 0);
    bool ok = out.rank == 2;
    for (int o = 0; o < 4 && ok; o++)
        for (int i = 0; i < 6; i++) {
            int64_t b = 0;
            for (int j = 1; j < 5; j++)
                if (at(&x, (o * 5 + j) * 6 + i) < at(&x, (o * 5 + b) * 6 + i))
                    b = j;
            ok &= ((int64_t *)out.data)[o * 6 + i] == b;
        }
    CHECK(ok);
    tg_tensor_free(&out);
    tg_tensor_free(&x);
}

/* Movement on int32 (any dtype by size): index_select with i32 indices,
 * slice, concat, where with broadcasting. */
static void test_movement(void)
{
    int64_t d[2] = { 6, 4 };
    tg_tensor xi[2] = { rand_tensor(TG_I32, 2, d, -100, 100),
                        rand_tensor(TG_I32, 2, (int64_t[]){ 2, 3 }, -6, 6) }, out;
    tg_attr ax0 = tg_attr_int("axis", 0);
    CHECK(run_op(TG_OP_INDEX_SELECT, 2, xi, 1, &ax0, &out) == 0);
    bool ok = out.rank == 3 && out.dims[0] == 2 && out.dims[1] == 3 && out.dims[2] == 4;
    for (int j = 0; j < 6 && ok; j++) {
        int64_t r = (int64_t)at(&xi[1], j);
        r = r < 0 ? r + 6 : r;
        for (int i = 0; i < 4; i++)
            ok &= at(&out, j * 4 + i) == at(&xi[0], r * 4 + i);
    }
    CHECK(ok);
    tg_tensor_free(&out);

    tg_attr sl[4] = { tg_attr_int("axis", 0), tg_attr_int("start", 1), tg_attr_int("end", 6),
                      tg_attr_int("step", 2) };
    CHECK(run_op(TG_OP_SLICE, 1, xi, 4, sl, &out) == 0);
    ok = out.dims[0] == 3;
    for (int r = 0; r < 3 && ok; r++)
        for (int i = 0; i < 4; i++)
            ok &= at(&out, r * 4 + i) == at(&xi[0], (1 + 2 * r) * 4 + i);
    CHECK(ok);
    tg_tensor_free(&out);

    tg_tensor parts[3] = { xi[0], rand_tensor(TG_I32, 2, (int64_t[]){ 6, 1 }, -9, 9), xi[0] };
    tg_attr ax1 = tg_attr_int("axis", -1);
    CHECK(run_op(TG_OP_CONCAT, 3, parts, 1, &ax1, &out) == 0);
    ok = out.dims[1] == 9;
    for (int r = 0; r < 6 && ok; r++)
        for (int c = 0; c < 9; c++)
            ok &= at(&out, r * 9 + c) == (c < 4 ? at(&xi[0], r * 4 + c)
                                          : c == 4 ? at(&parts[1], r) : at(&xi[0], r * 4 + c - 5));
    CHECK(ok);
    tg_tensor_free(&out);

    tg_tensor w[3] = { rand_tensor(TG_BOOL, 2, (int64_t[]){ 6, 1 }, 0, 2), xi[0],
                       rand_tensor(TG_I32, 1, (int64_t[]){ 4 }, -9, 9) };
    CHECK(run_op(TG_OP_WHERE, 3, w, 0, NULL, &out) == 0);
    ok = true;
    for (int i = 0; i < 24; i++)
        ok &= at(&out, i) == (at(&w[0], i / 4) ? at(&xi[0], i) : at(&w[2], i % 4));
    CHECK(ok);
    tg_tensor_free(&out);
    tg_tensor_free(&w[0]);
    tg_tensor_free(&w[2]);
    tg_tensor_free(&parts[1]);
    free_all(xi, 2);
}

/* Generators sized by a symbol, and quantization per channel. */
static void test_gen_quant(void)
{
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 100);
    tg_shape xs = { .rank = 1, .d = { tg_dim_sym(n) } };
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    tg_dim end = tg_dim_sym(n);
    tg_attr aa[3] = { tg_attr_dims("end", 1, &end), tg_attr_int("start", 0),
                      tg_attr_dtype("dtype", TG_F32) };
    int r = tg_graph_add_node(g, TG_OP_ARANGE, "r", 0, NULL, 3, aa);
    int y = tg_graph_add_node(g, TG_OP_MUL, "y", 2, (int[]){ x, r }, 0, NULL);
    tg_graph_add_output(g, y);
    tg_exec *e = tg_exec_new(g, 0);
    int64_t len = 37;
    tg_tensor in = rand_tensor(TG_F32, 1, &len, -1, 1), out;
    CHECK(e && tg_exec_run(e, &in, &out) == 0);
    bool ok = out.dims[0] == 37;
    for (int i = 0; i < 37 && ok; i++)
        ok &= at(&out, i) == (float)(at(&in, i) * i);
    CHECK(ok);
    tg_tensor_free(&out);
    tg_tensor_free(&in);
    tg_exec_free(e);
    tg_graph_free(g);

    int64_t d[2] = { 3, 50 };
    tg_tensor q = rand_tensor(TG_F32, 2, d, -1, 1), qo, back;
    double scales[3] = { 0.01, 0.02, 0.005 };
    int64_t zeros[3] = { 0, -3, 5 };
    tg_attr qa[4] = { tg_attr_floats("scale", 3, scales), tg_attr_ints("zero_point", 3, zeros),
                      tg_attr_int("axis", 0), tg_attr_dtype("dtype", TG_I8) };
    CHECK(run_op(TG_OP_QUANTIZE, 1, &q, 4, qa, &qo) == 0);
    CHECK(run_op(TG_OP_DEQUANTIZE, 1, &qo, 3, qa, &back) == 0);
    ok = qo.dtype == TG_I8 && back.dtype == TG_F32;
    for (int i = 0; i < 150 && ok; i++) {
        int c = i / 50;
        double qr = fmin(fmax(nearbyint(at(&q, i) / scales[c]) + zeros[c], -128), 127);
        ok &= at(&qo, i) == qr && fabs(at(&back, i) - (qr - zeros[c]) * scales[c]) < 1e-6;
    }
    CHECK(ok);
    tg_tensor_free(&qo);
    tg_tensor_free(&back);
    tg_tensor_free(&q);
}

/* ---- data ops: nonzero and nms (ops.def's DATA flag) -------------------------------
 * Inference declares the length they find as a data symbol whose range is the
 * most they can make; the interpreter allocates by that bound, the kernel sets
 * the length, the symbol binds and flows to the nodes that read the value, and
 * the outputs report the length found. References: a scan over the elements;
 * greedy suppression with the IoU computed directly. A saved graph reads back;
 * tcompile refuses the ops. */

static int64_t i64_at(const tg_tensor *t, int64_t i)
{
    return ((const int64_t *)t->data)[i];
}

/* x [batch, 3, 5] of dtype dt, a third of it non-zero; y = nonzero(x), and
 * z = reduce_sum(index_select(w, 0, y's first row)) and shape(...) read the data symbol. */
static void test_nonzero(tg_dtype dt)
{
    tg_graph *g = tg_graph_new();
    int b = tg_graph_add_symbol(g, "batch", 1, 8);
    tg_shape xs = {.rank = 3, .d = {tg_dim_sym(b), tg_dim_const(3), tg_dim_const(5)}};
    tg_shape ws = {.rank = 1, .d = {tg_dim_sym(b)}};
    int x = tg_graph_add_input(g, "x", dt, &xs), w = tg_graph_add_input(g, "w", TG_F32, &ws);
    int y = tg_graph_add_node(g, TG_OP_NONZERO, "y", 1, &x, 0, NULL);
    CHECK(y >= 0);
    if (y < 0) {
        fprintf(stderr, "nonzero: %s\n", tg_errmsg());
        tg_graph_free(g);
        return;
    }
    /* [3, _d0], _d0 in [0, 8 * 15] */
    const tg_value *yv = &g->values[y];
    int d = g->nsym - 1;
    CHECK(g->sym[d].data && g->sym[d].min == 0 && g->sym[d].max == 8 * 15);
    CHECK(yv->dtype == TG_I64 && yv->shape.rank == 2 && tg_dim_eq(yv->shape.d[1], tg_dim_sym(d)));
    int64_t zero = 0;
    tg_attr ax = tg_attr_int("axis", 0);
    int zi = tg_graph_add_const_copy(g, "row0", TG_I64, &(tg_shape){0}, &zero);
    int in1[2] = {y, zi}, r0 = tg_graph_add_node(g, TG_OP_INDEX_SELECT, "r0", 2, in1, 1, &ax);
    int in2[2] = {w, r0}, sel = tg_graph_add_node(g, TG_OP_INDEX_SELECT, "sel", 2, in2, 1, &ax);
    int z = tg_graph_add_node(g, TG_OP_REDUCE_SUM, "z", 1, &sel, 0, NULL);
    int sh = tg_graph_add_node(g, TG_OP_SHAPE, "sh", 1, &sel, 0, NULL);
    CHECK(z >= 0 && sh >= 0 && tg_graph_add_output(g, y) >= 0 && tg_graph_add_output(g, sel) >= 0 &&
          tg_graph_add_output(g, z) >= 0 && tg_graph_add_output(g, sh) >= 0 && tg_graph_validate(g) == 0);
    tg_exec *e = tg_exec_new(g, 0);
    for (int64_t bs = 1; e && bs <= 8; bs += 7) {
        tg_tensor in[2] = {rand_tensor(dt, 3, (int64_t[]){bs, 3, 5}, 0, 0), rand_tensor(TG_F32, 1, &bs, -1, 1)}, out[4];
        int64_t n = 0, m = numel(3, in[0].dims);
        for (int64_t i = 0; i < m; i++) {
            double v = unit_uniform(0, 1) < 1.0 / 3 ? (dt == TG_BOOL ? 1 : floor(unit_uniform(1, 9))) : 0;
            tg_store_f64(dt, in[0].data, (size_t)i, v);
            n += v != 0;
        }
        CHECK(tg_exec_run(e, in, out) == 0);
        CHECK(out[0].rank == 2 && out[0].dims[0] == 3 && out[0].dims[1] == n);
        CHECK(out[0].nbytes == (size_t)(3 * n) * sizeof(int64_t));
        CHECK(out[1].rank == 1 && out[1].dims[0] == n);
        CHECK(out[3].rank == 1 && out[3].dims[0] == 1 && i64_at(&out[3], 0) == n);   /* shape */
        int64_t k = 0;
        double sum = 0;
        for (int64_t i = 0; i < m && out[0].dims[1] == n; i++) {
            if (tg_load_f64(dt, in[0].data, (size_t)i) == 0)
                continue;
            bool ok = i64_at(&out[0], k) == i / 15 && i64_at(&out[0], n + k) == i / 5 % 3 &&
                      i64_at(&out[0], 2 * n + k) == i % 5;
            CHECK(ok);
            CHECK(((float *)out[1].data)[k] == ((float *)in[1].data)[i / 15]);
            sum += ((float *)in[1].data)[i / 15];
            k++;
        }
        CHECK_NEAR(*(float *)out[2].data, sum, 1e-4 * (fabs(sum) + 1));
        for (int i = 0; i < 2; i++)
            tg_tensor_free(&in[i]);
        for (int i = 0; i < 4; i++)
            tg_tensor_free(&out[i]);
    }
    tg_exec_free(e);
    /* a saved graph reads back with its data symbol; tquant refuses it, tcompile not */
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    CHECK(tg_graph_write(g, f) == 0);
    fclose(f);
    tg_graph *r = tg_graph_read_mem((const uint8_t *)buf, len);
    CHECK(r && r->nsym == g->nsym && r->sym[d].data && r->sym[d].max == 8 * 15 &&
          tg_graph_validate(r) == 0);
    if (!r)
        fprintf(stderr, "read back: %s\n", tg_errmsg());
    CHECK(tg_graph_check_static(g, "tquant", false) < 0 &&
          strstr(tg_errmsg(), "node 'y' (nonzero): its output's shape depends on its input's values"));
    CHECK(tg_graph_check_static(g, "tcompile", true) == 0);
    tg_graph_free(r);
    free(buf);
    tg_graph_free(g);
}

/* A scalar counts as one element: [1, 0] or [1, 1]. */
static void test_nonzero_scalar(void)
{
    for (int v = 0; v < 2; v++) {
        tg_graph *g = tg_graph_new();
        int x = tg_graph_add_input(g, "x", TG_F32, &(tg_shape){0});
        int y = tg_graph_add_node(g, TG_OP_NONZERO, "y", 1, &x, 0, NULL);
        CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0);
        tg_tensor in = rand_tensor(TG_F32, 0, NULL, 0, 0), out;
        *(float *)in.data = (float)v;
        tg_exec *e = tg_exec_new(g, 0);
        CHECK(e && tg_exec_run(e, &in, &out) == 0);
        CHECK(out.rank == 2 && out.dims[0] == 1 && out.dims[1] == v);
        CHECK(v == 0 || i64_at(&out, 0) == 0);
        tg_exec_free(e);
        tg_tensor_free(&in);
        tg_tensor_free(&out);
        tg_graph_free(g);
    }
}

/* ---- nms ----------------------------------------------------------------------------- */

/* IoU of corner boxes a, b ([y1, x1, y2, x2], any corners); 0 without overlap. */
static double iou_ref(const double *a, const double *b)
{
    double inter = 1, aa = 1, ab = 1;
    for (int k = 0; k < 2; k++) {
        double a0 = fmin(a[k], a[k + 2]), a1 = fmax(a[k], a[k + 2]);
        double b0 = fmin(b[k], b[k + 2]), b1 = fmax(b[k], b[k + 2]);
        double lo = fmax(a0, b0), hi = fmin(a1, b1);
        inter *= hi > lo ? hi - lo : 0;
        aa *= a1 - a0;
        ab *= b1 - b0;
    }
    return inter > 0 && aa > 0 && ab > 0 ? inter / (aa + ab - inter) : 0;
}

/* Greedy suppression written out: repeatedly the best remaining box above the
 * threshold (ties: the lower index), kept unless it overlaps a kept one by
 * more than iou; rows into ref, their count returned. */
static int64_t nms_ref(const double *box, const double *score, int64_t B, int64_t C, int64_t N,
                       int64_t maxo, double iou, double thr, int64_t *ref)
{
    int64_t k = 0;
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            bool used[64] = {false};
            int64_t kept[64], nk = 0;
            while (nk < maxo) {
                int64_t best = -1;
                for (int64_t i = 0; i < N; i++) {
                    double s = score[(b * C + c) * N + i];
                    if (!used[i] && s > thr && (best < 0 || s > score[(b * C + c) * N + best]))
                        best = i;
                }
                if (best < 0)
                    break;
                used[best] = true;
                bool keep = true;
                for (int64_t j = 0; j < nk; j++)
                    keep = keep && !(iou_ref(&box[(b * N + best) * 4], &box[(b * N + kept[j]) * 4]) > iou);
                if (!keep)
                    continue;
                kept[nk++] = best;
                ref[k * 3] = b, ref[k * 3 + 1] = c, ref[k * 3 + 2] = best;
                k++;
            }
        }
    return k;
}

/* boxes [batch, 12, 4] in corner form (some given with their corners swapped)
 * or center form, scores [batch, 3, 12] with ties; max_output read at run time
 * (rt) or an attribute. */
static void test_nms(bool center, bool rt)
{
    enum { N = 12, C = 3 };
    tg_graph *g = tg_graph_new();
    int bsym = tg_graph_add_symbol(g, "batch", 1, 4);
    tg_shape bs = {.rank = 3, .d = {tg_dim_sym(bsym), tg_dim_const(N), tg_dim_const(4)}};
    tg_shape ss = {.rank = 3, .d = {tg_dim_sym(bsym), tg_dim_const(C), tg_dim_const(N)}};
    int in[3] = {tg_graph_add_input(g, "boxes", TG_F32, &bs), tg_graph_add_input(g, "scores", TG_F32, &ss)};
    double iou = 0.3, thr = 0.2;
    int64_t maxo = 4;
    tg_attr a[4] = {tg_attr_float("iou_threshold", iou), tg_attr_float("score_threshold", thr),
                    tg_attr_int("center_point_box", center), tg_attr_int("max_output", maxo)};
    int y;
    if (rt) {
        in[2] = tg_graph_add_input(g, "max_output", TG_I64, &(tg_shape){.rank = 1, .d = {tg_dim_const(1)}});
        a[3] = tg_attr_input("max_output", 2, TG_ATTR_INT);
        int d = tg_graph_add_data_symbol(g, 0, 4 * C * N);
        tg_shape ys = {.rank = 2, .d = {tg_dim_sym(d), tg_dim_const(3)}};
        y = tg_graph_add_dynamic_node(g, TG_OP_NMS, "y", 3, in, 4, a, TG_I64, &ys);
    } else {
        y = tg_graph_add_node(g, TG_OP_NMS, "y", 2, in, 4, a);
        CHECK(y >= 0 && g->sym[g->nsym - 1].data && g->sym[g->nsym - 1].max == 4 * C * maxo);
    }
    CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0);
    if (y < 0) {
        fprintf(stderr, "nms: %s\n", tg_errmsg());
        tg_graph_free(g);
        return;
    }
    tg_exec *e = tg_exec_new(g, 0);
    for (int64_t b = 1; e && b <= 4; b += 3) {
        tg_tensor t[3] = {rand_tensor(TG_F32, 3, (int64_t[]){b, N, 4}, 0, 0), rand_tensor(TG_F32, 3, (int64_t[]){b, C, N}, 0, 0),
                          rand_tensor(TG_I64, 1, (int64_t[]){1}, 0, 0)}, out;
        double box[4 * N * 4], corner[4 * N * 4], score[4 * C * N];
        for (int64_t i = 0; i < b * N; i++) {
            double y0 = unit_uniform(0, 4), x0 = unit_uniform(0, 4), h = unit_uniform(0.5, 2), w = unit_uniform(0.5, 2);
            double cb[4] = {y0, x0, y0 + h, x0 + w};
            if (i % 3 == 0)             /* the other two corners */
                cb[0] = y0 + h, cb[2] = y0;
            memcpy(&corner[i * 4], cb, sizeof cb);
            double cc[4] = {x0 + w / 2, y0 + h / 2, w, h};
            memcpy(&box[i * 4], center ? cc : cb, sizeof cb);
        }
        for (int64_t i = 0; i < b * C * N; i++)
            score[i] = floor(unit_uniform(0, 8)) / 8;     /* ties, and some at the threshold */
        for (int64_t i = 0; i < b * N * 4; i++)
            ((float *)t[0].data)[i] = (float)box[i], box[i] = ((float *)t[0].data)[i];
        for (int64_t i = 0; i < b * N; i++) {    /* the reference on the rounded boxes */
            const double *v = &box[i * 4];
            double cb[4] = {v[1] - v[3] / 2, v[0] - v[2] / 2, v[1] + v[3] / 2, v[0] + v[2] / 2};
            memcpy(&corner[i * 4], center ? cb : v, sizeof cb);
        }
        for (int64_t i = 0; i < b * C * N; i++)
            ((float *)t[1].data)[i] = (float)score[i];
        *(int64_t *)t[2].data = maxo;
        int64_t ref[4 * C * N * 3], k = nms_ref(corner, score, b, C, N, maxo, iou, thr, ref);
        CHECK(tg_exec_run(e, t, &out) == 0);
        CHECK(out.rank == 2 && out.dims[0] == k && out.dims[1] == 3);
        CHECK(out.dims[0] != k || !memcmp(out.data, ref, (size_t)k * 3 * sizeof(int64_t)));
        for (int i = 0; i < 3; i++)
            tg_tensor_free(&t[i]);
        tg_tensor_free(&out);
    }
    tg_exec_free(e);
    tg_graph_free(g);
}

/* Bad inputs fail with the node named; a run-time max_output past the bound the
 * graph declares fails the range check. */
static void test_nms_errors(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape bs = {.rank = 3, .d = {tg_dim_const(1), tg_dim_const(5), tg_dim_const(4)}};
    tg_shape ss = {.rank = 3, .d = {tg_dim_const(1), tg_dim_const(2), tg_dim_const(6)}};
    int in[2] = {tg_graph_add_input(g, "boxes", TG_F32, &bs), tg_graph_add_input(g, "scores", TG_F32, &ss)};
    CHECK(tg_graph_add_node(g, TG_OP_NMS, "y", 2, in, 0, NULL) < 0 &&
          strstr(tg_errmsg(), "node y (nms)") && strstr(tg_errmsg(), "boxes"));
    in[1] = in[0];
    tg_attr a = tg_attr_int("max_output", 2);
    int y = tg_graph_add_node(g, TG_OP_NMS, "y", 2, in, 1, &a);
    CHECK(y < 0);
    tg_graph_free(g);
}

int main(void)
{
    unit_seed("test_exec");
    test_every_op_has_a_kernel();
    test_inputs();
    test_chain_and_errors();
    test_matmul();
    test_linear();
    test_linear_packed_panel();
    test_conv();
    test_sdpa();
    test_norm_softmax();
    test_pool();
    test_reduce();
    test_movement();
    test_gen_quant();
    test_nonzero(TG_F32);
    test_nonzero(TG_BOOL);
    test_nonzero(TG_I64);
    test_nonzero_scalar();
    test_nms(false, false);
    test_nms(true, false);
    test_nms(false, true);
    test_nms_errors();
    return unit_report();
}
