/* Data movement for any element type: everything but tril/triu is one
 * strided copy (tgk_copy_strided) with the right dims and strides. */
#include <string.h>

#include "iter.h"
#include "kernels.h"
#include "tensor_ops.h"

/* Elements a task of a copy of long contiguous rows (memcpy's speed); one
 * that reads or writes an element a stride apart (a transpose: ConvNeXt's
 * NCHW <-> NHWC permutes, 2-3 ns an element) or copies short rows (Swin's
 * windows) takes a quarter: at batch 1 such copies of 20-60k
 * elements were one task, run by the caller alone (most of convnext_tiny's
 * serial share at 2 threads, 4%). */
#define GRAIN (1 << 15)
#define GRAIN_SLOW (GRAIN / 4)
#define LONG_ROW 1024
#define SHORT_ROW 64

typedef struct {
    size_t es;
    const char *x;
    char *y;
    int64_t w;      /* rows_run's row length */
} copy_ctx;

#define COPY_LOOP(T) do { \
        const T *X = (const T *)c->x + off[1]; \
        T *Y = (T *)c->y + off[0]; \
        for (int64_t i = 0; i < n; i++) Y[i * sy] = X[i * sx]; \
    } while (0)

static void copy_run(void *vctx, const int64_t *off, int64_t n, const int64_t *inner)
{
    const copy_ctx *c = vctx;
    int64_t sy = inner[0], sx = inner[1];
    if (sy == 1 && sx == 1) {
        memcpy(c->y + off[0] * c->es, c->x + off[1] * c->es, (size_t)n * c->es);
        return;
    }
    switch (c->es) {
    case 1: COPY_LOOP(uint8_t); break;
    case 2: COPY_LOOP(uint16_t); break;
    case 4: COPY_LOOP(uint32_t); break;
    case 8: COPY_LOOP(uint64_t); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(c->y + (off[0] + i * sy) * c->es, c->x + (off[1] + i * sx) * c->es, c->es);
    }
}

/* Rows of c->w contiguous elements, len of them, each a row stride apart
 * (inner): the runs of a copy whose contiguous rows are short (RoPE's
 * halves of a head, 8 floats; a concat of them), one call a block of rows,
 * not a call and a memcpy a row. */
static void rows_run(void *vctx, const int64_t *off, int64_t len, const int64_t *inner)
{
    const copy_ctx *c = vctx;
    int64_t w = c->w;
    if (c->es == 4) {
        const uint32_t *X = (const uint32_t *)c->x + off[1];
        uint32_t *Y = (uint32_t *)c->y + off[0];
        for (int64_t i = 0; i < len; i++, X += inner[1], Y += inner[0])
            for (int64_t k = 0; k < w; k++)
                Y[k] = X[k];
        return;
    }
    for (int64_t i = 0; i < len; i++)
        memcpy(c->y + (off[0] + i * inner[0]) * c->es, c->x + (off[1] + i * inner[1]) * c->es,
               (size_t)w * c->es);
}

void tgk_copy_strided(size_t elsize, int rank, const int64_t *dims, const void *x,
                      const int64_t *xs, void *y, const int64_t *ys)
{
    const int64_t *st[2] = { ys, xs };
    tgk_iter it;
    tgk_iter_init(&it, rank, dims, 2, st);
    copy_ctx c = { elsize, x, y, 0 };
    int r = it.rank - 1;
    bool rows = it.st[0][r] == 1 && it.st[1][r] == 1;
    if (rows && r > 0 && it.numel > 0 && it.dims[r] < SHORT_ROW) {
        c.w = it.dims[r];       /* the iteration over rows: the last dim dropped */
        it.rank--;
        it.numel /= c.w;
        tgk_iter_parallel(&it, GRAIN_SLOW / c.w + 1, rows_run, &c);
        return;
    }
    tgk_iter_parallel(&it, rows && it.dims[r] >= LONG_ROW ? GRAIN : GRAIN_SLOW, copy_run, &c);
}

static void contiguous_strides(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= dims[k];
    }
}

void tgk_permute(size_t elsize, int rank, const int64_t *dims, const int64_t *perm,
                 const void *x, void *y)
{
    int64_t cs[TGK_MAX_RANK], od[TGK_MAX_RANK], xs[TGK_MAX_RANK];
    contiguous_strides(rank, dims, cs);
    for (int k = 0; k < rank; k++) {
        od[k] = dims[perm[k]];
        xs[k] = cs[perm[k]];
    }
    tgk_copy_strided(elsize, rank, od, x, xs, y, NULL);
}

void tgk_expand(size_t elsize, int rank, const int64_t *dims, int in_rank, const int64_t *in,
                const void *x, void *y)
{
    int64_t xs[TGK_MAX_RANK];
    tgk_broadcast_strides(rank, dims, in_rank, in, xs);
    tgk_copy_strided(elsize, rank, dims, x, xs, y, NULL);
}

void tgk_slice(size_t elsize, int rank, const int64_t *dims, int axis, int64_t start,
               int64_t step, int64_t len, const void *x, void *y)
{
    int64_t xs[TGK_MAX_RANK], od[TGK_MAX_RANK];
    contiguous_strides(rank, dims, xs);
    memcpy(od, dims, sizeof(int64_t) * (size_t)rank);
    od[axis] = len;
    const char *x0 = (const char *)x + (size_t)(start * xs[axis]) * elsize;
    xs[axis] *= step;
    tgk_copy_strided(elsize, rank, od, x0, xs, y, NULL);
}

void tgk_concat(size_t elsize, int64_t outer, int64_t inner, int n, const void *const *x,
                const int64_t *len, void *y)
{
    int64_t total = 0;
    for (int i = 0; i < n; i++)
        total += len[i];
    int64_t ys[2] = { total * inner, 1 }, at = 0;
    for (int i = 0; i < n; i++) {
        int64_t d[2] = { outer, len[i] * inner }, xs[2] = { len[i] * inner, 1 };
        if (x[i])
            tgk_copy_strided(elsize, 2, d, x[i], xs, (char *)y + (size_t)(at * inner) * elsize,
                             ys);
        at += len[i];
    }
}

typedef struct {
    size_t es;
    const void *value;
    char *y;
} fill_ctx;

static void fill_task(void *vctx, int64_t b, int64_t e)
{
    const fill_ctx *f = vctx;
    for (int64_t i = b; i < e; i++)
        memcpy(f->y + (size_t)i * f->es, f->value, f->es);
}

void tgk_pad(size_t elsize, int rank, const int64_t *dims, const int64_t *before,
             const int64_t *after, const void *value, const void *x, void *y)
{
    int64_t od[TGK_MAX_RANK], xs[TGK_MAX_RANK], ys[TGK_MAX_RANK], cd[TGK_MAX_RANK];
    int64_t xoff = 0, yoff = 0, n = 1;
    for (int k = 0; k < rank; k++) {
        od[k] = dims[k] + before[k] + after[k];
        n *= od[k];
    }
    fill_ctx f = { elsize, value, y };
    tgk_parallel_for(n, GRAIN, fill_task, &f);
    contiguous_strides(rank, dims, xs);
    contiguous_strides(rank, od, ys);
    for (int k = 0; k < rank; k++) {
        int64_t crop_lo = before[k] < 0 ? -before[k] : 0, crop_hi = after[k] < 0 ? -after[k] : 0;
        cd[k] = dims[k] - crop_lo - crop_hi;
        if (cd[k] <= 0)
            return;
        xoff += crop_lo * xs[k];
        yoff += (before[k] > 0 ? before[k] : 0) * ys[k];
    }
    tgk_copy_strided(elsize, rank, cd, (const char *)x + (size_t)xoff * elsize, xs,
                     (char *)y + (size_t)yoff * elsize, ys);
}

typedef struct {
    size_t es;
    int rank, mode;
    const int64_t *dims, *before, *od;
    const char *x;
    char *y;
} pad_mode_ctx;

/* The index an output position i - before of an axis of d elements reads:
 * mode 1 edge (the nearest end), 2 reflect (mirrored about the ends, the
 * ends not repeated), 3 wrap (modulo d). */
static int64_t pad_source(int64_t i, int64_t d, int mode)
{
    if (i >= 0 && i < d)
        return i;
    if (mode == 1)
        return i < 0 ? 0 : d - 1;
    if (mode == 2) {
        if (d == 1)
            return 0;
        int64_t p = 2 * (d - 1), r = (i % p + p) % p;
        return r < d ? r : p - r;
    }
    int64_t r = i % d;
    return r < 0 ? r + d : r;
}

static void pad_mode_task(void *vctx, int64_t b, int64_t e)
{
    const pad_mode_ctx *c = vctx;
    int last = c->rank - 1;
    int64_t inner = c->od[last], xs[TGK_MAX_RANK];
    contiguous_strides(c->rank, c->dims, xs);
    for (int64_t row = b; row < e; row++) {
        int64_t r = row, off = 0;
        for (int k = last - 1; k >= 0; k--) {
            off += pad_source(r % c->od[k] - c->before[k], c->dims[k], c->mode) * xs[k];
            r /= c->od[k];
        }
        char *y = c->y + (size_t)(row * inner) * c->es;
        for (int64_t j = 0; j < inner; j++)
            memcpy(y + (size_t)j * c->es,
                   c->x + (size_t)(off + pad_source(j - c->before[last], c->dims[last], c->mode)) * c->es,
                   c->es);
    }
}

/* pad with mode 1 edge, 2 reflect or 3 wrap (ONNX Pad's modes; torch's
 * replicate, reflect, circular): every output element read from x, negative
 * pads cropping. -1: an axis of x is empty but its output is not. */
TGK_DECL int tgk_pad_mode(size_t elsize, int rank, const int64_t *dims, const int64_t *before,
                          const int64_t *after, int mode, const void *x, void *y)
{
    int64_t od[TGK_MAX_RANK], n = 1;
    for (int k = 0; k < rank; k++) {
        od[k] = dims[k] + before[k] + after[k];
        n *= od[k];
    }
    if (n == 0)
        return 0;
    for (int k = 0; k < rank; k++)
        if (dims[k] == 0)
            return -1;
    if (rank == 0) {
        memcpy(y, x, elsize);
        return 0;
    }
    pad_mode_ctx c = { elsize, rank, mode, dims, before, od, x, y };
    tgk_parallel_for(n / od[rank - 1], od[rank - 1] >= 4096 ? 1 : 4096 / od[rank - 1], pad_mode_task, &c);
    return 0;
}

void tgk_tile(size_t elsize, int rank, const int64_t *dims, const int64_t *reps,
              const void *x, void *y)
{
    /* [r0, d0, r1, d1, ...] with the repeat axes broadcast is y in row-major order */
    int64_t cs[TGK_MAX_RANK], d2[2 * TGK_MAX_RANK], xs2[2 * TGK_MAX_RANK];
    contiguous_strides(rank, dims, cs);
    for (int k = 0; k < rank; k++) {
        d2[2 * k] = reps[k];
        xs2[2 * k] = 0;
        d2[2 * k + 1] = dims[k];
        xs2[2 * k + 1] = cs[k];
    }
    tgk_copy_strided(elsize, 2 * rank, d2, x, xs2, y, NULL);
}

typedef struct {
    size_t es;
    bool upper;
    int64_t rows, cols, k;
    const char *x;
    char *y;
} tri_ctx;

static void tri_task(void *vctx, int64_t b, int64_t e)
{
    const tri_ctx *t = vctx;
    for (int64_t r = b; r < e; r++) {
        int64_t i = r % t->rows;
        /* kept columns: tril j <= i + k, triu j >= i + k */
        int64_t lo = t->upper ? i + t->k : 0, hi = t->upper ? t->cols : i + t->k + 1;
        lo = lo < 0 ? 0 : lo > t->cols ? t->cols : lo;
        hi = hi < lo ? lo : hi > t->cols ? t->cols : hi;
        size_t row = (size_t)(r * t->cols) * t->es;
        memset(t->y + row, 0, (size_t)lo * t->es);
        memmove(t->y + row + (size_t)lo * t->es, t->x + row + (size_t)lo * t->es,
               (size_t)(hi - lo) * t->es);
        memset(t->y + row + (size_t)hi * t->es, 0, (size_t)(t->cols - hi) * t->es);
    }
}

void tgk_tri(size_t elsize, bool upper, int64_t batch, int64_t rows, int64_t cols, int64_t k,
             const void *x, void *y)
{
    tri_ctx t = { elsize, upper, rows, cols, k, x, y };
    tgk_parallel_for(batch * rows, 64, tri_task, &t);
}
