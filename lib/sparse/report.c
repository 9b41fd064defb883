/* tsparse's accuracy report: the pruned graph against the dense one on
 * calibration samples, both run by the interpreter, gathered in tquant's
 * report (the max and mean absolute change of each output, top-1 agreement). */
#include <stdlib.h>

#include "../error.h"
#include "../exec/exec.h"
#include "sparse.h"

int tg_sparse_compare(const tg_graph *dense, const tg_graph *pruned, const tg_dataset *ds,
                      int nsample, tg_quant_report *r)
{
    tg_exec *ed = tg_exec_new(dense, 0), *ep = tg_exec_new(pruned, 0);
    tg_tensor *ref = calloc(2 * (size_t)dense->noutput + 1, sizeof *ref);
    tg_tensor *got = ref + dense->noutput;
    int rc = ed && ep && ref ? 0 : -1;
    if (ed && ep && !ref)
        tg_err("out of memory");
    for (int s = 0; s < nsample && rc == 0; s++) {
        const tg_tensor *in = ds->t + (size_t)s * ds->ninput;
        rc = tg_exec_run(ed, in, ref) || tg_exec_run(ep, in, got) ||
             tg_quant_report_add(r, ref, got) ? -1 : 0;
        for (int i = 0; i < 2 * dense->noutput; i++)
            tg_tensor_free(&ref[i]);
        if (rc)
            tg_err_append("(calibration sample %d)", s + 1);
    }
    free(ref);
    tg_exec_free(ed);
    tg_exec_free(ep);
    return rc;
}
