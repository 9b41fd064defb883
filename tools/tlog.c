/* tlog: look at graphs and what the tools log about them.
 *
 *   tlog [-q] [-o FILE] [FILE]      summary on stderr; the graph passes through
 *   tlog --dot [--log LOG] [FILE]   Graphviz dot of the graph (LOG: fused groups)
 *   tlog diff [-q] A B              what changed between two graphs
 *   tlog trace [-o FILE] PROFILE    a trun --profile as a Chrome/Perfetto trace
 *   tlog report [-n N] PROFILE      where a profile's time went
 *
 * The first argument may name a subcommand; everything else is the default
 * command, which shows a graph. */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "format.h"
#include "log.h"
#include "logfile.h"
#include "render.h"
#include "trace.h"

static void help(void)
{
    printf("Usage: tlog [OPTION]... [FILE]\n"
           "   or: tlog diff [OPTION]... A B\n"
           "   or: tlog trace [-o FILE] PROFILE\n"
           "   or: tlog report [-n N] PROFILE\n"
           "Show the TG graph in FILE (or standard input): a summary on standard error,\n"
           "and the graph itself, unchanged, on standard output when that is not a\n"
           "terminal, so tlog can sit inside a pipeline:\n"
           "  texport model.pt2 | tlog | tcompile > model.so\n"
           "\n"
           "  -q, --quiet        no summary\n"
           "      --dot          write the graph as Graphviz dot instead\n"
           "      --log=LOG      with --dot: draw the fused groups that tcompile logged\n"
           "                     in LOG (TLOG=fusion TLOG_FORMAT=json) as clusters\n"
           "  -o, --output=FILE  write to FILE (via a temporary file) instead of stdout\n"
           "  -h, --help         show this help and exit\n"
           "  -V, --version      show the version and exit\n"
           "\n"
           "Commands:\n"
           "  diff A B           list what differs between graphs A and B: ops by kind,\n"
           "                     symbols, inputs and outputs, values whose dtype or shape\n"
           "                     changed, constants added, removed or changed (with the\n"
           "                     largest absolute difference). Exit 0 when none, 1 when\n"
           "                     some, 2 on trouble, like diff(1). -q: only the status.\n"
           "  trace PROFILE      turn the per-node timings of `trun --profile PROFILE`\n"
           "                     into a Chrome trace (JSON) for ui.perfetto.dev or\n"
           "                     chrome://tracing; -o FILE writes it there.\n"
           "  report PROFILE     the op kinds and nodes that took the most time, with\n"
           "                     their share of the total; -n N: the N heaviest of each\n"
           "                     (default 10, 0: all).\n"
           "PROFILE may be any TLOG_FORMAT=json log; records other than timings are\n"
           "skipped. \"-\" reads standard input.\n"
           "\n"
           "Logging in every tool: TLOG=help lists the components; see tgraph(7).\n"
           "Exit status: 0 success, 1 a bad or unreadable graph, 2 bad usage.\n");
}

enum { OPT_DOT = 256, OPT_LOG };

static const struct option show_opts[] = {
    {"quiet", no_argument, NULL, 'q'},
    {"dot", no_argument, NULL, OPT_DOT},
    {"log", required_argument, NULL, OPT_LOG},
    {"output", required_argument, NULL, 'o'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

/* A whole graph file in memory, parsed. NULL after printing the error. */
static tg_graph *load(const char *name, uint8_t **buf, size_t *len)
{
    *buf = NULL;
    if (cli_read_all(name, buf, len) < 0) {
        cli_fail(name);
        return NULL;
    }
    tg_graph *g = tg_graph_read_mem(*buf, *len);
    if (!g) {
        cli_fail(name);
        free(*buf);
        *buf = NULL;
        return NULL;
    }
    if (tg_log_on(GRAPH, TG_LOG_INFO)) {
        int nconst = 0;
        for (int i = 0; i < g->nvalue; i++)
            nconst += g->values[i].kind == TG_VALUE_CONST;
        char fields[160];
        snprintf(fields, sizeof fields,
                 "{\"nodes\":%d,\"inputs\":%d,\"outputs\":%d,\"constants\":%d}",
                 g->nnode, g->ninput, g->noutput, nconst);
        tg_log_emit(TG_LOG_GRAPH, TG_LOG_INFO, fields, "read %s: %d nodes, %d constants",
                    name, g->nnode, nconst);
    }
    return g;
}

/* A text input: path, or stdin for "-". NULL after printing the error. */
static FILE *open_in(const char *path)
{
    if (!strcmp(path, "-"))
        return stdin;
    FILE *f = fopen(path, "r");
    if (!f)
        cli_error(path, "%s", strerror(errno));
    return f;
}

static void close_in(FILE *f)
{
    if (f && f != stdin)
        fclose(f);
}

/* The fused groups of log over g's nodes. -1 after printing the error. */
static int read_groups(const char *log, const tg_graph *g, tg_dot_groups *gr)
{
    FILE *f = open_in(log);
    if (!f)
        return -1;
    int matched, rc = tg_log_read_groups(f, g, gr, &matched);
    close_in(f);
    if (rc < 0)
        return cli_fail(log), -1;
    if (!matched)   /* drawn all the same: the graph is still worth seeing */
        cli_error(log, "warning: no fused group names a node of this graph"
                  " (log it with TLOG=fusion TLOG_FORMAT=json tcompile ...)");
    return 0;
}

/* Pass the input through (tap) or write dot, to -o FILE or stdout. */
static int write_out(const char *out, const tg_graph *g, const uint8_t *buf, size_t len, bool dot,
                     const tg_dot_groups *groups)
{
    tg_outfile o;
    if (cli_open_out(&o, out, !dot) < 0)
        return 1;
    if (dot)
        tg_graph_dot_groups(g, groups, o.f);
    else
        fwrite(buf, 1, len, o.f);
    if (tg_outfile_close(&o, true) < 0)
        return cli_fail(out ? out : "-");
    return 0;
}

static int cmd_show(int argc, char **argv)
{
    bool quiet = false, dot = false;
    const char *out = NULL, *log = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "qo:hV", show_opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = true; break;
        case OPT_DOT: dot = true; break;
        case OPT_LOG: log = optarg; break;
        case 'o': out = optarg; break;
        case 'h': help(); return 0;
        case 'V': cli_version(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind > 1)
        cli_usage("one input at most (got %d); to compare two graphs: tlog diff A B",
                  argc - optind);
    const char *in = optind < argc ? argv[optind] : "-";
    if (!strcmp(in, "-") && isatty(STDIN_FILENO))
        cli_usage("no input: give a FILE or pipe a graph in");
    if (log && !dot)
        cli_usage("--log draws fused groups: it goes with --dot");
    if (log && !strcmp(log, "-") && !strcmp(in, "-"))
        cli_usage("--log -: the graph is on standard input already");

    uint8_t *buf;
    size_t len;
    tg_graph *g = load(in, &buf, &len);
    if (!g)
        return 1;
    tg_dot_groups groups = {0};
    int rc = log && read_groups(log, g, &groups) < 0;
    /* As a tap, pass the graph on only where someone reads it: a file or a pipe. */
    if (rc == 0 && (dot || out || !cli_stdout_is_tty()))
        rc = write_out(out, g, buf, len, dot, log ? &groups : NULL);
    tg_dot_groups_free(&groups);
    if (!quiet && !dot && rc == 0) {
        fflush(stdout);
        tg_graph_summary(g, stderr);
    }
    tg_graph_free(g);
    free(buf);
    return rc;
}

static const struct option diff_opts[] = {
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* Exit 0 same, 1 different, 2 trouble: diff(1)'s convention, so scripts can
 * write `if tlog diff -q a.tg b.tg; then ...`. */
static int cmd_diff(int argc, char **argv)
{
    bool quiet = false;
    int c;
    while ((c = getopt_long(argc, argv, "qh", diff_opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind != 2)
        cli_usage("diff needs two graphs, A and B");
    if (!strcmp(argv[optind], "-") && !strcmp(argv[optind + 1], "-"))
        cli_usage("diff: only one of A and B can be standard input");
    uint8_t *ba = NULL, *bb = NULL;
    size_t la, lb;
    tg_graph *a = load(argv[optind], &ba, &la);
    tg_graph *b = a ? load(argv[optind + 1], &bb, &lb) : NULL;
    int rc = 2;
    if (a && b)
        rc = tg_graph_diff(a, b, quiet ? NULL : stdout) ? 1 : 0;
    tg_graph_free(a);
    tg_graph_free(b);
    free(ba);
    free(bb);
    return rc;
}

static const struct option profile_opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"top", required_argument, NULL, 'n'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

/* tlog trace and tlog report: read a profile, render it. */
static int cmd_profile(int argc, char **argv, bool trace)
{
    const char *out = NULL;
    int top = 10, c;
    while ((c = getopt_long(argc, argv, trace ? "o:h" : "n:h", profile_opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'n': top = (int)cli_int("top", optarg, 0, 1000000); break;
        case 'h': help(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind != 1)
        cli_usage("%s needs one PROFILE (from trun --profile FILE)", argv[0]);
    const char *in = argv[optind];
    if (!strcmp(in, "-") && isatty(STDIN_FILENO))
        cli_usage("no input: give a PROFILE or pipe one in");
    FILE *f = open_in(in);
    if (!f)
        return 1;
    tg_profile *p = tg_profile_read(f);
    close_in(f);
    if (!p)
        return cli_fail(in);
    int rc = 0;
    if (!p->n) {
        cli_error(in, "no per-node timings (trun --profile FILE writes them)");
        rc = 1;
    } else if (trace) {
        tg_outfile o;
        if (cli_open_out(&o, out, false) < 0) {
            rc = 1;
        } else {
            tg_profile_trace(p, o.f);
            if (tg_outfile_close(&o, true) < 0)
                rc = cli_fail(out ? out : "-");
        }
    } else if (tg_profile_report(p, top, stdout) < 0) {
        rc = cli_fail(in);
    }
    tg_profile_free(p);
    return rc;
}

int main(int argc, char **argv)
{
    cli_init("tlog");
    if (argc > 1 && !strcmp(argv[1], "diff"))
        return cmd_diff(argc - 1, argv + 1);
    if (argc > 1 && (!strcmp(argv[1], "trace") || !strcmp(argv[1], "report")))
        return cmd_profile(argc - 1, argv + 1, argv[1][0] == 't');
    return cmd_show(argc, argv);
}
