/* tcompile --header: a C header naming one model's inputs, outputs and
 * symbols, for programs that link that model. Names are the header file's
 * base name in capitals: mlp.h gives MLP_INPUT_X, MLP_NUM_INPUTS ... */
#include "codegen.h"

#include <ctype.h>
#include <inttypes.h>
#include <string.h>

#include "../error.h"
#include "../outfile.h"

/* Upper-case C identifier from s (other characters become '_'). */
static void ident(const char *s, size_t n, char *out, size_t cap)
{
    size_t k = 0;
    if (n && isdigit((unsigned char)s[0]) && k + 1 < cap)
        out[k++] = '_';
    for (size_t i = 0; i < n && k + 1 < cap; i++)
        out[k++] = isalnum((unsigned char)s[i]) ? (char)toupper((unsigned char)s[i]) : '_';
    out[k] = 0;
}

static void tensor_macros(const tg_graph *g, FILE *f, const char *pre, const char *kind,
                          int i, int v)
{
    const tg_value *x = &g->values[v];
    char id[256], shape[512], up[32];
    ident(x->name, strlen(x->name), id, sizeof id);
    ident(tg_dtype_name(x->dtype), strlen(tg_dtype_name(x->dtype)), up, sizeof up);
    tg_shape_format(&x->shape, g->sym, shape, sizeof shape);
    fprintf(f, "/* %s %d '%s': %s %s */\n", kind, i, x->name, tg_dtype_name(x->dtype), shape);
    fprintf(f, "#define %s_%s_%s %d\n", pre, kind[0] == 'i' ? "INPUT" : "OUTPUT", id, i);
    fprintf(f, "#define %s_%s_%s_DTYPE TGRAPH_%s\n", pre, kind[0] == 'i' ? "INPUT" : "OUTPUT",
            id, up);
    fprintf(f, "#define %s_%s_%s_RANK %d\n", pre, kind[0] == 'i' ? "INPUT" : "OUTPUT", id,
            x->shape.rank);
}

int tg_codegen_header(const tg_graph *g, const char *prefix, FILE *f)
{
    char pre[128];
    ident(prefix, strlen(prefix), pre, sizeof pre);
    fprintf(f, "/* The model %s, compiled by tcompile. Its functions are those of\n"
            " * <tgraph/model.h>; these macros name its inputs, outputs and symbols. */\n"
            "#ifndef %s_MODEL_H\n#define %s_MODEL_H\n\n#include <tgraph/model.h>\n\n"
            "#define %s_NUM_INPUTS %d\n#define %s_NUM_OUTPUTS %d\n#define %s_NUM_SYMBOLS %d\n\n",
            prefix, pre, pre, pre, g->ninput, pre, g->noutput, pre, g->nsym);
    for (int i = 0; i < g->ninput; i++)
        tensor_macros(g, f, pre, "input", i, g->inputs[i]);
    for (int i = 0; i < g->noutput; i++)
        tensor_macros(g, f, pre, "output", i, g->outputs[i]);
    for (int s = 0; s < g->nsym; s++) {
        char id[128];
        ident(g->sym[s].name, strlen(g->sym[s].name), id, sizeof id);
        fprintf(f, "#define %s_SYMBOL_%s %d\n#define %s_SYMBOL_%s_MIN %" PRId64 "\n"
                "#define %s_SYMBOL_%s_MAX %" PRId64 "\n", pre, id, s, pre, id, g->sym[s].min,
                pre, id, g->sym[s].max);
    }
    fprintf(f, "\n#endif\n");
    return ferror(f) ? tg_err("write failed") : 0;
}

int tg_codegen_header_save(const tg_graph *g, const char *path)
{
    const char *base = strrchr(path, '/') ? strrchr(path, '/') + 1 : path;
    const char *dot = strchr(base, '.');
    char prefix[128];
    size_t n = dot ? (size_t)(dot - base) : strlen(base);
    snprintf(prefix, sizeof prefix, "%.*s", (int)n, base);
    tg_outfile o;
    if (tg_outfile_open(&o, path, false))
        return -1;
    int bad = tg_codegen_header(g, *prefix ? prefix : "model", o.f);
    return tg_outfile_close(&o, !bad) || bad ? -1 : 0;
}
