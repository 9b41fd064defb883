/* Options, names, and which layers a scheme quantizes. */
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../passes/passes.h"
#include "quant.h"

void tg_quant_opts_init(tg_quant_opts *o)
{
    memset(o, 0, sizeof *o);
    o->scheme = TG_QUANT_STATIC;
    o->observer = TG_OBS_MINMAX;
    o->percentile = 99.99;
    o->averaging = 0.01;
}

static const char *const scheme_names[] = {"static", "dynamic", "weight-int8", "weight-int4"};
static const char *const observer_names[] = {"minmax", "moving-average", "percentile",
                                             "entropy"};

const char *tg_quant_scheme_name(tg_quant_scheme s)
{
    return (unsigned)s < 4 ? scheme_names[s] : "?";
}

const char *tg_observer_name(tg_observer_kind k)
{
    return (unsigned)k < 4 ? observer_names[k] : "?";
}

int tg_quant_scheme_from_name(const char *name)
{
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, scheme_names[i]))
            return i;
    return -1;
}

int tg_observer_from_name(const char *name)
{
    if (!strcmp(name, "histogram"))
        return TG_OBS_ENTROPY;
    for (int i = 0; i < 4; i++)
        if (!strcmp(name, observer_names[i]))
            return i;
    return -1;
}

/* A layer with a constant float32 weight of the rank its op needs. A 2:4
 * sparse linear (tsparse) becomes qlinear_24 in the int8 schemes; weight-only
 * and quantize/dequantize pairs leave it in float. */
static bool quantizable(const tg_graph *g, const tg_node *n, const tg_quant_opts *o)
{
    bool s24 = n->op == TG_OP_LINEAR_24;
    const tg_value *x = tg_node_input(g, n, 0), *w = tg_node_input(g, n, 1);
    const tg_value *b = tg_node_input(g, n, tg_quant_bias_input(n));
    if (!x || !w || x->dtype != TG_F32 || w->dtype != TG_F32 || w->kind != TG_VALUE_CONST ||
        (b && b->dtype != TG_F32))
        return false;
    if (s24)
        return o->scheme < TG_QUANT_WEIGHT_INT8 && !o->qdq &&
               tg_node_input(g, n, 2)->kind == TG_VALUE_CONST;
    if (n->op == TG_OP_LINEAR) {
        int64_t k;
        /* weight-only kernels need K known when quantizing */
        return o->scheme < TG_QUANT_WEIGHT_INT8 ||
               tg_dim_is_const(x->shape.d[x->shape.rank - 1], &k);
    }
    return n->op == TG_OP_CONV && o->scheme < TG_QUANT_WEIGHT_INT8 &&
           !tg_node_int(n, "transposed", 0);
}

int tg_quant_bias_input(const tg_node *n)
{
    return n->op == TG_OP_LINEAR_24 ? 3 : 2;
}

/* Whether layer n's weight is named "e." something: tg_quant_prepare's batch
 * norm folding makes a new layer whose weights keep the old layer's name so. */
static bool weight_named(const tg_graph *g, const tg_node *n, const char *e)
{
    const tg_value *w = tg_node_input(g, n, 1);
    size_t len = strlen(e);
    return w && !strncmp(w->name, e, len) && w->name[len] == '.';
}

/* Whether e names a layer of g: a node, or a folded layer's weights. */
static bool names_layer(const tg_graph *g, const char *e)
{
    if (tg_graph_find_node(g, e) >= 0)
        return true;
    for (int i = 0; i < g->nnode; i++)
        if (g->nodes[i].nin > 1 && weight_named(g, &g->nodes[i], e))
            return true;
    return false;
}

/* An entry that names a layer means that layer (even when it is also an op
 * name, as texport's first linear node "linear" is); otherwise an op. */
static bool skipped(const tg_graph *g, const tg_node *n, const tg_quant_opts *o)
{
    for (int i = 0; i < o->nskip; i++)
        if (names_layer(g, o->skip[i]) ? !strcmp(o->skip[i], n->name) ||
                                             weight_named(g, n, o->skip[i])
                                       : !strcmp(o->skip[i], tg_op_name(n->op)))
            return true;
    return false;
}

/* The node whose first output is v, or -1. */
static int producer(const tg_graph *g, int v)
{
    for (int i = 0; i < g->nnode; i++)
        if (g->nodes[i].op != TG_OP_NONE && g->nodes[i].nout > 0 && g->nodes[i].out[0] == v)
            return i;
    return -1;
}

/* A relu, clamp or silu: chain.c fuses it into the conv before it. */
static bool is_bound(const tg_node *n)
{
    return (n->op == TG_OP_RELU || n->op == TG_OP_CLAMP || n->op == TG_OP_SILU) && n->nin == 1;
}

/* Whether value v, directly or through a relu, clamp or silu that alone reads it,
 * is read only as the input of convolutions in `conv` (chain.c's test, on
 * the float graph: where those will pass u8 on). */
static bool only_convs_read(const tg_graph *g, const bool *conv, int v)
{
    int readers = 0, last = -1;
    for (int k = 0; k < g->noutput; k++)
        if (g->outputs[k] == v)
            return false;
    for (int i = 0; i < g->nnode; i++)
        for (int k = 0; k < g->nodes[i].nin; k++)
            if (g->nodes[i].in[k] == v && g->nodes[i].op != TG_OP_NONE) {
                if (!conv[i] || k != 0)
                    last = i;
                readers++;
            }
    if (readers == 1 && last >= 0 && is_bound(&g->nodes[last]))
        return only_convs_read(g, conv, g->nodes[last].out[0]);
    return readers > 0 && last < 0;
}

/* A depthwise convolution that would take and give float: its int8 kernel is
 * bound by quantizing its input and costs more than the float one (one input
 * channel a group: few multiply-adds per byte), so it stays float. It takes
 * u8 when its input comes (through a relu, clamp or silu) from a chained conv, and
 * gives u8 when only convs read its result. */
static bool float_depthwise(const tg_graph *g, const bool *conv, int i)
{
    const tg_node *n = &g->nodes[i];
    const tg_value *w = tg_node_input(g, n, 1);
    int64_t cg;
    if (n->op != TG_OP_CONV || tg_node_int(n, "groups", 1) < 2 ||
        !tg_dim_is_const(w->shape.d[1], &cg) || cg != 1 || only_convs_read(g, conv, n->out[0]))
        return false;
    int p = producer(g, n->in[0]);
    if (p >= 0 && is_bound(&g->nodes[p]))
        p = producer(g, g->nodes[p].in[0]);
    return p < 0 || !conv[p] || !only_convs_read(g, conv, g->nodes[p].out[0]);
}

int tg_quant_layers(const tg_graph *g, const tg_quant_opts *o, int **nodes)
{
    for (int i = 0; i < o->nskip; i++)
        if (!names_layer(g, o->skip[i]) && tg_op_from_name(o->skip[i]) == TG_OP_NONE)
            return tg_err("--skip: '%s' is neither a node of the graph nor an op", o->skip[i]);
    *nodes = malloc(sizeof(int) * (size_t)(g->nnode + 1));
    bool *conv = calloc((size_t)g->nnode + 1, sizeof *conv);
    if (!*nodes || !conv) {
        free(conv);
        return tg_err("out of memory");
    }
    int count = 0;
    for (int i = 0; i < g->nnode; i++)
        if (quantizable(g, &g->nodes[i], o) && !skipped(g, &g->nodes[i], o)) {
            (*nodes)[count++] = i;
            conv[i] = g->nodes[i].op == TG_OP_CONV;
        }
    /* with chaining (tg_quant_rewrite), leave out the float-bound depthwise */
    if (o->scheme == TG_QUANT_STATIC && !o->act_int8 && !o->qdq && !o->no_chain) {
        int kept = 0;
        for (int k = 0; k < count; k++)
            if (!float_depthwise(g, conv, (*nodes)[k]))
                (*nodes)[kept++] = (*nodes)[k];
        count = kept;
    }
    free(conv);
    return count;
}

int tg_quant_prepare(tg_graph *g)
{
    int n = tg_pass_bn_fold(g);
    return n < 0 || tg_pass_dce(g) < 0 ? -1 : n;
}
