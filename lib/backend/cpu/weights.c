/* The weights blob of a compiled model and the weights file around it
 * (model_rt.h: magic, size, hash, then the blob at TGRT_WEIGHTS_HEADER). */
#include "cpu.h"

#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "model_rt.h"

/* FNV-1a a 64-bit word at a time, the product folded so that a word's high
 * bytes reach the low ones: identifies the blob, so a model refuses
 * another's file. Taken over the constants as they are laid out (the blob is
 * never made: it is written from the graph), each zero-padded to
 * TGRT_ALIGN, a multiple of 8. A byte at a time took 0.2 s of a 110 MB blob;
 * the blob in memory was 110 MB more to fault in. */
static uint64_t mix(uint64_t h, uint64_t w)
{
    h = (h ^ w) * 0x100000001b3u;
    return h ^ h >> 32;
}

static uint64_t hash_piece(uint64_t h, const unsigned char *p, size_t n, size_t padded)
{
    size_t i = 0;
    for (; i + 8 <= n; i += 8) {
        uint64_t w;
        memcpy(&w, p + i, 8);
        h = mix(h, w);
    }
    if (i < n) {
        uint64_t w = 0;
        memcpy(&w, p + i, n - i);
        h = mix(h, w);
        i += 8;
    }
    for (; i < padded; i += 8)
        h = mix(h, 0);
    return h;
}

int tg_weights_make(const tg_graph *g, tg_weights *w)
{
    memset(w, 0, sizeof *w);
    w->g = g;
    w->offset = malloc((g->nvalue + 1) * sizeof *w->offset);
    if (!w->offset)
        return tg_err("out of memory");
    uint64_t size = 0, h = 0xcbf29ce484222325u;
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *x = &g->values[v];
        w->offset[v] = -1;
        if (x->kind != TG_VALUE_CONST)
            continue;
        uint64_t padded = (x->nbytes + TGRT_ALIGN - 1) / TGRT_ALIGN * TGRT_ALIGN;
        w->offset[v] = (int64_t)size;
        h = hash_piece(h, x->data, x->nbytes, padded);
        size += padded;
    }
    w->size = size;
    w->hash = h;
    return 0;
}

void tg_weights_free(tg_weights *w)
{
    free(w->offset);
    memset(w, 0, sizeof *w);
}

int tg_weights_write_blob(const tg_weights *w, FILE *f)
{
    static const unsigned char zero[TGRT_ALIGN];
    for (int v = 0; v < w->g->nvalue; v++) {
        const tg_value *x = &w->g->values[v];
        size_t pad = (TGRT_ALIGN - x->nbytes % TGRT_ALIGN) % TGRT_ALIGN;
        if (w->offset[v] >= 0 && (fwrite(x->data, 1, x->nbytes, f) != x->nbytes ||
                                  fwrite(zero, 1, pad, f) != pad))
            return tg_err("write failed");
    }
    return 0;
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
    if (fwrite(head, 1, sizeof head, f) != sizeof head)
        return tg_err("write failed");
    return tg_weights_write_blob(w, f);
}
