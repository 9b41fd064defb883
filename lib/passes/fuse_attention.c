/* Attention fusion: the decomposed scaled-dot-product attention that
 * exporters write,
 *     softmax(matmul(Q * c1, B * c2) [* or / c3] [+ M], axis -1) @ V
 * with B = K^T (the last two axes swapped), becomes one sdpa node with
 * scale = c1 * c2 * c3 (or / c3) and M as its additive mask, or causal=1
 * when M is the constant lower-triangular 0 / -inf pattern. Q, K, V must be
 * of one float type (f32, f16, bf16) and rank (>= 3) with equal leading dims
 * (no broadcasting). In f16 and bf16 the sdpa runs on f32 casts of its
 * operands and its result is cast back, as the fused attention of ONNX and
 * PyTorch keep scores and probabilities in f32: the decomposed graph rounds
 * each of them to the narrow type, which costs a few ulps the fused form
 * does not lose (tg_pass_fuse_attention_narrow: those patterns only). Every
 * intermediate (scaled operands, scores, probabilities) must have only the
 * reader in the pattern, so nothing is computed twice. Core ATen's form is
 * matched too: its bmm's operands and results flattened to [B*H, L, *]
 * (reshapes that keep the last two dims, looked through) and its guard that
 * zeroes rows with every key masked (the kernel's own rule). Refusals are
 * logged (TLOG=fusion) with the reason. An sdpa node imported as one whose
 * mask is a constant causal pattern (bool or additive), or one computed from
 * constants alone, becomes causal=1. */
#include "passes.h"

#include <float.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../error.h"
#include "../log.h"
#include "../ops/infer.h"

typedef struct {
    int q, b, v, mask;          /* value ids; mask -1: none */
    double scale;
    int causal;
} attn;

/* The node producing v when it is op and v has no other reader, else -1. */
static int sole_producer(const tg_graph *g, const int *uses, int v, tg_op op)
{
    const tg_value *x = &g->values[v];
    if (x->kind != TG_VALUE_NODE || uses[v] != 1 || g->nodes[x->producer].op != op)
        return -1;
    return x->producer;
}

/* The float types the pattern is matched in. */
static bool attn_dtype(tg_dtype t) { return t == TG_F32 || t == TG_F16 || t == TG_BF16; }

/* *c = the value of a one-element constant v of a type attn_dtype takes. */
static bool scalar_const(const tg_graph *g, int v, double *c)
{
    const tg_value *x = &g->values[v];
    tg_dim n;
    int64_t k;
    if (x->kind != TG_VALUE_CONST || !attn_dtype(x->dtype) || tg_shape_numel(&x->shape, &n) ||
        !tg_dim_is_const(n, &k) || k != 1)
        return false;
    *c = tg_load_f64(x->dtype, x->data, 0);
    return true;
}

/* v = x * c, c * x or (div) x / c with c a scalar constant and v read only
 * here: returns x and multiplies *scale by c (or 1/c); else returns v. */
static int strip_scale(const tg_graph *g, const int *uses, int v, bool div, double *scale)
{
    double c;
    int n = sole_producer(g, uses, v, TG_OP_MUL);
    if (n >= 0) {
        const int *in = g->nodes[n].in;
        for (int i = 0; i < 2; i++)
            if (scalar_const(g, in[i], &c) &&
                tg_shape_eq(&g->values[in[1 - i]].shape, &g->values[v].shape)) {
                *scale *= c;
                return in[1 - i];
            }
    }
    n = div ? sole_producer(g, uses, v, TG_OP_DIV) : -1;
    if (n >= 0 && scalar_const(g, g->nodes[n].in[1], &c) && c != 0 &&
        tg_shape_eq(&g->values[g->nodes[n].in[0]].shape, &g->values[v].shape)) {
        *scale /= c;
        return g->nodes[n].in[0];
    }
    return v;
}

/* v's input when v is a reshape read only here that keeps the last two dims
 * (Core ATen's bmm flattens [B, H, L, E] to [B*H, L, E] and back); else v. */
static int through_flatten(const tg_graph *g, const int *uses, int v)
{
    int n = sole_producer(g, uses, v, TG_OP_RESHAPE);
    if (n < 0)
        return v;
    const tg_shape *in = &g->values[g->nodes[n].in[0]].shape, *out = &g->values[v].shape;
    int a = in->rank, b = out->rank;
    if (a < 3 || b < 3 || !tg_dim_eq(in->d[a - 1], out->d[b - 1]) ||
        !tg_dim_eq(in->d[a - 2], out->d[b - 2]))
        return v;
    return g->nodes[n].in[0];
}

/* An operand (q, k^T or v) of the scores' rank r: through a flattening
 * reshape that gives one of rank r, else v itself (a reshape from another
 * rank, as ONNX's Attention function's from [B, Hk, n, S, E] for GQA). */
static int operand(const tg_graph *g, const int *uses, int v, int r)
{
    int x = through_flatten(g, uses, v);
    return g->values[x].shape.rank == r ? x : v;
}

/* The node producing v when it is op, whatever reads v. */
static int producer(const tg_graph *g, int v, tg_op op)
{
    const tg_value *x = &g->values[v];
    return x->kind == TG_VALUE_NODE && g->nodes[x->producer].op == op ? x->producer : -1;
}

/* Whether v is (a scaled) matmul read only here: the scores side of the add. */
static bool is_scores(const tg_graph *g, const int *uses, int v)
{
    double c = 1;
    v = through_flatten(g, uses, strip_scale(g, uses, v, true, &c));
    return sole_producer(g, uses, v, TG_OP_MATMUL) >= 0;
}

/* Most bytes of results a mask's constant-only subgraph may come to for
 * causal_mask to run it (llama's b8 x 1024 mask: 8 MB, 7 such nodes). */
#define CAUSAL_EVAL_MAX (256u << 20)

/* Whether v is a constant [..., L, L] whose every [L, L] slice is the causal
 * mask, upper-left aligned: additive, 0 on and below the diagonal and -inf
 * above; bool (sdpa's, true where a key is kept), true on and below, false
 * above. Above the diagonal in f32 -FLT_MAX counts as -inf: torch.onnx
 * writes it for is_causal, and the two give the same result bit for bit
 * while every score is below 8e37 in magnitude (then s - FLT_MAX - max <
 * -FLT_MAX/2 and its exp is 0, as exp(-inf) is; the diagonal is never
 * masked, so no row is all masked). In f16 and bf16 only -inf does (their
 * lowest finite values stay a mask). A mask computed from constants alone
 * that fold kept as nodes (it outgrows its inputs: transformers' aranges,
 * compares and ands to [b, 1, L, L]) is computed here for the check
 * (tg_eval_const) and dropped. */
static bool causal_mask(const tg_graph *g, int v, tg_dim L, tg_dim S)
{
    const tg_value *m = &g->values[v];
    int r = m->shape.rank;
    int64_t dims[TG_MAX_RANK], l, s, slices = 1;
    if (r < 2 || !tg_shape_is_const(&m->shape, dims) ||
        !tg_dim_is_const(L, &l) || !tg_dim_is_const(S, &s) || l != s ||
        dims[r - 2] != l || dims[r - 1] != s)
        return false;
    tg_tensor t = {0};
    const void *data = m->data;
    if (m->kind != TG_VALUE_CONST) {
        if (tg_eval_const(g, v, CAUSAL_EVAL_MAX, &t)) {
            TG_LOG(FUSION, TG_LOG_DEBUG, "fuse_attention: mask %s is no constant: %s", m->name,
                   tg_errmsg());
            tg_err_clear();
            return false;
        }
        data = t.data;
    }
    for (int i = 0; i < r - 2; i++)
        slices *= dims[i];
    bool keep = m->dtype == TG_BOOL, causal = true;
    double lowest = m->dtype == TG_F32 ? -FLT_MAX : -INFINITY;
    for (int64_t k = 0; k < slices && causal; k++)
        for (int64_t i = 0; i < l && causal; i++)
            for (int64_t j = 0; j < s && causal; j++) {
                double x = tg_load_f64(m->dtype, data, (size_t)((k * l + i) * s + j));
                causal = keep ? x == (j <= i) : j <= i ? x == 0 : x <= lowest;
            }
    if (m->kind != TG_VALUE_CONST) {
        TG_LOG(PASSES, TG_LOG_INFO, "fuse_attention: mask %s computed from constants: %s",
               m->name, causal ? "causal" : "not causal");
        tg_tensor_free(&t);
    }
    return causal;
}

/* Whether v is a constant with no nonzero element. */
static bool const_zero(const tg_graph *g, int v)
{
    const tg_value *x = &g->values[v];
    tg_dim n;
    int64_t k;
    if (x->kind != TG_VALUE_CONST || tg_shape_numel(&x->shape, &n) || !tg_dim_is_const(n, &k))
        return false;
    for (int64_t i = 0; i < k; i++)
        if (tg_load_f64(x->dtype, x->data, (size_t)i) != 0)
            return false;
    return true;
}

/* Whether v is 0: full(0), or a one-element constant 0. */
static bool is_zero(const tg_graph *g, int v)
{
    double c;
    int full = producer(g, v, TG_OP_FULL);
    if (full >= 0)
        return !tg_attr_get_float(&g->nodes[full], "value", 0, &c) && c == 0;
    return scalar_const(g, v, &c) && c == 0;
}

/* Core ATen's guard on the probabilities, where(rows with no key, 0,
 * softmax(s)), whose rows-with-no-key is not(any(not(s == -inf)), last axis):
 * the sdpa kernel gives such rows 0 too. Returns softmax(s) when v is that,
 * read only here, and *s_extra is 1 (s's other reader, the eq); else v. ONNX's
 * Attention function decides the rows on its additive bias; with a constant
 * bias, its rows-with-no-key is a constant, and one with no true element
 * selects softmax(s) everywhere: then softmax(s) too, *s_extra 0. */
static int through_guard(const tg_graph *g, const int *uses, int v, int *s_extra)
{
    *s_extra = 0;
    int w = sole_producer(g, uses, v, TG_OP_WHERE);
    if (w < 0)
        return v;
    const int *in = g->nodes[w].in;
    int sm = producer(g, in[2], TG_OP_SOFTMAX);
    if (sm >= 0 && uses[in[2]] == 1 && const_zero(g, in[0]) && is_zero(g, in[1]) &&
        tg_shape_eq(&g->values[v].shape, &g->values[in[2]].shape))
        return in[2];
    int n1 = sole_producer(g, uses, in[0], TG_OP_LOGICAL_NOT);
    int any = n1 < 0 ? -1 : sole_producer(g, uses, g->nodes[n1].in[0], TG_OP_REDUCE_ANY);
    int n2 = any < 0 ? -1 : sole_producer(g, uses, g->nodes[any].in[0], TG_OP_LOGICAL_NOT);
    int eq = n2 < 0 ? -1 : sole_producer(g, uses, g->nodes[n2].in[0], TG_OP_EQ);
    double c;
    if (sm < 0 || !is_zero(g, in[1]) || eq < 0 || uses[in[2]] != 1 ||
        !tg_shape_eq(&g->values[v].shape, &g->values[in[2]].shape) ||
        g->nodes[eq].in[0] != g->nodes[sm].in[0] || !scalar_const(g, g->nodes[eq].in[1], &c) ||
        c != -INFINITY)
        return v;
    const int64_t *axes;
    int na = tg_node_ints(&g->nodes[any], "axes", &axes), r = g->values[in[2]].shape.rank;
    if (na != 1 || (axes[0] != -1 && axes[0] != r - 1) || !tg_node_int(&g->nodes[any], "keepdim", 0))
        return v;
    *s_extra = 1;
    return in[2];
}

/* Match the pattern that ends in matmul node pv; NULL and *a filled, or why not. */
static const char *match(const tg_graph *g, const int *uses, int pv, attn *a)
{
    const tg_node *nd = &g->nodes[pv];
    int s_extra, pval = through_guard(g, uses, through_flatten(g, uses, nd->in[0]), &s_extra);
    int sm = sole_producer(g, uses, pval, TG_OP_SOFTMAX);
    const tg_value *p = &g->values[pval];
    if (sm < 0)
        return "the probabilities have other readers";
    int r = p->shape.rank, axis = (int)tg_node_int(&g->nodes[sm], "axis", -1);
    if (!attn_dtype(p->dtype))
        return "not float32, float16 or bfloat16";
    if (r < 3)
        return "scores of rank < 3";
    if (axis != -1 && axis != r - 1)
        return "softmax is not over the last axis";
    *a = (attn){.v = operand(g, uses, nd->in[1], r), .mask = -1, .scale = 1};
    int x = g->nodes[sm].in[0];
    int add = uses[x] == 1 + s_extra ? producer(g, x, TG_OP_ADD) : -1;
    if (add >= 0) {
        const int *in = g->nodes[add].in;
        int s = is_scores(g, uses, in[0]) ? 0 : 1;
        if (!is_scores(g, uses, in[s]))
            return "the scores are not a matmul read only here";
        if (!tg_shape_eq(&g->values[in[s]].shape, &p->shape))
            return "the mask broadcasts the scores to a larger shape";
        a->mask = in[1 - s];
        x = in[s];
        if (g->values[a->mask].shape.rank > r)
            return "the mask has more dims than the scores";
    }
    x = through_flatten(g, uses, strip_scale(g, uses, x, true, &a->scale));
    int mm = sole_producer(g, uses, x, TG_OP_MATMUL);
    if (mm < 0)
        return "the scores are not a matmul read only here";
    a->q = strip_scale(g, uses, operand(g, uses, g->nodes[mm].in[0], r), false, &a->scale);
    a->b = strip_scale(g, uses, operand(g, uses, g->nodes[mm].in[1], r), false, &a->scale);
    const tg_shape *q = &g->values[a->q].shape, *b = &g->values[a->b].shape;
    const tg_shape *v = &g->values[a->v].shape;
    if (g->values[a->q].dtype != p->dtype || g->values[a->b].dtype != p->dtype ||
        g->values[a->v].dtype != p->dtype)
        return "q, k^T, v and the probabilities differ in type";
    if (q->rank != r || b->rank != r || v->rank != r)
        return "q, k^T, v and the scores differ in rank";
    for (int i = 0; i < r - 2; i++)
        if (!tg_dim_eq(q->d[i], p->shape.d[i]) || !tg_dim_eq(b->d[i], p->shape.d[i]) ||
            !tg_dim_eq(v->d[i], p->shape.d[i]))
            return "q, k^T and v batch dims differ (broadcasting)";
    if (!isfinite(a->scale) || a->scale == 0)
        return "the scale factors multiply to 0 or not a finite number";
    if (a->mask >= 0) {
        const tg_value *m = &g->values[a->mask];
        if (m->dtype != p->dtype)
            return "the mask's type is not the scores'";
        if (r > 4 && m->shape.rank > 3)     /* the code generator's mask strides */
            return "a mask with more than one batch dim";
        if (causal_mask(g, a->mask, q->d[r - 2], b->d[r - 1])) {
            a->mask = -1;
            a->causal = 1;
        }
    }
    return NULL;
}

/* K from B = K^T: through reshapes that keep the last two dims and permutes
 * that keep the leading ones, to a value of B's leading dims with the last two
 * swapped; -1 when the chain does not end in one. */
static int untranspose(const tg_graph *g, int b)
{
    const tg_shape *bs = &g->values[b].shape;
    int r = bs->rank, x = b;
    bool swapped = false;
    while (g->values[x].kind == TG_VALUE_NODE) {
        const tg_node *nd = &g->nodes[g->values[x].producer];
        const tg_shape *in = &g->values[nd->in[0]].shape, *out = &g->values[x].shape;
        int k = in->rank;
        if (nd->op == TG_OP_RESHAPE) {
            if (k < 2 || !tg_dim_eq(in->d[k - 1], out->d[out->rank - 1]) ||
                !tg_dim_eq(in->d[k - 2], out->d[out->rank - 2]))
                break;
        } else if (nd->op == TG_OP_PERMUTE) {
            const int64_t *perm;
            if (tg_node_ints(nd, "perm", &perm) != k || k < 2)
                break;
            bool lead = true;
            for (int i = 0; i < k - 2; i++)
                lead &= perm[i] == i;
            if (!lead)
                break;
            if (perm[k - 2] == k - 1)
                swapped = !swapped;
        } else {
            break;
        }
        x = nd->in[0];
        const tg_shape *s = &g->values[x].shape;
        if (!swapped || s->rank != r)
            continue;
        bool same = tg_dim_eq(s->d[r - 1], bs->d[r - 2]) && tg_dim_eq(s->d[r - 2], bs->d[r - 1]);
        for (int i = 0; i < r - 2 && same; i++)
            same = tg_dim_eq(s->d[i], bs->d[i]);
        if (same)
            return x;
    }
    return -1;
}

/* v cast to dt (a node named after node pv and sfx), or v when it is dt. */
static int cast_to(tg_graph *g, int pv, int v, tg_dtype dt, const char *sfx)
{
    if (v < 0 || g->values[v].dtype == dt)
        return v;
    char name[512];
    tg_attr at = tg_attr_dtype("dtype", dt);
    snprintf(name, sizeof name, "%s.%s", g->nodes[pv].name, sfx);
    return tg_graph_add_node(g, TG_OP_CAST, name, 1, &v, 1, &at);
}

/* Append the sdpa node (and the permute for K when needed) that replaces the
 * pattern ending in node pv; in f16 or bf16 on f32 casts, its result cast
 * back. 0 or -1. */
static int rewrite(tg_graph *g, int pv, const attn *a)
{
    char name[512];
    int r = g->values[a->b].shape.rank;
    tg_dtype dt = g->values[a->q].dtype;
    int k = untranspose(g, a->b);
    if (k < 0) {
        int64_t perm[TG_MAX_RANK];
        for (int i = 0; i < r; i++)
            perm[i] = i;
        perm[r - 2] = r - 1, perm[r - 1] = r - 2;
        tg_attr pa = tg_attr_ints("perm", r, perm);
        snprintf(name, sizeof name, "%s.k", g->nodes[pv].name);
        k = tg_graph_add_node(g, TG_OP_PERMUTE, name, 1, &a->b, 1, &pa);
        if (k < 0)
            return -1;
    }
    tg_attr at[2] = {tg_attr_float("scale", a->scale), tg_attr_int("causal", a->causal)};
    int in[4] = {cast_to(g, pv, a->q, TG_F32, "q32"), cast_to(g, pv, k, TG_F32, "k32"),
                 cast_to(g, pv, a->v, TG_F32, "v32"), cast_to(g, pv, a->mask, TG_F32, "mask32")};
    if (in[0] < 0 || in[1] < 0 || in[2] < 0 || (a->mask >= 0 && in[3] < 0))
        return -1;
    snprintf(name, sizeof name, "%s.sdpa", g->nodes[pv].name);
    int y = tg_graph_add_node(g, TG_OP_SDPA, name, a->mask >= 0 ? 4 : 3, in, 2, at);
    if (y >= 0 && dt != TG_F32)
        y = cast_to(g, pv, y, dt, "out");
    int old = g->nodes[pv].out[0];
    const tg_shape *want = &g->values[old].shape;
    if (y >= 0 && !tg_shape_eq(&g->values[y].shape, want)) {   /* flattened for a bmm */
        tg_attr sh = tg_attr_dims("shape", want->rank, want->d);
        snprintf(name, sizeof name, "%s.flat", g->nodes[pv].name);
        y = tg_graph_add_node(g, TG_OP_RESHAPE, name, 1, &y, 1, &sh);
    }
    if (y < 0 || tg_value_take_name(g, y, old))
        return -1;
    tg_graph_replace_uses(g, old, y);
    TG_LOG(FUSION, TG_LOG_INFO, "fuse_attention: %s fused into sdpa (scale %g, %s)",
           g->nodes[pv].name, a->scale, a->causal ? "causal" : a->mask >= 0 ? "mask" : "no mask");
    return 0;
}

static int fuse(tg_graph *g, bool narrow_only)
{
    int *uses = tg_graph_use_counts(g);
    int fused = 0;
    if (!uses)
        return -1;
    int nnode = g->nnode;
    for (int n = 0; n < nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (nd->op != TG_OP_MATMUL)
            continue;
        int extra, pval = through_guard(g, uses, through_flatten(g, uses, nd->in[0]), &extra);
        if (producer(g, pval, TG_OP_SOFTMAX) < 0)
            continue;
        if (narrow_only && g->values[nd->out[0]].dtype == TG_F32)
            continue;
        attn a;
        const char *why = match(g, uses, n, &a);
        if (why) {
            TG_LOG(FUSION, TG_LOG_INFO, "fuse_attention: %s refused: %s", nd->name, why);
            continue;
        }
        if (rewrite(g, n, &a)) {
            free(uses);
            return -1;
        }
        fused++;
    }
    free(uses);
    if (fused && tg_pass_dce(g) < 0)
        return -1;
    return fused;
}

/* An sdpa node as imported (torch's scaled_dot_product_attention) whose mask
 * is a constant causal pattern (causal_mask): causal=1 and no mask, so the
 * kernels skip the keys above the diagonal and read no mask. Transformers'
 * decoders (Llama) export their mask so: built from aranges, a constant once
 * folded. */
static int causal_sdpa(tg_graph *g)
{
    int changed = 0, nnode = g->nnode, seen = -1;   /* the layers share one mask: */
    bool seen_causal = false;                       /* computed once */
    for (int n = 0; n < nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        int causal, gqa;
        double scale;
        if (nd->op != TG_OP_SDPA || nd->nin != 4 || nd->in[3] < 0 ||
            tg_attr_get_flag(nd, "causal", 0, &causal) || causal ||
            tg_attr_get_flag(nd, "gqa", 0, &gqa) || tg_attr_get_float(nd, "scale", 0, &scale))
            continue;
        const tg_shape *q = &g->values[nd->in[0]].shape, *k = &g->values[nd->in[1]].shape;
        tg_dim L = q->d[q->rank - 2], S = k->d[k->rank - 2];
        int m = nd->in[3];
        if (m != seen || !tg_dim_eq(L, S)) {
            seen_causal = causal_mask(g, m, L, S);
            seen = tg_dim_eq(L, S) ? m : -1;    /* the mask's last dims are L and S */
        }
        if (!seen_causal)
            continue;
        int in[3] = {nd->in[0], nd->in[1], nd->in[2]};
        tg_attr at[3] = {tg_attr_int("causal", 1), tg_attr_float("scale", scale),
                         tg_attr_int("gqa", gqa)};
        char name[256];
        snprintf(name, sizeof name, "%s.causal", nd->name);
        int y = tg_graph_add_node(g, TG_OP_SDPA, name, 3, in, 3, at);
        if (y < 0 || tg_graph_replace_node(g, n, y, ".masked"))
            return -1;
        TG_LOG(FUSION, TG_LOG_INFO, "fuse_attention: %s's mask is causal: causal=1",
               g->nodes[n].name);
        changed++;
    }
    return changed;
}

int tg_pass_fuse_attention(tg_graph *g)
{
    int fused = fuse(g, false), causal = fused < 0 ? -1 : causal_sdpa(g);
    if (causal > 0 && tg_pass_dce(g) < 0)
        return -1;
    return causal < 0 ? -1 : fused + causal;
}

int tg_pass_fuse_attention_narrow(tg_graph *g) { return fuse(g, true); }
