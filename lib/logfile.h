/* Reading TLOG JSON lines back (TLOG_FORMAT=json, trun --profile): the
 * per-node timings of a profile, and the fused groups tcompile logged. tlog
 * renders them (trace.h, render.h). */
#ifndef TG_LOGFILE_H
#define TG_LOGFILE_H

#include <stdio.h>

#include "graph.h"
#include "render.h"

/* One timed node (interpreter) or kernel (compiled model): a "run" record with
 * fields {"node","op","us","run"}; its end is the record's time. */
typedef struct {
    char *node, *op, *tool;
    double start, us;       /* start: seconds since the epoch; us: duration */
    int run, pid;
} tg_prof_event;

typedef struct {
    int n;
    tg_prof_event *ev;
} tg_profile;

/* The timings in a TLOG JSON-lines file; other records are skipped, so one
 * TLOG_FILE can hold a whole pipeline's log. A line that is not a JSON object
 * with a "comp" member is an error naming the line. NULL with tg_err. */
tg_profile *tg_profile_read(FILE *f);
void tg_profile_free(tg_profile *p);

/* The fused groups in a TLOG JSON-lines file (tcompile's "fusion" records
 * with fields {"group":N,"kind":"...","nodes":["name",...]}), as clusters over
 * g's nodes, matched by name; names g does not have are skipped. *matched:
 * how many of g's nodes are in a group. 0 or -1 (tg_err). Free with
 * tg_dot_groups_free. */
int tg_log_read_groups(FILE *f, const tg_graph *g, tg_dot_groups *out, int *matched);
void tg_dot_groups_free(tg_dot_groups *gr);

#endif
