/* Helpers shared by the shape and dtype inference functions of lib/ops/.
 *
 * Every helper that can fail sets tg_err with a message that names the input
 * (by position) or the attribute, and returns -1 (or NULL), so an infer
 * function is a sequence of `if (helper(...)) return -1;`. The node name is
 * added by tg_graph_add_node. */
#ifndef TG_OPS_INFER_H
#define TG_OPS_INFER_H

#include <stdbool.h>
#include <stdint.h>

#include "../error.h"
#include "../graph.h"
#include "shape_util.h"

/* Room for a formatted shape or dim in an error message. */
#define TG_INFER_STR 192

static inline tg_node *tg_infer_node(tg_graph *g, int node) { return &g->nodes[node]; }

/* Input i: NULL with tg_err when it is omitted or absent. */
const tg_value *tg_infer_in(tg_graph *g, int node, int i);
/* Optional input i: NULL (no error) when omitted. */
const tg_value *tg_infer_opt(tg_graph *g, int node, int i);
/* Set dtype and shape of the node's first output. 0, or -1 when it has none. */
int tg_infer_set(tg_graph *g, int node, tg_dtype dt, const tg_shape *s);

/* Input checks; i is the input's position, used in the message. */
int tg_check_dtype(const tg_value *v, int i, tg_dtype want);
int tg_check_float(const tg_value *v, int i);          /* f32 f64 f16 bf16 f8 */
int tg_check_numeric(const tg_value *v, int i);        /* anything but bool */
int tg_check_int(const tg_value *v, int i);            /* signed or unsigned integer */
int tg_check_same_dtype(const tg_value *v, int i, const tg_value *ref, int iref);
int tg_check_index(const tg_value *v, int i);          /* i64 or i32 */
int tg_check_rank(const tg_value *v, int i, int min, int max);
/* Dims of two values equal (tg_dim_eq); what names them in the message. */
int tg_check_dim_eq(const tg_graph *g, tg_dim a, tg_dim b, const char *what);
/* shape of v equal to want exactly. */
int tg_check_shape(const tg_graph *g, const tg_value *v, int i, const tg_shape *want);

/* Axis in [-rank, rank) to [0, rank); "axis 3 out of range for rank 2". */
int tg_axis_norm(int64_t axis, int rank, int *out);

/* Attributes. Each checks the attribute's kind; absent ones take dflt, or are an
 * error for the _req forms. */
int tg_attr_get_int(const tg_node *n, const char *name, int64_t dflt, int64_t *out);
int tg_attr_req_int(const tg_node *n, const char *name, int64_t *out);
int tg_attr_get_flag(const tg_node *n, const char *name, int dflt, int *out); /* 0 or 1 */
int tg_attr_get_float(const tg_node *n, const char *name, double dflt, double *out);
int tg_attr_get_string(const tg_node *n, const char *name, const char *dflt,
                       const char **out);
int tg_attr_get_dtype(const tg_node *n, const char *name, tg_dtype dflt, tg_dtype *out);
/* An ints attribute; *count set, -1 when absent (then *v is NULL). */
int tg_attr_get_ints(const tg_node *n, const char *name, const int64_t **v, int *count);
/* Attribute values that take part in size arithmetic stay within +-INT32_MAX, so
 * that sums of their products cannot overflow int64. */
int tg_check_small(int64_t v, const char *name);
/* An ints attribute with one value per spatial axis: absent gives dflt for each,
 * one value is repeated, otherwise exactly count values; each tg_check_small. */
int tg_attr_per_axis(const tg_node *n, const char *name, int count, int64_t dflt,
                     int64_t *out);
/* A list of dims from a DIMS or INTS attribute, at most max; required. */
int tg_attr_dim_list(const tg_node *n, const char *name, int max, tg_dim *out, int *count);
/* One dim from an INT, or a DIMS/INTS attribute of one element; absent gives *dflt
 * (an error when dflt is NULL). */
int tg_attr_get_dim(const tg_node *n, const char *name, const tg_dim *dflt, tg_dim *out);

/* floor(a / b) for b > 0: exact when every non-constant term of a is divisible by b
 * (the constant part may leave a remainder), else -1 with tg_err. */
int tg_dim_floordiv(tg_dim a, int64_t b, tg_dim *out);
/* ceil(a / b) under the same condition. */
int tg_dim_ceildiv(tg_dim a, int64_t b, tg_dim *out);
/* a*k + c, for the small affine formulas of conv and pool sizes. */
int tg_dim_affine(tg_dim a, int64_t k, int64_t c, tg_dim *out);
/* -1 with tg_err when d is a negative constant (what names it); symbolic dims pass. */
int tg_dim_check_nonneg(tg_dim d, const char *what);

/* index_copy's reduce attribute: 0 none (default), 1 add, 2 mul, 3 max, 4 min;
 * -1 with tg_err. */
int tg_index_reduce_mode(const tg_node *n);
/* pad's mode attribute: 0 constant (default), 1 edge, 2 reflect, 3 wrap; -1 with tg_err. */
int tg_pad_mode(const tg_node *n);

/* Text forms for messages; return buf. */
const char *tg_infer_shape_str(const tg_graph *g, const tg_shape *s, char *buf);
const char *tg_infer_dim_str(const tg_graph *g, tg_dim d, char *buf);

/* Data op n's output as inference makes it (ops/data.c): i64 of shape *s, whose
 * dim *k is the length the data set, at most *most. -1 (tg_err) on bad inputs
 * or attributes. */
int tg_data_shape(const tg_graph *g, const tg_node *n, tg_shape *s, int *k, int64_t *most);
/* A data op's bound (ops/data.c): the most its data symbol can be, as a dim
 * over the graph's symbols, for code that sizes its buffers at run time. It
 * is at most the symbol's max. -1 (tg_err) when it does not fit a dim. */
int tg_data_bound(const tg_graph *g, const tg_node *n, tg_dim *out);

#endif
