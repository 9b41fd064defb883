/* tgk_sdpa_f32 against float64 softmax(q k^T * scale + mask) v on fresh random
 * inputs: odd lengths around the 64-row query and 128-row key tiles, E != Ev,
 * GQA, causal (L < S, L = S, L > S), additive masks broadcast over batch and
 * heads, -inf entries and fully masked rows (which give 0); q, k, v read in
 * place from a wider projection (strides).
 * Tolerance: normalized max error 1e-5. */
#include "kcheck.h"

#include "backend/cpu/kernels/kernels.h"

#define TOL 1e-5

static void reference(const tgk_sdpa_desc *d, const float *q, const float *k, const float *v,
                      double *o)
{
    double *p = kc_ref(d->S);
    for (int64_t b = 0; b < d->batch; b++)
        for (int64_t h = 0; h < d->hq; h++) {
            int64_t kh = h / (d->hq / d->hk);
            for (int64_t l = 0; l < d->L; l++) {
                const float *ql = q + ((b * d->hq + h) * d->L + l) * d->E;
                double mx = -INFINITY, sum = 0;
                for (int64_t s = 0; s < d->S; s++) {
                    const float *ks = k + ((b * d->hk + kh) * d->S + s) * d->E;
                    double dot = 0;
                    for (int64_t e = 0; e < d->E; e++)
                        dot += (double)ql[e] * ks[e];
                    dot *= d->scale;
                    if (d->mask)
                        dot += d->mask[b * d->mask_stride[0] + h * d->mask_stride[1] +
                                       l * d->mask_stride[2] + s * d->mask_stride[3]];
                    if (d->causal && s > l)
                        dot = -INFINITY;
                    p[s] = dot;
                    mx = dot > mx ? dot : mx;
                }
                for (int64_t s = 0; s < d->S; s++) {
                    p[s] = mx == -INFINITY ? 0 : exp(p[s] - mx);
                    sum += p[s];
                }
                double *ol = o + ((b * d->hq + h) * d->L + l) * d->Ev;
                for (int64_t e = 0; e < d->Ev; e++) {
                    double acc = 0;
                    for (int64_t s = 0; s < d->S; s++)
                        acc += p[s] * v[((b * d->hk + kh) * d->S + s) * d->Ev + e];
                    ol[e] = sum > 0 ? acc / sum : 0;
                }
            }
        }
    free(p);
}

/* mask_kind: 0 none, 1 full [b,h,L,S], 2 [L,S] broadcast, 3 [b,1,1,S] padding
 * style with -inf tails (some rows fully masked when a batch masks all keys) */
static void run_case(int64_t batch, int64_t hq, int64_t hk, int64_t L, int64_t S, int64_t E,
                     int64_t Ev, bool causal, int mask_kind)
{
    tgk_sdpa_desc d = {.batch = batch, .hq = hq, .hk = hk, .L = L, .S = S, .E = E, .Ev = Ev,
                       .scale = (float)(1.0 / sqrt((double)(E > 0 ? E : 1))), .causal = causal};
    int64_t nq = batch * hq * L * E, nk = batch * hk * S * E, nv = batch * hk * S * Ev;
    int64_t no = batch * hq * L * Ev;
    float *q = kc_rand(nq, -2, 2), *k = kc_rand(nk, -2, 2), *v = kc_rand(nv, -1, 1);
    float *mask = NULL;
    if (mask_kind == 1) {
        mask = kc_rand(batch * hq * L * S, -3, 3);
        d.mask_stride[0] = hq * L * S, d.mask_stride[1] = L * S, d.mask_stride[2] = S;
        d.mask_stride[3] = 1;
        for (int64_t i = 0; i < batch * hq * L * S; i++)
            if (kc_int(0, 9) == 0)
                mask[i] = -INFINITY;
    } else if (mask_kind == 2) {
        mask = kc_rand(L * S, -3, 3);
        d.mask_stride[2] = S, d.mask_stride[3] = 1;
    } else if (mask_kind == 3) {
        mask = kc_rand(batch * S, 0, 0);
        for (int64_t b = 0; b < batch; b++) {
            int64_t keep = b == batch - 1 && batch > 1 ? 0 : kc_int(1, S);
            for (int64_t s = keep; s < S; s++)
                mask[b * S + s] = -INFINITY;
        }
        d.mask_stride[0] = S, d.mask_stride[3] = 1;
    }
    d.mask = mask;
    float *o = kc_out(no);
    double *ref = kc_ref(no);
    reference(&d, q, k, v, ref);
    CHECK(tgk_sdpa_f32(&d, q, k, v, o) == 0);
    KC_EXPECT(kc_norm_err(o, ref, no), TOL,
              "sdpa batch=%lld hq=%lld hk=%lld L=%lld S=%lld E=%lld Ev=%lld causal=%d mask=%d",
              (long long)batch, (long long)hq, (long long)hk, (long long)L, (long long)S,
              (long long)E, (long long)Ev, causal, mask_kind);
    CHECK(kc_guard_ok(o, no));
    free(q), free(k), free(v), free(mask), free(o), free(ref);
}

/* q, k and v read in place as slices of one [batch, L, 3, h, E] projection
 * (element strides per batch, head and row) give bit for bit what their
 * contiguous copies give; so does o written as [batch, L, h, E]. */
static void run_strided(int64_t batch, int64_t h, int64_t L, int64_t E, bool causal)
{
    int64_t row = 3 * h * E, n = batch * h * L * E;
    float *qkv = kc_rand(batch * L * row, -2, 2), *c[3], *o = kc_out(n), *os = kc_out(n);
    tgk_sdpa_desc d = {.batch = batch, .hq = h, .hk = h, .L = L, .S = L, .E = E, .Ev = E,
                       .scale = (float)(1.0 / sqrt((double)E)), .causal = causal};
    for (int t = 0; t < 3; t++) {
        c[t] = kc_out(n);
        for (int64_t b = 0; b < batch; b++)
            for (int64_t hh = 0; hh < h; hh++)
                for (int64_t l = 0; l < L; l++)
                    memcpy(c[t] + ((b * h + hh) * L + l) * E,
                           qkv + b * L * row + l * row + t * h * E + hh * E, sizeof(float) * E);
    }
    CHECK(tgk_sdpa_f32(&d, c[0], c[1], c[2], o) == 0);
    int64_t st[3] = {L * row, E, row};
    memcpy(d.q_stride, st, sizeof st);
    memcpy(d.k_stride, st, sizeof st);
    memcpy(d.v_stride, st, sizeof st);
    CHECK(tgk_sdpa_f32(&d, qkv, qkv + h * E, qkv + 2 * h * E, os) == 0);
    CHECK(memcmp(o, os, sizeof(float) * (size_t)n) == 0);
    CHECK(kc_guard_ok(os, n));
    float *ot = kc_out(n);      /* heads interleaved */
    int64_t ost[3] = {L * h * E, E, h * E};
    memcpy(d.o_stride, ost, sizeof ost);
    CHECK(tgk_sdpa_f32(&d, qkv, qkv + h * E, qkv + 2 * h * E, ot) == 0);
    bool same = true;
    for (int64_t b = 0; b < batch; b++)
        for (int64_t hh = 0; hh < h; hh++)
            for (int64_t l = 0; l < L; l++)
                same &= memcmp(o + ((b * h + hh) * L + l) * E, ot + (b * L + l) * h * E + hh * E,
                               sizeof(float) * E) == 0;
    CHECK(same);
    CHECK(kc_guard_ok(ot, n));
    free(qkv), free(c[0]), free(c[1]), free(c[2]), free(o), free(os), free(ot);
}

int main(void)
{
    unit_seed("test_sdpa");
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        run_strided(2, 4, 64, 32, true);
        run_strided(3, 2, 45, 16, false);
        run_strided(1, 3, 150, 8, true);
    }
    static const int64_t lens[] = {1, 7, 63, 64, 65, 129, 200};
    for (int nt = 1; nt <= 2; nt++) {
        tgk_set_num_threads(nt);
        for (size_t a = 0; a < sizeof lens / sizeof *lens; a++)
            for (size_t b = 0; b < sizeof lens / sizeof *lens; b += 2)
                for (int causal = 0; causal < 2; causal++) {
                    int mask = (int)((a + b + causal) % 4);
                    run_case(1, 2, 1, lens[a], lens[b], 16, 8, causal, mask);
                }
    }
    tgk_set_num_threads(2);
    run_case(2, 8, 2, 100, 300, 64, 64, true, 0);   /* GQA 4:1, causal L < S */
    run_case(3, 4, 4, 70, 150, 32, 48, false, 3);   /* padding mask, a fully masked batch */
    run_case(2, 6, 3, 130, 130, 40, 24, true, 1);   /* causal plus full mask */
    run_case(1, 3, 1, 257, 513, 64, 64, false, 2);  /* broadcast mask, several tiles */
    run_case(1, 2, 2, 5, 0, 8, 8, false, 0);        /* no keys: zeros */
    run_case(1, 1, 1, 9, 9, 0, 4, false, 0);        /* E = 0: uniform weights */
    /* the causal cuts on every register tile of the packed GEMM this CPU runs */
    static const char *const isa[] = {"base", "avx2", "avx512"};
    for (size_t i = 0; i < sizeof isa / sizeof *isa; i++)
        if (tgk_gemm_packed_isa(isa[i])) {
            run_strided(2, 4, 64, 32, true);
            run_case(1, 2, 1, 65, 65, 16, 8, true, 0);
            run_case(2, 6, 3, 130, 130, 40, 24, true, 1);
        }
    tgk_gemm_packed_isa(NULL);

    /* no keys after the heap held NaNs (the scratch a task mallocs is likely
     * that memory): the accumulator no key tile wrote must not reach o */
    tgk_set_num_threads(1);
    float *dirty = malloc(100000);
    for (size_t i = 0; i < 100000 / sizeof *dirty; i++)
        dirty[i] = NAN;
    free(dirty);
    run_case(1, 2, 2, 5, 0, 8, 8, false, 0);

    tgk_sdpa_desc bad = {.batch = 1, .hq = 3, .hk = 2, .L = 1, .S = 1, .E = 1, .Ev = 1};
    CHECK(tgk_sdpa_f32(&bad, NULL, NULL, NULL, NULL) == -1);
    return unit_report();
}
