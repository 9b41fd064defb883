/* TG format: round trips (graph equality, byte-identical rewrite), every
 * malformation class, truncation at every byte (replay_tg replays the fuzz corpus).
 *   test_format              run the tests
 *   test_format --seed DIR   write small valid files (seed-0 small, seed-1 with
 *                            every dtype and attribute kind, seed-2 empty)
 *   test_format --rewrite IN OUT   read a TG file and write it again (format.bats) */
#include <dirent.h>
#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "error.h"
#include "format.h"
#include "graph.h"
#include "unit.h"

/* ---- building test graphs ---- */

static void fill_random(void *p, size_t n, tg_dtype dt)
{
    unsigned char *b = p;
    for (size_t i = 0; i < n; i++)
        b[i] = dt == TG_BOOL ? (unsigned char)(rand() & 1) : (unsigned char)(rand() >> 7);
}

static int add_const(tg_graph *g, const char *name, tg_dtype dt, int rank, const int64_t *dims)
{
    tg_shape s = tg_shape_of(rank, dims);
    size_t n = tg_dtype_size(dt);
    for (int i = 0; i < rank; i++)
        n *= (size_t)dims[i];
    void *data = malloc(n ? n : 1);
    fill_random(data, n, dt);
    return tg_graph_add_const(g, name, dt, &s, data, n);
}

static int node(tg_graph *g, tg_op op, const char *name, int nin, const int *in, int nattr,
                const tg_attr *attr)
{
    int v = tg_graph_add_node(g, op, name, nin, in, nattr, attr);
    if (v < 0)
        fprintf(stderr, "add_node %s: %s\n", name, tg_errmsg());
    return v;
}

/* Symbolic dims, optional inputs, a source, constants of every dtype (also
 * rank 0 and empty), and attributes of every kind including exact-encoding
 * edge cases (-inf, NaN, -0.0, 0.1, denormals, int64 beyond 2^53). */
static tg_graph *make_graph(void)
{
    tg_graph *g = tg_graph_new();
    int batch = tg_graph_add_symbol(g, "batch", 1, 1024);
    tg_graph_add_symbol(g, "unbounded", 0, INT64_MAX);
    tg_shape xs = {2, {tg_dim_sym(batch), tg_dim_const(4)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    tg_shape ys = {1, {tg_dim_sym(1)}};
    int y = tg_graph_add_input(g, "y.ids", TG_I64, &ys);
    int w = add_const(g, "fc1.weight", TG_F32, 2, (int64_t[]){3, 4});
    int b = add_const(g, "fc1.bias", TG_F32, 1, (int64_t[]){3});

    int h = node(g, TG_OP_LINEAR, "fc1", 3, (int[]){x, w, b}, 0, NULL);
    tg_graph_set_source(g, h, "model.py:12 in forward");
    int r = node(g, TG_OP_RELU, "act", 1, &h, 0, NULL);
    tg_graph_rename_value(g, r, "act.out");     /* an output not named after its node */
    tg_attr clamp[] = {tg_attr_float("min", -INFINITY), tg_attr_float("max", 6.0)};
    int c = node(g, TG_OP_CLAMP, "clip", 1, &r, 2, clamp);
    tg_attr gelu[] = {tg_attr_string("approximate", "tanh")};
    int ge = node(g, TG_OP_GELU, "gelu \"quoted\" \xc3\xa9", 1, &c, 1, gelu);
    int lnb = add_const(g, "ln.bias", TG_F32, 1, (int64_t[]){3});
    tg_attr ln[] = {tg_attr_int("axis", -1), tg_attr_float("eps", 0.1)};
    int l = node(g, TG_OP_LAYER_NORM, "ln", 3, (int[]){ge, -1, lnb}, 2, ln);
    tg_dim flat;
    tg_dim_mul(tg_dim_const(3), tg_dim_sym(batch), &flat);
    tg_attr rs[] = {tg_attr_dims("shape", 1, &flat)};
    int f = node(g, TG_OP_RESHAPE, "flat", 1, &l, 1, rs);
    tg_attr red[] = {tg_attr_ints("axes", 1, (int64_t[]){0}), tg_attr_int("keepdim", 1)};
    int s = node(g, TG_OP_REDUCE_SUM, "sum", 1, &f, 2, red);
    tg_attr cast[] = {tg_attr_dtype("dtype", TG_F16)};
    int hf = node(g, TG_OP_CAST, "half", 1, &s, 1, cast);
    tg_attr q[] = {tg_attr_floats("scale", 3, (double[]){0.1, 5e-324, DBL_MAX}),
                   tg_attr_ints("zero_point", 3, (int64_t[]){0, 1, -1}),
                   tg_attr_int("axis", 1), tg_attr_dtype("dtype", TG_I8)};
    int qv = node(g, TG_OP_QUANTIZE, "q", 1, &c, 4, q);
    tg_attr tril[] = {tg_attr_int("k", ((int64_t)1 << 53) + 1)};
    int tl = node(g, TG_OP_TRIL, "tril", 1, &h, 1, tril);
    tg_attr triu[] = {tg_attr_int("k", INT64_MIN)};
    int tu = node(g, TG_OP_TRIU, "triu", 1, &tl, 1, triu);
    tg_attr pad[] = {tg_attr_ints("pads", 4, (int64_t[]){0, 1, 0, 2}), tg_attr_float("value", -0.0)};
    int p = node(g, TG_OP_PAD, "pad", 1, &tu, 2, pad);
    tg_attr lr[] = {tg_attr_float("alpha", NAN)};
    int lk = node(g, TG_OP_LEAKY_RELU, "leaky", 1, &p, 1, lr);
    /* run-time attributes: axes from an input, the output in a data symbol */
    int d = tg_graph_add_data_symbol(g, 0, 3);
    tg_shape dms = {1, {tg_dim_sym(d)}};
    tg_attr dyn[] = {tg_attr_int("keepdim", 0), tg_attr_input("axes", 1, TG_ATTR_INTS)};
    int dm = tg_graph_add_dynamic_node(g, TG_OP_REDUCE_MAX, "dynmax", 2, (int[]){h, y}, 2, dyn,
                                       TG_F32, &dms);
    CHECK(d >= 0 && dm >= 0);

    static const tg_dtype all[] = {TG_F32, TG_F64, TG_F16, TG_BF16, TG_F8E4M3, TG_F8E5M2,
                                   TG_I8, TG_U8, TG_I16, TG_I32, TG_I64, TG_BOOL};
    for (size_t i = 0; i < sizeof all / sizeof *all; i++) {
        char name[32];
        snprintf(name, sizeof name, "k.%s", tg_dtype_name(all[i]));
        add_const(g, name, all[i], 2, (int64_t[]){2, 3 + (int64_t)i});
    }
    add_const(g, "scalar", TG_F64, 0, NULL);
    add_const(g, "empty", TG_F32, 2, (int64_t[]){0, 3});
    tg_graph_add_output(g, hf);
    tg_graph_add_output(g, qv);
    tg_graph_add_output(g, lk);
    tg_graph_add_output(g, y);
    tg_graph_add_output(g, hf);     /* the same value twice is allowed */
    tg_graph_add_output(g, dm);
    return g;
}

/* A tiny graph: one input, one constant, one node. */
static tg_graph *make_small(void)
{
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 64);
    tg_shape xs = {1, {tg_dim_sym(n)}};
    int x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int k = add_const(g, "k", TG_F32, 1, (int64_t[]){1});
    int y = node(g, TG_OP_ADD, "y", 2, (int[]){x, k}, 0, NULL);
    tg_graph_add_output(g, y);
    return g;
}

/* ---- comparing ---- */

static bool graph_eq(const tg_graph *a, const tg_graph *b);

static bool attr_eq(const tg_attr *a, const tg_attr *b)
{
    if (strcmp(a->name, b->name) || a->kind != b->kind || a->n != b->n)
        return false;
    switch (a->kind) {
    case TG_ATTR_INT:
    case TG_ATTR_DTYPE:
    case TG_ATTR_INPUT:
        return a->u.i == b->u.i;
    case TG_ATTR_FLOAT:
        return memcmp(&a->u.f, &b->u.f, sizeof(double)) == 0 || (isnan(a->u.f) && isnan(b->u.f));
    case TG_ATTR_STRING:
        return !strcmp(a->u.s, b->u.s);
    case TG_ATTR_INTS:
        return !memcmp(a->u.ints, b->u.ints, (size_t)a->n * sizeof(int64_t));
    case TG_ATTR_FLOATS:
        return !memcmp(a->u.floats, b->u.floats, (size_t)a->n * sizeof(double));
    case TG_ATTR_DIMS:
        for (int i = 0; i < a->n; i++)
            if (!tg_dim_eq(a->u.dims[i], b->u.dims[i]))
                return false;
        return true;
    case TG_ATTR_GRAPH:     /* a subgraph: equal as a graph */
        return graph_eq(a->u.g, b->u.g);
    }
    return false;
}

static const char *vname(const tg_graph *g, int v) { return v < 0 ? "" : g->values[v].name; }

/* Equal as graphs: by names, not ids (the file may renumber values). */
static bool graph_eq(const tg_graph *a, const tg_graph *b)
{
    if (a->nsym != b->nsym || a->nvalue != b->nvalue || a->nnode != b->nnode ||
        a->ninput != b->ninput || a->noutput != b->noutput)
        return false;
    for (int i = 0; i < a->nsym; i++)
        if (strcmp(a->sym[i].name, b->sym[i].name) || a->sym[i].min != b->sym[i].min ||
            a->sym[i].max != b->sym[i].max || a->sym[i].data != b->sym[i].data)
            return false;
    for (int i = 0; i < a->nvalue; i++) {
        const tg_value *va = &a->values[i];
        int j = tg_graph_find_value(b, va->name);
        if (j < 0)
            return false;
        const tg_value *vb = &b->values[j];
        if (va->kind != vb->kind || va->dtype != vb->dtype || !tg_shape_eq(&va->shape, &vb->shape) ||
            va->nbytes != vb->nbytes || (va->nbytes && memcmp(va->data, vb->data, va->nbytes)))
            return false;
    }
    for (int i = 0; i < a->nnode; i++) {
        const tg_node *na = &a->nodes[i], *nb = &b->nodes[i];
        if (strcmp(na->name, nb->name) || na->op != nb->op || na->nin != nb->nin ||
            na->nout != nb->nout || na->nattr != nb->nattr ||
            strcmp(na->source ? na->source : "", nb->source ? nb->source : ""))
            return false;
        for (int k = 0; k < na->nin; k++)
            if (strcmp(vname(a, na->in[k]), vname(b, nb->in[k])))
                return false;
        for (int k = 0; k < na->nout; k++)
            if (strcmp(vname(a, na->out[k]), vname(b, nb->out[k])))
                return false;
        for (int k = 0; k < na->nattr; k++)
            if (!attr_eq(&na->attr[k], &nb->attr[k]))
                return false;
    }
    for (int i = 0; i < a->ninput; i++)
        if (strcmp(vname(a, a->inputs[i]), vname(b, b->inputs[i])))
            return false;
    for (int i = 0; i < a->noutput; i++)
        if (strcmp(vname(a, a->outputs[i]), vname(b, b->outputs[i])))
            return false;
    return true;
}

/* ---- files in memory ---- */

static uint8_t *write_mem(const tg_graph *g, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    int rc = tg_graph_write(g, f);
    fclose(f);
    if (rc < 0) {
        fprintf(stderr, "write: %s\n", tg_errmsg());
        free(buf);
        return NULL;
    }
    return (uint8_t *)buf;
}

/* The header JSON of a file (a new string). */
static char *header_of(const uint8_t *file, size_t *hlen)
{
    uint64_t n = 0;
    for (int i = 7; i >= 0; i--)
        n = n << 8 | file[i];
    char *h = malloc(n + 1);
    memcpy(h, file + 8, n);
    h[n] = '\0';
    *hlen = n;
    return h;
}

/* A file from header text and data (the header is not padded: readers must
 * accept any length). */
static uint8_t *frame(const char *header, const void *data, size_t dlen, size_t *len)
{
    size_t n = strlen(header);
    uint8_t *f = malloc(8 + n + dlen + 1);
    for (int i = 0; i < 8; i++)
        f[i] = (uint8_t)((uint64_t)n >> (8 * i));
    memcpy(f + 8, header, n);
    if (dlen)
        memcpy(f + 8 + n, data, dlen);
    *len = 8 + n + dlen;
    return f;
}

static char *replace(const char *s, const char *from, const char *to)
{
    const char *at = strstr(s, from);
    if (!at)
        return NULL;
    size_t a = (size_t)(at - s), nf = strlen(from), nt = strlen(to);
    char *r = malloc(strlen(s) - nf + nt + 1);
    memcpy(r, s, a);
    memcpy(r + a, to, nt);
    strcpy(r + a + nt, at + nf);
    return r;
}

/* The valid file with one text replacement in the header (graph == false) or
 * in the graph JSON inside it (graph == true); the data is kept. */
static uint8_t *mutate(const uint8_t *file, size_t len, bool graph, const char *from,
                       const char *to, size_t *outlen)
{
    size_t hlen;
    char *h = header_of(file, &hlen), *nh;
    if (graph) {
        cJSON *j = cJSON_Parse(h);
        cJSON *meta = cJSON_GetObjectItem(j, "__metadata__");
        char *gs = replace(cJSON_GetObjectItem(meta, "tgraph")->valuestring, from, to);
        if (!gs) {
            fprintf(stderr, "mutate: '%s' not in the graph JSON\n", from);
            exit(2);
        }
        cJSON_ReplaceItemInObject(meta, "tgraph", cJSON_CreateString(gs));
        free(gs);
        nh = cJSON_PrintUnformatted(j);
        cJSON_Delete(j);
    } else if (!(nh = replace(h, from, to))) {
        fprintf(stderr, "mutate: '%s' not in the header\n", from);
        exit(2);
    }
    uint8_t *f = frame(nh, file + 8 + hlen, len - 8 - hlen, outlen);
    free(h);
    free(nh);
    return f;
}

/* Reading buf must fail with a message containing want; true if so. */
static bool rejects(const uint8_t *buf, size_t len, const char *want)
{
    tg_err_clear();
    tg_graph *g = tg_graph_read_mem(buf, len);
    if (g) {
        fprintf(stderr, "accepted a file that should fail with '%s'\n", want);
        tg_graph_free(g);
        return false;
    }
    if (!strstr(tg_errmsg(), want)) {
        fprintf(stderr, "expected '%s', got '%s'\n", want, tg_errmsg());
        return false;
    }
    if (strchr(tg_errmsg(), '\n')) {
        fprintf(stderr, "message is not one line: '%s'\n", tg_errmsg());
        return false;
    }
    return true;
}

/* ---- tests ---- */

static void test_roundtrip(void)
{
    tg_graph *g = make_graph();
    size_t n1, n2;
    uint8_t *b1 = write_mem(g, &n1);
    CHECK(b1 != NULL);
    tg_graph *h = tg_graph_read_mem(b1, n1);
    if (!h)
        fprintf(stderr, "read: %s\n", tg_errmsg());
    CHECK(h != NULL);
    CHECK(h && graph_eq(g, h));
    uint8_t *b2 = h ? write_mem(h, &n2) : NULL;
    CHECK(b2 && n1 == n2 && !memcmp(b1, b2, n1));

    /* the header is padded to 8 bytes and every tensor is aligned to its element */
    size_t hlen;
    char *hdr = header_of(b1, &hlen);
    CHECK(hlen % 8 == 0 && hdr[0] == '{');
    cJSON *j = cJSON_Parse(hdr);
    bool aligned = true;
    for (cJSON *t = j ? j->child : NULL; t; t = t->next) {
        if (!strcmp(t->string, "__metadata__"))
            continue;
        double b = cJSON_GetArrayItem(cJSON_GetObjectItem(t, "data_offsets"), 0)->valuedouble;
        tg_dtype dt = tg_dtype_from_st_name(cJSON_GetObjectItem(t, "dtype")->valuestring);
        aligned &= fmod(b, (double)tg_dtype_size(dt)) == 0;
    }
    CHECK(aligned);
    cJSON *meta = cJSON_GetObjectItem(j, "__metadata__");
    CHECK(meta && !strcmp(cJSON_GetObjectItem(meta, "format")->valuestring, "tgraph"));
    CHECK(meta && !strcmp(cJSON_GetObjectItem(meta, "version")->valuestring, "1"));
    cJSON_Delete(j);
    free(hdr);

    /* the JSON is what the metadata holds; exact numbers survive */
    char *js = tg_graph_to_json(g);
    CHECK(js && strstr(js, "\"version\":1") && strstr(js, "\"-inf\"") && strstr(js, "\"nan\""));
    CHECK(js && strstr(js, "\"9007199254740993\"") && strstr(js, "\"-9223372036854775808\""));
    CHECK(js && strstr(js, "\"max\":\"9223372036854775807\"") && strstr(js, "-0"));
    CHECK(js && strstr(js, "\"3*batch\"") && strstr(js, "[\"batch\",4]"));
    free(js);

    /* streams: a FILE with unknown size (memory stream) and a regular file */
    FILE *f = fmemopen(b1, n1, "rb");
    tg_graph *s = tg_graph_read(f);
    fclose(f);
    CHECK(s && graph_eq(g, s));
    tg_graph_free(s);

    char dir[] = "/tmp/test_format.XXXXXX", path[64];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/g.tg", dir);
    CHECK(tg_graph_save(g, path) == 0);
    s = tg_graph_load(path);
    CHECK(s && graph_eq(g, s));
    tg_graph_free(s);
    struct stat st;
    CHECK(stat(path, &st) == 0 && (size_t)st.st_size == n1);
    int nfiles = 0;
    DIR *d = opendir(dir);
    for (struct dirent *e; d && (e = readdir(d));)
        nfiles += e->d_name[0] != '.';
    closedir(d);
    CHECK(nfiles == 1);     /* no temporary file left behind */
    unlink(path);
    rmdir(dir);
    CHECK(tg_graph_load("/nonexistent/g.tg") == NULL && strstr(tg_errmsg(), "No such file"));

    tg_graph_free(h);
    tg_graph_free(g);
    free(b1);
    free(b2);
}

/* A constant made after the node that reads it (what constant folding leaves):
 * the file lists inputs and constants before node outputs, so it reads back. */
static void test_late_const(void)
{
    tg_graph *g = make_small();
    int late = add_const(g, "late", TG_F32, 1, (int64_t[]){1});
    tg_graph_replace_uses(g, tg_graph_find_value(g, "k"), late);
    size_t n1, n2;
    uint8_t *b1 = write_mem(g, &n1);
    tg_graph *h = b1 ? tg_graph_read_mem(b1, n1) : NULL;
    CHECK(h && graph_eq(g, h));
    uint8_t *b2 = h ? write_mem(h, &n2) : NULL;
    CHECK(b2 && n1 == n2 && !memcmp(b1, b2, n1));
    CHECK(h && !strcmp(h->values[h->nodes[0].in[1]].name, "late"));
    tg_graph_free(h);
    tg_graph_free(g);
    free(b1);
    free(b2);
}

/* An if node's branches are graphs inside the attribute: they round-trip as
 * graphs, and a branch that differs makes the graphs unequal. */
static void test_subgraph(void)
{
    tg_graph *br[2];
    for (int b = 0; b < 2; b++) {
        br[b] = tg_graph_new();
        int n = tg_graph_add_symbol(br[b], "n", 1, 64);
        tg_shape s = {1, {tg_dim_sym(n)}}, ks = {1, {tg_dim_const(1)}};
        int in[2] = {tg_graph_add_input(br[b], "a", TG_F32, &s),
                     tg_graph_add_input(br[b], "k", TG_F32, &ks)};
        tg_graph_add_output(br[b], node(br[b], b ? TG_OP_MUL : TG_OP_ADD, "y", 2, in, 0, NULL));
    }
    tg_graph *g = tg_graph_new();
    int n = tg_graph_add_symbol(g, "n", 1, 64);
    tg_shape xs = {1, {tg_dim_sym(n)}}, cs = {0, {{0}}};
    int c = tg_graph_add_input(g, "c", TG_BOOL, &cs), x = tg_graph_add_input(g, "x", TG_F32, &xs);
    int k = add_const(g, "k", TG_F32, 1, (int64_t[]){1});
    tg_attr a[2] = {tg_attr_graph("then", br[0]), tg_attr_graph("else", br[1])};
    int y = tg_graph_add_declared_node(g, TG_OP_IF, "y", 3, (int[]){c, x, k}, 2, a, 1,
                                       (tg_dtype[]){TG_F32}, &xs);
    if (y < 0)
        fprintf(stderr, "if: %s\n", tg_errmsg());
    CHECK(y >= 0);
    tg_graph_add_output(g, y);
    size_t n1;
    uint8_t *b1 = write_mem(g, &n1);
    tg_graph *h = b1 ? tg_graph_read_mem(b1, n1) : NULL;
    if (b1 && !h)
        fprintf(stderr, "read: %s\n", tg_errmsg());
    CHECK(h && graph_eq(g, h));
    if (h) {
        tg_graph *e = h->nodes[0].attr[1].u.g;
        e->nodes[0].op = TG_OP_ADD;         /* else now equals then, not the original's */
        CHECK(!graph_eq(g, h));
    }
    for (int b = 0; b < 2; b++)
        tg_graph_free(br[b]);
    tg_graph_free(h);
    tg_graph_free(g);
    free(b1);
}

static void test_writer_refuses(void)
{
    tg_graph *g = make_small();
    size_t n;
    free(g->values[1].name);
    g->values[1].name = strdup("__metadata__");
    CHECK(write_mem(g, &n) == NULL && strstr(tg_errmsg(), "__metadata__"));
    free(g->values[1].name);
    g->values[1].name = strdup("bad\nname");
    CHECK(write_mem(g, &n) == NULL && strstr(tg_errmsg(), "bad name"));
    tg_graph_free(g);

    /* a node named like a constant made after it: readers make constants first */
    g = make_small();
    CHECK(tg_graph_rename_value(g, tg_graph_find_value(g, "y"), "y.out") == 0);
    add_const(g, "y", TG_F32, 1, (int64_t[]){1});
    CHECK(write_mem(g, &n) == NULL && strstr(tg_errmsg(), "node 'y' has the name of a value"));
    tg_graph_free(g);
}

static void test_truncation(void)
{
    tg_graph *g = make_small();
    size_t n;
    uint8_t *b = write_mem(g, &n);
    int accepted = 0, multiline = 0, silent = 0;
    for (size_t i = 0; i < n; i++) {
        /* from memory (size known) and from a stream (size unknown) */
        uint8_t *copy = malloc(i ? i : 1);
        memcpy(copy, b, i);
        tg_err_clear();
        tg_graph *h = tg_graph_read_mem(copy, i);
        accepted += h != NULL;
        silent += !*tg_errmsg();
        multiline += strchr(tg_errmsg(), '\n') != NULL;
        tg_graph_free(h);
        if (i) {
            FILE *f = fmemopen(copy, i, "rb");
            tg_err_clear();
            h = tg_graph_read(f);
            fclose(f);
            accepted += h != NULL;
            silent += !*tg_errmsg();
            tg_graph_free(h);
        }
        free(copy);
    }
    CHECK(accepted == 0);
    CHECK(silent == 0);
    CHECK(multiline == 0);
    CHECK(rejects(b, 0, "empty input"));
    CHECK(rejects(b, 5, "truncated"));
    CHECK(rejects(b, 20, "truncated: the header needs"));
    CHECK(rejects(b, n - 1, "out of range"));
    FILE *f = fmemopen(b, n - 1, "rb");
    CHECK(tg_graph_read(f) == NULL && strstr(tg_errmsg(), "truncated: the data ends inside"));
    fclose(f);
    free(b);
    tg_graph_free(g);
}

typedef struct {
    bool graph;             /* replace inside the graph JSON, else in the header */
    const char *from, *to, *want;
} mutation;

/* Each malformation class, as one replacement in a valid small file. The
 * small file's header is {"__metadata__":{...},"k":{"dtype":"F32","shape":[1],
 * "data_offsets":[0,4]}} and its graph has symbol n, input x, const k, node y. */
static const mutation mutations[] = {
    {false, "{\"__metadata__\"", "[{\"__metadata__\"", "header: not valid JSON"},
    {false, "\"format\":\"tgraph\"", "\"format\":\"pt\"", "not \"tgraph\""},
    {false, "\"version\":\"1\"", "\"version\":\"3\"", "version 3 is newer than this reader"},
    {false, "\"version\":\"1\"", "\"version\":\"one\"", "not a format version"},
    {false, "\"format\":\"tgraph\"", "\"format\":\"tgraph\",\"n\":3", "is not a string"},
    {false, "\"dtype\":\"F32\"", "\"dtype\":\"C64\"", "unknown dtype C64"},
    {false, "\"dtype\":\"F32\"", "\"dtype\":\"F32\",\"x\":1", "unknown member 'x'"},
    {false, "\"shape\":[1]", "\"shape\":[4294967296,4294967296,16]", "overflows"},
    {false, "\"shape\":[1]", "\"shape\":[-1]", "non-negative integers"},
    {false, "\"shape\":[1]", "\"shape\":[1.5]", "non-negative integers"},
    {false, "\"shape\":[1]", "\"shape\":[9007199254740993]", "non-negative integers"},
    {false, "\"shape\":[1]", "\"shape\":[1,1,1,1,1,1,1,1,1]", "at most 8"},
    {false, "\"data_offsets\":[0,4]", "\"data_offsets\":[4,0]", "end before they begin"},
    {false, "\"data_offsets\":[0,4]", "\"data_offsets\":[0,8]", "hold 8 bytes"},
    {false, "\"data_offsets\":[0,4]", "\"data_offsets\":[0]", "must be [begin, end]"},
    {false, "\"shape\":[1],\"data_offsets\":[0,4]", "\"shape\":[1000],\"data_offsets\":[0,4000]",
     "data_offsets of 'k' out of range"},
    {false, "\"data_offsets\":[0,4]}", "\"data_offsets\":[0,4]},\"k2\":{\"dtype\":\"F32\",\"shape\":[0],"
     "\"data_offsets\":[0,0]}", "tensor 'k2' is not a constant"},
    {false, "\"data_offsets\":[0,4]}", "\"data_offsets\":[0,4]},\"k\":{\"dtype\":\"F32\",\"shape\":[1],"
     "\"data_offsets\":[0,4]}", "member 'k' appears twice"},
    {false, "\"shape\":[1],\"data_offsets\":[0,4]", "\"shape\":[],\"data_offsets\":[0,4]},"
     "\"k2\":{\"dtype\":\"I16\",\"shape\":[],\"data_offsets\":[2,4]", "overlap"},
    {false, "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]",
     "\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[2,4]", "belong to no tensor"},
    {false, "\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]",
     "\"dtype\":\"I16\",\"shape\":[1],\"data_offsets\":[0,2]", "cover 2 bytes of data but 4 follow"},
    {true, "{\"version\":1,", "{\"version\":1,,", "graph: not valid JSON (byte 13)"},
    {true, "{\"version\":1,", "{\"version\":01,", "graph: not valid JSON (byte 12)"},
    {true, "\"name\":\"x\",\"kind\"", "\"name\":\"x\\u0000y\",\"kind\"", "graph: not valid JSON"},
    {true, "\"name\":\"x\",\"kind\"", "\"name\":\"x\\ud800\",\"kind\"", "bad \\u escape"},
    {false, "\"format\"", "\"form\\u0000at\"", "header: not valid JSON"},
    {true, "{\"version\":1,", "{\"version\":2,", "graph: version must be 1"},
    {true, "{\"version\":1,", "{\"version\":1,\"extra\":[],", "graph: unknown member 'extra'"},
    {true, "\"min\":1,\"max\":64", "\"min\":65,\"max\":64", "bad range"},
    {true, "\"min\":1,", "\"min\":9007199254740992,", "cannot be exact"},
    {true, "\"symbols\":[", /* 16 more than its one */
     "\"symbols\":[{\"name\":\"a\",\"min\":1,\"max\":2},{\"name\":\"b\",\"min\":1,\"max\":2},"
     "{\"name\":\"c\",\"min\":1,\"max\":2},{\"name\":\"d\",\"min\":1,\"max\":2},"
     "{\"name\":\"e\",\"min\":1,\"max\":2},{\"name\":\"f\",\"min\":1,\"max\":2},"
     "{\"name\":\"g\",\"min\":1,\"max\":2},{\"name\":\"h\",\"min\":1,\"max\":2},"
     "{\"name\":\"i\",\"min\":1,\"max\":2},{\"name\":\"j\",\"min\":1,\"max\":2},"
     "{\"name\":\"k\",\"min\":1,\"max\":2},{\"name\":\"l\",\"min\":1,\"max\":2},"
     "{\"name\":\"m\",\"min\":1,\"max\":2},{\"name\":\"o\",\"min\":1,\"max\":2},"
     "{\"name\":\"p\",\"min\":1,\"max\":2},{\"name\":\"q\",\"min\":1,\"max\":2},", "too many symbols"},
    {true, "{\"name\":\"n\"", "{\"name\":\"2n\"", "not an identifier"},
    {true, "\"shape\":[\"n\"]", "\"shape\":[\"2*m\"]", "unknown symbol 'm'"},
    {true, "\"shape\":[\"n\"]", "\"shape\":[\"n+\"]", "unexpected end"},
    {true, "\"shape\":[\"n\"]", "\"shape\":[true]", "integer or an expression"},
    {true, "\"kind\":\"input\"", "\"kind\":\"weird\"", "kind must be"},
    {true, "\"dtype\":\"f32\"", "\"dtype\":\"f33\"", "unknown dtype f33"},
    {true, "\"kind\":\"const\",\"dtype\":\"f32\"", "\"kind\":\"const\",\"dtype\":\"f64\"",
     "differs from its tensor"},
    {true, "{\"name\":\"k\",\"kind\":\"const\"", "{\"name\":\"x\",\"kind\":\"const\"", "declared twice"},
    {true, "\"op\":\"add\"", "\"op\":\"frobnicate\"", "unknown op frobnicate"},
    {true, "\"inputs\":[\"x\",\"k\"]", "\"inputs\":[\"x\",\"nope\"]", "'nope' is not a declared value"},
    {true, "\"inputs\":[\"x\",\"k\"]", "\"inputs\":[\"x\",\"y\"]",
     "'y' is not defined before use (cycle or undefined value)"},
    {true, "\"inputs\":[\"x\",\"k\"]", "\"inputs\":[\"x\",\"k\",\"k\"]", "takes 2 inputs, got 3"},
    {true, "\"inputs\":[\"x\",\"k\"]", "\"inputs\":[\"x\",7]", "must be strings"},
    {true, "\"kind\":\"node\",\"dtype\":\"f32\",\"shape\":[\"n\"]",
     "\"kind\":\"node\",\"dtype\":\"f32\",\"shape\":[\"2*n\"]", "stored as f32[2*n] but infers as f32[n]"},
    {true, "\"outputs\":[\"y\"],\"attrs\"", "\"outputs\":[\"x\"],\"attrs\"", "declared as input"},
    {true, "\"outputs\":[\"y\"],\"attrs\"", "\"outputs\":[],\"attrs\"", "lists 0 outputs"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"int\":1,\"float\":2}}", "exactly one of"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"int\":1},\"a\":{\"int\":2}}", "appears twice"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"float\":\"infinity\"}}", "is not a number"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"int\":\"12x\"}}", "is not an integer"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"int\":\"99999999999999999999\"}}", "does not fit"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"ints\":[1,2.5]}}", "element 1: not an integer"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"dims\":[\"q\"]}}", "unknown symbol 'q'"},
    {true, "\"attrs\":{}", "\"attrs\":{\"a\":{\"dtype\":\"f99\"}}", "unknown dtype"},
    {true, "\"attrs\":{}", "\"attrs\":[]", "attrs (an object)"},
    {true, "\"attrs\":{}", "\"attrs\":{},\"colour\":\"red\"", "unknown member 'colour'"},
    {true, "\"outputs\":[\"y\"],\"values\"", "\"outputs\":[\"zz\"],\"values\"", "'zz' is not a declared value"},
    {true, "\"inputs\":[\"x\"],\"outputs\"", "\"inputs\":[],\"outputs\"", "inputs lists 0 values"},
    {true, "\"inputs\":[\"x\"],\"outputs\"", "\"inputs\":[\"k\"],\"outputs\"", "not of kind input"},
    {true, "\"nodes\":[{", "\"nodes\":[{\"name\":\"y0\",\"op\":\"relu\",\"inputs\":[\"x\"],\"outputs\":"
     "[\"y0\"],\"attrs\":{}},{", "'y0' is not a declared value"},
    {true, "\"values\":[", "\"values\":[{\"name\":\"ghost\",\"kind\":\"node\",\"dtype\":\"f32\","
     "\"shape\":[]},", "'ghost' is of kind node but no node produces it"},
    {true, "\"nodes\":[", "\"nodes\":7,\"x\":[", "graph: unknown member 'x'"},
    {true, "\"name\":\"x\",\"kind\"", "\"name\":\"x\\nz\",\"kind\"", "without control characters"},
};

static void test_malformed(void)
{
    tg_graph *g = make_small();
    size_t n;
    uint8_t *b = write_mem(g, &n);
    tg_graph *ok = tg_graph_read_mem(b, n);
    CHECK(ok != NULL);
    tg_graph_free(ok);
    for (size_t i = 0; i < sizeof mutations / sizeof *mutations; i++) {
        const mutation *m = &mutations[i];
        size_t mn;
        uint8_t *mb = mutate(b, n, m->graph, m->from, m->to, &mn);
        if (!rejects(mb, mn, m->want))
            fprintf(stderr, "  (mutation %zu: %s -> %s)\n", i, m->from, m->to);
        CHECK(rejects(mb, mn, m->want));
        free(mb);
    }

    /* framing */
    uint8_t big[16] = {0};
    memcpy(big, b, 8);
    big[4] = 0x10;  /* header length 2^36 */
    CHECK(rejects(big, 16, "exceeds the limit"));
    uint8_t tiny[9] = {1, 0, 0, 0, 0, 0, 0, 0, '{'};
    CHECK(rejects(tiny, 9, "too small"));
    size_t hlen, fn;
    char *h = header_of(b, &hlen);
    h[3] = (char)0xff;
    uint8_t *fb = frame(h, b + 8 + hlen, n - 8 - hlen, &fn);
    CHECK(rejects(fb, fn, "not valid UTF-8"));
    free(fb);
    free(h);
    uint8_t *tail = malloc(n + 3);
    memcpy(tail, b, n);
    memcpy(tail + n, "xyz", 3);
    CHECK(rejects(tail, n + 3, "cover 4 bytes of data but 7 follow"));
    FILE *f = fmemopen(tail, n + 3, "rb");
    CHECK(tg_graph_read(f) == NULL && strstr(tg_errmsg(), "trailing bytes"));
    fclose(f);
    free(tail);
    fb = frame("{\"__metadata__\":{\"format\":\"tgraph\",\"version\":\"1\",\"tgraph\":\"{}\"}}  x",
               NULL, 0, &fn);
    CHECK(rejects(fb, fn, "header: not valid JSON (byte 66)"));
    free(fb);
    fb = frame("{\"__metadata__\":{\"format\":\"tgraph\",\"version\":\"1\",\"tgraph\":"
               "\"{\\\"version\\\":1}\"}}", NULL, 0, &fn);
    CHECK(rejects(fb, fn, "graph: symbols must be an array"));
    free(fb);
    fb = frame("{\"__metadata__\":{\"format\":\"tgraph\",\"version\":\"1\",\"tgraph\":\"{}\"}}", NULL,
               0, &fn);
    CHECK(rejects(fb, fn, "graph: version must be 1"));
    free(fb);
    fb = frame("{\"k\":{\"dtype\":\"F32\",\"shape\":[1],\"data_offsets\":[0,4]}}", "abcd", 4, &fn);
    CHECK(rejects(fb, fn, "no __metadata__ (a safetensors file but not a TG graph)"));
    free(fb);
    free(b);
    tg_graph_free(g);

    /* bool tensors hold 0 or 1 */
    g = tg_graph_new();
    add_const(g, "flags", TG_BOOL, 1, (int64_t[]){5});
    memset(g->values[0].data, 1, 5);
    b = write_mem(g, &n);
    b[n - 2] = 2;
    CHECK(rejects(b, n, "bool element 3 is 2, not 0 or 1"));
    free(b);
    tg_graph_free(g);
}

static int write_seeds(const char *dir)
{
    tg_graph *gs[] = {make_small(), make_graph(), tg_graph_new()};
    for (int i = 0; i < 3; i++) {
        char path[4096];
        snprintf(path, sizeof path, "%s/seed-%d", dir, i);
        if (tg_graph_save(gs[i], path) < 0) {
            fprintf(stderr, "test_format: %s: %s\n", path, tg_errmsg());
            return 1;
        }
        tg_graph_free(gs[i]);
    }
    return 0;
}

int main(int argc, char **argv)
{
    unsigned seed = (unsigned)time(NULL);
    srand(seed);
    if (argc == 3 && !strcmp(argv[1], "--seed"))
        return write_seeds(argv[2]);
    if (argc == 4 && !strcmp(argv[1], "--rewrite")) {
        tg_graph *g = tg_graph_load(argv[2]);
        if (!g || tg_graph_save(g, argv[3]) < 0) {
            fprintf(stderr, "test_format: %s: %s\n", g ? argv[3] : argv[2], tg_errmsg());
            tg_graph_free(g);
            return 1;
        }
        tg_graph_free(g);
        return 0;
    }
    printf("seed %u\n", seed);
    test_roundtrip();
    test_late_const();
    test_subgraph();
    test_writer_refuses();
    test_truncation();
    test_malformed();
    tg_err_clear();
    return unit_report();
}
