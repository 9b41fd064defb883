/* What a target's build shares (build.c): a temporary folder to write the
 * sources into, the compiler run there with its messages kept, the runtime
 * archive found, and the shared object read back. The CPU's build and the
 * CUDA one's (../cuda/compile.c) use them. */
#ifndef TG_BACKEND_CPU_BUILD_H
#define TG_BACKEND_CPU_BUILD_H

#include <stddef.h>
#include <stdio.h>

#define TG_BUILD_MAX_ARGS 64

typedef struct {
    char dir[4096];
    char path[4096 + 64];
} tg_build_dir;

/* A fresh folder under $TMPDIR (else /tmp). 0 or -1 (tg_err). */
int tg_build_dir_make(tg_build_dir *t);
/* Its files and the folder removed. */
void tg_build_dir_remove(tg_build_dir *t);
/* t's path for name (in t->path, valid until the next call). */
const char *tg_build_path(tg_build_dir *t, const char *name);
int tg_build_write(tg_build_dir *t, const char *name, const void *data, size_t n);
/* The whole file (NUL-terminated; malloc'd), or NULL. */
char *tg_build_read(tg_build_dir *t, const char *name, size_t *n);
/* Run argv in t with stdout and stderr into cc.log: 0, or -1 with tg_err
 * carrying the log. what: "the C compiler" ... */
int tg_build_run(tg_build_dir *t, char **argv, const char *what);
/* Likewise n runs at once (at most TG_BUILD_MAX_JOBS), each into its own log
 * (a file of t); the error carries the first failing one's log. */
#define TG_BUILD_MAX_JOBS 8
typedef struct {
    char **argv;
    const char *log;
} tg_build_job;
int tg_build_run_all(tg_build_dir *t, const tg_build_job *jobs, int n, const char *what);
/* The runtime archive called name: the environment (TGRAPH_RUNTIME_DIR), else
 * where make install put it, else beside a build tree's tools. 0 or -1. */
int tg_build_runtime(const char *name, char *path, size_t n);
/* $CC (else "cc", or cc when given) split at blanks into argv; the count, or
 * -1 (tg_err). buf keeps the words. */
int tg_build_cc(const char *cc, char **buf, char **argv, int max);
/* The built model.so written to so. 0 or -1. */
int tg_build_copy_out(tg_build_dir *t, FILE *so);

#endif
