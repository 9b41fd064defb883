/* Writing TG files (format.h): deterministic, so the same graph always gives
 * the same bytes, and a graph read back writes the same bytes again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "format_internal.h"
#include "outfile.h"

/* Add item to array or object (key != NULL); false (tg_err) when item is NULL. */
static bool put(cJSON *parent, const char *key, cJSON *item)
{
    if (!item) {
        if (!*tg_errmsg())      /* else the maker of item said why */
            tg_err("out of memory");
        return false;
    }
    if (key)
        cJSON_AddItemToObject(parent, key, item);
    else
        cJSON_AddItemToArray(parent, item);
    return true;
}

int tg_graph_format_version(const tg_graph *g)
{
    for (int i = 0; i < g->nnode; i++)
        if (tg_op_is_control(g->nodes[i].op) || g->nodes[i].nout > 1)
            return 2;
    return 1;
}

/* The value order of a file: graph inputs and constants by id, then node
 * outputs in node order. Always creatable in that order (nodes only read
 * earlier values), so a graph read back writes the same bytes. -1 on error. */
static int value_order(const tg_graph *g, int *order)
{
    int n = 0;
    for (int i = 0; i < g->nvalue; i++)
        if (g->values[i].kind != TG_VALUE_NODE)
            order[n++] = i;
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *nd = &g->nodes[i];
        if (nd->op == TG_OP_NONE)
            return tg_err("node %d was removed but the graph not compacted", i);
        for (int k = 0; k < nd->nout; k++) {
            int v = nd->out[k];
            bool twice = false;
            for (int m = 0; m < k; m++)
                twice |= nd->out[m] == v;
            if (v < 0 || v >= g->nvalue || g->values[v].kind != TG_VALUE_NODE ||
                g->values[v].producer != i || twice)
                return tg_err("node '%s': output %d is not a node value it alone produces",
                              nd->name, k);
            order[n++] = v;
        }
    }
    return n;
}

static cJSON *shape_json(const tg_shape *s, const tg_graph *g)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < s->rank; i++)
        if (!put(a, NULL, tg_fmt_dim_to_json(s->d[i], g))) {
            cJSON_Delete(a);
            return NULL;
        }
    return a;
}

static cJSON *names_json(const tg_graph *g, int n, const int *ids)
{
    cJSON *a = cJSON_CreateArray();
    for (int i = 0; a && i < n; i++) {
        cJSON *s = ids[i] < 0 ? cJSON_CreateNull() : cJSON_CreateString(g->values[ids[i]].name);
        if (!put(a, NULL, s)) {
            cJSON_Delete(a);
            return NULL;
        }
    }
    return a;
}


static cJSON *subgraph_json(const tg_graph *g);

static cJSON *attr_value_json(const tg_attr *a, const tg_graph *g)
{
    cJSON *v = NULL;
    switch (a->kind) {
    case TG_ATTR_INT:
        return tg_json_int(a->u.i);
    case TG_ATTR_FLOAT:
        return tg_json_float(a->u.f);
    case TG_ATTR_STRING:
        if (!a->u.s || !tg_utf8_valid(a->u.s, strlen(a->u.s), NULL))
            return tg_err("attribute '%s': string is not UTF-8", a->name), NULL;
        return cJSON_CreateString(a->u.s);
    case TG_ATTR_DTYPE:
        if (!tg_dtype_size((tg_dtype)a->u.i) || a->u.i >= TG_DTYPE_COUNT)
            return tg_err("attribute '%s': invalid dtype %lld", a->name, (long long)a->u.i),
                   NULL;
        return cJSON_CreateString(tg_dtype_name((tg_dtype)a->u.i));
    case TG_ATTR_GRAPH:
        return a->u.g ? subgraph_json(a->u.g)
                      : (tg_err("attribute '%s': subgraph missing", a->name), NULL);
    case TG_ATTR_INPUT:     /* [input index, kind it becomes] */
        v = cJSON_CreateArray();
        if (!put(v, NULL, tg_json_int(a->u.i)) ||
            !put(v, NULL, cJSON_CreateString(tg_fmt_attr_keys[a->n]))) {
            cJSON_Delete(v);
            return NULL;
        }
        return v;
    case TG_ATTR_INTS:
    case TG_ATTR_FLOATS:
    case TG_ATTR_DIMS:
        v = cJSON_CreateArray();
        for (int i = 0; v && i < a->n; i++) {
            cJSON *e = a->kind == TG_ATTR_INTS     ? tg_json_int(a->u.ints[i])
                       : a->kind == TG_ATTR_FLOATS ? tg_json_float(a->u.floats[i])
                                                   : tg_fmt_dim_to_json(a->u.dims[i], g);
            if (!put(v, NULL, e)) {
                cJSON_Delete(v);
                return NULL;
            }
        }
        return v;
    }
    return tg_err("attribute '%s': unknown kind %d", a->name, (int)a->kind), NULL;
}

static cJSON *node_json(const tg_node *n, const tg_graph *g)
{
    if (!tg_fmt_name_ok(n->name))
        return tg_err("node '%s': bad name (empty, longer than %d bytes, not UTF-8 or with "
                      "control characters)", tg_json_shown(n->name), TG_FMT_NAME_MAX), NULL;
    cJSON *o = cJSON_CreateObject(), *attrs = cJSON_CreateObject();
    if (!o || !attrs)
        goto fail;
    if (!put(o, "name", cJSON_CreateString(n->name)) ||
        !put(o, "op", cJSON_CreateString(tg_op_name(n->op))) ||
        !put(o, "inputs", names_json(g, n->nin, n->in)) ||
        !put(o, "outputs", names_json(g, n->nout, n->out)))
        goto fail;
    for (int i = 0; i < n->nattr; i++) {
        const tg_attr *a = &n->attr[i];
        if (!tg_fmt_name_ok(a->name) || a->kind < 1 || a->kind >= TG_FMT_ATTR_KINDS) {
            tg_err("node '%s': attribute %d is malformed", n->name, i);
            goto fail;
        }
        cJSON *wrap = cJSON_CreateObject();
        if (!put(attrs, a->name, wrap) || !put(wrap, tg_fmt_attr_keys[a->kind], attr_value_json(a, g)))
            goto fail;
    }
    cJSON_AddItemToObject(o, "attrs", attrs);
    attrs = NULL;
    if (n->source) {
        if (!tg_utf8_valid(n->source, strlen(n->source), NULL)) {
            tg_err("node '%s': source is not UTF-8", n->name);
            goto fail;
        }
        if (!put(o, "source", cJSON_CreateString(n->source)))
            goto fail;
    }
    return o;
fail:
    cJSON_Delete(attrs);
    cJSON_Delete(o);
    return NULL;
}

static cJSON *value_json(const tg_value *v, const tg_graph *g)
{
    if (!tg_fmt_name_ok(v->name))
        return tg_err("value '%s': bad name (empty, longer than %d bytes, not UTF-8 or with "
                      "control characters)", tg_json_shown(v->name), TG_FMT_NAME_MAX), NULL;
    if (!tg_dtype_size(v->dtype) || v->dtype >= TG_DTYPE_COUNT)
        return tg_err("value '%s': invalid dtype", v->name), NULL;
    cJSON *o = cJSON_CreateObject();
    if (!o || !put(o, "name", cJSON_CreateString(v->name)) ||
        !put(o, "kind", cJSON_CreateString(tg_fmt_kind_names[v->kind])) ||
        !put(o, "dtype", cJSON_CreateString(tg_dtype_name(v->dtype))) ||
        !put(o, "shape", shape_json(&v->shape, g))) {
        cJSON_Delete(o);
        return NULL;
    }
    return o;
}

/* A graph's JSON; a subgraph's has no version (its file's). */
static cJSON *graph_json(const tg_graph *g, const int *order, int norder, bool top)
{
    cJSON *o = cJSON_CreateObject(), *a;
    if (!o || (top && !put(o, "version", tg_json_int(tg_graph_format_version(g)))))
        goto fail;
    if (!put(o, "symbols", a = cJSON_CreateArray()))
        goto fail;
    for (int i = 0; i < g->nsym; i++) {
        cJSON *s = cJSON_CreateObject();
        if (!put(a, NULL, s) || !put(s, "name", cJSON_CreateString(g->sym[i].name ? g->sym[i].name : "")) ||
            !put(s, "min", tg_json_int(g->sym[i].min)) || !put(s, "max", tg_json_int(g->sym[i].max)) ||
            (g->sym[i].data && !put(s, "data", cJSON_CreateTrue())))
            goto fail;
    }
    if (!put(o, "inputs", names_json(g, g->ninput, g->inputs)) ||
        !put(o, "outputs", names_json(g, g->noutput, g->outputs)) ||
        !put(o, "values", a = cJSON_CreateArray()))
        goto fail;
    for (int i = 0; i < norder; i++)
        if (!put(a, NULL, value_json(&g->values[order[i]], g)))
            goto fail;
    if (!put(o, "nodes", a = cJSON_CreateArray()))
        goto fail;
    for (int i = 0; i < g->nnode; i++)
        if (!put(a, NULL, node_json(&g->nodes[i], g)))
            goto fail;
    return o;
fail:
    cJSON_Delete(o);
    return NULL;
}

/* Refuse what a reader would reject: references to values the file does not
 * list or to later nodes, inputs that are not each input value once, and node
 * names a reader could not give (the name of a value made before the node). */
static int check_refs(const tg_graph *g, const int *order, int norder)
{
    char *listed = calloc((size_t)g->nvalue + 1, 1);
    if (!listed)
        return tg_err("out of memory");
    for (int i = 0; i < norder; i++)
        listed[order[i]] = 1;
    int rc = 0, ninput = 0;
    for (int i = 0; i < g->nnode && !rc; i++) {
        const tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin && !rc; k++) {
            int v = n->in[k];
            if (v < -1 || v >= g->nvalue || (v >= 0 && !listed[v]))
                rc = tg_err("node '%s': input %d refers to no value", n->name, k);
            else if (v >= 0 && g->values[v].kind == TG_VALUE_NODE && g->values[v].producer >= i)
                rc = tg_err("node '%s': input %d is made by a later node", n->name, k);
        }
        int same = tg_graph_find_value(g, n->name);
        if (!rc && same >= 0 &&
            !(g->values[same].kind == TG_VALUE_NODE && g->values[same].producer >= i))
            rc = tg_err("node '%s' has the name of a value made before it", n->name);
    }
    for (int i = 0; i < g->noutput && !rc; i++)
        if (g->outputs[i] < 0 || g->outputs[i] >= g->nvalue || !listed[g->outputs[i]])
            rc = tg_err("graph output %d refers to no value", i);
    for (int i = 0; i < g->nvalue; i++)
        ninput += g->values[i].kind == TG_VALUE_INPUT;
    if (!rc && ninput != g->ninput)
        rc = tg_err("the graph lists %d inputs but has %d input values", g->ninput, ninput);
    for (int i = 0; i < g->ninput && !rc; i++) {
        int v = g->inputs[i];
        if (v < 0 || v >= g->nvalue || g->values[v].kind != TG_VALUE_INPUT || listed[v] != 1)
            rc = tg_err("graph input %d is not an input value, or repeats one", i);
        else
            listed[v] = 2;
    }
    free(listed);
    return rc;
}

/* A subgraph attribute's graph, checked as a file's graph is; its values are
 * inputs and node outputs (constants are its node's inputs). */
static cJSON *subgraph_json(const tg_graph *g)
{
    static _Thread_local int depth;
    int n, *order = malloc(((size_t)g->nvalue + 1) * sizeof *order);
    cJSON *j = NULL;
    if (!order)
        return tg_err("out of memory"), NULL;
    for (int v = 0; v < g->nvalue; v++)
        if (g->values[v].kind == TG_VALUE_CONST) {
            free(order);
            return tg_err("subgraph value '%s' is a constant", g->values[v].name), NULL;
        }
    if (depth >= TG_MAX_GRAPH_DEPTH)
        tg_err("subgraphs nest deeper than %d", TG_MAX_GRAPH_DEPTH);
    else if ((n = value_order(g, order)) >= 0 && check_refs(g, order, n) == 0) {
        depth++;
        j = graph_json(g, order, n, false);
        depth--;
    }
    free(order);
    return j;
}

/* The graph JSON text; *order (malloc'd) gets the file's value order and
 * *norder its length. NULL (tg_err) on error. */
static char *graph_text(const tg_graph *g, int **order, int *norder)
{
    tg_err_clear();     /* put() reports "out of memory" only when nothing else did */
    char *s = NULL;
    cJSON *j = NULL;
    if (!(*order = malloc(((size_t)g->nvalue + 1) * sizeof **order)))
        tg_err("out of memory");
    else if ((*norder = value_order(g, *order)) >= 0 && check_refs(g, *order, *norder) == 0 &&
             (j = graph_json(g, *order, *norder, true)) && !(s = cJSON_PrintUnformatted(j)))
        tg_err("out of memory");
    cJSON_Delete(j);
    if (!s) {
        free(*order);
        *order = NULL;
    }
    return s;
}

char *tg_graph_to_json(const tg_graph *g)
{
    int *order, n;
    char *s = graph_text(g, &order, &n);
    free(order);
    return s;
}

/* Tensor data order: wider elements first, then file order. With the header
 * padded to 8 bytes every tensor starts aligned to its element size (what the
 * safetensors reference writer does), so readers may map it in place. */
typedef struct {
    int id, pos;
    size_t esize;
} tensor_slot;

static int cmp_tensor(const void *pa, const void *pb)
{
    const tensor_slot *a = pa, *b = pb;
    if (a->esize != b->esize)
        return a->esize > b->esize ? -1 : 1;
    return a->pos - b->pos;
}

/* Add constant v's header entry, its data at *off, and advance *off. */
static int put_tensor(cJSON *hdr, const tg_value *v, uint64_t *off)
{
    int64_t dims[TG_MAX_RANK];
    size_t want = tg_dtype_size(v->dtype);
    if (!tg_shape_is_const(&v->shape, dims))
        return tg_err("constant '%s' has a symbolic shape", v->name);
    for (int k = 0; k < v->shape.rank; k++)
        if (dims[k] < 0 || __builtin_mul_overflow(want, (size_t)dims[k], &want))
            return tg_err("constant '%s': bad shape", v->name);
    if (want != v->nbytes || (want && !v->data))
        return tg_err("constant '%s': %zu bytes of data, dtype and shape need %zu", v->name,
                      v->nbytes, want);
    if (!strcmp(v->name, "__metadata__"))
        return tg_err("a constant cannot be called __metadata__ (safetensors reserves it)");
    if (want >= (uint64_t)TG_JSON_INT_EXACT - *off)
        return tg_err("constant '%s': the data would pass 2^53 bytes", v->name);
    cJSON *t = cJSON_CreateObject(), *shape = cJSON_CreateArray(), *offs;
    if (!put(hdr, v->name, t) || !put(t, "dtype", cJSON_CreateString(tg_dtype_st_name(v->dtype))) ||
        !put(t, "shape", shape))
        return -1;
    for (int k = 0; k < v->shape.rank; k++)
        if (!put(shape, NULL, tg_json_int(dims[k])))
            return -1;
    if (!put(t, "data_offsets", offs = cJSON_CreateArray()) ||
        !put(offs, NULL, tg_json_int((int64_t)*off)) ||
        !put(offs, NULL, tg_json_int((int64_t)(*off + want))))
        return -1;
    *off += want;
    return 0;
}

/* The header JSON, padded with spaces to a multiple of 8; *tensors gets the
 * constant value ids in data order. NULL on error. */
static char *header_text(const tg_graph *g, int **tensors, int *ntensors, size_t *len)
{
    int *order = NULL, n = 0, nt = 0;
    cJSON *hdr = NULL;
    char *text = NULL, *graph = graph_text(g, &order, &n);
    tensor_slot *slots = malloc(((size_t)g->nvalue + 1) * sizeof *slots);
    if (!graph)
        goto done;
    if (!slots) {
        tg_err("out of memory");
        goto done;
    }
    for (int i = 0; i < n; i++)
        if (g->values[order[i]].kind == TG_VALUE_CONST)
            slots[nt++] = (tensor_slot){order[i], i, tg_dtype_size(g->values[order[i]].dtype)};
    qsort(slots, (size_t)nt, sizeof *slots, cmp_tensor);

    char ver[16];
    snprintf(ver, sizeof ver, "%d", tg_graph_format_version(g));
    cJSON *meta = cJSON_CreateObject();
    if (!(hdr = cJSON_CreateObject())) {
        cJSON_Delete(meta);
        tg_err("out of memory");
        goto done;
    }
    if (!put(hdr, "__metadata__", meta) || !put(meta, "format", cJSON_CreateString("tgraph")) ||
        !put(meta, "version", cJSON_CreateString(ver)) ||
        !put(meta, "tgraph", cJSON_CreateString(graph)))
        goto done;
    uint64_t off = 0;
    for (int i = 0; i < nt; i++)
        if (put_tensor(hdr, &g->values[slots[i].id], &off) < 0)
            goto done;
    char *raw = cJSON_PrintUnformatted(hdr);
    if (!raw) {
        tg_err("out of memory");
        goto done;
    }
    size_t rl = strlen(raw), padded = (rl + 7) / 8 * 8;
    if (padded > TG_FMT_HEADER_MAX) {
        tg_err("the graph's header would be %zu bytes, more than the limit of %u", padded,
               TG_FMT_HEADER_MAX);
        free(raw);
        goto done;
    }
    text = realloc(raw, padded + 1);
    if (!text) {
        free(raw);
        tg_err("out of memory");
        goto done;
    }
    memset(text + rl, ' ', padded - rl);
    text[padded] = '\0';
    *len = padded;
    for (int i = 0; i < nt; i++)
        order[i] = slots[i].id;
    *tensors = order;
    *ntensors = nt;
    order = NULL;
done:
    cJSON_Delete(hdr);
    free(graph);
    free(order);
    free(slots);
    return text;
}

int tg_graph_write(const tg_graph *g, FILE *f)
{
    int *tensors = NULL, nt = 0;
    size_t len = 0;
    char *hdr = header_text(g, &tensors, &nt, &len);
    if (!hdr)
        return -1;
    unsigned char lenbuf[8];
    for (int i = 0; i < 8; i++)
        lenbuf[i] = (unsigned char)((uint64_t)len >> (8 * i));
    bool ok = fwrite(lenbuf, 1, 8, f) == 8 && fwrite(hdr, 1, len, f) == len;
    for (int i = 0; ok && i < nt; i++) {
        const tg_value *v = &g->values[tensors[i]];
        ok = fwrite(v->data, 1, v->nbytes, f) == v->nbytes;
    }
    ok = ok && fflush(f) == 0 && !ferror(f);
    free(hdr);
    free(tensors);
    return ok ? 0 : tg_err("write error: %s", strerror(errno ? errno : EIO));
}

int tg_graph_save(const tg_graph *g, const char *path)
{
    tg_outfile o;
    if (tg_outfile_open(&o, path, true) < 0)
        return -1;
    if (tg_graph_write(g, o.f) < 0) {
        tg_outfile_close(&o, false);
        return -1;
    }
    return tg_outfile_close(&o, true);
}
