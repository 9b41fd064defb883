/* What a file is, told from its first bytes, so that a tool given the wrong
 * kind of file says what it got and what to run, not a parse error about a
 * header length. */
#ifndef TG_FILEKIND_H
#define TG_FILEKIND_H

#include <stddef.h>

/* Bytes the sniff looks at; fewer (a short file) are fine. */
#define TG_FILEKIND_BYTES 16

typedef enum {
    TG_FILE_UNKNOWN,
    TG_FILE_TG,     /* a TG graph: an 8-byte length, then '{' */
    TG_FILE_PT2,    /* a zip archive: torch.export.save's .pt2 */
    TG_FILE_ONNX,   /* a protobuf that starts like an ONNX ModelProto */
    TG_FILE_SO,     /* ELF: a compiled model */
    TG_FILE_NPY,
    TG_FILE_GZIP,
    TG_FILE_TEXT,   /* printable ASCII only */
} tg_file_kind;

tg_file_kind tg_file_kind_of(const void *head, size_t n);
/* "a PyTorch archive (.pt2)", "a NumPy array (.npy)" ... */
const char *tg_file_kind_name(tg_file_kind k);
/* For a tool that wanted a TG graph, what to do with one of kind k: "run
 * texport first" ... */
const char *tg_file_kind_hint(tg_file_kind k);

#endif
