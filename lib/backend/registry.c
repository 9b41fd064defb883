/* The registry of devices: the ones built in (one line each below), then
 * those registered at run time (a shared object's: load.c). cuda is a
 * shared object (libtgraph-backend-cuda.so), loaded when a program asks for
 * it by name: a program that never does maps no CUDA library. */
#include "backend.h"

#include <string.h>

#include "../error.h"

/* The built-in backends, the CPU first. A device adds its line here. */
static const tg_backend *const builtin[] = {
    &tg_backend_cpu,
};

#define NBUILTIN ((int)(sizeof builtin / sizeof builtin[0]))
#define MAX_ADDED 16

static const tg_backend *added[MAX_ADDED];
static int nadded;

int tg_backend_count(void)
{
    return NBUILTIN + nadded;
}

const tg_backend *tg_backend_at(int i)
{
    if (i < 0 || i >= tg_backend_count())
        return NULL;
    return i < NBUILTIN ? builtin[i] : added[i - NBUILTIN];
}

const tg_backend *tg_backend_find(const char *name)
{
    char known[256] = "";
    for (int i = 0; i < tg_backend_count(); i++) {
        const tg_backend *be = tg_backend_at(i);
        if (!strcmp(be->name, name))
            return be;
        size_t n = strlen(known);
        snprintf(known + n, sizeof known - n, "%s%s", i ? ", " : "", be->name);
    }
    tg_err_clear();
    const tg_backend *be = tg_backend_load_named(name);
    if (be || strchr(name, '/'))
        return be;
    if (!*tg_errmsg())
        tg_err("no device '%s' (known: %s; no libtgraph-backend-%s.so in TG_BACKEND_PATH"
               " or %s)", name, known, name, TG_PKGLIBDIR);
    else {                              /* found, not loaded: the loader's reason */
        char why[1024];
        snprintf(why, sizeof why, "%s", tg_errmsg());
        tg_err("no device '%s': %s", name, why);
    }
    return be;
}

int tg_backend_register(const tg_backend *be)
{
    if (be->abi != TG_BACKEND_ABI)
        return tg_err("backend '%s': interface version %d, this tgraph's is %d",
                      be->name ? be->name : "?", be->abi, TG_BACKEND_ABI);
    if (!be->name || !*be->name || !be->alloc || !be->free || !be->upload || !be->download ||
        !be->synchronize || !be->supports_node || !be->run)
        return tg_err("backend '%s': a name and every running function are required",
                      be->name ? be->name : "?");
    for (int i = 0; i < tg_backend_count(); i++)
        if (!strcmp(tg_backend_at(i)->name, be->name))
            return tg_err("backend '%s' is already registered", be->name);
    if (nadded == MAX_ADDED)
        return tg_err("backend '%s': no room for more than %d added backends", be->name,
                      MAX_ADDED);
    added[nadded++] = be;
    return 0;
}

bool tg_backend_supports(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    why[0] = 0;
    if (be->supports_node(be, g, n, why))
        return true;
    if (!why[0])
        snprintf(why, TG_WHY_MAX, "no reason given");
    return false;
}
