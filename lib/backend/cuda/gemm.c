/* Matrix products through cuBLASLt, float32 (tf32 tensor cores when
 * TG_CUDA_MATH=tf32 or tcompile --dtype tf32), the bias and relu (cs->relu)
 * applied by its epilogue; with tcompile --dtype bf16 or fp16 the operands in that type
 * (the weights converted when compiled, the activations here) and the
 * accumulation and the output float32. Row-major Y = A B is column-major
 * Y^T = B^T A^T, so B goes in as cuBLASLt's A and A as its B. */
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../cpu/run.h"
#include "cuda.h"
#include "flash.h"

/* here, not in cuda.c: a compiled model sets it too (model_rt.c) */
void tgc_set_math(tgc_state *cs, tgc_math math)
{
    cs->tf32 = math == TGC_MATH_TF32;
    cs->gemm_dtype = math == TGC_MATH_BF16 ? TG_BF16 : math == TGC_MATH_F16 ? TG_F16 : TG_F32;
    cs->attn_f32 = math == TGC_MATH_BF16 ? TGF_BF16 : math == TGC_MATH_F16 ? TGF_F16 : -1;
    cs->lt24_dtype = cs->gemm_dtype;
}

/* One product Y[M,N] = A[M,K] B (+ bias[N]): B is [K,N], or [N,K] when nk (a
 * linear layer's weight); batch of them sa, sb, sy elements apart (sa, sb
 * nonzero). */
typedef struct {
    int64_t M, N, K, batch, sa, sb, sy;
    bool nk;
    const void *a, *b;          /* in cs->gemm_dtype */
    const float *bias;
    float *y;
} gemm;

/* the largest power of two up to 16 dividing every address and stride */
static int32_t alignment(const tgc_state *cs, const gemm *g)
{
    uintptr_t es = tg_dtype_size(cs->gemm_dtype);
    uintptr_t v = (uintptr_t)g->a | (uintptr_t)g->b | (uintptr_t)g->y | (uintptr_t)g->bias |
                  (uintptr_t)g->sa * es | (uintptr_t)g->sb * es | (uintptr_t)(g->sy * 4);
    int32_t al = 16;
    while (al > 4 && v % (uintptr_t)al)
        al /= 2;
    return al;
}

static int layout(cublasLtMatrixLayout_t *l, cudaDataType t, uint64_t rows, uint64_t cols,
                  int64_t ld, int32_t batch, int64_t stride)
{
    cublasStatus_t st = cublasLtMatrixLayoutCreate(l, t, rows, cols, ld);
    if (!st && batch > 1) {
        st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_BATCH_COUNT, &batch,
                                              sizeof batch);
        if (!st)
            st = cublasLtMatrixLayoutSetAttribute(*l, CUBLASLT_MATRIX_LAYOUT_STRIDED_BATCH_OFFSET,
                                                  &stride, sizeof stride);
    }
    return st ? tgc_blas_fail(st, "a matrix layout") : 0;
}

static int run_gemm(const tgc_state *cs, const gemm *g)
{
    if (g->M == 0 || g->N == 0 || g->batch == 0)
        return 0;
    if (g->batch > INT32_MAX)
        return tg_err("cuda: a batch of %lld products", (long long)g->batch);
    cublasLtMatmulDesc_t op = NULL;
    cublasLtMatrixLayout_t la = NULL, lb = NULL, ly = NULL;
    cublasLtMatmulPreference_t pref = NULL;
    cublasOperation_t ta = g->nk ? CUBLAS_OP_T : CUBLAS_OP_N, tb = CUBLAS_OP_N;
    cublasLtEpilogue_t epi = g->bias ? (cs->relu ? CUBLASLT_EPILOGUE_RELU_BIAS
                                                 : CUBLASLT_EPILOGUE_BIAS)
                                     : (cs->relu ? CUBLASLT_EPILOGUE_RELU
                                                 : CUBLASLT_EPILOGUE_DEFAULT);
    int32_t batch = (int32_t)g->batch, al = alignment(cs, g);
    cudaDataType ab = cs->gemm_dtype == TG_BF16 ? CUDA_R_16BF
                      : cs->gemm_dtype == TG_F16 ? CUDA_R_16F : CUDA_R_32F;
    uint64_t ws = cs->workspace_size;
    int rc = -1, nres = 0;
    cublasLtMatmulHeuristicResult_t res;
    cublasStatus_t st = cublasLtMatmulDescCreate(
        &op, cs->tf32 && ab == CUDA_R_32F ? CUBLAS_COMPUTE_32F_FAST_TF32 : CUBLAS_COMPUTE_32F,
        CUDA_R_32F);
    if (!st)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSA, &ta, sizeof ta);
    if (!st)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_TRANSB, &tb, sizeof tb);
    if (!st && epi != CUBLASLT_EPILOGUE_DEFAULT)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_EPILOGUE, &epi, sizeof epi);
    if (!st && g->bias)
        st = cublasLtMatmulDescSetAttribute(op, CUBLASLT_MATMUL_DESC_BIAS_POINTER, &g->bias,
                                            sizeof g->bias);
    if (st) {
        tgc_blas_fail(st, "the matmul descriptor");
        goto done;
    }
    /* B^T as stored: [K,N] row-major is N x K column-major (ld N); [N,K] is K x N (ld K) */
    if (layout(&la, ab, g->nk ? g->K : g->N, g->nk ? g->N : g->K, g->nk ? g->K : g->N, batch,
               g->sb) ||
        layout(&lb, ab, g->K, g->M, g->K, batch, g->sa) ||
        layout(&ly, CUDA_R_32F, g->N, g->M, g->N, batch, g->sy))
        goto done;
    st = cublasLtMatmulPreferenceCreate(&pref);
    if (!st)
        st = cublasLtMatmulPreferenceSetAttribute(pref, CUBLASLT_MATMUL_PREF_MAX_WORKSPACE_BYTES,
                                                  &ws, sizeof ws);
    cublasLtMatmulPreferenceAttributes_t aligns[] = {
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_A_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_B_BYTES,
        CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_C_BYTES, CUBLASLT_MATMUL_PREF_MIN_ALIGNMENT_D_BYTES};
    for (int i = 0; i < 4 && !st; i++)
        st = cublasLtMatmulPreferenceSetAttribute(pref, aligns[i], &al, sizeof al);
    if (!st)
        st = cublasLtMatmulAlgoGetHeuristic(cs->lt, op, la, lb, ly, ly, pref, 1, &res, &nres);
    if (st || nres == 0) {
        tgc_blas_fail(st ? st : CUBLAS_STATUS_NOT_SUPPORTED, "finding a matmul algorithm");
        goto done;
    }
    float one = 1, zero = 0;
    st = cublasLtMatmul(cs->lt, op, &one, g->b, la, g->a, lb, &zero, g->y, ly, g->y, ly, &res.algo,
                        cs->workspace, cs->workspace_size, cs->stream);
    rc = st ? tgc_blas_fail(st, "the matmul") : 0;
done:
    if (pref)
        cublasLtMatmulPreferenceDestroy(pref);
    if (ly)
        cublasLtMatrixLayoutDestroy(ly);
    if (lb)
        cublasLtMatrixLayoutDestroy(lb);
    if (la)
        cublasLtMatrixLayoutDestroy(la);
    if (op)
        cublasLtMatmulDescDestroy(op);
    return rc;
}

int tgc_operand(const tgc_state *cs, tg_dtype have, const void *p, int64_t n,
                   const void **r, void **tmp)
{
    *r = p;
    *tmp = NULL;
    if (have == cs->gemm_dtype)
        return 0;
    int e = cudaMallocAsync(tmp, (size_t)(n ? n : 1) * tg_dtype_size(cs->gemm_dtype), cs->stream);
    if (!e)
        e = tgc_cast(tg_run_kt(cs->gemm_dtype), *tmp, tg_run_kt(have), p, n, cs->stream);
    *r = *tmp;
    return e ? tgc_fail(e, "converting an operand") : 0;
}

static int give_back(const tgc_state *cs, int rc, void *t1, void *t2)
{
    int e = 0;
    if (t1)
        e = cudaFreeAsync(t1, cs->stream);
    if (t2 && !e)
        e = cudaFreeAsync(t2, cs->stream);
    return rc ? rc : e ? tgc_fail(e, "freeing a product's operand") : 0;
}

/* K == 0: y is the bias on every row (zero without one: y came zeroed) */
static int bias_rows(const tgc_state *cs, const float *b, float *y, int64_t M, int64_t N)
{
    if (!b)
        return 0;
    tgc_iter it = {.rank = 2, .dims = {M, N}, .st = {{N, 1}, {0, 1}}};
    tgk_unary_param p = {0};
    int e = tgc_copy(sizeof(float), &it, b, y, cs->stream);
    if (!e && cs->relu)
        e = tgc_unary(TGK_RELU, TGK_F32, M * N, y, y, &p, cs->stream);
    return e ? tgc_fail(e, "launching a kernel") : 0;
}

bool tgc_half_k(int64_t K)
{
    return K >= 16;
}

/* cs as a product of inner dim K runs (tgc_half_k): float32, FMA, when short */
static tgc_state for_k(const tgc_state *cs, int64_t K)
{
    tgc_state s = *cs;
    if (!tgc_half_k(K)) {
        s.gemm_dtype = TG_F32;
        s.tf32 = false;
    }
    return s;
}

int tgc_linear(const tgc_state *cs, const float *x, tg_dtype wt, const void *w, const float *b,
               float *y, int64_t M, int64_t N, int64_t K)
{
    if (K == 0)
        return bias_rows(cs, b, y, M, N);
    tgc_state s = for_k(cs, K);
    cs = &s;
    const void *xa, *wa;
    void *t1, *t2 = NULL;
    int rc = tgc_operand(cs, TG_F32, x, M * K, &xa, &t1);
    if (!rc)
        rc = tgc_operand(cs, wt, w, N * K, &wa, &t2);
    gemm g = {M, N, K, 1, M * K, N * K, M * N, true, xa, wa, b, y};
    return give_back(cs, rc ? rc : run_gemm(cs, &g), t1, t2);
}

/* NumPy's matmul: 1-D operands made [1,K] and [K,N=1]; the batch dims
 * broadcast. One strided-batched product when each operand's batches are
 * equally spaced (a broadcast right operand folds the batches into M), else
 * one product a batch. */
static int matmul(const tgc_state *cs, int arank, const int64_t *adims, const char *a, int brank,
                  const int64_t *bdims, const char *b, float *y)
{
    int64_t M = arank == 1 ? 1 : adims[arank - 2], K = adims[arank - 1];
    int64_t N = brank == 1 ? 1 : bdims[brank - 1];
    int abat = arank > 2 ? arank - 2 : 0, bbat = brank > 2 ? brank - 2 : 0;
    int nbat = abat > bbat ? abat : bbat;
    int64_t bd[TG_MAX_RANK], sa[TG_MAX_RANK], sb[TG_MAX_RANK], nb = 1;
    for (int k = 0; k < nbat; k++) {
        int ia = k - (nbat - abat), ib = k - (nbat - bbat);
        int64_t da = ia >= 0 ? adims[ia] : 1, db = ib >= 0 ? bdims[ib] : 1;
        bd[k] = da == 1 ? db : da;
        nb *= bd[k];
    }
    if (K == 0 || nb == 0 || M == 0 || N == 0)
        return 0;                               /* y came zeroed */
    tgk_broadcast_strides(nbat, bd, abat, adims, sa);
    tgk_broadcast_strides(nbat, bd, bbat, bdims, sb);
    /* batch i's offsets, in matrices; equally spaced when off[i] = i * off[1] */
    bool even_a = true, even_b = true;
    int64_t *offs = malloc(sizeof(int64_t) * 2 * (size_t)nb);
    if (!offs)
        return tg_err("out of memory");
    for (int64_t i = 0; i < nb; i++) {
        int64_t r = i, oa = 0, ob = 0;
        for (int k = nbat - 1; k >= 0; k--) {
            oa += r % bd[k] * sa[k];
            ob += r % bd[k] * sb[k];
            r /= bd[k];
        }
        offs[2 * i] = oa;
        offs[2 * i + 1] = ob;
        even_a &= oa == i * (nb > 1 ? offs[2] : 0);
        even_b &= ob == i * (nb > 1 ? offs[3] : 0);
    }
    int rc = 0;
    int64_t step_a = nb > 1 ? offs[2] : 0, step_b = nb > 1 ? offs[3] : 0;
    if (nb == 1 || (even_a && even_b && step_a == 1 && step_b == 0)) {
        gemm g = {M * nb, N, K, 1, 0, 0, 0, false, a, b, NULL, y};
        rc = run_gemm(cs, &g);
    } else if (even_a && even_b && step_a && step_b) {
        gemm g = {M, N, K, nb, step_a * M * K, step_b * K * N, M * N, false, a, b, NULL, y};
        rc = run_gemm(cs, &g);
    } else {
        for (int64_t i = 0; i < nb && !rc; i++) {
            size_t es = tg_dtype_size(cs->gemm_dtype);
            gemm g = {M, N, K, 1, 0, 0, 0, false, a + (size_t)(offs[2 * i] * M * K) * es,
                      b + (size_t)(offs[2 * i + 1] * K * N) * es, NULL, y + i * M * N};
            rc = run_gemm(cs, &g);
        }
    }
    free(offs);
    return rc;
}

int tgc_matmul(const tgc_state *cs, int arank, const int64_t *adims, const float *a, int brank,
               const int64_t *bdims, tg_dtype bt, const void *b, float *y)
{
    int64_t na = 1, nb = 1;
    for (int k = 0; k < arank; k++)
        na *= adims[k];
    for (int k = 0; k < brank; k++)
        nb *= bdims[k];
    const void *aa, *ba;
    void *t1, *t2 = NULL;
    tgc_state s = for_k(cs, adims[arank - 1]);
    cs = &s;
    int rc = tgc_operand(cs, TG_F32, a, na, &aa, &t1);
    if (!rc)
        rc = tgc_operand(cs, bt, b, nb, &ba, &t2);
    if (!rc)
        rc = matmul(cs, arank, adims, aa, brank, bdims, ba, y);
    return give_back(cs, rc, t1, t2);
}

/* An ungrouped convolution, not transposed: through cuDNN where it takes
 * it (dnn.c), else as one product: the patches
 * [n * P, ld] (tgc_patches, in cs->gemm_dtype) times the weight [K, C * ks]
 * (padded with zeros to ld columns, a multiple of 8 that half-precision
 * tensor cores want), the bias in the product's epilogue, is the output
 * channels-last [n * P, K]; copied into y [n, K, P]; an EPILOGUE group's
 * residual (cs->residual) and relu added there in place. */
int tgc_conv(const tgc_state *cs, const tgk_conv_desc *d, const float *x, tg_dtype wt_type,
             const void *w, const float *b, float *y)
{
    int64_t ks = 1, P = 1;
    for (int i = 0; i < d->nsp; i++) {
        ks *= d->kernel[i];
        P *= d->out[i];
    }
    int64_t M = d->n * P, N = d->k, K = d->c * ks, ld = (K + 7) / 8 * 8;
    if (M == 0 || N == 0)
        return 0;
    int dnn = tgc_dnn_conv(cs, d, x, wt_type, w, b, y);
    if (dnn <= 0)
        return dnn;
    size_t es = tg_dtype_size(cs->gemm_dtype);
    const void *wa;
    void *col = NULL, *wt = NULL, *wp = NULL;
    float *yt = NULL;
    int e = cudaMallocAsync(&col, (size_t)(M * ld) * es, cs->stream);
    if (!e)
        e = tgc_patches(d, x, tg_run_kt(cs->gemm_dtype), col, ld, cs->stream);
    if (!e)
        e = cudaMallocAsync((void **)&yt, (size_t)(M * N) * sizeof *yt, cs->stream);
    int rc = e ? tgc_fail(e, "the patches of a convolution")
               : tgc_operand(cs, wt_type, w, N * K, &wa, &wt);
    if (!rc && ld != K) {
        tgc_iter it = {.rank = 2, .dims = {N, K}, .st = {{ld, 1}, {K, 1}}};
        e = cudaMallocAsync(&wp, (size_t)(N * ld) * es, cs->stream);
        if (!e)
            e = cudaMemsetAsync(wp, 0, (size_t)(N * ld) * es, cs->stream);
        if (!e)
            e = tgc_copy(es, &it, wa, wp, cs->stream);
        rc = e ? tgc_fail(e, "padding a convolution's weight") : 0;
        wa = wp;
    }
    tgc_state s = *cs;
    s.relu = cs->relu && !cs->residual;     /* a residual goes in before the relu */
    if (!rc) {
        gemm g = {M, N, ld, 1, 0, 0, 0, true, col, wa, b, yt};
        rc = run_gemm(&s, &g);
    }
    if (!rc) {
        tgc_iter it = {.rank = 3, .dims = {d->n, N, P}, .st = {{N * P, P, 1}, {P * N, 1, N}}};
        e = tgc_copy(sizeof *yt, &it, yt, y, cs->stream);
        if (!e && cs->residual)
            e = tgc_conv_out(TGK_F32, y, NULL, cs->residual, cs->relu, y, d->n * N, N, P,
                             cs->stream);
        rc = e ? tgc_fail(e, "launching a kernel") : 0;
    }
    rc = give_back(cs, rc, col, yt);
    return give_back(cs, rc, wt, wp);
}
