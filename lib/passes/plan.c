/* The execution plan (passes.h): fusion groups and the memory plan. */
#include "passes.h"

#include <stdlib.h>

#include "../error.h"

tg_plan *tg_plan_new(const tg_graph *g)
{
    tg_plan *p = calloc(1, sizeof *p);
    if (!p) {
        tg_err("out of memory");
        return NULL;
    }
    p->nnode = g->nnode;
    p->nvalue = g->nvalue;
    p->root = malloc((g->nnode + 1) * sizeof *p->root);
    p->kind = calloc(g->nnode + 1, sizeof *p->kind);
    if (!p->root || !p->kind) {
        tg_plan_free(p);
        tg_err("out of memory");
        return NULL;
    }
    for (int n = 0; n < g->nnode; n++)
        p->root[n] = n;
    return p;
}

void tg_plan_free(tg_plan *p)
{
    if (!p)
        return;
    free(p->root);
    free(p->kind);
    free(p->alias);
    free(p->slot);
    free(p->output);
    free(p->part);
    free(p->part_in);
    free(p);
}

bool tg_plan_interior(const tg_plan *p, int n)
{
    return p->root[n] != n;
}
