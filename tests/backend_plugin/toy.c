/* toy: a third party's backend, built out of tree into
 * libtgraph-backend-toy.so (tests/device_plugin.bats compiles it with cc
 * against the installed headers only) and loaded by trun --device toy.
 *
 * It runs add, mul and relu of float32, an operand broadcast over leading
 * dims at most, and refuses every other node with its reason, so the CPU
 * runs those. Its memory is its own (TG_MEM_DEVICE, from malloc): the
 * interpreter must upload what it reads and download what the CPU reads. It
 * runs the chains its grouping rules fuse (a loop of its ops) as one pass
 * over the elements. It calls libtgraph's tg_ functions (tg_err, tg_op_name,
 * tg_dim_eq ...) from the program that loads it and links no copy of its
 * own. Results equal the CPU's bit for bit (one rounding per op, each op in
 * float: built with -ffp-contract=off, no fused multiply-add). */
#include <stdlib.h>
#include <string.h>

#include <tgraph/backend/backend.h>
#include <tgraph/error.h>
#include <tgraph/ops/ops.h>

/* tests/device_plugin.bats builds one with another interface version */
#ifndef TOY_ABI
#define TOY_ABI TG_BACKEND_ABI
#endif

static bool toy_op(tg_op op)
{
    return op == TG_OP_ADD || op == TG_OP_MUL || op == TG_OP_RELU;
}

/* Why toy cannot compute node nd element by element, or NULL. */
static const char *refusal(const tg_graph *g, const tg_node *nd, char *why)
{
    if (!toy_op(nd->op)) {
        snprintf(why, TG_WHY_MAX, "toy runs add, mul and relu, not %s", tg_op_name(nd->op));
        return why;
    }
    const tg_shape *out = &g->values[nd->out[0]].shape;
    for (int i = 0; i < nd->nin; i++) {
        const tg_value *x = &g->values[nd->in[i]];
        if (x->dtype != TG_F32) {
            snprintf(why, TG_WHY_MAX, "toy runs float32 only, not %s", tg_dtype_name(x->dtype));
            return why;
        }
        /* x must be the output's trailing dims: then element e reads x[e % numel(x)] */
        bool trailing = x->shape.rank <= out->rank;
        for (int k = 1; trailing && k <= x->shape.rank; k++)
            trailing = tg_dim_eq(x->shape.d[x->shape.rank - k], out->d[out->rank - k]);
        if (!trailing) {
            snprintf(why, TG_WHY_MAX, "toy broadcasts over leading dims only");
            return why;
        }
    }
    return NULL;
}

static bool toy_supports(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    return !refusal(g, &g->nodes[n], why);
}

static bool toy_loop_supports(const tg_graph *g, const tg_node *nd, const char **why)
{
    static char buf[TG_WHY_MAX];
    return !(*why = refusal(g, nd, buf));
}

static float apply(tg_op op, float a, float b)
{
    return op == TG_OP_ADD ? a + b : op == TG_OP_MUL ? a * b : a > 0 ? a : 0;
}

static float at(const tg_tensor *t, int64_t e)
{
    int64_t n = tg_tensor_numel(t->rank, t->dims);
    return ((const float *)t->data)[e % n];
}

static int toy_run(const tg_backend *be, const tg_run_ctx *c)
{
    tg_tensor *y = c->out[0];
    int64_t n = tg_tensor_numel(y->rank, y->dims);
    for (int64_t e = 0; e < n; e++)
        ((float *)y->data)[e] = apply(c->n->op, at(c->in[0], e), c->n->nin > 1 ? at(c->in[1], e) : 0);
    return 0;
}

/* A fused chain: per element, each member in order, its operands from an
 * earlier member (src >= 0) or an outside input (src = -1 - its index). */
static int toy_run_group(const tg_backend *be, const tg_group_ctx *c)
{
    if (c->kind != TG_GROUP_LOOP)
        return tg_err("toy runs loops only, not group kind %d", (int)c->kind);
    int src[c->nnode][2];
    for (int k = 0; k < c->nnode; k++) {
        const tg_node *nd = &c->g->nodes[c->nodes[k]];
        for (int j = 0; j < nd->nin; j++) {
            src[k][j] = -1;
            for (int i = 0; i < c->nin; i++)
                if (c->in_values[i] == nd->in[j])
                    src[k][j] = -1 - i;
            for (int m = 0; m < k; m++)
                if (c->g->nodes[c->nodes[m]].out[0] == nd->in[j])
                    src[k][j] = m;
        }
    }
    float r[c->nnode];
    tg_tensor *y = c->out[0];
    int64_t n = tg_tensor_numel(y->rank, y->dims);
    for (int64_t e = 0; e < n; e++) {
        for (int k = 0; k < c->nnode; k++) {
            const tg_node *nd = &c->g->nodes[c->nodes[k]];
            float a[2] = {0, 0};
            for (int j = 0; j < nd->nin; j++)
                a[j] = src[k][j] >= 0 ? r[src[k][j]] : at(c->in[-1 - src[k][j]], e);
            r[k] = apply(nd->op, a[0], a[1]);
        }
        ((float *)y->data)[e] = r[c->nnode - 1];
    }
    return 0;
}

static void *toy_alloc(const tg_backend *be, size_t size)
{
    void *p = calloc(1, size ? size : 1);
    if (!p)
        tg_err("toy: out of memory");
    return p;
}

static void toy_free(const tg_backend *be, void *p)
{
    free(p);
}

static int toy_copy(const tg_backend *be, void *dst, const void *src, size_t n)
{
    memcpy(dst, src, n);
    return 0;
}

static int toy_synchronize(const tg_backend *be)
{
    return 0;
}

static const tg_group_rules toy_groups = {
    /* .epilogue = */ false,
    /* .conv_pool = */ false,
    /* .gemm_residual = */ false,
    /* .loop = */ true,
    /* .view = */ false,
    /* .strided = */ false,
    /* .loop_supports = */ toy_loop_supports,
};

static const tg_backend toy = {
    /* .abi = */ TOY_ABI,
    /* .name = */ "toy",
    /* .about = */ "a test backend in a shared object: add, mul, relu",
    /* .memory = */ TG_MEM_DEVICE,
    /* .alignment = */ 16,
    /* .alloc = */ toy_alloc,
    /* .free = */ toy_free,
    /* .upload = */ toy_copy,
    /* .download = */ toy_copy,
    /* .synchronize = */ toy_synchronize,
    /* .supports_node = */ toy_supports,
    /* .run = */ toy_run,
    /* .run_group = */ toy_run_group,
    /* .run_begin = */ NULL,
    /* .run_end = */ NULL,
    /* .lower = */ NULL,
    /* .nlower = */ 0,
    /* .groups = */ &toy_groups,
    /* .compile = */ NULL,     /* it runs graphs only */
    /* .compiles_node = */ NULL,
};

const tg_backend *tg_backend_entry(void)
{
    return &toy;
}
