/* The CUDA backend's fused groups (the plan's, lib/passes): which nodes its
 * loop computes (the grouping rules' loop_supports), and a group's run,
 * shared by the interpreter (run_group) and a compiled model's capture
 * (model_rt.c):
 *   LOOP: float32 unary and binary nodes, perhaps ending in a sum or mean
 *         over trailing axes, as one program (k_loop.cu) that reads the
 *         group's outside inputs once and writes only its root;
 *   EPILOGUE: a linear, matmul or conv and its relu, in cuBLASLt's
 *         epilogue (gemm.c) or the convolution's (dnn.c); a conv's may add a
 *         residual first (ResNet's conv, add, relu). */
#include <string.h>

#include "../../error.h"
#include "../cpu/opmap.h"
#include "../cpu/run.h"
#include "cuda.h"

static bool f32_node(const tg_graph *g, const tg_node *nd)
{
    for (int i = 0; i < nd->nin; i++)
        if (nd->in[i] < 0 || g->values[nd->in[i]].dtype != TG_F32)
            return false;
    return g->values[nd->out[0]].dtype == TG_F32;
}

bool tgc_loop_supports(const tg_graph *g, const tg_node *nd, const char **why)
{
    const char *f = tg_op_table[nd->op].family;
    *why = NULL;
    if (tg_op_table[nd->op].flags & TG_OPF_REDUCTION) {
        if (nd->op != TG_OP_REDUCE_SUM && nd->op != TG_OP_REDUCE_MEAN)
            return *why = "a reduction the CUDA loop does not end with", false;
    } else if (!tg_op_is_elementwise(nd->op) || (strcmp(f, "unary") && strcmp(f, "binary"))) {
        return *why = "not a unary or binary elementwise op", false;
    }
    if (!f32_node(g, nd))
        return *why = "the CUDA loop takes float32 only", false;
    return true;
}

/* ---- LOOP ----------------------------------------------------------------------- */

/* The operand of the program that value v is: an input or a step. */
static int operand_of(const tg_group_ctx *c, const int *step_of, int v)
{
    for (int k = 0; k < c->nin; k++)
        if (c->in_values[k] == v)
            return -1 - k;
    const tg_value *x = &c->g->values[v];
    return x->kind == TG_VALUE_NODE ? step_of[x->producer] : TGC_LOOP_MAX_STEPS;
}

/* Drop dims of 1 and merge neighbours of the same kind (kept or reduced)
 * that every input steps through alike. */
static void collapse(tgc_loop *l, const bool *red)
{
    int n = 0, nkeep = 0;
    bool nred[TGK_MAX_RANK];
    for (int d = 0; d < l->rank; d++) {
        if (l->dims[d] == 1)
            continue;
        bool merge = n > 0 && nred[n - 1] == red[d];
        for (int k = 0; k < l->nin && merge; k++)
            merge = l->st[k][n - 1] == l->st[k][d] * l->dims[d];
        if (merge) {
            l->dims[n - 1] *= l->dims[d];
            for (int k = 0; k < l->nin; k++)
                l->st[k][n - 1] = l->st[k][d];
            continue;
        }
        l->dims[n] = l->dims[d];
        for (int k = 0; k < l->nin; k++)
            l->st[k][n] = l->st[k][d];
        nred[n] = red[d];
        nkeep += !red[d];
        n++;
    }
    l->rank = n;
    l->nkeep = nkeep;
}

static int run_loop(const tgc_state *cs, const tg_group_ctx *c)
{
    const tg_graph *g = c->g;
    const tg_node *root = &g->nodes[c->nodes[c->nnode - 1]];
    bool reduce = tg_op_table[root->op].flags & TG_OPF_REDUCTION;
    tgc_loop l = {.nin = c->nin};
    int step_of[g->nnode + 1];
    for (int n = 0; n < g->nnode; n++)
        step_of[n] = TGC_LOOP_MAX_STEPS;        /* no step: refused below */
    if (c->nin > TGC_LOOP_MAX_IN || c->nnode - reduce > TGC_LOOP_MAX_STEPS)
        return tg_err("cuda: a loop of %d inputs and %d nodes", c->nin, c->nnode);
    /* the space: the root's result, or what it reduces (an inside value) */
    const tg_value *sp = &g->values[reduce ? root->in[0] : root->out[0]];
    l.rank = sp->shape.rank;
    if (tg_shape_eval(&sp->shape, c->sym, l.dims))
        return -1;
    bool red[TGK_MAX_RANK] = {false};
    if (reduce) {
        tg_tensor x = {.dtype = TG_F32, .rank = l.rank};
        const tg_tensor *xp = &x;
        tg_run_ctx rc = {g, root, c->sym, &xp, NULL};
        uint32_t mask;
        if (tg_run_reduce_mask(&rc, &mask))
            return -1;
        for (int d = 0; d < l.rank; d++)
            red[d] = mask >> d & 1;
        for (int d = 0, seen = 0; d < l.rank; d++) {
            if (l.dims[d] != 1 && seen && !red[d])
                return tg_err("cuda: a loop reducing axes that are not the trailing ones");
            seen |= red[d] && l.dims[d] != 1;
        }
        l.red = tg_cpu_reduce_kop[root->op];
    }
    for (int k = 0; k < c->nin; k++) {
        tgk_broadcast_strides(l.rank, l.dims, c->in[k]->rank, c->in[k]->dims, l.st[k]);
        l.in[k] = c->in[k]->data;
    }
    for (int i = 0; i < c->nnode - reduce; i++) {
        const tg_node *nd = &g->nodes[c->nodes[i]];
        tgc_loop_step *s = &l.step[l.nstep];
        bool binary = !strcmp(tg_op_table[nd->op].family, "binary");
        s->binary = binary;
        if (binary)
            s->op = (uint8_t)tg_cpu_binary_kop[nd->op];
        else {
            tgk_unary_op u;
            tg_cpu_unary_desc(nd, &u, &s->p);
            s->op = (uint8_t)u;
        }
        s->a = (int8_t)operand_of(c, step_of, nd->in[0]);
        s->b = (int8_t)(binary ? operand_of(c, step_of, nd->in[1]) : 0);
        if (s->a >= l.nstep || (binary && s->b >= l.nstep))
            return tg_err("cuda: %s reads a value the loop does not have", nd->name);
        step_of[c->nodes[i]] = l.nstep++;
    }
    l.res = reduce ? operand_of(c, step_of, root->in[0]) : l.nstep - 1;
    collapse(&l, red);
    if (!reduce)
        l.nkeep = l.rank;
    int e = tgc_loop_f32(&l, c->out[0]->data, cs->stream);
    return e ? tgc_fail(e, "launching a kernel") : 0;
}

/* ---- EPILOGUE --------------------------------------------------------------------- */

/* The tensor group c reads from outside as value v, or NULL */
static const tg_tensor *outside(const tg_group_ctx *c, int v)
{
    for (int k = 0; k < c->nin && v >= 0; k++)
        if (c->in_values[k] == v)
            return c->in[k];
    return NULL;
}

/* The product writes the root's result, cuBLASLt's epilogue the relu (the
 * rules let no other activation join, cuda.c); a conv's group may add a
 * residual before its relu (conv_residual: conv, add, and perhaps relu),
 * which its kernel applies (dnn.c: cuDNN's fused call or the pass that
 * converts its result; gemm.c, run.c: after the product). */
static int run_epilogue(const tgc_state *cs, const tg_group_ctx *c)
{
    const tg_graph *g = c->g;
    const tg_node *a = &g->nodes[c->nodes[0]];
    tgc_state s = *cs;
    int k = 1;
    if (k < c->nnode && g->nodes[c->nodes[k]].op == TG_OP_ADD && a->op == TG_OP_CONV) {
        const tg_node *add = &g->nodes[c->nodes[k++]];
        const tg_tensor *z = outside(c, add->in[0] == a->out[0] ? add->in[1] : add->in[0]);
        if (!z || z->dtype != TG_F32)
            return tg_err("cuda: %s: the residual is no float32 input of the group", add->name);
        s.residual = z->data;
    }
    if (k < c->nnode && g->nodes[c->nodes[k]].op == TG_OP_RELU)
        s.relu = true, k++;
    if (k != c->nnode || (!s.relu && !s.residual))
        return tg_err("cuda: %s: an epilogue but a residual add and relu", a->name);
    const tg_tensor *in[a->nin + 1];
    for (int j = 0; j < a->nin; j++)
        in[j] = outside(c, a->in[j]);
    tg_run_ctx ac = {g, a, c->sym, in, c->out};
    return tgc_run_node(&s, &ac);
}

int tgc_run_group(const tgc_state *cs, const tg_group_ctx *c)
{
    switch (c->kind) {
    case TG_GROUP_LOOP: return run_loop(cs, c);
    case TG_GROUP_EPILOGUE: return run_epilogue(cs, c);
    default: return tg_err("cuda: no fused run for this kind of group");
    }
}
