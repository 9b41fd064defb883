/* NumPy .npy read and write (npy.h).
 *
 * The header is a Python dict literal; we parse exactly the subset NumPy writes
 * ({'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }) and refuse the
 * rest with a message saying what was found. */
#include "npy.h"

#include <ctype.h>
#include <errno.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "error.h"
#include "filekind.h"
#include "log.h"
#include "outfile.h"

static const uint8_t MAGIC[6] = {0x93, 'N', 'U', 'M', 'P', 'Y'};
#define HEADER_MAX (1u << 20)   /* NumPy itself refuses headers over ~10 kB */
#define CHUNK (1u << 24)        /* pipe reads grow by this much at most */

/* ---- header parsing ------------------------------------------------------- */

typedef struct {
    const char *p, *end;
} cursor;

static void skip_ws(cursor *c)
{
    while (c->p < c->end && isspace((unsigned char)*c->p))
        c->p++;
}

static bool eat(cursor *c, char ch)
{
    skip_ws(c);
    if (c->p < c->end && *c->p == ch) {
        c->p++;
        return true;
    }
    return false;
}

/* A quoted Python string without escapes, copied into buf. */
static int parse_str(cursor *c, char *buf, size_t n)
{
    skip_ws(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"'))
        return tg_err("bad .npy header: expected a string");
    char q = *c->p++;
    size_t i = 0;
    while (c->p < c->end && *c->p != q) {
        if (i + 1 >= n)
            return tg_err("bad .npy header: string too long");
        buf[i++] = *c->p++;
    }
    if (c->p >= c->end)
        return tg_err("bad .npy header: unterminated string");
    c->p++;
    buf[i] = 0;
    return 0;
}

static int parse_bool(cursor *c, bool *v)
{
    skip_ws(c);
    size_t left = c->end - c->p;
    if (left >= 4 && !memcmp(c->p, "True", 4)) {
        c->p += 4;
        *v = true;
    } else if (left >= 5 && !memcmp(c->p, "False", 5)) {
        c->p += 5;
        *v = false;
    } else {
        return tg_err("bad .npy header: expected True or False");
    }
    return 0;
}

/* "(2, 3)", "(5,)", "()" */
static int parse_shape(cursor *c, int *rank, int64_t *dims)
{
    if (!eat(c, '('))
        return tg_err("bad .npy header: expected a shape tuple");
    *rank = 0;
    for (;;) {
        skip_ws(c);
        if (eat(c, ')'))
            return 0;
        if (c->p >= c->end || !isdigit((unsigned char)*c->p))
            return tg_err("bad .npy header: bad shape (expected a non-negative integer)");
        int64_t v = 0;
        while (c->p < c->end && isdigit((unsigned char)*c->p)) {
            int d = *c->p++ - '0';
            if (v > (INT64_MAX - d) / 10)
                return tg_err("bad .npy header: shape dimension too large");
            v = v * 10 + d;
        }
        if (*rank >= TG_MAX_RANK)
            return tg_err("rank over %d is not supported", TG_MAX_RANK);
        dims[(*rank)++] = v;
        if (!eat(c, ',')) {
            if (eat(c, ')'))
                return 0;
            return tg_err("bad .npy header: bad shape tuple");
        }
    }
}

/* The raw descrs np.save writes for ml_dtypes arrays: void ('<V2' for bfloat16,
 * '<V1' for most float8s) or, for float8_e5m2 alone, '<f1' (which np.load itself
 * refuses). They do not say which type the bytes are, so they are read only when
 * the caller knows it (trun: the model input's dtype) and it is a type NumPy
 * lacks, of that size. Returns 1 when d is such a descr, 0 when it is not. */
static int raw_descr(const char *d, tg_dtype want, tg_dtype *out)
{
    if (!d[0] || !strchr("<|=", d[0]))
        return 0;
    size_t size;
    if (!strcmp(d + 1, "V1") || !strcmp(d + 1, "f1"))
        size = 1;
    else if (!strcmp(d + 1, "V2"))
        size = 2;
    else
        return 0;
    const char *npy = want ? tg_dtype_npy_descr(want) : NULL;
    bool ok = npy && tg_dtype_npy_is_name(npy) && tg_dtype_size(want) == size &&
              (d[1] == 'V' || want == TG_F8E5M2);
    if (!ok && !want)
        return tg_err("descr '%s' is raw %zu-byte data (np.save's spelling of an ml_dtypes "
                      "array) and names no type; write the ml_dtypes name as the descr "
                      "('bfloat16', 'float8_e4m3fn', 'int4' ...; see trun(1)), or give "
                      "it where a model input's dtype says which type it is", d, size);
    if (!ok)
        return tg_err("descr '%s' is raw %zu-byte data, which is not read as %s", d, size,
                      tg_dtype_name(want));
    *out = want;
    return 1;
}

/* Map a NumPy descr to a dtype. Byte order: '<' and '=' are little-endian here
 * (every host we build for), '|' means "not applicable" and is valid only for
 * one-byte types, '>' is refused. The kind and size are matched against the
 * descrs dtype.c knows, so both "|u1" and "<u1" spellings work. The types NumPy
 * lacks are spelled by their ml_dtypes name, or raw as raw_descr says. */
static int descr_dtype(const char *d, tg_dtype want, tg_dtype *out)
{
    if (d[0] == 'O' || (d[0] && d[1] == 'O'))
        return tg_err("object arrays (descr '%s') are not supported", d);
    if (tg_dtype_npy_is_name(d)) {
        tg_dtype t = tg_dtype_from_npy_descr(d);
        if (!t)
            return tg_err("unknown dtype descr '%s' (known names: 'bfloat16', "
                          "'float8_e4m3fn', 'float8_e5m2')", d);
        *out = t;
        return 0;
    }
    int raw = raw_descr(d, want, out);
    if (raw != 0)
        return raw < 0 ? -1 : 0;
    char order = d[0];
    if (!order || !strchr("<>|=", order))
        return tg_err("unknown dtype descr '%s'", d);
    for (int t = 1; t < TG_DTYPE_COUNT; t++) {
        const char *known = tg_dtype_npy_descr((tg_dtype)t);
        if (!known || tg_dtype_npy_is_name(known) || strcmp(known + 1, d + 1) != 0)
            continue;
        size_t size = tg_dtype_size((tg_dtype)t);
        if (size > 1 && order == '>')
            return tg_err("big-endian data (descr '%s') is not supported; "
                          "convert with a.astype('<%s')", d, d + 1);
        if (size > 1 && order == '|')
            return tg_err("bad descr '%s' (a multi-byte type needs a byte order)", d);
        *out = (tg_dtype)t;
        return 0;
    }
    return tg_err("unsupported dtype descr '%s'", d);
}

static int parse_header(const char *h, size_t n, tg_dtype want, tg_tensor *t)
{
    cursor c = {h, h + n};
    bool have_descr = false, have_order = false, have_shape = false, fortran = false;
    char key[32], descr[32];
    if (!eat(&c, '{'))
        return tg_err("bad .npy header: not a dict");
    while (!eat(&c, '}')) {
        if (parse_str(&c, key, sizeof key) < 0)
            return -1;
        if (!eat(&c, ':'))
            return tg_err("bad .npy header: expected ':' after '%s'", key);
        if (!strcmp(key, "descr")) {
            skip_ws(&c);
            if (c.p < c.end && *c.p == '[')
                return tg_err("structured dtypes are not supported");
            if (parse_str(&c, descr, sizeof descr) < 0)
                return -1;
            have_descr = true;
        } else if (!strcmp(key, "fortran_order")) {
            if (parse_bool(&c, &fortran) < 0)
                return -1;
            have_order = true;
        } else if (!strcmp(key, "shape")) {
            if (parse_shape(&c, &t->rank, t->dims) < 0)
                return -1;
            have_shape = true;
        } else {
            return tg_err("bad .npy header: unexpected key '%s'", key);
        }
        if (!eat(&c, ',')) {
            if (eat(&c, '}'))
                break;
            return tg_err("bad .npy header: expected ',' or '}'");
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return tg_err("bad .npy header: missing %s", !have_descr ? "'descr'"
                      : !have_order ? "'fortran_order'" : "'shape'");
    if (fortran)
        return tg_err("Fortran-order arrays are not supported; "
                      "save with np.ascontiguousarray(a)");
    return descr_dtype(descr, want, &t->dtype);
}

/* ---- reading -------------------------------------------------------------- */

static int read_exact(FILE *f, void *buf, size_t n, const char *what)
{
    size_t got = fread(buf, 1, n, f);
    if (got == n)
        return 0;
    if (ferror(f))
        return tg_err("read error: %s", strerror(errno));
    return tg_err("truncated %s (%zu of %zu bytes)", what, got, n);
}

/* Bytes left in f when it is a regular file, else -1 (a pipe: unknown). */
static int64_t bytes_left(FILE *f)
{
    struct stat st;
    long pos = ftell(f);
    if (pos < 0 || fstat(fileno(f), &st) != 0 || !S_ISREG(st.st_mode))
        return -1;
    return st.st_size > pos ? st.st_size - pos : 0;
}

/* Read the data into t. A regular file's size is checked before allocating; from
 * a pipe we read in bounded chunks, so a header claiming terabytes followed by a
 * few bytes fails on the missing data, not on an enormous allocation. */
static int read_data(FILE *f, tg_tensor *t)
{
    int64_t left = bytes_left(f);
    if (left >= 0 && (uint64_t)left < t->nbytes)
        return tg_err("truncated data (%lld of %zu bytes)", (long long)left, t->nbytes);
    if (left >= 0 || t->nbytes <= CHUNK) {
        if (tg_tensor_alloc(t) < 0)
            return -1;
        return read_exact(f, t->data, t->nbytes, "data");
    }
    uint8_t *tmp = NULL;
    size_t have = 0;
    while (have < t->nbytes) {
        size_t want = t->nbytes - have < CHUNK ? t->nbytes - have : CHUNK;
        uint8_t *p = realloc(tmp, have + want);
        if (!p) {
            free(tmp);
            return tg_err("out of memory");
        }
        tmp = p;
        size_t got = fread(tmp + have, 1, want, f);
        have += got;
        if (got < want) {
            free(tmp);
            if (ferror(f))
                return tg_err("read error: %s", strerror(errno));
            return tg_err("truncated data (%zu of %zu bytes)", have, t->nbytes);
        }
    }
    int rc = tg_tensor_alloc(t);
    if (rc == 0)
        memcpy(t->data, tmp, t->nbytes);
    free(tmp);
    return rc;
}

int tg_npy_read(FILE *f, tg_tensor *out)
{
    return tg_npy_read_as(f, TG_DTYPE_NONE, out);
}

int tg_npy_read_as(FILE *f, tg_dtype want, tg_tensor *out)
{
    memset(out, 0, sizeof *out);
    uint8_t pre[10];
    if (read_exact(f, pre, 10, "header") < 0)
        return -1;
    tg_file_kind k = tg_file_kind_of(pre, sizeof pre);
    if (memcmp(pre, MAGIC, 6) != 0)
        return k == TG_FILE_UNKNOWN ? tg_err("not a .npy file (bad magic)")
                                    : tg_err("%s, not a .npy file", tg_file_kind_name(k));
    int major = pre[6];
    if (major < 1 || major > 3)
        return tg_err("unsupported format version %d.%d", major, pre[7]);
    size_t hlen = pre[8] | (size_t)pre[9] << 8;
    if (major >= 2) {
        uint8_t more[2];
        if (read_exact(f, more, 2, "header") < 0)
            return -1;
        hlen |= (size_t)more[0] << 16 | (size_t)more[1] << 24;
    }
    if (hlen > HEADER_MAX)
        return tg_err("header of %zu bytes is too large", hlen);
    char *h = malloc(hlen + 1);
    if (!h)
        return tg_err("out of memory");
    if (read_exact(f, h, hlen, "header") < 0) {
        free(h);
        return -1;
    }
    h[hlen] = 0;
    tg_tensor t = {0};
    int rc = parse_header(h, hlen, want, &t);
    free(h);
    if (rc < 0)
        return -1;
    int64_t numel = tg_tensor_numel(t.rank, t.dims);
    if (numel < 0)
        return tg_err("shape is too large (element count overflows)");
    size_t es = tg_dtype_size(t.dtype);
    if ((uint64_t)numel > SIZE_MAX / es || (uint64_t)numel * es > (uint64_t)INT64_MAX)
        return tg_err("shape is too large (%lld elements)", (long long)numel);
    t.nbytes = (size_t)numel * es;
    if (read_data(f, &t) < 0) {
        tg_tensor_free(&t);
        return -1;
    }
    *out = t;
    return 0;
}

int tg_npy_load(const char *path, tg_tensor *out)
{
    return tg_npy_load_as(path, TG_DTYPE_NONE, out);
}

int tg_npy_load_as(const char *path, tg_dtype want, tg_tensor *out)
{
    bool std = !strcmp(path, "-");
    FILE *f = std ? stdin : fopen(path, "rb");
    if (!f)
        return tg_err("%s", strerror(errno));
    int rc = tg_npy_read_as(f, want, out);
    if (!std)
        fclose(f);
    if (rc < 0)
        return -1;
    char d[64];
    tg_tensor_describe(out, d, sizeof d);
    TG_LOG(FORMAT, TG_LOG_INFO, "read %s: %s", path, d);
    return 0;
}

/* ---- writing -------------------------------------------------------------- */

int tg_npy_write(FILE *f, const tg_tensor *t)
{
    const char *descr = tg_dtype_npy_descr(t->dtype);
    if (!descr)
        return tg_err("NumPy has no dtype for %s", tg_dtype_name(t->dtype));
    if (t->rank < 0 || t->rank > TG_MAX_RANK)
        return tg_err("bad rank %d", t->rank);
    char shape[TG_MAX_RANK * 24 + 4];
    int n = snprintf(shape, sizeof shape, "(");
    for (int i = 0; i < t->rank; i++)
        n += snprintf(shape + n, sizeof shape - n, "%s%lld", i ? ", " : "",
                      (long long)t->dims[i]);
    snprintf(shape + n, sizeof shape - n, "%s)", t->rank == 1 ? "," : "");
    /* Version 1.0: magic, 2 version bytes, 2 length bytes, then the dict padded
     * with spaces and ended by '\n' so the data starts at a multiple of 64. */
    char h[512];
    int len = snprintf(h, sizeof h, "{'descr': '%s', 'fortran_order': False, 'shape': %s, }",
                       descr, shape);
    int total = (10 + len + 1 + 63) / 64 * 64;
    int hlen = total - 10;
    memset(h + len, ' ', hlen - 1 - len);
    h[hlen - 1] = '\n';
    uint8_t pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0, hlen & 0xff, hlen >> 8};
    if (fwrite(pre, 1, 10, f) != 10 || fwrite(h, 1, hlen, f) != (size_t)hlen
        || (t->nbytes && fwrite(t->data, 1, t->nbytes, f) != t->nbytes))
        return tg_err("write error: %s", strerror(errno));
    return 0;
}

int tg_npy_save(const char *path, const tg_tensor *t)
{
    tg_outfile o;
    if (tg_outfile_open(&o, path, true) < 0)
        return -1;
    bool ok = tg_npy_write(o.f, t) == 0;
    if (tg_outfile_close(&o, ok) < 0 || !ok)
        return -1;
    char d[64];
    tg_tensor_describe(t, d, sizeof d);
    TG_LOG(FORMAT, TG_LOG_INFO, "wrote %s: %s", path, d);
    return 0;
}
