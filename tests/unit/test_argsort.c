/* The argsort kernel (kernels/argsort.c) against a reference written out
 * differently (insertion sort, each comparison from the loaded values): the
 * same order, index for index, on fresh random inputs: every dtype family
 * (f32 with NaN and zeros of both signs, f64, f16, i64 near both ends, u64
 * above 2^63, i8, bool), few distinct values (ties keep index order), both
 * directions, the sorted axis first, in the middle and last, empty and long
 * lines, and enough lines to split across the thread pool. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/tensor_ops.h"

/* whether element a of the line goes strictly before element b */
static bool ref_before(tgk_dtype t, const void *x, int64_t a, int64_t b, bool desc)
{
    if (tgk_dtype_is_float(t)) {
        double u = tgk_load_f64(t, x, a), v = tgk_load_f64(t, x, b);
        if (isnan(u) || isnan(v))       /* NaN the largest */
            return desc ? isnan(u) && !isnan(v) : !isnan(u);
        return desc ? u > v : u < v;
    }
    if (t == TGK_U64) {
        uint64_t u = (uint64_t)tgk_load_i64(t, x, a), v = (uint64_t)tgk_load_i64(t, x, b);
        return desc ? u > v : u < v;
    }
    int64_t u = tgk_load_i64(t, x, a), v = tgk_load_i64(t, x, b);
    return desc ? u > v : u < v;
}

static void fill(tgk_dtype t, void *x, int64_t n, int distinct)
{
    for (int64_t i = 0; i < n; i++) {
        int64_t k = kc_int(0, distinct - 1);
        if (tgk_dtype_is_float(t)) {
            double v = k % 7 == 1 ? NAN : k % 7 == 2 ? (k % 2 ? 0.0 : -0.0) : (double)k / 4 - 3;
            tgk_store_f64(t, x, i, distinct > 1000 ? unit_uniform(-1e3, 1e3) : v);
        } else if (t == TGK_BOOL) {
            tgk_store_i64(t, x, i, k & 1);
        } else if (t == TGK_I8) {
            tgk_store_i64(t, x, i, k % 256 - 128);
        } else {    /* i64 near both ends; u64 both sides of 2^63 */
            uint64_t base = t == TGK_U64 ? UINT64_MAX / 2 - 3 : (uint64_t)(k % 2 ? INT64_MAX - 9 : INT64_MIN);
            tgk_store_i64(t, x, i, (int64_t)(base + (uint64_t)k));
        }
    }
}

static int checked;

static void check(tgk_dtype t, int64_t outer, int64_t n, int64_t inner, int distinct, bool desc)
{
    int64_t total = outer * n * inner;
    void *x = malloc(8 * (size_t)(total + 1));
    int64_t *y = malloc(8 * (size_t)(total + 1)), *want = malloc(8 * (size_t)(n + 1));
    fill(t, x, total, distinct);
    CHECK(tgk_argsort(t, outer, n, inner, desc, x, y) == 0);
    int64_t bad = 0;
    for (int64_t o = 0; o < outer * inner; o++) {
        int64_t base = o / inner * n * inner + o % inner;
        for (int64_t j = 0; j < n; j++) {       /* insertion sort of positions */
            int64_t k = j;
            while (k > 0 && ref_before(t, x, base + j * inner, base + want[k - 1] * inner, desc)) {
                want[k] = want[k - 1];
                k--;
            }
            want[k] = j;
        }
        for (int64_t j = 0; j < n; j++)
            bad += y[base + j * inner] != want[j];
    }
    if (bad)
        fprintf(stderr, "argsort dtype %d [%lld, %lld, %lld] distinct %d desc %d: %lld differ\n", t,
                (long long)outer, (long long)n, (long long)inner, distinct, desc, (long long)bad);
    CHECK(bad == 0);
    checked++;
    free(x), free(y), free(want);
}

int main(void)
{
    unit_seed("test_argsort");
    static const tgk_dtype types[] = {TGK_F32, TGK_F64, TGK_F16, TGK_I64, TGK_U64, TGK_I8, TGK_BOOL};
    for (size_t i = 0; i < sizeof types / sizeof *types; i++)
        for (int desc = 0; desc < 2; desc++) {
            check(types[i], 3, 37, 1, 9, desc);           /* last axis, many ties */
            check(types[i], 2, 50, 3, 9, desc);           /* a middle axis */
            check(types[i], 1, 64, 5, 5000, desc);        /* first axis, few ties */
            check(types[i], kc_int(1, 4), kc_int(0, 2), kc_int(1, 3), 3, desc);
        }
    check(TGK_F32, 1, 3000, 1, 100000, false);            /* long lines */
    check(TGK_I64, 2, 2000, 1, 40, true);
    check(TGK_F32, 400, 300, 2, 50, false);               /* split across the pool */
    CHECK(tgk_argsort(TGK_DT_NONE, 1, 1, 1, false, NULL, NULL) == -1);
    printf("%d sorts equal to the reference's\n", checked);
    return unit_report();
}
