/* Generators: full and arange (sizes come from the output's dims). */
#include "opmap.h"
#include "run.h"

TG_FAMILY_HANDLES(gen, 2);
int tg_run_gen(const tg_run_ctx *c)
{
    tg_tensor *y = c->out[0];
    tg_cpu_gen d;
    tg_cpu_gen_desc(c->n, &d);
    switch (c->n->op) {
    case TG_OP_FULL:
        tgk_full(tg_run_kt(y->dtype), tg_run_numel(y), d.value, y->data);
        return 0;
    case TG_OP_ARANGE:
        tgk_arange(tg_run_kt(y->dtype), y->dims[0], d.start, d.step, y->data);
        return 0;
    default:
        return tg_err("not a generator op");
    }
}
