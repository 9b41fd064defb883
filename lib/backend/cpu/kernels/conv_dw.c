/* Depthwise convolution (groups == c, k a multiple of c), one output plane
 * (image, channel) at a time, 1-3 spatial dims run as 3-D.
 *
 * The plane's input is first copied zero-padded and split by stride phase:
 * with strides s, phase (pd, ph, pw) holds the padded input at
 * (d s0 + pd, h s1 + ph, w s2 + pw) for d, h, w < Q, the output's size plus
 * the kernel's reach in phase units. A tap (kd, kh, kw) then reads one phase
 * at a fixed offset from the output position. The output is computed on the
 * phases' own pitch (rows Q2 floats apart, depth slices Q1 rows apart): a
 * contiguous run of flat positions in which every tap is a vector load at a
 * constant offset and an FMA into a register, whatever the stride, dilation
 * or padding. Small planes (8x8, 4x4) fill vectors across rows instead of
 * leaving most lanes of a row-at-a-time loop empty, and nothing is stored
 * until every tap is summed. The positions past the output's width and
 * height are computed and dropped when the rows are copied out: with a 3x3
 * kernel on 8x8, 80 positions for 64 outputs.
 *
 * The earlier kernel (a row of one tap at a time, with its valid range
 * worked out per row and tap, read-modify-write of the output per tap) ran
 * MobileNetV3's 8x8 and 4x4 layers at 1-2 GFLOP/s. */
#include "backend/cpu/kernels/conv_geom.h"
#include "backend/cpu/kernels/kernels.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "backend/cpu/kernels/vecmath.h"

/* Vectors a step of the main loop: independent FMA chains enough to cover
 * the FMA latency (4 cycles on Zen 4 and Skylake). */
#define DW_NV 4

typedef struct {
    const tgk_conv_desc *d;
    const tgk_conv_geom *g;
    const float *x, *w, *b;
    float *y;
    int64_t q[3];               /* phase sizes (depth, rows, columns) */
    int64_t nph[3];             /* phases a dim: those the taps reach */
    int64_t phase_sz, len;      /* floats a phase; flat positions computed (whole vectors) */
    int64_t buf_sz;             /* the phased input and a vector of slack */
    int64_t *tapoff;            /* per tap: its phase's offset + its offset in the phase */
    atomic_bool failed;
} dw_job;

typedef struct {
    int64_t vl;                 /* floats a vector */
    void (*run)(const float *in, const int64_t *off, const float *w, int64_t taps, float bias,
                bool relu, int64_t len, float *out);
} dw_kernel;

#define UNROLL _Pragma("GCC unroll 16")

/* NAME: out[0, len) = bias + sum_t w[t] in[off[t] + j] (then relu), len a
 * multiple of VL; DW_NV vectors a step, then what is left 2 and 1 at a time.
 * Compiled with ATTR (a target or nothing) for vectors of VL floats. */
#define DW_KERNEL(NAME, ATTR, VL)                                                           \
    typedef float NAME##_vec __attribute__((vector_size((VL) * sizeof(float))));           \
    typedef int32_t NAME##_ivec __attribute__((vector_size((VL) * sizeof(float))));        \
    ATTR static inline __attribute__((always_inline)) void NAME##_step(                     \
        const int nv, const float *in, const int64_t *off, const float *w, int64_t taps,    \
        float bias, bool relu, float *out)                                                  \
    {                                                                                       \
        NAME##_vec acc[DW_NV];                                                              \
        UNROLL for (int v = 0; v < nv; v++)                                                 \
            acc[v] = (NAME##_vec){0} + bias;                                                \
        for (int64_t t = 0; t < taps; t++) {                                                \
            const float *s = in + off[t];                                                   \
            float wt = w[t];                                                                \
            UNROLL for (int v = 0; v < nv; v++) {                                           \
                NAME##_vec xv;                                                              \
                memcpy(&xv, s + v * (VL), sizeof xv);                                       \
                acc[v] += wt * xv;                                                          \
            }                                                                               \
        }                                                                                   \
        UNROLL for (int v = 0; v < nv; v++) {                                               \
            if (relu) /* clear the lanes < 0: NaN and -0 stay, as relu leaves them */       \
                acc[v] = (NAME##_vec)((NAME##_ivec)acc[v] & ~(NAME##_ivec)(acc[v] < 0));    \
            memcpy(out + v * (VL), &acc[v], sizeof acc[v]);                                 \
        }                                                                                   \
    }                                                                                       \
    ATTR static void NAME##_run(const float *in, const int64_t *off, const float *w,        \
                                int64_t taps, float bias, bool relu, int64_t len, float *out) \
    {                                                                                       \
        int64_t j = 0;                                                                      \
        for (; j + DW_NV * (VL) <= len; j += DW_NV * (VL))                                  \
            NAME##_step(DW_NV, in + j, off, w, taps, bias, relu, out + j);                  \
        if (j + 2 * (VL) <= len) {                                                          \
            NAME##_step(2, in + j, off, w, taps, bias, relu, out + j);                      \
            j += 2 * (VL);                                                                  \
        }                                                                                   \
        if (j < len)                                                                        \
            NAME##_step(1, in + j, off, w, taps, bias, relu, out + j);                      \
    }                                                                                       \
    static const dw_kernel NAME = {(VL), NAME##_run};

#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
DW_KERNEL(dw_v4, __attribute__((target("arch=x86-64-v4"))), 16)
DW_KERNEL(dw_v3, __attribute__((target("arch=x86-64-v3"))), 8)
#endif
DW_KERNEL(dw_base, , 4)

/* The widest this CPU runs, or (isa) the named one if it runs it. */
static const dw_kernel *dw_find(const char *isa)
{
    bool any = !isa;
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
    __builtin_cpu_init();
    if ((any || !strcmp(isa, "avx512")) && __builtin_cpu_supports("x86-64-v4"))
        return &dw_v4;
    if ((any || !strcmp(isa, "avx2")) && __builtin_cpu_supports("x86-64-v3"))
        return &dw_v3;
#endif
    return any || !strcmp(isa, "base") ? &dw_base : NULL;
}

static const dw_kernel *dw_kern;

/* chosen once, before any caller (a test may then pick another) */
__attribute__((constructor)) static void dw_pick(void)
{
    dw_kern = dw_find(NULL);
}

bool tgk_conv_dw_isa(const char *isa)
{
    const dw_kernel *k = dw_find(isa);
    if (k)
        dw_kern = k;
    return k != NULL;
}

/* input plane xc, split by phase, into buf: the positions that lie in the
 * input, copied (strides 1 and 2 as loops GCC vectorizes). The padding's
 * positions are the same for every plane: zeroed once, with the buffer. */
TGK_CLONES static void dw_phases(const dw_job *j, const float *xc, float *buf)
{
    const tgk_conv_geom *g = j->g;
    const int64_t *q = j->q, *s = g->str;
    float *dst = buf;
    for (int64_t pd = 0; pd < j->nph[0]; pd++)
        for (int64_t ph = 0; ph < j->nph[1]; ph++)
            for (int64_t pw = 0; pw < j->nph[2]; pw++) {
                int64_t off = pw - g->pad[2], c0, c1;
                tgk_conv_valid_range(q[2], s[2], off, g->in[2], &c0, &c1);
                for (int64_t rd = 0; rd < q[0]; rd++)
                    for (int64_t rh = 0; rh < q[1]; rh++, dst += q[2]) {
                        int64_t id = rd * s[0] + pd - g->pad[0], ih = rh * s[1] + ph - g->pad[1];
                        if (id < 0 || id >= g->in[0] || ih < 0 || ih >= g->in[1])
                            continue;
                        const float *src = xc + (id * g->in[1] + ih) * g->in[2] + off;
                        if (s[2] == 1)
                            for (int64_t c = c0; c < c1; c++)
                                dst[c] = src[c];
                        else if (s[2] == 2)
                            for (int64_t c = c0; c < c1; c++)
                                dst[c] = src[2 * c];
                        else
                            for (int64_t c = c0; c < c1; c++)
                                dst[c] = src[c * s[2]];
                    }
            }
}

/* planes (image, output channel) [begin, end) */
static void dw_planes(void *ctx, int64_t begin, int64_t end)
{
    dw_job *j = ctx;
    const tgk_conv_geom *g = j->g;
    const dw_kernel *kern = dw_kern;
    int64_t mult = j->d->k / j->d->c, last = -1;
    float *buf = calloc((size_t)(j->buf_sz + j->len), sizeof *buf);
    if (!buf) {
        atomic_store(&j->failed, true);
        return;
    }
    float *out = buf + j->buf_sz;
    for (int64_t p = begin; p < end; p++) {
        int64_t n = p / j->d->k, k = p % j->d->k, in_plane = n * j->d->c + k / mult;
        if (in_plane != last)   /* a multiplier's channels share their input */
            dw_phases(j, j->x + in_plane * g->in_sp, buf);
        last = in_plane;
        kern->run(buf, j->tapoff, j->w + k * g->kprod, g->kprod, j->b ? j->b[k] : 0.0f,
                  j->d->relu, j->len, out);
        float *y = j->y + p * g->out_sp;
        for (int64_t od = 0; od < g->out[0]; od++)
            for (int64_t oh = 0; oh < g->out[1]; oh++, y += g->out[2])
                memcpy(y, out + (od * j->q[1] + oh) * j->q[2], (size_t)g->out[2] * sizeof *y);
    }
    free(buf);
}

int tgk_conv_depthwise_f32(const tgk_conv_desc *d, const tgk_conv_geom *g, const float *x,
                           const float *w, const float *b, float *y)
{
    dw_job j = {.d = d, .g = g, .x = x, .w = w, .b = b, .y = y};
    int64_t vl = dw_kern->vl, nph = 1;
    for (int a = 0; a < 3; a++) {
        int64_t reach = (g->ker[a] - 1) * g->dil[a];
        j.q[a] = g->out[a] + reach / g->str[a];
        j.nph[a] = g->str[a] < reach + 1 ? g->str[a] : reach + 1;
        nph *= j.nph[a];
    }
    j.phase_sz = j.q[0] * j.q[1] * j.q[2];
    int64_t last = ((g->out[0] - 1) * j.q[1] + g->out[1] - 1) * j.q[2] + g->out[2];
    j.len = (last + vl - 1) / vl * vl;
    j.buf_sz = nph * j.phase_sz + vl;
    if (!(j.tapoff = malloc((size_t)g->kprod * sizeof *j.tapoff)))
        return -1;
    int64_t t = 0;
    for (int64_t kd = 0; kd < g->ker[0]; kd++)
        for (int64_t kh = 0; kh < g->ker[1]; kh++)
            for (int64_t kw = 0; kw < g->ker[2]; kw++) {
                int64_t rd = kd * g->dil[0], rh = kh * g->dil[1], rw = kw * g->dil[2];
                int64_t phase = ((rd % g->str[0]) * j.nph[1] + rh % g->str[1]) * j.nph[2] +
                                rw % g->str[2];
                j.tapoff[t++] = phase * j.phase_sz +
                                ((rd / g->str[0]) * j.q[1] + rh / g->str[1]) * j.q[2] +
                                rw / g->str[2];
            }
    atomic_init(&j.failed, false);
    /* tasks of at least ~64K multiply-adds */
    tgk_parallel_for(d->n * d->k, 1 + 65536 / (j.len * g->kprod), dw_planes, &j);
    free(j.tapoff);
    return atomic_load(&j.failed) ? -1 : 0;
}
