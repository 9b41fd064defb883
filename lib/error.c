/* Per-thread error message. Short messages live in a fixed buffer; reports that
 * list many problems (tg_err_append) move to a heap buffer that grows.
 * Arguments may point into the current message (tg_err("x: %s", tg_errmsg())),
 * so each new piece is formatted aside before the buffer changes. */
#include "error.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define TG_ERR_FIXED 4096

static _Thread_local char err_fixed[TG_ERR_FIXED];
static _Thread_local char *err_heap;     /* when non-NULL, the message lives here */
static _Thread_local size_t err_cap;     /* capacity of err_heap */
static _Thread_local size_t err_len;

static char *err_buf(void) { return err_heap ? err_heap : err_fixed; }
static size_t err_capacity(void) { return err_heap ? err_cap : TG_ERR_FIXED; }

/* Format into a malloc'd string, or into `small` when it fits or memory is short. */
static char *err_format(char *small, size_t nsmall, const char *fmt, va_list ap)
{
    va_list ap2;
    va_copy(ap2, ap);
    int n = vsnprintf(small, nsmall, fmt, ap2);
    va_end(ap2);
    if (n < 0) {
        small[0] = '\0';
        return small;
    }
    if ((size_t)n < nsmall)
        return small;
    char *p = malloc((size_t)n + 1);
    if (!p)
        return small;       /* truncated, but still a message */
    vsnprintf(p, (size_t)n + 1, fmt, ap);
    return p;
}

/* Append n bytes of text; on allocation failure keep what fits. */
static void err_putn(const char *s, size_t n)
{
    if (err_len + n + 1 > err_capacity()) {
        size_t ncap = err_capacity() * 2;
        if (ncap < err_len + n + 1)
            ncap = err_len + n + 1;
        char *p = realloc(err_heap, ncap);
        if (p) {
            if (!err_heap)
                memcpy(p, err_fixed, err_len + 1);
            err_heap = p;
            err_cap = ncap;
        } else {
            n = err_capacity() - err_len - 1;
        }
    }
    char *b = err_buf();
    memcpy(b + err_len, s, n);
    err_len += n;
    b[err_len] = '\0';
}

/* A control character that a message must not carry to a terminal: names and
 * strings from hostile files end up in messages. Newlines and tabs stay (reports
 * of several lines, the C compiler's log). */
static int err_hidden(unsigned char c) { return (c < 0x20 && c != '\n' && c != '\t') || c == 0x7f; }

/* Append s with each control character written as \xNN. */
static void err_put_escaped(const char *s)
{
    while (*s) {
        size_t n = 0;
        while (s[n] && !err_hidden((unsigned char)s[n]))
            n++;
        err_putn(s, n);
        s += n;
        if (*s) {
            char hex[8];
            err_putn(hex, (size_t)snprintf(hex, sizeof hex, "\\x%02x", (unsigned char)*s++));
        }
    }
}

/* Format the piece aside, then replace or extend the message with it. */
static void err_vset(int append, const char *fmt, va_list ap)
{
    char small[512];
    char *piece = err_format(small, sizeof small, fmt, ap);
    if (!append)
        tg_err_clear();
    else if (err_len > 0)
        err_putn("\n", 1);
    err_put_escaped(piece);
    if (piece != small)
        free(piece);
}

int tg_err(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(0, fmt, ap);
    va_end(ap);
    return -1;
}

int tg_err_append(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    err_vset(1, fmt, ap);
    va_end(ap);
    return -1;
}

void tg_err_clear(void)
{
    free(err_heap);
    err_heap = NULL;
    err_cap = 0;
    err_len = 0;
    err_fixed[0] = '\0';
}

const char *tg_errmsg(void) { return err_buf(); }
