/* Nodes whose shapes are only known at run time (tgraph-format(5), DATA
 * SYMBOLS): a node with run-time attributes, or one that reads or makes a value
 * whose shape uses a data symbol. When it runs, the interpreter rebuilds it as a
 * one-node graph on its inputs' concrete shapes, with each run-time attribute
 * replaced by its input's data; that graph's inference checks the attributes and
 * gives the concrete output shape, which binds the data symbols of the declared
 * one (or must equal it). The kernels then run on the rebuilt node. */
#include "exec_dynamic.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"

bool tg_exec_node_is_dynamic(const tg_graph *g, const tg_node *n)
{
    if (tg_node_runtime_attrs(n))
        return true;
    for (int j = 0; j < n->nin; j++)
        if (n->in[j] >= 0 && tg_shape_uses_data(g, &g->values[n->in[j]].shape))
            return true;
    for (int j = 0; j < n->nout; j++)
        if (tg_shape_uses_data(g, &g->values[n->out[j]].shape))
            return true;
    return false;
}

/* Run-time attribute a (the node's input t) as a concrete attribute of its kind;
 * ints/floats/dims storage in the bufs (room for TG_MAX_RANK * 2 values each). */
static int concrete_attr(const tg_attr *a, const tg_tensor *t, tg_attr *out, int64_t *ibuf,
                         double *fbuf, tg_dim *dbuf)
{
    int64_t n = tg_tensor_numel(t->rank, t->dims);
    if (n < 0 || n > TG_MAX_RANK * 2 || ((a->n == TG_ATTR_INT || a->n == TG_ATTR_FLOAT) && n != 1))
        return tg_err("attribute '%s': its input holds %" PRId64 " values, expected %s",
                      a->name, n, a->n == TG_ATTR_INT || a->n == TG_ATTR_FLOAT ? "1" : "at most 16");
    if (a->n == TG_ATTR_FLOAT) {
        *out = tg_attr_float(a->name, tg_load_f64(t->dtype, t->data, 0));
        return 0;
    }
    if (a->n == TG_ATTR_FLOATS) {
        for (int64_t i = 0; i < n; i++)
            fbuf[i] = tg_load_f64(t->dtype, t->data, (size_t)i);
        *out = tg_attr_floats(a->name, (int)n, fbuf);
        return 0;
    }
    for (int64_t i = 0; i < n; i++) {
        if (t->dtype == TG_I64) {
            ibuf[i] = ((const int64_t *)t->data)[i];
            continue;
        }
        double d = tg_load_f64(t->dtype, t->data, (size_t)i);
        if (!(d >= -9e18 && d <= 9e18) || d != (double)(int64_t)d)
            return tg_err("attribute '%s': its input holds %g, not an integer", a->name, d);
        ibuf[i] = (int64_t)d;
    }
    if (a->n == TG_ATTR_INT)
        *out = tg_attr_int(a->name, ibuf[0]);
    else if (a->n == TG_ATTR_INTS)
        *out = tg_attr_ints(a->name, (int)n, ibuf);
    else {
        for (int64_t i = 0; i < n; i++)
            dbuf[i] = tg_dim_const(ibuf[i]);
        *out = tg_attr_dims(a->name, (int)n, dbuf);
    }
    return 0;
}

tg_graph *tg_exec_concrete_node(const tg_graph *g, const tg_node *n, const tg_tensor *const *in)
{
    int own = n->nin - tg_node_runtime_attrs(n);
    tg_graph *c = tg_graph_new();
    int ids[own ? own : 1];
    tg_attr attrs[n->nattr ? n->nattr : 1];
    int64_t ibuf[n->nattr ? n->nattr : 1][TG_MAX_RANK * 2];
    double fbuf[n->nattr ? n->nattr : 1][TG_MAX_RANK * 2];
    tg_dim dbuf[n->nattr ? n->nattr : 1][TG_MAX_RANK * 2];
    if (!c)
        return tg_err("out of memory"), NULL;
    for (int j = 0; j < own; j++) {
        ids[j] = -1;
        if (!in[j])
            continue;
        char name[32];
        snprintf(name, sizeof name, "in%d", j);
        tg_shape s = tg_shape_of(in[j]->rank, in[j]->dims);
        if ((ids[j] = tg_graph_add_input(c, name, in[j]->dtype, &s)) < 0)
            goto fail;
    }
    for (int k = 0; k < n->nattr; k++) {
        const tg_attr *a = &n->attr[k];
        attrs[k] = *a;
        if (a->kind == TG_ATTR_INPUT &&
            concrete_attr(a, in[a->u.i], &attrs[k], ibuf[k], fbuf[k], dbuf[k]))
            goto fail;
    }
    if (tg_graph_add_node(c, n->op, n->name, own, ids, n->nattr, attrs) < 0) {
        char prefix[512], msg[1024];    /* the caller names the node: say it once */
        int len = snprintf(prefix, sizeof prefix, "node %s (%s): ", n->name, tg_op_name(n->op));
        snprintf(msg, sizeof msg, "%s", tg_errmsg());
        if (len > 0 && (size_t)len < sizeof prefix && !strncmp(msg, prefix, (size_t)len))
            tg_err("%s", msg + len);
        goto fail;
    }
    return c;
fail:
    tg_graph_free(c);
    return NULL;
}

int tg_exec_bind_output(const tg_graph *g, const tg_value *v, const int64_t *dims, int64_t *sym,
                        bool *bound)
{
    for (int k = 0; k < v->shape.rank; k++) {
        tg_dim d = v->shape.d[k];
        for (int s = 0; s < g->nsym; s++)
            if (!bound[s] && tg_dim_eq(d, tg_dim_sym(s))) {
                if (dims[k] < g->sym[s].min || dims[k] > g->sym[s].max)
                    return tg_err("output '%s' dim %d = %" PRId64 " is outside its range [%"
                                  PRId64 ", %" PRId64 "]", v->name, k, dims[k],
                                  g->sym[s].min, g->sym[s].max);
                sym[s] = dims[k];
                bound[s] = true;
            }
        for (int s = 0; s < g->nsym; s++)
            if (!bound[s] && tg_dim_uses_sym(d, s))
                return tg_err("output '%s' dim %d: symbol '%s' is not bound yet", v->name, k,
                              g->sym[s].name);
        int64_t want;
        if (tg_dim_eval(d, sym, &want) || want != dims[k]) {
            char buf[128];
            tg_dim_format(d, g->sym, buf, sizeof buf);
            return tg_err("output '%s' dim %d is %" PRId64 " at run time, the graph says %s",
                          v->name, k, dims[k], buf);
        }
    }
    return 0;
}
