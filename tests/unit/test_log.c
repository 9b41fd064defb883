/* TLOG: the TLOG spec sets levels; records reach TLOG_FILE as text or JSON lines,
 * whole and valid even from many threads; bad settings are errors. */
#include <cjson/cJSON.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "error.h"
#include "log.h"
#include "unit.h"

static char path[64];

/* Configure from the given environment (NULL: unset). */
static int init_with(const char *tlog, const char *format, const char *file)
{
    tlog ? setenv("TLOG", tlog, 1) : unsetenv("TLOG");
    format ? setenv("TLOG_FORMAT", format, 1) : unsetenv("TLOG_FORMAT");
    file ? setenv("TLOG_FILE", file, 1) : unsetenv("TLOG_FILE");
    return tg_log_init("tester");
}

/* The log file's contents (malloc'd), then truncate it for the next test. */
static char *slurp(void)
{
    tg_log_close();
    FILE *f = fopen(path, "rb");
    char *s = calloc(1, 1 << 20);
    size_t n = f ? fread(s, 1, (1 << 20) - 1, f) : 0;
    s[n] = 0;
    if (f)
        fclose(f);
    truncate(path, 0);
    return s;
}

static void test_levels(void)
{
    CHECK(init_with(NULL, NULL, NULL) == 0);
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        CHECK(tg_log_levels[i] == TG_LOG_WARN);
    CHECK(init_with("import,+fusion,-perf", NULL, NULL) == 0);
    CHECK(tg_log_levels[TG_LOG_IMPORT] == TG_LOG_INFO);
    CHECK(tg_log_levels[TG_LOG_FUSION] == TG_LOG_DEBUG);
    CHECK(tg_log_levels[TG_LOG_PERF] == TG_LOG_ERROR);
    CHECK(tg_log_levels[TG_LOG_RUN] == TG_LOG_WARN);
    CHECK(tg_log_on(FUSION, TG_LOG_DEBUG) && !tg_log_on(IMPORT, TG_LOG_DEBUG));
    /* Items apply in order; blanks and empty items are ignored. */
    CHECK(init_with(" +all , ,-memory", NULL, NULL) == 0);
    CHECK(tg_log_levels[TG_LOG_GRAPH] == TG_LOG_DEBUG);
    CHECK(tg_log_levels[TG_LOG_MEMORY] == TG_LOG_ERROR);
    CHECK(tg_log_comp_name(TG_LOG_CODEGEN) && !strcmp(tg_log_comp_name(TG_LOG_CODEGEN), "codegen"));
}

static void test_bad_settings(void)
{
    CHECK(init_with("import,fusoin", NULL, NULL) == -1);
    CHECK(strstr(tg_errmsg(), "unknown component 'fusoin'") != NULL);
    CHECK(strstr(tg_errmsg(), "fusion") && strstr(tg_errmsg(), "format"));
    CHECK(init_with("run", "xml", NULL) == -1);
    CHECK(strstr(tg_errmsg(), "TLOG_FORMAT") != NULL);
    CHECK(init_with("run", NULL, "/nonexistent/dir/log") == -1);
    CHECK(strstr(tg_errmsg(), "TLOG_FILE") != NULL);
}

static void test_text(void)
{
    CHECK(init_with("passes", NULL, path) == 0);
    TG_LOG(PASSES, TG_LOG_INFO, "dce removed %d nodes", 3);
    TG_LOG(PASSES, TG_LOG_DEBUG, "not shown");
    TG_LOG(RUN, TG_LOG_INFO, "not shown either");
    TG_LOG(RUN, TG_LOG_WARN, "slow op");
    char *s = slurp();
    CHECK(!strcmp(s, "[tester:passes] dce removed 3 nodes\n[tester:run] warning: slow op\n"));
    free(s);
}

static void test_json(void)
{
    CHECK(init_with("memory,+quant", "json", path) == 0);
    TG_LOGF(MEMORY, TG_LOG_INFO, "{\"arena\": 4096, \"buffers\": [1, 2]}", "arena %d bytes", 4096);
    TG_LOGF(QUANT, TG_LOG_DEBUG, "not json", "scale \"%s\"", "x\ty");
    TG_LOG(QUANT, TG_LOG_ERROR, "bad");
    char *s = slurp(), *save;
    int lines = 0;
    for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
        cJSON *r = cJSON_Parse(l);
        CHECK(cJSON_IsObject(r));
        if (!r)
            continue;
        const char *keys[] = {"tool", "comp", "level", "time", "pid", "msg", "fields"};
        for (int k = 0; k < 7; k++)
            CHECK(cJSON_GetObjectItem(r, keys[k]) != NULL);
        CHECK(!strcmp(cJSON_GetObjectItem(r, "tool")->valuestring, "tester"));
        CHECK(cJSON_GetObjectItem(r, "pid")->valuedouble == getpid());
        double t = cJSON_GetObjectItem(r, "time")->valuedouble;
        CHECK(t > 1.6e9 && t < 4e9);
        cJSON *f = cJSON_GetObjectItem(r, "fields");
        CHECK(cJSON_IsObject(f));
        if (lines == 0) {
            CHECK(!strcmp(cJSON_GetObjectItem(r, "comp")->valuestring, "memory"));
            CHECK(!strcmp(cJSON_GetObjectItem(r, "level")->valuestring, "info"));
            CHECK(!strcmp(cJSON_GetObjectItem(r, "msg")->valuestring, "arena 4096 bytes"));
            CHECK(cJSON_GetObjectItem(f, "arena")->valuedouble == 4096);
            CHECK(cJSON_GetArraySize(cJSON_GetObjectItem(f, "buffers")) == 2);
        } else if (lines == 1) {
            CHECK(!strcmp(cJSON_GetObjectItem(r, "level")->valuestring, "debug"));
            CHECK(!strcmp(cJSON_GetObjectItem(r, "msg")->valuestring, "scale \"x\ty\""));
            CHECK(!strcmp(cJSON_GetObjectItem(f, "raw")->valuestring, "not json"));
        } else {
            CHECK(!strcmp(cJSON_GetObjectItem(r, "level")->valuestring, "error"));
            CHECK(cJSON_GetArraySize(f) == 0);
        }
        cJSON_Delete(r);
    }
    CHECK(lines == 3);
    free(s);
}

#define NTHREAD 4
#define NREC 300

static void *writer(void *arg)
{
    for (int i = 0; i < NREC; i++)
        TG_LOGF(RUN, TG_LOG_INFO, "{\"i\": 1}", "thread %ld record %d %s", (long)(intptr_t)arg, i,
                "padding to make records long enough that a torn write would show");
    return NULL;
}

static void test_threads(void)
{
    CHECK(init_with("run", "json", path) == 0);
    pthread_t th[NTHREAD];
    for (long i = 0; i < NTHREAD; i++)
        pthread_create(&th[i], NULL, writer, (void *)(intptr_t)i);
    for (int i = 0; i < NTHREAD; i++)
        pthread_join(th[i], NULL);
    char *s = slurp(), *save;
    int lines = 0, valid = 0;
    for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save), lines++) {
        cJSON *r = cJSON_Parse(l);
        valid += cJSON_IsObject(r);
        cJSON_Delete(r);
    }
    CHECK(lines == NTHREAD * NREC);
    CHECK(valid == NTHREAD * NREC);
    free(s);
}

static void test_help(void)
{
    int fd[2];
    CHECK(pipe(fd) == 0);
    fflush(stdout);
    pid_t pid = fork();
    if (pid == 0) {
        dup2(fd[1], STDOUT_FILENO);
        init_with("help", NULL, NULL);
        _exit(3);   /* help must have exited 0 before this */
    }
    close(fd[1]);
    char out[4096] = {0};
    size_t n = 0;
    ssize_t r;
    while (n < sizeof out - 1 && (r = read(fd[0], out + n, sizeof out - 1 - n)) > 0)
        n += r;
    close(fd[0]);
    int st;
    waitpid(pid, &st, 0);
    CHECK(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    for (int i = 0; i < TG_LOG_NCOMP; i++)
        CHECK(strstr(out, tg_log_comp_name(i)) != NULL);
    CHECK(strstr(out, "each fusion decision") != NULL);
}

int main(void)
{
    snprintf(path, sizeof path, "/tmp/test_log.%d", (int)getpid());
    test_levels();
    test_bad_settings();
    test_text();
    test_json();
    test_threads();
    test_help();
    unlink(path);
    return unit_report();
}
