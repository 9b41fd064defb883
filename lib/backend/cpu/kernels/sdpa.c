/* Scaled dot-product attention, FlashAttention-2 on the CPU.
 *
 * One task is a block of BR query rows of one (batch, head). It walks the key
 * blocks of BC rows: S = scale * Q K^T for the tile (GEMM), plus the additive
 * mask; then the online softmax: a running row max m and sum l, the
 * accumulator rescaled by exp(m_old - m_new) whenever the max grows; then
 * acc += exp(S - m) V (GEMM). At the end o = acc / l. The causal cut is
 * not a mask: both products skip the tiles past it and the softmax stops at
 * it, so a diagonal block costs about half a full one. Scratch is
 * O(BR * (E + BC + Ev)) per thread, never O(L * S). Causal blocks right of the
 * diagonal are never computed. Tasks run on the pool; the tile products
 * inside them run on one thread, on the register-tiled kernel of
 * gemm_packed.c: each K and V tile is packed once per query block (nc x E
 * copies against nr x nc x E multiply-adds), where a BLAS call would pack
 * both operands on every call, which at head sizes of 32-128 costs as much
 * as the products. */
#include "backend/cpu/kernels/kernels.h"
#include "backend/cpu/kernels/vecmath.h"

#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define BR 32               /* query rows a task: the causal cut skips more */
/* Keys a tile. A row's softmax step has fixed costs (its max and sum folded,
 * the rescale of the accumulator): 256 keys cover a ViT's 197 (a 224 image's
 * patches and the class token) in one tile, where 128 took two steps a row. */
#define BC 256

typedef struct {
    const tgk_sdpa_desc *d;
    const float *q, *k, *v;
    float *o;
    int64_t qs[3], ks[3], vs[3], os[3];     /* strides of batch, head, row */
    int64_t nqb;                /* query blocks per (batch, head) */
    atomic_bool failed;
} sdpa_job;

typedef struct {
    float *s;                   /* [BR, BC] scores, then probabilities */
    float *acc;                 /* [BR, Ev] */
    float *q;                   /* [BR, E] the query block times scale */
    float *kp, *vp;             /* the key and value tiles, packed */
    const float *packed_k, *packed_v;   /* the first key and value kp and vp hold */
    int64_t packed_n;           /* and how many (0: none yet) */
    float m[BR], l[BR];
} tile;

/* The additive mask on a score tile: rows l0.., keys s0.. */
static void tile_mask(const tgk_sdpa_desc *d, float *s, int64_t b, int64_t h, int64_t l0,
                      int64_t nr, int64_t s0, int64_t nc)
{
    const int64_t *st = d->mask_stride;
    for (int64_t i = 0; i < nr; i++) {
        const float *mk = d->mask + b * st[0] + h * st[1] + (l0 + i) * st[2] + s0 * st[3];
        for (int64_t j = 0; j < nc; j++)
            s[i * BC + j] += mk[j * st[3]];
    }
}

/* Online softmax step over the first i + diag scores of row i (the causal
 * cut; the GEMM left the rest unwritten): scores -> exp(s - m_new) in place,
 * zeros past the cut; rescale l and, after the first key tile, acc. The
 * exps and their sum in one pass of 16 lanes. */
TGK_CLONES static void tile_softmax(tile *t, int64_t nr, int64_t nc, int64_t diag, bool first,
                                    int64_t ev)
{
    for (int64_t i = 0; i < nr; i++) {
        float *s = t->s + i * BC;
        int64_t vis = i + diag < 0 ? 0 : i + diag < nc ? i + diag : nc;
        /* whole vectors: -inf up to a multiple of 16 (BC is one), exp() 0 */
        int64_t n16 = (vis + 15) & ~(int64_t)15;
        for (int64_t j = vis; j < n16; j++)
            s[j] = -INFINITY;
        float mx = tgk_max_ref16(s, n16);
        float m_new = mx > t->m[i] ? mx : t->m[i];
        /* all -inf so far: any finite reference gives exp() = 0, not NaN */
        float ref = m_new == -INFINITY ? 0.0f : m_new;
        /* the first key tile: l and acc start here (no scalar exp a row) */
        float alpha = first ? 0.0f : tgk_exp_ftz(t->m[i] - ref);
        float sum[TGK_LANES] = {0};
        for (int64_t j = 0; j < n16; j += TGK_LANES)
            for (int k = 0; k < TGK_LANES; k++) {   /* no denormal for the P V product */
                float e = tgk_exp_ftz(s[j + k] - ref);
                s[j + k] = e;
                sum[k] += e;
            }
        for (int64_t j = n16; j < nc; j++)
            s[j] = 0.0f;
        t->l[i] = t->l[i] * alpha + tgk_sum(sum, TGK_LANES);
        t->m[i] = m_new;
        if (!first && alpha != 1.0f) {
            float *a = t->acc + i * ev;
            for (int64_t j = 0; j < ev; j++)
                a[j] *= alpha;
        }
    }
}

/* y[i, :n] = x[i, :n] * f[i * fs], rows ldx and ldy apart: the query block
 * times the scale, the accumulator over l (fs = 0: one factor) */
TGK_CLONES static void scale_rows(int64_t nr, int64_t n, const float *restrict x, int64_t ldx,
                                  const float *f, int64_t fs, float *restrict y, int64_t ldy)
{
    for (int64_t i = 0; i < nr; i++) {
        const float *xr = x + i * ldx, fi = f[i * fs];
        float *yr = y + i * ldy;
        for (int64_t c = 0; c < n; c++)
            yr[c] = xr[c] * fi;
    }
}

static void sdpa_block(sdpa_job *j, tile *t, int64_t task)
{
    const tgk_sdpa_desc *d = j->d;
    int64_t E = d->E, Ev = d->Ev, L = d->L, S = d->S;
    int64_t qb = task % j->nqb, bh = task / j->nqb;
    int64_t h = bh % d->hq, b = bh / d->hq, kvh = h / (d->hq / d->hk);
    int64_t l0 = qb * BR, nr = L - l0 < BR ? L - l0 : BR;
    const float *Q = j->q + b * j->qs[0] + h * j->qs[1] + l0 * j->qs[2];
    const float *K = j->k + b * j->ks[0] + kvh * j->ks[1];
    const float *V = j->v + b * j->vs[0] + kvh * j->vs[1];
    float *O = j->o + b * j->os[0] + h * j->os[1] + l0 * j->os[2];

    for (int64_t i = 0; i < nr; i++) {
        t->m[i] = -INFINITY;
        t->l[i] = 0.0f;
    }
    scale_rows(nr, E, Q, j->qs[2], &d->scale, 0, t->q, E);
    /* causal: keys past the block's last row are masked for every row */
    int64_t s_end = d->causal && l0 + nr < S ? l0 + nr : S;
    if (s_end <= 0)     /* no keys: no key tile writes acc */
        memset(t->acc, 0, sizeof *t->acc * (size_t)(nr * Ev));
    for (int64_t s0 = 0; s0 < s_end; s0 += BC) {
        int64_t nc = s_end - s0 < BC ? s_end - s0 : BC;
        /* row i sees keys s < l0 + i + 1: tile columns < i + diag */
        int64_t diag = d->causal ? l0 + 1 - s0 : TGK_NO_DIAG;
        /* a task's next query block of the same head (or kv group) finds its
         * keys packed when they are one tile: no copies again */
        bool packed = t->packed_k == K + s0 * j->ks[2] && t->packed_v == V + s0 * j->vs[2] &&
                      t->packed_n == nc;
        if (!packed)
            tgk_pack_weight_f32(K + s0 * j->ks[2], j->ks[2], nc, E, t->kp);
        tgk_gemm_packed_f32(nr, nc, E, t->q, E, t->kp, NULL, false, t->s, BC, diag, TGK_NO_DIAG);
        if (d->mask)
            tile_mask(d, t->s, b, h, l0, nr, s0, nc);
        tile_softmax(t, nr, nc, diag, s0 == 0, Ev);
        if (!packed)
            tgk_pack_kn_f32(V + s0 * j->vs[2], j->vs[2], nc, Ev, t->vp);
        t->packed_k = K + s0 * j->ks[2];
        t->packed_v = V + s0 * j->vs[2];
        t->packed_n = nc;
        tgk_gemm_packed_f32(nr, Ev, nc, t->s, BC, t->vp, NULL, s0 > 0, t->acc, Ev, TGK_NO_DIAG,
                            diag);
    }
    for (int64_t i = 0; i < nr; i++)
        t->l[i] = t->l[i] > 0.0f ? 1.0f / t->l[i] : 0.0f;
    scale_rows(nr, Ev, t->acc, Ev, t->l, 1, O, j->os[2]);
}

static void sdpa_tasks(void *ctx, int64_t begin, int64_t end)
{
    sdpa_job *j = ctx;
    int64_t E = j->d->E, Ev = j->d->Ev;
    tile t;
    t.s = malloc(sizeof(float) * (size_t)(BR * BC + BR * Ev + BR * E + tgk_packed_size(BC, E) +
                                          tgk_packed_size(Ev, BC)));
    if (!t.s) {
        atomic_store(&j->failed, true);
        return;
    }
    t.acc = t.s + BR * BC;
    t.q = t.acc + BR * Ev;
    t.kp = t.q + BR * E;
    t.vp = t.kp + tgk_packed_size(BC, E);
    t.packed_n = 0;
    for (int64_t task = begin; task < end; task++)
        sdpa_block(j, &t, task);
    free(t.s);
}

/* the given strides of batch, head, row, or a contiguous [heads, rows, cols]'s */
static void strides(const int64_t given[3], int64_t heads, int64_t rows, int64_t cols,
                    int64_t st[3])
{
    bool set = given[0] || given[1] || given[2];
    st[0] = set ? given[0] : heads * rows * cols;
    st[1] = set ? given[1] : rows * cols;
    st[2] = set ? given[2] : cols;
}

int tgk_sdpa_f32(const tgk_sdpa_desc *d, const float *q, const float *k, const float *v, float *o)
{
    if (d->batch < 0 || d->hq <= 0 || d->hk <= 0 || d->hq % d->hk || d->L < 0 || d->S < 0 ||
        d->E < 0 || d->Ev < 0)
        return -1;
    sdpa_job j = {.d = d, .q = q, .k = k, .v = v, .o = o, .nqb = (d->L + BR - 1) / BR};
    strides(d->q_stride, d->hq, d->L, d->E, j.qs);
    strides(d->k_stride, d->hk, d->S, d->E, j.ks);
    strides(d->v_stride, d->hk, d->S, d->Ev, j.vs);
    strides(d->o_stride, d->hq, d->L, d->Ev, j.os);
    atomic_init(&j.failed, false);
    /* a task's multiply-adds: its rows by the keys by E + Ev (half that causal) */
    double per_task = (double)(d->L < BR ? d->L : BR) * (double)d->S * (double)(d->E + d->Ev) /
                      (d->causal ? 2 : 1);
    tgk_parallel_for(d->batch * d->hq * j.nqb, (int64_t)(TGK_TASK_MIN_MACS / (per_task + 1)) + 1,
                     sdpa_tasks, &j);
    return atomic_load(&j.failed) ? -1 : 0;
}
