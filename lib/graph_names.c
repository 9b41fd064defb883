/* Name lookup for values and nodes: an open-addressing hash of ids per graph,
 * so importers and tg_graph_add_node stay linear on graphs of many thousand
 * nodes. graph.c reports every value and node it appends; anything else (a
 * count that changed behind our back, a hit whose name no longer matches)
 * rebuilds the index from the arrays. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "graph_internal.h"

typedef struct {
    int cap;                /* power of two, 0 when not built */
    int count;              /* entries of the array the table reflects */
    int *slot;              /* id + 1, 0 empty */
} name_table;

struct tg_graph_names {
    name_table values, nodes;
};

static uint32_t hash_name(const char *s)
{
    uint32_t h = 2166136261u;       /* FNV-1a */
    for (; *s; s++)
        h = (h ^ (unsigned char)*s) * 16777619u;
    return h;
}

static const char *value_name(const tg_graph *g, int i) { return g->values[i].name; }
static const char *node_name(const tg_graph *g, int i) { return g->nodes[i].name; }

typedef const char *(*name_of)(const tg_graph *, int);

static void table_insert(name_table *t, const char *name, int id)
{
    uint32_t mask = (uint32_t)t->cap - 1, i = hash_name(name) & mask;
    while (t->slot[i])
        i = (i + 1) & mask;
    t->slot[i] = id + 1;
}

/* Build for the first n entries; false when out of memory (lookups fall back to
 * a scan). */
static bool table_build(name_table *t, const tg_graph *g, name_of nm, int n)
{
    int cap = 64;
    while (cap < 2 * n + 2 && cap < (1 << 30))
        cap *= 2;
    int *slot = calloc((size_t)cap, sizeof(int));
    free(t->slot);
    t->slot = slot;
    t->cap = slot ? cap : 0;
    t->count = 0;
    if (!slot)
        return false;
    for (int i = 0; i < n; i++)
        if (nm(g, i))
            table_insert(t, nm(g, i), i);
    t->count = n;
    return true;
}

static int scan(const tg_graph *g, name_of nm, int n, const char *name)
{
    for (int i = 0; i < n; i++)
        if (nm(g, i) && strcmp(nm(g, i), name) == 0)
            return i;
    return -1;
}

static struct tg_graph_names *names_of(const tg_graph *g)
{
    /* lookups are logically const; the index is a cache */
    tg_graph *mg = (tg_graph *)g;
    if (!mg->names)
        mg->names = calloc(1, sizeof *mg->names);
    return mg->names;
}

static int lookup(const tg_graph *g, name_table *t, name_of nm, int n, const char *name)
{
    if (!name)
        return -1;
    if (!t || ((t->cap == 0 || t->count != n) && !table_build(t, g, nm, n)))
        return scan(g, nm, n, name);
    uint32_t mask = (uint32_t)t->cap - 1, i = hash_name(name) & mask;
    bool stale = false;
    for (; t->slot[i]; i = (i + 1) & mask) {
        int id = t->slot[i] - 1;
        if (id >= n || !nm(g, id)) {
            stale = true;
            continue;
        }
        if (strcmp(nm(g, id), name) == 0)
            return id;
    }
    if (stale && table_build(t, g, nm, n))
        return lookup(g, t, nm, n, name);
    return -1;
}

int tg_graph_find_value(const tg_graph *g, const char *name)
{
    struct tg_graph_names *x = names_of(g);
    return lookup(g, x ? &x->values : NULL, value_name, g->nvalue, name);
}

int tg_graph_find_node(const tg_graph *g, const char *name)
{
    struct tg_graph_names *x = names_of(g);
    return lookup(g, x ? &x->nodes : NULL, node_name, g->nnode, name);
}

/* Entry id was just appended: add it when the table is otherwise current. */
static void appended(const tg_graph *g, name_table *t, name_of nm, int id)
{
    if (t->cap == 0 || t->count != id)
        return;                     /* out of date: the next lookup rebuilds */
    if (2 * (id + 1) + 2 > t->cap) {
        table_build(t, g, nm, id + 1);
        return;
    }
    if (nm(g, id))
        table_insert(t, nm(g, id), id);
    t->count = id + 1;
}

void tg_graph_names_value_added(tg_graph *g, int v)
{
    if (g->names)
        appended(g, &g->names->values, value_name, v);
}

void tg_graph_names_node_added(tg_graph *g, int n)
{
    if (g->names)
        appended(g, &g->names->nodes, node_name, n);
}

void tg_graph_names_drop(tg_graph *g)
{
    if (!g->names)
        return;
    free(g->names->values.slot);
    free(g->names->nodes.slot);
    free(g->names);
    g->names = NULL;
}

int tg_graph_rename_value(tg_graph *g, int v, const char *name)
{
    if (v < 0 || v >= g->nvalue)
        return tg_err("rename: value %d does not exist", v);
    if (!name || !*name)
        return tg_err("rename: empty name for value '%s'", g->values[v].name);
    int other = tg_graph_find_value(g, name);
    if (other == v)
        return 0;
    if (other >= 0)
        return tg_err("rename: value '%s' already exists", name);
    char *copy = strdup(name);
    if (!copy)
        return tg_err("out of memory");
    free(g->values[v].name);
    g->values[v].name = copy;
    tg_graph_names_drop(g);
    return 0;
}
