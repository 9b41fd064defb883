/* tcompile --target cuda: the shared object is the CUDA runtime
 * (libtgcuda.a: model_rt.c, the backend's kernels and glue; libtgkernels.a:
 * the checks the CPU's models make of their inputs) linked with
 * one block, the graph, its memory plan and the weights (blob.h), which
 * model.c puts in the .so with .incbin. No CUDA source per model: the nodes
 * run through the same kernels as trun --device cuda, captured once per
 * shape into a CUDA graph, so a model costs no nvcc run and the two paths
 * cannot drift apart. tgraph(7), section CUDA, tells the design. */
#define _GNU_SOURCE
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "../../error.h"
#include "../cpu/build.h"
#include "blob.h"
#include "cuda.h"

#ifndef TG_CUDA_LIBDIR
#define TG_CUDA_LIBDIR "/usr/local/cuda/lib64"
#endif

bool tgc_compiles_node(const tg_backend *be, const tg_graph *g, int n, char *why)
{
    if (tg_op_is_control(g->nodes[n].op)) {     /* a captured run has no branches */
        snprintf(why, TG_WHY_MAX, "control flow (%s) has no CUDA code generator: the cpu "
                 "target compiles it, trun --device cuda runs it", tg_op_name(g->nodes[n].op));
        return false;
    }
    return tgc_supports(g, n, why);
}

/* model.c: the ABI note lives in the runtime; this holds the block. */
static const char model_c[] =
    "/* A model compiled by tcompile --target cuda: its graph, memory plan and\n"
    " * weights (model.bin), for the runtime linked beside it (libtgcuda.a). */\n"
    "__asm__(\".section .rodata\\n.balign 64\\n\"\n"
    "        \".globl tgc_model_blob\\n.hidden tgc_model_blob\\ntgc_model_blob:\\n\"\n"
    "        \".incbin \\\"model.bin\\\"\\n\"\n"
    "        \".globl tgc_model_blob_end\\n.hidden tgc_model_blob_end\\ntgc_model_blob_end:\\n\"\n"
    "        \".previous\\n\");\n";

static int write_inputs(tg_build_dir *t, const tg_graph *g, const tg_plan *p,
                        const tg_build_opts *o)
{
    static const char exports[] = "{ global: tgraph_*; local: *; };\n";
    char *blob = NULL;
    size_t n = 0;
    FILE *f = open_memstream(&blob, &n);
    if (!f)
        return tg_err("out of memory");
    const char *d = o->dtype ? o->dtype : "fp32";
    int math = !strcmp(d, "tf32")   ? TGC_MATH_TF32
               : !strcmp(d, "bf16") ? TGC_MATH_BF16
               : !strcmp(d, "fp16") ? TGC_MATH_F16
                                    : TGC_MATH_F32;
    int rc = tgc_blob_write(g, p, math, f);
    fclose(f);
    if (!rc)
        rc = tg_build_write(t, "model.bin", blob, n);
    free(blob);
    if (!rc)
        rc = tg_build_write(t, "model.c", model_c, sizeof model_c - 1);
    if (!rc)
        rc = tg_build_write(t, "exports.map", exports, sizeof exports - 1);
    if (!rc && o->emit_c) {
        FILE *c = fopen(o->emit_c, "w");
        if (!c || fwrite(model_c, 1, sizeof model_c - 1, c) != sizeof model_c - 1)
            rc = tg_err("%s: cannot write it", o->emit_c);
        if (c && fclose(c))
            rc = tg_err("%s: cannot write it", o->emit_c);
    }
    return rc;
}

static int link_model(tg_build_dir *t, const tg_build_opts *o)
{
    char *argv[TG_BUILD_MAX_ARGS], *ccbuf = NULL, lib[4096 + 32], kern[4096 + 32];
    int argc = tg_build_cc(o->cc, &ccbuf, argv, TG_BUILD_MAX_ARGS - 24);
    if (argc < 0 || tg_build_runtime("libtgcuda.a", lib, sizeof lib) ||
        tg_build_runtime("libtgkernels.a", kern, sizeof kern)) {
        free(ccbuf);
        return -1;
    }
    /* -u pulls the runtime's ABI out of the archive; the CUDA libraries are
     * found where configure found them (rpath; cuDNN's too, where configure
     * found it; cuSPARSELt is dlopened at run time, sparselt.c); -z defs: a symbol nothing
     * defines fails here, not at dlopen */
    const char *fixed[] = {
        "-shared", "-fPIC", "-g0", "-fno-ident", "-o", "model.so", "model.c",
        "-Wl,-u,tgraph_model_open", lib, kern, "-L" TG_CUDA_LIBDIR, "-Wl,-rpath," TG_CUDA_LIBDIR,
#ifdef HAVE_CUDNN
        "-L" TG_CUDNN_LIBDIR, "-Wl,-rpath," TG_CUDNN_LIBDIR, "-lcudnn",
#endif
        "-lcublasLt", "-lcudart", "-lm", "-lpthread", "-ldl",
        "-Wl,--version-script=exports.map", "-Wl,-z,defs", "-Wl,--as-needed", NULL,
    };
    for (int i = 0; fixed[i]; i++)
        argv[argc++] = (char *)fixed[i];
    argv[argc] = NULL;
    int rc = tg_build_run(t, argv, "the C compiler");
    free(ccbuf);
    return rc;
}

int tgc_compile(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                const tg_build_opts *o, FILE *so)
{
    if (o->weights_path)
        return tg_err("--weights: a CUDA model carries its weights in the .so");
    for (int v = 0; v < g->nvalue; v++)
        if (tg_shape_uses_data(g, &g->values[v].shape))
            return tg_err("value '%s': its shape is known only when a node has run; the CUDA"
                          " model captures its run before (trun --device cuda runs it)",
                          g->values[v].name);
    for (int s = 0; s < g->nsym; s++) {
        int i, k;
        int64_t c, off;
        if (tg_graph_symbol_source(g, s, &i, &k, &c, &off))
            return -1;
    }
    tg_build_dir t;
    if (tg_build_dir_make(&t))
        return -1;
    int rc = write_inputs(&t, g, p, o);
    if (!rc)
        rc = link_model(&t, o);
    if (!rc)
        rc = tg_build_copy_out(&t, so);
    tg_build_dir_remove(&t);
    return rc;
}
