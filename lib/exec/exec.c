/* The reference interpreter: check the inputs against the graph, bind its
 * symbols, then run the nodes in order, allocating each output when its node
 * runs and freeing each value after its last use. The per-op work is in the
 * run_*.c glue, found through one table indexed by op. */
#include "exec.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../error.h"
#include "../backend/cpu/run.h"
#include "exec_dynamic.h"

/* tensor_ops.h numbers its dtypes like dtype.h, so a cast converts. */
_Static_assert(TGK_F32 == (int)TG_F32 && TGK_F8E5M2 == (int)TG_F8E5M2 &&
               TGK_I8 == (int)TG_I8 && TGK_I64 == (int)TG_I64 && TGK_BOOL == (int)TG_BOOL &&
               TGK_DT_COUNT == (int)TG_DTYPE_COUNT, "tgk_dtype must match tg_dtype");

static const tg_run_fn run_table[TG_OP_COUNT] = {
#define E tg_run_elementwise
    [TG_OP_NEG] = E, [TG_OP_ABS] = E, [TG_OP_EXP] = E, [TG_OP_LOG] = E, [TG_OP_SQRT] = E,
    [TG_OP_RSQRT] = E, [TG_OP_RECIPROCAL] = E, [TG_OP_SIN] = E, [TG_OP_COS] = E,
    [TG_OP_TANH] = E, [TG_OP_ERF] = E, [TG_OP_SIGMOID] = E, [TG_OP_RELU] = E,
    [TG_OP_GELU] = E, [TG_OP_SILU] = E, [TG_OP_HARDSWISH] = E, [TG_OP_HARDSIGMOID] = E,
    [TG_OP_LEAKY_RELU] = E, [TG_OP_ELU] = E, [TG_OP_FLOOR] = E, [TG_OP_CEIL] = E,
    [TG_OP_ROUND] = E, [TG_OP_CLAMP] = E, [TG_OP_LOGICAL_NOT] = E, [TG_OP_CAST] = E,
    [TG_OP_IDENTITY] = E, [TG_OP_ADD] = E, [TG_OP_SUB] = E, [TG_OP_MUL] = E, [TG_OP_DIV] = E,
    [TG_OP_POW] = E, [TG_OP_REMAINDER] = E, [TG_OP_FMOD] = E, [TG_OP_MAXIMUM] = E, [TG_OP_MINIMUM] = E, [TG_OP_EQ] = E, [TG_OP_NE] = E,
    [TG_OP_LT] = E, [TG_OP_LE] = E, [TG_OP_GT] = E, [TG_OP_GE] = E, [TG_OP_LOGICAL_AND] = E,
    [TG_OP_LOGICAL_OR] = E, [TG_OP_WHERE] = E,
#undef E
#define R tg_run_reduce
    [TG_OP_REDUCE_SUM] = R, [TG_OP_REDUCE_MEAN] = R, [TG_OP_REDUCE_MAX] = R,
    [TG_OP_REDUCE_MIN] = R, [TG_OP_REDUCE_PROD] = R, [TG_OP_REDUCE_VAR] = R,
    [TG_OP_REDUCE_ANY] = R, [TG_OP_ARGMAX] = R, [TG_OP_ARGMIN] = R, [TG_OP_SOFTMAX] = R,
    [TG_OP_LOG_SOFTMAX] = R, [TG_OP_CUMSUM] = R,
#undef R
    [TG_OP_LAYER_NORM] = tg_run_nn, [TG_OP_GROUP_NORM] = tg_run_nn,
    [TG_OP_BATCH_NORM] = tg_run_nn, [TG_OP_MAX_POOL] = tg_run_nn, [TG_OP_AVG_POOL] = tg_run_nn,
    [TG_OP_ADAPTIVE_AVG_POOL] = tg_run_nn, [TG_OP_RESIZE] = tg_run_nn,
    [TG_OP_MATMUL] = tg_run_linalg, [TG_OP_LINEAR] = tg_run_linalg,
    [TG_OP_LINEAR_PACKED] = tg_run_linalg,
    [TG_OP_CONV] = tg_run_linalg, [TG_OP_SDPA] = tg_run_linalg,
#define M tg_run_movement
    [TG_OP_RESHAPE] = M, [TG_OP_PERMUTE] = M, [TG_OP_EXPAND] = M, [TG_OP_SLICE] = M,
    [TG_OP_CONCAT] = M, [TG_OP_PAD] = M, [TG_OP_TILE] = M, [TG_OP_GATHER] = M,
    [TG_OP_INDEX_SELECT] = M, [TG_OP_INDEX_COPY] = M, [TG_OP_TRIL] = M, [TG_OP_TRIU] = M,
#undef M
    [TG_OP_FULL] = tg_run_gen, [TG_OP_ARANGE] = tg_run_gen,
    [TG_OP_QUANTIZE] = tg_run_quant, [TG_OP_DEQUANTIZE] = tg_run_quant,
    [TG_OP_QLINEAR] = tg_run_qops, [TG_OP_QCONV] = tg_run_qops,
    [TG_OP_LINEAR_24] = tg_run_sparse,
};

bool tg_exec_supports_op(tg_op op)
{
    return op > TG_OP_NONE && op < TG_OP_COUNT && run_table[op] != NULL;
}

struct tg_exec {
    const tg_graph *g;
    int *last_use;                  /* per value: index of the last node reading it */
    bool *dynamic;                  /* per node: its shapes are known when it runs */
    int nthreads;                   /* for its runs; 0: the process-wide count */
    tg_exec_hook hook;
    void *hook_ctx;
};

tg_exec *tg_exec_new(const tg_graph *g, int nthreads)
{
    for (int i = 0; i < g->nnode; i++)
        if (!tg_exec_supports_op(g->nodes[i].op)) {
            tg_err("node '%s': op %s has no CPU kernel", g->nodes[i].name,
                   tg_op_name(g->nodes[i].op));
            return NULL;
        }
    tg_exec *e = calloc(1, sizeof *e);
    if (!e || !(e->last_use = malloc(sizeof(int) * (size_t)(g->nvalue ? g->nvalue : 1))) ||
        !(e->dynamic = malloc(sizeof(bool) * (size_t)(g->nnode ? g->nnode : 1)))) {
        if (e)
            free(e->last_use);
        free(e);
        tg_err("out of memory");
        return NULL;
    }
    e->g = g;
    for (int i = 0; i < g->nnode; i++)
        e->dynamic[i] = tg_exec_node_is_dynamic(g, &g->nodes[i]);
    for (int v = 0; v < g->nvalue; v++)
        e->last_use[v] = -1;
    for (int i = 0; i < g->nnode; i++)
        for (int j = 0; j < g->nodes[i].nin; j++)
            if (g->nodes[i].in[j] >= 0)
                e->last_use[g->nodes[i].in[j]] = i;
    for (int i = 0; i < g->noutput; i++)
        e->last_use[g->outputs[i]] = g->nnode;  /* kept to the end */
    e->nthreads = nthreads > 0 ? nthreads : 0;
    return e;
}

void tg_exec_free(tg_exec *e)
{
    if (!e)
        return;
    free(e->last_use);
    free(e->dynamic);
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

/* vals[v] for every value; owned[v] when the data is ours to free. */
typedef struct {
    tg_tensor *vals;
    bool *owned;
    int n;
} value_set;

static void release(value_set *vs, int v)
{
    if (vs->owned[v])
        tg_tensor_free(&vs->vals[v]);
    vs->owned[v] = false;
    vs->vals[v].data = NULL;
}

static int node_error(const tg_node *n)
{
    char msg[1024];
    snprintf(msg, sizeof msg, "%s", tg_errmsg());
    return tg_err("node '%s' (%s%s%s): %s", n->name, tg_op_name(n->op), n->source ? ", " : "",
                  n->source ? n->source : "", msg);
}

static int run_node(const tg_exec *e, int i, value_set *vs, int64_t *sym, bool *bound)
{
    const tg_graph *g = e->g;
    const tg_node *n = &g->nodes[i];
    const tg_tensor *in[n->nin ? n->nin : 1];
    tg_tensor *out[n->nout ? n->nout : 1];
    for (int j = 0; j < n->nin; j++)
        in[j] = n->in[j] >= 0 ? &vs->vals[n->in[j]] : NULL;
    /* a dynamic node runs as its concrete one-node rebuild */
    tg_graph *cg = e->dynamic[i] ? tg_exec_concrete_node(g, n, in) : NULL;
    if (e->dynamic[i] && !cg)
        return node_error(n);
    for (int j = 0; j < n->nout; j++) {
        const tg_value *v = &g->values[n->out[j]];
        tg_tensor *t = &vs->vals[n->out[j]];
        t->dtype = v->dtype;
        t->rank = v->shape.rank;
        if (cg) {
            const tg_value *cv = &cg->values[cg->nodes[0].out[j]];
            bool same = cv->dtype == v->dtype && cv->shape.rank == v->shape.rank;
            if (!same || tg_shape_eval(&cv->shape, sym, t->dims) ||
                tg_exec_bind_output(g, v, t->dims, sym, bound)) {
                if (!same)
                    tg_err("output '%s' is %s of rank %d at run time, the graph says %s of "
                           "rank %d", v->name, tg_dtype_name(cv->dtype), cv->shape.rank,
                           tg_dtype_name(v->dtype), v->shape.rank);
                tg_graph_free(cg);
                return node_error(n);
            }
        } else if (tg_shape_eval(&v->shape, sym, t->dims))
            return tg_err_append("(node '%s', output %d)", n->name, j);
        if (tg_tensor_alloc(t)) {
            tg_graph_free(cg);
            return tg_err_append("(node '%s', output %d)", n->name, j);
        }
        vs->owned[n->out[j]] = true;
        out[j] = t;
    }
    tg_run_ctx c = { cg ? cg : g, cg ? &cg->nodes[0] : n, sym, in, out };
    int rc = run_table[n->op](&c);
    tg_graph_free(cg);
    return rc ? node_error(n) : 0;
}

static int exec_run(tg_exec *e, const tg_tensor *inputs, tg_tensor *outputs)
{
    const tg_graph *g = e->g;
    int64_t sym[TG_MAX_SYMS] = { 0 };
    bool bound[TG_MAX_SYMS] = { false };
    tgk_parallel_prime();
    if (bind_inputs(g, inputs, sym, bound))
        return -1;
    value_set vs = { calloc((size_t)g->nvalue + 1, sizeof(tg_tensor)),
                     calloc((size_t)g->nvalue + 1, sizeof(bool)), g->nvalue };
    if (!vs.vals || !vs.owned) {
        free(vs.vals);
        free(vs.owned);
        return tg_err("out of memory");
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
            goto fail;
    }
    for (int i = 0; i < g->ninput; i++)
        vs.vals[g->inputs[i]] = inputs[i];
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        double t0 = e->hook ? now() : 0;
        if (run_node(e, i, &vs, sym, bound))
            goto fail;
        if (e->hook)
            e->hook(e->hook_ctx, i, now() - t0);
        for (int j = 0; j < n->nin; j++)
            if (n->in[j] >= 0 && e->last_use[n->in[j]] == i)
                release(&vs, n->in[j]);
        for (int j = 0; j < n->nout; j++)
            if (e->last_use[n->out[j]] < 0)     /* never read */
                release(&vs, n->out[j]);
    }
    for (int i = 0; i < g->noutput; i++) {
        tg_tensor *src = &vs.vals[g->outputs[i]];
        outputs[i] = (tg_tensor){ .dtype = src->dtype, .rank = src->rank };
        memcpy(outputs[i].dims, src->dims, sizeof src->dims);
        if (vs.owned[g->outputs[i]]) {          /* hand over; a repeat then copies */
            outputs[i].data = src->data;
            outputs[i].nbytes = src->nbytes;
            vs.owned[g->outputs[i]] = false;
            continue;
        }
        if (tg_tensor_alloc(&outputs[i])) {
            for (int j = 0; j < i; j++)
                tg_tensor_free(&outputs[j]);
            goto fail;
        }
        memcpy(outputs[i].data, src->data, outputs[i].nbytes);
    }
    for (int v = 0; v < g->nvalue; v++)
        release(&vs, v);
    free(vs.vals);
    free(vs.owned);
    return 0;
fail:
    for (int v = 0; v < g->nvalue; v++)
        release(&vs, v);
    free(vs.vals);
    free(vs.owned);
    return -1;
}

/* The executor's thread count for this run only: the process-wide one, which
 * the host may have chosen, stays as it is. */
int tg_exec_run(tg_exec *e, const tg_tensor *inputs, tg_tensor *outputs)
{
    int caller = tgk_run_threads();
    tgk_set_run_threads(e->nthreads);
    int rc = exec_run(e, inputs, outputs);
    tgk_set_run_threads(caller);
    return rc;
}
