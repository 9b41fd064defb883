/* TLOG JSON lines read back (logfile.h): one record a line, each checked. */
#define _GNU_SOURCE     /* getline, asprintf */
#include "logfile.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

typedef int (*record_fn)(void *ctx, const cJSON *rec, const cJSON *fields);

static const cJSON *member(const cJSON *o, const char *k)
{
    return cJSON_GetObjectItemCaseSensitive(o, k);
}

static bool is_comp(const cJSON *rec, const char *comp)
{
    const cJSON *c = member(rec, "comp");
    return cJSON_IsString(c) && !strcmp(c->valuestring, comp);
}

/* Call fn on every record; blank lines are skipped. Errors name the line. */
static int each_record(FILE *f, record_fn fn, void *ctx)
{
    char *line = NULL;
    size_t cap = 0;
    long lineno = 0;
    int rc = 0;
    while (rc == 0 && getline(&line, &cap, f) >= 0) {
        lineno++;
        if (!line[strspn(line, " \t\r\n")])
            continue;
        cJSON *r = cJSON_Parse(line);
        const cJSON *fields = member(r, "fields");
        if (!cJSON_IsObject(r) || !cJSON_IsString(member(r, "comp")))
            rc = tg_err("line %ld: not a TLOG JSON record (TLOG_FORMAT=json writes them)",
                        lineno);
        else if (fields && !cJSON_IsObject(fields))
            rc = tg_err("line %ld: \"fields\" is not an object", lineno);
        else if (fn(ctx, r, fields) < 0)
            rc = tg_err("line %ld: %s", lineno, tg_errmsg());
        cJSON_Delete(r);
    }
    if (rc == 0 && ferror(f))
        rc = tg_err("read error: %s", strerror(errno));
    free(line);
    return rc;
}

/* ---- profiles -------------------------------------------------------------- */

typedef struct {
    tg_profile *p;
    int cap;
} prof_ctx;

/* A number member that must be finite and at least lo; def when absent. */
static int number(const cJSON *o, const char *k, double lo, double def, double *v)
{
    const cJSON *j = member(o, k);
    if (!j) {
        *v = def;
        return 0;
    }
    if (!cJSON_IsNumber(j) || !isfinite(j->valuedouble) || j->valuedouble < lo)
        return tg_err("\"%s\" is not a number of at least %g", k, lo);
    *v = j->valuedouble;
    return 0;
}

static char *string_or(const cJSON *o, const char *k, const char *def)
{
    const cJSON *j = member(o, k);
    return strdup(cJSON_IsString(j) ? j->valuestring : def);
}

static int add_event(void *ctx, const cJSON *rec, const cJSON *fields)
{
    prof_ctx *c = ctx;
    if (!is_comp(rec, "run") || !member(fields, "us"))
        return 0;
    if (!cJSON_IsString(member(fields, "node")))
        return tg_err("a timing without a \"node\" name");
    double end, us, run, pid;
    if (number(rec, "time", 0, NAN, &end) < 0 || number(fields, "us", 0, 0, &us) < 0 ||
        number(fields, "run", 0, 0, &run) < 0 || number(rec, "pid", 0, 0, &pid) < 0)
        return -1;
    if (isnan(end))
        return tg_err("a timing without a \"time\"");
    tg_profile *p = c->p;
    if (p->n == c->cap) {
        int cap = c->cap ? 2 * c->cap : 256;
        tg_prof_event *e = realloc(p->ev, (size_t)cap * sizeof *e);
        if (!e)
            return tg_err("out of memory");
        p->ev = e;
        c->cap = cap;
    }
    tg_prof_event *e = &p->ev[p->n];
    *e = (tg_prof_event){
        .node = string_or(fields, "node", ""), .op = string_or(fields, "op", "?"),
        .tool = string_or(rec, "tool", "?"), .start = end - us * 1e-6, .us = us,
        .run = run > 1e9 ? 1000000000 : (int)run, .pid = pid > 1e9 ? 0 : (int)pid,
    };
    p->n++;
    if (!e->node || !e->op || !e->tool)
        return tg_err("out of memory");
    return 0;
}

tg_profile *tg_profile_read(FILE *f)
{
    tg_profile *p = calloc(1, sizeof *p);
    if (!p) {
        tg_err("out of memory");
        return NULL;
    }
    prof_ctx c = {p, 0};
    if (each_record(f, add_event, &c) < 0) {
        tg_profile_free(p);
        return NULL;
    }
    return p;
}

void tg_profile_free(tg_profile *p)
{
    if (!p)
        return;
    for (int i = 0; i < p->n; i++) {
        free(p->ev[i].node);
        free(p->ev[i].op);
        free(p->ev[i].tool);
    }
    free(p->ev);
    free(p);
}

/* ---- fused groups ------------------------------------------------------------ */

typedef struct {
    const tg_graph *g;
    tg_dot_groups *gr;
} group_ctx;

static int add_group(void *ctx, const cJSON *rec, const cJSON *fields)
{
    group_ctx *c = ctx;
    const cJSON *id = member(fields, "group"), *nodes = member(fields, "nodes");
    if (!is_comp(rec, "fusion") || !id || !nodes)
        return 0;
    const cJSON *kind = member(fields, "kind");
    if (!cJSON_IsNumber(id) || !cJSON_IsArray(nodes))
        return tg_err("a fused group needs a number \"group\" and an array \"nodes\"");
    tg_dot_groups *gr = c->gr;
    char **label = realloc(gr->label, (size_t)(gr->ngroup + 1) * sizeof *label);
    if (!label)
        return tg_err("out of memory");
    gr->label = label;
    if (asprintf(&label[gr->ngroup], "group %g: %s", id->valuedouble,
                 cJSON_IsString(kind) ? kind->valuestring : "fused") < 0)
        return tg_err("out of memory");
    int k = gr->ngroup++;
    const cJSON *n;
    cJSON_ArrayForEach(n, nodes) {
        if (!cJSON_IsString(n))
            return tg_err("group %g: a node name that is not a string", id->valuedouble);
        int i = tg_graph_find_node(c->g, n->valuestring);
        if (i >= 0)
            gr->of[i] = k;
    }
    return 0;
}

int tg_log_read_groups(FILE *f, const tg_graph *g, tg_dot_groups *out, int *matched)
{
    *out = (tg_dot_groups){0};
    *matched = 0;
    if (!(out->of = malloc(((size_t)g->nnode + 1) * sizeof *out->of)))
        return tg_err("out of memory");
    for (int i = 0; i < g->nnode; i++)
        out->of[i] = -1;
    group_ctx c = {g, out};
    if (each_record(f, add_group, &c) < 0) {
        tg_dot_groups_free(out);
        return -1;
    }
    for (int i = 0; i < g->nnode; i++)
        *matched += out->of[i] >= 0;
    return 0;
}

void tg_dot_groups_free(tg_dot_groups *gr)
{
    for (int i = 0; i < gr->ngroup; i++)
        free(gr->label[i]);
    free(gr->label);
    free(gr->of);
    *gr = (tg_dot_groups){0};
}
