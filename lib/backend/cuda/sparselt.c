/* linear_24 through cuSPARSELt (sparselt.h). The library is dlopened once
 * (TG_CUSPARSELT names the file, default libcusparseLt.so.0 on the loader's
 * path); a missing library, entry point or refused shape is a reason, not
 * an error, and the caller runs the dense path. The form is the bench's
 * "A=W col" (bench/cuda/sparse24): W [N,K] row-major is cuSPARSELt's
 * structured A, column-major [K,N] with op T (2:4 along K, as tsparse
 * prunes); x [M,K] row-major is the dense B, column-major [K,M]; D
 * column-major [N,M] is y [M,N] row-major, so nothing is transposed. D is
 * float32 where the library takes that with half inputs, else half and
 * converted. The bias is added by a kernel after (one pass over y). */
#define _GNU_SOURCE
#include "config.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#ifdef HAVE_CUSPARSELT_H
#include <stdalign.h>   /* cusparseLt.h uses alignas */
/* it includes cusparse.h, whose deprecated types are none of ours */
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wdeprecated-declarations"
#include <cusparseLt.h>
#pragma GCC diagnostic pop
#else
#include "cusparselt_min.h"
#endif

#include "../../error.h"
#include "../cpu/run.h"
#include "sparselt.h"

#define SEARCH_WORKSPACE (256u << 20)   /* what the search may try split-k with */
/* x's rows are padded (zeros) to a multiple of this: cuSPARSELt 0.8 refuses
 * a dense B of 100 or 197 columns (tests/cuda/sparse24.sh, vit_tiny) */
#define M_ALIGN 32

#define LT_FUNCS(X)                                                                           \
    X(cusparseLtInit) X(cusparseLtGetErrorString) X(cusparseLtDenseDescriptorInit)           \
    X(cusparseLtStructuredDescriptorInit) X(cusparseLtMatDescriptorDestroy)                  \
    X(cusparseLtMatmulDescriptorInit) X(cusparseLtMatmulAlgSelectionInit)                    \
    X(cusparseLtMatmulAlgSelectionDestroy) X(cusparseLtMatmulAlgGetAttribute)                \
    X(cusparseLtMatmulGetWorkspace) X(cusparseLtMatmulPlanInit) X(cusparseLtMatmulPlanDestroy) \
    X(cusparseLtMatmul) X(cusparseLtMatmulSearch) X(cusparseLtSpMMACompressedSize2)          \
    X(cusparseLtSpMMACompress2)

/* the entry points, typed by their declarations */
static struct {
#define X(f) __typeof__(f) *f;
    LT_FUNCS(X)
#undef X
} lt;
static cusparseLtHandle_t handle;
static char absent[TG_WHY_MAX];         /* why cuSPARSELt cannot be used: "" once loaded */
static pthread_once_t once = PTHREAD_ONCE_INIT;

static void load(void)
{
    const char *path = getenv("TG_CUSPARSELT");
    if (!path || !*path)
        path = "libcusparseLt.so.0";
    void *h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    if (!h) {
        snprintf(absent, sizeof absent, "cuSPARSELt not loaded (%s)", dlerror());
        return;
    }
#define X(f)                                                                                  \
    if (!(*(void **)&lt.f = dlsym(h, #f))) {                                                  \
        snprintf(absent, sizeof absent, "cuSPARSELt: %s has no %s", path, #f);                \
        return;                                                                               \
    }
    LT_FUNCS(X)
#undef X
    cusparseStatus_t st = lt.cusparseLtInit(&handle);
    if (st)
        snprintf(absent, sizeof absent, "cusparseLtInit: %s", lt.cusparseLtGetErrorString(st));
}

static bool loaded(char *why)
{
    pthread_once(&once, load);
    if (absent[0])
        snprintf(why, TG_WHY_MAX, "%s", absent);
    return !absent[0];
}

static int refuse(char *why, cusparseStatus_t st, const char *what)
{
    snprintf(why, TG_WHY_MAX, "cuSPARSELt %s (%s)", what, lt.cusparseLtGetErrorString(st));
    return 1;
}

/* One token count's plan. Descriptors stay where they were made (the plan
 * may point at them): plans are allocated one by one. */
typedef struct {
    int64_t M, Mp;                      /* x's rows, and padded (M_ALIGN) */
    int made;                           /* 0..4: b, d (with mm), sel, plan made */
    bool ok, searched;
    char why[TG_WHY_MAX];               /* when not ok */
    cudaDataType dt;                    /* D's */
    int alg;
    size_t ws;
    cusparseLtMatDescriptor_t b, d;
    cusparseLtMatmulDescriptor_t mm;
    cusparseLtMatmulAlgSelection_t sel;
    cusparseLtMatmulPlan_t plan;
} lt_plan;

struct tgc_lt24 {
    int64_t N, K;
    tg_dtype t;
    cudaDataType ct;
    cudaStream_t s;                     /* where its memory is freed */
    cusparseLtMatDescriptor_t a;
    void *comp;                         /* the compressed weight */
    int nplan;
    lt_plan **plan;
};

static void free_plan(lt_plan *p)
{
    if (p->made >= 4)
        lt.cusparseLtMatmulPlanDestroy(&p->plan);
    if (p->made >= 3)
        lt.cusparseLtMatmulAlgSelectionDestroy(&p->sel);
    if (p->made >= 2)
        lt.cusparseLtMatDescriptorDestroy(&p->d);
    if (p->made >= 1)
        lt.cusparseLtMatDescriptorDestroy(&p->b);
    free(p);
}

void tgc_lt24_free(tgc_lt24 *w)
{
    if (!w)
        return;
    for (int i = 0; i < w->nplan; i++)
        free_plan(w->plan[i]);
    free(w->plan);
    if (w->comp)
        cudaFreeAsync(w->comp, w->s);
    lt.cusparseLtMatDescriptorDestroy(&w->a);
    free(w);
}

tgc_lt24 *tgc_lt24_new(const tgc_state *cs, const float *values, const uint8_t *meta, int64_t N,
                       int64_t K, tg_dtype t, char *why)
{
    if (!loaded(why))
        return NULL;
    if (t != TG_BF16 && t != TG_F16) {
        snprintf(why, TG_WHY_MAX, "cuSPARSELt runs bf16 and fp16 here, not %s", tg_dtype_name(t));
        return NULL;
    }
    tgc_lt24 *w = calloc(1, sizeof *w);
    if (!w) {
        snprintf(why, TG_WHY_MAX, "out of memory");
        return NULL;
    }
    w->N = N;
    w->K = K;
    w->t = t;
    w->ct = t == TG_BF16 ? CUDA_R_16BF : CUDA_R_16F;
    w->s = cs->stream;
    cusparseStatus_t st = lt.cusparseLtStructuredDescriptorInit(
        &handle, &w->a, K, N, K, 16, w->ct, CUSPARSE_ORDER_COL, CUSPARSELT_SPARSITY_50_PERCENT);
    if (st) {
        char m[64];
        snprintf(m, sizeof m, "takes no [%lld,%lld] weight", (long long)N, (long long)K);
        refuse(why, st, m);
        free(w);
        return NULL;
    }
    size_t csz = 0, bsz = 0;
    float *dense = NULL;
    void *half = NULL, *buf = NULL;
    cudaStream_t s = cs->stream;
    int64_t n = N * K;
    st = lt.cusparseLtSpMMACompressedSize2(&handle, &w->a, &csz, &bsz);
    if (st) {
        refuse(why, st, "compressed size");
        goto fail;
    }
    /* the dense weight in t (the expand kernel, then a cast), then compressed */
    int e = cudaMallocAsync((void **)&dense, (size_t)n * 4, s);
    if (!e)
        e = cudaMallocAsync(&half, (size_t)n * 2, s);
    if (!e)
        e = cudaMallocAsync(&buf, bsz ? bsz : 1, s);
    if (!e)
        e = cudaMallocAsync(&w->comp, csz ? csz : 1, s);
    if (!e)
        e = tgc_expand24_f32(values, meta, dense, N, K, s);
    if (!e)
        e = tgc_cast(tg_run_kt(t), half, tg_run_kt(TG_F32), dense, n, s);
    if (e) {
        snprintf(why, TG_WHY_MAX, "compressing for cuSPARSELt: %s", cudaGetErrorString(e));
    } else if ((st = lt.cusparseLtSpMMACompress2(&handle, &w->a, 1, CUSPARSE_OPERATION_TRANSPOSE,
                                                 half, w->comp, buf, s))) {
        refuse(why, st, "compress");
        e = -1;
    }
    cudaFreeAsync(dense, s);
    cudaFreeAsync(half, s);
    cudaFreeAsync(buf, s);
    if (!e)
        return w;
fail:
    tgc_lt24_free(w);
    return NULL;
}

static lt_plan *find(const tgc_lt24 *w, int64_t M)
{
    for (int i = 0; i < w->nplan; i++)
        if (w->plan[i]->M == M)
            return w->plan[i];
    return NULL;
}

/* The best algorithm for p by cuSPARSELt's own timing (on scratch buffers:
 * x ones, D scratch), outside any capture. */
static int search(const tgc_state *cs, tgc_lt24 *w, lt_plan *p, char *why)
{
    enum cudaStreamCaptureStatus cap = cudaStreamCaptureStatusNone;
    if (cudaStreamIsCapturing(cs->stream, &cap) || cap != cudaStreamCaptureStatusNone)
        return 0;                       /* it synchronizes: the default stays */
    cudaStream_t s = cs->stream;
    void *xb = NULL, *d = NULL, *ws = NULL;
    uint16_t one_h = w->t == TG_BF16 ? 0x3f80 : 0x3c00;
    size_t es = p->dt == CUDA_R_32F ? 4 : 2;
    int e = cudaMallocAsync(&xb, (size_t)(p->Mp * w->K) * 2, s);
    if (!e)
        e = cudaMallocAsync(&d, (size_t)(p->Mp * w->N) * es, s);
    if (!e)
        e = cudaMallocAsync(&ws, SEARCH_WORKSPACE, s);
    if (!e)
        e = tgc_fill(2, p->Mp * w->K, &one_h, xb, s);
    float one = 1, zero = 0;
    cusparseStatus_t st = CUSPARSE_STATUS_SUCCESS;
    if (!e)
        st = lt.cusparseLtMatmulSearch(&handle, &p->plan, &one, w->comp, xb, &zero, d, d, ws, &s,
                                       1);
    if (!e && !st)
        st = lt.cusparseLtMatmulGetWorkspace(&handle, &p->plan, &p->ws);
    if (!e && !st)
        st = lt.cusparseLtMatmulAlgGetAttribute(&handle, &p->sel, CUSPARSELT_MATMUL_ALG_CONFIG_ID,
                                                &p->alg, sizeof p->alg);
    cudaFreeAsync(xb, s);
    cudaFreeAsync(d, s);
    cudaFreeAsync(ws, s);
    if (e)
        return tgc_fail(e, "searching cuSPARSELt's algorithms");
    if (st) {
        p->ok = false;
        refuse(p->why, st, "search");
        snprintf(why, TG_WHY_MAX, "%s", p->why);
        return 1;
    }
    p->searched = true;
    return 0;
}

static int make_plan(tgc_lt24 *w, lt_plan *p)
{
    cusparseStatus_t st = lt.cusparseLtDenseDescriptorInit(&handle, &p->b, w->K, p->Mp, w->K, 16,
                                                           w->ct, CUSPARSE_ORDER_COL);
    if (st)
        return refuse(p->why, st, "takes no such x");
    p->made = 1;
    /* float32 D where the library has it for half inputs, else half */
    for (int k = 0; k < 2; k++) {
        p->dt = k == 0 ? CUDA_R_32F : w->ct;
        st = lt.cusparseLtDenseDescriptorInit(&handle, &p->d, w->N, p->Mp, w->N, 16, p->dt,
                                              CUSPARSE_ORDER_COL);
        if (st)
            continue;
        st = lt.cusparseLtMatmulDescriptorInit(&handle, &p->mm, CUSPARSE_OPERATION_TRANSPOSE,
                                               CUSPARSE_OPERATION_NON_TRANSPOSE, &w->a, &p->b,
                                               &p->d, &p->d, CUSPARSE_COMPUTE_32F);
        if (!st)
            break;
        lt.cusparseLtMatDescriptorDestroy(&p->d);
    }
    if (st)
        return refuse(p->why, st, "takes no such product");
    p->made = 2;
    if ((st = lt.cusparseLtMatmulAlgSelectionInit(&handle, &p->sel, &p->mm,
                                                  CUSPARSELT_MATMUL_ALG_DEFAULT)))
        return refuse(p->why, st, "algorithm selection");
    p->made = 3;
    if ((st = lt.cusparseLtMatmulPlanInit(&handle, &p->plan, &p->mm, &p->sel)))
        return refuse(p->why, st, "plan");
    p->made = 4;
    if ((st = lt.cusparseLtMatmulGetWorkspace(&handle, &p->plan, &p->ws)) ||
        (st = lt.cusparseLtMatmulAlgGetAttribute(&handle, &p->sel, CUSPARSELT_MATMUL_ALG_CONFIG_ID,
                                                 &p->alg, sizeof p->alg)))
        return refuse(p->why, st, "workspace");
    p->ok = true;
    return 0;
}

int tgc_lt24_plan(const tgc_state *cs, tgc_lt24 *w, int64_t M, bool do_search, char *why)
{
    lt_plan *p = find(w, M);
    if (!p) {
        lt_plan **more = realloc(w->plan, sizeof *more * (size_t)(w->nplan + 1));
        if (!more || !(p = calloc(1, sizeof *p))) {
            if (more)
                w->plan = more;
            return tg_err("out of memory");
        }
        w->plan = more;
        w->plan[w->nplan++] = p;
        p->M = M;
        p->Mp = (M + M_ALIGN - 1) / M_ALIGN * M_ALIGN;
        make_plan(w, p);
    }
    if (!p->ok) {
        snprintf(why, TG_WHY_MAX, "%s", p->why);
        return 1;
    }
    /* fp16: cuSPARSELt 0.8's search ran into an illegal instruction on the
     * H200 (a candidate's kernel), which ends the context: the default */
    return do_search && !p->searched && w->t == TG_BF16 ? search(cs, w, p, why) : 0;
}

int tgc_lt24_linear(const tgc_state *cs, tgc_lt24 *w, const float *x, const float *b, float *y,
                    int64_t M, char *why)
{
    if (M == 0)
        return 0;
    int rc = tgc_lt24_plan(cs, w, M, false, why);
    if (rc)
        return rc;
    lt_plan *p = find(w, M);
    cudaStream_t s = cs->stream;
    void *xb = NULL, *yb = NULL, *ws = NULL;
    int64_t Mp = p->Mp;
    size_t es = p->dt == CUDA_R_32F ? 4 : 2;
    int e = cudaMallocAsync(&xb, (size_t)(Mp * w->K) * 2, s);
    if (!e)
        e = tgc_cast(tg_run_kt(w->t), xb, tg_run_kt(TG_F32), x, M * w->K, s);
    if (!e && Mp > M)
        e = cudaMemsetAsync((char *)xb + (size_t)(M * w->K) * 2, 0, (size_t)((Mp - M) * w->K) * 2,
                            s);
    /* D straight into y when it is float32 and unpadded; else a temporary */
    if (!e && (p->dt != CUDA_R_32F || Mp > M))
        e = cudaMallocAsync(&yb, (size_t)(Mp * w->N) * es, s);
    if (!e && p->ws > cs->workspace_size)
        e = cudaMallocAsync(&ws, p->ws, s);
    if (e) {
        rc = tgc_fail(e, "linear_24's operands");
        goto done;
    }
    float one = 1, zero = 0;
    void *d = yb ? yb : (void *)y;
    cusparseStatus_t st = lt.cusparseLtMatmul(&handle, &p->plan, &one, w->comp, xb, &zero, d, d,
                                              ws ? ws : cs->workspace, &s, 1);
    if (st) {
        rc = refuse(why, st, "matmul");         /* nothing written: the dense path runs */
        goto done;
    }
    /* y is D's first M columns (rows of y) */
    if (yb && p->dt == CUDA_R_32F)
        e = cudaMemcpyAsync(y, yb, (size_t)(M * w->N) * 4, cudaMemcpyDeviceToDevice, s);
    else if (yb)
        e = tgc_cast(tg_run_kt(TG_F32), y, tg_run_kt(w->t), yb, M * w->N, s);
    if (!e && b) {
        tgc_iter it = {.rank = 2, .dims = {M, w->N}, .st = {{w->N, 1}, {w->N, 1}, {0, 1}}};
        e = tgc_binary(TGK_ADD, tg_run_kt(TG_F32), &it, y, b, y, cs->flag, s);
    }
    if (e)
        rc = tgc_fail(e, "launching a kernel");
done:
    if (xb)
        cudaFreeAsync(xb, s);
    if (yb)
        cudaFreeAsync(yb, s);
    if (ws)
        cudaFreeAsync(ws, s);
    return rc;
}

void tgc_lt24_describe(const tgc_lt24 *w, int64_t M, char *buf, size_t n)
{
    const lt_plan *p = find(w, M);
    snprintf(buf, n, "cuSPARSELt %s, %s out, algorithm %d (%s), x padded to %lld rows",
             w->t == TG_BF16 ? "bf16" : "fp16",
             p && p->dt == CUDA_R_32F ? "f32" : w->t == TG_BF16 ? "bf16" : "fp16",
             p ? p->alg : -1, p && p->searched ? "searched" : "default",
             (long long)(p ? p->Mp : M));
}
