/* The runner interface (runner.h): calls through to the implementation. */
#include "runner.h"

#include "../error.h"

int tg_runner_run(tg_runner *r, const tg_tensor *inputs, tg_tensor *outputs)
{
    return r->ops->run(r, inputs, outputs);
}

int tg_runner_set_profile(tg_runner *r, tg_runner_profile_fn fn, void *ctx)
{
    if (!r->ops->set_profile)
        return tg_err("this model cannot time its nodes");
    r->ops->set_profile(r, fn, ctx);
    return 0;
}

void tg_runner_free(tg_runner *r)
{
    if (r)
        r->ops->free(r);
}
