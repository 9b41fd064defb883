/* A read-only zip archive reader (what torch.export.save writes): end of
 * central directory record, ZIP64 locator and record, central directory;
 * entries stored or deflated, with their CRC32 checked on every read.
 * Every offset and size is checked against the archive's length, so a
 * truncated or hostile file gets an error, never a read out of bounds.
 * Entry names are only compared, never used as file system paths.
 *
 * A deflated entry may inflate to at most TG_ZIP_MAX_INFLATED bytes, and,
 * past its first TG_ZIP_RATIO_FREE bytes, to at most TG_ZIP_MAX_RATIO times
 * its compressed size; others are refused when the archive is opened, before
 * anything is inflated (texport(1) documents the limits). torch.export.save
 * stores its entries, so real models meet no limit; a stored entry is bounded
 * by the file itself. Deflate's own limit is about 1032:1: text rarely passes
 * 20:1, so 100:1 over a megabyte is a zip bomb, not a model. */
#ifndef TG_ZIP_H
#define TG_ZIP_H

#include <stddef.h>
#include <stdint.h>

#define TG_ZIP_MAX_INFLATED (1ull << 30)
#define TG_ZIP_RATIO_FREE (1u << 20)
#define TG_ZIP_MAX_RATIO 100

typedef struct {
    char *name;
    int method;             /* 0 stored, 8 deflated */
    uint32_t crc;
    uint64_t csize;         /* bytes in the archive */
    uint64_t usize;         /* bytes once inflated */
    uint64_t data_off;      /* start of the data in the archive */
} tg_zip_entry;

typedef struct tg_zip tg_zip;

/* Open a file (mapped read-only) or a memory buffer (borrowed: it must
 * outlive the archive). NULL with tg_err on anything malformed. */
tg_zip *tg_zip_open(const char *path);
tg_zip *tg_zip_open_mem(const void *buf, size_t len);
void tg_zip_close(tg_zip *z);

int tg_zip_count(const tg_zip *z);
const tg_zip_entry *tg_zip_entry_at(const tg_zip *z, int i);
/* Index of the entry with this exact name, or -1 (no tg_err). */
int tg_zip_find(const tg_zip *z, const char *name);

/* The entry's bytes, inflated and CRC-checked, in a malloc'd buffer with one
 * extra NUL byte after them (so text entries are C strings); *len excludes the
 * NUL. NULL with tg_err. */
void *tg_zip_read(const tg_zip *z, int i, size_t *len);

#endif
