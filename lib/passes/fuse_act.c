/* Linear/conv + bias + activation fusion.
 *
 * tg_pass_fuse_bias (a graph pass): linear or conv without a bias followed by
 * an add of a constant per-output-channel vector takes the vector as its bias.
 * tg_pass_fuse_act (a plan pass): a linear, conv or matmul (float or int8)
 * whose only reader is an activation (and that activation's only reader
 * another one ...) runs as one group: the kernel writes the result and the
 * activations are applied in place while it is still in cache. A float 2-D
 * conv, or a conv and its relu, takes the max pool that alone reads it when
 * the pool's windows tile the result (window = stride, no padding): the conv
 * kernel pools each block of rows as it computes it (tgk_conv_desc.pool), so
 * the full result never reaches memory. A pre-packed linear with no
 * activation takes the add of a residual of its result's shape that alone
 * reads it (a transformer's x + proj(attn)): the GEMM adds the residual to
 * each block of its result while it is in cache, so no pass of its own over
 * memory; so does a pointwise conv (1x1, stride 1, one group: one GEMM over
 * pixels) and any channels-last conv (conv_nhwc), and then a relu that alone
 * reads the sum (ResNet's add + relu: y = relu(y + res) on each block in
 * cache); on a target whose convolution applies a residual whatever its
 * kernel (conv_residual: CUDA's, through cuDNN), any ungrouped float conv
 * does. A conv_nhwc takes no pool (its kernel has none). Each kind of group is formed
 * only where the target's grouping rules say its code generator compiles it
 * (tg_group_rules). */
#include "passes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../log.h"
#include "../ops/infer.h"

static bool is_anchor(tg_op op)
{
    return op == TG_OP_LINEAR || op == TG_OP_LINEAR_PACKED || op == TG_OP_CONV ||
           op == TG_OP_CONV_NHWC || op == TG_OP_MATMUL ||
           op == TG_OP_QLINEAR || op == TG_OP_QCONV;
}

static bool is_activation(tg_op op)
{
    switch (op) {
    case TG_OP_RELU: case TG_OP_GELU: case TG_OP_SILU: case TG_OP_SIGMOID: case TG_OP_TANH:
    case TG_OP_LEAKY_RELU: case TG_OP_ELU: case TG_OP_HARDSWISH: case TG_OP_HARDSIGMOID:
    case TG_OP_CLAMP:
        return true;
    default:
        return false;
    }
}

/* The only node reading value v (-1: none, several, or a graph output). */
static int sole_reader(const tg_graph *g, const int *uses, int v)
{
    if (uses[v] != 1)
        return -1;
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == v)
            return -1;
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] == v)
                return g->nodes[n].op == TG_OP_NONE ? -1 : n;
    return -1;
}

/* b is a constant holding one value per channel of a result whose channel
 * axis is `axis` of `rank`: shape [C], or [C, 1, ...] aligned to the axis. */
static bool per_channel(const tg_value *b, int rank, int axis, tg_dim c)
{
    if (b->kind != TG_VALUE_CONST || b->shape.rank > rank)
        return false;
    int off = rank - b->shape.rank;
    for (int i = 0; i < b->shape.rank; i++) {
        int64_t v;
        bool one = tg_dim_is_const(b->shape.d[i], &v) && v == 1;
        if (i + off == axis ? !tg_dim_eq(b->shape.d[i], c) : !one)
            return false;
    }
    return off <= axis;
}

void tg_node_take_name(tg_graph *g, int to, int from)
{
    char *name = g->nodes[to].name;
    g->nodes[to].name = g->nodes[from].name;
    g->nodes[from].name = name;
}

int tg_value_take_name(tg_graph *g, int to, int from)
{
    tg_value *a = &g->values[to], *b = &g->values[from];
    size_t n = strlen(b->name) + 16;
    char *old = malloc(n);
    if (!old)
        return tg_err("out of memory");
    snprintf(old, n, "%s.replaced", b->name);
    free(a->name);
    a->name = b->name;
    b->name = old;
    return 0;
}

int tg_pass_fuse_bias(tg_graph *g)
{
    int *uses = tg_graph_use_counts(g);
    int fused = 0;
    if (!uses)
        return -1;
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if ((nd->op != TG_OP_LINEAR && nd->op != TG_OP_CONV) ||
            (nd->nin > 2 && nd->in[2] >= 0))
            continue;
        int y = nd->out[0], a = sole_reader(g, uses, y);
        if (a < 0 || g->nodes[a].op != TG_OP_ADD)
            continue;
        const tg_node *add = &g->nodes[a];
        int bv = add->in[0] == y ? add->in[1] : add->in[0];
        const tg_value *yv = &g->values[y], *b = &g->values[bv];
        int axis = nd->op == TG_OP_LINEAR ? yv->shape.rank - 1 : 1;
        tg_dim c = yv->shape.d[axis];
        if (b->dtype != yv->dtype || !per_channel(b, yv->shape.rank, axis, c) ||
            !tg_shape_eq(&g->values[add->out[0]].shape, &yv->shape)) {
            TG_LOG(FUSION, TG_LOG_DEBUG, "bias: %s + %s refused: not a per-channel constant"
                   " of the same dtype", nd->name, add->name);
            continue;
        }
        /* the bias as a [C] constant */
        char name[512];
        snprintf(name, sizeof name, "%s.bias", nd->name);
        tg_shape s = {.rank = 1, .d = {c}};
        int bias = tg_graph_add_const_copy(g, name, b->dtype, &s, b->data);
        if (bias < 0)
            goto fail;
        int in[3] = {nd->in[0], nd->in[1], bias};
        nd = &g->nodes[n];
        int out = tg_graph_add_node(g, nd->op, NULL, 3, in, nd->nattr, nd->attr);
        if (out < 0)
            goto fail;
        int sum = g->nodes[a].out[0];
        if (tg_value_take_name(g, out, sum))
            goto fail;
        tg_graph_replace_uses(g, sum, out);
        TG_LOG(FUSION, TG_LOG_INFO, "bias: %s + %s -> %s with bias", g->nodes[n].name,
               g->nodes[a].name, tg_op_name(g->nodes[n].op));
        tg_graph_kill_node(g, a);
        tg_graph_kill_node(g, n);
        fused++;
    }
    free(uses);
    if (fused && tg_graph_compact(g))
        return -1;
    return fused;
fail:
    free(uses);
    return -1;
}

/* The window P of max pool `pool` on conv `conv`'s result when the conv
 * kernel can do it: P x P, stride P, no padding nor dilation, floor-sized. */
static int64_t conv_pool(const tg_graph *g, const tg_plan *p, const tg_node *conv, int pool)
{
    const tg_node *nd = &g->nodes[pool];
    const tg_value *x = &g->values[conv->out[0]], *y = &g->values[nd->out[0]];
    int64_t k[2], s[2], pad[2], dil[2], hw[2], phw[2];
    if (nd->op != TG_OP_MAX_POOL || p->root[pool] != pool || x->dtype != TG_F32 ||
        x->shape.rank != 4 || tg_node_int(conv, "transposed", 0) ||
        tg_attr_per_axis(nd, "kernel", 2, 0, k) ||
        tg_attr_per_axis(nd, tg_node_attr(nd, "stride") ? "stride" : "kernel", 2, 0, s) ||
        tg_attr_per_axis(nd, "padding", 2, 0, pad) || tg_attr_per_axis(nd, "dilation", 2, 1, dil)) {
        tg_err_clear();
        return 0;
    }
    for (int a = 0; a < 2; a++)
        if (k[a] != k[0] || s[a] != k[0] || pad[a] || dil[a] != 1 ||
            !tg_dim_is_const(x->shape.d[2 + a], &hw[a]) ||
            !tg_dim_is_const(y->shape.d[2 + a], &phw[a]) || phw[a] != hw[a] / k[0])
            return 0;
    return k[0] > 1 ? k[0] : 0;
}

/* A float conv whose kernel is one GEMM over pixels (1x1, stride 1, no
 * padding, one group): it adds a residual to each block in cache. Any other
 * would add it in a pass of its own, and the add would no longer join the
 * loop of what follows it (ResNet's add + relu). */
static bool pointwise_conv(const tg_graph *g, const tg_node *nd)
{
    const tg_value *w = nd->nin > 1 ? &g->values[nd->in[1]] : NULL;
    int nsp = w ? w->shape.rank - 2 : 0;
    int64_t k, s[3], pad[3];
    if (nd->op != TG_OP_CONV || nsp < 1 || nsp > 3 || tg_node_int(nd, "groups", 1) != 1 ||
        tg_node_int(nd, "transposed", 0) || g->values[nd->out[0]].dtype != TG_F32 ||
        tg_attr_per_axis(nd, "stride", nsp, 1, s) || tg_attr_per_axis(nd, "padding", nsp, 0, pad)) {
        tg_err_clear();
        return false;
    }
    for (int i = 0; i < nsp; i++)
        if (!tg_dim_is_const(w->shape.d[2 + i], &k) || k != 1 || s[i] != 1 || pad[i] != 0)
            return false;
    return true;
}

/* Whether the kernel of node nd adds a residual to each block of its result
 * under the target's rules: a pre-packed linear, a channels-last conv (any:
 * its descriptor's res), a pointwise conv (gemm_residual: the CPU's); any
 * ungrouped float conv, not transposed (conv_residual: CUDA's). */
static bool adds_residual(const tg_group_rules *rules, const tg_graph *g, const tg_node *nd)
{
    if ((nd->op == TG_OP_LINEAR_PACKED || nd->op == TG_OP_CONV_NHWC || pointwise_conv(g, nd)) &&
        (!rules || rules->gemm_residual))
        return true;
    return rules && rules->conv_residual && nd->op == TG_OP_CONV &&
           tg_node_int(nd, "groups", 1) == 1 && !tg_node_int(nd, "transposed", 0) &&
           g->values[nd->out[0]].dtype == TG_F32;
}

/* Whether node `add`, in the group rooted at grp, adds to the result of
 * linear (or pointwise conv) n a residual of the same shape and dtype (no
 * broadcasting), computed elsewhere. */
static bool residual(const tg_graph *g, const tg_plan *p, int n, int add, int grp)
{
    const tg_node *a = &g->nodes[add];
    if (a->op != TG_OP_ADD || a->nin != 2)      /* in[1] exists only then */
        return false;
    int y = g->nodes[n].out[0], other = a->in[0] == y ? a->in[1] : a->in[0];
    const tg_value *yv = &g->values[y], *ov = &g->values[other];
    return p->root[add] == grp && other != y &&
           ov->dtype == TG_F32 && tg_shape_eq(&ov->shape, &yv->shape) &&
           tg_shape_eq(&g->values[a->out[0]].shape, &yv->shape);
}

/* The member of root's group that node n reads: its one input made inside
 * the group. -1 (tg_err) when it reads none or two. */
static int chain_input(const tg_graph *g, const tg_plan *p, int root, int n)
{
    const tg_node *nd = &g->nodes[n];
    int prev = -1;
    for (int i = 0; i < nd->nin; i++) {
        const tg_value *x = nd->in[i] >= 0 ? &g->values[nd->in[i]] : NULL;
        if (!x || x->kind != TG_VALUE_NODE || p->root[x->producer] != root || x->producer == n)
            continue;
        if (prev >= 0 && prev != x->producer)
            return tg_err("%s reads two members of the group", nd->name);
        prev = x->producer;
    }
    if (prev < 0)
        return tg_err("%s reads no member of the group", nd->name);
    return prev;
}

int tg_epilogue_analyze(const tg_graph *g, const tg_plan *p, int root, tg_epilogue *e)
{
    memset(e, 0, sizeof *e);
    e->residual = -1;
    if (p->kind[root] != TG_GROUP_EPILOGUE)
        return tg_err("%s is no epilogue group", g->nodes[root].name);
    int members = 0, chain[TG_EPILOGUE_MAX + 1], len = 0, n = root;
    for (int m = 0; m <= root; m++)
        members += p->root[m] == root;
    while (!is_anchor(g->nodes[n].op)) {    /* from the root back to the anchor */
        if (len == TG_EPILOGUE_MAX + 1)
            return tg_err("more than %d activations", TG_EPILOGUE_MAX);
        chain[len++] = n;
        if ((n = chain_input(g, p, root, n)) < 0)
            return -1;
    }
    e->anchor = n;
    if (members != len + 1)
        return tg_err("members off the chain from %s to %s", g->nodes[n].name,
                      g->nodes[root].name);
    int yv = g->nodes[n].out[0];
    const tg_value *y = &g->values[yv];
    for (int k = len - 1; k >= 0; k--) {
        const tg_node *nd = &g->nodes[chain[k]];
        const tg_value *o = &g->values[nd->out[0]];
        if (is_activation(nd->op) && nd->nin == 1) {
            if (o->dtype != y->dtype || !tg_shape_eq(&o->shape, &y->shape))
                return tg_err("%s changes the shape or dtype", nd->name);
            e->act[e->nact++] = chain[k];
            continue;
        }
        bool first = k == len - 1;
        const tg_node *a = &g->nodes[e->anchor];
        if (k == 0 && nd->op == TG_OP_MAX_POOL && a->op == TG_OP_CONV &&
            (first || (e->nact == 1 && g->nodes[e->act[0]].op == TG_OP_RELU)) &&
            (e->pool = conv_pool(g, p, a, chain[0])))
            continue;
        /* a conv's kernel applies a relu after the residual: y = relu(y + res) */
        if (first && adds_residual(p->rules, g, a) &&
            (k == 0 || (k == 1 && (a->op == TG_OP_CONV || a->op == TG_OP_CONV_NHWC) &&
                        g->nodes[chain[0]].op == TG_OP_RELU)) &&
            residual(g, p, e->anchor, chain[k], root)) {
            e->residual = nd->in[0] == yv ? nd->in[1] : nd->in[0];
            continue;
        }
        return tg_err("%s (%s) is neither an activation nor a pool or residual add its"
                      " kernel applies", nd->name, tg_op_name(nd->op));
    }
    return 0;
}

int tg_pass_fuse_act(const tg_graph *g, tg_plan *p)
{
    const tg_group_rules *rules = p->rules;
    if (!rules || !rules->epilogue)
        return 0;
    int *uses = tg_graph_use_counts(g);
    int fused = 0;
    if (!uses)
        return -1;
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        /* a u8 qconv output is quantized in its kernel: nothing to apply after */
        if (!is_anchor(nd->op) || p->root[n] != n ||
            (nd->op == TG_OP_QCONV && g->values[nd->out[0]].dtype != TG_F32))
            continue;
        int last = n, r;
        while ((r = sole_reader(g, uses, g->nodes[last].out[0])) >= 0) {
            const tg_node *act = &g->nodes[r];
            const tg_value *x = &g->values[g->nodes[last].out[0]];
            const tg_value *y = &g->values[act->out[0]];
            if (!is_activation(act->op) || p->root[r] != r ||
                (rules->epilogue_supports && !rules->epilogue_supports(g, act))) {
                TG_LOG(FUSION, TG_LOG_DEBUG, "act: %s -> %s refused: %s is not an activation",
                       g->nodes[last].name, act->name, tg_op_name(act->op));
                break;
            }
            if (y->dtype != x->dtype || !tg_shape_eq(&y->shape, &x->shape))
                break;
            last = r;
        }
        bool relu_only = last == n || (g->nodes[last].op == TG_OP_RELU &&
                                       g->nodes[last].in[0] == nd->out[0]);
        if (rules->conv_pool && nd->op == TG_OP_CONV && relu_only &&
            (r = sole_reader(g, uses, g->nodes[last].out[0])) >= 0 && conv_pool(g, p, nd, r))
            last = r;
        /* an add already ending another GEMM's group (head + dist head) is not free */
        if ((rules->gemm_residual || rules->conv_residual) && adds_residual(rules, g, nd) &&
            last == n &&
            (r = sole_reader(g, uses, nd->out[0])) >= 0 && p->kind[r] == TG_GROUP_SINGLE &&
            residual(g, p, n, r, r)) {
            last = r;
            /* and a conv's relu after it (ResNet's add + relu) */
            r = sole_reader(g, uses, g->nodes[last].out[0]);
            if ((nd->op == TG_OP_CONV || nd->op == TG_OP_CONV_NHWC) && r >= 0 &&
                g->nodes[r].op == TG_OP_RELU &&
                p->root[r] == r && p->kind[r] == TG_GROUP_SINGLE && g->nodes[r].nin == 1 &&
                g->values[g->nodes[r].out[0]].dtype == g->values[nd->out[0]].dtype &&
                tg_shape_eq(&g->values[g->nodes[r].out[0]].shape, &g->values[nd->out[0]].shape))
                last = r;
        }
        if (last == n)
            continue;
        /* every member's root is the last one; kept only when the code
         * generator compiles the group (tg_epilogue_analyze) */
        for (int m = n; m != last; m = sole_reader(g, uses, g->nodes[m].out[0]))
            p->root[m] = last;
        p->kind[last] = TG_GROUP_EPILOGUE;
        tg_epilogue e;
        if (tg_epilogue_analyze(g, p, last, &e)) {
            TG_LOG(FUSION, TG_LOG_DEBUG, "act: %s .. %s refused: %s", nd->name,
                   g->nodes[last].name, tg_errmsg());
            tg_err_clear();
            for (int m = n; m != last; m = sole_reader(g, uses, g->nodes[m].out[0]))
                p->root[m] = m;
            p->kind[last] = TG_GROUP_SINGLE;
            continue;
        }
        for (int k = 0; k < e.nact; k++)
            TG_LOG(FUSION, TG_LOG_INFO, "act: %s (%s) + %s (%s) in place", nd->name,
                   tg_op_name(nd->op), g->nodes[e.act[k]].name, tg_op_name(g->nodes[e.act[k]].op));
        if (e.pool)
            TG_LOG(FUSION, TG_LOG_INFO, "act: %s (conv) + %s (max_pool) in the conv kernel",
                   nd->name, g->nodes[last].name);
        if (e.residual >= 0)
            TG_LOG(FUSION, TG_LOG_INFO, "act: %s (%s) + %s (add) in the GEMM", nd->name,
                   tg_op_name(nd->op), g->nodes[last].name);
        fused++;
    }
    free(uses);
    return fused;
}
