/* Convolutions through cuDNN (its convolution API, cudnnConvolutionForward),
 * where configure found it (HAVE_CUDNN): x and y stay NCHW (NCDHW) as the
 * graph has them, so nothing goes into patches and nothing is copied back
 * (gemm.c's product path moves a 3x3 convolution's input nine times and its
 * output twice). In float32 (tcompile without --dtype) x, w and y are the
 * graph's, on FMA kernels, tf32 tensor cores with tf32; with --dtype bf16 or
 * fp16, x is converted to that type, the product accumulates in float32 on
 * the tensor cores, and its result (in that type, as cuDNN writes it) comes
 * back to float32 with the bias, an EPILOGUE group's residual and relu in
 * one pass (tgc_conv_out). In float32 with a bias, the convolution, bias,
 * residual and relu are one call (cudnnConvolutionBiasActivationForward:
 * y = act(conv(x) + z + b)). The algorithm is
 * cuDNN's heuristic first choice (no timing runs: a compiled model captures
 * its run). TG_CUDNN=off keeps the device and compiled models off cuDNN. */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../cpu/run.h"
#include "cuda.h"

#ifdef HAVE_CUDNN
#include <cudnn.h>

cudnnHandle_t tgc_dnn_new(void)
{
    const char *off = getenv("TG_CUDNN");
    cudnnHandle_t h = NULL;
    if (off && !strcmp(off, "off"))
        return NULL;
    if (cudnnCreate(&h) != CUDNN_STATUS_SUCCESS)
        return NULL;            /* a missing sub-library, say: the product path */
    return h;
}

void tgc_dnn_free(cudnnHandle_t h)
{
    if (h)
        cudnnDestroy(h);
}

static int dnn_fail(cudnnStatus_t st, const char *what)
{
    return tg_err("cuda: %s: %s", what, cudnnGetErrorString(st));
}

typedef struct {
    cudnnTensorDescriptor_t x, y;
    cudnnFilterDescriptor_t w;
    cudnnConvolutionDescriptor_t c;
} descs;

static void descs_free(descs *s)
{
    if (s->x)
        cudnnDestroyTensorDescriptor(s->x);
    if (s->y)
        cudnnDestroyTensorDescriptor(s->y);
    if (s->w)
        cudnnDestroyFilterDescriptor(s->w);
    if (s->c)
        cudnnDestroyConvolutionDescriptor(s->c);
}

/* d's tensors, filter and convolution in cuDNN's words, a 1-D convolution as
 * a 2-D one of height 1; false when a size does not fit cuDNN's int or
 * cuDNN refuses a descriptor (then the product path takes it). */
static bool describe(const tgk_conv_desc *d, cudnnDataType_t t, cudnnMathType_t math, descs *s)
{
    int sp = d->nsp == 1 ? 2 : d->nsp, off = sp - d->nsp, nb = sp + 2;
    int xd[5], yd[5], wd[5], pad[3], str[3], dil[3];
    int64_t big[] = {d->n, d->c, d->k};
    for (int i = 0; i < 3; i++)
        if (big[i] > INT32_MAX)
            return false;
    xd[0] = yd[0] = (int)d->n;
    xd[1] = wd[1] = (int)d->c;
    yd[1] = wd[0] = (int)d->k;
    for (int i = 0; i < sp; i++) {
        bool one = i < off;     /* the 1-D case's added height */
        int64_t v[] = {one ? 1 : d->in[i - off], one ? 1 : d->out[i - off],
                       one ? 1 : d->kernel[i - off], one ? 0 : d->pad[i - off],
                       one ? 1 : d->stride[i - off], one ? 1 : d->dil[i - off]};
        for (int k = 0; k < 6; k++)
            if (v[k] > INT32_MAX)
                return false;
        xd[2 + i] = (int)v[0];
        yd[2 + i] = (int)v[1];
        wd[2 + i] = (int)v[2];
        pad[i] = (int)v[3];
        str[i] = (int)v[4];
        dil[i] = (int)v[5];
    }
    int ys[5];
    ys[nb - 1] = 1;
    for (int i = nb - 2; i >= 0; i--) {
        if ((int64_t)ys[i + 1] * yd[i + 1] > INT32_MAX)
            return false;
        ys[i] = ys[i + 1] * yd[i + 1];
    }
    int got[5];
    return !cudnnCreateTensorDescriptor(&s->x) && !cudnnCreateTensorDescriptor(&s->y) &&
           !cudnnCreateFilterDescriptor(&s->w) && !cudnnCreateConvolutionDescriptor(&s->c) &&
           !cudnnSetTensorNdDescriptorEx(s->x, CUDNN_TENSOR_NCHW, t, nb, xd) &&
           !cudnnSetTensorNdDescriptorEx(s->y, CUDNN_TENSOR_NCHW, t, nb, yd) &&
           !cudnnSetFilterNdDescriptor(s->w, t, CUDNN_TENSOR_NCHW, nb, wd) &&
           !cudnnSetConvolutionNdDescriptor(s->c, sp, pad, str, dil, CUDNN_CROSS_CORRELATION,
                                            CUDNN_DATA_FLOAT) &&
           !cudnnSetConvolutionMathType(s->c, math) &&
           /* the output shape cuDNN derives is the graph's */
           !cudnnGetConvolutionNdForwardOutputDim(s->c, s->x, s->w, nb, got) &&
           !memcmp(got, yd, sizeof(int) * (size_t)nb);
}

/* cuDNN's refusal of a configuration (the families of CUDNN_STATUS_BAD_PARAM
 * and CUDNN_STATUS_NOT_SUPPORTED), as against a failure */
static bool refused(cudnnStatus_t st)
{
    return st >= CUDNN_STATUS_BAD_PARAM && st < CUDNN_STATUS_INTERNAL_ERROR;
}

/* The fused call's bias, residual and activation (float32 only) */
typedef struct {
    cudnnTensorDescriptor_t b;
    cudnnActivationDescriptor_t act;
    const float *bias, *z;      /* z: the residual, or NULL */
} fused;

/* y = conv(x, w), or with f (not NULL) y = act(conv(x, w) + z + b), with the
 * first of the heuristic's algorithms that cuDNN runs: 0, -1 an error, 1
 * every one refused (the fused call without relu takes only
 * IMPLICIT_PRECOMP_GEMM) */
static int forward(const tgc_state *cs, const descs *s, const cudnnConvolutionFwdAlgoPerf_t *perf,
                   int nperf, const void *x, const void *w, const fused *f, void *y)
{
    cudnnStatus_t st = cudnnSetStream(cs->dnn, cs->stream);
    if (st)
        return dnn_fail(st, "cudnnSetStream");
    for (int i = 0; i < nperf; i++) {
        size_t wsize = perf[i].memory;
        void *ws = NULL;
        if (perf[i].status != CUDNN_STATUS_SUCCESS || wsize > (1u << 30))
            continue;
        int e = wsize > cs->workspace_size ? cudaMallocAsync(&ws, wsize, cs->stream) : 0;
        if (e)
            return tgc_fail(e, "a convolution's workspace");
        float one = 1, zero = 0;
        if (f)
            st = cudnnConvolutionBiasActivationForward(
                cs->dnn, &one, s->x, x, s->w, w, s->c, perf[i].algo, ws ? ws : cs->workspace,
                wsize, f->z ? &one : &zero, s->y, f->z ? (const void *)f->z : y, f->b, f->bias,
                f->act, s->y, y);
        else
            st = cudnnConvolutionForward(cs->dnn, &one, s->x, x, s->w, w, s->c, perf[i].algo,
                                         ws ? ws : cs->workspace, wsize, &zero, s->y, y);
        e = ws ? cudaFreeAsync(ws, cs->stream) : 0;
        if (!st)
            return e ? tgc_fail(e, "freeing a convolution's workspace") : 0;
        if (!refused(st))
            return dnn_fail(st, f ? "cudnnConvolutionBiasActivationForward"
                                  : "cudnnConvolutionForward");
    }
    return 1;
}

/* The fused call's descriptors for a float32 convolution of K channels
 * with bias b and perhaps a residual and relu (cs): false when cuDNN refuses
 * one (then the convolution alone and tgc_conv_out). */
static bool describe_fused(const tgc_state *cs, const tgk_conv_desc *d, const float *b, fused *f)
{
    int nb = (d->nsp == 1 ? 2 : d->nsp) + 2, bd[5] = {1, (int)d->k, 1, 1, 1};
    *f = (fused){.bias = b, .z = cs->residual};
    return !cudnnCreateTensorDescriptor(&f->b) && !cudnnCreateActivationDescriptor(&f->act) &&
           !cudnnSetTensorNdDescriptorEx(f->b, CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, nb, bd) &&
           !cudnnSetActivationDescriptor(f->act, cs->relu ? CUDNN_ACTIVATION_RELU
                                                          : CUDNN_ACTIVATION_IDENTITY,
                                         CUDNN_PROPAGATE_NAN, 0.0);
}

static void fused_free(fused *f)
{
    if (f->b)
        cudnnDestroyTensorDescriptor(f->b);
    if (f->act)
        cudnnDestroyActivationDescriptor(f->act);
}

int tgc_dnn_conv(const tgc_state *cs, const tgk_conv_desc *d, const float *x, tg_dtype wt,
                 const void *w, const float *b, float *y)
{
    if (!cs->dnn || d->groups != 1 || d->transposed || d->nsp < 1 || d->nsp > 3)
        return 1;
    tg_dtype dt = cs->gemm_dtype;
    cudnnDataType_t t = dt == TG_BF16 ? CUDNN_DATA_BFLOAT16 : dt == TG_F16 ? CUDNN_DATA_HALF
                                                                           : CUDNN_DATA_FLOAT;
    cudnnMathType_t math = dt != TG_F32 ? CUDNN_TENSOR_OP_MATH
                           : cs->tf32   ? CUDNN_DEFAULT_MATH
                                        : CUDNN_FMA_MATH;
    descs s = {0};
    cudnnConvolutionFwdAlgoPerf_t perf[CUDNN_CONVOLUTION_FWD_ALGO_COUNT];
    int nperf = 0;
    if (!describe(d, t, math, &s) ||
        cudnnGetConvolutionForwardAlgorithm_v7(cs->dnn, s.x, s.w, s.c, s.y,
                                               CUDNN_CONVOLUTION_FWD_ALGO_COUNT, &nperf, perf))
        nperf = 0;
    if (nperf == 0) {
        descs_free(&s);
        return 1;
    }
    int64_t P = 1, nx = d->n * d->c, nw = d->k * d->c;
    for (int i = 0; i < d->nsp; i++) {
        P *= d->out[i];
        nx *= d->in[i];
        nw *= d->kernel[i];
    }
    const void *xa, *wa;
    void *tx = NULL, *tw = NULL, *ty = NULL;
    int rc = tgc_operand(cs, TG_F32, x, nx, &xa, &tx);
    if (!rc)
        rc = tgc_operand(cs, wt, w, nw, &wa, &tw);
    int e = 0;
    if (!rc && dt != TG_F32 &&
        (e = cudaMallocAsync(&ty, (size_t)(d->n * d->k * P) * tg_dtype_size(dt), cs->stream)))
        rc = tgc_fail(e, "a convolution's result");
    /* float32 with a bias: one call; else the convolution, then one pass */
    fused f = {0};
    bool one = !rc && dt == TG_F32 && b && describe_fused(cs, d, b, &f);
    if (one && (rc = forward(cs, &s, perf, nperf, xa, wa, &f, y)) == 1)
        one = false, rc = 0;        /* every algorithm refused the fused form */
    if (!rc && !one)
        rc = forward(cs, &s, perf, nperf, xa, wa, NULL, ty ? ty : (void *)y);
    if (!rc && !one && (ty || b || cs->residual || cs->relu)) {
        e = tgc_conv_out(tg_run_kt(dt), ty ? ty : (void *)y, b, cs->residual, cs->relu, y,
                         d->n * d->k, d->k, P, cs->stream);
        rc = e ? tgc_fail(e, "launching a kernel") : 0;
    }
    fused_free(&f);
    void *tmp[] = {tx, tw, ty};
    for (int i = 0; i < 3; i++)
        if (tmp[i] && (e = cudaFreeAsync(tmp[i], cs->stream)) && rc <= 0)
            rc = tgc_fail(e, "freeing a convolution's operand");
    descs_free(&s);
    return rc;
}

#else

struct cudnnContext *tgc_dnn_new(void)
{
    return NULL;
}

void tgc_dnn_free(struct cudnnContext *h)
{
}

int tgc_dnn_conv(const tgc_state *cs, const tgk_conv_desc *d, const float *x, tg_dtype wt,
                 const void *w, const float *b, float *y)
{
    return 1;
}

#endif
