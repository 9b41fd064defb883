/* torch's control flow as tgraph's if and loop ops (ops.def; lib/ops/control.c).
 *
 * torch.export writes each branch or body of a higher-order op as a nested
 * graph among the node's arguments ({"as_graph": {"name", "graph": {inputs,
 * outputs, nodes, tensor_values}}}), with names of its own; what it reads of
 * the program (parameters, buffers, captured tensors) is already among its
 * inputs, passed by the node. A nested graph is converted by the same
 * operator tables, in a namespace of its own, into a subgraph that starts
 * with the enclosing graph's symbols (so dims keep their meaning); the
 * constants the conversion makes inside become inputs the node passes.
 *
 *   cond(pred, true_fn, false_fn, operands)  -> if(pred, operands...)
 *   while_loop(cond_fn, body_fn, carried, additional)
 *       -> loop(none, cond_fn(carried), carried..., additional...), its body
 *          body_fn and then cond_fn on what body_fn made
 *   map_impl(body_fn, xs, args)
 *       -> loop(len(xs), none, xs..., args...), its body body_fn(xs[iter],
 *          args) as scan outputs, len(xs) the trip count it declares */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"
#include "ops/control.h"

/* Operands, carried values and outputs a higher-order node has at most. */
#define FLOW_MAX 64

/* A nested graph argument. */
typedef struct {
    const char *name;           /* "true_graph_0" */
    const cJSON *g;
    int nin, nout;
} nested;

/* Positional argument i of the node, {"as_<kind>": ...}, or NULL (tg_err). */
static const cJSON *arg_at(const cJSON *node, int i, const char *kind, const char *what)
{
    const cJSON *in = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(node, "inputs"), i);
    const cJSON *a = cJSON_GetObjectItemCaseSensitive(in, "arg");
    a = cJSON_IsObject(a) ? a->child : NULL;
    if (!a || strcmp(pt2_key(a), kind))
        return tg_err("argument %d (%s): expected %s, got %s", i, what, kind,
                      a ? pt2_key(a) : "nothing"), NULL;
    return a;
}

static int nested_at(const cJSON *node, int i, const char *what, nested *ng)
{
    const cJSON *a = arg_at(node, i, "as_graph", what);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(a, "name");
    ng->g = cJSON_GetObjectItemCaseSensitive(a, "graph");
    ng->name = cJSON_IsString(n) ? n->valuestring : what;
    if (!a)
        return -1;
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(ng->g, "inputs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(ng->g, "outputs");
    if (!cJSON_IsArray(ins) || !cJSON_IsArray(outs) ||
        !cJSON_IsArray(cJSON_GetObjectItemCaseSensitive(ng->g, "nodes")))
        return tg_err("argument %d (%s): graph %s lacks inputs, outputs or nodes", i, what,
                      ng->name);
    ng->nin = cJSON_GetArraySize(ins);
    ng->nout = cJSON_GetArraySize(outs);
    if (ng->nin > FLOW_MAX || ng->nout > FLOW_MAX)
        return tg_err("graph %s: more than %d inputs or outputs", ng->name, FLOW_MAX);
    return 0;
}

/* The tensors of list argument i: values in v[], their count in *n. */
static int tensors_at(pt2_ctx *c, const cJSON *node, int i, const char *what, int *v, int *n)
{
    const cJSON *a = arg_at(node, i, "as_tensors", what), *t;
    if (!a)
        return -1;
    *n = 0;
    cJSON_ArrayForEach(t, a) {
        const cJSON *nm = cJSON_GetObjectItemCaseSensitive(t, "name");
        const pt2_name *p = cJSON_IsString(nm) ? pt2_lookup(c, nm->valuestring) : NULL;
        if (*n == FLOW_MAX)
            return tg_err("argument %d (%s): more than %d tensors", i, what, FLOW_MAX);
        if (!p || p->kind != PT2_TENSOR)
            return tg_err("argument %d (%s): tensor %d is not computed", i, what, *n);
        v[(*n)++] = p->v;
    }
    return 0;
}

/* The name of input or output i of nested graph ng, which must be a tensor. */
static const char *io_name(const nested *ng, const char *list, int i)
{
    const cJSON *a = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(ng->g, list), i);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(a, "as_tensor"), "name");
    if (!cJSON_IsString(n))
        return tg_err("graph %s: %s %d is not a tensor (%s)", ng->name, list, i,
                      a && a->child ? pt2_key(a->child) : "nothing"), NULL;
    return n->valuestring;
}

/* Prefix the current node's (torch) name with the current prefix, + sfx. */
static void node_prefix(const pt2_ctx *c, const char *sfx, char *buf, size_t n)
{
    const cJSON *nm = cJSON_GetObjectItemCaseSensitive(c->node, "name");
    snprintf(buf, n, "%s%s%s", c->prefix ? c->prefix : "",
             cJSON_IsString(nm) ? nm->valuestring : c->out0, sfx);
}

/* Nested graph ng converted into g (the graph being built meanwhile), its
 * inputs bound to in[] (values of g), its outputs' values in out[]; the names
 * of the nodes it adds start with prefix (NULL: none). */
static int convert_nested(pt2_ctx *c, const nested *ng, tg_graph *g, const char *prefix,
                          const int *in, int *out)
{
    if (c->depth >= TG_MAX_GRAPH_DEPTH)
        return tg_err("graph %s: nested graphs nest deeper than %d", ng->name,
                      TG_MAX_GRAPH_DEPTH);
    pt2_ctx outer = *c;
    int before = g->nnode;
    pt2_scope names;
    pt2_scope_enter(c, &names);
    c->g = g;
    c->prefix = prefix;
    c->depth++;
    int rc = 0;
    for (int i = 0; i < ng->nin && !rc; i++) {
        const char *n = io_name(ng, "inputs", i);
        rc = n ? pt2_bind_tensor(c, n, in[i]) : -1;
    }
    if (!rc)
        rc = pt2_convert_nodes(c, ng->g);
    for (int i = 0; i < ng->nout && !rc; i++) {
        const char *n = io_name(ng, "outputs", i);
        const pt2_name *p = n ? pt2_lookup(c, n) : NULL;
        if (n && (!p || p->kind != PT2_TENSOR))
            rc = tg_err("graph %s: output %d ('%s') is not computed", ng->name, i, n);
        else
            rc = n ? (out[i] = p->v, 0) : -1;
    }
    pt2_scope_leave(c, &names);
    c->g = outer.g;
    c->prefix = outer.prefix;
    c->depth = outer.depth;
    c->node = outer.node;
    c->out0 = outer.out0;
    c->source = outer.source;
    /* the nodes it adds here are the current node's, for the log */
    c->nemit = outer.nemit + (g == outer.g ? g->nnode - before : 0);
    if (rc && strncmp(tg_errmsg(), "graph ", 6)) {
        char *m = strdup(tg_errmsg());
        tg_err("graph %s: %s", ng->name, m ? m : "out of memory");
        free(m);
    }
    return rc;
}

/* Scalar inputs iter (i64) and cond (bool) of a loop body, named after the node. */
static int loop_heads(pt2_ctx *c, tg_graph *body, int *in)
{
    static const tg_dtype dt[2] = {TG_I64, TG_BOOL};
    static const char *const what[2] = {"/iter", "/cond"};
    tg_shape scalar = {0};
    for (int i = 0; i < 2; i++) {
        char name[512];
        node_prefix(c, what[i], name, sizeof name);
        if ((in[i] = tg_graph_add_input(body, name, dt[i], &scalar)) < 0)
            return -1;
    }
    return 0;
}

/* A subgraph for the current node: c->g's symbols, a loop body's iter and
 * cond (when in_loop; their ids first in in[]), then inputs named names[i] of
 * the dtypes and shapes of c->g's values like[i]. */
static tg_graph *new_sub(pt2_ctx *c, bool in_loop, int n, const char *const *names,
                         const int *like, int *in)
{
    tg_graph *s = tg_control_subgraph(c->g);
    if (s && in_loop && loop_heads(c, s, in) < 0)
        n = -1;
    for (int i = 0, h = in_loop ? 2 : 0; s && i < n; i++) {
        const tg_value *v = &c->g->values[like[i]];
        if ((in[h + i] = tg_graph_add_input(s, names[i], v->dtype, &v->shape)) < 0)
            n = -1;
    }
    if (n < 0) {
        tg_graph_free(s);
        s = NULL;
    }
    return s;
}

/* Finish subgraph sub: its outputs out[n], its dead nodes dropped, and the
 * constants the conversion made in it turned into its last inputs, for which
 * the node passes copies in c->g: their ids appended to in[*nin]. */
static int finish_sub(pt2_ctx *c, tg_graph *sub, const char *where, int nout, const int *out,
                      int *in, int *nin)
{
    for (int k = 0; k < nout; k++)
        if (tg_graph_add_output(sub, out[k]) < 0)
            return -1;
    if (pt2_drop_dead(sub) < 0)
        return -1;
    for (int v = 0; v < sub->nvalue; v++) {
        if (sub->values[v].kind != TG_VALUE_CONST)
            continue;
        if (*nin == 2 * FLOW_MAX + 2)
            return tg_err("%s makes more than %d constants", where, FLOW_MAX);
        tg_value cv = sub->values[v];
        void *data;
        size_t nb;
        char name[512];
        snprintf(name, sizeof name, "%s/%s", where, cv.name);
        for (int k = 2; tg_graph_find_value(c->g, name) >= 0; k++)
            snprintf(name, sizeof name, "%s/%s_%d", where, cv.name, k);
        if (tg_graph_const_to_input(sub, v, &data, &nb) < 0 ||
            (in[(*nin)++] = tg_graph_add_const(c->g, name, cv.dtype, &cv.shape, data, nb)) < 0)
            return -1;
    }
    return 0;
}

/* Bind the node's outputs to those of the control node whose first output is y. */
static int bind_outs(pt2_ctx *c, int y, int nout)
{
    if (y < 0)
        return -1;
    const tg_node *n = &c->g->nodes[c->g->nnode - 1];
    if (pt2_out_count(c->node) != nout)
        return tg_err("the node has %d outputs, its graphs make %d", pt2_out_count(c->node),
                      nout);
    for (int k = 0; k < nout; k++)
        if (pt2_set_out(c, k, n->out[k]) < 0)
            return -1;
    c->nemit++;
    return 0;
}

/* Dim d as an i64 scalar of the run: a constant, or the length of a [d]
 * tensor made for it (any expression of the symbols). */
static int dim_value(pt2_ctx *c, tg_dim d)
{
    int64_t k;
    if (tg_dim_is_const(d, &k))
        return pt2_const(c, (pt2_scalar){.kind = PT2_S_INT, .i = k}, TG_I64);
    tg_attr a[2] = {tg_attr_dims("shape", 1, &d), tg_attr_dtype("dtype", TG_U8)};
    tg_dim scalar[1];   /* rank 0: no dims (not NULL: memcpy) */
    int len = pt2_unary(c, false, TG_OP_SHAPE, pt2_emit(c, false, TG_OP_FULL, 0, NULL, 2, a));
    return pt2_reshape(c, false, len, 0, scalar);
}

/* A predicate that is a condition on sizes (a SymBool: x.shape[0] > 4), as a
 * bool tensor of the run: one comparison of two sizes. */
static int sym_pred(pt2_ctx *c, const char *name)
{
    static const struct {
        const char *fn;
        tg_op op;
    } cmp[] = {{"_operator.gt", TG_OP_GT}, {"_operator.ge", TG_OP_GE}, {"_operator.lt", TG_OP_LT},
               {"_operator.le", TG_OP_LE}, {"_operator.eq", TG_OP_EQ}, {"_operator.ne", TG_OP_NE}};
    const cJSON *n, *maker = NULL;
    cJSON_ArrayForEach(n, cJSON_GetObjectItemCaseSensitive(c->graph, "nodes")) {
        const cJSON *o = cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(n, "outputs"), 0);
        const char *s = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
            cJSON_GetObjectItemCaseSensitive(o, "as_sym_bool"), "as_name"));
        if (s && !strcmp(s, name))
            maker = n;
    }
    const char *t = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(maker, "target"));
    for (size_t k = 0; t && k < sizeof cmp / sizeof *cmp; k++) {
        tg_dim a, b;
        if (strcmp(t, cmp[k].fn))
            continue;
        if (pt2_dim(c, maker, "a", tg_dim_const(0), &a) < 0 ||
            pt2_dim(c, maker, "b", tg_dim_const(0), &b) < 0)
            return -1;
        return pt2_binary(c, false, cmp[k].op, dim_value(c, a), dim_value(c, b));
    }
    return tg_err("the predicate '%s' is a condition on sizes (a SymBool) made by %s; texport "
                  "computes one comparison of two sizes (_operator.gt, ge, lt, le, eq, ne)",
                  name, t ? t : "no node it knows");
}

/* torch.cond: both branches take the operands, then the constants either
 * makes (each its own, and an unused input for each of the other's). */
static int h_cond(pt2_ctx *c, const cJSON *node)
{
    nested br[2];
    int pred = -1, in[2 * FLOW_MAX + 2], n = 1, nops, y = -1;
    const cJSON *p = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetArrayItem(cJSON_GetObjectItemCaseSensitive(node, "inputs"), 0), "arg");
    bool sym = p && p->child && !strcmp(pt2_key(p->child), "as_sym_bool");
    const char *pname = cJSON_GetStringValue(cJSON_GetObjectItemCaseSensitive(
        sym ? p->child : arg_at(node, 0, "as_tensor", "pred"), sym ? "as_name" : "name"));
    if (!pname || nested_at(node, 1, "true_fn", &br[0]) < 0 ||
        nested_at(node, 2, "false_fn", &br[1]) < 0 ||
        tensors_at(c, node, 3, "operands", in + 1, &nops) < 0)
        return -1;
    const pt2_name *pn = pt2_lookup(c, pname);
    if (!sym && (!pn || pn->kind != PT2_TENSOR))
        return tg_err("argument 0 (pred): '%s' is not computed", pname);
    if ((pred = sym ? sym_pred(c, pname) : pt2_cast(c, false, pn->v, TG_BOOL)) < 0)
        return -1;
    in[0] = pred;
    n += nops;
    if (br[0].nout != br[1].nout || br[0].nout < 1)
        return tg_err("the branches make %d and %d outputs", br[0].nout, br[1].nout);
    tg_graph *sub[2] = {NULL, NULL};
    int first[2] = {1, 1}, rc = 0;
    for (int b = 0; b < 2 && !rc; b++) {
        const char *names[FLOW_MAX];
        int sin[FLOW_MAX], out[FLOW_MAX];
        char where[512];
        if (br[b].nin != nops) {
            rc = tg_err("graph %s takes %d inputs, the node passes %d operands", br[b].name,
                        br[b].nin, nops);
            break;
        }
        for (int i = 0; i < nops && !rc; i++)
            rc = (names[i] = io_name(&br[b], "inputs", i)) ? 0 : -1;
        node_prefix(c, b ? "/false" : "/true", where, sizeof where);
        first[b] = n;
        if (rc || !(sub[b] = new_sub(c, false, nops, names, in + 1, sin)) ||
            convert_nested(c, &br[b], sub[b], NULL, sin, out) < 0 ||
            finish_sub(c, sub[b], where, br[b].nout, out, in, &n) < 0)
            rc = -1;
    }
    /* then: operands, its constants, the else branch's unused; else: operands,
     * the then branch's unused, its constants */
    int nc[2] = {first[1] - first[0], n - first[1]}, order[2 * FLOW_MAX + 2];
    for (int b = 0; b < 2 && !rc; b++) {
        tg_graph *s = sub[b];
        int base = s->ninput - nc[b];
        for (int k = first[1 - b]; k < first[1 - b] + nc[1 - b] && !rc; k++) {
            const tg_value *ov = &c->g->values[in[k]];
            rc = tg_graph_add_input(s, ov->name, ov->dtype, &ov->shape) < 0 ? -1 : 0;
        }
        if (rc || !b)
            continue;
        memcpy(order, s->inputs + base + nc[1], sizeof(int) * (size_t)nc[0]);
        memcpy(order + nc[0], s->inputs + base, sizeof(int) * (size_t)nc[1]);
        memcpy(s->inputs + base, order, sizeof(int) * (size_t)(nc[0] + nc[1]));
    }
    if (!rc) {
        char name[512];
        tg_attr a[2] = {tg_attr_graph("then", sub[0]), tg_attr_graph("else", sub[1])};
        node_prefix(c, "", name, sizeof name);
        y = tg_control_add(c->g, TG_OP_IF, name, n, in, 2, a);
    }
    tg_graph_free(sub[0]);
    tg_graph_free(sub[1]);
    return rc ? -1 : bind_outs(c, y, br[0].nout);
}

/* The names of inputs [from, from + n) of nested graph ng into names[]. */
static int input_names(const nested *ng, int from, int n, const char **names)
{
    for (int i = 0; i < n; i++)
        if (!(names[i] = io_name(ng, "inputs", from + i)))
            return -1;
    return 0;
}

/* torch's while_loop: the condition on the initial values is computed where
 * the node is, its copy in the body on what the body made. */
static int h_while_loop(pt2_ctx *c, const cJSON *node)
{
    nested cg, bg;
    int in[2 * FLOW_MAX + 2], N, K, y = -1;
    if (nested_at(node, 0, "cond_fn", &cg) < 0 || nested_at(node, 1, "body_fn", &bg) < 0 ||
        tensors_at(c, node, 2, "carried_inputs", in + 2, &N) < 0 ||
        tensors_at(c, node, 3, "additional_inputs", in + 2 + N, &K) < 0)
        return -1;
    if (N + K > FLOW_MAX)
        return tg_err("more than %d carried and additional inputs", FLOW_MAX);
    if (cg.nin != N + K || bg.nin != N + K || cg.nout != 1 || bg.nout != N)
        return tg_err("graphs %s (%d inputs, %d outputs) and %s (%d inputs, %d outputs) do not "
                      "fit %d carried and %d additional inputs", cg.name, cg.nin, cg.nout,
                      bg.name, bg.nin, bg.nout, N, K);
    char pre[512];
    node_prefix(c, "/cond/", pre, sizeof pre);
    in[0] = -1;
    if (convert_nested(c, &cg, c->g, pre, in + 2, &in[1]) < 0)
        return -1;
    if (pt2_dt(c, in[1]) != TG_BOOL)    /* torch checks it too */
        return tg_err("graph %s makes %s, not a bool", cg.name, tg_dtype_name(pt2_dt(c, in[1])));
    const char *names[FLOW_MAX];
    int bin[2 + FLOW_MAX], out[1 + FLOW_MAX], n = 2 + N + K, rc = -1;
    tg_graph *body = input_names(&bg, 0, N + K, names) ? NULL
                   : new_sub(c, true, N + K, names, in + 2, bin);
    char where[512];
    node_prefix(c, "/body", where, sizeof where);
    if (body && !convert_nested(c, &bg, body, NULL, bin + 2, out + 1)) {
        int cin[FLOW_MAX];     /* the condition on what the body made */
        memcpy(cin, out + 1, sizeof(int) * (size_t)N);
        memcpy(cin + N, bin + 2 + N, sizeof(int) * (size_t)K);
        rc = convert_nested(c, &cg, body, "cond/", cin, out) < 0 ||
             finish_sub(c, body, where, 1 + N, out, in, &n) < 0 ? -1 : 0;
    }
    if (!rc) {
        char name[512];
        tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", N)};
        node_prefix(c, "", name, sizeof name);
        y = tg_control_add(c->g, TG_OP_LOOP, name, n, in, 2, a);
    }
    tg_graph_free(body);
    return rc ? -1 : bind_outs(c, y, N);
}

/* The trip count of a map over dim d: an i64 scalar, read from x's shape at
 * run time when d is symbolic. */
static int trip_count(pt2_ctx *c, int x, tg_dim d)
{
    int64_t k;
    if (tg_dim_is_const(d, &k))
        return pt2_const(c, (pt2_scalar){.kind = PT2_S_INT, .i = k}, TG_I64);
    int in[2] = {pt2_unary(c, false, TG_OP_SHAPE, x),
                 pt2_const(c, (pt2_scalar){.kind = PT2_S_INT, .i = 0}, TG_I64)};
    tg_attr a = tg_attr_int("axis", 0);
    return in[0] < 0 || in[1] < 0 ? -1 : pt2_emit(c, false, TG_OP_INDEX_SELECT, 2, in, 1, &a);
}

/* torch's map (map_impl): the body takes one slice of each mapped tensor along
 * its first dim, whose length is the trip count; its outputs stack. */
static int h_map_impl(pt2_ctx *c, const cJSON *node)
{
    nested bg;
    int in[2 * FLOW_MAX + 2], nxs, nargs, y = -1;
    if (nested_at(node, 0, "f", &bg) < 0 || tensors_at(c, node, 1, "xs", in + 2, &nxs) < 0 ||
        tensors_at(c, node, 2, "args", in + 2 + nxs, &nargs) < 0)
        return -1;
    if (nxs < 1 || nxs + nargs > FLOW_MAX || bg.nin != nxs + nargs || bg.nout < 1)
        return tg_err("graph %s (%d inputs, %d outputs) does not fit %d mapped tensors and %d "
                      "other arguments", bg.name, bg.nin, bg.nout, nxs, nargs);
    const tg_shape *s0 = &pt2_val(c, in[2])->shape;
    for (int i = 0; i < nxs; i++) {
        const tg_shape *s = &pt2_val(c, in[2 + i])->shape;
        if (!s->rank || !s0->rank || !tg_dim_eq(s->d[0], s0->d[0]))
            return tg_err("the mapped tensors must have one first dim alike (tensor %d)", i);
    }
    tg_dim trips = s0->d[0];
    in[0] = trip_count(c, in[2], trips);
    in[1] = -1;
    const char *names[FLOW_MAX];
    char stacked[FLOW_MAX][512], where[512];
    int bin[2 + FLOW_MAX], sl[FLOW_MAX], out[1 + FLOW_MAX], n = 2 + nxs + nargs, rc = -1;
    tg_graph *body = NULL;
    if (in[0] >= 0 && !input_names(&bg, 0, nxs + nargs, names)) {
        for (int i = 0; i < nxs; i++) {     /* whole tensors in, slices as the body's inputs */
            snprintf(stacked[i], sizeof stacked[i], "%s/stacked", names[i]);
            names[i] = stacked[i];
        }
        body = new_sub(c, true, nxs + nargs, names, in + 2, bin);
    }
    if (body && !input_names(&bg, 0, nxs, names)) {
        rc = 0;
        for (int i = 0; i < nxs && !rc; i++) {
            int sin[2] = {bin[2 + i], bin[0]};
            tg_attr a = tg_attr_int("axis", 0);
            rc = (sl[i] = tg_graph_add_node(body, TG_OP_INDEX_SELECT, names[i], 2, sin, 1, &a))
                 < 0 ? -1 : 0;
        }
        memcpy(sl + nxs, bin + 2 + nxs, sizeof(int) * (size_t)nargs);
        out[0] = bin[1];                    /* the condition passes through */
        node_prefix(c, "/body", where, sizeof where);
        if (!rc && (convert_nested(c, &bg, body, NULL, sl, out + 1) < 0 ||
                    finish_sub(c, body, where, 1 + bg.nout, out, in, &n) < 0))
            rc = -1;
    }
    if (!rc) {
        char name[512];
        tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", 0)};
        node_prefix(c, "", name, sizeof name);
        y = tg_control_add_loop(c->g, name, n, in, 2, a, trips);
    }
    tg_graph_free(body);
    return rc ? -1 : bind_outs(c, y, bg.nout);
}

const pt2_op_entry pt2_ops_flow[] = {
    {"cond", "default", h_cond},
    {"while_loop", "default", h_while_loop},
    {"map_impl", "default", h_map_impl},
    {NULL, NULL, NULL},
};
