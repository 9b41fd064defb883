/* Data movement and indexing: any dtype, by element size. */
#include <inttypes.h>
#include <stdlib.h>

#include "opmap.h"
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
    int64_t *tmp, bad = 0;
    const int64_t *idx;
    tg_cpu_index d;
    if (tg_cpu_index_desc(c->n, x->rank, &d) || !(idx = index_i64(it, &tmp)))
        return -1;
    int ax = d.axis, rc;
    if (d.reduce)
        rc = tgk_index_reduce(tg_run_kt(x->dtype), d.reduce, tg_run_prod(x->dims, 0, ax), x->dims[ax],
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

static int run_slice(const tg_run_ctx *c, const tg_cpu_movement *d)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    int ax = d->axis;
    int64_t start;
    if (tg_dim_eval(d->start, c->sym, &start))
        return -1;
    tgk_slice(tg_dtype_size(x->dtype), x->rank, x->dims, ax, start, d->step, y->dims[ax],
              x->data, y->data);
    return 0;
}

static int run_concat(const tg_run_ctx *c, int ax)
{
    const tg_tensor *y = c->out[0];
    int n = c->n->nin;
    const void **x = malloc(sizeof(void *) * (size_t)n);
    int64_t *len = malloc(sizeof(int64_t) * (size_t)n);
    if (!x || !len) {
        free(x);
        free(len);
        return tg_err("out of memory");
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

static int run_pad(const tg_run_ctx *c, const tg_cpu_movement *d)
{
    const tg_tensor *x = c->in[0];
    uint8_t value[8];
    if (d->mode)
        return tgk_pad_mode(tg_dtype_size(x->dtype), x->rank, x->dims, d->v, d->v + x->rank,
                            d->mode, x->data, c->out[0]->data)
                   ? tg_err("pad mode %s of an empty axis", tg_node_string(c->n, "mode", ""))
                   : 0;
    tgk_store_f64(tg_run_kt(x->dtype), value, 0, d->value);
    tgk_pad(tg_dtype_size(x->dtype), x->rank, x->dims, d->v, d->v + x->rank, value, x->data,
            c->out[0]->data);
    return 0;
}

TG_FAMILY_HANDLES(movement, 8);
int tg_run_movement(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    size_t es = tg_dtype_size(x->dtype);
    tg_cpu_movement d;
    if (tg_cpu_movement_desc(c->n, x->rank, &d))
        return -1;
    switch (c->n->op) {
    case TG_OP_PERMUTE:
        tgk_permute(es, x->rank, x->dims, d.v, x->data, y->data);
        return 0;
    case TG_OP_EXPAND:
        tgk_expand(es, y->rank, y->dims, x->rank, x->dims, x->data, y->data);
        return 0;
    case TG_OP_SLICE:
        return run_slice(c, &d);
    case TG_OP_CONCAT:
        return run_concat(c, d.axis);
    case TG_OP_PAD:
        return run_pad(c, &d);
    case TG_OP_TILE:
        tgk_tile(es, x->rank, x->dims, d.v, x->data, y->data);
        return 0;
    case TG_OP_TRIL: case TG_OP_TRIU: {
        int64_t rows = x->dims[x->rank - 2], cols = x->dims[x->rank - 1];
        tgk_tri(es, c->n->op == TG_OP_TRIU, tg_run_prod(x->dims, 0, x->rank - 2), rows, cols,
                d.k, x->data, y->data);
        return 0;
    }
    default:
        return tg_err("not a data movement op");
    }
}
