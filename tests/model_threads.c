/* model_threads [-t N] MODEL.so IN.npy REF.npy [IN.npy REF.npy]...
 *
 * What an embedder does with a compiled model, from several threads at once:
 * dlopen it, read its introspection, open one handle, then run it from 4
 * threads concurrently (thread t takes input/reference pair t % npairs, so
 * different sizes run side by side), each run many times, with model- and
 * caller-allocated outputs alternately; every output must match its reference
 * within 1e-4 relative (of the reference's largest magnitude). With -t N,
 * tgraph_set_num_threads(N) first, and the model must be a good guest: the
 * environment as it was before dlopen, tgraph_num_threads() still N after
 * open and the runs, and the runs at once sharing the N threads: their loops
 * take what the others leave of N, so with N = 3 no two runs have workers at
 * once and the process starts 1 or 2 workers in all (it once started N - 1
 * per run in flight: 4 host threads on N = 3 kept 12 busy). Prints "N
 * passed, N failed". */
#define _GNU_SOURCE
#include <dirent.h>
#include <dlfcn.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgraph/model.h>

#include "npy.h"

#define THREADS 4
#define RUNS 25
#define MAX_PAIRS 8

static struct {
    uint32_t (*abi_version)(void);
    const char *(*last_error)(void);
    tgraph_model *(*open)(const char *);
    void (*close)(tgraph_model *);
    int (*num_inputs)(const tgraph_model *);
    int (*num_outputs)(const tgraph_model *);
    int (*num_symbols)(const tgraph_model *);
    int (*input_info)(const tgraph_model *, int, tgraph_tensor_info *);
    int (*output_info)(const tgraph_model *, int, tgraph_tensor_info *);
    int (*symbol_info)(const tgraph_model *, int, tgraph_symbol_info *);
    int (*run)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
    int (*output_dims)(const tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
    void (*set_num_threads)(int);
    int (*num_threads)(void);
} api;

static tgraph_model *model;
static tg_tensor in[MAX_PAIRS], ref[MAX_PAIRS];
static int npairs, passed, failed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void count(int ok, const char *what, int t, int run)
{
    pthread_mutex_lock(&lock);
    if (ok)
        passed++;
    else {
        failed++;
        fprintf(stderr, "thread %d run %d: %s\n", t, run, what);
    }
    pthread_mutex_unlock(&lock);
}

static int matches(const tgraph_tensor *o, const tg_tensor *r)
{
    if (o->dtype != TGRAPH_F32 || r->dtype != TG_F32 || o->rank != r->rank)
        return 0;
    for (int k = 0; k < r->rank; k++)
        if (o->dims[k] != r->dims[k])
            return 0;
    size_t n = r->nbytes / 4;
    const float *a = o->data, *b = r->data;
    double big = 0, err = 0;
    for (size_t i = 0; i < n; i++) {
        big = fmax(big, fabs(b[i]));
        err = fmax(err, fabs((double)a[i] - b[i]));
    }
    return err <= 1e-4 * fmax(big, 1e-6);
}

static void *worker(void *arg)
{
    int t = (int)(intptr_t)arg, p = t % npairs;
    tgraph_tensor x = {.data = in[p].data, .dtype = (tgraph_dtype)in[p].dtype,
                       .rank = in[p].rank, .nbytes = in[p].nbytes};
    memcpy(x.dims, in[p].dims, sizeof x.dims);
    void *buf = malloc(ref[p].nbytes);
    for (int run = 0; run < RUNS; run++) {
        /* even runs: the model allocates; odd runs: the caller's buffer */
        tgraph_tensor y = {.data = run % 2 ? buf : NULL, .nbytes = ref[p].nbytes};
        int rc = api.run(model, &x, 1, &y, 1);
        count(rc == 0, rc ? api.last_error() : "", t, run);
        if (rc == 0) {
            count(matches(&y, &ref[p]), "output differs from the reference", t, run);
            if (!(run % 2))
                free(y.data);
        }
    }
    free(buf);
    return NULL;
}

extern char **environ;

/* The environment as one string, to compare before and after. */
static char *env_text(void)
{
    size_t n = 1;
    for (char **e = environ; *e; e++)
        n += strlen(*e) + 1;
    char *s = malloc(n), *p = s;
    for (char **e = environ; *e; e++)
        p = stpcpy(p, *e), *p++ = '\n';
    *p = 0;
    return s;
}

static void *nothing(void *arg) { return arg; }

/* Threads of this process: /proc/self/task's entries. */
static int num_tasks(void)
{
    DIR *d = opendir("/proc/self/task");
    int n = 0;
    for (struct dirent *e; d && (e = readdir(d));)
        n += e->d_name[0] != '.';
    if (d)
        closedir(d);
    return n;
}

#define SYM(name) \
    if (!(*(void **)&api.name = dlsym(dl, "tgraph_" #name "")) && \
        !(*(void **)&api.name = dlsym(dl, "tgraph_model_" #name))) { \
        fprintf(stderr, "model_threads: no tgraph_%s\n", #name); \
        return 2; \
    }

int main(int argc, char **argv)
{
    int nthreads = 0;
    if (argc > 2 && !strcmp(argv[1], "-t")) {
        nthreads = atoi(argv[2]);
        argv += 2, argc -= 2;
    }
    if (argc < 4 || argc % 2 || (argc - 2) / 2 > MAX_PAIRS || nthreads < 0) {
        fprintf(stderr, "usage: model_threads [-t N] MODEL.so IN.npy REF.npy [IN.npy REF.npy]...\n");
        return 2;
    }
    char *env = env_text();
    /* the threads before the model: this one, and a sanitizer's own (TSan starts
     * its background thread at the first pthread_create: one made and joined) */
    pthread_t first;
    if (!pthread_create(&first, NULL, nothing, NULL))
        pthread_join(first, NULL);
    int tasks0 = num_tasks();
    void *dl = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (!dl) {
        fprintf(stderr, "model_threads: %s\n", dlerror());
        return 2;
    }
    SYM(abi_version) SYM(last_error) SYM(open) SYM(close) SYM(num_inputs) SYM(num_outputs)
    SYM(num_symbols) SYM(input_info) SYM(output_info) SYM(symbol_info) SYM(run)
    SYM(output_dims) SYM(set_num_threads) SYM(num_threads)
    if (nthreads)
        api.set_num_threads(nthreads);
    for (int i = 2; i < argc; i += 2, npairs++)
        if (tg_npy_load(argv[i], &in[npairs]) || tg_npy_load(argv[i + 1], &ref[npairs])) {
            fprintf(stderr, "model_threads: %s: cannot read\n", argv[i]);
            return 2;
        }

    count(api.abi_version() == TGRAPH_MODEL_ABI_VERSION, "ABI version", -1, 0);
    model = api.open(NULL);
    if (!model) {
        fprintf(stderr, "model_threads: %s\n", api.last_error());
        return 1;
    }
    /* introspection: one input and one output whose ranks match the files */
    tgraph_tensor_info ti;
    count(api.num_inputs(model) == 1 && api.num_outputs(model) == 1, "one input, one output",
          -1, 0);
    count(api.input_info(model, 0, &ti) == 0 && ti.rank == in[0].rank &&
          (int)ti.dtype == (int)in[0].dtype, "input info", -1, 0);
    for (int k = 0; k < ti.rank; k++)
        printf("input %s dim %d: %s\n", ti.name, k, ti.dim_expr[k]);
    count(api.output_info(model, 0, &ti) == 0 && ti.rank == ref[0].rank, "output info", -1, 0);
    count(api.input_info(model, 1, &ti) == TGRAPH_E_ARG, "input 1 is out of range", -1, 0);
    for (int s = 0; s < api.num_symbols(model); s++) {
        tgraph_symbol_info si;
        count(api.symbol_info(model, s, &si) == 0 && si.min <= si.max, "symbol info", -1, 0);
        printf("symbol %s in [%lld, %lld]\n", si.name, (long long)si.min, (long long)si.max);
    }

    /* output sizes up front, and a buffer one byte short is refused */
    for (int p = 0; p < npairs; p++) {
        tgraph_tensor x = {.data = in[p].data, .dtype = (tgraph_dtype)in[p].dtype,
                           .rank = in[p].rank};
        memcpy(x.dims, in[p].dims, sizeof x.dims);
        char mark;
        tgraph_tensor y = {.data = &mark};
        count(api.output_dims(model, &x, 1, &y, 1) == 0 && y.nbytes == ref[p].nbytes &&
              y.data == &mark, "output_dims", -1, p);
        y.data = malloc(ref[p].nbytes);
        y.nbytes = ref[p].nbytes - 1;
        count(api.run(model, &x, 1, &y, 1) == TGRAPH_E_SPACE, "a short buffer is refused", -1, p);
        free(y.data);
    }

    pthread_t th[THREADS];
    for (int t = 0; t < THREADS; t++)
        pthread_create(&th[t], NULL, worker, (void *)(intptr_t)t);
    for (int t = 0; t < THREADS; t++)
        pthread_join(th[t], NULL);
    if (nthreads) {
        char *now = env_text();
        count(!strcmp(env, now), "the environment changed", -1, 0);
        count(api.num_threads() == nthreads, "the thread count changed", -1, 0);
        int workers = num_tasks() - tasks0;   /* the runs' threads are joined */
        count(workers >= 1 && workers <= nthreads - 1,
              "runs at once did not share the threads", -1, 0);
        printf("%d runs at once sharing %d threads: %d workers\n", THREADS, nthreads, workers);
        free(now);
    }
    free(env);
    api.close(model);
    for (int i = 0; i < npairs; i++) {
        tg_tensor_free(&in[i]);
        tg_tensor_free(&ref[i]);
    }
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
