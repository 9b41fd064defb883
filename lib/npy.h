/* NumPy .npy files (format 1.0-3.0), C order, little-endian, every dtype of
 * dtype.h. bf16 and float8 use the ml_dtypes convention: the descr is the
 * ml_dtypes name ('bfloat16', 'float8_e4m3fn', 'float8_e5m2'), which np.load
 * reads back as that dtype once ml_dtypes is imported. */
#ifndef TG_NPY_H
#define TG_NPY_H

#include <stdio.h>

#include "tensor.h"

/* Read one array. Errors (tg_err, return -1): not .npy, Fortran order, big-endian,
 * object or unknown dtype, rank > TG_MAX_RANK, truncated data. */
int tg_npy_read(FILE *f, tg_tensor *out);
int tg_npy_load(const char *path, tg_tensor *out);   /* "-" is stdin */
/* The same, where the caller knows the dtype the array should have (a model
 * input's): also reads the raw descrs np.save writes for ml_dtypes arrays
 * ('<V2', '<V1', '<f1') as want when want is a type NumPy lacks, of that size.
 * want TG_DTYPE_NONE: no such knowledge. A known descr is read as itself. */
int tg_npy_read_as(FILE *f, tg_dtype want, tg_tensor *out);
int tg_npy_load_as(const char *path, tg_dtype want, tg_tensor *out);
int tg_npy_write(FILE *f, const tg_tensor *t);
/* Writes a temporary file beside path and renames it, so no partial output. */
int tg_npy_save(const char *path, const tg_tensor *t);

#endif
