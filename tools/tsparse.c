/* tsparse: prune a TG graph's linear, matmul and 1x1 convolution weights to
 * 2:4 semi-structured sparsity (compressed values and metadata, linear_24),
 * report per layer and, on calibration inputs, the output change against the
 * dense graph; write the new graph. The work is in lib/sparse; this file
 * parses options and prints. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "format.h"
#include "log.h"
#include "render.h"
#include "sparse/sparse.h"

#define MAX_LIST 256

enum { OPT_INCLUDE = 256, OPT_EXCLUDE, OPT_MIN_SIZE, OPT_REPORT, OPT_CALIB, OPT_LIMIT };

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"include", required_argument, NULL, OPT_INCLUDE},
    {"exclude", required_argument, NULL, OPT_EXCLUDE},
    {"min-size", required_argument, NULL, OPT_MIN_SIZE},
    {"report", no_argument, NULL, OPT_REPORT},
    {"calib", required_argument, NULL, OPT_CALIB},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

static void help(void)
{
    printf("Usage: tsparse [OPTION]... [GRAPH]\n"
           "Prune the weights of GRAPH's linear, matmul (constant right operand) and 1x1\n"
           "convolution layers (float32), and of tquant's int8 qlinear, to 2:4 sparsity\n"
           "by magnitude along the reduction dim: in every group of four weights the two\n"
           "largest stay. GRAPH is a TG file (default or -: stdin); the new graph goes to\n"
           "stdout (or -o), the pruned layers as linear_24 (qlinear_24) on compressed\n"
           "values and metadata. Weights already 2:4 stay exactly as they are.\n"
           "\n"
           "  -o, --output=FILE    write the graph to FILE (default stdout)\n"
           "      --include=PAT    prune only layers whose node name matches PAT (a shell\n"
           "                       pattern; repeatable, or a comma list)\n"
           "      --exclude=PAT    keep layers matching PAT dense (repeatable, comma list)\n"
           "      --min-size=N     keep weights of fewer than N elements dense (default 0)\n"
           "      --report         per layer: shape, sparsity, relative weight error\n"
           "      --calib=PATH     inputs (a .npy file or a folder of them, repeatable; as\n"
           "                       tquant --calib): report the output change against the\n"
           "                       dense graph on them\n"
           "      --limit=N        use at most N calibration samples\n"
           "  -q, --quiet          nothing on stderr but errors (TLOG=sparse still records)\n"
           "  -h, --help           show this help and exit\n"
           "  -V, --version        show the version and exit\n"
           "\n"
           "With tquant, either order: tsparse first (texport m.pt2 | tsparse | tquant\n"
           "--calib DIR | tcompile), tquant makes the linear_24 layers int8 qlinear_24;\n"
           "tquant first, tsparse prunes its int8 qlinear layers into qlinear_24.\n"
           "Exit status: 0 ok, 1 failure (bad graph or calibration data), 2 bad usage.\n");
}

static void print_layers(const tg_sparse_result *r)
{
    for (int i = 0; i < r->n; i++) {
        const tg_sparse_layer *l = &r->layer[i];
        if (l->skip)
            fprintf(stderr, "tsparse:   %s (%s [%lld, %lld]): dense, %s\n", l->name, l->op,
                    (long long)l->rows, (long long)l->cols, l->skip);
        else
            fprintf(stderr, "tsparse:   %s (%s [%lld, %lld]): sparsity %.3f, weight error "
                    "%.4g%s\n", l->name, l->op, (long long)l->rows, (long long)l->cols,
                    l->sparsity, l->rel_err, l->was_24 ? " (already 2:4, kept exactly)" : "");
    }
}

int main(int argc, char **argv)
{
    const char *out = NULL, *include[MAX_LIST], *exclude[MAX_LIST], *calib[MAX_LIST];
    int ninclude = 0, nexclude = 0, ncalib = 0, c;
    int64_t limit = -1;
    bool report = false, quiet = false;
    tg_sparse_opts so;
    tg_sparse_opts_init(&so);
    cli_init("tsparse");
    while ((c = getopt_long(argc, argv, "o:qhV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case OPT_INCLUDE:
            cli_split_list("--include", optarg, include, &ninclude, MAX_LIST);
            break;
        case OPT_EXCLUDE:
            cli_split_list("--exclude", optarg, exclude, &nexclude, MAX_LIST);
            break;
        case OPT_MIN_SIZE: so.min_size = cli_int("--min-size", optarg, 0, INT64_MAX); break;
        case OPT_REPORT: report = true; break;
        case OPT_CALIB:
            if (ncalib == MAX_LIST)
                cli_usage("--calib: more than %d paths", MAX_LIST);
            calib[ncalib++] = optarg;
            break;
        case OPT_LIMIT: limit = cli_int("--limit", optarg, 1, INT32_MAX); break;
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        case 'V': cli_version(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind > 1)
        cli_usage("one graph at a time");
    if (limit > 0 && !ncalib)
        cli_usage("--limit is for --calib");
    so.include = include, so.ninclude = ninclude;
    so.exclude = exclude, so.nexclude = nexclude;
    const char *in = optind < argc ? argv[optind] : "-";
    cli_refuse_tty_out(out, "a graph");

    uint8_t *buf;
    size_t len;
    if (cli_read_all(in, &buf, &len) < 0)
        return cli_fail(in);
    tg_graph *g = tg_graph_read_mem(buf, len), *sg = NULL;
    free(buf);
    if (!g)
        return cli_fail(in);
    tg_dataset ds = {0};
    tg_sparse_result res = {0};
    tg_quant_report rep = {0};
    int rc = 1, np;
    if (ncalib && tg_dataset_load(g, ncalib, calib, &ds)) {
        cli_fail(NULL);
        goto done;
    }
    if (!(sg = tg_graph_clone(g)) || (np = tg_sparse_prune(sg, &so, &res)) < 0) {
        cli_fail(in);
        goto done;
    }
    tg_graph_log(sg, "sparse");
    if (!quiet)
        fprintf(stderr, "tsparse: %d of %d layer%s pruned to 2:4\n", np, res.n,
                res.n == 1 ? "" : "s");
    if (report && !quiet)
        print_layers(&res);
    int nsample = limit > 0 && limit < ds.nsample ? (int)limit : ds.nsample;
    if (nsample > 0) {
        if (tg_quant_report_init(&rep, g) || tg_sparse_compare(g, sg, &ds, nsample, &rep)) {
            cli_fail(in);
            goto done;
        }
        if (!quiet)
            fprintf(stderr, "tsparse: output change against the dense graph on %d calibration"
                    " sample%s:\n", nsample, nsample == 1 ? "" : "s");
        tg_quant_report_print(&rep, TG_LOG_SPARSE, "tsparse:   ", quiet ? NULL : stderr);
    }
    tg_outfile o;
    if (cli_open_out(&o, out, true) < 0)
        goto done;
    int bad = tg_graph_write(sg, o.f) != 0;
    if (bad)
        cli_fail(out ? out : "-");
    if (tg_outfile_close(&o, !bad) < 0) {
        cli_fail(out ? out : "-");
        bad = 1;
    }
    rc = bad;
done:
    tg_quant_report_free(&rep);
    tg_sparse_result_free(&res);
    tg_dataset_free(&ds);
    tg_graph_free(sg);
    tg_graph_free(g);
    return rc;
}
