/* The 2:4 sparse linear layer (linear_24): the compressed weight packed into
 * the kernel's layout (sparse24.c) at each run, as qlinear's int8 weights are;
 * compiled models pack it once. Every metadata byte is valid (2-bit indices),
 * so a graph from elsewhere cannot make the kernel read out of bounds. */
#include <stdlib.h>

#include "../../ops/infer.h"
#include "run.h"

TG_FAMILY_HANDLES(sparse, 1);
int tg_run_sparse(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *v = c->in[1], *m = c->in[2];
    const tg_tensor *b = c->n->nin > 3 ? c->in[3] : NULL;
    int64_t K = x->dims[x->rank - 1], N = v->dims[0], M = tg_run_numel(x) / (K ? K : 1);
    void *packed = malloc(tgk_sparse24_packed_size(N, K) + 1);
    if (!packed)
        return tg_err("out of memory");
    tgk_sparse24_pack(N, K, v->data, m->data, packed);
    tgk_linear24_f32(x->data, packed, b ? b->data : NULL, c->out[0]->data, M, N, K);
    free(packed);
    return 0;
}
