/* The CPU's lowering (its backend's lower pass, "prepack"): operands turned
 * once, at compile time, into the form their CPU kernel reads, instead of at
 * every run.
 *
 * - A float32 linear on a constant weight [N, K] becomes a linear_packed on
 *   the weight laid out in panels of 16 output columns, [ceil(N/16), K, 16]
 *   (tgk_pack_weight_f32): its kernel then streams the weight with one
 *   vector load per panel row and packs nothing at run time. A bf16 weight
 *   (tcompile --dtype bf16) is packed with k in pairs for vdpbf16ps
 *   (tgk_pack_weight_bf16).
 * - The attention kernel takes an additive float mask. A constant boolean
 *   mask (true: attend) becomes a constant of 0 and -inf; a computed one gets
 *   a where node that makes the same. A mask every layer shares (BERT's,
 *   ViT's) is converted once for all its readers. */
#include "cpu.h"

#include "kernels/kernels.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../error.h"
#include "../../log.h"

/* A float constant of the mask's shape, or -1. */
static int packed_const(tg_graph *g, const tg_value *m, tg_dtype dt)
{
    size_t n = m->nbytes, es = tg_dtype_size(dt);
    unsigned char *data = malloc(n * es > 0 ? n * es : 1);
    if (!data)
        return tg_err("out of memory");
    for (size_t i = 0; i < n; i++)
        tg_store_f64(dt, data, i, ((const unsigned char *)m->data)[i] ? 0.0 : -INFINITY);
    char name[512];
    snprintf(name, sizeof name, "%s.additive", m->name);
    tg_shape s = m->shape;
    return tg_graph_add_const(g, name, dt, &s, data, n * es);
}

/* where(m, 0, -inf) in dtype dt, for a computed mask. */
static int packed_node(tg_graph *g, int mv, tg_dtype dt)
{
    char name[512];
    snprintf(name, sizeof name, "%s.zero", g->values[mv].name);
    int zero = tg_graph_add_scalar(g, name, dt, 0.0);
    snprintf(name, sizeof name, "%s.neginf", g->values[mv].name);
    int ninf = zero < 0 ? -1 : tg_graph_add_scalar(g, name, dt, -INFINITY);
    if (ninf < 0)
        return -1;
    int in[3] = {mv, zero, ninf};
    return tg_graph_add_node(g, TG_OP_WHERE, NULL, 3, in, 0, NULL);
}

/* Weight w [N, K] packed as the kernel of its dtype reads it: float32 in
 * panels [ceil(N/16), K, 16], bf16 (a linear computing in bf16) in panels of
 * k pairs [ceil(N/16), K rounded up to a multiple of 32, 16]. The value, or -1. */
static int packed_weight(tg_graph *g, const tg_value *w, int64_t N, int64_t K)
{
    bool bf = w->dtype == TG_BF16;
    int64_t size = bf ? tgk_packed_bf16_size(N, K) : tgk_packed_size(N, K);
    int64_t dims[3] = {(N + TGK_PANEL - 1) / TGK_PANEL, bf ? TGK_BF16_KPAD(K) : K, TGK_PANEL};
    size_t es = bf ? sizeof(uint16_t) : sizeof(float);
    void *data = malloc((size_t)(size > 0 ? size : 1) * es);
    float *wf = bf ? malloc((size_t)(N * K > 0 ? N * K : 1) * sizeof *wf) : NULL;
    if (!data || (bf && !wf)) {
        free(data), free(wf);
        return tg_err("out of memory");
    }
    if (bf) {   /* bf16 to float32 and back is exact */
        for (int64_t i = 0; i < N * K; i++)
            wf[i] = tg_bf16_to_f32(((const uint16_t *)w->data)[i]);
        tgk_pack_weight_bf16(wf, K, N, K, data);
        free(wf);
    } else {
        tgk_pack_weight_f32(w->data, K, N, K, data);
    }
    char name[512];
    snprintf(name, sizeof name, "%s.packed", w->name);
    tg_shape s = tg_shape_of(3, dims);
    return tg_graph_add_const(g, name, w->dtype, &s, data, (size_t)size * es);
}

/* linear node n on a constant weight (float32, or bf16 on a float32 x) ->
 * linear_packed: 1, or 0 when it does not apply */
static int pack_linear(tg_graph *g, int n)
{
    const tg_node *nd = &g->nodes[n];
    int wv = nd->in[1];
    const tg_value *x = &g->values[nd->in[0]], *w = &g->values[wv];
    int64_t N, K;
    if (w->kind != TG_VALUE_CONST || (w->dtype != TG_F32 && w->dtype != TG_BF16) ||
        x->dtype != TG_F32 || !tg_dim_is_const(w->shape.d[0], &N) ||
        !tg_dim_is_const(w->shape.d[1], &K))
        return 0;
    char name[512];
    snprintf(name, sizeof name, "%s.packed", w->name);
    int wp = tg_graph_find_value(g, name);     /* made for an earlier linear (tied weights)? */
    if (wp < 0) {
        if ((wp = packed_weight(g, w, N, K)) < 0)
            return -1;
        nd = &g->nodes[n];      /* adding a value may move the arrays */
    }
    int in[3] = {nd->in[0], wp, nd->nin > 2 ? nd->in[2] : -1};
    tg_attr a = tg_attr_int("n", N);
    int y = tg_graph_add_node(g, TG_OP_LINEAR_PACKED, NULL, 3, in, 1, &a);
    if (y < 0)
        return -1;
    int old = g->nodes[n].out[0];
    if (tg_value_take_name(g, y, old))
        return -1;
    tg_node_take_name(g, g->values[y].producer, n);
    tg_graph_replace_uses(g, old, y);
    TG_LOG(PASSES, TG_LOG_DEBUG, "prepack: %s's weight %s packed in panels of %d columns",
           g->nodes[g->values[y].producer].name, g->values[wv].name, TGK_PANEL);
    tg_graph_kill_node(g, n);
    return 1;
}

/* The additive form of boolean mask mv in dtype dt: made[] (one per value
 * the pass started with, -1: none yet) keeps the one made for an earlier
 * attention reading the same mask. */
static int additive_mask(tg_graph *g, int mv, tg_dtype dt, int *made)
{
    if (made[mv] >= 0 && g->values[made[mv]].dtype == dt)
        return made[mv];
    if (made[mv] >= 0)
        return tg_err("boolean mask '%s' read by attentions of two dtypes",
                      g->values[mv].name);
    int packed = g->values[mv].kind == TG_VALUE_CONST ? packed_const(g, &g->values[mv], dt)
                                                      : packed_node(g, mv, dt);
    return made[mv] = packed;
}

int tg_cpu_prepack(tg_graph *g)
{
    int changed = 0, nnode = g->nnode;
    int *made = malloc(sizeof *made * (g->nvalue ? g->nvalue : 1));
    if (!made)
        return tg_err("out of memory");
    for (int v = 0; v < g->nvalue; v++)
        made[v] = -1;
    for (int n = 0; n < nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (nd->op == TG_OP_LINEAR) {
            int r = pack_linear(g, n);
            if (r < 0)
                goto fail;
            changed += r;
            continue;
        }
        if (nd->op != TG_OP_SDPA || nd->nin < 4 || nd->in[3] < 0 ||
            g->values[nd->in[3]].dtype != TG_BOOL)
            continue;
        int mv = nd->in[3];
        int packed = additive_mask(g, mv, g->values[nd->in[0]].dtype, made);
        if (packed < 0)
            goto fail;
        g->nodes[n].in[3] = packed;
        TG_LOG(PASSES, TG_LOG_DEBUG, "prepack: %s's boolean mask %s is additive",
               g->nodes[n].name, g->values[mv].name);
        changed++;
    }
    free(made);
    if (changed && tg_graph_compact(g))
        return -1;
    return changed;
fail:
    free(made);
    return -1;
}
