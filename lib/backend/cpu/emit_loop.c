/* A fused loop (a LOOP group of the plan, see tg_loop_analyze) as one C
 * function run over rows by the kernels' thread pool. Each row's inner
 * elements go in tiles of TILE: every member computes its tile with a plain
 * loop the compiler vectorizes (or a tgk_vec_ call for exp, tanh, gelu ...),
 * the root writes the result row, or a reduction root accumulates it. Values
 * inside the group live only in tiles on the stack. */
#include "cg.h"

#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../../ops/infer.h"
#include "opmap.h"

#define TILE 256
#define BLOCK 4096      /* elements of a row one task of an elementwise loop takes */

typedef struct {
    tg_cg *c;
    FILE *f;
    const tg_loop *l;
    int root;
    const tg_node *rn;
    bool inplace;       /* an epilogue: every member reads and writes the result row */
    signed char *inv;   /* per value: row_invariant's answer, -1 not known yet */
} loop_cx;

static const char *ctype(tg_dtype t)
{
    switch (t) {
    case TG_F32: return "float";
    case TG_I64: return "int64_t";
    case TG_I32: return "int32_t";
    case TG_I16: return "int16_t";
    case TG_I8: return "int8_t";
    default: return "uint8_t";   /* u8, bool */
    }
}

static int outside_index(const loop_cx *x, int v)
{
    for (int k = 0; k < x->l->nin; k++)
        if (x->l->in[k] == v)
            return k;
    return -1;
}

static bool inner_full(const loop_cx *x, int k)
{
    return !tg_dim_is_const(x->l->stride[k][x->l->rank - 1], NULL) ||
           !tg_dim_eq(x->l->stride[k][x->l->rank - 1], tg_dim_const(0));
}

static bool row_invariant(loop_cx *x, int v);

/* Element i of value v. */
static const char *elem(loop_cx *x, int v)
{
    if (x->inplace)
        return "yr[i]";
    int k = outside_index(x, v);
    if (k < 0)
        return row_invariant(x, v) ? cg_str(x->c, "s%d", v) : cg_str(x->c, "t%d[i]", v);
    return inner_full(x, k) ? cg_str(x->c, "x%d[o%d + j0 + i]", k, k)
                            : cg_str(x->c, "x%d[o%d]", k, k);
}

/* A pointer to the tile of v (broadcast inputs are spread into b<v> first). */
static const char *tile_ptr(loop_cx *x, int v)
{
    if (x->inplace)
        return "yr";
    int k = outside_index(x, v);
    if (k < 0 && row_invariant(x, v))   /* a row's value, spread for a call */
        fprintf(x->f, "            for (int64_t i = 0; i < n; i++)\n                t%d[i] = s%d;\n",
                v, v);
    if (k < 0)
        return cg_str(x->c, "t%d", v);
    if (inner_full(x, k))
        return cg_str(x->c, "x%d + o%d + j0", k, k);
    fprintf(x->f, "            for (int64_t i = 0; i < n; i++)\n                b%d[i] = x%d[o%d];\n",
            k, k, k);
    return cg_str(x->c, "b%d", k);
}

/* The tgk_vec_NAME_f32 that computes node nd (a float activation), or NULL. */
static const char *vec_name(const tg_node *nd)
{
    switch (nd->op) {
    case TG_OP_EXP: return "exp";
    case TG_OP_TANH: return "tanh";
    case TG_OP_SIGMOID: return "sigmoid";
    case TG_OP_SILU: return "silu";
    case TG_OP_ERF: return "erf";
    case TG_OP_GELU:
        return strcmp(tg_node_string(nd, "approximate", "none"), "tanh") ? "gelu" : "gelu_tanh";
    default: return NULL;
    }
}

/* Whether value v is a float32 constant whose every element is want: pow's
 * exponent 2 in RMS norms (T5's x.pow(2).mean()) and 3 in GPT-2's tanh GELU
 * (x + 0.044715 x.pow(3)), computed as x * x and x * x * x, as PyTorch's CPU
 * pow does for these exponents, instead of a libm call an element (GPT-2 at
 * batch 8: powf was 36% of the run). */
static bool const_all(const tg_graph *g, int v, float want)
{
    const tg_value *e = &g->values[v];
    if (e->kind != TG_VALUE_CONST || e->dtype != TG_F32 || !e->data || !e->nbytes)
        return false;
    for (size_t i = 0; i < e->nbytes / sizeof(float); i++)
        if (((const float *)e->data)[i] != want)
            return false;
    return true;
}

/* The expression for one element of node nd, or NULL when it is a vec call. */
static const char *expr(loop_cx *x, const tg_node *nd, const char **vec)
{
    tg_cg *c = x->c;
    const char *a = nd->nin > 0 ? elem(x, nd->in[0]) : NULL;
    const char *b = nd->nin > 1 ? elem(x, nd->in[1]) : NULL;
    tg_dtype t = nd->nin ? c->g->values[nd->in[0]].dtype : TG_F32;
    bool f = t == TG_F32;
    double alpha = tg_node_float(nd, "alpha", nd->op == TG_OP_ELU ? 1.0 : 0.01);
    if ((*vec = vec_name(nd)))
        return NULL;
    switch (nd->op) {
    case TG_OP_NEG: return cg_str(c, "-%s", a);
    case TG_OP_ABS: return f ? cg_str(c, "fabsf(%s)", a) : cg_str(c, "(%s < 0 ? -%s : %s)", a, a, a);
    case TG_OP_SQRT: return cg_str(c, "sqrtf(%s)", a);
    case TG_OP_RSQRT: return cg_str(c, "1.0f / sqrtf(%s)", a);
    case TG_OP_RECIPROCAL: return cg_str(c, "1.0f / %s", a);
    case TG_OP_RELU: return cg_str(c, "(%s < 0 ? 0 : %s)", a, a);
    case TG_OP_HARDSWISH:
        return cg_str(c, "(%s) * fminf(fmaxf(%s + 3.0f, 0.0f), 6.0f) / 6.0f", a, a);
    case TG_OP_HARDSIGMOID: return cg_str(c, "fminf(fmaxf(%s / 6.0f + 0.5f, 0.0f), 1.0f)", a);
    case TG_OP_LEAKY_RELU: return cg_str(c, "(%s < 0 ? %s * %s : %s)", a, a, cg_float(c, alpha), a);
    case TG_OP_ELU: return cg_str(c, "(%s < 0 ? %s * expm1f(%s) : %s)", a, cg_float(c, alpha), a, a);
    case TG_OP_FLOOR: return cg_str(c, "floorf(%s)", a);
    case TG_OP_CEIL: return cg_str(c, "ceilf(%s)", a);
    case TG_OP_ROUND: return cg_str(c, "nearbyintf(%s)", a);
    case TG_OP_CLAMP: {
        const char *lo = cg_float(c, tg_node_float(nd, "min", -INFINITY));
        const char *hi = cg_float(c, tg_node_float(nd, "max", INFINITY));
        const char *t = cg_str(c, "(%s < %s ? %s : %s)", a, lo, lo, a);   /* max(x, min) */
        return cg_str(c, "(%s > %s ? %s : %s)", t, hi, hi, t);
    }
    case TG_OP_LOGICAL_NOT: return cg_str(c, "(%s == 0)", a);
    case TG_OP_IDENTITY: return a;
    case TG_OP_CAST:
        return c->g->values[nd->out[0]].dtype == TG_BOOL ? cg_str(c, "(%s != 0)", a)
                                                          : cg_str(c, "(float)%s", a);
    case TG_OP_ADD: return cg_str(c, "%s + %s", a, b);
    case TG_OP_SUB: return cg_str(c, "%s - %s", a, b);
    case TG_OP_MUL: return cg_str(c, "%s * %s", a, b);
    case TG_OP_DIV: return cg_str(c, "%s / %s", a, b);
    case TG_OP_POW:
        return !f ? NULL
             : const_all(c->g, nd->in[1], 2.0f) ? cg_str(c, "%s * %s", a, a)
             : const_all(c->g, nd->in[1], 3.0f) ? cg_str(c, "%s * %s * %s", a, a, a) : NULL;
    /* maximum and minimum propagate NaN, like torch */
    case TG_OP_MAXIMUM: return cg_str(c, "(%s > %s || %s != %s ? %s : %s)", a, b, a, a, a, b);
    case TG_OP_MINIMUM: return cg_str(c, "(%s < %s || %s != %s ? %s : %s)", a, b, a, a, a, b);
    case TG_OP_EQ: return cg_str(c, "(%s == %s)", a, b);
    case TG_OP_NE: return cg_str(c, "(%s != %s)", a, b);
    case TG_OP_LT: return cg_str(c, "(%s < %s)", a, b);
    case TG_OP_LE: return cg_str(c, "(%s <= %s)", a, b);
    case TG_OP_GT: return cg_str(c, "(%s > %s)", a, b);
    case TG_OP_GE: return cg_str(c, "(%s >= %s)", a, b);
    case TG_OP_LOGICAL_AND: return cg_str(c, "(%s != 0 && %s != 0)", a, b);
    case TG_OP_LOGICAL_OR: return cg_str(c, "(%s != 0 || %s != 0)", a, b);
    case TG_OP_WHERE: return cg_str(c, "(%s ? %s : %s)", a, b, elem(x, nd->in[2]));
    default: return NULL;
    }
}

/* One member's tile: into t<v>, or the result row for the root. */
/* A unary or binary op of f32 with no form above runs its kernel op over the
 * tile: the libm functions (log, sin ... atanh, pow, remainder, fmod: calls
 * either way), and a new op until it has a form of its own. */
static int kernel_call(loop_cx *x, const tg_node *nd, const char *dst)
{
    tg_cg *c = x->c;
    const char *fam = tg_op_table[nd->op].family;
    if (!strcmp(fam, "unary")) {
        tgk_unary_op k;
        tgk_unary_param p;
        tg_cpu_unary_desc(nd, &k, &p);
        fprintf(x->f, "            { const tgk_unary_param p = {%s, %s, %s};\n"
                "              tgk_unary(%s, TGK_F32, n, %s, %s, &p); }\n",
                cg_double(c, p.alpha), cg_double(c, p.lo), cg_double(c, p.hi),
                tg_cpu_unary_name(nd, k),
                tile_ptr(x, nd->in[0]), dst);
        return 0;
    }
    if (!strcmp(fam, "binary")) {
        const char *a = tile_ptr(x, nd->in[0]), *b = tile_ptr(x, nd->in[1]);
        fprintf(x->f, "            { const int64_t s1[1] = {1};\n"
                "              tgk_binary(%s, TGK_F32, 1, &n, %s, s1, %s, s1, %s); }\n",
                tg_cpu_kop_name[nd->op], a, b, dst);
        return 0;
    }
    return tg_err("node '%s': %s has no loop form", nd->name, tg_op_name(nd->op));
}

static int emit_member(loop_cx *x, int n)
{
    const tg_node *nd = &x->c->g->nodes[n];
    bool is_root = (n == x->root && !x->l->reduce) || x->inplace;
    const char *dst = is_root ? "yr" : cg_str(x->c, "t%d", nd->out[0]);
    const char *vec, *e = expr(x, nd, &vec);
    if (vec) {
        const char *src = tile_ptr(x, nd->in[0]);
        fprintf(x->f, "            tgk_vec_%s_f32(n, %s, %s);\n", vec, src, dst);
        return 0;
    }
    if (!e)
        return kernel_call(x, nd, dst);
    fprintf(x->f, "            for (int64_t i = 0; i < n; i++)\n                %s[i] = %s;\n",
            dst, e);
    return 0;
}

static bool in_loop(const loop_cx *x, int n);

/* Whether member value v is one value a row: an expression whose inputs are
 * (the loop's inputs broadcast along the row, or such values): computed once
 * a row, before the row's tiles (an RMS norm's rsqrt(mean + eps): a sqrt and
 * a division an element, else). Not the root's, nor an epilogue's. */
static bool row_invariant(loop_cx *x, int v)
{
    if (x->inplace || outside_index(x, v) >= 0)
        return false;
    if (x->inv[v] >= 0)
        return x->inv[v];
    const tg_value *val = &x->c->g->values[v];
    int n = val->kind == TG_VALUE_NODE ? val->producer : -1;
    const tg_node *nd = n >= 0 ? &x->c->g->nodes[n] : NULL;
    bool yes = nd && in_loop(x, n) && n != x->root && nd->nin > 0 && !vec_name(nd);
    for (int i = 0; yes && i < nd->nin; i++) {
        int k = nd->in[i] < 0 ? -1 : outside_index(x, nd->in[i]);
        yes = nd->in[i] >= 0 && (k >= 0 ? !inner_full(x, k) : row_invariant(x, nd->in[i]));
    }
    const char *vec;
    x->inv[v] = yes;    /* expr's inputs below are answered already */
    x->inv[v] = yes && expr(x, nd, &vec) != NULL;
    return x->inv[v];
}

/* The reductions a loop can end with, the one list reduction() writes and
 * tg_cpu_loop_supports takes (a REDUCTION op of ops.def not here stays a kernel
 * call instead of being accumulated as something else). */
typedef enum { RED_NONE, RED_SUM, RED_MEAN, RED_MAX, RED_MIN, RED_ANY } loop_red;

static loop_red reduction_of(tg_op op)
{
    switch (op) {
    case TG_OP_REDUCE_SUM: return RED_SUM;
    case TG_OP_REDUCE_MEAN: return RED_MEAN;
    case TG_OP_REDUCE_MAX: return RED_MAX;
    case TG_OP_REDUCE_MIN: return RED_MIN;
    case TG_OP_REDUCE_ANY: return RED_ANY;
    default: return RED_NONE;
    }
}

/* A sum's or mean's accumulators: one chain of double adds a row made the
 * reduction as slow as the adds' latency (an RMS norm's x.pow(2).mean() over
 * 64 values: 0.8 ns an element); SUM_LANES independent chains vectorize,
 * and are added up in a fixed order at the end. */
#define SUM_LANES 8

/* The reduction of the root: accumulator, per-element step (over i; for a
 * sum or mean, of lane l of acc), result. */
static void reduction(loop_cx *x, const char **init, const char **step, const char **fin)
{
    tg_cg *c = x->c;
    const char *v = elem(x, x->rn->in[0]);
    loop_red r = reduction_of(x->rn->op);
    switch (r) {
    case RED_MAX: case RED_MIN: {
        bool mx = r == RED_MAX;
        *init = mx ? "float acc = -INFINITY;" : "float acc = INFINITY;";
        *step = cg_str(c, "{ const float e = %s; if (e %s acc || e != e) acc = e; }", v,
                       mx ? ">" : "<");
        *fin = "y[r] = acc;";
        return;
    }
    case RED_ANY:
        *init = "uint8_t acc = 0;";
        *step = cg_str(c, "acc |= %s != 0;", v);
        *fin = "y[r] = acc;";
        return;
    default: {  /* sum, mean: in double, like the reduce kernel */
        *init = cg_str(c, "double acc[%d] = {0};", SUM_LANES);
        *step = cg_str(c, "acc[l] += %s;", v);
        const char *sum = "acc[0]";
        for (int k = 1; k < SUM_LANES; k++)
            sum = cg_str(c, "(%s + acc[%d])", sum, k);
        *fin = r == RED_MEAN ? cg_str(c, "y[r] = (float)(%s / (double)inner);", sum)
                             : cg_str(c, "y[r] = (float)%s;", sum);
    }
    }
}

/* Members the loop computes: all but an epilogue's anchor, which its kernel
 * computes before. */
static bool in_loop(const loop_cx *x, int n)
{
    return x->c->p->root[n] == x->root &&
           !(x->inplace && !tg_op_is_elementwise(x->c->g->nodes[n].op));
}

/* The body of the function loop_<root> into x->f. Inputs and result never
 * overlap (the memory plan keeps inputs live while the result is written),
 * hence restrict; an epilogue's result is its only operand. */
static int emit_body(loop_cx *x)
{
    tg_cg *c = x->c;
    const tg_graph *g = c->g;
    const tg_loop *l = x->l;
    int nouter = l->rank - 1;
    FILE *f = x->f;
    fprintf(f, "{\n    const tgrt_loop *L = ctx;\n    const int64_t inner = L->inner;\n");
    for (int k = 0; k < l->nin; k++)
        fprintf(f, "    const %s *restrict x%d = L->in[%d];\n", ctype(g->values[l->in[k]].dtype),
                k, k);
    fprintf(f, "    %s *restrict y = L->out;\n", ctype(g->values[x->rn->out[0]].dtype));
    for (int n = 0; n < x->root && !x->inplace; n++)
        if (c->p->root[n] == x->root)
            fprintf(f, "    %s t%d[%d];\n", ctype(g->values[g->nodes[n].out[0]].dtype),
                    g->nodes[n].out[0], TILE);
    bool spread[TG_LOOP_MAX_IN] = {false};  /* tiles for broadcast inputs of vec calls */
    for (int n = 0; n <= x->root; n++) {
        const tg_node *nd = &g->nodes[n];
        const char *vec;
        int k;
        if (!in_loop(x, n) || !nd->nin)
            continue;
        bool call = !expr(x, nd, &vec);     /* vec or kernel_call: inputs by pointer */
        for (int i = 0; call && i < nd->nin; i++)
            if ((k = outside_index(x, nd->in[i])) >= 0 && !inner_full(x, k) && !spread[k]) {
                fprintf(f, "    float b%d[%d];\n", k, TILE);
                spread[k] = true;
            }
    }
    /* an elementwise loop's tasks are blocks of rows, a reduction's whole rows */
    if (l->reduce)
        fprintf(f, "    for (int64_t r = r0; r < r1; r++) {\n"
                "        const int64_t jb = 0, je = inner;\n");
    else
        fprintf(f, "    const int64_t nblk = (inner + %d) / %d;\n"
                "    for (int64_t t = r0; t < r1; t++) {\n"
                "        const int64_t r = t / nblk, jb = t %% nblk * %d;\n"
                "        const int64_t je = inner - jb < %d ? inner : jb + %d;\n",
                BLOCK - 1, BLOCK, BLOCK, BLOCK, BLOCK);
    for (int k = 0; k < l->nin; k++)
        fprintf(f, "        int64_t o%d = 0;\n", k);
    if (nouter > 0 && l->nin) {
        fprintf(f, "        for (int64_t q = r, d = %d; d >= 0; d--) {\n"
                "            const int64_t i = q %% L->od[d];\n            q /= L->od[d];\n",
                nouter - 1);
        for (int k = 0; k < l->nin; k++)
            fprintf(f, "            o%d += i * L->st[%d][d];\n", k, k);
        fprintf(f, "        }\n");
    }
    const char *init = NULL, *step = NULL, *fin = NULL;
    if (l->reduce) {
        reduction(x, &init, &step, &fin);
        fprintf(f, "        %s\n", init);
    }
    for (int n = 0; n < x->root; n++) {
        const char *vec;
        int v = g->nodes[n].out[0];
        if (in_loop(x, n) && row_invariant(x, v))
            fprintf(f, "        const %s s%d = %s;\n", ctype(g->values[v].dtype), v,
                    expr(x, &g->nodes[n], &vec));
    }
    fprintf(f, "        for (int64_t j0 = jb; j0 < je; j0 += %d) {\n"
            "            const int64_t n = je - j0 < %d ? je - j0 : %d;\n",
            TILE, TILE, TILE);
    if (!l->reduce)
        fprintf(f, "            %s *yr = y + r * inner + j0;\n",
                ctype(g->values[x->rn->out[0]].dtype));
    for (int n = 0; n <= x->root; n++)
        if (in_loop(x, n) && !(l->reduce && n == x->root) &&
            !row_invariant(x, g->nodes[n].out[0]) && emit_member(x, n))
            return -1;
    if (l->reduce && (reduction_of(x->rn->op) == RED_SUM || reduction_of(x->rn->op) == RED_MEAN))
        fprintf(f, "            int64_t i0 = 0;\n"
                "            for (; i0 + %d <= n; i0 += %d)\n"
                "                for (int64_t l = 0; l < %d; l++) {\n"
                "                    const int64_t i = i0 + l;\n                    %s\n"
                "                }\n"
                "            for (int64_t l = 0; i0 + l < n; l++) {\n"
                "                const int64_t i = i0 + l;\n                %s\n"
                "            }\n", SUM_LANES, SUM_LANES, SUM_LANES, step, step);
    else if (l->reduce)
        fprintf(f, "            for (int64_t i = 0; i < n; i++)\n                %s\n", step);
    fprintf(f, "        }\n");
    if (l->reduce)
        fprintf(f, "        %s\n", fin);
    fprintf(f, "    }\n}\n");
    return 0;
}

/* The loop's function as a hot one (cg_hot_add): the name to call, or NULL. */
static const char *emit_function(loop_cx *x)
{
    char *body = NULL;
    size_t n = 0;
    x->inv = malloc((size_t)x->c->g->nvalue + 1);
    if (!x->inv || !(x->f = open_memstream(&body, &n)))
        return free(x->inv), tg_err("out of memory"), NULL;
    memset(x->inv, -1, (size_t)x->c->g->nvalue + 1);
    int rc = emit_body(x);
    fclose(x->f);
    free(x->inv);
    const char *name = rc ? NULL : cg_hot_add(x->c, cg_str(x->c, "%sloop_%d", x->c->pre, x->root),
                                              body);
    free(body);
    return name;
}

/* The call of hot function fn for the loop of `root` from the plan, with the
 * loop's inputs and dims. */
static void emit_call(tg_cg *c, const tg_loop *lp, int root, const char *fn)
{
    tg_loop l = *lp;
    tg_shape outer = {.rank = l.rank - 1};
    memcpy(outer.d, l.dims, sizeof(tg_dim) * (l.rank - 1));
    fprintf(c->f, "    /* loop:");
    for (int n = 0; n <= root; n++)
        if (c->p->root[n] == root)
            fprintf(c->f, " %s", c->g->nodes[n].name);
    fprintf(c->f, " */\n    {\n        tgrt_loop L;\n");
    for (int k = 0; k < l.nin; k++)
        fprintf(c->f, "        L.in[%d] = %s;\n", k, cg_ptr(c, l.in[k]));
    fprintf(c->f, "        L.out = %s;\n        L.rows = %s;\n        L.inner = %s;\n",
            cg_ptr(c, c->g->nodes[root].out[0]), cg_prod(c, &outer, 0, outer.rank),
            cg_dim(c, l.dims[l.rank - 1]));
    for (int d = 0; d < l.rank - 1; d++) {
        fprintf(c->f, "        L.od[%d] = %s;\n", d, cg_dim(c, l.dims[d]));
        for (int k = 0; k < l.nin; k++)
            fprintf(c->f, "        L.st[%d][%d] = %s;\n", k, d, cg_dim(c, l.stride[k][d]));
    }
    /* tasks of at least ~16K elements */
    if (l.reduce)
        fprintf(c->f, "        tgk_parallel_for(L.rows, L.inner >= 16384 ? 1 : 16384 / "
                "(L.inner ? L.inner : 1), %s, &L);\n    }\n", fn);
    else
        fprintf(c->f, "        const int64_t nblk = (L.inner + %d) / %d;\n"
                "        const int64_t blk = L.inner < %d ? L.inner : %d;\n"
                "        tgk_parallel_for(L.rows * nblk, blk >= 16384 ? 1 : 16384 / "
                "(blk ? blk : 1), %s, &L);\n    }\n",
                BLOCK - 1, BLOCK, BLOCK, BLOCK, fn);
}

int cg_emit_loop(tg_cg *c, int root)
{
    tg_loop l;
    if (tg_loop_analyze(c->g, c->p, root, &l))
        return tg_err("node '%s': %s", c->g->nodes[root].name, tg_errmsg());
    loop_cx x = {c, NULL, &l, root, &c->g->nodes[root], false, NULL};
    const char *fn = emit_function(&x);
    if (!fn)
        return -1;
    emit_call(c, &l, root, fn);
    return 0;
}

/* clamp(x, 0, 6), MobileNetV2's ReLU6: tgk_vec_relu6_f32 computes it as
 * the clamp's loop does, so a convolution applies it on its blocks */
static bool is_relu6(const tg_node *nd)
{
    return nd->op == TG_OP_CLAMP && tg_node_float(nd, "min", -INFINITY) == 0.0 &&
           tg_node_float(nd, "max", INFINITY) == 6.0;
}

/* Epilogue group `root` as tg_epilogue_analyze sees it, when it is one
 * whose anchor has op `anchor`. */
static bool epilogue_of(const tg_graph *g, const tg_plan *p, int root, tg_op anchor,
                        tg_epilogue *e)
{
    if (p->kind[root] != TG_GROUP_EPILOGUE)
        return false;
    if (tg_epilogue_analyze(g, p, root, e)) {
        tg_err_clear();     /* cg_emit_epilogue reports it */
        return false;
    }
    return g->nodes[e->anchor].op == anchor;
}

static bool conv_epilogue(const tg_graph *g, const tg_plan *p, int root, cg_conv_ep *ep)
{
    tg_epilogue e;
    *ep = (cg_conv_ep){.res = -1};
    if (!epilogue_of(g, p, root, TG_OP_CONV, &e) &&
        !epilogue_of(g, p, root, TG_OP_CONV_NHWC, &e))
        return false;
    ep->anchor = e.anchor;
    const tg_node *a = e.nact == 1 ? &g->nodes[e.act[0]] : NULL;
    ep->relu = a && a->op == TG_OP_RELU;
    ep->act = !a || ep->relu ? NULL : a->op == TG_OP_HARDSWISH ? "hardswish"
              : is_relu6(a) ? "relu6" : vec_name(a);
    ep->pool = e.pool;
    ep->res = e.residual;
    return ep->pool || ep->relu || ep->act || ep->res >= 0;
}

bool cg_conv_epilogue(const tg_cg *c, int root, cg_conv_ep *ep)
{
    return conv_epilogue(c->g, c->p, root, ep);
}

/* The rules' writes_rows (passes.h): a float convolution whose kernel
 * applies all of its epilogue writes each image's channels at y_stride
 * (tgk_conv_desc), so it writes its part of a concat along the channels
 * (axis 1); a conv_nhwc each pixel's at y_ld (tgk_conv_nhwc_desc), its part
 * of a concat along axis 3. */
bool tg_cpu_writes_rows(const tg_graph *g, const tg_plan *p, int root, int axis)
{
    cg_conv_ep ep = {.anchor = root};
    if (p->kind[root] != TG_GROUP_SINGLE && !conv_epilogue(g, p, root, &ep))
        return false;
    const tg_node *a = &g->nodes[ep.anchor];
    if (g->values[a->out[0]].dtype != TG_F32)
        return false;
    return a->op == TG_OP_CONV ? axis == 1 : a->op == TG_OP_CONV_NHWC && axis == 3;
}

bool cg_linear_epilogue(const tg_cg *c, int root, const char **act, int *res)
{
    tg_epilogue e;
    *act = NULL;
    *res = -1;
    if (!epilogue_of(c->g, c->p, root, TG_OP_LINEAR_PACKED, &e))
        return false;
    if (e.residual >= 0) {
        *res = e.residual;
        return true;
    }
    const tg_node *a = e.nact == 1 ? &c->g->nodes[e.act[0]] : NULL;
    *act = !a ? NULL : a->op == TG_OP_RELU ? "relu" : vec_name(a);
    return *act != NULL;
}

int cg_emit_epilogue(tg_cg *c, int root)
{
    tg_epilogue e;
    if (tg_epilogue_analyze(c->g, c->p, root, &e))
        return tg_err("node '%s': %s", c->g->nodes[root].name, tg_errmsg());
    /* the anchor's kernel writes the result; the activations then run over it */
    if (cg_emit_node(c, e.anchor))
        return -1;
    cg_conv_ep ep;
    const char *act;
    int res;
    if (cg_conv_epilogue(c, root, &ep) || cg_linear_epilogue(c, root, &act, &res))
        return 0;
    /* what is left is activations (a pool or a residual is always the kernel's) */
    tg_loop l = {.rank = 1};
    if (tg_shape_numel(&c->g->values[c->g->nodes[root].out[0]].shape, &l.dims[0]))
        return -1;
    loop_cx x = {c, NULL, &l, root, &c->g->nodes[root], true, NULL};
    const char *fn = emit_function(&x);
    if (!fn)
        return -1;
    emit_call(c, &l, root, fn);
    return 0;
}

/* ---- what the loop can compute: the CPU's loop_supports -------------------- */
/* The grouping rules' question (lib/passes/passes.h) answered here, beside the
 * switches of expr() and reduction() that write what it takes. */

static bool plain_type(tg_dtype t)
{
    return t == TG_F32 || t == TG_BOOL || t == TG_I64 || t == TG_I32 || t == TG_U8 ||
           t == TG_I8 || t == TG_I16;
}

/* The ops expr() writes for integer and bool operands as well as for float. */
static bool int_expr(tg_op op)
{
    switch (op) {
    case TG_OP_NEG: case TG_OP_ABS: case TG_OP_RELU: case TG_OP_ADD: case TG_OP_SUB:
    case TG_OP_MUL: case TG_OP_MAXIMUM: case TG_OP_MINIMUM: case TG_OP_EQ: case TG_OP_NE:
    case TG_OP_LT: case TG_OP_LE: case TG_OP_GT: case TG_OP_GE: case TG_OP_LOGICAL_AND:
    case TG_OP_LOGICAL_OR: case TG_OP_LOGICAL_NOT: case TG_OP_IDENTITY: case TG_OP_WHERE:
        return true;
    default:
        return false;
    }
}

/* Whether emit_member writes op: kernel_call's families, or expr()'s cast,
 * where and identity (an elementwise op of another family stays its own
 * node, run by its family's glue). */
static bool loop_form(tg_op op)
{
    const char *f = tg_op_table[op].family;
    return !strcmp(f, "unary") || !strcmp(f, "binary") || op == TG_OP_CAST ||
           op == TG_OP_WHERE || op == TG_OP_IDENTITY;
}

bool tg_cpu_loop_supports(const tg_graph *g, const tg_node *nd, const char **why)
{
    const tg_value *y = &g->values[nd->out[0]];
    /* the operand that sets the type; a loop node's trip count may be omitted (-1) */
    int a = nd->op == TG_OP_WHERE ? 1 : 0;
    tg_dtype t = a < nd->nin && nd->in[a] >= 0 ? g->values[nd->in[a]].dtype : y->dtype;
    *why = NULL;
    if (tg_op_table[nd->op].flags & TG_OPF_REDUCTION) {
        switch (reduction_of(nd->op)) {
        case RED_NONE:
            return *why = "a reduction the fused loop does not write", false;
        case RED_ANY:
            if (plain_type(t))
                return true;
            return *why = "reduce_any of a dtype that is not plain", false;
        default:
            if (t == TG_F32)
                return true;
            return *why = "a reduction of another dtype than f32", false;
        }
    }
    if (!tg_op_is_elementwise(nd->op) && nd->op != TG_OP_IDENTITY)
        return *why = "not elementwise", false;
    if (!loop_form(nd->op))
        return *why = "an elementwise op of a family with no loop form", false;
    for (int i = 0; i < nd->nin; i++)
        if (nd->in[i] < 0 || !plain_type(g->values[nd->in[i]].dtype))
            return *why = "an input is not f32, bool or a plain integer", false;
    if (!plain_type(y->dtype))
        return *why = "the result is not f32, bool or a plain integer", false;
    if (t == TG_F32 || int_expr(nd->op))
        return true;
    if (nd->op == TG_OP_CAST) {
        if (y->dtype == TG_F32 || y->dtype == TG_BOOL)
            return true;
        return *why = "integer casts saturate", false;
    }
    return *why = "integer op left to its kernel (division, rounding, math)", false;
}
