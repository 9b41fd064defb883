/* The reference interpreter: check the inputs against the graph, bind its
 * symbols, then run the nodes in order, allocating each output when its node
 * runs and freeing each value after its last use. Each node runs on a device
 * (lib/backend/backend.h): the one chosen where it supports the node, else the
 * CPU. A device with memory of its own gets its inputs uploaded, and values it
 * made are downloaded where the CPU reads them; either copy is kept until the
 * value dies, and a constant's upload for as long as the exec lives. A device
 * that runs fused groups (run_group) gets them at their roots: the groups its
 * grouping rules form (tg_plan_fuse) where it runs every member. */
#include "exec.h"

#include <cjson/cJSON.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../backend/backend.h"
#include "../error.h"
#include "../log.h"
#include "../passes/passes.h"
#include "exec_control.h"
#include "exec_dynamic.h"

struct tg_exec {
    const tg_graph *g;
    const tg_backend *dev;          /* the device asked for */
    bool *on_dev;                   /* per node: runs on dev (else on the CPU) */
    int *last_use;                  /* per value: index of the last node reading it */
    bool *dynamic;                  /* per node: its shapes are known when it runs */
    int *at;                        /* per node: the node it runs at (a group's root) */
    tg_group_kind *group;           /* per root: the group dev runs there (SINGLE: none) */
    void **kept;                    /* per constant: its upload to dev, made on first use */
    int nthreads;                   /* for its runs; 0: the process-wide count */
    tg_exec_hook hook;
    void *hook_ctx;
};

/* A TLOG=run record of where node i runs: DEBUG, or INFO with the device
 * that refused it and why. */
static void log_place(const tg_exec *e, int i, const char *on, const char *refused,
                      const char *why)
{
    tg_log_level lvl = refused ? TG_LOG_INFO : TG_LOG_DEBUG;
    if (!tg_log_on(RUN, lvl))
        return;
    const tg_node *n = &e->g->nodes[i];
    cJSON *f = cJSON_CreateObject();
    cJSON_AddStringToObject(f, "node", n->name);
    cJSON_AddStringToObject(f, "op", tg_op_name(n->op));
    cJSON_AddStringToObject(f, "backend", on);
    if (refused) {
        cJSON_AddStringToObject(f, "refused", refused);
        cJSON_AddStringToObject(f, "why", why);
    }
    char *fs = cJSON_PrintUnformatted(f);
    if (refused)
        tg_log_emit(TG_LOG_RUN, lvl, fs, "%s (%s): %s refused it (%s); on %s", n->name,
                    tg_op_name(n->op), refused, why, on);
    else
        tg_log_emit(TG_LOG_RUN, lvl, fs, "%s (%s): on %s", n->name, tg_op_name(n->op), on);
    free(fs);
    cJSON_Delete(f);
}

/* Where node i runs: on dev when it supports the node, else on the CPU.
 * -1 (tg_err) when neither can. */
static int place(tg_exec *e, int i)
{
    const tg_graph *g = e->g;
    const tg_node *n = &g->nodes[i];
    const tg_backend *cpu = &tg_backend_cpu;
    char why[TG_WHY_MAX], cpu_why[TG_WHY_MAX];
    if (tg_op_is_control(n->op)) {              /* its subgraphs' nodes are placed */
        log_place(e, i, "the interpreter", NULL, NULL);
        return 0;
    }
    if (e->dynamic[i] && e->dev != cpu) {       /* rebuilt when it runs, on host data */
        snprintf(why, sizeof why, "its shapes are known only when it runs");
    } else if (tg_backend_supports(e->dev, g, i, why)) {
        e->on_dev[i] = true;
        log_place(e, i, e->dev->name, NULL, NULL);
        return 0;
    }
    if (e->dev == cpu)
        return tg_err("node '%s' (%s): cpu cannot run it: %s", n->name, tg_op_name(n->op), why);
    if (!tg_backend_supports(cpu, g, i, cpu_why))
        return tg_err("node '%s' (%s): %s cannot run it (%s), nor can cpu (%s)", n->name,
                      tg_op_name(n->op), e->dev->name, why, cpu_why);
    log_place(e, i, cpu->name, e->dev->name, why);
    return 0;
}

/* The groups dev runs: those its grouping rules form whose members it all
 * runs (none rebuilt when it runs); their members run at the root (at[]). */
static int form_groups(tg_exec *e)
{
    const tg_graph *g = e->g;
    if (!e->dev->run_group || !e->dev->groups)
        return 0;
    tg_plan *p = tg_plan_fuse(g, e->dev->groups);
    if (!p)
        return -1;
    for (int r = 0; r < g->nnode; r++) {
        if (p->root[r] != r || p->kind[r] == TG_GROUP_SINGLE)
            continue;
        int members = 0;
        bool all = true;
        for (int m = 0; m <= r; m++)
            if (p->root[m] == r) {
                members++;
                all = all && e->on_dev[m] && !e->dynamic[m];
            }
        if (members < 2 || !all)
            continue;
        e->group[r] = p->kind[r];
        for (int m = 0; m < r; m++)
            if (p->root[m] == r)
                e->at[m] = r;
        TG_LOG(RUN, TG_LOG_DEBUG, "%s (%s): a group of %d nodes on %s", g->nodes[r].name,
               tg_op_name(g->nodes[r].op), members, e->dev->name);
    }
    tg_plan_free(p);
    return 0;
}

tg_exec *tg_exec_new_on(const tg_graph *g, const tg_backend *dev, int nthreads)
{
    tg_exec *e = calloc(1, sizeof *e);
    if (!e || !(e->last_use = malloc(sizeof(int) * (size_t)(g->nvalue ? g->nvalue : 1))) ||
        !(e->on_dev = calloc((size_t)g->nnode + 1, sizeof(bool))) ||
        !(e->dynamic = malloc(sizeof(bool) * (size_t)(g->nnode ? g->nnode : 1))) ||
        !(e->at = malloc(sizeof(int) * (size_t)(g->nnode ? g->nnode : 1))) ||
        !(e->group = calloc((size_t)g->nnode + 1, sizeof(tg_group_kind))) ||
        !(e->kept = calloc((size_t)g->nvalue + 1, sizeof(void *)))) {
        tg_exec_free(e);
        tg_err("out of memory");
        return NULL;
    }
    e->g = g;
    e->dev = dev;
    for (int i = 0; i < g->nnode; i++) {
        e->dynamic[i] = !tg_op_is_control(g->nodes[i].op) &&
                        tg_exec_node_is_dynamic(g, &g->nodes[i]);
        e->at[i] = i;
    }
    int ndev = 0;
    for (int i = 0; i < g->nnode; i++) {
        if (place(e, i)) {
            tg_exec_free(e);
            return NULL;
        }
        ndev += e->on_dev[i];
    }
    if (dev != &tg_backend_cpu)
        TG_LOG(RUN, TG_LOG_INFO, "%d of %d nodes on %s, the rest on cpu", ndev, g->nnode,
               dev->name);
    if (form_groups(e)) {
        tg_exec_free(e);
        return NULL;
    }
    for (int v = 0; v < g->nvalue; v++)
        e->last_use[v] = -1;
    for (int i = 0; i < g->nnode; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (g->nodes[i].in[j] >= 0 && e->last_use[g->nodes[i].in[j]] < e->at[i])
                e->last_use[g->nodes[i].in[j]] = e->at[i];
    for (int i = 0; i < g->noutput; i++)
        e->last_use[g->outputs[i]] = g->nnode;  /* kept to the end */
    e->nthreads = nthreads > 0 ? nthreads : 0;
    return e;
}

tg_exec *tg_exec_new(const tg_graph *g, int nthreads)
{
    return tg_exec_new_on(g, &tg_backend_cpu, nthreads);
}

void tg_exec_free(tg_exec *e)
{
    if (!e)
        return;
    for (int v = 0; e->kept && v < e->g->nvalue; v++)
        if (e->kept[v])
            e->dev->free(e->dev, e->kept[v]);
    free(e->last_use);
    free(e->on_dev);
    free(e->dynamic);
    free(e->at);
    free(e->group);
    free(e->kept);
    free(e);
}

void tg_exec_set_hook(tg_exec *e, tg_exec_hook hook, void *ctx)
{
    e->hook = hook;
    e->hook_ctx = ctx;
}

/* ---- inputs: symbols and checks ------------------------------------------------ */

static const char *sym_name(const tg_graph *g, int s)
{
    return g->sym[s].name;
}

/* Solve dim expression d == v for its one unknown symbol when d is linear in
 * it (a*s + b, the others bound). Returns 1 when solved into sym[s]. */
static int solve_dim(const tg_graph *g, tg_dim d, int64_t v, int64_t *sym, bool *bound)
{
    int unknown = -1;
    for (int s = 0; s < g->nsym; s++)
        if (!bound[s] && tg_dim_uses_sym(d, s)) {
            if (unknown >= 0)
                return 0;                       /* two unknowns: later, maybe */
            unknown = s;
        }
    if (unknown < 0)
        return 0;
    int64_t f[3];
    for (int k = 0; k < 3; k++) {
        sym[unknown] = k;
        if (tg_dim_eval(d, sym, &f[k]))
            return 0;
    }
    int64_t a = f[1] - f[0], b = f[0];
    if (a == 0 || f[2] - f[1] != a || (v - b) % a)
        return 0;
    sym[unknown] = (v - b) / a;
    bound[unknown] = true;
    return 1;
}

static int input_error(const tg_graph *g, int i, const tg_tensor *t, const char *what)
{
    const tg_value *v = &g->values[g->inputs[i]];
    char want[256], got[256];
    tg_shape_format(&v->shape, g->sym, want, sizeof want);
    tg_tensor_describe(t, got, sizeof got);
    return tg_err("input %d '%s': %s: got %s, expected %s%s", i, v->name, what, got,
                  tg_dtype_name(v->dtype), want);
}

/* Check inputs against the graph and fill sym[] with the symbols' values; the
 * data symbols stay unbound (bound[] false) until their nodes run. */
static int bind_inputs(const tg_graph *g, const tg_tensor *in, int64_t *sym, bool *bound)
{
    for (int i = 0; i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        if (in[i].dtype != v->dtype)
            return input_error(g, i, &in[i], "wrong dtype");
        if (in[i].rank != v->shape.rank)
            return input_error(g, i, &in[i], "wrong rank");
        int64_t n = tg_tensor_numel(in[i].rank, in[i].dims);
        if (n < 0 || (n > 0 && (!in[i].data || in[i].nbytes < (size_t)n * tg_dtype_size(v->dtype))))
            return tg_err("input %d '%s' has too little data for its dims", i, v->name);
    }
    for (bool progress = true; progress;) {
        progress = false;
        for (int i = 0; i < g->ninput; i++) {
            const tg_value *v = &g->values[g->inputs[i]];
            for (int k = 0; k < v->shape.rank; k++)
                progress |= solve_dim(g, v->shape.d[k], in[i].dims[k], sym, bound) > 0;
        }
    }
    for (int s = 0; s < g->nsym; s++) {
        if (g->sym[s].data)
            continue;
        if (!bound[s]) {
            sym[s] = g->sym[s].min;             /* used by no input: nothing decides it */
            continue;
        }
        if (sym[s] < g->sym[s].min || sym[s] > g->sym[s].max)
            return tg_err("symbol '%s' = %" PRId64 " is outside its range [%" PRId64 ", %"
                          PRId64 "]", sym_name(g, s), sym[s], g->sym[s].min, g->sym[s].max);
    }
    for (int i = 0; i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        for (int k = 0; k < v->shape.rank; k++) {
            int64_t want;
            if (tg_dim_eval(v->shape.d[k], sym, &want) || want != in[i].dims[k]) {
                char buf[128];
                snprintf(buf, sizeof buf, "dim %d does not match", k);
                return input_error(g, i, &in[i], buf);
            }
        }
    }
    return 0;
}

/* ---- running ---------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* vals[v] for every value; owned[v] when the data is ours to free; on_dev[v]
 * when that data is in the device's memory (else the host's); copy[v] the
 * value's data in the other memory once a node there has read it (NULL:
 * none yet); for a constant, the device's copy is kept[v], the exec's. */
typedef struct {
    const tg_backend *dev;
    const tg_value *gv;             /* the graph's values */
    tg_tensor *vals;
    bool *owned, *on_dev;
    void **copy, **kept;
    int n;
} value_set;

static void drop(const value_set *vs, void *data, bool on_dev)
{
    if (on_dev)
        vs->dev->free(vs->dev, data);
    else
        free(data);
}

static void release(value_set *vs, int v)
{
    if (vs->owned[v])
        drop(vs, vs->vals[v].data, vs->on_dev[v]);
    if (vs->copy[v])
        drop(vs, vs->copy[v], !vs->on_dev[v]);
    vs->owned[v] = vs->on_dev[v] = false;
    vs->copy[v] = NULL;
    vs->vals[v].data = NULL;
}

/* nbytes of zeroed memory on the device or the host. */
static void *get(const value_set *vs, size_t nbytes, bool on_dev)
{
    return on_dev ? vs->dev->alloc(vs->dev, nbytes) : tg_host_alloc(nbytes);
}

/* Value v as a node in memory on_dev reads it: itself, or its copy there
 * (made on first use). NULL (tg_err) when the copy fails. */
static const tg_tensor *readable(value_set *vs, int v, bool on_dev, tg_tensor *tmp)
{
    const tg_tensor *t = &vs->vals[v];
    if (vs->on_dev[v] == on_dev)
        return t;
    void **copy = on_dev && vs->gv[v].kind == TG_VALUE_CONST ? &vs->kept[v] : &vs->copy[v];
    if (!*copy) {
        void *c = get(vs, t->nbytes, on_dev);
        if (!c)
            return NULL;
        int rc = on_dev ? vs->dev->upload(vs->dev, c, t->data, t->nbytes)
                        : vs->dev->download(vs->dev, c, t->data, t->nbytes);
        if (rc) {
            drop(vs, c, on_dev);
            return NULL;
        }
        TG_LOG(RUN, TG_LOG_DEBUG, "%s: %zu bytes %s %s", vs->gv[v].name, t->nbytes,
               on_dev ? "uploaded to" : "downloaded from", vs->dev->name);
        *copy = c;
    }
    *tmp = *t;
    tmp->data = *copy;
    return tmp;
}

static int node_error(const tg_node *n)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tg_errmsg());
    return tg_err("node '%s' (%s%s%s): %s", n->name, tg_op_name(n->op), n->source ? ", " : "",
                  n->source ? n->source : "", msg);
}

/* Value v's data, its dims set: zeroed memory on the device or the host. */
static int give_memory(value_set *vs, int v, bool on_dev)
{
    tg_tensor *t = &vs->vals[v];
    if (tg_tensor_nbytes(t, &t->nbytes) || !(t->data = get(vs, t->nbytes, on_dev)))
        return -1;
    vs->owned[v] = true;
    vs->on_dev[v] = on_dev;
    return 0;
}

/* The group whose root is r, on the device: the values its members read
 * from outside moved there, memory for the root's outputs only. */
static int run_group(const tg_exec *e, int r, value_set *vs, const int64_t *sym)
{
    const tg_graph *g = e->g;
    const tg_node *root = &g->nodes[r];
    const tg_backend *be = e->dev;
    bool on_dev = be->memory == TG_MEM_DEVICE;
    int nread = 0;
    for (int m = 0; m <= r; m++)
        nread += e->at[m] == r ? g->nodes[m].nin : 0;
    int nodes[r + 1], vin[nread + 1], nnode = 0, nin = 0;
    const tg_tensor *in[nread + 1];
    tg_tensor copies[nread + 1], *out[root->nout ? root->nout : 1];
    for (int m = 0; m <= r; m++) {
        if (e->at[m] != r)
            continue;
        nodes[nnode++] = m;
        for (int j = 0; j < g->nodes[m].nin; j++) {
            int v = g->nodes[m].in[j], k = 0;
            const tg_value *x = v >= 0 ? &g->values[v] : NULL;
            if (!x || (x->kind == TG_VALUE_NODE && e->at[x->producer] == r))
                continue;                       /* omitted, or made inside */
            while (k < nin && vin[k] != v)
                k++;
            if (k < nin)
                continue;
            vin[nin] = v;
            if (!(in[nin] = readable(vs, v, on_dev, &copies[nin])))
                return tg_err_append("(group '%s', input '%s' to %s)", root->name, x->name,
                                     be->name);
            nin++;
        }
    }
    for (int j = 0; j < root->nout; j++) {
        const tg_value *v = &g->values[root->out[j]];
        tg_tensor *t = &vs->vals[root->out[j]];
        t->dtype = v->dtype;
        t->rank = v->shape.rank;
        if (tg_shape_eval(&v->shape, sym, t->dims) || give_memory(vs, root->out[j], on_dev))
            return tg_err_append("(group '%s', output %d)", root->name, j);
        out[j] = t;
    }
    tg_group_ctx c = { g, e->group[r], nnode, nodes, sym, nin, vin, in, out };
    return be->run_group(be, &c) ? node_error(root) : 0;
}

/* Control node i (exec_control.c) on the host: its outputs bind the data
 * symbols of their declared shapes. */
static int run_control(const tg_exec *e, int i, value_set *vs, int64_t *sym, bool *bound)
{
    const tg_graph *g = e->g;
    const tg_node *n = &g->nodes[i];
    const tg_tensor *in[n->nin];
    tg_tensor copies[n->nin], out[n->nout];
    for (int j = 0; j < n->nin; j++)
        if (!(in[j] = n->in[j] >= 0 ? readable(vs, n->in[j], false, &copies[j]) : NULL) &&
            n->in[j] >= 0)
            return tg_err_append("(node '%s', input %d to the host)", n->name, j);
    if (tg_exec_control(n, e->dev, e->nthreads, in, out))
        return node_error(n);
    int rc = 0;
    for (int j = 0; j < n->nout; j++) {
        const tg_value *v = &g->values[n->out[j]];
        if (!rc && (out[j].dtype != v->dtype || out[j].rank != v->shape.rank))
            rc = tg_err("output '%s' is %s of rank %d at run time, the graph says %s of rank %d",
                        v->name, tg_dtype_name(out[j].dtype), out[j].rank,
                        tg_dtype_name(v->dtype), v->shape.rank);
        if (!rc)
            rc = tg_exec_bind_output(g, v, out[j].dims, sym, bound);
        if (rc) {
            tg_tensor_free(&out[j]);
            continue;
        }
        vs->vals[n->out[j]] = out[j];
        vs->owned[n->out[j]] = true;
    }
    return rc ? node_error(n) : 0;
}

static int run_node(const tg_exec *e, int i, value_set *vs, int64_t *sym, bool *bound)
{
    const tg_graph *g = e->g;
    const tg_node *n = &g->nodes[i];
    const tg_backend *be = e->on_dev[i] ? e->dev : &tg_backend_cpu;
    bool on_dev = be->memory == TG_MEM_DEVICE;
    const tg_tensor *in[n->nin ? n->nin : 1];
    tg_tensor *out[n->nout ? n->nout : 1], copies[n->nin ? n->nin : 1];
    for (int j = 0; j < n->nin; j++)
        if (!(in[j] = n->in[j] >= 0 ? readable(vs, n->in[j], on_dev, &copies[j]) : NULL) &&
            n->in[j] >= 0)
            return tg_err_append("(node '%s', input %d to %s)", n->name, j, be->name);
    /* a dynamic node (on the CPU: place) runs as its concrete one-node rebuild;
     * a data op's output is allocated by the rebuild's data symbols at their
     * maximum, and its kernel sets the dims it makes */
    tg_graph *cg = e->dynamic[i] ? tg_exec_concrete_node(g, n, in) : NULL;
    int64_t most[TG_MAX_SYMS] = { 0 };
    if (e->dynamic[i] && !cg)
        return node_error(n);
    for (int s = 0; cg && s < cg->nsym; s++)
        most[s] = cg->sym[s].max;
    for (int j = 0; j < n->nout; j++) {
        const tg_value *v = &g->values[n->out[j]];
        tg_tensor *t = &vs->vals[n->out[j]];
        t->dtype = v->dtype;
        t->rank = v->shape.rank;
        if (cg) {
            const tg_value *cv = &cg->values[cg->nodes[0].out[j]];
            bool same = cv->dtype == v->dtype && cv->shape.rank == v->shape.rank;
            if (!same || tg_shape_eval(&cv->shape, most, t->dims)) {
                if (!same)
                    tg_err("output '%s' is %s of rank %d at run time, the graph says %s of "
                           "rank %d", v->name, tg_dtype_name(cv->dtype), cv->shape.rank,
                           tg_dtype_name(v->dtype), v->shape.rank);
                tg_graph_free(cg);
                return node_error(n);
            }
        } else if (tg_shape_eval(&v->shape, sym, t->dims)) {
            return tg_err_append("(node '%s', output %d)", n->name, j);
        }
        if (give_memory(vs, n->out[j], on_dev)) {
            tg_graph_free(cg);
            return tg_err_append("(node '%s', output %d)", n->name, j);
        }
        out[j] = t;
    }
    tg_run_ctx c = { cg ? cg : g, cg ? &cg->nodes[0] : n, sym, in, out };
    int rc = be->run(be, &c);
    for (int j = 0; !rc && cg && j < n->nout; j++)
        rc = tg_exec_bind_output(g, &g->values[n->out[j]], out[j]->dims, sym, bound) ||
             tg_tensor_nbytes(out[j], &out[j]->nbytes);
    tg_graph_free(cg);
    return rc ? node_error(n) : 0;
}

/* Output i handed to the caller in host memory: the value's own data when
 * it is ours there, else a copy. */
static int hand_over(value_set *vs, int v, tg_tensor *out)
{
    tg_tensor *src = &vs->vals[v], tmp;
    *out = (tg_tensor){ .dtype = src->dtype, .rank = src->rank };
    memcpy(out->dims, src->dims, sizeof src->dims);
    if (vs->owned[v] && !vs->on_dev[v]) {      /* hand over; a repeat then copies */
        out->data = src->data;
        out->nbytes = src->nbytes;
        vs->owned[v] = false;
        return 0;
    }
    const tg_tensor *h = readable(vs, v, false, &tmp);
    if (!h || tg_tensor_alloc(out))
        return -1;
    memcpy(out->data, h->data, out->nbytes);
    return 0;
}

static int exec_run(tg_exec *e, const tg_tensor *inputs, tg_tensor *outputs)
{
    const tg_graph *g = e->g;
    int64_t sym[TG_MAX_SYMS] = { 0 };
    bool bound[TG_MAX_SYMS] = { false };
    if (bind_inputs(g, inputs, sym, bound))
        return -1;
    size_t nv = (size_t)g->nvalue + 1;
    value_set vs = { e->dev, g->values, calloc(nv, sizeof(tg_tensor)), calloc(nv, sizeof(bool)),
                     calloc(nv, sizeof(bool)), calloc(nv, sizeof(void *)), e->kept, g->nvalue };
    int rc = -1;
    if (!vs.vals || !vs.owned || !vs.on_dev || !vs.copy) {
        tg_err("out of memory");
        goto done;
    }
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *val = &g->values[v];
        if (val->kind != TG_VALUE_CONST)
            continue;
        tg_tensor *t = &vs.vals[v];
        t->dtype = val->dtype;
        t->rank = val->shape.rank;
        t->data = val->data;
        t->nbytes = val->nbytes;
        if (tg_shape_eval(&val->shape, sym, t->dims))
            goto done;
    }
    for (int i = 0; i < g->ninput; i++)
        vs.vals[g->inputs[i]] = inputs[i];
    for (int i = 0; i < g->nnode; i++) {
        if (e->at[i] != i)
            continue;                           /* a group's member: it runs at the root */
        double t0 = e->hook ? now() : 0;
        if (e->group[i]                              ? run_group(e, i, &vs, sym)
            : tg_op_is_control(g->nodes[i].op) ? run_control(e, i, &vs, sym, bound)
                                               : run_node(e, i, &vs, sym, bound))
            goto done;
        if (e->hook)
            e->hook(e->hook_ctx, i, now() - t0);
        for (int m = e->group[i] ? 0 : i; m <= i; m++) {
            const tg_node *n = &g->nodes[m];
            if (e->at[m] != i)
                continue;
            for (int j = 0; j < n->nin; j++)
                if (n->in[j] >= 0 && e->last_use[n->in[j]] == i)
                    release(&vs, n->in[j]);
            for (int j = 0; j < n->nout; j++)
                if (e->last_use[n->out[j]] < 0)     /* never read */
                    release(&vs, n->out[j]);
        }
    }
    if (e->dev->synchronize(e->dev))
        goto done;
    for (int i = 0; i < g->noutput; i++)
        if (hand_over(&vs, g->outputs[i], &outputs[i])) {
            for (int j = 0; j < i; j++)
                tg_tensor_free(&outputs[j]);
            goto done;
        }
    rc = 0;
done:
    for (int v = 0; vs.vals && vs.owned && vs.on_dev && vs.copy && v < g->nvalue; v++)
        release(&vs, v);
    free(vs.vals);
    free(vs.owned);
    free(vs.on_dev);
    free(vs.copy);
    return rc;
}

/* The CPU runs what the device refuses, so both prepare for the run. */
int tg_exec_run(tg_exec *e, const tg_tensor *inputs, tg_tensor *outputs)
{
    const tg_backend *cpu = &tg_backend_cpu, *dev = e->dev != cpu ? e->dev : NULL;
    int saved = cpu->run_begin(cpu, e->nthreads);
    int dev_saved = dev && dev->run_begin ? dev->run_begin(dev, e->nthreads) : 0;
    int rc = exec_run(e, inputs, outputs);
    if (dev && dev->run_end)
        dev->run_end(dev, dev_saved);
    cpu->run_end(cpu, saved);
    return rc;
}
