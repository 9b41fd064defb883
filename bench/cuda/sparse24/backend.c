/* The CUDA backend's linear_24 through cuSPARSELt against its dense bf16
 * linear, side by side: two models that tcompile --target cuda --dtype bf16
 * made of the same 2:4 weights (DENSE.so: linear nodes; SPARSE.so: tsparse's
 * linear_24 nodes), each run through tgraph_model_run_ex with the input and
 * output in device memory on one stream, so a time is the model's whole
 * run: the f32 input copied into its arena, x converted to bf16, the
 * product(s), the output copied out. First runs of a token count capture
 * it (and choose cuSPARSELt's algorithm): warm-up, untimed. Then ROUNDS
 * rounds alternate the models, RUNS back-to-back runs each, timed with
 * events; the median round. Fresh uniform [-1,1) input per token count.
 *   backend DENSE.so SPARSE.so K N FLOP_PER_TOKEN T...
 * prints one row a T: T, dense ms, sparse ms, dense and sparse TFLOP/s
 * (FLOP_PER_TOKEN * T), ratio, and ||sparse - dense|| / ||dense||. */
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgraph/model.h>

#define ROUNDS 7
#define RUNS 10

typedef struct {
    tgraph_model *m;
    int (*run_ex)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int,
                  const tgraph_run_opts *);
    const char *(*err)(void);
} model;

static int open_model(const char *path, model *md)
{
    void *dl = dlopen(path, RTLD_NOW | RTLD_LOCAL);
    tgraph_model *(*open_fn)(const char *);
    if (!dl) {
        fprintf(stderr, "backend: %s\n", dlerror());
        return -1;
    }
    *(void **)&open_fn = dlsym(dl, "tgraph_model_open");
    *(void **)&md->run_ex = dlsym(dl, "tgraph_model_run_ex");
    *(void **)&md->err = dlsym(dl, "tgraph_last_error");
    md->m = open_fn ? open_fn(NULL) : NULL;
    if (!md->m)
        fprintf(stderr, "backend: %s: %s\n", path, md->err ? md->err() : "not a model");
    return md->m ? 0 : -1;
}

static int cmp(const void *a, const void *b)
{
    float x = *(const float *)a, y = *(const float *)b;
    return (x > y) - (x < y);
}

static int run(model *md, const tgraph_tensor *x, tgraph_tensor *y, cudaStream_t s)
{
    tgraph_run_opts o = {sizeof o, TGRAPH_RUN_OPTS_VERSION, s, TGRAPH_DEVICE, TGRAPH_DEVICE};
    int rc = md->run_ex(md->m, x, 1, y, 1, &o);
    if (rc)
        fprintf(stderr, "backend: run: %s\n", md->err());
    return rc;
}

int main(int argc, char **argv)
{
    if (argc < 7) {
        fprintf(stderr, "usage: backend DENSE.so SPARSE.so K N FLOP_PER_TOKEN T...\n");
        return 2;
    }
    model md[2];
    if (open_model(argv[1], &md[0]) || open_model(argv[2], &md[1]))
        return 1;
    long K = atol(argv[3]), N = atol(argv[4]);
    double fpt = atof(argv[5]);
    cudaStream_t s;
    cudaEvent_t ev[2];
    cudaStreamCreate(&s);
    cudaEventCreate(&ev[0]);
    cudaEventCreate(&ev[1]);
    for (int a = 6; a < argc; a++) {
        long T = atol(argv[a]);
        size_t nx = (size_t)T * K, ny = (size_t)T * N;
        float *hx = malloc(nx * 4), *hy[2] = {malloc(ny * 4), malloc(ny * 4)};
        unsigned long long r = 0x9e3779b97f4a7c15ull * (unsigned long long)(a + 1);
        for (size_t i = 0; i < nx; i++) {
            r = r * 6364136223846793005ull + 1442695040888963407ull;
            hx[i] = (float)((r >> 40) / (double)(1ull << 24)) * 2 - 1;
        }
        void *dx, *dy[2];
        if (cudaMalloc(&dx, nx * 4) || cudaMalloc(&dy[0], ny * 4) || cudaMalloc(&dy[1], ny * 4)) {
            fprintf(stderr, "backend: out of device memory at T %ld\n", T);
            return 1;
        }
        cudaMemcpy(dx, hx, nx * 4, cudaMemcpyHostToDevice);
        tgraph_tensor x = {dx, TGRAPH_F32, 2, {T, K}, nx * 4};
        tgraph_tensor y[2] = {{dy[0], TGRAPH_F32, 2, {T, N}, ny * 4},
                              {dy[1], TGRAPH_F32, 2, {T, N}, ny * 4}};
        float ms[2][ROUNDS];
        for (int k = 0; k < 2; k++)
            for (int w = 0; w < 3; w++)
                if (run(&md[k], &x, &y[k], s))
                    return 1;
        for (int rd = 0; rd < ROUNDS; rd++)
            for (int k = 0; k < 2; k++) {
                cudaEventRecord(ev[0], s);
                for (int i = 0; i < RUNS; i++)
                    if (run(&md[k], &x, &y[k], s))
                        return 1;
                cudaEventRecord(ev[1], s);
                cudaEventSynchronize(ev[1]);
                cudaEventElapsedTime(&ms[k][rd], ev[0], ev[1]);
                ms[k][rd] /= RUNS;
            }
        cudaError_t e = cudaStreamSynchronize(s);
        for (int k = 0; k < 2 && !e; k++)
            e = cudaMemcpy(hy[k], dy[k], ny * 4, cudaMemcpyDeviceToHost);
        if (e) {
            fprintf(stderr, "backend: %s\n", cudaGetErrorString(e));
            return 1;
        }
        double d2 = 0, r2 = 0;
        for (size_t i = 0; i < ny; i++) {
            double d = (double)hy[1][i] - hy[0][i];
            d2 += d * d;
            r2 += (double)hy[0][i] * hy[0][i];
        }
        qsort(ms[0], ROUNDS, sizeof(float), cmp);
        qsort(ms[1], ROUNDS, sizeof(float), cmp);
        float dm = ms[0][ROUNDS / 2], sm = ms[1][ROUNDS / 2];
        printf("| %ld | %ld | %ld | %.3f | %.3f | %.0f | %.0f | %.2f | %.2g |\n", T, N, K, dm, sm,
               fpt * T / dm / 1e9, fpt * T / sm / 1e9, dm / sm, sqrt(d2 / (r2 > 0 ? r2 : 1)));
        fflush(stdout);
        cudaFree(dx);
        cudaFree(dy[0]);
        cudaFree(dy[1]);
        free(hx);
        free(hy[0]);
        free(hy[1]);
    }
    return 0;
}
