/* Calibration data from .npy files (the naming rule is in quant.h and
 * tquant(1)). Every file is checked against the graph's input before any run:
 * dtype, rank, constant dims; symbolic dims are checked when the sample runs. */
#include <dirent.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "../error.h"
#include "../npy.h"
#include "quant.h"

typedef struct {
    char **v;
    int n, cap;
} strlist;

static int push(strlist *l, char *s)
{
    if (!s)
        return tg_err("out of memory");
    if (l->n == l->cap) {
        int cap = l->cap ? 2 * l->cap : 64;
        char **p = realloc(l->v, sizeof *p * (size_t)cap);
        if (!p) {
            free(s);
            return tg_err("out of memory");
        }
        l->v = p, l->cap = cap;
    }
    l->v[l->n++] = s;
    return 0;
}

static void strlist_free(strlist *l)
{
    for (int i = 0; i < l->n; i++)
        free(l->v[i]);
    free(l->v);
}

static bool is_npy(const char *name)
{
    size_t n = strlen(name);
    return n > 4 && !strcmp(name + n - 4, ".npy") && name[0] != '.';
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* The .npy files of a path: itself, or a folder's, sorted. */
static int list_files(const char *path, strlist *out)
{
    struct stat st;
    if (stat(path, &st))
        return tg_err("%s: no such file or folder", path);
    if (!S_ISDIR(st.st_mode))
        return push(out, strdup(path));
    DIR *d = opendir(path);
    if (!d)
        return tg_err("%s: cannot open the folder", path);
    int first = out->n;
    for (struct dirent *e; (e = readdir(d));) {
        if (!is_npy(e->d_name))
            continue;
        char *p = malloc(strlen(path) + strlen(e->d_name) + 2);
        if (p)
            sprintf(p, "%s/%s", path, e->d_name);
        if (push(out, p)) {
            closedir(d);
            return -1;
        }
    }
    closedir(d);
    if (out->n == first)
        return tg_err("%s: no .npy files in the folder", path);
    qsort(out->v + first, (size_t)(out->n - first), sizeof(char *), cmp_str);
    return 0;
}

static const char *base(const char *p)
{
    const char *s = strrchr(p, '/');
    return s ? s + 1 : p;
}

/* The input a file of a several-input graph is for (NAME.KEY.npy, the longest
 * input name that fits), and where its KEY starts; -1 when none fits. */
static int input_of(const tg_graph *g, const char *file, const char **key)
{
    const char *b = base(file);
    int best = -1;
    size_t blen = 0;
    for (int i = 0; i < g->ninput; i++) {
        const char *nm = g->values[g->inputs[i]].name;
        size_t n = strlen(nm);
        if (!strncmp(b, nm, n) && b[n] == '.' && strlen(b + n) > 5 && n > blen)
            best = i, blen = n;
    }
    *key = best >= 0 ? b + blen + 1 : NULL;
    return best;
}

/* Load path for input i and check it; *split: how many samples its batch holds. */
static int load_checked(const tg_graph *g, int i, const char *path, tg_tensor *t, int64_t *split)
{
    const tg_value *v = &g->values[g->inputs[i]];
    char want[256], got[256];
    if (tg_npy_load(path, t))
        return tg_err_append("(%s)", path);
    tg_shape_format(&v->shape, g->sym, want, sizeof want);
    tg_tensor_describe(t, got, sizeof got);
    if (t->dtype != v->dtype)
        return tg_err("%s: dtype %s, but input '%s' is %s%s", path, tg_dtype_name(t->dtype),
                      v->name, tg_dtype_name(v->dtype), want);
    if (t->rank == v->shape.rank - 1 && t->rank < TG_MAX_RANK) {     /* one sample, no batch */
        memmove(t->dims + 1, t->dims, sizeof(int64_t) * (size_t)t->rank);
        t->dims[0] = 1;
        t->rank++;
    }
    if (t->rank != v->shape.rank)
        return tg_err("%s: %s does not fit input '%s' %s%s", path, got, v->name,
                      tg_dtype_name(v->dtype), want);
    *split = 1;
    for (int k = 0; k < t->rank; k++) {
        int64_t c;
        if (!tg_dim_is_const(v->shape.d[k], &c) || c == t->dims[k])
            continue;
        if (k == 0 && c > 0 && t->dims[0] % c == 0 && g->ninput == 1) {
            *split = t->dims[0] / c;
            continue;
        }
        return tg_err("%s: %s does not fit input '%s' %s%s (dim %d)", path, got, v->name,
                      tg_dtype_name(v->dtype), want, k);
    }
    if (tg_tensor_numel(t->rank, t->dims) == 0)
        return tg_err("%s: the array is empty", path);
    return 0;
}

static int add_sample(tg_dataset *ds, int *cap, const tg_tensor *in)
{
    if (ds->nsample == *cap) {
        int c = *cap ? 2 * *cap : 64;
        tg_tensor *p = realloc(ds->t, sizeof *p * (size_t)c * (size_t)ds->ninput);
        if (!p)
            return tg_err("out of memory");
        ds->t = p, *cap = c;
    }
    memcpy(ds->t + (size_t)ds->nsample * ds->ninput, in, sizeof *in * (size_t)ds->ninput);
    ds->nsample++;
    return 0;
}

/* One file's batch as `split` samples of the graph's batch size. */
static int add_split(tg_dataset *ds, int *cap, tg_tensor *t, int64_t split)
{
    if (split == 1)
        return add_sample(ds, cap, t);
    size_t bytes = t->nbytes / (size_t)split;
    for (int64_t s = 0; s < split; s++) {
        tg_tensor part = *t;
        part.dims[0] = t->dims[0] / split;
        if (tg_tensor_alloc(&part))
            return -1;
        memcpy(part.data, (char *)t->data + s * bytes, bytes);
        if (add_sample(ds, cap, &part)) {
            tg_tensor_free(&part);
            return -1;
        }
    }
    tg_tensor_free(t);
    return 0;
}

static int load_single(const tg_graph *g, const strlist *files, tg_dataset *ds, int *cap)
{
    for (int f = 0; f < files->n; f++) {
        tg_tensor t = {0};
        int64_t split;
        if (load_checked(g, 0, files->v[f], &t, &split) || add_split(ds, cap, &t, split)) {
            tg_tensor_free(&t);
            return -1;
        }
    }
    return 0;
}

/* Several inputs: NAME.KEY.npy grouped by KEY, in sorted order. */
static int load_multi(const tg_graph *g, strlist *files, tg_dataset *ds, int *cap, tg_tensor *in)
{
    qsort(files->v, (size_t)files->n, sizeof(char *), cmp_str);
    bool *used = calloc((size_t)files->n, 1);
    int rc = used ? 0 : tg_err("out of memory");
    for (int f = 0; f < files->n && rc == 0; f++) {
        const char *key, *k2;
        if (input_of(g, files->v[f], &key) < 0) {
            rc = tg_err("%s: names no graph input (with several inputs, files are"
                        " NAME.KEY.npy)", files->v[f]);
            break;
        }
        if (used[f])
            continue;
        memset(in, 0, sizeof *in * (size_t)g->ninput);
        for (int i = 0; i < g->ninput && rc == 0; i++) {
            int found = -1;
            int64_t split;
            for (int h = f; h < files->n && found < 0; h++)
                if (!used[h] && input_of(g, files->v[h], &k2) == i && !strcmp(k2, key))
                    found = h;
            if (found < 0)
                rc = tg_err("sample '%.*s': no file for input '%s' (%s.%s)",
                            (int)(strlen(key) - 4), key, g->values[g->inputs[i]].name,
                            g->values[g->inputs[i]].name, key);
            else if (load_checked(g, i, files->v[found], &in[i], &split))
                rc = -1;
            else
                used[found] = true;
        }
        if (rc == 0)
            rc = add_sample(ds, cap, in);
        if (rc)
            for (int i = 0; i < g->ninput; i++)
                tg_tensor_free(&in[i]);
    }
    free(used);
    return rc;
}

int tg_dataset_load(const tg_graph *g, int npaths, const char *const *paths, tg_dataset *ds)
{
    strlist files = {0};
    int cap = 0, rc = 0;
    memset(ds, 0, sizeof *ds);
    ds->ninput = g->ninput;
    if (g->ninput < 1)
        return tg_err("the graph has no inputs to calibrate with");
    for (int i = 0; i < npaths && rc == 0; i++)
        rc = list_files(paths[i], &files);
    if (rc == 0 && files.n == 0)
        rc = tg_err("no calibration files");
    tg_tensor *in = rc ? NULL : calloc((size_t)g->ninput, sizeof *in);
    if (rc == 0 && !in)
        rc = tg_err("out of memory");
    if (rc == 0)
        rc = g->ninput == 1 ? load_single(g, &files, ds, &cap)
                            : load_multi(g, &files, ds, &cap, in);
    free(in);
    strlist_free(&files);
    if (rc)
        tg_dataset_free(ds);
    return rc;
}

void tg_dataset_free(tg_dataset *ds)
{
    for (int i = 0; i < ds->nsample * ds->ninput; i++)
        tg_tensor_free(&ds->t[i]);
    free(ds->t);
    memset(ds, 0, sizeof *ds);
}
