/* rss_host MODEL.so BATCH RUNS THREADS
 *
 * The smallest embedder of a compiled model, for bench/zoo/rss.py: dlopen
 * it, open it, run it RUNS times on THREADS threads on one random input
 * whose symbolic dims are BATCH (the zoo's models have one input, batch its
 * only symbol; integer inputs are token ids below 100), then exit. It links
 * only libc and libdl, so its peak resident set is what the model costs a
 * host, without trun's (or tgraph's) own libraries. */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <tgraph/model.h>

#define FN(name) (*(void **)&name = dlsym(dl, "tgraph_" #name))

int main(int argc, char **argv)
{
    if (argc != 5) {
        fprintf(stderr, "usage: rss_host MODEL.so BATCH RUNS THREADS\n");
        return 2;
    }
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    const char *(*last_error)(void);
    tgraph_model *(*model_open)(const char *);
    int (*model_input_info)(const tgraph_model *, int, tgraph_tensor_info *);
    int (*model_run)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
    void (*set_num_threads)(int);
    if (!dl || !FN(last_error) || !FN(model_open) || !FN(model_input_info) || !FN(model_run) ||
        !FN(set_num_threads)) {
        fprintf(stderr, "rss_host: %s\n", dl ? "not a compiled model" : dlerror());
        return 1;
    }
    set_num_threads(atoi(argv[4]));
    tgraph_model *m = model_open(NULL);
    tgraph_tensor_info ti;
    if (!m || model_input_info(m, 0, &ti)) {
        fprintf(stderr, "rss_host: %s\n", last_error());
        return 1;
    }
    tgraph_tensor x = {.dtype = ti.dtype, .rank = ti.rank};
    size_t n = 1;
    for (int k = 0; k < ti.rank; k++)
        n *= (size_t)(x.dims[k] = ti.dims[k] < 0 ? atoll(argv[2]) : ti.dims[k]);
    if (ti.dtype == TGRAPH_F32) {
        float *f = malloc(n * sizeof *f);
        for (size_t i = 0; i < n; i++)
            f[i] = (float)rand() / RAND_MAX - 0.5f;
        x.data = f, x.nbytes = n * sizeof *f;
    } else if (ti.dtype == TGRAPH_I64) {
        long long *t = malloc(n * sizeof *t);
        for (size_t i = 0; i < n; i++)
            t[i] = rand() % 100;
        x.data = t, x.nbytes = n * sizeof *t;
    } else {
        fprintf(stderr, "rss_host: input of dtype %d\n", (int)ti.dtype);
        return 1;
    }
    for (int r = 0; r < atoi(argv[3]); r++) {
        tgraph_tensor y = {0};
        if (model_run(m, &x, 1, &y, 1)) {
            fprintf(stderr, "rss_host: %s\n", last_error());
            return 1;
        }
        free(y.data);
    }
    return 0;
}
