/* The device interface (lib/backend): the registry and its checks, and the
 * interpreter on a device with memory of its own. The test's device keeps
 * every byte inverted (~b) and runs only add and neg of float32: a value the
 * interpreter forgot to upload or download reads as garbage, so results equal
 * to the CPU's, bit for bit, prove the moves; exp, which it refuses, runs on
 * the CPU. A constant is uploaded once for all runs of an exec. Inputs are
 * fresh random floats (seed printed; TG_SEED=N repeats). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "backend/backend.h"
#include "error.h"
#include "exec/exec.h"
#include "unit.h"

static int uploads, downloads, live, allocs, groups;

static void invert(void *dst, const void *src, size_t n)
{
    for (size_t i = 0; i < n; i++)
        ((unsigned char *)dst)[i] = (unsigned char)~((const unsigned char *)src)[i];
}

static void *dev_alloc(const tg_backend *be, size_t size)
{
    void *p = malloc(size ? size : 1);
    if (!p) {
        tg_err("out of memory");
        return NULL;
    }
    memset(p, 0xff, size);      /* zero, inverted */
    live++;
    allocs++;
    return p;
}

static void dev_free(const tg_backend *be, void *p)
{
    live -= p != NULL;
    free(p);
}

static int dev_upload(const tg_backend *be, void *dst, const void *src, size_t n)
{
    uploads++;
    invert(dst, src, n);
    return 0;
}

static int dev_download(const tg_backend *be, void *dst, const void *src, size_t n)
{
    downloads++;
    invert(dst, src, n);
    return 0;
}

static int dev_sync(const tg_backend *be)
{
    return 0;
}

static bool dev_supports(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    const tg_node *nd = &g->nodes[n];
    if (nd->op != TG_OP_ADD && nd->op != TG_OP_NEG) {
        snprintf(why, TG_WHY_MAX, "only add and neg");
        return false;
    }
    for (int i = 0; i < nd->nin; i++)
        if (g->values[nd->in[i]].dtype != TG_F32) {
            snprintf(why, TG_WHY_MAX, "only float32");
            return false;
        }
    return true;
}

static float load(const tg_tensor *t, int64_t i)
{
    uint32_t u;
    memcpy(&u, (const char *)t->data + 4 * i, 4);
    u = ~u;
    float f;
    memcpy(&f, &u, 4);
    return f;
}

static void store(tg_tensor *t, int64_t i, float f)
{
    uint32_t u;
    memcpy(&u, &f, 4);
    u = ~u;
    memcpy((char *)t->data + 4 * i, &u, 4);
}

/* Same shapes only: what this test's graphs need. */
static int dev_run(const tg_backend *be, const tg_run_ctx *c)
{
    int64_t n = (int64_t)(c->out[0]->nbytes / 4);
    for (int64_t i = 0; i < n; i++)
        store(c->out[0], i, c->n->op == TG_OP_NEG ? -load(c->in[0], i)
                                                  : load(c->in[0], i) + load(c->in[1], i));
    return 0;
}

/* A group of add and neg (each member's operands: an earlier member's
 * result or an outside input), element by element. */
static int dev_run_group(const tg_backend *be, const tg_group_ctx *c)
{
    groups++;
    int64_t n = (int64_t)(c->out[0]->nbytes / 4);
    for (int64_t i = 0; i < n; i++) {
        float r[c->nnode];
        for (int k = 0; k < c->nnode; k++) {
            const tg_node *nd = &c->g->nodes[c->nodes[k]];
            float a[2];
            for (int j = 0; j < nd->nin; j++) {
                int m = 0, v = nd->in[j];
                while (m < k && c->g->nodes[c->nodes[m]].out[0] != v)
                    m++;
                int x = 0;
                while (m == k && c->in_values[x] != v)
                    x++;
                a[j] = m < k ? r[m] : load(c->in[x], i);
            }
            r[k] = nd->op == TG_OP_NEG ? -a[0] : a[0] + a[1];
        }
        store(c->out[0], i, r[c->nnode - 1]);
    }
    return 0;
}

static bool dev_loop_supports(const tg_graph *g, const tg_node *nd, const char **why)
{
    static char buf[TG_WHY_MAX];
    return dev_supports(NULL, g, (int)(nd - g->nodes), buf) || !(*why = buf);
}

static const tg_group_rules dev_groups = {
    /* .epilogue = */ false,
    /* .conv_pool = */ false,
    /* .gemm_residual = */ false,
    /* .loop = */ true,
    /* .view = */ false,
    /* .strided = */ false,
    /* .loop_supports = */ dev_loop_supports,
};

static const tg_backend inverted = {
    /* .abi = */ TG_BACKEND_ABI,
    /* .name = */ "inverted",
    /* .about = */ "a test device that stores bytes inverted",
    /* .memory = */ TG_MEM_DEVICE,
    /* .alignment = */ 16,
    /* .alloc = */ dev_alloc,
    /* .free = */ dev_free,
    /* .upload = */ dev_upload,
    /* .download = */ dev_download,
    /* .synchronize = */ dev_sync,
    /* .supports_node = */ dev_supports,
    /* .run = */ dev_run,
    /* .run_group = */ NULL,    /* test_device_group adds it */
    /* .run_begin = */ NULL,
    /* .run_end = */ NULL,
    /* .lower = */ NULL,
    /* .nlower = */ 0,
    /* .groups = */ NULL,
    /* .compile = */ NULL,     /* it runs graphs only */
    /* .compiles_node = */ NULL,
};

static void test_registry(void)
{
    CHECK(tg_backend_count() >= 1 && tg_backend_at(0) == &tg_backend_cpu);
    CHECK(tg_backend_find("cpu") == &tg_backend_cpu);
    CHECK(tg_backend_find("nope") == NULL && strstr(tg_errmsg(), "no device 'nope' (known: cpu"));
    tg_backend old = inverted;
    old.abi = TG_BACKEND_ABI + 1;
    CHECK(tg_backend_register(&old) == -1 && strstr(tg_errmsg(), "interface version"));
    tg_backend partial = inverted;
    partial.run = NULL;
    CHECK(tg_backend_register(&partial) == -1 && strstr(tg_errmsg(), "every running function"));
    tg_backend clash = inverted;
    clash.name = "cpu";
    CHECK(tg_backend_register(&clash) == -1 && strstr(tg_errmsg(), "already registered"));
    CHECK(tg_backend_register(&inverted) == 0);
    CHECK(tg_backend_find("inverted") == &inverted);
    CHECK(tg_backend_at(tg_backend_count() - 1) == &inverted);
}

/* The graph of the tests below: y = neg(exp(x + c)) + x, and e. */
static tg_graph *graph_y(int n)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(1, (int64_t[]){n});
    float c[n];
    for (int i = 0; i < n; i++)
        c[i] = (float)unit_uniform(-2, 2);
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    int cv = tg_graph_add_const_copy(g, "c", TG_F32, &s, c);
    int a = tg_graph_add_node(g, TG_OP_ADD, "a", 2, (int[]){x, cv}, 0, NULL);
    int e = tg_graph_add_node(g, TG_OP_EXP, "e", 1, &a, 0, NULL);
    int ng = tg_graph_add_node(g, TG_OP_NEG, "n", 1, &e, 0, NULL);
    int y = tg_graph_add_node(g, TG_OP_ADD, "y", 2, (int[]){ng, x}, 0, NULL);
    CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0 && tg_graph_add_output(g, e) >= 0);
    return g;
}

/* y = neg(exp(x + c)) + x: add and the last add on the device, exp on the
 * CPU, neg on the device; against the same graph on the CPU alone. */
static void test_device_run(void)
{
    enum { N = 37 };
    tg_graph *g = graph_y(N);
    tg_tensor in = {.dtype = TG_F32, .rank = 1, .dims = {N}}, want[2], got[2];
    CHECK(tg_tensor_alloc(&in) == 0);
    for (int i = 0; i < N; i++)
        ((float *)in.data)[i] = (float)unit_uniform(-2, 2);
    tg_exec *cpu = tg_exec_new(g, 1), *dev = tg_exec_new_on(g, &inverted, 1);
    CHECK(cpu && dev);
    CHECK(tg_exec_run(cpu, &in, want) == 0);
    uploads = downloads = 0;
    CHECK(tg_exec_run(dev, &in, got) == 0);
    for (int k = 0; k < 2; k++)
        CHECK(got[k].nbytes == want[k].nbytes && !memcmp(got[k].data, want[k].data, want[k].nbytes));
    /* up: x, c; a down for exp; exp's result up for neg; outputs y and e
     * (e's host copy is its own) */
    CHECK(uploads == 3 && downloads == 2);
    CHECK(live == 1);           /* c's upload, kept for the next run */
    for (int k = 0; k < 2; k++)
        tg_tensor_free(&got[k]);
    /* a second run: the same results, c not uploaded again */
    uploads = downloads = 0;
    CHECK(tg_exec_run(dev, &in, got) == 0);
    for (int k = 0; k < 2; k++)
        CHECK(got[k].nbytes == want[k].nbytes && !memcmp(got[k].data, want[k].data, want[k].nbytes));
    CHECK(uploads == 2 && downloads == 2);
    CHECK(live == 1);
    for (int k = 0; k < 2; k++) {
        tg_tensor_free(&want[k]);
        tg_tensor_free(&got[k]);
    }
    tg_exec_free(cpu);
    tg_exec_free(dev);
    CHECK(live == 0);
    tg_tensor_free(&in);
    tg_graph_free(g);
}

/* The same device with run_group: neg and the last add, fused by its
 * grouping rules, come as one group at y, and n's value gets no memory. */
static void test_device_group(void)
{
    enum { N = 41 };
    tg_graph *g = graph_y(N);
    tg_backend grouping = inverted;
    grouping.name = "inverted+groups";
    grouping.run_group = dev_run_group;
    grouping.groups = &dev_groups;
    tg_tensor in = {.dtype = TG_F32, .rank = 1, .dims = {N}}, want[2], got[2];
    CHECK(tg_tensor_alloc(&in) == 0);
    for (int i = 0; i < N; i++)
        ((float *)in.data)[i] = (float)unit_uniform(-2, 2);
    tg_exec *cpu = tg_exec_new(g, 1), *node = tg_exec_new_on(g, &inverted, 1),
            *group = tg_exec_new_on(g, &grouping, 1);
    CHECK(cpu && node && group);
    CHECK(tg_exec_run(cpu, &in, want) == 0);
    allocs = groups = 0;
    CHECK(tg_exec_run(node, &in, got) == 0);
    int node_allocs = allocs;
    CHECK(groups == 0);
    for (int k = 0; k < 2; k++)
        tg_tensor_free(&got[k]);
    allocs = 0;
    CHECK(tg_exec_run(group, &in, got) == 0);
    CHECK(groups == 1 && allocs == node_allocs - 1);
    for (int k = 0; k < 2; k++) {
        CHECK(got[k].nbytes == want[k].nbytes && !memcmp(got[k].data, want[k].data, want[k].nbytes));
        tg_tensor_free(&want[k]);
        tg_tensor_free(&got[k]);
    }
    tg_exec_free(cpu);
    tg_exec_free(node);
    tg_exec_free(group);
    CHECK(live == 0);
    tg_tensor_free(&in);
    tg_graph_free(g);
}

/* A node neither the device nor the CPU runs is refused, with both reasons. */
static void test_refused(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape xs = tg_shape_of(2, (int64_t[]){2, 5}), ws = tg_shape_of(3, (int64_t[]){1, 5, 8});
    int x = tg_graph_add_input(g, "x", TG_F32, &xs), w = tg_graph_add_input(g, "w", TG_F32, &ws);
    tg_attr nattr = tg_attr_int("n", 7);
    int y = tg_graph_add_node(g, TG_OP_LINEAR_PACKED, "lp", 2, (int[]){x, w}, 1, &nattr);
    CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0);
    CHECK(tg_exec_new_on(g, &inverted, 1) == NULL);
    CHECK(strstr(tg_errmsg(), "node 'lp' (linear_packed): inverted cannot run it (only add and "
                              "neg), nor can cpu (weight in panels of other than 16 columns)"));
    tg_graph_free(g);
}

int main(void)
{
    unit_seed("test_backend");
    test_registry();
    test_device_run();
    test_device_group();
    test_refused();
    return unit_report();
}
