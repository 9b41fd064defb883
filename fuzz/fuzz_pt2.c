/* libFuzzer target for the .pt2 reader: the zip archive, its JSON entries and
 * the op mapping give a valid graph or a one-line error. zip_mutator.c keeps
 * most mutated inputs well-formed archives, so the JSON inside gets fuzzed.
 *   make fuzz && ./fuzz/fuzz_pt2 -max_total_time=1800 -dict=fuzz/pt2.dict fuzz/corpus/pt2 */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "graph.h"
#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    tg_graph *g = tg_import_pt2_mem(data, size, NULL);
    if (!g) {
        fuzz_refused("fuzz_pt2");
        return 0;
    }
    if (tg_graph_validate(g) < 0) {
        fprintf(stderr, "fuzz_pt2: an imported graph does not validate: %s\n", tg_errmsg());
        abort();
    }
    tg_graph_free(g);
    return 0;
}
