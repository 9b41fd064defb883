/* C code generation for tcompile: a graph and its plan (lib/passes) become one
 * C file implementing <tgraph/model.h>, which the system compiler turns into a
 * shared object linked with libtgkernels.a. */
#ifndef TG_CODEGEN_H
#define TG_CODEGEN_H

#include <stdint.h>
#include <stdio.h>

#include "../graph.h"
#include "../passes/passes.h"

/* The weights blob: every constant the plan reads, 64-byte aligned, in value
 * order. offset[v] is value v's byte offset, or -1 when not in the blob. */
typedef struct {
    unsigned char *data;
    uint64_t size, hash;
    int64_t *offset;
} tg_weights;

int tg_weights_make(const tg_graph *g, tg_weights *w);
void tg_weights_free(tg_weights *w);
/* A weights file (tgraph_model_open's weights_path): header, then the blob. */
int tg_weights_write(const tg_weights *w, FILE *f);

/* How the weights reach the model: embedded from a file the assembler reads
 * (.incbin of incbin_path), or mapped at open from a file named weights_file. */
typedef struct {
    const char *incbin_path;    /* NULL: not embedded */
    const char *weights_file;   /* basename looked up beside the .so when not embedded */
} tg_codegen_weights;

/* Write the C file. Deterministic: the same graph gives the same text. */
int tg_codegen_c(const tg_graph *g, const tg_plan *p, const tg_weights *w,
                 const tg_codegen_weights *how, FILE *out);

typedef struct {
    const char *cc;             /* NULL: $CC, else "cc" */
    const char *cpu;            /* -march= value; NULL: "native" */
    const char *weights_path;   /* --weights: write them there, not into the .so */
    const char *emit_c;         /* also write the C file there */
} tg_build_opts;

/* Generate, compile and link the model in a temporary directory, then copy
 * the shared object to `so`. 0 or -1 (tg_err with the compiler's messages). */
int tg_codegen_build(const tg_graph *g, const tg_plan *p, const tg_build_opts *o, FILE *so);

/* --header: macros naming the model's inputs, outputs and symbols, prefixed
 * with the header file's base name in capitals. */
int tg_codegen_header(const tg_graph *g, const char *prefix, FILE *f);
int tg_codegen_header_save(const tg_graph *g, const char *path);

#endif
