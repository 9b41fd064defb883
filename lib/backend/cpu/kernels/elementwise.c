/* Elementwise kernels: unary maps, broadcasting binary ops, where.
 * float32 has its own loops (vectorizable where the strides allow); the
 * other float types compute in double, integers and bool in int64 (u64 in
 * uint64 where that differs: scalar_ops.h). */
#include <math.h>
#include <string.h>

#include "iter.h"
#include "kernels.h"
#include "scalar_ops.h"
#include "tensor_ops.h"

#define GRAIN (1 << 14)

/* ---- unary ------------------------------------------------------------------ */

static bool unary_float_only(tgk_unary_op op)
{
    switch (op) {
    case TGK_NEG: case TGK_ABS: case TGK_RELU: case TGK_FLOOR: case TGK_CEIL:
    case TGK_ROUND: case TGK_CLAMP: case TGK_LOGICAL_NOT: case TGK_BITWISE_NOT:
        return false;
    default:
        return true;
    }
}

/* The double form: the generic path and the readable definition of each op. */
typedef struct {
    tgk_unary_op op;
    tgk_dtype t;
    const void *x;
    void *y;
    const tgk_unary_param *p;
} unary_ctx;

#define MAP_F32(expr) \
    for (int64_t i = 0; i < n; i++) { float v = x[i]; y[i] = (expr); } \
    break

static void unary_f32(tgk_unary_op op, int64_t n, const float *x, float *y,
                      const tgk_unary_param *p)
{
    const float alpha = (float)p->alpha, lo = (float)p->lo, hi = (float)p->hi;
    switch (op) {
    case TGK_NEG: MAP_F32(-v);
    case TGK_ABS: MAP_F32(fabsf(v));
    case TGK_EXP: tgk_vec_exp_f32(n, x, y); break;
    case TGK_LOG: MAP_F32(logf(v));
    case TGK_SQRT: MAP_F32(sqrtf(v));
    case TGK_RSQRT: MAP_F32(1.0f / sqrtf(v));
    case TGK_RECIPROCAL: MAP_F32(1.0f / v);
    case TGK_SIN: MAP_F32(sinf(v));
    case TGK_COS: MAP_F32(cosf(v));
    case TGK_TANH: tgk_vec_tanh_f32(n, x, y); break;
    case TGK_TAN: MAP_F32(tanf(v));
    case TGK_ASIN: MAP_F32(asinf(v));
    case TGK_ACOS: MAP_F32(acosf(v));
    case TGK_ATAN: MAP_F32(atanf(v));
    case TGK_SINH: MAP_F32(sinhf(v));
    case TGK_COSH: MAP_F32(coshf(v));
    case TGK_ASINH: MAP_F32(asinhf(v));
    case TGK_ACOSH: MAP_F32(acoshf(v));
    case TGK_ATANH: MAP_F32(atanhf(v));
    case TGK_ERF: tgk_vec_erf_f32(n, x, y); break;
    case TGK_SIGMOID: tgk_vec_sigmoid_f32(n, x, y); break;
    case TGK_RELU: MAP_F32(v < 0 ? 0.0f : v);
    case TGK_GELU: tgk_vec_gelu_f32(n, x, y); break;
    case TGK_GELU_TANH: tgk_vec_gelu_tanh_f32(n, x, y); break;
    case TGK_SILU: tgk_vec_silu_f32(n, x, y); break;
    case TGK_HARDSWISH: MAP_F32(v * fminf(fmaxf(v + 3.0f, 0.0f), 6.0f) / 6.0f);
    case TGK_HARDSIGMOID: MAP_F32(fminf(fmaxf(v / 6.0f + 0.5f, 0.0f), 1.0f));
    case TGK_LEAKY_RELU: MAP_F32(v < 0 ? alpha * v : v);
    case TGK_ELU: MAP_F32(v < 0 ? alpha * expm1f(v) : v);
    case TGK_FLOOR: MAP_F32(floorf(v));
    case TGK_CEIL: MAP_F32(ceilf(v));
    case TGK_ROUND: MAP_F32(nearbyintf(v));
    case TGK_CLAMP: MAP_F32((v < lo ? lo : v) > hi ? hi : (v < lo ? lo : v));
    default: MAP_F32((float)tgk_unary_f64(op, v, p));     /* no float32 form yet: the double one */
    }
}

static void unary_task(void *vctx, int64_t b, int64_t e)
{
    const unary_ctx *c = vctx;
    size_t es = tgk_dtype_size(c->t);
    if (c->op == TGK_LOGICAL_NOT) {
        uint8_t *y = c->y;
        for (int64_t i = b; i < e; i++)
            y[i] = tgk_load_f64(c->t, c->x, i) == 0;
    } else if (c->t == TGK_F32) {
        unary_f32(c->op, e - b, (const float *)c->x + b, (float *)c->y + b, c->p);
    } else if (tgk_dtype_is_float(c->t)) {
        for (int64_t i = b; i < e; i++)
            tgk_store_f64(c->t, c->y, i, tgk_unary_f64(c->op, tgk_load_f64(c->t, c->x, i), c->p));
    } else if (c->op == TGK_FLOOR || c->op == TGK_CEIL || c->op == TGK_ROUND) {
        memmove((char *)c->y + b * es, (const char *)c->x + b * es, (size_t)(e - b) * es);
    } else if (c->t == TGK_U64) {
        const uint64_t *x = c->x;
        for (int64_t i = b; i < e; i++)
            ((int64_t *)c->y)[i] = tgk_unary_u64(c->op, x[i], c->p);
    } else {
        for (int64_t i = b; i < e; i++)
            tgk_store_i64(c->t, c->y, i, tgk_unary_i64(c->op, tgk_load_i64(c->t, c->x, i), c->p));
    }
}

int tgk_unary(tgk_unary_op op, tgk_dtype t, int64_t n, const void *x, void *y,
              const tgk_unary_param *p)
{
    static const tgk_unary_param none = { 0.01, -INFINITY, INFINITY };
    if (op < 0 || op >= TGK_UNARY_COUNT || tgk_dtype_size(t) == 0)
        return -1;
    if (unary_float_only(op) && !tgk_dtype_is_float(t))
        return -1;
    if (op == TGK_BITWISE_NOT && (tgk_dtype_is_float(t) || t == TGK_BOOL))
        return -1;
    if (t == TGK_BOOL && op != TGK_LOGICAL_NOT && op != TGK_CLAMP && op != TGK_RELU &&
        op != TGK_ABS && op != TGK_FLOOR && op != TGK_CEIL && op != TGK_ROUND)
        return -1;
    unary_ctx c = { op, t, x, y, p ? p : &none };
    tgk_parallel_for(n, GRAIN, unary_task, &c);
    return 0;
}

/* ---- binary ----------------------------------------------------------------- */

void tgk_broadcast_strides(int rank, const int64_t *dims, int in_rank, const int64_t *in,
                           int64_t *strides)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        int ik = k - (rank - in_rank);
        if (ik < 0 || in[ik] == 1 || dims[k] == 0) {
            strides[k] = 0;
        } else {
            strides[k] = s;
        }
        if (ik >= 0)
            s *= in[ik];
    }
}

static bool binary_int_only(tgk_binary_op op)
{
    return op == TGK_BITWISE_AND || op == TGK_BITWISE_OR || op == TGK_BITWISE_XOR ||
           op == TGK_SHL || op == TGK_SHR;
}

static bool is_compare(tgk_binary_op op)
{
    return op >= TGK_EQ;
}

typedef struct {
    tgk_binary_op op;
    tgk_dtype t;
    const void *a, *b;
    void *y;
    bool bad;
} binary_ctx;

/* One run of float32: operand strides are 0 (broadcast), 1 or anything. */
#define BIN_F32(OT, expr) do { \
        OT *Y = (OT *)c->y + off[0]; \
        if (sa == 1 && sb == 1) \
            for (int64_t i = 0; i < n; i++) { float u = A[i], v = B[i]; Y[i] = (expr); } \
        else if (sa == 1 && sb == 0) \
            for (int64_t i = 0; i < n; i++) { float u = A[i], v = B[0]; Y[i] = (expr); } \
        else if (sa == 0 && sb == 1) \
            for (int64_t i = 0; i < n; i++) { float u = A[0], v = B[i]; Y[i] = (expr); } \
        else \
            for (int64_t i = 0; i < n; i++) { float u = A[i * sa], v = B[i * sb]; Y[i] = (expr); } \
    } while (0)

/* Returns false for an op with no float32 form: binary_run then takes the double one. */
static bool binary_run_f32(binary_ctx *c, const int64_t *off, int64_t n, int64_t sa, int64_t sb)
{
    const float *A = (const float *)c->a + off[1], *B = (const float *)c->b + off[2];
    switch (c->op) {
    case TGK_ADD: BIN_F32(float, u + v); break;
    case TGK_SUB: BIN_F32(float, u - v); break;
    case TGK_MUL: BIN_F32(float, u * v); break;
    case TGK_DIV: BIN_F32(float, u / v); break;
    case TGK_POW: BIN_F32(float, powf(u, v)); break;
    case TGK_REMAINDER: BIN_F32(float, (float)tgk_floor_mod(u, v)); break;
    case TGK_FMOD: BIN_F32(float, fmodf(u, v)); break;
    case TGK_MAXIMUM: BIN_F32(float, u != u ? u : v != v ? v : u > v ? u : v); break;
    case TGK_MINIMUM: BIN_F32(float, u != u ? u : v != v ? v : u < v ? u : v); break;
    case TGK_EQ: BIN_F32(uint8_t, u == v); break;
    case TGK_NE: BIN_F32(uint8_t, u != v); break;
    case TGK_LT: BIN_F32(uint8_t, u < v); break;
    case TGK_LE: BIN_F32(uint8_t, u <= v); break;
    case TGK_GT: BIN_F32(uint8_t, u > v); break;
    case TGK_GE: BIN_F32(uint8_t, u >= v); break;
    case TGK_LOGICAL_AND: BIN_F32(uint8_t, u != 0 && v != 0); break;
    case TGK_LOGICAL_OR: BIN_F32(uint8_t, u != 0 || v != 0); break;
    default: return false;
    }
    return true;
}

static void binary_run(void *vctx, const int64_t *off, int64_t n, const int64_t *inner)
{
    binary_ctx *c = vctx;
    int64_t sa = inner[1], sb = inner[2];
    if (c->t == TGK_F32 && binary_run_f32(c, off, n, sa, sb)) return;
    tgk_dtype ot = is_compare(c->op) ? TGK_BOOL : c->t;
    void *y = (char *)c->y + off[0] * (int64_t)tgk_dtype_size(ot);
    if (tgk_dtype_is_float(c->t)) {
        for (int64_t i = 0; i < n; i++)
            tgk_store_f64(ot, y, i, tgk_binary_f64(c->op, tgk_load_f64(c->t, c->a, off[1] + i * sa),
                                               tgk_load_f64(c->t, c->b, off[2] + i * sb)));
        return;
    }
    bool bad = false;
    if (c->t == TGK_U64) {
        const uint64_t *A = c->a, *B = c->b;
        for (int64_t i = 0; i < n; i++)
            tgk_store_i64(ot, y, i, tgk_binary_u64(c->op, A[off[1] + i * sa], B[off[2] + i * sb], &bad));
    } else {
        for (int64_t i = 0; i < n; i++)
            tgk_store_i64(ot, y, i, tgk_binary_i64(c->op, tgk_load_i64(c->t, c->a, off[1] + i * sa),
                                                   tgk_load_i64(c->t, c->b, off[2] + i * sb), &bad));
    }
    if (bad)
        __atomic_store_n(&c->bad, true, __ATOMIC_RELAXED);
}

int tgk_binary(tgk_binary_op op, tgk_dtype t, int rank, const int64_t *dims,
               const void *a, const int64_t *sa, const void *b, const int64_t *sb, void *y)
{
    if (op < 0 || op >= TGK_BINARY_COUNT || tgk_dtype_size(t) == 0 || rank > TGK_MAX_RANK)
        return -1;
    if (binary_int_only(op) && (tgk_dtype_is_float(t) || t == TGK_BOOL))
        return -1;
    if (t == TGK_BOOL && op != TGK_EQ && op != TGK_NE && op != TGK_LOGICAL_AND &&
        op != TGK_LOGICAL_OR && op != TGK_MAXIMUM && op != TGK_MINIMUM)
        return -1;
    const int64_t *st[3] = { NULL, sa, sb };
    tgk_iter it;
    tgk_iter_init(&it, rank, dims, 3, st);
    binary_ctx c = { op, t, a, b, y, false };
    tgk_iter_parallel(&it, GRAIN, binary_run, &c);
    return c.bad ? -1 : 0;
}

/* ---- where --------------------------------------------------------------------- */

typedef struct {
    size_t es;
    const uint8_t *c;
    const char *a, *b;
    char *y;
} where_ctx;

#define WHERE_LOOP(T) do { \
        const T *A = (const T *)w->a + off[2], *B = (const T *)w->b + off[3]; \
        T *Y = (T *)w->y + off[0]; \
        for (int64_t i = 0; i < n; i++) Y[i] = C[i * sc] ? A[i * sa] : B[i * sb]; \
    } while (0)

static void where_run(void *vctx, const int64_t *off, int64_t n, const int64_t *inner)
{
    const where_ctx *w = vctx;
    const uint8_t *C = w->c + off[1];
    int64_t sc = inner[1], sa = inner[2], sb = inner[3];
    switch (w->es) {
    case 1: WHERE_LOOP(uint8_t); break;
    case 2: WHERE_LOOP(uint16_t); break;
    case 4: WHERE_LOOP(uint32_t); break;
    case 8: WHERE_LOOP(uint64_t); break;
    default:
        for (int64_t i = 0; i < n; i++)
            memcpy(w->y + (off[0] + i) * w->es,
                   C[i * sc] ? w->a + (off[2] + i * sa) * w->es : w->b + (off[3] + i * sb) * w->es,
                   w->es);
    }
}

void tgk_where(size_t elsize, int rank, const int64_t *dims, const uint8_t *c,
               const int64_t *sc, const void *a, const int64_t *sa, const void *b,
               const int64_t *sb, void *y)
{
    const int64_t *st[4] = { NULL, sc, sa, sb };
    tgk_iter it;
    tgk_iter_init(&it, rank, dims, 4, st);
    where_ctx w = { elsize, c, a, b, y };
    tgk_iter_parallel(&it, GRAIN, where_run, &w);
}
