/* Matmul, linear, convolution and attention: shapes to GEMM, conv and
 * flash-attention kernel calls (kernels.h), in float32. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "opmap.h"
#include "run.h"

int tg_run_conv_desc(const tg_run_ctx *c, tgk_conv_desc *d)
{
    const tg_tensor *xt = c->in[0], *wt = c->in[1], *yt = c->out[0];
    int nsp = xt->rank - 2;
    if (tg_cpu_conv_desc(c->n, nsp, d))
        return -1;
    d->n = xt->dims[0];
    d->c = xt->dims[1];
    d->k = yt->dims[1];
    for (int i = 0; i < nsp; i++) {
        d->in[i] = xt->dims[2 + i];
        d->out[i] = yt->dims[2 + i];
        d->kernel[i] = wt->dims[2 + i];
    }
    return 0;
}

static int run_conv(const tg_run_ctx *c, const float *x, const float *w, const float *b, float *y)
{
    tgk_conv_desc d;
    if (tg_run_conv_desc(c, &d))
        return -1;
    tgk_conv_f32(&d, x, w, b, y);
    return 0;
}

/* conv_nhwc on x [N, H, W, C], its weight packed (tgk_pack_conv_nhwc_f32). */
static int run_conv_nhwc(const tg_run_ctx *c, const float *x, const float *w, const float *b,
                         float *y)
{
    const tg_tensor *xt = c->in[0], *yt = c->out[0];
    tgk_conv_nhwc_desc d;
    if (tg_cpu_conv_nhwc_desc(c->n, &d))
        return -1;
    d.n = xt->dims[0];
    d.c = xt->dims[3];
    for (int i = 0; i < 2; i++) {
        d.in[i] = xt->dims[1 + i];
        d.out[i] = yt->dims[1 + i];
    }
    return tgk_conv_nhwc_f32(&d, x, w, b, y) ? tg_err("out of memory, or a conv_nhwc its"
                                                      " kernel does not take") : 0;
}

/* The mask as an additive float32 tensor of its own shape (bool: 0 / -inf),
 * with strides that broadcast it over [batch, hq, L, S]; *owned when made here. */
bool tg_run_sdpa_mask_layout(const tg_tensor *m, const tg_tensor *q, int64_t S, int64_t *sd,
                             int64_t *st)
{
    int r = q->rank;
    memcpy(sd, q->dims, sizeof(int64_t) * (size_t)r);
    sd[r - 1] = S;
    tgk_broadcast_strides(r, sd, m->rank, m->dims, st);
    bool fold = true;
    for (int k = 0; k + 1 < r - 3; k++)
        fold &= st[k] == st[k + 1] * sd[k + 1];
    return fold;
}

void tg_run_sdpa_mask_strides(int r, const int64_t *st, tgk_sdpa_desc *d)
{
    d->mask_stride[0] = r > 3 ? st[r - 4] : 0;
    d->mask_stride[1] = st[r - 3];
    d->mask_stride[2] = st[r - 2];
    d->mask_stride[3] = st[r - 1];
}

static const float *sdpa_mask(const tg_tensor *m, const float *mf, const tg_tensor *q,
                              tgk_sdpa_desc *d, float **owned)
{
    int r = q->rank;
    int64_t sd[TG_MAX_RANK], st[TG_MAX_RANK];
    bool fold = tg_run_sdpa_mask_layout(m, q, d->S, sd, st);
    int64_t n = tg_run_numel(m);
    *owned = NULL;
    const float *base = mf;
    if (m->dtype == TG_BOOL) {
        if (!(*owned = malloc(sizeof(float) * (size_t)(n ? n : 1))))
            return NULL;
        const uint8_t *b = m->data;
        for (int64_t i = 0; i < n; i++)
            (*owned)[i] = b[i] ? 0.0f : -INFINITY;
        base = *owned;
    }
    /* the leading batch dims must fold into one stride; expand them otherwise */
    if (!fold) {
        int64_t full = tg_run_prod(sd, 0, r);
        float *e = malloc(sizeof(float) * (size_t)(full ? full : 1));
        if (!e) {
            free(*owned);
            *owned = NULL;
            return NULL;
        }
        tgk_copy_strided(sizeof(float), r, sd, base, st, e, NULL);
        free(*owned);
        *owned = e;
        base = e;
        int64_t s = 1;
        for (int k = r - 1; k >= 0; k--) {
            st[k] = s;
            s *= sd[k];
        }
    }
    tg_run_sdpa_mask_strides(r, st, d);
    return base;
}

void tg_run_sdpa_desc(const tg_run_ctx *c, tgk_sdpa_desc *d)
{
    const tg_tensor *q = c->in[0], *k = c->in[1], *v = c->in[2];
    int r = q->rank;
    tg_cpu_sdpa_desc(c->n, d);
    d->batch = tg_run_prod(q->dims, 0, r - 3);
    d->hq = q->dims[r - 3];
    d->hk = k->dims[r - 3];
    d->L = q->dims[r - 2];
    d->S = k->dims[r - 2];
    d->E = q->dims[r - 1];
    d->Ev = v->dims[r - 1];
    if (d->scale == 0)
        d->scale = 1.0f / sqrtf((float)d->E);
}

static int run_sdpa(const tg_run_ctx *c, const tg_run_f32 *io)
{
    const tg_tensor *q = c->in[0];
    const tg_tensor *m = c->n->nin > 3 ? c->in[3] : NULL;
    tgk_sdpa_desc d;
    tg_run_sdpa_desc(c, &d);
    float *owned = NULL;
    if (m && !(d.mask = sdpa_mask(m, io->in[3], q, &d, &owned)))
        return tg_err("out of memory");
    tgk_sdpa_f32(&d, io->in[0], io->in[1], io->in[2], io->out);
    free(owned);
    return 0;
}

/* x rounded to bf16 (nearest even), as float32, in a buffer io frees: a
 * linear on a bf16 weight computes on it. NULL (tg_err). */
static const float *round_bf16(const tg_tensor *x, tg_run_f32 *io)
{
    int64_t n = tg_run_numel(x);
    float *r = malloc((size_t)(n ? n : 1) * sizeof *r);
    if (!r) {
        tg_err("out of memory");
        return NULL;
    }
    for (int64_t i = 0; i < n; i++)
        r[i] = tg_bf16_to_f32(tg_f32_to_bf16(io->in[0][i]));
    free(io->tmp[0]);
    io->tmp[0] = r;
    io->in[0] = r;
    return r;
}

TG_FAMILY_HANDLES(linalg, 6);
int tg_run_linalg(const tg_run_ctx *c)
{
    tg_run_f32 io;
    int rc;
    if (tg_run_f32_open(c, &io))
        return tg_run_f32_close(c, &io, -1);
    switch (c->n->op) {
    case TG_OP_MATMUL:
        tgk_matmul_f32(c->in[0]->rank, c->in[0]->dims, io.in[0], c->in[1]->rank,
                       c->in[1]->dims, io.in[1], io.out);
        rc = 0;
        break;
    case TG_OP_LINEAR: {
        const tg_tensor *x = c->in[0], *w = c->in[1];
        int64_t K = x->dims[x->rank - 1];
        const float *xv = io.in[0];
        if (w->dtype == TG_BF16 && x->dtype == TG_F32 && !(xv = round_bf16(x, &io)))
            return tg_run_f32_close(c, &io, -1);
        tgk_linear_f32(xv, io.in[1], io.in[2], io.out, tg_run_numel(x) / (K ? K : 1),
                       w->dims[0], K);
        rc = 0;
        break;
    }
    case TG_OP_LINEAR_PACKED: {
        const tg_tensor *x = c->in[0];
        int64_t K = x->dims[x->rank - 1], M = tg_run_numel(x) / (K ? K : 1);
        int64_t N = tg_node_int(c->n, "n", 0);
        if (c->in[1]->dtype == TG_BF16) {   /* the packed bf16 pairs, read as they are */
            rc = tgk_linear_packed_bf16(io.in[0], c->in[1]->data, io.in[2], NULL, io.out, M,
                                        N, K, NULL) ? tg_err("out of memory") : 0;
            break;
        }
        tgk_linear_packed_f32(io.in[0], io.in[1], io.in[2], io.out, M, N, K);
        rc = 0;
        break;
    }
    case TG_OP_CONV:
        rc = run_conv(c, io.in[0], io.in[1], io.in[2], io.out);
        break;
    case TG_OP_CONV_NHWC:
        rc = run_conv_nhwc(c, io.in[0], io.in[1], io.in[2], io.out);
        break;
    case TG_OP_SDPA:
        rc = run_sdpa(c, &io);
        break;
    default:
        rc = tg_err("not a linear algebra op");
    }
    return tg_run_f32_close(c, &io, rc);
}
