/* The CUDA backend's glue: which nodes its kernels cover, and a node's
 * attributes and concrete shapes into kernel calls (kern.h) and GEMMs
 * (gemm.c). Attributes are read as the CPU's glue reads them (its
 * descriptors and op maps, ../cpu/run.h), so both devices mean the same. */
#include <inttypes.h>
#include <string.h>

#include "../../error.h"
#include "../../log.h"
#include "../../ops/infer.h"
#include "../cpu/opmap.h"
#include "../cpu/run.h"
#include "cuda.h"
#include "sparselt.h"

/* ---- what runs here ----------------------------------------------------------- */

/* The ops whose kernels take float32 only (the CPU converts other floats
 * to float32 for them; here the CPU runs those). sdpa takes bf16 and fp16
 * too (attention.c), and a bool mask. */
static bool f32_only(tg_op op)
{
    switch (op) {
    case TG_OP_SOFTMAX: case TG_OP_LOG_SOFTMAX: case TG_OP_LAYER_NORM: case TG_OP_GROUP_NORM:
    case TG_OP_BATCH_NORM: case TG_OP_MAX_POOL: case TG_OP_AVG_POOL:
    case TG_OP_ADAPTIVE_AVG_POOL: case TG_OP_CONV: case TG_OP_MATMUL: case TG_OP_LINEAR:
    case TG_OP_SDPA:
        return true;
    default:
        return false;
    }
}

static const struct family_glue *glue_of(tg_op op);

/* The families of ops.def that tgc_run_node has glue for (the table at the
 * end of this file): an op of any other family (one added with its own CPU
 * kernel, say) is refused, and runs on the CPU, rather than falling into
 * another family's glue. */
static bool has_glue(tg_op op)
{
    return glue_of(op) != NULL;
}

bool tgc_supports(const tg_graph *g, int i, char *why)
{
    const tg_node *n = &g->nodes[i];
    switch (n->op) {
    case TG_OP_RESIZE:
        snprintf(why, TG_WHY_MAX, "resize has no CUDA kernel yet");
        return false;
    case TG_OP_LINEAR_PACKED: case TG_OP_CONV_NHWC:
        snprintf(why, TG_WHY_MAX, "its weight is in the CPU's packed layout");
        return false;
    case TG_OP_MAX_POOL: case TG_OP_AVG_POOL: case TG_OP_ADAPTIVE_AVG_POOL:
        if (tg_node_int(n, "channels_last", 0)) {
            snprintf(why, TG_WHY_MAX, "channels-last pools have no CUDA kernel yet");
            return false;
        }
        break;
    case TG_OP_QUANTIZE: case TG_OP_DEQUANTIZE: case TG_OP_QLINEAR: case TG_OP_QCONV:
    case TG_OP_QLINEAR_24:
        snprintf(why, TG_WHY_MAX, "quantized ops have no CUDA kernels yet");
        return false;
    case TG_OP_NONZERO: case TG_OP_NMS:
        snprintf(why, TG_WHY_MAX, "its output's shape is set by the data: the CPU runs it, "
                 "and a CUDA model captures its run before it starts");
        return false;
    case TG_OP_LINEAR_24:       /* f32 and u8, as its inference demands */
        break;
    case TG_OP_PAD:
        if (strcmp(tg_node_string(n, "mode", "constant"), "constant")) {
            snprintf(why, TG_WHY_MAX, "pad modes but constant have no CUDA kernel yet");
            return false;
        }
        break;
    case TG_OP_INDEX_COPY:
        if (strcmp(tg_node_string(n, "reduce", "none"), "none")) {
            snprintf(why, TG_WHY_MAX, "index_copy with reduce has no CUDA kernel yet");
            return false;
        }
        break;
    default:
        if (!has_glue(n->op)) {
            snprintf(why, TG_WHY_MAX, "no CUDA glue for the %s family",
                     tg_op_table[n->op].family);
            return false;
        }
        break;
    }
    for (int k = 0; k < n->nin + n->nout; k++) {
        int v = k < n->nin ? n->in[k] : n->out[k - n->nin];
        if (v < 0)
            continue;
        tg_dtype t = g->values[v].dtype;
        if (t == TG_F8E4M3 || t == TG_F8E5M2 || t >= TG_U16) {     /* u16 and all after it */
            snprintf(why, TG_WHY_MAX, "%s has no CUDA kernels", tg_dtype_name(t));
            return false;
        }
        if (f32_only(n->op) && t != TG_F32 &&
            !(n->op == TG_OP_SDPA && (t == TG_BF16 || t == TG_F16 || (k == 3 && t == TG_BOOL)))) {
            snprintf(why, TG_WHY_MAX, "its CUDA kernel takes f32 only, not %s", tg_dtype_name(t));
            return false;
        }
    }
    if (n->op == TG_OP_SDPA) {
        int64_t e, ev;
        const tg_shape *q = &g->values[n->in[0]].shape, *v = &g->values[n->in[2]].shape;
        if (!tg_dim_is_const(q->d[q->rank - 1], &e) || !tg_dim_is_const(v->d[v->rank - 1], &ev) ||
            e > 256 || ev > 256) {
            snprintf(why, TG_WHY_MAX, "head dims over 256 or not constant");
            return false;
        }
    }
    return true;
}

/* ---- helpers --------------------------------------------------------------------- */

static void contiguous(int rank, const int64_t *dims, int64_t *st)
{
    int64_t s = 1;
    for (int k = rank - 1; k >= 0; k--) {
        st[k] = s;
        s *= dims[k];
    }
}

static int64_t numel(const tg_tensor *t)
{
    return tg_run_numel(t);
}

static const tg_tensor *opt_in(const tg_run_ctx *c, int i)
{
    return i < c->n->nin ? c->in[i] : NULL;
}

static const void *opt_data(const tg_run_ctx *c, int i)
{
    const tg_tensor *t = opt_in(c, i);
    return t ? t->data : NULL;
}

static int launched(int err)
{
    return err ? tgc_fail(err, "launching a kernel") : 0;
}

static int copy_bytes(const tgc_state *cs, void *y, const void *x, size_t n)
{
    return launched(n ? cudaMemcpyAsync(y, x, n, cudaMemcpyDeviceToDevice, cs->stream) : 0);
}

/* The device flag set to v before a kernel that may report into it, and its
 * value after (a sync); in a deferred run neither (its caller does both for
 * the whole run: a captured graph cannot wait). */
static int flag_set(const tgc_state *cs, int64_t v)
{
    static const int64_t values[2] = {0, INT64_MIN};
    if (cs->deferred)
        return 0;
    return launched(cudaMemcpyAsync(cs->flag, &values[v == INT64_MIN], sizeof v,
                                    cudaMemcpyHostToDevice, cs->stream));
}

static int flag_get(const tgc_state *cs, int64_t *v, int64_t init)
{
    if (cs->deferred) {
        *v = init;
        return 0;
    }
    int e = cudaMemcpyAsync(v, cs->flag, sizeof *v, cudaMemcpyDeviceToHost, cs->stream);
    if (!e)
        e = cudaStreamSynchronize(cs->stream);
    return e ? tgc_fail(e, "reading the error flag") : 0;
}

static bool int_division(const tg_graph *g, const tg_node *n)
{
    return (n->op == TG_OP_DIV || n->op == TG_OP_REMAINDER || n->op == TG_OP_FMOD) &&
           !tg_dtype_is_float(g->values[n->in[0]].dtype);
}

static bool indexes(const tg_node *n)
{
    return n->op == TG_OP_GATHER || n->op == TG_OP_INDEX_SELECT || n->op == TG_OP_INDEX_COPY;
}

bool tgc_node_checks(const tg_graph *g, int i, int64_t *init)
{
    const tg_node *n = &g->nodes[i];
    *init = indexes(n) ? INT64_MIN : 0;
    return indexes(n) || int_division(g, n);
}

int tgc_flag_error(const tg_graph *g, int i, const int64_t *in_dims, int64_t flag)
{
    const tg_node *n = &g->nodes[i];
    if (!indexes(n))
        return tg_err("integer division by zero");
    int rank = g->values[n->in[0]].shape.rank;
    int64_t ax = tg_node_int(n, "axis", 0);
    ax = ax < 0 ? ax + rank : ax;
    return tg_err("index %" PRId64 " is out of range for axis %d of size %" PRId64, flag,
                  (int)ax, in_dims[ax]);
}

/* ---- elementwise ------------------------------------------------------------------- */

static int run_binary(const tgc_state *cs, const tg_run_ctx *c, tgk_binary_op k)
{
    const tg_tensor *a = c->in[0], *b = c->in[1], *y = c->out[0];
    tgc_iter it = {.rank = y->rank};
    memcpy(it.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
    tgk_broadcast_strides(y->rank, y->dims, a->rank, a->dims, it.st[1]);
    tgk_broadcast_strides(y->rank, y->dims, b->rank, b->dims, it.st[2]);
    bool divides = int_division(c->g, c->n);
    int64_t bad = 0;
    if ((divides && flag_set(cs, 0)) ||
        launched(tgc_binary(k, tg_run_kt(a->dtype), &it, a->data, b->data, y->data, cs->flag,
                            cs->stream)) ||
        (divides && flag_get(cs, &bad, 0)))
        return -1;
    return bad ? tg_err("integer division by zero") : 0;
}

TG_FAMILY_HANDLES(where, 1);
static int run_where(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *y = c->out[0];
    tgc_iter it = {.rank = y->rank};
    memcpy(it.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
    contiguous(y->rank, y->dims, it.st[0]);
    for (int i = 0; i < 3; i++)
        tgk_broadcast_strides(y->rank, y->dims, c->in[i]->rank, c->in[i]->dims, it.st[i + 1]);
    return launched(tgc_where(tg_dtype_size(y->dtype), &it, c->in[0]->data, c->in[1]->data,
                              c->in[2]->data, y->data, cs->stream));
}

/* ---- reductions --------------------------------------------------------------------- */

static int run_reduce(const tgc_state *cs, const tg_run_ctx *c, tgk_reduce_op op)
{
    const tg_tensor *x = c->in[0];
    uint32_t mask;
    if (tg_run_reduce_mask(c, &mask))
        return -1;
    /* the kept dims first, then the reduced ones */
    int64_t xs[TG_MAX_RANK];
    contiguous(x->rank, x->dims, xs);
    tgc_iter it = {.rank = x->rank};
    int nkeep = 0;
    for (int pass = 0; pass < 2; pass++)
        for (int d = 0, j = pass ? nkeep : 0; d < x->rank; d++)
            if (!(mask >> d & 1) == !pass) {
                it.dims[j] = x->dims[d];
                it.st[1][j++] = xs[d];
                nkeep += !pass;
            }
    return launched(tgc_reduce(op, tg_run_kt(x->dtype), &it, nkeep, tg_node_int(c->n, "correction", 1),
                               x->data, c->out[0]->data, cs->stream));
}

static int run_arg(const tgc_state *cs, const tg_run_ctx *c, bool max)
{
    const tg_tensor *x = c->in[0];
    int64_t outer = 1, n = numel(x), inner = 1;
    if (tg_node_attr(c->n, "axis")) {
        int ax = tg_run_axis(c, "axis", 0, x->rank);
        if (ax < 0)
            return -1;
        outer = tg_run_prod(x->dims, 0, ax);
        n = x->dims[ax];
        inner = tg_run_prod(x->dims, ax + 1, x->rank);
    }
    return launched(tgc_arg_reduce(max, tg_run_kt(x->dtype), outer, n, inner, x->data,
                                   c->out[0]->data, cs->stream));
}

/* axis (default dflt) of x splitting it into [outer, len, inner] */
static int split_axis(const tg_run_ctx *c, int64_t dflt, int64_t *outer, int64_t *len,
                      int64_t *inner)
{
    const tg_tensor *x = c->in[0];
    int ax = x->rank ? tg_run_axis(c, "axis", dflt, x->rank) : 0;
    if (ax < 0)
        return -1;
    *len = x->rank ? x->dims[ax] : 1;
    *outer = tg_run_prod(x->dims, 0, ax);
    *inner = x->rank ? tg_run_prod(x->dims, ax + 1, x->rank) : 1;
    return 0;
}

static int run_softmax(const tgc_state *cs, const tg_run_ctx *c, bool log)
{
    int64_t outer, len, inner;
    if (split_axis(c, -1, &outer, &len, &inner))
        return -1;
    return launched(tgc_softmax_f32(c->in[0]->data, c->out[0]->data, outer, len, inner, log,
                                    cs->stream));
}

#define TG_COUNTED cumsum
#include "../../ops/family_size.h"
TG_FAMILY_HANDLES(cumsum, 1);
static int run_cumsum(const tgc_state *cs, const tg_run_ctx *c)
{
    int64_t outer, len, inner;
    if (split_axis(c, 0, &outer, &len, &inner))
        return -1;
    return launched(tgc_cumsum(tg_run_kt(c->in[0]->dtype), outer, len, inner,
                               tg_node_int(c->n, "exclusive", 0), tg_node_int(c->n, "reverse", 0),
                               c->in[0]->data, c->out[0]->data, cs->stream));
}

/* ---- nn -------------------------------------------------------------------------------- */

TG_FAMILY_HANDLES(norm, 3);
static int run_norm(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    tg_cpu_norm d;
    if (tg_cpu_norm_desc(c->n, x->rank, &d))
        return -1;
    int64_t spatial = tg_run_prod(x->dims, 2, x->rank);
    float *y = c->out[0]->data;
    if (c->n->op == TG_OP_LAYER_NORM)
        return launched(tgc_layer_norm_f32(x->data, opt_data(c, 1), opt_data(c, 2), y,
                                           tg_run_prod(x->dims, 0, d.axis),
                                           tg_run_prod(x->dims, d.axis, x->rank), d.eps,
                                           cs->stream));
    if (c->n->op == TG_OP_GROUP_NORM)
        return launched(tgc_group_norm_f32(x->data, opt_data(c, 1), opt_data(c, 2), y, x->dims[0],
                                           x->dims[1], spatial, d.groups, d.eps, cs->stream));
    return launched(tgc_batch_norm_f32(x->data, c->in[1]->data, c->in[2]->data, opt_data(c, 3),
                                       opt_data(c, 4), y, x->dims[0], x->dims[1], spatial, d.eps,
                                       cs->stream));
}

TG_FAMILY_HANDLES(pool, 3);
static int run_pool(const tgc_state *cs, const tg_run_ctx *c)
{
    tgk_pool_desc d;
    if (tg_run_pool_desc(c, &d))
        return -1;
    if (c->n->op == TG_OP_ADAPTIVE_AVG_POOL) {
        int nsp = d.nsp;
        return launched(tgc_adaptive_avg_pool_f32(d.n * d.c, nsp == 2 ? d.in[0] : 1,
                                                  d.in[nsp - 1], nsp == 2 ? d.out[0] : 1,
                                                  d.out[nsp - 1], c->in[0]->data,
                                                  c->out[0]->data, cs->stream));
    }
    return launched(tgc_pool_f32(&d, c->n->op == TG_OP_MAX_POOL, c->in[0]->data, c->out[0]->data,
                                 cs->stream));
}

static int run_conv(const tgc_state *cs, const tg_run_ctx *c)
{
    tgk_conv_desc d;
    if (tg_run_conv_desc(c, &d))
        return -1;
    if (d.groups == 1 && !d.transposed && d.c > 0)
        return tgc_conv(cs, &d, c->in[0]->data, c->in[1]->dtype, c->in[1]->data, opt_data(c, 2),
                        c->out[0]->data);
    tgk_unary_param p = {0};
    float *y = c->out[0]->data;
    int e = tgc_conv_f32(&d, c->in[0]->data, c->in[1]->data, opt_data(c, 2), y, cs->stream);
    /* an EPILOGUE group's residual and relu: the products apply them */
    if (!e && cs->residual)
        e = tgc_conv_out(TGK_F32, y, NULL, cs->residual, cs->relu, y, d.n * d.k, d.k,
                         d.k ? numel(c->out[0]) / (d.n * d.k) : 0, cs->stream);
    else if (!e && cs->relu)
        e = tgc_unary(TGK_RELU, TGK_F32, numel(c->out[0]), y, y, &p, cs->stream);
    return launched(e);
}

/* linear_24 through cuSPARSELt (sparselt.h): the weight compressed at the
 * model's open (cs->lt24) or, in the interpreter, now and given back after.
 * 0 done, 1 not taken (why), -1 an error. */
static int run_lt24(const tgc_state *cs, const tg_run_ctx *c, int64_t M, int64_t N, int64_t K,
                    char *why)
{
    tgc_lt24 *w = cs->lt24;
    if (!w && cs->deferred) {
        snprintf(why, TG_WHY_MAX, "not compressed at open");
        return 1;
    }
    if (!w && !(w = tgc_lt24_new(cs, c->in[1]->data, c->in[2]->data, N, K, cs->lt24_dtype, why)))
        return 1;
    int rc = tgc_lt24_linear(cs, w, c->in[0]->data, opt_data(c, 3), c->out[0]->data, M, why);
    if (rc == 0 && tg_log_on(RUN, TG_LOG_INFO)) {
        char what[TG_WHY_MAX];
        tgc_lt24_describe(w, M, what, sizeof what);
        TG_LOG(RUN, TG_LOG_INFO, "%s (linear_24): %s; M %lld, N %lld, K %lld", c->n->name, what,
               (long long)M, (long long)N, (long long)K);
    }
    if (w != cs->lt24)
        tgc_lt24_free(w);
    return rc;
}

/* linear_24: through cuSPARSELt when cs asks for it and it takes the node;
 * else the compressed weight expanded into a dense one on the device (a
 * temporary, given back on the stream after the GEMM), then the linear's
 * cuBLASLt GEMM: the same float32 products as a dense linear on the pruned
 * weight (tf32 when TG_CUDA_MATH=tf32, as linear). Expanded at each run, as
 * the CPU packs it at each run. */
TG_FAMILY_HANDLES(sparse, 1);
static int run_linear_24(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *v = c->in[1];
    int64_t K = x->dims[x->rank - 1], N = v->dims[0], M = numel(x) / (K ? K : 1);
    if (cs->lt24_dtype != TG_F32) {
        char why[TG_WHY_MAX];
        int rc = run_lt24(cs, c, M, N, K, why);
        if (rc <= 0)
            return rc;
        TG_LOG(RUN, TG_LOG_INFO, "%s (linear_24): dense, expanded, cuBLASLt: %s", c->n->name, why);
    }
    float *w = NULL;
    size_t bytes = sizeof *w * (size_t)(N * K > 0 ? N * K : 1);
    int e = cudaMallocAsync((void **)&w, bytes, cs->stream);
    if (e)
        return tgc_fail(e, "allocating linear_24's dense weight");
    int rc = launched(tgc_expand24_f32(v->data, c->in[2]->data, w, N, K, cs->stream));
    if (!rc)
        rc = tgc_linear(cs, x->data, TG_F32, w, opt_data(c, 3), c->out[0]->data, M, N, K);
    cudaFreeAsync(w, cs->stream);
    return rc;
}

/* ---- data movement --------------------------------------------------------------------- */

/* y (contiguous) = x read through strides xs over y's dims, from x + off elements */
static int gather_view(const tgc_state *cs, const tg_run_ctx *c, const int64_t *xs, int64_t off)
{
    const tg_tensor *y = c->out[0];
    size_t es = tg_dtype_size(y->dtype);
    tgc_iter it = {.rank = y->rank};
    memcpy(it.dims, y->dims, sizeof(int64_t) * (size_t)y->rank);
    contiguous(y->rank, y->dims, it.st[0]);
    memcpy(it.st[1], xs, sizeof(int64_t) * (size_t)y->rank);
    return launched(tgc_copy(es, &it, (const char *)c->in[0]->data + off * (int64_t)es, y->data,
                             cs->stream));
}

static int run_permute(const tgc_state *cs, const tg_run_ctx *c, const tg_cpu_movement *d)
{
    const tg_tensor *x = c->in[0];
    int64_t xs[TG_MAX_RANK], ps[TG_MAX_RANK];
    contiguous(x->rank, x->dims, xs);
    for (int i = 0; i < x->rank; i++)
        ps[i] = xs[d->v[i]];
    return gather_view(cs, c, ps, 0);
}

static int run_slice(const tgc_state *cs, const tg_run_ctx *c, const tg_cpu_movement *d)
{
    const tg_tensor *x = c->in[0];
    int ax = d->axis;
    int64_t start, xs[TG_MAX_RANK];
    if (tg_dim_eval(d->start, c->sym, &start))
        return -1;
    contiguous(x->rank, x->dims, xs);
    int64_t off = start * xs[ax];
    xs[ax] *= d->step;
    return gather_view(cs, c, xs, off);
}

static int run_concat(const tgc_state *cs, const tg_run_ctx *c, int ax)
{
    const tg_tensor *y = c->out[0];
    size_t es = tg_dtype_size(y->dtype);
    int64_t ys[TG_MAX_RANK], at = 0;
    contiguous(y->rank, y->dims, ys);
    for (int i = 0; i < c->n->nin; i++) {
        const tg_tensor *x = c->in[i];
        tgc_iter it = {.rank = x->rank};
        memcpy(it.dims, x->dims, sizeof(int64_t) * (size_t)x->rank);
        memcpy(it.st[0], ys, sizeof ys);
        contiguous(x->rank, x->dims, it.st[1]);
        if (launched(tgc_copy(es, &it, x->data, (char *)y->data + at * ys[ax] * (int64_t)es,
                              cs->stream)))
            return -1;
        at += x->dims[ax];
    }
    return 0;
}

/* y filled with the value, then the part of x inside y copied to its place
 * (negative pads crop) */
static int run_pad(const tgc_state *cs, const tg_run_ctx *c, const tg_cpu_movement *pd)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    size_t es = tg_dtype_size(x->dtype);
    const int64_t *pads = pd->v;
    uint8_t value[8];
    tgk_store_f64(tg_run_kt(x->dtype), value, 0, pd->value);
    if (launched(tgc_fill(es, numel(y), value, y->data, cs->stream)))
        return -1;
    tgc_iter it = {.rank = x->rank};
    int64_t xoff = 0, yoff = 0;
    contiguous(y->rank, y->dims, it.st[0]);
    contiguous(x->rank, x->dims, it.st[1]);
    for (int d = 0; d < x->rank; d++) {
        int64_t before = pads[d], i0 = before < 0 ? -before : 0;
        int64_t i1 = x->dims[d] < y->dims[d] - before ? x->dims[d] : y->dims[d] - before;
        it.dims[d] = i1 > i0 ? i1 - i0 : 0;
        xoff += i0 * it.st[1][d];
        yoff += (i0 + before) * it.st[0][d];
    }
    return launched(tgc_copy(es, &it, (const char *)x->data + xoff * (int64_t)es,
                             (char *)y->data + yoff * (int64_t)es, cs->stream));
}

/* y viewed as [reps0, d0, reps1, d1, ...], x broadcast over the reps */
static int run_tile(const tgc_state *cs, const tg_run_ctx *c, const int64_t *reps)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    int64_t xs[TG_MAX_RANK], ys[TG_MAX_RANK];
    contiguous(x->rank, x->dims, xs);
    contiguous(y->rank, y->dims, ys);
    tgc_iter it = {.rank = 2 * x->rank};
    for (int d = 0; d < x->rank; d++) {
        it.dims[2 * d] = reps[d];
        it.dims[2 * d + 1] = x->dims[d];
        it.st[0][2 * d] = x->dims[d] * ys[d];
        it.st[0][2 * d + 1] = ys[d];
        it.st[1][2 * d] = 0;
        it.st[1][2 * d + 1] = xs[d];
    }
    return launched(tgc_copy(tg_dtype_size(x->dtype), &it, x->data, y->data, cs->stream));
}

TG_FAMILY_HANDLES(index, 3);
static int run_index(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *ix = c->in[1], *y = c->out[0];
    size_t es = tg_dtype_size(x->dtype);
    tg_cpu_index d;
    if (tg_cpu_index_desc(c->n, x->rank, &d) || flag_set(cs, INT64_MIN))
        return -1;
    int ax = d.axis;
    int64_t outer = tg_run_prod(x->dims, 0, ax), inner = tg_run_prod(x->dims, ax + 1, x->rank);
    tgk_dtype it = tg_run_kt(ix->dtype);
    int e;
    if (c->n->op == TG_OP_INDEX_COPY) {
        if (copy_bytes(cs, y->data, x->data, y->nbytes))
            return -1;
        e = tgc_index_copy(es, outer, x->dims[ax], inner, numel(ix), it, ix->data,
                           c->in[2]->data, y->data, cs->flag, cs->stream);
    } else if (c->n->op == TG_OP_GATHER) {
        e = tgc_gather(es, x->rank, x->dims, ix->dims, ax, x->data, it, ix->data, y->data,
                       cs->flag, cs->stream);
    } else {
        e = tgc_index_select(es, outer, x->dims[ax], inner, x->data, numel(ix), it, ix->data,
                             y->data, cs->flag, cs->stream);
    }
    int64_t bad;
    if (launched(e) || flag_get(cs, &bad, INT64_MIN))
        return -1;
    return bad != INT64_MIN ? tgc_flag_error(c->g, (int)(c->n - c->g->nodes), x->dims, bad) : 0;
}

TG_FAMILY_HANDLES(movement, 8);
static int run_movement(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    int64_t xs[TG_MAX_RANK];
    tg_cpu_movement d;
    if (tg_cpu_movement_desc(c->n, x->rank, &d))
        return -1;
    switch (c->n->op) {
    case TG_OP_PERMUTE: return run_permute(cs, c, &d);
    case TG_OP_EXPAND:
        tgk_broadcast_strides(y->rank, y->dims, x->rank, x->dims, xs);
        return gather_view(cs, c, xs, 0);
    case TG_OP_SLICE: return run_slice(cs, c, &d);
    case TG_OP_CONCAT: return run_concat(cs, c, d.axis);
    case TG_OP_PAD: return run_pad(cs, c, &d);
    case TG_OP_TILE: return run_tile(cs, c, d.v);
    case TG_OP_TRIL: case TG_OP_TRIU:
        return launched(tgc_tri(tg_dtype_size(x->dtype), c->n->op == TG_OP_TRIU,
                                tg_run_prod(x->dims, 0, x->rank - 2), x->dims[x->rank - 2],
                                x->dims[x->rank - 1], d.k, x->data, y->data, cs->stream));
    default: return tg_err("not a data movement op");
    }
}

/* reshape, identity: the output is the input's bytes (ops.def's VIEW) */
static int run_alias(const tgc_state *cs, const tg_run_ctx *c)
{
    return copy_bytes(cs, c->out[0]->data, c->in[0]->data, c->out[0]->nbytes);
}

static int run_unary(const tgc_state *cs, const tg_run_ctx *c)
{
    tgk_unary_op u;
    tgk_unary_param up;
    tg_cpu_unary_desc(c->n, &u, &up);
    return launched(tgc_unary(u, tg_run_kt(c->in[0]->dtype), numel(c->in[0]), c->in[0]->data,
                              c->out[0]->data, &up, cs->stream));
}

static int run_binary_family(const tgc_state *cs, const tg_run_ctx *c)
{
    return run_binary(cs, c, tg_cpu_binary_kop[c->n->op]);
}

static int run_reduce_family(const tgc_state *cs, const tg_run_ctx *c)
{
    return run_reduce(cs, c, tg_cpu_reduce_kop[c->n->op]);
}

TG_FAMILY_HANDLES(cast, 1);
static int run_cast(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *y = c->out[0];
    return launched(tgc_cast(tg_run_kt(y->dtype), y->data, tg_run_kt(x->dtype), x->data,
                             numel(x), cs->stream));
}

TG_FAMILY_HANDLES(arg_reduce, 2);
static int run_arg_family(const tgc_state *cs, const tg_run_ctx *c)
{
    return run_arg(cs, c, c->n->op == TG_OP_ARGMAX);
}

TG_FAMILY_HANDLES(softmax, 2);
static int run_softmax_family(const tgc_state *cs, const tg_run_ctx *c)
{
    return run_softmax(cs, c, c->n->op == TG_OP_LOG_SOFTMAX);
}

TG_FAMILY_HANDLES(linalg, 6);
static int run_linalg(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0];
    switch (c->n->op) {
    case TG_OP_CONV: return run_conv(cs, c);
    case TG_OP_SDPA: return tgc_run_sdpa(cs, c);
    case TG_OP_LINEAR: {
        int64_t K = x->dims[x->rank - 1];
        return tgc_linear(cs, x->data, c->in[1]->dtype, c->in[1]->data, opt_data(c, 2),
                          c->out[0]->data, numel(x) / (K ? K : 1), c->in[1]->dims[0], K);
    }
    case TG_OP_MATMUL:
        return tgc_matmul(cs, x->rank, x->dims, x->data, c->in[1]->rank, c->in[1]->dims,
                          c->in[1]->dtype, c->in[1]->data, c->out[0]->data);
    default:    /* linear_packed, conv_nhwc: tgc_supports refuses them */
        return tg_err("%s has no CUDA glue", tg_op_table[c->n->op].name);
    }
}

TG_FAMILY_HANDLES(gen, 2);
static int run_gen(const tgc_state *cs, const tg_run_ctx *c)
{
    tg_tensor *y = c->out[0];
    uint8_t value[8];
    tg_cpu_gen d;
    tg_cpu_gen_desc(c->n, &d);
    if (c->n->op == TG_OP_FULL) {
        tgk_store_f64(tg_run_kt(y->dtype), value, 0, d.value);
        return launched(tgc_fill(tg_dtype_size(y->dtype), numel(y), value, y->data, cs->stream));
    }
    return launched(tgc_arange(tg_run_kt(y->dtype), y->dims[0], d.start, d.step, y->data,
                               cs->stream));
}

/* ---- the dispatch ------------------------------------------------------------------------ */

/* One entry per family of ops.def (tg_op_info.family) that this backend runs,
 * like the CPU's tables by family; has_glue asks the same table. */
static const struct family_glue {
    const char *family;
    int (*run)(const tgc_state *cs, const tg_run_ctx *c);
} glue[] = {
    {"unary", run_unary}, {"binary", run_binary_family}, {"where", run_where},
    {"cast", run_cast}, {"alias", run_alias}, {"reduce", run_reduce_family},
    {"arg_reduce", run_arg_family}, {"softmax", run_softmax_family}, {"cumsum", run_cumsum},
    {"norm", run_norm}, {"linalg", run_linalg}, {"pool", run_pool},
    {"movement", run_movement}, {"index", run_index}, {"gen", run_gen},
    {"sparse", run_linear_24},
};

static const struct family_glue *glue_of(tg_op op)
{
    for (size_t k = 0; k < sizeof glue / sizeof glue[0]; k++)
        if (!strcmp(tg_op_table[op].family, glue[k].family))
            return &glue[k];
    return NULL;
}

int tgc_run_node(const tgc_state *cs, const tg_run_ctx *c)
{
    const struct family_glue *e = glue_of(c->n->op);
    if (!e)
        return tg_err("%s: the CUDA backend has no glue for family %s",
                      tg_op_table[c->n->op].name, tg_op_table[c->n->op].family);
    return e->run(cs, c);
}
