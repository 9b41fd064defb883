/* tgk_cast: the element conversions of lib/elem.c over a whole tensor, in
 * parallel. */
#include <string.h>

#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    tgk_dtype dt, st;
    void *dst;
    const void *src;
} cast_ctx;

static void cast_task(void *vctx, int64_t begin, int64_t end)
{
    const cast_ctx *c = vctx;
    tgk_cast_range(c->dt, c->dst, c->st, c->src, begin, end);
}

void tgk_cast(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t n)
{
    if (dt == st) {
        memmove(dst, src, (size_t)n * tgk_dtype_size(dt));
        return;
    }
    cast_ctx c = { dt, st, dst, src };
    tgk_parallel_for(n, 1 << 15, cast_task, &c);
}
