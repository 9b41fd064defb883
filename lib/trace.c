/* Chrome trace and time report of a profile (trace.h). */
#include "trace.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

/* ---- trace ----------------------------------------------------------------------- */

static int by_pid_start(const void *pa, const void *pb)
{
    const tg_prof_event *a = pa, *b = pb;
    if (a->pid != b->pid)
        return a->pid < b->pid ? -1 : 1;
    return a->start < b->start ? -1 : a->start > b->start;
}

/* One event as a line; `first` decides the separator. */
static void put_event(FILE *f, cJSON *e, bool *first)
{
    char *s = cJSON_PrintUnformatted(e);
    if (s)
        fprintf(f, "%s%s", *first ? "\n" : ",\n", s);
    *first = false;
    free(s);
    cJSON_Delete(e);
}

static cJSON *complete(const char *name, const char *cat, double ts, double dur, int pid)
{
    cJSON *e = cJSON_CreateObject();
    cJSON_AddStringToObject(e, "name", name);
    cJSON_AddStringToObject(e, "cat", cat);
    cJSON_AddStringToObject(e, "ph", "X");
    cJSON_AddNumberToObject(e, "ts", ts);
    cJSON_AddNumberToObject(e, "dur", dur < 0 ? 0 : dur);
    cJSON_AddNumberToObject(e, "pid", pid);
    cJSON_AddNumberToObject(e, "tid", 1);
    return e;
}

/* Microseconds, rounded to nanoseconds: what the clocks resolve. */
static double us_round(double us) { return round(us * 1e3) / 1e3; }

void tg_profile_trace(tg_profile *p, FILE *f)
{
    if (p->n)   /* an empty profile has no events array */
        qsort(p->ev, (size_t)p->n, sizeof *p->ev, by_pid_start);
    double t0 = 0;
    for (int i = 0; i < p->n; i++)
        if (i == 0 || p->ev[i].start < t0)
            t0 = p->ev[i].start;
    bool first = true;
    fputs("{\"displayTimeUnit\":\"ms\",\"traceEvents\":[", f);
    for (int i = 0; i < p->n;) {
        const tg_prof_event *a = &p->ev[i];
        cJSON *m = cJSON_CreateObject(), *args = cJSON_CreateObject();
        cJSON_AddStringToObject(m, "name", "process_name");
        cJSON_AddStringToObject(m, "ph", "M");
        cJSON_AddNumberToObject(m, "pid", a->pid);
        cJSON_AddStringToObject(args, "name", a->tool);
        cJSON_AddItemToObject(m, "args", args);
        put_event(f, m, &first);
        /* this process's timings, run by run; a node starts no earlier than the
         * previous one ended, and starts and ends are rounded (durations are
         * their differences), so rounding never makes nodes overlap or end
         * after their run: rounded durations added up could, by 2 ns */
        int j = i;
        double prev_end = -1;
        while (j < p->n && p->ev[j].pid == a->pid) {
            int run = p->ev[j].run, k = j;
            double rs = 0, re = 0;
            for (; k < p->n && p->ev[k].pid == a->pid && p->ev[k].run == run; k++) {
                tg_prof_event *e = &p->ev[k];
                double s = (e->start - t0) * 1e6, end = s + e->us;
                if (s < prev_end)
                    s = prev_end;
                if (end < s)
                    end = s;
                prev_end = end;
                if (k == j || s < rs)
                    rs = s;
                if (end > re)
                    re = end;
                cJSON *x = complete(e->node, e->op, us_round(s), us_round(end) - us_round(s),
                                    e->pid);
                cJSON *xa = cJSON_CreateObject();
                cJSON_AddStringToObject(xa, "op", e->op);
                cJSON_AddNumberToObject(xa, "run", e->run);
                cJSON_AddItemToObject(x, "args", xa);
                put_event(f, x, &first);
            }
            char name[32];
            snprintf(name, sizeof name, "run %d", run);
            put_event(f, complete(name, "run", us_round(rs), us_round(re) - us_round(rs), a->pid),
                      &first);
            j = k;
        }
        i = j;
    }
    fputs("\n]}\n", f);
}

/* ---- report ------------------------------------------------------------------------ */

typedef struct {
    const char *key, *op;
    int calls;
    double us;
} total;

static int by_key(const void *pa, const void *pb)
{
    const total *a = pa, *b = pb;
    int c = strcmp(a->key, b->key);
    return c ? c : strcmp(a->op, b->op);
}

static int by_time(const void *pa, const void *pb)
{
    const total *a = pa, *b = pb;
    if (a->us != b->us)
        return a->us > b->us ? -1 : 1;
    return by_key(pa, pb);
}

/* Timings summed by node (by_node) or by op kind, heaviest first; returns how many. */
static int totals(const tg_profile *p, bool by_node, total *t)
{
    for (int i = 0; i < p->n; i++)
        t[i] = (total){by_node ? p->ev[i].node : p->ev[i].op, p->ev[i].op, 1, p->ev[i].us};
    qsort(t, (size_t)p->n, sizeof *t, by_key);
    int n = 0;
    for (int i = 0; i < p->n; i++) {
        if (n && !by_key(&t[n - 1], &t[i])) {
            t[n - 1].calls++;
            t[n - 1].us += t[i].us;
        } else {
            t[n++] = t[i];
        }
    }
    qsort(t, (size_t)n, sizeof *t, by_time);
    return n;
}

static int by_pid_run(const void *pa, const void *pb)
{
    const int *a = pa, *b = pb;
    return a[0] != b[0] ? (a[0] < b[0] ? -1 : 1) : (a[1] > b[1]) - (a[1] < b[1]);
}

/* Distinct (process, run) pairs: the runs the times are spread over. -1 out of memory. */
static int count_runs(const tg_profile *p)
{
    int (*pr)[2] = malloc(((size_t)p->n + 1) * sizeof *pr), n = 0;
    if (!pr)
        return -1;
    for (int i = 0; i < p->n; i++)
        pr[i][0] = p->ev[i].pid, pr[i][1] = p->ev[i].run;
    qsort(pr, (size_t)p->n, sizeof *pr, by_pid_run);
    for (int i = 0; i < p->n; i++)
        n += i == 0 || by_pid_run(pr[i - 1], pr[i]);
    free(pr);
    return n;
}

static void table(FILE *f, const total *t, int n, int top, bool by_node, double all, int runs)
{
    int shown = top > 0 && top < n ? top : n;
    if (by_node)
        fprintf(f, "\nby node (heaviest %d of %d):\n  %-24s %-16s", shown, n, "node", "op");
    else
        fprintf(f, "\nby op (heaviest %d of %d):\n  %-24s", shown, n, "op");
    fprintf(f, " %6s %11s %11s %7s\n", "calls", "total ms", "ms a run", "share");
    for (int i = 0; i < shown; i++) {
        fprintf(f, "  %-24s", t[i].key);
        if (by_node)
            fprintf(f, " %-16s", t[i].op);
        fprintf(f, " %6d %11.3f %11.3f %6.1f%%\n", t[i].calls, t[i].us / 1e3,
                t[i].us / 1e3 / runs, all > 0 ? 100 * t[i].us / all : 0);
    }
}

int tg_profile_report(const tg_profile *p, int top, FILE *f)
{
    double all = 0;
    for (int i = 0; i < p->n; i++)
        all += p->ev[i].us;
    int runs = count_runs(p);
    total *t = malloc(((size_t)p->n + 1) * sizeof *t);
    if (!t || runs < 0) {
        free(t);
        return tg_err("out of memory");
    }
    fprintf(f, "profile: %d timing%s over %d run%s, %.3f ms in all, %.3f ms a run\n", p->n,
            p->n == 1 ? "" : "s", runs, runs == 1 ? "" : "s", all / 1e3,
            runs ? all / 1e3 / runs : 0);
    int n = totals(p, false, t);
    table(f, t, n, top, false, all, runs ? runs : 1);
    n = totals(p, true, t);
    table(f, t, n, top, true, all, runs ? runs : 1);
    free(t);
    return 0;
}
