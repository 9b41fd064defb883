/* nonzero, an op whose output's length is set by its input's values (ops.def's
 * DATA flag): the kernel, then its glue. The interpreter allocates the output
 * for every element non-zero ([rank, numel]); the kernel writes the [rank, n]
 * it finds there, packed, and sets the dim, which binds the node's data
 * symbol (exec.c). Compiled, the count binds it likewise (cg_data_bind). */
#include "kernels.h"
#include "tensor_ops.h"

static bool is_nonzero(tgk_dtype t, const void *x, int64_t i)
{
    return tgk_dtype_is_float(t) ? tgk_load_f64(t, x, i) != 0 : tgk_load_i64(t, x, i) != 0;
}

/* The indices of x's non-zero elements (x of `rank` dims, row-major; a scalar
 * as one element of one axis) into y as [max(rank, 1), n], row d the indices
 * along axis d in element order; returns n. y holds room for every element. */
TGK_DECL int64_t tgk_nonzero(tgk_dtype t, int rank, const int64_t *dims, const void *x,
                             int64_t *y)
{
    int64_t numel = 1, n = 0;
    for (int d = 0; d < rank; d++)
        numel *= dims[d];
    for (int64_t i = 0; i < numel; i++)
        n += is_nonzero(t, x, i);
    int rows = rank ? rank : 1;
    for (int64_t i = 0, k = 0; i < numel; i++) {
        if (!is_nonzero(t, x, i))
            continue;
        for (int64_t d = rows - 1, rest = i; d >= 0; d--) {
            int64_t len = rank ? dims[d] : 1;
            y[d * n + k] = rest % len;
            rest /= len;
        }
        k++;
    }
    return n;
}

#ifndef TGK_KERNELS_ONLY
#include "../cg.h"
#include "../run.h"

#define TG_COUNTED nonzero
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(nonzero, 1);
int tg_run_nonzero(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    c->out[0]->dims[1] = tgk_nonzero(tg_run_kt(x->dtype), x->rank, x->dims, x->data,
                                     c->out[0]->data);
    return 0;
}

/* The kernel into the output's buffer, sized by the bound; the count it
 * returns binds the node's data symbol. */
int cg_node_nonzero(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0);
    cg_dims_array(c, "x", &x->shape);
    return cg_data_bind(c, nd, cg_str(c, "tgk_nonzero(%s, %d, x, %s, %s)",
                                      cg_dtype_enum(c, "TGK_", x->dtype), x->shape.rank,
                                      cg_ptr(c, nd->in[0]), cg_ptr(c, nd->out[0])));
}
#endif
