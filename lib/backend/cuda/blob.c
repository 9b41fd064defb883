/* The graph and plan block of a compiled CUDA model (blob.h): lengths, then
 * the fields in order; strings as a length and bytes; dims as they are in
 * memory (plain data). */
#include "blob.h"

#include <stdlib.h>
#include <string.h>

#include "../../dtype.h"
#include "../../error.h"
#include "cuda.h"

/* ---- writing ------------------------------------------------------------------- */

static void put(FILE *f, const void *p, size_t n)
{
    if (n)
        fwrite(p, 1, n, f);
}

static void put_i64(FILE *f, int64_t v) { put(f, &v, sizeof v); }

static void put_str(FILE *f, const char *s)
{
    size_t n = s ? strlen(s) : 0;
    put_i64(f, (int64_t)n);
    put(f, s, n);
}

static void put_ints(FILE *f, int n, const int *v)
{
    put_i64(f, n);
    for (int i = 0; i < n; i++)
        put_i64(f, v[i]);
}

static void put_attr(FILE *f, const tg_attr *a)
{
    put_str(f, a->name);
    put_i64(f, a->kind);
    put_i64(f, a->n);
    switch (a->kind) {
    case TG_ATTR_FLOAT: put(f, &a->u.f, sizeof a->u.f); break;
    case TG_ATTR_STRING: put_str(f, a->u.s); break;
    case TG_ATTR_INTS: put(f, a->u.ints, sizeof(int64_t) * (size_t)a->n); break;
    case TG_ATTR_FLOATS: put(f, a->u.floats, sizeof(double) * (size_t)a->n); break;
    case TG_ATTR_DIMS: put(f, a->u.dims, sizeof(tg_dim) * (size_t)a->n); break;
    default: put_i64(f, a->u.i); break;
    }
}

/* Whether value v is read only as a GEMM's weight (linear's input 1,
 * matmul's right operand, the weight of a convolution run as a product of
 * its patches: ungrouped, not transposed), and by at least one, and is no
 * output; a linear's or matmul's of an inner dim that runs in float32
 * (tgc_half_k) is not. */
static bool gemm_weight(const tg_graph *g, int v)
{
    bool used = false;
    for (int i = 0; i < g->noutput; i++)
        if (g->outputs[i] == v)
            return false;
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        for (int k = 0; k < n->nin; k++) {
            if (n->in[k] != v)
                continue;
            const tg_shape *ws = &g->values[v].shape;
            int64_t K = 0;
            int kd = n->op == TG_OP_LINEAR || ws->rank == 1 ? ws->rank - 1 : ws->rank - 2;
            bool product = n->op == TG_OP_CONV ? tg_node_int(n, "groups", 1) == 1 &&
                                                     !tg_node_int(n, "transposed", 0)
                                               : (n->op == TG_OP_LINEAR || n->op == TG_OP_MATMUL) &&
                                                     kd >= 0 && tg_dim_is_const(ws->d[kd], &K) &&
                                                     tgc_half_k(K);
            if (k != 1 || !product)
                return false;
            used = true;
        }
    }
    return used;
}

/* x's float32 data as bf16 or fp16 (half): the weight's bytes and dtype. */
static void put_half(FILE *f, const tg_value *x, tg_dtype half)
{
    size_t n = x->nbytes / sizeof(float);
    const float *d = x->data;
    put_i64(f, (int64_t)(n * 2));
    for (size_t i = 0; i < n; i++) {
        uint16_t h = half == TG_BF16 ? tg_f32_to_bf16(d[i]) : tg_f32_to_f16(d[i]);
        put(f, &h, sizeof h);
    }
}

int tgc_blob_write(const tg_graph *g, const tg_plan *p, int math, FILE *f)
{
    tg_dtype half = math == TGC_MATH_BF16 ? TG_BF16 : math == TGC_MATH_F16 ? TG_F16 : TG_F32;
    put(f, TGC_BLOB_MAGIC, 8);
    put_i64(f, math);
    put_i64(f, g->nsym);
    for (int s = 0; s < g->nsym; s++) {
        put_str(f, g->sym[s].name);
        put_i64(f, g->sym[s].min);
        put_i64(f, g->sym[s].max);
    }
    put_i64(f, g->nvalue);
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *x = &g->values[v];
        bool conv = half != TG_F32 && x->kind == TG_VALUE_CONST && x->dtype == TG_F32 &&
                    gemm_weight(g, v);
        put_str(f, x->name);
        put_i64(f, x->kind);
        put_i64(f, conv ? half : x->dtype);
        put(f, &x->shape, sizeof x->shape);
        put_i64(f, x->producer);
        if (conv)
            put_half(f, x, half);
        else {
            put_i64(f, x->kind == TG_VALUE_CONST ? (int64_t)x->nbytes : 0);
            if (x->kind == TG_VALUE_CONST)
                put(f, x->data, x->nbytes);
        }
        put_i64(f, p->alias[v]);
        put_i64(f, p->slot[v]);
    }
    put_i64(f, p->nslot);
    put_i64(f, g->nnode);
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        put_i64(f, n->op);
        put_str(f, n->name);
        put_ints(f, n->nin, n->in);
        put_ints(f, n->nout, n->out);
        put_i64(f, n->nattr);
        for (int k = 0; k < n->nattr; k++)
            put_attr(f, &n->attr[k]);
        put_i64(f, p->root[i]);
        put_i64(f, p->kind[i]);
    }
    put_ints(f, g->ninput, g->inputs);
    put_ints(f, g->noutput, g->outputs);
    return ferror(f) ? tg_err("writing the model's graph failed") : 0;
}

/* ---- reading ------------------------------------------------------------------- */

typedef struct {
    const uint8_t *p, *end;
    bool bad;
} cursor;

static const void *take(cursor *c, size_t n)
{
    if (c->bad || (size_t)(c->end - c->p) < n) {
        c->bad = true;
        return NULL;
    }
    const void *r = c->p;
    c->p += n;
    return r;
}

static int64_t get_i64(cursor *c)
{
    int64_t v = 0;
    const void *p = take(c, sizeof v);
    if (p)
        memcpy(&v, p, sizeof v);
    return v;
}

/* A count in [0, max], else the block is bad. */
static int get_count(cursor *c, int64_t max)
{
    int64_t n = get_i64(c);
    if (n < 0 || n > max)
        c->bad = true;
    return c->bad ? 0 : (int)n;
}

/* n bytes copied into fresh memory (n + 1, a string's end); NULL when bad. */
static void *get_copy(cursor *c, size_t n)
{
    const void *p = take(c, n);
    char *r = p ? malloc(n + 1) : NULL;
    if (!r) {
        c->bad = true;
        return NULL;
    }
    memcpy(r, p, n);
    r[n] = 0;
    return r;
}

static char *get_str(cursor *c)
{
    return get_copy(c, (size_t)get_count(c, 1 << 20));
}

static int *get_ints(cursor *c, int *n, int64_t max)
{
    *n = get_count(c, max);
    int *v = calloc((size_t)*n + 1, sizeof *v);
    if (!v)
        c->bad = true;
    for (int i = 0; v && i < *n; i++)
        v[i] = (int)get_i64(c);
    return v;
}

static void get_attr(cursor *c, tg_attr *a)
{
    a->name = get_str(c);
    a->kind = (tg_attr_kind)get_i64(c);
    a->n = get_count(c, 1 << 20);
    switch (a->kind) {
    case TG_ATTR_FLOAT: {
        const void *p = take(c, sizeof a->u.f);
        if (p)
            memcpy(&a->u.f, p, sizeof a->u.f);
        break;
    }
    case TG_ATTR_STRING: a->u.s = get_str(c); break;
    case TG_ATTR_INTS: a->u.ints = get_copy(c, sizeof(int64_t) * (size_t)a->n); break;
    case TG_ATTR_FLOATS: a->u.floats = get_copy(c, sizeof(double) * (size_t)a->n); break;
    case TG_ATTR_DIMS: a->u.dims = get_copy(c, sizeof(tg_dim) * (size_t)a->n); break;
    default: a->u.i = get_i64(c); break;
    }
}

static bool attr_owns(tg_attr_kind k)
{
    return k == TG_ATTR_STRING || k == TG_ATTR_INTS || k == TG_ATTR_FLOATS || k == TG_ATTR_DIMS;
}

int tgc_blob_read(const uint8_t *buf, size_t len, tgc_blob *b)
{
    cursor c = {buf, buf + len, false};
    memset(b, 0, sizeof *b);
    const void *magic = take(&c, 8);
    if (!magic || memcmp(magic, TGC_BLOB_MAGIC, 8))
        return tg_err("the model's graph is not a " TGC_BLOB_MAGIC " block");
    b->math = (int)get_i64(&c);
    if (b->math < TGC_MATH_F32 || b->math > TGC_MATH_F16)
        c.bad = true;
    tg_graph *g = b->g = calloc(1, sizeof *g);
    if (!g)
        return tg_err("out of memory");
    g->nsym = get_count(&c, TG_MAX_SYMS);
    for (int s = 0; s < g->nsym; s++) {
        g->sym[s].name = get_str(&c);
        g->sym[s].min = get_i64(&c);
        g->sym[s].max = get_i64(&c);
    }
    g->nvalue = g->value_cap = get_count(&c, 1 << 28);
    g->values = calloc((size_t)g->nvalue + 1, sizeof *g->values);
    b->alias = calloc((size_t)g->nvalue + 1, sizeof *b->alias);
    b->slot = calloc((size_t)g->nvalue + 1, sizeof *b->slot);
    if (!g->values || !b->alias || !b->slot)
        c.bad = true;
    for (int v = 0; !c.bad && v < g->nvalue; v++) {
        tg_value *x = &g->values[v];
        x->name = get_str(&c);
        x->kind = (tg_value_kind)get_i64(&c);
        x->dtype = (tg_dtype)get_i64(&c);
        const void *sh = take(&c, sizeof x->shape);
        if (sh)
            memcpy(&x->shape, sh, sizeof x->shape);
        x->producer = (int)get_i64(&c);
        x->nbytes = (size_t)get_i64(&c);
        x->data = (void *)take(&c, x->nbytes);     /* in the block: never freed */
        b->alias[v] = (int)get_i64(&c);
        b->slot[v] = (int)get_i64(&c);
        if (x->shape.rank < 0 || x->shape.rank > TG_MAX_RANK || b->alias[v] < 0 ||
            b->alias[v] >= g->nvalue)
            c.bad = true;
    }
    b->nslot = get_count(&c, 1 << 28);
    g->nnode = g->node_cap = get_count(&c, 1 << 28);
    g->nodes = calloc((size_t)g->nnode + 1, sizeof *g->nodes);
    b->root = calloc((size_t)g->nnode + 1, sizeof *b->root);
    b->kind = calloc((size_t)g->nnode + 1, sizeof *b->kind);
    if (!g->nodes || !b->root || !b->kind)
        c.bad = true;
    for (int i = 0; !c.bad && i < g->nnode; i++) {
        tg_node *n = &g->nodes[i];
        n->op = (tg_op)get_i64(&c);
        n->name = get_str(&c);
        n->in = get_ints(&c, &n->nin, 1 << 20);
        n->out = get_ints(&c, &n->nout, 1 << 20);
        n->nattr = get_count(&c, 1 << 20);
        n->attr = calloc((size_t)n->nattr + 1, sizeof *n->attr);
        if (!n->attr)
            c.bad = true;
        for (int k = 0; !c.bad && k < n->nattr; k++)
            get_attr(&c, &n->attr[k]);
        b->root[i] = (int)get_i64(&c);
        b->kind[i] = (tg_group_kind)get_i64(&c);
        /* a group runs at its root, its last node */
        if (b->root[i] < i || b->root[i] >= g->nnode || b->kind[i] < TG_GROUP_SINGLE ||
            b->kind[i] > TG_GROUP_STRIDED)
            c.bad = true;
        if (n->op < 0 || n->op >= TG_OP_COUNT)
            c.bad = true;
        for (int k = 0; k < n->nin + n->nout && !c.bad; k++) {
            int v = k < n->nin ? n->in[k] : n->out[k - n->nin];
            if (v < -1 || v >= g->nvalue || (k >= n->nin && v < 0))
                c.bad = true;
        }
    }
    g->inputs = get_ints(&c, &g->ninput, g->nvalue);
    g->outputs = get_ints(&c, &g->noutput, g->nvalue);
    for (int i = 0; !c.bad && i < g->ninput + g->noutput; i++) {
        int v = i < g->ninput ? g->inputs[i] : g->outputs[i - g->ninput];
        if (v < 0 || v >= g->nvalue)
            c.bad = true;
    }
    if (c.bad || c.p != c.end) {
        tgc_blob_free(b);
        return tg_err("the model's graph block is damaged");
    }
    return 0;
}

void tgc_blob_free(tgc_blob *b)
{
    tg_graph *g = b->g;
    if (g) {
        for (int s = 0; s < g->nsym; s++)
            free(g->sym[s].name);
        for (int v = 0; g->values && v < g->nvalue; v++)
            free(g->values[v].name);
        for (int i = 0; g->nodes && i < g->nnode; i++) {
            tg_node *n = &g->nodes[i];
            for (int k = 0; n->attr && k < n->nattr; k++) {
                free(n->attr[k].name);
                if (attr_owns(n->attr[k].kind))
                    free(n->attr[k].u.ints);
            }
            free(n->attr);
            free(n->name);
            free(n->in);
            free(n->out);
        }
        free(g->values);
        free(g->nodes);
        free(g->inputs);
        free(g->outputs);
        free(g);
    }
    free(b->alias);
    free(b->slot);
    free(b->root);
    free(b->kind);
    memset(b, 0, sizeof *b);
}
