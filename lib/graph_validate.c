/* tg_graph_validate: every invariant of graph.h, and every node's inference run
 * again, with every problem reported on its own line. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_internal.h"

typedef struct {
    FILE *f;
    char *buf;
    size_t len;
    int count;
    bool oom;
} report;

static void problem(report *r, const char *fmt, ...) TG_PRINTF(2, 3);
static void problem(report *r, const char *fmt, ...)
{
    r->count++;
    if (!r->f)
        return;
    if (r->count > 1)
        fputc('\n', r->f);
    va_list ap;
    va_start(ap, fmt);
    vfprintf(r->f, fmt, ap);
    va_end(ap);
}

static const char *vname(const tg_graph *g, int v)
{
    return v >= 0 && v < g->nvalue && g->values[v].name ? g->values[v].name : "?";
}

typedef struct {
    const char *name;
    int id;
} named;

static int cmp_named(const void *a, const void *b)
{
    const named *x = a, *y = b;
    int c = strcmp(x->name, y->name);
    return c ? c : x->id - y->id;
}

/* Names used more than once, by sorting (the name index may be stale here). */
static void check_unique(const tg_graph *g, bool nodes, report *r)
{
    int n = nodes ? g->nnode : g->nvalue, k = 0;
    named *a = malloc(((size_t)n + 1) * sizeof *a);
    if (!a) {
        r->oom = true;
        return;
    }
    for (int i = 0; i < n; i++) {
        const char *nm = nodes ? g->nodes[i].name : g->values[i].name;
        if (nm)
            a[k++] = (named){nm, i};
    }
    qsort(a, (size_t)k, sizeof *a, cmp_named);
    for (int i = 1; i < k; i++)
        if (strcmp(a[i].name, a[i - 1].name) == 0) {
            if (nodes)
                problem(r, "node %s (%s): name used twice", a[i].name,
                        tg_op_name(g->nodes[a[i].id].op));
            else
                problem(r, "value %s: name used twice", a[i].name);
        }
    free(a);
}

static void check_symbols(const tg_graph *g, report *r)
{
    if (g->nsym < 0 || g->nsym > TG_MAX_SYMS) {
        problem(r, "graph: %d symbols, at most %d", g->nsym, TG_MAX_SYMS);
        return;
    }
    for (int i = 0; i < g->nsym; i++) {
        const tg_symbol *s = &g->sym[i];
        if (!s->name || !*s->name) {
            problem(r, "symbol %d: no name", i);
            continue;
        }
        for (int j = 0; j < i; j++)
            if (g->sym[j].name && strcmp(g->sym[j].name, s->name) == 0)
                problem(r, "symbol %s: defined twice", s->name);
        if (s->min < 0 || s->min > s->max)
            problem(r, "symbol %s: bad range %lld..%lld", s->name, (long long)s->min,
                    (long long)s->max);
    }
}

static void check_values(const tg_graph *g, report *r)
{
    int *ninput = calloc((size_t)g->nvalue + 1, sizeof(int));
    if (!ninput) {
        r->oom = true;
        return;
    }
    for (int k = 0; k < g->ninput; k++) {
        int v = g->inputs[k];
        if (v < 0 || v >= g->nvalue)
            problem(r, "graph input %d: refers to value %d, which does not exist", k, v);
        else if (g->values[v].kind != TG_VALUE_INPUT)
            problem(r, "graph input %d: value %s is not an input", k, vname(g, v));
        else if (ninput[v]++)
            problem(r, "graph input %d: value %s listed twice", k, vname(g, v));
    }
    for (int k = 0; k < g->noutput; k++) {
        int v = g->outputs[k];
        if (v < 0 || v >= g->nvalue)
            problem(r, "graph output %d: refers to value %d, which does not exist", k, v);
    }
    for (int i = 0; i < g->nvalue; i++) {
        const tg_value *v = &g->values[i];
        if (!v->name || !*v->name) {
            problem(r, "value %d: no name", i);
            continue;
        }
        if (!tg_dtype_size(v->dtype))
            problem(r, "value %s: no dtype", v->name);
        if (tg_shape_check(g, &v->shape) < 0)
            problem(r, "value %s: %s", v->name, tg_errmsg());
        switch (v->kind) {
        case TG_VALUE_NODE: {
            int p = v->producer;
            bool listed = false;
            if (p >= 0 && p < g->nnode)
                for (int k = 0; k < g->nodes[p].nout && g->nodes[p].out; k++)
                    listed |= g->nodes[p].out[k] == i;
            if (!listed)
                problem(r, "value %s: not an output of its producer (node %d)", v->name, p);
            break;
        }
        case TG_VALUE_INPUT:
            if (v->producer != -1)
                problem(r, "value %s: an input with a producer", v->name);
            if (!ninput[i])
                problem(r, "value %s: an input missing from the graph's input list", v->name);
            break;
        case TG_VALUE_CONST: {
            int64_t dims[TG_MAX_RANK];
            if (v->producer != -1)
                problem(r, "value %s: a constant with a producer", v->name);
            if (!tg_shape_is_const(&v->shape, dims)) {
                problem(r, "value %s: a constant with a symbolic shape", v->name);
                break;
            }
            size_t n = tg_dtype_size(v->dtype);
            bool ovf = false;
            for (int d = 0; d < v->shape.rank; d++)
                ovf |= dims[d] < 0 || __builtin_mul_overflow(n, (size_t)dims[d], &n);
            if (!ovf && n != v->nbytes)
                problem(r, "value %s: %zu bytes of data, shape and dtype need %zu", v->name,
                        v->nbytes, n);
            if (v->nbytes && !v->data)
                problem(r, "value %s: constant without data", v->name);
            break;
        }
        default:
            problem(r, "value %s: unknown kind %d", v->name, (int)v->kind);
        }
    }
    free(ninput);
}

/* Structure of node i; false when it is too broken to run its inference. */
static bool check_node(const tg_graph *g, int i, report *r)
{
    const tg_node *n = &g->nodes[i];
    const char *name = n->name ? n->name : "(unnamed)";
    if ((int)n->op < 0 || n->op >= TG_OP_COUNT) {
        problem(r, "node %s: unknown op %d", name, (int)n->op);
        return false;
    }
    const char *op = tg_op_name(n->op);
    if (n->op == TG_OP_NONE) {
        problem(r, "node %s: removed but still present (compact the graph)", name);
        return false;
    }
    bool ok = true;
    if (!n->name || !*n->name)
        problem(r, "node %d (%s): no name", i, op), ok = false;
    const tg_op_info *info = &tg_op_table[n->op];
    int own = n->nattr > 0 && n->attr ? n->nin - tg_node_runtime_attrs(n) : n->nin;
    if (own < info->min_in || (info->max_in >= 0 && own > info->max_in) ||
        (n->nin > 0 && !n->in)) {
        problem(r, "node %s (%s): %d inputs, op takes %d..%d", name, op, n->nin, info->min_in,
                info->max_in);
        return false;
    }
    for (int k = 0; k < n->nin; k++) {
        int v = n->in[k];
        if (v == -1 && k >= info->min_in && k < own)
            continue;
        if (v < 0 || v >= g->nvalue) {
            problem(r, "node %s (%s): input %d refers to value %d, which does not exist", name,
                    op, k, v);
            ok = false;
        } else if (!tg_dtype_size(g->values[v].dtype) ||
                   tg_shape_check(g, &g->values[v].shape) < 0) {
            ok = false;     /* reported with the value; inference would read garbage */
        } else if (g->values[v].kind == TG_VALUE_NODE && g->values[v].producer >= i) {
            problem(r, "node %s (%s): input %d (%s) is computed later (not topological)", name,
                    op, k, vname(g, v));
        }
    }
    if (n->nout < 1 || !n->out) {
        problem(r, "node %s (%s): no outputs", name, op);
        return false;
    }
    for (int k = 0; k < n->nout; k++) {
        int v = n->out[k];
        if (v < 0 || v >= g->nvalue) {
            problem(r, "node %s (%s): output %d refers to value %d, which does not exist",
                    name, op, k, v);
            ok = false;
        } else if (g->values[v].kind != TG_VALUE_NODE || g->values[v].producer != i) {
            problem(r, "node %s (%s): output %d (%s) is not marked as produced by it", name,
                    op, k, vname(g, v));
        }
    }
    if (n->nattr > 0 && !n->attr) {
        problem(r, "node %s (%s): attributes missing", name, op);
        return false;
    }
    for (int k = 0; k < n->nattr; k++) {
        if (tg_attr_check(&n->attr[k]) < 0) {
            problem(r, "node %s (%s): %s", name, op, tg_errmsg());
            ok = false;
            continue;
        }
        for (int j = 0; j < k; j++)
            if (n->attr[j].name && strcmp(n->attr[j].name, n->attr[k].name) == 0)
                problem(r, "node %s (%s): attribute '%s' given twice", name, op,
                        n->attr[k].name);
    }
    return ok;
}

/* Run node i's inference on scratch copies of its outputs and compare. */
static void check_infer(const tg_graph *g, tg_graph *scratch, int i, report *r)
{
    const tg_node *n = &g->nodes[i];
    const char *op = tg_op_name(n->op);
    for (int k = 0; k < n->nout && !tg_op_is_control(n->op); k++) {
        tg_value *sv = &scratch->values[n->out[k]];   /* a control op's are declared */
        sv->dtype = TG_DTYPE_NONE;
        memset(&sv->shape, 0, sizeof sv->shape);
    }
    if (!tg_op_table[n->op].infer) {
        problem(r, "node %s (%s): op has no shape inference", n->name, op);
    } else if (tg_op_table[n->op].infer(scratch, i) < 0) {
        problem(r, "node %s (%s): %s", n->name, op, tg_errmsg());
    } else {
        for (int k = 0; k < n->nout; k++) {
            const tg_value *v = &g->values[n->out[k]], *sv = &scratch->values[n->out[k]];
            if (v->dtype != sv->dtype)
                problem(r, "node %s (%s): output %s has dtype %s, inference gives %s", n->name,
                        op, v->name, tg_dtype_name(v->dtype), tg_dtype_name(sv->dtype));
            /* a malformed stored shape is reported with the value */
            if (tg_shape_check(g, &v->shape) == 0 && !tg_shape_eq(&v->shape, &sv->shape)) {
                char a[256], b[256];
                tg_shape_format(&v->shape, g->sym, a, sizeof a);
                tg_shape_format(&sv->shape, g->sym, b, sizeof b);
                problem(r, "node %s (%s): output %s has shape %s, inference gives %s", n->name,
                        op, v->name, a, b);
            }
        }
    }
    /* later nodes are checked against the stored shapes, not the recomputed ones */
    for (int k = 0; k < n->nout; k++)
        scratch->values[n->out[k]] = g->values[n->out[k]];
}

int tg_graph_check_static(const tg_graph *g, const char *tool, bool data_ops)
{
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        if (tg_op_is_data(n->op) && !data_ops)
            return tg_err("node '%s' (%s): its output's shape depends on its input's values; "
                          "%s needs shapes known before the run (trun runs such a graph)",
                          n->name, tg_op_name(n->op), tool);
        for (int k = 0; k < n->nattr; k++)
            if (n->attr[k].kind == TG_ATTR_INPUT) {
                const tg_value *v = tg_node_input(g, n, (int)n->attr[k].u.i);
                return tg_err("node '%s' (%s): attribute '%s' is read from '%s' at run time; "
                              "%s needs it constant (trun runs such a graph)", n->name,
                              tg_op_name(n->op), n->attr[k].name, v ? v->name : "?", tool);
            }
    }
    return 0;
}

int tg_graph_validate(const tg_graph *g)
{
    report r = {0};
    r.f = open_memstream(&r.buf, &r.len);
    check_symbols(g, &r);
    check_values(g, &r);
    check_unique(g, false, &r);
    check_unique(g, true, &r);
    /* Inference writes output dtype/shape: give it a graph that shares everything
     * except a private copy of the value array. */
    tg_graph scratch = *g;
    scratch.values = malloc(((size_t)g->nvalue + 1) * sizeof(tg_value));
    if (!scratch.values)
        r.oom = true;
    else if (g->nvalue)
        memcpy(scratch.values, g->values, (size_t)g->nvalue * sizeof(tg_value));
    for (int i = 0; i < g->nnode; i++)
        if (check_node(g, i, &r) && scratch.values &&
            !tg_node_declared(&g->nodes[i]))   /* else declared: checked when it runs */
            check_infer(g, &scratch, i, &r);
    free(scratch.values);
    if (r.f)
        fclose(r.f);
    int rc = 0;
    if (!r.f || r.oom)
        rc = tg_err("out of memory validating the graph");
    else if (r.count)
        rc = tg_err("%s", r.buf);
    free(r.buf);
    return rc;
}
