/* Comparing an output with its reference element by element, as
 * numpy.allclose(out, ref, rtol, atol, equal_nan=True) does, where an
 * infinite reference needs the same infinity: trun --check. */
#ifndef TG_COMPARE_H
#define TG_COMPARE_H

#include <stdint.h>

#include "tensor.h"

typedef struct {
    int64_t n, nfail;       /* elements; those out of tolerance */
    double max_abs;         /* max |out - ref| (inf where NaN or inf do not match) */
    double max_rel;         /* max |out - ref| / |ref| over the reference's non-zero elements */
    int64_t worst;          /* flat index of the element furthest over its bound; -1: none */
    double worst_out, worst_ref;
} tg_compare_result;

/* Element i passes when ref[i] is NaN and out[i] is NaN, ref[i] is an infinity
 * and out[i] the same one, or both are finite and
 * |out[i] - ref[i]| <= atol + rtol * |ref[i]|. -1 (tg_err) when the dtypes or
 * shapes differ: nothing is compared then. */
int tg_compare(const tg_tensor *out, const tg_tensor *ref, double rtol, double atol,
               tg_compare_result *r);

/* Flat index i of dims as "[1,3]" into buf. */
void tg_index_format(int rank, const int64_t *dims, int64_t i, char *buf, size_t n);

#endif
