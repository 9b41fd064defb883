/* Reading TG files (format.h). Trusts nothing: every length, offset, name and
 * reference is checked before use, and the graph is rebuilt through
 * tg_graph_add_*, which infers every node's outputs again. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "filekind.h"
#include "format_internal.h"

/* Where bytes come from: a stream or a buffer. size is the byte count still
 * to come when known (buffers, regular files), else -1. */
typedef struct {
    FILE *f;
    const uint8_t *buf;
    size_t len, pos;
    int64_t size;
} source;

static size_t src_read(source *s, void *dst, size_t n)
{
    if (s->f)
        return fread(dst, 1, n, s->f);
    size_t k = s->len - s->pos < n ? s->len - s->pos : n;
    memcpy(dst, s->buf + s->pos, k);
    s->pos += k;
    return k;
}

/* After a short read: -1 with the system's reason when the stream failed
 * (the caller reports truncation otherwise). */
static int src_error(const source *s)
{
    if (s->f && ferror(s->f))
        return tg_err("read error: %s", strerror(errno ? errno : EIO));
    return 0;
}

static bool src_eof(source *s)
{
    if (!s->f)
        return s->pos == s->len;
    int c = fgetc(s->f);
    if (c == EOF)
        return true;
    ungetc(c, s->f);
    return false;
}

/* One tensor of the safetensors header. */
typedef struct {
    const char *name;       /* in the header's cJSON tree */
    tg_dtype dtype;
    int rank;
    int64_t dims[TG_MAX_RANK];
    uint64_t begin, end;
    void *data;             /* owned until given to the graph */
    int value;              /* index into reader.vals, -1 until matched */
} tensor_ent;

struct name_idx {
    const char *name;
    int val;
};

/* One entry of the graph's "values". */
typedef struct {
    const char *name;
    tg_value_kind kind;
    tg_dtype dtype;
    tg_shape shape;
    int id;                 /* value id in the graph once created, else -1 */
    int tensor;             /* constants: index into reader.tens */
} value_ent;

typedef struct {
    source in;
    char *header;
    cJSON *hdr, *gj;
    const cJSON *gtop[6];   /* version symbols inputs outputs values nodes */
    tensor_ent *tens;
    int ntens;
    value_ent *vals;
    int nvals;
    struct name_idx *by_name;   /* vals sorted by name */
    tg_graph *g;
    int depth;              /* 0: the file's graph; else a subgraph's nesting */
    int64_t version;        /* the file's format version */
} reader;

static const char *const graph_keys[] = {"version", "symbols", "inputs", "outputs", "values",
                                         "nodes", NULL};
enum { G_VERSION, G_SYMBOLS, G_INPUTS, G_OUTPUTS, G_VALUES, G_NODES };

static int read_frame(reader *r, uint64_t *hlen)
{
    unsigned char b[8];
    size_t got = src_read(&r->in, b, 8);
    if (got < 8 && src_error(&r->in) < 0)
        return -1;
    if (got == 0)
        return tg_err("empty input (expected a TG graph file)");
    uint64_t n = 0;
    for (int i = 7; i >= 0 && got == 8; i--)
        n = n << 8 | b[i];
    /* not a TG file: say what it is when the first bytes tell */
    tg_file_kind k = tg_file_kind_of(b, got);
    if ((got < 8 || n > TG_FMT_HEADER_MAX || n < 2) && k != TG_FILE_UNKNOWN)
        return tg_err("%s, not a TG graph: %s", tg_file_kind_name(k), tg_file_kind_hint(k));
    if (got < 8)
        return tg_err("truncated: %zu bytes, too short for the 8-byte header length", got);
    if (n > TG_FMT_HEADER_MAX)
        return tg_err("header length %llu exceeds the limit of %u bytes (not a TG file?)",
                      (unsigned long long)n, TG_FMT_HEADER_MAX);
    if (n < 2)
        return tg_err("header length %llu is too small for a JSON object",
                      (unsigned long long)n);
    if (r->in.size >= 0 && (uint64_t)r->in.size - 8 < n)
        return tg_err("truncated: the header needs %llu bytes but only %lld follow",
                      (unsigned long long)n, (long long)r->in.size - 8);
    if (!(r->header = malloc(n + 1)))
        return tg_err("out of memory for a %llu-byte header", (unsigned long long)n);
    got = src_read(&r->in, r->header, n);
    if (got < n && src_error(&r->in) < 0)
        return -1;
    if (got < n)
        return tg_err("truncated: the header needs %llu bytes but only %zu follow",
                      (unsigned long long)n, got);
    r->header[n] = '\0';
    *hlen = n;
    return 0;
}

/* A non-negative integer below 2^53, from the safetensors header. */
static int header_uint(const cJSON *j, uint64_t *v, const char *name, const char *what)
{
    int64_t x;
    if (!cJSON_IsNumber(j) || tg_json_get_int(j, &x) < 0 || x < 0)
        return tg_err("header: tensor '%s': %s must be non-negative integers below 2^53",
                      name, what);
    *v = (uint64_t)x;
    return 0;
}

static const char *const tensor_keys[] = {"dtype", "shape", "data_offsets", NULL};

static int parse_tensor(tensor_ent *t, const cJSON *j)
{
    const cJSON *f[3];
    char what[64 + TG_FMT_NAME_MAX];
    t->name = j->string;
    t->value = -1;
    if (!tg_fmt_name_ok(t->name))
        return tg_err("header: tensor name '%s' is empty, longer than %d bytes or has control "
                      "characters", tg_json_shown(t->name), TG_FMT_NAME_MAX);
    snprintf(what, sizeof what, "header: tensor '%s'", t->name);
    if (tg_json_fields(j, tensor_keys, f, what) < 0)
        return -1;
    if (!f[0] || !f[1] || !f[2])
        return tg_err("%s: needs dtype, shape and data_offsets", what);
    if (!cJSON_IsString(f[0]) || !(t->dtype = tg_dtype_from_st_name(f[0]->valuestring)))
        return tg_err("%s: unknown dtype %s", what,
                      cJSON_IsString(f[0]) ? tg_json_shown(f[0]->valuestring) : "(not a string)");
    if (!cJSON_IsArray(f[1]) || cJSON_GetArraySize(f[1]) > TG_MAX_RANK)
        return tg_err("%s: shape must be an array of at most %d dimensions", what, TG_MAX_RANK);
    uint64_t nbytes = tg_dtype_size(t->dtype);
    for (const cJSON *d = f[1]->child; d; d = d->next) {
        uint64_t v = 0;
        if (header_uint(d, &v, t->name, "shape dimensions") < 0)
            return -1;
        t->dims[t->rank++] = (int64_t)v;
        if (__builtin_mul_overflow(nbytes, v, &nbytes))
            return tg_err("%s: shape overflows 64 bits", what);
    }
    if (!cJSON_IsArray(f[2]) || cJSON_GetArraySize(f[2]) != 2)
        return tg_err("%s: data_offsets must be [begin, end]", what);
    if (header_uint(f[2]->child, &t->begin, t->name, "data_offsets") < 0 ||
        header_uint(f[2]->child->next, &t->end, t->name, "data_offsets") < 0)
        return -1;
    if (t->end < t->begin)
        return tg_err("header: data_offsets of '%s' end before they begin", t->name);
    if (t->end - t->begin != nbytes)
        return tg_err("header: data_offsets of '%s' hold %llu bytes but dtype %s and its "
                      "shape need %llu", t->name, (unsigned long long)(t->end - t->begin),
                      f[0]->valuestring, (unsigned long long)nbytes);
    return 0;
}

static int cmp_offsets(const void *pa, const void *pb)
{
    const tensor_ent *a = pa, *b = pb;
    if (a->begin != b->begin)
        return a->begin < b->begin ? -1 : 1;
    return a->end < b->end ? -1 : a->end > b->end;
}

static int parse_metadata(reader *r, const cJSON *meta)
{
    if (!cJSON_IsObject(meta))
        return tg_err("header: __metadata__ is not an object");
    if (tg_json_unique_keys(meta, "header: __metadata__") < 0)
        return -1;
    const cJSON *fmt = NULL, *ver = NULL, *graph = NULL;
    for (const cJSON *c = meta->child; c; c = c->next) {
        if (!cJSON_IsString(c))
            return tg_err("header: __metadata__ value '%s' is not a string",
                          tg_json_shown(c->string));
        if (!strcmp(c->string, "format"))
            fmt = c;
        else if (!strcmp(c->string, "version"))
            ver = c;
        else if (!strcmp(c->string, "tgraph"))
            graph = c;
    }
    if (!fmt || strcmp(fmt->valuestring, "tgraph"))
        return tg_err("header: __metadata__ format is %s%s%s, not \"tgraph\" (a safetensors "
                      "file but not a TG graph)", fmt ? "\"" : "",
                      fmt ? tg_json_shown(fmt->valuestring) : "missing", fmt ? "\"" : "");
    int64_t v;
    if (!ver || tg_json_get_int(ver, &v) < 0 || v < 1)
        return tg_err("header: __metadata__ version is %s, not a format version",
                      ver ? tg_json_shown(ver->valuestring) : "missing");
    if (v > TG_FORMAT_VERSION)
        return tg_err("file format version %lld is newer than this reader (%d): "
                      "upgrade tgraph", (long long)v, TG_FORMAT_VERSION);
    r->version = v;
    if (!graph)
        return tg_err("header: __metadata__ has no \"tgraph\" graph");
    size_t glen = strlen(graph->valuestring), bad = 0;
    if (!tg_json_syntax_ok(graph->valuestring, glen, &bad))
        return tg_err("graph: not valid JSON (byte %zu)", bad);
    if (!(r->gj = cJSON_ParseWithLength(graph->valuestring, glen)))
        return tg_err("graph: not valid JSON (a bad \\u escape, or out of memory)");
    if (tg_json_fields(r->gj, graph_keys, r->gtop, "graph") < 0)
        return -1;
    int64_t gv;
    if (!r->gtop[G_VERSION] || !cJSON_IsNumber(r->gtop[G_VERSION]) ||
        tg_json_get_int(r->gtop[G_VERSION], &gv) < 0 || gv != v)
        return tg_err("graph: version must be %lld, as in __metadata__", (long long)v);
    for (int i = G_SYMBOLS; i <= G_NODES; i++)
        if (!cJSON_IsArray(r->gtop[i]))
            return tg_err("graph: %s must be an array", graph_keys[i]);
    return 0;
}

static int parse_header(reader *r, uint64_t hlen)
{
    size_t bad = 0;
    if (!tg_utf8_valid(r->header, hlen, &bad))
        return tg_err("header: not valid UTF-8 (byte %zu)", bad);
    if (!tg_json_syntax_ok(r->header, hlen, &bad))
        return tg_err("header: not valid JSON (byte %zu)", bad);
    if (!(r->hdr = cJSON_ParseWithLength(r->header, hlen)))
        return tg_err("header: not valid JSON (a bad \\u escape, or out of memory)");
    if (!cJSON_IsObject(r->hdr))
        return tg_err("header: not a JSON object");
    if (tg_json_unique_keys(r->hdr, "header") < 0)
        return -1;
    int n = cJSON_GetArraySize(r->hdr);
    if (!(r->tens = calloc((size_t)n + 1, sizeof *r->tens)))
        return tg_err("out of memory");
    const cJSON *meta = NULL;
    for (const cJSON *c = r->hdr->child; c; c = c->next) {
        if (!strcmp(c->string, "__metadata__"))
            meta = c;
        else if (parse_tensor(&r->tens[r->ntens++], c) < 0)
            return -1;
    }
    if (!meta)
        return tg_err("header: no __metadata__ (a safetensors file but not a TG graph)");
    if (parse_metadata(r, meta) < 0)
        return -1;

    /* The tensors must tile the data exactly: no gaps, no overlaps (as the
     * safetensors reference reader requires). */
    qsort(r->tens, (size_t)r->ntens, sizeof *r->tens, cmp_offsets);
    uint64_t pos = 0;
    int64_t avail = r->in.size >= 0 ? r->in.size - 8 - (int64_t)hlen : -1;
    for (int i = 0; i < r->ntens; i++) {
        const tensor_ent *t = &r->tens[i];
        if (avail >= 0 && t->end > (uint64_t)avail)
            return tg_err("header: data_offsets of '%s' out of range (the data is %lld "
                          "bytes)", t->name, (long long)avail);
        if (t->begin > pos)
            return tg_err("header: bytes %llu..%llu of the data belong to no tensor "
                          "(before '%s')", (unsigned long long)pos,
                          (unsigned long long)t->begin, t->name);
        if (t->begin < pos)
            return tg_err("header: data_offsets of '%s' overlap those of '%s'", t->name,
                          r->tens[i - 1].name);
        pos = t->end;
    }
    if (avail >= 0 && (uint64_t)avail > pos)
        return tg_err("header: the tensors cover %llu bytes of data but %lld follow the "
                      "header", (unsigned long long)pos, (long long)avail);
    return 0;
}

/* Read the tensors' bytes in file order. */
static int read_data(reader *r)
{
    for (int i = 0; i < r->ntens; i++) {
        tensor_ent *t = &r->tens[i];
        size_t n = (size_t)(t->end - t->begin);
        if ((uint64_t)n != t->end - t->begin || !(t->data = malloc(n ? n : 1)))
            return tg_err("out of memory for tensor '%s' (%llu bytes)", t->name,
                          (unsigned long long)(t->end - t->begin));
        size_t got = src_read(&r->in, t->data, n);
        if (got < n && src_error(&r->in) < 0)
            return -1;
        if (got < n)
            return tg_err("truncated: the data ends inside tensor '%s' (byte %llu of %llu)",
                          t->name, (unsigned long long)(t->begin + got),
                          (unsigned long long)r->tens[r->ntens - 1].end);
        if (t->dtype == TG_BOOL)
            for (size_t k = 0; k < n; k++)
                if (((unsigned char *)t->data)[k] > 1)
                    return tg_err("data: tensor '%s': bool element %zu is %u, not 0 or 1",
                                  t->name, k, ((unsigned char *)t->data)[k]);
    }
    if (!src_eof(&r->in))
        return tg_err("trailing bytes after the last tensor");
    return src_error(&r->in);
}

/* ---- the graph ---- */

static int cmp_name(const void *a, const void *b)
{
    return strcmp(((const struct name_idx *)a)->name, ((const struct name_idx *)b)->name);
}

/* Index into r->vals of the value called name, or -1. */
static int find_val(const reader *r, const char *name)
{
    struct name_idx key = {name, 0};
    const struct name_idx *hit = bsearch(&key, r->by_name, (size_t)r->nvals,
                                         sizeof key, cmp_name);
    return hit ? hit->val : -1;
}

static int parse_shape(const cJSON *j, const tg_graph *g, tg_shape *s, const char *what)
{
    if (!cJSON_IsArray(j) || cJSON_GetArraySize(j) > TG_MAX_RANK)
        return tg_err("%s: shape must be an array of at most %d dimensions", what, TG_MAX_RANK);
    s->rank = 0;
    for (const cJSON *d = j->child; d; d = d->next, s->rank++)
        if (tg_fmt_dim_from_json(d, g, &s->d[s->rank]) < 0)
            return tg_err("%s: shape[%d]: %s", what, s->rank, tg_errmsg());
    return 0;
}

static int parse_symbols(reader *r)
{
    static const char *const keys[] = {"name", "min", "max", "data", NULL};
    int i = 0;
    for (const cJSON *s = r->gtop[G_SYMBOLS]->child; s; s = s->next, i++) {
        const cJSON *f[4];
        char what[48];
        snprintf(what, sizeof what, "graph: symbols[%d]", i);
        if (tg_json_fields(s, keys, f, what) < 0)
            return -1;
        int64_t lo, hi;
        if (!cJSON_IsString(f[0]) || !f[1] || !f[2])
            return tg_err("%s: needs name (a string), min and max", what);
        if (!tg_fmt_name_ok(f[0]->valuestring))
            return tg_err("%s: name '%s' is not an identifier", what,
                          tg_json_shown(f[0]->valuestring));
        if (tg_json_get_int(f[1], &lo) < 0)
            return tg_err("%s: min: %s", what, tg_errmsg());
        if (tg_json_get_int(f[2], &hi) < 0)
            return tg_err("%s: max: %s", what, tg_errmsg());
        if (f[3] && !cJSON_IsBool(f[3]))
            return tg_err("%s: data must be true or false", what);
        if (tg_graph_add_symbol(r->g, f[0]->valuestring, lo, hi) < 0)
            return tg_err("%s: %s", what, tg_errmsg());
        r->g->sym[r->g->nsym - 1].data = f[3] && cJSON_IsTrue(f[3]);
    }
    return 0;
}

static int parse_values(reader *r)
{
    static const char *const keys[] = {"name", "kind", "dtype", "shape", NULL};
    int n = cJSON_GetArraySize(r->gtop[G_VALUES]);
    r->vals = calloc((size_t)n + 1, sizeof *r->vals);
    r->by_name = malloc(((size_t)n + 1) * sizeof *r->by_name);
    if (!r->vals || !r->by_name)
        return tg_err("out of memory");
    for (const cJSON *j = r->gtop[G_VALUES]->child; j; j = j->next) {
        value_ent *v = &r->vals[r->nvals];
        const cJSON *f[4];
        char what[64 + TG_FMT_NAME_MAX];
        snprintf(what, sizeof what, "graph: values[%d]", r->nvals);
        if (tg_json_fields(j, keys, f, what) < 0)
            return -1;
        if (!cJSON_IsString(f[0]) || !tg_fmt_name_ok(f[0]->valuestring))
            return tg_err("%s: name must be a non-empty string without control characters "
                          "(at most %d bytes)", what, TG_FMT_NAME_MAX);
        v->name = f[0]->valuestring;
        v->id = v->tensor = -1;
        snprintf(what, sizeof what, "graph: value '%s'", v->name);
        int k = 0;
        while (k < 3 && !(cJSON_IsString(f[1]) && !strcmp(f[1]->valuestring, tg_fmt_kind_names[k])))
            k++;
        if (k == 3)
            return tg_err("%s: kind must be \"input\", \"const\" or \"node\"", what);
        v->kind = (tg_value_kind)k;
        if (!cJSON_IsString(f[2]) || !(v->dtype = tg_dtype_from_name(f[2]->valuestring)))
            return tg_err("%s: unknown dtype %s", what,
                          cJSON_IsString(f[2]) ? tg_json_shown(f[2]->valuestring) : "(not a string)");
        if (parse_shape(f[3], r->g, &v->shape, what) < 0)
            return -1;
        r->by_name[r->nvals] = (struct name_idx){v->name, r->nvals};
        r->nvals++;
    }
    qsort(r->by_name, (size_t)r->nvals, sizeof *r->by_name, cmp_name);
    for (int i = 1; i < r->nvals; i++)
        if (!strcmp(r->by_name[i].name, r->by_name[i - 1].name))
            return tg_err("graph: value '%s' is declared twice", r->by_name[i].name);
    return 0;
}

/* Every constant has a tensor of its dtype and shape, and every tensor a constant. */
static int match_tensors(reader *r)
{
    for (int t = 0; t < r->ntens; t++) {
        tensor_ent *te = &r->tens[t];
        int i = find_val(r, te->name);
        if (i < 0 || r->vals[i].kind != TG_VALUE_CONST)
            return tg_err("header: tensor '%s' is not a constant of the graph", te->name);
        value_ent *v = &r->vals[i];
        bool same = te->dtype == v->dtype && te->rank == v->shape.rank;
        for (int k = 0; same && k < te->rank; k++) {
            int64_t d;
            same = tg_dim_is_const(v->shape.d[k], &d) && d == te->dims[k];
        }
        if (!same)
            return tg_err("graph: constant '%s': dtype or shape differs from its tensor in "
                          "the header", v->name);
        te->value = i;
        v->tensor = t;
    }
    for (int i = 0; i < r->nvals; i++)
        if (r->vals[i].kind == TG_VALUE_CONST && r->vals[i].tensor < 0)
            return tg_err("graph: constant '%s' has no tensor in the header", r->vals[i].name);
    return 0;
}

/* A value reference by name: its id, -2 for JSON null (when allowed), or -1. */
static int ref(reader *r, const cJSON *j, bool allow_null, const char *what)
{
    if (allow_null && cJSON_IsNull(j))
        return -2;
    if (!cJSON_IsString(j))
        return tg_err("%s: value references must be strings%s", what,
                      allow_null ? " or null" : "");
    int i = find_val(r, j->valuestring);
    if (i < 0)
        return tg_err("%s: '%s' is not a declared value", what, tg_json_shown(j->valuestring));
    if (r->vals[i].id < 0)
        return tg_err("%s: '%s' is not defined before use (cycle or undefined value)", what,
                      j->valuestring);
    return r->vals[i].id;
}

static int make_values(reader *r)
{
    for (int i = 0; i < r->nvals; i++) {
        value_ent *v = &r->vals[i];
        if (v->kind == TG_VALUE_INPUT) {
            v->id = tg_graph_add_input(r->g, v->name, v->dtype, &v->shape);
        } else if (v->kind == TG_VALUE_CONST) {
            tensor_ent *t = &r->tens[v->tensor];
            v->id = tg_graph_add_const(r->g, v->name, v->dtype, &v->shape, t->data,
                                       (size_t)(t->end - t->begin));
            t->data = NULL;     /* the graph owns it, even on failure */
        } else {
            continue;           /* made by its node */
        }
        if (v->id < 0)
            return tg_err("graph: %s", tg_errmsg());
    }
    /* "inputs" fixes the call order: a permutation of the input values. */
    const cJSON *in = r->gtop[G_INPUTS];
    if (cJSON_GetArraySize(in) != r->g->ninput)
        return tg_err("graph: inputs lists %d values but %d are of kind input",
                      cJSON_GetArraySize(in), r->g->ninput);
    int k = 0;
    for (const cJSON *j = in->child; j; j = j->next, k++) {
        int id = ref(r, j, false, "graph: inputs");
        if (id < 0)
            return -1;
        if (r->g->values[id].kind != TG_VALUE_INPUT)
            return tg_err("graph: inputs: '%s' is not of kind input", j->valuestring);
        for (int m = 0; m < k; m++)
            if (r->g->inputs[m] == id)
                return tg_err("graph: inputs: '%s' is listed twice", j->valuestring);
        r->g->inputs[k] = id;
    }
    return 0;
}

static void free_attrs(tg_attr *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].kind == TG_ATTR_INTS || a[i].kind == TG_ATTR_FLOATS || a[i].kind == TG_ATTR_DIMS)
            free(a[i].u.ints);
        else if (a[i].kind == TG_ATTR_GRAPH)
            tg_graph_free(a[i].u.g);
    free(a);
}

static int build_graph(reader *r);

/* A subgraph attribute: a graph object as the file's, without version, whose
 * values are inputs and node outputs only. */
static int parse_subgraph(reader *r, const cJSON *j, tg_graph **out, const char *what)
{
    if (r->depth >= TG_MAX_GRAPH_DEPTH)
        return tg_err("%s: subgraphs nest deeper than %d", what, TG_MAX_GRAPH_DEPTH);
    if (r->version < 2)
        return tg_err("%s: a graph attribute needs format version 2, the file is version %lld",
                      what, (long long)r->version);
    reader s = {.depth = r->depth + 1, .version = r->version};
    int rc = -1;
    if (tg_json_fields(j, graph_keys, s.gtop, what) < 0)
        return -1;
    if (s.gtop[G_VERSION])
        return tg_err("%s: a subgraph has no version (its file's holds)", what);
    for (int i = G_SYMBOLS; i <= G_NODES; i++)
        if (!cJSON_IsArray(s.gtop[i]))
            return tg_err("%s: %s must be an array", what, graph_keys[i]);
    if (!(s.g = tg_graph_new()))
        return -1;
    if (parse_symbols(&s) == 0 && parse_values(&s) == 0) {
        for (int i = 0; i < s.nvals; i++)
            if (s.vals[i].kind == TG_VALUE_CONST) {
                tg_err("value '%s' is a constant (a subgraph's constants are its node's "
                       "inputs)", s.vals[i].name);
                goto done;
            }
        rc = build_graph(&s);
    }
done:
    if (rc < 0) {
        tg_err("%s: %s", what, tg_errmsg());
        tg_graph_free(s.g);
    } else {
        *out = s.g;
    }
    free(s.vals);
    free(s.by_name);
    return rc;
}

static int parse_attr(reader *r, const cJSON *j, tg_attr *a, const char *what)
{
    const cJSON *f[TG_FMT_ATTR_KINDS];
    if (tg_json_fields(j, tg_fmt_attr_keys + 1, f + 1, what) < 0)
        return -1;
    int kind = 0;
    for (int k = 1; k < TG_FMT_ATTR_KINDS; k++)
        if (f[k]) {
            if (kind)
                return tg_err("%s: must have exactly one of int, float, string, ints, floats, "
                              "dims, dtype, input, graph", what);
            kind = k;
        }
    if (!kind)
        return tg_err("%s: must have exactly one of int, float, string, ints, floats, dims, "
                      "dtype, input, graph", what);
    const cJSON *v = f[kind];
    memset(a, 0, sizeof *a);
    a->name = j->string;
    a->kind = (tg_attr_kind)kind;
    switch (a->kind) {
    case TG_ATTR_INT:
        if (tg_json_get_int(v, &a->u.i) < 0)
            return tg_err("%s: %s", what, tg_errmsg());
        return 0;
    case TG_ATTR_FLOAT:
        if (tg_json_get_float(v, &a->u.f) < 0)
            return tg_err("%s: %s", what, tg_errmsg());
        return 0;
    case TG_ATTR_STRING:
        if (!cJSON_IsString(v))
            return tg_err("%s: string must be a JSON string", what);
        a->u.s = v->valuestring;
        return 0;
    case TG_ATTR_DTYPE:
        if (!cJSON_IsString(v) || !(a->u.i = tg_dtype_from_name(v->valuestring)))
            return tg_err("%s: unknown dtype", what);
        return 0;
    case TG_ATTR_GRAPH:
        return parse_subgraph(r, v, &a->u.g, what);
    case TG_ATTR_INPUT:
        if (cJSON_GetArraySize(v) != 2 || tg_json_get_int(v->child, &a->u.i) < 0 ||
            !cJSON_IsString(v->child->next))
            return tg_err("%s: input must be [input index, kind]", what);
        for (int k = TG_ATTR_INT; k <= TG_ATTR_DIMS; k++)
            if (strcmp(v->child->next->valuestring, tg_fmt_attr_keys[k]) == 0)
                a->n = k;
        return 0;           /* tg_attr_check refuses other kinds */
    default:
        break;
    }
    if (!cJSON_IsArray(v))
        return tg_err("%s: %s must be an array", what, tg_fmt_attr_keys[kind]);
    int n = cJSON_GetArraySize(v);
    size_t es = a->kind == TG_ATTR_DIMS ? sizeof(tg_dim) : sizeof(int64_t);
    a->u.ints = malloc(((size_t)n + 1) * es);   /* the union's arrays share the slot */
    if (!a->u.ints)
        return tg_err("out of memory");
    for (const cJSON *e = v->child; e; e = e->next, a->n++) {
        int rc = a->kind == TG_ATTR_INTS     ? tg_json_get_int(e, &a->u.ints[a->n])
                 : a->kind == TG_ATTR_FLOATS ? tg_json_get_float(e, &a->u.floats[a->n])
                                             : tg_fmt_dim_from_json(e, r->g, &a->u.dims[a->n]);
        if (rc < 0)
            return tg_err("%s: element %d: %s", what, a->n, tg_errmsg());
    }
    return 0;
}

static bool runtime_attrs(const tg_attr *a, int n)
{
    for (int i = 0; i < n; i++)
        if (a[i].kind == TG_ATTR_INPUT)
            return true;
    return false;
}

static int check_output(reader *r, const cJSON *j, int id, const char *what)
{
    if (!cJSON_IsString(j))
        return tg_err("%s: output names must be strings", what);
    int i = find_val(r, j->valuestring);
    if (i < 0)
        return tg_err("%s: output '%s' is not a declared value", what,
                      tg_json_shown(j->valuestring));
    value_ent *v = &r->vals[i];
    if (v->kind != TG_VALUE_NODE)
        return tg_err("%s: output '%s' is declared as %s, not node", what, v->name,
                      tg_fmt_kind_names[v->kind]);
    if (v->id >= 0)
        return tg_err("%s: output '%s' is produced twice", what, v->name);
    tg_value *gv = &r->g->values[id];
    if (gv->dtype != v->dtype || !tg_shape_eq(&gv->shape, &v->shape)) {
        char want[256], got[256];
        tg_shape_format(&v->shape, r->g->sym, want, sizeof want);
        tg_shape_format(&gv->shape, r->g->sym, got, sizeof got);
        return tg_err("%s: output '%s' is stored as %s%s but infers as %s%s", what, v->name,
                      tg_dtype_name(v->dtype), want, tg_dtype_name(gv->dtype), got);
    }
    /* outputs are created named after the node; the file may name them otherwise */
    if (strcmp(gv->name, v->name) && tg_graph_rename_value(r->g, id, v->name) < 0)
        return tg_err("%s: %s", what, tg_errmsg());
    v->id = id;
    return 0;
}

static int parse_node(reader *r, const cJSON *j, int idx)
{
    static const char *const keys[] = {"name", "op", "inputs", "outputs", "attrs", "source", NULL};
    enum { N_NAME, N_OP, N_INPUTS, N_OUTPUTS, N_ATTRS, N_SOURCE };
    const cJSON *f[6];
    char what[64 + TG_FMT_NAME_MAX];
    snprintf(what, sizeof what, "graph: nodes[%d]", idx);
    if (tg_json_fields(j, keys, f, what) < 0)
        return -1;
    if (!cJSON_IsString(f[N_NAME]) || !tg_fmt_name_ok(f[N_NAME]->valuestring))
        return tg_err("%s: name must be a non-empty string without control characters", what);
    const char *name = f[N_NAME]->valuestring;
    snprintf(what, sizeof what, "graph: node '%s'", name);
    tg_op op = cJSON_IsString(f[N_OP]) ? tg_op_from_name(f[N_OP]->valuestring) : TG_OP_NONE;
    if (op == TG_OP_NONE)
        return tg_err("%s: unknown op %s", what,
                      cJSON_IsString(f[N_OP]) ? tg_json_shown(f[N_OP]->valuestring) : "(not a string)");
    if (!cJSON_IsArray(f[N_INPUTS]) || !cJSON_IsArray(f[N_OUTPUTS]) || !cJSON_IsObject(f[N_ATTRS]))
        return tg_err("%s: needs inputs and outputs (arrays) and attrs (an object)", what);
    if (f[N_SOURCE] && !cJSON_IsString(f[N_SOURCE]))
        return tg_err("%s: source must be a string", what);
    if (tg_json_unique_keys(f[N_ATTRS], what) < 0)
        return -1;

    int nin = cJSON_GetArraySize(f[N_INPUTS]), nattr = cJSON_GetArraySize(f[N_ATTRS]);
    int *in = malloc(((size_t)nin + 1) * sizeof *in);
    tg_attr *attr = calloc((size_t)nattr + 1, sizeof *attr);
    int rc = -1, k = 0;
    if (!in || !attr) {
        tg_err("out of memory");
        goto done;
    }
    for (const cJSON *e = f[N_INPUTS]->child; e; e = e->next, k++)
        if ((in[k] = ref(r, e, true, what)) == -1)
            goto done;
        else if (in[k] == -2)
            in[k] = -1;
    k = 0;
    for (const cJSON *e = f[N_ATTRS]->child; e; e = e->next, k++) {
        char awhat[128 + 2 * TG_FMT_NAME_MAX];
        if (!tg_fmt_name_ok(e->string)) {
            tg_err("%s: attribute name '%s' is empty, too long or has control characters",
                   what, tg_json_shown(e->string));
            nattr = k;
            goto done;
        }
        snprintf(awhat, sizeof awhat, "%s: attribute '%s'", what, e->string);
        if (parse_attr(r, e, &attr[k], awhat) < 0) {
            nattr = k + 1;
            goto done;
        }
    }
    int first;
    if (tg_op_is_control(op)) {             /* its outputs are declared, then checked */
        int nout = cJSON_GetArraySize(f[N_OUTPUTS]);
        tg_dtype dts[TG_MAX_NODE_OUTPUTS];
        tg_shape shapes[TG_MAX_NODE_OUTPUTS];
        first = nout < 1 || nout > TG_MAX_NODE_OUTPUTS
                    ? tg_err("%s: lists %d outputs, expected 1 to %d", what, nout,
                             TG_MAX_NODE_OUTPUTS)
                    : 0;
        k = 0;
        for (const cJSON *o = f[N_OUTPUTS]->child; o && first >= 0; o = o->next, k++) {
            int vi = cJSON_IsString(o) ? find_val(r, o->valuestring) : -1;
            if (vi < 0)
                first = tg_err("%s: output %d must be a declared value", what, k);
            else
                dts[k] = r->vals[vi].dtype, shapes[k] = r->vals[vi].shape;
        }
        if (first >= 0)
            first = tg_graph_add_declared_node(r->g, op, name, nin, in, nattr, attr, nout, dts,
                                               shapes);
    } else if (runtime_attrs(attr, nattr) || tg_op_is_data(op)) {  /* declared, not inferred */
        const cJSON *o = f[N_OUTPUTS]->child;
        int vi = o && cJSON_IsString(o) ? find_val(r, o->valuestring) : -1;
        first = vi < 0 ? tg_err("%s: its output must be a declared value", what)
                       : tg_graph_add_dynamic_node(r->g, op, name, nin, in, nattr, attr,
                                                   r->vals[vi].dtype, &r->vals[vi].shape);
    } else
        first = tg_graph_add_node(r->g, op, name, nin, in, nattr, attr);
    if (first < 0) {
        tg_err("graph: %s", tg_errmsg());
        goto done;
    }
    const tg_node *nd = &r->g->nodes[r->g->nnode - 1];
    if (cJSON_GetArraySize(f[N_OUTPUTS]) != nd->nout) {
        tg_err("%s: lists %d outputs but op %s makes %d", what,
               cJSON_GetArraySize(f[N_OUTPUTS]), tg_op_name(op), nd->nout);
        goto done;
    }
    k = 0;
    for (const cJSON *e = f[N_OUTPUTS]->child; e; e = e->next, k++)
        if (check_output(r, e, nd->out[k], what) < 0)
            goto done;
    if (f[N_SOURCE])
        tg_graph_set_source(r->g, first, f[N_SOURCE]->valuestring);
    rc = 0;
done:
    free(in);
    free_attrs(attr, nattr);
    return rc;
}

static int build_graph(reader *r)
{
    if (make_values(r) < 0)
        return -1;
    int i = 0;
    for (const cJSON *j = r->gtop[G_NODES]->child; j; j = j->next, i++)
        if (parse_node(r, j, i) < 0)
            return -1;
    for (i = 0; i < r->nvals; i++)
        if (r->vals[i].id < 0)
            return tg_err("graph: value '%s' is of kind node but no node produces it",
                          r->vals[i].name);
    for (const cJSON *j = r->gtop[G_OUTPUTS]->child; j; j = j->next) {
        int id = ref(r, j, false, "graph: outputs");
        if (id < 0 || tg_graph_add_output(r->g, id) < 0)
            return -1;
    }
    return 0;
}

/* Check the header and the graph's declarations before reading the data, so a
 * bad file fails before megabytes of weights stream in. */
static int read_all(reader *r)
{
    uint64_t hlen = 0;
    if (read_frame(r, &hlen) < 0 || parse_header(r, hlen) < 0)
        return -1;
    if (!(r->g = tg_graph_new()))
        return tg_err("out of memory");
    if (parse_symbols(r) < 0 || parse_values(r) < 0 || match_tensors(r) < 0 ||
        read_data(r) < 0 || build_graph(r) < 0)
        return -1;
    return 0;
}

static tg_graph *read_source(source in)
{
    reader r = {.in = in};
    tg_graph *g = NULL;
    if (read_all(&r) == 0) {
        g = r.g;
        r.g = NULL;
    }
    tg_graph_free(r.g);
    for (int i = 0; i < r.ntens; i++)
        free(r.tens[i].data);
    free(r.tens);
    free(r.vals);
    free(r.by_name);
    cJSON_Delete(r.gj);
    cJSON_Delete(r.hdr);
    free(r.header);
    return g;
}

tg_graph *tg_graph_read(FILE *f)
{
    source s = {.f = f, .size = -1};
    struct stat st;
    off_t pos;
    if (fstat(fileno(f), &st) == 0 && S_ISREG(st.st_mode) && (pos = ftello(f)) >= 0 &&
        pos <= st.st_size)
        s.size = st.st_size - pos;
    return read_source(s);
}

tg_graph *tg_graph_read_mem(const uint8_t *buf, size_t len)
{
    source s = {.buf = buf, .len = len, .size = (int64_t)len};
    return read_source(s);
}

tg_graph *tg_graph_load(const char *path)
{
    if (!strcmp(path, "-"))
        return tg_graph_read(stdin);
    FILE *f = fopen(path, "rb");
    if (!f)
        return tg_err("%s", strerror(errno)), NULL;
    tg_graph *g = tg_graph_read(f);
    fclose(f);
    return g;
}
