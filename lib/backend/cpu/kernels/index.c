/* Indexing by int64 indices: index_select (embedding), gather and index_copy. An index
 * out of range stops nothing but is reported, so bad data never reads out of
 * bounds. */
#include <string.h>

#include "kernels.h"
#include "tensor_ops.h"

/* idx in [-n, n) -> [0, n); -1 otherwise. */
static int64_t wrap(int64_t i, int64_t n)
{
    if (i < 0)
        i += n;
    return i >= 0 && i < n ? i : -1;
}

typedef struct {
    size_t es;
    int64_t n, inner, nidx;
    const char *x;
    const int64_t *idx;
    char *y;
    int64_t bad;
    bool failed;
} select_ctx;

static void note_bad(bool *failed, int64_t *bad, int64_t v)
{
    if (!__atomic_exchange_n(failed, true, __ATOMIC_RELAXED))
        *bad = v;
}

static void select_task(void *vctx, int64_t b, int64_t e)
{
    select_ctx *c = vctx;
    size_t row = (size_t)c->inner * c->es;
    for (int64_t r = b; r < e; r++) {
        int64_t o = r / c->nidx, j = r % c->nidx, i = wrap(c->idx[j], c->n);
        char *dst = c->y + (size_t)r * row;
        if (i < 0) {
            note_bad(&c->failed, &c->bad, c->idx[j]);
            memset(dst, 0, row);
            continue;
        }
        memcpy(dst, c->x + (size_t)(o * c->n + i) * row, row);
    }
}

int tgk_index_select(size_t elsize, int64_t outer, int64_t n, int64_t inner, const void *x,
                     int64_t nidx, const int64_t *idx, void *y, int64_t *bad)
{
    select_ctx c = { elsize, n, inner, nidx, x, idx, y, 0, false };
    int64_t grain = inner >= 1024 ? 1 : 1024 / (inner ? inner : 1);
    tgk_parallel_for(outer * nidx, grain, select_task, &c);
    if (c.failed && bad)
        *bad = c.bad;
    return c.failed ? -1 : 0;
}

typedef struct {
    size_t es;
    int rank, axis;
    const int64_t *xdims, *idims;
    int64_t xst[TGK_MAX_RANK];
    const char *x;
    const int64_t *idx;
    char *y;
    int64_t bad;
    bool failed;
} gather_ctx;

static void gather_task(void *vctx, int64_t b, int64_t e)
{
    gather_ctx *c = vctx;
    for (int64_t o = b; o < e; o++) {
        int64_t rem = o, off = 0;
        for (int k = c->rank - 1; k >= 0; k--) {
            int64_t ik = rem % c->idims[k];
            rem /= c->idims[k];
            if (k == c->axis) {
                ik = wrap(c->idx[o], c->xdims[k]);
                if (ik < 0) {
                    note_bad(&c->failed, &c->bad, c->idx[o]);
                    ik = 0;
                }
            }
            off += ik * c->xst[k];
        }
        memcpy(c->y + (size_t)o * c->es, c->x + (size_t)off * c->es, c->es);
    }
}

int tgk_gather(size_t elsize, int rank, const int64_t *xdims, const int64_t *idims, int axis,
               const void *x, const int64_t *idx, void *y, int64_t *bad)
{
    gather_ctx c = { .es = elsize, .rank = rank, .axis = axis, .xdims = xdims,
                     .idims = idims, .x = x, .idx = idx, .y = y };
    int64_t s = 1, n = 1;
    for (int k = rank - 1; k >= 0; k--) {
        c.xst[k] = s;
        s *= xdims[k];
        n *= idims[k];
    }
    if (s == 0 && n > 0) {                      /* nothing to gather from */
        if (bad)
            *bad = idx[0];
        return -1;
    }
    tgk_parallel_for(n, 4096, gather_task, &c);
    if (c.failed && bad)
        *bad = c.bad;
    return c.failed ? -1 : 0;
}

/* One task per outer index, the indices in order within it: the last of a
 * repeated index wins. */
static void copy_task(void *vctx, int64_t b, int64_t e)
{
    select_ctx *c = vctx;       /* x: the rows to copy in */
    size_t row = (size_t)c->inner * c->es;
    for (int64_t o = b; o < e; o++)
        for (int64_t j = 0; j < c->nidx; j++) {
            int64_t i = wrap(c->idx[j], c->n);
            if (i < 0)
                note_bad(&c->failed, &c->bad, c->idx[j]);
            else
                memcpy(c->y + (size_t)(o * c->n + i) * row,
                       c->x + (size_t)(o * c->nidx + j) * row, row);
        }
}

int tgk_index_copy(size_t elsize, int64_t outer, int64_t n, int64_t inner, const void *x,
                   int64_t nidx, const int64_t *idx, const void *src, void *y, int64_t *bad)
{
    if (y != x)
        memcpy(y, x, (size_t)(outer * n * inner) * elsize);
    select_ctx c = { elsize, n, inner, nidx, src, idx, y, 0, false };
    int64_t work = nidx * inner;
    tgk_parallel_for(outer, work >= 4096 ? 1 : 4096 / (work ? work : 1), copy_task, &c);
    if (c.failed && bad)
        *bad = c.bad;
    return c.failed ? -1 : 0;
}

typedef struct {
    tgk_dtype t;
    int op;
    int64_t n, inner, nidx;
    const void *src;
    const int64_t *idx;
    void *y;
    int64_t bad;
    bool failed;
} reduce_ctx;

static double reduce_f64(int op, double a, double b)
{
    if (op == 1)
        return a + b;
    if (op == 2)
        return a * b;
    if (a != a || b != b)       /* max and min: a NaN wins, as NumPy's maximum */
        return a + b;
    return op == 3 ? (a > b ? a : b) : (a < b ? a : b);
}

static int64_t reduce_i64(int op, int64_t a, int64_t b)
{
    if (op == 1)                /* unsigned: overflow wraps */
        return (int64_t)((uint64_t)a + (uint64_t)b);
    if (op == 2)
        return (int64_t)((uint64_t)a * (uint64_t)b);
    return op == 3 ? (a > b ? a : b) : (a < b ? a : b);
}

/* One task per outer index, the indices in order within it: each update is
 * combined with what the row holds then, rounded to t each time. */
static void reduce_task(void *vctx, int64_t b, int64_t e)
{
    reduce_ctx *c = vctx;
    bool fl = tgk_dtype_is_float(c->t);
    for (int64_t o = b; o < e; o++)
        for (int64_t j = 0; j < c->nidx; j++) {
            int64_t i = wrap(c->idx[j], c->n);
            if (i < 0) {
                note_bad(&c->failed, &c->bad, c->idx[j]);
                continue;
            }
            int64_t at = (o * c->n + i) * c->inner, from = (o * c->nidx + j) * c->inner;
            for (int64_t k = 0; k < c->inner; k++)
                if (fl)
                    tgk_store_f64(c->t, c->y, at + k, reduce_f64(c->op, tgk_load_f64(c->t, c->y, at + k),
                                                                 tgk_load_f64(c->t, c->src, from + k)));
                else
                    tgk_store_i64(c->t, c->y, at + k, reduce_i64(c->op, tgk_load_i64(c->t, c->y, at + k),
                                                                 tgk_load_i64(c->t, c->src, from + k)));
        }
}

/* index_copy with a reduction (op 1 add, 2 mul, 3 max, 4 min): y = x, then
 * y[.., idx[j], ..] = op(y[.., idx[j], ..], src[.., j, ..]) for j in order
 * (ONNX's ScatterND and ScatterElements reductions). -1: an index out of
 * range (*bad), or t bool or op unknown (*bad untouched). */
TGK_DECL int tgk_index_reduce(tgk_dtype t, int op, int64_t outer, int64_t n, int64_t inner,
                              const void *x, int64_t nidx, const int64_t *idx, const void *src,
                              void *y, int64_t *bad)
{
    if (t == TGK_BOOL || t <= TGK_DT_NONE || t >= TGK_DT_COUNT || op < 1 || op > 4)
        return -1;
    size_t es = tgk_dtype_size(t);
    if (y != x)
        memcpy(y, x, (size_t)(outer * n * inner) * es);
    reduce_ctx c = { t, op, n, inner, nidx, src, idx, y, 0, false };
    int64_t work = nidx * inner;
    tgk_parallel_for(outer, work >= 4096 ? 1 : 4096 / (work ? work : 1), reduce_task, &c);
    if (c.failed && bad)
        *bad = c.bad;
    return c.failed ? -1 : 0;
}
