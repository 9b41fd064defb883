/* A libFuzzer custom mutator for fuzz_pt2: most mutations change the bytes of
 * one entry inside the archive (a JSON one three times in four) and write the
 * archive again, stored, with its CRCs right, so the reader gets past the zip
 * layer and the JSON and op mapping get fuzzed; the rest mutate the raw bytes,
 * which fuzzes the zip reader itself. Linked into the libFuzzer build only. */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "error.h"
#include "import/zip.h"

size_t LLVMFuzzerMutate(uint8_t *data, size_t size, size_t max_size);

typedef struct {
    const char *name;
    uint8_t *data;
    size_t len;
} entry;

typedef struct {
    uint8_t *p;
    size_t n, cap;
    bool full;
} out;

static void put(out *o, const void *p, size_t n)
{
    if (o->full || o->cap - o->n < n) {
        o->full = true;
        return;
    }
    memcpy(o->p + o->n, p, n);
    o->n += n;
}

static void le(out *o, uint64_t v, int bytes)
{
    uint8_t b[8];
    for (int i = 0; i < bytes; i++)
        b[i] = (uint8_t)(v >> (8 * i));
    put(o, b, (size_t)bytes);
}

/* Local header, data, central directory, end record: version 2.0, stored. */
static size_t write_zip(const entry *e, int n, uint8_t *buf, size_t cap)
{
    out o = {buf, 0, cap, false};
    uint32_t *off = malloc((size_t)n * sizeof *off), *crc = malloc((size_t)n * sizeof *crc);
    for (int i = 0; off && crc && i < n; i++) {
        size_t nl = strlen(e[i].name);
        off[i] = (uint32_t)o.n;
        crc[i] = (uint32_t)crc32(0L, e[i].data, (uInt)e[i].len);
        le(&o, 0x04034b50, 4), le(&o, 20, 2), le(&o, 0, 2), le(&o, 0, 2), le(&o, 0, 4);
        le(&o, crc[i], 4), le(&o, e[i].len, 4), le(&o, e[i].len, 4), le(&o, nl, 2), le(&o, 0, 2);
        put(&o, e[i].name, nl);
        put(&o, e[i].data, e[i].len);
    }
    size_t cd = o.n;
    for (int i = 0; off && crc && i < n; i++) {
        size_t nl = strlen(e[i].name);
        le(&o, 0x02014b50, 4), le(&o, 20, 2), le(&o, 20, 2), le(&o, 0, 2), le(&o, 0, 2);
        le(&o, 0, 4), le(&o, crc[i], 4), le(&o, e[i].len, 4), le(&o, e[i].len, 4);
        le(&o, nl, 2), le(&o, 0, 2), le(&o, 0, 2), le(&o, 0, 2), le(&o, 0, 2), le(&o, 0, 4);
        le(&o, off[i], 4);
        put(&o, e[i].name, nl);
    }
    size_t cd_len = o.n - cd;
    le(&o, 0x06054b50, 4), le(&o, 0, 2), le(&o, 0, 2), le(&o, n, 2), le(&o, n, 2);
    le(&o, cd_len, 4), le(&o, cd, 4), le(&o, 0, 2);
    bool ok = off && crc && !o.full;
    free(off);
    free(crc);
    return ok ? o.n : 0;
}

static bool is_json(const char *name)
{
    size_t n = strlen(name);
    return n >= 5 && !strcmp(name + n - 5, ".json");
}

/* Entry to mutate: a JSON one (when there is one) three times in four. */
static int pick(const entry *e, int n, unsigned seed)
{
    int njson = 0;
    for (int i = 0; i < n; i++)
        njson += is_json(e[i].name);
    if (!njson || seed % 4 == 3)
        return (int)((seed / 4) % (unsigned)n);
    int k = (int)((seed / 4) % (unsigned)njson);
    for (int i = 0; i < n; i++)
        if (is_json(e[i].name) && k-- == 0)
            return i;
    return 0;
}

/* 0 when data is not an archive whose entries all read. */
static size_t mutate_entry(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    tg_zip *z = tg_zip_open_mem(data, size);
    int n = z ? tg_zip_count(z) : 0;
    entry *e = n > 0 ? calloc((size_t)n, sizeof *e) : NULL;
    bool ok = e != NULL;
    for (int i = 0; ok && i < n; i++) {
        e[i].name = tg_zip_entry_at(z, i)->name;
        ok = (e[i].data = tg_zip_read(z, i, &e[i].len)) != NULL;
    }
    size_t len = 0;
    uint8_t *buf = ok ? malloc(max_size) : NULL;
    if (buf) {
        int k = pick(e, n, seed);
        size_t cap = e[k].len + 4096 < max_size ? e[k].len + 4096 : max_size;
        uint8_t *m = malloc(cap);
        if (m && e[k].len <= cap) {
            memcpy(m, e[k].data, e[k].len);
            e[k].len = LLVMFuzzerMutate(m, e[k].len, cap);
            free(e[k].data);
            e[k].data = m;
            m = NULL;
            len = write_zip(e, n, buf, max_size);
            if (len)
                memcpy(data, buf, len);
        }
        free(m);
    }
    for (int i = 0; e && i < n; i++)
        free(e[i].data);
    free(e);
    free(buf);
    tg_zip_close(z);
    tg_err_clear();
    return len;
}

size_t LLVMFuzzerCustomMutator(uint8_t *data, size_t size, size_t max_size, unsigned seed)
{
    size_t n = seed % 8 ? mutate_entry(data, size, max_size, seed / 8) : 0;
    return n ? n : LLVMFuzzerMutate(data, size, max_size);
}
