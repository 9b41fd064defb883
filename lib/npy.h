/* NumPy .npy files (format 1.0-3.0), C order, little-endian, every dtype of
 * dtype.h that NumPy has. */
#ifndef TG_NPY_H
#define TG_NPY_H

#include <stdio.h>

#include "tensor.h"

/* Read one array. Errors (tg_err, return -1): not .npy, Fortran order, big-endian,
 * object or unknown dtype, rank > TG_MAX_RANK, truncated data. */
int tg_npy_read(FILE *f, tg_tensor *out);
int tg_npy_load(const char *path, tg_tensor *out);   /* "-" is stdin */
int tg_npy_write(FILE *f, const tg_tensor *t);
/* Writes a temporary file beside path and renames it, so no partial output. */
int tg_npy_save(const char *path, const tg_tensor *t);

#endif
