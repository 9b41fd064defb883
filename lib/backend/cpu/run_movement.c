/* Data movement and indexing: any dtype, by element size. */
#include <inttypes.h>
#include <stdlib.h>

#include "../../ops/infer.h"
#include "run.h"

/* Indices as int64: the tensor's own data, or a converted copy in *tmp. */
static const int64_t *index_i64(const tg_tensor *t, int64_t **tmp)
{
    *tmp = NULL;
    if (t->dtype == TG_I64)
        return t->data;
    int64_t n = tg_run_numel(t);
    if (!(*tmp = malloc(sizeof(int64_t) * (size_t)(n ? n : 1)))) {
        tg_err("out of memory");
        return NULL;
    }
    tgk_cast(TGK_I64, *tmp, tg_run_kt(t->dtype), t->data, n);
    return *tmp;
}

TG_FAMILY_HANDLES(index, 3);
int tg_run_index(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *it = c->in[1];
    size_t es = tg_dtype_size(x->dtype);
    int ax = tg_run_axis(c, "axis", 0, x->rank);
    int64_t *tmp, bad = 0;
    const int64_t *idx;
    int rc;
    if (ax < 0 || !(idx = index_i64(it, &tmp)))
        return -1;
    int red = c->n->op == TG_OP_INDEX_COPY ? tg_index_reduce_mode(c->n) : 0;
    if (red < 0) {
        free(tmp);
        return -1;
    }
    if (red)
        rc = tgk_index_reduce(tg_run_kt(x->dtype), red, tg_run_prod(x->dims, 0, ax), x->dims[ax],
                              tg_run_prod(x->dims, ax + 1, x->rank), x->data, tg_run_numel(it),
                              idx, c->in[2]->data, c->out[0]->data, &bad);
    else if (c->n->op == TG_OP_INDEX_COPY)
        rc = tgk_index_copy(es, tg_run_prod(x->dims, 0, ax), x->dims[ax],
                            tg_run_prod(x->dims, ax + 1, x->rank), x->data, tg_run_numel(it),
                            idx, c->in[2]->data, c->out[0]->data, &bad);
    else if (c->n->op == TG_OP_GATHER)
        rc = tgk_gather(es, x->rank, x->dims, it->dims, ax, x->data, idx, c->out[0]->data, &bad);
    else
        rc = tgk_index_select(es, tg_run_prod(x->dims, 0, ax), x->dims[ax],
                              tg_run_prod(x->dims, ax + 1, x->rank), x->data, tg_run_numel(it),
                              idx, c->out[0]->data, &bad);
    free(tmp);
    if (rc)
        return tg_err("index %" PRId64 " is out of range for axis %d of size %" PRId64, bad, ax,
                      x->dims[ax]);
    return 0;
}

static int run_slice(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    int ax = tg_run_axis(c, "axis", 0, x->rank);
    int64_t start;
    if (ax < 0 || tg_run_dim(c, "start", 0, &start))
        return -1;
    tgk_slice(tg_dtype_size(x->dtype), x->rank, x->dims, ax, start, tg_node_int(c->n, "step", 1),
              y->dims[ax], x->data, y->data);
    return 0;
}

static int run_concat(const tg_run_ctx *c)
{
    const tg_tensor *y = c->out[0];
    int n = c->n->nin, ax = tg_run_axis(c, "axis", 0, y->rank);
    const void **x = malloc(sizeof(void *) * (size_t)n);
    int64_t *len = malloc(sizeof(int64_t) * (size_t)n);
    if (ax < 0 || !x || !len) {
        free(x);
        free(len);
        return ax < 0 ? -1 : tg_err("out of memory");
    }
    for (int i = 0; i < n; i++) {
        x[i] = c->in[i]->data;
        len[i] = c->in[i]->dims[ax];
    }
    tgk_concat(tg_dtype_size(y->dtype), tg_run_prod(y->dims, 0, ax),
               tg_run_prod(y->dims, ax + 1, y->rank), n, x, len, y->data);
    free(x);
    free(len);
    return 0;
}

static int run_pad(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    const int64_t *pads;
    int k;
    uint8_t value[8];
    if (tg_attr_get_ints(c->n, "pads", &pads, &k) || k != 2 * x->rank)
        return tg_err("attribute 'pads' needs %d values", 2 * x->rank);
    int mode = tg_pad_mode(c->n);
    if (mode < 0)
        return -1;
    if (mode)
        return tgk_pad_mode(tg_dtype_size(x->dtype), x->rank, x->dims, pads, pads + x->rank, mode,
                            x->data, c->out[0]->data)
                   ? tg_err("pad mode %s of an empty axis", tg_node_string(c->n, "mode", ""))
                   : 0;
    tgk_store_f64(tg_run_kt(x->dtype), value, 0, tg_node_float(c->n, "value", 0));
    tgk_pad(tg_dtype_size(x->dtype), x->rank, x->dims, pads, pads + x->rank, value, x->data,
            c->out[0]->data);
    return 0;
}

TG_FAMILY_HANDLES(movement, 8);
int tg_run_movement(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    size_t es = tg_dtype_size(x->dtype);
    const int64_t *v;
    int k;
    switch (c->n->op) {
    case TG_OP_PERMUTE: {
        int64_t perm[TG_MAX_RANK];
        if (tg_attr_get_ints(c->n, "perm", &v, &k) || k != x->rank)
            return tg_err("attribute 'perm' needs %d values", x->rank);
        for (int i = 0; i < k; i++)
            perm[i] = v[i] < 0 ? v[i] + x->rank : v[i];
        tgk_permute(es, x->rank, x->dims, perm, x->data, y->data);
        return 0;
    }
    case TG_OP_EXPAND:
        tgk_expand(es, y->rank, y->dims, x->rank, x->dims, x->data, y->data);
        return 0;
    case TG_OP_SLICE:
        return run_slice(c);
    case TG_OP_CONCAT:
        return run_concat(c);
    case TG_OP_PAD:
        return run_pad(c);
    case TG_OP_TILE:
        if (tg_attr_get_ints(c->n, "repeats", &v, &k) || k != x->rank)
            return tg_err("attribute 'repeats' needs %d values", x->rank);
        tgk_tile(es, x->rank, x->dims, v, x->data, y->data);
        return 0;
    case TG_OP_TRIL: case TG_OP_TRIU: {
        int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
        tgk_tri(es, c->n->op == TG_OP_TRIU, tg_run_prod(x->dims, 0, x->rank - 2), rows, cols,
                tg_node_int(c->n, "k", 0), x->data, y->data);
        return 0;
    }
    default:
        return tg_err("not a data movement op");
    }
}
