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

int tg_build_runtime(const char *name, char *lib, size_t n)
{
    const char *d = getenv("TGRAPH_RUNTIME_DIR");
    snprintf(lib, n, "%s/%s", d && *d ? d : TG_PKGLIBDIR, name);
    if (access(lib, R_OK) == 0 || (d && *d))
        return access(lib, R_OK) == 0 ? 0 : tg_err("%s: %s", lib, strerror(errno));
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = k > 0 ? (exe[k] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        snprintf(lib, n, "%s/../%s", exe, name);
        if (access(lib, R_OK) == 0)
            return 0;
    }
    snprintf(lib, n, "%s/%s", TG_PKGLIBDIR, name);
    return tg_err("%s: %s (set TGRAPH_RUNTIME_DIR to the directory that has it)", lib,
                  strerror(ENOENT));
}

int tg_build_run(tg_build_dir *t, char **argv, const char *what)
{
    if (tg_log_on(CODEGEN, TG_LOG_INFO)) {
        char cmd[8192];
        size_t k = 0;
        for (int i = 0; argv[i] && k < sizeof cmd; i++)
            k += snprintf(cmd + k, sizeof cmd - k, "%s%s", i ? " " : "", argv[i]);
        TG_LOG(CODEGEN, TG_LOG_INFO, "compiler: %s", cmd);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    pid_t pid = fork();
    if (pid < 0)
        return tg_err("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(tg_build_path(t, "cc.log"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
        if (fd < 0 || chdir(t->dir) < 0)
            _exit(127);
        dup2(fd, 1);
        dup2(fd, 2);
        signal(SIGPIPE, SIG_DFL);   /* the tools ignore it; an ignored signal survives exec */
        execvp(argv[0], argv);
        dprintf(2, "%s: %s\n", argv[0], strerror(errno));
        _exit(127);
    }
    int st;
    while (waitpid(pid, &st, 0) < 0)
        if (errno != EINTR)
            return tg_err("waitpid: %s", strerror(errno));
    clock_gettime(CLOCK_MONOTONIC, &b);
    TG_LOG(CODEGEN, TG_LOG_INFO, "compiler took %.2f s",
           (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    size_t n;
    char *log = tg_build_read(t, "cc.log", &n);
    tg_err("%s failed (%s %d):\n%s", what, WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log ? log : "");
    free(log);
    return -1;
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
    size_t n;
    char *bin = tg_build_read(t, "model.so", &n);
    int rc = 0;
    if (!bin)
        rc = tg_err("the compiler wrote no model.so");
    else if (fwrite(bin, 1, n, so) != n)
        rc = tg_err("write error: %s", strerror(errno));
    free(bin);
    return rc;
}

/* ---- the CPU's build ------------------------------------------------------------- */

/* The compiler command: $CC split at blanks, then the fixed flags. */
static int compile(tg_build_dir *t, const tg_build_opts *o)
{
    char *argv[TG_BUILD_MAX_ARGS], *ccbuf = NULL;
    int argc = tg_build_cc(o->cc, &ccbuf, argv, TG_BUILD_MAX_ARGS - 24);
    char march[64], prefix[4096 + 32], lib[4096 + 32];
    snprintf(march, sizeof march, "-march=%s", o->cpu ? o->cpu : "native");
    snprintf(prefix, sizeof prefix, "-ffile-prefix-map=%s=.", t->dir);
    if (argc < 0 || tg_build_runtime("libtgkernels.a", lib, sizeof lib)) {
        free(ccbuf);
        return -1;
    }
    const char *fixed[] = {
        /* -fno-trapping-math lets the emitted loops' selects vectorize
         * without AVX-512 masks (see kernels/vecmath.h) */
        "-std=gnu11", "-shared", "-fPIC", "-O3", "-fno-trapping-math", march, "-g0",
        "-fvisibility=hidden",
        prefix, "-frandom-seed=tgraph", "-fno-ident", "-o", "model.so", "model.c", lib,
        "-lm", "-Wl,--exclude-libs,ALL", "-Wl,--version-script=exports.map",
        "-Wl,--as-needed", NULL,
    };
    for (int i = 0; fixed[i]; i++)
        argv[argc++] = (char *)fixed[i];
    argv[argc] = NULL;
    int rc = tg_build_run(t, argv, "the C compiler");
    free(ccbuf);
    return rc;
}

/* Write the C file (and --emit-c's copy), the weights and the export list. */
static int write_inputs(tg_build_dir *t, const tg_graph *g, const tg_plan *p,
                        const tg_build_opts *o, const tg_weights *w)
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
    } else if (tg_build_write(t, "weights.bin", w->data, w->size)) {
        return -1;
    }
    tg_codegen_weights how = {o->weights_path ? NULL : "weights.bin", base};
    char *src = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&src, &n);
    if (!f)
        return tg_err("out of memory");
    int rc = tg_codegen_c(g, p, w, &how, f);
    fclose(f);
    if (!rc)
        rc = tg_build_write(t, "model.c", src, n);
    if (!rc)
        rc = tg_build_write(t, "exports.map", exports, sizeof exports - 1);
    if (!rc && o->emit_c) {
        tg_outfile cf;
        if (tg_outfile_open(&cf, o->emit_c, false))
            rc = -1;
        else if (tg_outfile_close(&cf, fwrite(src, 1, n, cf.f) == n) != 0)
            rc = tg_err("%s: %s", o->emit_c, tg_errmsg());
    }
    free(src);
    return rc;
}

int tg_cpu_compile(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                   const tg_build_opts *o, FILE *so)
{
    tg_build_dir t;
    tg_weights w;
    if (tg_build_dir_make(&t))
        return -1;
    if (tg_weights_make(g, &w)) {
        rmdir(t.dir);
        return -1;
    }
    int rc = write_inputs(&t, g, p, o, &w);
    if (!rc)
        rc = compile(&t, o);
    if (!rc)
        rc = tg_build_copy_out(&t, so);
    tg_weights_free(&w);
    tg_build_dir_remove(&t);
    return rc;
}
