/* Helpers for the kernel tests (tests/unit/test_{gemm,conv,sdpa,...}.c):
 * seeded random inputs (unit.h's unit_seed: TG_SEED=n replays a run),
 * buffers followed by guard values that catch out-of-bounds writes, and
 * comparison against float64 references. */
#ifndef TGK_KCHECK_H
#define TGK_KCHECK_H

#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "unit.h"

#define KC_GUARD 16
#define KC_GUARD_VALUE 1234.5f

static inline int64_t kc_int(int64_t lo, int64_t hi) /* inclusive */
{
    return lo + (int64_t)(unit_next() % (uint64_t)(hi - lo + 1));
}

/* n floats followed by KC_GUARD guard values; the payload is filled with
 * uniform values in [lo, hi). */
static inline float *kc_rand(int64_t n, double lo, double hi)
{
    float *p = malloc(sizeof(float) * (size_t)(n + KC_GUARD));
    if (!p) {
        perror("malloc");
        exit(2);
    }
    for (int64_t i = 0; i < n; i++)
        p[i] = (float)unit_uniform(lo, hi);
    for (int i = 0; i < KC_GUARD; i++)
        p[n + i] = KC_GUARD_VALUE;
    return p;
}

/* An output buffer: NaN payload (an element the kernel forgets shows up),
 * then guards. */
static inline float *kc_out(int64_t n)
{
    float *p = kc_rand(n, 0, 1);
    for (int64_t i = 0; i < n; i++)
        p[i] = NAN;
    return p;
}

static inline int kc_guard_ok(const float *p, int64_t n)
{
    for (int i = 0; i < KC_GUARD; i++)
        if (p[n + i] != KC_GUARD_VALUE)
            return 0;
    return 1;
}

static inline double *kc_ref(int64_t n)
{
    double *p = calloc((size_t)(n > 0 ? n : 1), sizeof(double));
    if (!p) {
        perror("calloc");
        exit(2);
    }
    return p;
}

/* max |got - ref| / max(max |ref|, 1e-30): the error relative to the output's
 * scale, which is what float accumulation order can promise for sums of
 * products. NaN in got gives infinity. */
static inline double kc_norm_err(const float *got, const double *ref, int64_t n)
{
    double scale = 1e-30, err = 0;
    for (int64_t i = 0; i < n; i++)
        scale = fabs(ref[i]) > scale ? fabs(ref[i]) : scale;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]);
        if (e != e)
            return INFINITY;
        err = e > err ? e : err;
    }
    return err / scale;
}

/* max over i of |got - ref| / (|ref| + floor): elementwise relative error. */
static inline double kc_rel_err(const float *got, const double *ref, int64_t n, double floor)
{
    double err = 0;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)got[i] - ref[i]) / (fabs(ref[i]) + floor);
        if (e != e)
            return INFINITY;
        err = e > err ? e : err;
    }
    return err;
}

/* Max error over the largest magnitude of the terms summed (mag[i]: the sum
 * of |term| of output i), not of the result: a sum of a few products can
 * cancel to near zero, and rounding does not. NaN gives infinity. */
static inline double kc_mag_err(const float *y, const double *ref, const double *mag, int64_t n)
{
    double err = 0, scale = 1e-30;
    for (int64_t i = 0; i < n; i++) {
        double e = fabs((double)y[i] - ref[i]);
        if (e != e)
            return INFINITY;
        err = e > err ? e : err;
        scale = mag[i] > scale ? mag[i] : scale;
    }
    return err / scale;
}

/* One comparison as one CHECK, with the case printed when it fails. */
#define KC_EXPECT(err, tol, ...)                                                  \
    do {                                                                          \
        double kc_e_ = (err);                                                     \
        CHECK(kc_e_ <= (tol));                                                    \
        if (!(kc_e_ <= (tol))) {                                                  \
            fprintf(stderr, "  err %.3g > tol %.3g: ", kc_e_, (double)(tol));     \
            fprintf(stderr, __VA_ARGS__);                                         \
            fputc('\n', stderr);                                                  \
        }                                                                         \
    } while (0)

#endif
