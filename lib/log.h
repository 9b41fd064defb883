/* TLOG: per-component logging, configured by environment variables.
 *   TLOG=import,+fusion,-perf   components at INFO, +DEBUG, -only errors
 *   TLOG=all / TLOG=help        everything / list the components and exit
 *   TLOG_FILE=path              write records there instead of stderr
 *   TLOG_FORMAT=json            one JSON object a line:
 *     {"tool":..,"comp":..,"level":..,"time":..,"msg":..,"fields":{..}}
 * When a component is off, a TG_LOG call costs one load and one compare;
 * built with -DTG_LOG_DISABLE, nothing. */
#ifndef TG_LOG_H
#define TG_LOG_H

#include <stdbool.h>
#include "error.h"

#define TG_LOG_COMPONENTS(X) \
    X(IMPORT,  "import",  "operators mapped and decomposed by importers") \
    X(GRAPH,   "graph",   "the graph at each stage, a line a node (DEBUG: and a summary)") \
    X(PASSES,  "passes",  "per pass: what changed, nodes before and after") \
    X(FUSION,  "fusion",  "each fusion decision, and why a candidate was refused") \
    X(MEMORY,  "memory",  "the memory plan: arena size, buffer reuse") \
    X(CODEGEN, "codegen", "kernels chosen, compiler command and time") \
    X(QUANT,   "quant",   "observers, scales, accuracy of quantization") \
    X(SPARSE,  "sparse",  "pruning and 2:4 compression") \
    X(RUN,     "run",     "per-op execution and timing") \
    X(PERF,    "perf",    "totals: time, memory, throughput") \
    X(FORMAT,  "format",  "TG and .npy files read and written")

typedef enum {
#define X(id, name, doc) TG_LOG_##id,
    TG_LOG_COMPONENTS(X)
#undef X
    TG_LOG_NCOMP
} tg_log_comp;

typedef enum { TG_LOG_ERROR = 0, TG_LOG_WARN = 1, TG_LOG_INFO = 2, TG_LOG_DEBUG = 3 } tg_log_level;

extern int tg_log_levels[TG_LOG_NCOMP];   /* default WARN */

/* Read TLOG, TLOG_FILE and TLOG_FORMAT. With TLOG=help prints the components to
 * stdout and exits 0. Returns -1 (tg_err) on an unknown component. */
int tg_log_init(const char *tool);
void tg_log_close(void);

/* Built with -DTG_LOG_DISABLE every check is a constant 0 and the compiler
 * drops the calls (bench/tlog_cost.sh measures the difference). */
#ifdef TG_LOG_DISABLE
#define tg_log_on(comp, lvl) (0 && TG_LOG_##comp >= 0 && (lvl) >= 0)
#else
#define tg_log_on(comp, lvl) (tg_log_levels[TG_LOG_##comp] >= (lvl))
#endif
#define TG_LOG(comp, lvl, ...) \
    do { if (tg_log_on(comp, lvl)) tg_log_emit(TG_LOG_##comp, lvl, NULL, __VA_ARGS__); } while (0)
/* fields: a JSON object text ("{\"n\":3}") attached to the record, or NULL. */
#define TG_LOGF(comp, lvl, fields, ...) \
    do { if (tg_log_on(comp, lvl)) tg_log_emit(TG_LOG_##comp, lvl, fields, __VA_ARGS__); } while (0)

void tg_log_emit(tg_log_comp comp, tg_log_level lvl, const char *fields, const char *fmt, ...)
    TG_PRINTF(4, 5);
const char *tg_log_comp_name(tg_log_comp comp);

#endif
