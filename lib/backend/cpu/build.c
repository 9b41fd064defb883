/* Build a model's shared object: write the C file, the weights and an export
 * list into a temporary directory, run the C compiler there (relative names
 * only, so the result does not depend on where it was built), copy the .so
 * out. The folder, the run and the runtime's lookup serve every target
 * (build.h). */
#define _GNU_SOURCE
#include "cpu.h"
#include "build.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "../../error.h"
#include "../../log.h"
#include "../../outfile.h"

#ifndef TG_PKGLIBDIR
#define TG_PKGLIBDIR "/usr/local/lib/tgraph"
#endif

/* ---- what targets share (build.h) ---------------------------------------------- */

int tg_build_dir_make(tg_build_dir *t)
{
    const char *tmp = getenv("TMPDIR");
    snprintf(t->dir, sizeof t->dir, "%s/tcompile.XXXXXX",
             tmp && *tmp && strlen(tmp) < 4000 ? tmp : "/tmp");
    return mkdtemp(t->dir) ? 0 : tg_err("%s: %s", t->dir, strerror(errno));
}

const char *tg_build_path(tg_build_dir *t, const char *name)
{
    snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
    return t->path;
}

int tg_build_write(tg_build_dir *t, const char *name, const void *data, size_t n)
{
    FILE *f = fopen(tg_build_path(t, name), "wb");
    if (!f)
        return tg_err("%s: %s", t->path, strerror(errno));
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n)
        return tg_err("%s: write failed", t->path);
    return 0;
}

char *tg_build_read(tg_build_dir *t, const char *name, size_t *n)
{
    FILE *f = fopen(tg_build_path(t, name), "rb");
    char *buf = NULL;
    size_t cap = 0;
    *n = 0;
    if (!f)
        return NULL;
    for (;;) {
        if (*n + 65536 + 1 > cap) {
            char *p = realloc(buf, cap = 2 * cap + 65536 + 1);
            if (!p)
                break;
            buf = p;
        }
        size_t r = fread(buf + *n, 1, 65536, f);
        *n += r;
        if (r < 65536)
            break;
    }
    fclose(f);
    if (buf)
        buf[*n] = 0;
    return buf;
}

void tg_build_dir_remove(tg_build_dir *t)
{
    DIR *d = opendir(t->dir);
    for (struct dirent *e; d && (e = readdir(d));)
        if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
            unlink(tg_build_path(t, e->d_name));
    if (d)
        closedir(d);
    rmdir(t->dir);
}

/* lib made absolute: the compiler runs in the build directory, where a path
 * relative to ours (TGRAPH_RUNTIME_DIR=.) names nothing. */
static int absolute(char *lib, size_t n)
{
    char abs[PATH_MAX];
    if (!realpath(lib, abs))
        return tg_err("%s: %s", lib, strerror(errno));
    if (strlen(abs) >= n)
        return tg_err("%s: path too long", abs);
    strcpy(lib, abs);
    return 0;
}

int tg_build_runtime(const char *name, char *lib, size_t n)
{
    const char *d = getenv("TGRAPH_RUNTIME_DIR");
    snprintf(lib, n, "%s/%s", d && *d ? d : TG_PKGLIBDIR, name);
    if (access(lib, R_OK) == 0 || (d && *d))
        return access(lib, R_OK) == 0 ? absolute(lib, n) : tg_err("%s: %s", lib, strerror(errno));
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = k > 0 ? (exe[k] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        snprintf(lib, n, "%s/../%s", exe, name);
        if (access(lib, R_OK) == 0)
            return absolute(lib, n);
    }
    snprintf(lib, n, "%s/%s", TG_PKGLIBDIR, name);
    return tg_err("%s: %s (set TGRAPH_RUNTIME_DIR to the directory that has it)", lib,
                  strerror(ENOENT));
}

/* argv in t, its stdout and stderr into log: the child's id, or -1. */
static pid_t start(tg_build_dir *t, char **argv, const char *log)
{
    if (tg_log_on(CODEGEN, TG_LOG_INFO)) {
        char cmd[8192];
        size_t k = 0;
        for (int i = 0; argv[i] && k < sizeof cmd; i++)
            k += snprintf(cmd + k, sizeof cmd - k, "%s%s", i ? " " : "", argv[i]);
        TG_LOG(CODEGEN, TG_LOG_INFO, "compiler: %s", cmd);
    }
    char path[sizeof t->path];
    snprintf(path, sizeof path, "%s", tg_build_path(t, log));
    pid_t pid = fork();
    if (pid < 0)
        return tg_err("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || chdir(t->dir) < 0)
            _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        signal(SIGPIPE, SIG_DFL);   /* the tools ignore it; an ignored signal survives exec */
        execvp(argv[0], argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    return pid;
}

int tg_build_run_all(tg_build_dir *t, const tg_build_job *jobs, int n, const char *what)
{
    struct timespec a, b;
    pid_t pid[TG_BUILD_MAX_JOBS];
    int st[TG_BUILD_MAX_JOBS], bad = -1, rc = 0;
    if (n > TG_BUILD_MAX_JOBS)
        return tg_err("%d compiler runs at once, at most %d", n, TG_BUILD_MAX_JOBS);
    clock_gettime(CLOCK_MONOTONIC, &a);
    for (int i = 0; i < n; i++)
        if ((pid[i] = start(t, jobs[i].argv, jobs[i].log)) < 0)
            rc = -1;
    for (int i = 0; i < n; i++) {   /* every child waited for, even after a failure */
        while (pid[i] >= 0 && waitpid(pid[i], &st[i], 0) < 0)
            if (errno != EINTR) {
                rc = tg_err("waitpid: %s", strerror(errno));
                break;
            }
        if (pid[i] >= 0 && bad < 0 && !(WIFEXITED(st[i]) && WEXITSTATUS(st[i]) == 0))
            bad = i;
    }
    clock_gettime(CLOCK_MONOTONIC, &b);
    TG_LOG(CODEGEN, TG_LOG_INFO, "compiler took %.2f s",
           (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
    if (rc || bad < 0)
        return rc;
    size_t len;
    char *log = tg_build_read(t, jobs[bad].log, &len);
    tg_err("%s failed (%s %d):\n%s", what, WIFEXITED(st[bad]) ? "exit" : "signal",
           WIFEXITED(st[bad]) ? WEXITSTATUS(st[bad]) : WTERMSIG(st[bad]), log ? log : "");
    free(log);
    return -1;
}

int tg_build_run(tg_build_dir *t, char **argv, const char *what)
{
    return tg_build_run_all(t, &(tg_build_job){argv, "cc.log"}, 1, what);
}

int tg_build_cc(const char *cc, char **buf, char **argv, int max)
{
    const char *env = getenv("CC");
    cc = cc ? cc : env && *env ? env : "cc";
    if (!(*buf = strdup(cc)))
        return tg_err("out of memory");
    int argc = 0;
    for (char *tok = strtok(*buf, " \t"); tok && argc < max; tok = strtok(NULL, " \t"))
        argv[argc++] = tok;
    return argc ? argc : tg_err("the C compiler ($CC) is empty");
}

int tg_build_copy_out(tg_build_dir *t, FILE *so)
{
    /* in pieces: a model of 100 MB of weights is not held in memory again */
    enum { PIECE = 1 << 20 };
    FILE *f = fopen(tg_build_path(t, "model.so"), "rb");
    char *buf = f ? malloc(PIECE) : NULL;
    int rc = !f ? tg_err("the compiler wrote no model.so") : !buf ? tg_err("out of memory") : 0;
    for (size_t r; !rc && (r = fread(buf, 1, PIECE, f)) > 0;)
        if (fwrite(buf, 1, r, so) != r)
            rc = tg_err("write error: %s", strerror(errno));
    if (!rc && ferror(f))
        rc = tg_err("%s: read error", t->path);
    free(buf);
    if (f)
        fclose(f);
    return rc;
}

/* ---- the CPU's build ------------------------------------------------------------- */

/* The model's C file in three translation units compiled at once, then
 * linked: hot.c, the functions that run over the elements, at -O3; model.c,
 * the plan (descriptors and kernel calls, shape checks, tables), at -O1,
 * which is most of the text and gains nothing from -O3 (Swin-T's took 1.0 s
 * of cc1's 1.5 s at -O3); weights.c, the assembler's copy of weights.bin.
 * Relative names only, fixed seeds: the same graph links to the same bytes. */
enum { TU_HOT, TU_PLAN, TU_WEIGHTS, NTU };
static const char *const tu_src[NTU] = {"hot.c", "model.c", "weights.c"};
static const char *const tu_obj[NTU] = {"hot.o", "model.o", "weights.o"};
static const char *const tu_log[NTU] = {"hot.log", "model.log", "weights.log"};
static const char *const tu_opt[NTU] = {"-O3", "-O1", "-O1"};

/* The compiler runs: each unit of units (a bit per TU_*), then the link. */
static int compile(tg_build_dir *t, const tg_build_opts *o, unsigned units)
{
    char *argv[NTU + 1][TG_BUILD_MAX_ARGS], *ccbuf[NTU + 1] = {0};
    char march[64], prefix[4096 + 32], lib[4096 + 32];
    tg_build_job jobs[NTU];
    int n = 0, rc = -1;
    snprintf(march, sizeof march, "-march=%s", o->cpu ? o->cpu : "native");
    snprintf(prefix, sizeof prefix, "-ffile-prefix-map=%s=.", t->dir);
    if (tg_build_runtime("libtgkernels.a", lib, sizeof lib))
        return -1;
    for (int u = 0; u < NTU; u++) {
        if (!(units >> u & 1))
            continue;
        int argc = tg_build_cc(o->cc, &ccbuf[u], argv[u], TG_BUILD_MAX_ARGS - 16);
        if (argc < 0)
            goto out;
        /* -fno-trapping-math lets the emitted loops' selects vectorize
         * without AVX-512 masks (see kernels/vecmath.h); -fno-math-errno
         * their sqrtf (rsqrt in RMS norms: a libm call an element, with
         * errno, else; vsqrtps rounds the same) */
        const char *fixed[] = {
            "-std=gnu11", "-fPIC", tu_opt[u], "-fno-trapping-math", "-fno-math-errno", march,
            "-g0",
            "-fvisibility=hidden", prefix, "-frandom-seed=tgraph", "-fno-ident", "-c",
            "-o", tu_obj[u], tu_src[u], NULL,
        };
        for (int i = 0; fixed[i]; i++)
            argv[u][argc++] = (char *)fixed[i];
        argv[u][argc] = NULL;
        jobs[n++] = (tg_build_job){argv[u], tu_log[u]};
    }
    if (tg_build_run_all(t, jobs, n, "the C compiler"))
        goto out;
    char **ld = argv[NTU];
    int argc = tg_build_cc(o->cc, &ccbuf[NTU], ld, TG_BUILD_MAX_ARGS - 16);
    if (argc < 0)
        goto out;
    const char *link[] = {"-shared", "-fPIC", march, "-g0", "-o", "model.so", NULL};
    for (int i = 0; link[i]; i++)
        ld[argc++] = (char *)link[i];
    for (int u = 0; u < NTU; u++)
        if (units >> u & 1)
            ld[argc++] = (char *)tu_obj[u];
    const char *libs[] = {lib, "-lm", "-Wl,--exclude-libs,ALL",
                          "-Wl,--version-script=exports.map", "-Wl,--as-needed", NULL};
    for (int i = 0; libs[i]; i++)
        ld[argc++] = (char *)libs[i];
    ld[argc] = NULL;
    rc = tg_build_run(t, ld, "the C compiler");
out:
    for (int u = 0; u <= NTU; u++)
        free(ccbuf[u]);
    return rc;
}

/* a + b (+ c + d) into t's file name. */
static int write_parts(tg_build_dir *t, const char *name, const char *const *parts, int n)
{
    FILE *f = fopen(tg_build_path(t, name), "wb");
    if (!f)
        return tg_err("%s: %s", t->path, strerror(errno));
    for (int i = 0; i < n; i++)
        fputs(parts[i], f);
    if (fclose(f) != 0)
        return tg_err("%s: write failed", t->path);
    return 0;
}

/* Write the C files (and --emit-c's one file), the weights and the export
 * list; *units: the translation units written (compile's). */
static int write_inputs(tg_build_dir *t, const tg_graph *g, const tg_plan *p,
                        const tg_build_opts *o, const tg_weights *w, unsigned *units)
{
    static const char exports[] = "{ global: tgraph_*; local: *; };\n";
    const char *base = NULL;
    if (o->weights_path) {
        tg_outfile wf;
        if (tg_outfile_open(&wf, o->weights_path, true))
            return -1;
        int bad = tg_weights_write(w, wf.f);
        if (tg_outfile_close(&wf, !bad) || bad)
            return tg_err("%s: %s", o->weights_path, tg_errmsg());
        base = strrchr(o->weights_path, '/') ? strrchr(o->weights_path, '/') + 1
                                             : o->weights_path;
    } else {
        FILE *f = fopen(tg_build_path(t, "weights.bin"), "wb");
        if (!f)
            return tg_err("%s: %s", t->path, strerror(errno));
        int bad = tg_weights_write_blob(w, f);
        if (fclose(f) != 0 || bad)
            return tg_err("%s: write failed", t->path);
    }
    tg_codegen_weights how = {o->weights_path ? NULL : "weights.bin", base};
    tg_codegen_src src;
    if (tg_codegen_c(g, p, w, &how, &src))
        return -1;
    const char *whole[] = {src.head, src.hot, src.weights, src.plan};
    *units = 1u << TU_PLAN | (*src.hot ? 1u << TU_HOT : 0) | (*src.weights ? 1u << TU_WEIGHTS : 0);
    int rc = write_parts(t, "model.c", (const char *[]){src.head, src.plan}, 2);
    if (!rc && *src.hot)
        rc = write_parts(t, "hot.c", (const char *[]){src.head, src.hot}, 2);
    if (!rc && *src.weights)
        rc = write_parts(t, "weights.c", (const char *[]){src.weights}, 1);
    if (!rc)
        rc = tg_build_write(t, "exports.map", exports, sizeof exports - 1);
    if (!rc && o->emit_c) {
        tg_outfile cf;
        if (tg_outfile_open(&cf, o->emit_c, false))
            rc = -1;
        else {
            for (int i = 0; i < 4; i++)
                fputs(whole[i], cf.f);
            if (tg_outfile_close(&cf, !ferror(cf.f)) != 0)
                rc = tg_err("%s: %s", o->emit_c, tg_errmsg());
        }
    }
    tg_codegen_src_free(&src);
    return rc;
}

int tg_cpu_compile(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                   const tg_build_opts *o, FILE *so)
{
    tg_build_dir t;
    tg_weights w;
    unsigned units = 0;
    if (tg_build_dir_make(&t))
        return -1;
    if (tg_weights_make(g, &w)) {
        rmdir(t.dir);
        return -1;
    }
    int rc = write_inputs(&t, g, p, o, &w, &units);
    tg_weights_free(&w);
    if (!rc)
        rc = compile(&t, o, units);
    if (!rc)
        rc = tg_build_copy_out(&t, so);
    tg_build_dir_remove(&t);
    return rc;
}
