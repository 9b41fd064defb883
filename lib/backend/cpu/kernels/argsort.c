/* argsort, an op with its own kernel (kernels/cumsum.c's layout): the kernel,
 * then its glue for the interpreter and the C emitter. A stable merge sort of
 * (key, index) pairs, O(n log n) a line: the order ONNX's TopK and Unique and
 * torch.argsort(stable=True) define. */
#include <stdlib.h>

#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    union {
        double f;       /* floating dtypes */
        int64_t i;      /* integers and bool; u64 with its sign bit flipped */
    } k;
    int64_t at;
} item;

enum { INT_UP, INT_DOWN, FLOAT_UP, FLOAT_DOWN };

/* Whether a goes strictly before b: NaN counts as the largest (last going
 * up, first going down), as NumPy's and torch's sorts place it. */
static inline bool before(const item *a, const item *b, int mode)
{
    switch (mode) {
    case INT_UP: return a->k.i < b->k.i;
    case INT_DOWN: return a->k.i > b->k.i;
    case FLOAT_UP: return a->k.f < b->k.f || (b->k.f != b->k.f && a->k.f == a->k.f);
    default: return a->k.f > b->k.f || (a->k.f != a->k.f && b->k.f == b->k.f);
    }
}

/* Bottom-up merge sort of a[0, n) with scratch b; returns the sorted copy.
 * An element of the right run goes first only when strictly before: stable. */
static item *merge_sort(item *a, item *b, int64_t n, int mode)
{
    for (int64_t w = 1; w < n; w *= 2) {
        for (int64_t lo = 0; lo < n; lo += 2 * w) {
            int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;
            int64_t i = lo, j = mid, k = lo;
            while (i < mid && j < hi)
                b[k++] = before(&a[j], &a[i], mode) ? a[j++] : a[i++];
            while (i < mid)
                b[k++] = a[i++];
            while (j < hi)
                b[k++] = a[j++];
        }
        item *t = a;
        a = b, b = t;
    }
    return a;
}

typedef struct {
    tgk_dtype t;
    const void *x;
    int64_t *y;
    int64_t n, inner;
    int mode;
    int failed;
} sort_ctx;

static void sort_task(void *vctx, int64_t begin, int64_t end)
{
    sort_ctx *c = vctx;
    item *buf = malloc(sizeof *buf * (size_t)(2 * c->n));
    if (!buf) {
        __atomic_store_n(&c->failed, 1, __ATOMIC_RELAXED);
        return;
    }
    bool fl = c->mode >= FLOAT_UP;
    int64_t flip = c->t == TGK_U64 ? INT64_MIN : 0;
    for (int64_t o = begin; o < end; o++) {
        int64_t base = o / c->inner * c->n * c->inner + o % c->inner;
        for (int64_t j = 0; j < c->n; j++) {
            int64_t at = base + j * c->inner;
            if (fl)
                buf[j].k.f = tgk_load_f64(c->t, c->x, at);
            else
                buf[j].k.i = tgk_load_i64(c->t, c->x, at) ^ flip;
            buf[j].at = j;
        }
        const item *s = merge_sort(buf, buf + c->n, c->n, c->mode);
        for (int64_t j = 0; j < c->n; j++)
            c->y[base + j * c->inner] = s[j].at;
    }
    free(buf);
}

/* The stable sorting order along the middle axis of x [outer, n, inner]
 * (ascending, or descending) into y, int64 indices into that axis. -1: out of
 * memory or an unknown dtype. */
TGK_DECL int tgk_argsort(tgk_dtype t, int64_t outer, int64_t n, int64_t inner, bool descending,
                         const void *x, int64_t *y)
{
    if (t <= TGK_DT_NONE || t >= TGK_DT_COUNT)
        return -1;
    int mode = (tgk_dtype_is_float(t) ? FLOAT_UP : INT_UP) + descending;
    sort_ctx c = { t, x, y, n, inner, mode, 0 };
    if (n > 0)
        tgk_parallel_for(outer * inner, n >= 256 ? 1 : 256 / n, sort_task, &c);
    return c.failed ? -1 : 0;
}

#ifndef TGK_KERNELS_ONLY
#include "../cg.h"
#include "../run.h"

#define TG_COUNTED argsort
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(argsort, 1);
int tg_run_argsort(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    int ax = x->rank ? tg_run_axis(c, "axis", -1, x->rank) : 0;
    if (ax < 0)
        return -1;
    if (tgk_argsort(tg_run_kt(x->dtype), tg_run_prod(x->dims, 0, ax), x->rank ? x->dims[ax] : 1,
                    tg_run_prod(x->dims, ax + 1, x->rank), tg_node_int(c->n, "descending", 0),
                    x->data, c->out[0]->data))
        return tg_err("out of memory");
    return 0;
}

int cg_node_argsort(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0);
    int ax = 0, r = x->shape.rank;
    if (r && cg_axis(nd, "axis", -1, r, &ax))
        return -1;
    fprintf(c->f, "    if (tgk_argsort(%s, %s, %s, %s, %d, %s, %s))\n"
                  "        return tgrt_fail(TGRAPH_E_NOMEM, %s);\n",
            cg_dtype_enum(c, "TGK_", x->dtype), cg_prod(c, &x->shape, 0, ax),
            r ? cg_dim(c, x->shape.d[ax]) : "1", cg_prod(c, &x->shape, ax + 1, r),
            (int)tg_node_int(nd, "descending", 0), cg_ptr(c, nd->in[0]), cg_ptr(c, nd->out[0]),
            cg_quote(c, cg_str(c, "node '%s' (argsort): out of memory", nd->name)));
    return 0;
}
#endif
