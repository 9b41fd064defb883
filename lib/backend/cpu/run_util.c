/* Helpers the run_*.c glue shares (run.h). */
#include <stdlib.h>

#include "../../ops/infer.h"
#include "run.h"

int tg_run_axis(const tg_run_ctx *c, const char *name, int64_t dflt, int rank)
{
    int64_t a;
    int ax;
    if (tg_attr_get_int(c->n, name, dflt, &a) || tg_axis_norm(a, rank, &ax))
        return -1;
    return ax;
}

const float *tg_run_in_f32(const tg_tensor *t, float **tmp)
{
    *tmp = NULL;
    if (t->dtype == TG_F32)
        return t->data;
    int64_t n = tg_run_numel(t);
    if (!(*tmp = malloc(sizeof(float) * (size_t)(n ? n : 1)))) {
        tg_err("out of memory");
        return NULL;
    }
    tgk_cast(TGK_F32, *tmp, tg_run_kt(t->dtype), t->data, n);
    return *tmp;
}

int tg_run_f32_open(const tg_run_ctx *c, tg_run_f32 *io)
{
    *io = (tg_run_f32){ 0 };
    for (int i = 0; i < c->n->nin && i < TG_RUN_F32_MAX; i++)
        if (c->in[i] && !(io->in[i] = tg_run_in_f32(c->in[i], &io->tmp[i])))
            return -1;
    tg_tensor *y = c->out[0];
    if (y->dtype == TG_F32) {
        io->out = y->data;
        return 0;
    }
    int64_t n = tg_run_numel(y);
    if (!(io->out = calloc((size_t)(n ? n : 1), sizeof(float))))
        return tg_err("out of memory");
    return 0;
}

int tg_run_f32_close(const tg_run_ctx *c, tg_run_f32 *io, int rc)
{
    tg_tensor *y = c->out[0];
    for (int i = 0; i < TG_RUN_F32_MAX; i++)
        free(io->tmp[i]);
    if (io->out && io->out != y->data) {
        if (rc == 0)
            tgk_cast(tg_run_kt(y->dtype), y->data, TGK_F32, io->out, tg_run_numel(y));
        free(io->out);
    }
    return rc;
}
