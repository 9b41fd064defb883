/* The CUDA backend's sdpa nodes: through the flash-attention kernels
 * (flash.h: bf16 or fp16, head dims 64, 128 and 256, compute capability 8.0
 * and up) where they take the case, else through the simple kernel (k_nn.cu:
 * float32, one warp a query row). bf16 and fp16 tensors reach the simple
 * kernel converted to float32; float32 ones reach the flash kernels only
 * when TG_CUDA_MATH asks (bf16 or fp16: converted to it, fp32 accumulation,
 * the output converted back). TLOG=run says per node which kernel ran and
 * why. */
#include <stdio.h>
#include <string.h>

#include "../../error.h"
#include "../../log.h"
#include "../cpu/run.h"
#include "cuda.h"
#include "flash.h"

/* The device buffers one node borrows, given back on the stream after it. */
#define MAX_TEMPS 8
typedef struct {
    cudaStream_t stream;
    void *p[MAX_TEMPS];
    int n;
    int err;                    /* the first cudaError_t (-1: the flash kernels'); later
                                 * steps do nothing */
    const char *what;           /* the step it came from, or the flash kernels' words */
} temps;

static void *temp(temps *t, size_t bytes, const char *what)
{
    void *p = NULL;
    if (t->err)
        return NULL;
    if (t->n == MAX_TEMPS)
        t->err = cudaErrorMemoryAllocation;
    else
        t->err = cudaMallocAsync(&p, bytes ? bytes : 1, t->stream);
    if (t->err) {
        t->what = what;
        return NULL;
    }
    t->p[t->n++] = p;
    return p;
}

static void step(temps *t, int err, const char *what)
{
    if (!t->err && err) {
        t->err = err;
        t->what = what;
    }
}

/* x's elements as dtype to: x's own data when it has that dtype, else a
 * converted copy */
static const void *as_dtype(temps *t, tg_dtype to, const tg_tensor *x)
{
    if (x->dtype == to)
        return x->data;
    int64_t n = tg_run_numel(x);
    void *y = temp(t, (size_t)n * tg_dtype_size(to), "converting attention's inputs");
    if (y)
        step(t, tgc_cast(tg_run_kt(to), y, tg_run_kt(x->dtype), x->data, n, t->stream),
             "converting attention's inputs");
    return y;
}

/* o written in dtype from at y: where o has another dtype, converted into it */
static void store_output(temps *t, tg_tensor *o, tg_dtype from, const void *y)
{
    if (o->dtype != from && !t->err)
        step(t, tgc_cast(tg_run_kt(o->dtype), o->data, tg_run_kt(from), y, tg_run_numel(o),
                         t->stream), "converting attention's output");
}

/* The mask as both kernels read it, bool or additive float32 (a half-float
 * mask converted), with d's strides broadcasting it over [batch, hq, L, S];
 * expanded first where the leading batch dims do not fold into one stride
 * (as on the CPU). */
static const void *device_mask(temps *t, const tg_tensor *m, const tg_tensor *q, tgk_sdpa_desc *d)
{
    tg_dtype mt = m->dtype == TG_BOOL ? TG_BOOL : TG_F32;
    const void *base = as_dtype(t, mt, m);
    int r = q->rank;
    int64_t sd[TG_MAX_RANK], st[TG_MAX_RANK];
    if (!tg_run_sdpa_mask_layout(m, q, d->S, sd, st)) {
        size_t es = tg_dtype_size(mt);
        tgc_iter it = {.rank = r};
        memcpy(it.dims, sd, sizeof(int64_t) * (size_t)r);
        tgk_broadcast_strides(r, sd, r, sd, it.st[0]);      /* contiguous */
        memcpy(it.st[1], st, sizeof(int64_t) * (size_t)r);
        void *e = temp(t, (size_t)tg_run_prod(sd, 0, r) * es, "expanding the mask");
        if (e)
            step(t, tgc_copy(es, &it, base, e, t->stream), "expanding the mask");
        base = e;
        memcpy(st, it.st[0], sizeof(int64_t) * (size_t)r);
    }
    tg_run_sdpa_mask_strides(r, st, d);
    return base;
}

/* Why the flash kernels cannot take the node (NULL: they can); *half: the
 * tgf_dtype they would run it in. */
static const char *flash_refusal(const tgc_state *cs, tg_dtype t, const tgk_sdpa_desc *d,
                                 int *half, char *buf, size_t size)
{
    *half = t == TG_BF16 ? TGF_BF16 : t == TG_F16 ? TGF_F16 : cs->attn_f32;
    if (*half < 0)
        return "f32 tensors: TG_CUDA_MATH=bf16 or fp16 lets the flash kernels take them";
    if (cs->sm < 80) {
        snprintf(buf, size, "compute capability %d.%d: the flash kernels need 8.0", cs->sm / 10,
                 cs->sm % 10);
        return buf;
    }
    if (d->E != d->Ev || (d->E != 64 && d->E != 128 && d->E != 256)) {
        snprintf(buf, size, "head dims %lld (qk) and %lld (v): the flash kernels take 64, 128 or"
                 " 256 for both", (long long)d->E, (long long)d->Ev);
        return buf;
    }
    if (d->S == 0)
        return "no keys";
    return NULL;
}

static const char *mask_words(const tg_tensor *m)
{
    return !m ? "no mask" : m->dtype == TG_BOOL ? "bool mask" : "additive mask";
}

static void log_choice(const tg_run_ctx *c, const tgc_state *cs, const tgk_sdpa_desc *d,
                       const tgf_attn_desc *fd, const char *why)
{
    const tg_tensor *q = c->in[0], *m = c->n->nin > 3 ? c->in[3] : NULL;
    char what[256];
    if (why)
        snprintf(what, sizeof what, "simple kernel, f32%s (flash: %s)",
                 q->dtype == TG_F32 ? "" : " converted", why);
    else
        snprintf(what, sizeof what, "flash %s, %s%s", tgf_attn_kernel(fd),
                 fd->dtype == TGF_BF16 ? "bf16" : "fp16",
                 q->dtype == TG_F32 ? " converted from f32 (TG_CUDA_MATH)" : "");
    TG_LOG(RUN, TG_LOG_INFO, "%s (sdpa): %s; head dim %lld, sm %d.%d, %s%s, %lld/%lld heads,"
           " L %lld, S %lld", c->n->name, what, (long long)d->E, cs->sm / 10, cs->sm % 10,
           mask_words(m), d->causal ? ", causal" : "", (long long)d->hq, (long long)d->hk,
           (long long)d->L, (long long)d->S);
}

/* the flash kernels on q, k, v in half; why not (NULL: they ran) */
static const char *run_flash(temps *t, const tg_run_ctx *c, tgf_attn_desc *fd, tg_dtype half)
{
    tg_tensor *o = c->out[0];
    const void *q = as_dtype(t, half, c->in[0]), *k = as_dtype(t, half, c->in[1]),
               *v = as_dtype(t, half, c->in[2]);
    void *y = o->dtype == half ? o->data
                               : temp(t, (size_t)tg_run_numel(o) * tg_dtype_size(half),
                                      "the flash kernels' output");
    if (t->err)
        return NULL;
    const char *why = tgf_attn_check(fd, q, k, v, y);
    if (why)
        return why;
    size_t ws = tgf_attn_workspace(fd);
    void *w = ws ? temp(t, ws, "the decode split's workspace") : NULL;
    if (!t->err && tgf_attn_forward(fd, q, k, v, y, w, ws, t->stream, &why)) {
        t->err = -1;
        t->what = why;
        return NULL;
    }
    store_output(t, o, half, y);
    return NULL;
}

static void run_simple(temps *t, const tg_run_ctx *c, const tgk_sdpa_desc *d, const void *mask,
                       bool mask_bool)
{
    tg_tensor *o = c->out[0];
    const void *q = as_dtype(t, TG_F32, c->in[0]), *k = as_dtype(t, TG_F32, c->in[1]),
               *v = as_dtype(t, TG_F32, c->in[2]);
    void *y = o->dtype == TG_F32 ? o->data
                                 : temp(t, (size_t)tg_run_numel(o) * sizeof(float),
                                        "the simple kernel's output");
    if (t->err)
        return;
    step(t, tgc_sdpa_f32(d, mask, mask_bool, q, k, v, y, t->stream), "launching attention");
    store_output(t, o, TG_F32, y);
}

int tgc_run_sdpa(const tgc_state *cs, const tg_run_ctx *c)
{
    const tg_tensor *q = c->in[0], *m = c->n->nin > 3 ? c->in[3] : NULL;
    tgk_sdpa_desc d;
    tg_run_sdpa_desc(c, &d);
    temps t = {.stream = cs->stream};
    const void *mask = m ? device_mask(&t, m, q, &d) : NULL;
    char buf[160];
    int half;
    const char *why = flash_refusal(cs, q->dtype, &d, &half, buf, sizeof buf);
    tgf_attn_desc fd = {
        .dtype = half,
        .mask_kind = !m ? TGF_MASK_NONE : m->dtype == TG_BOOL ? TGF_MASK_BOOL : TGF_MASK_ADD,
        .batch = d.batch, .hq = d.hq, .hk = d.hk, .L = d.L, .S = d.S, .D = d.E,
        .scale = d.scale, .causal = d.causal, .mask = mask,
        .kernel = TGF_KERNEL_AUTO,
    };
    memcpy(fd.mask_stride, d.mask_stride, sizeof fd.mask_stride);
    if (!why)
        why = run_flash(&t, c, &fd, half == TGF_BF16 ? TG_BF16 : TG_F16);
    if (why)
        run_simple(&t, c, &d, mask, m && m->dtype == TG_BOOL);
    if (!t.err)
        log_choice(c, cs, &d, &fd, why);
    for (int i = 0; i < t.n; i++)
        cudaFreeAsync(t.p[i], cs->stream);
    if (t.err)
        return t.err < 0 ? tg_err("cuda: flash attention: %s", t.what) : tgc_fail(t.err, t.what);
    return 0;
}
