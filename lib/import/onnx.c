/* ONNX models to tgraph graphs: decoding (libprotobuf-c with the subset in
 * onnx.proto), tensors and external data, symbols, and the walk over the nodes.
 * The op mapping itself is in onnx_ops.c. */
#include <errno.h>
#include <math.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../error.h"
#include "../exec/exec.h"
#include "../log.h"
#include "../passes/passes.h"
#include "../quant/quant.h"
#include "import.h"
#include "onnx_internal.h"
#include "../ops/control.h"

#define ONNX_MAX_FILE ((size_t)2 << 30)     /* protobuf's own limit for one message */
#define ONNX_MIN_OPSET 6     /* older ones differ in more than attributes (see texport(1)) */
/* dim_param symbols get this range unless --range says otherwise (documented in
 * texport(1)). */
#define ONNX_SYM_MIN 1
#define ONNX_SYM_MAX INT32_MAX
/* A node whose inputs are all constants of at most this many bytes together is
 * run at import (every tensor it makes static and at most ONNX_FOLD_OUT bytes,
 * checked before it runs), so that shape arithmetic through any op (Equal,
 * Where, Mod, ...) stays a constant. */
#define ONNX_FOLD_IN (1 << 16)
#define ONNX_FOLD_OUT (1 << 16)

/* ---- the name table --------------------------------------------------------- */

static uint64_t hash_str(const char *s)
{
    uint64_t h = 1469598103934665603u;         /* FNV-1a */
    while (*s) h = (h ^ (unsigned char)*s++) * 1099511628211u;
    return h;
}

static int hash_find(const onnx_ctx *c, const char *name)
{
    if (!c->hash_cap) return -1;
    for (size_t i = hash_str(name) & (c->hash_cap - 1);; i = (i + 1) & (c->hash_cap - 1)) {
        int e = c->hash[i];
        if (e < 0) return -1;
        if (!strcmp(c->ents[e].name, name)) return e;
    }
}

static int hash_grow(onnx_ctx *c)
{
    int cap = c->hash_cap ? c->hash_cap * 2 : 256;
    int *h = malloc(sizeof *h * cap);
    if (!h) return tg_err("out of memory");
    memset(h, 0xff, sizeof *h * cap);
    for (int e = 0; e < c->nent; e++) {
        size_t i = hash_str(c->ents[e].name) & (cap - 1);
        while (h[i] >= 0) i = (i + 1) & (cap - 1);
        h[i] = e;
    }
    free(c->hash);
    c->hash = h;
    c->hash_cap = cap;
    return 0;
}

static void ent_clear(onnx_ent *e)
{
    free(e->data);
    free(e->syms);
    e->data = NULL;
    e->syms = NULL;
}

/* A new entry for name; redefinition replaces (ONNX names are SSA, but a graph
 * input may share a name with an initializer that provides its default). */
static onnx_ent *ent_new(onnx_ctx *c, const char *name)
{
    int e = hash_find(c, name);
    if (e >= 0) {
        ent_clear(&c->ents[e]);
        char *keep = c->ents[e].name;
        memset(&c->ents[e], 0, sizeof c->ents[e]);
        c->ents[e].name = keep;
        c->ents[e].value = -1;
        return &c->ents[e];
    }
    if (c->nent == c->cap) {
        int cap = c->cap ? c->cap * 2 : 128;
        onnx_ent *n = realloc(c->ents, sizeof *n * cap);
        if (!n) return tg_err("out of memory"), NULL;
        c->ents = n;
        c->cap = cap;
    }
    if ((c->nent + 1) * 2 > c->hash_cap && hash_grow(c)) return NULL;
    onnx_ent *p = &c->ents[c->nent];
    memset(p, 0, sizeof *p);
    p->name = strdup(name);
    p->value = -1;
    if (!p->name) return tg_err("out of memory"), NULL;
    size_t i = hash_str(name) & (c->hash_cap - 1);
    while (c->hash[i] >= 0) i = (i + 1) & (c->hash_cap - 1);
    c->hash[i] = c->nent++;
    return p;
}

onnx_ent *onnx_get(onnx_ctx *c, const char *name)
{
    int e = hash_find(c, name);
    if (e < 0) return tg_err("tensor '%s' is used before it is defined", name), NULL;
    return &c->ents[e];
}

int onnx_def_value(onnx_ctx *c, const char *name, int value)
{
    onnx_ent *e = ent_new(c, name);
    if (!e) return -1;
    e->kind = ONNX_ENT_VALUE;
    e->value = value;
    return 0;
}

int onnx_def_const(onnx_ctx *c, const char *name, tg_dtype dt, int rank, const int64_t *dims,
                   void *data)
{
    onnx_ent *e = ent_new(c, name);
    if (!e) return free(data), -1;
    e->kind = ONNX_ENT_CONST;
    e->dtype = dt;
    e->rank = rank;
    int64_t n = 1;
    for (int i = 0; i < rank; i++) n *= (e->dims[i] = dims[i]);
    e->data = data;
    e->nbytes = (size_t)n * tg_dtype_size(dt);
    return 0;
}

int onnx_def_initializers(onnx_ctx *c, Onnx__TensorProto *const *init, size_t n, const char *what)
{
    for (size_t i = 0; i < n; i++) {
        const Onnx__TensorProto *t = init[i];
        tg_dtype dt;
        int rank;
        int64_t dims[TG_MAX_RANK];
        void *data;
        size_t nb;
        if (!t->name) return tg_err("%s %zu has no name", what, i);
        if (onnx_tensor_decode(c, t, &dt, &rank, dims, &data, &nb)) return -1;
        if (onnx_def_const(c, t->name, dt, rank, dims, data)) return -1;
    }
    return 0;
}

int onnx_def_syms(onnx_ctx *c, const char *name, int rank, int n, const tg_dim *syms)
{
    /* All-constant results are ordinary constants: they can become runtime data. */
    int64_t *v = malloc(sizeof *v * (n ? n : 1));
    if (!v) return tg_err("out of memory");
    bool all_const = true;
    for (int i = 0; i < n && all_const; i++) all_const = tg_dim_is_const(syms[i], &v[i]);
    if (all_const) {
        int64_t dims[1] = {n};
        return onnx_def_const(c, name, TG_I64, rank, dims, v);
    }
    free(v);
    onnx_ent *e = ent_new(c, name);
    if (!e) return -1;
    e->kind = ONNX_ENT_SYMS;
    e->rank = rank;
    e->dims[0] = n;
    e->nsyms = n;
    e->syms = malloc(sizeof *e->syms * (n ? n : 1));
    if (!e->syms) return tg_err("out of memory");
    memcpy(e->syms, syms, sizeof *syms * n);
    return 0;
}

/* ---- subgraphs: scopes and captures ---------------------------------------------------- */

/* A name for a new value of g after base, unused there. */
static void unused_name(const tg_graph *g, const char *base, char *name, size_t size)
{
    snprintf(name, size, "%s", base);
    size_t len = strlen(name);
    for (int k = 1; tg_graph_find_value(g, name) >= 0; k++) snprintf(name + len, size - len, "_%d", k);
}

static int cap_push(onnx_scope *sc, int v)
{
    if (sc->ncap == sc->capcap) {
        int n = sc->capcap ? sc->capcap * 2 : 16, *p = realloc(sc->cap, sizeof(int) * (size_t)n);
        if (!p) return tg_err("out of memory");
        sc->cap = p;
        sc->capcap = n;
    }
    sc->cap[sc->ncap++] = v;
    return 0;
}

/* Entry i's value in the subgraph of scope sc, whose graph is g: a new input
 * of it taking the entry's value in the graph around (captured there first,
 * when it is a subgraph too); stored in *slot. */
static int capture(onnx_ctx *c, onnx_scope *sc, tg_graph *g, int i, int *slot)
{
    int *up = &sc->saved[i];
    if (*up == ONNX_CAPTURE && (!sc->up || capture(c, sc->up, sc->outer, i, up) < 0)) return -1;
    if (*up < 0) return tg_err("'%s' comes from an operator that could not be imported", c->ents[i].name);
    const tg_value *ov = &sc->outer->values[*up];
    char name[512];
    unused_name(g, ov->name, name, sizeof name);
    int v = tg_graph_add_input(g, name, ov->dtype, &ov->shape);
    if (v < 0 || cap_push(sc, *up)) return -1;
    return *slot = v;
}

int onnx_scope_enter(onnx_ctx *c, onnx_scope *sc, tg_graph *sub)
{
    *sc = (onnx_scope){.up = c->scope, .outer = c->g, .base = c->nent};
    if (!(sc->saved = malloc(sizeof(int) * (size_t)(c->nent + 1)))) return tg_err("out of memory");
    for (int i = 0; i < c->nent; i++) {
        onnx_ent *e = &c->ents[i];
        sc->saved[i] = e->value;
        /* constants are made again inside; values are captured when used */
        if (e->kind == ONNX_ENT_CONST) e->value = -1;
        else if (e->kind == ONNX_ENT_VALUE && e->value != -1) e->value = ONNX_CAPTURE;
    }
    c->scope = sc;
    c->g = sub;
    return 0;
}

int onnx_scope_leave(onnx_ctx *c, int rc)
{
    onnx_scope *sc = c->scope;
    tg_graph *sub = c->g;
    c->g = sc->outer;
    c->scope = sc->up;
    for (int v = 0; !rc && v < sub->nvalue; v++) {
        if (sub->values[v].kind != TG_VALUE_CONST) continue;
        tg_value cv = sub->values[v];
        void *data;
        size_t nb;
        char name[512];
        unused_name(c->g, cv.name, name, sizeof name);
        int o = tg_graph_const_to_input(sub, v, &data, &nb) ? -1
                : tg_graph_add_const(c->g, name, cv.dtype, &cv.shape, data, nb);
        if (o < 0 || cap_push(sc, o)) rc = -1;
    }
    for (int i = 0; i < c->nent; i++) {
        onnx_ent *e = &c->ents[i];
        if (i < sc->base) {
            e->value = sc->saved[i];
        } else {                        /* the subgraph's own names end with it */
            ent_clear(e);
            e->kind = ONNX_ENT_VALUE;
            e->value = -1;
        }
    }
    free(sc->saved);
    return rc;
}

static void node_name(onnx_ctx *c, const char *suffix, char *name, size_t size);

static int dim_const_value(onnx_ctx *c, int64_t k)
{
    int64_t one = 1, *p = malloc(sizeof *p);
    if (!p) return tg_err("out of memory");
    *p = k;
    tg_shape s = tg_shape_of(1, &one);
    char name[256];
    node_name(c, "dim", name, sizeof name);
    return tg_graph_add_const(c->g, name, TG_I64, &s, p, sizeof *p);
}

/* A symbolic dim as an int64 [1] computed at run time: the shape op on the
 * latest value with a dim d (the inputs carry every symbol the run binds, a
 * node's output each data symbol), or worked out term by term from its
 * symbols. */
static int sym_dim_value(onnx_ctx *c, tg_dim d)
{
    int64_t k;
    if (tg_dim_is_const(d, &k)) return dim_const_value(c, k);
    for (int v = c->g->nvalue - 1; v >= 0; v--) {
        const tg_shape *vs = &c->g->values[v].shape;
        for (int a = 0; a < vs->rank; a++)
            if (tg_dim_eq(vs->d[a], d)) return onnx_shape_data(c, v, a, a + 1, false);
    }
    if (d.nterms == 1 && d.t[0].coef == 1) {
        int n = 0, sym = 0;
        for (int s = 0; s < TG_MAX_SYMS; s++) n += d.t[0].pow[s], sym = d.t[0].pow[s] ? s : sym;
        if (n == 1)
            return tg_err("a dim known only at run time (%s) is used as tensor data, and no value has it",
                          c->g->sym[sym].name);
    }
    int sum = -1;
    for (int t = 0; t < d.nterms; t++) {
        int v = dim_const_value(c, d.t[t].coef);
        for (int s = 0; s < TG_MAX_SYMS; s++)
            for (int p = 0; p < d.t[t].pow[s] && v >= 0; p++) {
                int f = sym_dim_value(c, tg_dim_sym(s)), in[2] = {v, f};
                v = f < 0 ? -1 : onnx_add(c, TG_OP_MUL, "dim_term", 2, in, 0, NULL);
            }
        int in[2] = {sum, v};
        sum = v < 0 ? -1 : t == 0 ? v : onnx_add(c, TG_OP_ADD, "dim_sum", 2, in, 0, NULL);
        if (sum < 0) return -1;
    }
    return sum;
}

int onnx_dims_value(onnx_ctx *c, int rank, int n, const tg_dim *d)
{
    int parts[TG_MAX_RANK * 2], v = -1;
    if (n < 1 || n > (int)(sizeof parts / sizeof parts[0]) || (rank == 0 && n != 1))
        return tg_err("a shape vector of %d elements", n);
    for (int i = 0; i < n; i++)
        if ((parts[i] = sym_dim_value(c, d[i])) < 0) return -1;
    tg_attr ax = tg_attr_int("axis", 0);
    v = n == 1 ? parts[0] : onnx_add(c, TG_OP_CONCAT, "shape", n, parts, 1, &ax);
    if (v >= 0 && rank == 0) {
        tg_attr sc = tg_attr_dims("shape", 0, NULL);
        v = onnx_add(c, TG_OP_RESHAPE, "scalar", 1, &v, 1, &sc);
    }
    return v;
}

int onnx_value(onnx_ctx *c, onnx_ent *e)
{
    if (e->value == ONNX_CAPTURE) return capture(c, c->scope, c->g, (int)(e - c->ents), &e->value);
    if (e->value >= 0) return e->value;
    if (e->kind == ONNX_ENT_VALUE)
        return tg_err("'%s' comes from an operator that could not be imported", e->name);
    if (e->kind == ONNX_ENT_SYMS) {
        if (!c->node) return tg_err("shape value '%s' depends on a dynamic dimension", e->name);
        return e->value = onnx_dims_value(c, e->rank, e->nsyms, e->syms);
    }
    tg_shape s = tg_shape_of(e->rank, e->dims);
    void *copy = malloc(e->nbytes ? e->nbytes : 1);
    if (!copy) return tg_err("out of memory");
    memcpy(copy, e->data, e->nbytes);
    int v = tg_graph_add_const(c->g, e->name, e->dtype, &s, copy, e->nbytes);
    if (v < 0) return -1;
    e->value = v;
    return v;
}

int onnx_int_list(const onnx_ent *e, int max, int64_t *out, int *n)
{
    if (e->kind != ONNX_ENT_CONST)
        return tg_err("'%s' must be a constant here", e->name);
    if (e->rank > 1) return tg_err("'%s' must be a scalar or 1-D", e->name);
    int64_t cnt = e->rank ? e->dims[0] : 1;
    if (cnt > max) return tg_err("'%s' has %lld elements, at most %d allowed", e->name,
                                 (long long)cnt, max);
    for (int64_t i = 0; i < cnt; i++) {
        double d = tg_load_f64(e->dtype, e->data, i);
        if (e->dtype == TG_I64)
            out[i] = ((const int64_t *)e->data)[i];
        else if (d == (double)(int64_t)fmin(fmax(d, -9e18), 9e18))
            out[i] = (int64_t)d;
        else
            return tg_err("'%s' holds %g where an integer is needed", e->name, d);
    }
    *n = (int)cnt;
    return 0;
}

int onnx_dim_list(onnx_ctx *c, const onnx_ent *e, int max, tg_dim *out, int *n)
{
    if (e->kind == ONNX_ENT_SYMS) {
        if (e->nsyms > max) return tg_err("'%s' has too many elements", e->name);
        memcpy(out, e->syms, sizeof *out * e->nsyms);
        *n = e->nsyms;
        return 0;
    }
    int64_t v[TG_MAX_RANK * 2];
    if (max > (int)(sizeof v / sizeof v[0])) max = sizeof v / sizeof v[0];
    if (e->kind != ONNX_ENT_CONST || !tg_dtype_is_int(e->dtype))
        return tg_err("'%s' must be a constant or a shape of integers here", e->name);
    if (onnx_int_list(e, max, v, n)) return -1;
    for (int i = 0; i < *n; i++) out[i] = tg_dim_const(v[i]);
    return 0;
}

int onnx_scalar_f64(const onnx_ent *e, double *out)
{
    if (e->kind != ONNX_ENT_CONST) return tg_err("'%s' must be a constant here", e->name);
    if (e->nbytes != tg_dtype_size(e->dtype)) return tg_err("'%s' must be a scalar", e->name);
    *out = tg_load_f64(e->dtype, e->data, 0);
    return 0;
}

/* ---- attributes ------------------------------------------------------------------ */

const Onnx__AttributeProto *onnx_attr(const Onnx__NodeProto *n, const char *name)
{
    for (size_t i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name && !strcmp(n->attribute[i]->name, name))
            return n->attribute[i];
    return NULL;
}

int64_t onnx_attr_int(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = onnx_attr(n, name);
    return a && a->has_i ? a->i : dflt;
}

double onnx_attr_float(const Onnx__NodeProto *n, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = onnx_attr(n, name);
    return a && a->has_f ? a->f : dflt;
}

const char *onnx_attr_string(const Onnx__NodeProto *n, const char *name, const char *dflt)
{
    static _Thread_local char buf[64];
    const Onnx__AttributeProto *a = onnx_attr(n, name);
    if (!a || !a->has_s) return dflt;
    size_t len = a->s.len < sizeof buf - 1 ? a->s.len : sizeof buf - 1;
    if (len) memcpy(buf, a->s.data, len);
    buf[len] = 0;
    return buf;
}

/* ---- tensors ----------------------------------------------------------------------- */

tg_dtype onnx_elem_dtype(int32_t t)
{
    switch (t) {
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT: return TG_F32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT8: return TG_U8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT8: return TG_I8;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT16: return TG_I16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT32: return TG_I32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT64: return TG_I64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BOOL: return TG_BOOL;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT16: return TG_U16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT32: return TG_U32;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT64: return TG_U64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT16: return TG_F16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__DOUBLE: return TG_F64;
    case ONNX__TENSOR_PROTO__DATA_TYPE__BFLOAT16: return TG_BF16;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT8E4M3FN: return TG_F8E4M3;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT8E5M2: return TG_F8E5M2;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT8E4M3FNUZ: return TG_F8E4M3FNUZ;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT8E5M2FNUZ: return TG_F8E5M2FNUZ;
    case ONNX__TENSOR_PROTO__DATA_TYPE__UINT4: return TG_U4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__INT4: return TG_I4;
    case ONNX__TENSOR_PROTO__DATA_TYPE__FLOAT4E2M1: return TG_F4E2M1;
    default: return TG_DTYPE_NONE;
    }
}

/* Open an external data file, which must lie inside the model's folder (a
 * relative name without "..", no symlink escaping it), positioned at offset,
 * after checking that [offset, offset+len) is inside it. NULL with tg_err. */
static FILE *open_external(onnx_ctx *c, const char *loc, int64_t off, int64_t len)
{
    if (!loc || !*loc || loc[0] == '/' || strstr(loc, ".."))
        return tg_err("external data location '%s' must be a file inside the model's folder",
                      loc ? loc : ""), NULL;
    char path[PATH_MAX], real_dir[PATH_MAX], real_file[PATH_MAX];
    if (snprintf(path, sizeof path, "%s/%s", c->model_dir, loc) >= (int)sizeof path)
        return tg_err("external data path too long"), NULL;
    if (!realpath(c->model_dir, real_dir) || !realpath(path, real_file))
        return tg_err("external data '%s': %s", loc, strerror(errno)), NULL;
    size_t dl = strlen(real_dir);
    if (strncmp(real_file, real_dir, dl) || real_file[dl] != '/')
        return tg_err("external data '%s' resolves outside the model's folder", loc), NULL;
    FILE *f = fopen(real_file, "rb");
    if (!f) return tg_err("external data '%s': %s", loc, strerror(errno)), NULL;
    struct stat st;
    if (fstat(fileno(f), &st) || off < 0 || len < 0 || off > st.st_size || len > st.st_size - off)
        tg_err("external data '%s': range %lld+%lld outside the file", loc, (long long)off,
               (long long)len);
    else if (fseeko(f, off, SEEK_SET))
        tg_err("external data '%s': %s", loc, strerror(errno));
    else
        return f;
    fclose(f);
    return NULL;
}

int onnx_tensor_decode(onnx_ctx *c, const Onnx__TensorProto *t, tg_dtype *dt, int *rank,
                       int64_t *dims, void **data, size_t *nbytes)
{
    const char *name = t->name ? t->name : "(unnamed)";
    *dt = onnx_elem_dtype(t->data_type);
    if (*dt == TG_DTYPE_NONE)
        return tg_err("tensor '%s': unsupported data type %d", name, t->data_type);
    if (t->n_dims > TG_MAX_RANK) return tg_err("tensor '%s': rank %zu too large", name, t->n_dims);
    *rank = (int)t->n_dims;
    int64_t n = 1;
    for (size_t i = 0; i < t->n_dims; i++) {
        dims[i] = t->dims[i];
        if (t->dims[i] < 0 || __builtin_mul_overflow(n, t->dims[i], &n))
            return tg_err("tensor '%s': bad dims", name);
    }
    size_t es = tg_dtype_size(*dt), bytes;
    if (__builtin_mul_overflow((size_t)n, es, &bytes))
        return tg_err("tensor '%s': too large", name);
    /* int4, uint4, float4e2m1: two to a byte in the file (element 2i in the low
     * nibble), one a byte here; stored is what the file holds */
    bool packed = *dt == TG_I4 || *dt == TG_U4 || *dt == TG_F4E2M1;
    size_t stored = packed ? (bytes + 1) / 2 : bytes, nstored = packed ? ((size_t)n + 1) / 2 : (size_t)n;
    /* Check that the claimed size is backed by data before allocating it. */
    FILE *ext = NULL;
    bool in_u64 = *dt == TG_U32 || *dt == TG_U64;     /* onnx.proto's uint64_data */
    size_t have = *dt == TG_F32 ? t->n_float_data : *dt == TG_I64 ? t->n_int64_data
                : *dt == TG_F64 ? t->n_double_data : in_u64 ? t->n_uint64_data : t->n_int32_data;
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        const char *loc = NULL;
        int64_t off = 0, len = (int64_t)stored;
        for (size_t i = 0; i < t->n_external_data; i++) {
            const char *k = t->external_data[i]->key, *v = t->external_data[i]->value;
            if (!k || !v) continue;
            if (!strcmp(k, "location")) loc = v;
            else if (!strcmp(k, "offset")) off = strtoll(v, NULL, 10);
            else if (!strcmp(k, "length")) len = strtoll(v, NULL, 10);
        }
        if (len < 0 || (size_t)len != stored)
            return tg_err("tensor '%s': external length %lld, expected %zu bytes", name,
                          (long long)len, stored);
        if (!(ext = open_external(c, loc, off, len))) return -1;
    } else if (t->has_raw_data) {
        if (t->raw_data.len != stored)
            return tg_err("tensor '%s': raw_data has %zu bytes, expected %zu", name,
                          t->raw_data.len, stored);
    } else if (have != nstored) {
        /* Typed fields: float_data (f32), int32_data (small ints, bool, f16/bf16
         * bits, 4-bit pairs), int64_data, double_data, uint64_data (u32, u64). */
        return tg_err("tensor '%s': %zu values stored, expected %zu", name, have, nstored);
    }
    void *p = calloc(1, bytes ? bytes : 1);
    if (!p) {
        if (ext) fclose(ext);
        return tg_err("tensor '%s': out of memory (%zu bytes)", name, bytes);
    }
    int rc = 0;
    if (ext) {
        if (fread(p, 1, stored, ext) != stored) rc = tg_err("tensor '%s': external data read failed", name);
        fclose(ext);
    } else if (t->has_raw_data) {
        if (stored) memcpy(p, t->raw_data.data, stored);
    } else if (n == 0) {
        ;                           /* an empty tensor: the arrays may be NULL */
    } else if (packed) {
        for (size_t i = 0; i < nstored; i++) ((uint8_t *)p)[i] = (uint8_t)t->int32_data[i];
    } else if (*dt == TG_F32) {
        memcpy(p, t->float_data, bytes);
    } else if (*dt == TG_I64) {
        memcpy(p, t->int64_data, bytes);
    } else if (*dt == TG_F64) {
        memcpy(p, t->double_data, bytes);
    } else if (*dt == TG_U64) {
        memcpy(p, t->uint64_data, bytes);
    } else if (*dt == TG_U32) {
        for (int64_t i = 0; i < n; i++)
            ((uint32_t *)p)[i] = (uint32_t)t->uint64_data[i];
    } else {
        for (int64_t i = 0; i < n; i++) {
            int32_t v = t->int32_data[i];
            if (es == 1) ((uint8_t *)p)[i] = (uint8_t)v;
            else if (es == 2) ((uint16_t *)p)[i] = (uint16_t)v;
            else ((int32_t *)p)[i] = v;
        }
    }
    if (packed) {                   /* unpacked in place, from the end */
        uint8_t *b = p;
        for (int64_t i = n - 1; i >= 0; i--) b[i] = (uint8_t)(b[i / 2] >> (i % 2 * 4) & 15);
    }
    if (rc) return free(p), -1;
    *data = p;
    *nbytes = bytes;
    return 0;
}

/* ---- graph inputs and outputs --------------------------------------------------------- */

static int symbol_for(onnx_ctx *c, const char *param, const tg_import_opts *opts, tg_dim *out)
{
    int s = tg_graph_find_symbol(c->g, param);
    if (s < 0) {
        int64_t lo = ONNX_SYM_MIN, hi = ONNX_SYM_MAX;
        for (int i = 0; opts && i < opts->nrange; i++)
            if (!strcmp(opts->range[i].name, param)) lo = opts->range[i].min, hi = opts->range[i].max;
        s = tg_graph_add_symbol(c->g, param, lo, hi);
        if (s < 0) return -1;
        TG_LOG(IMPORT, TG_LOG_INFO, "symbol %s in [%lld, %lld]", param, (long long)lo, (long long)hi);
    }
    *out = tg_dim_sym(s);
    return 0;
}

/* The opset the model imports for a node's domain ("" and "ai.onnx" are one). */
static int64_t domain_opset(const onnx_ctx *c, const char *domain)
{
    bool dflt = !domain || !*domain || !strcmp(domain, "ai.onnx");
    for (size_t i = 0; i < c->model->n_opset_import; i++) {
        const char *d = c->model->opset_import[i]->domain;
        bool ddflt = !d || !*d || !strcmp(d, "ai.onnx");
        if (dflt ? ddflt : (d && !strcmp(d, domain))) return c->model->opset_import[i]->version;
    }
    return 0;
}

/* An input refused for its type: named with the first node that reads it,
 * whose op and opset are what the model needs. */
static int refuse_input(const onnx_ctx *c, const Onnx__GraphProto *gp, const char *name, const char *why)
{
    for (size_t i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (size_t k = 0; k < n->n_input; k++)
            if (n->input[k] && !strcmp(n->input[k], name))
                return tg_err("input '%s', read by node '%s' (%s, opset %lld): %s", name, n->name ? n->name : "",
                              n->op_type ? n->op_type : "?", (long long)domain_opset(c, n->domain), why);
    }
    return tg_err("input '%s': %s", name, why);
}

static int add_input(onnx_ctx *c, const Onnx__GraphProto *gp, const Onnx__ValueInfoProto *vi,
                     const tg_import_opts *opts)
{
    const char *name = vi->name ? vi->name : "";
    if (!vi->type || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return refuse_input(c, gp, name, "a sequence, map or optional; only tensor inputs are supported");
    const Onnx__TypeProto__Tensor *tt = vi->type->tensor_type;
    tg_dtype dt = onnx_elem_dtype(tt->elem_type);
    if (dt == TG_DTYPE_NONE) {
        static const char *const kind[] = {[8] = "string", [14] = "complex64", [15] = "complex128"};
        int t = tt->elem_type;
        char why[64];
        if (t >= 0 && t < 16 && kind[t]) snprintf(why, sizeof why, "element type %s is not supported", kind[t]);
        else snprintf(why, sizeof why, "element type %d is not supported", t);
        return refuse_input(c, gp, name, why);
    }
    if (!tt->shape) return tg_err("input '%s': no shape (rank unknown)", name);
    if (tt->shape->n_dim > TG_MAX_RANK) return tg_err("input '%s': rank too large", name);
    tg_shape s = {.rank = (int)tt->shape->n_dim};
    for (size_t i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        char anon[64];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE && d->dim_value >= 0)
            s.d[i] = tg_dim_const(d->dim_value);
        else {
            const char *p = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM
                            && d->dim_param && *d->dim_param ? d->dim_param : NULL;
            if (!p) snprintf(anon, sizeof anon, "%s_%zu", name, i), p = anon;
            if (symbol_for(c, p, opts, &s.d[i])) return -1;
        }
    }
    int v = tg_graph_add_input(c->g, name, dt, &s);
    return v < 0 ? -1 : onnx_def_value(c, name, v);
}

/* A --range must name one of the inputs' dynamic dims: say which there are. */
static int check_ranges(const tg_graph *g, const tg_import_opts *opts)
{
    for (int k = 0; opts && k < opts->nrange; k++) {
        if (tg_graph_find_symbol(g, opts->range[k].name) >= 0)
            continue;
        char dims[1024] = "";
        for (int s = 0; s < g->nsym; s++)
            snprintf(dims + strlen(dims), sizeof dims - strlen(dims), "%s%s", s ? ", " : "",
                     g->sym[s].name);
        return tg_err("--range %s: the model has no such dynamic dimension (%s%s)",
                      opts->range[k].name, g->nsym ? "its dims: " : "it has none", dims);
    }
    return 0;
}

/* A node name after the ONNX node's, unused in the graph. */
static void node_name(onnx_ctx *c, const char *suffix, char *name, size_t size)
{
    const char *base = c->node->name && *c->node->name ? c->node->name
                     : c->node->n_output ? c->node->output[0] : "node";
    snprintf(name, size, "%s%s%s", base, suffix ? "/" : "", suffix ? suffix : "");
    if (tg_graph_find_value(c->g, name) >= 0) {
        /* several tgraph nodes for one ONNX node, or clashing ONNX names */
        size_t len = strlen(name);
        for (int k = 1; tg_graph_find_value(c->g, name) >= 0; k++)
            snprintf(name + len, size - len, "_%d", k);
    }
}

int onnx_add(onnx_ctx *c, tg_op op, const char *suffix, int nin, const int *in, int nattr,
             const tg_attr *attr)
{
    char name[256];
    node_name(c, suffix, name, sizeof name);
    return tg_graph_add_node(c->g, op, name, nin, in, nattr, attr);
}

int onnx_add_dynamic(onnx_ctx *c, tg_op op, const char *suffix, int nin, const int *in,
                     int nattr, const tg_attr *attr, tg_dtype dt, const tg_shape *shape)
{
    char name[256];
    node_name(c, suffix, name, sizeof name);
    return tg_graph_add_dynamic_node(c->g, op, name, nin, in, nattr, attr, dt, shape);
}

int onnx_add_control(onnx_ctx *c, tg_op op, int nin, const int *in, int nattr, const tg_attr *attr,
                     const tg_dim *trips)
{
    char name[256];
    node_name(c, NULL, name, sizeof name);
    return trips ? tg_control_add_loop(c->g, name, nin, in, nattr, attr, *trips)
                 : tg_control_add(c->g, op, name, nin, in, nattr, attr);
}

/* ---- the model ---------------------------------------------------------------------------- */

static uint8_t *read_file(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return tg_err("%s", strerror(errno)), NULL;
    struct stat st;
    uint8_t *buf = NULL;
    if (fstat(fileno(f), &st) || !S_ISREG(st.st_mode))
        tg_err("not a regular file");
    else if ((size_t)st.st_size > ONNX_MAX_FILE)
        tg_err("file larger than 2 GiB (store weights as external data)");
    else if (!(buf = malloc(st.st_size ? st.st_size : 1)))
        tg_err("out of memory");
    else if (fread(buf, 1, st.st_size, f) != (size_t)st.st_size)
        tg_err("read error"), free(buf), buf = NULL;
    *len = buf ? (size_t)st.st_size : 0;
    fclose(f);
    return buf;
}

/* Before opset 6 a node is read only where its operator's form in force then
 * is the one of opset 6 (the opset it came in, at or before the model's). */
static const struct { const char *op; int since; } onnx_same_at_6[] = {
    {"And", 1}, {"ArgMax", 1}, {"ArgMin", 1}, {"AveragePool", 1}, {"Concat", 4}, {"Constant", 1},
    {"Conv", 1}, {"ConvTranspose", 1}, {"DepthToSpace", 1}, {"Equal", 1}, {"Flatten", 1}, {"GRU", 3},
    {"Gather", 1}, {"GlobalAveragePool", 1}, {"GlobalMaxPool", 1}, {"Greater", 1}, {"Hardmax", 1},
    {"Identity", 1}, {"LRN", 1}, {"LSTM", 1}, {"Less", 1}, {"LogSoftmax", 1}, {"LpNormalization", 1},
    {"LpPool", 2}, {"MatMul", 1}, {"MaxPool", 1}, {"Not", 1}, {"Or", 1}, {"Pad", 2}, {"Pow", 1},
    {"RNN", 1}, {"ReduceL1", 1}, {"ReduceL2", 1}, {"ReduceLogSum", 1}, {"ReduceLogSumExp", 1},
    {"ReduceMax", 1}, {"ReduceMean", 1}, {"ReduceMin", 1}, {"ReduceProd", 1}, {"ReduceSum", 1},
    {"ReduceSumSquare", 1}, {"Reshape", 5}, {"Shape", 1}, {"Size", 1}, {"Slice", 1}, {"Softmax", 1},
    {"Softplus", 1}, {"Softsign", 1}, {"SpaceToDepth", 1}, {"Split", 2}, {"Squeeze", 1}, {"TopK", 1},
    {"Transpose", 1}, {"Unsqueeze", 1}, {"Xor", 1},
};

static bool legacy_node_ok(const onnx_ctx *c, const Onnx__NodeProto *n)
{
    if (c->opset >= ONNX_MIN_OPSET || (n->domain && *n->domain && strcmp(n->domain, "ai.onnx"))) return true;
    for (size_t i = 0; i < sizeof onnx_same_at_6 / sizeof onnx_same_at_6[0]; i++)
        if (n->op_type && !strcmp(onnx_same_at_6[i].op, n->op_type)) return c->opset >= onnx_same_at_6[i].since;
    return false;
}

static void ctx_free(onnx_ctx *c)
{
    for (int i = 0; i < c->nent; i++) ent_clear(&c->ents[i]), free(c->ents[i].name);
    free(c->ents);
    free(c->hash);
}

/* Map node n into a scratch graph and run it there when all its inputs are
 * small constants: its results become constants. 0 when folded, 1 when not
 * (then the caller maps it into the model's graph). */
static int map_folded(onnx_ctx *c, const Onnx__NodeProto *n)
{
    size_t bytes = 0;
    int nin = 0;
    /* a dequantized constant (weights) stays a dequantize: tg_quant_fold_qdq reads it */
    if (n->op_type && !strcmp(n->op_type, "DequantizeLinear")) return 1;
    for (size_t i = 0; i < n->n_input; i++) {
        if (!n->input[i] || !*n->input[i]) continue;
        int e = hash_find(c, n->input[i]);
        if (e < 0 || c->ents[e].kind != ONNX_ENT_CONST || (bytes += c->ents[e].nbytes) > ONNX_FOLD_IN) return 1;
        nin++;
    }
    if (!nin || n->n_input > 64) return 1;
    int saved[64];
    for (size_t i = 0; i < n->n_input; i++)       /* the scratch graph gets its own copies */
        if (n->input[i] && *n->input[i]) {
            onnx_ent *e = &c->ents[hash_find(c, n->input[i])];
            saved[i] = e->value;
            e->value = -1;
        }
    tg_graph *g = c->g, *t = tg_graph_new();
    int rc = 1;
    if (t) {
        c->g = t;
        rc = onnx_map_node(c, n) ? 1 : 0;
        c->g = g;
    }
    for (size_t i = 0; i < n->n_input; i++)
        if (n->input[i] && *n->input[i]) c->ents[hash_find(c, n->input[i])].value = saved[i];
    tg_tensor out[16];
    int outk[16], nout = 0;
    for (size_t k = 0; !rc && k < n->n_output; k++) {
        int e = n->output[k] && *n->output[k] ? hash_find(c, n->output[k]) : -1;
        if (e < 0 || c->ents[e].kind != ONNX_ENT_VALUE) continue;
        if (nout == 16 || c->ents[e].value < 0 || tg_graph_add_output(t, c->ents[e].value) < 0) rc = 1;
        else outk[nout++] = (int)k;
    }
    int64_t most[TG_MAX_SYMS] = {0};            /* a data op's length (the only symbols here) at its bound */
    for (int s = 0; t && s < t->nsym; s++) most[s] = t->sym[s].max;
    for (int v = 0; !rc && v < t->nvalue; v++) {  /* every tensor it makes is small, so at most static */
        int64_t dims[TG_MAX_RANK], numel;
        const tg_value *tv = &t->values[v];
        if (tg_shape_eval(&tv->shape, most, dims) || (numel = tg_tensor_numel(tv->shape.rank, dims)) < 0 ||
            (uint64_t)numel * tg_dtype_size(tv->dtype) > ONNX_FOLD_OUT)
            rc = 1;
        /* an empty tensor's other dims bound the kernels' loops too ([2^40, 0]: fuzz_onnx) */
        int64_t span = 1;
        for (int d = 0; !rc && d < tv->shape.rank; d++)
            if (dims[d] > ONNX_FOLD_OUT || (span *= dims[d] > 1 ? dims[d] : 1) > ONNX_FOLD_OUT)
                rc = 1;
    }
    tg_exec *x = !rc && nout ? tg_exec_new(t, 1) : NULL;
    if (x && tg_exec_run(x, NULL, out)) rc = 1;
    else if (x) {
        for (int i = 0; i < nout; i++)
            if (rc) tg_tensor_free(&out[i]);
            else if (onnx_def_const(c, n->output[outk[i]], out[i].dtype, out[i].rank, out[i].dims, out[i].data))
                rc = 1;
    } else if (nout)
        rc = 1;
    if (x) tg_exec_free(x);
    tg_graph_free(t);
    if (rc) tg_err_clear();
    return rc;
}

int onnx_map_body_node(onnx_ctx *c, const Onnx__NodeProto *n)
{
    const Onnx__NodeProto *outer = c->node;
    c->node = n;
    int rc = map_folded(c, n) ? onnx_map_node(c, n) : 0;
    if (rc == 1) tg_err("its body's operator %s (domain %s) is not supported", n->op_type ? n->op_type : "?",
                        n->domain && *n->domain ? n->domain : "ai.onnx");
    else if (rc < 0) {
        char msg[1024];
        snprintf(msg, sizeof msg, "%s", tg_errmsg());
        tg_err("its body's node '%s' (%s): %s", n->name ? n->name : "", n->op_type ? n->op_type : "?", msg);
    }
    c->node = outer;
    return rc ? -1 : 0;
}

static int import_graph(onnx_ctx *c, const Onnx__GraphProto *gp, const tg_import_opts *opts)
{
    if (onnx_def_initializers(c, gp->initializer, gp->n_initializer, "initializer")) return -1;
    for (size_t i = 0; i < gp->n_input; i++) {
        /* Inputs that are also initializers are constants with a default (IR < 4 style). */
        if (gp->input[i]->name && hash_find(c, gp->input[i]->name) >= 0) continue;
        if (add_input(c, gp, gp->input[i], opts)) return -1;
    }
    if (check_ranges(c->g, opts)) return -1;
    /* Map every node; collect every unsupported op instead of stopping at the first. */
    char *list = NULL;
    size_t list_len = 0;
    FILE *lf = open_memstream(&list, &list_len);
    if (!lf) return tg_err("out of memory");
    int unsupported = 0, rc = 0;
    for (size_t i = 0; i < gp->n_node && rc >= 0; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        c->node = n;
        if (!legacy_node_ok(c, n))
            rc = tg_err("its opset %lld form differs from opset %d's, the oldest read (convert the model "
                        "with onnx.version_converter)", (long long)c->opset, ONNX_MIN_OPSET);
        else
            rc = map_folded(c, n) ? onnx_map_node(c, n) : 0;
        if (rc == 1) {
            unsupported++;
            fprintf(lf, "\n  %s (domain %s, opset %lld) at node '%s'", n->op_type ? n->op_type : "?",
                    n->domain && *n->domain ? n->domain : "ai.onnx", (long long)domain_opset(c, n->domain),
                    n->name ? n->name : "");
        } else if (rc < 0 && !unsupported) {
            char msg[1024];
            snprintf(msg, sizeof msg, "%s", tg_errmsg());
            tg_err("node '%s' (%s, opset %lld): %s", n->name ? n->name : "", n->op_type ? n->op_type : "?",
                   (long long)domain_opset(c, n->domain), msg);
            break;
        }
        if (unsupported) {
            /* Go on to list every unsupported op: this node's outputs become unknown
             * values, and errors they cause downstream are consequences, not news. */
            rc = 0;
            for (size_t o = 0; o < n->n_output; o++)
                if (n->output[o] && *n->output[o] && onnx_def_value(c, n->output[o], -1)) rc = -1;
        }
    }
    fclose(lf);
    if (unsupported) tg_err("%d unsupported operator%s:%s", unsupported, unsupported > 1 ? "s" : "", list);
    free(list);
    if (unsupported || rc < 0) return -1;
    for (size_t i = 0; i < gp->n_output; i++) {
        const char *name = gp->output[i]->name ? gp->output[i]->name : "";
        onnx_ent *e = onnx_get(c, name);
        int v = e ? onnx_value(c, e) : -1;
        if (v < 0) return -1;
        /* Outputs keep their ONNX names (trun -o DIR writes NAME.npy). */
        if (c->g->values[v].kind == TG_VALUE_NODE && strcmp(c->g->values[v].name, name) &&
            tg_graph_find_value(c->g, name) < 0 && tg_graph_rename_value(c->g, v, name))
            return -1;
        if (tg_graph_add_output(c->g, v) < 0) return -1;
    }
    return 0;
}

/* QDQ models (QuantizeLinear -> DequantizeLinear around Conv, MatMul, Gemm) and
 * QOperator ones (mapped to the same pairs) run as qconv/qlinear on the int8
 * kernels wherever the weights are int8, symmetric, per tensor or per output
 * channel, as ONNX Runtime fuses them; other pairs stay float. */
static int fold_qdq(tg_graph *g)
{
    bool any = false;
    for (int i = 0; i < g->nnode && !any; i++) any = g->nodes[i].op == TG_OP_DEQUANTIZE;
    int r = any ? tg_quant_fold_qdq(g) : 0;
    if (r > 0) TG_LOG(IMPORT, TG_LOG_INFO, "%d layers folded from quantize/dequantize pairs", r);
    return r;
}

/* Attention written out in float16 or bfloat16 (ONNX's Attention function,
 * exporters' decompositions) runs as one sdpa on f32 casts, as the fused op
 * does: step by step, each score and probability rounded to the narrow type
 * drifts a few ulps from it (passes.h: tg_pass_fuse_attention_narrow). */
static int fuse_narrow_attention(tg_graph *g)
{
    int r = tg_pass_fuse_attention_narrow(g);
    if (r > 0) TG_LOG(IMPORT, TG_LOG_INFO, "%d float16/bfloat16 attention patterns fused into sdpa", r);
    return r;
}

tg_graph *tg_import_onnx_mem(const uint8_t *buf, size_t len, const char *dir,
                             const tg_import_opts *opts)
{
    Onnx__ModelProto *m = onnx__model_proto__unpack(NULL, len, buf);
    if (!m) return tg_err("not an ONNX model (protobuf decoding failed)"), NULL;
    onnx_ctx c = {.model_dir = dir ? dir : ".", .model = m};
    tg_graph *g = NULL;
    c.opset = domain_opset(&c, "");
    if (!m->graph) {
        tg_err("model has no graph");
    } else if (!(c.g = tg_graph_new())) {
        tg_err("out of memory");
    } else if (import_graph(&c, m->graph, opts) || fold_qdq(c.g) < 0 ||
               fuse_narrow_attention(c.g) < 0) {
        tg_graph_free(c.g);
    } else {
        g = c.g;
        TG_LOG(IMPORT, TG_LOG_INFO, "%zu ONNX nodes -> %d tgraph nodes (opset %lld)",
               m->graph->n_node, g->nnode, (long long)c.opset);
    }
    ctx_free(&c);
    onnx__model_proto__free_unpacked(m, NULL);
    return g;
}

tg_graph *tg_import_onnx(const char *path, const tg_import_opts *opts)
{
    size_t len;
    uint8_t *buf = read_file(path, &len);
    char *dir = strdup(path);
    tg_graph *g = NULL;
    if (!buf || !dir) {
        if (buf) tg_err("out of memory");
    } else {
        char *slash = strrchr(dir, '/');
        if (slash) *slash = 0; else strcpy(dir, ".");
        g = tg_import_onnx_mem(buf, len, dir, opts);
    }
    free(buf);
    free(dir);
    return g;
}
