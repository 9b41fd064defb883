/* The tgraph ABI-version note (modelnote.h). Layout of a note from the
 * System V ABI: three 4-byte words (name size, description size, type), then
 * the name and the description, each ending padded to the segment's
 * alignment. */
#include "modelnote.h"

#include <elf.h>
#include <string.h>
#include <tgraph/model.h>

#include "error.h"

static uint64_t padded(uint64_t n, size_t align)
{
    return (n + align - 1) / align * align;
}

int tg_model_note_version(const void *notes, size_t len, size_t align, uint32_t *version)
{
    const uint8_t *p = notes;
    size_t off = 0;
    while (off < len) {
        Elf64_Nhdr n;
        if (len - off < sizeof n)
            return tg_err("corrupt ELF file (a note header runs past its segment)");
        memcpy(&n, p + off, sizeof n);
        /* as readelf: the description starts, and the next note, at a
         * multiple of align from this note's start */
        uint64_t desc = padded(sizeof n + (uint64_t)n.n_namesz, align),
                 next = padded(desc + n.n_descsz, align);
        if (next > len - off)
            return tg_err("corrupt ELF file (a note of %u + %u bytes runs past its segment)",
                          n.n_namesz, n.n_descsz);
        if (n.n_type == TGRAPH_NOTE_ABI_VERSION && n.n_namesz == sizeof TGRAPH_NOTE_NAME &&
            !memcmp(p + off + sizeof n, TGRAPH_NOTE_NAME, sizeof TGRAPH_NOTE_NAME)) {
            if (n.n_descsz != sizeof *version)
                return tg_err("corrupt tgraph ABI note (%u bytes, not %zu)", n.n_descsz,
                              sizeof *version);
            memcpy(version, p + off + desc, sizeof *version);
            return 1;
        }
        off += next;
    }
    return 0;
}
