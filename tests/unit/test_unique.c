/* ONNX Unique as texport imports it (stable sorts, onnx_ops_data.c), on a
 * large input against a reference written out here (a linear search of the
 * values seen so far): the fixture tests/fixtures/onnx/unique.onnx (x [N, 5]
 * flattened, sorted and unsorted; rows of xr [N, 2], unsorted; bats checks it
 * against ONNX Runtime at N = 1 and 3) at N = 20000, fresh random values with
 * most repeated, outputs compared exactly: values, first indices, inverse
 * indices and counts. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "exec/exec.h"
#include "graph.h"
#include "import/import.h"
#include "tensor.h"
#include "unit.h"

enum { N = 20000, OUTS = 12 };

static bool same_row(const int64_t *a, const int64_t *b, int m)
{
    for (int j = 0; j < m; j++)
        if (a[j] != b[j])
            return false;
    return true;
}

/* The reference over `n` rows of `m` int64 elements: distinct rows in order
 * of first occurrence (first[u], count[u]), each row's one in inv[]; then,
 * when sorted, renumbered in ascending (lexicographic) order. Returns u. */
static int64_t reference(const int64_t *x, int64_t n, int m, bool sorted, int64_t *first,
                         int64_t *inv, int64_t *count)
{
    int64_t u = 0;
    for (int64_t i = 0; i < n; i++) {
        int64_t k = 0;
        while (k < u && !same_row(x + first[k] * m, x + i * m, m))
            k++;
        if (k == u)
            first[u] = i, count[u++] = 0;
        count[k]++;
        inv[i] = k;
    }
    if (!sorted)
        return u;
    int64_t *rank = malloc(sizeof *rank * (size_t)u), *f = malloc(sizeof *f * (size_t)u),
            *c = malloc(sizeof *c * (size_t)u);
    for (int64_t a = 0; a < u; a++) {        /* rank: how many rows are smaller */
        rank[a] = 0;
        for (int64_t b = 0; b < u; b++) {
            int d = 0;
            for (int j = 0; j < m && !d; j++) {
                int64_t p = x[first[b] * m + j], q = x[first[a] * m + j];
                d = (p > q) - (p < q);
            }
            rank[a] += d < 0;
        }
    }
    for (int64_t a = 0; a < u; a++)
        f[rank[a]] = first[a], c[rank[a]] = count[a];
    for (int64_t i = 0; i < n; i++)
        inv[i] = rank[inv[i]];
    memcpy(first, f, sizeof *f * (size_t)u), memcpy(count, c, sizeof *c * (size_t)u);
    free(rank), free(f), free(c);
    return u;
}

static int64_t at(const tg_tensor *t, int64_t i)
{
    return t->dtype == TG_F32 ? (int64_t)((float *)t->data)[i] : ((int64_t *)t->data)[i];
}

/* outputs o[0..3] (values, first, inverse, counts) of one Unique of x (n rows
 * of m) against the reference */
static void compare(const tg_tensor *o, const int64_t *x, int64_t n, int m, bool sorted,
                    const char *what)
{
    int64_t *first = malloc(sizeof *first * (size_t)n), *inv = malloc(sizeof *inv * (size_t)n),
            *count = malloc(sizeof *count * (size_t)n);
    int64_t u = reference(x, n, m, sorted, first, inv, count), bad = 0;
    CHECK(o[0].dims[0] == u && o[1].dims[0] == u && o[2].dims[0] == n && o[3].dims[0] == u);
    if (o[0].dims[0] == u && o[1].dims[0] == u && o[2].dims[0] == n && o[3].dims[0] == u) {
        for (int64_t k = 0; k < u; k++) {
            bad += at(&o[1], k) != first[k] || at(&o[3], k) != count[k];
            for (int j = 0; j < m; j++)
                bad += at(&o[0], k * m + j) != x[first[k] * m + j];
        }
        for (int64_t i = 0; i < n; i++)
            bad += at(&o[2], i) != inv[i];
    }
    printf("%s: %lld of %lld distinct, %lld differ\n", what, (long long)u, (long long)n,
           (long long)bad);
    CHECK(bad == 0);
    free(first), free(inv), free(count);
}

int main(void)
{
    unit_seed("test_unique");
    const char *src = getenv("TG_SRCDIR");
    char path[4096];
    snprintf(path, sizeof path, "%s/tests/fixtures/onnx/unique.onnx", src ? src : ".");
    tg_graph *g = tg_import_onnx(path, NULL);
    if (!g) {
        fprintf(stderr, "%s: %s\n", path, tg_errmsg());
        return 1;
    }
    CHECK(g->ninput == 2 && g->noutput == OUTS);
    tg_tensor in[2] = {{.dtype = TG_F32, .rank = 2, .dims = {N, 5}},
                       {.dtype = TG_I64, .rank = 2, .dims = {N, 2}}}, out[OUTS] = {{0}};
    CHECK(tg_tensor_alloc(&in[0]) == 0 && tg_tensor_alloc(&in[1]) == 0);
    int64_t *x = malloc(sizeof *x * N * 5), *xr = in[1].data;
    for (int64_t i = 0; i < N * 5; i++)     /* 1000 distinct values */
        ((float *)in[0].data)[i] = (float)(x[i] = (int64_t)(unit_next() % 1000) - 500);
    for (int64_t i = 0; i < N * 2; i++)     /* 64 distinct rows */
        xr[i] = (int64_t)(unit_next() % 8);
    tg_exec *e = tg_exec_new(g, 0);
    int rc = e ? tg_exec_run(e, in, out) : -1;
    if (rc)
        fprintf(stderr, "run: %s\n", tg_errmsg());
    CHECK(rc == 0);
    if (rc == 0) {
        compare(out, x, N * 5, 1, true, "flattened, sorted");
        compare(out + 4, x, N * 5, 1, false, "flattened, first occurrence");
        compare(out + 8, xr, N, 2, false, "rows, first occurrence");
    }
    for (int k = 0; k < OUTS; k++)
        tg_tensor_free(&out[k]);
    tg_tensor_free(&in[0]), tg_tensor_free(&in[1]);
    tg_exec_free(e);
    tg_graph_free(g);
    free(x);
    return unit_report();
}
