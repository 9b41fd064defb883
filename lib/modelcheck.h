/* Whether a file is a compiled model that dlopen(3) can load: call before
 * dlopen, which dies of SIGBUS on a truncated shared object. See
 * tgraph_model(3). */
#ifndef TG_MODELCHECK_H
#define TG_MODELCHECK_H

#include <stddef.h>

/* 0 when path (buf, len bytes) is an ELF shared object for this machine whose
 * program headers and every segment dlopen maps lie inside the file, and whose
 * dynamic symbol table defines every function of <tgraph/model.h>; else -1
 * with tg_err saying what is wrong ("truncated ELF file (segment 3 needs bytes
 * ..."), and whose tgraph ELF note, when it has one, names this
 * TGRAPH_MODEL_ABI_VERSION ("model ABI version 2, this tgraph reads version
 * 1: ..."). It reads the file and runs none of it. A .so without the note
 * (tcompile before the note) passes: compare its tgraph_abi_version() with
 * TGRAPH_MODEL_ABI_VERSION after dlopen. A check against damaged files, not a
 * sandbox: a .so that passes runs its own code once loaded. */
int tg_model_check(const char *path);
int tg_model_check_mem(const void *buf, size_t len);

#endif
