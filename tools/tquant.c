/* tquant: quantize a TG graph's linear and convolution layers (static int8
 * with calibration, dynamic int8, weight-only int8/int4), report the accuracy
 * change against the float graph on the calibration set, write the new graph.
 * The work is in lib/quant; this file parses options and prints. */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "exec/exec.h"
#include "format.h"
#include "log.h"
#include "quant/quant.h"
#include "render.h"

#define MAX_LIST 256

enum { OPT_CALIB = 256, OPT_SCHEME, OPT_OBSERVER, OPT_PERCENTILE, OPT_AVERAGING, OPT_GROUP,
       OPT_SKIP, OPT_ACT, OPT_NO_REPORT, OPT_LIMIT, OPT_NO_BIAS, OPT_QDQ, OPT_NO_CHAIN };

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"calib", required_argument, NULL, OPT_CALIB},
    {"scheme", required_argument, NULL, OPT_SCHEME},
    {"observer", required_argument, NULL, OPT_OBSERVER},
    {"percentile", required_argument, NULL, OPT_PERCENTILE},
    {"averaging", required_argument, NULL, OPT_AVERAGING},
    {"group", required_argument, NULL, OPT_GROUP},
    {"skip", required_argument, NULL, OPT_SKIP},
    {"act", required_argument, NULL, OPT_ACT},
    {"limit", required_argument, NULL, OPT_LIMIT},
    {"no-report", no_argument, NULL, OPT_NO_REPORT},
    {"no-bias-correction", no_argument, NULL, OPT_NO_BIAS},
    {"qdq", no_argument, NULL, OPT_QDQ},
    {"no-chain", no_argument, NULL, OPT_NO_CHAIN},
    {"quiet", no_argument, NULL, 'q'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

static void help(void)
{
    printf("Usage: tquant [OPTION]... [GRAPH]\n"
           "Quantize the linear and convolution layers of GRAPH (a TG file; default or -:\n"
           "stdin) and write the new graph to stdout (or -o). The other ops stay float.\n"
           "tsparse's 2:4 linear_24 layers become int8 qlinear_24 (static, dynamic).\n"
           "\n"
           "  -o, --output=FILE    write the graph to FILE (default stdout)\n"
           "      --scheme=S       static (default): int8 weights per output channel and\n"
           "                       int8 activations with ranges from --calib;\n"
           "                       dynamic: activation ranges taken at run time;\n"
           "                       weight-int8, weight-int4: weights only, one scale per\n"
           "                       --group inputs (linear layers)\n"
           "      --calib=PATH     calibration inputs: a .npy file or a folder of them\n"
           "                       (repeatable). One graph input: each file is a sample (a\n"
           "                       batch dim is fine). Several: NAME.KEY.npy, one file per\n"
           "                       input NAME for each sample KEY. Needed by static;\n"
           "                       with the other schemes it gives the accuracy report\n"
           "      --observer=O     how static ranges are chosen: minmax (default),\n"
           "                       moving-average, percentile, entropy (or histogram: the\n"
           "                       KL-divergence threshold of TensorRT's calibrator)\n"
           "      --percentile=P   percentile observer: keep P%% of the values (default\n"
           "                       99.99)\n"
           "      --averaging=C    moving-average weight of each sample (default 0.01)\n"
           "      --act=u8|i8      static activations: affine u8 (default) or symmetric i8\n"
           "      --group=N        weight-only: inputs per scale (default 128 for\n"
           "                       weight-int8, 32 for weight-int4; 0: one per row)\n"
           "      --skip=LIST      keep these in float: node names or op names (linear,\n"
           "                       conv), comma-separated (repeatable)\n"
           "      --limit=N        use at most N calibration samples\n"
           "      --no-bias-correction  keep the biases: by default, with --calib, each\n"
           "                       layer's bias absorbs the mean error of its rounded\n"
           "                       weights on the calibration inputs\n"
           "      --qdq            static: write float layers between quantize/dequantize\n"
           "                       pairs (quantization simulated in float) instead of\n"
           "                       qlinear/qconv; tquant folds such pairs, from it or\n"
           "                       from an importer, into qlinear/qconv (with no --calib\n"
           "                       needed when no float layer is left)\n"
           "      --no-chain       static: float between quantized convolutions; by\n"
           "                       default one whose result (or its relu, clamp or\n"
           "                       silu) only quantized convolutions read hands it to\n"
           "                       them as u8, and a depthwise one that would read and\n"
           "                       give float (slower in int8) stays float\n"
           "      --no-report      skip the accuracy report (and its float runs)\n"
           "  -q, --quiet          no report on stderr (TLOG=quant still records it)\n"
           "  -h, --help           show this help and exit\n"
           "  -V, --version        show the version and exit\n"
           "\n"
           "The report gives, per graph output, the max and mean absolute error of the\n"
           "quantized graph against the float one over the calibration samples and, for\n"
           "outputs with a class axis (the last), how often the top-1 class agrees.\n"
           "Exit status: 0 ok, 1 failure (bad graph or calibration data), 2 bad usage.\n"
           "See tquant(1).\n");
}

static double parse_num(const char *opt, const char *s, double lo, double hi)
{
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v >= lo && v <= hi))
        cli_usage("%s: '%s' is not a number in [%g, %g]", opt, s, lo, hi);
    return v;
}

/* Run the float graph (through the calibration, for static) and then the
 * quantized one on every sample; gather the report. */
typedef struct {
    const tg_graph *g, *qg;
    tg_calib *calib;            /* static: runs g with the observers */
    const tg_dataset *ds;
    int nsample;
    bool report;
} work;

static int calibrate(work *w, tg_tensor *ref)
{
    tg_exec *e = w->calib ? NULL : tg_exec_new(w->g, 0);
    if (!w->calib && !e)
        return -1;
    for (int s = 0; s < w->nsample; s++) {
        const tg_tensor *in = w->ds->t + (size_t)s * w->ds->ninput;
        tg_tensor *out = ref + (size_t)s * w->g->noutput;
        int rc = w->calib ? tg_calib_run(w->calib, in, w->report ? out : NULL)
                          : tg_exec_run(e, in, out);
        if (rc) {
            tg_exec_free(e);
            return tg_err_append("(calibration sample %d)", s + 1);
        }
    }
    tg_exec_free(e);
    return 0;
}

static int report(work *w, tg_tensor *ref, tg_quant_report *r)
{
    tg_exec *e = tg_exec_new(w->qg, 0);
    tg_tensor *got = calloc((size_t)w->g->noutput + 1, sizeof *got);
    int rc = e && got ? 0 : -1;
    for (int s = 0; s < w->nsample && rc == 0; s++) {
        rc = tg_exec_run(e, w->ds->t + (size_t)s * w->ds->ninput, got);
        if (rc == 0) {
            rc = tg_quant_report_add(r, ref + (size_t)s * w->g->noutput, got);
            for (int i = 0; i < w->g->noutput; i++)
                tg_tensor_free(&got[i]);
        }
    }
    free(got);
    tg_exec_free(e);
    return rc;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *calib_paths[MAX_LIST], *skip[MAX_LIST];
    int ncalib = 0, nskip = 0, c;
    int64_t limit = -1, group = -1;
    bool no_report = false, quiet = false;
    tg_quant_opts qo;
    tg_quant_opts_init(&qo);
    cli_init("tquant");
    while ((c = getopt_long(argc, argv, "o:qhV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case OPT_CALIB:
            if (ncalib == MAX_LIST)
                cli_usage("--calib: more than %d paths", MAX_LIST);
            calib_paths[ncalib++] = optarg;
            break;
        case OPT_SCHEME:
            if ((c = tg_quant_scheme_from_name(optarg)) < 0)
                cli_usage("--scheme: '%s' is not static, dynamic, weight-int8 or weight-int4",
                          optarg);
            qo.scheme = (tg_quant_scheme)c;
            break;
        case OPT_OBSERVER:
            if ((c = tg_observer_from_name(optarg)) < 0)
                cli_usage("--observer: '%s' is not minmax, moving-average, percentile, entropy"
                          " or histogram", optarg);
            qo.observer = (tg_observer_kind)c;
            break;
        case OPT_PERCENTILE: qo.percentile = parse_num("--percentile", optarg, 50, 100); break;
        case OPT_AVERAGING: qo.averaging = parse_num("--averaging", optarg, 1e-6, 1); break;
        case OPT_GROUP: group = cli_int("--group", optarg, 0, INT32_MAX); break;
        case OPT_SKIP: cli_split_list("--skip", optarg, skip, &nskip, MAX_LIST); break;
        case OPT_ACT:
            if (strcmp(optarg, "u8") && strcmp(optarg, "i8"))
                cli_usage("--act: '%s' is not u8 or i8", optarg);
            qo.act_int8 = !strcmp(optarg, "i8");
            break;
        case OPT_LIMIT: limit = cli_int("--limit", optarg, 1, INT32_MAX); break;
        case OPT_NO_REPORT: no_report = true; break;
        case OPT_NO_BIAS: qo.no_bias_correction = true; break;
        case OPT_QDQ: qo.qdq = true; break;
        case OPT_NO_CHAIN: qo.no_chain = true; break;
        case 'q': quiet = true; break;
        case 'h': help(); return 0;
        case 'V': cli_version(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind > 1)
        cli_usage("one graph at a time");
    if (qo.qdq && qo.scheme != TG_QUANT_STATIC)
        cli_usage("--qdq is for --scheme=static");
    if (qo.no_chain && qo.scheme != TG_QUANT_STATIC)
        cli_usage("--no-chain is for --scheme=static");
    if (group >= 0 && qo.scheme < TG_QUANT_WEIGHT_INT8)
        cli_usage("--group is for the weight-only schemes");
    qo.group = group >= 0 ? group : qo.scheme == TG_QUANT_WEIGHT_INT4 ? 32 : 128;
    qo.skip = skip;
    qo.nskip = nskip;
    const char *in = optind < argc ? argv[optind] : "-";
    cli_refuse_tty_out(out, "a graph");

    uint8_t *buf;
    size_t len;
    if (cli_read_all(in, &buf, &len) < 0)
        return cli_fail(in);
    tg_graph *g = tg_graph_read_mem(buf, len), *qg = NULL;
    free(buf);
    int folded = g && !tg_graph_check_static(g, "tquant", false) ? tg_quant_fold_qdq(g) : -1;
    if (folded < 0 || tg_quant_prepare(g) < 0) {
        tg_graph_free(g);
        return cli_fail(in);
    }
    if (folded > 0 && !quiet)
        fprintf(stderr, "tquant: %d layer%s folded from quantize/dequantize pairs\n", folded,
                folded == 1 ? "" : "s");
    int *layers = NULL, nlayer = tg_quant_layers(g, &qo, &layers);
    free(layers);
    if (nlayer < 0) {
        tg_graph_free(g);
        return cli_fail(in);
    }
    if (qo.scheme == TG_QUANT_STATIC && !ncalib && nlayer > 0) {
        tg_graph_free(g);
        cli_usage("--scheme=static needs --calib (or use --scheme=dynamic)");
    }
    tg_dataset ds = {0};
    tg_tensor *ref = NULL;
    tg_quant_report rep = {0};
    work w = {.g = g, .ds = &ds, .report = !no_report};
    int rc = 1, nq;
    if (ncalib && tg_dataset_load(g, ncalib, calib_paths, &ds)) {
        cli_fail(NULL);
        goto done;
    }
    w.nsample = limit > 0 && limit < ds.nsample ? (int)limit : ds.nsample;
    w.report = w.report && w.nsample > 0;
    /* the float runs observe the layers' inputs: static ranges, bias correction */
    if (ncalib && (qo.scheme == TG_QUANT_STATIC || !qo.no_bias_correction) &&
        !(w.calib = tg_calib_new(g, &qo))) {
        cli_fail(in);
        goto done;
    }
    ref = calloc((size_t)w.nsample * g->noutput + 1, sizeof *ref);
    if (!ref || ((w.calib || w.report) && calibrate(&w, ref))) {
        cli_fail(ref ? NULL : in);
        goto done;
    }
    if (!(qg = tg_graph_clone(g)) || (nq = tg_quant_rewrite(qg, &qo, w.calib)) < 0) {
        cli_fail(in);
        goto done;
    }
    w.qg = qg;
    tg_graph_log(qg, "quant");
    if (!quiet)
        fprintf(stderr, "tquant: %d layer%s quantized (%s%s%s)\n", nq, nq == 1 ? "" : "s",
                tg_quant_scheme_name(qo.scheme), qo.scheme == TG_QUANT_STATIC ? ", " : "",
                qo.scheme == TG_QUANT_STATIC ? tg_observer_name(qo.observer) : "");
    if (w.report) {
        if (tg_quant_report_init(&rep, g) || report(&w, ref, &rep)) {
            cli_fail(in);
            goto done;
        }
        if (!quiet)
            fprintf(stderr, "tquant: accuracy against the float graph on %d calibration"
                    " sample%s:\n", w.nsample, w.nsample == 1 ? "" : "s");
        tg_quant_report_print(&rep, TG_LOG_QUANT, "tquant:   ", quiet ? NULL : stderr);
    }
    tg_outfile o;
    if (cli_open_out(&o, out, true) < 0)
        goto done;
    int bad = tg_graph_write(qg, o.f) != 0;
    if (bad)
        cli_fail(out ? out : "-");
    if (tg_outfile_close(&o, !bad) < 0) {
        cli_fail(out ? out : "-");
        bad = 1;
    }
    rc = bad;
done:
    for (int i = 0; ref && i < w.nsample * g->noutput; i++)
        tg_tensor_free(&ref[i]);
    free(ref);
    tg_quant_report_free(&rep);
    tg_calib_free(w.calib);
    tg_dataset_free(&ds);
    tg_graph_free(qg);
    tg_graph_free(g);
    return rc;
}
