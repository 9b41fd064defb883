/* trun: run a model (a TG graph through the reference interpreter) on .npy
 * inputs or random ones; write the outputs as .npy, check them against
 * references, or time the runs. Everything about the model goes through the
 * runner interface (lib/exec/runner.h). */
#define _GNU_SOURCE     /* memfd_create */
#include <errno.h>
#include <getopt.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include <cjson/cJSON.h>

#include "cli.h"
#include "compare.h"
#include "dtype.h"
#include "error.h"
#include "backend/backend.h"
#include "exec/runner.h"
#include "log.h"
#include "npy.h"

#define MAX_CHECK 64

enum { OPT_CHECK = 256, OPT_RTOL, OPT_ATOL, OPT_RANDOM, OPT_SEED, OPT_DIM, OPT_BENCH,
       OPT_WARMUP, OPT_THREADS, OPT_PROFILE, OPT_DEVICE };

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"check", required_argument, NULL, OPT_CHECK},
    {"rtol", required_argument, NULL, OPT_RTOL},
    {"atol", required_argument, NULL, OPT_ATOL},
    {"random", no_argument, NULL, OPT_RANDOM},
    {"seed", required_argument, NULL, OPT_SEED},
    {"dim", required_argument, NULL, OPT_DIM},
    {"bench", optional_argument, NULL, OPT_BENCH},
    {"warmup", required_argument, NULL, OPT_WARMUP},
    {"threads", required_argument, NULL, OPT_THREADS},
    {"profile", required_argument, NULL, OPT_PROFILE},
    {"device", required_argument, NULL, OPT_DEVICE},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

static void help(void)
{
    printf("Usage: trun [OPTION]... MODEL [INPUT.npy | NAME=INPUT.npy]...\n"
           "Run MODEL on the inputs, given in the model's input order or by name, and\n"
           "write its output as .npy. MODEL is a TG graph (run by the reference\n"
           "interpreter) or a shared object compiled by tcompile; - reads either from\n"
           "stdin.\n"
           "\n"
           "  -o, --output=PATH    write the output to PATH (default stdout); a model with\n"
           "                       several outputs needs a directory: PATH/out0.npy ...\n"
           "      --check=REF[,REF...]  compare the outputs with reference .npy files of\n"
           "                       the same dtype and shape, element by element: exit 1\n"
           "                       unless each |out-ref| <= atol + rtol*|ref| and NaN and\n"
           "                       inf sit where the reference has them; print the max\n"
           "                       abs and rel error, the failing count and the worst\n"
           "                       element (no stdout output unless -o)\n"
           "      --rtol=X         relative tolerance for --check (default 1e-4)\n"
           "      --atol=X         absolute tolerance for --check (default 1e-5)\n"
           "      --random         make the inputs not given: floats uniform in [-1, 1),\n"
           "                       indices valid for the table they select from, other\n"
           "                       integers in [0, 10), bools 0/1\n"
           "      --seed=N         seed for --random (default 0)\n"
           "      --dim=SYM=N      value of symbolic dim SYM for --random (default: from\n"
           "                       the given inputs, else the symbol's minimum)\n"
           "      --bench[=N]      time N runs (default 10) after the warm-up and print\n"
           "                       min, median, p90, p99 and runs/s on stderr; a bare\n"
           "                       number after --bench is N (a model named 5 is ./5)\n"
           "      --warmup=N|T     untimed runs before --bench: N (default 2), or as\n"
           "                       many as take the time T (300ms, 1s)\n"
           "      --threads=N      threads for the kernels (default: all cores)\n"
           "      --profile=FILE   write per-node timings as TLOG JSON lines to FILE\n"
           "      --device=NAME    the device that runs a TG graph's nodes (default cpu;\n"
           "                       the CPU runs those it refuses; TLOG=run says which):\n"
           "                       cuda (the GPU, when built with CUDA) or another\n"
           "                       libtgraph-backend-NAME.so, loaded when asked for\n"
           "                       from TG_BACKEND_PATH, else the package's lib\n"
           "                       folder; or a backend's shared object by path;\n"
           "                       a compiled model runs where tcompile --target put it\n"
           "  -h, --help           show this help and exit\n"
           "  -V, --version        show the version and exit\n"
           "\n"
           "Environment: TGRAPH_LOOP_MAX (the most iterations of a loop node, default\n"
           "10000000), TLOG (run, perf, format: see tgraph(7)), TG_BACKEND_PATH, TG_CUDA_MATH\n"
           "(tf32, bf16, fp16 for --device cuda), TG_CUSPARSELT.\n"
           "Exit status: 0 ok, 1 failure (bad model or input, check over tolerance),\n"
           "2 bad usage. See trun(1).\n");
}

static double parse_double(const char *opt, const char *s)
{
    char *end;
    errno = 0;
    double v = strtod(s, &end);
    if (!*s || *end || errno || !(v >= 0) || isinf(v))
        cli_usage("option '--%s' needs a non-negative number, not '%s'", opt, s);
    return v;
}

/* ---- inputs --------------------------------------------------------------------- */

typedef struct {
    const tg_runner *r;
    tg_tensor *in;
    bool *have;
    const char *model;
} inputs;

static int find_input(const tg_runner *r, const char *name, size_t len)
{
    for (int i = 0; i < r->ninput; i++)
        if (strlen(r->inputs[i].name) == len && !strncmp(r->inputs[i].name, name, len))
            return i;
    return -1;
}

/* Arguments: NAME=PATH where NAME is an input, else a path for the next input. */
static int load_inputs(inputs *in, char **args, int nargs)
{
    const tg_runner *r = in->r;
    int next = 0;
    bool stdin_used = !strcmp(in->model, "-");
    for (int a = 0; a < nargs; a++) {
        const char *arg = args[a], *eq = strchr(arg, '=');
        int i = eq ? find_input(r, arg, (size_t)(eq - arg)) : -1;
        const char *path = i >= 0 ? eq + 1 : arg;
        if (i < 0) {
            while (next < r->ninput && in->have[next])
                next++;
            if (next == r->ninput) {
                cli_error(arg, "one input too many: the model takes %d input%s", r->ninput,
                          r->ninput == 1 ? "" : "s");
                return -1;
            }
            i = next;
        } else if (in->have[i]) {
            cli_error(arg, "input '%s' given twice", r->inputs[i].name);
            return -1;
        }
        if (!strcmp(path, "-")) {
            if (stdin_used) {
                cli_error(path, "stdin can feed one file only (it already has %s)",
                          !strcmp(in->model, "-") ? "the model" : "an input");
                return -1;
            }
            stdin_used = true;
        }
        if (tg_npy_load_as(path, r->inputs[i].dtype, &in->in[i]) < 0) {
            cli_fail(path);
            return -1;
        }
        in->have[i] = true;
    }
    return 0;
}

/* Symbol values for random inputs: --dim, then the given inputs, then minimum. */
static int bind_symbols(const inputs *in, const int64_t *dimv, const bool *dimset, int64_t *sym)
{
    const tg_runner *r = in->r;
    bool set[TG_MAX_SYMS];
    for (int s = 0; s < r->nsym; s++) {
        set[s] = dimset[s];
        sym[s] = dimv[s];
    }
    for (int i = 0; i < r->ninput; i++) {
        if (!in->have[i] || in->in[i].rank != r->inputs[i].shape.rank)
            continue;
        for (int k = 0; k < in->in[i].rank; k++)
            for (int s = 0; s < r->nsym; s++)
                if (!set[s] && tg_dim_eq(r->inputs[i].shape.d[k], tg_dim_sym(s))) {
                    sym[s] = in->in[i].dims[k];
                    set[s] = true;
                }
    }
    for (int s = 0; s < r->nsym; s++) {
        if (!set[s])
            sym[s] = r->sym[s].min;
        if (sym[s] < r->sym[s].min || sym[s] > r->sym[s].max) {
            cli_error(in->model, "symbol '%s' = %lld is outside its range [%lld, %lld]",
                      r->sym[s].name, (long long)sym[s], (long long)r->sym[s].min,
                      (long long)r->sym[s].max);
            return -1;
        }
    }
    return 0;
}

static uint64_t rng_next(uint64_t *s)     /* splitmix64 */
{
    uint64_t z = (*s += 0x9e3779b97f4a7c15ull);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31);
}

static int random_input(const tg_runner_io *io, const int64_t *sym, uint64_t *rng, tg_tensor *t)
{
    *t = (tg_tensor){ .dtype = io->dtype, .rank = io->shape.rank };
    if (tg_shape_eval(&io->shape, sym, t->dims) || tg_tensor_alloc(t))
        return -1;
    int64_t n = tg_tensor_numel(t->rank, t->dims);
    int64_t lo = io->lo, hi = io->hi;
    if (lo == hi) {
        lo = 0;
        hi = io->dtype == TG_BOOL ? 2 : 10;
    }
    for (int64_t i = 0; i < n; i++) {
        uint64_t u = rng_next(rng);
        if (tg_dtype_is_float(io->dtype))
            tg_store_f64(io->dtype, t->data, (size_t)i, (double)(u >> 11) * 0x1p-52 - 1.0);
        else
            tg_store_f64(io->dtype, t->data, (size_t)i,
                         (double)(lo + (int64_t)(u % (uint64_t)(hi - lo))));
    }
    return 0;
}

/* ---- outputs ------------------------------------------------------------------------ */

static bool is_dir(const char *path)
{
    struct stat st;
    return path && stat(path, &st) == 0 && S_ISDIR(st.st_mode);
}

static int write_outputs(const tg_runner *r, const tg_tensor *out, const char *path)
{
    if (r->noutput == 1 && !is_dir(path)) {
        tg_outfile o;
        if (cli_open_out(&o, path, true) < 0)
            return -1;
        int rc = tg_npy_write(o.f, &out[0]);
        if (tg_outfile_close(&o, rc == 0) < 0 || rc < 0) {
            cli_fail(path ? path : "-");
            return -1;
        }
        return 0;
    }
    if (!is_dir(path) && mkdir(path, 0777) < 0) {
        cli_error(path, "cannot make the output directory: %s", strerror(errno));
        return -1;
    }
    for (int i = 0; i < r->noutput; i++) {
        char file[4096];
        snprintf(file, sizeof file, "%s/out%d.npy", path, i);
        if (tg_npy_save(file, &out[i]) < 0) {
            cli_fail(file);
            return -1;
        }
    }
    return 0;
}

static int check_outputs(const tg_runner *r, const tg_tensor *out, char **refs, double rtol,
                         double atol)
{
    int failed = 0;
    for (int i = 0; i < r->noutput; i++) {
        tg_tensor ref;
        tg_compare_result c;
        if (tg_npy_load_as(refs[i], r->outputs[i].dtype, &ref) < 0) {
            cli_fail(refs[i]);
            return -1;
        }
        int rc = tg_compare(&out[i], &ref, rtol, atol, &c);
        tg_tensor_free(&ref);
        if (rc < 0) {
            cli_error(refs[i], "output %d '%s' %s", i, r->outputs[i].name, tg_errmsg());
            failed++;
            continue;
        }
        char desc[256], at[TG_MAX_RANK * 21 + 3];
        tg_tensor_describe(&out[i], desc, sizeof desc);
        printf("output %d '%s' %s: max abs error %.3g, max rel error %.3g", i,
               r->outputs[i].name, desc, c.max_abs, c.max_rel);
        if (c.nfail) {
            tg_index_format(out[i].rank, out[i].dims, c.worst, at, sizeof at);
            printf(", %lld of %lld elements over atol + rtol*|ref|, the worst %s: %.9g, "
                   "reference %.9g", (long long)c.nfail, (long long)c.n, at, c.worst_out,
                   c.worst_ref);
        }
        printf(": %s\n", c.nfail ? "FAIL" : "ok");
        failed += c.nfail > 0;
    }
    return failed ? 1 : 0;
}

/* ---- timing --------------------------------------------------------------------------- */

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

/* Nearest-rank percentile of sorted t[n]. */
static double pct(const double *t, int n, double p)
{
    int k = (int)ceil(p * n) - 1;
    return t[k < 0 ? 0 : k >= n ? n - 1 : k];
}

static void bench_report(double *t, int n, int warmup)
{
    double total = 0;
    for (int i = 0; i < n; i++)
        total += t[i];
    qsort(t, (size_t)n, sizeof *t, cmp_double);
    fprintf(stderr, "trun: bench: %d runs after %d warm-up: min %.3f ms, median %.3f ms,"
            " p90 %.3f ms, p99 %.3f ms, %.2f runs/s\n", n, warmup, 1e3 * t[0],
            1e3 * pct(t, n, 0.5), 1e3 * pct(t, n, 0.9), 1e3 * pct(t, n, 0.99),
            total > 0 ? n / total : INFINITY);
}

typedef struct {
    FILE *f;                /* --profile FILE; NULL: TLOG=+run */
    int run;
} profile;

static void profile_node(void *ctx, const char *node, const char *op, double seconds)
{
    profile *p = ctx;
    if (!p->f) {            /* the same fields as a TLOG record: tlog trace reads both */
        char fields[512];
        cJSON *f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "node", node);
        cJSON_AddStringToObject(f, "op", op);
        cJSON_AddNumberToObject(f, "us", seconds * 1e6);
        cJSON_AddNumberToObject(f, "run", p->run);
        bool ok = cJSON_PrintPreallocated(f, fields, sizeof fields, false);
        cJSON_Delete(f);
        tg_log_emit(TG_LOG_RUN, TG_LOG_DEBUG, ok ? fields : NULL, "%s (%s): %.1f us", node, op,
                    seconds * 1e6);
        return;
    }
    struct timespec ts;
    clock_gettime(CLOCK_REALTIME, &ts);
    cJSON *r = cJSON_CreateObject(), *f = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "tool", "trun");
    cJSON_AddStringToObject(r, "comp", "run");
    cJSON_AddStringToObject(r, "level", "info");
    cJSON_AddNumberToObject(r, "time", (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec);
    cJSON_AddNumberToObject(r, "pid", getpid());
    cJSON_AddStringToObject(r, "msg", node);
    cJSON_AddStringToObject(f, "node", node);
    cJSON_AddStringToObject(f, "op", op);
    cJSON_AddNumberToObject(f, "us", seconds * 1e6);
    cJSON_AddNumberToObject(f, "run", p->run);
    cJSON_AddItemToObject(r, "fields", f);
    char *s = cJSON_PrintUnformatted(r);
    if (s)
        fprintf(p->f, "%s\n", s);
    free(s);
    cJSON_Delete(r);
}

/* ---- main ------------------------------------------------------------------------------- */

typedef struct {
    const char *out, *profile;
    char *refs[MAX_CHECK];
    int nref;
    double rtol, atol;
    bool random, bench;
    uint64_t seed;
    int nbench, warmup, threads;
    const char *device;
    double warmup_s;            /* --warmup=T: warm up for at least T seconds */
    char dimname[TG_MAX_SYMS * 2][64];
    int64_t dimval[TG_MAX_SYMS * 2];
    int ndim;
} options;

/* --warmup=N runs, or --warmup=T[ms|s]: as many runs as take T */
static void parse_warmup(const char *arg, options *o)
{
    char *end;
    errno = 0;
    double t = strtod(arg, &end);
    double unit = !strcmp(end, "ms") ? 1e-3 : !strcmp(end, "s") ? 1.0 : 0.0;
    if (unit == 0.0) {
        o->warmup = (int)cli_int("warmup", arg, 0, 1000000);
        o->warmup_s = 0;
        return;
    }
    if (end == arg || errno || !(t * unit >= 0 && t * unit <= 3600))
        cli_usage("--warmup: '%s' is not a number of runs or a time up to 3600s", arg);
    o->warmup = 0;
    o->warmup_s = t * unit;
}

static void parse_args(int argc, char **argv, options *o)
{
    int c;
    *o = (options){ .rtol = 1e-4, .atol = 1e-5, .nbench = 10, .warmup = 2 };
    while ((c = getopt_long(argc, argv, "o:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': o->out = optarg; break;
        case OPT_CHECK:
            for (char *s = strtok(optarg, ","); s; s = strtok(NULL, ",")) {
                if (o->nref == MAX_CHECK)
                    cli_usage("more than %d --check files", MAX_CHECK);
                o->refs[o->nref++] = s;
            }
            break;
        case OPT_RTOL: o->rtol = parse_double("rtol", optarg); break;
        case OPT_ATOL: o->atol = parse_double("atol", optarg); break;
        case OPT_RANDOM: o->random = true; break;
        case OPT_SEED: o->seed = (uint64_t)cli_int("seed", optarg, 0, INT64_MAX); break;
        case OPT_DIM:
            if (o->ndim == TG_MAX_SYMS * 2)
                cli_usage("too many --dim options");
            o->dimval[o->ndim] = cli_assign("dim", optarg, o->dimname[o->ndim],
                                            sizeof o->dimname[0], 0, INT64_MAX);
            o->ndim++;
            break;
        case OPT_BENCH:
            o->bench = true;
            /* --bench 5 as well as --bench=5: a model is never a bare number */
            if (!optarg && optind < argc && argv[optind][0] &&
                strspn(argv[optind], "0123456789") == strlen(argv[optind]))
                optarg = argv[optind++];
            if (optarg)
                o->nbench = (int)cli_int("bench", optarg, 1, 1000000);
            break;
        case OPT_WARMUP: parse_warmup(optarg, o); break;
        case OPT_THREADS: o->threads = (int)cli_int("threads", optarg, 0, 4096); break;
        case OPT_DEVICE: o->device = optarg; break;
        case OPT_PROFILE: o->profile = optarg; break;
        case 'h': help(); exit(0);
        case 'V': cli_version(); exit(0);
        default: cli_usage("bad option");
        }
    }
    if (optind >= argc)
        cli_usage("no model given");
    if (!strcmp(argv[optind], "-") && isatty(STDIN_FILENO))
        cli_usage("no model: give a FILE or pipe one in");
}

/* --dim names against the model's symbols: usage errors for unknown ones. */
static void dims_for(const options *o, const tg_runner *r, int64_t *val, bool *set)
{
    for (int s = 0; s < TG_MAX_SYMS; s++)
        set[s] = false;
    for (int d = 0; d < o->ndim; d++) {
        int s = 0;
        while (s < r->nsym && strcmp(r->sym[s].name, o->dimname[d]))
            s++;
        if (s == r->nsym) {
            char names[512] = "";
            for (int k = 0; k < r->nsym; k++)
                snprintf(names + strlen(names), sizeof names - strlen(names), "%s%s",
                         k ? ", " : "", r->sym[k].name);
            cli_usage("--dim %s: the model has no such symbol (it has: %s)", o->dimname[d],
                      r->nsym ? names : "none");
        }
        val[s] = o->dimval[d];
        set[s] = true;
    }
}

static int run_model(const options *o, tg_runner *r, const char *model, tg_tensor *in,
                     tg_tensor *out)
{
    profile prof = { NULL, 0 };
    if (o->profile) {
        if (!(prof.f = fopen(o->profile, "w"))) {
            cli_error(o->profile, "%s", strerror(errno));
            return -1;
        }
        if (tg_runner_set_profile(r, profile_node, &prof) < 0) {
            fclose(prof.f);
            return cli_fail(model), -1;
        }
    } else if (tg_log_on(RUN, TG_LOG_DEBUG) && tg_runner_set_profile(r, profile_node, &prof) < 0) {
        TG_LOG(RUN, TG_LOG_WARN, "%s: no per-node timings: %s", model, tg_errmsg());
    }
    int timed = o->bench ? o->nbench : 1, warmed = 0, rc = 0;
    double *times = calloc((size_t)timed, sizeof(double)), w0 = now(), sum = 0;
    /* the warm-up runs, then the timed ones */
    for (int k = 0; rc == 0 && times && k < warmed + timed; k++) {
        if (k > 0)
            for (int i = 0; i < r->noutput; i++)
                tg_tensor_free(&out[i]);
        prof.run = k;
        double t0 = now();
        if (tg_runner_run(r, in, out) < 0) {
            cli_fail(model);
            rc = -1;
        }
        double t1 = now();
        sum += t1 - t0;
        if (k == warmed && o->bench && (k < o->warmup || t1 - w0 < o->warmup_s))
            warmed++;
        else
            times[k - warmed] = t1 - t0;
    }
    if (!times) {
        cli_error(NULL, "out of memory");
        rc = -1;
    }
    if (rc == 0 && tg_log_on(PERF, TG_LOG_INFO)) {
        int total = warmed + timed;
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        char fields[160];
        snprintf(fields, sizeof fields, "{\"runs\":%d,\"ms\":%.6f,\"ms_per_run\":%.6f,"
                 "\"max_rss_kib\":%ld}", total, sum * 1e3, sum * 1e3 / total, ru.ru_maxrss);
        TG_LOGF(PERF, TG_LOG_INFO, fields, "%d run%s in %.3f ms (%.3f ms a run), peak memory"
                " %ld KiB", total, total == 1 ? "" : "s", sum * 1e3, sum * 1e3 / total,
                ru.ru_maxrss);
    }
    if (rc == 0 && o->bench)
        bench_report(times, o->nbench, warmed);
    free(times);
    if (prof.f && (fclose(prof.f) != 0) && rc == 0) {
        cli_error(o->profile, "write error");
        rc = -1;
    }
    return rc;
}

/* A model piped in, as a path that the runners open like any file: a copy of
 * stdin in a memory file (dlopen cannot load from a pipe). path[n]. */
static int stdin_model(char *path, size_t n)
{
    int fd = memfd_create("trun-stdin", MFD_CLOEXEC);
    if (fd < 0)
        return tg_err("cannot hold the model: %s", strerror(errno));
    char buf[1 << 16];
    ssize_t k, w = 0;
    while ((k = read(STDIN_FILENO, buf, sizeof buf)) != 0) {
        if (k < 0 && errno == EINTR)
            continue;
        for (ssize_t off = 0; k > 0 && off < k; off += w)
            if ((w = write(fd, buf + off, (size_t)(k - off))) < 0)
                break;
        if (k < 0 || w < 0) {
            tg_err("cannot copy the model from stdin: %s", strerror(errno));
            close(fd);
            return -1;
        }
    }
    snprintf(path, n, "/proc/self/fd/%d", fd);
    return 0;
}

int main(int argc, char **argv)
{
    options o;
    cli_init("trun");
    parse_args(argc, argv, &o);
    const char *model = argv[optind];
    bool to_stdout = !o.out && !o.nref && !o.bench;
    if (to_stdout)
        cli_refuse_tty_out(NULL, ".npy");

    char piped[32];
    const char *path = model;
    if (!strcmp(model, "-")) {
        if (stdin_model(piped, sizeof piped) < 0)
            return cli_fail(model);
        path = piped;
    }
    const tg_backend *dev = tg_backend_find(o.device ? o.device : "cpu");
    if (!dev)
        cli_usage("--device: %s", tg_errmsg());
    bool so = tg_runner_is_so(path);
    if (so && dev != &tg_backend_cpu) {
        cli_error(model, "a compiled model runs on the device it was compiled for, not --device");
        return 2;
    }
    /* The one place that knows kinds of models. */
    tg_runner *r = so ? tg_runner_open_so(path, o.threads)
                      : tg_runner_open_tg(path, dev, o.threads);
    if (!r)
        return cli_fail(model);
    if (r->noutput > 1 && (o.out ? !is_dir(o.out) && access(o.out, F_OK) == 0 : to_stdout)) {
        cli_error(model, "the model has %d outputs: give -o DIR (written as DIR/out0.npy ...)",
                  r->noutput);
        tg_runner_free(r);
        return 2;
    }
    if (o.nref && o.nref != r->noutput) {
        cli_error(model, "--check has %d reference%s, the model has %d output%s", o.nref,
                  o.nref == 1 ? "" : "s", r->noutput, r->noutput == 1 ? "" : "s");
        tg_runner_free(r);
        return 2;
    }
    int rc = 1;
    tg_tensor *in = calloc((size_t)r->ninput + 1, sizeof *in);
    tg_tensor *out = calloc((size_t)r->noutput + 1, sizeof *out);
    bool *have = calloc((size_t)r->ninput + 1, sizeof *have);
    inputs ins = { r, in, have, model };
    int64_t dimv[TG_MAX_SYMS] = { 0 }, sym[TG_MAX_SYMS];
    bool dimset[TG_MAX_SYMS];
    dims_for(&o, r, dimv, dimset);
    if (!in || !out || !have) {
        cli_error(NULL, "out of memory");
        goto done;
    }
    if (load_inputs(&ins, argv + optind + 1, argc - optind - 1) < 0)
        goto done;
    for (int i = 0; i < r->ninput; i++)
        if (!have[i] && !o.random) {
            cli_error(model, "missing input %d '%s' (the model takes %d; or use --random)", i,
                      r->inputs[i].name, r->ninput);
            goto done;
        }
    if (o.random) {
        uint64_t rng = o.seed;
        if (bind_symbols(&ins, dimv, dimset, sym) < 0)
            goto done;
        for (int i = 0; i < r->ninput; i++)
            if (!have[i] && random_input(&r->inputs[i], sym, &rng, &in[i]) < 0) {
                cli_fail(model);
                goto done;
            }
    }
    if (run_model(&o, r, model, in, out) < 0)
        goto done;
    rc = 0;
    if (o.nref)
        rc = check_outputs(r, out, o.refs, o.rtol, o.atol) ? 1 : 0;
    if ((to_stdout || o.out) && write_outputs(r, out, o.out) < 0)
        rc = 1;
done:
    for (int i = 0; in && i < r->ninput; i++)
        tg_tensor_free(&in[i]);
    for (int i = 0; out && i < r->noutput; i++)
        tg_tensor_free(&out[i]);
    free(in);
    free(out);
    free(have);
    tg_runner_free(r);
    return rc;
}
