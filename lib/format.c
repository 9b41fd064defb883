/* Pieces of the TG format shared by the reader (format_read.c) and the writer
 * (format_write.c): names, dimensions, attribute kinds (format_internal.h). */
#include "format_internal.h"

#include <stdlib.h>
#include <string.h>

#include "error.h"

#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ != __ORDER_LITTLE_ENDIAN__
#error "TG tensor data is little-endian: this host needs byte swapping in format_*.c"
#endif

const char *const tg_fmt_kind_names[3] = {
    [TG_VALUE_NODE] = "node", [TG_VALUE_INPUT] = "input", [TG_VALUE_CONST] = "const",
};

bool tg_fmt_name_ok(const char *s)
{
    if (!s || !*s)
        return false;
    size_t n = strlen(s);
    if (n > TG_FMT_NAME_MAX || !tg_utf8_valid(s, n, NULL))
        return false;
    for (const unsigned char *p = (const unsigned char *)s; *p; p++)
        if (*p < 0x20 || *p == 0x7f)
            return false;
    return true;
}

int tg_fmt_dim_from_json(const cJSON *j, const tg_graph *g, tg_dim *d)
{
    if (cJSON_IsNumber(j)) {
        int64_t v;
        if (tg_json_get_int(j, &v) < 0)
            return -1;
        *d = tg_dim_const(v);
        return 0;
    }
    if (!cJSON_IsString(j))
        return tg_err("a dimension must be an integer or an expression string");
    return tg_dim_parse(j->valuestring, g->sym, g->nsym, d);
}

cJSON *tg_fmt_dim_to_json(tg_dim d, const tg_graph *g)
{
    int64_t v;
    if (tg_dim_is_const(d, &v) && v > -TG_JSON_INT_EXACT && v < TG_JSON_INT_EXACT) {
        cJSON *j = tg_json_int(v);
        if (!j)
            tg_err("out of memory");
        return j;
    }
    int n = tg_dim_format(d, g->sym, NULL, 0);
    char *s = malloc((size_t)n + 1);
    if (!s)
        return tg_err("out of memory"), NULL;
    tg_dim_format(d, g->sym, s, (size_t)n + 1);
    /* Write only what reads back equal (not, e.g., a coefficient of INT64_MIN). */
    tg_dim back;
    cJSON *j = NULL;
    if (tg_dim_parse(s, g->sym, g->nsym, &back) < 0 || !tg_dim_eq(back, d))
        tg_err("dimension %s does not read back exactly", s);
    else if (!(j = cJSON_CreateString(s)))
        tg_err("out of memory");
    free(s);
    return j;
}

const char *const tg_fmt_attr_keys[TG_FMT_ATTR_KINDS + 1] = {
    [TG_ATTR_INT] = "int", [TG_ATTR_FLOAT] = "float", [TG_ATTR_STRING] = "string",
    [TG_ATTR_INTS] = "ints", [TG_ATTR_FLOATS] = "floats", [TG_ATTR_DIMS] = "dims",
    [TG_ATTR_DTYPE] = "dtype", [TG_ATTR_INPUT] = "input", [TG_ATTR_GRAPH] = "graph",
};
