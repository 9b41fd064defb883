/* The C file of a compiled model: the runtime's declarations, the hot
 * functions (emit_hot.c), the weights, the dims and workspace layout
 * (prepare), the plan (exec), the tables that describe inputs, outputs and
 * symbols, and the exported ABI forwarders; in parts the build compiles
 * apart (tg_codegen_src). */
#define _GNU_SOURCE
#include "cg.h"

#include <float.h>
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../../log.h"
#include "../../ops/infer.h"
#include "model_rt.h"

/* <tgraph/model.h>, kernels.h, tensor_ops.h and model_rt.h as one string (rt_text.c). */
extern const char tg_cg_rt_headers[];

#define BYTES_LIMIT ((int64_t)1 << 60)

const char *cg_str(tg_cg *c, const char *fmt, ...)
{
    char *s = NULL;
    va_list ap;
    va_start(ap, fmt);
    int n = vasprintf(&s, fmt, ap);
    va_end(ap);
    if (n < 0)
        return "";
    if (c->nstr == c->str_cap) {
        int cap = c->str_cap ? 2 * c->str_cap : 256;
        char **p = realloc(c->strs, cap * sizeof *p);
        if (!p) {
            free(s);
            return "";
        }
        c->strs = p;
        c->str_cap = cap;
    }
    return c->strs[c->nstr++] = s;
}

int cg_dim_index(tg_cg *c, tg_dim d)
{
    for (int i = 0; i < c->ndim; i++)
        if (tg_dim_eq(c->dims[i], d))
            return i;
    if (c->ndim == c->dim_cap) {
        int cap = c->dim_cap ? 2 * c->dim_cap : 64;
        tg_dim *p = realloc(c->dims, cap * sizeof *p);
        if (!p)
            return tg_err("out of memory");
        c->dims = p;
        c->dim_cap = cap;
    }
    c->dims[c->ndim] = d;
    return c->ndim++;
}

const char *cg_dim(tg_cg *c, tg_dim d)
{
    int64_t v;
    if (tg_dim_is_const(d, &v))
        return cg_str(c, "%" PRId64, v);
    return cg_str(c, "D[%d]", cg_dim_index(c, d));
}

const char *cg_prod(tg_cg *c, const tg_shape *s, int from, int to)
{
    tg_dim p = tg_dim_const(1);
    for (int i = from; i < to; i++)
        if (tg_dim_mul(p, s->d[i], &p)) {
            /* too many terms for one expression: multiply in C */
            const char *t = cg_dim(c, s->d[from]);
            for (int k = from + 1; k < to; k++)
                t = cg_str(c, "%s * %s", t, cg_dim(c, s->d[k]));
            tg_err_clear();
            return cg_str(c, "(%s)", t);
        }
    return cg_dim(c, p);
}

const char *cg_numel(tg_cg *c, int v)
{
    const tg_shape *s = &c->g->values[v].shape;
    return cg_prod(c, s, 0, s->rank);
}

const char *cg_bytes(tg_cg *c, int v)
{
    const tg_value *x = &c->g->values[v];
    tg_dim n;
    if (tg_shape_numel(&x->shape, &n) || tg_dim_mul(n, tg_dim_const(tg_dtype_size(x->dtype)), &n)) {
        tg_err_clear();
        return cg_str(c, "(%s * %zu)", cg_numel(c, v), tg_dtype_size(x->dtype));
    }
    return cg_dim(c, n);
}

const char *cg_ptr(tg_cg *c, int v)
{
    int r = c->p->alias[v];
    tg_part pt;
    c->used[r] = true;
    if (c->p->part[v] < 0)
        return cg_str(c, "v%d", r);
    if (tg_plan_part(c->g, c->p, v, &pt))     /* (memplan made it from these dims) */
        abort();
    return cg_str(c, "(void *)((char *)v%d + (size_t)(%s) * %zu)", r, cg_dim(c, pt.offset),
                  tg_dtype_size(c->g->values[v].dtype));
}

void cg_dims_array(tg_cg *c, const char *name, const tg_shape *s)
{
    fprintf(c->f, "    const int64_t %s[] = {", name);
    for (int i = 0; i < s->rank; i++)
        fprintf(c->f, "%s%s", i ? ", " : "", cg_dim(c, s->d[i]));
    fprintf(c->f, "%s};\n", s->rank ? "" : "1");
}

const char *cg_dtype_enum(tg_cg *c, const char *prefix, tg_dtype t)
{
    char buf[32];
    const char *n = tg_dtype_name(t);
    size_t i = 0;
    for (; n[i] && i < sizeof buf - 1; i++)
        buf[i] = n[i] >= 'a' && n[i] <= 'z' ? n[i] - 32 : n[i];
    buf[i] = 0;
    return cg_str(c, "%s%s", prefix, buf);
}

/* %.9g of a float and %.17g of a double read back exactly; a '.' where
 * there is neither one nor an exponent keeps "6" from being an int and
 * "6f" from being no literal at all. */
static const char *literal(tg_cg *c, double v, bool single)
{
    if (isnan(v))
        return "NAN";
    if (isinf(v) || (single && fabs(v) > FLT_MAX))
        return v > 0 ? "INFINITY" : "-INFINITY";
    char buf[40];
    snprintf(buf, sizeof buf, single ? "%.9g" : "%.17g", single ? (double)(float)v : v);
    return cg_str(c, "%s%s%s", buf, strpbrk(buf, ".e") ? "" : ".0", single ? "f" : "");
}

const char *cg_float(tg_cg *c, double v)
{
    return literal(c, v, true);
}

const char *cg_double(tg_cg *c, double v)
{
    return literal(c, v, false);
}

const char *cg_quote(tg_cg *c, const char *s)
{
    size_t n = strlen(s);
    char *q = malloc(4 * n + 3), *o = q;
    if (!q)
        return "\"\"";
    *o++ = '"';
    for (; *s; s++) {
        unsigned char ch = (unsigned char)*s;
        if (ch == '"' || ch == '\\' || ch == '?')   /* '?': no trigraphs */
            o += sprintf(o, "\\%c", ch);
        else if (ch < 32 || ch >= 127 || ch == '%')
            o += ch == '%' ? sprintf(o, "%%%%") : sprintf(o, "\\%03o", ch);
        else
            *o++ = (char)ch;
    }
    *o++ = '"';
    *o = 0;
    const char *r = cg_str(c, "%s", q);
    free(q);
    return r;
}

/* ---- the symbols ------------------------------------------------------------ */

int cg_data_symbol(const tg_cg *c, const tg_node *nd)
{
    const tg_graph *g = c->g;
    if (!tg_op_is_data(nd->op))
        return -1;
    const tg_shape *sh = &g->values[nd->out[0]].shape;
    for (int k = 0; k < sh->rank; k++)
        for (int s = 0; s < g->nsym; s++)
            if (g->sym[s].data && tg_dim_eq(sh->d[k], tg_dim_sym(s)))
                return s;
    return -1;
}

int cg_data_bind(tg_cg *c, const tg_node *nd, const char *count)
{
    const tg_symbol *y = &c->g->sym[cg_data_symbol(c, nd)];     /* check_data_node: one */
    int s = (int)(y - c->g->sym);
    /* the node's words quoted (a '%' in its name doubled), then the format */
    const char *who = cg_quote(c, cg_str(c, "node '%s' (%s): length ", nd->name,
                                         tg_op_name(nd->op)));
    fprintf(c->f, "    C->S[%d] = %s;\n    if (C->S[%d] < %" PRId64 " || C->S[%d] > %" PRId64 ")\n"
            "        return tgrt_fail(TGRAPH_E_DATA, %s \"%%lld outside its range [%" PRId64
            ", %" PRId64 "]\", (long long)C->S[%d]);\n"
            "    if (%splan_dims(C->S, C->D, %d))\n        return tgrt_fail(TGRAPH_E_DATA, %s "
            "\"%%lld makes a dim negative\", (long long)C->S[%d]);\n",
            s, count, s, y->min, s, y->max, who, y->min, y->max, s, c->pre, s, who, s);
    return 0;
}

/* For each symbol, the input dim coef*s + offset to read it from; a data
 * symbol none (input -1): its node binds it, or a control node's outputs
 * alone use it; likewise one no input dim gives (a subgraph's copy of an
 * outer one it does not use). */
static int bind_symbols(const tg_graph *g, const char *pre, FILE *f)
{
    fprintf(f, "static const tgrt_bind %sBIND[] = {\n", pre);
    for (int s = 0; s < g->nsym; s++) {
        int i = -1, k = 0;
        int64_t coef = 1, off = 0;
        if (g->sym[s].data || tg_graph_symbol_source(g, s, &i, &k, &coef, &off)) {
            tg_err_clear();
            i = -1, k = 0, coef = 1, off = 0;
        }
        fprintf(f, "    {%d, %d, %" PRId64 ", %" PRId64 "},\n", i, k, coef, off);
    }
    if (!g->nsym)
        fprintf(f, "    {0, 0, 1, 0},\n");
    fprintf(f, "};\n");
    return 0;
}

/* Every value's size must fit comfortably in int64 over the symbols' ranges,
 * so the generated arithmetic never overflows. */
static int check_sizes(const tg_cg *c)
{
    const tg_graph *g = c->g;
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *x = &g->values[v];
        tg_dim n;
        int64_t lo, hi;
        if (c->dyn[v])
            continue;
        if (tg_shape_numel(&x->shape, &n))
            return tg_err("value '%s': %s", x->name, tg_errmsg());
        tg_dim_range(n, g->sym, &lo, &hi);
        if (hi > BYTES_LIMIT / 16) {
            char buf[256];
            tg_shape_format(&x->shape, g->sym, buf, sizeof buf);
            return tg_err("value '%s' %s can have more than 2^56 elements over the symbols'"
                          " ranges: give the symbols smaller ranges (texport --range)",
                          x->name, buf);
        }
    }
    return 0;
}

/* A data op's output is declared in the file, not inferred (tgraph-format(5)),
 * and its kernel writes what the op makes into a buffer sized by the output's
 * length at its bound: the declared shape must be the op's, its length a
 * data symbol whose range holds the most the op can make. */
static int check_data_node(const tg_graph *g, const tg_node *n)
{
    const tg_value *y = &g->values[n->out[0]];
    tg_shape s;
    int k, sym = -1;
    int64_t most;
    if (tg_data_shape(g, n, &s, &k, &most))
        return tg_err("node '%s' (%s): %s", n->name, tg_op_name(n->op), tg_errmsg());
    for (int j = 0; j < g->nsym && k < y->shape.rank; j++)
        if (g->sym[j].data && tg_dim_eq(y->shape.d[k], tg_dim_sym(j)))
            sym = j;
    if (sym >= 0)
        s.d[k] = tg_dim_sym(sym);
    if (sym < 0 || y->dtype != TG_I64 || !tg_shape_eq(&s, &y->shape)) {
        char got[256], want[256] = "[", d[64];
        tg_shape_format(&y->shape, g->sym, got, sizeof got);
        for (int j = 0; j < s.rank; j++) {
            tg_dim_format(s.d[j], g->sym, d, sizeof d);
            snprintf(want + strlen(want), sizeof want - strlen(want), "%s%s", j ? ", " : "",
                     j == k ? "n" : d);
        }
        return tg_err("node '%s' (%s): its output is declared %s %s, the op makes i64 %s]"
                      " with n a data symbol", n->name, tg_op_name(n->op),
                      tg_dtype_name(y->dtype), got, want);
    }
    if (g->sym[sym].max < most)
        return tg_err("node '%s' (%s): data symbol %s ranges up to %" PRId64 ", the op can make"
                      " %" PRId64, n->name, tg_op_name(n->op), g->sym[sym].name, g->sym[sym].max,
                      most);
    return 0;
}

/* Every data op's declared output (check_data_node). A node that broadcasts
 * a dim that is one data symbol against another dim (tgraph-format(5))
 * leaves it to the run to be 1 or equal, which the compiled loops, their
 * strides fixed now, cannot follow: refuse it. Such a node's inference fails
 * where the symbols are plain ones. */
static int check_data(const tg_graph *g)
{
    tg_graph *plain = NULL;
    int rc = 0;
    for (int i = 0; i < g->nnode && !rc; i++) {
        const tg_node *n = &g->nodes[i];
        bool reads = false;
        if (tg_op_is_data(n->op)) {
            rc = check_data_node(g, n);
            continue;
        }
        for (int j = 0; j < n->nin; j++)
            reads = reads || (n->in[j] >= 0 && tg_shape_uses_data(g, &g->values[n->in[j]].shape));
        if (!reads)
            continue;
        if (!plain) {
            if (!(plain = tg_graph_clone(g)))
                return -1;
            for (int s = 0; s < plain->nsym; s++)
                plain->sym[s].data = false;
        }
        if (tg_op_table[n->op].infer(plain, i))
            rc = tg_err("node '%s' (%s): %s: a dim the data sets broadcast against another;"
                        " tcompile needs them equal (trun runs such a graph)", n->name,
                        tg_op_name(n->op), tg_errmsg());
    }
    tg_graph_free(plain);
    return rc;
}

bool cg_dim_run_set(const tg_cg *c, tg_dim d)
{
    for (int s = 0; s < c->g->nsym; s++)
        if (c->free_sym[s] && tg_dim_uses_sym(d, s))
            return true;
    return false;
}

/* The symbols with no bound before the run (a data symbol no data op binds:
 * a control node's; one no input gives), and the values whose shape uses
 * one: the run sets them, which the code generator takes only for a graph
 * output that a control node makes (emit_control.c). */
static int find_run_sized(tg_cg *c)
{
    const tg_graph *g = c->g;
    for (int s = 0; s < g->nsym; s++) {
        int i, k;
        int64_t coef, off;
        c->free_sym[s] = g->sym[s].data || tg_graph_symbol_source(g, s, &i, &k, &coef, &off);
    }
    for (int n = 0; n < g->nnode; n++)
        if (cg_data_symbol(c, &g->nodes[n]) >= 0)
            c->free_sym[cg_data_symbol(c, &g->nodes[n])] = false;
    tg_err_clear();
    for (int v = 0; v < g->nvalue; v++) {
        const tg_shape *sh = &g->values[v].shape;
        for (int k = 0; k < sh->rank; k++)
            c->dyn[v] |= cg_dim_run_set(c, sh->d[k]);
        int nout = 0;
        for (int j = 0; j < g->noutput; j++)
            nout += g->outputs[j] == v;
        if (c->dyn[v] && (nout > 1 || g->values[v].kind != TG_VALUE_NODE ||
                          !tg_op_is_control(g->nodes[g->values[v].producer].op)))
            return tg_err("value '%s': its shape is set as the graph runs (a data symbol); the "
                          "C code generator takes that only for an output of if or loop that "
                          "is a graph output (once) or unused", g->values[v].name);
    }
    for (int n = 0; n < g->nnode; n++)
        for (int i = 0; i < g->nodes[n].nin; i++)
            if (g->nodes[n].in[i] >= 0 && c->dyn[g->nodes[n].in[i]])
                return tg_err("node '%s' reads '%s', whose shape is set as the graph runs: the "
                              "C code generator needs its inputs' shapes before the run",
                              g->nodes[n].name, g->values[g->nodes[n].in[i]].name);
    return 0;
}

/* ---- the tables ---------------------------------------------------------------- */

static void tensor_infos(tg_cg *c, FILE *f, const char *name, int n, const int *vals)
{
    fprintf(f, "static const tgraph_tensor_info %s[] = {\n", name);
    for (int i = 0; i < n; i++) {
        const tg_value *x = &c->g->values[vals[i]];
        fprintf(f, "    {%s, %s, %d, {", cg_quote(c, x->name),
                cg_dtype_enum(c, "TGRAPH_", x->dtype), x->shape.rank);
        for (int k = 0; k < x->shape.rank; k++) {
            int64_t v;
            fprintf(f, "%s%" PRId64, k ? ", " : "", tg_dim_is_const(x->shape.d[k], &v) ? v : -1);
        }
        fprintf(f, "}, {");
        for (int k = 0; k < x->shape.rank; k++) {
            char buf[256];
            tg_dim_format(x->shape.d[k], c->g->sym, buf, sizeof buf);
            fprintf(f, "%s%s", k ? ", " : "", cg_quote(c, buf));
        }
        fprintf(f, "}},\n");
    }
    if (!n)
        fprintf(f, "    {0},\n");
    fprintf(f, "};\n");
}

static int dim_table(tg_cg *c, FILE *f, const char *name, int n, const int *vals)
{
    fprintf(f, "static const int %s[] = {\n", name);
    for (int i = 0; i < n; i++) {
        const tg_shape *s = &c->g->values[vals[i]].shape;
        fprintf(f, "   ");
        for (int k = 0; k < TGRAPH_MAX_RANK; k++) {
            bool run_set = k < s->rank && cg_dim_run_set(c, s->d[k]);
            int idx = run_set ? -1 : k < s->rank ? cg_dim_index(c, s->d[k]) : 0;
            if (idx < 0 && !run_set)
                return -1;
            fprintf(f, " %d,", idx);
        }
        fprintf(f, "\n");
    }
    if (!n)
        fprintf(f, "    0,\n");
    fprintf(f, "};\n");
    return 0;
}

/* ---- prepare: D[] and the workspace slots ------------------------------------------ */

static void emit_poly(FILE *f, tg_dim d)
{
    if (!d.nterms)
        fprintf(f, "0");
    for (int t = 0; t < d.nterms; t++) {
        int64_t coef = d.t[t].coef;
        bool first = true;
        fprintf(f, "%s", t == 0 ? (coef < 0 ? "-" : "") : coef < 0 ? " - " : " + ");
        if (coef < 0)
            coef = -coef;
        if (coef != 1) {
            fprintf(f, "%" PRId64, coef);
            first = false;
        }
        for (int s = 0; s < TG_MAX_SYMS; s++)
            for (int k = 0; k < d.t[t].pow[s]; k++) {
                fprintf(f, "%sS[%d]", first ? "" : "*", s);
                first = false;
            }
        if (first)
            fprintf(f, "1");
    }
}

/* plan_dims(S, D, sym): D[] from S, every entry (sym < 0) or those that use
 * data symbol sym, which its node has just bound; then -1 when a dim of a
 * value is negative (a slice past a length the run found short: the
 * interpreter's inference refuses it likewise). Buffers are sized by the
 * bounds because a dim over a data symbol grows with it: such dims come
 * from inference (attributes never hold a data symbol), which adds to a
 * length or multiplies it, never subtracts it. */
static int emit_dims(tg_cg *c, FILE *f)
{
    const tg_graph *g = c->g;
    for (int v = 0; v < g->nvalue; v++)      /* their D[] entries, for the check */
        for (int k = 0; k < g->values[v].shape.rank && !c->dyn[v]; k++)
            if (tg_shape_uses_data(g, &(tg_shape){1, {g->values[v].shape.d[k]}}) &&
                cg_dim_index(c, g->values[v].shape.d[k]) < 0)
                return -1;
    fprintf(f, "static int %splan_dims(const int64_t *S, int64_t *D, int sym)\n{\n"
            "    (void)S, (void)D;\n", c->pre);
    for (int s = -1; s < g->nsym; s++) {
        if (s >= 0 && (!g->sym[s].data || c->free_sym[s]))     /* (a control node's) */
            continue;
        fprintf(f, "    if (sym == %d) {\n", s);
        for (int i = 0; i < c->ndim; i++)
            if (s < 0 || tg_dim_uses_sym(c->dims[i], s)) {
                fprintf(f, "        D[%d] = ", i);
                emit_poly(f, c->dims[i]);
                fprintf(f, ";\n");
            }
        for (int v = 0; s >= 0 && v < g->nvalue; v++)
            for (int k = 0; k < g->values[v].shape.rank && !c->dyn[v]; k++)
                if (tg_dim_uses_sym(g->values[v].shape.d[k], s))
                    fprintf(f, "        if (%s < 0)\n            return -1;\n",
                            cg_dim(c, g->values[v].shape.d[k]));
        fprintf(f, "        return 0;\n    }\n");
    }
    fprintf(f, "    return 0;\n}\n\n");
    return 0;
}

/* S[s] of each data symbol: its node's bound over the symbols before it,
 * at most its max (model_rt's start), so that D[] and the slots of prepare
 * hold the most a run can make. */
static void emit_bounds(tg_cg *c, FILE *f)
{
    const tg_graph *g = c->g;
    for (int n = 0; n < g->nnode; n++) {
        tg_dim b;
        int s = cg_data_symbol(c, &g->nodes[n]);
        if (s < 0 || tg_data_bound(g, &g->nodes[n], &b)) {
            tg_err_clear();     /* the max stays */
            continue;
        }
        fprintf(f, "    n = (size_t)(");
        emit_poly(f, b);
        fprintf(f, ");   /* %s */\n    if ((int64_t)n < S[%d])\n        S[%d] = (int64_t)n;\n",
                g->nodes[n].name, s, s);
    }
}

static int emit_prepare(tg_cg *c, const char *pre, FILE *f)
{
    const tg_plan *p = c->p;
    /* register every slot member's size first: D[] must be complete */
    const char **sizes = calloc(c->g->nvalue + 1, sizeof *sizes);
    if (!sizes)
        return tg_err("out of memory");
    for (int v = 0; v < c->g->nvalue; v++)
        if (p->slot[v] >= 0 && p->alias[v] == v)
            sizes[v] = cg_bytes(c, v);
    if (emit_dims(c, f)) {
        free(sizes);
        return -1;
    }
    fprintf(f, "static size_t %splan_prepare(int64_t *S, int64_t *D, size_t *slot)\n{\n"
            "    size_t off = 0, n;\n    (void)S, (void)D, (void)slot, (void)n;\n", pre);
    emit_bounds(c, f);
    fprintf(f, "    (void)%splan_dims(S, D, -1);\n", pre);
    for (int s = 0; s < p->nslot; s++) {
        fprintf(f, "    n = 0;   /* slot %d:", s);
        for (int v = 0; v < c->g->nvalue; v++)
            if (sizes[v] && p->slot[v] == s)
                fprintf(f, " v%d", v);
        fprintf(f, " */\n");
        for (int v = 0; v < c->g->nvalue; v++) {
            bool again = false;     /* a size met before in this slot */
            if (!sizes[v] || p->slot[v] != s)
                continue;
            for (int u = 0; u < v && !again; u++)
                again = sizes[u] && p->slot[u] == s && !strcmp(sizes[u], sizes[v]);
            if (!again)
                fprintf(f, "    if ((size_t)(%s) > n)\n        n = (size_t)(%s);\n", sizes[v],
                        sizes[v]);
        }
        fprintf(f, "    slot[%d] = off;\n    off += (n + %d) & ~(size_t)%d;\n", s,
                TGRT_ALIGN - 1, TGRT_ALIGN - 1);
    }
    fprintf(f, "    return off;\n}\n\n");
    free(sizes);
    return 0;
}

/* ---- exec: the plan ---------------------------------------------------------------- */

/* A kernel's ops for its timing: "linear+relu". */
static const char *kernel_ops(tg_cg *c, int root)
{
    if (c->p->kind[root] == TG_GROUP_STRIDED)    /* its views cost nothing */
        return tg_op_name(c->g->nodes[tg_strided_kernel(c->g, root)].op);
    const char *ops = "";
    for (int m = 0; m <= root; m++)
        if (c->p->root[m] == root)
            ops = cg_str(c, "%s%s%s", ops, *ops ? "+" : "", tg_op_name(c->g->nodes[m].op));
    return ops;
}

static int emit_body(tg_cg *c)
{
    const tg_graph *g = c->g;
    const tg_plan *p = c->p;
    for (int n = 0; n < g->nnode; n++) {
        if (p->root[n] != n)
            continue;
        /* each kernel timed when a profile is set (tgraph_set_profile); views cost nothing */
        bool timed = !(tg_op_is_view(g->nodes[n].op) && p->kind[n] == TG_GROUP_SINGLE);
        if (timed)
            fprintf(c->f, "    TGRT_PROF_BEGIN(T0);\n");
        if (p->kind[n] == TG_GROUP_LOOP) {
            if (cg_emit_loop(c, n))
                return -1;
        } else if (p->kind[n] == TG_GROUP_VIEW) {
            if (cg_emit_view(c, n))
                return -1;
        } else if (p->kind[n] == TG_GROUP_STRIDED) {
            /* the members are views it reads in place, or writes through */
            if (cg_emit_node(c, tg_strided_kernel(g, n)))
                return -1;
        } else if (p->kind[n] == TG_GROUP_EPILOGUE) {
            if (cg_emit_epilogue(c, n))
                return -1;
        } else {
            for (int m = 0; m <= n; m++)   /* members run in order, the root last */
                if (p->root[m] == n && cg_emit_node(c, m))
                    return -1;
        }
        /* a STRIDED group is named after its kernel, not the permute it may end in */
        int named = p->kind[n] == TG_GROUP_STRIDED ? tg_strided_kernel(g, n) : n;
        if (timed)
            fprintf(c->f, "    TGRT_PROF_END(T0, %s, %s);\n", cg_quote(c, g->nodes[named].name),
                    cg_quote(c, kernel_ops(c, n)));
        TG_LOG(CODEGEN, TG_LOG_DEBUG, "kernel %s: %s%s", g->nodes[n].name, kernel_ops(c, n),
               p->kind[n] == TG_GROUP_LOOP ? " (one fused loop)" : "");
    }
    /* outputs that are inputs, weights, views of them, or listed twice: copy */
    for (int j = 0; j < g->noutput; j++) {
        int v = g->outputs[j], r = p->alias[v];
        if (p->output[r] == j || c->dyn[v])     /* (the latter: the run hands it over) */
            continue;
        c->used[r] = true;
        fprintf(c->f, "    memcpy(C->out[%d], v%d, %s);\n", j, r, cg_bytes(c, v));
    }
    return 0;
}

/* `void *vN = ...;` for every value the body uses. */
static int emit_decls(tg_cg *c, FILE *f)
{
    const tg_graph *g = c->g;
    for (int v = 0; v < g->nvalue; v++) {
        if (!c->used[v])
            continue;
        const tg_value *x = &g->values[v];
        if (c->p->output[v] >= 0) {
            fprintf(f, "    void *v%d = C->out[%d];\n", v, c->p->output[v]);
        } else if (c->p->slot[v] >= 0) {
            fprintf(f, "    void *v%d = C->arena + C->slot[%d];\n", v, c->p->slot[v]);
        } else if (x->kind == TG_VALUE_CONST) {
            fprintf(f, "    void *v%d = (void *)(C->w + %" PRId64 ");\n", v, c->w->offset[v]);
        } else if (x->kind == TG_VALUE_INPUT) {
            int i = 0;
            while (i < g->ninput && g->inputs[i] != v)
                i++;
            fprintf(f, "    void *v%d = C->in[%d];\n", v, i);
        } else {
            return tg_err("value '%s' has no memory in the plan", x->name);
        }
    }
    return 0;
}

static const char abi_forwarders[] =
    "/* the version as data, read before dlopen (<tgraph/model.h>) */\n"
    "__attribute__((section(\".note.tgraph\"), used, aligned(4)))\n"
    "static const struct { uint32_t namesz, descsz, type; char name[8]; uint32_t desc; }\n"
    "    tgraph_abi_note = {sizeof TGRAPH_NOTE_NAME, 4, TGRAPH_NOTE_ABI_VERSION,\n"
    "                       TGRAPH_NOTE_NAME, TGRAPH_MODEL_ABI_VERSION};\n"
    "TGRAPH_API uint32_t tgraph_abi_version(void) { return TGRAPH_MODEL_ABI_VERSION; }\n"
    "TGRAPH_API const char *tgraph_strerror(int s) { return tgrt_strerror(s); }\n"
    "TGRAPH_API const char *tgraph_last_error(void) { return tgrt_last_error(); }\n"
    "TGRAPH_API tgraph_model *tgraph_model_open(const char *w) { return tgrt_open(&MODEL, w); }\n"
    "TGRAPH_API void tgraph_model_close(tgraph_model *m) { tgrt_close(m); }\n"
    "TGRAPH_API int tgraph_model_num_inputs(const tgraph_model *m) { return tgrt_num(m, 0); }\n"
    "TGRAPH_API int tgraph_model_num_outputs(const tgraph_model *m) { return tgrt_num(m, 1); }\n"
    "TGRAPH_API int tgraph_model_num_symbols(const tgraph_model *m) { return tgrt_num(m, 2); }\n"
    "TGRAPH_API int tgraph_model_input_info(const tgraph_model *m, int i, tgraph_tensor_info *t)\n"
    "{ return tgrt_tensor_info(m, 0, i, t); }\n"
    "TGRAPH_API int tgraph_model_output_info(const tgraph_model *m, int i, tgraph_tensor_info *t)\n"
    "{ return tgrt_tensor_info(m, 1, i, t); }\n"
    "TGRAPH_API int tgraph_model_symbol_info(const tgraph_model *m, int i, tgraph_symbol_info *s)\n"
    "{ return tgrt_symbol_info(m, i, s); }\n"
    "TGRAPH_API int tgraph_model_output_dims(const tgraph_model *m, const tgraph_tensor *in,\n"
    "                                        int nin, tgraph_tensor *out, int nout)\n"
    "{ return tgrt_output_dims(m, in, nin, out, nout); }\n"
    "TGRAPH_API int tgraph_model_run(tgraph_model *m, const tgraph_tensor *in, int nin,\n"
    "                                tgraph_tensor *out, int nout)\n"
    "{ return tgrt_run(m, in, nin, out, nout); }\n"
    "TGRAPH_API int tgraph_model_run_ex(tgraph_model *m, const tgraph_tensor *in, int nin,\n"
    "                                   tgraph_tensor *out, int nout, const tgraph_run_opts *o)\n"
    "{ return tgrt_run_ex(m, in, nin, out, nout, o); }\n"
    "TGRAPH_API void tgraph_set_num_threads(int n) { tgk_set_num_threads(n); }\n"
    "TGRAPH_API int tgraph_num_threads(void) { return tgk_num_threads(); }\n"
    "TGRAPH_API void tgraph_set_profile(tgraph_profile_fn f, void *x) { tgrt_set_profile(f, x); }\n";

/* Graph c->g's plan and tables (pre: the prefix of their names), ending in
 * the tgrt_model pre##MODEL; weights from how (NULL: none, a subgraph's). */
static int emit_model(tg_cg *c, const char *pre, const char *body, const char *fns,
                      const tg_codegen_weights *how, FILE *f)
{
    const tg_graph *g = c->g;
    char *tables = NULL, *exec = NULL;
    size_t tlen = 0, elen = 0;
    FILE *t = open_memstream(&tables, &tlen), *e = open_memstream(&exec, &elen);
    int rc = -1;
    if (!t || !e)
        goto out;
    /* exec's declarations, then the tables: both add to D[] before prepare */
    fprintf(e, "static int %splan_exec(const tgrt_call *C)\n{\n    const int64_t *D = C->D;\n"
            "    double T0 = 0;\n    (void)D, (void)T0;\n", pre);
    if (emit_decls(c, e))
        goto out;
    fprintf(e, "%s    return 0;\n}\n\n", body);
    fprintf(t, "static const tgraph_symbol_info %sSYMS[] = {\n", pre);
    for (int s = 0; s < g->nsym; s++)
        fprintf(t, "    {%s, %" PRId64 ", %" PRId64 "},\n", cg_quote(c, g->sym[s].name),
                g->sym[s].min, g->sym[s].max);
    fprintf(t, "%s};\n", g->nsym ? "" : "    {0},\n");
    if (bind_symbols(g, pre, t))
        goto out;
    tensor_infos(c, t, cg_str(c, "%sINPUTS", pre), g->ninput, g->inputs);
    tensor_infos(c, t, cg_str(c, "%sOUTPUTS", pre), g->noutput, g->outputs);
    if (dim_table(c, t, cg_str(c, "%sIN_DIM", pre), g->ninput, g->inputs) ||
        dim_table(c, t, cg_str(c, "%sOUT_DIM", pre), g->noutput, g->outputs))
        goto out;
    fclose(t);
    fclose(e);
    t = e = NULL;
    if (emit_prepare(c, pre, f))
        goto out;
    fprintf(f, "%s%s%s\n", fns, exec, tables);
    fprintf(f, "static const tgrt_model %sMODEL = {\n    .nsym = %d, .sym = %sSYMS, "
            ".bind = %sBIND,\n    .nin = %d, .nout = %d, .in = %sINPUTS, .out = %sOUTPUTS,\n"
            "    .in_dim = %sIN_DIM, .out_dim = %sOUT_DIM,\n    .ndim = %d, .nslot = %d,\n"
            "    .prepare = %splan_prepare, .exec = %splan_exec,\n",
            pre, g->nsym, pre, pre, g->ninput, g->noutput, pre, pre, pre, pre, c->ndim,
            c->p->nslot, pre, pre);
    if (how)
        fprintf(f, "    .weights = %s, .weights_size = %" PRIu64 "u, .weights_hash = 0x%016"
                PRIx64 "u,\n    .weights_file = %s,\n",
                how->incbin_path ? "tgraph_weights" : "NULL", c->w->size, c->w->hash,
                how->weights_file ? cg_quote(c, how->weights_file) : "NULL");
    fprintf(f, "};\n\n");
    rc = ferror(f) ? tg_err("writing the C file failed") : 0;
out:
    if (t)
        fclose(t);
    if (e)
        fclose(e);
    free(tables);
    free(exec);
    return rc;
}

int cg_emit_graph(tg_cg *c, const char *pre, const tg_codegen_weights *how, FILE *out)
{
    const tg_graph *g = c->g;
    const tg_plan *p = c->p;
    char *body = NULL, *fns = NULL;
    size_t blen = 0, flen = 0;
    int rc = -1;
    if (p->nnode != g->nnode || p->nvalue != g->nvalue || !p->alias)
        return tg_err("the plan does not belong to this graph (run the memory plan last)");
    c->pre = pre;
    c->used = calloc(g->nvalue + 1, sizeof *c->used);
    c->dyn = calloc(g->nvalue + 1, sizeof *c->dyn);
    c->free_sym = calloc(g->nsym + 1, sizeof *c->free_sym);
    c->f = open_memstream(&body, &blen);
    c->fns = open_memstream(&fns, &flen);
    if (!c->used || !c->dyn || !c->free_sym || !c->f || !c->fns) {
        tg_err("out of memory");
        goto out;
    }
    rc = find_run_sized(c) || check_sizes(c) || check_data(g) ? -1 : emit_body(c);
    fclose(c->f);
    fclose(c->fns);
    c->f = c->fns = NULL;
    if (!rc)
        rc = emit_model(c, pre, body, fns, how, out);
    TG_LOG(CODEGEN, TG_LOG_INFO, "C %s: %d nodes, %d dim expressions, %d workspace slots",
           *pre ? pre : "file", g->nnode, c->ndim, p->nslot);
out:
    if (c->f)
        fclose(c->f);
    if (c->fns)
        fclose(c->fns);
    free(body);
    free(fns);
    free(c->used);
    free(c->dyn);
    free(c->free_sym);
    free(c->dims);
    for (int i = 0; i < c->nstr; i++)
        free(c->strs[i]);
    free(c->strs);
    return rc;
}

/* The weights from how->incbin_path as the global (hidden) tgraph_weights,
 * for the part of the file the assembler reads them into. */
static char *weights_asm(const tg_codegen_weights *how)
{
    char *s = NULL;
    if (!how->incbin_path)
        return strdup("");
    if (asprintf(&s, "__asm__(\".section .rodata.tgraph_weights,\\\"a\\\"\\n\"\n"
                 "        \".balign %d\\n\"\n        \".globl tgraph_weights\\n\"\n"
                 "        \".hidden tgraph_weights\\n\"\n        \"tgraph_weights:\\n\"\n"
                 "        \".incbin \\\"%s\\\"\\n\"\n        \".previous\\n\");\n\n",
                 TGRT_ALIGN, how->incbin_path) < 0)
        return NULL;
    return s;
}

int tg_codegen_c(const tg_graph *g, const tg_plan *p, const tg_weights *w,
                 const tg_codegen_weights *how, tg_codegen_src *src)
{
    int nsub = 0;
    cg_hot hot = {0};
    char *body = NULL;
    size_t hlen = 0, blen = 0, plen = 0;
    tg_cg c = {.g = g, .p = p, .w = w, .nsub = &nsub, .hot = &hot};
    *src = (tg_codegen_src){0};
    hot.f = open_memstream(&src->hot, &hlen);
    FILE *b = open_memstream(&body, &blen), *f = NULL;
    int rc = hot.f && b ? cg_emit_graph(&c, "", how, b) : tg_err("out of memory");
    if (hot.f)
        fclose(hot.f);
    if (b)
        fclose(b);
    if (!rc && asprintf(&src->head, "/* A tgraph model compiled by tcompile: implements "
                        "<tgraph/model.h>. */\n#include <math.h>\n#include <stdint.h>\n"
                        "#include <stdlib.h>\n#include <string.h>\n\n%s\n",
                        tg_cg_rt_headers) < 0)
        src->head = NULL;   /* (undefined after a failure) */
    if (!rc && (!src->head || !(src->weights = weights_asm(how)) ||
                !(f = open_memstream(&src->plan, &plen))))
        rc = tg_err("out of memory");
    if (!rc) {
        cg_hot_protos(&hot, f);
        if (how->incbin_path)
            fprintf(f, "extern const unsigned char tgraph_weights[] "
                    "__attribute__((visibility(\"hidden\")));\n\n");
        fputs(body, f);
        fputs(abi_forwarders, f);
        rc = ferror(f) ? tg_err("writing the C file failed") : 0;
    }
    if (f)
        fclose(f);
    free(body);
    cg_hot_free(&hot);
    if (rc || !src->hot || !src->plan) {
        tg_codegen_src_free(src);
        return rc ? rc : tg_err("out of memory");
    }
    return 0;
}

void tg_codegen_src_free(tg_codegen_src *src)
{
    free(src->head);
    free(src->hot);
    free(src->weights);
    free(src->plan);
    *src = (tg_codegen_src){0};
}
