/* Each elementwise op on one element: the definition the CPU's generic
 * paths (elementwise.c) and the CUDA kernels (lib/backend/cuda) share, so both
 * devices compute the same function. Floats in double, integers in int64
 * (wrapping through uint64, like torch). */
#ifndef TGK_SCALAR_OPS_H
#define TGK_SCALAR_OPS_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>

#include "tensor_ops.h"

#ifdef __CUDACC__
#define TGK_SCALAR static __host__ __device__ __forceinline__
#else
#define TGK_SCALAR static inline
#endif

/* The double form: the generic path and the readable definition of each op. */
TGK_SCALAR double tgk_unary_f64(tgk_unary_op op, double v, const tgk_unary_param *p)
{
    switch (op) {
    case TGK_NEG: return -v;
    case TGK_ABS: return fabs(v);
    case TGK_EXP: return exp(v);
    case TGK_LOG: return log(v);
    case TGK_SQRT: return sqrt(v);
    case TGK_RSQRT: return 1.0 / sqrt(v);
    case TGK_RECIPROCAL: return 1.0 / v;
    case TGK_SIN: return sin(v);
    case TGK_COS: return cos(v);
    case TGK_TANH: return tanh(v);
    case TGK_TAN: return tan(v);
    case TGK_ASIN: return asin(v);
    case TGK_ACOS: return acos(v);
    case TGK_ATAN: return atan(v);
    case TGK_SINH: return sinh(v);
    case TGK_COSH: return cosh(v);
    case TGK_ASINH: return asinh(v);
    case TGK_ACOSH: return acosh(v);
    case TGK_ATANH: return atanh(v);
    case TGK_ERF: return erf(v);
    case TGK_SIGMOID: return 1.0 / (1.0 + exp(-v));
    case TGK_RELU: return v < 0 ? 0 : v;
    case TGK_GELU: return 0.5 * v * (1.0 + erf(v * M_SQRT1_2));
    case TGK_GELU_TANH:
        return 0.5 * v * (1.0 + tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));
    case TGK_SILU: return v / (1.0 + exp(-v));
    case TGK_HARDSWISH: return v * fmin(fmax(v + 3.0, 0.0), 6.0) / 6.0;
    case TGK_HARDSIGMOID: return fmin(fmax(v / 6.0 + 0.5, 0.0), 1.0);
    case TGK_LEAKY_RELU: return v < 0 ? p->alpha * v : v;
    case TGK_ELU: return v < 0 ? p->alpha * expm1(v) : v;
    case TGK_FLOOR: return floor(v);
    case TGK_CEIL: return ceil(v);
    case TGK_ROUND: return rint(v);
    case TGK_CLAMP: return (v < p->lo ? p->lo : v) > p->hi ? p->hi : (v < p->lo ? p->lo : v);
    case TGK_LOGICAL_NOT: return v == 0;
    default: return NAN;
    }
}

TGK_SCALAR int64_t tgk_unary_i64(tgk_unary_op op, int64_t v, const tgk_unary_param *p)
{
    switch (op) {
    case TGK_NEG: return (int64_t)(0 - (uint64_t)v);
    case TGK_ABS: return v < 0 ? (int64_t)(0 - (uint64_t)v) : v;
    case TGK_RELU: return v < 0 ? 0 : v;
    case TGK_CLAMP:
        v = (double)v < p->lo ? (int64_t)ceil(p->lo) : v;  /* then max: min > max gives max */
        return (double)v > p->hi ? (int64_t)floor(p->hi) : v;
    case TGK_LOGICAL_NOT: return v == 0;
    case TGK_BITWISE_NOT: return ~v;            /* the store truncates to the width */
    default: return v;                          /* floor, ceil, round */
    }
}

/* u64 (which arrives as its bit pattern, elem.h) where unsigned differs from
 * int64: abs and relu are the value, clamp compares it unsigned. u8, u16 and
 * u32 arrive zero-extended, where int64 is already exact. */
TGK_SCALAR int64_t tgk_unary_u64(tgk_unary_op op, uint64_t v, const tgk_unary_param *p)
{
    switch (op) {
    case TGK_ABS: case TGK_RELU: return (int64_t)v;
    case TGK_CLAMP:
        if ((double)v < p->lo)
            v = (uint64_t)ceil(p->lo);
        if ((double)v > p->hi)
            v = p->hi < 0 ? 0 : (uint64_t)floor(p->hi);
        return (int64_t)v;
    default: return tgk_unary_i64(op, (int64_t)v, p);
    }
}

TGK_SCALAR double tgk_binary_f64(tgk_binary_op op, double u, double v)
{
    switch (op) {
    case TGK_ADD: return u + v;
    case TGK_SUB: return u - v;
    case TGK_MUL: return u * v;
    case TGK_DIV: return u / v;
    case TGK_POW: return pow(u, v);
    case TGK_REMAINDER: { double r = fmod(u, v); return r != 0 && (r < 0) != (v < 0) ? r + v : r; }
    case TGK_FMOD: return fmod(u, v);
    case TGK_MAXIMUM: return u != u ? u : v != v ? v : u > v ? u : v;
    case TGK_MINIMUM: return u != u ? u : v != v ? v : u < v ? u : v;
    case TGK_EQ: return u == v;
    case TGK_NE: return u != v;
    case TGK_LT: return u < v;
    case TGK_LE: return u <= v;
    case TGK_GT: return u > v;
    case TGK_GE: return u >= v;
    case TGK_LOGICAL_AND: return u != 0 && v != 0;
    case TGK_LOGICAL_OR: return u != 0 || v != 0;
    default: return NAN;
    }
}

TGK_SCALAR int64_t tgk_ipow(int64_t b, int64_t e)
{
    if (e < 0)
        return b == 1 ? 1 : b == -1 ? (e % 2 ? -1 : 1) : 0;
    uint64_t r = 1, ub = (uint64_t)b;
    for (; e; e >>= 1, ub *= ub)
        if (e & 1)
            r *= ub;
    return (int64_t)r;
}

/* Integer arithmetic wraps (through uint64) like torch; *bad on division by zero. */
TGK_SCALAR int64_t tgk_binary_i64(tgk_binary_op op, int64_t u, int64_t v, bool *bad)
{
    switch (op) {
    case TGK_ADD: return (int64_t)((uint64_t)u + (uint64_t)v);
    case TGK_SUB: return (int64_t)((uint64_t)u - (uint64_t)v);
    case TGK_MUL: return (int64_t)((uint64_t)u * (uint64_t)v);
    case TGK_DIV:
        if (v == 0) {
            *bad = true;
            return 0;
        }
        return v == -1 ? (int64_t)(0 - (uint64_t)u) : u / v;
    case TGK_POW: return tgk_ipow(u, v);
    case TGK_REMAINDER:
    case TGK_FMOD: {
        if (v == 0) {
            *bad = true;
            return 0;
        }
        int64_t r = v == -1 ? 0 : u % v;       /* INT64_MIN % -1 traps */
        return op == TGK_REMAINDER && r != 0 && (r < 0) != (v < 0) ? r + v : r;
    }
    case TGK_MAXIMUM: return u > v ? u : v;
    case TGK_MINIMUM: return u < v ? u : v;
    case TGK_BITWISE_AND: return u & v;
    case TGK_BITWISE_OR: return u | v;
    case TGK_BITWISE_XOR: return u ^ v;
    /* Operands arrive widened to int64 (unsigned ones zero-extended), and the
     * store truncates to the width: a shift within int64 is the shift within
     * the width, and a count past it shifts every bit out (ONNX BitShift). */
    case TGK_SHL: return v < 0 || v > 63 ? 0 : (int64_t)((uint64_t)u << v);
    case TGK_SHR: return v < 0 || v > 63 ? (u < 0 ? -1 : 0) : u >> v;
    case TGK_EQ: return u == v;
    case TGK_NE: return u != v;
    case TGK_LT: return u < v;
    case TGK_LE: return u <= v;
    case TGK_GT: return u > v;
    case TGK_GE: return u >= v;
    case TGK_LOGICAL_AND: return u != 0 && v != 0;
    case TGK_LOGICAL_OR: return u != 0 || v != 0;
    default: return 0;
    }
}

/* u64 where unsigned differs from int64's wrapping arithmetic: division,
 * remainder, order, shr (logical), pow's exponent. */
TGK_SCALAR int64_t tgk_binary_u64(tgk_binary_op op, uint64_t u, uint64_t v, bool *bad)
{
    switch (op) {
    case TGK_DIV: case TGK_REMAINDER: case TGK_FMOD:
        if (v == 0) {
            *bad = true;
            return 0;
        }
        return (int64_t)(op == TGK_DIV ? u / v : u % v);
    case TGK_POW: {
        uint64_t r = 1;
        for (; v; v >>= 1, u *= u)
            if (v & 1)
                r *= u;
        return (int64_t)r;
    }
    case TGK_MAXIMUM: return (int64_t)(u > v ? u : v);
    case TGK_MINIMUM: return (int64_t)(u < v ? u : v);
    case TGK_SHR: return v > 63 ? 0 : (int64_t)(u >> v);
    case TGK_SHL: return v > 63 ? 0 : (int64_t)(u << v);
    case TGK_LT: return u < v;
    case TGK_LE: return u <= v;
    case TGK_GT: return u > v;
    case TGK_GE: return u >= v;
    default: return tgk_binary_i64(op, (int64_t)u, (int64_t)v, bad);
    }
}

#endif
