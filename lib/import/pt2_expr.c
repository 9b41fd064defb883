/* Sizes in TensorMeta: {"as_int": n} or {"as_expr": {"expr_str": ...}}, where
 * expr_str is sympy's srepr ("Mul(Integer(2), Symbol('s77', integer=True))")
 * or, in older files, plain text ("2*s0 + 1"). One recursive-descent parser
 * reads both:
 *   expr   := term (('+' | '-') term)*
 *   term   := factor ('*' factor)*
 *   factor := '-' factor | INT | '(' expr ')' | NAME ['**' INT]
 *           | NAME '(' args ')'    Symbol Integer Add Mul Pow
 * Anything else (FloorDiv, Mod, Max ...) is refused: tg_dim holds polynomials. */
#include <ctype.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

typedef struct {
    const pt2_ctx *c;
    const char *s;
} parser;

static int expr(parser *p, tg_dim *out);

static void ws(parser *p)
{
    while (isspace((unsigned char)*p->s))
        p->s++;
}

static bool eat(parser *p, char ch)
{
    ws(p);
    if (*p->s != ch)
        return false;
    p->s++;
    return true;
}

static int want(parser *p, char ch)
{
    return eat(p, ch) ? 0 : tg_err("expected '%c' at \"%.20s\"", ch, p->s);
}

static int integer(parser *p, int64_t *v)
{
    ws(p);
    bool neg = eat(p, '-');
    ws(p);
    if (!isdigit((unsigned char)*p->s))
        return tg_err("expected an integer at \"%.20s\"", p->s);
    uint64_t x = 0;
    while (isdigit((unsigned char)*p->s)) {
        if (x > (uint64_t)INT64_MAX / 10)
            return tg_err("integer too large");
        x = x * 10 + (uint64_t)(*p->s++ - '0');
    }
    if (x > (uint64_t)INT64_MAX)
        return tg_err("integer too large");
    *v = neg ? -(int64_t)x : (int64_t)x;
    return 0;
}

static int name(parser *p, char *buf, size_t n)
{
    ws(p);
    size_t k = 0;
    if (!(isalpha((unsigned char)*p->s) || *p->s == '_'))
        return tg_err("expected a name at \"%.20s\"", p->s);
    while (isalnum((unsigned char)*p->s) || *p->s == '_') {
        if (k + 1 >= n)
            return tg_err("name too long");
        buf[k++] = *p->s++;
    }
    buf[k] = 0;
    return 0;
}

static int symbol(parser *p, const char *nm, tg_dim *out)
{
    for (int i = 0; i < p->c->g->nsym; i++)
        if (p->c->tsym[i] && strcmp(p->c->tsym[i], nm) == 0) {
            *out = tg_dim_sym(i);
            return 0;
        }
    return tg_err("unknown symbol '%s' (not in range_constraints)", nm);
}

/* Skip to the ')' closing an argument list whose '(' is consumed, over quoted
 * strings (Symbol's keyword arguments are of no use here). */
static int skip_args(parser *p)
{
    int depth = 1;
    char q = 0;
    for (; *p->s; p->s++) {
        if (q) {
            if (*p->s == q)
                q = 0;
        } else if (*p->s == '\'' || *p->s == '"') {
            q = *p->s;
        } else if (*p->s == '(') {
            depth++;
        } else if (*p->s == ')' && --depth == 0) {
            p->s++;
            return 0;
        }
    }
    return tg_err("unbalanced parentheses");
}

static int power(tg_dim base, int64_t e, tg_dim *out)
{
    if (e < 0 || e > 16)
        return tg_err("unsupported exponent %lld", (long long)e);
    *out = tg_dim_const(1);
    for (int64_t i = 0; i < e; i++)
        if (tg_dim_mul(*out, base, out) < 0)
            return -1;
    return 0;
}

/* Add(...), Mul(...): fold the argument list with op. */
static int fold(parser *p, int (*op)(tg_dim, tg_dim, tg_dim *), tg_dim unit, tg_dim *out)
{
    *out = unit;
    if (eat(p, ')'))
        return 0;
    do {
        tg_dim a;
        if (expr(p, &a) < 0 || op(*out, a, out) < 0)
            return -1;
    } while (eat(p, ','));
    return want(p, ')');
}

static int call(parser *p, const char *fn, tg_dim *out)
{
    if (!strcmp(fn, "Integer")) {
        int64_t v;
        if (integer(p, &v) < 0 || want(p, ')') < 0)
            return -1;
        *out = tg_dim_const(v);
        return 0;
    }
    if (!strcmp(fn, "Symbol")) {
        char q, nm[64];
        ws(p);
        q = *p->s;
        if (q != '\'' && q != '"')
            return tg_err("Symbol without a quoted name");
        p->s++;
        if (name(p, nm, sizeof nm) < 0 || *p->s != q)
            return tg_err("malformed Symbol name");
        p->s++;
        return symbol(p, nm, out) < 0 ? -1 : skip_args(p);
    }
    if (!strcmp(fn, "Add"))
        return fold(p, tg_dim_add, tg_dim_const(0), out);
    if (!strcmp(fn, "Mul"))
        return fold(p, tg_dim_mul, tg_dim_const(1), out);
    if (!strcmp(fn, "Pow")) {
        tg_dim base, e;
        int64_t ev;
        if (expr(p, &base) < 0 || want(p, ',') < 0 || expr(p, &e) < 0 || want(p, ')') < 0)
            return -1;
        if (!tg_dim_is_const(e, &ev))
            return tg_err("symbolic exponent");
        return power(base, ev, out);
    }
    return tg_err("unsupported function %s() in a size expression", fn);
}

static int factor(parser *p, tg_dim *out)
{
    ws(p);
    if (eat(p, '-')) {
        tg_dim a;
        return factor(p, &a) < 0 ? -1 : tg_dim_sub(tg_dim_const(0), a, out);
    }
    if (eat(p, '(')) {
        return expr(p, out) < 0 ? -1 : want(p, ')');
    }
    if (isdigit((unsigned char)*p->s)) {
        int64_t v;
        if (integer(p, &v) < 0)
            return -1;
        *out = tg_dim_const(v);
        return 0;
    }
    char nm[64];
    if (name(p, nm, sizeof nm) < 0)
        return -1;
    if (eat(p, '('))
        return call(p, nm, out);
    if (symbol(p, nm, out) < 0)
        return -1;
    ws(p);
    if (strncmp(p->s, "**", 2) == 0) {
        int64_t e;
        p->s += 2;
        return integer(p, &e) < 0 ? -1 : power(*out, e, out);
    }
    return 0;
}

static int term(parser *p, tg_dim *out)
{
    if (factor(p, out) < 0)
        return -1;
    for (;;) {
        ws(p);
        if (p->s[0] != '*' || p->s[1] == '*')
            return 0;
        p->s++;
        tg_dim b;
        if (factor(p, &b) < 0 || tg_dim_mul(*out, b, out) < 0)
            return -1;
    }
}

static int expr(parser *p, tg_dim *out)
{
    if (term(p, out) < 0)
        return -1;
    for (;;) {
        ws(p);
        char op = *p->s;
        if (op != '+' && op != '-')
            return 0;
        p->s++;
        tg_dim b;
        if (term(p, &b) < 0 ||
            (op == '+' ? tg_dim_add(*out, b, out) : tg_dim_sub(*out, b, out)) < 0)
            return -1;
    }
}

static int parse_expr(const pt2_ctx *c, const char *s, tg_dim *out)
{
    parser p = {c, s};
    if (expr(&p, out) < 0)
        return tg_err("size expression \"%s\": %s", s, tg_errmsg());
    ws(&p);
    if (*p.s)
        return tg_err("size expression \"%s\": unexpected \"%.20s\"", s, p.s);
    return 0;
}

int pt2_parse_size(const pt2_ctx *c, const cJSON *size, tg_dim *out)
{
    const cJSON *i = cJSON_GetObjectItemCaseSensitive(size, "as_int");
    if (i) {
        int64_t v;
        if (pt2_json_int(i, &v) < 0)
            return -1;
        *out = tg_dim_const(v);
        return 0;
    }
    const cJSON *e = cJSON_GetObjectItemCaseSensitive(size, "as_expr");
    const cJSON *s = cJSON_GetObjectItemCaseSensitive(e, "expr_str");
    if (!cJSON_IsString(s))
        return tg_err("malformed size (neither as_int nor as_expr)");
    return parse_expr(c, s->valuestring, out);
}
