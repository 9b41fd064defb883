/* The zip reader on archives built here byte by byte: stored and deflated
 * entries, data descriptors (flag bit 3), local extra fields, ZIP64 end
 * records, and damaged archives (truncated, bad CRC, bad offsets). */
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

#include "error.h"
#include "import/zip.h"
#include "unit.h"

typedef struct {
    uint8_t b[1 << 16];
    size_t n;
} buf;

static void put(buf *z, const void *p, size_t n) { memcpy(z->b + z->n, p, n); z->n += n; }
static void u16(buf *z, unsigned v) { uint8_t x[2] = {v, v >> 8}; put(z, x, 2); }
static void u32(buf *z, uint32_t v) { u16(z, v & 0xffff); u16(z, v >> 16); }
static void u64(buf *z, uint64_t v) { u32(z, (uint32_t)v); u32(z, (uint32_t)(v >> 32)); }

typedef struct {
    const char *name;
    const char *data;
    int method;             /* 0 or 8 */
    bool descriptor;        /* flag bit 3: zero sizes in the local header */
    int pad;                /* bytes of local extra field */
} entry;

typedef struct {
    bool zip64;             /* ZIP64 end record + locator, saturated 32-bit fields */
    bool bad_crc;           /* central directory CRC off by one for entry 0 */
} opts;

static size_t deflate_raw(const char *src, uint8_t *out, size_t cap)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    deflateInit2(&s, 9, Z_DEFLATED, -MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    s.next_in = (Bytef *)src;
    s.avail_in = (uInt)strlen(src);
    s.next_out = out;
    s.avail_out = (uInt)cap;
    deflate(&s, Z_FINISH);
    size_t n = s.total_out;
    deflateEnd(&s);
    return n;
}

static void build(buf *z, const entry *e, int n, opts o)
{
    uint32_t off[8], crc[8], csize[8];
    z->n = 0;
    for (int i = 0; i < n; i++) {
        uint8_t data[4096];
        size_t len = strlen(e[i].data);
        csize[i] = e[i].method ? deflate_raw(e[i].data, data, sizeof data) : len;
        if (!e[i].method)
            memcpy(data, e[i].data, len);
        crc[i] = (uint32_t)crc32(0, (const Bytef *)e[i].data, (uInt)len);
        off[i] = (uint32_t)z->n;
        bool d = e[i].descriptor;
        u32(z, 0x04034b50); u16(z, 20); u16(z, d ? 8 : 0); u16(z, e[i].method);
        u16(z, 0); u16(z, 0);
        u32(z, d ? 0 : crc[i]); u32(z, d ? 0 : csize[i]); u32(z, d ? 0 : (uint32_t)len);
        u16(z, strlen(e[i].name)); u16(z, e[i].pad);
        put(z, e[i].name, strlen(e[i].name));
        for (int k = 0; k < e[i].pad; k++)
            put(z, "Z", 1);
        put(z, data, csize[i]);
        if (d) {
            u32(z, 0x08074b50); u32(z, crc[i]); u32(z, csize[i]); u32(z, (uint32_t)len);
        }
    }
    size_t cd = z->n;
    for (int i = 0; i < n; i++) {
        size_t len = strlen(e[i].data);
        u32(z, 0x02014b50); u16(z, 20); u16(z, 20); u16(z, e[i].descriptor ? 8 : 0);
        u16(z, e[i].method); u16(z, 0); u16(z, 0);
        u32(z, crc[i] + (o.bad_crc && i == 0));
        u32(z, o.zip64 ? 0xffffffffu : csize[i]);
        u32(z, o.zip64 ? 0xffffffffu : (uint32_t)len);
        u16(z, strlen(e[i].name)); u16(z, o.zip64 ? 28 : 0); u16(z, 0);
        u16(z, 0); u16(z, 0); u32(z, 0);
        u32(z, o.zip64 ? 0xffffffffu : off[i]);
        put(z, e[i].name, strlen(e[i].name));
        if (o.zip64) {
            u16(z, 1); u16(z, 24); u64(z, len); u64(z, csize[i]); u64(z, off[i]);
        }
    }
    size_t cdsize = z->n - cd;
    if (o.zip64) {
        size_t rec = z->n;
        u32(z, 0x06064b50); u64(z, 44); u16(z, 45); u16(z, 45); u32(z, 0); u32(z, 0);
        u64(z, n); u64(z, n); u64(z, cdsize); u64(z, cd);
        u32(z, 0x07064b50); u32(z, 0); u64(z, rec); u32(z, 1);
    }
    u32(z, 0x06054b50); u16(z, 0); u16(z, 0);
    u16(z, o.zip64 ? 0xffff : n); u16(z, o.zip64 ? 0xffff : n);
    u32(z, o.zip64 ? 0xffffffffu : (uint32_t)cdsize);
    u32(z, o.zip64 ? 0xffffffffu : (uint32_t)cd);
    u16(z, 0);
}

static const entry ENTRIES[] = {
    {"m/archive_format", "pt2", 0, false, 0},
    {"m/models/model.json", "{\"graph_module\": {\"graph\": {}}, \"x\": [1, 2, 3, 4, 5, 6]}", 8, false, 0},
    {"m/data/weights/weight_0", "0123456789abcdef0123456789abcdef", 0, true, 37},
    {"m/../../etc/passwd", "just a name", 8, true, 5},
};
#define NENT ((int)(sizeof ENTRIES / sizeof *ENTRIES))

/* Every entry reads back exactly. */
static void check_all(const buf *z, const char *what)
{
    tg_zip *a = tg_zip_open_mem(z->b, z->n);
    CHECK(a != NULL);
    if (!a) {
        fprintf(stderr, "%s: %s\n", what, tg_errmsg());
        return;
    }
    CHECK(tg_zip_count(a) == NENT);
    for (int i = 0; i < NENT; i++) {
        int k = tg_zip_find(a, ENTRIES[i].name);
        CHECK(k == i);
        size_t len = 0;
        char *d = tg_zip_read(a, k, &len);
        CHECK(d && len == strlen(ENTRIES[i].data) && !strcmp(d, ENTRIES[i].data));
        CHECK(tg_zip_entry_at(a, k)->method == ENTRIES[i].method);
        free(d);
    }
    CHECK(tg_zip_find(a, "m/missing") == -1);
    CHECK(tg_zip_entry_at(a, NENT) == NULL);
    tg_zip_close(a);
}

static bool open_fails(const uint8_t *b, size_t n, const char *msg)
{
    tg_zip *a = tg_zip_open_mem(b, n);
    bool ok = !a && strstr(tg_errmsg(), msg);
    if (!ok)
        fprintf(stderr, "expected '%s', got '%s'\n", msg, a ? "(opened)" : tg_errmsg());
    tg_zip_close(a);
    return ok;
}

int main(void)
{
    static buf z;

    build(&z, ENTRIES, NENT, (opts){0});
    check_all(&z, "plain");
    build(&z, ENTRIES, NENT, (opts){.zip64 = true});
    check_all(&z, "zip64");

    /* a comment after the end record is allowed */
    build(&z, ENTRIES, NENT, (opts){0});
    z.b[z.n - 2] = 5;
    put(&z, "hello", 5);
    check_all(&z, "comment");

    /* damaged archives */
    build(&z, ENTRIES, NENT, (opts){.bad_crc = true});
    tg_zip *a = tg_zip_open_mem(z.b, z.n);
    CHECK(a != NULL);
    CHECK(a && tg_zip_read(a, 0, NULL) == NULL && strstr(tg_errmsg(), "CRC mismatch"));
    tg_zip_close(a);

    build(&z, ENTRIES, NENT, (opts){0});
    for (size_t cut = 0; cut < z.n; cut += 7)     /* every truncation is refused */
        CHECK(tg_zip_open_mem(z.b, cut) == NULL);
    CHECK(open_fails(z.b, z.n - 1, "not a zip archive or truncated"));
    CHECK(open_fails((const uint8_t *)"PK\5\6", 4, "not a zip archive"));

    /* central directory offset past the end */
    buf bad = z;
    memcpy(bad.b + bad.n - 6, "\xff\xff\x00\x00", 4);
    CHECK(open_fails(bad.b, bad.n, "central directory past the end"));

    /* an entry count the directory cannot hold */
    bad = z;
    memcpy(bad.b + bad.n - 12, "\xff\x00", 2);
    CHECK(open_fails(bad.b, bad.n, "entries cannot fit"));

    /* a local header offset pointing at garbage */
    bad = z;
    size_t cd = bad.b[bad.n - 6] | bad.b[bad.n - 5] << 8;
    bad.b[cd + 42] = 3;
    CHECK(open_fails(bad.b, bad.n, "bad local header"));

    /* deflate data cut short inside a deflated entry */
    build(&z, ENTRIES, NENT, (opts){0});
    a = tg_zip_open_mem(z.b, z.n);
    if (a) {
        const tg_zip_entry *e = tg_zip_entry_at(a, 1);
        z.b[e->data_off] ^= 0xff;
        CHECK(tg_zip_read(a, 1, NULL) == NULL);
        tg_zip_close(a);
    }

    /* a file that does not exist */
    CHECK(tg_zip_open("/nonexistent/x.pt2") == NULL && strstr(tg_errmsg(), "cannot open"));
    return unit_report();
}
