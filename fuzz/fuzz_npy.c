/* libFuzzer target for the .npy reader: any bytes give a tensor or a one-line
 * error; a tensor that was read writes and reads back to the same bytes.
 *   make fuzz && ./fuzz/fuzz_npy -max_total_time=1800 fuzz/corpus/npy */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fuzz.h"
#include "npy.h"

static char *write_mem(const tg_tensor *t, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        abort();
    int rc = tg_npy_write(f, t);
    fclose(f);
    if (rc < 0) {
        fprintf(stderr, "fuzz_npy: a tensor that was read does not write: %s\n", tg_errmsg());
        abort();
    }
    return buf;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    FILE *f = fuzz_stream(data, size);
    tg_tensor t;
    /* The expected dtype, as trun passes a model input's: lets np.save's raw
     * descrs for ml_dtypes arrays through too. From the size, so the corpus
     * files keep their meaning. */
    static const tg_dtype want[4] = {TG_DTYPE_NONE, TG_BF16, TG_F8E4M3, TG_F8E5M2};
    int rc = tg_npy_read_as(f, want[size % 4], &t);
    fclose(f);
    if (rc < 0) {
        fuzz_refused("fuzz_npy");
        return 0;
    }
    size_t n1;
    char *b1 = write_mem(&t, &n1);
    tg_tensor u;
    f = fuzz_stream((const uint8_t *)b1, n1);
    if (tg_npy_read(f, &u) < 0) {
        fprintf(stderr, "fuzz_npy: a written tensor does not read back: %s\n", tg_errmsg());
        abort();
    }
    fclose(f);
    size_t n2;
    char *b2 = write_mem(&u, &n2);
    if (n1 != n2 || memcmp(b1, b2, n1)) {
        fprintf(stderr, "fuzz_npy: write-read-write is not byte-identical\n");
        abort();
    }
    free(b1);
    free(b2);
    tg_tensor_free(&t);
    tg_tensor_free(&u);
    return 0;
}
