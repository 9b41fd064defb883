/* TLOG (log.h): per-component levels from the environment, records as text or
 * JSON lines on stderr or a file.
 *
 * Each record is formatted whole and written with one write(2) on a file opened
 * O_APPEND, so the tools of one pipeline can share a TLOG_FILE without their
 * lines interleaving; a mutex keeps threads of one process in order. */
#define _GNU_SOURCE     /* asprintf */
#include "log.h"

#include <cjson/cJSON.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/time.h>
#include <unistd.h>

int tg_log_levels[TG_LOG_NCOMP] = {
#define X(id, name, doc) [TG_LOG_##id] = TG_LOG_WARN,
    TG_LOG_COMPONENTS(X)
#undef X
};

static const char *const comp_names[] = {
#define X(id, name, doc) name,
    TG_LOG_COMPONENTS(X)
#undef X
};

static const char *const comp_docs[] = {
#define X(id, name, doc) doc,
    TG_LOG_COMPONENTS(X)
#undef X
};

static const char *const level_names[] = {"error", "warn", "info", "debug"};

static struct {
    char tool[32];
    int fd;                 /* stderr or TLOG_FILE */
    bool json;
    pthread_mutex_t lock;
} L = {"tgraph", STDERR_FILENO, false, PTHREAD_MUTEX_INITIALIZER};

const char *tg_log_comp_name(tg_log_comp comp)
{
    return comp >= 0 && comp < TG_LOG_NCOMP ? comp_names[comp] : "?";
}

static void print_help(void)
{
    printf("TLOG components (TLOG=name,+name,-name; all; help):\n");
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        printf("  %-8s %s\n", comp_names[i], comp_docs[i]);
    printf("Levels: name = info, +name = debug, -name = errors only; default warnings.\n"
           "TLOG_FILE=path appends records to path; TLOG_FORMAT=json writes JSON lines.\n");
}

static int unknown_comp(const char *bad, size_t n)
{
    char known[256] = "all";
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        snprintf(known + strlen(known), sizeof known - strlen(known), ", %s", comp_names[i]);
    return tg_err("TLOG: unknown component '%.*s' (known: %s; TLOG=help describes them)",
                  (int)n, bad, known);
}

/* One item of TLOG: [+|-]name, or all. */
static int parse_item(const char *s, size_t n)
{
    int lvl = TG_LOG_INFO;
    if (n && (*s == '+' || *s == '-')) {
        lvl = *s == '+' ? TG_LOG_DEBUG : TG_LOG_ERROR;
        s++, n--;
    }
    if (n == 3 && !memcmp(s, "all", 3)) {
        for (int i = 0; i < TG_LOG_NCOMP; i++)
            tg_log_levels[i] = lvl;
        return 0;
    }
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        if (strlen(comp_names[i]) == n && !memcmp(s, comp_names[i], n)) {
            tg_log_levels[i] = lvl;
            return 0;
        }
    return unknown_comp(s, n);
}

static int parse_spec(const char *spec)
{
    const char *p = spec;
    while (*p) {
        p += strspn(p, " ,");
        size_t n = strcspn(p, ",");
        while (n && p[n - 1] == ' ')
            n--;
        if (n == 4 && !memcmp(p, "help", 4)) {
            print_help();
            exit(0);
        }
        if (n && parse_item(p, n) < 0)
            return -1;
        p += strcspn(p, ",");
    }
    return 0;
}

int tg_log_init(const char *tool)
{
    snprintf(L.tool, sizeof L.tool, "%s", tool ? tool : "tgraph");
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        tg_log_levels[i] = TG_LOG_WARN;
    const char *fmt = getenv("TLOG_FORMAT");
    if (fmt && *fmt && strcmp(fmt, "json") && strcmp(fmt, "text"))
        return tg_err("TLOG_FORMAT: unknown format '%s' (text or json)", fmt);
    L.json = fmt && !strcmp(fmt, "json");
    const char *spec = getenv("TLOG");
    if (spec && parse_spec(spec) < 0)
        return -1;
    const char *file = getenv("TLOG_FILE");
    if (file && *file) {
        int fd = open(file, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0666);
        if (fd < 0)
            return tg_err("TLOG_FILE: %s: %s", file, strerror(errno));
        tg_log_close();
        L.fd = fd;
    }
    return 0;
}

void tg_log_close(void)
{
    pthread_mutex_lock(&L.lock);
    if (L.fd != STDERR_FILENO)
        close(L.fd);
    L.fd = STDERR_FILENO;
    pthread_mutex_unlock(&L.lock);
}

/* The record as one JSON line (malloc'd). fields that are not a JSON object are
 * kept as a string under "raw", so every line stays valid JSON. */
static char *json_record(tg_log_comp comp, tg_log_level lvl, const char *fields,
                         const char *msg)
{
    struct timeval tv;
    gettimeofday(&tv, NULL);
    cJSON *r = cJSON_CreateObject();
    cJSON_AddStringToObject(r, "tool", L.tool);
    cJSON_AddStringToObject(r, "comp", tg_log_comp_name(comp));
    cJSON_AddStringToObject(r, "level", level_names[lvl]);
    cJSON_AddNumberToObject(r, "time", tv.tv_sec + tv.tv_usec * 1e-6);
    cJSON_AddNumberToObject(r, "pid", getpid());
    cJSON_AddStringToObject(r, "msg", msg);
    cJSON *f = fields ? cJSON_Parse(fields) : cJSON_CreateObject();
    if (fields && !cJSON_IsObject(f)) {
        cJSON_Delete(f);
        f = cJSON_CreateObject();
        cJSON_AddStringToObject(f, "raw", fields);
    }
    cJSON_AddItemToObject(r, "fields", f);
    char *s = cJSON_PrintUnformatted(r);
    cJSON_Delete(r);
    return s;
}

static void write_all(const char *s, size_t n)
{
    while (n) {
        ssize_t w = write(L.fd, s, n);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0)
            return;         /* logging must never stop the work */
        s += w, n -= w;
    }
}

void tg_log_emit(tg_log_comp comp, tg_log_level lvl, const char *fields, const char *fmt, ...)
{
    if (lvl < TG_LOG_ERROR || lvl > TG_LOG_DEBUG)
        lvl = TG_LOG_DEBUG;
    char small[1024], *msg = small;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(small, sizeof small, fmt, ap);
    va_end(ap);
    if (n >= (int)sizeof small && (msg = malloc(n + 1))) {
        va_start(ap, fmt);
        vsnprintf(msg, n + 1, fmt, ap);
        va_end(ap);
    } else if (!msg) {
        msg = small;        /* truncated, but still logged */
    }
    char *line = NULL;
    if (L.json) {
        char *j = json_record(comp, lvl, fields, msg);
        if (j && asprintf(&line, "%s\n", j) < 0)
            line = NULL;
        free(j);
    } else {
        static const char *const tag[] = {"error: ", "warning: ", "", ""};
        if (asprintf(&line, "[%s:%s] %s%s\n", L.tool, tg_log_comp_name(comp), tag[lvl], msg) < 0)
            line = NULL;
    }
    if (line) {
        pthread_mutex_lock(&L.lock);
        write_all(line, strlen(line));
        pthread_mutex_unlock(&L.lock);
        free(line);
    }
    if (msg != small)
        free(msg);
}
