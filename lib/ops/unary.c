/* Elementwise unary ops: the output has the input's shape, and its dtype except
 * for cast. */
#include "infer.h"

#include <math.h>
#include <string.h>

/* The few unary ops with attributes check their kinds and values here. */
static int check_attrs(const tg_node *n)
{
    double f;
    const char *s;
    switch (n->op) {
    case TG_OP_GELU:
        if (tg_attr_get_string(n, "approximate", "none", &s))
            return -1;
        if (strcmp(s, "none") && strcmp(s, "tanh"))
            return tg_err("attribute 'approximate' is \"%s\", expected \"none\" or \"tanh\"", s);
        return 0;
    case TG_OP_LEAKY_RELU:
    case TG_OP_ELU:
        return tg_attr_get_float(n, "alpha", 0, &f);
    case TG_OP_CLAMP: {
        double lo, hi;
        if (tg_attr_get_float(n, "min", -HUGE_VAL, &lo) ||
            tg_attr_get_float(n, "max", HUGE_VAL, &hi))
            return -1;
        return 0;
    }
    default:
        return 0;
    }
}

/* Output = input 0 after the dtype check `check` (NULL: any dtype). */
static int same_as_input(tg_graph *g, int node, int (*check)(const tg_value *, int))
{
    const tg_value *x = tg_infer_in(g, node, 0);
    if (!x || (check && check(x, 0)) || check_attrs(tg_infer_node(g, node)))
        return -1;
    return tg_infer_set(g, node, x->dtype, &x->shape);
}

int tg_infer_unary(tg_graph *g, int node)
{
    return same_as_input(g, node, tg_check_numeric);
}

int tg_infer_unary_float(tg_graph *g, int node)
{
    return same_as_input(g, node, tg_check_float);
}

int tg_infer_identity(tg_graph *g, int node)
{
    return same_as_input(g, node, NULL);
}

static int check_bool(const tg_value *v, int i)
{
    return tg_check_dtype(v, i, TG_BOOL);
}

int tg_infer_unary_bool(tg_graph *g, int node)
{
    return same_as_input(g, node, check_bool);
}

int tg_infer_unary_int(tg_graph *g, int node)
{
    return same_as_input(g, node, tg_check_int);
}

/* cast's and bitcast's required attribute 'dtype', the output's dtype. */
static int to_dtype(const tg_node *n, tg_dtype *dt)
{
    if (!tg_node_attr(n, "dtype"))
        return tg_err("attribute 'dtype' is required");
    return tg_attr_get_dtype(n, "dtype", TG_DTYPE_NONE, dt);
}

/* The bytes reinterpreted: same element size, so same shape and byte count.
 * Not to bool from another dtype, whose bytes other than 0 and 1 bool has no
 * meaning for. */
int tg_infer_bitcast(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    tg_dtype dt;
    if (!x || to_dtype(tg_infer_node(g, node), &dt))
        return -1;
    if (tg_dtype_size(dt) != tg_dtype_size(x->dtype))
        return tg_err("bitcast %s to %s: the element sizes differ (%zu and %zu bytes)",
                      tg_dtype_name(x->dtype), tg_dtype_name(dt), tg_dtype_size(x->dtype),
                      tg_dtype_size(dt));
    if (dt == TG_BOOL && x->dtype != TG_BOOL)
        return tg_err("bitcast %s to bool: bool holds only the bytes 0 and 1",
                      tg_dtype_name(x->dtype));
    return tg_infer_set(g, node, dt, &x->shape);
}

int tg_infer_cast(tg_graph *g, int node)
{
    const tg_value *x = tg_infer_in(g, node, 0);
    tg_dtype dt;
    if (!x || to_dtype(tg_infer_node(g, node), &dt))
        return -1;
    return tg_infer_set(g, node, dt, &x->shape);
}
