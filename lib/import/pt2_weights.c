/* Weights of a .pt2 archive: see pt2.h. A storage file is read (and its CRC
 * checked) once however many tensors view it. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"
#include "import/zip.h"

typedef struct {
    char *entry;            /* zip entry name */
    uint8_t *data;
    size_t len;
} storage;

typedef struct {
    char *key;              /* entry + view, see view_key */
    int v;
} made;

struct pt2_weights {
    tg_zip *z;
    cJSON *cfg[2];          /* weights, constants: the "config" objects' parents */
    char *dir[2];           /* "<prefix>/data/weights/" ... */
    storage *st;
    int nst;
    made *mk;
    int nmk;
};

static cJSON *read_config(tg_zip *z, const char *entry)
{
    int i = tg_zip_find(z, entry);
    if (i < 0)
        return NULL;        /* no weights of that kind */
    char *txt = tg_zip_read(z, i, NULL);
    if (!txt)
        return NULL;
    cJSON *j = cJSON_Parse(txt);
    free(txt);
    if (!j)
        tg_err("%s: malformed JSON", entry);
    return j;
}

pt2_weights *pt2_weights_open(tg_zip *z, const char *prefix, const char *model)
{
    pt2_weights *w = calloc(1, sizeof *w);
    if (!w) {
        tg_err("out of memory");
        return NULL;
    }
    w->z = z;
    static const char *kind[2] = {"weights", "constants"};
    for (int k = 0; k < 2; k++) {
        char entry[512];
        snprintf(entry, sizeof entry, "%s/data/%s/%s_%s_config.json", prefix, kind[k], model,
                 kind[k]);
        tg_err_clear();
        w->cfg[k] = read_config(z, entry);
        if (!w->cfg[k] && *tg_errmsg()) {
            pt2_weights_close(w);
            return NULL;
        }
        snprintf(entry, sizeof entry, "%s/data/%s/", prefix, kind[k]);
        w->dir[k] = strdup(entry);
        if (!w->dir[k]) {
            pt2_weights_close(w);
            tg_err("out of memory");
            return NULL;
        }
    }
    return w;
}

void pt2_weights_close(pt2_weights *w)
{
    if (!w)
        return;
    for (int k = 0; k < 2; k++) {
        cJSON_Delete(w->cfg[k]);
        free(w->dir[k]);
    }
    for (int i = 0; i < w->nst; i++) {
        free(w->st[i].entry);
        free(w->st[i].data);
    }
    for (int i = 0; i < w->nmk; i++)
        free(w->mk[i].key);
    free(w->st);
    free(w->mk);
    free(w);
}

static const storage *get_storage(pt2_weights *w, const char *entry)
{
    for (int i = 0; i < w->nst; i++)
        if (!strcmp(w->st[i].entry, entry))
            return &w->st[i];
    int zi = tg_zip_find(w->z, entry);
    if (zi < 0) {
        tg_err("archive entry %s missing", entry);
        return NULL;
    }
    storage *grown = realloc(w->st, (size_t)(w->nst + 1) * sizeof *grown);
    if (!grown) {
        tg_err("out of memory");
        return NULL;
    }
    w->st = grown;
    storage s = {strdup(entry), NULL, 0};
    if (!s.entry) {
        tg_err("out of memory");
        return NULL;
    }
    s.data = tg_zip_read(w->z, zi, &s.len);
    if (!s.data) {
        free(s.entry);
        return NULL;
    }
    w->st[w->nst] = s;
    return &w->st[w->nst++];
}

/* The view's integers from a TensorMeta list ({"as_int": n} each). */
static int meta_ints(const cJSON *list, int64_t *out, int max, const char *what)
{
    int n = 0;
    const cJSON *e;
    if (!cJSON_IsArray(list))
        return tg_err("tensor_meta: %s missing", what);
    cJSON_ArrayForEach(e, list) {
        if (n >= max)
            return tg_err("tensor_meta: too many %s", what);
        if (pt2_json_int(cJSON_GetObjectItemCaseSensitive(e, "as_int"), &out[n]) < 0 ||
            out[n] < 0)
            return tg_err("tensor_meta: %s must be non-negative integers", what);
        n++;
    }
    return n;
}

/* Copy a strided view of the storage into a contiguous row-major buffer. */
static int gather_view(const storage *st, size_t es, int rank, const int64_t *size,
                       const int64_t *stride, int64_t off, int64_t numel, uint8_t *out)
{
    if (numel == 0)
        return 0;
    if (st->len == 0) {                 /* an empty file stands for zeros */
        memset(out, 0, (size_t)numel * es);
        return 0;
    }
    /* the highest element the view touches must lie in the storage */
    uint64_t last = (uint64_t)off, have = st->len / es;
    for (int i = 0; i < rank; i++) {
        if (stride[i] && (uint64_t)(size[i] - 1) > (UINT64_MAX - last) / (uint64_t)stride[i])
            return tg_err("view overflows");
        last += (uint64_t)(size[i] - 1) * (uint64_t)stride[i];
    }
    if (last >= have)
        return tg_err("%s holds %llu elements, the tensor needs %llu (file too short)",
                      st->entry, (unsigned long long)have, (unsigned long long)last + 1);
    int64_t idx[TG_MAX_RANK] = {0}, expect = 1;
    bool contiguous = true;
    for (int i = rank - 1; i >= 0; i--) {
        contiguous &= size[i] == 1 || stride[i] == expect;
        expect *= size[i];
    }
    if (contiguous) {
        memcpy(out, st->data + (size_t)off * es, (size_t)numel * es);
        return 0;
    }
    for (int64_t k = 0; k < numel; k++) {
        int64_t src = off;
        for (int i = 0; i < rank; i++)
            src += idx[i] * stride[i];
        memcpy(out + (size_t)k * es, st->data + (size_t)src * es, es);
        for (int i = rank - 1; i >= 0 && ++idx[i] == size[i]; i--)
            idx[i] = 0;
    }
    return 0;
}

static int remember(pt2_weights *w, const char *key, int v)
{
    made *grown = realloc(w->mk, (size_t)(w->nmk + 1) * sizeof *grown);
    if (!grown)
        return tg_err("out of memory");
    w->mk = grown;
    w->mk[w->nmk].key = strdup(key);
    if (!w->mk[w->nmk].key)
        return tg_err("out of memory");
    w->mk[w->nmk++].v = v;
    return 0;
}

static int add_weight(pt2_weights *w, tg_graph *g, const char *fqn, const cJSON *ent, int k)
{
    const cJSON *path = cJSON_GetObjectItemCaseSensitive(ent, "path_name");
    const cJSON *pickle = cJSON_GetObjectItemCaseSensitive(ent, "use_pickle");
    const cJSON *meta = cJSON_GetObjectItemCaseSensitive(ent, "tensor_meta");
    if (cJSON_IsTrue(pickle))
        return tg_err("weight '%s' is stored pickled (a tensor subclass); texport reads "
                      "only raw tensors", fqn);
    if (!cJSON_IsString(path) || !cJSON_IsObject(meta))
        return tg_err("weight '%s': malformed config entry", fqn);
    const cJSON *dtj = cJSON_GetObjectItemCaseSensitive(meta, "dtype");
    tg_dtype dt = cJSON_IsNumber(dtj) ? pt2_dtype((int64_t)dtj->valuedouble) : TG_DTYPE_NONE;
    if (dt == TG_DTYPE_NONE)
        return tg_err("weight '%s': unsupported dtype", fqn);
    int64_t size[TG_MAX_RANK], stride[TG_MAX_RANK], off;
    int rank = meta_ints(cJSON_GetObjectItemCaseSensitive(meta, "sizes"), size, TG_MAX_RANK,
                         "sizes");
    int nstride = rank < 0 ? -1 : meta_ints(cJSON_GetObjectItemCaseSensitive(meta, "strides"),
                                            stride, TG_MAX_RANK, "strides");
    if (rank < 0 || nstride < 0 ||
        pt2_json_int(cJSON_GetObjectItemCaseSensitive(
                         cJSON_GetObjectItemCaseSensitive(meta, "storage_offset"), "as_int"),
                     &off) < 0 || off < 0)
        return tg_err("weight '%s': %s", fqn, *tg_errmsg() ? tg_errmsg() : "bad view");
    if (nstride != rank)
        return tg_err("weight '%s': %d sizes but %d strides", fqn, rank, nstride);

    /* tied weights: the same view of the same storage is one constant */
    char key[1024];
    int kl = snprintf(key, sizeof key, "%s%s|%d|%lld", w->dir[k], path->valuestring, (int)dt,
                      (long long)off);
    for (int i = 0; i < rank && kl < (int)sizeof key; i++)
        kl += snprintf(key + kl, sizeof key - (size_t)kl, "|%lld:%lld", (long long)size[i],
                       (long long)stride[i]);
    for (int i = 0; i < w->nmk; i++)
        if (!strcmp(w->mk[i].key, key))
            return w->mk[i].v;

    char entry[1024];
    snprintf(entry, sizeof entry, "%s%s", w->dir[k], path->valuestring);
    const storage *st = get_storage(w, entry);
    if (!st)
        return tg_err("weight '%s': %s", fqn, tg_errmsg());
    tg_shape shape = tg_shape_of(rank, size);
    tg_dim nd;
    int64_t numel;
    if (tg_shape_numel(&shape, &nd) < 0 || !tg_dim_is_const(nd, &numel))
        return tg_err("weight '%s': too large", fqn);
    size_t es = tg_dtype_size(dt);
    uint8_t *data = malloc(numel ? (size_t)numel * es : 1);
    if (!data)
        return tg_err("weight '%s': out of memory", fqn);
    if (gather_view(st, es, rank, size, stride, off, numel, data) < 0) {
        free(data);
        return tg_err("weight '%s': %s", fqn, tg_errmsg());
    }
    int v = tg_graph_add_const(g, fqn, dt, &shape, data, (size_t)numel * es);
    if (v < 0 || remember(w, key, v) < 0)
        return -1;
    return v;
}

int pt2_weight(pt2_weights *w, tg_graph *g, const char *fqn)
{
    for (int k = 0; k < 2; k++) {
        const cJSON *cfg = cJSON_GetObjectItemCaseSensitive(w->cfg[k], "config");
        const cJSON *ent = cJSON_GetObjectItemCaseSensitive(cfg, fqn);
        if (ent)
            return add_weight(w, g, fqn, ent, k);
    }
    return tg_err("weight '%s' is not in the archive's weight or constant configs", fqn);
}
