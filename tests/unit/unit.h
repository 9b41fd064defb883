/* A tiny test framework: CHECK and CHECK_NEAR record failures with their line
 * and keep going; main returns unit_report(), which prints "N passed, N failed"
 * and is nonzero when anything failed. */
#ifndef TG_UNIT_H
#define TG_UNIT_H

#include <math.h>
#include <stdio.h>

static int unit_pass, unit_fail;

#define CHECK(cond) \
    do { \
        if (cond) unit_pass++; \
        else { unit_fail++; fprintf(stderr, "%s:%d: CHECK failed: %s\n", __FILE__, __LINE__, #cond); } \
    } while (0)

/* |a - b| <= tol, and NaN never passes. */
#define CHECK_NEAR(a, b, tol) \
    do { \
        double unit_a_ = (a), unit_b_ = (b); \
        if (fabs(unit_a_ - unit_b_) <= (tol)) unit_pass++; \
        else { unit_fail++; fprintf(stderr, "%s:%d: CHECK_NEAR failed: %s = %g, %s = %g (tol %g)\n", \
                                    __FILE__, __LINE__, #a, unit_a_, #b, unit_b_, (double)(tol)); } \
    } while (0)

static inline int unit_report(void)
{
    printf("%d passed, %d failed\n", unit_pass, unit_fail);
    return unit_fail != 0;
}

#endif
