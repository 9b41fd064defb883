/* Shape arithmetic that importers and passes share with the op inference. */
#ifndef TG_OPS_SHAPE_UTIL_H
#define TG_OPS_SHAPE_UTIL_H

#include "../graph.h"

/* NumPy broadcast of two symbolic shapes: dims are aligned from the right; equal
 * dims (tg_dim_eq) stay, a constant 1 stretches to the other dim, anything else
 * (including two different symbolic dims) is an error. g supplies symbol names for
 * the message. 0, or -1 with tg_err. */
int tg_shape_broadcast(const tg_graph *g, const tg_shape *a, const tg_shape *b,
                       tg_shape *out);

/* Target shape of a reshape as importers receive it: at most one entry of dims[0..n)
 * is the constant -1; replace it by numel(in) / product of the others, which must
 * divide exactly. Other entries must not be negative. 0, or -1 with tg_err. */
int tg_reshape_resolve(const tg_shape *in, int n, tg_dim *dims);

#endif
