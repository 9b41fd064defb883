/* libFuzzer target for the compiled-model file check (modelcheck.h) that trun
 * and users run before dlopen: any bytes give 0 or a one-line error, never a
 * crash, a read out of bounds or undefined behaviour. A file it accepts is not
 * loaded here (that would run its code).
 *   make fuzz && ./fuzz/fuzz_model_check -max_total_time=1800 fuzz/corpus/model_check
 * The corpus seed abi_stub.so is a 4.8 KB shared object defining the ABI's
 * functions as stubs (cc -shared -fPIC -nostdlib -Os -s -Wl,-z,noseparate-code
 * -Wl,--build-id=none), abi_stub_cut.so its first 1000 bytes;
 * abi_stub_note.so and abi_stub_note_v2.so the same with the ABI-version note
 * of <tgraph/model.h> (version 1 and 2) in a PT_NOTE segment. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "modelcheck.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (tg_model_check_mem(data, size) == 0)
        return 0;
    if (strchr(tg_errmsg(), '\n')) {
        fprintf(stderr, "fuzz_model_check: a message of more than one line\n");
        abort();
    }
    fuzz_refused("fuzz_model_check");
    return 0;
}
