/* View fusion: a chain of data-movement nodes (slice, reshape, permute,
 * expand) is one strided view of the chain's input, so it becomes one copy
 * (a VIEW group) instead of one copy per node: attention's
 * slice -> reshape -> permute of q, k and v reads the qkv result once.
 *
 * A VIEW group whose one reader is attention (q, k or v) needs no copy at
 * all when its rows are contiguous: the sdpa kernel reads the view in place
 * (a STRIDED group of the sdpa and its view chains). Likewise the permute
 * that merges the heads of attention's result back ([batch, L, heads, Ev]
 * for the output projection) is no copy: the kernel writes its result in
 * that layout (the permute becomes the STRIDED group's root).
 *
 * tg_view_analyze composes the chain symbolically: starting from the input's
 * contiguous layout, each op changes the dims, the element strides and the
 * offset; a reshape must split or merge dims the strides allow. The target's
 * grouping rules (tg_group_rules: view, strided) say which groups to form. */
#include "passes.h"

#include <string.h>

#include "../error.h"
#include "../log.h"
#include "../ops/infer.h"

static bool movement(tg_op op)
{
    return tg_op_table[op].flags & (TG_OPF_VIEW | TG_OPF_STRIDED);
}

static bool dim_is(tg_dim d, int64_t v)
{
    int64_t c;
    return tg_dim_is_const(d, &c) && c == v;
}

/* v's layout as a contiguous row-major array. */
static int contiguous(const tg_shape *s, tg_view *w)
{
    w->rank = s->rank;
    w->offset = tg_dim_const(0);
    tg_dim st = tg_dim_const(1);
    for (int i = s->rank - 1; i >= 0; i--) {
        w->dims[i] = s->d[i];
        w->strides[i] = st;
        if (tg_dim_mul(st, s->d[i], &st))
            return -1;
    }
    return 0;
}

/* Reshape a strided view to `to`: dims of 1 take any stride; the others group
 * into runs whose element counts match, and a run of source dims must be
 * mergeable (each stride the next one's times its size). */
static int reshape(tg_view *w, const tg_shape *to)
{
    tg_view r = {.base = w->base, .rank = to->rank, .offset = w->offset};
    int i = 0, j = 0;
    for (int k = 0; k < to->rank; k++) {
        r.dims[k] = to->d[k];
        r.strides[k] = tg_dim_const(0);
    }
    while (i < w->rank || j < to->rank) {
        while (i < w->rank && dim_is(w->dims[i], 1))
            i++;
        while (j < to->rank && dim_is(to->d[j], 1))
            j++;
        if (i == w->rank || j == to->rank) {
            if (i != w->rank || j != to->rank)
                return tg_err("reshape: element counts do not line up");
            break;
        }
        int i1 = i, j1 = j;
        tg_dim a = w->dims[i], b = to->d[j];
        while (!tg_dim_eq(a, b)) {
            /* grow the side whose product is smaller (or unknown: the source) */
            int64_t av, bv;
            bool grow_a = !(tg_dim_is_const(a, &av) && tg_dim_is_const(b, &bv)) || av < bv;
            if (grow_a ? ++i1 >= w->rank : ++j1 >= to->rank)
                return tg_err("reshape: element counts do not line up");
            if (grow_a ? tg_dim_mul(a, w->dims[i1], &a) : tg_dim_mul(b, to->d[j1], &b))
                return -1;
        }
        for (int k = i; k < i1; k++) {      /* mergeable run */
            tg_dim next;
            if (dim_is(w->dims[k + 1], 1))
                continue;
            if (tg_dim_mul(w->strides[k + 1], w->dims[k + 1], &next) ||
                !tg_dim_eq(next, w->strides[k]))
                return tg_err("reshape: the strides do not merge");
        }
        tg_dim st = w->strides[i1];
        for (int k = j1; k >= j; k--) {
            r.strides[k] = st;
            if (tg_dim_mul(st, to->d[k], &st))
                return -1;
        }
        i = i1 + 1;
        j = j1 + 1;
    }
    *w = r;
    return 0;
}

/* apply() has a case per STRIDED op of ops.def and takes the VIEW ones
 * (whose output is their input's bytes) as reshapes: a new STRIDED op fails
 * this count until it has its case. */
enum { NSTRIDED = 0
#define OP(id, name, min_in, max_in, infer, family, flag) + (TG_OPF_##flag == TG_OPF_STRIDED)
#include "../ops/ops.def"
#undef OP
};
_Static_assert(NSTRIDED == 3, "apply: a case per STRIDED op of ops.def (slice, permute, expand)");

/* Apply one movement node to the view. */
static int apply(const tg_graph *g, const tg_node *nd, tg_view *w)
{
    const tg_shape *out = &g->values[nd->out[0]].shape;
    switch (nd->op) {
    case TG_OP_SLICE: {
        int ax;
        int64_t a, step = tg_node_int(nd, "step", 1);
        tg_dim zero = tg_dim_const(0), start, t;
        if (tg_attr_req_int(nd, "axis", &a) || tg_axis_norm(a, w->rank, &ax) ||
            tg_attr_get_dim(nd, "start", &zero, &start) ||
            tg_dim_mul(start, w->strides[ax], &t) || tg_dim_add(w->offset, t, &w->offset) ||
            tg_dim_mul(w->strides[ax], tg_dim_const(step), &w->strides[ax]))
            return -1;
        w->dims[ax] = out->d[ax];
        return 0;
    }
    case TG_OP_PERMUTE: {
        const int64_t *p;
        int n = tg_node_ints(nd, "perm", &p);
        tg_view r = *w;
        for (int i = 0; i < n; i++) {
            int k = (int)(p[i] < 0 ? p[i] + n : p[i]);
            r.dims[i] = w->dims[k];
            r.strides[i] = w->strides[k];
        }
        *w = r;
        return 0;
    }
    case TG_OP_EXPAND: {
        tg_view r = {.base = w->base, .rank = out->rank, .offset = w->offset};
        for (int i = 0; i < out->rank; i++) {
            int k = i - (out->rank - w->rank);
            r.dims[i] = out->d[i];
            r.strides[i] = k < 0 || (dim_is(w->dims[k], 1) && !dim_is(out->d[i], 1))
                               ? tg_dim_const(0) : w->strides[k];
        }
        *w = r;
        return 0;
    }
    default:    /* reshape, identity */
        return reshape(w, out);
    }
}

#define MAX_CHAIN 64

int tg_view_analyze(const tg_graph *g, const tg_plan *p, int last, tg_view *w)
{
    int chain[MAX_CHAIN], n = 0;
    for (int k = last;;) {
        if (n == MAX_CHAIN)
            return tg_err("a view chain of more than %d nodes", MAX_CHAIN);
        chain[n++] = k;
        const tg_value *x = &g->values[g->nodes[k].in[0]];
        if (x->kind != TG_VALUE_NODE || p->root[x->producer] != p->root[last])
            break;
        k = x->producer;
    }
    w->base = g->nodes[chain[n - 1]].in[0];
    if (contiguous(&g->values[w->base].shape, w))
        return -1;
    while (n--)
        if (apply(g, &g->nodes[chain[n]], w))
            return -1;
    return 0;
}

static int readers(const tg_graph *g, int v, int *reader)
{
    int k = 0;
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] == v)
                k++, *reader = n;
    for (int o = 0; o < g->noutput; o++)
        k += g->outputs[o] == v ? 2 : 0;    /* an output always has another reader */
    return k;
}

/* Group `from` into group `to` (STRIDED from now on); members come before
 * their root, so none is past `to` (those past `from`: into_sdpa's reshapes). */
static void join_strided(tg_plan *p, int from, int to)
{
    for (int n = 0; n < to; n++)
        if (p->root[n] == from)
            p->root[n] = to;
    p->kind[from] = TG_GROUP_SINGLE;
    p->kind[to] = TG_GROUP_STRIDED;
}

/* Whether node s is an sdpa whose group can take views: its own root, alone
 * or already STRIDED. */
static bool sdpa_group(const tg_graph *g, const tg_plan *p, int s)
{
    return g->nodes[s].op == TG_OP_SDPA && p->root[s] == s &&
           (p->kind[s] == TG_GROUP_SINGLE || p->kind[s] == TG_GROUP_STRIDED);
}

/* The VIEW group `root` into the STRIDED group of its one reader when that is
 * an sdpa reading it as q, k or v with rank 4 (the kernel's batch, head, row
 * strides) and contiguous rows; reshapes of one reader between them (timm's
 * q = qkv[0]: a slice of the heads' permute, then a reshape dropping the
 * sliced axis) join too, the view's last link. Returns whether it did. */
static bool into_sdpa(const tg_graph *g, tg_plan *p, int root)
{
    int v = g->nodes[root].out[0], s = -1, last = root;
    while (readers(g, v, &s) == 1 && tg_op_is_view(g->nodes[s].op) && p->root[s] == s &&
           p->kind[s] == TG_GROUP_SINGLE) {
        last = s;
        v = g->nodes[s].out[0];
    }
    if (readers(g, v, &s) != 1 || !sdpa_group(g, p, s) || g->values[v].dtype != TG_F32)
        return false;
    const tg_node *nd = &g->nodes[s];
    if (nd->in[0] != v && nd->in[1] != v && nd->in[2] != v)
        return false;   /* the mask */
    for (int k = last; k != root; k = g->values[g->nodes[k].in[0]].producer)
        p->root[k] = root;
    tg_view w;
    if (tg_view_analyze(g, p, last, &w) || w.rank != 4 || !dim_is(w.strides[3], 1)) {
        tg_err_clear();
        for (int k = last; k != root; k = g->values[g->nodes[k].in[0]].producer)
            p->root[k] = k;
        return false;
    }
    join_strided(p, root, s);
    TG_LOG(FUSION, TG_LOG_INFO, "view: %s read in place by %s (sdpa)", g->nodes[root].name,
           nd->name);
    return true;
}

/* The sdpa whose result only permute n reads, into n's group (STRIDED, n its
 * root) when the permute keeps the last axis last: the kernel writes its
 * rows, contiguous, where the permute would put them. Returns whether it did. */
static bool sdpa_into_permute(const tg_graph *g, tg_plan *p, int n)
{
    const tg_node *nd = &g->nodes[n];
    const int64_t *perm;
    int reader;
    if (nd->op != TG_OP_PERMUTE || p->root[n] != n || p->kind[n] != TG_GROUP_SINGLE ||
        tg_node_ints(nd, "perm", &perm) != 4 || (perm[3] != 3 && perm[3] != -1))
        return false;
    const tg_value *x = &g->values[nd->in[0]];
    if (x->kind != TG_VALUE_NODE || x->dtype != TG_F32 || readers(g, nd->in[0], &reader) != 1)
        return false;
    int s = x->producer;
    if (!sdpa_group(g, p, s))
        return false;
    join_strided(p, s, n);
    TG_LOG(FUSION, TG_LOG_INFO, "view: %s written in place by %s (sdpa)", nd->name,
           g->nodes[s].name);
    return true;
}

int tg_strided_kernel(const tg_graph *g, int root)
{
    const tg_node *nd = &g->nodes[root];
    return nd->op == TG_OP_PERMUTE ? g->values[nd->in[0]].producer : root;
}

int tg_pass_fuse_views(const tg_graph *g, tg_plan *p)
{
    int groups = 0;
    if (!p->rules || !p->rules->view)
        return 0;
    for (int n = g->nnode - 1; n >= 0; n--) {
        const tg_node *nd = &g->nodes[n];
        if (p->root[n] != n || p->kind[n] != TG_GROUP_SINGLE || !movement(nd->op) ||
            tg_op_is_view(nd->op))
            continue;
        int members = 1, q = n;
        /* grow backwards along the chain while each link has one reader */
        for (;;) {
            const tg_value *x = &g->values[g->nodes[q].in[0]];
            int reader = -1;
            if (x->kind != TG_VALUE_NODE)
                break;
            int pr = x->producer;
            if (!movement(g->nodes[pr].op) || p->root[pr] != pr ||
                p->kind[pr] != TG_GROUP_SINGLE || readers(g, g->nodes[pr].out[0], &reader) != 1)
                break;
            p->root[pr] = n;
            tg_view w;
            if (tg_view_analyze(g, p, n, &w)) {
                TG_LOG(FUSION, TG_LOG_DEBUG, "view: %s into %s refused: %s",
                       g->nodes[pr].name, nd->name, tg_errmsg());
                tg_err_clear();
                p->root[pr] = pr;
                break;
            }
            TG_LOG(FUSION, TG_LOG_INFO, "view: %s (%s) into %s (%s)", g->nodes[pr].name,
                   tg_op_name(g->nodes[pr].op), nd->name, tg_op_name(nd->op));
            members++;
            q = pr;
        }
        if (members > 1) {
            p->kind[n] = TG_GROUP_VIEW;
            groups++;
        }
    }
    if (!p->rules->strided)
        return groups;
    for (int n = 0; n < g->nnode; n++)
        if (p->root[n] == n && p->kind[n] == TG_GROUP_VIEW)
            groups += into_sdpa(g, p, n);
    for (int n = 0; n < g->nnode; n++)
        groups += sdpa_into_permute(g, p, n);
    return groups;
}
