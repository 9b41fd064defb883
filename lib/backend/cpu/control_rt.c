/* The control-flow ops of a compiled model (tgrt_control_if, _loop: model_rt.h):
 * each subgraph is a model table of its own in the generated file, run
 * through tgrt_sub_run, as the interpreter runs it in an exec of its own
 * (lib/exec/exec_control.c, whose results these match); and the iteration
 * cap both share (tgrt_loop_max). */
#include "model_rt.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int64_t tgrt_loop_max(void)
{
    const char *s = getenv("TGRAPH_LOOP_MAX");
    if (!s || !*s)
        return TGRT_LOOP_MAX_DEFAULT;
    char *end;
    long long v = strtoll(s, &end, 10);
    return *end || v < 1 ? -1 : (int64_t)v;
}

/* The failed subgraph run's message, with the node and the subgraph. */
static int fail_in(int rc, const char *node, const char *op, const char *sub, int64_t it)
{
    char msg[400], at[48] = "";
    snprintf(msg, sizeof msg, "%s", tgrt_last_error());
    if (it >= 0)
        snprintf(at, sizeof at, ", iteration %" PRId64, it);
    return tgrt_fail(rc, "node '%s' (%s): %s (subgraph %s%s)", node, op, msg, sub, at);
}

static const char *dims_str(const tgraph_tensor *t, char *buf, size_t n)
{
    size_t k = (size_t)snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && k < n; i++)
        k += (size_t)snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", t->dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* A result against the shape the graph declares for it (-1: a dim the run
 * sets). what: "output", "carried value", ... */
static int check_shape(const char *node, const char *op, const char *what, int k,
                       const tgraph_tensor *want, const tgraph_tensor *got)
{
    int ok = want->rank == got->rank;
    for (int d = 0; ok && d < got->rank; d++)
        ok = want->dims[d] < 0 || want->dims[d] == got->dims[d];
    if (ok)
        return 0;
    char a[200], b[200];
    return tgrt_fail(TGRAPH_E_SHAPE, "node '%s' (%s): %s %d is %s at run time, the graph says %s",
                     node, op, what, k, dims_str(got, a, sizeof a), dims_str(want, b, sizeof b));
}

int tgrt_control_if(const tgrt_model *then_, const tgrt_model *else_, const char *node,
            const unsigned char *w, const void *cond, const tgraph_tensor *args, int nargs,
            tgraph_tensor *out, int nout)
{
    int taken = *(const unsigned char *)cond != 0;
    tgraph_tensor want[nout + 1];
    memcpy(want, out, sizeof *out * (size_t)nout);
    int rc = tgrt_sub_run(taken ? then_ : else_, w, args, nargs, out, nout);
    if (rc)
        return fail_in(rc, node, "if", taken ? "then" : "else", -1);
    for (int k = 0; k < nout && !rc; k++)
        rc = check_shape(node, "if", "output", k, &want[k], &out[k]);
    if (rc)
        for (int k = 0; k < nout; k++)
            if (!want[k].data)
                free(out[k].data);
    return rc;
}

/* A scan output as it grows: its steps' data, one step's shape. */
typedef struct {
    unsigned char *data;
    size_t len, cap;
    tgraph_tensor step;
} stack;

static int push(stack *s, const tgraph_tensor *r, int j, int64_t it, const char *node)
{
    char a[200], b[200];
    if (it == 0)
        s->step = *r;
    else if (r->rank != s->step.rank || memcmp(r->dims, s->step.dims, sizeof(int64_t) * r->rank))
        return tgrt_fail(TGRAPH_E_SHAPE, "node '%s' (loop): scan output %d changes shape across "
                         "iterations (%s, then %s at iteration %" PRId64 "); its steps must "
                         "stack", node, j, dims_str(&s->step, a, sizeof a),
                         dims_str(r, b, sizeof b), it);
    if (s->len + r->nbytes > s->cap) {
        size_t cap = s->cap * 2 + r->nbytes * 4 + 64;
        unsigned char *p = realloc(s->data, cap);
        if (!p)
            return tgrt_fail(TGRAPH_E_NOMEM, "node '%s' (loop): scan output %d: out of memory "
                             "after %" PRId64 " iterations", node, j, it);
        s->data = p;
        s->cap = cap;
    }
    if (r->nbytes)
        memcpy(s->data + s->len, r->data, r->nbytes);
    s->len += r->nbytes;
    return 0;
}

/* Scan output j as the node's output *o: the steps stacked on a new first
 * axis (after no iteration, the body's declared step shape, which must then
 * be fixed), into o's buffer where it has one, else the stack itself. */
static int stacked(const tgrt_model *body, int at, stack *s, int64_t trips, int j,
                   const char *node, tgraph_tensor *o)
{
    const tgraph_tensor_info *info = &body->out[at];
    tgraph_tensor t = {.dtype = info->dtype, .rank = info->rank + 1, .nbytes = s->len};
    t.dims[0] = trips;
    for (int d = 0; d < info->rank; d++) {
        t.dims[d + 1] = trips ? s->step.dims[d] : info->dims[d];
        if (t.dims[d + 1] < 0)
            return tgrt_fail(TGRAPH_E_SHAPE, "node '%s' (loop): scan output %d: the loop ran no "
                             "iteration and the step's shape is known only when the body runs",
                             node, j);
    }
    if (check_shape(node, "loop", "scan output", j, o, &t))
        return TGRAPH_E_SHAPE;
    if (o->data) {
        if (s->len)
            memcpy(o->data, s->data, s->len);
        free(s->data);
        t.data = o->data;
    } else {
        t.data = s->data ? s->data : malloc(1);
        if (!t.data)
            return tgrt_fail(TGRAPH_E_NOMEM, "node '%s' (loop): out of memory", node);
    }
    s->data = NULL;
    *o = t;
    return 0;
}

int tgrt_control_loop(const tgrt_model *body, const char *node, const unsigned char *w,
              const void *trip, const void *cond, int ncarried, const tgraph_tensor *args,
              int nargs, tgraph_tensor *out, int nout)
{
    int64_t cap = tgrt_loop_max(), it = 0;
    if (cap < 0)
        return tgrt_fail(TGRAPH_E_ARG, "node '%s' (loop): TGRAPH_LOOP_MAX='%s' is not a count "
                         "of iterations (1 or more)", node, getenv("TGRAPH_LOOP_MAX"));
    int64_t max = trip ? *(const int64_t *)trip : INT64_MAX;
    unsigned char c = cond ? *(const unsigned char *)cond != 0 : 1, next = 0;
    int N = ncarried, M = nout - N, rc = 0;
    tgraph_tensor bin[nargs + 2], bout[nout + 1];
    void *cur[N + 1], *nxt[N + 1];
    stack st[M + 1];
    memset(st, 0, sizeof st);
    bin[0] = (tgraph_tensor){.dtype = TGRAPH_I64, .data = &it, .nbytes = sizeof it};
    bin[1] = (tgraph_tensor){.dtype = TGRAPH_BOOL, .data = &c, .nbytes = 1};
    memcpy(bin + 2, args, sizeof *args * (size_t)nargs);
    for (int k = 0; k < N; k++) {   /* the carried values: this iteration's, the next's */
        cur[k] = malloc(args[k].nbytes + 1);
        nxt[k] = malloc(args[k].nbytes + 1);
        if (!cur[k] || !nxt[k])
            rc = tgrt_fail(TGRAPH_E_NOMEM, "node '%s' (loop): out of memory", node);
        else if (args[k].nbytes)
            memcpy(cur[k], args[k].data, args[k].nbytes);
        bin[2 + k].data = cur[k];
    }
    for (; !rc && it < max && c; it++) {
        if (it == cap) {        /* a condition that never turns false, say */
            rc = tgrt_fail(TGRAPH_E_DATA, "node '%s' (loop): the loop did not end after %" PRId64
                           " iterations (TGRAPH_LOOP_MAX raises the cap)", node, cap);
            break;
        }
        bout[0] = (tgraph_tensor){.data = &next, .nbytes = 1};
        for (int k = 0; k < N; k++)
            bout[1 + k] = (tgraph_tensor){.data = nxt[k], .nbytes = args[k].nbytes};
        for (int j = 0; j < M; j++)
            bout[1 + N + j] = (tgraph_tensor){0};
        if ((rc = tgrt_sub_run(body, w, bin, nargs + 2, bout, nout + 1))) {
            rc = fail_in(rc, node, "loop", "body", it);
            break;
        }
        c = next != 0;
        for (int k = 0; k < N && !rc; k++)
            rc = check_shape(node, "loop", "carried value", k, &args[k], &bout[1 + k]);
        for (int k = 0; k < N; k++) {
            void *t = cur[k];
            bin[2 + k].data = cur[k] = nxt[k];
            nxt[k] = t;
        }
        for (int j = 0; j < M; j++) {
            if (!rc)
                rc = push(&st[j], &bout[1 + N + j], j, it, node);
            free(bout[1 + N + j].data);
        }
    }
    for (int k = 0; !rc && k < N; k++)
        if (out[k].data && args[k].nbytes)
            memcpy(out[k].data, cur[k], args[k].nbytes);
    for (int j = 0; !rc && j < M; j++)
        rc = stacked(body, 1 + N + j, &st[j], it, j, node, &out[N + j]);
    for (int k = 0; k < N; k++) {
        free(cur[k]);
        free(nxt[k]);
    }
    for (int j = 0; j < M; j++)
        free(st[j].data);
    return rc;
}
