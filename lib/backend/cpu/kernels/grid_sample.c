/* grid_sample (ONNX GridSample, torch's grid_sampler): x [N,C,*sp] read at the
 * points of grid [N,*out,nsp], each entry in [-1, 1] across one spatial axis
 * (entry 0 the last axis). Written as ONNX's reference does it: the point
 * unnormalized, rounded half to even for nearest, brought inside by border or
 * reflection padding, then 1, 2 or 4 taps per axis whose indices the padding
 * maps again (zeros: a tap outside reads 0). Coordinates and sums in double,
 * whatever x's floating dtype. The kernel, then the interpreter's and the C
 * emitter's glue (tgraph-ops(7), ADDING AN OP). One departure from ONNX's
 * reference: cubic with border padding leaves the point where it is (its
 * taps are clamped still), as ONNX Runtime and torch do; the reference
 * clamps the point first, which shifts the taps near the edges. */
#include <inttypes.h>
#include <math.h>

#include "kernels.h"
#include "tensor_ops.h"

#define GS_MAX_SP 3

typedef struct {
    tgk_dtype t;
    int nsp, mode, padding;     /* tgraph-ops(7)'s order: linear nearest cubic; zeros border reflection */
    bool align;
    int64_t n, c, out;          /* out: grid points per batch entry */
    int64_t in[GS_MAX_SP];
    const void *x, *grid;
    void *y;
} gs_ctx;

/* ONNX's reflection of v into [lo, hi] by its nearer border, repeatedly. */
static double reflect(double v, double lo, double hi)
{
    double span = hi - lo;
    if (!(span > 0))
        return lo;
    if (v < lo || v > hi) {
        double d = v < lo ? lo - v : v - hi, k = floor(d / span), r = d - k * span;
        bool near = fmod(k, 2) == 0;
        v = (v < lo) == near ? lo + r : hi - r;
    }
    return v;
}

/* The index a tap at i of an axis of d elements reads; -1: a zero. */
static int64_t tap(const gs_ctx *c, int64_t i, int64_t d, double lo, double hi)
{
    if (d <= 0)
        return -1;
    if (c->padding == 0)
        return i >= 0 && i < d ? i : -1;
    if (c->padding == 1)
        return i < 0 ? 0 : i >= d ? d - 1 : i;
    int64_t r = (int64_t)reflect((double)i, lo, hi);
    return r < 0 ? 0 : r >= d ? d - 1 : r;
}

static void cubic_weights(double t, double *w)
{
    const double a = -0.75;
    double t1 = t + 1, t2 = 1 - t, t3 = 2 - t;
    w[0] = ((a * t1 - 5 * a) * t1 + 8 * a) * t1 - 4 * a;
    w[1] = ((a + 2) * t - (a + 3)) * t * t + 1;
    w[2] = ((a + 2) * t2 - (a + 3)) * t2 * t2 + 1;
    w[3] = ((a * t3 - 5 * a) * t3 + 8 * a) * t3 - 4 * a;
}

static void gs_task(void *vctx, int64_t begin, int64_t end)
{
    const gs_ctx *c = vctx;
    int nsp = c->nsp, ntap = c->mode == 1 ? 1 : c->mode == 0 ? 2 : 4;
    int64_t plane = 1;
    for (int k = 0; k < nsp; k++)
        plane *= c->in[k];
    for (int64_t o = begin; o < end; o++) {
        int64_t b = o / c->out, idx[GS_MAX_SP][4], stride = 1;
        double w[GS_MAX_SP][4];
        for (int k = nsp - 1; k >= 0; k--) {    /* axis k takes grid entry nsp-1-k */
            int64_t d = c->in[k];
            double g = tgk_load_f64(c->t, c->grid, o * nsp + (nsp - 1 - k));
            double lo = c->align ? 0 : -0.5, hi = c->align ? (double)d - 1 : (double)d - 0.5;
            double v = c->align ? (g + 1) / 2 * (double)(d - 1) : ((g + 1) * (double)d - 1) / 2;
            if (c->mode == 1)
                v = nearbyint(v);
            if ((v < lo || v > hi) && c->padding == 1 && c->mode != 2)   /* see below */
                v = v < 0 ? 0 : v > (double)d - 1 ? (double)d - 1 : v;
            else if ((v < lo || v > hi) && c->padding == 2)
                v = reflect(v, lo, hi);
            if (!(v >= -5))         /* far outside (or NaN): every tap outside too, and */
                v = -5;             /* the cast below stays defined */
            if (v > (double)d + 4)
                v = (double)d + 4;
            double f = c->mode == 1 ? v : floor(v), t = v - f;
            int64_t i0 = (int64_t)f - (c->mode == 2 ? 1 : 0);
            if (c->mode == 0)
                w[k][0] = 1 - t, w[k][1] = t;
            else if (c->mode == 2)
                cubic_weights(t, w[k]);
            else
                w[k][0] = 1;
            for (int j = 0; j < ntap; j++) {
                int64_t at = tap(c, i0 + j, d, lo, hi);
                idx[k][j] = at < 0 ? -1 : at * stride;
            }
            stride *= d;
        }
        int ncomb = 1;
        for (int k = 0; k < nsp; k++)
            ncomb *= ntap;
        for (int64_t ch = 0; ch < c->c; ch++) {
            int64_t base = (b * c->c + ch) * plane;
            double sum = 0;
            for (int m = 0; m < ncomb; m++) {
                double wt = 1;
                int64_t at = 0;
                for (int k = 0, r = m; k < nsp; k++, r /= ntap) {
                    int j = r % ntap;
                    if (idx[k][j] < 0) {
                        at = -1;
                        break;
                    }
                    at += idx[k][j];
                    wt *= w[k][j];
                }
                if (at >= 0 && wt != 0)
                    sum += wt * tgk_load_f64(c->t, c->x, base + at);
            }
            tgk_store_f64(c->t, c->y, (b * c->c + ch) * c->out + o % c->out, sum);
        }
    }
}

/* y [n, c, out] from x [n, c, in[0..nsp)] at grid [n, out, nsp]; mode 0 linear,
 * 1 nearest, 2 cubic; padding 0 zeros, 1 border, 2 reflection. -1: t is not
 * floating point or nsp not 1 to 3. */
TGK_DECL int tgk_grid_sample(tgk_dtype t, int nsp, int64_t n, int64_t c, const int64_t *in, int64_t out,
                             int mode, int padding, bool align_corners, const void *x,
                             const void *grid, void *y)
{
    if (!tgk_dtype_is_float(t) || nsp < 1 || nsp > GS_MAX_SP || mode < 0 || mode > 2 ||
        padding < 0 || padding > 2)
        return -1;
    gs_ctx g = {t, nsp, mode, padding, align_corners, n, c, out, {0}, x, grid, y};
    for (int k = 0; k < nsp; k++)
        g.in[k] = in[k];
    tgk_parallel_for(n * out, c >= 64 ? 1 : 64 / (c ? c : 1), gs_task, &g);
    return 0;
}

#ifndef TGK_KERNELS_ONLY
#include "../../../ops/resize.h"
#include "../cg.h"
#include "../run.h"

#define TG_COUNTED grid_sample
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(grid_sample, 1);
int tg_run_grid_sample(const tg_run_ctx *c)
{
    const tg_tensor *x = c->in[0], *grid = c->in[1];
    tg_grid_sample r;
    if (tg_grid_sample_read(c->n, &r))
        return -1;
    if (grid->dims[0] != x->dims[0])
        return tg_err("grid has batch %" PRId64 ", x %" PRId64, grid->dims[0], x->dims[0]);
    int nsp = x->rank - 2;
    if (tgk_grid_sample(tg_run_kt(x->dtype), nsp, x->dims[0], x->dims[1], x->dims + 2,
                        tg_run_prod(grid->dims, 1, grid->rank - 1), (int)r.mode, (int)r.padding,
                        r.align_corners, x->data, grid->data, c->out[0]->data))
        return tg_err("not defined for dtype %s", tg_dtype_name(x->dtype));
    return 0;
}

int cg_node_grid_sample(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = tg_node_input(c->g, nd, 0), *grid = tg_node_input(c->g, nd, 1);
    tg_grid_sample r;
    if (tg_grid_sample_read(nd, &r))
        return -1;
    int nsp = x->shape.rank - 2;
    fprintf(c->f, "    {\n        const int64_t in[] = {");
    for (int k = 0; k < nsp; k++)
        fprintf(c->f, "%s%s", k ? ", " : "", cg_dim(c, x->shape.d[2 + k]));
    fprintf(c->f, "};\n        (void)tgk_grid_sample(%s, %d, %s, %s, in, %s, %d, %d, %d, %s, %s, %s);\n    }\n",
            cg_dtype_enum(c, "TGK_", x->dtype), nsp, cg_dim(c, x->shape.d[0]), cg_dim(c, x->shape.d[1]),
            cg_prod(c, &grid->shape, 1, grid->shape.rank - 1), (int)r.mode, (int)r.padding,
            (int)r.align_corners, cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]), cg_ptr(c, nd->out[0]));
    return 0;
}
#endif
