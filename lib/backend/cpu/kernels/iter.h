/* Walking several strided operands over a range of output elements: the loop
 * shared by the broadcasting elementwise kernels and the strided copy.
 * Private to the kernels. */
#ifndef TGK_ITER_H
#define TGK_ITER_H

#include <stdint.h>

#include "tensor_ops.h"

#define TGK_ITER_RANK (2 * TGK_MAX_RANK)
#define TGK_ITER_OPS 4

typedef struct {
    int rank, nops;
    int64_t numel;
    int64_t dims[TGK_ITER_RANK];
    int64_t st[TGK_ITER_OPS][TGK_ITER_RANK];
} tgk_iter;

/* Operand j has strides st[j] (NULL: contiguous over dims). Dims of size 1 are
 * dropped and dims contiguous in every operand merged, so the innermost run
 * is as long as it can be. */
void tgk_iter_init(tgk_iter *it, int rank, const int64_t *dims, int nops,
                   const int64_t *const *st);

/* fn(ctx, off, len, inner) for each run along the innermost dim covering
 * elements [begin, end) in row-major order: off[j] is operand j's offset of
 * the run's first element, inner[j] its stride along the run. */
typedef void (*tgk_run_fn)(void *ctx, const int64_t *off, int64_t len, const int64_t *inner);
void tgk_iter_range(const tgk_iter *it, int64_t begin, int64_t end, tgk_run_fn fn, void *ctx);

/* The whole iteration on the thread pool; grain in elements. */
void tgk_iter_parallel(const tgk_iter *it, int64_t grain, tgk_run_fn fn, void *ctx);

#endif
