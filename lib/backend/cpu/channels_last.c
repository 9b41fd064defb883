/* The CPU's channels-last lowering (tcompile --layout=nhwc, the lower pass
 * "channels_last", before prepack).
 *
 * - Each float32 2-D convolution that tgk_conv_nhwc_f32 takes
 *   (tgk_conv_nhwc_supported: one group, depthwise, or groups of 16k
 *   channels) on at least STEM_C input channels, on a constant weight,
 *   becomes permute(x, [0,2,3,1]) ->
 *   conv_nhwc -> permute([0,3,1,2]), its weight packed now
 *   (tgk_pack_conv_nhwc_f32) as prepack packs a linear's.
 * - Each float32 2-D pool reading such a permute back to NCHW (the result of
 *   a converted convolution or pool) becomes the same sandwich around the
 *   pool with channels_last=1.
 * - Then the permutes move down: a permute P whose readers all take it
 *   (layout-agnostic ops: elementwise ones whose other operands are permuted
 *   alike, constants, or tensors whose permute moves only size-1 dims;
 *   concatenations with the axis remapped; reductions with the axes
 *   remapped; permutes) is dropped and each reader runs on P's input, its
 *   result permuted as P did; a permute reading a permute is one permute or
 *   none (layout.c's tg_layout_fold_permute), so the permute back after a
 *   conv and the one before the next cancel.
 * - Last, a permute that only moves dims of size 1 (the [N, C, 1, 1] of a
 *   global pool or an SE block's scale) is a reshape: no copy.
 * What is left are copies at the boundaries only: the model's input, a
 * flatten of a spatial map, ops that stay NCHW (TLOG=passes counts them).
 * A graph with a convolution the kernel refuses (groups of other than 16k
 * channels) stays NCHW as a whole. */
#include "cpu.h"

#include "kernels/kernels.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../../log.h"
#include "../../ops/infer.h"
#include "../../passes/passes.h"

/* A conv on fewer input channels (an RGB stem) stays NCHW: its NHWC pixel
 * rows of 3 floats make short dot products, and keeping it NCHW moves the
 * first permute after it, and after its pool (one copy of the pooled map
 * instead of the stem's input): ResNet-18 at 128x128, one thread, went from
 * 0.91x to 1.09x of the NCHW model's speed, SqueezeNet 1.10x to 1.30x. */
#define STEM_C 4

static const int64_t to_nhwc[4] = {0, 2, 3, 1}, to_nchw[4] = {0, 3, 1, 2};

/* The permute producing value v (its perm in p, rank returned), or 0. */
static int permuted(const tg_graph *g, int v, int64_t *p)
{
    const tg_value *x = &g->values[v];
    if (x->kind != TG_VALUE_NODE || g->nodes[x->producer].op != TG_OP_PERMUTE)
        return 0;
    return tg_layout_perm(&g->nodes[x->producer], p);
}

static bool same_perm(const int64_t *a, const int64_t *b, int n)
{
    return !memcmp(a, b, sizeof *a * (size_t)n);
}

/* An existing permute of v by perm: its value, or -1. */
static int find_permute(const tg_graph *g, int v, int rank, const int64_t *perm)
{
    int64_t q[TG_MAX_RANK];
    for (int n = 0; n < g->nnode; n++)
        if (g->nodes[n].op == TG_OP_PERMUTE && g->nodes[n].in[0] == v &&
            tg_layout_perm(&g->nodes[n], q) == rank && same_perm(q, perm, rank))
            return g->nodes[n].out[0];
    return -1;
}

/* permute(v, perm): an existing one, v itself when perm keeps the order, or
 * a new one. */
static int permute(tg_graph *g, int v, int rank, const int64_t *perm)
{
    int same = 0;
    while (same < rank && perm[same] == same)
        same++;
    if (same == rank)
        return v;
    int y = find_permute(g, v, rank, perm);
    if (y >= 0)
        return y;
    tg_attr a = tg_attr_ints("perm", rank, perm);
    return tg_graph_add_node(g, TG_OP_PERMUTE, NULL, 1, &v, 1, &a);
}

/* Whether permuting shape s by p keeps the order of its dims that are not
 * a constant 1 (then the permute is a reshape). */
static bool moves_only_ones(const tg_shape *s, const int64_t *p)
{
    int64_t last = -1, one;
    for (int i = 0; i < s->rank; i++) {
        if (tg_dim_is_const(s->d[p[i]], &one) && one == 1)
            continue;
        if (p[i] < last)
            return false;
        last = p[i];
    }
    return true;
}

/* Node n's attributes with attribute `a` put in place of the one of its name
 * (or added): into out (room for nattr + 1); the count. */
static int attrs_with(const tg_node *nd, tg_attr a, tg_attr *out)
{
    int k = 0;
    for (int i = 0; i < nd->nattr; i++)
        if (strcmp(nd->attr[i].name, a.name))
            out[k++] = nd->attr[i];
    out[k++] = a;
    return k;
}

/* Node n's result replaced by `back`, the permute of y, node n dropped: y
 * takes the result's name (the node that now computes it), or back, when the
 * result is a graph output (whose name stays). */
static int replace(tg_graph *g, int n, int y, int back)
{
    int old = g->nodes[n].out[0];
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == old)
            return tg_graph_replace_node(g, n, back, ".nchw");
    if (tg_value_take_name(g, y, old))
        return -1;
    tg_graph_replace_uses(g, old, back);
    tg_graph_kill_node(g, n);
    return 0;
}

/* ---- convolutions and pools ------------------------------------------------- */

/* The packed weight of conv weight w [K, C/groups, kh, kw]: a new constant
 * [ceil(K/16), kh*kw*C/groups, 16], or the one an earlier conv made. */
static int packed_weight(tg_graph *g, int wv, int64_t C, int64_t K, int64_t groups,
                         int64_t kh, int64_t kw)
{
    const tg_value *w = &g->values[wv];
    char name[512];
    snprintf(name, sizeof name, "%s.nhwc", w->name);
    int wp = tg_graph_find_value(g, name);
    if (wp >= 0)
        return wp;
    int64_t size = tgk_conv_nhwc_packed_size(C, K, groups, kh, kw);
    int64_t dims[3] = {(K + TGK_PANEL - 1) / TGK_PANEL, kh * kw * (C / groups), TGK_PANEL};
    if (size != dims[0] * dims[1] * dims[2])
        return tg_err("conv weight %s: the kernel packs %" PRId64 " floats, not [%" PRId64
                      ", %" PRId64 ", %" PRId64 "]", w->name, size, dims[0], dims[1], dims[2]);
    float *data = malloc((size_t)(size > 0 ? size : 1) * sizeof *data);
    if (!data)
        return tg_err("out of memory");
    tgk_pack_conv_nhwc_f32(w->data, C, K, groups, kh, kw, data);
    tg_shape s = tg_shape_of(3, dims);
    return tg_graph_add_const(g, name, TG_F32, &s, data, (size_t)size * sizeof *data);
}

/* Whether conv node nd is a float32 2-D convolution on a constant weight
 * with at least STEM_C input channels (C, K, kh, kw, groups set). */
static bool nhwc_candidate(const tg_graph *g, const tg_node *nd, int64_t *C, int64_t *K,
                           int64_t *kh, int64_t *kw, int64_t *groups)
{
    const tg_value *x = &g->values[nd->in[0]], *w = &g->values[nd->in[1]];
    *groups = tg_node_int(nd, "groups", 1);
    return x->dtype == TG_F32 && x->shape.rank == 4 && !tg_node_int(nd, "transposed", 0) &&
           w->kind == TG_VALUE_CONST && tg_dim_is_const(x->shape.d[1], C) &&
           tg_dim_is_const(w->shape.d[0], K) && tg_dim_is_const(w->shape.d[2], kh) &&
           tg_dim_is_const(w->shape.d[3], kw) && *C >= STEM_C;
}

/* The first conv of g the channels-last kernel refuses though it would
 * convert it (RegNet's grouped 3x3s of 8 channels a group), or -1. Such a
 * graph stays NCHW: a copy each side of each of them costs more than the
 * layout gains (regnet_y_400mf channels-last with them NCHW: 0.85x at b1,
 * 0.88x at b8, one thread; bench/RESULTS.md). */
static int refused_conv(const tg_graph *g)
{
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        int64_t C, K, kh, kw, groups;
        if (nd->op == TG_OP_CONV && nhwc_candidate(g, nd, &C, &K, &kh, &kw, &groups) &&
            !tgk_conv_nhwc_supported(C, K, groups))
            return n;
    }
    return -1;
}

/* conv node n -> permute, conv_nhwc, permute: 1, or 0 when the kernel does
 * not take it. */
static int convert_conv(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    int64_t C, K, kh, kw, groups, k[2], s[2], pad[2], dil[2];
    if (!nhwc_candidate(g, nd, &C, &K, &kh, &kw, &groups) ||
        !tgk_conv_nhwc_supported(C, K, groups) ||
        tg_attr_per_axis(nd, "stride", 2, 1, s) || tg_attr_per_axis(nd, "padding", 2, 0, pad) ||
        tg_attr_per_axis(nd, "dilation", 2, 1, dil)) {
        tg_err_clear();
        return 0;
    }
    int wp = packed_weight(g, nd->in[1], C, K, groups, kh, kw);
    if (wp < 0)
        return -1;
    nd = &g->nodes[n];      /* adding a value may move the arrays */
    k[0] = kh, k[1] = kw;
    tg_attr a[6] = {tg_attr_int("k", K), tg_attr_ints("kernel", 2, k),
                    tg_attr_ints("stride", 2, s), tg_attr_ints("padding", 2, pad),
                    tg_attr_ints("dilation", 2, dil), tg_attr_int("groups", groups)};
    int bias = nd->nin > 2 ? nd->in[2] : -1;
    int xp = permute(g, nd->in[0], 4, to_nhwc);
    int in[3] = {xp, wp, bias};
    int y = xp < 0 ? -1 : tg_graph_add_node(g, TG_OP_CONV_NHWC, NULL, 3, in, 6, a);
    int back = y < 0 ? -1 : permute(g, y, 4, to_nchw);
    if (back < 0)
        return -1;
    tg_node_take_name(g, g->values[y].producer, n);
    TG_LOG(PASSES, TG_LOG_DEBUG, "channels_last: %s (%" PRId64 " -> %" PRId64 " channels, %"
           PRId64 "x%" PRId64 ", groups %" PRId64 ") is a conv_nhwc", g->nodes[g->values[y].producer].name,
           C, K, kh, kw, groups);
    return replace(g, n, y, back) ? -1 : 1;
}

static bool is_pool(tg_op op)
{
    return op == TG_OP_MAX_POOL || op == TG_OP_AVG_POOL || op == TG_OP_ADAPTIVE_AVG_POOL;
}

/* pool node n on the result of a channels-last node -> permute, the pool
 * with channels_last=1, permute: 1, or 0 when it does not apply. */
static int convert_pool(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    const tg_value *x = &g->values[nd->in[0]];
    int64_t p[TG_MAX_RANK];
    if (x->dtype != TG_F32 || x->shape.rank != 4 || tg_node_int(nd, "channels_last", 0) ||
        permuted(g, nd->in[0], p) != 4 || !same_perm(p, to_nchw, 4))
        return 0;
    tg_attr *a = malloc(sizeof *a * (size_t)(nd->nattr + 1));
    if (!a)
        return tg_err("out of memory");
    int na = attrs_with(nd, tg_attr_int("channels_last", 1), a);
    int xp = permute(g, nd->in[0], 4, to_nhwc);
    nd = &g->nodes[n];
    int y = xp < 0 ? -1 : tg_graph_add_node(g, nd->op, NULL, 1, &xp, na, a);
    free(a);
    int back = y < 0 ? -1 : permute(g, y, 4, to_nchw);
    if (back < 0)
        return -1;
    tg_node_take_name(g, g->values[y].producer, n);
    TG_LOG(PASSES, TG_LOG_DEBUG, "channels_last: %s is a channels-last %s",
           g->nodes[g->values[y].producer].name, tg_op_name(g->nodes[n].op));
    return replace(g, n, y, back) ? -1 : 1;
}

/* ---- moving the permutes down ----------------------------------------------- */

/* A permute P being moved: u = permute(x, p), inv the inverse of p. */
typedef struct {
    int u, x, rank;
    int64_t p[TG_MAX_RANK], inv[TG_MAX_RANK];
} push_ctx;

/* Operand v of a reader of u, on x (made when `make`; else 0 stands for a
 * value to be made): u -> x, a value permuted by p -> its input, a value
 * already permuted by inv -> that permute, a constant -> re-laid (o' =
 * permute(o, inv), aligned to the rank), a value whose permute by inv moves
 * only size-1 dims -> that reshape; -2 when it stays as it is (all dims 1),
 * or -1: none of these (tg_err only when make). */
static int operand(tg_graph *g, const push_ctx *pc, int v, bool make)
{
    int64_t q[TG_MAX_RANK], one;
    if (v == pc->u)
        return pc->x;
    const tg_value *o = &g->values[v];
    if (permuted(g, v, q) == pc->rank && same_perm(q, pc->p, pc->rank))
        return g->nodes[o->producer].in[0];
    bool ones = true;
    for (int i = 0; i < o->shape.rank; i++)
        ones &= tg_dim_is_const(o->shape.d[i], &one) && one == 1;
    if (ones)               /* broadcast alike in any layout */
        return -2;
    if (o->shape.rank > pc->rank)
        return -1;
    int have = find_permute(g, v, pc->rank, pc->inv);   /* made for a conv reading it */
    if (have >= 0)
        return have;
    if (o->kind == TG_VALUE_CONST) {
        if (!make)
            return 0;
        /* aligned to the rank (leading 1s), then laid out as x: o' = permute(o, inv) */
        int r = pc->rank, off = r - o->shape.rank;
        int64_t a[TG_MAX_RANK], d[TG_MAX_RANK], st[TG_MAX_RANK];
        for (int i = 0; i < r; i++)
            if (i < off)
                a[i] = 1;
            else if (!tg_dim_is_const(o->shape.d[i - off], &a[i]))
                return tg_err("constant %s has a symbolic shape", o->name);
        for (int64_t i = r - 1, m = 1; i >= 0; m *= a[i], i--)
            st[i] = m;
        for (int i = 0; i < r; i++)
            d[i] = a[pc->inv[i]];
        size_t es = tg_dtype_size(o->dtype), n = o->nbytes / es;
        unsigned char *t = malloc(o->nbytes ? o->nbytes : 1);
        if (!t)
            return tg_err("out of memory");
        for (size_t j = 0; j < n; j++) {    /* j: index in the new layout */
            size_t rest = j, src = 0;
            for (int i = r - 1; i >= 0; i--) {
                src += (size_t)((int64_t)(rest % (size_t)d[i]) * st[pc->inv[i]]);
                rest /= (size_t)d[i];
            }
            memcpy(t + j * es, (const unsigned char *)o->data + src * es, es);
        }
        char name[512];
        snprintf(name, sizeof name, "%s.nhwc", o->name);
        int c = tg_graph_find_value(g, name);
        if (c >= 0) {
            free(t);
            return c;
        }
        tg_shape s = tg_shape_of(r, d);
        return tg_graph_add_const(g, name, o->dtype, &s, t, o->nbytes);
    }
    if (o->shape.rank != pc->rank || !moves_only_ones(&o->shape, pc->inv))
        return -1;
    if (!make)
        return 0;
    tg_shape s = {.rank = pc->rank};
    for (int i = 0; i < pc->rank; i++)
        s.d[i] = o->shape.d[pc->inv[i]];
    tg_attr a = tg_attr_dims("shape", s.rank, s.d);
    return tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &v, 1, &a);
}

/* The attributes reader r (one input) has on x: its axes remapped; into
 * *attrs (malloc'd, or NULL: r's own; its axes point into the caller's
 * axes[TG_MAX_RANK], which must outlive them), and in q (rank *qr) the
 * permute that takes its result back; -1 when r does not take the move. */
static int moved_attrs(const tg_node *nd, const push_ctx *pc, bool make, tg_attr **attrs,
                       int *na, int64_t *q, int *qr, int64_t *axes)
{
    memcpy(q, pc->p, sizeof *q * (size_t)pc->rank);
    *qr = pc->rank;
    *attrs = NULL;
    *na = nd->nattr;
    tg_attr a;
    if (nd->op == TG_OP_CONCAT) {
        int64_t axis = tg_node_int(nd, "axis", 0);
        a = tg_attr_int("axis", pc->p[axis < 0 ? axis + pc->rank : axis]);
    } else {
        const int64_t *ax;
        bool red[TG_MAX_RANK] = {false};
        int k = tg_node_ints(nd, "axes", &ax);
        if (!(tg_op_table[nd->op].flags & TG_OPF_REDUCTION) || nd->nin != 1 || k < 0)
            return -1;      /* no axes: all, and the layout does not matter */
        for (int i = 0; i < k; i++) {
            int64_t v = ax[i] < 0 ? ax[i] + pc->rank : ax[i];
            axes[i] = pc->p[v];
            red[v] = true;
        }
        if (!tg_node_int(nd, "keepdim", 0)) {   /* u's kept axes, in x's order after */
            *qr = 0;
            for (int i = 0; i < pc->rank; i++) {
                int64_t pos = 0;
                for (int j = 0; j < pc->rank; j++)
                    pos += !red[j] && pc->p[j] < pc->p[i];
                if (!red[i])
                    q[(*qr)++] = pos;
            }
        }
        a = tg_attr_ints("axes", k, axes);
    }
    if (!make)
        return 0;
    if (!(*attrs = malloc(sizeof **attrs * (size_t)(nd->nattr + 1))))
        return tg_err("out of memory");
    *na = attrs_with(nd, a, *attrs);
    return 0;
}

/* Reader r of u on x, made when `make`: its result there and, in q (rank
 * *qr), the permute that takes it back; or -1 when r does not take the move
 * (tg_err only when make). */
static int moved(tg_graph *g, const push_ctx *pc, int r, bool make, int64_t *q, int *qr)
{
    const tg_node *nd = &g->nodes[r];
    tg_attr *attrs = NULL;
    int na = nd->nattr, nin = nd->nin;
    int64_t axes[TG_MAX_RANK];  /* the remapped axes attrs point to */
    if (nd->nout != 1)
        return -1;
    if (tg_op_is_elementwise(nd->op)) {
        memcpy(q, pc->p, sizeof *q * (size_t)pc->rank);
        *qr = pc->rank;     /* u broadcast to a larger result: not the result's layout */
        if (!tg_shape_eq(&g->values[nd->out[0]].shape, &g->values[pc->u].shape))
            return -1;
    } else if (moved_attrs(nd, pc, make, &attrs, &na, q, qr, axes)) {
        return -1;
    }
    int *in = malloc(sizeof *in * (size_t)(nin ? nin : 1));
    if (!in) {
        free(attrs);
        return tg_err("out of memory");
    }
    for (int i = 0; i < nin; i++) {
        int v = g->nodes[r].in[i];
        if (v >= 0 && (v = operand(g, pc, v, make)) == -1) {
            free(attrs), free(in);
            return -1;
        }
        in[i] = v == -2 ? g->nodes[r].in[i] : v;
    }
    int out = 0;
    if (make) {
        nd = &g->nodes[r];
        out = tg_graph_add_node(g, nd->op, NULL, nin, in, na, attrs ? attrs : nd->attr);
    }
    free(attrs), free(in);
    return out;
}

/* Permute node n pushed below its readers when every one takes it: 1, 0. */
static int push(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    push_ctx pc = {.u = nd->out[0], .x = nd->in[0]};
    if ((pc.rank = tg_layout_perm(nd, pc.p)) != 4 || !same_perm(pc.p, to_nchw, 4))
        return 0;       /* only the permutes back to NCHW move */
    for (int i = 0; i < pc.rank; i++)
        pc.inv[pc.p[i]] = i;
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == pc.u)
            return 0;
    int nreaders = 0, readers[64];
    int64_t q[TG_MAX_RANK];
    int qr;
    for (int r = 0; r < g->nnode; r++) {
        const tg_node *rd = &g->nodes[r];
        bool reads = false;
        for (int i = 0; i < rd->nin; i++)
            reads |= rd->in[i] == pc.u;
        if (!reads || rd->op == TG_OP_NONE)
            continue;
        if (nreaders == 64 || (rd->op != TG_OP_PERMUTE && moved(g, &pc, r, false, q, &qr) < 0))
            return 0;
        readers[nreaders++] = r;
    }
    if (!nreaders)
        return 0;
    for (int k = 0; k < nreaders; k++) {
        int r = readers[k];
        if (g->nodes[r].op == TG_OP_PERMUTE)
            continue;
        int y = moved(g, &pc, r, true, q, &qr);
        int back = y < 0 ? -1 : permute(g, y, qr, q);
        if (back < 0)
            return -1;
        tg_node_take_name(g, g->values[y].producer, r);
        TG_LOG(PASSES, TG_LOG_DEBUG, "channels_last: %s runs before the permute %s",
               g->nodes[g->values[y].producer].name, g->nodes[n].name);
        if (replace(g, r, y, back))
            return -1;
    }
    for (int k = 0; k < nreaders; k++)  /* the permutes now read one another */
        if (g->nodes[readers[k]].op == TG_OP_PERMUTE &&
            tg_layout_fold_permute(g, readers[k]) < 0)
            return -1;
    tg_graph_kill_node(g, n);
    return 1;
}

/* A permute moving only size-1 dims -> a reshape: 1, or 0. */
static int to_reshape(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    int64_t p[TG_MAX_RANK];
    tg_layout_perm(nd, p);
    const tg_value *x = &g->values[nd->in[0]], *y = &g->values[nd->out[0]];
    if (!moves_only_ones(&x->shape, p))
        return 0;
    tg_attr a = tg_attr_dims("shape", y->shape.rank, y->shape.d);
    int r = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &nd->in[0], 1, &a);
    if (r < 0)
        return -1;
    tg_node_take_name(g, g->values[r].producer, n);
    TG_LOG(PASSES, TG_LOG_DEBUG, "channels_last: %s moves only dims of size 1: a reshape",
           g->nodes[g->values[r].producer].name);
    return tg_graph_replace_node(g, n, r, ".nchw") ? -1 : 1;
}

/* One sweep of f over the nodes of op `op` (or the pools, op NONE) there now. */
static int sweep(tg_graph *g, tg_op op, int (*f)(tg_graph *, int))
{
    int changed = 0, nnode = g->nnode;
    for (int n = 0; n < nnode; n++) {
        tg_op o = g->nodes[n].op;
        if (op == TG_OP_NONE ? !is_pool(o) : o != op)
            continue;
        int r = f(g, n);
        if (r < 0)
            return -1;
        changed += r;
    }
    if (changed && tg_graph_compact(g))
        return -1;
    return changed;
}

/* Permutes pushed down and folded until none moves. */
static int settle(tg_graph *g)
{
    int total = 0, r;
    while ((r = sweep(g, TG_OP_PERMUTE, push)) > 0)
        total += r;
    return r < 0 ? -1 : total;
}

int tg_cpu_channels_last(tg_graph *g)
{
    int convs, pools = 0, pushed = 0, ones, r, refused = refused_conv(g);
    if (refused >= 0) {
        TG_LOG(PASSES, TG_LOG_INFO, "channels_last: the graph stays NCHW: the channels-last "
               "kernel does not take conv %s (groups of other than 16k channels)",
               g->nodes[refused].name);
        return 0;
    }
    if ((convs = sweep(g, TG_OP_CONV, convert_conv)) < 0 || (convs && (pushed = settle(g)) < 0))
        return -1;
    while ((r = sweep(g, TG_OP_NONE, convert_pool)) > 0) {
        pools += r;
        if ((r = settle(g)) < 0)
            return -1;
        pushed += r;
    }
    if (r < 0)
        return -1;
    if (!convs && !pools)
        return 0;   /* nothing channels-last: the graph's own permutes stay as they are */
    /* the permutes the moves left unread gone, then those of size-1 dims */
    if (tg_pass_dce(g) < 0 || (ones = sweep(g, TG_OP_PERMUTE, to_reshape)) < 0)
        return -1;
    int left = 0;
    for (int n = 0; n < g->nnode; n++)
        if (g->nodes[n].op == TG_OP_PERMUTE) {
            left++;
            TG_LOG(PASSES, TG_LOG_DEBUG, "channels_last: permute %s is left (a copy)",
                   g->nodes[n].name);
        }
    TG_LOG(PASSES, TG_LOG_INFO, "channels_last: %d convs and %d pools channels-last, %d "
           "permutes moved, %d reshapes, %d permutes left", convs, pools, pushed, ones, left);
    return convs + pools + pushed + ones;
}
