/* Error reporting: library calls return -1 (or NULL) and leave a message here.
 * The message is per thread; tools print it as "tool: file: message". */
#ifndef TG_ERROR_H
#define TG_ERROR_H

#include <stddef.h>

#if defined(__GNUC__)
#define TG_PRINTF(a, b) __attribute__((format(printf, a, b)))
#else
#define TG_PRINTF(a, b)
#endif

/* Replace the current message. Always returns -1 so callers can `return tg_err(...)`. */
int tg_err(const char *fmt, ...) TG_PRINTF(1, 2);
/* Add a line to the current message (for reports that list every problem). */
int tg_err_append(const char *fmt, ...) TG_PRINTF(1, 2);
void tg_err_clear(void);
/* The current message, "" when none. */
const char *tg_errmsg(void);

#endif
