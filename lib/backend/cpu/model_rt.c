/* The model ABI's common half (model_rt.h). Built into libtgkernels.a with
 * hidden visibility; only the generated file's forwarders are exported. */
#define _GNU_SOURCE
#include "model_rt.h"

#include "kernels/kernels.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "kernels/tensor_ops.h"

struct tgraph_model {
    const tgrt_model *d;        /* first, as every runtime's (model_rt.h) */
    const unsigned char *w;     /* weights: embedded, or inside map */
    void *map;
    size_t maplen;
    void *ws;                   /* one spare workspace, taken and returned atomically */
};

/* A workspace: its size, then the arena. */
typedef struct {
    size_t cap;                 /* arena bytes available */
    unsigned char *arena;
} ws_head;

static __thread char err_msg[512];

tgraph_profile_fn tgrt_prof_fn;
static void *prof_ctx;

void tgrt_set_profile(tgraph_profile_fn fn, void *ctx)
{
    prof_ctx = ctx;
    tgrt_prof_fn = fn;
}

double tgrt_now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (double)t.tv_sec + 1e-9 * (double)t.tv_nsec;
}

void tgrt_prof_end(double t0, const char *kernel, const char *ops)
{
    tgraph_profile_fn fn = tgrt_prof_fn;
    if (fn)
        fn(prof_ctx, kernel, ops, tgrt_now() - t0);
}

int tgrt_fail(int status, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err_msg, sizeof err_msg, fmt, ap);
    va_end(ap);
    return status;
}

const char *tgrt_last_error(void) { return err_msg; }

const char *tgrt_strerror(int status)
{
    switch (status) {
    case TGRAPH_OK: return "success";
    case TGRAPH_E_ARG: return "invalid argument";
    case TGRAPH_E_DTYPE: return "wrong dtype";
    case TGRAPH_E_SHAPE: return "wrong shape";
    case TGRAPH_E_RANGE: return "dimension out of range";
    case TGRAPH_E_NOMEM: return "out of memory";
    case TGRAPH_E_SPACE: return "output buffer too small";
    case TGRAPH_E_DATA: return "invalid input data";
    case TGRAPH_E_WEIGHTS: return "bad weights file";
    case TGRAPH_E_DEVICE: return "device error";
    }
    return "unknown status";
}

static const char *dtype_name(int t)
{
    static const char *const names[] = {"none", "f32", "f64", "f16", "bf16", "f8e4m3",
                                        "f8e5m2", "i8", "u8", "i16", "i32", "i64", "bool"};
    return t >= 0 && t < (int)(sizeof names / sizeof names[0]) ? names[t] : "unknown";
}

static uint64_t rd64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = v << 8 | p[i];
    return v;
}

/* The weights file named at compile time, beside this .so. */
static char *beside_so(const char *name)
{
    Dl_info info;
    if (!dladdr((void *)tgrt_open, &info) || !info.dli_fname)
        return strdup(name);
    const char *slash = strrchr(info.dli_fname, '/');
    size_t dir = slash ? (size_t)(slash - info.dli_fname + 1) : 0;
    char *p = malloc(dir + strlen(name) + 1);
    if (p) {
        memcpy(p, info.dli_fname, dir);
        strcpy(p + dir, name);
    }
    return p;
}

static int map_weights(tgraph_model *m, const char *path)
{
    const tgrt_model *d = m->d;
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return tgrt_fail(TGRAPH_E_WEIGHTS, "%s: %s", path, strerror(errno));
    struct stat st;
    unsigned char head[TGRT_WEIGHTS_HEADER];
    int rc = TGRAPH_E_WEIGHTS;
    if (fstat(fd, &st) < 0) {
        tgrt_fail(rc, "%s: %s", path, strerror(errno));
    } else if (pread(fd, head, sizeof head, 0) != (ssize_t)sizeof head ||
               memcmp(head, TGRT_WEIGHTS_MAGIC, 8) != 0) {
        tgrt_fail(rc, "%s: not a tgraph weights file", path);
    } else if (rd64(head + 8) != d->weights_size || rd64(head + 16) != d->weights_hash ||
               (uint64_t)st.st_size != TGRT_WEIGHTS_HEADER + d->weights_size) {
        tgrt_fail(rc, "%s: weights of another model", path);
    } else {
        void *p = mmap(NULL, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            tgrt_fail(rc, "%s: mmap: %s", path, strerror(errno));
        } else {
            m->map = p;
            m->maplen = st.st_size;
            m->w = (const unsigned char *)p + TGRT_WEIGHTS_HEADER;
            rc = 0;
        }
    }
    close(fd);
    return rc;
}

tgraph_model *tgrt_open(const tgrt_model *d, const char *weights_path)
{
    tgraph_model *m = calloc(1, sizeof *m);
    if (!m) {
        tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
        return NULL;
    }
    m->d = d;
    m->w = d->weights;
    if (weights_path || !d->weights) {
        char *own = weights_path ? NULL : beside_so(d->weights_file);
        int rc = weights_path || own ? map_weights(m, weights_path ? weights_path : own)
                                     : tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
        free(own);
        if (rc) {
            free(m);
            return NULL;
        }
    }
    err_msg[0] = 0;
    return m;
}

void tgrt_close(tgraph_model *m)
{
    if (!m)
        return;
    if (m->map)
        munmap(m->map, m->maplen);
    free(m->ws);
    free(m);
}

int tgrt_num(const tgraph_model *m, int what)
{
    if (!m)
        return tgrt_fail(TGRAPH_E_ARG, "model is NULL");
    return what == 0 ? m->d->nin : what == 1 ? m->d->nout : m->d->nsym;
}

int tgrt_tensor_info(const tgraph_model *m, int output, int i, tgraph_tensor_info *info)
{
    if (!m || !info)
        return tgrt_fail(TGRAPH_E_ARG, "model or info is NULL");
    int n = output ? m->d->nout : m->d->nin;
    if (i < 0 || i >= n)
        return tgrt_fail(TGRAPH_E_ARG, "%s %d out of range (the model has %d)",
                         output ? "output" : "input", i, n);
    *info = output ? m->d->out[i] : m->d->in[i];
    return 0;
}

int tgrt_symbol_info(const tgraph_model *m, int i, tgraph_symbol_info *info)
{
    if (!m || !info)
        return tgrt_fail(TGRAPH_E_ARG, "model or info is NULL");
    if (i < 0 || i >= m->d->nsym)
        return tgrt_fail(TGRAPH_E_ARG, "symbol %d out of range (the model has %d)", i,
                         m->d->nsym);
    *info = m->d->sym[i];
    return 0;
}

/* "[s0, 784]" into buf. */
static const char *expected_dims(const tgraph_tensor_info *t, char *buf, size_t n)
{
    size_t k = snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && k < n; i++)
        k += snprintf(buf + k, n - k, "%s%s", i ? ", " : "", t->dim_expr[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

static const char *actual_dims(const tgraph_tensor *t, char *buf, size_t n)
{
    size_t k = snprintf(buf, n, "[");
    for (int i = 0; i < t->rank && i < TGRAPH_MAX_RANK && k < n; i++)
        k += snprintf(buf + k, n - k, "%s%" PRId64, i ? ", " : "", t->dims[i]);
    if (k < n)
        snprintf(buf + k, n - k, "]");
    return buf;
}

/* Check dtypes and ranks, read the symbols from the inputs' dims and check
 * their ranges. */
static int bind_symbols(const tgrt_model *d, const tgraph_tensor *in, int nin, int64_t *S)
{
    if (nin != d->nin || (nin && !in))
        return tgrt_fail(TGRAPH_E_ARG, "%d inputs given, the model takes %d", nin, d->nin);
    for (int i = 0; i < nin; i++) {
        const tgraph_tensor_info *t = &d->in[i];
        if (in[i].dtype != t->dtype)
            return tgrt_fail(TGRAPH_E_DTYPE, "input '%s': dtype %s, expected %s", t->name,
                             dtype_name(in[i].dtype), dtype_name(t->dtype));
        if (in[i].rank != t->rank) {
            char e[256];
            return tgrt_fail(TGRAPH_E_SHAPE, "input '%s': rank %d, expected %d %s", t->name,
                             in[i].rank, t->rank, expected_dims(t, e, sizeof e));
        }
        if (!in[i].data && tgk_dtype_size((tgk_dtype)t->dtype) > 0) {
            int64_t n = 1;
            for (int k = 0; k < t->rank; k++)
                n *= in[i].dims[k];
            if (n)
                return tgrt_fail(TGRAPH_E_ARG, "input '%s': data is NULL", t->name);
        }
    }
    for (int s = 0; s < d->nsym; s++) {
        const tgrt_bind *b = &d->bind[s];
        if (b->input < 0) {     /* a data symbol: its bound until its node runs (or, one a
                                 * control node sets, what only its outputs use) */
            S[s] = d->sym[s].max;
            continue;
        }
        const tgraph_tensor_info *t = &d->in[b->input];
        int64_t dim = in[b->input].dims[b->axis], v = dim - b->offset;
        if (dim < 0 || v % b->coef != 0) {
            char e[256], a[256];
            return tgrt_fail(TGRAPH_E_SHAPE, "input '%s': dims %s, expected %s", t->name,
                             actual_dims(&in[b->input], a, sizeof a),
                             expected_dims(t, e, sizeof e));
        }
        S[s] = v / b->coef;
        if (S[s] < d->sym[s].min || S[s] > d->sym[s].max)
            return tgrt_fail(TGRAPH_E_RANGE,
                             "input '%s': dim %d gives %s = %" PRId64 ", outside [%" PRId64
                             ", %" PRId64 "]",
                             t->name, b->axis, d->sym[s].name, S[s], d->sym[s].min,
                             d->sym[s].max);
    }
    return 0;
}

static int check_dims(const tgrt_model *d, const tgraph_tensor *in, const int64_t *D)
{
    for (int i = 0; i < d->nin; i++)
        for (int k = 0; k < d->in[i].rank; k++)
            if (in[i].dims[k] != D[d->in_dim[i * TGRAPH_MAX_RANK + k]]) {
                char e[256], a[256];
                return tgrt_fail(TGRAPH_E_SHAPE, "input '%s': dims %s, expected %s",
                                 d->in[i].name, actual_dims(&in[i], a, sizeof a),
                                 expected_dims(&d->in[i], e, sizeof e));
            }
    return 0;
}

/* Outputs' dtype, rank, dims and size in bytes. */
static void output_shapes(const tgrt_model *d, const int64_t *D, tgraph_tensor *out)
{
    for (int i = 0; i < d->nout; i++) {
        const tgraph_tensor_info *t = &d->out[i];
        size_t n = tgk_dtype_size((tgk_dtype)t->dtype);
        out[i].dtype = t->dtype;
        out[i].rank = t->rank;
        for (int k = 0; k < t->rank; k++) {
            int x = d->out_dim[i * TGRAPH_MAX_RANK + k];
            out[i].dims[k] = x < 0 ? -1 : D[x];
            n = x < 0 ? 0 : n * (size_t)out[i].dims[k];
        }
        out[i].nbytes = n;
    }
}

/* Whether output i's shape is one the run sets (a dim of it -1 in out_dim). */
static int run_sized(const tgrt_model *d, int i)
{
    for (int k = 0; k < d->out[i].rank; k++)
        if (d->out_dim[i * TGRAPH_MAX_RANK + k] < 0)
            return 1;
    return 0;
}

static int check_table(const tgrt_model *d, const tgraph_tensor *in, int nin,
                       const tgraph_tensor *out, int nout, int64_t *S, int64_t *D, size_t *slot,
                       tgraph_tensor *res, size_t *need)
{
    if (nout != d->nout || (nout && !out))
        return tgrt_fail(TGRAPH_E_ARG, "%d outputs given, the model has %d", nout, d->nout);
    int rc = bind_symbols(d, in, nin, S);
    if (rc)
        return rc;
    *need = d->prepare(S, D, slot);
    if ((rc = check_dims(d, in, D)))
        return rc;
    output_shapes(d, D, res);
    return 0;
}

int tgrt_check_call(const tgraph_model *m, const tgraph_tensor *in, int nin,
                      const tgraph_tensor *out, int nout, int64_t *S, int64_t *D, size_t *slot,
                      tgraph_tensor *res, size_t *need)
{
    if (!m)
        return tgrt_fail(TGRAPH_E_ARG, "model is NULL");
    return check_table(m->d, in, nin, out, nout, S, D, slot, res, need);
}

int tgrt_output_dims(const tgraph_model *m, const tgraph_tensor *in, int nin,
                     tgraph_tensor *out, int nout)
{
    CALL_ARRAYS(m);
    int rc = tgrt_check_call(m, in, nin, out, nout, S, D, slot, res, &need);
    for (int i = 0; !rc && i < nout; i++) {     /* the caller's data pointer stays */
        res[i].data = out[i].data;
        out[i] = res[i];
    }
    return rc;
}

/* A new workspace of `need` bytes. */
static ws_head *ws_new(size_t need)
{
    size_t head = (sizeof(ws_head) + TGRT_ALIGN - 1) / TGRT_ALIGN * TGRT_ALIGN;
    void *p;
    if (posix_memalign(&p, TGRT_ALIGN, head + need + 1))
        return NULL;
    ws_head *w = p;
    w->cap = need;
    w->arena = (unsigned char *)p + head;
    return w;
}

/* A workspace of at least `need` bytes: the handle's spare one when it is big
 * enough, else a new one. */
static ws_head *ws_take(tgraph_model *m, size_t need)
{
    ws_head *w = __atomic_exchange_n((ws_head **)&m->ws, NULL, __ATOMIC_ACQUIRE);
    if (w && w->cap >= need)
        return w;
    free(w);
    return ws_new(need);
}

static void ws_give(tgraph_model *m, ws_head *w)
{
    ws_head *none = NULL;
    if (!__atomic_compare_exchange_n((ws_head **)&m->ws, &none, w, 0, __ATOMIC_RELEASE,
                                     __ATOMIC_RELAXED))
        free(w);
}

/* A run of table d on weights w: its workspace handle m's spare one, or (m
 * NULL: a subgraph) one of its own. */
static int run_table(const tgrt_model *d, const unsigned char *wts, tgraph_model *m,
                     const tgraph_tensor *in, int nin, tgraph_tensor *out, int nout)
{
    int64_t S[d->nsym + 1], D[d->ndim + 1];
    size_t slot[d->nslot + 1], need = 0;
    tgraph_tensor res[d->nout + 1], dyn[d->nout + 1];
    int rc = check_table(d, in, nin, out, nout, S, D, slot, res, &need);
    if (rc)
        return rc;
    void *outp[d->nout + 1], *inp[d->nin + 1];
    memset(dyn, 0, sizeof dyn);
    for (int i = 0; i < d->nin; i++)
        inp[i] = in[i].data;
    int nalloc = 0;
    for (int i = 0; i < d->nout; i++) {
        outp[i] = run_sized(d, i) ? NULL : out[i].data;
        if (outp[i] && out[i].nbytes < res[i].nbytes)
            rc = tgrt_fail(TGRAPH_E_SPACE, "output '%s' needs %zu bytes, the buffer has %zu",
                           d->out[i].name, res[i].nbytes, out[i].nbytes);
    }
    for (int i = 0; i < d->nout && !rc; i++) {
        if (outp[i] || run_sized(d, i))
            continue;
        size_t n = (res[i].nbytes + TGRT_ALIGN - 1) / TGRT_ALIGN * TGRT_ALIGN;
        if (posix_memalign(&outp[i], TGRT_ALIGN, n ? n : TGRT_ALIGN)) {
            outp[i] = NULL;
            rc = tgrt_fail(TGRAPH_E_NOMEM, "out of memory for output '%s'", d->out[i].name);
        }
        nalloc = i + 1;
    }
    ws_head *w = rc ? NULL : m ? ws_take(m, need) : ws_new(need);
    if (!rc && !w)
        rc = tgrt_fail(TGRAPH_E_NOMEM, "out of memory for a workspace of %zu bytes", need);
    if (!rc) {
        tgrt_call c = {S, D, w->arena, slot, inp, outp, wts, dyn};
        rc = d->exec(&c);
        if (m)
            ws_give(m, w);
        else
            free(w);
        output_shapes(d, D, res);   /* the lengths the data set */
    }
    /* the outputs the run sized: into the caller's buffer where it gave one */
    for (int i = 0; i < d->nout && !rc; i++) {
        if (!run_sized(d, i) || !out[i].data)
            continue;
        if (out[i].nbytes < dyn[i].nbytes)
            rc = tgrt_fail(TGRAPH_E_SPACE, "output '%s' came out %zu bytes, the buffer has %zu",
                           d->out[i].name, dyn[i].nbytes, out[i].nbytes);
        else if (dyn[i].nbytes)
            memcpy(out[i].data, dyn[i].data, dyn[i].nbytes);
    }
    for (int i = 0; i < d->nout; i++)
        if (rc || out[i].data)
            free(dyn[i].data);
    for (int i = 0; i < nalloc; i++)
        if (rc && !out[i].data)
            free(outp[i]);
    if (rc)
        return rc;
    for (int i = 0; i < d->nout; i++) {
        void *given = out[i].data;
        out[i] = run_sized(d, i) ? dyn[i] : res[i];
        out[i].data = given ? given : run_sized(d, i) ? dyn[i].data : outp[i];
    }
    err_msg[0] = 0;
    return 0;
}

int tgrt_run(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out, int nout)
{
    tgk_parallel_prime();   /* the workers wake while the call is checked */
    if (!m)
        return tgrt_fail(TGRAPH_E_ARG, "model is NULL");
    return run_table(m->d, m->w, m, in, nin, out, nout);
}

int tgrt_sub_run(const tgrt_model *d, const unsigned char *w, const tgraph_tensor *in, int nin,
                 tgraph_tensor *out, int nout)
{
    return run_table(d, w, NULL, in, nin, out, nout);
}

/* The fields of each version of tgraph_run_opts: a caller's size must hold
 * them. */
static const size_t opts_size[TGRAPH_RUN_OPTS_VERSION + 1] = {
    [1] = offsetof(tgraph_run_opts, outputs) + sizeof(tgraph_placement),
};

static int check_placement(const char *what, tgraph_placement p)
{
    if ((unsigned)p > TGRAPH_DEVICE)
        return tgrt_fail(TGRAPH_E_ARG, "run options: %s placement %d is neither host (0) nor"
                         " device (1)", what, (int)p);
    return 0;
}

int tgrt_check_opts(const tgraph_run_opts *o)
{
    int rc;
    if (o && (o->version < 1 || o->version > TGRAPH_RUN_OPTS_VERSION))
        return tgrt_fail(TGRAPH_E_ARG, "run options of version %u: this model knows 1 to %d",
                         o->version, TGRAPH_RUN_OPTS_VERSION);
    if (o && o->size < opts_size[o->version])
        return tgrt_fail(TGRAPH_E_ARG, "run options of %u bytes: version %u has %zu",
                         o->size, o->version, opts_size[o->version]);
    if (o && ((rc = check_placement("input", o->inputs)) ||
              (rc = check_placement("output", o->outputs))))
        return rc;
    return 0;
}

int tgrt_run_ex(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out,
                int nout, const tgraph_run_opts *o)
{
    int rc = tgrt_check_opts(o);
    /* the CPU: device memory is the host's, and no queue to order on */
    return rc ? rc : tgrt_run(m, in, nin, out, nout);
}
