/* Max and average pooling specialized at compile time, in passes that
 * vectorize: the input rows of a plane (a block of them at a time) copied
 * into lines whose padding and ceil-mode overhang hold the reduction's
 * identity, so every window lies inside; each line's windows reduced along
 * it; then each output row the reduction of its window's rows (a whole
 * window in one loop straight into y). With a stride, each line is held
 * split into its stride phases (input column j * sw + r - pw -> phase r,
 * element j), copied so straight from the input, so a tap reads a phase at a
 * constant offset and every loop runs over contiguous floats: SqueezeNet's
 * 3x3 / 2 went from 9 strided loads an output, which GCC left scalar, to
 * unit-stride vectors (2.8 -> 1.9 ms, 512 planes of 63x63). Rows along
 * first, then down: the taps in the reference's order (row-major), so max
 * keeps the same NaN and signed zero. Planes (image, channel) run on the
 * thread pool. Only f32 with constant spatial sizes, a line of at most
 * MAX_LINE floats and a plane's reduced rows of at most MAX_ROWS (both on
 * the stack), planes of NCHW (not channels_last); anything else stays a
 * kernel call. */
#include "cg.h"

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>

#include "../../error.h"
#include "opmap.h"

#define MAX_LINE 4096
#define MAX_ROWS 16384
#define MAX_BLOCK 16384

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
    if (d.channels_last)    /* planes are not contiguous: the kernel's NHWC path */
        return false;
    *q = (geom){1, 0, 1, 0, 1, d.kernel[l], 1, d.stride[l], 0, d.pad[l], 1, d.dil[l]};
    if (nsp == 2)
        q->kh = d.kernel[0], q->sh = d.stride[0], q->ph = d.pad[0], q->dh = d.dil[0];
    *include_pad = d.count_include_pad;
    int w = x->shape.rank - 1;
    return (a < 0 || (tg_dim_is_const(x->shape.d[a], &q->ih) &&
                      tg_dim_is_const(y->shape.d[a], &q->oh))) &&
           tg_dim_is_const(x->shape.d[w], &q->iw) && tg_dim_is_const(y->shape.d[w], &q->ow);
}

/* Taps whose padded-input coordinate lies in [0, lim) along one axis. */
static int64_t taps_in(int64_t start, int64_t k, int64_t dil, int64_t lim)
{
    int64_t n = 0;
    for (int64_t i = 0; i < k; i++)
        n += start + i * dil >= 0 && start + i * dil < lim;
    return n;
}

/* A phase of the line an input row is copied into: the padded row from
 * index 0, as far as the last window reaches, over the stride. */
static int64_t phase_len(const geom *q)
{
    int64_t need = (q->ow - 1) * q->sw + (q->kw - 1) * q->dw + 1;
    return (need + q->sw - 1) / q->sw;
}

/* One step of a reduction into a: max (NaN wins, like torch) or sum. The NaN
 * test is a select of its own: written "v > a || v != v" it became a branch
 * per tap and kept the loop scalar (23x slower on the cnn fixture's 2x2 pool). */
static const char *step(bool max)
{
    return max ? "a = v != v ? v : v > a ? v : a;" : "a += v;";
}

/* Loops over [0, n) running body (lines at the loop's indent, ind): when the
 * body may run twice on an element (redo: max, a copy, or a pure function of
 * the index), [0, n rounded down to VL) and then the last VL again, so that no
 * loop keeps a scalar remainder (GCC compiled the max's select there as a
 * branch, which random data mispredicts half the time). "unroll 1": GCC
 * unrolled a loop of 16 completely before vectorizing it, into scalar selects
 * (the same loops, 512 planes of 63x63: 2.4 -> 1.2 ms). */
#define VL 16
static void loops(FILE *f, const char *ind, const char *var, int64_t n, bool redo,
                  const char *body)
{
    /* fewer than VL elements: the largest power of two in n as the width, so
     * a row of 15 is two loops of 8 (ymm) and one of 7 two of 4, not a
     * vector, a half and scalar selects (SqueezeNet's 31 -> 15 and 15 -> 7
     * pools at 1.3 and 1.0 ns an input element, against 0.6 at 63 -> 31) */
    int64_t w = VL;
    while (redo && w > n && w > 2)
        w /= 2;
    int64_t whole = n / w * w;
    bool twice = redo && n > w && whole != n;
    for (int pass = 0; pass < 1 + twice; pass++)
        fprintf(f, "#pragma GCC unroll 1\n%sfor (int64_t %s = %" PRId64 "; %s < %" PRId64
                "; %s++) {\n%s%s}\n", ind, var, pass ? n - w : 0, var,
                twice && !pass ? whole : n, var, body, ind);
}

/* fmt printed into a string: a loop's body for loops() */
static char *text(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
static char *text(const char *fmt, ...)
{
    static char buf[8][16384];
    static int next;
    char *b = buf[next++ % 8];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(b, sizeof buf[0], fmt, ap);
    va_end(ap);
    return b;
}

/* Rows a block of the phases buffer holds: as many as fit MAX_BLOCK floats. */
static int64_t block_rows(const geom *q, int64_t len)
{
    int64_t r = MAX_BLOCK / len;
    return r < 1 ? 1 : r < q->ih ? r : q->ih;
}

/* phase r's elements [j0, j1) copied from the input row (into line l) */
static void copy_phase(FILE *f, const geom *q, int64_t lp, int64_t r, int64_t j0, int64_t j1)
{
    if (j1 > j0)
        loops(f, "                ", "j", j1 - j0, true,
              text("                    l[%" PRId64 " + j] = row[j * %" PRId64 " + %" PRId64
                   "];\n", r * lp + j0, q->sw, j0 * q->sw + r - q->pw));
}

/* An input row into its stride phases. Where every phase is read, the
 * elements all phases have come in one loop over whole groups of sw input
 * floats (a phase alone reads every sw-th float: GCC peeled its vector
 * loop's last iterations to scalar code, not to read the gap past the
 * row's last one), and each phase's few others after. */
static void emit_split(FILE *f, const geom *q, int64_t lp)
{
    int64_t jlo[64], jhi[64], j0 = 0, j1 = lp;
    bool used[64] = {0}, all = q->sw > 1;
    for (int64_t kw = 0; kw < q->kw; kw++)
        used[kw * q->dw % q->sw] = true;
    for (int64_t r = 0; r < q->sw; r++) {
        jlo[r] = q->pw > r ? (q->pw - r + q->sw - 1) / q->sw : 0;
        jhi[r] = (q->iw + q->pw - r + q->sw - 1) / q->sw;
        jhi[r] = jhi[r] < lp ? jhi[r] : lp;
        all = all && used[r];
        j0 = jlo[r] > j0 ? jlo[r] : j0;
        j1 = jhi[r] < j1 ? jhi[r] : j1;
    }
    if (!all || j1 <= j0) {
        for (int64_t r = 0; r < q->sw; r++)
            if (used[r])
                copy_phase(f, q, lp, r, jlo[r], jhi[r]);
        return;
    }
    char *body = text("%s", "");
    for (int64_t r = 0; r < q->sw; r++)
        body = text("%s                    l[%" PRId64 " + j] = row[j * %" PRId64 " + %" PRId64
                    "];\n", body, r * lp + j0, q->sw, j0 * q->sw + r - q->pw);
    loops(f, "                ", "j", j1 - j0, true, body);
    for (int64_t r = 0; r < q->sw; r++) {
        copy_phase(f, q, lp, r, jlo[r], j0);
        copy_phase(f, q, lp, r, j1, jhi[r]);
    }
}

/* The function's body, from its opening brace. */
static void emit_body(FILE *f, const geom *q, bool max, bool include_pad)
{
    /* phases of lp floats (whole vectors): an input row's line as long as
     * its windows reach, split over the stride */
    int64_t lp = (phase_len(q) + VL - 1) / VL * VL, len = lp * q->sw, R = block_rows(q, len);
    const char *fill = max ? "-INFINITY" : "0.0f";
    fprintf(f, "{\n");
    if (!max) {     /* the divisor of every output, known now */
        fprintf(f, "    static const float count[%" PRId64 "] = {", q->oh * q->ow);
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
    int64_t owp = (q->ow + VL - 1) / VL * VL;
    /* the padding and overhang: never written by the rows, filled once */
    fprintf(f, "    const tgrt_loop *L = ctx;\n    const float *restrict x = L->in[0];\n"
            "    float *restrict y = L->out;\n"
            "    float ph[%" PRId64 "], rows[%" PRId64 "];\n"
            "    for (int64_t i = 0; i < %" PRId64 "; i++)\n        ph[i] = %s;\n",
            R * len, q->ih * owp, R * len, fill);
    fprintf(f, "    for (int64_t p = r0; p < r1; p++) {\n"
            "        const float *xp = x + p * %" PRId64 ";\n"
            "        float *yp = y + p * %" PRId64 ";\n"
            "        for (int64_t b0 = 0; b0 < %" PRId64 "; b0 += %" PRId64 ") {\n"
            "            const int64_t nb = %" PRId64 " - b0 < %" PRId64 " ? %" PRId64
            " - b0 : %" PRId64 ";\n"
            "            for (int64_t r = 0; r < nb; r++) {\n"
            "                const float *row = xp + (b0 + r) * %" PRId64 ";\n"
            "                float *l = ph + r * %" PRId64 ";\n",
            q->ih * q->iw, q->oh * q->ow, q->ih, R, q->ih, R, q->ih, R, q->iw, len);
    /* tap kw reads the padded row at ow * sw + kw * dw: phase (kw dw) % sw at
     * (kw dw) / sw; phase r's element j is input column j sw + r - pw, copied
     * straight from the input (a line copied first and split, or read at
     * offsets, waited on its own stores: 6x slower on 16x16 -> 8x8 / 2) */
    emit_split(f, q, lp);
    /* then each row's windows along it, into rows */
    fprintf(f, "            }\n            for (int64_t r = 0; r < nb; r++) {\n"
            "                const float *l = ph + r * %" PRId64 ";\n"
            "                float *hr = rows + (b0 + r) * %" PRId64 ";\n", len, owp);
    char *body = text("                    float a = l[ow], v;\n");
    for (int64_t kw = 1; kw < q->kw; kw++)
        body = text("%s                    v = l[%" PRId64 " + ow];\n                    %s\n",
                    body, kw * q->dw % q->sw * lp + kw * q->dw / q->sw, step(max));
    loops(f, "                ", "ow", q->ow, true,
          text("%s                    hr[ow] = a;\n", body));
    /* then each output row over its window's rows [k0, k1) inside the input:
     * taps in the reference's order, rows outer (max keeps the first NaN) */
    fprintf(f, "            }\n        }\n"
            "        for (int64_t oh = 0; oh < %" PRId64 "; oh++, yp += %" PRId64 ") {\n"
            "            const int64_t h0 = oh * %" PRId64 " - %" PRId64 ";\n"
            "            int64_t k0 = h0 < 0 ? (-h0 + %" PRId64 ") / %" PRId64 " : 0;\n"
            "            int64_t k1 = %" PRId64 " - h0 <= 0 ? 0 : (%" PRId64 " - h0 + %" PRId64
            ") / %" PRId64 ";\n"
            "            k1 = k1 < %" PRId64 " ? k1 : %" PRId64 ";\n"
            "            const float *hr = rows + (h0 + k0 * %" PRId64 ") * %" PRId64 ";\n",
            q->oh, q->ow, q->sh, q->ph, q->dh - 1, q->dh, q->ih, q->ih, q->dh - 1, q->dh,
            q->kh, q->kh, q->dh, owp);
    char store[128];    /* its own: text() reuses its buffers */
    if (max)
        snprintf(store, sizeof store, "yp[ow] = a;");
    else
        snprintf(store, sizeof store, "yp[ow] = a / count[oh * %" PRId64 " + ow];", q->ow);
    /* a whole window: its rows in one loop, straight into y */
    body = text("                float a = hr[ow], v;\n");
    for (int64_t kh = 1; kh < q->kh; kh++)
        body = text("%s                v = hr[%" PRId64 " + ow];\n                %s\n", body,
                    kh * q->dh * owp, step(max));
    fprintf(f, "            if (k1 - k0 == %" PRId64 ") {\n", q->kh);
    loops(f, "                ", "ow", q->ow, true,
          text("%s                %s\n", body, store));
    fprintf(f, "                continue;\n            }\n"
            "            float out[%" PRId64 "];\n", owp);
    loops(f, "            ", "ow", q->ow, true,
          text("                out[ow] = k1 > k0 ? hr[ow] : %s;\n", fill));
    fprintf(f, "            for (int64_t k = k0 + 1; k < k1; k++) {\n"
            "                hr += %" PRId64 ";\n", q->dh * owp);
    loops(f, "                ", "ow", q->ow, max,
          text("                    float a = out[ow];\n"
               "                    const float v = hr[ow];\n"
               "                    %s\n                    out[ow] = a;\n", step(max)));
    fprintf(f, "            }\n");
    loops(f, "            ", "ow", q->ow, true,
          text("                const float a = out[ow];\n                %s\n", store));
    fprintf(f, "        }\n    }\n}\n");
}

/* The pool's function as a hot one (cg_hot_add): the name to call, or NULL. */
static const char *emit_function(tg_cg *c, int n, const geom *q, bool max, bool include_pad)
{
    char *body = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&body, &len);
    if (!f)
        return tg_err("out of memory"), NULL;
    emit_body(f, q, max, include_pad);
    fclose(f);
    const char *name = cg_hot_add(c, cg_str(c, "%spool_%d", c->pre, n), body);
    free(body);
    return name;
}

int cg_emit_pool(tg_cg *c, int n)
{
    const tg_node *nd = &c->g->nodes[n];
    geom q;
    bool include_pad;
    /* the line and a plane's rows on the stack; a window's taps in one loop body */
    if (!pool_geom(c->g, nd, &q, &include_pad) || phase_len(&q) * q.sw > MAX_LINE ||
        q.ih * (q.ow + VL - 1) / VL * VL > MAX_ROWS || q.sw > 64 || q.kw > 64)
        return 1;
    const char *fn = emit_function(c, n, &q, nd->op == TG_OP_MAX_POOL, include_pad);
    if (!fn)
        return -1;
    const tg_value *x = tg_node_input(c->g, nd, 0);
    fprintf(c->f, "    tgrt_loop L;\n    L.in[0] = %s;\n    L.out = %s;\n"
            "    tgk_parallel_for(%s, %" PRId64 ", %s, &L);\n",
            cg_ptr(c, nd->in[0]), cg_ptr(c, nd->out[0]), cg_prod(c, &x->shape, 0, 2),
            1 + 32768 / (q.oh * q.ow * q.kh * q.kw), fn);
    return 0;
}
