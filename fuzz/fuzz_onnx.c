/* libFuzzer target for the ONNX reader: protobuf decoding and the op mapping
 * must reject any input cleanly. External data is never read (the folder given
 * does not exist). */
#include <stddef.h>
#include <stdint.h>

#include "graph.h"
#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_graph *g = tg_import_onnx_mem(data, size, "/nonexistent-fuzz-dir", NULL);
    tg_graph_free(g);
    return 0;
}
