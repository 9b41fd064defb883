/* libFuzzer target for the .pt2 reader: the zip archive, its JSON entries and
 * the op mapping give a valid graph or an error. zip_mutator.c keeps
 * most mutated inputs well-formed archives, so the JSON inside gets fuzzed.
 *   make fuzz && ./fuzz/fuzz_pt2 -max_total_time=1800 -dict=fuzz/pt2.dict fuzz/corpus/pt2 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    fuzz_imported("fuzz_pt2", tg_import_pt2_mem(data, size, NULL));
    return 0;
}
