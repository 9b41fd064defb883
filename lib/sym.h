/* Symbolic dimensions: integer polynomials over a graph's symbols.
 *
 * A dimension is a sum of terms coef * s0^p0 * s1^p1 ... kept in canonical form
 * (terms sorted, like terms merged, no zero coefficients), so two equal expressions
 * compare equal with tg_dim_eq. This covers what shapes need: 64, s0, 2*s0, s0+1,
 * s0*s1, and exact division by a monomial (reshape inference). A plain number is
 * the polynomial with one constant term (or none, for 0). */
#ifndef TG_SYM_H
#define TG_SYM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TG_MAX_SYMS 16      /* symbols per graph, data symbols included */
#define TG_DIM_TERMS 4      /* terms per dimension expression */

typedef struct {
    int64_t coef;
    uint8_t pow[TG_MAX_SYMS];
} tg_term;

typedef struct {
    int nterms;
    tg_term t[TG_DIM_TERMS];
} tg_dim;

typedef struct {
    char *name;             /* "s0", "batch" ... */
    int64_t min, max;       /* inclusive range */
    bool data;              /* bound by a node's run-time result, not by an input's shape */
} tg_symbol;

tg_dim tg_dim_const(int64_t v);
tg_dim tg_dim_sym(int sym);
/* Arithmetic. Return 0, or -1 (tg_err) on overflow, too many terms, or inexact division. */
int tg_dim_add(tg_dim a, tg_dim b, tg_dim *out);
int tg_dim_sub(tg_dim a, tg_dim b, tg_dim *out);
int tg_dim_mul(tg_dim a, tg_dim b, tg_dim *out);
int tg_dim_div(tg_dim a, tg_dim b, tg_dim *out);   /* exact: b must divide a */
bool tg_dim_eq(tg_dim a, tg_dim b);
bool tg_dim_is_const(tg_dim a, int64_t *v);        /* v may be NULL */
bool tg_dim_uses_sym(tg_dim a, int sym);
/* Value for given symbol values (vals[i] for symbol i). -1 (tg_err) on overflow. */
int tg_dim_eval(tg_dim a, const int64_t *vals, int64_t *out);
/* Smallest and largest value over the symbols' ranges (exact for polynomials with
 * non-negative coefficients and positive ranges; a bound otherwise). */
void tg_dim_range(tg_dim a, const tg_symbol *syms, int64_t *lo, int64_t *hi);
/* Text form "2*s0*s1+s0+1" using the symbols' names; returns the length that
 * snprintf would. */
int tg_dim_format(tg_dim a, const tg_symbol *syms, char *buf, size_t n);
/* Parse that form (integers, symbol names, + - * and parentheses). */
int tg_dim_parse(const char *s, const tg_symbol *syms, int nsym, tg_dim *out);

#endif
