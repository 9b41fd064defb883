/* cumsum, an op with its own kernel written in one file: the kernel, then the
 * op's glue for the interpreter (tg_run_cumsum) and for the C emitter
 * (cg_node_cumsum), which the tables generated from ops.def find by the op's
 * family. The build declares the kernel from its TGK_DECL definition
 * (kernels_decl.h) and leaves the glue out of libtgkernels.a, which compiled
 * models link (TGK_KERNELS_ONLY). tgraph-ops(7), ADDING AN OP. */
#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    tgk_dtype t;
    const void *x;
    void *y;
    int64_t n, inner;
    bool exclusive, reverse;
} scan_ctx;

static void scan_task(void *vctx, int64_t begin, int64_t end)
{
    const scan_ctx *c = vctx;
    bool fl = tgk_dtype_is_float(c->t);
    for (int64_t o = begin; o < end; o++) {
        int64_t base = o / c->inner * c->n * c->inner + o % c->inner;
        double fs = 0;
        uint64_t is = 0;        /* unsigned: integer overflow wraps, as torch's does */
        for (int64_t j = 0; j < c->n; j++) {
            int64_t at = base + (c->reverse ? c->n - 1 - j : j) * c->inner;
            if (fl) {
                double v = tgk_load_f64(c->t, c->x, at);
                tgk_store_f64(c->t, c->y, at, c->exclusive ? fs : fs + v);
                fs += v;
            } else {
                uint64_t v = (uint64_t)tgk_load_i64(c->t, c->x, at);
                tgk_store_i64(c->t, c->y, at, (int64_t)(c->exclusive ? is : is + v));
                is += v;
            }
        }
    }
}

/* Running sums along the middle axis of [outer, n, inner]: y_j = sum of x_i
 * for i <= j (exclusive: i < j; reverse: from the end), in double for floats,
 * wrapping int64 for integers, stored as t. x == y allowed. -1: t is bool. */
TGK_DECL int tgk_cumsum(tgk_dtype t, int64_t outer, int64_t n, int64_t inner,
                        bool exclusive, bool reverse, const void *x, void *y)
{
    if (t == TGK_BOOL || t <= TGK_DT_NONE || t >= TGK_DT_COUNT)
        return -1;
    scan_ctx c = { t, x, y, n, inner, exclusive, reverse };
    tgk_parallel_for(outer * inner, n >= 256 ? 1 : 256 / (n ? n : 1), scan_task, &c);
    return 0;
}

#ifndef TGK_KERNELS_ONLY
#include "../cg.h"
#include "../run.h"

#define TG_COUNTED cumsum
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(cumsum, 1);
int tg_run_cumsum(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    int ax = x->rank ? tg_run_axis(c, "axis", 0, x->rank) : 0;
    if (ax < 0)
        return -1;
    if (tgk_cumsum(tg_run_kt(x->dtype), tg_run_prod(x->dims, 0, ax), x->rank ? x->dims[ax] : 1,
                   tg_run_prod(x->dims, ax + 1, x->rank), tg_node_int(c->n, "exclusive", 0),
                   tg_node_int(c->n, "reverse", 0), x->data, c->out[0]->data))
        return tg_err("not defined for dtype %s", tg_dtype_name(x->dtype));
    return 0;
}

int cg_node_cumsum(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0);
    int ax = 0, r = x->shape.rank;
    if (r && cg_axis(nd, "axis", 0, r, &ax))
        return -1;
    fprintf(c->f, "    (void)tgk_cumsum(%s, %s, %s, %s, %d, %d, %s, %s);\n",
            cg_dtype_enum(c, "TGK_", x->dtype), cg_prod(c, &x->shape, 0, ax),
            r ? cg_dim(c, x->shape.d[ax]) : "1", cg_prod(c, &x->shape, ax + 1, r),
            (int)tg_node_int(nd, "exclusive", 0), (int)tg_node_int(nd, "reverse", 0),
            cg_ptr(c, nd->in[0]), cg_ptr(c, nd->out[0]));
    return 0;
}
#endif
