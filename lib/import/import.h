/* Importers: model files of other frameworks to tgraph graphs. */
#ifndef TG_IMPORT_H
#define TG_IMPORT_H

#include "../graph.h"

typedef struct {
    /* --range NAME=MIN:MAX overrides, applied to symbols of that name. */
    int nrange;
    struct { const char *name; int64_t min, max; } range[TG_MAX_SYMS];
} tg_import_opts;

/* torch.export.save archives (PyTorch >= 2.9). NULL with tg_err; when operators
 * are unsupported the message lists every one (node name, source line). */
tg_graph *tg_import_pt2(const char *path, const tg_import_opts *opts);
/* The same from memory (buf borrowed for the call: fuzzing, embedding). */
tg_graph *tg_import_pt2_mem(const uint8_t *buf, size_t len, const tg_import_opts *opts);
/* ONNX models, opset >= 13; external data resolved beside the model. */
tg_graph *tg_import_onnx(const char *path, const tg_import_opts *opts);
/* The same from memory; external data is looked up in dir (fuzzing, embedding). */
tg_graph *tg_import_onnx_mem(const uint8_t *buf, size_t len, const char *dir,
                             const tg_import_opts *opts);

#endif
