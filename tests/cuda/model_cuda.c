/* model_cuda MODEL.so IN_A.npy IN_B.npy
 *
 * A model compiled by tcompile --target cuda, as an embedder drives it: two
 * input shapes (each captured once, then replayed; switching back and forth
 * must not recapture wrongly), tgraph_model_run_ex on the caller's stream
 * with inputs and outputs in device memory (the caller's buffers and ones
 * the model allocates), four threads sharing one handle, and a wrong input
 * refused with its status and words. Every result is compared with the
 * plain host run of the same input (relative 1e-5). Exits 77 when there is
 * no CUDA device; prints "N passed, N failed". */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgraph/model.h>

#include "npy.h"

#define THREADS 4
#define RUNS 10

static tgraph_model *(*open_fn)(const char *);
static void (*close_fn)(tgraph_model *);
static const char *(*last_error)(void);
static int (*run_fn)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
static int (*run_ex_fn)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int,
                        const tgraph_run_opts *);

static int passed, failed;
static pthread_mutex_t count_mu = PTHREAD_MUTEX_INITIALIZER;

static void count(bool ok, const char *what, const char *detail)
{
    pthread_mutex_lock(&count_mu);
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "%s: %s\n", what, detail);
    }
    pthread_mutex_unlock(&count_mu);
}

/* float32 outputs within 1e-5 relative (1e-6 absolute); others bit for bit */
static bool close_to(const tgraph_tensor *a, const tgraph_tensor *b)
{
    if (a->dtype != b->dtype || a->rank != b->rank || a->nbytes != b->nbytes ||
        memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->rank))
        return false;
    if (a->dtype != TGRAPH_F32)
        return !memcmp(a->data, b->data, a->nbytes);
    const float *x = a->data, *y = b->data;
    for (size_t i = 0; i < a->nbytes / 4; i++)
        if (!(fabsf(x[i] - y[i]) <= 1e-6f + 1e-5f * fabsf(y[i])))
            return false;
    return true;
}

static tgraph_tensor as_input(const tg_tensor *t)
{
    tgraph_tensor x = {t->data, (tgraph_dtype)t->dtype, t->rank, {0}, t->nbytes};
    memcpy(x.dims, t->dims, sizeof x.dims[0] * (size_t)t->rank);
    return x;
}

typedef struct {
    tgraph_model *m;
    tgraph_tensor in[2], ref[2];
} shared;

static void *worker(void *arg)
{
    shared *s = arg;
    for (int r = 0; r < RUNS; r++) {
        tgraph_tensor out = {0};
        int k = r & 1, rc = run_fn(s->m, &s->in[k], 1, &out, 1);
        count(rc == 0 && close_to(&out, &s->ref[k]), "threads", rc ? last_error() : "differs");
        free(out.data);
    }
    return NULL;
}

/* run_ex on a stream of ours with the input and the output in device memory:
 * the caller's buffer (own) or one the model allocates. */
static void device_run(tgraph_model *m, const tgraph_tensor *in, const tgraph_tensor *ref,
                       bool own)
{
    cudaStream_t st;
    void *din = NULL, *dout = NULL;
    tgraph_tensor x = *in, out = {0}, host = *ref;
    cudaStreamCreate(&st);
    cudaMalloc(&din, in->nbytes ? in->nbytes : 1);
    cudaMemcpy(din, in->data, in->nbytes, cudaMemcpyHostToDevice);
    x.data = din;
    if (own) {
        cudaMalloc(&dout, ref->nbytes ? ref->nbytes : 1);
        out.data = dout;
        out.nbytes = ref->nbytes;
    }
    tgraph_run_opts o = {sizeof o, TGRAPH_RUN_OPTS_VERSION, st, TGRAPH_DEVICE, TGRAPH_DEVICE};
    int rc = run_ex_fn(m, &x, 1, &out, 1, &o);
    host.data = malloc(ref->nbytes ? ref->nbytes : 1);
    bool ok = rc == 0 && cudaStreamSynchronize(st) == cudaSuccess &&
              cudaMemcpy(host.data, out.data, ref->nbytes, cudaMemcpyDeviceToHost) == cudaSuccess;
    host.nbytes = out.nbytes;
    count(ok && close_to(&host, ref), own ? "device run, caller's buffer" : "device run, allocated",
          rc ? last_error() : "differs");
    if (!own && out.data)
        cudaFree(out.data);
    cudaFree(dout);
    cudaFree(din);
    free(host.data);
    cudaStreamDestroy(st);
}

int main(int argc, char **argv)
{
    int ndev = 0;
    if (argc != 4) {
        fprintf(stderr, "usage: model_cuda MODEL.so IN_A.npy IN_B.npy\n");
        return 2;
    }
    if (cudaGetDeviceCount(&ndev) != cudaSuccess || ndev == 0) {
        fprintf(stderr, "model_cuda: no CUDA device\n");
        return 77;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    tg_tensor t[2];
    if (!dl || tg_npy_load(argv[2], &t[0]) || tg_npy_load(argv[3], &t[1])) {
        fprintf(stderr, "model_cuda: %s\n", dl ? "cannot read the inputs" : dlerror());
        return 2;
    }
    *(void **)&open_fn = dlsym(dl, "tgraph_model_open");
    *(void **)&close_fn = dlsym(dl, "tgraph_model_close");
    *(void **)&last_error = dlsym(dl, "tgraph_last_error");
    *(void **)&run_fn = dlsym(dl, "tgraph_model_run");
    *(void **)&run_ex_fn = dlsym(dl, "tgraph_model_run_ex");
    shared s = {0};
    s.m = open_fn ? open_fn(NULL) : NULL;
    if (!s.m) {
        fprintf(stderr, "model_cuda: %s\n", last_error ? last_error() : "not a model");
        return 2;
    }
    for (int k = 0; k < 2; k++) {
        s.in[k] = as_input(&t[k]);
        int rc = run_fn(s.m, &s.in[k], 1, &s.ref[k], 1);
        count(rc == 0, "host run", rc ? last_error() : "");
    }
    /* each shape again, after the other: its captured run replayed */
    for (int k = 0; k < 2; k++) {
        tgraph_tensor out = {0};
        int rc = run_fn(s.m, &s.in[k], 1, &out, 1);
        count(rc == 0 && close_to(&out, &s.ref[k]), "replay", rc ? last_error() : "differs");
        free(out.data);
    }
    for (int k = 0; k < 2; k++) {
        device_run(s.m, &s.in[k], &s.ref[k], true);
        device_run(s.m, &s.in[k], &s.ref[k], false);
    }
    pthread_t th[THREADS];
    for (int i = 0; i < THREADS; i++)
        pthread_create(&th[i], NULL, worker, &s);
    for (int i = 0; i < THREADS; i++)
        pthread_join(th[i], NULL);
    /* a wrong dtype: refused with its status and the input's name */
    tgraph_tensor bad = s.in[0], out = {0};
    bad.dtype = bad.dtype == TGRAPH_F32 ? TGRAPH_F64 : TGRAPH_F32;
    int rc = run_fn(s.m, &bad, 1, &out, 1);
    count(rc == TGRAPH_E_DTYPE && strstr(last_error(), "dtype"), "wrong dtype", last_error());
    for (int k = 0; k < 2; k++)
        free(s.ref[k].data);
    close_fn(s.m);
    printf("%d passed, %d failed\n", passed, failed);
    return failed ? 1 : 0;
}
