/* What every fuzz target asserts, and its glue for readers of FILE streams. */
#ifndef TG_FUZZ_H
#define TG_FUZZ_H

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"

/* A refusal says why: the message is not empty. (Importers list every
 * unsupported operator a line each, so more than one line can be right.) */
static inline void fuzz_refused(const char *target)
{
    if (!*tg_errmsg()) {
        fprintf(stderr, "%s: refused without a message\n", target);
        abort();
    }
    tg_err_clear();
}

/* What an importer gave: a graph that validates (then freed) or a refusal. */
static inline void fuzz_imported(const char *target, tg_graph *g)
{
    if (!g) {
        fuzz_refused(target);
        return;
    }
    if (tg_graph_validate(g) < 0) {
        fprintf(stderr, "%s: an imported graph does not validate: %s\n", target, tg_errmsg());
        abort();
    }
    tg_graph_free(g);
}

/* The input as a read-only stream (fmemopen refuses size 0: /dev/null then). */
static inline FILE *fuzz_stream(const uint8_t *data, size_t size)
{
    FILE *f = size ? fmemopen((void *)data, size, "rb") : fopen("/dev/null", "rb");
    if (!f)
        abort();
    return f;
}

/* Where rendered output goes: written, never looked at. */
static inline FILE *fuzz_sink(void)
{
    FILE *f = fopen("/dev/null", "w");
    if (!f)
        abort();
    return f;
}

#endif
