/* texport: a model file (.pt2 from torch.export.save, or .onnx) to a TG graph.
 *
 *   texport [-o FILE] [--range NAME=MIN:MAX]... MODEL
 */
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "error.h"
#include "filekind.h"
#include "format.h"
#include "import/import.h"
#include "render.h"

static void help(void)
{
    printf("Usage: texport [OPTION]... MODEL\n"
           "Convert MODEL to a TG graph on standard output (or -o FILE):\n"
           "  MODEL.pt2   a program saved by torch.export.save (PyTorch >= 2.9), either\n"
           "              as exported or after run_decompositions() (Core ATen IR)\n"
           "  MODEL.onnx  an ONNX model\n"
           "The type is taken from the file's contents (a zip archive is a .pt2),\n"
           "else from its name.\n"
           "\n"
           "  -o, --output=FILE         write to FILE (via a temporary file) instead of stdout\n"
           "  -r, --range=NAME=MIN:MAX  set the range of dynamic dimension NAME (s0, s1 ...,\n"
           "                            or torch's own name such as s77); may be repeated\n"
           "  -h, --help                show this help and exit\n"
           "  -V, --version             show the version and exit\n"
           "\n"
           "Every operator that cannot be converted is listed, with its node and source\n"
           "line, before texport gives up. See texport(1).\n"
           "Exit status: 0 success, 1 the model could not be converted, 2 bad usage.\n");
}

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"range", required_argument, NULL, 'r'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

/* "NAME=MIN:MAX" into opt's next range. */
static void parse_range(tg_import_opts *o, char *arg)
{
    static char names[TG_MAX_SYMS][64];
    if (o->nrange >= TG_MAX_SYMS)
        cli_usage("--range: at most %d", TG_MAX_SYMS);
    char *colon = strrchr(arg, ':');
    if (!colon)
        cli_usage("--range: expected NAME=MIN:MAX, got '%s'", arg);
    *colon = 0;
    int k = o->nrange;
    int64_t lo = cli_assign("--range", arg, names[k], sizeof names[k], 0, INT64_MAX);
    int64_t hi = cli_int("--range", colon + 1, 0, INT64_MAX);
    if (lo > hi)
        cli_usage("--range %s: minimum %lld above maximum %lld", names[k], (long long)lo,
                  (long long)hi);
    o->range[k].name = names[k];
    o->range[k].min = lo;
    o->range[k].max = hi;
    o->nrange++;
}

static bool has_suffix(const char *s, const char *suf)
{
    size_t n = strlen(s), m = strlen(suf);
    return n >= m && !strcmp(s + n - m, suf);
}

/* What the file is, from its first bytes; -1 (tg_err) when it cannot be read. */
static int sniff(const char *path, tg_file_kind *k)
{
    unsigned char head[TG_FILEKIND_BYTES];
    FILE *f = fopen(path, "rb");
    if (!f)
        return tg_err("cannot open: %m");
    *k = tg_file_kind_of(head, fread(head, 1, sizeof head, f));
    fclose(f);
    return 0;
}

int main(int argc, char **argv)
{
    cli_init("texport");
    tg_import_opts io = {0};
    const char *out = NULL;
    int c;
    while ((c = getopt_long(argc, argv, "o:r:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'r': parse_range(&io, optarg); break;
        case 'h': help(); return 0;
        case 'V': cli_version(); return 0;
        default: cli_bad_option();
        }
    }
    if (argc - optind != 1)
        cli_usage(argc == optind ? "no model file given" : "one model file at most");
    const char *in = argv[optind];
    if (!strcmp(in, "-"))
        cli_usage("the model must be a file (archives are read by seeking), not stdin");
    cli_refuse_tty_out(out, "a graph");

    tg_file_kind k = TG_FILE_UNKNOWN;
    if (sniff(in, &k) < 0)
        return cli_fail(in);
    tg_graph *g = NULL;
    if (k == TG_FILE_PT2 || (k != TG_FILE_ONNX && has_suffix(in, ".pt2")))
        g = tg_import_pt2(in, &io);
    else if (k == TG_FILE_ONNX || has_suffix(in, ".onnx"))
        g = tg_import_onnx(in, &io);
    else if (k == TG_FILE_TG || k == TG_FILE_SO)
        tg_err("%s, not a model to export: %s", tg_file_kind_name(k), tg_file_kind_hint(k));
    else
        tg_err("%s, not a model texport reads (a .pt2 archive or an .onnx file)",
               tg_file_kind_name(k));
    if (!g)
        return cli_fail(in);
    tg_graph_log(g, "import");
    int rc = tg_graph_save(g, out ? out : "-");
    tg_graph_free(g);
    return rc < 0 ? cli_fail(out ? out : "-") : 0;
}
