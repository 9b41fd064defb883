/* Symbolic dimensions: canonical form, arithmetic, exact division, text. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "sym.h"
#include "unit.h"

static const tg_symbol syms[3] = {{"s0", 1, 8, false}, {"s1", 2, 4, false}, {"batch", 1, 64, false}};

static tg_dim P(const char *s)
{
    tg_dim d = tg_dim_const(-999);
    if (tg_dim_parse(s, syms, 3, &d) < 0)
        fprintf(stderr, "parse '%s': %s\n", s, tg_errmsg());
    return d;
}

static bool fmt_is(tg_dim d, const char *want)
{
    char buf[256];
    tg_dim_format(d, syms, buf, sizeof buf);
    if (strcmp(buf, want) != 0)
        fprintf(stderr, "  formatted '%s', expected '%s'\n", buf, want);
    return strcmp(buf, want) == 0;
}

static void test_canonical(void)
{
    tg_dim s0 = tg_dim_sym(0), s1 = tg_dim_sym(1), r;
    CHECK(fmt_is(tg_dim_const(0), "0"));
    CHECK(tg_dim_const(0).nterms == 0);
    CHECK(fmt_is(tg_dim_const(64), "64"));
    CHECK(fmt_is(tg_dim_const(-3), "-3"));
    CHECK(tg_dim_add(s1, s0, &r) == 0 && fmt_is(r, "s0+s1"));
    CHECK(tg_dim_add(tg_dim_const(1), s0, &r) == 0 && fmt_is(r, "s0+1"));
    /* (s0+1)*(s0+1) */
    tg_dim a;
    CHECK(tg_dim_add(s0, tg_dim_const(1), &a) == 0);
    CHECK(tg_dim_mul(a, a, &r) == 0 && fmt_is(r, "s0*s0+2*s0+1"));
    /* 2*s0*s1 + s0 + 1, built in a scrambled order */
    tg_dim t;
    CHECK(tg_dim_mul(s1, s0, &t) == 0 && tg_dim_mul(t, tg_dim_const(2), &t) == 0);
    CHECK(tg_dim_add(tg_dim_const(1), t, &r) == 0 && tg_dim_add(r, s0, &r) == 0);
    CHECK(fmt_is(r, "2*s0*s1+s0+1"));
    CHECK(tg_dim_eq(r, P("1 + s0 + s1*2*s0")));
    /* like terms cancel to nothing */
    CHECK(tg_dim_sub(r, r, &t) == 0 && t.nterms == 0 && tg_dim_eq(t, tg_dim_const(0)));
    CHECK(tg_dim_sub(tg_dim_const(1), s0, &t) == 0 && fmt_is(t, "-s0+1"));
    CHECK(tg_dim_mul(s0, tg_dim_const(-2), &t) == 0 && fmt_is(t, "-2*s0"));
    CHECK(tg_dim_mul(r, tg_dim_const(0), &t) == 0 && t.nterms == 0);
    int64_t v;
    CHECK(tg_dim_is_const(tg_dim_const(7), &v) && v == 7);
    CHECK(tg_dim_is_const(tg_dim_const(0), &v) && v == 0);
    CHECK(!tg_dim_is_const(r, NULL));
    CHECK(tg_dim_uses_sym(r, 1) && !tg_dim_uses_sym(r, 2) && !tg_dim_uses_sym(r, 99));
    CHECK(!tg_dim_eq(s0, s1));
}

static void test_errors(void)
{
    tg_dim r, big = tg_dim_const(INT64_MAX);
    CHECK(tg_dim_add(big, tg_dim_const(1), &r) == -1);
    CHECK(strstr(tg_errmsg(), "overflow") != NULL);
    CHECK(tg_dim_sub(tg_dim_const(INT64_MIN), tg_dim_const(1), &r) == -1);
    CHECK(tg_dim_mul(big, tg_dim_const(2), &r) == -1);
    CHECK(tg_dim_mul(tg_dim_const(INT64_MIN), tg_dim_const(-1), &r) == -1);
    /* five terms do not fit */
    CHECK(tg_dim_parse("s0*s0+s0*s1+s0+s1+1", syms, 3, &r) == -1);
    CHECK(strstr(tg_errmsg(), "terms") != NULL);
    /* ... unless they cancel on the way */
    CHECK(tg_dim_parse("s0*s0+s0*s1+s0+s1+1-s0*s0", syms, 3, &r) == 0 && fmt_is(r, "s0*s1+s0+s1+1"));
}

static void test_div(void)
{
    tg_dim r;
    CHECK(tg_dim_div(P("64*s0*128"), P("64*128"), &r) == 0 && fmt_is(r, "s0"));
    CHECK(tg_dim_div(P("2*s0+2"), tg_dim_const(2), &r) == 0 && fmt_is(r, "s0+1"));
    CHECK(tg_dim_div(P("6*s0*s1+3*s0"), P("3*s0"), &r) == 0 && fmt_is(r, "2*s1+1"));
    CHECK(tg_dim_div(P("64*s0+64"), P("s0+1"), &r) == 0 && fmt_is(r, "64"));
    CHECK(tg_dim_div(P("s0*s0-1"), P("s0+1"), &r) == 0 && fmt_is(r, "s0-1"));
    CHECK(tg_dim_div(tg_dim_const(0), P("s0"), &r) == 0 && r.nterms == 0);
    CHECK(tg_dim_div(tg_dim_const(12), tg_dim_const(-4), &r) == 0 && fmt_is(r, "-3"));
    CHECK(tg_dim_div(P("s0"), tg_dim_const(2), &r) == -1);
    CHECK(strstr(tg_errmsg(), "divide") != NULL);
    CHECK(tg_dim_div(P("2*s0+1"), tg_dim_const(2), &r) == -1);
    CHECK(tg_dim_div(P("s0+1"), P("s0"), &r) == -1);
    CHECK(tg_dim_div(P("s0"), P("s1"), &r) == -1);
    CHECK(tg_dim_div(P("s0"), tg_dim_const(0), &r) == -1);
    CHECK(tg_dim_div(tg_dim_const(INT64_MIN), tg_dim_const(-1), &r) == -1);
    CHECK(tg_dim_div(tg_dim_const(7), tg_dim_const(7), &r) == 0 && fmt_is(r, "1"));
}

static void test_parse(void)
{
    tg_dim r;
    CHECK(fmt_is(P("2*(s0+1)"), "2*s0+2"));
    CHECK(fmt_is(P("  batch * 4 "), "4*batch"));
    CHECK(fmt_is(P("-(s0-3)"), "-s0+3"));
    CHECK(fmt_is(P("(s0+1)*(s1-1)"), "s0*s1-s0+s1-1"));
    CHECK(fmt_is(P("--5"), "5"));
    CHECK(fmt_is(P("0*s0"), "0"));
    const char *bad[] = {"", "s0+", "foo", "(s0", "s0)", "1 2", "3*", "99999999999999999999",
                         "s0/2", "$", "((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((((1"};
    for (size_t i = 0; i < sizeof bad / sizeof *bad; i++) {
        CHECK(tg_dim_parse(bad[i], syms, 3, &r) == -1 && *tg_errmsg());
    }
    CHECK(tg_dim_parse(NULL, syms, 3, &r) == -1);
    CHECK(tg_dim_parse("s2", NULL, 3, &r) == 0 && tg_dim_eq(r, tg_dim_sym(2)));
    CHECK(tg_dim_parse("batch", syms, 2, &r) == -1);    /* only the first nsym are known */
    CHECK(tg_dim_parse("9223372036854775807", syms, 3, &r) == 0);
    /* INT64_MIN formats and parses back through a negation */
    tg_dim m = tg_dim_const(INT64_MIN);
    CHECK(fmt_is(m, "-9223372036854775808"));
}

/* Random expressions format and parse back to themselves. */
static void test_roundtrip(void)
{
    int bad = 0, tried = 0;
    for (int it = 0; it < 2000; it++) {
        tg_dim d = tg_dim_const(rand() % 200 - 100), t;
        for (int k = 0; k < 4; k++) {
            tg_dim x = rand() % 3 == 0 ? tg_dim_const(rand() % 9 - 4) : tg_dim_sym(rand() % 3);
            int op = rand() % 3;
            int rc = op == 0 ? tg_dim_add(d, x, &t) : op == 1 ? tg_dim_sub(d, x, &t)
                                                               : tg_dim_mul(d, x, &t);
            if (rc == 0)
                d = t;
        }
        char buf[256];
        tg_dim_format(d, syms, buf, sizeof buf);
        tg_dim back;
        tried++;
        bad += tg_dim_parse(buf, syms, 3, &back) < 0 || !tg_dim_eq(back, d);
        /* and a product divides back exactly */
        tg_dim q, p;
        tg_dim m = rand() % 2 ? tg_dim_sym(rand() % 3) : tg_dim_const(rand() % 5 + 2);
        if (tg_dim_mul(d, m, &p) == 0)
            bad += tg_dim_div(p, m, &q) < 0 || !tg_dim_eq(q, d);
    }
    CHECK(bad == 0);
    CHECK(tried == 2000);
    /* the length returned is what snprintf would, even when it does not fit */
    char small[4];
    tg_dim d = P("2*s0*s1+s0+1");
    CHECK(tg_dim_format(d, syms, small, sizeof small) == (int)strlen("2*s0*s1+s0+1"));
    CHECK(strcmp(small, "2*s") == 0);
    CHECK(tg_dim_format(d, syms, NULL, 0) == 12);
}

/* Random text from the expression alphabet: parse either fails with a message or
 * gives a dim that formats and parses back to itself. */
static void test_parse_garbage(void)
{
    const char alpha[] = "0123456789+-*() s01batch";
    int bad = 0;
    for (int it = 0; it < 20000; it++) {
        char s[24];
        int n = rand() % (int)sizeof s;
        for (int i = 0; i < n; i++)
            s[i] = alpha[rand() % (int)(sizeof alpha - 1)];
        s[n] = '\0';
        tg_dim d, back;
        if (tg_dim_parse(s, syms, 3, &d) < 0) {
            bad += *tg_errmsg() == '\0';
            continue;
        }
        char buf[256];
        tg_dim_format(d, syms, buf, sizeof buf);
        bad += tg_dim_parse(buf, syms, 3, &back) < 0 || !tg_dim_eq(back, d);
    }
    CHECK(bad == 0);
}

static void test_eval_range(void)
{
    int64_t vals[3] = {3, 5, 7}, v, lo, hi;
    CHECK(tg_dim_eval(P("2*s0*s1+s0+1"), vals, &v) == 0 && v == 34);
    CHECK(tg_dim_eval(tg_dim_const(0), vals, &v) == 0 && v == 0);
    int64_t huge[3] = {INT64_C(1) << 40, 1 << 30, 1};
    CHECK(tg_dim_eval(P("s0*s1"), huge, &v) == -1);
    CHECK(tg_dim_eval(P("s0*s0"), huge, &v) == -1);
    tg_dim_range(P("2*s0*s1+s0+1"), syms, &lo, &hi);
    CHECK(lo == 6 && hi == 73);
    tg_dim_range(P("s0-1"), syms, &lo, &hi);
    CHECK(lo == 0 && hi == 7);
    tg_dim_range(P("64"), syms, &lo, &hi);
    CHECK(lo == 64 && hi == 64);
    tg_dim_range(P("-s1"), syms, &lo, &hi);
    CHECK(lo == -4 && hi == -2);
    tg_symbol wide[1] = {{"n", 1, INT64_MAX, false}};
    tg_dim_range(P("4*s0"), wide, &lo, &hi);
    CHECK(lo == 4 && hi == INT64_MAX);
}

int main(void)
{
    srand(4242);
    test_canonical();
    test_errors();
    test_div();
    test_parse();
    test_roundtrip();
    test_parse_garbage();
    test_eval_range();
    return unit_report();
}
