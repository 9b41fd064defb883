/* tcompile: compile a TG graph ahead of time into a standalone shared object
 * implementing <tgraph/model.h>. */
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "backend/backend.h"
#include "cli.h"
#include "codegen/codegen.h"
#include "error.h"
#include "format.h"
#include "log.h"
#include "passes/passes.h"

static void help(void)
{
    printf("Usage: tcompile [OPTION]... [GRAPH]\n"
           "Compile the TG graph in GRAPH (or standard input) into a shared object that\n"
           "runs it on the target device (for the CPU it needs only libc and libm). The\n"
           ".so exports the C ABI of <tgraph/model.h> (tgraph_model(3)); trun(1) runs\n"
           "it like a graph.\n"
           "\n"
           "  -o, --output=FILE    write the .so to FILE (default: standard output, which\n"
           "                       must not be a terminal)\n"
           "      --target=NAME    the device to compile for (default cpu; cuda: an NVIDIA\n"
           "                       GPU, when built with CUDA; or a backend's shared\n"
           "                       object, as trun --device finds it); the nodes it\n"
           "                       cannot compile are an error listing each and why\n"
           "      --header=FILE    also write a C header describing the model's inputs,\n"
           "                       outputs and symbols\n"
           "      --cpu=CPU        target CPU: native (default), x86-64-v3 (AVX2) or\n"
           "                       x86-64-v4 (AVX-512); any -march value is passed on\n"
           "      --weights=FILE   write the weights to FILE instead of into the .so; the\n"
           "                       model maps FILE at open (looked up beside the .so)\n"
           "      --emit-c=FILE    also write the generated C source to FILE\n"
           "      --dtype=TYPE     the arithmetic of a cuda model (default fp32): bf16 or\n"
           "                       fp16 (the GEMMs' weights converted now, their\n"
           "                       activations when they run, float32 accumulation and\n"
           "                       outputs; ungrouped convolutions as GEMMs too;\n"
           "                       attention through the flash kernels in that type;\n"
           "                       everything else float32), or tf32 (the GEMMs on\n"
           "                       tf32 tensor cores); the cpu target takes fp32 or\n"
           "                       bf16 (linear layers on constant weights: weights\n"
           "                       rounded now, inputs when they run, float32 sums\n"
           "                       and outputs; AMX or AVX512_BF16 where the CPU has\n"
           "                       them)\n"
           "      --layout=LAYOUT  the activations' layout around convolutions: nhwc\n"
           "                       (the cpu target's default: float32 2-D\n"
           "                       convolutions and their pools channels-last, the\n"
           "                       permutes between them cancelled) or nchw (as the\n"
           "                       graph has them; other targets' default)\n"
           "  -O, --opt=LEVEL      0: only dead code, constant folding and the memory\n"
           "                       plan; 1: every pass (default)\n"
           "  -h, --help           show this help and exit\n"
           "  -V, --version        show the version and exit\n"
           "\n"
           "Environment: CC (the compiler, default cc), TGRAPH_RUNTIME_DIR (where\n"
           "libtgkernels.a and libtgcuda.a are), TLOG (graph, passes, fusion, memory, codegen: see\n"
           "tgraph(7)).\n"
           "Exit status: 0 success, 1 the graph could not be compiled, 2 bad usage.\n");
}

static const struct option opts[] = {
    {"output", required_argument, NULL, 'o'},
    {"header", required_argument, NULL, 'H'},
    {"target", required_argument, NULL, 't'},
    {"cpu", required_argument, NULL, 'c'},
    {"weights", required_argument, NULL, 'w'},
    {"emit-c", required_argument, NULL, 'e'},
    {"opt", required_argument, NULL, 'O'},
    {"dtype", required_argument, NULL, 'd'},
    {"layout", required_argument, NULL, 'l'},
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

/* -march values are plain words; refuse anything a compiler would take as
 * another option. */
static bool cpu_ok(const char *s)
{
    if (!*s || *s == '-')
        return false;
    for (; *s; s++)
        if (!(*s == '-' || *s == '_' || *s == '.' || (*s >= '0' && *s <= '9') ||
              (*s >= 'a' && *s <= 'z') || (*s >= 'A' && *s <= 'Z')))
            return false;
    return true;
}

int main(int argc, char **argv)
{
    const char *out = NULL, *header = NULL;
    tg_build_opts bo = {0};
    tg_passes_opts po = {.level = 1, .target = &tg_backend_cpu};
    int layout = -1;    /* --layout: 0 nchw, 1 nhwc, -1 the target's default */
    int c;
    cli_init("tcompile");
    while ((c = getopt_long(argc, argv, "o:O:hV", opts, NULL)) != -1) {
        switch (c) {
        case 'o': out = optarg; break;
        case 'H': header = optarg; break;
        case 't':
            if (!(po.target = tg_backend_find(optarg)))
                cli_usage("--target: %s", tg_errmsg());
            if (!po.target->compile)
                cli_usage("--target: %s runs graphs (trun --device) but compiles none", optarg);
            break;
        case 'c':
            if (!cpu_ok(optarg))
                cli_usage("--cpu: '%s' is not a CPU name", optarg);
            bo.cpu = optarg;
            break;
        case 'w': bo.weights_path = optarg; break;
        case 'e': bo.emit_c = optarg; break;
        case 'd':
            if (strcmp(optarg, "fp32") && strcmp(optarg, "bf16") && strcmp(optarg, "fp16") &&
                strcmp(optarg, "tf32"))
                cli_usage("--dtype: '%s' is not fp32, bf16, fp16 or tf32", optarg);
            bo.dtype = optarg;
            break;
        case 'l':
            if (strcmp(optarg, "nchw") && strcmp(optarg, "nhwc"))
                cli_usage("--layout: '%s' is not nchw or nhwc", optarg);
            layout = !strcmp(optarg, "nhwc");
            break;
        case 'O': po.level = (int)cli_int("--opt", optarg, 0, 1); break;
        case 'h': help(); return 0;
        case 'V': cli_version(); return 0;
        default: cli_usage("unknown option");
        }
    }
    if (argc - optind > 1)
        cli_usage("one graph at a time");
    /* the cpu target reads bf16 through the passes (po.dtype), cuda all of them
     * when it compiles (bo.dtype); another would silently compile float32 */
    bool cpu = po.target == &tg_backend_cpu;
    if (bo.dtype && strcmp(bo.dtype, "fp32") && strcmp(po.target->name, "cuda") &&
        !(cpu && !strcmp(bo.dtype, "bf16")))
        cli_usage("--dtype %s: the %s target compiles float32%s only (--dtype %s is for"
                  " --target cuda)", bo.dtype, po.target->name, cpu ? " and bf16" : "",
                  bo.dtype);
    if (cpu && bo.dtype && !strcmp(bo.dtype, "bf16"))
        po.dtype = TG_BF16;
    bool nhwc = false;
    for (int k = 0; k < po.target->nlower; k++)
        nhwc |= po.target->lower[k].channels_last;
    po.channels_last = layout < 0 ? nhwc : layout;
    if (po.channels_last && !nhwc)
        cli_usage("--layout nhwc: the %s target has no channels-last lowering",
                  po.target->name);
    const char *in = optind < argc ? argv[optind] : "-";
    cli_refuse_tty_out(out, "a shared object");

    uint8_t *buf;
    size_t len;
    if (cli_read_all(in, &buf, &len) < 0)
        return cli_fail(in);
    tg_graph *g = tg_graph_read_mem(buf, len);
    free(buf);
    if (!g)
        return cli_fail(in);
    tg_plan *p = tg_passes_run(g, &po);
    int rc = 1;
    if (!p) {
        cli_fail(in);
        goto done;
    }
    if (header && tg_codegen_header_save(g, header)) {
        cli_fail(header);
        goto done;
    }
    tg_outfile o;
    if (cli_open_out(&o, out, true) < 0)
        goto done;
    int bad = po.target->compile(po.target, g, p, &bo, o.f);
    if (bad)
        cli_fail(ferror(o.f) ? (out ? out : "-") : in);    /* writing, or building */
    if (tg_outfile_close(&o, !bad) < 0) {
        cli_fail(out ? out : "-");
        bad = 1;
    }
    rc = bad ? 1 : 0;
done:
    tg_plan_free(p);
    tg_graph_free(g);
    return rc;
}
