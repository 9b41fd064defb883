/* The ONNX reader on the op-coverage models (replay_onnx replays the fuzz
 * corpus): each is imported from memory and must give a valid graph or a clean
 * error. Run under ASan/UBSan by `make check-sanitizers`. */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "graph.h"
#include "import/import.h"
#include "unit.h"

static unsigned char *slurp(const char *path, size_t *len)
{
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    rewind(f);
    unsigned char *buf = malloc(n > 0 ? n : 1);
    *len = buf && fread(buf, 1, n, f) == (size_t)n ? (size_t)n : 0;
    fclose(f);
    return buf;
}

/* Does the model at path (M.onnx) have reference outputs (M.out0.b1.npy)?
 * gen_onnx.py writes them for the good models only. */
static int has_reference(const char *path)
{
    char ref[4096 + 512];
    size_t n = strlen(path) - strlen(".onnx");
    snprintf(ref, sizeof ref, "%.*s.out0.b1.npy", (int)n, path);
    FILE *f = fopen(ref, "rb");
    if (f) fclose(f);
    return f != NULL;
}

/* Import every .onnx file of dir: those with reference outputs must give a
 * valid graph, the others (bad_models) a clean error. Returns how many gave a graph. */
static int replay(const char *dir, int *files)
{
    DIR *d = opendir(dir);
    int ok = 0;
    *files = 0;
    CHECK(d != NULL);
    for (struct dirent *e; d && (e = readdir(d));) {
        size_t n = strlen(e->d_name);
        if (n < 5 || strcmp(e->d_name + n - 5, ".onnx")) continue;
        char path[4096 + sizeof e->d_name + 1];
        size_t len;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        unsigned char *buf = slurp(path, &len);
        CHECK(buf != NULL);
        tg_graph *g = tg_import_onnx_mem(buf, len, dir, NULL);
        /* good models without references: tcompile.bats and trun.bats run these, and
         * texport_onnx.bats the one with the onnx suite's expected output */
        int good = has_reference(path) || !strcmp(e->d_name, "loop_forever.onnx") ||
                   !strcmp(e->d_name, "loop_scan_used.onnx") ||
                   !strcmp(e->d_name, "attention_fp16_expanded.onnx");
        if (good && !g) fprintf(stderr, "%s: %s\n", e->d_name, tg_errmsg());
        CHECK(!g == !good);
        if (g) {
            ok++;
            CHECK(tg_graph_validate(g) == 0);
        } else {
            CHECK(tg_errmsg()[0] != 0);     /* refused with a message */
        }
        (*files)++;
        tg_graph_free(g);
        free(buf);
    }
    if (d) closedir(d);
    return ok;
}

int main(void)
{
    const char *src = getenv("TG_SRCDIR");
    char dir[4096];
    int files, ok;
    snprintf(dir, sizeof dir, "%s/tests/fixtures/onnx", src ? src : ".");
    ok = replay(dir, &files);
    printf("coverage models: %d files, %d imported\n", files, ok);
    CHECK(ok > 0 && files > ok);        /* both kinds are there */
    return unit_report();
}
