/* model_run_ex same|refuse MODEL.so IN.npy
 *
 * tgraph_model_run_ex beside tgraph_model_run, as an embedder calls them
 * through dlsym(3). same: a version 1 caller (tgraph_model_run) and run_ex
 * callers (options of version 1, host or device placement, or no options)
 * get bit-identical outputs. refuse: run_ex refuses options of an unknown
 * version, of a size too small for their version and of an unknown
 * placement with TGRAPH_E_ARG and a message naming the problem, and a good
 * run after them clears the message. Prints "N passed, N failed". */
#include <dlfcn.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgraph/model.h>

#include "npy.h"

typedef int (*run_fn)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int);
typedef int (*run_ex_fn)(tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int,
                         const tgraph_run_opts *);

static int passed, failed;

static void count(int ok, const char *what, const char *detail)
{
    if (ok) {
        passed++;
        return;
    }
    failed++;
    fprintf(stderr, "%s: %s\n", what, detail);
}

static int same(const tgraph_tensor *a, const tgraph_tensor *b)
{
    return a->dtype == b->dtype && a->rank == b->rank && a->nbytes == b->nbytes &&
           !memcmp(a->dims, b->dims, sizeof a->dims[0] * (size_t)a->rank) &&
           !memcmp(a->data, b->data, a->nbytes);
}

int main(int argc, char **argv)
{
    if (argc != 4 || (strcmp(argv[1], "same") && strcmp(argv[1], "refuse"))) {
        fprintf(stderr, "usage: model_run_ex same|refuse MODEL.so IN.npy\n");
        return 2;
    }
    void *dl = dlopen(argv[2], RTLD_NOW | RTLD_LOCAL);
    tg_tensor in;
    if (!dl || tg_npy_load(argv[3], &in)) {
        fprintf(stderr, "model_run_ex: %s\n", dl ? "cannot read the input" : dlerror());
        return 2;
    }
    tgraph_model *(*open)(const char *);
    void (*close)(tgraph_model *);
    const char *(*last_error)(void);
    run_fn run;
    run_ex_fn run_ex;
    *(void **)&open = dlsym(dl, "tgraph_model_open");
    *(void **)&close = dlsym(dl, "tgraph_model_close");
    *(void **)&last_error = dlsym(dl, "tgraph_last_error");
    *(void **)&run = dlsym(dl, "tgraph_model_run");
    *(void **)&run_ex = dlsym(dl, "tgraph_model_run_ex");
    tgraph_model *m = open && close && last_error && run && run_ex ? open(NULL) : NULL;
    if (!m) {
        fprintf(stderr, "model_run_ex: the model does not open or lacks a function\n");
        return 1;
    }
    tgraph_tensor x = {.data = in.data, .dtype = (tgraph_dtype)in.dtype, .rank = in.rank,
                       .nbytes = in.nbytes};
    memcpy(x.dims, in.dims, sizeof x.dims);
    tgraph_tensor ref = {0}, y;
    count(run(m, &x, 1, &ref, 1) == 0, "tgraph_model_run", last_error());

    if (!strcmp(argv[1], "same")) {
        static const struct { const char *what; tgraph_placement in, out; bool none; } opt[] = {
            {"run_ex, version 1, host", TGRAPH_HOST, TGRAPH_HOST, false},
            {"run_ex, version 1, device (the CPU's is the host's)", TGRAPH_DEVICE, TGRAPH_DEVICE,
             false},
            {"run_ex without options", TGRAPH_HOST, TGRAPH_HOST, true},
        };
        for (size_t i = 0; i < sizeof opt / sizeof opt[0]; i++) {
            tgraph_run_opts o = {sizeof o, TGRAPH_RUN_OPTS_VERSION, &o, opt[i].in, opt[i].out};
            y = (tgraph_tensor){0};
            int rc = run_ex(m, &x, 1, &y, 1, opt[i].none ? NULL : &o);
            count(rc == 0, opt[i].what, last_error());
            count(rc || same(&y, &ref), opt[i].what, "outputs differ from tgraph_model_run's");
            free(y.data);
        }
    } else {
        static const struct { const char *what; uint32_t size, version; int in, out;
                              const char *says; } bad[] = {
            {"version 0", sizeof(tgraph_run_opts), 0, 0, 0, "version 0: this model knows 1 to 1"},
            {"version 2", sizeof(tgraph_run_opts), 2, 0, 0, "version 2: this model knows 1 to 1"},
            {"size 8", 8, 1, 0, 0, "run options of 8 bytes: version 1 has "},
            {"size 0", 0, 1, 0, 0, "run options of 0 bytes"},
            {"input placement 7", sizeof(tgraph_run_opts), 1, 7, 0, "input placement 7"},
            {"output placement -1", sizeof(tgraph_run_opts), 1, 0, -1, "output placement -1"},
        };
        for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
            tgraph_run_opts o = {bad[i].size, bad[i].version, NULL, (tgraph_placement)bad[i].in,
                                 (tgraph_placement)bad[i].out};
            y = (tgraph_tensor){0};
            count(run_ex(m, &x, 1, &y, 1, &o) == TGRAPH_E_ARG && !y.data, bad[i].what,
                  "not refused with TGRAPH_E_ARG");
            count(strstr(last_error(), bad[i].says) != NULL, bad[i].what, last_error());
            printf("%s: %s\n", bad[i].what, last_error());
        }
        tgraph_run_opts o = {sizeof o, TGRAPH_RUN_OPTS_VERSION, NULL, TGRAPH_HOST, TGRAPH_HOST};
        y = (tgraph_tensor){0};
        count(run_ex(m, &x, 1, &y, 1, &o) == 0 && !*last_error(), "a good run after them",
              "fails or leaves the message");
        free(y.data);
    }
    free(ref.data);
    close(m);
    tg_tensor_free(&in);
    dlclose(dl);
    printf("%d passed, %d failed\n", passed, failed);
    return failed != 0;
}
