/* A concrete tensor: dtype, dims and contiguous row-major data. What the
 * interpreter computes with and what .npy files hold. */
#ifndef TG_TENSOR_H
#define TG_TENSOR_H

#include <stddef.h>
#include <stdint.h>

#include "dtype.h"
#include "graph.h"   /* TG_MAX_RANK */

typedef struct {
    tg_dtype dtype;
    int rank;
    int64_t dims[TG_MAX_RANK];
    void *data;             /* owned: free with tg_tensor_free */
    size_t nbytes;
} tg_tensor;

#define TG_TENSOR_ALIGN 64

/* nbytes of zeroed memory, TG_TENSOR_ALIGN-aligned (even for 0 bytes), for
 * free(); NULL (tg_err) when out of memory. */
void *tg_host_alloc(size_t nbytes);
/* Element count; -1 (tg_err) on overflow. */
int64_t tg_tensor_numel(int rank, const int64_t *dims);
/* t's size in bytes from its dtype and dims; -1 (tg_err) on overflow. */
int tg_tensor_nbytes(const tg_tensor *t, size_t *nbytes);
/* Allocate data for t (dtype, rank, dims set): 64-byte aligned, zeroed. 0 or -1. */
int tg_tensor_alloc(tg_tensor *t);
void tg_tensor_free(tg_tensor *t);
/* "f32[3,64]" */
int tg_tensor_describe(const tg_tensor *t, char *buf, size_t n);

#endif
