/* tg_compare: numpy.allclose element by element, NaN and inf in place, the
 * worst element, dtype and shape checks. */
#include <math.h>
#include <string.h>

#include "compare.h"
#include "error.h"
#include "unit.h"

static tg_tensor vec(float *v, int64_t n)
{
    return (tg_tensor){.dtype = TG_F32, .rank = 1, .dims = {n}, .data = v,
                       .nbytes = sizeof(float) * (size_t)n};
}

/* compare out against ref (4 elements) with rtol 1e-3, atol 1e-6 */
static tg_compare_result cmp4(float o0, float o1, float o2, float o3, float r0, float r1,
                              float r2, float r3)
{
    float o[4] = {o0, o1, o2, o3}, r[4] = {r0, r1, r2, r3};
    tg_tensor a = vec(o, 4), b = vec(r, 4);
    tg_compare_result c;
    CHECK(tg_compare(&a, &b, 1e-3, 1e-6, &c) == 0);
    return c;
}

int main(void)
{
    /* equal, and within rtol of each element */
    tg_compare_result c = cmp4(1, -2, 3, 0, 1, -2, 3, 0);
    CHECK(c.n == 4 && c.nfail == 0 && c.worst == -1 && c.max_abs == 0 && c.max_rel == 0);
    c = cmp4(1.0009f, -2, 3, 0, 1, -2, 3, 0);
    CHECK(c.nfail == 0);
    CHECK_NEAR(c.max_rel, 9e-4, 1e-6);

    /* the bound is each element's: a small element off by 1% fails beside a
     * large one (max|ref| 1000 would have allowed 1.0) */
    c = cmp4(1000, 0.0101f, 3, 0, 1000, 0.01f, 3, 0);
    CHECK(c.nfail == 1 && c.worst == 1);
    CHECK_NEAR(c.worst_out, 0.0101, 1e-7);
    CHECK_NEAR(c.worst_ref, 0.01, 1e-7);

    /* the worst is the one furthest over its own bound, not the largest error */
    c = cmp4(1010, 0.02f, 3, 0, 1000, 0.01f, 3, 0);
    CHECK(c.nfail == 2 && c.worst == 1);
    CHECK_NEAR(c.max_abs, 10, 1e-9);

    /* atol carries zeros */
    c = cmp4(1, 1, 1, 5e-7f, 1, 1, 1, 0);
    CHECK(c.nfail == 0);
    c = cmp4(1, 1, 1, 2e-6f, 1, 1, 1, 0);
    CHECK(c.nfail == 1 && c.worst == 3);

    /* a reference's inf needs the same inf; any finite value used to pass */
    c = cmp4(1, 2, 3, INFINITY, 1, 2, 3, INFINITY);
    CHECK(c.nfail == 0);
    c = cmp4(1, 2, 3, 1e30f, 1, 2, 3, INFINITY);
    CHECK(c.nfail == 1 && c.worst == 3 && isinf(c.max_abs));
    c = cmp4(1, 2, 3, -INFINITY, 1, 2, 3, INFINITY);
    CHECK(c.nfail == 1 && c.worst == 3);
    c = cmp4(1, 2, INFINITY, 4, 1, 2, 3, 4);
    CHECK(c.nfail == 1 && c.worst == 2);

    /* NaN where the reference has NaN, and nowhere else */
    c = cmp4(NAN, 2, 3, 4, NAN, 2, 3, 4);
    CHECK(c.nfail == 0 && c.max_abs == 0);
    c = cmp4(NAN, 2, 3, 4, 1, 2, 3, 4);
    CHECK(c.nfail == 1 && c.worst == 0 && isinf(c.max_abs));
    c = cmp4(1, 2, 3, 4, 1, NAN, 3, 4);
    CHECK(c.nfail == 1 && c.worst == 1);

    /* the first of several NaN/inf out of place is the worst */
    c = cmp4(1, NAN, NAN, 100, 1, 2, 3, 4);
    CHECK(c.nfail == 3 && c.worst == 1);

    /* zero tolerances: only exact equality passes */
    float o[2] = {1, 2}, r[2] = {1, 2.0000002f};
    tg_tensor a = vec(o, 2), b = vec(r, 2);
    CHECK(tg_compare(&a, &b, 0, 0, &c) == 0 && c.nfail == 1 && c.worst == 1);
    r[1] = 2;
    CHECK(tg_compare(&a, &b, 0, 0, &c) == 0 && c.nfail == 0);

    /* dtype and shape must match */
    double d[2] = {1, 2};
    tg_tensor f64 = {.dtype = TG_F64, .rank = 1, .dims = {2}, .data = d, .nbytes = sizeof d};
    CHECK(tg_compare(&a, &f64, 1, 1, &c) == -1);
    CHECK(strstr(tg_errmsg(), "is f32[2], the reference f64[2]") != NULL);
    tg_tensor m = {.dtype = TG_F32, .rank = 2, .dims = {1, 2}, .data = r, .nbytes = 8};
    CHECK(tg_compare(&a, &m, 1, 1, &c) == -1);
    CHECK(strstr(tg_errmsg(), "is f32[2], the reference f32[1,2]") != NULL);

    /* indices as the message prints them */
    char buf[64];
    tg_index_format(3, (int64_t[]){2, 3, 4}, 23, buf, sizeof buf);
    CHECK(!strcmp(buf, "[1,2,3]"));
    tg_index_format(0, NULL, 0, buf, sizeof buf);
    CHECK(!strcmp(buf, "[]"));
    return unit_report();
}
