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

static int uploads, downloads, live;

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
    /* .run_group = */ NULL,
    /* .run_begin = */ NULL,
    /* .run_end = */ NULL,
    /* .lower = */ NULL,
    /* .nlower = */ 0,
    /* .groups = */ NULL,
    /* .compile = */ NULL,     /* it runs graphs only */
};

static uint64_t rng;

static float uniform(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return (float)((double)(rng >> 11) / 9007199254740992.0 * 4 - 2);
}

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

/* y = neg(exp(x + c)) + x: add and the last add on the device, exp on the
 * CPU, neg on the device; against the same graph on the CPU alone. */
static void test_device_run(void)
{
    enum { N = 37 };
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(1, (int64_t[]){N});
    float c[N];
    for (int i = 0; i < N; i++)
        c[i] = uniform();
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    int cv = tg_graph_add_const_copy(g, "c", TG_F32, &s, c);
    int a = tg_graph_add_node(g, TG_OP_ADD, "a", 2, (int[]){x, cv}, 0, NULL);
    int e = tg_graph_add_node(g, TG_OP_EXP, "e", 1, &a, 0, NULL);
    int n = tg_graph_add_node(g, TG_OP_NEG, "n", 1, &e, 0, NULL);
    int y = tg_graph_add_node(g, TG_OP_ADD, "y", 2, (int[]){n, x}, 0, NULL);
    CHECK(y >= 0 && tg_graph_add_output(g, y) >= 0 && tg_graph_add_output(g, e) >= 0);
    tg_tensor in = {.dtype = TG_F32, .rank = 1, .dims = {N}}, want[2], got[2];
    CHECK(tg_tensor_alloc(&in) == 0);
    for (int i = 0; i < N; i++)
        ((float *)in.data)[i] = uniform();
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
    const char *seed = getenv("TG_SEED");
    rng = seed ? strtoull(seed, NULL, 10) : (uint64_t)time(NULL) * 2654435761u;
    rng += !rng;
    fprintf(stderr, "seed %llu (TG_SEED repeats it)\n", (unsigned long long)rng);
    test_registry();
    test_device_run();
    test_refused();
    return unit_report();
}
