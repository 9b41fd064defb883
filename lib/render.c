/* Summary, Graphviz dot and diff of graphs (render.h). */
#define _GNU_SOURCE     /* open_memstream */
#include "render.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"

#define TEXT 256            /* enough for a formatted shape or a number */

/* "1,234,567" */
static const char *grouped(int64_t v, char *buf)
{
    char digits[32];
    int n = snprintf(digits, sizeof digits, "%lld", (long long)(v < 0 ? -v : v)), o = 0;
    if (v < 0)
        buf[o++] = '-';
    for (int i = 0; i < n; i++) {
        if (i && (n - i) % 3 == 0)
            buf[o++] = ',';
        buf[o++] = digits[i];
    }
    buf[o] = 0;
    return buf;
}

/* "f32[s0, 784]" */
static const char *type_text(const tg_graph *g, const tg_value *v, char *buf)
{
    int n = snprintf(buf, TEXT, "%s", tg_dtype_name(v->dtype));
    tg_shape_format(&v->shape, g->sym, buf + n, TEXT - n);
    return buf;
}

static int64_t const_numel(const tg_value *v)
{
    size_t es = tg_dtype_size(v->dtype);
    return es ? (int64_t)(v->nbytes / es) : 0;
}

static const char *plural(int n) { return n == 1 ? "" : "s"; }

/* ---- summary -------------------------------------------------------------- */

typedef struct {
    int op, count;
} op_count;

static int by_count(const void *pa, const void *pb)
{
    const op_count *a = pa, *b = pb;
    if (a->count != b->count)
        return b->count - a->count;
    return strcmp(tg_op_name(a->op), tg_op_name(b->op));
}

/* Live nodes per op, most frequent first; returns how many kinds. */
static int count_ops(const tg_graph *g, op_count *oc)
{
    int counts[TG_OP_COUNT] = {0}, n = 0;
    for (int i = 0; i < g->nnode; i++)
        if (g->nodes[i].op > TG_OP_NONE && g->nodes[i].op < TG_OP_COUNT)
            counts[g->nodes[i].op]++;
    for (int op = 1; op < TG_OP_COUNT; op++)
        if (counts[op])
            oc[n++] = (op_count){op, counts[op]};
    qsort(oc, n, sizeof *oc, by_count);
    return n;
}

static void list_values(const tg_graph *g, FILE *f, const char *title, int n, const int *ids)
{
    char t[TEXT];
    fprintf(f, "%s:\n", title);
    for (int i = 0; i < n; i++) {
        const tg_value *v = &g->values[ids[i]];
        fprintf(f, "  %-24s %s\n", v->name, type_text(g, v, t));
    }
}

void tg_graph_summary(const tg_graph *g, FILE *f)
{
    char a[32], b[32];
    int nconst = 0, nlive = 0;
    for (int i = 0; i < g->nvalue; i++)
        nconst += g->values[i].kind == TG_VALUE_CONST;
    for (int i = 0; i < g->nnode; i++)
        nlive += g->nodes[i].op != TG_OP_NONE;
    fprintf(f, "graph: %d node%s, %d input%s, %d output%s, %d constant%s, %d symbol%s\n",
            nlive, plural(nlive), g->ninput, plural(g->ninput), g->noutput, plural(g->noutput),
            nconst, plural(nconst), g->nsym, plural(g->nsym));
    if (g->nsym) {
        fprintf(f, "symbols:\n");
        for (int i = 0; i < g->nsym; i++)
            fprintf(f, "  %-24s %lld..%lld\n", g->sym[i].name, (long long)g->sym[i].min,
                    (long long)g->sym[i].max);
    }
    list_values(g, f, "inputs", g->ninput, g->inputs);
    list_values(g, f, "outputs", g->noutput, g->outputs);

    op_count oc[TG_OP_COUNT];
    int nk = count_ops(g, oc);
    fprintf(f, "ops: %d kind%s\n", nk, plural(nk));
    for (int i = 0; i < nk; i++)
        fprintf(f, "  %-24s %d\n", tg_op_name(oc[i].op), oc[i].count);

    int64_t elems[TG_DTYPE_COUNT] = {0}, bytes[TG_DTYPE_COUNT] = {0}, te = 0, tb = 0;
    for (int i = 0; i < g->nvalue; i++) {
        const tg_value *v = &g->values[i];
        if (v->kind != TG_VALUE_CONST || v->dtype <= 0 || v->dtype >= TG_DTYPE_COUNT)
            continue;
        elems[v->dtype] += const_numel(v);
        bytes[v->dtype] += v->nbytes;
        te += const_numel(v);
        tb += v->nbytes;
    }
    fprintf(f, "parameters: %s elements, %s bytes", grouped(te, a), grouped(tb, b));
    if (tb >= 1024)
        fprintf(f, " (%.1f %s)", tb >= 1 << 20 ? tb / 1048576.0 : tb / 1024.0,
                tb >= 1 << 20 ? "MiB" : "KiB");
    fputc('\n', f);
    for (int t = 1; t < TG_DTYPE_COUNT; t++)
        if (bytes[t] || elems[t])
            fprintf(f, "  %-24s %s elements, %s bytes\n", tg_dtype_name(t), grouped(elems[t], a),
                    grouped(bytes[t], b));
}

/* ---- listing --------------------------------------------------------------- */

static void list_names(const tg_graph *g, FILE *f, int n, const int *ids)
{
    for (int i = 0; i < n; i++)
        fprintf(f, "%s%s", i ? ", " : "", ids[i] >= 0 ? g->values[ids[i]].name : "-");
}

void tg_graph_list(const tg_graph *g, FILE *f)
{
    char t[TEXT];
    fputs("inputs:", f);
    for (int i = 0; i < g->ninput; i++)
        fprintf(f, "%s %s %s", i ? "," : "", g->values[g->inputs[i]].name,
                type_text(g, &g->values[g->inputs[i]], t));
    fputc('\n', f);
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        if (n->op == TG_OP_NONE)
            continue;
        fputs("  ", f);
        list_names(g, f, n->nout, n->out);
        fprintf(f, " = %s(", tg_op_name(n->op));
        list_names(g, f, n->nin, n->in);
        fputs(") :", f);
        for (int k = 0; k < n->nout; k++)
            fprintf(f, "%s %s", k ? "," : "", type_text(g, &g->values[n->out[k]], t));
        fputc('\n', f);
    }
    fputs("outputs: ", f);
    list_names(g, f, g->noutput, g->outputs);
    fputc('\n', f);
}

void tg_graph_log(const tg_graph *g, const char *stage)
{
    if (!tg_log_on(GRAPH, TG_LOG_INFO))
        return;
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    if (!f)
        return;
    tg_graph_list(g, f);
    if (tg_log_on(GRAPH, TG_LOG_DEBUG))
        tg_graph_summary(g, f);
    if (fclose(f) != 0) {
        free(text);
        return;
    }
    if (len && text[len - 1] == '\n')
        text[--len] = 0;
    int nlive = 0;
    for (int i = 0; i < g->nnode; i++)
        nlive += g->nodes[i].op != TG_OP_NONE;
    /* the stage as a field too, so tlog can find the graph at each stage */
    cJSON *fields = cJSON_CreateObject();
    cJSON_AddStringToObject(fields, "stage", stage);
    cJSON_AddNumberToObject(fields, "nodes", nlive);
    char *fs = cJSON_PrintUnformatted(fields);
    tg_log_emit(TG_LOG_GRAPH, TG_LOG_INFO, fs, "%s: %d node%s\n%s", stage, nlive, plural(nlive),
                text);
    free(fs);
    cJSON_Delete(fields);
    free(text);
}

void tg_graph_log_mapped(const tg_graph *g, int first, const char *src_op, const char *name)
{
    if (!tg_log_on(IMPORT, TG_LOG_INFO))   /* neither level is on */
        return;
    int n = first >= 0 && first <= g->nnode ? g->nnode - first : 0;
    tg_log_level lvl = n > 1 ? TG_LOG_INFO : TG_LOG_DEBUG;   /* decompositions stand out */
    if (!tg_log_on(IMPORT, lvl))
        return;
    char ops[512] = "";
    cJSON *f = cJSON_CreateObject(), *list = cJSON_CreateArray();
    cJSON_AddStringToObject(f, "source_op", src_op);
    cJSON_AddStringToObject(f, "node", name ? name : "");
    for (int i = first; i < g->nnode; i++) {
        const char *op = tg_op_name(g->nodes[i].op);
        size_t len = strlen(ops);
        snprintf(ops + len, sizeof ops - len, "%s%s", len ? ", " : "", op);
        cJSON_AddItemToArray(list, cJSON_CreateString(op));
    }
    cJSON_AddItemToObject(f, "ops", list);
    char *fs = cJSON_PrintUnformatted(f);
    tg_log_emit(TG_LOG_IMPORT, lvl, fs, "%s%s (%s) -> %s", n > 1 ? "decomposed " : "",
                name ? name : "?", src_op, n ? ops : "no node");
    free(fs);
    cJSON_Delete(f);
}

/* ---- dot ------------------------------------------------------------------ */

/* A string as the inside of a dot "..." label. */
static void dot_str(FILE *f, const char *s)
{
    for (; s && *s; s++) {
        if (*s == '"' || *s == '\\')
            fputc('\\', f);
        if (*s == '\n')
            fputs("\\n", f);
        else
            fputc(*s, f);
    }
}

#define DOT_TINY 4          /* constants with at most this many elements show them */

static void dot_const(const tg_graph *g, FILE *f, int id)
{
    const tg_value *v = &g->values[id];
    char t[TEXT], a[32];
    fprintf(f, "  v%d [label=\"", id);
    dot_str(f, v->name);
    fprintf(f, "\\n%s\\n", type_text(g, v, t));
    int64_t n = const_numel(v);
    if (n <= DOT_TINY && v->data) {
        fputs("=", f);
        for (int64_t i = 0; i < n; i++)
            fprintf(f, " %g", tg_load_f64(v->dtype, v->data, i));
    } else {
        fprintf(f, "%s elements", grouped(n, a));
    }
    fputs("\", shape=note, fillcolor=\"#eeeeee\"];\n", f);
}

/* The dot node a value comes from. */
static void dot_src(const tg_graph *g, FILE *f, int v)
{
    const tg_value *val = &g->values[v];
    if (val->kind == TG_VALUE_NODE && val->producer >= 0)
        fprintf(f, "n%d", val->producer);
    else
        fprintf(f, "v%d", v);
}

/* One node's box: op, name (unless the same), each output's dtype and shape. */
static void dot_node(const tg_graph *g, FILE *f, int i, const char *indent)
{
    const tg_node *n = &g->nodes[i];
    char t[TEXT];
    fprintf(f, "%sn%d [label=\"%s", indent, i, tg_op_name(n->op));
    if (strcmp(n->name, tg_op_name(n->op))) {   /* "relu" named "relu" once */
        fputs("\\n", f);
        dot_str(f, n->name);
    }
    for (int k = 0; k < n->nout; k++) {
        fputs("\\n", f);
        dot_str(f, type_text(g, &g->values[n->out[k]], t));
    }
    fputs("\"];\n", f);
}

/* Each group's nodes inside a cluster; returns which nodes it drew. */
static void dot_clusters(const tg_graph *g, const tg_dot_groups *gr, FILE *f, bool *drawn)
{
    for (int c = 0; c < gr->ngroup; c++) {
        int members = 0;
        for (int i = 0; i < g->nnode; i++)
            members += gr->of[i] == c && g->nodes[i].op != TG_OP_NONE;
        if (!members)
            continue;
        fprintf(f, "  subgraph cluster_%d {\n    label=\"", c);
        dot_str(f, gr->label[c]);
        fputs("\";\n    style=\"rounded,filled\";\n    fillcolor=\"#fff4d6\";\n"
              "    color=\"#d9a400\";\n", f);
        for (int i = 0; i < g->nnode; i++)
            if (gr->of[i] == c && g->nodes[i].op != TG_OP_NONE) {
                dot_node(g, f, i, "    ");
                drawn[i] = true;
            }
        fputs("  }\n", f);
    }
}

void tg_graph_dot(const tg_graph *g, FILE *f)
{
    tg_graph_dot_groups(g, NULL, f);
}

void tg_graph_dot_groups(const tg_graph *g, const tg_dot_groups *groups, FILE *f)
{
    char t[TEXT];
    /* out of memory: the picture without its clusters */
    bool *drawn = groups ? calloc((size_t)g->nnode + 1, sizeof *drawn) : NULL;
    fputs("digraph tgraph {\n"
          "  graph [rankdir=TB, fontname=\"Helvetica\"];\n"
          "  node [shape=box, style=\"rounded,filled\", fillcolor=\"#ffffff\", "
          "fontname=\"Helvetica\", fontsize=10];\n"
          "  edge [color=\"#555555\"];\n", f);
    for (int i = 0; i < g->ninput; i++) {
        const tg_value *v = &g->values[g->inputs[i]];
        fprintf(f, "  v%d [label=\"input ", g->inputs[i]);
        dot_str(f, v->name);
        fprintf(f, "\\n%s\", shape=ellipse, fillcolor=\"#cfe8ff\"];\n", type_text(g, v, t));
    }
    for (int i = 0; i < g->nvalue; i++)
        if (g->values[i].kind == TG_VALUE_CONST)
            dot_const(g, f, i);
    if (drawn)
        dot_clusters(g, groups, f, drawn);
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        if (n->op == TG_OP_NONE)
            continue;
        if (!drawn || !drawn[i])
            dot_node(g, f, i, "  ");
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] < 0)
                continue;
            fputs("  ", f);
            dot_src(g, f, n->in[k]);
            fprintf(f, " -> n%d;\n", i);
        }
    }
    for (int i = 0; i < g->noutput; i++) {
        const tg_value *v = &g->values[g->outputs[i]];
        fprintf(f, "  o%d [label=\"output %d\\n", i, i);
        dot_str(f, v->name);
        fprintf(f, "\\n%s\", shape=ellipse, fillcolor=\"#d5f5d5\"];\n  ", type_text(g, v, t));
        dot_src(g, f, g->outputs[i]);
        fprintf(f, " -> o%d;\n", i);
    }
    fputs("}\n", f);
    free(drawn);
}

/* ---- diff ----------------------------------------------------------------- */

/* One difference: printed unless f is NULL; counts 1. */
static int note(FILE *f, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
static int note(FILE *f, const char *fmt, ...)
{
    if (f) {
        va_list ap;
        va_start(ap, fmt);
        vfprintf(f, fmt, ap);
        va_end(ap);
    }
    return 1;
}

static int diff_symbols(const tg_graph *a, const tg_graph *b, FILE *f)
{
    int nd = 0;
    for (int i = 0; i < a->nsym; i++) {
        int j = tg_graph_find_symbol(b, a->sym[i].name);
        if (j < 0) {
            nd += note(f, "symbol %s: removed\n", a->sym[i].name);
        } else if (a->sym[i].min != b->sym[j].min || a->sym[i].max != b->sym[j].max) {
            nd += note(f, "symbol %s: %lld..%lld -> %lld..%lld\n", a->sym[i].name,
                    (long long)a->sym[i].min, (long long)a->sym[i].max,
                    (long long)b->sym[j].min, (long long)b->sym[j].max);
        }
    }
    for (int j = 0; j < b->nsym; j++)
        if (tg_graph_find_symbol(a, b->sym[j].name) < 0) {
            nd += note(f, "symbol %s: added (%lld..%lld)\n", b->sym[j].name,
                    (long long)b->sym[j].min, (long long)b->sym[j].max);
        }
    return nd;
}

/* Graph inputs or outputs, by position. */
static int diff_ports(const tg_graph *a, int na, const int *ia, const tg_graph *b, int nb,
                      const int *ib, const char *what, FILE *f)
{
    int nd = 0;
    char ta[TEXT], tb[TEXT];
    for (int i = 0; i < na || i < nb; i++) {
        const tg_value *va = i < na ? &a->values[ia[i]] : NULL;
        const tg_value *vb = i < nb ? &b->values[ib[i]] : NULL;
        if (!vb)
            nd += note(f, "%s %d %s: removed\n", what, i, va->name);
        else if (!va)
            nd += note(f, "%s %d %s: added (%s)\n", what, i, vb->name, type_text(b, vb, tb));
        else if (strcmp(type_text(a, va, ta), type_text(b, vb, tb)) || strcmp(va->name, vb->name))
            nd += note(f, "%s %d: %s %s -> %s %s\n", what, i, va->name, ta, vb->name, tb);
    }
    return nd;
}

static int diff_ops(const tg_graph *a, const tg_graph *b, FILE *f)
{
    int ca[TG_OP_COUNT] = {0}, cb[TG_OP_COUNT] = {0}, nd = 0;
    for (int i = 0; i < a->nnode; i++)
        ca[a->nodes[i].op]++;
    for (int i = 0; i < b->nnode; i++)
        cb[b->nodes[i].op]++;
    for (int op = 1; op < TG_OP_COUNT; op++)
        if (ca[op] != cb[op]) {
            nd += note(f, "op %s: %d -> %d (%+d)\n", tg_op_name(op), ca[op], cb[op], cb[op] - ca[op]);
        }
    return nd;
}

/* Constants' data: largest absolute difference and how many elements differ. */
static int diff_data(const tg_value *va, const tg_value *vb, FILE *f)
{
    if (va->nbytes == vb->nbytes && (!va->nbytes || !memcmp(va->data, vb->data, va->nbytes)))
        return 0;
    int64_t n = const_numel(va), differ = 0;
    double maxd = 0;
    for (int64_t i = 0; i < n; i++) {
        double x = tg_load_f64(va->dtype, va->data, i), y = tg_load_f64(vb->dtype, vb->data, i);
        if (x == y || (isnan(x) && isnan(y)))
            continue;
        differ++;
        double d = fabs(x - y);
        if (!(d <= maxd))
            maxd = d;       /* NaN against a number counts as an infinite difference */
    }
    char a[32], b[32];
    return note(f, "const %s: data changed, %s of %s elements, max abs difference %g\n",
                va->name, grouped(differ, a), grouped(n, b), isnan(maxd) ? INFINITY : maxd);
}

static const char *const kind_name[] = {
    [TG_VALUE_NODE] = "value", [TG_VALUE_INPUT] = "input", [TG_VALUE_CONST] = "const",
};

/* Values matched by name: constants added or removed; dtype, shape or data changed. */
static int diff_values(const tg_graph *a, const tg_graph *b, FILE *f)
{
    int nd = 0;
    char ta[TEXT], tb[TEXT];
    for (int i = 0; i < a->nvalue; i++) {
        const tg_value *va = &a->values[i];
        int j = tg_graph_find_value(b, va->name);
        if (j < 0) {
            if (va->kind == TG_VALUE_CONST) {
                nd += note(f, "const %s: removed (%s)\n", va->name, type_text(a, va, ta));
            }
            continue;
        }
        const tg_value *vb = &b->values[j];
        const char *kind = kind_name[va->kind];
        if (va->kind != vb->kind) {
            nd += note(f, "value %s: %s -> %s\n", va->name, kind, kind_name[vb->kind]);
        } else if (va->kind == TG_VALUE_INPUT) {
            continue;       /* reported with the graph's inputs */
        } else if (strcmp(type_text(a, va, ta), type_text(b, vb, tb))) {
            nd += note(f, "%s %s: %s -> %s\n", kind, va->name, ta, tb);
        } else if (va->kind == TG_VALUE_CONST) {
            nd += diff_data(va, vb, f);
        }
    }
    for (int j = 0; j < b->nvalue; j++) {
        const tg_value *vb = &b->values[j];
        if (vb->kind == TG_VALUE_CONST && tg_graph_find_value(a, vb->name) < 0) {
            nd += note(f, "const %s: added (%s)\n", vb->name, type_text(b, vb, tb));
        }
    }
    return nd;
}

int tg_graph_diff(const tg_graph *a, const tg_graph *b, FILE *f)
{
    return diff_symbols(a, b, f)
         + diff_ports(a, a->ninput, a->inputs, b, b->ninput, b->inputs, "input", f)
         + diff_ports(a, a->noutput, a->outputs, b, b->noutput, b->outputs, "output", f)
         + diff_ops(a, b, f)
         + diff_values(a, b, f);
}
