/* The pass pipeline tcompile runs for a target (lib/backend/backend.h), with
 * the graph logged after each pass (TLOG=passes: what changed; TLOG=graph: the
 * nodes, +graph: and a summary; TLOG=fusion: the fused groups; TLOG=codegen:
 * which target compiles each node, or why it refused one). */
#define _GNU_SOURCE
#include "passes.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "../backend/backend.h"
#include "../error.h"
#include "../log.h"
#include "../render.h"

static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}

/* Each fused group as a record tlog --dot --log draws as a cluster:
 * fields {"group":N,"kind":"epilogue","nodes":["fc1","act"]}. */
static void log_groups(const tg_graph *g, const tg_plan *p)
{
    static const char *const kinds[] = {
        [TG_GROUP_SINGLE] = "single", [TG_GROUP_EPILOGUE] = "epilogue", [TG_GROUP_LOOP] = "loop",
        [TG_GROUP_VIEW] = "view", [TG_GROUP_STRIDED] = "strided",
    };
    if (!tg_log_on(FUSION, TG_LOG_INFO))
        return;
    for (int r = 0, k = 0; r < g->nnode; r++) {
        if (p->root[r] != r || g->nodes[r].op == TG_OP_NONE)
            continue;
        cJSON *nodes = cJSON_CreateArray();
        char names[512] = "";
        for (int m = 0; m <= r; m++)
            if (p->root[m] == r) {
                cJSON_AddItemToArray(nodes, cJSON_CreateString(g->nodes[m].name));
                size_t n = strlen(names);
                snprintf(names + n, sizeof names - n, "%s%s", n ? ", " : "", g->nodes[m].name);
            }
        if (cJSON_GetArraySize(nodes) > 1) {
            const char *kind = p->kind[r] <= TG_GROUP_STRIDED ? kinds[p->kind[r]] : "?";
            cJSON *f = cJSON_CreateObject();
            cJSON_AddNumberToObject(f, "group", k);
            cJSON_AddStringToObject(f, "kind", kind);
            cJSON_AddItemToObject(f, "nodes", nodes);
            char *fs = cJSON_PrintUnformatted(f);
            tg_log_emit(TG_LOG_FUSION, TG_LOG_INFO, fs, "group %d (%s): %s", k++, kind, names);
            free(fs);
            cJSON_Delete(f);
        } else {
            cJSON_Delete(nodes);
        }
    }
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
    char stage[64];
    snprintf(stage, sizeof stage, "after %s", name);
    if (r > 0)
        tg_graph_log(g, stage);
    else                    /* the listing would repeat the one before */
        TG_LOG(GRAPH, TG_LOG_INFO, "%s: unchanged", stage);
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

static const struct { const char *name; plan_pass f; int level; } plan_passes[] = {
    {"fuse_act", tg_pass_fuse_act, 1},
    {"fuse_elementwise", tg_pass_fuse_elementwise, 1},
    {"fuse_views", tg_pass_fuse_views, 1},
    {"memplan", tg_pass_memplan, 0},
};

tg_plan *tg_plan_fuse(const tg_graph *g, const tg_group_rules *rules)
{
    tg_plan *p = tg_plan_new(g);
    if (!p)
        return NULL;
    p->rules = rules;
    for (size_t i = 0; i < sizeof plan_passes / sizeof plan_passes[0]; i++)
        if (plan_passes[i].f != tg_pass_memplan &&
            run_plan_pass(g, p, plan_passes[i].name, plan_passes[i].f)) {
            tg_plan_free(p);
            return NULL;
        }
    log_groups(g, p);
    return p;
}

/* Every node must be one the target compiles: the first it refuses is the error. */
/* Every node the target cannot compile, listed all at once (one line each). */
static int check_target(const tg_graph *g, const tg_backend *be)
{
    char *list = NULL, first[2 * TG_WHY_MAX + 256] = "";
    size_t len = 0;
    int nbad = 0;
    FILE *f = open_memstream(&list, &len);
    if (!f)
        return tg_err("out of memory");
    for (int n = 0; n < g->nnode; n++) {
        char why[TG_WHY_MAX] = "";
        const tg_node *nd = &g->nodes[n];
        bool ok = be->compiles_node ? be->compiles_node(be, g, n, why)
                                    : tg_backend_supports(be, g, n, why);
        if (ok) {
            TG_LOG(CODEGEN, TG_LOG_DEBUG, "%s (%s): %s", nd->name, tg_op_name(nd->op), be->name);
            continue;
        }
        TG_LOG(CODEGEN, TG_LOG_INFO, "%s (%s): %s refused: %s", nd->name, tg_op_name(nd->op),
               be->name, why);
        if (!nbad++)
            snprintf(first, sizeof first, "node '%s' (%s): target %s cannot compile it: %s",
                     nd->name, tg_op_name(nd->op), be->name, why);
        fprintf(f, "\n  node '%s' (%s): %s", nd->name, tg_op_name(nd->op), why);
    }
    fclose(f);
    int rc = 0;
    if (nbad == 1)
        rc = tg_err("%s", first);
    else if (nbad)
        rc = tg_err("target %s cannot compile %d nodes:%s", be->name, nbad, list);
    free(list);
    return rc;
}

/* g checked for target be, then its fusion and memory plan at level. */
static tg_plan *plan(const tg_graph *g, const tg_backend *be, int level)
{
    if (tg_graph_validate(g) || check_target(g, be))
        return NULL;
    tg_plan *p = tg_plan_new(g);
    if (!p)
        return NULL;
    p->rules = be->groups;
    p->level = level;
    for (size_t i = 0; i < sizeof plan_passes / sizeof plan_passes[0]; i++)
        if (plan_passes[i].level <= level &&
            run_plan_pass(g, p, plan_passes[i].name, plan_passes[i].f)) {
            tg_plan_free(p);
            return NULL;
        }
    log_groups(g, p);
    return p;
}

tg_plan *tg_passes_run(tg_graph *g, const tg_passes_opts *o)
{
    static const struct { const char *name; graph_pass f; int level; } graph_passes[] = {
        {"dce", tg_pass_dce, 0},
        {"fold", tg_pass_fold, 0},
        {"cse", tg_pass_cse, 1},
        {"fuse_attention", tg_pass_fuse_attention, 1},
        {"layout", tg_pass_layout, 1},
        {"bn_fold", tg_pass_bn_fold, 1},
        {"fuse_bias", tg_pass_fuse_bias, 1},
        {"bf16", tg_pass_bf16_weights, 0},     /* only for --dtype bf16 */
        {"lower", NULL, 0},     /* the target's own passes (its weight formats) */
        {"fold", tg_pass_fold, 1},
        {"unshare_views", tg_pass_unshare_views, 1},  /* only where views fuse */
        {"dce", tg_pass_dce, 0},
    };
    const tg_backend *be = o->target;
    if (tg_graph_check_static(g, "tcompile", true))
        return NULL;
    tg_graph_log(g, "import");
    for (size_t i = 0; i < sizeof graph_passes / sizeof graph_passes[0]; i++) {
        if (graph_passes[i].level > o->level ||
            (graph_passes[i].f == tg_pass_bf16_weights && o->dtype != TG_BF16) ||
            (graph_passes[i].f == tg_pass_unshare_views && !(be->groups && be->groups->view)))
            continue;
        if (!graph_passes[i].f) {
            for (int k = 0; k < be->nlower; k++)
                if ((!be->lower[k].channels_last || o->channels_last) &&
                    run_graph_pass(g, be->lower[k].name, be->lower[k].run))
                    return NULL;
        } else if (run_graph_pass(g, graph_passes[i].name, graph_passes[i].f)) {
            return NULL;
        }
    }
    return plan(g, be, o->level);
}

tg_plan *tg_passes_subgraph(tg_graph *g, const tg_backend *be, int level)
{
    return run_graph_pass(g, "dce", tg_pass_dce) ? NULL : plan(g, be, level);
}
