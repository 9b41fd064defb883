/* Shared tool helpers (cli.h). */
#include "cli.h"

#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "log.h"

const char *cli_prog = "tgraph";

static bool reported;    /* an error was printed: don't add a second one */

/* At exit: stdout must have reached its destination, else exit 1. */
static void close_stdout(void)
{
    bool werr = ferror(stdout) != 0;
    errno = 0;
    bool cerr = fclose(stdout) != 0;
    /* EBADF alone: stdout was closed before we started and never written. */
    if (werr || (cerr && errno != EBADF)) {
        if (!reported)
            fprintf(stderr, "%s: write error: %s\n", cli_prog, strerror(errno ? errno : EIO));
        _exit(1);
    }
    tg_log_close();
}

void cli_init(const char *prog)
{
    cli_prog = prog;
    /* A closed pipe is a write error like any other (tgraph(7)): reported
     * with exit 1, not a silent death by SIGPIPE. */
    signal(SIGPIPE, SIG_IGN);
    atexit(close_stdout);
    if (tg_log_init(prog) < 0)
        cli_usage("%s", tg_errmsg());
}

static void verror(const char *file, const char *fmt, va_list ap)
{
    reported = true;
    fflush(stdout);
    if (file)
        fprintf(stderr, "%s: %s: ", cli_prog, file);
    else
        fprintf(stderr, "%s: ", cli_prog);
    vfprintf(stderr, fmt, ap);
    fputc('\n', stderr);
}

void cli_error(const char *file, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(file, fmt, ap);
    va_end(ap);
}

int cli_fail(const char *file)
{
    const char *m = tg_errmsg();
    if (!*m)
        m = "failed (no message)";
    for (;;) {
        size_t n = strcspn(m, "\n");
        cli_error(file, "%.*s", (int)n, m);
        if (!m[n])
            break;
        m += n + 1;
    }
    return 1;
}

void cli_bad_option(void)
{
    fprintf(stderr, "Try '%s --help' for more information.\n", cli_prog);
    exit(2);
}

void cli_usage(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    verror(NULL, fmt, ap);
    va_end(ap);
    cli_bad_option();
}

void cli_version(void)
{
    printf("%s (tgraph) %s\n", cli_prog, PACKAGE_VERSION);
}

int cli_read_all(const char *path, uint8_t **buf, size_t *len)
{
    bool std = !path || !strcmp(path, "-");
    if (std && isatty(STDIN_FILENO))
        return tg_err("refusing to read from a terminal (give a FILE or pipe data in)");
    FILE *f = std ? stdin : fopen(path, "rb");
    if (!f)
        return tg_err("%s", strerror(errno));
    size_t cap = 1 << 16, n = 0;
    uint8_t *b = malloc(cap);
    for (;;) {
        if (!b) {
            if (!std)
                fclose(f);
            return tg_err("out of memory");
        }
        n += fread(b + n, 1, cap - n, f);
        if (n < cap)
            break;
        uint8_t *nb = cap > SIZE_MAX / 2 ? NULL : realloc(b, cap * 2);
        if (!nb)
            free(b);
        b = nb;
        cap *= 2;
    }
    int err = ferror(f) ? errno : 0;
    if (!std)
        fclose(f);
    if (err) {
        free(b);
        return tg_err("read error: %s", strerror(err));
    }
    *buf = b;
    *len = n;
    return 0;
}

bool cli_stdout_is_tty(void) { return isatty(STDOUT_FILENO); }

void cli_refuse_tty_out(const char *out, const char *what)
{
    if ((!out || !strcmp(out, "-")) && cli_stdout_is_tty())
        cli_usage("refusing to write %s to a terminal: use -o FILE or redirect", what);
}

int cli_open_out(tg_outfile *o, const char *path, bool binary)
{
    if (tg_outfile_open(o, path, binary) == 0)
        return 0;
    cli_fail(path ? path : "-");
    return -1;
}

static bool parse_int(const char *s, int64_t min, int64_t max, int64_t *v)
{
    char *end;
    errno = 0;
    long long x = strtoll(s, &end, 10);
    if (!*s || *end || errno || x < min || x > max)
        return false;
    *v = x;
    return true;
}

int64_t cli_int(const char *opt, const char *s, int64_t min, int64_t max)
{
    int64_t v;
    if (!parse_int(s, min, max, &v))
        cli_usage("%s: '%s' is not an integer in %lld..%lld", opt, s,
                  (long long)min, (long long)max);
    return v;
}

void cli_split_list(const char *opt, char *s, const char **list, int *n, int max)
{
    for (char *t = strtok(s, ","); t; t = strtok(NULL, ","))
        if (*t) {
            if (*n == max)
                cli_usage("%s: more than %d entries", opt, max);
            list[(*n)++] = t;
        }
}

int64_t cli_assign(const char *opt, const char *s, char *name, size_t n, int64_t min, int64_t max)
{
    const char *eq = strchr(s, '=');
    if (!eq || eq == s || (size_t)(eq - s) >= n)
        cli_usage("%s: expected NAME=N, got '%s'", opt, s);
    memcpy(name, s, eq - s);
    name[eq - s] = 0;
    return cli_int(opt, eq + 1, min, max);
}
