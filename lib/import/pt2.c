/* torch.export.save archives (PyTorch >= 2.9) to tgraph graphs.
 *
 * The archive (zip.c) holds <prefix>/models/<model>.json, the serialized
 * ExportedProgram, and the weights (pt2_weights.c). Symbols come from
 * range_constraints, renamed s0, s1 ... in the order they first appear in the
 * user inputs' shapes (torch's own names, like s77, change from export to
 * export; --range accepts either). Each node's target is looked up in the
 * operator tables (pt2_ops_*.c); every node that cannot be converted is
 * reported, with its source line, before giving up. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "import/import.h"
#include "import/pt2.h"
#include "import/zip.h"
#include "log.h"
#include "render.h"

/* Cap for symbols whose range has no upper bound (documented in texport(1)). */
#define PT2_DEFAULT_MAX INT32_MAX

/* ---- names ---- */

static uint32_t hash_str(const char *s)
{
    uint32_t h = 2166136261u;
    for (; *s; s++)
        h = (h ^ (uint8_t)*s) * 16777619u;
    return h;
}

const pt2_name *pt2_lookup(const pt2_ctx *c, const char *name)
{
    if (!c->sc.hash_cap)
        return NULL;
    uint32_t mask = (uint32_t)(c->sc.hash_cap - 1);
    for (uint32_t i = hash_str(name) & mask;; i = (i + 1) & mask) {
        int k = c->sc.hash[i];
        if (k < 0)
            return NULL;
        if (!strcmp(c->sc.names[k].name, name))
            return &c->sc.names[k];
    }
}

static int rehash(pt2_ctx *c, int cap)
{
    int *h = malloc((size_t)cap * sizeof *h);
    if (!h)
        return tg_err("out of memory");
    memset(h, 0xff, (size_t)cap * sizeof *h);
    for (int k = 0; k < c->sc.nnames; k++) {
        uint32_t i = hash_str(c->sc.names[k].name) & (uint32_t)(cap - 1);
        while (h[i] >= 0)
            i = (i + 1) & (uint32_t)(cap - 1);
        h[i] = k;
    }
    free(c->sc.hash);
    c->sc.hash = h;
    c->sc.hash_cap = cap;
    return 0;
}

static int bind(pt2_ctx *c, const char *name, pt2_name val)
{
    if (!name)
        return tg_err("an output of the node has no name");
    pt2_name *old = (pt2_name *)pt2_lookup(c, name);
    if (old) {
        val.name = old->name;
        *old = val;
        return 0;
    }
    if (c->sc.nnames == c->sc.names_cap) {
        int cap = c->sc.names_cap ? c->sc.names_cap * 2 : 256;
        pt2_name *p = realloc(c->sc.names, (size_t)cap * sizeof *p);
        if (!p)
            return tg_err("out of memory");
        c->sc.names = p;
        c->sc.names_cap = cap;
    }
    val.name = strdup(name);
    if (!val.name)
        return tg_err("out of memory");
    c->sc.names[c->sc.nnames++] = val;
    if (2 * c->sc.nnames > c->sc.hash_cap)
        return rehash(c, c->sc.hash_cap ? c->sc.hash_cap * 2 : 512);
    uint32_t i = hash_str(name) & (uint32_t)(c->sc.hash_cap - 1);
    while (c->sc.hash[i] >= 0)
        i = (i + 1) & (uint32_t)(c->sc.hash_cap - 1);
    c->sc.hash[i] = c->sc.nnames - 1;
    return 0;
}

void pt2_scope_enter(pt2_ctx *c, pt2_scope *saved)
{
    *saved = c->sc;
    c->sc = (pt2_scope){0};
}

void pt2_scope_leave(pt2_ctx *c, pt2_scope *saved)
{
    for (int i = 0; i < c->sc.nnames; i++)
        free(c->sc.names[i].name);
    free(c->sc.names);
    free(c->sc.hash);
    c->sc = *saved;
}

int pt2_bind_tensor(pt2_ctx *c, const char *name, int v)
{
    return v < 0 ? -1 : bind(c, name, (pt2_name){.kind = PT2_TENSOR, .v = v});
}

int pt2_bind_dim(pt2_ctx *c, const char *name, tg_dim d)
{
    return bind(c, name, (pt2_name){.kind = PT2_SYMINT, .dim = d});
}

/* Output i of a node: outputs are [{"as_tensor"}...], [{"as_tensors": [...]}],
 * [{"as_sym_int": {"as_name"}}] or [{"as_none"}]. */
static const cJSON *out_ref(const cJSON *node, int i)
{
    const cJSON *o;
    cJSON_ArrayForEach(o, cJSON_GetObjectItemCaseSensitive(node, "outputs")) {
        const cJSON *a = o->child;
        if (!a)
            continue;
        if (!strcmp(pt2_key(a), "as_tensors") || !strcmp(pt2_key(a), "as_optional_tensors")) {
            int n = cJSON_GetArraySize(a);
            if (i < n)
                return cJSON_GetArrayItem(a, i);
            i -= n;
        } else if (!strcmp(pt2_key(a), "as_none")) {
            continue;
        } else if (i-- == 0) {
            return a;
        }
    }
    return NULL;
}

const char *pt2_out_name(const cJSON *node, int i)
{
    const cJSON *r = out_ref(node, i);
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(r, "name");
    if (!n)
        n = cJSON_GetObjectItemCaseSensitive(r, "as_name");
    if (!n && r && r->child && !strcmp(pt2_key(r->child), "as_tensor"))   /* optional list */
        n = cJSON_GetObjectItemCaseSensitive(r->child, "name");
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

int pt2_out_count(const cJSON *node)
{
    int n = 0;
    while (out_ref(node, n))
        n++;
    return n;
}

int pt2_set_out(pt2_ctx *c, int i, int v)
{
    if (v < 0)
        return -1;
    const char *name = pt2_out_name(c->node, i);
    if (!name)
        return tg_err("output %d missing from the program", i);
    return pt2_bind_tensor(c, name, v);
}

tg_dtype pt2_dtype(int64_t st)
{
    switch (st) {
    case 1: return TG_U8;
    case 2: return TG_I8;
    case 3: return TG_I16;
    case 4: return TG_I32;
    case 5: return TG_I64;
    case 6: return TG_F16;
    case 7: return TG_F32;
    case 8: return TG_F64;
    case 12: return TG_BOOL;
    case 13: return TG_BF16;
    case 28: return TG_U16;     /* torch's uint16/32/64: storage and casts, few kernels */
    case 34: return TG_U32;
    case 35: return TG_U64;
    case 29: return TG_F8E4M3;
    case 30: return TG_F8E5M2;
    default: return TG_DTYPE_NONE;
    }
}

/* ---- the archive ---- */

/* cJSON rejects the bare Infinity / NaN tokens older torch versions wrote:
 * quote them (outside strings) so they read like the newer form. */
static char *quote_nonfinite(const char *s, size_t len)
{
    char *out = malloc(len * 2 + 1), *o = out;
    if (!out)
        return NULL;
    bool str = false;
    for (size_t i = 0; i < len; i++) {
        if (str) {
            *o++ = s[i];
            if (s[i] == '\\' && i + 1 < len)
                *o++ = s[++i];
            else if (s[i] == '"')
                str = false;
            continue;
        }
        if (s[i] == '"')
            str = true;
        static const char *tok[] = {"-Infinity", "Infinity", "NaN"};
        bool hit = false;
        for (int k = 0; k < 3 && !hit; k++) {
            size_t n = strlen(tok[k]);
            if (len - i >= n && !memcmp(s + i, tok[k], n)) {
                *o++ = '"';
                memcpy(o, tok[k], n);
                o += n;
                *o++ = '"';
                i += n - 1;
                hit = true;
            }
        }
        if (!hit)
            *o++ = s[i];
    }
    *o = 0;
    return out;
}

static cJSON *read_json(tg_zip *z, const char *entry)
{
    int i = tg_zip_find(z, entry);
    if (i < 0) {
        tg_err("archive entry %s missing", entry);
        return NULL;
    }
    size_t len;
    char *txt = tg_zip_read(z, i, &len);
    if (!txt)
        return NULL;
    char *fixed = quote_nonfinite(txt, len);
    free(txt);
    if (!fixed) {
        tg_err("out of memory");
        return NULL;
    }
    const char *end = NULL;
    cJSON *j = cJSON_ParseWithOpts(fixed, &end, 1);
    if (!j)
        tg_err("%s: malformed JSON (near byte %td)", entry, end ? end - fixed : (ptrdiff_t)0);
    free(fixed);
    return j;
}

/* Read a small text entry into buf; "" when absent. */
static int read_small(tg_zip *z, const char *entry, char *buf, size_t n)
{
    buf[0] = 0;
    int i = tg_zip_find(z, entry);
    if (i < 0)
        return 0;
    size_t len;
    char *t = tg_zip_read(z, i, &len);
    if (!t)
        return -1;
    snprintf(buf, n, "%s", t);
    buf[strcspn(buf, "\r\n")] = 0;
    free(t);
    return 0;
}

/* The top folder, the layout version, and the model's JSON entry. */
static int find_layout(tg_zip *z, char *prefix, size_t np, char *model, size_t nm)
{
    const tg_zip_entry *first = tg_zip_entry_at(z, 0);
    const char *slash = first ? strchr(first->name, '/') : NULL;
    bool legacy = false;
    for (int i = 0; i < tg_zip_count(z); i++) {
        const char *nm_ = tg_zip_entry_at(z, i)->name, *b = strrchr(nm_, '/');
        legacy |= !strcmp(b ? b + 1 : nm_, "serialized_exported_program.json");
    }
    if (legacy)
        return tg_err("unsupported legacy .pt2 (torch <= 2.8); re-save with torch >= 2.9");
    if (!slash || (size_t)(slash - first->name) >= np)
        return tg_err("not a torch.export archive (entries have no top folder)");
    snprintf(prefix, np, "%.*s", (int)(slash - first->name), first->name);

    char entry[512], txt[64];
    snprintf(entry, sizeof entry, "%s/archive_format", prefix);
    if (read_small(z, entry, txt, sizeof txt) < 0)
        return -1;
    if (!*txt) {
        snprintf(entry, sizeof entry, "%s/data.pkl", prefix);
        if (tg_zip_find(z, entry) >= 0)
            return tg_err("a torch.save checkpoint, not a torch.export.save archive");
        return tg_err("not a torch.export archive (no archive_format entry)");
    }
    if (strcmp(txt, "pt2"))
        return tg_err("archive_format is '%s', expected 'pt2'", txt);
    snprintf(entry, sizeof entry, "%s/byteorder", prefix);
    if (read_small(z, entry, txt, sizeof txt) < 0)
        return -1;
    if (*txt && strcmp(txt, "little"))
        return tg_err("archive written %s-endian; only little-endian is supported", txt);

    /* models/model.json, or the only models/<name>.json */
    snprintf(entry, sizeof entry, "%s/models/", prefix);
    size_t el = strlen(entry);
    int found = 0;
    for (int i = 0; i < tg_zip_count(z); i++) {
        const char *n = tg_zip_entry_at(z, i)->name;
        size_t l = strlen(n);
        if (strncmp(n, entry, el) || l < el + 6 || strcmp(n + l - 5, ".json") ||
            strchr(n + el, '/'))
            continue;
        if (!found || !strncmp(n + el, "model.json", 10))
            snprintf(model, nm, "%.*s", (int)(l - el - 5), n + el);
        found++;
    }
    if (!found) {
        snprintf(entry, sizeof entry, "%s/data/aotinductor/", prefix);
        for (int i = 0; i < tg_zip_count(z); i++)
            if (!strncmp(tg_zip_entry_at(z, i)->name, entry, strlen(entry)))
                return tg_err("an AOTInductor package (compiled code), not an exported "
                              "program; save the program with torch.export.save");
        return tg_err("archive entry %s/models/model.json missing", prefix);
    }
    if (found > 1 && strcmp(model, "model"))
        return tg_err("archive holds %d programs and none is called 'model'", found);
    return 0;
}

/* ---- symbols ---- */

static const cJSON *meta_of(const cJSON *graph, const char *name)
{
    return cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(graph, "tensor_values"), name);
}

static const char *user_input_name(const cJSON *spec)
{
    const cJSON *u = cJSON_GetObjectItemCaseSensitive(spec, "user_input");
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(u, "arg"), "as_tensor");
    const cJSON *n = cJSON_GetObjectItemCaseSensitive(t, "name");
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

/* Position of identifier id in s as a whole word, or -1. */
static long word_pos(const char *s, const char *id)
{
    size_t n = strlen(id);
    for (const char *p = strstr(s, id); p; p = strstr(p + 1, id)) {
        bool before = p == s || !(p[-1] == '_' || (p[-1] >= 'a' && p[-1] <= 'z') ||
                                  (p[-1] >= 'A' && p[-1] <= 'Z') || (p[-1] >= '0' && p[-1] <= '9'));
        char a = p[n];
        bool after = !(a == '_' || (a >= 'a' && a <= 'z') || (a >= 'A' && a <= 'Z') ||
                       (a >= '0' && a <= '9'));
        if (before && after)
            return p - s;
    }
    return -1;
}

static int64_t bound(const cJSON *j, int64_t dflt)
{
    int64_t v;
    if (!j || cJSON_IsNull(j) || pt2_json_int(j, &v) < 0 || v > PT2_DEFAULT_MAX)
        return dflt;
    return v;
}

static int add_symbols(pt2_ctx *c, const cJSON *prog, const cJSON *graph, const cJSON *specs,
                       const tg_import_opts *opts)
{
    const cJSON *rc = cJSON_GetObjectItemCaseSensitive(prog, "range_constraints"), *r, *spec;
    if (rc && !cJSON_IsObject(rc) && !cJSON_IsNull(rc))
        return tg_err("models JSON: range_constraints is not an object");
    int n = cJSON_GetArraySize(rc), order[64], norder = 0;
    if (n > TG_MAX_SYMS)
        return tg_err("%d dynamic dimensions; tgraph supports at most %d", n, TG_MAX_SYMS);
    /* order of first appearance in the user inputs' sizes, then the rest */
    cJSON_ArrayForEach(spec, specs) {
        const char *in = user_input_name(spec);
        const cJSON *sz, *sizes = cJSON_GetObjectItemCaseSensitive(meta_of(graph, in), "sizes");
        cJSON_ArrayForEach(sz, sizes) {
            const cJSON *e = cJSON_GetObjectItemCaseSensitive(
                cJSON_GetObjectItemCaseSensitive(sz, "as_expr"), "expr_str");
            for (;;) {
                long best = -1;
                int bi = -1, k = 0;
                cJSON_ArrayForEach(r, rc) {
                    bool taken = false;
                    for (int j = 0; j < norder; j++)
                        taken |= order[j] == k;
                    long p = cJSON_IsString(e) && !taken ? word_pos(e->valuestring, r->string) : -1;
                    if (p >= 0 && (best < 0 || p < best)) {
                        best = p;
                        bi = k;
                    }
                    k++;
                }
                if (bi < 0)
                    break;
                order[norder++] = bi;
            }
        }
    }
    for (int k = 0; k < n; k++) {
        bool taken = false;
        for (int j = 0; j < norder; j++)
            taken |= order[j] == k;
        if (!taken)
            order[norder++] = k;
    }
    for (int j = 0; j < norder; j++) {
        r = cJSON_GetArrayItem(rc, order[j]);
        char name[16];
        snprintf(name, sizeof name, "s%d", j);
        int64_t lo = bound(cJSON_GetObjectItemCaseSensitive(r, "min_val"), 0);
        int64_t hi = bound(cJSON_GetObjectItemCaseSensitive(r, "max_val"), PT2_DEFAULT_MAX);
        for (int k = 0; opts && k < opts->nrange; k++)
            if (!strcmp(opts->range[k].name, name) || !strcmp(opts->range[k].name, r->string)) {
                lo = opts->range[k].min;
                hi = opts->range[k].max;
            }
        if (tg_graph_add_symbol(c->g, name, lo, hi) < 0)
            return tg_err("symbol %s (%s): %s", name, r->string, tg_errmsg());
        c->tsym[j] = strdup(r->string);
        if (!c->tsym[j])
            return tg_err("out of memory");
        TG_LOG(IMPORT, TG_LOG_INFO, "symbol %s (torch %s): %lld..%lld", name, r->string,
               (long long)lo, (long long)hi);
    }
    for (int k = 0; opts && k < opts->nrange; k++) {
        bool used = tg_graph_find_symbol(c->g, opts->range[k].name) >= 0;
        for (int j = 0; j < norder; j++)
            used |= !strcmp(c->tsym[j], opts->range[k].name);
        if (!used) {
            char dims[1024] = "";
            for (int j = 0; j < norder; j++)
                snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s (torch %s)",
                         j ? ", " : "", c->g->sym[j].name, c->tsym[j]);
            return tg_err("--range %s: the program has no such dynamic dimension (%s%s)",
                          opts->range[k].name, norder ? "its dims: " : "it has none", dims);
        }
    }
    return 0;
}

/* ---- inputs ---- */

static int meta_shape(const pt2_ctx *c, const cJSON *meta, tg_dtype *dt, tg_shape *s)
{
    const cJSON *d = cJSON_GetObjectItemCaseSensitive(meta, "dtype"), *sz;
    *dt = cJSON_IsNumber(d) ? pt2_dtype((int64_t)d->valuedouble) : TG_DTYPE_NONE;
    if (*dt == TG_DTYPE_NONE)
        return tg_err("unsupported dtype");
    s->rank = 0;
    cJSON_ArrayForEach(sz, cJSON_GetObjectItemCaseSensitive(meta, "sizes")) {
        if (s->rank >= TG_MAX_RANK)
            return tg_err("rank above %d", TG_MAX_RANK);
        if (pt2_parse_size(c, sz, &s->d[s->rank++]) < 0)
            return -1;
    }
    return 0;
}

static const char *spec_str(const cJSON *o, const char *k)
{
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(o, k);
    return cJSON_IsString(s) ? s->valuestring : NULL;
}

/* The program's own TensorMeta for value name against what tgraph made of it
 * (ours: "the graph infers", "the weight file holds"): a damaged or hostile
 * file's shapes (a -3 or 2^62 dim) must not pass silently. */
static int cross_check(pt2_ctx *c, const cJSON *graph, const char *name, int v, const char *ours)
{
    const cJSON *meta = meta_of(graph, name);
    tg_dtype dt;
    tg_shape s;
    if (!meta || meta_shape(c, meta, &dt, &s) < 0) {
        tg_err_clear();     /* sizes tgraph cannot express: nothing to compare */
        return 0;
    }
    const tg_value *val = pt2_val(c, v);
    if (val->dtype == dt && tg_shape_eq(&val->shape, &s))
        return 0;
    char a[256], b[256];
    tg_shape_format(&val->shape, c->g->sym, a, sizeof a);
    tg_shape_format(&s, c->g->sym, b, sizeof b);
    return tg_err("value '%s': the program declares %s%s, %s %s%s", name, tg_dtype_name(dt), b,
                  ours, tg_dtype_name(val->dtype), a);
}

/* An input's declared dims become the graph's: each must be below 2^53 (the
 * TG format's bound; a -3 is refused by the graph itself). */
static int check_input_dims(const pt2_ctx *c, const char *name, tg_dtype dt, const tg_shape *s)
{
    for (int k = 0; k < s->rank; k++) {
        int64_t v;
        if (tg_dim_is_const(s->d[k], &v) && v >= (int64_t)1 << 53) {
            char b[256];
            tg_shape_format(s, c->g->sym, b, sizeof b);
            return tg_err("value '%s': the program declares %s%s: dimension %d is past 2^53",
                          name, tg_dtype_name(dt), b, k);
        }
    }
    return 0;
}

static int add_inputs(pt2_ctx *c, const cJSON *graph, const cJSON *specs, pt2_weights *w)
{
    const cJSON *spec;
    cJSON_ArrayForEach(spec, specs) {
        const cJSON *k = spec->child;
        if (!k)
            return tg_err("malformed input_specs");
        const char *arg = spec_str(cJSON_GetObjectItemCaseSensitive(k, "arg"), "name");
        const char *fqn = !strcmp(pt2_key(k), "parameter") ? spec_str(k, "parameter_name")
                        : !strcmp(pt2_key(k), "buffer") ? spec_str(k, "buffer_name")
                        : !strcmp(pt2_key(k), "tensor_constant") ? spec_str(k, "tensor_constant_name")
                        : NULL;
        if (fqn && arg) {
            int v = pt2_weight(w, c->g, fqn);
            if (v < 0 || cross_check(c, graph, arg, v, "its weight file holds") < 0 ||
                pt2_bind_tensor(c, arg, v) < 0)
                return -1;
        } else if (!strcmp(pt2_key(k), "user_input")) {
            const char *name = user_input_name(spec);
            const cJSON *a = cJSON_GetObjectItemCaseSensitive(k, "arg");
            if (!name) {
                /* Python constants were specialized away; symbolic ints were not */
                if (a && a->child && !strcmp(pt2_key(a->child), "as_sym_int"))
                    return tg_err("integer inputs are not supported (make them tensors)");
                continue;
            }
            tg_dtype dt;
            tg_shape s;
            if (meta_shape(c, meta_of(graph, name), &dt, &s) < 0)
                return tg_err("input '%s': %s", name, tg_errmsg());
            if (check_input_dims(c, name, dt, &s) < 0)
                return -1;
            if (pt2_bind_tensor(c, name, tg_graph_add_input(c->g, name, dt, &s)) < 0)
                return -1;
        } else if (strcmp(pt2_key(k), "constant_input")) {
            return tg_err("inputs of kind '%s' are not supported", pt2_key(k));
        }
    }
    return 0;
}

/* ---- nodes ---- */

static bool library_frame(const char *path, size_t n)
{
    static const char *lib[] = {"/site-packages/", "/dist-packages/", "/torch/", "/lib/python"};
    if (n && path[0] == '<')
        return true;
    for (size_t k = 0; k < sizeof lib / sizeof *lib; k++) {
        size_t l = strlen(lib[k]);
        for (size_t i = 0; i + l <= n; i++)
            if (!memcmp(path + i, lib[k], l))
                return true;
    }
    return false;
}

/* "file.py:12" from a stack_trace: the last frame of the user's code (not in
 * torch or another installed package), else the last frame. */
static void source_of(const cJSON *node, char *buf, size_t n)
{
    buf[0] = 0;
    const cJSON *st = cJSON_GetObjectItemCaseSensitive(
        cJSON_GetObjectItemCaseSensitive(node, "metadata"), "stack_trace");
    if (!cJSON_IsString(st))
        return;
    bool have_user = false;
    for (const char *p = strstr(st->valuestring, "File \""); p; p = strstr(p + 1, "File \"")) {
        const char *f = p + 6, *q = strchr(f, '"');
        long line;
        if (!q || sscanf(q, "\", line %ld", &line) != 1)
            continue;
        bool user = !library_frame(f, (size_t)(q - f));
        if (user || !have_user)
            snprintf(buf, n, "%.*s:%ld", (int)(q - f), f, line);
        have_user |= user;
    }
}

static pt2_handler find_handler(const char *target)
{
    static const pt2_op_entry *tables[] = {pt2_ops_tensor, pt2_ops_nn, pt2_ops_shape,
                                           pt2_ops_flow};
    char op[128];
    const char *ovl;
    if (!strncmp(target, "torch.ops.aten.", 15)) {
        const char *name = target + 15, *dot = strrchr(name, '.');
        if (!dot || (size_t)(dot - name) >= sizeof op)
            return NULL;
        snprintf(op, sizeof op, "%.*s", (int)(dot - name), name);
        ovl = dot + 1;
        size_t l = strlen(op);
        /* in-place variants (add_, relu_): the functional op, not dunders */
        if (l > 1 && op[l - 1] == '_' && op[l - 2] != '_')
            op[l - 1] = 0;
    } else if (!strncmp(target, "torch.ops.higher_order.", 23)) {
        snprintf(op, sizeof op, "%s", target + 23);
        ovl = "default";
    } else if (!strncmp(target, "_operator.", 10) || !strncmp(target, "builtins.", 9)) {
        snprintf(op, sizeof op, "%s", target);
        ovl = "default";
    } else {
        return NULL;
    }
    size_t ol = strlen(ovl);
    for (size_t t = 0; t < sizeof tables / sizeof *tables; t++)
        for (const pt2_op_entry *e = tables[t]; e->op; e++) {
            if (strcmp(e->op, op))
                continue;
            for (const char *o = e->overloads; *o;) {
                size_t l = strcspn(o, " ");
                if (l == ol && !memcmp(o, ovl, l))
                    return e->fn;
                o += l + (o[l] == ' ');
            }
        }
    return NULL;
}

/* Whether any name the node reads belongs to a node that already failed. */
static bool reads_failed(const pt2_ctx *c, const cJSON *j)
{
    for (const cJSON *e = j ? j->child : NULL; e; e = e->next) {
        if (e->string && !strcmp(e->string, "as_graph"))
            continue;           /* a nested graph's names are its own */
        if (cJSON_IsString(e) && e->string &&
            (!strcmp(e->string, "name") || !strcmp(e->string, "as_name"))) {
            const pt2_name *p = pt2_lookup(c, e->valuestring);
            if (p && p->kind == PT2_GONE && p->failed)
                return true;
        }
        if (reads_failed(c, e))
            return true;
    }
    return false;
}

static void fail_outputs(pt2_ctx *c, const cJSON *node)
{
    for (int i = 0, n = pt2_out_count(node); i < n; i++) {
        const char *o = pt2_out_name(node, i);
        if (o)
            bind(c, o, (pt2_name){.kind = PT2_GONE, .failed = true});
    }
}

static int convert_node(pt2_ctx *c, const cJSON *graph, const cJSON *node, const char *target)
{
    pt2_handler fn = find_handler(target);
    if (!fn && !strncmp(target, "torch.ops.higher_order.", 23))
        return tg_err("unsupported higher-order operator (texport converts cond, while_loop "
                      "and map)");
    if (!fn)
        return tg_err("unsupported operator");
    if (fn(c, node) < 0 || pt2_note_view(c, node) < 0 || pt2_write_back(c, node) < 0)
        return -1;
    for (int i = 0, n = pt2_out_count(node); i < n; i++) {
        const char *o = pt2_out_name(node, i);
        const pt2_name *p = o ? pt2_lookup(c, o) : NULL;
        if (o && !p && bind(c, o, (pt2_name){.kind = PT2_GONE}) < 0)
            return -1;
        if (p && p->kind == PT2_TENSOR && cross_check(c, graph, o, p->v, "the graph infers") < 0)
            return -1;
    }
    return 0;
}

int pt2_convert_nodes(pt2_ctx *c, const cJSON *graph)
{
    const cJSON *node;
    int nfail = 0, nnode = 0;
    char *report = NULL;
    size_t rlen = 0;
    FILE *rep = open_memstream(&report, &rlen);
    if (!rep)
        return tg_err("out of memory");
    const cJSON *outer = c->graph;
    c->graph = graph;
    cJSON_ArrayForEach(node, cJSON_GetObjectItemCaseSensitive(graph, "nodes")) {
        const char *target = spec_str(node, "target"), *name = spec_str(node, "name");
        char src[512];
        source_of(node, src, sizeof src);
        c->node = node;
        c->out0 = pt2_out_name(node, 0) ? pt2_out_name(node, 0) : name ? name : "node";
        c->source = *src ? src : NULL;
        c->nemit = 0;
        nnode++;
        if (!target)
            target = "(no target)";
        bool skip = reads_failed(c, cJSON_GetObjectItemCaseSensitive(node, "inputs"));
        /* downstream of a failure: only say whether the operator is known */
        int rc = skip ? (find_handler(target) ? 0 : tg_err("unsupported operator"))
                      : convert_node(c, graph, node, target);
        if (rc < 0 || skip)
            fail_outputs(c, node);
        if (rc < 0) {
            nfail++;
            fprintf(rep, "\n%s%snode %s (%s): %s", src, *src ? ": " : "",
                    name ? name : "?", target, tg_errmsg());
        } else if (!skip) {
            tg_graph_log_mapped(c->g, c->g->nnode - c->nemit, target, name);
        }
    }
    fclose(rep);
    c->graph = outer;
    if (nfail)
        tg_err("%d of %d operators could not be converted:%s", nfail, nnode, report);
    free(report);
    return nfail ? -1 : 0;
}

static int add_outputs(pt2_ctx *c, const cJSON *specs)
{
    const cJSON *spec;
    cJSON_ArrayForEach(spec, specs) {
        const cJSON *k = spec->child;
        if (!k)
            return tg_err("malformed output_specs");
        if (strcmp(pt2_key(k), "user_output")) {
            /* state updates (buffer mutations) have no place in an inference graph */
            TG_LOG(IMPORT, TG_LOG_WARN, "output of kind '%s' dropped", pt2_key(k));
            continue;
        }
        const cJSON *a = cJSON_GetObjectItemCaseSensitive(k, "arg");
        const char *name = spec_str(cJSON_GetObjectItemCaseSensitive(a, "as_tensor"), "name");
        if (!name)
            return tg_err("non-tensor outputs are not supported");
        const pt2_name *p = pt2_lookup(c, name);
        if (!p || p->kind != PT2_TENSOR)
            return tg_err("output '%s' is not computed", name);
        if (tg_graph_add_output(c->g, p->v) < 0)
            return -1;
    }
    return 0;
}

/* Decompositions can leave nodes whose results nothing uses (a transpose
 * folded into linear). */
int pt2_drop_dead(tg_graph *g)
{
    int *uses = tg_graph_use_counts(g);
    if (!uses)
        return -1;
    for (int i = g->nnode - 1; i >= 0; i--) {
        tg_node *n = &g->nodes[i];
        bool used = false;
        for (int k = 0; k < n->nout; k++)
            used |= uses[n->out[k]] > 0;
        if (used || n->op == TG_OP_NONE)
            continue;
        for (int k = 0; k < n->nin; k++)
            if (n->in[k] >= 0)
                uses[n->in[k]]--;
        tg_graph_kill_node(g, i);
    }
    free(uses);
    return tg_graph_compact(g);
}

static int import_program(pt2_ctx *c, const cJSON *prog, pt2_weights *w,
                          const tg_import_opts *opts)
{
    const cJSON *gm = cJSON_GetObjectItemCaseSensitive(prog, "graph_module");
    const cJSON *graph = cJSON_GetObjectItemCaseSensitive(gm, "graph");
    const cJSON *sig = cJSON_GetObjectItemCaseSensitive(gm, "signature");
    const cJSON *ver = cJSON_GetObjectItemCaseSensitive(prog, "schema_version");
    const cJSON *major = cJSON_GetObjectItemCaseSensitive(ver, "major");
    if (!cJSON_IsObject(graph) || !cJSON_IsObject(sig))
        return tg_err("models JSON: not an exported program (graph_module missing)");
    if (cJSON_IsNumber(major) && major->valueint != 8)
        return tg_err("export schema version %d is not supported (expected 8)", major->valueint);
    const cJSON *ins = cJSON_GetObjectItemCaseSensitive(sig, "input_specs");
    const cJSON *outs = cJSON_GetObjectItemCaseSensitive(sig, "output_specs");
    if (add_symbols(c, prog, graph, ins, opts) < 0 || add_inputs(c, graph, ins, w) < 0 ||
        pt2_convert_nodes(c, graph) < 0 || add_outputs(c, outs) < 0 || pt2_drop_dead(c->g) < 0)
        return -1;
    return tg_graph_validate(c->g);
}

/* The archive z (closed here; NULL when it did not open), named what in the log. */
static tg_graph *import_archive(tg_zip *z, const char *what, const tg_import_opts *opts)
{
    pt2_ctx c = {0};
    char prefix[256], model[256];
    cJSON *prog = NULL;
    pt2_weights *w = NULL;
    int rc = -1;
    if (z && find_layout(z, prefix, sizeof prefix, model, sizeof model) == 0) {
        char entry[600];
        snprintf(entry, sizeof entry, "%s/models/%s.json", prefix, model);
        prog = read_json(z, entry);
        w = prog ? pt2_weights_open(z, prefix, model) : NULL;
        c.g = w ? tg_graph_new() : NULL;
        if (c.g)
            rc = import_program(&c, prog, w, opts);
    }
    if (rc == 0)
        TG_LOG(IMPORT, TG_LOG_INFO, "%s: %d nodes, %d values, %d symbols", what, c.g->nnode,
               c.g->nvalue, c.g->nsym);
    else {
        tg_graph_free(c.g);
        c.g = NULL;
    }
    for (int i = 0; i < TG_MAX_SYMS; i++)
        free(c.tsym[i]);
    pt2_scope_leave(&c, &(pt2_scope){0});
    pt2_weights_close(w);
    cJSON_Delete(prog);
    tg_zip_close(z);
    return c.g;
}

tg_graph *tg_import_pt2(const char *path, const tg_import_opts *opts)
{
    return import_archive(tg_zip_open(path), path, opts);
}

tg_graph *tg_import_pt2_mem(const uint8_t *buf, size_t len, const tg_import_opts *opts)
{
    return import_archive(tg_zip_open_mem(buf, len), "archive in memory", opts);
}
