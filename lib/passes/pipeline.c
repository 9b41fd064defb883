/* The pass pipeline tcompile runs, with the graph logged after each pass
 * (TLOG=passes: what changed; TLOG=graph: a summary, +graph: every node). */
#define _GNU_SOURCE
#include "passes.h"

#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "../error.h"
#include "../log.h"
#include "../render.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

static void log_graph(const tg_graph *g, const char *after)
{
    if (!tg_log_on(GRAPH, TG_LOG_INFO))
        return;
    char *text = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&text, &n);
    if (!f)
        return;
    tg_graph_summary(g, f);
    if (tg_log_on(GRAPH, TG_LOG_DEBUG))
        for (int i = 0; i < g->nnode; i++) {
            const tg_node *nd = &g->nodes[i];
            char shape[256];
            const tg_value *y = &g->values[nd->out[0]];
            tg_shape_format(&y->shape, g->sym, shape, sizeof shape);
            fprintf(f, "  %s = %s(", y->name, tg_op_name(nd->op));
            for (int k = 0; k < nd->nin; k++)
                fprintf(f, "%s%s", k ? ", " : "", nd->in[k] >= 0 ? g->values[nd->in[k]].name : "-");
            fprintf(f, ") : %s%s\n", tg_dtype_name(y->dtype), shape);
        }
    fclose(f);
    TG_LOG(GRAPH, TG_LOG_INFO, "after %s:\n%s", after, text);
    free(text);
}

typedef int (*graph_pass)(tg_graph *g);
typedef int (*plan_pass)(const tg_graph *g, tg_plan *p);

static int run_graph_pass(tg_graph *g, const char *name, graph_pass f)
{
    int before = g->nnode;
    double t = now();
    int r = f(g);
    if (r < 0)
        return tg_err("pass %s: %s", name, tg_errmsg());
    TG_LOG(PASSES, TG_LOG_INFO, "%s: %d changes, %d -> %d nodes (%.1f ms)", name, r, before,
           g->nnode, (now() - t) * 1e3);
    log_graph(g, name);
    return 0;
}

static int run_plan_pass(const tg_graph *g, tg_plan *p, const char *name, plan_pass f)
{
    double t = now();
    int r = f(g, p);
    if (r < 0)
        return tg_err("pass %s: %s", name, tg_errmsg());
    TG_LOG(PASSES, TG_LOG_INFO, "%s: %d (%.1f ms)", name, r, (now() - t) * 1e3);
    return 0;
}

tg_plan *tg_passes_run(tg_graph *g, const tg_passes_opts *o)
{
    static const struct { const char *name; graph_pass f; int level; } graph_passes[] = {
        {"dce", tg_pass_dce, 0},
        {"fold", tg_pass_fold, 0},
        {"cse", tg_pass_cse, 1},
        {"layout", tg_pass_layout, 1},
        {"bn_fold", tg_pass_bn_fold, 1},
        {"fuse_bias", tg_pass_fuse_bias, 1},
        {"prepack", tg_pass_prepack, 0},
        {"fold", tg_pass_fold, 1},
        {"dce", tg_pass_dce, 0},
    };
    static const struct { const char *name; plan_pass f; int level; } plan_passes[] = {
        {"fuse_act", tg_pass_fuse_act, 1},
        {"fuse_elementwise", tg_pass_fuse_elementwise, 1},
        {"memplan", tg_pass_memplan, 0},
    };
    int level = o ? o->level : 1;
    log_graph(g, "import");
    for (size_t i = 0; i < sizeof graph_passes / sizeof graph_passes[0]; i++)
        if (graph_passes[i].level <= level &&
            run_graph_pass(g, graph_passes[i].name, graph_passes[i].f))
            return NULL;
    if (tg_graph_validate(g))
        return NULL;
    tg_plan *p = tg_plan_new(g);
    if (!p)
        return NULL;
    for (size_t i = 0; i < sizeof plan_passes / sizeof plan_passes[0]; i++)
        if (plan_passes[i].level <= level &&
            run_plan_pass(g, p, plan_passes[i].name, plan_passes[i].f)) {
            tg_plan_free(p);
            return NULL;
        }
    return p;
}
