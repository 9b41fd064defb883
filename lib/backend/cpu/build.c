/* Build a model's shared object: write the C file, the weights and an export
 * list into a temporary directory, run the C compiler there (relative names
 * only, so the result does not depend on where it was built), copy the .so
 * out. */
#define _GNU_SOURCE
#include "cpu.h"

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

#define MAX_ARGS 64

typedef struct {
    char dir[4096];
    char path[4096 + 64];
} tmpdir;

static const char *in_dir(tmpdir *t, const char *name)
{
    snprintf(t->path, sizeof t->path, "%s/%s", t->dir, name);
    return t->path;
}

static int write_file(tmpdir *t, const char *name, const void *data, size_t n)
{
    FILE *f = fopen(in_dir(t, name), "wb");
    if (!f)
        return tg_err("%s: %s", t->path, strerror(errno));
    size_t w = fwrite(data, 1, n, f);
    if (fclose(f) != 0 || w != n)
        return tg_err("%s: write failed", t->path);
    return 0;
}

static char *read_file(tmpdir *t, const char *name, size_t *n)
{
    FILE *f = fopen(in_dir(t, name), "rb");
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

static void remove_dir(tmpdir *t)
{
    static const char *const names[] = {"model.c", "weights.bin", "exports.map", "model.so",
                                        "cc.log"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++)
        unlink(in_dir(t, names[i]));
    rmdir(t->dir);
}

/* Where libtgkernels.a is: the environment (make check sets it to the build
 * tree), else where make install put it, else beside the tools of a build
 * tree (tools/tcompile and ./libtgkernels.a). */
static int runtime_lib(char *lib, size_t n)
{
    const char *d = getenv("TGRAPH_RUNTIME_DIR");
    snprintf(lib, n, "%s/libtgkernels.a", d && *d ? d : TG_PKGLIBDIR);
    if (access(lib, R_OK) == 0 || (d && *d))
        return access(lib, R_OK) == 0 ? 0 : tg_err("%s: %s", lib, strerror(errno));
    char exe[4096];
    ssize_t k = readlink("/proc/self/exe", exe, sizeof exe - 1);
    char *slash = k > 0 ? (exe[k] = 0, strrchr(exe, '/')) : NULL;
    if (slash) {
        *slash = 0;
        snprintf(lib, n, "%s/../libtgkernels.a", exe);
        if (access(lib, R_OK) == 0)
            return 0;
    }
    snprintf(lib, n, "%s/libtgkernels.a", TG_PKGLIBDIR);
    return tg_err("%s: %s (set TGRAPH_RUNTIME_DIR to the directory that has it)", lib,
                  strerror(ENOENT));
}

/* Run argv in dir t with stdout and stderr into cc.log. */
static int run_in(tmpdir *t, char **argv)
{
    pid_t pid = fork();
    if (pid < 0)
        return tg_err("fork: %s", strerror(errno));
    if (pid == 0) {
        int fd = open(in_dir(t, "cc.log"), O_WRONLY | O_CREAT | O_TRUNC, 0600);
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
    if (WIFEXITED(st) && WEXITSTATUS(st) == 0)
        return 0;
    size_t n;
    char *log = read_file(t, "cc.log", &n);
    tg_err("the C compiler failed (%s %d):\n%s", WIFEXITED(st) ? "exit" : "signal",
           WIFEXITED(st) ? WEXITSTATUS(st) : WTERMSIG(st), log ? log : "");
    free(log);
    return -1;
}

/* The compiler command: $CC split at blanks, then the fixed flags. */
static int compile(tmpdir *t, const tg_build_opts *o, char *ccbuf)
{
    char *argv[MAX_ARGS];
    int argc = 0;
    for (char *tok = strtok(ccbuf, " \t"); tok && argc < MAX_ARGS - 24; tok = strtok(NULL, " \t"))
        argv[argc++] = tok;
    if (!argc)
        return tg_err("the C compiler ($CC) is empty");
    char march[64], prefix[4096 + 32], lib[4096 + 32];
    snprintf(march, sizeof march, "-march=%s", o->cpu ? o->cpu : "native");
    snprintf(prefix, sizeof prefix, "-ffile-prefix-map=%s=.", t->dir);
    if (runtime_lib(lib, sizeof lib))
        return -1;
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
    if (tg_log_on(CODEGEN, TG_LOG_INFO)) {
        char cmd[8192];
        size_t k = 0;
        for (int i = 0; i < argc && k < sizeof cmd; i++)
            k += snprintf(cmd + k, sizeof cmd - k, "%s%s", i ? " " : "", argv[i]);
        TG_LOG(CODEGEN, TG_LOG_INFO, "compiler: %s", cmd);
    }
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    int rc = run_in(t, argv);
    clock_gettime(CLOCK_MONOTONIC, &b);
    TG_LOG(CODEGEN, TG_LOG_INFO, "compiler took %.2f s",
           (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) * 1e-9);
    return rc;
}

/* Write the C file (and --emit-c's copy), the weights and the export list. */
static int write_inputs(tmpdir *t, const tg_graph *g, const tg_plan *p, const tg_build_opts *o,
                        const tg_weights *w)
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
    } else if (write_file(t, "weights.bin", w->data, w->size)) {
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
        rc = write_file(t, "model.c", src, n);
    if (!rc)
        rc = write_file(t, "exports.map", exports, sizeof exports - 1);
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
    const char *tmp = getenv("TMPDIR");
    tmpdir t;
    tg_weights w;
    snprintf(t.dir, sizeof t.dir, "%s/tcompile.XXXXXX",
             tmp && *tmp && strlen(tmp) < 4000 ? tmp : "/tmp");
    if (!mkdtemp(t.dir))
        return tg_err("%s: %s", t.dir, strerror(errno));
    if (tg_weights_make(g, &w)) {
        rmdir(t.dir);
        return -1;
    }
    const char *cc = o->cc ? o->cc : getenv("CC");
    char *ccbuf = strdup(cc && *cc ? cc : "cc");
    int rc = ccbuf ? 0 : tg_err("out of memory");
    if (!rc)
        rc = write_inputs(&t, g, p, o, &w);
    if (!rc)
        rc = compile(&t, o, ccbuf);
    if (!rc) {
        size_t n;
        char *bin = read_file(&t, "model.so", &n);
        if (!bin)
            rc = tg_err("the compiler wrote no model.so");
        else if (fwrite(bin, 1, n, so) != n)
            rc = tg_err("write error: %s", strerror(errno));
        free(bin);
    }
    free(ccbuf);
    tg_weights_free(&w);
    remove_dir(&t);
    return rc;
}
