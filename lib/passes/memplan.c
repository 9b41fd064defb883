/* Memory plan: where every value lives during a run.
 *
 * Views (reshape, identity) share their input's bytes; values inside a fused
 * loop or a fused view chain have none; an epilogue's values are its root's. A graph output is
 * written straight into the caller's buffer. Where the target's rules allow
 * (writes_rows), an operand that only a concat reads is written by its
 * producer straight into its part of the concat's result (GoogLeNet's
 * inception branches), which then lives from the first such producer on.
 * Everything else gets a workspace slot: walking the groups in order, a
 * value takes a slot that no live value holds (one that held a value of the
 * same size first, then the smallest that is big enough, then the largest),
 * and gives it back after its last use.
 * Sizes are symbolic, so a slot's size is the largest of its values' sizes,
 * evaluated at run time. */
#include "passes.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "../error.h"
#include "../log.h"

typedef struct {
    tg_dim size;            /* the size it was last given for */
    int64_t hi;             /* largest of its values' sizes at the symbols' maxima */
    bool busy;
} slot_info;

static tg_dim value_bytes(const tg_graph *g, int v)
{
    tg_dim n;
    const tg_value *x = &g->values[v];
    if (tg_shape_numel(&x->shape, &n) || tg_dim_mul(n, tg_dim_const(tg_dtype_size(x->dtype)), &n)) {
        tg_err_clear();
        n = tg_dim_const(INT64_MAX / 4);   /* too complex to compare: never matches */
    }
    return n;
}

static int64_t at_max(const tg_graph *g, tg_dim d, bool hi)
{
    int64_t lo, h;
    tg_dim_range(d, g->sym, &lo, &h);
    return hi ? h : lo;
}

/* Storage of every value: itself, its view's source, or its epilogue root's result. */
static void plan_alias(const tg_graph *g, tg_plan *p)
{
    for (int v = 0; v < g->nvalue; v++)
        p->alias[v] = v;
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        if (tg_op_is_view(nd->op) && nd->in[0] >= 0)
            p->alias[nd->out[0]] = p->alias[nd->in[0]];
    }
    /* epilogue members compute in place in the root's result */
    for (int n = 0; n < g->nnode; n++) {
        int r = p->root[n];
        if (r != n && p->kind[r] == TG_GROUP_EPILOGUE)
            p->alias[g->nodes[n].out[0]] = g->nodes[r].out[0];
    }
}

/* A node output that needs memory of its own. */
static bool owns_storage(const tg_graph *g, const tg_plan *p, int v)
{
    const tg_value *x = &g->values[v];
    if (x->kind != TG_VALUE_NODE || p->alias[v] != v)
        return false;
    int n = x->producer;
    return !(p->root[n] != n &&
             (p->kind[p->root[n]] == TG_GROUP_LOOP || p->kind[p->root[n]] == TG_GROUP_VIEW ||
              p->kind[p->root[n]] == TG_GROUP_STRIDED));
}

static bool uses_data_symbol(const tg_graph *g, const tg_shape *s)
{
    for (int k = 0; k < s->rank; k++)
        for (int y = 0; y < g->nsym; y++)
            if (g->sym[y].data && tg_dim_uses_sym(s->d[k], y))
                return true;
    return false;
}

static int concat_axis(const tg_graph *g, const tg_node *nd)
{
    int rank = g->values[nd->out[0]].shape.rank;
    int64_t a = tg_node_int(nd, "axis", 0);
    return (int)(a < 0 ? a + rank : a);
}

/* product of dims [from, to) of s into *out; -1 when it does not fit */
static int dims_prod(const tg_shape *s, int from, int to, tg_dim *out)
{
    *out = tg_dim_const(1);
    for (int k = from; k < to; k++)
        if (tg_dim_mul(*out, s->d[k], out))
            return -1;
    return 0;
}

/* Where operand i of concat node n lies in its result (tg_plan_part). */
static int part_at(const tg_graph *g, int n, int i, tg_part *pt)
{
    const tg_node *nd = &g->nodes[n];
    const tg_shape *y = &g->values[nd->out[0]].shape;
    tg_dim inner, before = tg_dim_const(0);
    pt->axis = concat_axis(g, nd);
    if (dims_prod(y, pt->axis + 1, y->rank, &inner) || dims_prod(y, 0, pt->axis, &pt->outer))
        return -1;
    for (int k = 0; k < i; k++)
        if (tg_dim_add(before, g->values[nd->in[k]].shape.d[pt->axis], &before))
            return -1;
    tg_dim len = g->values[nd->in[i]].shape.d[pt->axis];
    return tg_dim_mul(before, inner, &pt->offset) || tg_dim_mul(len, inner, &pt->row) ||
                   tg_dim_mul(y->d[pt->axis], inner, &pt->stride)
               ? -1
               : 0;
}

/* Whether operand i of concat node n can be written in place: a value of
 * its own storage that nothing else reads (nor the graph's outputs), and
 * either one block of the result or made by a group whose kernels write
 * rows at a stride. */
static bool part_ok(const tg_graph *g, const tg_plan *p, const int *readers, const bool *holds,
                    int n, int i)
{
    const tg_node *nd = &g->nodes[n];
    int x = nd->in[i];
    if (x < 0 || readers[x] != 1 || holds[x] || !owns_storage(g, p, x) ||
        uses_data_symbol(g, &g->values[x].shape))
        return false;
    tg_part pt;
    int64_t one = 0;
    if (part_at(g, n, i, &pt)) {
        tg_err_clear();
        return false;
    }
    return (tg_dim_is_const(pt.outer, &one) && one == 1) ||
           p->rules->writes_rows(g, p, p->root[g->values[x].producer], pt.axis);
}

/* The concats' operands written in place (tg_plan.part); holds[v]: a concat
 * result that holds parts (itself no part of another). */
static int plan_parts(const tg_graph *g, tg_plan *p)
{
    int nv = g->nvalue, nparts = 0;
    for (int v = 0; v < nv; v++)
        p->part[v] = p->part_in[v] = -1;
    if (!p->rules || !p->rules->writes_rows)
        return 0;
    int *readers = calloc(nv + 1, sizeof *readers);
    bool *holds = calloc(nv + 1, sizeof *holds);
    if (!readers || !holds) {
        free(readers);
        free(holds);
        return tg_err("out of memory");
    }
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] >= 0)
                readers[g->nodes[n].in[i]]++;
    for (int j = 0; j < g->noutput; j++)
        readers[g->outputs[j]]++;
    for (int n = 0; n < g->nnode; n++) {
        const tg_node *nd = &g->nodes[n];
        int y = nd->out[0];
        if (nd->op != TG_OP_CONCAT || p->root[n] != n || p->kind[n] != TG_GROUP_SINGLE ||
            !owns_storage(g, p, y) || uses_data_symbol(g, &g->values[y].shape))
            continue;
        for (int i = 0; i < nd->nin; i++) {
            int x = nd->in[i];
            if (!part_ok(g, p, readers, holds, n, i))
                continue;
            for (int v = 0; v < nv; v++)    /* x and what computes in place in it */
                if (p->alias[v] == x) {
                    p->alias[v] = y;
                    p->part[v] = n;
                    p->part_in[v] = i;
                }
            holds[y] = true;
            nparts++;
        }
    }
    free(readers);
    free(holds);
    TG_LOGF(MEMORY, TG_LOG_INFO, NULL, "concats: %d operands written in place", nparts);
    return 0;
}

int tg_plan_part(const tg_graph *g, const tg_plan *p, int v, tg_part *pt)
{
    return part_at(g, p->part[v], p->part_in[v], pt);
}

static int pick_slot(const tg_graph *g, slot_info *s, int nslot, tg_dim size)
{
    int64_t hi = at_max(g, size, true);
    int same = -1, fit = -1, big = -1;
    for (int i = 0; i < nslot; i++) {
        if (s[i].busy)
            continue;
        if (same < 0 && tg_dim_eq(s[i].size, size))
            same = i;
        if (s[i].hi >= hi && (fit < 0 || s[i].hi < s[fit].hi))
            fit = i;
        if (big < 0 || s[i].hi > s[big].hi)
            big = i;
    }
    return same >= 0 ? same : fit >= 0 ? fit : big;
}

static void log_plan(const tg_graph *g, const tg_plan *p, const slot_info *s)
{
    int64_t lo = 0, hi = 0, nolo = 0, nohi = 0;
    for (int i = 0; i < p->nslot; i++) {
        int64_t slo = 0;
        for (int v = 0; v < g->nvalue; v++)
            if (p->slot[v] == i && at_max(g, value_bytes(g, v), false) > slo)
                slo = at_max(g, value_bytes(g, v), false);
        lo += slo;
        hi += s[i].hi;
        if (tg_log_on(MEMORY, TG_LOG_DEBUG)) {
            char line[1024];
            int k = snprintf(line, sizeof line, "slot %d (up to %" PRId64 " bytes):", i, s[i].hi);
            for (int v = 0; v < g->nvalue && k < (int)sizeof line; v++)
                if (p->slot[v] == i)
                    k += snprintf(line + k, sizeof line - k, " %s", g->values[v].name);
            TG_LOG(MEMORY, TG_LOG_DEBUG, "%s", line);
        }
    }
    for (int v = 0; v < g->nvalue; v++)
        if (p->slot[v] >= 0) {
            nolo += at_max(g, value_bytes(g, v), false);
            nohi += at_max(g, value_bytes(g, v), true);
        }
    TG_LOGF(MEMORY, TG_LOG_INFO, NULL,
            "workspace: %d slots, %" PRId64 "..%" PRId64 " bytes over the symbols' ranges"
            " (without reuse %" PRId64 "..%" PRId64 ")", p->nslot, lo, hi, nolo, nohi);
}

int tg_pass_memplan(const tg_graph *g, tg_plan *p)
{
    int nv = g->nvalue;
    free(p->alias);
    free(p->slot);
    free(p->output);
    free(p->part);
    free(p->part_in);
    p->alias = malloc((nv + 1) * sizeof *p->alias);
    p->slot = malloc((nv + 1) * sizeof *p->slot);
    p->output = malloc((nv + 1) * sizeof *p->output);
    p->part = malloc((nv + 1) * sizeof *p->part);
    p->part_in = malloc((nv + 1) * sizeof *p->part_in);
    int *last = malloc((nv + 1) * sizeof *last);
    slot_info *s = calloc(nv + 1, sizeof *s);
    if (!p->alias || !p->slot || !p->output || !p->part || !p->part_in || !last || !s) {
        free(last);
        free(s);
        return tg_err("out of memory");
    }
    p->nvalue = nv;
    p->nslot = 0;
    plan_alias(g, p);
    if (plan_parts(g, p)) {
        free(last);
        free(s);
        return -1;
    }
    for (int v = 0; v < nv; v++) {
        p->slot[v] = p->output[v] = -1;
        last[v] = -1;
    }
    for (int j = 0; j < g->noutput; j++) {
        int r = p->alias[g->outputs[j]];
        if (owns_storage(g, p, r) && p->output[r] < 0)
            p->output[r] = j;
    }
    /* last use of each storage value, at the position its user's group runs */
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] >= 0) {
                int r = p->alias[g->nodes[n].in[i]];
                if (p->root[n] > last[r])
                    last[r] = p->root[n];
            }
    for (int j = 0; j < g->noutput; j++)
        last[p->alias[g->outputs[j]]] = g->nnode;
    for (int n = 0; n < g->nnode; n++) {
        if (p->root[n] != n)
            continue;
        const tg_node *nd = &g->nodes[n];
        for (int o = 0; o < nd->nout; o++) {
            int v = p->alias[nd->out[o]];   /* a part: its concat's result, made here first */
            if (!owns_storage(g, p, v) || p->output[v] >= 0 || p->slot[v] >= 0)
                continue;
            tg_dim size = value_bytes(g, v);
            int k = pick_slot(g, s, p->nslot, size);
            if (k < 0)
                k = p->nslot++;
            s[k].busy = true;
            s[k].size = size;
            if (at_max(g, size, true) > s[k].hi)
                s[k].hi = at_max(g, size, true);
            p->slot[v] = k;
            if (last[v] < n)
                last[v] = n;    /* unused results still need their bytes while written */
        }
        /* give back what dies here, after the group has run */
        for (int v = 0; v < nv; v++)
            if (p->slot[v] >= 0 && last[v] == n)
                s[p->slot[v]].busy = false;
    }
    log_plan(g, p, s);
    free(last);
    free(s);
    return p->nslot;
}
