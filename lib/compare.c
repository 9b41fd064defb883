/* Elementwise comparison with tolerances (compare.h). */
#include "compare.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "error.h"

/* How far an element with reference b and difference d (0 when both are NaN
 * or equal, inf when only one is NaN) is over its bound: <= 1 passes. A NaN
 * or infinite reference has a zero bound: only d == 0 passes. */
static double excess(double b, double d, double rtol, double atol)
{
    double bound = isfinite(b) ? atol + rtol * fabs(b) : 0;
    return d == 0 ? 0 : bound > 0 ? d / bound : INFINITY;
}

/* |a - b| of integer elements, from their exact values (as doubles, i64 and
 * u64 elements that differ can be equal), so it is 0 only when they are. */
static double int_diff(tg_dtype t, const void *pa, const void *pb, int64_t i)
{
    if (t == TG_U64) {
        uint64_t x = ((const uint64_t *)pa)[i], y = ((const uint64_t *)pb)[i];
        return (double)(x > y ? x - y : y - x);
    }
    int64_t x = ((const int64_t *)pa)[i], y = ((const int64_t *)pb)[i];
    return (double)(x > y ? (uint64_t)x - (uint64_t)y : (uint64_t)y - (uint64_t)x);
}

int tg_compare(const tg_tensor *out, const tg_tensor *ref, double rtol, double atol,
               tg_compare_result *r)
{
    char got[256], want[256];
    if (out->dtype != ref->dtype || out->rank != ref->rank ||
        memcmp(out->dims, ref->dims, sizeof(int64_t) * (size_t)out->rank)) {
        tg_tensor_describe(out, got, sizeof got);
        tg_tensor_describe(ref, want, sizeof want);
        return tg_err("is %s, the reference %s", got, want);
    }
    *r = (tg_compare_result){.n = tg_tensor_numel(out->rank, out->dims), .worst = -1};
    double worst = 1;
    for (int64_t i = 0; i < r->n; i++) {
        double a = tg_load_f64(out->dtype, out->data, (size_t)i);
        double b = tg_load_f64(ref->dtype, ref->data, (size_t)i);
        double d = a == b || (isnan(a) && isnan(b)) ? 0 : fabs(a - b);
        if (out->dtype == TG_I64 || out->dtype == TG_U64)
            d = int_diff(out->dtype, out->data, ref->data, i);
        if (isnan(d))
            d = INFINITY;
        if (d > r->max_abs)
            r->max_abs = d;
        if (b != 0 && isfinite(b) && d / fabs(b) > r->max_rel)
            r->max_rel = d / fabs(b);
        double e = excess(b, d, rtol, atol);
        if (e <= 1)
            continue;
        r->nfail++;
        if (e > worst) {
            worst = e;
            r->worst = i;
            r->worst_out = a;
            r->worst_ref = b;
        }
    }
    return 0;
}

void tg_index_format(int rank, const int64_t *dims, int64_t i, char *buf, size_t n)
{
    int64_t idx[TG_MAX_RANK];
    for (int k = rank - 1; k >= 0; k--) {
        idx[k] = dims[k] ? i % dims[k] : 0;
        i = dims[k] ? i / dims[k] : 0;
    }
    size_t len = (size_t)snprintf(buf, n, "[");
    for (int k = 0; k < rank && len < n; k++)
        len += (size_t)snprintf(buf + len, n - len, "%s%lld", k ? "," : "", (long long)idx[k]);
    if (len < n)
        snprintf(buf + len, n - len, "]");
}
