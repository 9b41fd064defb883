/* ONNX control flow. If and Loop import as control nodes (ops.def: if, loop)
 * whose subgraphs are imported into graphs of their own (onnx.c's scopes):
 * the outer values a branch or body reads become its inputs, passed by the
 * node. Scan (opset 9 on) is unrolled over a sequence length known at
 * import: its body's nodes are mapped once per step into the graph being
 * built, its inputs bound to that step's state and slices (ONNX keeps
 * subgraph names apart from the outer graph's, so one namespace serves). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../ops/control.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* How many body nodes a Scan is unrolled into at most. */
#define SCAN_MAX_NODES 200000

/* x with a dim of 1 inserted at axis (of x's rank + 1). */
static int unsqueeze_at(onnx_ctx *c, int x, int axis, const char *sfx)
{
    tg_shape s = shape_of(c, x);
    tg_dim d[TG_MAX_RANK];
    if (s.rank + 1 > TG_MAX_RANK) return tg_err("a scan output of rank %d is too large to stack", s.rank);
    for (int i = 0, j = 0; i <= s.rank; i++) d[i] = i == axis ? tg_dim_const(1) : s.d[j++];
    return reshape_as(c, x, s.rank + 1, d, sfx);
}

/* An axes attribute with one entry per input (default 0), normalized to rank
 * (+ extra for outputs, which gain the scan axis). */
static int scan_axes(onnx_ctx *c, const char *name, int n, const int *ranks, int extra, int64_t *ax)
{
    const Onnx__AttributeProto *a = onnx_attr(N(c), name);
    if (a && (int)a->n_ints != n) return tg_err("attribute %s has %zu values for %d", name, a->n_ints, n);
    for (int i = 0; i < n; i++) {
        int v = 0;
        if (a && axis_norm(a->ints[i], ranks[i] + extra, &v)) return -1;
        ax[i] = v;
    }
    return 0;
}

static int body_name_ok(const Onnx__ValueInfoProto *v, const char *what, int i)
{
    return v && v->name && *v->name ? 0 : tg_err("the body's %s %d has no name", what, i);
}

/* Scan: N state variables, then M scan inputs sliced along their axes (in
 * reverse for direction 1); each step's K scan outputs stacked along their
 * axes (in reverse for direction 1). */
static int map_scan(onnx_ctx *c, const onnx_op_map *m)
{
    if (c->opset < 9) return tg_err("Scan of opset 8 (with a batch axis and sequence_lens) is not supported");
    const Onnx__AttributeProto *ba = onnx_attr(N(c), "body");
    const Onnx__GraphProto *body = ba ? ba->g : NULL;
    if (!body) return tg_err("attribute body (a graph) is required");
    int nin = (int)N(c)->n_input, ms = (int)onnx_attr_int(N(c), "num_scan_inputs", 0), ns = nin - ms;
    int nbo = (int)body->n_output, k = nbo - ns;
    if (ms < 1 || ns < 0 || (int)body->n_input != nin || k < 0 || (int)N(c)->n_output > nbo)
        return tg_err("num_scan_inputs %d does not fit %d inputs, a body of %zu inputs and %d outputs", ms, nin,
                      body->n_input, nbo);
    if (nin > 64 || nbo > 64) return tg_err("more than 64 inputs or outputs");
    int st[64], xs[64], ranks[64], *steps = NULL;
    int64_t iax[64], idir[64], oax[64], odir[64], t = -1;
    for (int i = 0; i < nin; i++) {
        if (body_name_ok(body->input[i], "input", i)) return -1;
        if ((i < ns ? (st[i] = in_val(c, i)) : (xs[i - ns] = in_val(c, i))) < 0) return -1;
        if (i >= ns) ranks[i - ns] = shape_of(c, xs[i - ns]).rank;
    }
    for (int i = 0; i < nbo; i++)
        if (body_name_ok(body->output[i], "output", i)) return -1;
    if (scan_axes(c, "scan_input_axes", ms, ranks, 0, iax)) return -1;
    for (int i = 0; i < ms; i++) {
        int64_t len;
        const Onnx__AttributeProto *d = onnx_attr(N(c), "scan_input_directions");
        idir[i] = d && (int)d->n_ints > i ? d->ints[i] : 0;
        if (!tg_dim_is_const(shape_of(c, xs[i]).d[iax[i]], &len))
            return tg_err("scan input %d's length is not known at import (the scan is unrolled)", i);
        if (t >= 0 && len != t) return tg_err("scan inputs have lengths %lld and %lld", (long long)t, (long long)len);
        t = len;
    }
    if (t < 1 || t * (int64_t)(body->n_node + 1) > SCAN_MAX_NODES)
        return tg_err("%lld steps of a %zu-node body are not within the %d nodes unrolled at most", (long long)t,
                      body->n_node, SCAN_MAX_NODES);
    if (onnx_def_initializers(c, body->initializer, body->n_initializer, "the body's initializer"))
        return -1;
    if (k > 0 && !(steps = malloc(sizeof(int) * (size_t)(t * k)))) return tg_err("out of memory");
    int rc = 0;
    for (int64_t s = 0; s < t && !rc; s++) {
        for (int i = 0; i < ns && !rc; i++) rc = onnx_def_value(c, body->input[i]->name, st[i]);
        for (int i = 0; i < ms && !rc; i++) {  /* this step's slice, its scan axis dropped */
            int64_t at = idir[i] ? t - 1 - s : s;
            tg_shape xsh = shape_of(c, xs[i]);
            tg_dim d[TG_MAX_RANK];
            for (int a = 0, j = 0; a < xsh.rank; a++)
                if (a != iax[i]) d[j++] = xsh.d[a];
            int v = reshape_as(c, slice_range(c, xs[i], (int)iax[i], at, at + 1, "scan_slice"), xsh.rank - 1, d, "scan_step");
            rc = v < 0 ? -1 : onnx_def_value(c, body->input[ns + i]->name, v);
        }
        for (size_t j = 0; j < body->n_node && !rc; j++) rc = onnx_map_body_node(c, body->node[j]);
        for (int i = 0; i < nbo && !rc; i++) {  /* read them all before the next step rebinds */
            onnx_ent *e = onnx_get(c, body->output[i]->name);
            int v = e ? onnx_value(c, e) : -1;
            if (v < 0) rc = -1;
            else if (i < ns) st[i] = v;
            else steps[s * k + (i - ns)] = v;
        }
    }
    if (!rc && k > 0) {
        for (int i = 0; i < k; i++) ranks[i] = shape_of(c, steps[i]).rank;
        if (scan_axes(c, "scan_output_axes", k, ranks, 1, oax)) rc = -1;
        const Onnx__AttributeProto *d = onnx_attr(N(c), "scan_output_directions");
        for (int i = 0; i < k; i++) odir[i] = d && (int)d->n_ints > i ? d->ints[i] : 0;
    }
    for (int i = 0; i < ns && !rc; i++) rc = def_out(c, i, st[i]);
    for (int i = 0; i < k && !rc; i++) {
        if (ns + i >= (int)N(c)->n_output || !*N(c)->output[ns + i]) continue;
        int *parts = malloc(sizeof(int) * (size_t)t);
        if (!parts) {
            rc = tg_err("out of memory");
            break;
        }
        for (int64_t s = 0; s < t && !rc; s++) {
            int v = unsqueeze_at(c, steps[s * k + i], (int)oax[i], "scan_out_step");
            if (v < 0) rc = -1;
            parts[odir[i] ? t - 1 - s : s] = v;
        }
        tg_attr a = tg_attr_int("axis", (int)oax[i]);
        int y = rc ? -1 : t == 1 ? parts[0] : onnx_add(c, TG_OP_CONCAT, "scan_output", (int)t, parts, 1, &a);
        free(parts);
        if (!rc) rc = def_out(c, ns + i, y);
    }
    free(steps);
    return rc ? -1 : 0;
}

/* ONNX graph gp as subgraph *out: its own inputs first (nlead, of dtypes dt
 * and shapes sh: a body's declarations may lack them), then what it reads of
 * the graphs around and its constants (sc->cap: the outer values those take;
 * the caller frees it). */
static int import_sub(onnx_ctx *c, const Onnx__GraphProto *gp, const char *what, int nlead,
                      const tg_dtype *dt, const tg_shape *sh, tg_graph **out, onnx_scope *sc)
{
    tg_graph *sub = tg_control_subgraph(c->g);
    if (!sub || onnx_scope_enter(c, sc, sub)) return tg_graph_free(sub), -1;
    int rc = (int)gp->n_input == nlead ? 0 : tg_err("%s has %zu inputs, expected %d", what, gp->n_input, nlead);
    for (int i = 0; i < nlead && !rc; i++) {
        int v = body_name_ok(gp->input[i], "input", i) ? -1 : tg_graph_add_input(sub, gp->input[i]->name, dt[i], &sh[i]);
        rc = v < 0 ? -1 : onnx_def_value(c, gp->input[i]->name, v);
    }
    if (!rc) rc = onnx_def_initializers(c, gp->initializer, gp->n_initializer, "the subgraph's initializer");
    for (size_t j = 0; j < gp->n_node && !rc; j++) rc = onnx_map_body_node(c, gp->node[j]);
    for (size_t i = 0; i < gp->n_output && !rc; i++) {
        onnx_ent *e = body_name_ok(gp->output[i], "output", (int)i) ? NULL : onnx_get(c, gp->output[i]->name);
        int v = e ? onnx_value(c, e) : -1;
        rc = v < 0 || tg_graph_add_output(sub, v) < 0 ? -1 : 0;
    }
    if (onnx_scope_leave(c, rc)) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tg_errmsg());
        tg_graph_free(sub);
        free(sc->cap);
        return tg_err("%s: %s", what, msg);
    }
    *out = sub;
    return 0;
}

static const Onnx__GraphProto *graph_attr(onnx_ctx *c, const char *name)
{
    const Onnx__AttributeProto *a = onnx_attr(N(c), name);
    if (!a || !a->g) tg_err("attribute %s (a graph) is required", name);
    return a ? a->g : NULL;
}

/* The node's outputs: those of the control node just added. */
static int def_outs(onnx_ctx *c, int first)
{
    if (first < 0) return -1;
    const tg_node *n = &c->g->nodes[c->g->nnode - 1];
    for (int k = 0; k < n->nout; k++)
        if (def_out(c, k, n->out[k])) return -1;
    for (size_t k = (size_t)n->nout; k < N(c)->n_output; k++)
        if (*N(c)->output[k]) return tg_err("output %zu: the node makes %d", k, n->nout);
    return 0;
}

/* If: both branches take the union of what either reads (in[1..]), each its
 * own in that order, with unused inputs where it reads less. */
static int map_if(onnx_ctx *c, const onnx_op_map *m)
{
    const Onnx__GraphProto *bp[2] = {graph_attr(c, "then_branch"), graph_attr(c, "else_branch")};
    int cond = in_val(c, 0);
    if (!bp[0] || !bp[1] || cond < 0) return -1;
    tg_graph *br[2] = {NULL, NULL};
    onnx_scope sc[2] = {{0}};
    int rc = import_sub(c, bp[0], "then_branch", 0, NULL, NULL, &br[0], &sc[0]);
    if (!rc && import_sub(c, bp[1], "else_branch", 0, NULL, NULL, &br[1], &sc[1])) rc = -1, free(sc[0].cap);
    if (rc) return tg_graph_free(br[0]), -1;
    int nu = sc[0].ncap + sc[1].ncap, *in = malloc(sizeof(int) * (size_t)(nu + 1)), n = 1;
    int *order = malloc(sizeof(int) * (size_t)(nu + 1));
    if (!in || !order) rc = tg_err("out of memory");
    if (in) in[0] = cond;
    for (int b = 0; b < 2 && !rc; b++)          /* the union, in order */
        for (int k = 0; k < sc[b].ncap; k++) {
            int j = 1;
            while (j < n && in[j] != sc[b].cap[k]) j++;
            if (j == n) in[n++] = sc[b].cap[k];
        }
    for (int b = 0; b < 2 && !rc; b++) {
        for (int j = 1; j < n && !rc; j++) {
            int k = 0;
            while (k < sc[b].ncap && sc[b].cap[k] != in[j]) k++;
            if (k < sc[b].ncap) {
                order[j - 1] = br[b]->inputs[k];
                continue;
            }
            const tg_value *ov = &c->g->values[in[j]];
            char name[512];
            snprintf(name, sizeof name, "%s_unused", ov->name);
            if (tg_graph_find_value(br[b], name) >= 0) rc = tg_err("two values are named %s", name);
            else if ((order[j - 1] = tg_graph_add_input(br[b], name, ov->dtype, &ov->shape)) < 0) rc = -1;
        }
        if (!rc && n > 1) memcpy(br[b]->inputs, order, sizeof(int) * (size_t)(n - 1));
    }
    tg_attr a[2] = {tg_attr_graph("then", br[0]), tg_attr_graph("else", br[1])};
    if (!rc) rc = def_outs(c, onnx_add_control(c, TG_OP_IF, n, in, 2, a));
    for (int b = 0; b < 2; b++) tg_graph_free(br[b]), free(sc[b].cap);
    free(in);
    free(order);
    return rc;
}

/* Loop: max trip count and condition (both optional), N carried values; the
 * body's inputs after its own (iteration, condition, carried) are what it
 * reads of the graphs around: the node's invariant inputs. */
static int map_loop(onnx_ctx *c, const onnx_op_map *m)
{
    const Onnx__GraphProto *bp = graph_attr(c, "body");
    int nc = (int)N(c)->n_input - 2;
    if (!bp) return -1;
    if (nc < 0 || nc > 64) return tg_err("%zu inputs: expected M, cond and at most 64 carried values", N(c)->n_input);
    int in[2 + 64], *all = NULL;
    tg_dtype dt[2 + 64] = {TG_I64, TG_BOOL};
    tg_shape sh[2 + 64] = {{0}};
    in[0] = in_val_opt(c, 0);
    in[1] = in_val_opt(c, 1);
    if ((N(c)->n_input > 0 && *N(c)->input[0] && in[0] < 0) || (N(c)->n_input > 1 && *N(c)->input[1] && in[1] < 0))
        return -1;
    for (int k = 0; k < nc; k++) {
        if ((in[2 + k] = in_val(c, 2 + k)) < 0) return -1;
        dt[2 + k] = dtype_of(c, in[2 + k]);
        sh[2 + k] = shape_of(c, in[2 + k]);
    }
    tg_graph *body = NULL;
    onnx_scope sc;
    if (import_sub(c, bp, "body", 2 + nc, dt, sh, &body, &sc)) return -1;
    int rc = 0;
    if (!(all = malloc(sizeof(int) * (size_t)(2 + nc + sc.ncap)))) rc = tg_err("out of memory");
    else {
        memcpy(all, in, sizeof(int) * (size_t)(2 + nc));
        if (sc.ncap) /* sc.cap is NULL when the body captures nothing */
            memcpy(all + 2 + nc, sc.cap, sizeof(int) * (size_t)sc.ncap);
        tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", nc)};
        rc = def_outs(c, onnx_add_control(c, TG_OP_LOOP, 2 + nc + sc.ncap, all, 2, a));
    }
    tg_graph_free(body);
    free(sc.cap);
    free(all);
    return rc;
}

const onnx_op_map onnx_flow_ops[] = {
    {"Scan", map_scan, 0},
    {"If", map_if, 0},
    {"Loop", map_loop, 0},
};
const int onnx_flow_nops = (int)(sizeof onnx_flow_ops / sizeof onnx_flow_ops[0]);
