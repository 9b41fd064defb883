/* A profile's timings (logfile.h) rendered: a Chrome/Perfetto trace, and a
 * table of where the time went. */
#ifndef TG_TRACE_H
#define TG_TRACE_H

#include <stdio.h>

#include "logfile.h"

/* Chrome trace event format (JSON object, "traceEvents": one complete "X"
 * event per timing, nested in one per run, a process_name per process),
 * times in microseconds from the first timing. Opens in ui.perfetto.dev and
 * chrome://tracing. Sorts p's events. */
void tg_profile_trace(tg_profile *p, FILE *f);

/* The heaviest op kinds and nodes (at most top of each; top <= 0: all), each
 * with its calls, total time, time a run and share of the total. 0 or -1 (tg_err). */
int tg_profile_report(const tg_profile *p, int top, FILE *f);

#endif
