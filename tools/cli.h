/* Helpers every tool shares: messages, --version, usage errors, reading the
 * input, opening the output, parsing option values. Tools are thin; anything a
 * second tool would copy belongs here. */
#ifndef TG_CLI_H
#define TG_CLI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "outfile.h"

extern const char *cli_prog;    /* the tool's name, for messages */

/* Set the tool's name, check stdout at exit (a full disk or a closed pipe is an
 * error, exit 1; SIGPIPE is ignored, so writes see EPIPE), and read TLOG
 * (TLOG=help prints and exits 0; a bad TLOG is a usage error, exit 2). Call
 * first in main. */
void cli_init(const char *prog);

/* "tool: file: message" on stderr (file NULL: "tool: message"). */
void cli_error(const char *file, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* The library's current message (tg_errmsg) as above, each of its lines
 * prefixed, so reports that list many problems stay greppable. Returns 1, the
 * exit status for a failure of the work: `return cli_fail(path);` */
int cli_fail(const char *file);
/* "tool: message" and "Try 'tool --help' for more information.", exit 2. */
_Noreturn void cli_usage(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* After getopt_long has printed its own complaint ('?'): only the "Try" line, exit 2. */
_Noreturn void cli_bad_option(void);
/* "tool (tgraph) 0.1.0" on stdout. */
void cli_version(void);

/* The whole of path ("-" or NULL: stdin) in memory (caller frees *buf).
 * Refuses to wait on a terminal. 0 or -1 (tg_err). */
int cli_read_all(const char *path, uint8_t **buf, size_t *len);

/* Open the output: path from -o, or NULL for stdout (refused for binary data
 * when a terminal). On error prints it and returns -1. Finish with
 * tg_outfile_close(o, ok). */
int cli_open_out(tg_outfile *o, const char *path, bool binary);
/* Whether stdout is a terminal. */
bool cli_stdout_is_tty(void);
/* The one rule for binary output (what: "a graph", ".npy" ...) on a terminal:
 * "refusing to write WHAT to a terminal: use -o FILE or redirect", a usage
 * error (exit 2) before any work. out: the -o path (NULL or "-": stdout). */
void cli_refuse_tty_out(const char *out, const char *what);

/* Option values. Both print a usage error (exit 2) naming opt when s is bad. */
int64_t cli_int(const char *opt, const char *s, int64_t min, int64_t max);
/* A comma list (--skip a,b) appended to list[*n] (pointers into s, which is
 * modified; empty entries skipped); more than max entries in all is a usage
 * error naming opt. */
void cli_split_list(const char *opt, char *s, const char **list, int *n, int max);
/* "NAME=N" (--dim batch=4): the name is copied into name[n]. */
int64_t cli_assign(const char *opt, const char *s, char *name, size_t n, int64_t min, int64_t max);

#endif
