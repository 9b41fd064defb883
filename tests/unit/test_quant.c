/* lib/quant: weight quantizers, observers (minmax, moving average, percentile,
 * entropy), and the rewrite of a small graph checked against a float64
 * reference of the quantized math. */
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "exec/exec.h"
#include "ops/infer.h"
#include "backend/cpu/kernels/qgemm.h"
#include "quant/quant.h"
#include "unit.h"

static float rndf(float lo, float hi) { return (float)unit_uniform(lo, hi); }

static double gauss(void)
{
    return sqrt(-2 * log(unit_uniform(0, 1) + 1e-300)) * cos(6.283185307179586 * unit_uniform(0, 1));
}

static void test_weights(void)
{
    enum { R = 7, C = 45 };
    float w[R * C], s[R], sg[R * 2];
    int8_t q[R * C];
    uint8_t q4[R * 23];
    for (int i = 0; i < R * C; i++) w[i] = rndf(-2, 2);
    tg_quant_weights_int8(w, R, C, q, s);
    for (int r = 0; r < R; r++) {
        float amax = 0;
        for (int k = 0; k < C; k++) amax = fmaxf(amax, fabsf(w[r * C + k]));
        CHECK_NEAR(s[r], amax / 127, 1e-7);
        for (int k = 0; k < C; k++) {
            CHECK(q[r * C + k] >= -127);
            CHECK_NEAR(q[r * C + k] * s[r], w[r * C + k], s[r] / 2 * 1.0001);
        }
    }
    /* int4, groups of 32 over 45 columns: two scales a row, the last group short */
    tg_quant_weights_grouped(w, R, C, 4, 32, q4, sg);
    for (int r = 0; r < R; r++)
        for (int k = 0; k < C; k++) {
            float sc = sg[r * 2 + k / 32];
            CHECK_NEAR(tgk_wq_weight(q4, 4, C, 32, sg, r, k), w[r * C + k], sc / 2 * 1.0001);
        }
}

static tg_observer *observe(tg_observer_kind k, const float *x, int64_t n, int batches)
{
    tg_quant_opts o;
    tg_quant_opts_init(&o);
    o.observer = k;
    o.percentile = 99.0;
    o.averaging = 0.5;
    tg_observer *ob = tg_observer_new(&o);
    for (int b = 0; b < batches; b++) CHECK(tg_observer_update(ob, x + b * n, n) == 0);
    return ob;
}

static void test_observers(void)
{
    enum { N = 20000 };
    float *x = malloc(sizeof *x * N * 2), lo, hi;
    for (int i = 0; i < N; i++) x[i] = (float)gauss();
    for (int i = 0; i < N; i++) x[N + i] = (float)gauss() * 0.5f;
    x[17] = 40.0f;                 /* one outlier */
    x[N + 3] = NAN;
    float mn = 0, mx = 0;
    for (int i = 0; i < 2 * N; i++) if (x[i] == x[i]) mn = fminf(mn, x[i]), mx = fmaxf(mx, x[i]);

    tg_observer *ob = observe(TG_OBS_MINMAX, x, N, 2);
    CHECK(tg_observer_range(ob, &lo, &hi) == 0 && lo == mn && hi == mx);
    tg_observer_free(ob);

    /* moving average, c = 0.5: the second batch's range pulls halfway */
    ob = observe(TG_OBS_MOVING_AVERAGE, x, N, 2);
    float lo1 = 0, hi1 = 0, lo2 = 0, hi2 = 0;
    for (int i = 0; i < N; i++) lo1 = fminf(lo1, x[i]), hi1 = fmaxf(hi1, x[i]);
    for (int i = N; i < 2 * N; i++) if (x[i] == x[i]) lo2 = fminf(lo2, x[i]), hi2 = fmaxf(hi2, x[i]);
    CHECK(tg_observer_range(ob, &lo, &hi) == 0);
    CHECK_NEAR(lo, lo1 + 0.5f * (lo2 - lo1), 1e-5);
    CHECK_NEAR(hi, hi1 + 0.5f * (hi2 - hi1), 1e-5);
    tg_observer_free(ob);

    /* percentile 99 of N(0,1): about +-2.33 (the mixture with N(0, 0.25) is a bit less) */
    ob = observe(TG_OBS_PERCENTILE, x, N, 1);
    CHECK(tg_observer_range(ob, &lo, &hi) == 0);
    CHECK(hi > 2.0f && hi < 2.7f && lo < -2.0f && lo > -2.7f);
    tg_observer_free(ob);

    /* entropy ignores the outlier: a threshold well inside [3, 40) */
    ob = observe(TG_OBS_ENTROPY, x, N, 1);
    CHECK(tg_observer_range(ob, &lo, &hi) == 0);
    CHECK(hi > 2.5f && hi < 20.0f && lo < -2.5f);
    tg_observer_free(ob);

    /* nothing seen: no range */
    ob = observe(TG_OBS_MINMAX, x, 0, 1);
    CHECK(tg_observer_range(ob, &lo, &hi) == -1);
    tg_observer_free(ob);
    free(x);

    /* a uniform histogram: the best threshold keeps (almost) everything */
    double h[2048];
    for (int i = 0; i < 2048; i++) h[i] = 100;
    CHECK(tg_entropy_threshold(h, 2048, 1.0, 128) > 1900);
}

/* x [s, 8] -> linear(8 -> 5) -> relu -> linear(5 -> 3): quantized statically,
 * then compared with the quantized math in float64. */
static void test_rewrite(void)
{
    tg_graph *g = tg_graph_new();
    int s = tg_graph_add_symbol(g, "s", 1, 64);
    tg_shape xs = {.rank = 2, .d = {tg_dim_sym(s), tg_dim_const(8)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    float w1[40], b1[5], w2[15];
    for (int i = 0; i < 40; i++) w1[i] = rndf(-1, 1);
    for (int i = 0; i < 5; i++) b1[i] = rndf(-0.5f, 0.5f);
    for (int i = 0; i < 15; i++) w2[i] = rndf(-1, 1);
    int64_t d1[2] = {5, 8}, db[1] = {5}, d2[2] = {3, 5};
    tg_shape s1 = tg_shape_of(2, d1), sb = tg_shape_of(1, db), s2 = tg_shape_of(2, d2);
    int vw1 = tg_graph_add_const_copy(g, "w1", TG_F32, &s1, w1);
    int vb1 = tg_graph_add_const_copy(g, "b1", TG_F32, &sb, b1);
    int vw2 = tg_graph_add_const_copy(g, "w2", TG_F32, &s2, w2);
    int in1[3] = {x, vw1, vb1};
    int h = tg_graph_add_node(g, TG_OP_LINEAR, "fc1", 3, in1, 0, NULL);
    int r = tg_graph_add_node(g, TG_OP_RELU, "act", 1, &h, 0, NULL);
    int in2[2] = {r, vw2};
    int y = tg_graph_add_node(g, TG_OP_LINEAR, "fc2", 2, in2, 0, NULL);
    CHECK(y >= 0 && tg_graph_add_output(g, y) == 0);

    tg_quant_opts o;
    tg_quant_opts_init(&o);
    o.no_bias_correction = true;
    tg_calib *c = tg_calib_new(g, &o);
    CHECK(c != NULL);
    tg_tensor in = {.dtype = TG_F32, .rank = 2, .dims = {16, 8}};
    CHECK(tg_tensor_alloc(&in) == 0);
    float *xd = in.data;
    for (int i = 0; i < 128; i++) xd[i] = rndf(-2, 3);
    tg_tensor ref;
    CHECK(tg_calib_run(c, &in, &ref) == 0);
    tg_graph *q = tg_graph_clone(g);
    CHECK(tg_quant_rewrite(q, &o, c) == 2);
    CHECK(tg_graph_find_value(q, "fc2") >= 0);     /* the output keeps its name */
    for (int i = 0; i < q->nnode; i++) CHECK(q->nodes[i].op != TG_OP_LINEAR);

    tg_exec *e = tg_exec_new(q, 1);
    tg_tensor got;
    CHECK(e && tg_exec_run(e, &in, &got) == 0);
    /* float64 reference of the quantized math, layer by layer */
    float lo, hi, sc1, sc2, ws1[5], ws2[3];
    int32_t z1, z2;
    int8_t q1[40], q2[15];
    tg_quant_weights_int8(w1, 5, 8, q1, ws1);
    tg_quant_weights_int8(w2, 3, 5, q2, ws2);
    CHECK(tg_calib_range(c, x, &lo, &hi) == 0);
    tgk_qparams_u8(lo, hi, &sc1, &z1);
    CHECK(tg_calib_range(c, r, &lo, &hi) == 0);
    tgk_qparams_u8(lo, hi, &sc2, &z2);
    double worst = 0;
    for (int m = 0; m < 16; m++) {
        double a[5];
        for (int n = 0; n < 5; n++) {
            double acc = 0;
            for (int k = 0; k < 8; k++) {
                float v = nearbyintf(xd[m * 8 + k] / sc1) + (float)z1;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                acc += (v - z1) * q1[n * 8 + k];
            }
            a[n] = fmax(0, acc * ((double)sc1 * ws1[n]) + b1[n]);
        }
        for (int n = 0; n < 3; n++) {
            double acc = 0;
            for (int k = 0; k < 5; k++) {
                float v = nearbyintf((float)a[k] / sc2) + (float)z2;
                v = v < 0 ? 0 : v > 255 ? 255 : v;
                acc += (v - z2) * q2[n * 5 + k];
            }
            double d = fabs(acc * ((double)sc2 * ws2[n]) - ((float *)got.data)[m * 3 + n]);
            worst = d > worst ? d : worst;
        }
    }
    CHECK(worst < 1e-4);   /* float32 scaling of exact integer sums */
    tg_quant_report rep;
    CHECK(tg_quant_report_init(&rep, g) == 0 && tg_quant_report_add(&rep, &ref, &got) == 0);
    CHECK(rep.out[0].top1_rows == 16 && rep.out[0].max_abs < 0.2);
    tg_quant_report_free(&rep);

    /* skip by op name: nothing left to quantize; by an unknown name: an error */
    const char *skip[] = {"linear"}, *bad[] = {"nope"};
    int *layers;
    o.skip = skip, o.nskip = 1;
    CHECK(tg_quant_layers(g, &o, &layers) == 0);
    free(layers);
    o.skip = bad;
    CHECK(tg_quant_layers(g, &o, &layers) == -1);
    tg_exec_free(e);
    tg_tensor_free(&in), tg_tensor_free(&ref), tg_tensor_free(&got);
    tg_calib_free(c);
    tg_graph_free(q);
    tg_graph_free(g);
}


/* x -> conv -> conv -> linear, each reading the one before it directly: every
 * layer is quantized with its calibrated input range and a corrected bias,
 * though rewriting the one before replaced the value it read. */
static void test_back_to_back(void)
{
    tg_graph *g = tg_graph_new();
    int64_t xd[4] = {1, 3, 6, 6}, w1d[4] = {4, 3, 3, 3}, w2d[4] = {5, 4, 1, 1}, w3d[2] = {2, 4};
    tg_shape xs = tg_shape_of(4, xd);
    int v = tg_graph_add_input(g, "x", TG_F32, &xs);
    const int64_t *wd[3] = {w1d, w2d, w3d};
    int obs[3];
    for (int l = 0; l < 3; l++) {
        int rank = l < 2 ? 4 : 2;
        int64_t nw = 1;
        for (int i = 0; i < rank; i++) nw *= wd[l][i];
        float w[108], b[5];
        for (int i = 0; i < nw; i++) w[i] = rndf(-1, 1);
        for (int i = 0; i < wd[l][0]; i++) b[i] = rndf(-0.5f, 0.5f);
        char wn[8], bn[8], nn[8];
        snprintf(wn, sizeof wn, "w%d", l), snprintf(bn, sizeof bn, "b%d", l);
        snprintf(nn, sizeof nn, "l%d", l);
        tg_shape ws = tg_shape_of(rank, wd[l]), bs = tg_shape_of(1, wd[l]);
        int in[3] = {v, tg_graph_add_const_copy(g, wn, TG_F32, &ws, w),
                     tg_graph_add_const_copy(g, bn, TG_F32, &bs, b)};
        obs[l] = v;
        v = tg_graph_add_node(g, l < 2 ? TG_OP_CONV : TG_OP_LINEAR, nn, 3, in, 0, NULL);
    }
    CHECK(v >= 0 && tg_graph_add_output(g, v) == 0);
    tg_quant_opts o;
    tg_quant_opts_init(&o);
    o.no_chain = true;          /* (test_chain: conv -> conv passing u8) */
    tg_calib *c = tg_calib_new(g, &o);
    CHECK(c != NULL);
    tg_tensor in = {.dtype = TG_F32, .rank = 4, .dims = {1, 3, 6, 6}}, ref;
    CHECK(tg_tensor_alloc(&in) == 0);
    for (int i = 0; i < 108; i++) ((float *)in.data)[i] = rndf(-2, 3);
    CHECK(tg_calib_run(c, &in, &ref) == 0);
    tg_graph *q = tg_graph_clone(g);
    CHECK(tg_quant_rewrite(q, &o, c) == 3);
    for (int l = 0; l < 3; l++) {
        char nn[8], bn[32];
        snprintf(nn, sizeof nn, "l%d.q", l), snprintf(bn, sizeof bn, "l%d.bias.corrected", l);
        int ni = tg_graph_find_node(q, nn);
        float lo, hi, sc;
        int32_t z;
        double xsc = 0;
        CHECK(ni >= 0 && tg_graph_find_value(q, bn) >= 0);
        CHECK(tg_calib_range(c, obs[l], &lo, &hi) == 0);
        tgk_qparams_u8(lo, hi, &sc, &z);
        CHECK(ni >= 0 && tg_attr_get_float(&q->nodes[ni], "x_scale", 0, &xsc) == 0);
        CHECK((float)xsc == sc && tg_node_int(&q->nodes[ni], "x_zero", -1) == z);
    }
    tg_tensor_free(&in), tg_tensor_free(&ref);
    tg_calib_free(c);
    tg_graph_free(q);
    tg_graph_free(g);
}


/* A conv into a constant of g: weight [k, c/groups, kh, kw] random, bias. */
static int conv_of(tg_graph *g, const char *name, int x, int64_t k, int64_t cg, int64_t ker,
                   int64_t groups)
{
    int64_t wd[4] = {k, cg, ker, ker}, n = k * cg * ker * ker;
    float *w = malloc(sizeof *w * (size_t)n), b[16];
    for (int64_t i = 0; i < n; i++) w[i] = rndf(-1, 1);
    for (int64_t i = 0; i < k; i++) b[i] = rndf(-0.5f, 0.5f);
    char wn[32], bn[32];
    snprintf(wn, sizeof wn, "%s.w", name), snprintf(bn, sizeof bn, "%s.b", name);
    tg_shape ws = tg_shape_of(4, wd), bs = tg_shape_of(1, wd);
    int in[3] = {x, tg_graph_add_const_copy(g, wn, TG_F32, &ws, w),
                 tg_graph_add_const_copy(g, bn, TG_F32, &bs, b)};
    free(w);
    tg_attr a[2] = {tg_attr_ints("padding", 1, (int64_t[]){ker / 2}), tg_attr_int("groups", groups)};
    return tg_graph_add_node(g, TG_OP_CONV, name, 3, in, 2, a);
}

/* conv a -> relu -> conv b -> clamp 0..6 -> depthwise conv c -> conv d ->
 * + x -> e; conv f of e -> + e: a, b and c hand u8 to the next conv (the
 * relu and the clamp fused), d and f stay float (an add reads them). The
 * outputs equal the unchained graph's but where a chained requantization
 * (one rounding from the accumulator) lands one u8 step from the unchained
 * one (rounded to float, then quantized) at a near-tie: about 1 seed in
 * 100 moves 4-12 of the 256 outputs by up to 0.8% of the largest; allow a
 * quarter of them and 2%. A depthwise conv between
 * float ops is left float when chaining. */
static void test_chain(void)
{
    tg_graph *g = tg_graph_new();
    int64_t xd[4] = {1, 4, 8, 8};
    tg_shape xs = tg_shape_of(4, xd);
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    tg_attr six[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};
    int a = conv_of(g, "a", x, 8, 4, 3, 1);
    int r = tg_graph_add_node(g, TG_OP_RELU, "r", 1, &a, 0, NULL);
    int b = conv_of(g, "b", r, 8, 8, 1, 1);
    int b6 = tg_graph_add_node(g, TG_OP_CLAMP, "b6", 1, &b, 2, six);
    int c = conv_of(g, "c", b6, 8, 1, 3, 8);
    int d = conv_of(g, "d", c, 4, 8, 1, 1);
    int e = tg_graph_add_node(g, TG_OP_ADD, "e", 2, (int[]){d, x}, 0, NULL);
    int f = conv_of(g, "f", e, 4, 4, 1, 1);
    int y = tg_graph_add_node(g, TG_OP_ADD, "y", 2, (int[]){f, e}, 0, NULL);
    CHECK(y >= 0 && tg_graph_add_output(g, y) == 0);
    tg_quant_opts o;
    tg_quant_opts_init(&o);
    tg_calib *cal = tg_calib_new(g, &o);
    tg_tensor in[3];
    for (int s = 0; s < 3; s++) {
        in[s] = (tg_tensor){.dtype = TG_F32, .rank = 4, .dims = {1, 4, 8, 8}};
        CHECK(tg_tensor_alloc(&in[s]) == 0);
        for (int i = 0; i < 256; i++) ((float *)in[s].data)[i] = rndf(-2, 3);
        tg_tensor out;
        CHECK(cal && tg_calib_run(cal, &in[s], &out) == 0);
        tg_tensor_free(&out);
    }
    tg_graph *q[2];
    for (int k = 0; k < 2; k++) {
        o.no_chain = k == 0;
        q[k] = tg_graph_clone(g);
        CHECK(q[k] && tg_quant_rewrite(q[k], &o, cal) == 5);
    }
    static const char *const u8[] = {"a", "b", "c"}, *f32[] = {"d", "e", "f", "y"};
    for (int i = 0; i < 3; i++) {
        int v = tg_graph_find_value(q[1], u8[i]);
        CHECK(v >= 0 && q[1]->values[v].dtype == TG_U8 && tg_graph_find_value(q[0], u8[i]) >= 0);
    }
    for (int i = 0; i < 4; i++) {
        int v = tg_graph_find_value(q[1], f32[i]);
        CHECK(v >= 0 && q[1]->values[v].dtype == TG_F32);
    }
    int nact = 0;
    for (int i = 0; i < q[1]->nnode; i++)
        nact += q[1]->nodes[i].op == TG_OP_RELU || q[1]->nodes[i].op == TG_OP_CLAMP;
    CHECK(nact == 0 && tg_graph_find_value(q[0], "r") >= 0 && tg_graph_find_value(q[0], "b6") >= 0);
    tg_exec *e0 = tg_exec_new(q[0], 1), *e1 = tg_exec_new(q[1], 1);
    for (int s = 0; s < 3; s++) {
        tg_tensor y0, y1;
        CHECK(e0 && e1 && tg_exec_run(e0, &in[s], &y0) == 0 && tg_exec_run(e1, &in[s], &y1) == 0);
        CHECK(y0.nbytes == y1.nbytes && y0.nbytes == 256 * sizeof(float));
        const float *p0 = y0.data, *p1 = y1.data;
        float ymax = 0, dmax = 0;
        int ndiff = 0;
        for (int i = 0; i < 256; i++) {
            ymax = fmaxf(ymax, fabsf(p0[i]));
            dmax = fmaxf(dmax, fabsf(p0[i] - p1[i]));
            ndiff += p0[i] != p1[i];
        }
        CHECK(ymax > 10 && ndiff <= 64 && dmax <= 0.02f * ymax);
        tg_tensor_free(&y0), tg_tensor_free(&y1), tg_tensor_free(&in[s]);
    }
    tg_exec_free(e0), tg_exec_free(e1);
    tg_graph_free(q[0]), tg_graph_free(q[1]);
    tg_calib_free(cal);
    tg_graph_free(g);
    /* a depthwise conv between float ops stays float, unless not chaining;
     * c above, between chained convs, was quantized */
    g = tg_graph_new();
    x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int h = conv_of(g, "h", x, 4, 1, 3, 4);
    y = tg_graph_add_node(g, TG_OP_ADD, "y", 2, (int[]){h, x}, 0, NULL);
    CHECK(y >= 0 && tg_graph_add_output(g, y) == 0);
    int *layers = NULL;
    o.no_chain = false;
    CHECK(tg_quant_layers(g, &o, &layers) == 0);
    free(layers);
    o.no_chain = true;
    CHECK(tg_quant_layers(g, &o, &layers) == 1);
    free(layers);
    tg_graph_free(g);
}

/* linear(dequantize(quantize(x)), dequantize(wq)): folded only when both sides
 * allow; a pair whose two nodes disagree stays float. */
static void test_fold(void)
{
    for (int agree = 0; agree < 2; agree++) {
        tg_graph *g = tg_graph_new();
        int64_t xd[2] = {2, 4}, wd[2] = {3, 4};
        tg_shape xs = tg_shape_of(2, xd), ws = tg_shape_of(2, wd);
        int x = tg_graph_add_input(g, "x", TG_F32, &xs);
        int8_t wq[12];
        for (int i = 0; i < 12; i++) wq[i] = (int8_t)(i * 19 - 100);
        int w = tg_graph_add_const_copy(g, "w", TG_I8, &ws, wq);
        double sc[3] = {0.5, 0.25, 0.125};
        tg_attr qa[3] = {tg_attr_float("scale", 0.0625), tg_attr_int("zero_point", 3),
                         tg_attr_dtype("dtype", TG_U8)};
        tg_attr da[2] = {tg_attr_float("scale", agree ? 0.0625 : 0.125), tg_attr_int("zero_point", 3)};
        tg_attr wa[2] = {tg_attr_floats("scale", 3, sc), tg_attr_int("axis", 0)};
        int q = tg_graph_add_node(g, TG_OP_QUANTIZE, "q", 1, &x, 3, qa);
        int dx = tg_graph_add_node(g, TG_OP_DEQUANTIZE, "dx", 1, &q, 2, da);
        int dw = tg_graph_add_node(g, TG_OP_DEQUANTIZE, "dw", 1, &w, 2, wa);
        int in[2] = {dx, dw};
        int y = tg_graph_add_node(g, TG_OP_LINEAR, "fc", 2, in, 0, NULL);
        CHECK(y >= 0 && tg_graph_add_output(g, y) == 0);
        tg_graph *f = tg_graph_clone(g);
        CHECK(tg_quant_fold_qdq(f) == agree);
        int nq = 0;
        for (int i = 0; i < f->nnode; i++) nq += f->nodes[i].op == TG_OP_QLINEAR;
        CHECK(nq == agree && f->nnode == (agree ? 1 : 4));
        if (agree) {            /* the same numbers as the float simulation */
            tg_tensor in0 = {.dtype = TG_F32, .rank = 2, .dims = {2, 4}}, a, b;
            CHECK(tg_tensor_alloc(&in0) == 0);
            for (int i = 0; i < 8; i++) ((float *)in0.data)[i] = rndf(-1, 10);
            tg_exec *e1 = tg_exec_new(g, 1), *e2 = tg_exec_new(f, 1);
            CHECK(tg_exec_run(e1, &in0, &a) == 0 && tg_exec_run(e2, &in0, &b) == 0);
            for (int i = 0; i < 6; i++)
                CHECK_NEAR(((float *)a.data)[i], ((float *)b.data)[i], 1e-5);
            tg_exec_free(e1), tg_exec_free(e2);
            tg_tensor_free(&in0), tg_tensor_free(&a), tg_tensor_free(&b);
        }
        tg_graph_free(f);
        tg_graph_free(g);
    }
}

int main(void)
{
    unit_seed("test_quant");
    test_weights();
    test_observers();
    test_rewrite();
    test_back_to_back();
    test_chain();
    test_fold();
    return unit_report();
}
