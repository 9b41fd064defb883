/* tlog: look at graphs and what the tools log about them.
 *
 *   tlog [-q] [-o FILE] [FILE]      summary on stderr; the graph passes through
 *   tlog --dot [-o FILE] [FILE]     Graphviz dot of the graph
 *   tlog diff [-q] A B              what changed between two graphs
 *
 * The first argument may name a subcommand; everything else is the default
 * command, which shows a graph. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "error.h"
#include "format.h"
#include "log.h"
#include "render.h"

static void help(void)
{
    printf("Usage: tlog [OPTION]... [FILE]\n"
           "   or: tlog diff [OPTION]... A B\n"
           "Show the TG graph in FILE (or standard input): a summary on standard error,\n"
           "and the graph itself, unchanged, on standard output when that is not a\n"
           "terminal, so tlog can sit inside a pipeline:\n"
           "  texport model.pt2 | tlog | tcompile > model.so\n"
           "\n"
           "  -q, --quiet        no summary\n"
           "      --dot          write the graph as Graphviz dot instead\n"
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
           "\n"
           "Logging in every tool: TLOG=help lists the components; see tgraph(7).\n"
           "Exit status: 0 success, 1 a bad or unreadable graph, 2 bad usage.\n");
}

enum { OPT_DOT = 256 };

static const struct option show_opts[] = {
    {"quiet", no_argument, NULL, 'q'},
    {"dot", no_argument, NULL, OPT_DOT},
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

/* Pass the input through (tap) or write dot, to -o FILE or stdout. */
static int write_out(const char *out, const tg_graph *g, const uint8_t *buf, size_t len, bool dot)
{
    tg_outfile o;
    if (cli_open_out(&o, out, !dot) < 0)
        return 1;
    if (dot)
        tg_graph_dot(g, o.f);
    else
        fwrite(buf, 1, len, o.f);
    if (tg_outfile_close(&o, true) < 0)
        return cli_fail(out ? out : "-");
    return 0;
}

static int cmd_show(int argc, char **argv)
{
    bool quiet = false, dot = false;
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "qo:hV", show_opts, NULL)) != -1) {
        switch (c) {
        case 'q': quiet = true; break;
        case OPT_DOT: dot = true; break;
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

    uint8_t *buf;
    size_t len;
    tg_graph *g = load(in, &buf, &len);
    if (!g)
        return 1;
    int rc = 0;
    /* As a tap, pass the graph on only where someone reads it: a file or a pipe. */
    if (dot || out || !cli_stdout_is_tty())
        rc = write_out(out, g, buf, len, dot);
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

int main(int argc, char **argv)
{
    cli_init("tlog");
    if (argc > 1 && !strcmp(argv[1], "diff"))
        return cmd_diff(argc - 1, argv + 1);
    return cmd_show(argc, argv);
}
