/* libFuzzer target for the TG reader: any bytes give a graph or a one-line
 * error, never a crash, a leak or undefined behaviour. Reading from memory
 * (size known) and from a stream (size unknown) must agree, and a graph the
 * reader accepts must write, read back, and write again to the same bytes.
 *   make fuzz && ./fuzz/fuzz_tg -max_total_time=1800 -dict=fuzz/tg.dict fuzz/corpus/tg */
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "format.h"
#include "fuzz.h"

static uint8_t *write_mem(const tg_graph *g, size_t *len)
{
    char *buf = NULL;
    FILE *f = open_memstream(&buf, len);
    if (!f)
        abort();
    int rc = tg_graph_write(g, f);
    fclose(f);
    if (rc < 0) {
        fprintf(stderr, "fuzz_tg: a graph that was read does not write: %s\n", tg_errmsg());
        abort();
    }
    return (uint8_t *)buf;
}

/* Whether the stream reader accepts the bytes too. */
static bool stream_accepts(const uint8_t *data, size_t size)
{
    if (!size)
        return false;
    FILE *f = fuzz_stream(data, size);
    tg_graph *g = tg_graph_read(f);
    fclose(f);
    tg_graph_free(g);
    return g != NULL;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    bool streamed = stream_accepts(data, size);
    tg_err_clear();
    tg_graph *g = tg_graph_read_mem(data, size);
    if (streamed != (g != NULL)) {
        fprintf(stderr, "fuzz_tg: the stream reader %s what the memory reader %s\n",
                streamed ? "accepts" : "rejects", streamed ? "rejects" : "accepts");
        abort();
    }
    if (!g) {
        if (strchr(tg_errmsg(), '\n')) {
            fprintf(stderr, "fuzz_tg: error message not one line: '%s'\n", tg_errmsg());
            abort();
        }
        fuzz_refused("fuzz_tg");
        return 0;
    }
    size_t n1, n2;
    uint8_t *b1 = write_mem(g, &n1);
    tg_graph *h = tg_graph_read_mem(b1, n1);
    if (!h) {
        fprintf(stderr, "fuzz_tg: a written graph does not read back: %s\n", tg_errmsg());
        abort();
    }
    uint8_t *b2 = write_mem(h, &n2);
    if (n1 != n2 || memcmp(b1, b2, n1)) {
        fprintf(stderr, "fuzz_tg: write-read-write is not byte-identical\n");
        abort();
    }
    free(b1);
    free(b2);
    tg_graph_free(h);
    tg_graph_free(g);
    tg_err_clear();
    return 0;
}
