/* The reader of a compiled model's ABI-version note (modelnote.h) on note
 * segments built here: found, absent, cut short, malformed. */
#include <string.h>
#include <tgraph/model.h>

#include "../../lib/error.h"
#include "../../lib/modelnote.h"
#include "unit.h"

/* A GNU build-id note (4 + 20 bytes) then the tgraph note, 4-aligned. */
static size_t segment(uint8_t *p, uint32_t version, uint32_t descsz)
{
    uint32_t gnu[3] = {4, 20, 3}, tg[3] = {sizeof TGRAPH_NOTE_NAME, descsz,
                                           TGRAPH_NOTE_ABI_VERSION};
    size_t n = 0;
    memcpy(p + n, gnu, sizeof gnu), n += sizeof gnu;
    memcpy(p + n, "GNU", 4), n += 4;
    memset(p + n, 0xab, 20), n += 20;
    memcpy(p + n, tg, sizeof tg), n += sizeof tg;
    memcpy(p + n, TGRAPH_NOTE_NAME "\0", 8), n += 8;
    memcpy(p + n, &version, 4), n += (descsz + 3) / 4 * 4;
    return n;
}

int main(void)
{
    uint8_t p[128] = {0};
    uint32_t v = 0;
    size_t n = segment(p, 7, 4);
    CHECK(tg_model_note_version(p, n, 4, &v) == 1 && v == 7);
    /* only the build-id: no version, not an error */
    CHECK(tg_model_note_version(p, 36, 4, &v) == 0);
    CHECK(tg_model_note_version(p, 0, 4, &v) == 0);
    /* cut inside the tgraph note's header, name and description */
    for (size_t cut = 37; cut < n; cut++) {
        CHECK(tg_model_note_version(p, cut, 4, &v) == -1);
        CHECK(strstr(tg_errmsg(), "runs past its segment") != NULL);
    }
    /* a description that claims more bytes than the segment holds */
    uint32_t huge = 0xfffffff0u;
    memcpy(p + 40, &huge, 4);
    CHECK(tg_model_note_version(p, n, 4, &v) == -1);
    CHECK(strcmp(tg_errmsg(), "corrupt ELF file (a note of 7 + 4294967280 bytes runs past "
                              "its segment)") == 0);
    /* a tgraph note whose description is not 4 bytes */
    n = segment(p, 1, 8);
    CHECK(tg_model_note_version(p, n, 4, &v) == -1);
    CHECK(strcmp(tg_errmsg(), "corrupt tgraph ABI note (8 bytes, not 4)") == 0);
    /* 8-aligned entries (as .note.gnu.property): header and "GNU\0" end at
     * 16, the 20-byte build-id pads to 40; the tgraph name ends at 19, its
     * description starts at 24 */
    uint32_t gnu[3] = {4, 20, 3}, tg[3] = {7, 4, TGRAPH_NOTE_ABI_VERSION}, nine = 9;
    memset(p, 0, sizeof p);
    memcpy(p, gnu, 12), memcpy(p + 12, "GNU", 4);
    memcpy(p + 40, tg, 12), memcpy(p + 52, TGRAPH_NOTE_NAME, 7), memcpy(p + 64, &nine, 4);
    CHECK(tg_model_note_version(p, 72, 8, &v) == 1 && v == 9);
    CHECK(tg_model_note_version(p, 71, 8, &v) == -1);
    return unit_report();
}
