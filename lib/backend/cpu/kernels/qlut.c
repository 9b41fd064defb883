/* Activations of u8 values as 256-entry tables (qgemm.h): an int8 layer
 * with a fused activation requantizes its pre-activation to u8 and maps
 * each byte through the table, which costs two byte permutes and a blend a
 * 64 bytes where the activation itself (silu: an exp and a division) costs
 * some twenty vector operations a 16. */
#include <math.h>
#include <stdbool.h>
#include <string.h>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "kernels.h"
#include "qgemm.h"

void tgk_act_lut(int act, float p_scale, int32_t p_zero, float y_scale, int32_t y_zero,
                 int32_t lo, int32_t hi, uint8_t *lut)
{
    for (int b = 0; b < 256; b++) {
        double q = nearbyint(tgk_qact_value(act, (double)(b - p_zero) * p_scale) / y_scale + y_zero);
        lut[b] = (uint8_t)(q < lo ? lo : q > hi ? hi : q);
    }
}

typedef struct {
    int act;
    float p_scale, y_scale;
    int32_t p_zero, y_zero, lo, hi;
} lut_args;

static int fill_lut(void *ctx, void *buf)
{
    const lut_args *l = ctx;
    tgk_act_lut(l->act, l->p_scale, l->p_zero, l->y_scale, l->y_zero, l->lo, l->hi, buf);
    return 0;
}

const uint8_t *tgk_act_lut_once(void **slot, int act, float p_scale, int32_t p_zero,
                                float y_scale, int32_t y_zero, int32_t lo, int32_t hi)
{
    lut_args l = {act, p_scale, y_scale, p_zero, y_zero, lo, hi};
    return tgk_qpack_once(slot, 256, fill_lut, &l);
}

typedef struct {
    const uint8_t *lut;
    uint8_t *q;
} map_job;

#if defined(__x86_64__)
/* Bytes 0-127 from the first two registers of the table, 128-255 from the
 * last two: vpermt2b takes an index's low 7 bits, its top bit picks. */
__attribute__((target("avx512f,avx512bw,avx512vbmi")))
static void map_vbmi(const uint8_t *lut, uint8_t *q, int64_t b, int64_t e)
{
    __m512i t0 = _mm512_loadu_si512(lut), t1 = _mm512_loadu_si512(lut + 64);
    __m512i t2 = _mm512_loadu_si512(lut + 128), t3 = _mm512_loadu_si512(lut + 192);
    for (int64_t i = b; i < e; i += 64) {
        __mmask64 k = e - i >= 64 ? ~(__mmask64)0 : ((__mmask64)1 << (e - i)) - 1;
        __m512i x = _mm512_maskz_loadu_epi8(k, q + i);
        __m512i lo = _mm512_permutex2var_epi8(t0, x, t1), hi = _mm512_permutex2var_epi8(t2, x, t3);
        _mm512_mask_storeu_epi8(q + i, k, _mm512_mask_blend_epi8(_mm512_movepi8_mask(x), lo, hi));
    }
}
#endif

static bool have_vbmi(void)
{
#if defined(__x86_64__)
    static int have = -1;
    int h = __atomic_load_n(&have, __ATOMIC_RELAXED);
    if (h < 0) {
        __builtin_cpu_init();
        h = __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw") &&
            __builtin_cpu_supports("avx512vbmi");
        __atomic_store_n(&have, h, __ATOMIC_RELAXED);
    }
    return h;
#else
    return false;
#endif
}

static void map_task(void *ctx, int64_t b, int64_t e)
{
    const map_job *j = ctx;
#if defined(__x86_64__)
    if (have_vbmi() && strcmp(tgk_qgemm_path(), "scalar")) {
        map_vbmi(j->lut, j->q, b, e);
        return;
    }
#endif
    for (int64_t i = b; i < e; i++)
        j->q[i] = j->lut[j->q[i]];
}

void tgk_lut_u8(int64_t n, const uint8_t *lut, uint8_t *q)
{
    map_job j = {lut, q};
    tgk_parallel_for(n, 1 << 16, map_task, &j);
}
