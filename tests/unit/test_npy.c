/* .npy read/write: every NumPy dtype round-trips with random data; every kind of
 * bad file gets its own clear error; the project's fixtures read. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "error.h"
#include "npy.h"
#include "unit.h"

/* A .npy image in memory: magic, version, header length, dict, data. */
static size_t make_npy(uint8_t *buf, int major, const char *dict, const void *data, size_t n)
{
    size_t hl = strlen(dict), lenbytes = major == 1 ? 2 : 4, o = 0;
    memcpy(buf, "\x93NUMPY", 6);
    buf[6] = major;
    buf[7] = 0;
    o = 8;
    for (size_t i = 0; i < lenbytes; i++)
        buf[o++] = (hl >> (8 * i)) & 0xff;
    memcpy(buf + o, dict, hl);
    o += hl;
    if (n)
        memcpy(buf + o, data, n);
    return o + n;
}

/* Read an image; returns tg_npy_read's result. */
static int read_mem(const uint8_t *buf, size_t n, tg_tensor *t)
{
    FILE *f = fmemopen((void *)buf, n, "rb");
    int rc = tg_npy_read(f, t);
    fclose(f);
    return rc;
}

static bool err_has(const char *s)
{
    if (strstr(tg_errmsg(), s))
        return true;
    fprintf(stderr, "  message was: %s (wanted '%s')\n", tg_errmsg(), s);
    return false;
}

/* An image with the given dict and n bytes of data: must fail mentioning want. */
static void check_bad(int major, const char *dict, size_t ndata, const char *want)
{
    static uint8_t buf[1 << 16];
    uint8_t data[256] = {0};
    size_t n = make_npy(buf, major, dict, data, ndata);
    tg_tensor t;
    CHECK(read_mem(buf, n, &t) == -1);
    CHECK(err_has(want));
}

static void test_roundtrip(void)
{
    for (int d = 1; d < TG_DTYPE_COUNT; d++) {
        if (!tg_dtype_npy_descr((tg_dtype)d))
            continue;
        for (int rep = 0; rep < 4; rep++) {
            tg_tensor t = {.dtype = (tg_dtype)d, .rank = rep == 0 ? 0 : rand() % 4 + 1};
            for (int i = 0; i < t.rank; i++)
                t.dims[i] = rand() % 5 + 1;
            CHECK(tg_tensor_alloc(&t) == 0);
            uint8_t *p = t.data;
            for (size_t i = 0; i < t.nbytes; i++)
                p[i] = rand();
            if (d == TG_BOOL)
                for (size_t i = 0; i < t.nbytes; i++)
                    p[i] &= 1;
            char *img;
            size_t len;
            FILE *f = open_memstream(&img, &len);
            CHECK(tg_npy_write(f, &t) == 0);
            fclose(f);
            CHECK(len == ((10 + (size_t)(img[8] | img[9] << 8)) + t.nbytes));
            CHECK((10 + (size_t)(img[8] | img[9] << 8)) % 64 == 0);
            CHECK(img[6] == 1 && img[7] == 0);
            CHECK(strstr(img + 10, tg_dtype_npy_descr(t.dtype)) != NULL);
            tg_tensor r;
            CHECK(read_mem((uint8_t *)img, len, &r) == 0);
            CHECK(r.dtype == t.dtype && r.rank == t.rank);
            CHECK(!memcmp(r.dims, t.dims, sizeof(int64_t) * t.rank));
            CHECK(r.nbytes == t.nbytes && !memcmp(r.data, t.data, t.nbytes));
            tg_tensor_free(&r);
            tg_tensor_free(&t);
            free(img);
        }
    }
}

static void test_versions_and_spellings(void)
{
    static uint8_t buf[4096];
    float v[6] = {1.5f, -2, 3, 4.25f, 5, -6};
    const char *dicts[] = {
        "{'descr': '<f4', 'fortran_order': False, 'shape': (2, 3), }\n",
        "{\"descr\": \"=f4\", \"shape\": (2,3), \"fortran_order\": False}",
    };
    for (int major = 1; major <= 3; major++)
        for (int k = 0; k < 2; k++) {
            size_t n = make_npy(buf, major, dicts[k], v, sizeof v);
            tg_tensor t;
            CHECK(read_mem(buf, n, &t) == 0);
            CHECK(t.dtype == TG_F32 && t.rank == 2 && t.dims[0] == 2 && t.dims[1] == 3);
            CHECK(t.data && !memcmp(t.data, v, sizeof v));
            tg_tensor_free(&t);
        }
    /* One-byte types: any byte-order character means the same thing. */
    const char *u8s[] = {"|u1", "<u1", ">u1", "=u1"};
    for (int k = 0; k < 4; k++) {
        char d[128];
        snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (3,), }", u8s[k]);
        size_t n = make_npy(buf, 1, d, "abc", 3);
        tg_tensor t;
        CHECK(read_mem(buf, n, &t) == 0);
        CHECK(t.dtype == TG_U8 && t.rank == 1 && t.dims[0] == 3);
        tg_tensor_free(&t);
    }
    /* Scalars and empty arrays. */
    size_t n = make_npy(buf, 1, "{'descr': '<i8', 'fortran_order': False, 'shape': (), }",
                        "\x07\0\0\0\0\0\0\0", 8);
    tg_tensor t;
    CHECK(read_mem(buf, n, &t) == 0 && t.rank == 0 && *(int64_t *)t.data == 7);
    tg_tensor_free(&t);
    n = make_npy(buf, 1, "{'descr': '<f8', 'fortran_order': False, 'shape': (0, 5), }", NULL, 0);
    CHECK(read_mem(buf, n, &t) == 0 && t.rank == 2 && t.dims[0] == 0 && t.nbytes == 0);
    tg_tensor_free(&t);
}

static void test_errors(void)
{
    const char *ok_tail = "'fortran_order': False, 'shape': (2,), }";
    char d[256];
    check_bad(1, "{'descr': '<f4', 'fortran_order': True, 'shape': (2,), }", 8, "Fortran");
    snprintf(d, sizeof d, "{'descr': '>f4', %s", ok_tail);
    check_bad(1, d, 8, "big-endian");
    snprintf(d, sizeof d, "{'descr': '|O', %s", ok_tail);
    check_bad(1, d, 16, "object");
    snprintf(d, sizeof d, "{'descr': '<U5', %s", ok_tail);
    check_bad(1, d, 40, "unsupported dtype descr '<U5'");
    snprintf(d, sizeof d, "{'descr': '<c8', %s", ok_tail);
    check_bad(1, d, 16, "unsupported dtype descr");
    check_bad(1, "{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", 8,
              "structured");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1,1,1,1,1,1,1,1,1), }", 4,
              "rank over 8");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 7, "truncated data");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (4294967296, 4294967296, 4294967296), }",
              0, "too large");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999999999999,), }",
              0, "too large");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (-2,), }", 0, "bad shape");
    check_bad(1, "{'descr': '<f4', 'shape': (2,), }", 8, "missing 'fortran_order'");
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1}", 8,
              "unexpected key 'x'");
    check_bad(4, "{}", 0, "unsupported format version 4");
    /* A header claiming gigabytes, then a few bytes, from a stream of unknown size:
     * must fail on the missing data (read in bounded chunks), not allocate 4 GiB. */
    check_bad(1, "{'descr': '<f4', 'fortran_order': False, 'shape': (1073741824,), }", 64,
              "truncated data");

    tg_tensor t;
    CHECK(read_mem((const uint8_t *)"\x93NUMPZ\x01\x00\x00\x00", 10, &t) == -1);
    CHECK(err_has("bad magic"));
    CHECK(read_mem((const uint8_t *)"\x93NUM", 4, &t) == -1);
    CHECK(err_has("truncated header"));
    uint8_t buf[64];
    size_t n = make_npy(buf, 1, "{'descr': '<f4', 'fortran", NULL, 0);
    buf[8] = 60;   /* claims more header than there is */
    CHECK(read_mem(buf, n, &t) == -1);
    CHECK(err_has("truncated header"));
}

/* read_mem with the dtype the caller expects (trun: the model input's). */
static int read_mem_as(const uint8_t *buf, size_t n, tg_dtype want, tg_tensor *t)
{
    FILE *f = fmemopen((void *)buf, n, "rb");
    int rc = tg_npy_read_as(f, want, t);
    fclose(f);
    return rc;
}

/* bf16 and float8: written with the ml_dtypes name as the descr (test_roundtrip
 * covers their round trip); np.save's raw spellings read only as the expected
 * type, of the right size, else refused naming the descr. */
static void test_ml_dtypes(void)
{
    static uint8_t buf[4096];
    const uint8_t bytes[4] = {0x80, 0x3f, 0x00, 0xc0};   /* bf16 1, -2 */
    struct { const char *descr; tg_dtype want; int nel; tg_dtype got; const char *err; } cases[] = {
        {"bfloat16", TG_DTYPE_NONE, 2, TG_BF16, NULL},
        {"bfloat16", TG_F32, 2, TG_BF16, NULL},   /* a named type is itself; trun then refuses */
        {"float8_e4m3fn", TG_DTYPE_NONE, 4, TG_F8E4M3, NULL},
        {"float8_e5m2", TG_DTYPE_NONE, 4, TG_F8E5M2, NULL},
        {"<V2", TG_BF16, 2, TG_BF16, NULL},
        {"|V2", TG_BF16, 2, TG_BF16, NULL},
        {"<V1", TG_F8E4M3, 4, TG_F8E4M3, NULL},
        {"|V1", TG_F8E5M2, 4, TG_F8E5M2, NULL},
        {"<f1", TG_F8E5M2, 4, TG_F8E5M2, NULL},   /* np.save's float8_e5m2 */
        {"<V2", TG_DTYPE_NONE, 2, 0, "descr '<V2' is raw 2-byte data"},
        {"<V2", TG_F16, 2, 0, "not read as f16"},   /* NumPy has f16: '<f2' says so */
        {"<V2", TG_F8E4M3, 2, 0, "not read as f8e4m3"},
        {"<V1", TG_BF16, 4, 0, "not read as bf16"},
        {"<f1", TG_F8E4M3, 4, 0, "not read as f8e4m3"},
        {"<V1", TG_U8, 4, 0, "not read as u8"},
        {"<V4", TG_BF16, 1, 0, "unsupported dtype descr '<V4'"},
        {"float8_e4m3fnuz", TG_DTYPE_NONE, 4, TG_F8E4M3FNUZ, NULL},
        {"int4", TG_DTYPE_NONE, 4, TG_I4, NULL},
        {"float4_e2m1fn", TG_DTYPE_NONE, 4, TG_F4E2M1, NULL},
        {"<V1", TG_U4, 4, TG_U4, NULL},            /* np.save's uint4 */
        {"<V1", TG_F8E5M2FNUZ, 4, TG_F8E5M2FNUZ, NULL},
        {"<f1", TG_F8E5M2FNUZ, 4, 0, "not read as f8e5m2fnuz"},
        {"float8_e8m0fnu", TG_F8E4M3, 4, 0, "unknown dtype descr 'float8_e8m0fnu'"},
        {"bf16", TG_BF16, 2, 0, "unknown dtype descr 'bf16'"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char d[128];
        snprintf(d, sizeof d, "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }",
                 cases[i].descr, cases[i].nel);
        size_t n = make_npy(buf, 1, d, bytes, 4);
        tg_tensor t;
        int rc = read_mem_as(buf, n, cases[i].want, &t);
        if (cases[i].err) {
            CHECK(rc == -1);
            CHECK(err_has(cases[i].err));
            continue;
        }
        CHECK(rc == 0);
        if (rc < 0) {
            fprintf(stderr, "  %s: %s\n", cases[i].descr, tg_errmsg());
            continue;
        }
        CHECK(t.dtype == cases[i].got && t.dims[0] == cases[i].nel && !memcmp(t.data, bytes, 4));
        tg_tensor_free(&t);
    }
    /* Without the expected dtype a raw descr says how to write the file instead. */
    size_t n = make_npy(buf, 1, "{'descr': '<V1', 'fortran_order': False, 'shape': (4,), }",
                        bytes, 4);
    tg_tensor t;
    CHECK(read_mem(buf, n, &t) == -1);
    CHECK(err_has("'float8_e4m3fn'") && err_has("trun(1)"));
    /* The written header carries the name, no byte order, as the fixtures do. */
    tg_tensor b = {.dtype = TG_BF16, .rank = 1, .dims = {2}};
    CHECK(tg_tensor_alloc(&b) == 0);
    memcpy(b.data, bytes, 4);
    char *img;
    size_t len;
    FILE *f = open_memstream(&img, &len);
    CHECK(tg_npy_write(f, &b) == 0);
    fclose(f);
    CHECK(strstr(img + 10, "{'descr': 'bfloat16', 'fortran_order': False, 'shape': (2,), }"));
    free(img);
    tg_tensor_free(&b);
}

static void test_save_load(void)
{
    char dir[] = "/tmp/test_npy.XXXXXX", path[64], bad[96];
    CHECK(mkdtemp(dir) != NULL);
    snprintf(path, sizeof path, "%s/a.npy", dir);
    tg_tensor t = {.dtype = TG_F64, .rank = 2, .dims = {3, 7}}, r;
    CHECK(tg_tensor_alloc(&t) == 0);
    for (int i = 0; i < 21; i++)
        ((double *)t.data)[i] = rand() / (double)RAND_MAX - 0.5;
    CHECK(tg_npy_save(path, &t) == 0);
    CHECK(tg_npy_load(path, &r) == 0);
    CHECK(r.nbytes == t.nbytes && !memcmp(r.data, t.data, t.nbytes));
    tg_tensor_free(&r);
    /* A directory that does not exist: an error, and nothing left behind. */
    snprintf(bad, sizeof bad, "%s/no/such/a.npy", dir);
    CHECK(tg_npy_save(bad, &t) == -1);
    CHECK(err_has("No such file"));
    CHECK(tg_npy_load(bad, &r) == -1);
    CHECK(err_has("No such file"));
    tg_tensor_free(&t);
    unlink(path);
    CHECK(rmdir(dir) == 0);   /* fails if a temporary file was left */
}

static void test_fixtures(void)
{
    const char *fix = getenv("TG_FIXTURES");
    if (!fix)
        fix = "tests/fixtures";
    struct { const char *name; tg_dtype dt; int rank; int64_t d0, d1; } cases[] = {
        {"mlp.in0.b3.npy", TG_F32, 2, 3, 784},
        {"cnn.in0.b1.npy", TG_F32, 4, 1, 3},
        {"tinygpt.in0.b3.npy", TG_I64, 2, 3, 64},
        {"tinygpt.out0.b1.npy", TG_F32, 3, 1, 64},
        {"ml_dtypes/narrow.in0.npy", TG_BF16, 2, 2, 3},   /* written for ml_dtypes */
    };
    for (size_t i = 0; i < sizeof cases / sizeof *cases; i++) {
        char path[512];
        snprintf(path, sizeof path, "%s/%s", fix, cases[i].name);
        tg_tensor t;
        int rc = tg_npy_load(path, &t);
        CHECK(rc == 0);
        if (rc < 0) {
            fprintf(stderr, "  %s: %s\n", path, tg_errmsg());
            continue;
        }
        CHECK(t.dtype == cases[i].dt && t.rank == cases[i].rank);
        CHECK(t.dims[0] == cases[i].d0 && t.dims[1] == cases[i].d1);
        /* Real data: finite floats, not all zero; token ids non-negative. */
        int64_t n = tg_tensor_numel(t.rank, t.dims), nonzero = 0, bad = 0;
        for (int64_t k = 0; k < n; k++) {
            double v = tg_load_f64(t.dtype, t.data, k);
            nonzero += v != 0;
            bad += !isfinite(v) || (t.dtype == TG_I64 && v < 0);
        }
        CHECK(nonzero > n / 2 && bad == 0);
        tg_tensor_free(&t);
    }
}

int main(void)
{
    srand(12345);
    test_roundtrip();
    test_versions_and_spellings();
    test_errors();
    test_ml_dtypes();
    test_save_load();
    test_fixtures();
    return unit_report();
}
