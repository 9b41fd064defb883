/* The CPU backend: host memory, the interpreter's glue (run_*.c) found through
 * one table indexed by op, the packing of linear weights and (--layout=nhwc)
 * the channels-last convolutions as its lowering, the
 * C emitter's grouping rules, and the build of a shared object with cc. */
#include "cpu.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "kernels/kernels.h"
#include "run.h"

/* tensor_ops.h numbers its dtypes like dtype.h, so a cast converts. */
_Static_assert(TGK_F32 == (int)TG_F32 && TGK_F8E5M2 == (int)TG_F8E5M2 &&
               TGK_I8 == (int)TG_I8 && TGK_I64 == (int)TG_I64 && TGK_BOOL == (int)TG_BOOL &&
               TGK_DT_COUNT == (int)TG_DTYPE_COUNT, "tgk_dtype must match tg_dtype");

/* Control flow has no glue: the interpreter runs the subgraphs itself
 * (lib/exec/exec_control.c), and supports_node refuses it here. */
#define tg_run_control NULL

/* The glue of each op: its family's entry (ops.def, run.h). */
static const tg_run_fn run_table[TG_OP_COUNT] = {
#define OP(id, name, min_in, max_in, infer, family, flag) [TG_OP_##id] = tg_run_##family,
#include "../../ops/ops.def"
#undef OP
};

bool tg_cpu_has_kernel(tg_op op)
{
    return op > TG_OP_NONE && op < TG_OP_COUNT;
}

static bool cpu_supports_node(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    const tg_node *nd = &g->nodes[n];
    int64_t panel;
    if (tg_op_is_control(nd->op)) {
        snprintf(why, TG_WHY_MAX, "%s runs subgraphs: only the interpreter runs it",
                 tg_op_name(nd->op));
        return false;
    }
    if (!tg_cpu_has_kernel(nd->op)) {
        snprintf(why, TG_WHY_MAX, "no CPU kernel for op %s", tg_op_name(nd->op));
        return false;
    }
    if ((nd->op == TG_OP_LINEAR_PACKED || nd->op == TG_OP_CONV_NHWC) &&
        (!tg_dim_is_const(g->values[nd->in[1]].shape.d[2], &panel) || panel != TGK_PANEL)) {
        snprintf(why, TG_WHY_MAX, "weight in panels of other than %d columns", TGK_PANEL);
        return false;
    }
    int64_t c;
    if (nd->op == TG_OP_CONV_NHWC &&
        (!tg_dim_is_const(g->values[nd->in[0]].shape.d[3], &c) ||
         !tgk_conv_nhwc_supported(c, tg_node_int(nd, "k", 0), tg_node_int(nd, "groups", 1)))) {
        snprintf(why, TG_WHY_MAX, "its kernel takes one group, depthwise, or groups of "
                 "multiples of 16 channels");
        return false;
    }
    return true;
}

static bool cpu_compiles_node(const tg_backend *be, const tg_graph *g, int n, char *why);

/* A control node: every node of its subgraphs compiles (none has a shape set
 * as it runs: a run-time attribute, a data op, which the outer graph's code
 * takes but a subgraph's does not yet), and an output whose
 * shape the run sets (a data symbol) is a graph output, once, which the run
 * hands over as it made it, or unused (emit_control.c). */
static bool compiles_control(const tg_backend *be, const tg_graph *g, const tg_node *nd,
                             char *why)
{
    for (int k = 0; k < nd->nattr; k++) {
        const tg_graph *sg = nd->attr[k].kind == TG_ATTR_GRAPH ? nd->attr[k].u.g : NULL;
        for (int m = 0; sg && m < sg->nnode; m++) {
            char sub[TG_WHY_MAX] = "a run-time attribute or a data op in a subgraph: its "
                                   "shape is known only as it runs";
            bool runtime = tg_op_is_data(sg->nodes[m].op);  /* (the outer graph's: */
            for (int a = 0; a < sg->nodes[m].nattr; a++)    /* tg_graph_check_static) */
                runtime |= sg->nodes[m].attr[a].kind == TG_ATTR_INPUT;
            if (runtime || !cpu_compiles_node(be, sg, m, sub)) {
                snprintf(why, TG_WHY_MAX, "subgraph %s: node '%s' (%s): %s", nd->attr[k].name,
                         sg->nodes[m].name, tg_op_name(sg->nodes[m].op), sub);
                return false;
            }
        }
    }
    for (int k = 0; k < nd->nout; k++) {
        const tg_value *v = &g->values[nd->out[k]];
        int uses = 0;
        for (int j = 0; j < g->noutput; j++)
            uses += g->outputs[j] == nd->out[k];
        for (int m = 0; m < g->nnode; m++)
            for (int i = 0; i < g->nodes[m].nin; i++)
                uses += 2 * (g->nodes[m].in[i] == nd->out[k]);
        if (uses > 1 && tg_shape_uses_data(g, &v->shape)) {
            snprintf(why, TG_WHY_MAX, "output '%s' has a shape set as it runs (a data symbol): "
                     "the C code generator takes that only as a graph output, once", v->name);
            return false;
        }
    }
    return true;
}

/* What tcompile's C code generator takes: what the interpreter's glue runs,
 * control flow (emit_control.c) too. A data op's output is sized by its bound
 * and its run binds the symbol (emit.c, cg_data_bind). */
static bool cpu_compiles_node(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    if (tg_op_is_control(g->nodes[n].op))
        return compiles_control(be, g, &g->nodes[n], why);
    return cpu_supports_node(be, g, n, why);
}

static int cpu_run(const tg_backend *be, const tg_run_ctx *c)
{
    return run_table[c->n->op](c);
}

/* Host memory: what the interpreter's own tensors use. */
static void *cpu_alloc(const tg_backend *be, size_t size)
{
    return tg_host_alloc(size);
}

static void cpu_free(const tg_backend *be, void *p)
{
    free(p);
}

static int cpu_copy(const tg_backend *be, void *dst, const void *src, size_t n)
{
    if (n)
        memcpy(dst, src, n);
    return 0;
}

static int cpu_synchronize(const tg_backend *be)
{
    return 0;   /* kernels return when done */
}

/* The run's thread count, set for the run only: the process-wide one, which
 * the host may have chosen, stays as it is. */
static int cpu_run_begin(const tg_backend *be, int nthreads)
{
    int caller = tgk_run_threads();
    tgk_set_run_threads(nthreads);
    tgk_parallel_prime();
    return caller;
}

static void cpu_run_end(const tg_backend *be, int caller)
{
    tgk_set_run_threads(caller);
}

static const tg_lower_pass cpu_lower[] = {
    {"channels_last", tg_cpu_channels_last, true},
    {"prepack", tg_cpu_prepack, false},
};

static const tg_group_rules cpu_groups = {
    /* .epilogue = */ true,
    /* .conv_pool = */ true,
    /* .gemm_residual = */ true,
    /* .loop = */ true,
    /* .view = */ true,
    /* .strided = */ true,
    /* .loop_supports = */ tg_cpu_loop_supports,
    /* .writes_rows = */ tg_cpu_writes_rows,
};

const tg_backend tg_backend_cpu = {
    /* .abi = */ TG_BACKEND_ABI,
    /* .name = */ "cpu",
    /* .about = */ "the host's cores: C kernels, models compiled with cc",
    /* .memory = */ TG_MEM_HOST,
    /* .alignment = */ TG_TENSOR_ALIGN,
    /* .alloc = */ cpu_alloc,
    /* .free = */ cpu_free,
    /* .upload = */ cpu_copy,
    /* .download = */ cpu_copy,
    /* .synchronize = */ cpu_synchronize,
    /* .supports_node = */ cpu_supports_node,
    /* .run = */ cpu_run,
    /* .run_group = */ NULL,    /* the interpreter runs the CPU node by node */
    /* .run_begin = */ cpu_run_begin,
    /* .run_end = */ cpu_run_end,
    /* .lower = */ cpu_lower,
    /* .nlower = */ sizeof cpu_lower / sizeof cpu_lower[0],
    /* .groups = */ &cpu_groups,
    /* .compile = */ tg_cpu_compile,
    /* .compiles_node = */ cpu_compiles_node,
};
