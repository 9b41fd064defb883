/* Concrete tensors: allocation with overflow checks, and a short description. */
#include "tensor.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

int64_t tg_tensor_numel(int rank, const int64_t *dims)
{
    if (rank < 0 || rank > TG_MAX_RANK)
        return tg_err("tensor rank %d out of range 0..%d", rank, TG_MAX_RANK);
    int64_t n = 1;
    for (int i = 0; i < rank; i++) {
        if (dims[i] < 0)
            return tg_err("tensor dimension %d is negative (%lld)", i, (long long)dims[i]);
        if (__builtin_mul_overflow(n, dims[i], &n))
            return tg_err("tensor element count overflows");
    }
    return n;
}

void *tg_host_alloc(size_t nbytes)
{
    size_t padded;
    if (__builtin_add_overflow(nbytes, (size_t)TG_TENSOR_ALIGN - 1, &padded)) {
        tg_err("tensor size overflows");
        return NULL;
    }
    /* aligned_alloc wants a multiple of the alignment, and never 0 bytes */
    padded = padded / TG_TENSOR_ALIGN * TG_TENSOR_ALIGN;
    if (padded == 0)
        padded = TG_TENSOR_ALIGN;
    void *p = aligned_alloc(TG_TENSOR_ALIGN, padded);
    if (!p) {
        tg_err("out of memory allocating %zu bytes for a tensor", nbytes);
        return NULL;
    }
    memset(p, 0, padded);
    return p;
}

int tg_tensor_nbytes(const tg_tensor *t, size_t *nbytes)
{
    size_t es = tg_dtype_size(t->dtype);
    if (!es)
        return tg_err("tensor has no dtype");
    int64_t n = tg_tensor_numel(t->rank, t->dims);
    if (n < 0)
        return -1;
    if (__builtin_mul_overflow((size_t)n, es, nbytes))
        return tg_err("tensor size overflows");
    return 0;
}

int tg_tensor_alloc(tg_tensor *t)
{
    size_t nbytes;
    if (tg_tensor_nbytes(t, &nbytes))
        return -1;
    void *p = tg_host_alloc(nbytes);
    if (!p)
        return -1;
    t->data = p;
    t->nbytes = nbytes;
    return 0;
}

void tg_tensor_free(tg_tensor *t)
{
    if (!t)
        return;
    free(t->data);
    t->data = NULL;
    t->nbytes = 0;
}

int tg_tensor_describe(const tg_tensor *t, char *buf, size_t n)
{
    size_t len = 0;
    int k = snprintf(buf, n, "%s[", tg_dtype_name(t->dtype));
    for (int i = 0; k >= 0 && i < t->rank && i < TG_MAX_RANK; i++) {
        len += (size_t)k;
        k = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "%s%lld",
                     i ? "," : "", (long long)t->dims[i]);
    }
    if (k < 0)
        return k;
    len += (size_t)k;
    k = snprintf(len < n ? buf + len : NULL, len < n ? n - len : 0, "]");
    return k < 0 ? k : (int)(len + (size_t)k);
}
