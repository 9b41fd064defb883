/* A fuzz target replayed as an ordinary unit test: every file of its corpus
 * (fuzz/corpus/FUZZ_TARGET under $TG_SRCDIR: the minimized corpus and each input
 * that once failed) goes through its LLVMFuzzerTestOneInput, which aborts on a
 * finding. Built by the project's compiler, so make check-sanitizers runs them
 * under ASan and UBSan too.
 *   replay_NAME              the corpus
 *   replay_NAME FILE...      these inputs (reproducing a finding without clang) */
#include <dirent.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* The input in a buffer of exactly its size, so a read past it is caught. */
static int replay(const char *path)
{
    FILE *f = fopen(path, "rb");
    if (!f || fseek(f, 0, SEEK_END) < 0) {
        fprintf(stderr, "%s: cannot read\n", path);
        if (f)
            fclose(f);
        return -1;
    }
    long n = ftell(f);
    rewind(f);
    uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
    if (!buf || n < 0 || fread(buf, 1, (size_t)n, f) != (size_t)n) {
        fprintf(stderr, "%s: cannot read\n", path);
        fclose(f);
        free(buf);
        return -1;
    }
    fclose(f);
    LLVMFuzzerTestOneInput(buf, (size_t)n);
    free(buf);
    return 0;
}

static int name_order(const struct dirent **a, const struct dirent **b)
{
    return strcmp((*a)->d_name, (*b)->d_name);
}

static int skip_dots(const struct dirent *e) { return e->d_name[0] != '.'; }

int main(int argc, char **argv)
{
    int failed = 0;
    if (argc > 1) {
        for (int i = 1; i < argc; i++)
            failed |= replay(argv[i]) < 0;
        return failed;
    }
    const char *src = getenv("TG_SRCDIR");
    char dir[4096];
    snprintf(dir, sizeof dir, "%s/fuzz/corpus/%s", src ? src : ".", FUZZ_TARGET);
    struct dirent **names;
    int n = scandir(dir, &names, skip_dots, name_order);
    if (n <= 0) {
        fprintf(stderr, "%s: no corpus files\n", dir);
        return 1;
    }
    for (int i = 0; i < n; i++) {
        char path[8192];
        snprintf(path, sizeof path, "%s/%s", dir, names[i]->d_name);
        failed |= replay(path) < 0;
        free(names[i]);
    }
    free(names);
    printf("%s: %d inputs replayed\n", dir, n);
    return failed;
}
