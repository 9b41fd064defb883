/* Max and average pooling specialized at compile time: with the window,
 * strides, padding and spatial sizes known, each output row is a few loops
 * over the row with constant bounds that the compiler vectorizes (the kernel
 * in pool.c, which takes them at run time, computes one output at a time).
 * Planes (image, channel) run on the thread pool. Only f32 with constant
 * spatial sizes; anything else stays a kernel call. */
#include "cg.h"

#include <inttypes.h>

#include "../../error.h"
#include "opmap.h"

typedef struct {
    int64_t ih, iw, oh, ow, kh, kw, sh, sw, ph, pw, dh, dw;
} geom;

/* The geometry, or false when some of it is not a compile-time constant. */
static bool pool_geom(const tg_graph *g, const tg_node *nd, geom *q, bool *include_pad)
{
    const tg_value *x = tg_node_input(g, nd, 0), *y = &g->values[nd->out[0]];
    int nsp = x->shape.rank - 2, a = nsp == 2 ? 2 : -1, l = nsp - 1;
    tgk_pool_desc d;
    if (x->dtype != TG_F32 || (nsp != 1 && nsp != 2) || tg_cpu_pool_desc(nd, nsp, &d)) {
        tg_err_clear();
        return false;
    }
    *q = (geom){1, 0, 1, 0, 1, d.kernel[l], 1, d.stride[l], 0, d.pad[l], 1, d.dil[l]};
    if (nsp == 2)
        q->kh = d.kernel[0], q->sh = d.stride[0], q->ph = d.pad[0], q->dh = d.dil[0];
    *include_pad = d.count_include_pad;
    int w = x->shape.rank - 1;
    return (a < 0 || (tg_dim_is_const(x->shape.d[a], &q->ih) &&
                      tg_dim_is_const(y->shape.d[a], &q->oh))) &&
           tg_dim_is_const(x->shape.d[w], &q->iw) && tg_dim_is_const(y->shape.d[w], &q->ow);
}

/* Valid output columns for tap offset off: 0 <= ow*sw + off < lim. */
static void cols(const geom *q, int64_t off, int64_t lim, int64_t *lo, int64_t *hi)
{
    *lo = off < 0 ? (-off + q->sw - 1) / q->sw : 0;
    *hi = lim - off > 0 ? (lim - off + q->sw - 1) / q->sw : 0;
    if (*hi > q->ow)
        *hi = q->ow;
    if (*hi < *lo)
        *hi = *lo;
}

/* Taps whose padded-input coordinate lies in [0, lim) along one axis. */
static int64_t taps_in(int64_t start, int64_t k, int64_t dil, int64_t lim)
{
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++)
        n += start + i * dil >= 0 && start + i * dil < lim;
    return n;
}

/* One step of the window: max (NaN wins, like torch) or sum. The NaN test
 * is a select of its own: written "v > a || v != v" it became a branch per
 * tap and kept the loop scalar (23x slower on the cnn fixture's 2x2 pool). */
static const char *step(bool max)
{
    return max ? "a = v != v ? v : v > a ? v : a;" : "a += v;";
}

static void emit_function(tg_cg *c, int n, const geom *q, bool max, bool include_pad)
{
    FILE *f = c->fns;
    if (!max) {     /* the divisor of every output, known now */
        fprintf(f, "static const float %spool_%d_count[%" PRId64 "] = {", c->pre, n,
                q->oh * q->ow);
        for (int64_t oh = 0; oh < q->oh; oh++)
            for (int64_t ow = 0; ow < q->ow; ow++) {
                int64_t hs = oh * q->sh - q->ph, ws = ow * q->sw - q->pw;
                int64_t cnt = include_pad
                    ? taps_in(hs + q->ph, q->kh, q->dh, q->ih + 2 * q->ph) *
                          taps_in(ws + q->pw, q->kw, q->dw, q->iw + 2 * q->pw)
                    : taps_in(hs, q->kh, q->dh, q->ih) * taps_in(ws, q->kw, q->dw, q->iw);
                fprintf(f, "%s%" PRId64, oh || ow ? ", " : "", cnt ? cnt : 1);
            }
        fprintf(f, "};\n");
    }
    fprintf(f, "static void %spool_%d(void *ctx, int64_t p0, int64_t p1)\n{\n"
            "    const tgrt_loop *L = ctx;\n    const float *restrict x = L->in[0];\n"
            "    float *restrict y = L->out;\n"
            "    for (int64_t p = p0; p < p1; p++) {\n"
            "        const float *xp = x + p * %" PRId64 ";\n"
            "        float *yp = y + p * %" PRId64 ";\n"
            "        for (int64_t oh = 0; oh < %" PRId64 "; oh++) {\n"
            "            float acc[%" PRId64 "];\n"
            "            for (int64_t ow = 0; ow < %" PRId64 "; ow++)\n"
            "                acc[ow] = %s;\n",
            c->pre, n, q->ih * q->iw, q->oh * q->ow, q->oh, q->ow, q->ow,
            max ? "-INFINITY" : "0");
    fprintf(f, "            for (int64_t kh = 0; kh < %" PRId64 "; kh++) {\n"
            "                const int64_t ih = oh * %" PRId64 " - %" PRId64 " + kh * %" PRId64 ";\n"
            "                if (ih < 0 || ih >= %" PRId64 ")\n                    continue;\n"
            "                const float *row = xp + ih * %" PRId64 ";\n",
            q->kh, q->sh, q->ph, q->dh, q->ih, q->iw);
    /* columns where every tap is inside: one loop over all taps, which the
     * compiler vectorizes; the edges tap by tap */
    int64_t in_lo = 0, in_hi = q->ow;
    for (int64_t kw = 0; kw < q->kw; kw++) {
        int64_t lo, hi;
        cols(q, kw * q->dw - q->pw, q->iw, &lo, &hi);
        in_lo = lo > in_lo ? lo : in_lo;
        in_hi = hi < in_hi ? hi : in_hi;
    }
    if (in_hi > in_lo) {
        fprintf(f, "                for (int64_t ow = %" PRId64 "; ow < %" PRId64 "; ow++) {\n"
                "                    float a = acc[ow], v;\n", in_lo, in_hi);
        for (int64_t kw = 0; kw < q->kw; kw++)
            fprintf(f, "                    v = row[ow * %" PRId64 " + %" PRId64 "];\n"
                    "                    %s\n", q->sw, kw * q->dw - q->pw, step(max));
        fprintf(f, "                    acc[ow] = a;\n                }\n");
    } else {
        in_lo = in_hi = 0;
    }
    for (int64_t kw = 0; kw < q->kw; kw++) {
        int64_t off = kw * q->dw - q->pw, lo, hi;
        cols(q, off, q->iw, &lo, &hi);
        int64_t part[2][2] = {{lo, hi < in_lo ? hi : in_lo}, {lo > in_hi ? lo : in_hi, hi}};
        for (int e = 0; e < 2; e++)
            if (part[e][1] > part[e][0])
                fprintf(f, "                for (int64_t ow = %" PRId64 "; ow < %" PRId64 "; ow++) {\n"
                        "                    float a = acc[ow];\n"
                        "                    const float v = row[ow * %" PRId64 " + %" PRId64 "];\n"
                        "                    %s\n                    acc[ow] = a;\n                }\n",
                        part[e][0], part[e][1], q->sw, off, step(max));
    }
    fprintf(f, "            }\n            for (int64_t ow = 0; ow < %" PRId64 "; ow++)\n", q->ow);
    if (max)
        fprintf(f, "                yp[oh * %" PRId64 " + ow] = acc[ow];\n", q->ow);
    else
        fprintf(f, "                yp[oh * %" PRId64 " + ow] = acc[ow] / %spool_%d_count[oh * %"
                PRId64 " + ow];\n", q->ow, c->pre, n, q->ow);
    fprintf(f, "        }\n    }\n}\n\n");
}

int cg_emit_pool(tg_cg *c, int n)
{
    const tg_node *nd = &c->g->nodes[n];
    geom q;
    bool include_pad;
    if (!pool_geom(c->g, nd, &q, &include_pad))
        return 1;
    bool max = nd->op == TG_OP_MAX_POOL;
    emit_function(c, n, &q, max, include_pad);
    const tg_value *x = tg_node_input(c->g, nd, 0);
    fprintf(c->f, "    tgrt_loop L;\n    L.in[0] = %s;\n    L.out = %s;\n"
            "    tgk_parallel_for(%s, %" PRId64 ", %spool_%d, &L);\n",
            cg_ptr(c, nd->in[0]), cg_ptr(c, nd->out[0]), cg_prod(c, &x->shape, 0, 2),
            1 + 32768 / (q.oh * q.ow * q.kh * q.kw), c->pre, n);
    return 0;
}
