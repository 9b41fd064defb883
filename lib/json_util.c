/* Exact numbers and strict objects over cJSON (json_util.h). */
#include "json_util.h"

#include <errno.h>
#include <locale.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* cJSON prints numbers through a double and "%1.15g", which turns 10^15 into
 * "1e+15" and -0.0 into "0": we print the text ourselves and store it raw. */
cJSON *tg_json_int(int64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%lld", (long long)v);
    if (v > -TG_JSON_INT_EXACT && v < TG_JSON_INT_EXACT)
        return cJSON_CreateRaw(buf);
    return cJSON_CreateString(buf);
}

cJSON *tg_json_float(double v)
{
    if (isnan(v))
        return cJSON_CreateString("nan");
    if (isinf(v))
        return cJSON_CreateString(v < 0 ? "-inf" : "inf");
    char buf[40];
    for (int prec = 15; prec <= 17; prec++) {
        snprintf(buf, sizeof buf, "%.*g", prec, v);
        if (strtod(buf, NULL) == v)
            break;
    }
    /* printf and strtod follow LC_NUMERIC; JSON wants '.' */
    const char *dp = localeconv()->decimal_point;
    if (dp && dp[0] && dp[0] != '.' && !dp[1]) {
        char *p = strchr(buf, dp[0]);
        if (p)
            *p = '.';
    }
    return cJSON_CreateRaw(buf);
}

int tg_json_get_int(const cJSON *j, int64_t *v)
{
    if (cJSON_IsNumber(j)) {
        double d = j->valuedouble;
        if (!isfinite(d) || d != trunc(d))
            return tg_err("not an integer");
        if (!(d > -(double)TG_JSON_INT_EXACT && d < (double)TG_JSON_INT_EXACT))
            return tg_err("integer %.17g cannot be exact in a JSON number "
                          "(write it as a decimal string)", d);
        *v = (int64_t)d;
        return 0;
    }
    if (cJSON_IsString(j)) {
        const char *s = j->valuestring;
        const char *d = s + (*s == '-');
        if (*d < '0' || *d > '9')
            return tg_err("\"%s\" is not an integer", tg_json_shown(s));
        char *end;
        errno = 0;
        long long x = strtoll(s, &end, 10);
        if (*end)
            return tg_err("\"%s\" is not an integer", tg_json_shown(s));
        if (errno == ERANGE)
            return tg_err("\"%s\" does not fit in 64 bits", tg_json_shown(s));
        *v = x;
        return 0;
    }
    return tg_err("not an integer");
}

int tg_json_get_float(const cJSON *j, double *v)
{
    if (cJSON_IsNumber(j)) {
        if (!isfinite(j->valuedouble))
            return tg_err("number out of range (write \"inf\" or \"-inf\")");
        *v = j->valuedouble;
        return 0;
    }
    if (cJSON_IsString(j)) {
        const char *s = j->valuestring;
        if (!strcmp(s, "nan"))
            *v = NAN;
        else if (!strcmp(s, "inf"))
            *v = INFINITY;
        else if (!strcmp(s, "-inf"))
            *v = -INFINITY;
        else
            return tg_err("\"%s\" is not a number (strings may only be \"nan\", "
                          "\"inf\", \"-inf\")", tg_json_shown(s));
        return 0;
    }
    return tg_err("not a number");
}

int tg_json_fields(const cJSON *obj, const char *const *names, const cJSON **out,
                   const char *what)
{
    if (!cJSON_IsObject(obj))
        return tg_err("%s: not a JSON object", what);
    int n = 0;
    while (names[n])
        out[n++] = NULL;
    for (const cJSON *c = obj->child; c; c = c->next) {
        int i = 0;
        while (i < n && strcmp(names[i], c->string))
            i++;
        if (i == n)
            return tg_err("%s: unknown member '%s'", what, tg_json_shown(c->string));
        if (out[i])
            return tg_err("%s: member '%s' appears twice", what, tg_json_shown(c->string));
        out[i] = c;
    }
    return 0;
}

const char *tg_json_shown(const char *s)
{
    enum { SHOWN_MAX = 64 };
    static _Thread_local char bufs[4][SHOWN_MAX + 4];
    static _Thread_local int next;
    char *b = bufs[next++ & 3];
    size_t n = 0;
    if (!s)
        s = "(null)";
    for (; s[n] && n < SHOWN_MAX; n++)
        b[n] = (unsigned char)s[n] < 0x20 || s[n] == 0x7f ? '?' : s[n];
    if (s[n]) {
        while (n > 0 && ((unsigned char)s[n] & 0xc0) == 0x80)   /* whole characters */
            n--;
        memcpy(b + n, "...", 3);
        n += 3;
    }
    b[n] = '\0';
    return b;
}

/* A strict JSON recognizer: recursive descent over the text, no tree. */
typedef struct {
    const char *s, *end;
    int depth;
} jscan;

enum { JSON_DEPTH_MAX = 512 };

static bool js_value(jscan *j);

static void js_ws(jscan *j)
{
    while (j->s < j->end && (*j->s == ' ' || *j->s == '\t' || *j->s == '\n' || *j->s == '\r'))
        j->s++;
}

static bool js_lit(jscan *j, const char *word)
{
    size_t n = strlen(word);
    if ((size_t)(j->end - j->s) < n || memcmp(j->s, word, n))
        return false;
    j->s += n;
    return true;
}

static bool js_digits(jscan *j)
{
    const char *b = j->s;
    while (j->s < j->end && *j->s >= '0' && *j->s <= '9')
        j->s++;
    return j->s > b;
}

static bool js_number(jscan *j)
{
    if (j->s < j->end && *j->s == '-')
        j->s++;
    if (j->s < j->end && *j->s == '0')
        j->s++;
    else if (!js_digits(j))
        return false;
    if (j->s < j->end && *j->s == '.') {
        j->s++;
        if (!js_digits(j))
            return false;
    }
    if (j->s < j->end && (*j->s == 'e' || *j->s == 'E')) {
        j->s++;
        if (j->s < j->end && (*j->s == '+' || *j->s == '-'))
            j->s++;
        if (!js_digits(j))
            return false;
    }
    return true;
}

static bool js_string(jscan *j)
{
    if (j->s >= j->end || *j->s != '"')
        return false;
    for (j->s++; j->s < j->end; j->s++) {
        unsigned char c = (unsigned char)*j->s;
        if (c == '"') {
            j->s++;
            return true;
        }
        if (c < 0x20)
            return false;
        if (c != '\\')
            continue;
        if (++j->s >= j->end)
            return false;
        if (*j->s == 'u') {
            if (j->end - j->s < 5)
                return false;
            for (int k = 1; k <= 4; k++)
                if (!strchr("0123456789abcdefABCDEF", j->s[k]) || !j->s[k])
                    return false;
            if (!memcmp(j->s + 1, "0000", 4))
                return false;
            j->s += 4;
        } else if (!*j->s || !strchr("\"\\/bfnrt", *j->s)) {
            return false;
        }
    }
    return false;
}

/* "[" value ("," value)* "]" or "{" string ":" value ("," ...)* "}" */
static bool js_container(jscan *j, char close, bool object)
{
    if (++j->depth > JSON_DEPTH_MAX)
        return false;
    j->s++;
    js_ws(j);
    if (j->s < j->end && *j->s == close) {
        j->s++;
        j->depth--;
        return true;
    }
    for (;;) {
        if (object) {
            if (!js_string(j))
                return false;
            js_ws(j);
            if (j->s >= j->end || *j->s != ':')
                return false;
            j->s++;
        }
        if (!js_value(j))
            return false;
        js_ws(j);
        if (j->s < j->end && *j->s == ',') {
            j->s++;
            js_ws(j);
            continue;
        }
        if (j->s < j->end && *j->s == close) {
            j->s++;
            j->depth--;
            return true;
        }
        return false;
    }
}

static bool js_value(jscan *j)
{
    js_ws(j);
    if (j->s >= j->end)
        return false;
    switch (*j->s) {
    case '{': return js_container(j, '}', true);
    case '[': return js_container(j, ']', false);
    case '"': return js_string(j);
    case 't': return js_lit(j, "true");
    case 'f': return js_lit(j, "false");
    case 'n': return js_lit(j, "null");
    default: return js_number(j);
    }
}

bool tg_json_syntax_ok(const char *text, size_t n, size_t *bad)
{
    jscan j = {text, text + n, 0};
    bool ok = js_value(&j);
    if (ok) {
        js_ws(&j);
        ok = j.s == j.end;
    }
    if (!ok && bad)
        *bad = (size_t)(j.s - text);
    return ok;
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

int tg_json_unique_keys(const cJSON *obj, const char *what)
{
    int n = cJSON_GetArraySize(obj);
    if (n < 2)
        return 0;
    const char **keys = malloc((size_t)n * sizeof *keys);
    if (!keys)
        return tg_err("out of memory");
    int k = 0;
    for (const cJSON *c = obj->child; c && k < n; c = c->next)
        keys[k++] = c->string;
    qsort(keys, (size_t)k, sizeof *keys, cmp_str);
    int rc = 0;
    for (int i = 1; i < k; i++)
        if (!strcmp(keys[i - 1], keys[i])) {
            rc = tg_err("%s: member '%s' appears twice", what, tg_json_shown(keys[i]));
            break;
        }
    free(keys);
    return rc;
}

bool tg_utf8_valid(const char *str, size_t n, size_t *bad)
{
    const unsigned char *s = (const unsigned char *)str;
    size_t i = 0;
    while (i < n) {
        unsigned c = s[i];
        size_t len;
        unsigned cp, min;
        if (c < 0x80) {
            i++;
            continue;
        } else if ((c & 0xe0) == 0xc0) {
            len = 2, cp = c & 0x1f, min = 0x80;
        } else if ((c & 0xf0) == 0xe0) {
            len = 3, cp = c & 0x0f, min = 0x800;
        } else if ((c & 0xf8) == 0xf0) {
            len = 4, cp = c & 0x07, min = 0x10000;
        } else {
            goto fail;
        }
        if (n - i < len)
            goto fail;
        for (size_t k = 1; k < len; k++) {
            if ((s[i + k] & 0xc0) != 0x80)
                goto fail;
            cp = cp << 6 | (s[i + k] & 0x3f);
        }
        if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
            goto fail;
        i += len;
    }
    return true;
fail:
    if (bad)
        *bad = i;
    return false;
}
