/* Reductions over any set of axes, and argmax/argmin over one.
 * Each output element walks its reduced sub-block through an iterator
 * (iter.h); threads split the outputs. */
#include <math.h>

#include "iter.h"
#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    tgk_reduce_op op;
    tgk_dtype t;
    const void *x;
    void *y;
    int krank;                          /* kept axes: dims and x strides */
    int64_t kdims[TGK_MAX_RANK], kst[TGK_MAX_RANK];
    tgk_iter red;                       /* the reduced axes */
    int64_t correction;
    uint64_t flip;                      /* u64 max/min: the sign bit, see below */
} reduce_ctx;

/* u64 max and min compare x ^ 2^63 as int64, which orders like x as uint64. */
static uint64_t u64_flip(tgk_dtype t)
{
    return t == TGK_U64 ? UINT64_C(1) << 63 : 0;
}

/* One output's accumulator; `mean` is set for var's second pass. */
typedef struct {
    const reduce_ctx *c;
    int64_t base;
    double f, mean;
    int64_t i;
    bool second;
} acc_t;

static void acc_float(acc_t *a, double v)
{
    switch (a->c->op) {
    case TGK_REDUCE_SUM: case TGK_REDUCE_MEAN: a->f += v; break;
    case TGK_REDUCE_PROD: a->f *= v; break;
    case TGK_REDUCE_MAX: if (v > a->f || v != v) a->f = v; break;
    case TGK_REDUCE_MIN: if (v < a->f || v != v) a->f = v; break;
    case TGK_REDUCE_VAR:
        if (a->second)
            a->f += (v - a->mean) * (v - a->mean);
        else
            a->mean += v;
        break;
    case TGK_REDUCE_ANY: a->f = a->f != 0 || v != 0; break;
    default: break;
    }
}

static void acc_int(acc_t *a, int64_t v)
{
    switch (a->c->op) {
    case TGK_REDUCE_SUM: a->i = (int64_t)((uint64_t)a->i + (uint64_t)v); break;
    case TGK_REDUCE_PROD: a->i = (int64_t)((uint64_t)a->i * (uint64_t)v); break;
    case TGK_REDUCE_MAX: if (v > a->i) a->i = v; break;
    case TGK_REDUCE_MIN: if (v < a->i) a->i = v; break;
    case TGK_REDUCE_ANY: a->i = a->i || v; break;
    default: break;
    }
}

static void acc_run(void *vctx, const int64_t *off, int64_t n, const int64_t *inner)
{
    acc_t *a = vctx;
    const reduce_ctx *c = a->c;
    int64_t o = a->base + off[0], s = inner[0];
    if (c->t == TGK_F32 && (c->op == TGK_REDUCE_SUM || c->op == TGK_REDUCE_MEAN) && !a->second) {
        const float *x = (const float *)c->x + o;
        double f = 0;
        for (int64_t i = 0; i < n; i++)
            f += x[i * s];
        a->f += f;
    } else if (tgk_dtype_is_float(c->t)) {
        for (int64_t i = 0; i < n; i++)
            acc_float(a, tgk_load_f64(c->t, c->x, o + i * s));
    } else {
        for (int64_t i = 0; i < n; i++)
            acc_int(a, (int64_t)((uint64_t)tgk_load_i64(c->t, c->x, o + i * s) ^ c->flip));
    }
}

static void reduce_task(void *vctx, int64_t begin, int64_t end)
{
    const reduce_ctx *c = vctx;
    int64_t count = c->red.numel;
    bool fl = tgk_dtype_is_float(c->t);
    for (int64_t o = begin; o < end; o++) {
        acc_t a = { c, 0, 0, 0, 0, false };
        int64_t rem = o;
        for (int k = c->krank - 1; k >= 0; k--) {
            a.base += rem % c->kdims[k] * c->kst[k];
            rem /= c->kdims[k];
        }
        switch (c->op) {
        case TGK_REDUCE_PROD: a.f = 1; a.i = 1; break;
        case TGK_REDUCE_MAX: a.f = -INFINITY; a.i = INT64_MIN; break;
        case TGK_REDUCE_MIN: a.f = INFINITY; a.i = INT64_MAX; break;
        default: break;
        }
        tgk_iter_range(&c->red, 0, count, acc_run, &a);
        if (c->op == TGK_REDUCE_VAR) {
            a.mean /= (double)count;
            a.second = true;
            tgk_iter_range(&c->red, 0, count, acc_run, &a);
            a.f /= (double)(count - c->correction);
        } else if (c->op == TGK_REDUCE_MEAN) {
            a.f /= (double)count;
        }
        if (c->op == TGK_REDUCE_ANY)
            ((uint8_t *)c->y)[o] = fl ? a.f != 0 : a.i != 0;
        else if (fl)
            tgk_store_f64(c->t, c->y, o, a.f);
        else
            tgk_store_i64(c->t, c->y, o, (int64_t)((uint64_t)a.i ^ c->flip));
    }
}

int tgk_reduce(tgk_reduce_op op, tgk_dtype t, int rank, const int64_t *dims, uint32_t axes,
               int64_t correction, const void *x, void *y)
{
    if (op < 0 || op >= TGK_REDUCE_COUNT || tgk_dtype_size(t) == 0 || rank > TGK_MAX_RANK)
        return -1;
    if ((op == TGK_REDUCE_MEAN || op == TGK_REDUCE_VAR) && !tgk_dtype_is_float(t))
        return -1;
    reduce_ctx c = { .op = op, .t = t, .x = x, .y = y, .correction = correction,
                     .flip = op == TGK_REDUCE_MAX || op == TGK_REDUCE_MIN ? u64_flip(t) : 0 };
    int64_t rdims[TGK_MAX_RANK], rst[TGK_MAX_RANK], s = 1, nout = 1;
    int rr = 0;
    for (int k = rank - 1; k >= 0; k--) {
        if (axes >> k & 1) {
            rdims[rr] = dims[k];
            rst[rr++] = s;
        } else {
            c.kdims[c.krank] = dims[k];
            c.kst[c.krank++] = s;
            nout *= dims[k];
        }
        s *= dims[k];
    }
    /* collected innermost-first: reverse into row-major order */
    for (int i = 0, j = rr - 1; i < j; i++, j--) {
        int64_t d = rdims[i], st = rst[i];
        rdims[i] = rdims[j], rst[i] = rst[j];
        rdims[j] = d, rst[j] = st;
    }
    for (int i = 0, j = c.krank - 1; i < j; i++, j--) {
        int64_t d = c.kdims[i], st = c.kst[i];
        c.kdims[i] = c.kdims[j], c.kst[i] = c.kst[j];
        c.kdims[j] = d, c.kst[j] = st;
    }
    const int64_t *rs[1] = { rst };
    tgk_iter_init(&c.red, rr, rdims, 1, rs);
    int64_t grain = c.red.numel >= 4096 ? 1 : 4096 / (c.red.numel ? c.red.numel : 1);
    tgk_parallel_for(nout, grain, reduce_task, &c);
    return 0;
}

/* ---- argmax / argmin ------------------------------------------------------------- */

typedef struct {
    bool max;
    tgk_dtype t;
    const void *x;
    int64_t *y;
    int64_t n, inner;
} arg_ctx;

static void arg_task(void *vctx, int64_t begin, int64_t end)
{
    const arg_ctx *c = vctx;
    bool fl = tgk_dtype_is_float(c->t);
    for (int64_t o = begin; o < end; o++) {
        int64_t base = o / c->inner * c->n * c->inner + o % c->inner, best = 0;
        if (fl) {
            double bv = tgk_load_f64(c->t, c->x, base);
            for (int64_t j = 1; j < c->n && bv == bv; j++) {
                double v = tgk_load_f64(c->t, c->x, base + j * c->inner);
                if (v != v || (c->max ? v > bv : v < bv)) {
                    bv = v;
                    best = j;
                }
            }
        } else {
            uint64_t flip = u64_flip(c->t);
            int64_t bv = (int64_t)((uint64_t)tgk_load_i64(c->t, c->x, base) ^ flip);
            for (int64_t j = 1; j < c->n; j++) {
                int64_t v = (int64_t)((uint64_t)tgk_load_i64(c->t, c->x, base + j * c->inner) ^ flip);
                if (c->max ? v > bv : v < bv) {
                    bv = v;
                    best = j;
                }
            }
        }
        c->y[o] = best;
    }
}

void tgk_arg_reduce(bool max, tgk_dtype t, int rank, const int64_t *dims, int axis,
                    const void *x, int64_t *y)
{
    int64_t outer = 1, inner = 1;
    for (int k = 0; k < axis; k++)
        outer *= dims[k];
    for (int k = axis + 1; k < rank; k++)
        inner *= dims[k];
    arg_ctx c = { max, t, x, y, dims[axis], inner };
    tgk_parallel_for(outer * inner, 256, arg_task, &c);
}
