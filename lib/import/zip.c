/* Zip archive reader: see zip.h. Layout from PKWARE's APPNOTE.TXT. */
#include "import/zip.h"

#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include "error.h"

#define SIG_LOCAL   0x04034b50u
#define SIG_CENTRAL 0x02014b50u
#define SIG_EOCD    0x06054b50u
#define SIG_EOCD64  0x06064b50u
#define SIG_LOC64   0x07064b50u

#define EOCD_LEN    22
#define LOC64_LEN   20
#define EOCD64_LEN  56
#define CENTRAL_LEN 46
#define LOCAL_LEN   30


struct tg_zip {
    const uint8_t *buf;
    size_t len;
    bool mapped;
    int n;
    tg_zip_entry *e;
};

static uint16_t rd16(const uint8_t *p) { return (uint16_t)(p[0] | p[1] << 8); }
static uint32_t rd32(const uint8_t *p) { return (uint32_t)rd16(p) | (uint32_t)rd16(p + 2) << 16; }
static uint64_t rd64(const uint8_t *p) { return (uint64_t)rd32(p) | (uint64_t)rd32(p + 4) << 32; }

/* True when [off, off+n) lies inside the archive. */
static bool in_bounds(const tg_zip *z, uint64_t off, uint64_t n)
{
    return off <= z->len && n <= z->len - off;
}

/* The end of central directory record: the last signature within the final
 * 64 KiB + 22 bytes (the record ends with a comment of at most 64 KiB). */
static int64_t find_eocd(const tg_zip *z)
{
    if (z->len < EOCD_LEN)
        return -1;
    size_t lo = z->len > EOCD_LEN + 0xffff ? z->len - EOCD_LEN - 0xffff : 0;
    for (size_t i = z->len - EOCD_LEN + 1; i-- > lo;)
        if (rd32(z->buf + i) == SIG_EOCD && i + EOCD_LEN + rd16(z->buf + i + 20) == z->len)
            return (int64_t)i;
    return -1;
}

/* Values the ZIP64 extra field (id 1) replaces: only those saturated in the
 * 32-bit fields appear, in this order. */
static int read_zip64_extra(const uint8_t *ex, size_t exlen, uint64_t *usize, uint64_t *csize,
                            uint64_t *off, const char *name)
{
    bool need_u = *usize == 0xffffffffu, need_c = *csize == 0xffffffffu,
         need_o = *off == 0xffffffffu;
    if (!need_u && !need_c && !need_o)
        return 0;
    for (size_t i = 0; i + 4 <= exlen;) {
        uint16_t id = rd16(ex + i), sz = rd16(ex + i + 2);
        if (i + 4 + sz > exlen)
            break;
        if (id == 1) {
            const uint8_t *p = ex + i + 4, *end = p + sz;
            uint64_t *want[3] = {need_u ? usize : NULL, need_c ? csize : NULL, need_o ? off : NULL};
            for (int k = 0; k < 3; k++) {
                if (!want[k])
                    continue;
                if (end - p < 8)
                    return tg_err("zip entry '%s': ZIP64 extra field too short", name);
                *want[k] = rd64(p);
                p += 8;
            }
            return 0;
        }
        i += 4 + (size_t)sz;
    }
    return tg_err("zip entry '%s': sizes need a ZIP64 extra field, none found", name);
}

/* Locate the central directory, preferring the ZIP64 record when present. */
static int find_central(const tg_zip *z, uint64_t *cd_off, uint64_t *cd_size, uint64_t *count)
{
    int64_t eocd = find_eocd(z);
    if (eocd < 0)
        return tg_err("not a zip archive or truncated (no end of central directory record)");
    const uint8_t *p = z->buf + eocd;
    if (rd16(p + 4) != 0 || rd16(p + 6) != 0)
        return tg_err("multi-disk zip archives are not supported");
    *count = rd16(p + 10);
    *cd_size = rd32(p + 12);
    *cd_off = rd32(p + 16);
    if (eocd >= LOC64_LEN && rd32(z->buf + eocd - LOC64_LEN) == SIG_LOC64) {
        uint64_t rec = rd64(z->buf + eocd - LOC64_LEN + 8);
        if (!in_bounds(z, rec, EOCD64_LEN) || rd32(z->buf + rec) != SIG_EOCD64)
            return tg_err("truncated or corrupt zip archive (bad ZIP64 end record)");
        const uint8_t *q = z->buf + rec;
        *count = rd64(q + 32);
        *cd_size = rd64(q + 40);
        *cd_off = rd64(q + 48);
    } else if (*count == 0xffff || *cd_size == 0xffffffffu || *cd_off == 0xffffffffu) {
        return tg_err("truncated or corrupt zip archive (ZIP64 locator missing)");
    }
    if (!in_bounds(z, *cd_off, *cd_size))
        return tg_err("truncated zip archive (central directory past the end of the file)");
    /* Each entry takes at least CENTRAL_LEN bytes: bounds the allocation. */
    if (*count > *cd_size / CENTRAL_LEN)
        return tg_err("corrupt zip archive (%llu entries cannot fit the central directory)",
                      (unsigned long long)*count);
    return 0;
}

/* Check the local header of an entry and resolve where its data starts. */
static int resolve_local(const tg_zip *z, tg_zip_entry *e, uint64_t lho)
{
    if (!in_bounds(z, lho, LOCAL_LEN) || rd32(z->buf + lho) != SIG_LOCAL)
        return tg_err("zip entry '%s': bad local header (truncated or corrupt archive)", e->name);
    const uint8_t *p = z->buf + lho;
    uint16_t nlen = rd16(p + 26), xlen = rd16(p + 28);
    size_t clen = strlen(e->name);
    if (nlen != clen || !in_bounds(z, lho + LOCAL_LEN, nlen) ||
        memcmp(p + LOCAL_LEN, e->name, clen) != 0)
        return tg_err("zip entry '%s': local header names another file (corrupt archive)",
                      e->name);
    e->data_off = lho + LOCAL_LEN + nlen + xlen;
    if (!in_bounds(z, e->data_off, e->csize))
        return tg_err("zip entry '%s': data past the end of the file (truncated archive)",
                      e->name);
    return 0;
}

/* A deflated entry's claimed size against the limits (zip.h), before anything
 * is allocated or inflated: a zip bomb is refused in microseconds. */
static int check_inflated_size(const tg_zip_entry *e)
{
    if (e->usize > TG_ZIP_MAX_INFLATED)
        return tg_err("zip entry '%s' inflates to %llu bytes, more than the limit of %llu "
                      "for a compressed entry (a zip bomb?)", e->name,
                      (unsigned long long)e->usize, (unsigned long long)TG_ZIP_MAX_INFLATED);
    if (e->usize > TG_ZIP_RATIO_FREE && e->usize / TG_ZIP_MAX_RATIO > e->csize)
        return tg_err("zip entry '%s' inflates %llu bytes to %llu, more than %d:1 (a zip "
                      "bomb?)", e->name, (unsigned long long)e->csize,
                      (unsigned long long)e->usize, TG_ZIP_MAX_RATIO);
    return 0;
}

static int read_central(tg_zip *z, uint64_t cd_off, uint64_t cd_size, uint64_t count)
{
    z->e = calloc(count ? count : 1, sizeof *z->e);
    if (!z->e)
        return tg_err("out of memory");
    uint64_t pos = cd_off, end = cd_off + cd_size;
    for (uint64_t i = 0; i < count; i++) {
        if (pos + CENTRAL_LEN > end || rd32(z->buf + pos) != SIG_CENTRAL)
            return tg_err("corrupt zip archive (bad central directory entry %llu)",
                          (unsigned long long)i);
        const uint8_t *p = z->buf + pos;
        uint16_t flags = rd16(p + 8), nlen = rd16(p + 28), xlen = rd16(p + 30),
                 clen = rd16(p + 32);
        if (pos + CENTRAL_LEN + nlen + xlen + clen > end)
            return tg_err("corrupt zip archive (central directory entry %llu overruns it)",
                          (unsigned long long)i);
        tg_zip_entry *e = &z->e[z->n];
        e->name = malloc((size_t)nlen + 1);
        if (!e->name)
            return tg_err("out of memory");
        memcpy(e->name, p + CENTRAL_LEN, nlen);
        e->name[nlen] = 0;
        z->n++;
        /* names end up in messages: no control characters */
        for (uint16_t k = 0; k < nlen; k++)
            if ((uint8_t)e->name[k] < 0x20 || e->name[k] == 0x7f)
                return tg_err("corrupt zip archive (entry name with a control character)");
        if (flags & 1)
            return tg_err("zip entry '%s' is encrypted", e->name);
        e->method = rd16(p + 10);
        if (e->method != 0 && e->method != 8)
            return tg_err("zip entry '%s': compression method %d not supported", e->name,
                          e->method);
        e->crc = rd32(p + 16);
        e->csize = rd32(p + 20);
        e->usize = rd32(p + 24);
        uint64_t lho = rd32(p + 42);
        if (read_zip64_extra(p + CENTRAL_LEN + nlen, xlen, &e->usize, &e->csize, &lho,
                             e->name) < 0)
            return -1;
        if (e->method == 0 && e->csize != e->usize)
            return tg_err("zip entry '%s': stored with different sizes", e->name);
        if (e->method == 8 && check_inflated_size(e) < 0)
            return -1;
        if (resolve_local(z, e, lho) < 0)
            return -1;
        pos += CENTRAL_LEN + (uint64_t)nlen + xlen + clen;
    }
    return 0;
}

static tg_zip *open_buf(const uint8_t *buf, size_t len, bool mapped)
{
    tg_zip *z = calloc(1, sizeof *z);
    if (!z) {
        if (mapped)
            munmap((void *)buf, len);
        tg_err("out of memory");
        return NULL;
    }
    z->buf = buf;
    z->len = len;
    z->mapped = mapped;
    uint64_t cd_off = 0, cd_size = 0, count = 0;
    if (find_central(z, &cd_off, &cd_size, &count) < 0 ||
        read_central(z, cd_off, cd_size, count) < 0) {
        tg_zip_close(z);
        return NULL;
    }
    return z;
}

tg_zip *tg_zip_open_mem(const void *buf, size_t len)
{
    return open_buf(buf, len, false);
}

tg_zip *tg_zip_open(const char *path)
{
    int fd = open(path, O_RDONLY);
    if (fd < 0) {
        tg_err("cannot open: %m");
        return NULL;
    }
    struct stat st;
    if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
        close(fd);
        tg_err("not a regular file (a zip archive must be seekable)");
        return NULL;
    }
    if (st.st_size < EOCD_LEN) {
        close(fd);
        tg_err("not a zip archive (%lld bytes)", (long long)st.st_size);
        return NULL;
    }
    void *m = mmap(NULL, (size_t)st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    close(fd);
    if (m == MAP_FAILED) {
        tg_err("cannot map: %m");
        return NULL;
    }
    return open_buf(m, (size_t)st.st_size, true);
}

void tg_zip_close(tg_zip *z)
{
    if (!z)
        return;
    for (int i = 0; i < z->n; i++)
        free(z->e[i].name);
    free(z->e);
    if (z->mapped)
        munmap((void *)z->buf, z->len);
    free(z);
}

int tg_zip_count(const tg_zip *z) { return z->n; }

const tg_zip_entry *tg_zip_entry_at(const tg_zip *z, int i)
{
    return i >= 0 && i < z->n ? &z->e[i] : NULL;
}

int tg_zip_find(const tg_zip *z, const char *name)
{
    for (int i = 0; i < z->n; i++)
        if (strcmp(z->e[i].name, name) == 0)
            return i;
    return -1;
}

/* Raw inflate of csize bytes into exactly usize bytes; zlib's counters are
 * 32-bit, so feed it in chunks. */
static int inflate_entry(const tg_zip *z, const tg_zip_entry *e, uint8_t *out)
{
    z_stream s;
    memset(&s, 0, sizeof s);
    if (inflateInit2(&s, -MAX_WBITS) != Z_OK)
        return tg_err("zlib: cannot initialize");
    const uint8_t *in = z->buf + e->data_off;
    uint64_t in_left = e->csize, out_left = e->usize;
    s.next_out = out;      /* zlib refuses a NULL output even for empty data */
    int rc;
    do {
        if (s.avail_in == 0 && in_left) {
            s.next_in = (Bytef *)in;
            s.avail_in = in_left > 1u << 30 ? 1u << 30 : (uInt)in_left;
            in += s.avail_in;
            in_left -= s.avail_in;
        }
        if (s.avail_out == 0 && out_left) {
            s.next_out = out;
            s.avail_out = out_left > 1u << 30 ? 1u << 30 : (uInt)out_left;
            out += s.avail_out;
            out_left -= s.avail_out;
        }
        rc = inflate(&s, Z_NO_FLUSH);
        /* Z_BUF_ERROR: no progress; fine only while another chunk remains. */
    } while (rc == Z_OK || (rc == Z_BUF_ERROR && ((s.avail_in == 0 && in_left) ||
                                                   (s.avail_out == 0 && out_left))));
    bool whole = rc == Z_STREAM_END && s.avail_out == 0 && out_left == 0;
    inflateEnd(&s);
    if (!whole)
        return tg_err("zip entry '%s': corrupt deflate data", e->name);
    return 0;
}

void *tg_zip_read(const tg_zip *z, int i, size_t *len)
{
    const tg_zip_entry *e = tg_zip_entry_at(z, i);
    if (!e) {
        tg_err("zip: no entry %d", i);
        return NULL;
    }
    if (e->usize >= SIZE_MAX) {
        tg_err("zip entry '%s': too large", e->name);
        return NULL;
    }
    uint8_t *out = malloc((size_t)e->usize + 1);
    if (!out) {
        tg_err("zip entry '%s': out of memory (%llu bytes)", e->name,
               (unsigned long long)e->usize);
        return NULL;
    }
    if (e->method == 0)
        memcpy(out, z->buf + e->data_off, (size_t)e->usize);
    else if (inflate_entry(z, e, out) < 0) {
        free(out);
        return NULL;
    }
    /* crc32 takes a uInt length: checksum in chunks. */
    uLong crc = crc32(0L, Z_NULL, 0);
    for (uint64_t off = 0; off < e->usize;) {
        uInt n = e->usize - off > 1u << 30 ? 1u << 30 : (uInt)(e->usize - off);
        crc = crc32(crc, out + off, n);
        off += n;
    }
    if ((uint32_t)crc != e->crc) {
        tg_err("zip entry '%s': CRC mismatch (stored %08x, computed %08x): corrupt archive",
               e->name, e->crc, (uint32_t)crc);
        free(out);
        return NULL;
    }
    out[e->usize] = 0;
    if (len)
        *len = (size_t)e->usize;
    return out;
}
