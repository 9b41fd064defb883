/* libFuzzer target for the TLOG JSON-lines reader (tlog --profile, tlog --dot
 * --log): the timings are read and rendered as a trace and a report, the fused
 * groups read against a small graph and drawn; any bytes give output or a
 * one-line error.
 *   make fuzz && ./fuzz/fuzz_tlog -max_total_time=1800 -dict=fuzz/tlog.dict fuzz/corpus/tlog */
#include <stdint.h>
#include <stdio.h>

#include "fuzz.h"
#include "graph.h"
#include "logfile.h"
#include "trace.h"

/* x -> relu -> exp -> add(exp, x): node names a fusion record can match. */
static tg_graph *small_graph(void)
{
    tg_graph *g = tg_graph_new();
    tg_shape s = tg_shape_of(2, (int64_t[]){2, 3});
    int x = tg_graph_add_input(g, "x", TG_F32, &s);
    int r = tg_graph_add_node(g, TG_OP_RELU, "relu", 1, &x, 0, NULL);
    int e = tg_graph_add_node(g, TG_OP_EXP, "exp", 1, &r, 0, NULL);
    int a = tg_graph_add_node(g, TG_OP_ADD, "add", 2, (int[]){e, x}, 0, NULL);
    if (x < 0 || r < 0 || e < 0 || a < 0 || tg_graph_add_output(g, a) < 0) {
        fprintf(stderr, "fuzz_tlog: the graph does not build: %s\n", tg_errmsg());
        abort();
    }
    return g;
}

static void profile(const uint8_t *data, size_t size)
{
    FILE *f = fuzz_stream(data, size);
    tg_profile *p = tg_profile_read(f);
    fclose(f);
    if (!p) {
        fuzz_refused("fuzz_tlog: profile");
        return;
    }
    FILE *out = fuzz_sink();
    if (tg_profile_report(p, 3, out) < 0)
        fuzz_refused("fuzz_tlog: report");
    tg_profile_trace(p, out);
    fclose(out);
    tg_profile_free(p);
}

static void groups(const uint8_t *data, size_t size)
{
    static tg_graph *g;
    if (!g)
        g = small_graph();
    FILE *f = fuzz_stream(data, size);
    tg_dot_groups gr;
    int matched;
    int rc = tg_log_read_groups(f, g, &gr, &matched);
    fclose(f);
    if (rc < 0) {
        fuzz_refused("fuzz_tlog: groups");
        return;
    }
    FILE *out = fuzz_sink();
    tg_graph_dot_groups(g, &gr, out);
    fclose(out);
    tg_dot_groups_free(&gr);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    tg_err_clear();
    profile(data, size);
    groups(data, size);
    return 0;
}
