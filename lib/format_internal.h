/* Shared by the TG reader and writer (format.c); not installed. */
#ifndef TG_FORMAT_INTERNAL_H
#define TG_FORMAT_INTERNAL_H

#include <stdbool.h>

#include "format.h"
#include "json_util.h"

/* Limits (tgraph-format.5, LIMITS). The header bound is the safetensors reference's. */
#define TG_FMT_HEADER_MAX 100000000u
#define TG_FMT_NAME_MAX 4096

/* "node", "input", "const", indexed by tg_value_kind. */
extern const char *const tg_fmt_kind_names[3];
/* The key of an attribute's one-member object names its kind ("int" ...),
 * indexed by tg_attr_kind; NULL-terminated from index 1 for tg_json_fields. */
#define TG_FMT_ATTR_KINDS (TG_ATTR_GRAPH + 1)
extern const char *const tg_fmt_attr_keys[TG_FMT_ATTR_KINDS + 1];

/* Value, node and tensor names: non-empty UTF-8 without control characters, at
 * most TG_FMT_NAME_MAX bytes. The writer refuses what the reader would reject. */
bool tg_fmt_name_ok(const char *s);
/* A dimension: a JSON number when constant, else its expression as a string. */
int tg_fmt_dim_from_json(const cJSON *j, const tg_graph *g, tg_dim *d);
/* NULL (tg_err) when it would not read back equal. */
cJSON *tg_fmt_dim_to_json(tg_dim d, const tg_graph *g);

#endif
