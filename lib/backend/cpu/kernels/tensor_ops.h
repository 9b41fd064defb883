/* CPU kernels for the simpler ops: elementwise, reductions, data movement,
 * indexing, generators, quantization. Like kernels.h: plain C over pointers,
 * element counts and dims, no IR types, shared by the interpreter and by the
 * models tcompile writes. Dims and strides are in elements, row-major; a
 * stride of 0 broadcasts. Kernels that can meet bad data (an index out of
 * range, an integer division by zero, a dtype the op has no meaning for)
 * return -1 instead of crashing; everything else returns nothing. */
#ifndef TGK_TENSOR_OPS_H
#define TGK_TENSOR_OPS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define TGK_MAX_RANK 8

/* Element types and their conversions (lib/elem.h). tcompile pastes that
 * header before this one into every model's C file, where no include path
 * leads to it: the guard skips the include there. */
#ifndef TGK_ELEM_H
#include "elem.h"
#endif

/* ---- conversions (cast.c) ---------------------------------------------------- */
/* n elements from src (type st) to dst (type dt); integers convert exactly. */
void tgk_cast(tgk_dtype dt, void *dst, tgk_dtype st, const void *src, int64_t n);

/* ---- elementwise (elementwise.c) --------------------------------------------- */
/* The kernel ops are named after the ops of ops.def they compute: the CPU's
 * glue (opmap.c) maps TG_OP_<ID> to TGK_<ID> and checks the counts. */
typedef enum {
    TGK_NEG, TGK_ABS, TGK_EXP, TGK_LOG, TGK_SQRT, TGK_RSQRT, TGK_RECIPROCAL,
    TGK_SIN, TGK_COS, TGK_TANH, TGK_TAN, TGK_ASIN, TGK_ACOS, TGK_ATAN, TGK_SINH,
    TGK_COSH, TGK_ASINH, TGK_ACOSH, TGK_ATANH, TGK_ERF, TGK_SIGMOID, TGK_RELU, TGK_GELU,
    TGK_GELU_TANH, TGK_SILU, TGK_HARDSWISH, TGK_HARDSIGMOID, TGK_LEAKY_RELU,
    TGK_ELU, TGK_FLOOR, TGK_CEIL, TGK_ROUND, TGK_CLAMP, TGK_LOGICAL_NOT, TGK_BITWISE_NOT,
    TGK_UNARY_COUNT
} tgk_unary_op;

typedef struct {
    double alpha;           /* leaky_relu slope, elu alpha */
    double lo, hi;          /* clamp bounds; -inf / +inf when absent */
} tgk_unary_param;

/* y[i] = op(x[i]), same dtype (logical_not: bool out, x any type). Float ops
 * need a float type; round is half to even. x == y allowed. -1: op has no
 * meaning for t. */
int tgk_unary(tgk_unary_op op, tgk_dtype t, int64_t n, const void *x, void *y,
              const tgk_unary_param *p);

typedef enum {
    TGK_ADD, TGK_SUB, TGK_MUL, TGK_DIV, TGK_POW, TGK_MAXIMUM, TGK_MINIMUM, TGK_REMAINDER,
    TGK_FMOD, TGK_BITWISE_AND, TGK_BITWISE_OR, TGK_BITWISE_XOR, TGK_SHL, TGK_SHR,
    /* from here on the result is bool */
    TGK_EQ, TGK_NE, TGK_LT, TGK_LE, TGK_GT, TGK_GE, TGK_LOGICAL_AND, TGK_LOGICAL_OR,
    TGK_BINARY_COUNT
} tgk_binary_op;

/* Floor remainder (the divisor's sign): fmod, moved by one divisor when the
 * signs differ. Used by the kernel and by generated code. */
static inline double tgk_floor_mod(double u, double v)
{
    double r = __builtin_fmod(u, v);
    return r != 0 && (r < 0) != (v < 0) ? r + v : r;
}

/* Strides for an input of dims in[in_rank] broadcast (NumPy, right-aligned)
 * to dims[rank]: the input's contiguous strides, 0 where it is broadcast. */
void tgk_broadcast_strides(int rank, const int64_t *dims, int in_rank, const int64_t *in,
                           int64_t *strides);
/* y[dims] (contiguous) = a op b, a and b of type t read through strides sa, sb.
 * Comparisons and and/or write bool; the rest write t. Integer division
 * truncates toward zero; max/min propagate NaN. -1: integer division by zero
 * (y is then partly written) or an op t has no meaning for. */
int tgk_binary(tgk_binary_op op, tgk_dtype t, int rank, const int64_t *dims,
               const void *a, const int64_t *sa, const void *b, const int64_t *sb, void *y);
/* y = c ? a : b, c bool, a and b any type of elsize bytes, each through strides. */
void tgk_where(size_t elsize, int rank, const int64_t *dims, const uint8_t *c,
               const int64_t *sc, const void *a, const int64_t *sa, const void *b,
               const int64_t *sb, void *y);

/* ---- reductions (reduce.c) ------------------------------------------------------ */
typedef enum {
    TGK_REDUCE_SUM, TGK_REDUCE_MEAN, TGK_REDUCE_MAX, TGK_REDUCE_MIN, TGK_REDUCE_PROD,
    TGK_REDUCE_VAR, TGK_REDUCE_ANY,
    TGK_REDUCE_COUNT
} tgk_reduce_op;

/* Reduce x[dims] over the axes whose bit is set in `axes` into y, which holds
 * the kept dims in order (keepdim changes only the shape). y has type t
 * (bool for any). Floats accumulate in double. var divides by
 * count - correction. max/min of nothing: -inf/+inf; mean/var: NaN.
 * -1: mean/var of a non-float type. */
int tgk_reduce(tgk_reduce_op op, tgk_dtype t, int rank, const int64_t *dims, uint32_t axes,
               int64_t correction, const void *x, void *y);
/* Index of the largest (max) or smallest value along `axis`: the first among
 * equals, NaN counts as largest and smallest (like torch). y: the other dims. */
void tgk_arg_reduce(bool max, tgk_dtype t, int rank, const int64_t *dims, int axis,
                    const void *x, int64_t *y);

/* ---- data movement (movement.c): any type, by element size ----------------------- */
/* y[i] = x[sum i_k xs_k] over dims (rank up to 2*TGK_MAX_RANK), y through ys
 * (NULL: contiguous). The one loop behind permute, expand, slice, tile, pad,
 * concat. */
void tgk_copy_strided(size_t elsize, int rank, const int64_t *dims, const void *x,
                      const int64_t *xs, void *y, const int64_t *ys);
/* y = x.permute(perm); dims are x's. */
void tgk_permute(size_t elsize, int rank, const int64_t *dims, const int64_t *perm,
                 const void *x, void *y);
/* y[dims] = x[in] broadcast. */
void tgk_expand(size_t elsize, int rank, const int64_t *dims, int in_rank, const int64_t *in,
                const void *x, void *y);
/* y = x[..., start : start + len*step : step, ...] along axis; dims are x's. */
void tgk_slice(size_t elsize, int rank, const int64_t *dims, int axis, int64_t start,
               int64_t step, int64_t len, const void *x, void *y);
/* n inputs [outer, len[i], inner] joined along the middle axis; x[i] NULL:
 * already in its place in y (written there by its producer). */
void tgk_concat(size_t elsize, int64_t outer, int64_t inner, int n, const void *const *x,
                const int64_t *len, void *y);
/* y = x with before[k]/after[k] elements of *value added around axis k;
 * negative amounts crop. dims are x's. */
void tgk_pad(size_t elsize, int rank, const int64_t *dims, const int64_t *before,
             const int64_t *after, const void *value, const void *x, void *y);
/* y = x repeated reps[k] times along axis k. */
void tgk_tile(size_t elsize, int rank, const int64_t *dims, const int64_t *reps,
              const void *x, void *y);
/* Lower (tril) or upper (triu) triangle of each [rows, cols] matrix with
 * diagonal offset k, the rest zero. */
void tgk_tri(size_t elsize, bool upper, int64_t batch, int64_t rows, int64_t cols, int64_t k,
             const void *x, void *y);

/* ---- indexing (index.c): indices int64, negative ones count from the end ---------- */
/* x [outer, n, inner], idx [nidx] -> y [outer, nidx, inner] (embedding,
 * index_select). -1 with *bad = the offending index when one is out of range. */
int tgk_index_select(size_t elsize, int64_t outer, int64_t n, int64_t inner, const void *x,
                     int64_t nidx, const int64_t *idx, void *y, int64_t *bad);
/* torch.gather: y[i..] = x[i.. with i_axis = idx[i..]]; y and idx have dims
 * idims, x has xdims (same rank, idims[k] <= xdims[k] off the axis). */
int tgk_gather(size_t elsize, int rank, const int64_t *xdims, const int64_t *idims, int axis,
               const void *x, const int64_t *idx, void *y, int64_t *bad);
/* y = x [outer, n, inner] with y[o, idx[j], :] = src[o, j, :] for j < nidx
 * (a repeated index: the last j wins); y == x allowed. -1 with *bad as
 * tgk_index_select (y is then x with the valid rows written). */
int tgk_index_copy(size_t elsize, int64_t outer, int64_t n, int64_t inner, const void *x,
                   int64_t nidx, const int64_t *idx, const void *src, void *y, int64_t *bad);

/* ---- generators (gen.c) ------------------------------------------------------------ */
void tgk_full(tgk_dtype t, int64_t n, double value, void *y);
/* y[i] = start + i*step, exact for integer types. */
void tgk_arange(tgk_dtype t, int64_t n, int64_t start, int64_t step, void *y);

/* ---- quantization (quant.c), affine ------------------------------------------------ */
/* Channel c = (i / inner) % nch has scale[c], zero[c] (nch = 1: per tensor).
 * quantize (qt i8, u8): q = clamp(round_half_even(x / scale) + zero) to qt's
 * range; (qt f8e4m3, f8e5m2): q = x / scale rounded to qt.
 * dequantize (qt i8, u8, i32, f8e4m3, f8e5m2): x = (q - zero) * scale.
 * -1 for any other qt. */
int tgk_quantize_f32(int64_t n, const float *x, tgk_dtype qt, const float *scale,
                     const int32_t *zero, int64_t nch, int64_t inner, void *q);
int tgk_dequantize_f32(int64_t n, const void *q, tgk_dtype qt, const float *scale,
                       const int32_t *zero, int64_t nch, int64_t inner, float *x);

/* ---- kernels declared where they are defined ----------------------------------- */
/* The build collects each TGK_DECL definition under kernels/ (kernels.h) into
 * kernels_decl.h; tcompile pastes that text after this header, where this
 * include is left out. */
#include "backend/cpu/kernels/kernels_decl.h"

#endif
