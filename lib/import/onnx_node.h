/* Helpers for the ONNX op mappers (onnx_ops.c, onnx_ops_nn.c, onnx_ops_int.c): the node being
 * mapped, its inputs and outputs, and graph nodes and constants named after it. */
#ifndef TG_ONNX_NODE_H
#define TG_ONNX_NODE_H

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor.h"
#include "onnx_internal.h"

#define MAXV (TG_MAX_RANK * 2)

typedef struct onnx_op_map onnx_op_map;
typedef int (*map_fn)(onnx_ctx *c, const onnx_op_map *m);
struct onnx_op_map {
    const char *type;
    map_fn fn;
    tg_op op;           /* for the generic mappers */
};

/* The neural-network ops' table (onnx_ops_nn.c), searched after onnx_ops.c's. */
extern const onnx_op_map onnx_nn_ops[];
extern const int onnx_nn_nops;
/* The generic mappers (onnx_ops.c): m->op on input 0, or on inputs 0 and 1
 * with NumPy (or, before opset 7, legacy) broadcasting. */
int onnx_map_unary(onnx_ctx *c, const onnx_op_map *m);
int onnx_map_binary(onnx_ctx *c, const onnx_op_map *m);
/* The integer ops' table (onnx_ops_int.c), searched last. */
extern const onnx_op_map onnx_int_ops[];
extern const int onnx_int_nops;
/* The spatial and vision ops' table (onnx_ops_spatial.c). */
extern const onnx_op_map onnx_spatial_ops[];
extern const int onnx_spatial_nops;
/* The quantization ops' table (onnx_ops_quant.c). */
extern const onnx_op_map onnx_quant_ops[];
extern const int onnx_quant_nops;
/* ONNX Runtime's quantized ops (domain com.microsoft), the only ones of that domain mapped. */
extern const onnx_op_map onnx_quant_ms_ops[];
extern const int onnx_quant_ms_nops;
/* Conv's and the pools' kernel_shape (else w's spatial dims), strides, dilations
 * and pads [begin..., end...] (auto_pad resolved) for input x (onnx_ops.c);
 * outpad: ConvTranspose's output_padding, else NULL. */
int onnx_window_attrs(onnx_ctx *c, const tg_shape *x, const tg_shape *w, int64_t *k, int64_t *st, int64_t *dil,
                      const int64_t *outpad, int64_t *pads, int *nsp);
/* ONNX's float8 overflow rules for a cast of floating x to `to` (onnx_ops.c). */
int onnx_f8_range(onnx_ctx *c, int x, tg_dtype to, bool saturate);
/* Whether t is a float8 type (the four of ONNX that tgraph has): Cast's
 * saturate applies to them. */
bool onnx_is_f8(tg_dtype t);
/* The sequence-model ops' table (onnx_ops_seq.c). */
extern const onnx_op_map onnx_seq_ops[];
extern const int onnx_seq_nops;
/* The math ops' table (onnx_ops_math.c). */
extern const onnx_op_map onnx_math_ops[];
extern const int onnx_math_nops;
/* The ai.onnx.ml domain's tensor ops (onnx_ops_ml.c). */
extern const onnx_op_map onnx_ml_ops[];
extern const int onnx_ml_nops;
/* Ops whose output's shape depends on the data (onnx_ops_data.c). */
extern const onnx_op_map onnx_data_ops[];
extern const int onnx_data_nops;
/* ConvTranspose of x by w (bias b or -1) with a's six attributes (stride,
 * padding, dilation, groups, transposed, output_padding): pads [begin...,
 * end...] crop and output_padding op extends the full result (onnx_ops.c). */
int onnx_conv_transpose(onnx_ctx *c, int x, int w, int b, int nsp, const int64_t *st,
                        const int64_t *dil, const int64_t *pads, int64_t *op, tg_attr *a);
/* x's first n dims as the run has them, zeros past its rank, into *dims; its
 * element count into *count. 0 or -1. */
int onnx_dims_data(onnx_ctx *c, int x, int n, int *dims, int *count);
/* Control flow unrolled at import (onnx_ops_flow.c). */
extern const onnx_op_map onnx_flow_ops[];
extern const int onnx_flow_nops;

/* ---- node helpers ----------------------------------------------------------------- */

static inline const Onnx__NodeProto *N(onnx_ctx *c) { return c->node; }

/* Entry of input i; NULL (no error) when the input is absent or empty. */
static inline onnx_ent *in_opt(onnx_ctx *c, int i)
{
    const Onnx__NodeProto *n = N(c);
    if (i >= (int)n->n_input || !n->input[i] || !*n->input[i]) return NULL;
    return onnx_get(c, n->input[i]);
}

static inline onnx_ent *in_req(onnx_ctx *c, int i)
{
    onnx_ent *e = in_opt(c, i);
    if (!e && (i >= (int)N(c)->n_input || !*N(c)->input[i]))
        tg_err("input %d is missing", i);
    return e;
}

static inline int in_val(onnx_ctx *c, int i)
{
    onnx_ent *e = in_req(c, i);
    return e ? onnx_value(c, e) : -1;
}

static inline int in_val_opt(onnx_ctx *c, int i)
{
    if (i >= (int)N(c)->n_input || !*N(c)->input[i]) return -1;
    return in_val(c, i);
}

static inline int def_out(onnx_ctx *c, int k, int v)
{
    if (v < 0) return -1;
    if (k >= (int)N(c)->n_output || !*N(c)->output[k]) return 0;
    return onnx_def_value(c, N(c)->output[k], v);
}

static inline tg_shape shape_of(onnx_ctx *c, int v) { return c->g->values[v].shape; }
static inline tg_dtype dtype_of(onnx_ctx *c, int v) { return c->g->values[v].dtype; }

static inline int only_first_output(onnx_ctx *c)
{
    for (size_t k = 1; k < N(c)->n_output; k++)
        if (*N(c)->output[k]) return tg_err("output %zu ('%s') is not supported", k, N(c)->output[k]);
    return 0;
}

/* Integer list attribute, at most max. *n = -1 when absent. */
static inline int attr_ints(onnx_ctx *c, const char *name, int max, int64_t *v, int *n)
{
    const Onnx__AttributeProto *a = onnx_attr(N(c), name);
    *n = -1;
    if (!a) return 0;
    if (a->n_ints > (size_t)max) return tg_err("attribute %s has too many values", name);
    for (size_t i = 0; i < a->n_ints; i++) v[i] = a->ints[i];
    *n = (int)a->n_ints;
    return 0;
}

static inline int unary_on(onnx_ctx *c, tg_op op, const char *sfx, int x, int nattr, const tg_attr *a)
{
    int in[1] = {x};
    return onnx_add(c, op, sfx, 1, in, nattr, a);
}

static inline int binary_on(onnx_ctx *c, tg_op op, const char *sfx, int a, int b)
{
    int in[2] = {a, b};
    return onnx_add(c, op, sfx, 2, in, 0, NULL);
}

static inline int reshape_to(onnx_ctx *c, int x, int n, const tg_dim *dims, const char *sfx)
{
    tg_attr a = tg_attr_dims("shape", n, dims);
    return x < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, sfx, x, 1, &a);
}

static inline int permute_to(onnx_ctx *c, int x, int n, const int64_t *perm, const char *sfx)
{
    tg_attr a = tg_attr_ints("perm", n, perm);
    return x < 0 ? -1 : unary_on(c, TG_OP_PERMUTE, sfx, x, 1, &a);
}

/* The first n dims of s as constants into d; which one is not, or -1. */
static inline int const_dims(tg_shape s, int n, int64_t *d)
{
    for (int j = 0; j < n; j++)
        if (!tg_dim_is_const(s.d[j], &d[j])) return j;
    return -1;
}

/* A graph constant named after the node (sfx, numbered when taken); takes p. */
static inline int const_named(onnx_ctx *c, const char *sfx, tg_dtype dt, int rank, const int64_t *dims, void *p)
{
    char name[300];
    snprintf(name, sizeof name, "%s/%s", N(c)->name && *N(c)->name ? N(c)->name : N(c)->output[0], sfx);
    for (int k = 1; tg_graph_find_value(c->g, name) >= 0; k++)
        snprintf(name, sizeof name, "%s/%s_%d", N(c)->name && *N(c)->name ? N(c)->name : N(c)->output[0], sfx, k);
    tg_shape s = {.rank = rank};
    for (int i = 0; i < rank; i++) s.d[i] = tg_dim_const(dims[i]);
    return tg_graph_add_const(c->g, name, dt, &s, p, (size_t)tg_tensor_numel(rank, dims) * tg_dtype_size(dt));
}

static inline int scalar_const(onnx_ctx *c, const char *sfx, tg_dtype dt, double v)
{
    void *p = calloc(1, 8);
    if (!p) return tg_err("out of memory");
    tg_store_f64(dt, p, 0, v);
    return const_named(c, sfx, dt, 0, NULL, p);
}

static inline int axis_norm(int64_t axis, int rank, int *out)
{
    if (axis < -rank || axis >= rank) return tg_err("axis %lld out of range for rank %d", (long long)axis, rank);
    *out = (int)(axis < 0 ? axis + rank : axis);
    return 0;
}

/* A known int64 vector or scalar: what shape arithmetic works on. */
static inline bool is_shape_vec(const onnx_ent *e)
{
    return e->kind == ONNX_ENT_SYMS ||
           (e->kind == ONNX_ENT_CONST && e->dtype == TG_I64 && e->rank <= 1 &&
            e->nbytes <= MAXV * sizeof(int64_t));
}

/* Define output 0 as the shape vector v of rank 0 or 1. */
static inline int def_shape_vec(onnx_ctx *c, int rank, int n, const tg_dim *v)
{
    return onnx_def_syms(c, N(c)->output[0], rank, n, v);
}

static inline int where_on(onnx_ctx *c, const char *sfx, int cond, int a, int b)
{
    int in[3] = {cond, a, b};
    return cond < 0 || a < 0 || b < 0 ? -1 : onnx_add(c, TG_OP_WHERE, sfx, 3, in, 0, NULL);
}

static inline int reshape_as(onnx_ctx *c, int x, int n, const tg_dim *d, const char *sfx)
{
    tg_attr a = tg_attr_dims("shape", n, d);
    return x < 0 ? -1 : unary_on(c, TG_OP_RESHAPE, sfx, x, 1, &a);
}

/* x[..., start:end, ...] on axis, constant bounds. */
static inline int slice_range(onnx_ctx *c, int x, int axis, int64_t start, int64_t end, const char *sfx)
{
    tg_dim s = tg_dim_const(start), e = tg_dim_const(end);
    tg_attr a[3] = {tg_attr_int("axis", axis), tg_attr_dims("start", 1, &s), tg_attr_dims("end", 1, &e)};
    return x < 0 ? -1 : unary_on(c, TG_OP_SLICE, sfx, x, 3, a);
}

/* x as dtype dt (x itself when it has it). */
static inline int cast_as(onnx_ctx *c, int x, tg_dtype dt, const char *sfx)
{
    tg_attr a = tg_attr_dtype("dtype", dt);
    return x < 0 || dtype_of(c, x) == dt ? x : unary_on(c, TG_OP_CAST, sfx, x, 1, &a);
}

/* A data symbol for a dim of at most hi. */
static inline int data_dim(onnx_ctx *c, int64_t hi, tg_dim *d)
{
    int s = tg_graph_add_data_symbol(c->g, 0, hi > 0 ? hi : 1);
    if (s < 0) return tg_err("its output's shape is only known at run time, and %s", tg_errmsg());
    *d = tg_dim_sym(s);
    return 0;
}

#endif
