/* Strided multi-operand iteration (iter.h). */
#include "iter.h"
#include "kernels.h"

void tgk_iter_init(tgk_iter *it, int rank, const int64_t *dims, int nops,
                   const int64_t *const *st)
{
    int64_t cont[TGK_ITER_RANK];
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        cont[k] = s;
        s *= dims[k];
    }
    it->nops = nops;
    it->numel = s;
    int r = 0;
    for (int k = 0; k < rank; k++) {
        if (dims[k] == 1)
            continue;
        bool merge = r > 0;
        for (int j = 0; j < nops && merge; j++) {
            int64_t sk = st[j] ? st[j][k] : cont[k];
            merge = it->st[j][r - 1] == sk * dims[k];
        }
        if (merge) {
            it->dims[r - 1] *= dims[k];
            for (int j = 0; j < nops; j++)
                it->st[j][r - 1] = st[j] ? st[j][k] : cont[k];
            continue;
        }
        it->dims[r] = dims[k];
        for (int j = 0; j < nops; j++)
            it->st[j][r] = st[j] ? st[j][k] : cont[k];
        r++;
    }
    if (r == 0) {                               /* a scalar, or all dims 1 */
        it->dims[0] = 1;
        for (int j = 0; j < nops; j++)
            it->st[j][0] = 0;
        r = 1;
    }
    it->rank = r;
}

void tgk_iter_range(const tgk_iter *it, int64_t begin, int64_t end, tgk_run_fn fn, void *ctx)
{
    int r = it->rank, nops = it->nops;
    int64_t idx[TGK_ITER_RANK], off[TGK_ITER_OPS] = { 0 }, inner[TGK_ITER_OPS];
    int64_t rem = begin;
    if (begin >= end)
        return;                                 /* nothing, and maybe a 0 dim below */
    for (int k = r - 1; k >= 0; k--) {
        idx[k] = rem % it->dims[k];
        rem /= it->dims[k];
        for (int j = 0; j < nops; j++)
            off[j] += idx[k] * it->st[j][k];
    }
    for (int j = 0; j < nops; j++)
        inner[j] = it->st[j][r - 1];
    for (int64_t pos = begin; pos < end;) {
        int64_t len = it->dims[r - 1] - idx[r - 1];
        if (len > end - pos)
            len = end - pos;
        fn(ctx, off, len, inner);
        pos += len;
        idx[r - 1] += len;
        for (int j = 0; j < nops; j++)
            off[j] += len * inner[j];
        for (int k = r - 1; k > 0 && idx[k] == it->dims[k]; k--) {
            idx[k] = 0;
            idx[k - 1]++;
            for (int j = 0; j < nops; j++)
                off[j] += it->st[j][k - 1] - it->dims[k] * it->st[j][k];
        }
    }
}

typedef struct {
    const tgk_iter *it;
    tgk_run_fn fn;
    void *ctx;
} par_ctx;

static void par_task(void *vctx, int64_t begin, int64_t end)
{
    const par_ctx *p = vctx;
    tgk_iter_range(p->it, begin, end, p->fn, p->ctx);
}

void tgk_iter_parallel(const tgk_iter *it, int64_t grain, tgk_run_fn fn, void *ctx)
{
    par_ctx p = { it, fn, ctx };
    tgk_parallel_for(it->numel, grain, par_task, &p);
}
