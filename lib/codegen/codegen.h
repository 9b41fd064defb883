/* What tcompile writes whatever the target: the --header file. Each target's
 * code generator is its backend's (lib/backend/NAME, compile). */
#ifndef TG_CODEGEN_H
#define TG_CODEGEN_H

#include <stdio.h>

#include "../graph.h"

/* --header: macros naming the model's inputs, outputs and symbols, prefixed
 * with the header file's base name in capitals. */
int tg_codegen_header(const tg_graph *g, const char *prefix, FILE *f);
int tg_codegen_header_save(const tg_graph *g, const char *path);

#endif
