/* The hot functions of a compiled model: each fused loop and specialized pool
 * is a function tgk_parallel_for runs over rows, written apart from the plan
 * that calls it, so that the build compiles them at -O3 and the plan, which
 * only fills descriptors and calls kernels, at -O1, in parallel (build.c).
 * A body met before is not written again: the call names the first
 * function with it (Swin-T's 43 fused loops are 6 distinct bodies). */
#include "cg.h"

#include <stdlib.h>
#include <string.h>

#include "../../error.h"

#define SIGNATURE "(void *ctx, int64_t r0, int64_t r1)"

const char *cg_hot_add(tg_cg *c, const char *name, const char *body)
{
    cg_hot *h = c->hot;
    for (int i = 0; i < h->n; i++)
        if (!strcmp(h->body[i], body))
            return h->name[i];
    if (h->n == h->cap) {
        int cap = h->cap ? 2 * h->cap : 64;
        char **a = realloc(h->name, cap * sizeof *a), **b = a ? realloc(h->body, cap * sizeof *b)
                                                                : NULL;
        if (a)
            h->name = a;
        if (!b)
            return tg_err("out of memory"), NULL;
        h->body = b;
        h->cap = cap;
    }
    char *n = strdup(name), *b = strdup(body);
    if (!n || !b) {
        free(n);
        free(b);
        return tg_err("out of memory"), NULL;
    }
    h->name[h->n] = n;
    h->body[h->n++] = b;
    fprintf(h->f, "__attribute__((visibility(\"hidden\")))\nvoid %s" SIGNATURE "\n%s\n", n, b);
    return n;
}

void cg_hot_protos(const cg_hot *h, FILE *f)
{
    for (int i = 0; i < h->n; i++)
        fprintf(f, "__attribute__((visibility(\"hidden\"))) void %s" SIGNATURE ";\n", h->name[i]);
    if (h->n)
        fprintf(f, "\n");
}

void cg_hot_free(cg_hot *h)
{
    for (int i = 0; i < h->n; i++) {
        free(h->name[i]);
        free(h->body[i]);
    }
    free(h->name);
    free(h->body);
}
