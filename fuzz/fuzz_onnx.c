/* libFuzzer target for the ONNX reader: protobuf decoding and the op mapping
 * give a valid graph or a one-line error. External data is never read (the
 * folder given does not exist).
 *   make fuzz && ./fuzz/fuzz_onnx -max_total_time=1800 fuzz/corpus/onnx */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "graph.h"
#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    tg_graph *g = tg_import_onnx_mem(data, size, "/nonexistent-fuzz-dir", NULL);
    if (!g) {
        fuzz_refused("fuzz_onnx");
        return 0;
    }
    if (tg_graph_validate(g) < 0) {
        fprintf(stderr, "fuzz_onnx: an imported graph does not validate: %s\n", tg_errmsg());
        abort();
    }
    tg_graph_free(g);
    return 0;
}
