/* Generators: constant fill and arange. */
#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    tgk_dtype t;
    double value;
    int64_t start, step;
    void *y;
} gen_ctx;

static void full_task(void *vctx, int64_t b, int64_t e)
{
    const gen_ctx *g = vctx;
    if (g->t == TGK_F32) {
        float v = (float)g->value, *y = g->y;
        for (int64_t i = b; i < e; i++)
            y[i] = v;
        return;
    }
    for (int64_t i = b; i < e; i++)
        tgk_store_f64(g->t, g->y, i, g->value);
}

void tgk_full(tgk_dtype t, int64_t n, double value, void *y)
{
    gen_ctx g = { t, value, 0, 0, y };
    tgk_parallel_for(n, 1 << 15, full_task, &g);
}

static void arange_task(void *vctx, int64_t b, int64_t e)
{
    const gen_ctx *g = vctx;
    for (int64_t i = b; i < e; i++) {
        int64_t v = g->start + i * g->step;
        if (tgk_dtype_is_float(g->t))
            tgk_store_f64(g->t, g->y, i, (double)v);
        else
            tgk_store_i64(g->t, g->y, i, v);
    }
}

void tgk_arange(tgk_dtype t, int64_t n, int64_t start, int64_t step, void *y)
{
    gen_ctx g = { t, 0, start, step, y };
    tgk_parallel_for(n, 1 << 15, arange_task, &g);
}
