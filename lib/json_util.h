/* cJSON helpers for files that must read back exactly what was written: integers
 * and doubles without rounding, objects without unknown or repeated members.
 * Shared by the TG format (format.c) and the importers. */
#ifndef TG_JSON_UTIL_H
#define TG_JSON_UTIL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <cjson/cJSON.h>

/* Integers with |v| < 2^53 are JSON numbers (exact in a double); larger ones are
 * decimal strings ("9223372036854775807"), as in protobuf's JSON mapping. */
#define TG_JSON_INT_EXACT ((int64_t)1 << 53)

cJSON *tg_json_int(int64_t v);
/* Doubles: the shortest "%.*g" text that reads back to the same bits; NaN and
 * infinities as the strings "nan", "inf", "-inf". Independent of the locale. */
cJSON *tg_json_float(double v);

/* Read an integer written by tg_json_int (a number with an integral value and
 * |v| < 2^53, or a string holding a decimal int64). -1 with tg_err(reason). */
int tg_json_get_int(const cJSON *j, int64_t *v);
/* Read a double written by tg_json_float (a finite number, or "nan", "inf",
 * "-inf"). -1 with tg_err(reason). */
int tg_json_get_float(const cJSON *j, double *v);

/* Match the members of object obj against the NULL-terminated list names:
 * out[i] is the member called names[i], or NULL when absent. -1 with tg_err
 * ("WHAT: ...") when obj is not an object or has an unknown or repeated member. */
int tg_json_fields(const cJSON *obj, const char *const *names, const cJSON **out,
                   const char *what);
/* -1 with tg_err("WHAT: member 'k' appears twice") if any key repeats
 * (O(n log n), for objects with many members). */
int tg_json_unique_keys(const cJSON *obj, const char *what);

/* s made fit for a one-line message: control characters become '?', and text
 * past 64 bytes becomes "...". Thread-local storage, valid for the next 3 calls. */
const char *tg_json_shown(const char *s);

/* Whether text[0..n) is exactly one JSON value (RFC 8259) with optional
 * whitespace around it, strings free of U+0000 and nesting at most 512 deep.
 * cJSON alone is laxer (leading zeros, raw control characters in strings,
 * "\u0000" silently cutting a string short). When not, *bad (if not NULL) is
 * the offset of the first byte that is wrong. */
bool tg_json_syntax_ok(const char *text, size_t n, size_t *bad);

/* Whether s[0..n) is well-formed UTF-8 (no overlongs, surrogates or code points
 * above U+10FFFF). When not, *bad (if not NULL) is the offset of the first bad byte. */
bool tg_utf8_valid(const char *s, size_t n, size_t *bad);

#endif
