/* The CPU's interpreter glue (run_*.c): one entry point per op family, which
 * cpu.c's run finds by op, and the helpers they share. The glue turns
 * attributes and concrete shapes into kernel calls (kernels.h, tensor_ops.h);
 * no math here. */
#ifndef TG_BACKEND_CPU_RUN_H
#define TG_BACKEND_CPU_RUN_H

#include <stdbool.h>
#include <stdint.h>

#include "../../error.h"
#include "../../graph.h"
#include "../../ops/family.h"
#include "../../tensor.h"
#include "../backend.h"         /* tg_run_ctx */
#include "kernels/kernels.h"
#include "kernels/tensor_ops.h"

typedef int (*tg_run_fn)(const tg_run_ctx *c);

/* One entry point per family of ops.def (tg_run_<family>), found through
 * cpu.c's table generated from it; an entry of several ops switches on
 * c->n->op, and states how many it handles (TG_FAMILY_HANDLES, family.h).
 * 0 or -1 (tg_err). */
#define OP(id, name, min_in, max_in, infer, family, flag) int tg_run_##family(const tg_run_ctx *c);
#include "../../ops/ops.def"
#undef OP

/* The kernels number dtypes like tg_dtype. */
static inline tgk_dtype tg_run_kt(tg_dtype t) { return (tgk_dtype)t; }

static inline int64_t tg_run_numel(const tg_tensor *t)
{
    int64_t n = 1;
    for (int i = 0; i < t->rank; i++)
        n *= t->dims[i];
    return n;
}

/* Product of dims [from, to). */
static inline int64_t tg_run_prod(const int64_t *dims, int from, int to)
{
    int64_t n = 1;
    for (int i = from; i < to; i++)
        n *= dims[i];
    return n;
}

/* An axis attribute normalized to [0, rank) (validated by inference). */
int tg_run_axis(const tg_run_ctx *c, const char *name, int64_t dflt, int rank);

/* t's data as float32: its own when f32, else a converted copy in *tmp (to
 * free). NULL (tg_err) when out of memory. */
const float *tg_run_in_f32(const tg_tensor *t, float **tmp);

/* float32 views of a node's inputs and first output, for the kernels that
 * only have a float32 form: the tensors' own data when they are f32, else
 * converted copies (the output's is converted back by tg_run_f32_close). */
#define TG_RUN_F32_MAX 5
typedef struct {
    const float *in[TG_RUN_F32_MAX];    /* NULL for omitted inputs */
    float *tmp[TG_RUN_F32_MAX];
    float *out;
} tg_run_f32;
int tg_run_f32_open(const tg_run_ctx *c, tg_run_f32 *io);
/* Finish (after open, whether it succeeded or not); returns rc. */
int tg_run_f32_close(const tg_run_ctx *c, tg_run_f32 *io, int rc);

/* The axes a reduction node reduces, one bit each (none given: all). */
int tg_run_reduce_mask(const tg_run_ctx *c, uint32_t *mask);

/* Node descriptors for the kernels: opmap.h's from the attributes
 * (tg_cpu_*_desc) with the concrete shapes (shared with other devices' glue,
 * whose kernels take the same descriptors). 0 or -1 (tg_err). */
int tg_run_conv_desc(const tg_run_ctx *c, tgk_conv_desc *d);
int tg_run_pool_desc(const tg_run_ctx *c, tgk_pool_desc *d);
/* sdpa without its mask (mask NULL, strides 0); scale resolved. */
void tg_run_sdpa_desc(const tg_run_ctx *c, tgk_sdpa_desc *d);
/* The mask m broadcast over q's dims with S keys: sd[q->rank] those dims,
 * st[q->rank] m's strides over them; whether the leading batch dims fold into
 * one stride (else the mask must be expanded). tg_run_sdpa_mask_strides then
 * sets the desc's four strides from st. */
bool tg_run_sdpa_mask_layout(const tg_tensor *m, const tg_tensor *q, int64_t S, int64_t *sd,
                             int64_t *st);
void tg_run_sdpa_mask_strides(int rank, const int64_t *st, tgk_sdpa_desc *d);

#endif
