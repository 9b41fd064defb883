/* ONNX control flow that texport unrolls at import: Scan (opset 9 on) over a
 * sequence length known at import. Its body's nodes are mapped once per step
 * into the graph being built, its inputs bound to that step's state and
 * slices (ONNX keeps subgraph names apart from the outer graph's, so one
 * namespace serves); what the body computes is the outer graph's nodes. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
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

const onnx_op_map onnx_flow_ops[] = {
    {"Scan", map_scan, 0},
};
const int onnx_flow_nops = (int)(sizeof onnx_flow_ops / sizeof onnx_flow_ops[0]);
