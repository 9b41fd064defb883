/* The 2:4 sparse linear layer (linear_24) as a call into its kernel
 * (sparse24.c): the compressed weight is packed into the kernel's panels at
 * the first run and kept (a static slot per node), as the int8 weights of
 * qlinear are (emit_qops.c): every instance of a compiled model has the same
 * weights. */
#include "cg.h"

TG_FAMILY_HANDLES(sparse, 1);
int cg_node_sparse(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *v = tg_node_input(c->g, nd, 1);
    const char *M = cg_prod(c, &x->shape, 0, x->shape.rank - 1);
    const char *N = cg_dim(c, v->shape.d[0]), *K = cg_dim(c, x->shape.d[x->shape.rank - 1]);
    fprintf(c->f, "    static void *pk_slot;\n"
            "    const void *pk = tgk_sparse24_pack_once(&pk_slot, %s, %s, %s, "
            "(const uint8_t *)%s);\n", N, K, cg_ptr(c, nd->in[1]), cg_ptr(c, nd->in[2]));
    fprintf(c->f, "    if (!pk)\n        return tgrt_fail(TGRAPH_E_NOMEM, %s);\n",
            cg_quote(c, cg_str(c, "node '%s' (%s): out of memory for the packed weights",
                               nd->name, tg_op_name(nd->op))));
    fprintf(c->f, "    tgk_linear24_f32(%s, pk, %s, %s, %s, %s, %s);\n", cg_ptr(c, nd->in[0]),
            nd->nin > 3 && nd->in[3] >= 0 ? cg_ptr(c, nd->in[3]) : "NULL",
            cg_ptr(c, nd->out[0]), M, N, K);
    return 0;
}
