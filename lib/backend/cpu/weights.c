/* The weights blob of a compiled model and the weights file around it
 * (model_rt.h: magic, size, hash, then the blob at TGRT_WEIGHTS_HEADER). */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "model_rt.h"

/* FNV-1a a 64-bit word at a time (the product folded, so that a word's high
 * bytes reach the low ones; the tail a byte at a time): identifies the blob,
 * so a model refuses another's file. A byte at a time took 0.2 s of a
 * 110 MB blob. */
static uint64_t fnv1a(const unsigned char *p, size_t n)
{
    uint64_t h = 0xcbf29ce484222325u, w;
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        memcpy(&w, p + i, 8);
        h = (h ^ w) * 0x100000001b3u;
        h ^= h >> 32;
    }
    for (; i < n; i++)
        h = (h ^ p[i]) * 0x100000001b3u;
    return h;
}

int tg_weights_make(const tg_graph *g, tg_weights *w)
{
    memset(w, 0, sizeof *w);
    w->offset = malloc((g->nvalue + 1) * sizeof *w->offset);
    if (!w->offset)
        return tg_err("out of memory");
    uint64_t size = 0;
    for (int v = 0; v < g->nvalue; v++) {
        w->offset[v] = -1;
        if (g->values[v].kind != TG_VALUE_CONST)
            continue;
        w->offset[v] = (int64_t)size;
        size += (g->values[v].nbytes + TGRT_ALIGN - 1) / TGRT_ALIGN * TGRT_ALIGN;
    }
    w->data = calloc(size ? size : 1, 1);
    if (!w->data) {
        tg_weights_free(w);
        return tg_err("out of memory for %llu bytes of weights", (unsigned long long)size);
    }
    for (int v = 0; v < g->nvalue; v++)
        if (w->offset[v] >= 0 && g->values[v].nbytes)
            memcpy(w->data + w->offset[v], g->values[v].data, g->values[v].nbytes);
    w->size = size;
    w->hash = fnv1a(w->data, size);
    return 0;
}

void tg_weights_free(tg_weights *w)
{
    free(w->data);
    free(w->offset);
    memset(w, 0, sizeof *w);
}

static void put64(unsigned char *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (unsigned char)(v >> 8 * i);
}

int tg_weights_write(const tg_weights *w, FILE *f)
{
    unsigned char head[TGRT_WEIGHTS_HEADER] = {0};
    memcpy(head, TGRT_WEIGHTS_MAGIC, 8);
    put64(head + 8, w->size);
    put64(head + 16, w->hash);
    if (fwrite(head, 1, sizeof head, f) != sizeof head ||
        fwrite(w->data, 1, w->size, f) != w->size)
        return tg_err("write failed");
    return 0;
}
