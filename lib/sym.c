/* Symbolic dimensions as integer polynomials in canonical form.
 *
 * Terms are ordered by total degree, highest first, then by the powers compared
 * symbol by symbol (higher power of s0 first): a graded order, so it is a monomial
 * order and polynomial long division by it is exact when the divisor divides.
 * Work happens on a wider `poly` so intermediate results may have more terms than
 * a tg_dim holds; only the final result must fit. */
#include "sym.h"

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

#define POLY_TERMS 64

typedef struct {
    int n;
    tg_term t[POLY_TERMS];
} poly;

static int degree(const tg_term *t)
{
    int d = 0;
    for (int i = 0; i < TG_MAX_SYMS; i++)
        d += t->pow[i];
    return d;
}

/* <0 when a sorts before b (a is the "larger" monomial). */
static int mono_cmp(const tg_term *a, const tg_term *b)
{
    int da = degree(a), db = degree(b);
    if (da != db)
        return db - da;
    for (int i = 0; i < TG_MAX_SYMS; i++)
        if (a->pow[i] != b->pow[i])
            return (int)b->pow[i] - (int)a->pow[i];
    return 0;
}

/* Term count, with a malformed count (from a damaged file) read as none. */
static int nterms(const tg_dim *d)
{
    return d->nterms > 0 && d->nterms <= TG_DIM_TERMS ? d->nterms : 0;
}

static void poly_from_dim(const tg_dim *d, poly *p)
{
    p->n = nterms(d);
    memcpy(p->t, d->t, (size_t)p->n * sizeof(tg_term));
}

/* Add coef*mono into p, keeping it sorted and free of zero terms. */
static int poly_add_term(poly *p, const tg_term *mono, int64_t coef)
{
    if (coef == 0)
        return 0;
    int i = 0;
    while (i < p->n && mono_cmp(&p->t[i], mono) < 0)
        i++;
    if (i < p->n && mono_cmp(&p->t[i], mono) == 0) {
        if (__builtin_add_overflow(p->t[i].coef, coef, &p->t[i].coef))
            return tg_err("dimension expression overflows int64");
        if (p->t[i].coef == 0) {
            memmove(&p->t[i], &p->t[i + 1], (size_t)(p->n - i - 1) * sizeof(tg_term));
            p->n--;
            memset(&p->t[p->n], 0, sizeof(tg_term));
        }
        return 0;
    }
    if (p->n == POLY_TERMS)
        return tg_err("dimension expression has too many terms");
    memmove(&p->t[i + 1], &p->t[i], (size_t)(p->n - i) * sizeof(tg_term));
    memcpy(p->t[i].pow, mono->pow, sizeof mono->pow);
    p->t[i].coef = coef;
    p->n++;
    return 0;
}

static int poly_to_dim(const poly *p, tg_dim *out)
{
    if (p->n > TG_DIM_TERMS)
        return tg_err("dimension expression has more than %d terms", TG_DIM_TERMS);
    tg_dim d;
    memset(&d, 0, sizeof d);
    d.nterms = p->n;
    memcpy(d.t, p->t, (size_t)p->n * sizeof(tg_term));
    *out = d;
    return 0;
}

/* r = a * t (one term); 0 or -1 on overflow. */
static int term_mul(const tg_term *a, const tg_term *b, tg_term *r)
{
    memset(r, 0, sizeof *r);
    if (__builtin_mul_overflow(a->coef, b->coef, &r->coef))
        return tg_err("dimension expression overflows int64");
    for (int i = 0; i < TG_MAX_SYMS; i++) {
        unsigned s = (unsigned)a->pow[i] + b->pow[i];
        if (s > UINT8_MAX)
            return tg_err("dimension expression power too large");
        r->pow[i] = (uint8_t)s;
    }
    return 0;
}

/* p += sign * a * b */
static int poly_add_product(poly *p, const poly *a, const poly *b, int64_t sign)
{
    for (int i = 0; i < a->n; i++)
        for (int j = 0; j < b->n; j++) {
            tg_term t;
            if (term_mul(&a->t[i], &b->t[j], &t) < 0)
                return -1;
            if (sign < 0 && __builtin_mul_overflow(t.coef, (int64_t)-1, &t.coef))
                return tg_err("dimension expression overflows int64");
            if (poly_add_term(p, &t, t.coef) < 0)
                return -1;
        }
    return 0;
}

tg_dim tg_dim_const(int64_t v)
{
    tg_dim d;
    memset(&d, 0, sizeof d);
    if (v != 0) {
        d.nterms = 1;
        d.t[0].coef = v;
    }
    return d;
}

tg_dim tg_dim_sym(int sym)
{
    tg_dim d;
    memset(&d, 0, sizeof d);
    if (sym >= 0 && sym < TG_MAX_SYMS) {
        d.nterms = 1;
        d.t[0].coef = 1;
        d.t[0].pow[sym] = 1;
    }
    return d;
}

static int dim_addsub(tg_dim a, tg_dim b, int64_t sign, tg_dim *out)
{
    poly p;
    poly_from_dim(&a, &p);
    for (int i = 0; i < nterms(&b); i++) {
        int64_t c = b.t[i].coef;
        if (sign < 0 && __builtin_mul_overflow(c, (int64_t)-1, &c))
            return tg_err("dimension expression overflows int64");
        if (poly_add_term(&p, &b.t[i], c) < 0)
            return -1;
    }
    return poly_to_dim(&p, out);
}

int tg_dim_add(tg_dim a, tg_dim b, tg_dim *out) { return dim_addsub(a, b, 1, out); }
int tg_dim_sub(tg_dim a, tg_dim b, tg_dim *out) { return dim_addsub(a, b, -1, out); }

int tg_dim_mul(tg_dim a, tg_dim b, tg_dim *out)
{
    poly pa, pb, p = {0};
    poly_from_dim(&a, &pa);
    poly_from_dim(&b, &pb);
    if (poly_add_product(&p, &pa, &pb, 1) < 0)
        return -1;
    return poly_to_dim(&p, out);
}

/* Long division by the leading term; exact or an error. */
int tg_dim_div(tg_dim a, tg_dim b, tg_dim *out)
{
    if (nterms(&b) == 0)
        return tg_err("division of a dimension by zero");
    poly r, pb, q = {0};
    poly_from_dim(&a, &r);
    poly_from_dim(&b, &pb);
    const tg_term *lb = &pb.t[0];
    while (r.n > 0) {
        tg_term t;
        memset(&t, 0, sizeof t);
        const tg_term *lr = &r.t[0];
        /* INT64_MIN / -1 overflows (and traps) */
        bool ok = !(lb->coef == -1 && lr->coef == INT64_MIN) && lr->coef % lb->coef == 0;
        for (int i = 0; ok && i < TG_MAX_SYMS; i++) {
            ok = lr->pow[i] >= lb->pow[i];
            t.pow[i] = (uint8_t)(lr->pow[i] - lb->pow[i]);
        }
        if (!ok)
            return tg_err("dimension does not divide exactly");
        t.coef = lr->coef / lb->coef;
        poly pt = {.n = 1};
        pt.t[0] = t;
        if (poly_add_term(&q, &t, t.coef) < 0 || poly_add_product(&r, &pt, &pb, -1) < 0)
            return -1;
    }
    return poly_to_dim(&q, out);
}

bool tg_dim_eq(tg_dim a, tg_dim b)
{
    if (nterms(&a) != nterms(&b))
        return false;
    for (int i = 0; i < nterms(&a); i++)
        if (a.t[i].coef != b.t[i].coef || mono_cmp(&a.t[i], &b.t[i]) != 0)
            return false;
    return true;
}

bool tg_dim_is_const(tg_dim a, int64_t *v)
{
    if (nterms(&a) == 0) {
        if (v)
            *v = 0;
        return true;
    }
    if (nterms(&a) == 1 && degree(&a.t[0]) == 0) {
        if (v)
            *v = a.t[0].coef;
        return true;
    }
    return false;
}

bool tg_dim_uses_sym(tg_dim a, int sym)
{
    if (sym < 0 || sym >= TG_MAX_SYMS)
        return false;
    for (int i = 0; i < nterms(&a); i++)
        if (a.t[i].pow[sym])
            return true;
    return false;
}

int tg_dim_eval(tg_dim a, const int64_t *vals, int64_t *out)
{
    int64_t sum = 0;
    for (int i = 0; i < nterms(&a); i++) {
        int64_t t = a.t[i].coef;
        for (int s = 0; s < TG_MAX_SYMS; s++)
            for (int k = 0; k < a.t[i].pow[s]; k++)
                if (__builtin_mul_overflow(t, vals[s], &t))
                    return tg_err("dimension value overflows int64");
        if (__builtin_add_overflow(sum, t, &sum))
            return tg_err("dimension value overflows int64");
    }
    *out = sum;
    return 0;
}

/* ---- ranges: interval arithmetic, saturating at the int64 limits ---- */

static int64_t sat_mul(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_mul_overflow(a, b, &r))
        return r;
    return (a < 0) != (b < 0) ? INT64_MIN : INT64_MAX;
}

static int64_t sat_add(int64_t a, int64_t b)
{
    int64_t r;
    if (!__builtin_add_overflow(a, b, &r))
        return r;
    return a < 0 ? INT64_MIN : INT64_MAX;
}

static void ival_mul(int64_t *lo, int64_t *hi, int64_t blo, int64_t bhi)
{
    int64_t c[4] = {sat_mul(*lo, blo), sat_mul(*lo, bhi), sat_mul(*hi, blo), sat_mul(*hi, bhi)};
    *lo = *hi = c[0];
    for (int i = 1; i < 4; i++) {
        if (c[i] < *lo)
            *lo = c[i];
        if (c[i] > *hi)
            *hi = c[i];
    }
}

void tg_dim_range(tg_dim a, const tg_symbol *syms, int64_t *lo, int64_t *hi)
{
    int64_t slo = 0, shi = 0;
    for (int i = 0; i < nterms(&a); i++) {
        int64_t tlo = a.t[i].coef, thi = a.t[i].coef;
        for (int s = 0; s < TG_MAX_SYMS; s++)
            for (int k = 0; k < a.t[i].pow[s]; k++)
                if (syms)
                    ival_mul(&tlo, &thi, syms[s].min, syms[s].max);
                else
                    ival_mul(&tlo, &thi, 0, INT64_MAX);
        slo = sat_add(slo, tlo);
        shi = sat_add(shi, thi);
    }
    *lo = slo;
    *hi = shi;
}

/* ---- text ---- */

typedef struct {
    char *buf;
    size_t n, len;
} outbuf;

static void out_printf(outbuf *o, const char *fmt, ...) TG_PRINTF(2, 3);
static void out_printf(outbuf *o, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    size_t room = o->len < o->n ? o->n - o->len : 0;
    int k = vsnprintf(room ? o->buf + o->len : NULL, room, fmt, ap);
    va_end(ap);
    if (k > 0)
        o->len += (size_t)k;
}

static void out_sym(outbuf *o, const tg_symbol *syms, int s)
{
    if (syms && syms[s].name)
        out_printf(o, "%s", syms[s].name);
    else
        out_printf(o, "s%d", s);
}

int tg_dim_format(tg_dim a, const tg_symbol *syms, char *buf, size_t n)
{
    outbuf o = {buf, n, 0};
    if (n)
        buf[0] = '\0';
    if (a.nterms <= 0 || a.nterms > TG_DIM_TERMS) {
        out_printf(&o, a.nterms ? "?" : "0");     /* malformed: say so, read nothing */
        return (int)o.len;
    }
    for (int i = 0; i < nterms(&a); i++) {
        const tg_term *t = &a.t[i];
        bool neg = t->coef < 0;
        /* |coef| as unsigned, so INT64_MIN prints too */
        uint64_t mag = neg ? -(uint64_t)t->coef : (uint64_t)t->coef;
        if (neg)
            out_printf(&o, "-");
        else if (i > 0)
            out_printf(&o, "+");
        bool first = true;
        if (mag != 1 || degree(t) == 0) {
            out_printf(&o, "%llu", (unsigned long long)mag);
            first = false;
        }
        for (int s = 0; s < TG_MAX_SYMS; s++)
            for (int k = 0; k < t->pow[s]; k++) {
                if (!first)
                    out_printf(&o, "*");
                out_sym(&o, syms, s);
                first = false;
            }
    }
    return (int)o.len;
}

typedef struct {
    const char *s;
    const tg_symbol *syms;
    int nsym;
    int depth;
} parser;

static int parse_expr(parser *p, poly *out);

static void skip_ws(parser *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static int parse_primary(parser *p, poly *out)
{
    skip_ws(p);
    memset(out, 0, sizeof *out);
    tg_term t;
    memset(&t, 0, sizeof t);
    t.coef = 1;
    if (*p->s == '(') {
        p->s++;
        if (++p->depth > 64)
            return tg_err("dimension expression nested too deeply");
        if (parse_expr(p, out) < 0)
            return -1;
        p->depth--;
        skip_ws(p);
        if (*p->s != ')')
            return tg_err("dimension expression: expected ')'");
        p->s++;
        return 0;
    }
    if (isdigit((unsigned char)*p->s)) {
        int64_t v = 0;
        while (isdigit((unsigned char)*p->s)) {
            if (__builtin_mul_overflow(v, (int64_t)10, &v) ||
                __builtin_add_overflow(v, (int64_t)(*p->s - '0'), &v))
                return tg_err("dimension expression: number too large");
            p->s++;
        }
        return poly_add_term(out, &t, v);
    }
    if (isalpha((unsigned char)*p->s) || *p->s == '_') {
        const char *b = p->s;
        while (isalnum((unsigned char)*p->s) || *p->s == '_')
            p->s++;
        size_t len = (size_t)(p->s - b);
        for (int i = 0; i < p->nsym; i++) {
            const char *name = p->syms ? p->syms[i].name : NULL;
            char dflt[16];
            if (!name) {
                snprintf(dflt, sizeof dflt, "s%d", i);
                name = dflt;
            }
            if (strlen(name) == len && memcmp(name, b, len) == 0) {
                t.pow[i] = 1;
                return poly_add_term(out, &t, 1);
            }
        }
        return tg_err("dimension expression: unknown symbol '%.*s'", (int)len, b);
    }
    if (*p->s == '\0')
        return tg_err("dimension expression: unexpected end");
    return tg_err("dimension expression: unexpected '%c'", *p->s);
}

static int parse_unary(parser *p, poly *out)
{
    skip_ws(p);
    if (*p->s == '-' || *p->s == '+') {
        bool neg = *p->s == '-';
        p->s++;
        if (++p->depth > 64)
            return tg_err("dimension expression nested too deeply");
        poly a;
        if (parse_unary(p, &a) < 0)
            return -1;
        p->depth--;
        memset(out, 0, sizeof *out);
        for (int i = 0; i < a.n; i++) {
            int64_t c = a.t[i].coef;
            if (neg && __builtin_mul_overflow(c, (int64_t)-1, &c))
                return tg_err("dimension expression overflows int64");
            if (poly_add_term(out, &a.t[i], c) < 0)
                return -1;
        }
        return 0;
    }
    return parse_primary(p, out);
}

static int parse_term(parser *p, poly *out)
{
    if (parse_unary(p, out) < 0)
        return -1;
    for (;;) {
        skip_ws(p);
        if (*p->s != '*')
            return 0;
        p->s++;
        poly b, prod = {0};
        if (parse_unary(p, &b) < 0 || poly_add_product(&prod, out, &b, 1) < 0)
            return -1;
        *out = prod;
    }
}

static int parse_expr(parser *p, poly *out)
{
    if (parse_term(p, out) < 0)
        return -1;
    for (;;) {
        skip_ws(p);
        if (*p->s != '+' && *p->s != '-')
            return 0;
        bool neg = *p->s == '-';
        p->s++;
        poly b;
        if (parse_term(p, &b) < 0)
            return -1;
        for (int i = 0; i < b.n; i++) {
            int64_t c = b.t[i].coef;
            if (neg && __builtin_mul_overflow(c, (int64_t)-1, &c))
                return tg_err("dimension expression overflows int64");
            if (poly_add_term(out, &b.t[i], c) < 0)
                return -1;
        }
    }
}

int tg_dim_parse(const char *s, const tg_symbol *syms, int nsym, tg_dim *out)
{
    if (!s)
        return tg_err("dimension expression: missing");
    parser p = {s, syms, nsym < 0 ? 0 : (nsym > TG_MAX_SYMS ? TG_MAX_SYMS : nsym), 0};
    poly r;
    if (parse_expr(&p, &r) < 0)
        return tg_err("%s (in \"%s\")", tg_errmsg(), s);
    skip_ws(&p);
    if (*p.s)
        return tg_err("dimension expression: unexpected '%c' (in \"%s\")", *p.s, s);
    if (poly_to_dim(&r, out) < 0)
        return tg_err("%s (in \"%s\")", tg_errmsg(), s);
    return 0;
}
