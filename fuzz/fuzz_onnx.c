/* libFuzzer target for the ONNX reader: protobuf decoding and the op mapping
 * give a valid graph or an error. External data is never read (the
 * folder given does not exist).
 *   make fuzz && ./fuzz/fuzz_onnx -max_total_time=1800 fuzz/corpus/onnx */
#include <stddef.h>
#include <stdint.h>

#include "fuzz.h"
#include "import/import.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    fuzz_imported("fuzz_onnx", tg_import_onnx_mem(data, size, "/nonexistent-fuzz-dir", NULL));
    return 0;
}
