/* Editing a graph for passes: rewiring uses, removing nodes, compacting
 * (which also restores topological order), use counts and deep copies. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_internal.h"

static bool node_dead(const tg_graph *g, int i) { return g->nodes[i].op == TG_OP_NONE; }

/* The node producing value v, or -1 for inputs, constants and bad ids. */
static int producer_of(const tg_graph *g, int v)
{
    if (v < 0 || v >= g->nvalue || g->values[v].kind != TG_VALUE_NODE)
        return -1;
    int p = g->values[v].producer;
    return p >= 0 && p < g->nnode ? p : -1;
}

void tg_graph_replace_uses(tg_graph *g, int from, int to)
{
    /* The node producing `to` may read `from` (a node inserted after `from`);
     * rewiring it would make it read its own output. */
    int skip = producer_of(g, to);
    for (int i = 0; i < g->nnode; i++) {
        if (i == skip)
            continue;
        tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] == from)
                n->in[k] = to;
    }
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == from)
            g->outputs[k] = to;
}

void tg_graph_kill_node(tg_graph *g, int i)
{
    if (i >= 0 && i < g->nnode)
        g->nodes[i].op = TG_OP_NONE;
}

int tg_graph_replace_node(tg_graph *g, int ni, int y, const char *suffix)
{
    int old_out = g->nodes[ni].out[0];
    char old[512], name[512];
    snprintf(old, sizeof old, "%s%s", g->values[old_out].name, suffix);
    snprintf(name, sizeof name, "%s", g->values[old_out].name);
    if (tg_graph_rename_value(g, old_out, old) || tg_graph_rename_value(g, y, name))
        return -1;
    tg_graph_replace_uses(g, old_out, y);
    tg_graph_kill_node(g, ni);
    return 0;
}

int *tg_graph_use_counts(const tg_graph *g)
{
    int *c = calloc((size_t)(g->nvalue ? g->nvalue : 1), sizeof(int));
    if (!c) {
        tg_err("out of memory");
        return NULL;
    }
    for (int i = 0; i < g->nnode; i++) {
        if (node_dead(g, i))
            continue;
        const tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0 && n->in[k] < g->nvalue)
                c[n->in[k]]++;
    }
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] >= 0 && g->outputs[k] < g->nvalue)
            c[g->outputs[k]]++;
    return c;
}

/* A live reader of value v must not depend on a dead node. */
static int check_use(const tg_graph *g, int v, const char *who)
{
    if (v < 0)
        return 0;
    if (v >= g->nvalue)
        return tg_err("%s refers to value %d, which does not exist", who, v);
    int p = producer_of(g, v);
    if (g->values[v].kind == TG_VALUE_NODE && (p < 0 || node_dead(g, p)))
        return tg_err("%s reads '%s', the output of a removed node", who, g->values[v].name);
    return 0;
}

/* Live nodes in a topological order that keeps the current order where it is
 * already valid (depth-first, inputs first). order[] gets the node indices. */
static int topo_order(const tg_graph *g, int *order, int *norder)
{
    int nn = g->nnode;
    char *state = calloc((size_t)nn + 1, 1);   /* 0 new, 1 on the stack, 2 placed */
    int *stack = malloc(((size_t)nn + 1) * sizeof(int));
    int *next = malloc(((size_t)nn + 1) * sizeof(int));
    int rc = 0, no = 0;
    if (!state || !stack || !next) {
        rc = tg_err("out of memory");
        goto done;
    }
    for (int root = 0; root < nn && rc == 0; root++) {
        if (node_dead(g, root) || state[root])
            continue;
        int sp = 0;
        stack[sp] = root;
        next[sp++] = 0;
        state[root] = 1;
        while (sp > 0) {
            int i = stack[sp - 1];
            const tg_node *n = &g->nodes[i];
            if (next[sp - 1] == n->nin) {
                state[i] = 2;
                order[no++] = i;
                sp--;
                continue;
            }
            int p = producer_of(g, n->in[next[sp - 1]++]);
            if (p < 0 || state[p] == 2)
                continue;
            if (state[p] == 1) {
                rc = tg_err("node %s: cycle through node %s", n->name, g->nodes[p].name);
                break;
            }
            state[p] = 1;
            stack[sp] = p;
            next[sp++] = 0;
        }
    }
done:
    free(state);
    free(stack);
    free(next);
    *norder = no;
    return rc;
}

int tg_graph_compact(tg_graph *g)
{
    for (int i = 0; i < g->nnode; i++) {
        if (node_dead(g, i))
            continue;
        char who[300];
        snprintf(who, sizeof who, "node %s", g->nodes[i].name);
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (check_use(g, g->nodes[i].in[k], who) < 0)
                return -1;
    }
    for (int k = 0; k < g->noutput; k++) {
        if (g->outputs[k] < 0)
            return tg_err("graph output %d is not set", k);
        if (check_use(g, g->outputs[k], "graph output") < 0)
            return -1;
    }

    int nv = g->nvalue, nn = g->nnode;
    int *order = malloc(((size_t)nn + 1) * sizeof(int));
    int *newnode = malloc(((size_t)nn + 1) * sizeof(int));
    int *newval = malloc(((size_t)nv + 1) * sizeof(int));
    tg_node *nodes = malloc(((size_t)nn + 1) * sizeof(tg_node));
    char *keep = calloc((size_t)nv + 1, 1);
    int norder = 0;
    int rc = !order || !newnode || !newval || !nodes || !keep ? tg_err("out of memory")
                                                              : topo_order(g, order, &norder);
    if (rc < 0) {
        free(order), free(newnode), free(newval), free(nodes), free(keep);
        return -1;
    }

    /* Which values stay: graph inputs and outputs, and everything live nodes touch. */
    for (int k = 0; k < g->ninput; k++)
        if (g->inputs[k] >= 0 && g->inputs[k] < nv)
            keep[g->inputs[k]] = 1;
    for (int k = 0; k < g->noutput; k++)
        keep[g->outputs[k]] = 1;
    for (int j = 0; j < norder; j++) {
        const tg_node *n = &g->nodes[order[j]];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                keep[n->in[k]] = 1;
        for (int k = 0; k < n->nout; k++)
            if (n->out[k] >= 0 && n->out[k] < nv)
                keep[n->out[k]] = 1;
    }
    int nkept = 0;
    for (int v = 0; v < nv; v++) {
        if (keep[v]) {
            g->values[nkept] = g->values[v];
            newval[v] = nkept++;
        } else {
            tg_value_release(&g->values[v]);
            newval[v] = -1;
        }
    }
    g->nvalue = nkept;

    for (int i = 0; i < nn; i++)
        newnode[i] = -1;
    for (int j = 0; j < norder; j++) {
        newnode[order[j]] = j;
        nodes[j] = g->nodes[order[j]];
    }
    for (int i = 0; i < nn; i++)
        if (newnode[i] < 0)
            tg_node_release(&g->nodes[i]);
    free(g->nodes);
    g->nodes = nodes;
    g->nnode = norder;
    g->node_cap = nn + 1;

    for (int i = 0; i < g->nnode; i++) {
        tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                n->in[k] = newval[n->in[k]];
        for (int k = 0; k < n->nout; k++)
            n->out[k] = newval[n->out[k]];
    }
    for (int v = 0; v < g->nvalue; v++) {
        tg_value *val = &g->values[v];
        if (val->kind == TG_VALUE_NODE && val->producer >= 0 && val->producer < nn)
            val->producer = newnode[val->producer];
    }
    for (int k = 0; k < g->ninput; k++)
        if (g->inputs[k] >= 0 && g->inputs[k] < nv)
            g->inputs[k] = newval[g->inputs[k]];
    for (int k = 0; k < g->noutput; k++)
        g->outputs[k] = newval[g->outputs[k]];
    free(order);
    free(newnode);
    free(newval);
    free(keep);
    tg_graph_names_drop(g);
    return 0;
}

/* ---- deep copy ---- */

static int *dup_ints(const int *p, int n)
{
    int *q = malloc((size_t)(n > 0 ? n : 1) * sizeof(int));
    if (q && n > 0)
        memcpy(q, p, (size_t)n * sizeof(int));
    return q;
}

static int clone_node(tg_node *d, const tg_node *s)
{
    memset(d, 0, sizeof *d);
    d->op = s->op;
    d->name = tg_strdup_or_null(s->name);
    d->in = dup_ints(s->in, s->nin);
    d->out = dup_ints(s->out, s->nout);
    d->attr = calloc((size_t)(s->nattr > 0 ? s->nattr : 1), sizeof(tg_attr));
    d->source = tg_strdup_or_null(s->source);
    if ((s->name && !d->name) || !d->in || !d->out || !d->attr || (s->source && !d->source))
        return tg_err("out of memory");
    d->nin = s->nin;
    d->nout = s->nout;
    for (int k = 0; k < s->nattr; k++, d->nattr++)
        if (tg_attr_copy(&d->attr[k], &s->attr[k]) < 0)
            return -1;
    return 0;
}

static int clone_value(tg_value *d, const tg_value *s)
{
    *d = *s;
    d->name = tg_strdup_or_null(s->name);
    d->data = NULL;
    if (s->data) {
        d->data = malloc(s->nbytes ? s->nbytes : 1);
        if (d->data)
            memcpy(d->data, s->data, s->nbytes);
    }
    if ((s->name && !d->name) || (s->data && !d->data))
        return tg_err("out of memory");
    return 0;
}

tg_graph *tg_graph_clone(const tg_graph *s)
{
    tg_graph *d = tg_graph_new();
    if (!d)
        return NULL;
    d->values = calloc((size_t)(s->nvalue > 0 ? s->nvalue : 1), sizeof(tg_value));
    d->nodes = calloc((size_t)(s->nnode > 0 ? s->nnode : 1), sizeof(tg_node));
    d->inputs = dup_ints(s->inputs, s->ninput);
    d->outputs = dup_ints(s->outputs, s->noutput);
    if (!d->values || !d->nodes || !d->inputs || !d->outputs) {
        tg_err("out of memory");
        goto fail;
    }
    d->value_cap = s->nvalue > 0 ? s->nvalue : 1;
    d->node_cap = s->nnode > 0 ? s->nnode : 1;
    d->ninput = s->ninput;
    d->noutput = s->noutput;
    for (; d->nsym < s->nsym; d->nsym++) {
        d->sym[d->nsym] = s->sym[d->nsym];
        d->sym[d->nsym].name = tg_strdup_or_null(s->sym[d->nsym].name);
        if (s->sym[d->nsym].name && !d->sym[d->nsym].name) {
            tg_err("out of memory");
            goto fail;
        }
    }
    for (; d->nvalue < s->nvalue; d->nvalue++)
        if (clone_value(&d->values[d->nvalue], &s->values[d->nvalue]) < 0) {
            d->nvalue++;    /* free the partial copy too */
            goto fail;
        }
    for (; d->nnode < s->nnode; d->nnode++)
        if (clone_node(&d->nodes[d->nnode], &s->nodes[d->nnode]) < 0) {
            d->nnode++;
            goto fail;
        }
    return d;
fail:
    tg_graph_free(d);
    return NULL;
}

int tg_graph_const_to_input(tg_graph *g, int v, void **data, size_t *nbytes)
{
    if (v < 0 || v >= g->nvalue || g->values[v].kind != TG_VALUE_CONST)
        return tg_err("value %d is not a constant", v);
    int *in = realloc(g->inputs, sizeof(int) * ((size_t)g->ninput + 1));
    if (!in)
        return tg_err("out of memory");
    g->inputs = in;
    g->inputs[g->ninput++] = v;
    g->values[v].kind = TG_VALUE_INPUT;
    *data = g->values[v].data;
    *nbytes = g->values[v].nbytes;
    g->values[v].data = NULL;
    g->values[v].nbytes = 0;
    return 0;
}
