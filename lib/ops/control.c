/* The control-flow ops (ops.def: if, loop): their subgraphs' signatures
 * checked against the node, and the outputs a node declares.
 *
 * A subgraph is a graph of its own: its values are its inputs and its nodes'
 * outputs (no constants: those are the node's inputs too), and its symbols
 * are its own, except that a symbol at the same index with the same name
 * and range as one of the outer graph's, neither a data symbol, is that
 * symbol (a subgraph made for a node starts with a copy of the outer graph's
 * symbols). A dim of the
 * subgraph that uses only such shared symbols means the same outside; any
 * other is known only when the subgraph runs, so the node declares a data
 * symbol there, which the interpreter binds. */
#include "control.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "infer.h"

/* How deep the subgraphs being checked nest (validation recurses into them). */
static _Thread_local int check_depth;

static bool sym_shared(const tg_graph *g, const tg_graph *sg, int s)
{
    const tg_symbol *a = &sg->sym[s], *b = &g->sym[s];
    return s < g->nsym && a->name && b->name && !strcmp(a->name, b->name) && a->min == b->min &&
           a->max == b->max && !a->data && !b->data;
}

/* Whether dim d of subgraph sg means the same in the outer graph g. */
static bool dim_shared(const tg_graph *g, const tg_graph *sg, tg_dim d)
{
    for (int s = 0; s < sg->nsym; s++)
        if (tg_dim_uses_sym(d, s) && !sym_shared(g, sg, s))
            return false;
    return true;
}

/* Whether d is a data symbol of g alone. */
static bool is_data_sym(const tg_graph *g, tg_dim d)
{
    for (int s = 0; s < g->nsym; s++)
        if (g->sym[s].data && tg_dim_eq(d, tg_dim_sym(s)))
            return true;
    return false;
}

static void fmt_dim(const tg_graph *g, tg_dim d, char *buf)
{
    tg_dim_format(d, g->sym, buf, TG_INFER_STR);
}

/* The subgraph attribute `name` of node n, checked on its own. */
static const tg_graph *subgraph(const tg_node *n, const char *name)
{
    const tg_graph *sg = tg_node_graph(n, name);
    if (!sg)
        return tg_err("attribute %s (a graph) is required", name), NULL;
    if (check_depth >= TG_MAX_GRAPH_DEPTH)
        return tg_err("subgraph %s: subgraphs nest deeper than %d", name, TG_MAX_GRAPH_DEPTH),
               NULL;
    for (int v = 0; v < sg->nvalue; v++)
        if (sg->values[v].kind == TG_VALUE_CONST)
            return tg_err("subgraph %s: value '%s' is a constant (a subgraph's constants are "
                          "its node's inputs)", name, sg->values[v].name), NULL;
    check_depth++;
    int rc = tg_graph_validate(sg);
    check_depth--;
    if (rc < 0)
        return tg_err("subgraph %s: %s", name, tg_errmsg()), NULL;
    return sg;
}

/* Subgraph input si takes the node's input value v: one dtype and rank, and
 * the dims they share equal. */
static int check_arg(const tg_graph *g, const tg_graph *sg, const char *name, int si,
                     const tg_value *v)
{
    const tg_value *p = &sg->values[sg->inputs[si]];
    if (!v)
        return tg_err("subgraph %s: input %d ('%s') has no node input to take", name, si, p->name);
    if (p->dtype != v->dtype || p->shape.rank != v->shape.rank)
        return tg_err("subgraph %s: input %d ('%s') is %s of rank %d, the node passes '%s', "
                      "%s of rank %d", name, si, p->name, tg_dtype_name(p->dtype),
                      p->shape.rank, v->name, tg_dtype_name(v->dtype), v->shape.rank);
    for (int k = 0; k < p->shape.rank; k++)
        if (dim_shared(g, sg, p->shape.d[k]) && !tg_dim_eq(p->shape.d[k], v->shape.d[k])) {
            char a[TG_INFER_STR], b[TG_INFER_STR];
            fmt_dim(sg, p->shape.d[k], a);
            fmt_dim(g, v->shape.d[k], b);
            return tg_err("subgraph %s: input %d ('%s') dim %d is %s, the node passes %s", name,
                          si, p->name, k, a, b);
        }
    return 0;
}

/* Declared output o of the node against subgraph output value p, from dim
 * `from` of o on (a scan output's first dim is its trip count): one dtype,
 * rank, and each dim the subgraph's where it is shared, else a data symbol. */
static int check_out(const tg_graph *g, const tg_graph *sg, const char *name, int k,
                     const tg_value *o, const tg_value *p, int from)
{
    if (o->dtype != p->dtype || o->shape.rank != p->shape.rank + from)
        return tg_err("output %d ('%s') is declared %s of rank %d; subgraph %s makes %s of "
                      "rank %d%s", k, o->name, tg_dtype_name(o->dtype), o->shape.rank, name,
                      tg_dtype_name(p->dtype), p->shape.rank, from ? " (+1: stacked)" : "");
    for (int d = 0; d < p->shape.rank; d++) {
        tg_dim od = o->shape.d[d + from], pd = p->shape.d[d];
        if (is_data_sym(g, od) || (dim_shared(g, sg, pd) && tg_dim_eq(od, pd)))
            continue;
        char a[TG_INFER_STR], b[TG_INFER_STR];
        fmt_dim(g, od, a);
        fmt_dim(sg, pd, b);
        return tg_err("output %d ('%s') dim %d is declared %s; subgraph %s makes %s (a dim "
                      "known only at run time is a data symbol)", k, o->name, d + from, a, name,
                      b);
    }
    return 0;
}

/* A scalar condition or count: one element of dtype dt. */
static int check_scalar(const tg_value *v, int i, tg_dtype dt)
{
    int64_t dims[TG_MAX_RANK];
    if (tg_check_dtype(v, i, dt))
        return -1;
    bool one = tg_shape_is_const(&v->shape, dims);
    for (int k = 0; one && k < v->shape.rank; k++)
        one = dims[k] == 1;
    return one ? 0 : tg_err("input %d ('%s') must hold one element", i, v->name);
}

int tg_infer_if(tg_graph *g, int node)
{
    const tg_node *n = &g->nodes[node];
    const tg_value *cond = tg_infer_in(g, node, 0);
    if (!cond || check_scalar(cond, 0, TG_BOOL))
        return -1;
    static const char *const names[2] = {"then", "else"};
    for (int b = 0; b < 2; b++) {
        const tg_graph *sg = subgraph(n, names[b]);
        if (!sg)
            return -1;
        if (sg->ninput != n->nin - 1)
            return tg_err("subgraph %s takes %d inputs, the node passes %d", names[b],
                          sg->ninput, n->nin - 1);
        for (int i = 0; i < sg->ninput; i++)
            if (check_arg(g, sg, names[b], i, tg_infer_opt(g, node, i + 1)))
                return -1;
        if (sg->noutput != n->nout)
            return tg_err("subgraph %s makes %d outputs, the node has %d", names[b],
                          sg->noutput, n->nout);
        for (int k = 0; k < n->nout; k++)
            if (check_out(g, sg, names[b], k, &g->values[n->out[k]],
                          &sg->values[sg->outputs[k]], 0))
                return -1;
    }
    return 0;
}

/* The loop node's counts: N carried values, K invariants, M scan outputs. */
static int loop_counts(const tg_graph *g, const tg_node *n, const tg_graph *body, int *N,
                       int *K)
{
    int64_t c;
    if (tg_attr_req_int(n, "carried", &c))
        return -1;
    if (c < 0 || c > n->nin - 2)
        return tg_err("attribute carried is %" PRId64 ", the node has %d inputs after "
                      "max_trip and cond", c, n->nin - 2);
    *N = (int)c;
    *K = n->nin - 2 - *N;
    if (body->ninput != n->nin)
        return tg_err("subgraph body takes %d inputs, expected %d (iter, cond, %d carried, %d "
                      "invariant)", body->ninput, n->nin, *N, *K);
    if (body->noutput < 1 + *N)
        return tg_err("subgraph body makes %d outputs, expected at least %d (cond, %d carried)",
                      body->noutput, 1 + *N, *N);
    return 0;
}

int tg_infer_loop(tg_graph *g, int node)
{
    const tg_node *n = &g->nodes[node];
    const tg_graph *body = subgraph(n, "body");
    int N = 0, K = 0;
    if (!body || loop_counts(g, n, body, &N, &K))
        return -1;
    const tg_value *trip = tg_infer_opt(g, node, 0), *cond = tg_infer_opt(g, node, 1);
    if ((trip && check_scalar(trip, 0, TG_I64)) || (cond && check_scalar(cond, 1, TG_BOOL)))
        return -1;
    const tg_value *bi = &body->values[body->inputs[0]], *bc = &body->values[body->inputs[1]];
    const tg_value *bo = &body->values[body->outputs[0]];
    if (bi->dtype != TG_I64 || bi->shape.rank || bc->dtype != TG_BOOL || bc->shape.rank)
        return tg_err("subgraph body: inputs 0 and 1 must be the iteration (i64) and the "
                      "condition (bool), scalars");
    if (bo->dtype != TG_BOOL || bo->shape.rank)
        return tg_err("subgraph body: output 0 must be the condition, a bool scalar");
    for (int i = 2; i < n->nin; i++)
        if (check_arg(g, body, "body", i, tg_infer_opt(g, node, i)))
            return -1;
    int M = body->noutput - 1 - N;
    if (n->nout != N + M)
        return tg_err("the node has %d outputs; subgraph body makes %d carried and %d scan "
                      "outputs", n->nout, N, M);
    for (int k = 0; k < N; k++) {
        const tg_value *in = &body->values[body->inputs[2 + k]];
        const tg_value *out = &body->values[body->outputs[1 + k]];
        const tg_value *o = &g->values[n->out[k]], *x = &g->values[n->in[2 + k]];
        bool same = in->dtype == out->dtype && in->shape.rank == out->shape.rank;
        for (int d = 0; same && d < in->shape.rank; d++)   /* data symbols: checked as it runs */
            same = tg_dim_eq(in->shape.d[d], out->shape.d[d]) || is_data_sym(body, out->shape.d[d]);
        if (!same) {
            char a[TG_INFER_STR], b[TG_INFER_STR];
            tg_shape_format(&in->shape, body->sym, a, sizeof a);
            tg_shape_format(&out->shape, body->sym, b, sizeof b);
            return tg_err("carried value %d ('%s') goes into the body as %s%s and comes out as "
                          "%s%s: a carried value keeps its dtype and shape", k, in->name,
                          tg_dtype_name(in->dtype), a, tg_dtype_name(out->dtype), b);
        }
        if (o->dtype != x->dtype || !tg_shape_eq(&o->shape, &x->shape))
            return tg_err("output %d ('%s') must be declared as carried input '%s' is", k,
                          o->name, x->name);
    }
    /* the trip count, a scan output's first dim, is checked when the loop runs */
    for (int j = 0; j < M; j++) {
        const tg_value *o = &g->values[n->out[N + j]];
        if (check_out(g, body, "body", N + j, o, &body->values[body->outputs[1 + N + j]], 1))
            return -1;
    }
    return 0;
}

/* ---- declaring a node's outputs ---- */

tg_graph *tg_control_subgraph(const tg_graph *g)
{
    tg_graph *sub = tg_graph_new();
    for (int s = 0; sub && s < g->nsym; s++) {
        const tg_symbol *y = &g->sym[s];
        int k = tg_graph_add_symbol(sub, y->name, y->min, y->max);
        if (k < 0) {
            tg_graph_free(sub);
            return NULL;
        }
        sub->sym[k].data = y->data;
    }
    return sub;
}

/* The trip count a loop's scan outputs stack, when the import knows it: a
 * constant max_trip with no condition, whose body passes its condition
 * through unchanged. */
static bool known_trips(const tg_graph *g, const int *in, const tg_graph *body, int64_t *t)
{
    const tg_value *m = in[0] >= 0 ? &g->values[in[0]] : NULL;
    if (!m || m->kind != TG_VALUE_CONST || in[1] >= 0 || body->outputs[0] != body->inputs[1])
        return false;
    *t = *(const int64_t *)m->data;
    return *t >= 0;
}

int tg_control_declare(tg_graph *g, tg_op op, int nin, const int *in, int nattr,
                       const tg_attr *attr, const tg_dim *trips, int *nout, tg_dtype *dts,
                       tg_shape *shapes)
{
    const tg_graph *sg[2] = {NULL, NULL};
    for (int i = 0; i < nattr; i++)
        if (attr[i].kind == TG_ATTR_GRAPH)
            sg[!strcmp(attr[i].name, "else")] = attr[i].u.g;
    int first = 0, ncarried = 0;
    for (int i = 0; op == TG_OP_LOOP && i < nattr; i++)
        if (!strcmp(attr[i].name, "carried") && attr[i].kind == TG_ATTR_INT)
            ncarried = (int)attr[i].u.i;
    if (!sg[0] || (op == TG_OP_IF && !sg[1]))
        return tg_err("%s: a subgraph attribute is missing", tg_op_name(op));
    if (op == TG_OP_LOOP)
        first = 1;                      /* the body's condition */
    *nout = sg[0]->noutput - first;
    if (*nout < 1 || *nout > TG_MAX_NODE_OUTPUTS)
        return tg_err("%s: %d outputs, expected 1 to %d", tg_op_name(op), *nout,
                      TG_MAX_NODE_OUTPUTS);
    if (op == TG_OP_IF && sg[1]->noutput != *nout)
        return tg_err("if: the branches make %d and %d outputs", *nout, sg[1]->noutput);
    if (op == TG_OP_LOOP && (ncarried < 0 || ncarried > *nout || 2 + ncarried > nin))
        return tg_err("loop: attribute carried (%d) does not fit the node", ncarried);
    for (int k = 0; op == TG_OP_LOOP && k < ncarried; k++)
        if (in[2 + k] < 0 || in[2 + k] >= g->nvalue)
            return tg_err("loop: carried input %d is missing", k);
    int64_t t = -1;
    bool known = op == TG_OP_LOOP && (trips || (nin >= 2 && known_trips(g, in, sg[0], &t)));
    tg_dim trip = trips ? *trips : tg_dim_const(t);
    for (int k = 0; k < *nout; k++) {
        const tg_value *p = &sg[0]->values[sg[0]->outputs[first + k]];
        dts[k] = p->dtype;
        if (op == TG_OP_LOOP && k < ncarried) {     /* as it went in */
            shapes[k] = g->values[in[2 + k]].shape;
            continue;
        }
        int from = op == TG_OP_LOOP ? 1 : 0;
        if (p->shape.rank + from > TG_MAX_RANK)
            return tg_err("%s: output %d would have rank %d, more than %d", tg_op_name(op), k,
                          p->shape.rank + from, TG_MAX_RANK);
        memset(&shapes[k], 0, sizeof shapes[k]);
        shapes[k].rank = p->shape.rank + from;
        const tg_value *q = op == TG_OP_IF ? &sg[1]->values[sg[1]->outputs[k]] : p;
        for (int d = -from; d < p->shape.rank; d++) {
            /* a dim both branches fix alike, or a new data symbol */
            tg_dim pd = d >= 0 ? p->shape.d[d] : trip;
            bool fixed = d >= 0 ? dim_shared(g, sg[0], pd) && q->shape.rank == p->shape.rank &&
                                  dim_shared(g, sg[1 - !sg[1]], q->shape.d[d]) &&
                                  tg_dim_eq(pd, q->shape.d[d])
                                : known;
            int s = fixed ? 0 : tg_graph_add_data_symbol(g, 0, INT32_MAX);
            if (s < 0)
                return -1;
            shapes[k].d[d + from] = fixed ? pd : tg_dim_sym(s);
        }
    }
    return 0;
}

static int add(tg_graph *g, tg_op op, const char *name, int nin, const int *in, int nattr,
               const tg_attr *attr, const tg_dim *trips)
{
    tg_dtype dts[TG_MAX_NODE_OUTPUTS];
    tg_shape shapes[TG_MAX_NODE_OUTPUTS];
    int nout, nsym = g->nsym;
    if (tg_control_declare(g, op, nin, in, nattr, attr, trips, &nout, dts, shapes) < 0) {
        while (g->nsym > nsym)      /* data symbols made for nothing */
            free(g->sym[--g->nsym].name);
        return tg_err("node %s (%s): %s", name ? name : "(unnamed)", tg_op_name(op),
                      tg_errmsg());
    }
    return tg_graph_add_declared_node(g, op, name, nin, in, nattr, attr, nout, dts, shapes);
}

int tg_control_add(tg_graph *g, tg_op op, const char *name, int nin, const int *in, int nattr,
                   const tg_attr *attr)
{
    return add(g, op, name, nin, in, nattr, attr, NULL);
}

int tg_control_add_loop(tg_graph *g, const char *name, int nin, const int *in, int nattr,
                        const tg_attr *attr, tg_dim trips)
{
    return add(g, TG_OP_LOOP, name, nin, in, nattr, attr, &trips);
}
