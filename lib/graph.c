/* The IR: building graphs (symbols, inputs, constants, nodes), attributes and
 * shapes. Editing for passes is in graph_edit.c, the full check in
 * graph_validate.c. */
#include "graph.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph_internal.h"

char *tg_strdup_or_null(const char *s)
{
    return s ? strdup(s) : NULL;
}

/* Grow *arr (of elem-size items, capacity *cap) to hold need items. */
static int grow(void **arr, int *cap, int need, size_t elem)
{
    if (need <= *cap)
        return 0;
    int ncap = *cap ? *cap : 16;
    while (ncap < need) {
        if (ncap > INT32_MAX / 2)
            return tg_err("graph too large");
        ncap *= 2;
    }
    void *p = realloc(*arr, (size_t)ncap * elem);
    if (!p)
        return tg_err("out of memory");
    memset((char *)p + (size_t)*cap * elem, 0, (size_t)(ncap - *cap) * elem);
    *arr = p;
    *cap = ncap;
    return 0;
}

/* Append v to a plain int list (graph inputs/outputs). */
static int list_push(int **list, int *n, int v)
{
    int *p = realloc(*list, (size_t)(*n + 1) * sizeof(int));
    if (!p)
        return tg_err("out of memory");
    p[(*n)++] = v;
    *list = p;
    return 0;
}

tg_graph *tg_graph_new(void)
{
    tg_graph *g = calloc(1, sizeof *g);
    if (!g)
        tg_err("out of memory");
    return g;
}

void tg_attr_release(tg_attr *a)
{
    free(a->name);
    switch (a->kind) {
    case TG_ATTR_STRING: free(a->u.s); break;
    case TG_ATTR_INTS: free(a->u.ints); break;
    case TG_ATTR_FLOATS: free(a->u.floats); break;
    case TG_ATTR_DIMS: free(a->u.dims); break;
    case TG_ATTR_GRAPH: tg_graph_free(a->u.g); break;
    default: break;
    }
    memset(a, 0, sizeof *a);
}

void tg_node_release(tg_node *n)
{
    free(n->name);
    free(n->in);
    free(n->out);
    for (int i = 0; i < n->nattr; i++)
        tg_attr_release(&n->attr[i]);
    free(n->attr);
    free(n->source);
    memset(n, 0, sizeof *n);
}

void tg_value_release(tg_value *v)
{
    free(v->name);
    free(v->data);
    memset(v, 0, sizeof *v);
}

void tg_graph_free(tg_graph *g)
{
    if (!g)
        return;
    for (int i = 0; i < g->nsym; i++)
        free(g->sym[i].name);
    for (int i = 0; i < g->nvalue; i++)
        tg_value_release(&g->values[i]);
    for (int i = 0; i < g->nnode; i++)
        tg_node_release(&g->nodes[i]);
    free(g->values);
    free(g->nodes);
    free(g->inputs);
    free(g->outputs);
    tg_graph_names_drop(g);
    free(g);
}

/* ---- symbols ---- */

static bool is_identifier(const char *s)
{
    if (!s || !(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
        return false;
    for (; *s; s++)
        if (!(*s == '_' || (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z') ||
              (*s >= '0' && *s <= '9')))
            return false;
    return true;
}

int tg_graph_find_symbol(const tg_graph *g, const char *name)
{
    for (int i = 0; name && i < g->nsym; i++)
        if (g->sym[i].name && strcmp(g->sym[i].name, name) == 0)
            return i;
    return -1;
}

int tg_graph_add_symbol(tg_graph *g, const char *name, int64_t min, int64_t max)
{
    if (!is_identifier(name))
        return tg_err("symbol name '%s' is not an identifier", name ? name : "(null)");
    if (tg_graph_find_symbol(g, name) >= 0)
        return tg_err("symbol '%s' defined twice", name);
    if (g->nsym >= TG_MAX_SYMS)
        return tg_err("too many symbols (at most %d)", TG_MAX_SYMS);
    if (min < 0 || min > max)
        return tg_err("symbol '%s': bad range %lld..%lld", name, (long long)min,
                      (long long)max);
    char *copy = strdup(name);
    if (!copy)
        return tg_err("out of memory");
    tg_symbol *s = &g->sym[g->nsym];
    s->name = copy;
    s->min = min;
    s->max = max;
    s->data = false;
    return g->nsym++;
}

int tg_graph_add_data_symbol(tg_graph *g, int64_t min, int64_t max)
{
    char name[32];
    for (int k = 0;; k++) {
        snprintf(name, sizeof name, "_d%d", k);
        if (tg_graph_find_symbol(g, name) < 0)
            break;
    }
    int s = tg_graph_add_symbol(g, name, min, max);
    if (s >= 0)
        g->sym[s].data = true;
    return s;
}

bool tg_shape_uses_data(const tg_graph *g, const tg_shape *s)
{
    for (int k = 0; k < s->rank; k++)
        for (int j = 0; j < g->nsym; j++)
            if (g->sym[j].data && tg_dim_uses_sym(s->d[k], j))
                return true;
    return false;
}

/* ---- values ---- */

int tg_shape_check(const tg_graph *g, const tg_shape *s)
{
    if (s->rank < 0 || s->rank > TG_MAX_RANK)
        return tg_err("rank %d out of range 0..%d", s->rank, TG_MAX_RANK);
    for (int i = 0; i < s->rank; i++) {
        const tg_dim *d = &s->d[i];
        if (d->nterms < 0 || d->nterms > TG_DIM_TERMS)
            return tg_err("dimension %d is malformed", i);
        for (int k = 0; k < d->nterms; k++)
            for (int j = g->nsym; j < TG_MAX_SYMS; j++)
                if (d->t[k].pow[j])
                    return tg_err("dimension %d uses undefined symbol %d", i, j);
        int64_t v;
        if (tg_dim_is_const(*d, &v) && v < 0)
            return tg_err("dimension %d is negative (%lld)", i, (long long)v);
    }
    return 0;
}

/* Append a value with a copy of name; returns its id or -1. */
static int value_push(tg_graph *g, const char *name, tg_value_kind kind, tg_dtype dt,
                      const tg_shape *shape)
{
    if (!name || !*name)
        return tg_err("value without a name");
    if (tg_graph_find_value(g, name) >= 0)
        return tg_err("value '%s' defined twice", name);
    if (grow((void **)&g->values, &g->value_cap, g->nvalue + 1, sizeof(tg_value)) < 0)
        return -1;
    char *copy = strdup(name);
    if (!copy)
        return tg_err("out of memory");
    tg_value *v = &g->values[g->nvalue];
    memset(v, 0, sizeof *v);
    v->name = copy;
    v->kind = kind;
    v->dtype = dt;
    if (shape)
        v->shape = *shape;
    v->producer = -1;
    g->nvalue++;
    tg_graph_names_value_added(g, g->nvalue - 1);
    return g->nvalue - 1;
}

/* dtype and shape checks shared by inputs and constants. */
static int check_decl(const tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape)
{
    if (!tg_dtype_size(dt))
        return tg_err("value '%s': invalid dtype %d", name ? name : "(null)", (int)dt);
    if (!shape)
        return tg_err("value '%s': no shape", name ? name : "(null)");
    if (tg_shape_check(g, shape) < 0)
        return tg_err("value '%s': %s", name ? name : "(null)", tg_errmsg());
    if (tg_shape_uses_data(g, shape))
        return tg_err("value '%s': only a node's output may use a data symbol",
                      name ? name : "(null)");
    return 0;
}

int tg_graph_add_input(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape)
{
    if (check_decl(g, name, dt, shape) < 0)
        return -1;
    int v = value_push(g, name, TG_VALUE_INPUT, dt, shape);
    if (v < 0)
        return -1;
    if (list_push(&g->inputs, &g->ninput, v) < 0) {
        tg_value_release(&g->values[--g->nvalue]);
        tg_graph_names_drop(g);
        return -1;
    }
    return v;
}

/* Byte size of a constant-shaped value, or -1 with tg_err. */
static int const_nbytes(const char *name, tg_dtype dt, const tg_shape *shape, size_t *out)
{
    int64_t dims[TG_MAX_RANK];
    if (!tg_shape_is_const(shape, dims))
        return tg_err("constant '%s' has a symbolic shape", name);
    size_t n = tg_dtype_size(dt);
    for (int i = 0; i < shape->rank; i++)
        if (__builtin_mul_overflow(n, (size_t)dims[i], &n))
            return tg_err("constant '%s' is too large", name);
    *out = n;
    return 0;
}

int tg_graph_add_const(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape,
                       void *data, size_t nbytes)
{
    size_t want;
    if (check_decl(g, name, dt, shape) < 0 || const_nbytes(name, dt, shape, &want) < 0)
        goto fail;
    if (nbytes != want) {
        tg_err("constant '%s': %zu bytes of data, shape and dtype need %zu", name, nbytes,
               want);
        goto fail;
    }
    if (!data && nbytes) {
        tg_err("constant '%s' has no data", name);
        goto fail;
    }
    int v = value_push(g, name, TG_VALUE_CONST, dt, shape);
    if (v < 0)
        goto fail;
    g->values[v].data = data;
    g->values[v].nbytes = nbytes;
    return v;
fail:
    free(data);
    return -1;
}

int tg_graph_add_const_copy(tg_graph *g, const char *name, tg_dtype dt, const tg_shape *shape,
                            const void *data)
{
    size_t nbytes;
    if (check_decl(g, name, dt, shape) < 0 || const_nbytes(name, dt, shape, &nbytes) < 0)
        return -1;
    if (!data && nbytes)
        return tg_err("constant '%s' has no data", name);
    void *copy = malloc(nbytes ? nbytes : 1);
    if (!copy)
        return tg_err("out of memory for constant '%s'", name);
    if (nbytes)
        memcpy(copy, data, nbytes);
    return tg_graph_add_const(g, name, dt, shape, copy, nbytes);
}

int tg_graph_add_scalar(tg_graph *g, const char *name, tg_dtype dt, double v)
{
    size_t es = tg_dtype_size(dt);
    if (!es)
        return tg_err("scalar '%s': invalid dtype %d", name ? name : "(null)", (int)dt);
    unsigned char buf[8];
    tg_store_f64(dt, buf, 0, v);
    tg_shape s = {0};
    return tg_graph_add_const_copy(g, name, dt, &s, buf);
}

int tg_graph_add_output(tg_graph *g, int value)
{
    if (value < 0 || value >= g->nvalue)
        return tg_err("graph output refers to value %d, which does not exist", value);
    return list_push(&g->outputs, &g->noutput, value);
}

/* ---- attributes ---- */

tg_attr tg_attr_int(const char *name, int64_t v)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_INT, .u.i = v};
}
tg_attr tg_attr_float(const char *name, double v)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_FLOAT, .u.f = v};
}
tg_attr tg_attr_string(const char *name, const char *s)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_STRING, .u.s = (char *)s};
}
tg_attr tg_attr_ints(const char *name, int n, const int64_t *v)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_INTS, .n = n, .u.ints = (int64_t *)v};
}
tg_attr tg_attr_floats(const char *name, int n, const double *v)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_FLOATS, .n = n,
                     .u.floats = (double *)v};
}
tg_attr tg_attr_dims(const char *name, int n, const tg_dim *v)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_DIMS, .n = n, .u.dims = (tg_dim *)v};
}
tg_attr tg_attr_dtype(const char *name, tg_dtype t)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_DTYPE, .u.i = t};
}

tg_attr tg_attr_graph(const char *name, const tg_graph *g)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_GRAPH, .u.g = (tg_graph *)g};
}

tg_attr tg_attr_input(const char *name, int i, tg_attr_kind as)
{
    return (tg_attr){.name = (char *)name, .kind = TG_ATTR_INPUT, .n = (int)as, .u.i = i};
}

/* Element size of an attribute's array, 0 for scalar kinds. */
static size_t attr_elem(tg_attr_kind k)
{
    switch (k) {
    case TG_ATTR_INTS: return sizeof(int64_t);
    case TG_ATTR_FLOATS: return sizeof(double);
    case TG_ATTR_DIMS: return sizeof(tg_dim);
    default: return 0;
    }
}

int tg_attr_check(const tg_attr *a)
{
    if (!a->name || !*a->name)
        return tg_err("attribute without a name");
    if (a->kind < TG_ATTR_INT || a->kind > TG_ATTR_GRAPH)
        return tg_err("attribute '%s' has unknown kind %d", a->name, (int)a->kind);
    if (a->kind == TG_ATTR_STRING && !a->u.s)
        return tg_err("attribute '%s': string missing", a->name);
    if (a->kind == TG_ATTR_GRAPH && !a->u.g)
        return tg_err("attribute '%s': subgraph missing", a->name);
    if (a->kind == TG_ATTR_INPUT && a->n != TG_ATTR_INT && a->n != TG_ATTR_INTS &&
        a->n != TG_ATTR_FLOAT && a->n != TG_ATTR_FLOATS && a->n != TG_ATTR_DIMS)
        return tg_err("attribute '%s': a run-time attribute is int, ints, float, floats or dims",
                      a->name);
    if (a->kind == TG_ATTR_DTYPE && !tg_dtype_size((tg_dtype)a->u.i))
        return tg_err("attribute '%s': invalid dtype %lld", a->name, (long long)a->u.i);
    if (attr_elem(a->kind)) {
        if (a->n < 0)
            return tg_err("attribute '%s': negative count %d", a->name, a->n);
        if (a->n > 0 && !a->u.ints)
            return tg_err("attribute '%s': values missing", a->name);
    }
    if (a->kind == TG_ATTR_DIMS)
        for (int i = 0; i < a->n; i++)
            if (a->u.dims[i].nterms < 0 || a->u.dims[i].nterms > TG_DIM_TERMS)
                return tg_err("attribute '%s': dimension %d is malformed", a->name, i);
    return 0;
}

int tg_attr_copy(tg_attr *dst, const tg_attr *src)
{
    tg_attr a = *src;
    a.name = strdup(src->name);
    bool ok = a.name != NULL;
    size_t es = attr_elem(src->kind);
    if (src->kind == TG_ATTR_STRING) {
        a.u.s = strdup(src->u.s);
        ok = ok && a.u.s;
    } else if (src->kind == TG_ATTR_GRAPH) {
        a.u.g = tg_graph_clone(src->u.g);
        ok = ok && a.u.g;
    } else if (es) {
        /* at least one byte, so an empty list is a valid pointer */
        a.u.ints = malloc(src->n ? (size_t)src->n * es : 1);
        ok = ok && a.u.ints;
        if (a.u.ints && src->n)
            memcpy(a.u.ints, src->u.ints, (size_t)src->n * es);
    }
    if (!ok) {
        tg_attr_release(&a);
        return tg_err("out of memory");
    }
    *dst = a;
    return 0;
}

const tg_attr *tg_node_attr(const tg_node *n, const char *name)
{
    for (int i = 0; name && i < n->nattr; i++)
        if (n->attr[i].name && strcmp(n->attr[i].name, name) == 0)
            return &n->attr[i];
    return NULL;
}

int64_t tg_node_int(const tg_node *n, const char *name, int64_t dflt)
{
    const tg_attr *a = tg_node_attr(n, name);
    return a && (a->kind == TG_ATTR_INT || a->kind == TG_ATTR_DTYPE) ? a->u.i : dflt;
}

double tg_node_float(const tg_node *n, const char *name, double dflt)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (a && a->kind == TG_ATTR_FLOAT)
        return a->u.f;
    if (a && a->kind == TG_ATTR_INT)
        return (double)a->u.i;
    return dflt;
}

const char *tg_node_string(const tg_node *n, const char *name, const char *dflt)
{
    const tg_attr *a = tg_node_attr(n, name);
    return a && a->kind == TG_ATTR_STRING ? a->u.s : dflt;
}

static int node_array(const tg_node *n, const char *name, tg_attr_kind k, const void **v)
{
    const tg_attr *a = tg_node_attr(n, name);
    if (!a || a->kind != k) {
        *v = NULL;
        return -1;
    }
    *v = a->u.ints;
    return a->n;
}

int tg_node_ints(const tg_node *n, const char *name, const int64_t **v)
{
    return node_array(n, name, TG_ATTR_INTS, (const void **)v);
}
int tg_node_floats(const tg_node *n, const char *name, const double **v)
{
    return node_array(n, name, TG_ATTR_FLOATS, (const void **)v);
}
int tg_node_dims(const tg_node *n, const char *name, const tg_dim **v)
{
    return node_array(n, name, TG_ATTR_DIMS, (const void **)v);
}

const tg_graph *tg_node_graph(const tg_node *n, const char *name)
{
    const tg_attr *a = tg_node_attr(n, name);
    return a && a->kind == TG_ATTR_GRAPH ? a->u.g : NULL;
}

const tg_value *tg_node_input(const tg_graph *g, const tg_node *n, int i)
{
    if (i < 0 || i >= n->nin || n->in[i] < 0 || n->in[i] >= g->nvalue)
        return NULL;
    return &g->values[n->in[i]];
}

/* ---- nodes ---- */

/* A fresh "<op>_<k>" that no node or value uses yet. */
static char *make_node_name(const tg_graph *g, tg_op op, int idx)
{
    char buf[64];
    for (long k = idx;; k++) {
        snprintf(buf, sizeof buf, "%s_%ld", tg_op_name(op), k);
        if (tg_graph_find_node(g, buf) < 0 && tg_graph_find_value(g, buf) < 0)
            return strdup(buf);
    }
}

/* Structural checks of a node about to be added; messages without the prefix. */
static int check_new_node(const tg_graph *g, tg_op op, int nin, const int *in, int nattr,
                          const tg_attr *attr)
{
    const tg_op_info *info = &tg_op_table[op];
    int nrt = 0;
    for (int i = 0; i < nattr && attr; i++)
        nrt += attr[i].kind == TG_ATTR_INPUT;
    if (nrt && info->max_in < 0)
        return tg_err("a variadic op takes no run-time attributes");
    for (int i = 0, k = nin - nrt; i < nattr && attr; i++)
        if (attr[i].kind == TG_ATTR_INPUT && attr[i].u.i != k++)
            return tg_err("run-time attribute '%s' must read input %d", attr[i].name, k - 1);
    nin -= nrt;             /* the op's own inputs */
    if (nin < info->min_in || (info->max_in >= 0 && nin > info->max_in)) {
        if (info->max_in < 0)
            return tg_err("takes at least %d inputs, got %d", info->min_in, nin);
        if (info->min_in == info->max_in)
            return tg_err("takes %d inputs, got %d", info->min_in, nin);
        return tg_err("takes %d to %d inputs, got %d", info->min_in, info->max_in, nin);
    }
    if (nin + nrt > 0 && !in)
        return tg_err("inputs missing");
    for (int i = 0; i < nin + nrt; i++) {
        if (in[i] == -1 && i >= info->min_in && i < nin)
            continue;
        if (in[i] < 0 || in[i] >= g->nvalue)
            return tg_err("input %d refers to value %d, which does not exist", i, in[i]);
        const tg_value *v = &g->values[in[i]];
        if (v->kind == TG_VALUE_NODE &&
            (v->producer < 0 || v->producer >= g->nnode ||
             g->nodes[v->producer].op == TG_OP_NONE))
            return tg_err("input %d ('%s') is the output of a removed node", i, v->name);
    }
    for (int i = nin; i < nin + nrt; i++) {
        const tg_value *v = &g->values[in[i]];
        if (v->shape.rank > 1 || v->dtype == TG_BOOL || (!tg_dtype_is_int(v->dtype) &&
                                                         !tg_dtype_is_float(v->dtype)))
            return tg_err("input %d ('%s') holds a run-time attribute: it must be a numeric "
                          "scalar or vector", i, v->name);
    }
    if (nattr > 0 && !attr)
        return tg_err("attributes missing");
    for (int i = 0; i < nattr; i++) {
        if (tg_attr_check(&attr[i]) < 0)
            return -1;
        for (int k = 0; attr[i].kind == TG_ATTR_DIMS && k < attr[i].n; k++)
            for (int s = 0; s < g->nsym; s++)
                if (g->sym[s].data && tg_dim_uses_sym(attr[i].u.dims[k], s))
                    return tg_err("attribute '%s' uses data symbol '%s' (only shapes may)",
                                  attr[i].name, g->sym[s].name);
        for (int j = 0; j < i; j++)
            if (strcmp(attr[i].name, attr[j].name) == 0)
                return tg_err("attribute '%s' given twice", attr[i].name);
    }
    return 0;
}

/* Drop the last node and the values created after `nvalue` (a failed add). */
static void pop_node(tg_graph *g, int nvalue)
{
    while (g->nvalue > nvalue)
        tg_value_release(&g->values[--g->nvalue]);
    tg_node_release(&g->nodes[--g->nnode]);
    tg_graph_names_drop(g);
}

/* Add a node; its output inferred, or declared when decl_shape is given. */
static int add_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                    int nattr, const tg_attr *attr, int nout, const tg_dtype *decl_dt,
                    const tg_shape *decl_shape)
{
    if ((int)op <= TG_OP_NONE || op >= TG_OP_COUNT)
        return tg_err("node %s: unknown op %d", name ? name : "(unnamed)", (int)op);
    const char *opname = tg_op_name(op);
    if (name && !*name)
        return tg_err("node of op %s has an empty name", opname);
    if (name && (tg_graph_find_node(g, name) >= 0 || tg_graph_find_value(g, name) >= 0))
        return tg_err("node %s (%s): name already used", name, opname);
    if (check_new_node(g, op, nin, in, nattr, attr) < 0)
        return tg_err("node %s (%s): %s", name ? name : "(unnamed)", opname, tg_errmsg());
    if (!tg_op_table[op].infer)
        return tg_err("node %s (%s): op has no shape inference", name ? name : "(unnamed)",
                      opname);
    if (grow((void **)&g->nodes, &g->node_cap, g->nnode + 1, sizeof(tg_node)) < 0)
        return -1;
    /* named before it is counted, so the name index only ever grows here */
    char *nname = name ? strdup(name) : make_node_name(g, op, g->nnode);
    int idx = g->nnode++, nvalue0 = g->nvalue;
    tg_node *n = &g->nodes[idx];
    memset(n, 0, sizeof *n);
    n->op = op;
    n->name = nname;
    tg_graph_names_node_added(g, idx);
    n->in = malloc((size_t)(nin ? nin : 1) * sizeof(int));
    n->out = malloc(sizeof(int) * (size_t)nout);
    n->attr = calloc((size_t)(nattr ? nattr : 1), sizeof(tg_attr));
    if (!n->name || !n->in || !n->out || !n->attr) {
        pop_node(g, nvalue0);
        return tg_err("out of memory");
    }
    if (nin)
        memcpy(n->in, in, (size_t)nin * sizeof(int));
    n->nin = nin;
    for (int i = 0; i < nattr; i++, n->nattr++)
        if (tg_attr_copy(&n->attr[i], &attr[i]) < 0) {
            pop_node(g, nvalue0);
            return -1;
        }
    for (int k = 0; k < nout; k++) {
        /* output k > 0 is "<node>:k" (unused, as node names are) */
        size_t len = strlen(g->nodes[idx].name) + 16;
        char *full = k ? malloc(len) : NULL;
        if (full)
            snprintf(full, len, "%s:%d", g->nodes[idx].name, k);
        int v = k && !full ? -1 : value_push(g, k ? full : g->nodes[idx].name, TG_VALUE_NODE,
                                             TG_DTYPE_NONE, NULL);
        free(full);
        n = &g->nodes[idx];
        if (v < 0) {
            pop_node(g, nvalue0);
            return k && !full ? tg_err("out of memory") : -1;
        }
        g->values[v].producer = idx;
        n->out[k] = v;
        n->nout = k + 1;
        if (decl_shape) {
            g->values[v].dtype = decl_dt[k];
            memset(&g->values[v].shape, 0, sizeof g->values[v].shape);
            g->values[v].shape.rank = decl_shape[k].rank;
            for (int d = 0; d < decl_shape[k].rank; d++)
                g->values[v].shape.d[d] = decl_shape[k].d[d];
        }
    }
    int v = n->out[0];
    /* declared outputs: a control op's inference checks them (ops/control.c) */
    if ((!decl_shape || tg_op_is_control(op)) && tg_op_table[op].infer(g, idx) < 0) {
        /* the message names the node, so keep it before the node goes */
        tg_err("node %s (%s): %s", g->nodes[idx].name, opname, tg_errmsg());
        pop_node(g, nvalue0);
        return -1;
    }
    return v;
}

int tg_graph_add_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                      int nattr, const tg_attr *attr)
{
    for (int i = 0; i < nattr && attr; i++)
        if (attr[i].kind == TG_ATTR_INPUT)
            return tg_err("node %s: attribute '%s' is a run-time attribute: the node's "
                          "output must be declared", name ? name : "(unnamed)", attr[i].name);
    if (tg_op_is_control(op))
        return tg_err("node %s: op %s declares its outputs (tg_graph_add_declared_node)",
                      name ? name : "(unnamed)", tg_op_name(op));
    return add_node(g, op, name, nin, in, nattr, attr, 1, NULL, NULL);
}

int tg_node_runtime_attrs(const tg_node *n)
{
    int k = 0;
    for (int i = 0; i < n->nattr; i++)
        k += n->attr[i].kind == TG_ATTR_INPUT;
    return k;
}

bool tg_node_declared(const tg_node *n)
{
    return tg_node_runtime_attrs(n) || tg_op_is_data(n->op);
}

int tg_graph_add_dynamic_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                              int nattr, const tg_attr *attr, tg_dtype dt,
                              const tg_shape *shape)
{
    bool dynamic = tg_op_is_data(op);
    for (int i = 0; i < nattr && attr; i++)
        dynamic |= attr[i].kind == TG_ATTR_INPUT;
    if (!dynamic)
        return tg_err("node %s: no run-time attribute and not a data op, so its output is "
                      "inferred, not declared", name ? name : "(unnamed)");
    if (!tg_dtype_size(dt) || tg_shape_check(g, shape) < 0)
        return tg_err("node %s: bad declared output: %s", name ? name : "(unnamed)",
                      tg_dtype_size(dt) ? tg_errmsg() : "no dtype");
    return add_node(g, op, name, nin, in, nattr, attr, 1, &dt, shape);
}

int tg_graph_add_declared_node(tg_graph *g, tg_op op, const char *name, int nin, const int *in,
                               int nattr, const tg_attr *attr, int nout, const tg_dtype *dts,
                               const tg_shape *shapes)
{
    const char *nm = name ? name : "(unnamed)";
    if ((int)op <= TG_OP_NONE || op >= TG_OP_COUNT || !tg_op_is_control(op))
        return tg_err("node %s: only control-flow ops declare their outputs", nm);
    if (nout < 1 || nout > TG_MAX_NODE_OUTPUTS)
        return tg_err("node %s (%s): %d outputs, expected 1 to %d", nm, tg_op_name(op), nout,
                      TG_MAX_NODE_OUTPUTS);
    for (int k = 0; k < nout; k++)
        if (!tg_dtype_size(dts[k]) || tg_shape_check(g, &shapes[k]) < 0)
            return tg_err("node %s: bad declared output %d: %s", nm, k,
                          tg_dtype_size(dts[k]) ? tg_errmsg() : "no dtype");
    return add_node(g, op, name, nin, in, nattr, attr, nout, dts, shapes);
}

void tg_graph_set_source(tg_graph *g, int v, const char *source)
{
    if (v < 0 || v >= g->nvalue || g->values[v].kind != TG_VALUE_NODE)
        return;
    int p = g->values[v].producer;
    if (p < 0 || p >= g->nnode)
        return;
    char *copy = tg_strdup_or_null(source);
    if (source && !copy)
        return;
    free(g->nodes[p].source);
    g->nodes[p].source = copy;
}

/* ---- shapes ---- */

tg_shape tg_shape_of(int rank, const int64_t *dims)
{
    tg_shape s;
    memset(&s, 0, sizeof s);
    s.rank = rank < 0 ? 0 : rank > TG_MAX_RANK ? TG_MAX_RANK : rank;
    for (int i = 0; i < s.rank; i++)
        s.d[i] = tg_dim_const(dims[i]);
    return s;
}

bool tg_shape_eq(const tg_shape *a, const tg_shape *b)
{
    if (a->rank != b->rank || a->rank < 0 || a->rank > TG_MAX_RANK)
        return false;
    for (int i = 0; i < a->rank; i++)
        if (!tg_dim_eq(a->d[i], b->d[i]))
            return false;
    return true;
}

bool tg_shape_is_const(const tg_shape *s, int64_t *dims)
{
    if (s->rank < 0 || s->rank > TG_MAX_RANK)
        return false;
    for (int i = 0; i < s->rank; i++) {
        int64_t v;
        if (!tg_dim_is_const(s->d[i], &v))
            return false;
        if (dims)
            dims[i] = v;
    }
    return true;
}

int tg_shape_numel(const tg_shape *s, tg_dim *out)
{
    if (s->rank < 0 || s->rank > TG_MAX_RANK)
        return tg_err("rank %d out of range", s->rank);
    tg_dim n = tg_dim_const(1);
    for (int i = 0; i < s->rank; i++)
        if (tg_dim_mul(n, s->d[i], &n) < 0)
            return -1;
    *out = n;
    return 0;
}

int tg_shape_format(const tg_shape *s, const tg_symbol *syms, char *buf, size_t n)
{
    size_t len = 0;
    int rank = s->rank < 0 ? 0 : s->rank > TG_MAX_RANK ? TG_MAX_RANK : s->rank;
#define AT (len < n ? buf + len : NULL), (len < n ? n - len : 0)
    len += (size_t)snprintf(AT, "[");
    for (int i = 0; i < rank; i++) {
        if (i)
            len += (size_t)snprintf(AT, ", ");
        len += (size_t)tg_dim_format(s->d[i], syms, AT);
    }
    len += (size_t)snprintf(AT, "]");
#undef AT
    return (int)len;
}

int tg_shape_eval(const tg_shape *s, const int64_t *symvals, int64_t *dims)
{
    if (s->rank < 0 || s->rank > TG_MAX_RANK)
        return tg_err("rank %d out of range", s->rank);
    for (int i = 0; i < s->rank; i++) {
        if (tg_dim_eval(s->d[i], symvals, &dims[i]) < 0)
            return -1;
        if (dims[i] < 0)
            return tg_err("dimension %d is negative (%lld)", i, (long long)dims[i]);
    }
    return 0;
}

/* Whether d is coef*s + off with coef > 0 (s alone, to the first power). */
static bool linear_in(tg_dim d, int s, int64_t *coef, int64_t *off)
{
    *coef = *off = 0;
    for (int t = 0; t < d.nterms; t++) {
        int deg = 0;
        for (int q = 0; q < TG_MAX_SYMS; q++)
            deg += d.t[t].pow[q];
        if (deg == 0)
            *off = d.t[t].coef;
        else if (deg == 1 && d.t[t].pow[s] == 1)
            *coef = d.t[t].coef;
        else
            return false;
    }
    return *coef > 0;
}

int tg_graph_symbol_source(const tg_graph *g, int s, int *input, int *axis, int64_t *coef,
                           int64_t *off)
{
    int64_t c, o;
    *input = -1;
    for (int i = 0; i < g->ninput; i++) {
        const tg_shape *sh = &g->values[g->inputs[i]].shape;
        for (int k = 0; k < sh->rank; k++)
            if (linear_in(sh->d[k], s, &c, &o) && (*input < 0 || c < *coef))
                *input = i, *axis = k, *coef = c, *off = o;
    }
    if (*input < 0)
        return tg_err("symbol %s: no input dim is a multiple of it alone, so its value"
                      " cannot be read from the inputs", g->sym[s].name);
    return 0;
}
