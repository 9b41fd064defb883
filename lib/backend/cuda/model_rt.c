/* The runtime of a model that tcompile --target cuda wrote (libtgcuda.a).
 * The .so carries its graph and memory plan as one block (blob.h, with the
 * weights); this file is <tgraph/model.h> over it. At open: the weights
 * uploaded once, a stream to capture on, cuBLASLt, and the table that the
 * CPU's runtime checks calls against (../cpu/model_rt.h: the same checks,
 * words and statuses). Each new set of symbol values (a shape) gets its own
 * device arena from the memory plan and its run captured as a CUDA graph,
 * node by node through the backend's kernels (run.c); later runs of that
 * shape copy the inputs in, launch the graph and copy the outputs out, on
 * the caller's stream. Runs of one handle hold its lock and queue behind the
 * previous one (an event), so threads may share it. CUDA errors come back as
 * TGRAPH_E_DEVICE with CUDA's words; nothing aborts. */
#define _GNU_SOURCE
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../cpu/model_rt.h"
#include "blob.h"
#include "cuda.h"
#include "sparselt.h"

/* model.c's block (an .incbin): the graph, plan and weights */
extern const uint8_t tgc_model_blob[], tgc_model_blob_end[];

#define MAX_SHAPES 16                   /* captured shapes kept; the oldest goes first */
#define WORKSPACE (32u << 20)           /* cuBLASLt's */
#define ALIGN 256

/* One shape's arena and captured run. */
typedef struct {
    bool used;
    uint64_t last;                      /* when it last ran (the handle's clock) */
    int64_t S[TG_MAX_SYMS];
    void *arena;
    int64_t (*dims)[TG_MAX_RANK];       /* every value's dims */
    void **data;                        /* every value's device pointer */
    cudaGraphExec_t exec;
} shape_run;

/* What the .so's block describes, read once for every handle (and kept
 * while the .so is loaded): the graph, its plan, and the table of the CPU
 * runtime's checks. */
static struct {
    tgc_blob b;
    tgrt_model table;
    tgraph_symbol_info *sym;
    tgrt_bind *bind;
    tgraph_tensor_info *in, *out;
    int *in_dim, *out_dim;
    tg_dim *dimx;                       /* the table's dim expressions */
    int status;                         /* of reading it: 0, or a tgraph_status */
    char error[512];
} desc;
static pthread_once_t desc_once = PTHREAD_ONCE_INIT;

struct tgraph_model {
    const tgrt_model *d;                /* first: the CPU runtime's checks read it */
    const tgc_blob *b;
    int dev;
    tgc_state cs;                       /* stream: where runs are captured */
    void *weights;                      /* every constant, in one allocation */
    void **cdata;                       /* per value: its constant's device pointer */
    tgc_lt24 **lt24;                    /* per node: a linear_24's weight compressed for
                                         * cuSPARSELt (--dtype bf16, fp16), or NULL */
    bool lt24_off;                      /* a capture with cuSPARSELt failed: dense since */
    int64_t *flags, *flags_init;        /* device: one per node (tgc_node_checks) */
    bool checked;
    cudaStream_t own;                   /* tgraph_model_run's queue */
    cudaEvent_t done;                   /* the last run queued */
    pthread_mutex_t mu;
    uint64_t clock;
    shape_run shape[MAX_SHAPES];
};

static int cuda_fail(cudaError_t e, const char *what)
{
    return tgrt_fail(e == cudaErrorMemoryAllocation ? TGRAPH_E_NOMEM : TGRAPH_E_DEVICE,
                     "cuda: %s: %s (%s)", what, cudaGetErrorString(e), cudaGetErrorName(e));
}

/* tg_err's message (the backend's words) as a status. */
static int tg_fail(int status)
{
    return tgrt_fail(status, "%s", tg_errmsg());
}

static size_t up(size_t n) { return (n + ALIGN - 1) / ALIGN * ALIGN; }

/* ---- the table ---------------------------------------------------------------- */

static size_t prepare(int64_t *S, int64_t *D, size_t *slot)
{
    for (int n = 0; n < desc.table.ndim; n++)
        if (tg_dim_eval(desc.dimx[n], S, &D[n]))
            D[n] = -1;                  /* never matches an input's dim */
    return 0;
}

static char *dim_text(const tg_graph *g, tg_dim d)
{
    char buf[256];
    tg_dim_format(d, g->sym, buf, sizeof buf);
    return strdup(buf);
}

static void info_of(const tg_graph *g, int v, tgraph_tensor_info *t, int *dim, int *n)
{
    const tg_value *x = &g->values[v];
    t->name = x->name;
    t->dtype = (tgraph_dtype)x->dtype;
    t->rank = x->shape.rank;
    for (int k = 0; k < x->shape.rank; k++) {
        int64_t c;
        t->dims[k] = tg_dim_is_const(x->shape.d[k], &c) ? c : -1;
        t->dim_expr[k] = dim_text(g, x->shape.d[k]);
        dim[k] = (*n)++;
    }
}

static int make_table(void)
{
    const tg_graph *g = desc.b.g;
    int nd = 0;
    for (int i = 0; i < g->ninput + g->noutput; i++)
        nd += g->values[i < g->ninput ? g->inputs[i] : g->outputs[i - g->ninput]].shape.rank;
    desc.sym = calloc((size_t)g->nsym + 1, sizeof *desc.sym);
    desc.bind = calloc((size_t)g->nsym + 1, sizeof *desc.bind);
    desc.in = calloc((size_t)g->ninput + 1, sizeof *desc.in);
    desc.out = calloc((size_t)g->noutput + 1, sizeof *desc.out);
    desc.in_dim = calloc((size_t)g->ninput * TGRAPH_MAX_RANK + 1, sizeof(int));
    desc.out_dim = calloc((size_t)g->noutput * TGRAPH_MAX_RANK + 1, sizeof(int));
    desc.dimx = calloc((size_t)nd + 1, sizeof *desc.dimx);
    if (!desc.sym || !desc.bind || !desc.in || !desc.out || !desc.in_dim || !desc.out_dim ||
        !desc.dimx)
        return tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
    for (int s = 0; s < g->nsym; s++) {
        tgrt_bind *b = &desc.bind[s];
        desc.sym[s] = (tgraph_symbol_info){g->sym[s].name, g->sym[s].min, g->sym[s].max};
        if (tg_graph_symbol_source(g, s, &b->input, &b->axis, &b->coef, &b->offset))
            return tg_fail(TGRAPH_E_ARG);
    }
    int n = 0;
    for (int i = 0; i < g->ninput + g->noutput; i++) {
        bool o = i >= g->ninput;
        int v = o ? g->outputs[i - g->ninput] : g->inputs[i];
        for (int k = 0; k < g->values[v].shape.rank; k++)
            desc.dimx[n + k] = g->values[v].shape.d[k];
        info_of(g, v, o ? &desc.out[i - g->ninput] : &desc.in[i],
                (o ? desc.out_dim + (i - g->ninput) * TGRAPH_MAX_RANK
                   : desc.in_dim + i * TGRAPH_MAX_RANK), &n);
    }
    desc.table = (tgrt_model){
        .nsym = g->nsym, .sym = desc.sym, .bind = desc.bind, .nin = g->ninput, .nout = g->noutput,
        .in = desc.in, .out = desc.out, .in_dim = desc.in_dim, .out_dim = desc.out_dim, .ndim = nd,
        .prepare = prepare,
    };
    return 0;
}

static void load_desc(void)
{
    desc.status = tgc_blob_read(tgc_model_blob, (size_t)(tgc_model_blob_end - tgc_model_blob),
                                &desc.b) ? tg_fail(TGRAPH_E_WEIGHTS) : make_table();
    if (desc.status)
        snprintf(desc.error, sizeof desc.error, "%s", tgrt_last_error());
}

/* ---- open and close ------------------------------------------------------------- */

static int upload_weights(tgraph_model *m)
{
    const tg_graph *g = m->b->g;
    size_t total = 0;
    cudaError_t e;
    for (int v = 0; v < g->nvalue; v++)
        if (g->values[v].kind == TG_VALUE_CONST)
            total += up(g->values[v].nbytes);
    if (!(m->cdata = calloc((size_t)g->nvalue + 1, sizeof *m->cdata)))
        return tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
    if ((e = cudaMalloc(&m->weights, total ? total : 1)))
        return cuda_fail(e, "allocating the weights");
    size_t at = 0;
    for (int v = 0; v < g->nvalue; v++) {
        const tg_value *x = &g->values[v];
        if (x->kind != TG_VALUE_CONST)
            continue;
        m->cdata[v] = (char *)m->weights + at;
        if (x->nbytes && (e = cudaMemcpy(m->cdata[v], x->data, x->nbytes, cudaMemcpyHostToDevice)))
            return cuda_fail(e, "uploading the weights");
        at += up(x->nbytes);
    }
    return 0;
}

/* The flags' values before a run, one per node (INT64_MIN for indexing). */
static int set_up_flags(tgraph_model *m)
{
    const tg_graph *g = m->b->g;
    int64_t *init = calloc((size_t)g->nnode + 1, sizeof *init);
    cudaError_t e = cudaSuccess;
    if (!init)
        return tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
    for (int i = 0; i < g->nnode; i++)
        m->checked |= tgc_node_checks(g, i, &init[i]);
    size_t n = ((size_t)g->nnode + 1) * sizeof *init;
    if ((e = cudaMalloc((void **)&m->flags, n)) || (e = cudaMalloc((void **)&m->flags_init, n)) ||
        (e = cudaMemcpy(m->flags_init, init, n, cudaMemcpyHostToDevice)))
        cuda_fail(e, "setting up the error flags");
    free(init);
    return e ? TGRAPH_E_DEVICE : 0;
}

/* With --dtype bf16 or fp16, each linear_24's weight compressed for
 * cuSPARSELt once, here (weights resident); a node it does not take (no
 * library, a shape it refuses) keeps NULL and runs the dense path. */
static int compress_sparse(tgraph_model *m)
{
    const tg_graph *g = m->b->g;
    if (!(m->lt24 = calloc((size_t)g->nnode + 1, sizeof *m->lt24)))
        return tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
    if (m->cs.lt24_dtype == TG_F32)
        return 0;
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        const tg_value *v = n->op == TG_OP_LINEAR_24 ? &g->values[n->in[1]] : NULL;
        int64_t N, K2;
        char why[TG_WHY_MAX];
        if (!v || !m->cdata[n->in[1]] || !m->cdata[n->in[2]] ||
            !tg_dim_is_const(v->shape.d[0], &N) || !tg_dim_is_const(v->shape.d[1], &K2))
            continue;
        m->lt24[i] = tgc_lt24_new(&m->cs, m->cdata[n->in[1]], m->cdata[n->in[2]], N, 2 * K2,
                                  m->cs.lt24_dtype, why);
    }
    cudaError_t e = cudaStreamSynchronize(m->cs.stream);
    return e ? cuda_fail(e, "compressing the sparse weights") : 0;
}

static int set_up(tgraph_model *m)
{
    cudaError_t e;
    struct cudaDeviceProp prop;
    if ((e = cudaGetDevice(&m->dev)) || (e = cudaGetDeviceProperties(&prop, m->dev)))
        return cuda_fail(e, "finding the device");
    m->cs.sm = prop.major * 10 + prop.minor;
    m->cs.deferred = true;
    tgc_set_math(&m->cs, m->b->math);   /* tcompile --dtype; no TG_CUDA_MATH here */
    m->cs.workspace_size = WORKSPACE;
    if ((e = cudaStreamCreateWithFlags(&m->cs.stream, cudaStreamNonBlocking)) ||
        (e = cudaStreamCreateWithFlags(&m->own, cudaStreamNonBlocking)) ||
        (e = cudaEventCreateWithFlags(&m->done, cudaEventDisableTiming)) ||
        (e = cudaMalloc(&m->cs.workspace, WORKSPACE)))
        return cuda_fail(e, "setting up the device");
    if (cublasLtCreate(&m->cs.lt) != CUBLAS_STATUS_SUCCESS)
        return tgrt_fail(TGRAPH_E_DEVICE, "cuda: cuBLASLt could not be set up");
    m->cs.dnn = tgc_dnn_new();
    int rc = upload_weights(m);
    if (!rc)
        rc = compress_sparse(m);
    return rc ? rc : set_up_flags(m);
}

static void drop_shape(shape_run *r)
{
    if (r->exec)
        cudaGraphExecDestroy(r->exec);
    if (r->arena)
        cudaFree(r->arena);
    free(r->dims);
    free(r->data);
    memset(r, 0, sizeof *r);
}

static void close_model(tgraph_model *m)
{
    if (!m)
        return;
    if (m->done)
        cudaEventSynchronize(m->done);
    for (int i = 0; i < MAX_SHAPES; i++)
        drop_shape(&m->shape[i]);
    for (int i = 0; m->lt24 && i < m->b->g->nnode; i++)
        tgc_lt24_free(m->lt24[i]);
    free(m->lt24);
    if (m->cs.lt)
        cublasLtDestroy(m->cs.lt);
    tgc_dnn_free(m->cs.dnn);
    cudaFree(m->cs.workspace);
    cudaFree(m->weights);
    cudaFree(m->flags);
    cudaFree(m->flags_init);
    if (m->cs.stream)
        cudaStreamDestroy(m->cs.stream);
    if (m->own)
        cudaStreamDestroy(m->own);
    if (m->done)
        cudaEventDestroy(m->done);
    free(m->cdata);
    pthread_mutex_destroy(&m->mu);
    free(m);
}

static tgraph_model *open_model(const char *weights_path)
{
    if (weights_path) {
        tgrt_fail(TGRAPH_E_WEIGHTS, "%s: a CUDA model carries its weights: open it with NULL",
                  weights_path);
        return NULL;
    }
    tgraph_model *m = calloc(1, sizeof *m);
    if (!m) {
        tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
        return NULL;
    }
    pthread_mutex_init(&m->mu, NULL);
    pthread_once(&desc_once, load_desc);
    m->d = &desc.table;
    m->b = &desc.b;
    int rc = desc.status ? tgrt_fail(desc.status, "%s", desc.error) : set_up(m);
    if (rc) {
        close_model(m);
        return NULL;
    }
    tgrt_fail(0, "%s", "");
    return m;
}

/* ---- a shape: its arena and its captured run ------------------------------------ */

/* Whether value v is made and read inside a fused group: no memory. */
static bool interior(const tgc_blob *b, const tg_graph *g, int v)
{
    const tg_value *x = &g->values[v];
    return x->kind == TG_VALUE_NODE && b->root[x->producer] != x->producer;
}

/* Each value's dims; the arena: a region per slot of the plan (its largest
 * value), one per input and output (copied in and out around the graph,
 * whose pointers are fixed), and the views on their source's bytes. */
static int lay_out(tgraph_model *m, shape_run *r)
{
    const tg_graph *g = m->b->g;
    int nv = g->nvalue;
    size_t *slot = calloc((size_t)m->b->nslot + 1, sizeof *slot);
    size_t *at = calloc((size_t)nv + 1, sizeof *at);
    r->dims = calloc((size_t)nv + 1, sizeof *r->dims);
    r->data = calloc((size_t)nv + 1, sizeof *r->data);
    int rc = !slot || !at || !r->dims || !r->data ? tgrt_fail(TGRAPH_E_NOMEM, "out of memory") : 0;
    size_t total = 0;
    for (int v = 0; !rc && v < nv; v++) {
        const tg_value *x = &g->values[v];
        if (tg_shape_eval(&x->shape, r->S, r->dims[v]))
            rc = tg_fail(TGRAPH_E_SHAPE);
        if (interior(m->b, g, v))
            continue;
        size_t n = tg_dtype_size(x->dtype);
        for (int k = 0; !rc && k < x->shape.rank; k++)
            n *= (size_t)r->dims[v][k];
        int s = m->b->slot[v];
        if (s >= 0 && n > slot[s])
            slot[s] = n;
        else if (s < 0 && m->b->alias[v] == v && x->kind != TG_VALUE_CONST) {
            at[v] = total;
            total += up(n ? n : 1);
        }
    }
    for (int s = 0; !rc && s < m->b->nslot; s++) {
        size_t n = slot[s];
        slot[s] = total;
        total += up(n ? n : 1);
    }
    cudaError_t e = rc ? cudaSuccess : cudaMalloc(&r->arena, total ? total : 1);
    if (e)
        rc = cuda_fail(e, "allocating the arena");
    for (int v = 0; !rc && v < nv; v++) {
        int a = m->b->alias[v];
        if (interior(m->b, g, v))
            continue;
        r->data[v] = g->values[a].kind == TG_VALUE_CONST ? m->cdata[a]
                     : m->b->slot[a] >= 0 ? (char *)r->arena + slot[m->b->slot[a]]
                                         : (char *)r->arena + at[a];
    }
    free(slot);
    free(at);
    return rc;
}

static void tensor_of(const tg_graph *g, const shape_run *r, int v, tg_tensor *t)
{
    const tg_value *x = &g->values[v];
    t->dtype = x->dtype;
    t->rank = x->shape.rank;
    memcpy(t->dims, r->dims[v], sizeof t->dims);
    t->data = r->data[v];
    t->nbytes = tg_dtype_size(x->dtype);
    for (int k = 0; k < t->rank; k++)
        t->nbytes *= (size_t)t->dims[k];
}

/* A product over nothing is the bias or zero: the interpreter's outputs come zeroed. */
static int zero_empty_product(tgraph_model *m, const tg_node *n, const tg_tensor *x,
                              const tg_tensor *y)
{
    cudaError_t e = cudaSuccess;
    if ((n->op == TG_OP_LINEAR || n->op == TG_OP_MATMUL) && x->rank && x->dims[x->rank - 1] == 0)
        e = cudaMemsetAsync(y->data, 0, y->nbytes, m->cs.stream);
    return e ? cuda_fail(e, "zeroing an output") : 0;
}

/* Node i's kernels queued on the capture stream. */
static int queue_node(tgraph_model *m, shape_run *r, int i)
{
    const tg_graph *g = m->b->g;
    const tg_node *n = &g->nodes[i];
    tg_tensor in[n->nin + 1], out[n->nout + 1];
    const tg_tensor *inp[n->nin + 1];
    tg_tensor *outp[n->nout + 1];
    for (int k = 0; k < n->nin; k++) {
        inp[k] = n->in[k] >= 0 ? &in[k] : NULL;
        if (n->in[k] >= 0)
            tensor_of(g, r, n->in[k], &in[k]);
    }
    for (int k = 0; k < n->nout; k++) {
        tensor_of(g, r, n->out[k], &out[k]);
        outp[k] = &out[k];
    }
    /* a view the plan put on its input's bytes: nothing to move */
    if (tg_op_is_view(n->op) && n->nin && out[0].data == in[0].data)
        return 0;
    if (zero_empty_product(m, n, &in[0], &out[0]))
        return -1;
    tgc_state cs = m->cs;
    cs.flag = m->flags + i;
    cs.lt24 = m->lt24_off ? NULL : m->lt24[i];
    tg_run_ctx c = {g, n, r->S, inp, outp};
    if (tgc_run_node(&cs, &c))
        return tgrt_fail(TGRAPH_E_DEVICE, "node '%s' (%s): %s", n->name, tg_op_name(n->op),
                         tg_errmsg());
    return 0;
}

/* Before a shape's capture (cuSPARSELt's search synchronizes): each
 * compressed linear_24's plan for this shape's token count, its algorithm
 * chosen by cusparseLtMatmulSearch. A plan it refuses leaves the node to
 * the dense path. */
static int plan_sparse(tgraph_model *m, shape_run *r)
{
    const tg_graph *g = m->b->g;
    for (int i = 0; i < g->nnode; i++) {
        const tg_node *n = &g->nodes[i];
        if (!m->lt24[i])
            continue;
        const int64_t *xd = r->dims[n->in[0]];
        int xr = g->values[n->in[0]].shape.rank;
        int64_t M = 1, K = xr ? xd[xr - 1] : 1;
        for (int k = 0; k + 1 < xr; k++)
            M *= xd[k];
        char why[TG_WHY_MAX];
        if (M && K && tgc_lt24_plan(&m->cs, m->lt24[i], M, true, why) < 0)
            return tg_fail(TGRAPH_E_DEVICE);
    }
    cudaError_t e = cudaStreamSynchronize(m->cs.stream);
    return e ? cuda_fail(e, "choosing cuSPARSELt's algorithms") : 0;
}

/* The fused group whose root is i (group.c) queued on the capture stream:
 * its members, the values they read from outside, the root's outputs. */
static int queue_group(tgraph_model *m, shape_run *r, int i)
{
    const tg_graph *g = m->b->g;
    const tg_node *root = &g->nodes[i];
    int nread = 0, nnode = 0, nin = 0;
    for (int k = 0; k <= i; k++)
        nread += m->b->root[k] == i ? g->nodes[k].nin : 0;
    int nodes[i + 1], vin[nread + 1];
    tg_tensor tin[nread + 1], tout[root->nout + 1];
    const tg_tensor *inp[nread + 1];
    tg_tensor *outp[root->nout + 1];
    for (int k = 0; k <= i; k++) {
        if (m->b->root[k] != i)
            continue;
        nodes[nnode++] = k;
        for (int j = 0; j < g->nodes[k].nin; j++) {
            int v = g->nodes[k].in[j], q = 0;
            if (v < 0 || interior(m->b, g, v))
                continue;
            while (q < nin && vin[q] != v)
                q++;
            if (q < nin)
                continue;
            vin[nin] = v;
            tensor_of(g, r, v, &tin[nin]);
            inp[nin] = &tin[nin];
            nin++;
        }
    }
    for (int k = 0; k < root->nout; k++) {
        tensor_of(g, r, root->out[k], &tout[k]);
        outp[k] = &tout[k];
    }
    const tg_node *first = &g->nodes[nodes[0]];
    for (int q = 0; q < nin; q++)
        if (first->nin && vin[q] == first->in[0] && zero_empty_product(m, first, &tin[q], &tout[0]))
            return -1;
    tgc_state cs = m->cs;
    cs.flag = m->flags + i;
    tg_group_ctx c = {g, m->b->kind[i], nnode, nodes, r->S, nin, vin, inp, outp};
    if (tgc_run_group(&cs, &c))
        return tgrt_fail(TGRAPH_E_DEVICE, "group '%s' (%s, %d nodes): %s", root->name,
                         tg_op_name(root->op), nnode, tg_errmsg());
    return 0;
}

static int capture(tgraph_model *m, shape_run *r)
{
    cudaGraph_t graph = NULL;
    cudaError_t e = cudaStreamBeginCapture(m->cs.stream, cudaStreamCaptureModeThreadLocal);
    if (e)
        return cuda_fail(e, "starting the capture");
    int rc = 0;
    for (int i = 0; i < m->b->g->nnode && !rc; i++)
        if (m->b->root[i] == i)     /* a group's members run at its root */
            rc = m->b->kind[i] == TG_GROUP_SINGLE ? queue_node(m, r, i) : queue_group(m, r, i);
    e = cudaStreamEndCapture(m->cs.stream, &graph);
    if (!rc && e)
        rc = cuda_fail(e, "capturing the run");
    if (!rc && (e = cudaGraphInstantiate(&r->exec, graph, 0)))
        rc = cuda_fail(e, "instantiating the captured run");
    if (graph)
        cudaGraphDestroy(graph);
    return rc;
}

/* Before a shape's capture with cuDNN: each convolution queued once, as
 * cuDNN may build or load its kernels on a first call, which a capture must
 * not see; they write only their outputs, which the captured run writes
 * again. */
static int warm_dnn(tgraph_model *m, shape_run *r)
{
    const tg_graph *g = m->b->g;
    int rc = 0;
    for (int k = 0; m->cs.dnn && k < g->nnode && !rc; k++) {
        int i = m->b->root[k];
        if (g->nodes[k].op == TG_OP_CONV)
            rc = m->b->kind[i] == TG_GROUP_SINGLE ? queue_node(m, r, i) : queue_group(m, r, i);
    }
    cudaError_t e = rc ? cudaSuccess : cudaStreamSynchronize(m->cs.stream);
    return rc ? rc : e ? cuda_fail(e, "a convolution's first run") : 0;
}

/* The shape of symbol values S: captured before, or now (the oldest dropped
 * when all are taken). */
static int shape_for(tgraph_model *m, const int64_t *S, shape_run **out)
{
    int nsym = m->b->g->nsym, pick = 0;
    for (int i = 0; i < MAX_SHAPES; i++) {
        shape_run *r = &m->shape[i];
        if (r->used && !memcmp(r->S, S, sizeof(int64_t) * (size_t)nsym)) {
            *out = r;
            return 0;
        }
        if (!r->used || (m->shape[pick].used && r->last < m->shape[pick].last))
            pick = i;
    }
    shape_run *r = &m->shape[pick];
    if (r->used) {
        cudaError_t e = cudaEventSynchronize(m->done);  /* its arena may still be read */
        if (e)
            return cuda_fail(e, "waiting for an earlier run");
        drop_shape(r);
    }
    memcpy(r->S, S, sizeof(int64_t) * (size_t)nsym);
    int rc = lay_out(m, r);
    if (!rc)
        rc = plan_sparse(m, r);
    if (!rc)
        rc = warm_dnn(m, r);
    if (!rc)
        rc = capture(m, r);
    /* likewise cuDNN's convolutions: should a version refuse the capture,
     * the products take them */
    if (rc == TGRAPH_E_DEVICE && m->cs.dnn) {
        tgc_dnn_free(m->cs.dnn);
        m->cs.dnn = NULL;
        cudaGetLastError();
        rc = capture(m, r);
    }
    /* cuSPARSELt's products are captured like kernels; should a version
     * refuse the capture, the model goes on without it (the dense path) */
    for (int i = 0; rc == TGRAPH_E_DEVICE && !m->lt24_off && i < m->b->g->nnode; i++)
        if (m->lt24[i]) {
            m->lt24_off = true;
            cudaGetLastError();
            rc = capture(m, r);
        }
    if (rc) {
        drop_shape(r);
        return rc;
    }
    r->used = true;
    *out = r;
    return 0;
}

/* ---- a run ---------------------------------------------------------------------- */

static enum cudaMemcpyKind kind(tgraph_placement from, tgraph_placement to)
{
    return from == TGRAPH_HOST ? (to == TGRAPH_HOST ? cudaMemcpyHostToHost : cudaMemcpyHostToDevice)
                               : (to == TGRAPH_HOST ? cudaMemcpyDeviceToHost
                                                    : cudaMemcpyDeviceToDevice);
}

/* The flags after a run (it has finished): the first node that reported. */
static int check_flags(tgraph_model *m, shape_run *r)
{
    const tg_graph *g = m->b->g;
    int64_t *f = malloc(((size_t)g->nnode + 1) * sizeof *f), init;
    if (!f)
        return tgrt_fail(TGRAPH_E_NOMEM, "out of memory");
    cudaError_t e = cudaMemcpy(f, m->flags, (size_t)g->nnode * sizeof *f, cudaMemcpyDeviceToHost);
    int rc = e ? cuda_fail(e, "reading the error flags") : 0;
    for (int i = 0; !rc && i < g->nnode; i++)
        if (tgc_node_checks(g, i, &init) && f[i] != init) {
            tgc_flag_error(g, i, r->dims[g->nodes[i].in[0]], f[i]);
            rc = tgrt_fail(TGRAPH_E_DATA, "node '%s' (%s): %s", g->nodes[i].name,
                           tg_op_name(g->nodes[i].op), tg_errmsg());
        }
    free(f);
    return rc;
}

/* Queue the run of shape r on stream s: inputs in, the graph, outputs out. */
static int queue_run(tgraph_model *m, shape_run *r, cudaStream_t s, const tgraph_tensor *in,
                     tgraph_placement pin, tgraph_tensor *res, void *const *outp,
                     tgraph_placement pout)
{
    const tg_graph *g = m->b->g;
    cudaError_t e = cudaStreamWaitEvent(s, m->done, 0);
    for (int i = 0; !e && i < g->ninput; i++) {
        tg_tensor t;
        tensor_of(g, r, g->inputs[i], &t);
        if (t.nbytes)
            e = cudaMemcpyAsync(t.data, in[i].data, t.nbytes, kind(pin, TGRAPH_DEVICE), s);
    }
    if (!e && m->checked)
        e = cudaMemcpyAsync(m->flags, m->flags_init, (size_t)g->nnode * sizeof(int64_t),
                            cudaMemcpyDeviceToDevice, s);
    if (!e)
        e = cudaGraphLaunch(r->exec, s);
    for (int i = 0; !e && i < g->noutput; i++)
        if (res[i].nbytes)
            e = cudaMemcpyAsync(outp[i], r->data[g->outputs[i]], res[i].nbytes,
                                kind(TGRAPH_DEVICE, pout), s);
    if (!e)
        e = cudaEventRecord(m->done, s);
    return e ? cuda_fail(e, "queueing the run") : 0;
}

static int run_locked(tgraph_model *m, const int64_t *S, cudaStream_t s, const tgraph_tensor *in,
                      tgraph_placement pin, tgraph_tensor *res, void *const *outp,
                      tgraph_placement pout)
{
    shape_run *r = NULL;
    int rc = shape_for(m, S, &r);
    if (rc)
        return rc;
    r->last = ++m->clock;
    if ((rc = queue_run(m, r, s, in, pin, res, outp, pout)))
        return rc;
    /* host outputs are read when the call returns; bad data is known once the run is done */
    if (pout == TGRAPH_HOST || m->checked) {
        cudaError_t e = cudaStreamSynchronize(s);
        if (e)
            return cuda_fail(e, "running the model");
    }
    return m->checked ? check_flags(m, r) : 0;
}

static int run(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out, int nout,
               cudaStream_t s, tgraph_placement pin, tgraph_placement pout)
{
    CALL_ARRAYS(m);
    int rc = tgrt_check_call(m, in, nin, out, nout, S, D, slot, res, &need);
    if (rc)
        return rc;
    void *outp[d->nout + 1];
    bool mine[d->nout + 1];
    for (int i = 0; i < d->nout; i++) {
        outp[i] = out[i].data;
        mine[i] = false;
        if (outp[i] && out[i].nbytes < res[i].nbytes)
            return tgrt_fail(TGRAPH_E_SPACE, "output '%s' needs %zu bytes, the buffer has %zu",
                             d->out[i].name, res[i].nbytes, out[i].nbytes);
    }
    for (int i = 0; i < d->nout && !rc; i++) {
        if (outp[i])
            continue;
        size_t n = res[i].nbytes ? res[i].nbytes : 1;
        cudaError_t e = cudaSuccess;
        if (pout == TGRAPH_HOST)
            outp[i] = malloc(n);
        else
            e = cudaMalloc(&outp[i], n);
        if (e || !outp[i]) {
            outp[i] = NULL;
            rc = tgrt_fail(TGRAPH_E_NOMEM, "out of memory for output '%s'", d->out[i].name);
        }
        mine[i] = outp[i] != NULL;
    }
    int dev = -1;
    cudaError_t e = rc ? cudaSuccess : cudaGetDevice(&dev);
    if (!rc && !e && dev != m->dev)
        e = cudaSetDevice(m->dev);
    if (e)
        rc = cuda_fail(e, "choosing the model's device");
    if (!rc) {
        pthread_mutex_lock(&m->mu);
        rc = run_locked(m, S, s ? s : m->own, in, pin, res, outp, pout);
        pthread_mutex_unlock(&m->mu);
    }
    if (dev >= 0 && dev != m->dev)
        cudaSetDevice(dev);
    for (int i = 0; i < d->nout; i++)
        if (rc && mine[i])
            pout == TGRAPH_HOST ? free(outp[i]) : (void)cudaFree(outp[i]);
    if (rc)
        return rc;
    for (int i = 0; i < d->nout; i++) {
        out[i] = res[i];
        out[i].data = outp[i];
    }
    tgrt_fail(0, "%s", "");
    return 0;
}

static int run_plain(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out,
                  int nout)
{
    return run(m, in, nin, out, nout, NULL, TGRAPH_HOST, TGRAPH_HOST);
}

static int run_ex(tgraph_model *m, const tgraph_tensor *in, int nin, tgraph_tensor *out,
                     int nout, const tgraph_run_opts *o)
{
    int rc = tgrt_check_opts(o);
    if (rc)
        return rc;
    if (!o)
        return run_plain(m, in, nin, out, nout);
    /* NULL: the device's default stream, as the options say */
    return run(m, in, nin, out, nout, o->stream ? (cudaStream_t)o->stream : cudaStreamLegacy,
               o->inputs, o->outputs);
}

/* ---- the ABI ------------------------------------------------------------------ */

/* the version as data, read before dlopen (<tgraph/model.h>) */
__attribute__((section(".note.tgraph"), used, aligned(4)))
static const struct { uint32_t namesz, descsz, type; char name[8]; uint32_t desc; }
    tgraph_abi_note = {sizeof TGRAPH_NOTE_NAME, 4, TGRAPH_NOTE_ABI_VERSION, TGRAPH_NOTE_NAME,
                       TGRAPH_MODEL_ABI_VERSION};

static int nthreads;    /* kept for tgraph_num_threads: the GPU runs with none of the host's */

TGRAPH_API uint32_t tgraph_abi_version(void) { return TGRAPH_MODEL_ABI_VERSION; }
TGRAPH_API const char *tgraph_strerror(int s) { return tgrt_strerror(s); }
TGRAPH_API const char *tgraph_last_error(void) { return tgrt_last_error(); }
TGRAPH_API tgraph_model *tgraph_model_open(const char *w) { return open_model(w); }
TGRAPH_API void tgraph_model_close(tgraph_model *m) { close_model(m); }
TGRAPH_API int tgraph_model_num_inputs(const tgraph_model *m) { return tgrt_num(m, 0); }
TGRAPH_API int tgraph_model_num_outputs(const tgraph_model *m) { return tgrt_num(m, 1); }
TGRAPH_API int tgraph_model_num_symbols(const tgraph_model *m) { return tgrt_num(m, 2); }
TGRAPH_API int tgraph_model_input_info(const tgraph_model *m, int i, tgraph_tensor_info *t)
{
    return tgrt_tensor_info(m, 0, i, t);
}
TGRAPH_API int tgraph_model_output_info(const tgraph_model *m, int i, tgraph_tensor_info *t)
{
    return tgrt_tensor_info(m, 1, i, t);
}
TGRAPH_API int tgraph_model_symbol_info(const tgraph_model *m, int i, tgraph_symbol_info *t)
{
    return tgrt_symbol_info(m, i, t);
}
TGRAPH_API int tgraph_model_output_dims(const tgraph_model *m, const tgraph_tensor *in, int nin,
                                        tgraph_tensor *out, int nout)
{
    return tgrt_output_dims(m, in, nin, out, nout);
}
TGRAPH_API int tgraph_model_run(tgraph_model *m, const tgraph_tensor *in, int nin,
                                tgraph_tensor *out, int nout)
{
    return run_plain(m, in, nin, out, nout);
}
TGRAPH_API int tgraph_model_run_ex(tgraph_model *m, const tgraph_tensor *in, int nin,
                                   tgraph_tensor *out, int nout, const tgraph_run_opts *o)
{
    return run_ex(m, in, nin, out, nout, o);
}
TGRAPH_API void tgraph_set_num_threads(int n) { nthreads = n; }
TGRAPH_API int tgraph_num_threads(void) { return nthreads > 0 ? nthreads : 1; }
