/* The CPU backend's parts as its files see one another: the interpreter's
 * dispatch and the backend's struct (cpu.c), the lowering (prepack.c,
 * channels_last.c), the
 * fused loop's abilities (emit_loop.c), and the C emitter and its build (emit*.c,
 * weights.c, build.c: one C file implementing <tgraph/model.h>, which the
 * system compiler turns into a shared object linked with libtgkernels.a). */
#ifndef TG_BACKEND_CPU_H
#define TG_BACKEND_CPU_H

#include <stdint.h>
#include <stdio.h>

#include "../backend.h"

/* Whether the interpreter glue has a kernel for op (every op of ops.def). */
bool tg_cpu_has_kernel(tg_op op);

/* The lowering: float32 linears on constant weights into linear_packed on
 * panels of TGK_PANEL columns; boolean attention masks into additive ones. */
int tg_cpu_prepack(tg_graph *g);
/* With tcompile --layout=nhwc, first: float32 2-D convs into conv_nhwc and
 * their pools channels-last, the permutes between them cancelled
 * (channels_last.c). */
int tg_cpu_channels_last(tg_graph *g);

/* Whether the C emitter's fused loop computes node nd per element (*why: why not). */
bool tg_cpu_loop_supports(const tg_graph *g, const tg_node *nd, const char **why);
/* The CPU's writes_rows (passes.h, tg_group_rules): its float convolutions. */
bool tg_cpu_writes_rows(const tg_graph *g, const tg_plan *p, int root, int axis);

/* The weights blob: every constant the plan reads, 64-byte aligned, in value
 * order. offset[v] is value v's byte offset, or -1 when not in the blob. The
 * blob is not held: it is written from g's constants, which must outlive w. */
typedef struct {
    const tg_graph *g;
    uint64_t size, hash;
    int64_t *offset;
} tg_weights;

int tg_weights_make(const tg_graph *g, tg_weights *w);
void tg_weights_free(tg_weights *w);
/* The blob, for the assembler to embed. */
int tg_weights_write_blob(const tg_weights *w, FILE *f);
/* A weights file (tgraph_model_open's weights_path): header, then the blob. */
int tg_weights_write(const tg_weights *w, FILE *f);

/* How the weights reach the model: embedded from a file the assembler reads
 * (.incbin of incbin_path), or mapped at open from a file named weights_file. */
typedef struct {
    const char *incbin_path;    /* NULL: not embedded */
    const char *weights_file;   /* basename looked up beside the .so when not embedded */
} tg_codegen_weights;

/* The C file in the parts the build compiles apart (malloc'd strings): head,
 * the includes and the runtime's declarations, which the other parts start
 * with; hot, the functions that run over a model's elements (fused loops,
 * pools); weights, the top-level assembly that embeds the weights ("" when
 * not embedded); plan, hot's prototypes, the plan, its shape checks, its
 * tables and the ABI. head, hot, weights and plan in this order are the
 * whole model as one C file (--emit-c). Deterministic: the same graph gives
 * the same text. */
typedef struct {
    char *head, *hot, *weights, *plan;
} tg_codegen_src;

int tg_codegen_c(const tg_graph *g, const tg_plan *p, const tg_weights *w,
                 const tg_codegen_weights *how, tg_codegen_src *src);
void tg_codegen_src_free(tg_codegen_src *src);

/* The backend's compile: generate, compile and link the model in a temporary
 * directory, then copy the shared object to `so` (build.c). */
int tg_cpu_compile(const tg_backend *be, const tg_graph *g, const tg_plan *p,
                   const tg_build_opts *o, FILE *so);

#endif
