/* Int8 activations between quantized layers: a static qconv or qlinear
 * whose result (directly, or through a relu or clamp that alone reads it)
 * is read only by static qconvs or qlinears quantizing it with the same
 * parameters gives them u8 instead of float: its kernel requantizes its
 * exact integer sums in its epilogue (the clamp fused as bounds on the u8
 * values), and theirs skip quantizing their input. The numbers are within
 * one quantization step of quantizing the float output (the requantization
 * rounds once, from the sums; qgemm.h), and quantizing is monotone, so
 * clamping the u8 values is quantizing the clamped floats. A silu or an
 * exact gelu that alone reads the result is fused as a table (y_act;
 * EfficientNet's expand conv -> silu -> depthwise, a transformer's fc1 ->
 * gelu -> fc2): the kernel requantizes the pre-activation to u8 with its
 * calibrated range (p_scale, p_zero) and maps each byte to the activation
 * of its value quantized for the readers, which costs one quantization of
 * the pre-activation more (its range cut below where the activation is
 * within a quarter of the output's step of 0: both go to 0 as v -> -inf,
 * and the range's resolution goes where they are not flat). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../elem.h"             /* tgk_qparams_u8 */
#include "../error.h"
#include "../log.h"
#include "../ops/infer.h"
#include "../ops/qops.h"
#include "internal.h"

static bool is_output(const tg_graph *g, int v)
{
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == v)
            return true;
    return false;
}

/* A static qconv or qlinear reading u8-quantizable input: x_dtype u8. */
static bool static_u8(const tg_node *n, tg_qlayer *q)
{
    tg_dtype xdt;
    return (n->op == TG_OP_QCONV || n->op == TG_OP_QLINEAR) && !tg_qlayer_read(n, q) &&
           q->scheme == TG_QSCHEME_STATIC && !tg_attr_get_dtype(n, "x_dtype", TG_U8, &xdt) &&
           xdt == TG_U8;
}

/* One with no u8 output yet. */
static bool chainable(const tg_node *n, tg_qlayer *q)
{
    return static_u8(n, q) && !q->y_u8;
}

int tg_quant_table_act(const tg_node *n)
{
    if (n->op == TG_OP_SILU && n->nin == 1)
        return TGK_QACT_SILU;
    if (n->op != TG_OP_GELU || n->nin != 1)
        return 0;
    return strcmp(tg_node_string(n, "approximate", "none"), "tanh") ? TGK_QACT_GELU
                                                                     : TGK_QACT_GELU_TANH;
}

/* The bounds of a relu or clamp node, none for a table's activation (false
 * for any other). */
static bool act_bounds(const tg_node *n, double *lo, double *hi)
{
    *lo = -INFINITY, *hi = INFINITY;
    if (tg_quant_table_act(n))
        return true;
    if (n->op == TG_OP_RELU) {
        *lo = 0;
        return true;
    }
    return n->op == TG_OP_CLAMP && n->nin == 1 && !tg_attr_get_float(n, "min", -INFINITY, lo) &&
           !tg_attr_get_float(n, "max", INFINITY, hi);
}

/* Whether every one of the uses[v] reads of v is input 0 of a static qconv
 * or qlinear quantizing it alike; their x_scale and x_zero into *q. */
static bool read_by_qconvs(const tg_graph *g, const int *uses, int v, tg_qlayer *q)
{
    int seen = 0;
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v || n->op == TG_OP_NONE)
                continue;
            tg_qlayer r;
            if (k != 0 || !static_u8(n, &r) ||
                (seen && (r.x_scale != q->x_scale || r.x_zero_u8 != q->x_zero_u8)))
                return false;
            *q = r;
            seen++;
        }
    }
    return seen > 0 && seen == uses[v];
}

/* The u8 parameters of the pre-activation of activation act (TGK_QACT_*)
 * whose output is quantized with step y_scale, from its calibrated range
 * [lo, hi]; -1 when it was never finite. */
static int pre_params(const tg_calib *calib, const char *name, int act, float y_scale,
                      float *ps, int32_t *pz)
{
    float lo, hi;
    if (!calib || tg_calib_range_named(calib, name, &lo, &hi))
        return -1;
    /* past the minimum (silu's at -1.28, gelu's at -0.75), to where
     * |act(-t)| <= y_scale / 4 */
    double t = 1.5;
    while (t < 100 && -tgk_qact_value(act, -t) > y_scale / 4.0)
        t += 0.125;
    tgk_qparams_u8(lo > -t ? lo : (float)-t, hi, ps, pz);
    return 0;
}

/* Layer ni with a u8 output for readers quantizing as rq, through
 * activation act (TGK_QACT_*: its pre-activation quantized with ps and pz),
 * clamped to [lo, hi]: a new node in its place. Its output value, or -1. */
static int to_u8(tg_graph *g, int ni, const tg_qlayer *rq, int act, float ps, int32_t pz,
                 double lo, double hi)
{
    const tg_node *n = &g->nodes[ni];
    tg_attr attrs[40];
    int na = 0;
    if (n->nattr > 33)
        return tg_err("node '%s': too many attributes", n->name);
    for (int i = 0; i < n->nattr; i++)
        attrs[na++] = n->attr[i];
    attrs[na++] = tg_attr_float("y_scale", rq->x_scale);
    attrs[na++] = tg_attr_int("y_zero", rq->x_zero_u8);
    if (lo > -INFINITY)
        attrs[na++] = tg_attr_float("y_min", lo);
    if (hi < INFINITY)
        attrs[na++] = tg_attr_float("y_max", hi);
    if (act) {
        attrs[na++] = tg_attr_string("y_act", tg_qact_names[act]);
        attrs[na++] = tg_attr_float("p_scale", ps);
        attrs[na++] = tg_attr_int("p_zero", pz);
    }
    char name[512];
    snprintf(name, sizeof name, "%s8", n->name);
    int in[4];
    memcpy(in, n->in, sizeof(int) * (size_t)n->nin);
    return tg_graph_add_node(g, n->op, name, n->nin, in, na, attrs);
}

int tg_quant_chain(tg_graph *g, const tg_calib *calib)
{
    int done = 0, nnode = g->nnode;
    for (int i = 0; i < nnode; i++) {
        tg_qlayer q, rq;
        const tg_node *n = &g->nodes[i];
        if (!chainable(n, &q) || is_output(g, n->out[0]))
            continue;
        int *uses = tg_graph_use_counts(g);
        if (!uses)
            return -1;
        int y = n->out[0], act = -1, v = y;
        double lo = -INFINITY, hi = INFINITY;
        for (int k = 0; k < g->nnode && uses[y] == 1; k++) {
            const tg_node *a = &g->nodes[k];
            if (a->op != TG_OP_NONE && a->nin == 1 && a->in[0] == y) {
                if (act_bounds(a, &lo, &hi) && !is_output(g, a->out[0]))
                    act = k, v = a->out[0];
                break;
            }
        }
        bool ok = read_by_qconvs(g, uses, v, &rq);
        free(uses);
        int table = act >= 0 ? tg_quant_table_act(&g->nodes[act]) : 0;
        float ps = 1;
        int32_t pz = 0;
        if (!ok || (table && pre_params(calib, g->values[y].name, table, rq.x_scale, &ps, &pz)))
            continue;
        int nv = to_u8(g, i, &rq, table, ps, pz, act >= 0 ? lo : -INFINITY,
                       act >= 0 ? hi : INFINITY);
        if (nv < 0 || tg_graph_replace_node(g, i, nv, ".float"))
            return -1;
        const char *fused = act >= 0 ? tg_op_name(g->nodes[act].op) : NULL;
        if (act >= 0) {
            tg_graph_replace_uses(g, v, nv);
            tg_graph_kill_node(g, act);
        }
        TG_LOG(QUANT, TG_LOG_INFO, "%s: u8 output for the next layer%s%s", g->nodes[i].name,
               fused ? ", fused " : "", fused ? fused : "");
        done++;
    }
    if (done && (tg_graph_compact(g) || tg_graph_validate(g)))
        return -1;
    return done;
}
