/* Telling files apart by their first bytes (filekind.h). */
#include "filekind.h"

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "format_internal.h"

static const struct {
    const char *name, *hint;
} kinds[] = {
    [TG_FILE_UNKNOWN] = {"a file of unknown kind", "a graph is a TG file (tgraph-format(5))"},
    [TG_FILE_TG] = {"a TG graph", "trun, tcompile, tquant and tlog read it"},
    [TG_FILE_PT2] = {"a PyTorch archive (.pt2)", "run texport first"},
    [TG_FILE_ONNX] = {"an ONNX model", "run texport first"},
    [TG_FILE_SO] = {"a compiled model (.so)", "already compiled; trun runs it"},
    [TG_FILE_NPY] = {"a NumPy array (.npy)", "give the model first, then its inputs"},
    [TG_FILE_GZIP] = {"gzip-compressed data", "gunzip it first"},
    [TG_FILE_TEXT] = {"a text file", "a graph is a binary TG file (tgraph-format(5))"},
};

/* ONNX has no magic: a ModelProto starts with ir_version (field 1, a small
 * varint), then another of its fields (2 to 8) such as producer_name or graph. */
static bool looks_onnx(const uint8_t *p, size_t n)
{
    return n >= 3 && p[0] == 0x08 && p[1] >= 1 && p[1] < 0x80 && (p[2] & 7) <= 2 &&
           p[2] >> 3 >= 2 && p[2] >> 3 <= 8;
}

static bool looks_tg(const uint8_t *p, size_t n)
{
    uint64_t len = 0;
    for (int i = 7; n > 8 && i >= 0; i--)
        len = len << 8 | p[i];
    return n > 8 && len >= 2 && len <= TG_FMT_HEADER_MAX && p[8] == '{';
}

/* Printable ASCII: a few bytes tell nothing (a TG file's length may be
 * printable), so it takes 8 (the TG header length). */
static bool is_text(const uint8_t *p, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if ((p[i] < 0x20 && p[i] != '\t' && p[i] != '\n' && p[i] != '\r') || p[i] >= 0x7f)
            return false;
    return n >= 8;
}

tg_file_kind tg_file_kind_of(const void *head, size_t n)
{
    const uint8_t *p = head;
    if (n >= 4 && !memcmp(p, "PK\3\4", 4))
        return TG_FILE_PT2;
    if (n >= 4 && !memcmp(p, "\177ELF", 4))
        return TG_FILE_SO;
    if (n >= 6 && !memcmp(p, "\223NUMPY", 6))
        return TG_FILE_NPY;
    if (n >= 2 && p[0] == 0x1f && p[1] == 0x8b)
        return TG_FILE_GZIP;
    if (looks_tg(p, n))
        return TG_FILE_TG;
    if (looks_onnx(p, n))
        return TG_FILE_ONNX;
    return is_text(p, n) ? TG_FILE_TEXT : TG_FILE_UNKNOWN;
}

const char *tg_file_kind_name(tg_file_kind k) { return kinds[k].name; }

const char *tg_file_kind_hint(tg_file_kind k) { return kinds[k].hint; }
