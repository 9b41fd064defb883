/* The runner for compiled models: a .so from tcompile, loaded with dlopen and
 * driven through <tgraph/model.h> like any user's program would. */
#define _GNU_SOURCE
#include "runner.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <tgraph/model.h>

#include "../error.h"
#include "../modelcheck.h"

/* model.h's dtype numbers are tg_dtype's. */
_Static_assert((int)TGRAPH_F32 == (int)TG_F32 && (int)TGRAPH_BOOL == (int)TG_BOOL &&
               (int)TGRAPH_F8E5M2 == (int)TG_F8E5M2 && (int)TGRAPH_I64 == (int)TG_I64 &&
               (int)TGRAPH_U64 == (int)TG_U64 && (int)TGRAPH_F4E2M1 == (int)TG_F4E2M1,
               "tgraph_dtype and tg_dtype differ");
_Static_assert(TGRAPH_MAX_RANK == TG_MAX_RANK, "ranks differ");

/* The ABI, looked up once. */
#define SO_FUNCS(X) \
    X(uint32_t, abi_version, (void)) \
    X(const char *, last_error, (void)) \
    X(tgraph_model *, model_open, (const char *)) \
    X(void, model_close, (tgraph_model *)) \
    X(int, model_num_inputs, (const tgraph_model *)) \
    X(int, model_num_outputs, (const tgraph_model *)) \
    X(int, model_num_symbols, (const tgraph_model *)) \
    X(int, model_input_info, (const tgraph_model *, int, tgraph_tensor_info *)) \
    X(int, model_output_info, (const tgraph_model *, int, tgraph_tensor_info *)) \
    X(int, model_symbol_info, (const tgraph_model *, int, tgraph_symbol_info *)) \
    X(int, model_run, (tgraph_model *, const tgraph_tensor *, int, tgraph_tensor *, int)) \
    X(void, set_num_threads, (int))

typedef struct {
#define X(ret, name, args) ret (*name) args;
    SO_FUNCS(X)
#undef X
    void (*set_profile)(tgraph_profile_fn, void *);    /* optional: NULL in older models */
    void *dl;
    tgraph_model *m;
} so_impl;

bool tg_runner_is_so(const char *path)
{
    unsigned char magic[4] = {0};
    FILE *f = strcmp(path, "-") ? fopen(path, "rb") : NULL;
    if (!f)
        return false;
    size_t n = fread(magic, 1, 4, f);
    fclose(f);
    return n == 4 && memcmp(magic, "\177ELF", 4) == 0;
}

static int so_run(tg_runner *r, const tg_tensor *inputs, tg_tensor *outputs)
{
    so_impl *s = r->impl;
    tgraph_tensor in[r->ninput + 1], out[r->noutput + 1];
    memset(out, 0, sizeof out);
    for (int i = 0; i < r->ninput; i++) {
        in[i] = (tgraph_tensor){.data = inputs[i].data, .dtype = (tgraph_dtype)inputs[i].dtype,
                                .rank = inputs[i].rank, .nbytes = inputs[i].nbytes};
        memcpy(in[i].dims, inputs[i].dims, sizeof in[i].dims);
    }
    if (s->model_run(s->m, in, r->ninput, out, r->noutput))
        return tg_err("%s", s->last_error());
    for (int i = 0; i < r->noutput; i++) {
        outputs[i] = (tg_tensor){.dtype = (tg_dtype)out[i].dtype, .rank = out[i].rank,
                                 .data = out[i].data, .nbytes = out[i].nbytes};
        memcpy(outputs[i].dims, out[i].dims, sizeof outputs[i].dims);
    }
    return 0;
}

static void so_free(tg_runner *r)
{
    so_impl *s = r->impl;
    if (s) {
        if (s->set_profile && s->m)
            s->set_profile(NULL, NULL);     /* the callback may not outlive its caller */
        if (s->m)
            s->model_close(s->m);
        if (s->dl)
            dlclose(s->dl);
        free(s);
    }
    for (int i = 0; i < r->nsym; i++)
        free(r->sym[i].name);
    free(r->inputs);
    free(r->outputs);
    free(r);
}

static void so_set_profile(tg_runner *r, tg_runner_profile_fn fn, void *ctx)
{
    so_impl *s = r->impl;
    s->set_profile(fn, ctx);    /* the same signature: the model calls trun's function */
}

/* Only models that can time their kernels offer set_profile. */
static const tg_runner_ops so_ops_profiled = {
    /* .run = */ so_run,
    /* .set_profile = */ so_set_profile,
    /* .free = */ so_free,
};

static const tg_runner_ops so_ops = {
    /* .run = */ so_run,
    /* .set_profile = */ NULL,
    /* .free = */ so_free,
};

/* One input or output as the runner describes it: dims parsed back from the
 * model's expressions over the runner's symbols. */
static int io_from(const tg_runner *r, const tgraph_tensor_info *t, tg_runner_io *io)
{
    io->name = (char *)t->name;
    io->dtype = (tg_dtype)t->dtype;
    io->shape.rank = t->rank;
    io->lo = io->hi = 0;
    if (t->rank < 0 || t->rank > TG_MAX_RANK)
        return tg_err("'%s' has rank %d", t->name, t->rank);
    for (int k = 0; k < t->rank; k++)
        if (tg_dim_parse(t->dim_expr[k], r->sym, r->nsym, &io->shape.d[k]))
            return tg_err("'%s': dim %d: %s", t->name, k, tg_errmsg());
    return 0;
}

static int so_describe(tg_runner *r, so_impl *s)
{
    r->nsym = s->model_num_symbols(s->m);
    r->ninput = s->model_num_inputs(s->m);
    r->noutput = s->model_num_outputs(s->m);
    if (r->nsym < 0 || r->nsym > TG_MAX_SYMS || r->ninput < 0 || r->noutput < 0)
        return tg_err("the model describes itself inconsistently");
    for (int i = 0; i < r->nsym; i++) {
        tgraph_symbol_info si;
        if (s->model_symbol_info(s->m, i, &si))
            return tg_err("%s", s->last_error());
        r->sym[i] = (tg_symbol){.name = strdup(si.name), .min = si.min, .max = si.max};
        if (!r->sym[i].name)
            return tg_err("out of memory");
    }
    r->inputs = calloc(r->ninput + 1, sizeof *r->inputs);
    r->outputs = calloc(r->noutput + 1, sizeof *r->outputs);
    if (!r->inputs || !r->outputs)
        return tg_err("out of memory");
    for (int i = 0; i < r->ninput + r->noutput; i++) {
        tgraph_tensor_info t;
        bool in = i < r->ninput;
        int k = in ? i : i - r->ninput;
        if ((in ? s->model_input_info : s->model_output_info)(s->m, k, &t))
            return tg_err("%s", s->last_error());
        if (io_from(r, &t, in ? &r->inputs[k] : &r->outputs[k]))
            return -1;
    }
    return 0;
}

tg_runner *tg_runner_open_so(const char *path, int nthreads)
{
    tg_runner *r = calloc(1, sizeof *r);
    so_impl *s = calloc(1, sizeof *s);
    char *p = malloc(strlen(path) + 3);
    if (!r || !s || !p) {
        free(r), free(s), free(p);
        tg_err("out of memory");
        return NULL;
    }
    r->ops = &so_ops;
    r->impl = s;
    /* a bare name would be searched for in the library path */
    sprintf(p, "%s%s", strchr(path, '/') ? "" : "./", path);
    /* dlopen dies of SIGBUS on a truncated file: check it first */
    if (tg_model_check(path) < 0) {
        free(p);
        goto fail;
    }
    /* NODELETE: the model's worker threads live in its code */
    s->dl = dlopen(p, RTLD_NOW | RTLD_LOCAL | RTLD_NODELETE);
    free(p);
    if (!s->dl) {
        tg_err("%s", dlerror());
        goto fail;
    }
#define X(ret, name, args) \
    if (!(*(void **)&s->name = dlsym(s->dl, "tgraph_" #name))) { \
        tg_err("not a compiled tgraph model: no tgraph_" #name); \
        goto fail; \
    }
    SO_FUNCS(X)
#undef X
    if ((*(void **)&s->set_profile = dlsym(s->dl, "tgraph_set_profile")))
        r->ops = &so_ops_profiled;
    if (s->abi_version() != TGRAPH_MODEL_ABI_VERSION) {
        tg_err("model ABI version %u, this trun reads %d: recompile it with tcompile",
               s->abi_version(), TGRAPH_MODEL_ABI_VERSION);
        goto fail;
    }
    s->set_num_threads(nthreads);
    if (!(s->m = s->model_open(NULL))) {
        tg_err("%s", s->last_error());
        goto fail;
    }
    if (so_describe(r, s))
        goto fail;
    return r;
fail:
    so_free(r);
    return NULL;
}
