/* Reading the ABI version that a compiled model carries as an ELF note
 * (<tgraph/model.h>: TGRAPH_NOTE_NAME, TGRAPH_NOTE_ABI_VERSION), for
 * tg_model_check. */
#ifndef TG_MODELNOTE_H
#define TG_MODELNOTE_H

#include <stddef.h>
#include <stdint.h>

/* In the len bytes of one note segment, whose entries are padded to align (4
 * or 8) bytes: 1 with *version set when a tgraph ABI-version note is there, 0
 * when none is, -1 with tg_err when a note runs past the segment or the
 * tgraph note's description is not 4 bytes. */
int tg_model_note_version(const void *notes, size_t len, size_t align, uint32_t *version);

#endif
