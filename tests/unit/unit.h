/* A tiny test framework: CHECK and CHECK_NEAR record failures with their line
 * and keep going; main returns unit_report(), which prints "N passed, N failed"
 * and is nonzero when anything failed. */
#ifndef TG_UNIT_H
#define TG_UNIT_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

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

/* The tests' one random generator (splitmix64: any seed, 0 included, gives a
 * good stream). unit_seed takes TG_SEED or the clock and prints the seed, so
 * any failing run can be replayed. */
static uint64_t unit_rng;

static inline void unit_seed(const char *name)
{
    const char *env = getenv("TG_SEED");
    unit_rng = env ? strtoull(env, NULL, 10)
                   : (uint64_t)time(NULL) * 2654435761u ^ (uint64_t)getpid();
    printf("%s: seed %llu (TG_SEED=%llu replays it)\n", name, (unsigned long long)unit_rng,
           (unsigned long long)unit_rng);
    fflush(stdout); /* seen even if the test crashes */
}

static inline uint64_t unit_next(void)
{
    uint64_t z = (unit_rng += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
}

/* Uniform in [lo, hi), 53 random bits. */
static inline double unit_uniform(double lo, double hi)
{
    return lo + (hi - lo) * (double)(unit_next() >> 11) * 0x1p-53;
}

static inline int unit_report(void)
{
    printf("%d passed, %d failed\n", unit_pass, unit_fail);
    return unit_fail != 0;
}

#endif
