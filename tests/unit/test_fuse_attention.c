/* The attention fusion pass (lib/passes/fuse_attention.c) on small attention
 * graphs built here: what it fuses, what it refuses, and that the interpreter
 * gives the same outputs before and after on fresh random inputs (float32:
 * max |a - b| <= 1e-5 * max(1, |a|)). In float16 and bfloat16 the fused graph
 * (an sdpa on f32 casts) is checked against float64 attention on the same
 * rounded inputs: within one ulp of the narrow type, where the unfused graph
 * rounds every step. */
#include <float.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "error.h"
#include "exec/exec.h"
#include "passes/passes.h"
#include "randgraph.h"
#include "unit.h"

#define NODE(g, op, name, ...) \
    tg_graph_add_node(g, TG_OP_##op, name, sizeof((int[]){__VA_ARGS__}) / sizeof(int), \
                      (int[]){__VA_ARGS__}, 0, NULL)

enum { B = 2, H = 3, L = 5, E = 4 };

static int add_input(tg_graph *g, const char *name, int rank, const int64_t *dims)
{
    tg_shape s = tg_shape_of(rank, dims);
    return tg_graph_add_input(g, name, TG_F32, &s);
}

static int node1(tg_graph *g, tg_op op, const char *name, int x, tg_attr a)
{
    return tg_graph_add_node(g, op, name, 1, &x, 1, &a);
}

static int count_op(const tg_graph *g, tg_op op)
{
    int n = 0;
    for (int i = 0; i < g->nnode; i++)
        n += g->nodes[i].op == op;
    return n;
}

static const tg_node *find_op(const tg_graph *g, tg_op op)
{
    for (int i = 0; i < g->nnode; i++)
        if (g->nodes[i].op == op)
            return &g->nodes[i];
    return NULL;
}

/* The pass on g; checks the interpreter's output did not change; its result. */
static int fuse_checked(tg_graph *g)
{
    tg_tensor a = {0}, b = {0};
    uint64_t seed = unit_rng ^ 0x9e3779b97f4a7c15u;
    CHECK(g->noutput == 1 && run_random(g, seed, 2, &a) == 0);
    int r = tg_pass_fuse_attention(g);
    CHECK(r >= 0 && tg_graph_validate(g) == 0);
    CHECK(run_random(g, seed, 2, &b) == 0);
    CHECK(a.nbytes == b.nbytes && a.nbytes > 0);
    double err = 0;
    for (size_t k = 0; k < a.nbytes / 4 && k < b.nbytes / 4; k++) {
        double x = ((float *)a.data)[k], y = ((float *)b.data)[k];
        double e = fabs(x - y) / fmax(1, fabs(x));
        err = e > err ? e : err;
    }
    CHECK_NEAR(err, 0, 1e-5);
    tg_tensor_free(&a);
    tg_tensor_free(&b);
    return r;
}

/* A [1, L, L] constant: 0 on and below the diagonal, `above` over it. */
static int tri_mask(tg_graph *g, float above)
{
    float m[L * L];
    for (int i = 0; i < L; i++)
        for (int j = 0; j < L; j++)
            m[i * L + j] = j <= i ? 0 : above;
    tg_shape s = tg_shape_of(3, (int64_t[]){1, L, L});
    return tg_graph_add_const_copy(g, "mask", TG_F32, &s, m);
}

static int scalar(tg_graph *g, const char *name, double v)
{
    return tg_graph_add_scalar(g, name, TG_F32, v);
}

/* The ONNX export's form: q * c, (k^T through a flattening reshape) * c,
 * matmul, + a causal mask, softmax, matmul with v. */
static tg_graph *onnx_form(float above, int64_t softmax_axis)
{
    tg_graph *g = tg_graph_new();
    int64_t d4[] = {B, H, L, E};
    int q = add_input(g, "q", 4, d4), k = add_input(g, "k", 4, d4), v = add_input(g, "v", 4, d4);
    tg_dim flat[] = {tg_dim_const(B * H), tg_dim_const(L), tg_dim_const(E)};
    tg_dim back[] = {tg_dim_const(B), tg_dim_const(H), tg_dim_const(E), tg_dim_const(L)};
    int kf = node1(g, TG_OP_RESHAPE, "kf", k, tg_attr_dims("shape", 3, flat));
    int kt = node1(g, TG_OP_PERMUTE, "kt", kf, tg_attr_ints("perm", 3, (int64_t[]){0, 2, 1}));
    int kb = node1(g, TG_OP_RESHAPE, "kb", kt, tg_attr_dims("shape", 4, back));
    int c = scalar(g, "c", 0.7);
    int qs = NODE(g, MUL, "qs", q, c), ks = NODE(g, MUL, "ks", c, kb);
    int s = NODE(g, MATMUL, "s", qs, ks);
    int m = NODE(g, ADD, "m", tri_mask(g, above), s);
    int p = node1(g, TG_OP_SOFTMAX, "p", m, tg_attr_int("axis", softmax_axis));
    tg_graph_add_output(g, NODE(g, MATMUL, "o", p, v));
    return g;
}

static void test_onnx_form_causal(void)
{
    tg_graph *g = onnx_form(-INFINITY, -1);
    CHECK(fuse_checked(g) == 1);
    const tg_node *n = find_op(g, TG_OP_SDPA);
    CHECK(n && g->nnode == 1 && n->nin == 3);        /* k^T's chain and the mask are gone */
    CHECK(n && tg_node_int(n, "causal", 0) == 1);
    CHECK(n && fabs(tg_node_float(n, "scale", 0) - 0.7 * 0.7) < 1e-6);
    CHECK(tg_graph_find_value(g, "o") == g->outputs[0]);     /* the output keeps its name */
    tg_graph_free(g);
}

/* -FLT_MAX above the diagonal, as torch.onnx writes is_causal, is causal=1
 * too; any other finite value (-1e9, a common hand-written mask) stays the
 * additive mask */
static void test_lowest_float_mask_is_causal(void)
{
    tg_graph *g = onnx_form(-FLT_MAX, 3);
    CHECK(fuse_checked(g) == 1);
    const tg_node *n = find_op(g, TG_OP_SDPA);
    CHECK(n && n->nin == 3 && tg_node_int(n, "causal", 0) == 1);
    tg_graph_free(g);
    g = onnx_form(-1e9f, 3);
    CHECK(fuse_checked(g) == 1);
    n = find_op(g, TG_OP_SDPA);
    CHECK(n && n->nin == 4 && tg_node_int(n, "causal", 0) == 0);
    tg_graph_free(g);
}

/* An sdpa node as torch.export writes it (transformers' decoders): a bool
 * constant [B, 1, L, L] mask, true on and below the diagonal in every slice,
 * becomes causal=1 and the mask goes; a mask one element off the pattern (in
 * the second slice) stays. */
static tg_graph *sdpa_bool_form(bool off)
{
    tg_graph *g = tg_graph_new();
    int64_t d4[] = {B, H, L, E};
    int in[4] = {add_input(g, "q", 4, d4), add_input(g, "k", 4, d4), add_input(g, "v", 4, d4)};
    uint8_t m[B * L * L];
    for (int b = 0; b < B; b++)
        for (int i = 0; i < L; i++)
            for (int j = 0; j < L; j++)
                m[(b * L + i) * L + j] = j <= i;
    if (off)
        m[L * L + L] = 0;           /* slice 1, row 1, its first key */
    tg_shape s = tg_shape_of(4, (int64_t[]){B, 1, L, L});
    in[3] = tg_graph_add_const_copy(g, "mask", TG_BOOL, &s, m);
    tg_attr a = tg_attr_float("scale", 0.5);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SDPA, "o", 4, in, 1, &a));
    return g;
}

static void test_sdpa_bool_causal(void)
{
    tg_graph *g = sdpa_bool_form(false);
    CHECK(fuse_checked(g) == 1);
    const tg_node *n = find_op(g, TG_OP_SDPA);
    CHECK(n && g->nnode == 1 && n->nin == 3 && tg_node_int(n, "causal", 0) == 1);
    CHECK(n && fabs(tg_node_float(n, "scale", 0) - 0.5) < 1e-12);
    CHECK(tg_graph_find_value(g, "o") == g->outputs[0]);
    CHECK(tg_graph_find_value(g, "mask") < 0);
    tg_graph_free(g);
    g = sdpa_bool_form(true);
    CHECK(fuse_checked(g) == 0);
    n = find_op(g, TG_OP_SDPA);
    CHECK(n && n->nin == 4 && tg_node_int(n, "causal", 0) == 0);
    tg_graph_free(g);
}

/* reshape x to the given constant dims */
static int reshape_to(tg_graph *g, int x, int rank, const int64_t *d)
{
    tg_dim dims[TG_MAX_RANK];
    for (int i = 0; i < rank; i++)
        dims[i] = tg_dim_const(d[i]);
    return node1(g, TG_OP_RESHAPE, NULL, x, tg_attr_dims("shape", rank, dims));
}

/* An sdpa whose bool mask [B, 1, L, L] is not a constant but computed from
 * constants, as transformers' decoders build it (fold keeps it as nodes once
 * it outgrows its inputs by 64 KB: llama at b8 x 1024): key <= query from
 * two views of arange(L), expanded over the batch. kind 0: that, causal=1 and
 * the mask's nodes gone; 1: key < query (the diagonal masked), no causal
 * mask; 2: the query positions a graph input, not constant. */
static tg_graph *sdpa_arange_form(int kind)
{
    tg_graph *g = tg_graph_new();
    int64_t d4[] = {B, H, L, E};
    int in[4] = {add_input(g, "q", 4, d4), add_input(g, "k", 4, d4), add_input(g, "v", 4, d4)};
    tg_dim end = tg_dim_const(L);
    tg_attr aa[2] = {tg_attr_dims("end", 1, &end), tg_attr_dtype("dtype", TG_I64)};
    int pos = tg_graph_add_node(g, TG_OP_ARANGE, "pos", 0, NULL, 2, aa);
    int qpos = pos;
    if (kind == 2) {
        tg_shape s = tg_shape_of(1, (int64_t[]){L});
        qpos = tg_graph_add_input(g, "qpos", TG_I64, &s);
    }
    int rows = reshape_to(g, qpos, 2, (int64_t[]){L, 1}), cols = reshape_to(g, pos, 2, (int64_t[]){1, L});
    int m = kind == 1 ? NODE(g, LT, "lt", cols, rows) : NODE(g, LE, "le", cols, rows);
    m = reshape_to(g, m, 4, (int64_t[]){1, 1, L, L});
    tg_dim bd[4] = {tg_dim_const(B), tg_dim_const(1), tg_dim_const(L), tg_dim_const(L)};
    in[3] = node1(g, TG_OP_EXPAND, "mask", m, tg_attr_dims("shape", 4, bd));
    tg_attr a = tg_attr_float("scale", 0.5);
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_SDPA, "o", 4, in, 1, &a));
    return g;
}

static void test_sdpa_computed_causal(void)
{
    for (int kind = 0; kind < 3; kind++) {
        tg_graph *g = sdpa_arange_form(kind);
        CHECK(g->noutput == 1 && fuse_checked(g) == (kind == 0));
        const tg_node *n = find_op(g, TG_OP_SDPA);
        CHECK(n && n->nin == (kind == 0 ? 3 : 4) && tg_node_int(n, "causal", 0) == (kind == 0));
        CHECK(count_op(g, TG_OP_ARANGE) == (kind != 0) && count_op(g, TG_OP_EXPAND) == (kind != 0));
        CHECK(tg_graph_find_value(g, "o") == g->outputs[0]);
        tg_graph_free(g);
    }
}

/* Core ATen's form: both bmm's on [B*H, ...] flattened operands, reshapes
 * back, and the guard that zeroes rows whose every key is masked:
 * where(not(any(not(scores == -inf), -1)), 0, softmax(scores)). With the
 * causal mask it becomes causal=1; with one whose first query row masks
 * every key, that row stays 0 through the kernel's own rule. A guard that
 * fills such rows with anything but 0 is not the kernel's rule: no fusion. */
static tg_graph *core_form(bool causal, float fill)
{
    tg_graph *g = tg_graph_new();
    int64_t d4[] = {B, H, L, E}, sc4[] = {B, H, L, L};
    int q = add_input(g, "q", 4, d4), k = add_input(g, "k", 4, d4), v = add_input(g, "v", 4, d4);
    int c = scalar(g, "c", 0.7);
    int kt = node1(g, TG_OP_PERMUTE, "kt", k, tg_attr_ints("perm", 4, (int64_t[]){0, 1, 3, 2}));
    int qf = reshape_to(g, NODE(g, MUL, "qs", q, c), 3, (int64_t[]){B * H, L, E});
    int kf = reshape_to(g, NODE(g, MUL, "ks", kt, c), 3, (int64_t[]){B * H, E, L});
    int s = reshape_to(g, NODE(g, MATMUL, "bmm", qf, kf), 4, sc4);
    int mask;
    if (causal) {
        mask = tri_mask(g, -INFINITY);
    } else {
        float m[L * L];
        for (int i = 0; i < L * L; i++)
            m[i] = i < L ? -INFINITY : (float)(i % 3) - 1.0f;
        tg_shape ms = tg_shape_of(2, (int64_t[]){L, L});
        mask = tg_graph_add_const_copy(g, "mask", TG_F32, &ms, m);
    }
    int sm = NODE(g, ADD, "scores", s, mask);
    int p = node1(g, TG_OP_SOFTMAX, "p", sm, tg_attr_int("axis", -1));
    int none = NODE(g, LOGICAL_NOT, "seen", NODE(g, EQ, "masked", sm, scalar(g, "ninf", -INFINITY)));
    tg_attr any_at[2] = {tg_attr_ints("axes", 1, (int64_t[]){-1}), tg_attr_int("keepdim", 1)};
    int any = tg_graph_add_node(g, TG_OP_REDUCE_ANY, "any", 1, &none, 2, any_at);
    int empty = NODE(g, LOGICAL_NOT, "empty", any);
    tg_attr full_at[2] = {tg_attr_ints("shape", 4, sc4), tg_attr_float("value", fill)};
    int zero = tg_graph_add_node(g, TG_OP_FULL, "zero", 0, NULL, 2, full_at);
    int w = NODE(g, WHERE, "guarded", empty, zero, p);
    int o = NODE(g, MATMUL, "bmm_1", reshape_to(g, w, 3, (int64_t[]){B * H, L, L}),
                 reshape_to(g, v, 3, (int64_t[]){B * H, L, E}));
    tg_graph_add_output(g, reshape_to(g, o, 4, d4));
    return g;
}

static void test_core_form(void)
{
    for (int causal = 1; causal >= 0; causal--) {
        tg_graph *g = core_form(causal, 0.0f);
        CHECK(fuse_checked(g) == 1);
        const tg_node *n = find_op(g, TG_OP_SDPA);
        CHECK(n && n->nin == (causal ? 3 : 4) && tg_node_int(n, "causal", 0) == causal);
        CHECK(count_op(g, TG_OP_SOFTMAX) == 0 && count_op(g, TG_OP_WHERE) == 0 &&
              count_op(g, TG_OP_MATMUL) == 0);
        tg_graph_free(g);
    }
    tg_graph *g = core_form(false, 1.0f);
    CHECK(fuse_checked(g) == 0 && count_op(g, TG_OP_SDPA) == 0);
    tg_graph_free(g);
}

/* [B*H, L, E] with k^T given as such (a permute is added), the scores divided
 * by a constant, a float mask from the caller */
static void test_flat_div_mask(void)
{
    tg_graph *g = tg_graph_new();
    int q = add_input(g, "q", 3, (int64_t[]){B * H, L, E});
    int kt = add_input(g, "kt", 3, (int64_t[]){B * H, E, L + 1});
    int v = add_input(g, "v", 3, (int64_t[]){B * H, L + 1, E + 2});
    int mask = add_input(g, "mask", 2, (int64_t[]){L, L + 1});
    int s = NODE(g, DIV, "s", NODE(g, MATMUL, "mm", q, kt), scalar(g, "d", 2.5));
    int p = node1(g, TG_OP_SOFTMAX, "p", NODE(g, ADD, "m", s, mask), tg_attr_int("axis", -1));
    tg_graph_add_output(g, NODE(g, MATMUL, "o", p, v));
    CHECK(fuse_checked(g) == 1);
    const tg_node *n = find_op(g, TG_OP_SDPA);
    CHECK(n && n->nin == 4 && n->in[3] == mask && count_op(g, TG_OP_PERMUTE) == 1);
    CHECK(n && fabs(tg_node_float(n, "scale", 0) - 0.4) < 1e-6);
    tg_graph_free(g);
}

/* Swin's window attention as torch.export writes it: one qkv projection
 * [N, L, 3 H E] viewed as [N, L, 3, H, E], permuted to [3, N, H, L, E], q, k
 * and v its [1, N, H, L, E] slices viewed as [N, H, L, E] (not a bmm's
 * flatten: v is read at that rank), q scaled, + a [1, H, L, L] position
 * bias. */
static void test_swin_window(void)
{
    tg_graph *g = tg_graph_new();
    int qkv = add_input(g, "qkv", 3, (int64_t[]){B, L, 3 * H * E});
    int r5 = reshape_to(g, qkv, 5, (int64_t[]){B, L, 3, H, E});
    int pm = node1(g, TG_OP_PERMUTE, "pm", r5, tg_attr_ints("perm", 5, (int64_t[]){2, 0, 3, 1, 4}));
    int part[3];
    for (int i = 0; i < 3; i++) {
        tg_attr at[3] = {tg_attr_int("axis", 0), tg_attr_int("start", i),
                         tg_attr_int("end", i + 1)};
        int sl = tg_graph_add_node(g, TG_OP_SLICE, NULL, 1, &pm, 3, at);
        part[i] = reshape_to(g, sl, 4, (int64_t[]){B, H, L, E});
    }
    int q = NODE(g, MUL, "qs", part[0], scalar(g, "c", 0.5));
    int kt = node1(g, TG_OP_PERMUTE, "kt", part[1], tg_attr_ints("perm", 4, (int64_t[]){0, 1, 3, 2}));
    float bias[H * L * L];
    for (int i = 0; i < H * L * L; i++)
        bias[i] = (float)unit_uniform(-2, 2);
    tg_shape bs = tg_shape_of(4, (int64_t[]){1, H, L, L});
    int b = tg_graph_add_const_copy(g, "bias", TG_F32, &bs, bias);
    int s = NODE(g, ADD, "biased", NODE(g, MATMUL, "s", q, kt), b);
    int p = node1(g, TG_OP_SOFTMAX, "p", s, tg_attr_int("axis", -1));
    tg_graph_add_output(g, NODE(g, MATMUL, "o", p, part[2]));
    CHECK(fuse_checked(g) == 1);
    const tg_node *n = find_op(g, TG_OP_SDPA);
    CHECK(n && n->nin == 4 && !strcmp(g->values[n->in[3]].name, "bias"));
    CHECK(n && g->values[n->in[2]].shape.rank == 4);     /* v at its rank, as read */
    CHECK(n && fabs(tg_node_float(n, "scale", 0) - 0.5) < 1e-6);
    tg_graph_free(g);
}

static void test_refusals(void)
{
    /* softmax over the query axis */
    tg_graph *g = onnx_form(-INFINITY, -2);
    CHECK(fuse_checked(g) == 0 && count_op(g, TG_OP_SDPA) == 0);
    tg_graph_free(g);

    /* the probabilities are an output too */
    g = tg_graph_new();
    int64_t d3[] = {H, L, L};
    int q = add_input(g, "q", 3, d3), kt = add_input(g, "kt", 3, d3), v = add_input(g, "v", 3, d3);
    int p = node1(g, TG_OP_SOFTMAX, "p", NODE(g, MATMUL, "s", q, kt), tg_attr_int("axis", -1));
    tg_graph_add_output(g, NODE(g, ADD, "o", NODE(g, MATMUL, "pv", p, v), p));
    CHECK(fuse_checked(g) == 0 && count_op(g, TG_OP_SDPA) == 0);
    tg_graph_free(g);

    /* v broadcast over the batch */
    g = tg_graph_new();
    q = add_input(g, "q", 3, d3), kt = add_input(g, "kt", 3, d3);
    v = add_input(g, "v", 3, (int64_t[]){1, L, L});
    p = node1(g, TG_OP_SOFTMAX, "p", NODE(g, MATMUL, "s", q, kt), tg_attr_int("axis", -1));
    tg_graph_add_output(g, NODE(g, MATMUL, "o", p, v));
    CHECK(fuse_checked(g) == 0 && count_op(g, TG_OP_SDPA) == 0);
    tg_graph_free(g);
}

/* ONNX's Attention function in a narrow type t (its _expanded test cases):
 * q * c and k^T * c with c = sqrt(scale) in t, matmul, + an additive bias of
 * L x S (0 or -inf: causal when S == L, else the upper-left cut), softmax,
 * where(rows with no key: a constant, none here, 0, p), matmul with v. */
enum { S = L + 2 };

static tg_graph *expanded_form(tg_dtype t, int64_t keys, double c)
{
    tg_graph *g = tg_graph_new();
    tg_shape qs = tg_shape_of(4, (int64_t[]){B, H, L, E}), ks = tg_shape_of(4, (int64_t[]){B, H, keys, E});
    int q = tg_graph_add_input(g, "q", t, &qs), k = tg_graph_add_input(g, "k", t, &ks);
    int v = tg_graph_add_input(g, "v", t, &ks);
    int kt = node1(g, TG_OP_PERMUTE, "kt", k, tg_attr_ints("perm", 4, (int64_t[]){0, 1, 3, 2}));
    int sc = tg_graph_add_scalar(g, "c", t, c);
    int s = NODE(g, MATMUL, "s", NODE(g, MUL, "qs", q, sc), NODE(g, MUL, "ks", kt, sc));
    uint8_t bias[L * S * 2] = {0}, none[L] = {0};
    for (int i = 0; i < L; i++)
        for (int j = 0; j < keys; j++)
            tg_store_f64(t, bias, (size_t)(i * keys + j), j <= i ? 0 : -INFINITY);
    tg_shape bs = tg_shape_of(2, (int64_t[]){L, keys}), ns = tg_shape_of(2, (int64_t[]){L, 1});
    int m = NODE(g, ADD, "m", s, tg_graph_add_const_copy(g, "bias", t, &bs, bias));
    int p = node1(g, TG_OP_SOFTMAX, "p", m, tg_attr_int("axis", -1));
    int guard = tg_graph_add_const_copy(g, "no_key", TG_BOOL, &ns, none);
    int w = NODE(g, WHERE, "safe", guard, tg_graph_add_scalar(g, "zero", t, 0), p);
    tg_graph_add_output(g, NODE(g, MATMUL, "o", w, v));
    return g;
}

/* The largest |y - ref| / ulp(ref) of g's output y (type t) on inputs x[3],
 * ref: attention in float64 on the inputs' values with scale c * c. */
static double ulps_off(tg_graph *g, tg_dtype t, tg_tensor *x, int64_t keys, double c)
{
    tg_tensor y = {0};
    tg_exec *e = tg_exec_new(g, 1);
    CHECK(e && tg_exec_run(e, x, &y) == 0);
    tg_exec_free(e);
    int mant = t == TG_F16 ? 10 : 7;
    double worst = 0;
    for (int bh = 0; bh < B * H; bh++)
        for (int i = 0; i < L; i++) {
            double sc[S], o[E] = {0}, mx = -INFINITY, sum = 0;
            for (int j = 0; j <= i && j < keys; j++) {
                sc[j] = 0;
                for (int d = 0; d < E; d++)
                    sc[j] += tg_load_f64(t, x[0].data, (size_t)((bh * L + i) * E + d)) *
                             tg_load_f64(t, x[1].data, (size_t)((bh * keys + j) * E + d));
                sc[j] *= c * c;
                mx = fmax(mx, sc[j]);
            }
            for (int j = 0; j <= i && j < keys; j++)
                sum += sc[j] = exp(sc[j] - mx);
            for (int j = 0; j <= i && j < keys; j++)
                for (int d = 0; d < E; d++)
                    o[d] += sc[j] / sum * tg_load_f64(t, x[2].data, (size_t)((bh * keys + j) * E + d));
            for (int d = 0; d < E; d++) {
                double got = tg_load_f64(t, y.data, (size_t)((bh * L + i) * E + d));
                double ulp = ldexp(1, (int)floor(log2(fmax(fabs(o[d]), 0x1p-14))) - mant);
                worst = fmax(worst, fabs(got - o[d]) / ulp);
            }
        }
    tg_tensor_free(&y);
    return worst;
}

static void test_narrow_types(void)
{
    const tg_dtype types[] = {TG_F16, TG_BF16};
    const int64_t key_lens[] = {L, S};
    for (int ti = 0; ti < 2; ti++)
        for (int ki = 0; ki < 2; ki++) {
            tg_dtype t = types[ti];
            int64_t keys = key_lens[ki];
            uint8_t cb[2];
            tg_store_f64(t, cb, 0, sqrt(1 / sqrt((double)E)));
            double c = tg_load_f64(t, cb, 0);
            tg_graph *g = expanded_form(t, keys, c), *plain = expanded_form(t, keys, c);
            tg_tensor x[3] = {{0}};
            for (int i = 0; i < 3; i++) {
                x[i].dtype = t;
                x[i].rank = 4;
                memcpy(x[i].dims, (int64_t[]){B, H, i ? keys : L, E}, sizeof(int64_t[4]));
                tg_tensor_alloc(&x[i]);
                for (int64_t n = 0; n < x[i].dims[2] * B * H * E; n++)
                    tg_store_f64(t, x[i].data, (size_t)n, 4 * uniform());
            }
            CHECK(tg_pass_fuse_attention(plain) == 1);  /* tcompile's pass fuses it too */
            tg_graph_free(plain);
            plain = expanded_form(t, keys, c);
            CHECK(tg_pass_fuse_attention_narrow(g) == 1 && tg_graph_validate(g) == 0);
            const tg_node *n = find_op(g, TG_OP_SDPA);
            CHECK(n && g->values[n->in[0]].dtype == TG_F32 && count_op(g, TG_OP_SOFTMAX) == 0 &&
                  count_op(g, TG_OP_WHERE) == 0 && count_op(g, TG_OP_CAST) == (keys == L ? 4 : 5));
            CHECK(n && tg_node_int(n, "causal", 0) == (keys == L) && n->nin == (keys == L ? 3 : 4));
            CHECK(g->values[g->outputs[0]].dtype == t);
            double fused = ulps_off(g, t, x, keys, c), unfused = ulps_off(plain, t, x, keys, c);
            CHECK(fused <= 1.0);
            CHECK(fused <= unfused);
            if (fused > 1.0 || fused > unfused)
                fprintf(stderr, "  %s, %lld keys: fused %.2f ulps, unfused %.2f\n", tg_dtype_name(t),
                        (long long)keys, fused, unfused);
            for (int i = 0; i < 3; i++)
                tg_tensor_free(&x[i]);
            tg_graph_free(g);
            tg_graph_free(plain);
        }
    /* the narrow variant leaves float32 to tcompile */
    tg_graph *g = onnx_form(-INFINITY, -1);
    CHECK(tg_pass_fuse_attention_narrow(g) == 0 && count_op(g, TG_OP_SDPA) == 0);
    tg_graph_free(g);
}

int main(void)
{
    unit_seed("test_fuse_attention");
    test_onnx_form_causal();
    test_lowest_float_mask_is_causal();
    test_sdpa_bool_causal();
    test_sdpa_computed_causal();
    test_core_form();
    test_flat_div_mask();
    test_swin_window();
    test_refusals();
    test_narrow_types();
    return unit_report();
}
