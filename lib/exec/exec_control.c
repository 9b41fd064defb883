/* The control-flow ops in the interpreter (ops.def: if, loop;
 * tgraph-ops(7)): each subgraph runs as a graph of its own, in an exec of
 * its own on the same device, its inputs the node's (no outer scope: the
 * values a subgraph reads are passed to it). */
#include "exec_control.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "../backend/cpu/model_rt.h"
#include "../error.h"
#include "exec.h"

static bool truth(const tg_tensor *t)
{
    return tg_load_f64(t->dtype, t->data, 0) != 0;
}

static int run_if(const tg_node *n, const tg_backend *dev, int nthreads,
                  const tg_tensor *const *in, tg_tensor *out)
{
    const char *branch = truth(in[0]) ? "then" : "else";
    const tg_graph *sg = tg_node_graph(n, branch);
    tg_tensor args[n->nin];
    for (int i = 1; i < n->nin; i++)
        args[i - 1] = *in[i];
    tg_exec *x = tg_exec_new_on(sg, dev, nthreads);
    int rc = x ? tg_exec_run(x, args, out) : -1;
    tg_exec_free(x);
    return rc ? tg_err_append("(subgraph %s)", branch) : 0;
}

/* The scan outputs as they grow: one step's dims, then the steps' data. */
typedef struct {
    tg_tensor t;            /* dims[0] the steps so far, dims[1..] one step's */
    size_t cap, step;       /* bytes */
} stack;

static int push(stack *s, const tg_tensor *r, int j)
{
    if (s->t.dims[0] == 0) {
        s->t.dtype = r->dtype;
        s->t.rank = r->rank + 1;
        memcpy(s->t.dims + 1, r->dims, sizeof(int64_t) * (size_t)r->rank);
        s->step = r->nbytes;
    } else if (memcmp(s->t.dims + 1, r->dims, sizeof(int64_t) * (size_t)r->rank)) {
        return tg_err("scan output %d changes shape across iterations (iteration %" PRId64
                      "); its steps must stack", j, s->t.dims[0]);
    }
    if (s->t.nbytes + s->step > s->cap) {
        size_t cap = s->cap ? s->cap * 2 : s->step * 4 + 64;
        void *p = cap < s->cap ? NULL : tg_host_alloc(cap);
        if (!p)
            return tg_err("scan output %d: out of memory after %" PRId64 " iterations", j,
                          s->t.dims[0]);
        if (s->t.nbytes)
            memcpy(p, s->t.data, s->t.nbytes);
        free(s->t.data);
        s->t.data = p;
        s->cap = cap;
    }
    memcpy((char *)s->t.data + s->t.nbytes, r->data, s->step);
    s->t.nbytes += s->step;
    s->t.dims[0]++;
    return 0;
}

/* A scan output after no iteration: [0, ...] of the body's shape for it,
 * which must then be constant. */
static int empty_scan(const tg_graph *body, int o, int j, stack *s)
{
    const tg_value *v = &body->values[body->outputs[o]];
    s->t = (tg_tensor){.dtype = v->dtype, .rank = v->shape.rank + 1};
    if (!tg_shape_is_const(&v->shape, s->t.dims + 1))
        return tg_err("scan output %d: the loop ran no iteration and the step's shape is known "
                      "only when the body runs", j);
    return tg_tensor_alloc(&s->t);
}

static int run_loop(const tg_node *n, const tg_backend *dev, int nthreads,
                    const tg_tensor *const *in, tg_tensor *out)
{
    const tg_graph *body = tg_node_graph(n, "body");
    int N = (int)tg_node_int(n, "carried", 0), M = n->nout - N, rc = 0;
    int64_t max = in[0] ? ((const int64_t *)in[0]->data)[0] : INT64_MAX, it = 0;
    int64_t cap = tgrt_loop_max();
    if (cap < 0)
        return tg_err("TGRAPH_LOOP_MAX='%s' is not a count of iterations (1 or more)",
                      getenv("TGRAPH_LOOP_MAX"));
    bool cond = in[1] ? truth(in[1]) : true;
    tg_tensor args[n->nin], res[body->noutput];
    bool owned[N + 1];
    stack st[M + 1];
    memset(st, 0, sizeof st);
    args[0] = (tg_tensor){.dtype = TG_I64, .data = &it, .nbytes = sizeof it};
    args[1] = (tg_tensor){.dtype = TG_BOOL, .data = &cond, .nbytes = sizeof cond};
    for (int i = 2; i < n->nin; i++)
        args[i] = *in[i];
    for (int k = 0; k < N; k++)
        owned[k] = false;
    tg_exec *x = tg_exec_new_on(body, dev, nthreads);
    if (!x)
        return tg_err_append("(subgraph body)");
    for (; it < max && cond && !rc; it++) {
        if (it == cap) {        /* a condition that never turns false, say */
            rc = tg_err("the loop did not end after %" PRId64 " iterations (TGRAPH_LOOP_MAX "
                        "raises the cap)", cap);
            break;
        }
        if (tg_exec_run(x, args, res)) {
            rc = tg_err_append("(subgraph body, iteration %" PRId64 ")", it);
            break;
        }
        cond = truth(&res[0]);
        tg_tensor_free(&res[0]);
        for (int k = 0; k < N; k++) {
            if (owned[k])
                tg_tensor_free(&args[2 + k]);
            args[2 + k] = res[1 + k];
            owned[k] = true;
        }
        for (int j = 0; j < M; j++) {
            if (!rc)
                rc = push(&st[j], &res[1 + N + j], j);
            tg_tensor_free(&res[1 + N + j]);
        }
    }
    tg_exec_free(x);
    for (int j = 0; !rc && j < M; j++)
        if (!st[j].t.dims[0])
            rc = empty_scan(body, 1 + N + j, j, &st[j]);
    for (int k = 0; !rc && k < N; k++)
        if (!owned[k]) {            /* no iteration: the input, copied */
            tg_tensor c = args[2 + k];
            c.data = NULL;
            if (!(rc = tg_tensor_alloc(&c))) {
                memcpy(c.data, args[2 + k].data, c.nbytes);
                args[2 + k] = c;
                owned[k] = true;
            }
        }
    for (int k = 0; k < N; k++)
        if (rc && owned[k])
            tg_tensor_free(&args[2 + k]);
        else if (!rc)
            out[k] = args[2 + k];
    for (int j = 0; j < M; j++)
        if (rc)
            tg_tensor_free(&st[j].t);
        else
            out[N + j] = st[j].t;
    return rc;
}

int tg_exec_control(const tg_node *n, const tg_backend *dev, int nthreads,
                    const tg_tensor *const *in, tg_tensor *out)
{
    memset(out, 0, sizeof *out * (size_t)n->nout);
    return n->op == TG_OP_IF ? run_if(n, dev, nthreads, in, out)
                             : run_loop(n, dev, nthreads, in, out);
}
