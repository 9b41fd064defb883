/* shape, an op with its own kernel written in one file: x's dims as an int64
 * vector, so that a model can compute with a length only the run knows (a
 * data symbol, tgraph-format(5)). The kernel, then the op's glue. */
#include <string.h>

#include "kernels.h"
#include "tensor_ops.h"

/* The rank dims into y. */
TGK_DECL void tgk_shape(int rank, const int64_t *dims, int64_t *y)
{
    memcpy(y, dims, sizeof *y * (size_t)rank);
}

#ifndef TGK_KERNELS_ONLY
#include "../cg.h"
#include "../run.h"

#define TG_COUNTED shape
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(shape, 1);
int tg_run_shape(const tg_run_ctx *c)
{
    tgk_shape(c->in[0]->rank, c->in[0]->dims, c->out[0]->data);
    return 0;
}

int cg_node_shape(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0);
    cg_dims_array(c, "x", &x->shape);
    fprintf(c->f, "    tgk_shape(%d, x, %s);\n", x->shape.rank, cg_ptr(c, nd->out[0]));
    return 0;
}
#endif
