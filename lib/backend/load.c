/* A device loaded from a shared object (a third party's, PyTorch's
 * PrivateUse1 role, and tgraph's own cuda): by path, or by name as
 * libtgraph-backend-NAME.so in a folder of TG_BACKEND_PATH, else in the
 * package's library folder (TG_PKGLIBDIR, where make install puts
 * libtgraph-backend-cuda.so). The object defines tg_backend_entry, which
 * returns its tg_backend; the registry checks it as any other (interface
 * version first: the abi field leads the struct in every version).
 *
 * The object calls libtgraph's tg_ functions (tg_err, tg_op_name ...) from the
 * program that loads it, and links no copy of its own (a second registry
 * and error state would not be the program's): a program linked with
 * libtgraph.so has them there, and the tools export theirs
 * (--export-dynamic-symbol, configure.ac). tgraph(7), DEVICES, tells a writer. */
#define _GNU_SOURCE
#include "backend.h"

#include <dlfcn.h>
#include <dirent.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../error.h"

#define PREFIX "libtgraph-backend-"
#define SUFFIX ".so"

typedef const tg_backend *(*entry_fn)(void);

/* The backend of the shared object at path, its interface version checked
 * (the abi field leads the struct in every version), not yet registered;
 * its handle in *dl. NULL (tg_err). */
static const tg_backend *open_backend(const char *path, void **dl)
{
    struct stat st;
    if (stat(path, &st))
        return tg_err("%s: %s", path, strerror(errno)), NULL;
    if (!S_ISREG(st.st_mode))
        return tg_err("%s: not a shared object (not a regular file)", path), NULL;
    if (!(*dl = dlopen(path, RTLD_NOW | RTLD_LOCAL)))
        return tg_err("%s: cannot load: %s", path, dlerror()), NULL;
    entry_fn entry;
    *(void **)&entry = dlsym(*dl, TG_BACKEND_ENTRY);
    tg_err_clear();
    const tg_backend *be = entry ? entry() : NULL;
    if (!entry)
        tg_err("%s: not a tgraph backend (it defines no %s)", path, TG_BACKEND_ENTRY);
    else if (!be)
        tg_err("%s: %s failed: %s", path, TG_BACKEND_ENTRY,
               *tg_errmsg() ? tg_errmsg() : "no reason given");
    else if (be->abi != TG_BACKEND_ABI)
        tg_err("%s: built for device interface version %d, this tgraph's is %d", path, be->abi,
               TG_BACKEND_ABI);
    else
        return be;
    dlclose(*dl);
    return NULL;
}

/* be (from dl, at path) registered, unless it is already: dlopen gave an
 * object loaded before. NULL (tg_err) when the registry refuses it. */
static const tg_backend *add(const tg_backend *be, void *dl, const char *path)
{
    for (int i = 0; i < tg_backend_count(); i++)
        if (tg_backend_at(i) == be)
            return be;
    if (tg_backend_register(be)) {
        tg_err_append("(%s)", path);
        dlclose(dl);
        return NULL;
    }
    return be;                          /* kept loaded: the registry holds its struct */
}

const tg_backend *tg_backend_load(const char *path)
{
    void *dl;
    const tg_backend *be = open_backend(path, &dl);
    return be ? add(be, dl, path) : NULL;
}

/* Each folder or file of TG_BACKEND_PATH (colon-separated) in turn, until
 * fn returns nonzero; that value, or 0. */
static int each_path_entry(int (*fn)(const char *entry, void *ctx), void *ctx)
{
    const char *env = getenv("TG_BACKEND_PATH");
    for (const char *s = env ? env : ""; *s;) {
        size_t n = strcspn(s, ":");
        char entry[4096];
        if (n && n < sizeof entry) {
            memcpy(entry, s, n);
            entry[n] = 0;
            int r = fn(entry, ctx);
            if (r)
                return r;
        }
        s += n + (s[n] == ':');
    }
    return 0;
}

typedef struct {
    const char *name;
    char path[4096];
} by_name;

static int find_file(const char *dir, void *ctx)
{
    by_name *b = ctx;
    int n = snprintf(b->path, sizeof b->path, "%s/" PREFIX "%s" SUFFIX, dir, b->name);
    return n > 0 && (size_t)n < sizeof b->path && access(b->path, F_OK) == 0;
}

const tg_backend *tg_backend_load_named(const char *name)
{
    if (strchr(name, '/'))
        return tg_backend_load(name);
    by_name b = {name, ""};
    if (!*name || !(each_path_entry(find_file, &b) || find_file(TG_PKGLIBDIR, &b)))
        return NULL;
    void *dl;
    const tg_backend *be = open_backend(b.path, &dl);
    if (be && (!be->name || strcmp(be->name, name))) {
        tg_err("%s: its backend is named '%s', not '%s'", b.path, be->name ? be->name : "",
               name);
        dlclose(dl);
        return NULL;
    }
    return be ? add(be, dl, b.path) : NULL;
}

static bool is_backend_file(const char *f)
{
    size_t n = strlen(f), np = strlen(PREFIX), ns = strlen(SUFFIX);
    return n > np + ns && !strncmp(f, PREFIX, np) && !strcmp(f + n - ns, SUFFIX);
}

static int load_entry(const char *entry, void *ctx)
{
    struct stat st;
    if (stat(entry, &st) || !S_ISDIR(st.st_mode))
        return tg_backend_load(entry) ? 0 : -1;
    DIR *d = opendir(entry);
    if (!d)
        return tg_err("%s: %s", entry, strerror(errno));
    struct dirent *de;
    int rc = 0;
    while (!rc && (de = readdir(d)))
        if (is_backend_file(de->d_name)) {
            char path[4096];
            int n = snprintf(path, sizeof path, "%s/%s", entry, de->d_name);
            if (n < 0 || (size_t)n >= sizeof path)
                rc = tg_err("%s/%s: path too long", entry, de->d_name);
            else
                rc = tg_backend_load(path) ? 0 : -1;
        }
    closedir(d);
    return rc;
}

int tg_backend_load_path(void)
{
    return each_path_entry(load_entry, NULL) ? -1 : 0;
}
