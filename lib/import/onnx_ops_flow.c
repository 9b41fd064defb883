/* ONNX control flow. If, Loop and Scan import as control nodes (Scan-8 one
 * per batch entry) (ops.def: if, loop) whose subgraphs are imported into graphs of their own
 * (onnx.c's scopes): the outer values a branch or body reads become its
 * inputs, passed by the node. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../ops/control.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"

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

/* ONNX graph gp as subgraph *out: its own inputs first, then what it reads
 * of the graphs around and its constants (sc->cap: the outer values those
 * take; the caller frees it). Its own inputs are gp's nlead inputs, of
 * dtypes and shapes arg's (a sub_lead: a body's declarations may lack them),
 * or, with a lead function, what that adds, defining gp's input names (in
 * the subgraph, c->g by then). */
typedef struct {
    const tg_dtype *dt;
    const tg_shape *sh;
} sub_lead;
typedef int (*lead_fn)(onnx_ctx *c, const Onnx__GraphProto *gp, void *arg);

static int import_sub_with(onnx_ctx *c, const Onnx__GraphProto *gp, const char *what, int nlead,
                           lead_fn lead, void *arg, tg_graph **out, onnx_scope *sc)
{
    tg_graph *sub = tg_control_subgraph(c->g);
    if (!sub || onnx_scope_enter(c, sc, sub)) return tg_graph_free(sub), -1;
    int rc = (int)gp->n_input == nlead ? 0 : tg_err("%s has %zu inputs, expected %d", what, gp->n_input, nlead);
    const sub_lead *L = arg;
    if (!rc && lead) rc = lead(c, gp, arg);
    for (int i = 0; i < nlead && !rc && !lead; i++) {
        int v = body_name_ok(gp->input[i], "input", i) ? -1 : tg_graph_add_input(sub, gp->input[i]->name, L->dt[i], &L->sh[i]);
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

static int import_sub(onnx_ctx *c, const Onnx__GraphProto *gp, const char *what, int nlead,
                      const tg_dtype *dt, const tg_shape *sh, tg_graph **out, onnx_scope *sc)
{
    return import_sub_with(c, gp, what, nlead, NULL, &(sub_lead){dt, sh}, out, sc);
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
    if (!rc) rc = def_outs(c, onnx_add_control(c, TG_OP_IF, n, in, 2, a, NULL));
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
        rc = def_outs(c, onnx_add_control(c, TG_OP_LOOP, 2 + nc + sc.ncap, all, 2, a, NULL));
    }
    tg_graph_free(body);
    free(sc.cap);
    free(all);
    return rc;
}

/* A subgraph input named after the node: "<node>/<what>". */
static int sub_input(onnx_ctx *c, const char *what, tg_dtype dt, const tg_shape *sh)
{
    char name[512];
    const char *base = N(c)->name && *N(c)->name ? N(c)->name : N(c)->output[0];
    snprintf(name, sizeof name, "%s/%s", base, what);
    for (int k = 1; tg_graph_find_value(c->g, name) >= 0; k++) snprintf(name, sizeof name, "%s/%s_%d", base, what, k);
    return tg_graph_add_input(c->g, name, dt, sh);
}

/* A Scan's body as a loop body: iter, cond, the N states, the M scan inputs
 * whole, the last index when one is read in reverse; the body's scan input i
 * is their slice at iter (at last - iter in reverse) along its axis. */
typedef struct {
    int ns, ms;
    const int *st, *xs;             /* the node's values, of the graph around */
    tg_dtype dt[64];
    tg_shape sh[64];                /* theirs, states then scan inputs */
    const int64_t *iax, *idir;
    bool reverse;                   /* some scan input is read from the end */
} scan_body;

static int scan_inputs(onnx_ctx *c, const Onnx__GraphProto *gp, void *arg)
{
    const scan_body *b = arg;
    tg_shape s0 = {0};
    int it = sub_input(c, "iter", TG_I64, &s0), full[64], last = -1;
    int rc = it < 0 || sub_input(c, "cond", TG_BOOL, &s0) < 0 ? -1 : 0;
    for (int i = 0; i < b->ns && !rc; i++) {
        int v = body_name_ok(gp->input[i], "input", i) ? -1 : tg_graph_add_input(c->g, gp->input[i]->name, b->dt[i], &b->sh[i]);
        rc = v < 0 ? -1 : onnx_def_value(c, gp->input[i]->name, v);
    }
    for (int i = 0; i < b->ms && !rc; i++) {
        char what[32];
        snprintf(what, sizeof what, "scan_input_%d", i);
        rc = (full[i] = sub_input(c, what, b->dt[b->ns + i], &b->sh[b->ns + i])) < 0 ? -1 : 0;
    }
    if (!rc && b->reverse && (last = sub_input(c, "last", TG_I64, &s0)) < 0) rc = -1;
    for (int i = 0; i < b->ms && !rc; i++) {
        const Onnx__ValueInfoProto *in = gp->input[b->ns + i];
        int sin[2] = {full[i], b->idir[i] ? binary_on(c, TG_OP_SUB, "scan_index", last, it) : it};
        tg_attr a = tg_attr_int("axis", (int)b->iax[i]);
        int v = body_name_ok(in, "input", b->ns + i) || sin[1] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "scan_slice", 2, sin, 1, &a);
        rc = v < 0 ? -1 : onnx_def_value(c, in->name, v);
    }
    return rc;
}

/* Scan output y [t, ...] (steps stacked first) as ONNX wants it: reversed
 * (direction 1: at last - arange(t)) and its step axis moved to axis. */
static int scan_output(onnx_ctx *c, int y, tg_dim t, int last, int64_t dir, int64_t axis)
{
    if (dir) {
        tg_attr e = tg_attr_dims("end", 1, &t);
        int ar = onnx_add(c, TG_OP_ARANGE, "scan_steps", 0, NULL, 1, &e);
        int in[2] = {y, ar < 0 ? -1 : binary_on(c, TG_OP_SUB, "scan_reversed", last, ar)};
        tg_attr a = tg_attr_int("axis", 0);
        y = in[1] < 0 ? -1 : onnx_add(c, TG_OP_INDEX_SELECT, "scan_reverse", 2, in, 1, &a);
    }
    if (y < 0 || !axis) return y;
    int64_t perm[TG_MAX_RANK];
    int rank = shape_of(c, y).rank;
    for (int k = 0, j = 1; k < rank; k++) perm[k] = k == axis ? 0 : j++;
    return permute_to(c, y, rank, perm, "scan_axis");
}

/* The Scan of body bp over vals (N = ns state variables, carried, then M =
 * ms scan inputs, invariants the body slices along iax, from the end where
 * idir): their common length the trip count (read at run time when
 * symbolic; the loop declares it); outs: the N final states, then the K scan
 * outputs stacked (scan_output_axes and _directions, which Scan-8 lacks),
 * -1 for one the node does not name. */
static int scan_loop(onnx_ctx *c, const Onnx__GraphProto *bp, int ns, int ms, const int *vals,
                     const int64_t *iax, const int64_t *idir, int *outs)
{
    int nin = ns + ms, nbo = (int)bp->n_output, k = nbo - ns;
    if (ms < 1 || ns < 0 || (int)bp->n_input != nin || k < 0 || (int)N(c)->n_output > nbo)
        return tg_err("num_scan_inputs %d does not fit %d inputs, a body of %zu inputs and %d outputs", ms, nin,
                      bp->n_input, nbo);
    if (nin > 62 || nbo > 62) return tg_err("more than 62 inputs or outputs");
    scan_body b = {.ns = ns, .ms = ms, .st = vals, .xs = vals + ns, .iax = iax, .idir = idir};
    int in[2 + 64], ranks[64];
    int64_t oax[64], odir[64];
    for (int i = 0; i < nin; i++) {
        in[2 + i] = vals[i];
        b.dt[i] = dtype_of(c, vals[i]);
        b.sh[i] = shape_of(c, vals[i]);
    }
    tg_dim t = b.sh[ns].d[iax[0]];
    for (int i = 0; i < ms; i++) {
        b.reverse |= idir[i] != 0;
        if (!tg_dim_eq(b.sh[ns + i].d[iax[i]], t)) {
            char x[64], y[64];
            tg_dim_format(t, c->g->sym, x, sizeof x);
            tg_dim_format(b.sh[ns + i].d[iax[i]], c->g->sym, y, sizeof y);
            return tg_err("scan inputs have lengths %s and %s", x, y);
        }
    }
    int64_t tc;
    in[0] = tg_dim_is_const(t, &tc) ? scalar_const(c, "trips", TG_I64, (double)tc)
                                    : reshape_to(c, onnx_shape_data(c, vals[ns], iax[0], iax[0] + 1, false), 0, NULL, "trips");
    in[1] = -1;
    int last = b.reverse && in[0] >= 0 ? binary_on(c, TG_OP_SUB, "last", in[0], scalar_const(c, "one", TG_I64, 1)) : -1;
    if (in[0] < 0 || (b.reverse && last < 0)) return -1;
    tg_graph *body = NULL;
    onnx_scope sc;
    if (import_sub_with(c, bp, "body", nin, scan_inputs, &b, &body, &sc)) return -1;
    int n = 2 + nin, *all = NULL, rc = 0, *o = realloc(body->outputs, sizeof(int) * (size_t)(nbo + 1));
    if (!o || !(all = malloc(sizeof(int) * (size_t)(n + 1 + sc.ncap)))) rc = tg_err("out of memory");
    if (o) body->outputs = o;
    if (!rc) {      /* the body passes its condition through */
        memmove(o + 1, o, sizeof(int) * (size_t)nbo);
        o[0] = body->inputs[1];
        body->noutput++;
        memcpy(all, in, sizeof(int) * (size_t)n);
        if (b.reverse) all[n++] = last;
        if (sc.ncap) memcpy(all + n, sc.cap, sizeof(int) * (size_t)sc.ncap);
        for (int j = 0; j < k; j++) ranks[j] = body->values[body->outputs[1 + ns + j]].shape.rank;
        rc = scan_axes(c, "scan_output_axes", k, ranks, 1, oax);
    }
    const Onnx__AttributeProto *od = onnx_attr(N(c), "scan_output_directions");
    for (int j = 0; j < k; j++) odir[j] = od && (int)od->n_ints > j ? od->ints[j] : 0;
    bool rev_out = false;
    for (int j = 0; j < k; j++) rev_out |= odir[j] != 0;
    if (!rc && rev_out && last < 0) {
        last = binary_on(c, TG_OP_SUB, "last", in[0], scalar_const(c, "one", TG_I64, 1));
        rc = last < 0 ? -1 : 0;
    }
    tg_attr a[2] = {tg_attr_graph("body", body), tg_attr_int("carried", ns)};
    int y = rc ? -1 : onnx_add_control(c, TG_OP_LOOP, n + sc.ncap, all, 2, a, &t);
    const tg_node *nd = y < 0 ? NULL : &c->g->nodes[c->g->nnode - 1];
    for (int i = 0; nd && i < ns; i++) outs[i] = nd->out[i];
    for (int j = 0; nd && j < k && !rc; j++) {
        bool named = ns + j < (int)N(c)->n_output && *N(c)->output[ns + j];
        outs[ns + j] = named ? scan_output(c, nd->out[ns + j], t, last, odir[j], oax[j]) : -1;
        if (named && outs[ns + j] < 0) rc = -1;
    }
    if (y < 0) rc = -1;
    tg_graph_free(body);
    free(sc.cap);
    free(all);
    return rc;
}

/* Scan-8: sequence_lens (only absent: every sequence whole), then states
 * [B, ...] and scan inputs [B, T, ...], batch first; "directions" per scan
 * input. Each of the B batch entries (B known at import) is a Scan of its
 * own, as opset 9 writes it; the results are stacked back along the batch. */
static int scan8(onnx_ctx *c, const Onnx__GraphProto *bp)
{
    int nin = (int)N(c)->n_input - 1, ms = (int)onnx_attr_int(N(c), "num_scan_inputs", 0), ns = nin - ms;
    if (nin < 1 || in_opt(c, 0)) return tg_err("sequence_lens is not supported (only every sequence whole)");
    if (ms < 1 || ns < 0 || nin > 62 || (int)bp->n_output > 62) return tg_err("num_scan_inputs %d does not fit %d inputs", ms, nin);
    int vals[64], nout = (int)bp->n_output, outs[64], parts[64][64];
    int64_t iax[64] = {0}, idir[64] = {0}, nb = -1;
    const Onnx__AttributeProto *d = onnx_attr(N(c), "directions");
    for (int i = 0; i < nin; i++) {
        if ((vals[i] = in_val(c, 1 + i)) < 0) return -1;
        tg_shape s = shape_of(c, vals[i]);
        int64_t bi;
        if (s.rank < (i < ns ? 1 : 2) || !tg_dim_is_const(s.d[0], &bi) || (nb >= 0 && bi != nb))
            return tg_err("input %d: the batch dim must be known at import and one for every input", 1 + i);
        nb = bi;
    }
    for (int i = 0; i < ms; i++) idir[i] = d && (int)d->n_ints > i ? d->ints[i] : 0;
    if (nb > 64) return tg_err("a batch of %lld: at most 64", (long long)nb);
    for (int64_t bi = 0; bi < nb; bi++) {
        int one[64], at = scalar_const(c, "batch_index", TG_I64, (double)bi);
        tg_attr a = tg_attr_int("axis", 0);
        for (int i = 0; i < nin; i++) {
            int sin[2] = {vals[i], at};
            if (at < 0 || (one[i] = onnx_add(c, TG_OP_INDEX_SELECT, "batch_entry", 2, sin, 1, &a)) < 0) return -1;
        }
        if (scan_loop(c, bp, ns, ms, one, iax, idir, outs)) return -1;
        for (int j = 0; j < nout; j++) {
            if (outs[j] < 0 || j >= (int)N(c)->n_output || !*N(c)->output[j]) { parts[j][bi] = -1; continue; }
            tg_shape s = shape_of(c, outs[j]);
            tg_dim dd[TG_MAX_RANK];
            if (s.rank + 1 > TG_MAX_RANK) return tg_err("output %d: rank too large", j);
            dd[0] = tg_dim_const(1);
            for (int r = 0; r < s.rank; r++) dd[r + 1] = s.d[r];
            if ((parts[j][bi] = reshape_to(c, outs[j], s.rank + 1, dd, "batch_entry_out")) < 0) return -1;
        }
    }
    for (int j = 0; j < nout && j < (int)N(c)->n_output; j++) {
        if (!*N(c)->output[j]) continue;
        tg_attr a = tg_attr_int("axis", 0);
        int y = nb == 1 ? parts[j][0] : onnx_add(c, TG_OP_CONCAT, "batch", (int)nb, parts[j], 1, &a);
        if (def_out(c, j, y)) return -1;
    }
    return 0;
}

/* Scan (opset 9 on): N states, then M scan inputs along scan_input_axes. */
static int map_scan(onnx_ctx *c, const onnx_op_map *m)
{
    (void)m;
    const Onnx__GraphProto *bp = graph_attr(c, "body");
    if (!bp) return -1;
    if (c->opset < 9) return scan8(c, bp);
    int nin = (int)N(c)->n_input, ms = (int)onnx_attr_int(N(c), "num_scan_inputs", 0), ns = nin - ms;
    if (ms < 1 || ns < 0 || nin > 62) return tg_err("num_scan_inputs %d does not fit %d inputs", ms, nin);
    int vals[64], ranks[64], outs[64];
    int64_t iax[64], idir[64];
    const Onnx__AttributeProto *d = onnx_attr(N(c), "scan_input_directions");
    for (int i = 0; i < nin; i++) {
        if ((vals[i] = in_val(c, i)) < 0) return -1;
        if (i >= ns) ranks[i - ns] = shape_of(c, vals[i]).rank;
    }
    if (scan_axes(c, "scan_input_axes", ms, ranks, 0, iax)) return -1;
    for (int i = 0; i < ms; i++) idir[i] = d && (int)d->n_ints > i ? d->ints[i] : 0;
    if (scan_loop(c, bp, ns, ms, vals, iax, idir, outs)) return -1;
    for (int j = 0; j < (int)bp->n_output && j < (int)N(c)->n_output; j++)
        if (*N(c)->output[j] && def_out(c, j, outs[j])) return -1;
    return 0;
}

const onnx_op_map onnx_flow_ops[] = {
    {"Scan", map_scan, 0},
    {"If", map_if, 0},
    {"Loop", map_loop, 0},
};
const int onnx_flow_nops = (int)(sizeof onnx_flow_ops / sizeof onnx_flow_ops[0]);
