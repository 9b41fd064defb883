/* The accuracy report: per graph output, the max and mean absolute error of
 * the quantized graph against the float one, and for outputs with a class
 * axis (rank >= 2, last dim > 1) how often the argmax over it agrees. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <cjson/cJSON.h>

#include "../error.h"
#include "../log.h"
#include "quant.h"

int tg_quant_report_init(tg_quant_report *r, const tg_graph *g)
{
    memset(r, 0, sizeof *r);
    r->out = calloc((size_t)g->noutput + 1, sizeof *r->out);
    if (!r->out)
        return tg_err("out of memory");
    r->noutput = g->noutput;
    for (int i = 0; i < g->noutput; i++)
        if (!(r->out[i].name = strdup(g->values[g->outputs[i]].name))) {
            tg_quant_report_free(r);
            return tg_err("out of memory");
        }
    return 0;
}

void tg_quant_report_free(tg_quant_report *r)
{
    for (int i = 0; r->out && i < r->noutput; i++)
        free(r->out[i].name);
    free(r->out);
    memset(r, 0, sizeof *r);
}

static int64_t argmax_row(const float *x, int64_t n)
{
    int64_t best = 0;
    for (int64_t i = 1; i < n; i++)
        if (x[i] > x[best])
            best = i;
    return best;
}

int tg_quant_report_add(tg_quant_report *r, const tg_tensor *ref, const tg_tensor *got)
{
    for (int i = 0; i < r->noutput; i++) {
        const tg_tensor *a = &ref[i], *b = &got[i];
        tg_quant_err *e = &r->out[i];
        int64_t n = tg_tensor_numel(a->rank, a->dims);
        if (a->dtype != b->dtype || a->rank != b->rank || n != tg_tensor_numel(b->rank, b->dims))
            return tg_err("output '%s': the new graph's output differs in type or shape",
                          e->name);
        if (a->dtype != TG_F32)
            continue;               /* only float outputs carry quantization error */
        const float *x = a->data, *y = b->data;
        for (int64_t k = 0; k < n; k++) {
            double d = fabs((double)x[k] - (double)y[k]);
            if (d > e->max_abs || d != d)
                e->max_abs = d;
            e->sum_abs += d;
        }
        e->count += n;
        int64_t last = a->rank ? a->dims[a->rank - 1] : 0;
        if (a->rank >= 2 && last > 1)
            for (int64_t row = 0; row < n / last; row++) {
                e->top1_same += argmax_row(x + row * last, last) == argmax_row(y + row * last, last);
                e->top1_rows++;
            }
    }
    r->nsample++;
    return 0;
}

void tg_quant_report_print(const tg_quant_report *r, tg_log_comp comp, const char *prefix,
                           FILE *f)
{
    for (int i = 0; i < r->noutput; i++) {
        const tg_quant_err *e = &r->out[i];
        char top1[128] = "";
        double mean = e->count ? e->sum_abs / (double)e->count : 0;
        if (!e->count)
            continue;
        if (e->top1_rows)
            snprintf(top1, sizeof top1, ", top-1 agreement %.2f%% (%lld/%lld)",
                     100.0 * (double)e->top1_same / (double)e->top1_rows,
                     (long long)e->top1_same, (long long)e->top1_rows);
        if (f)
            fprintf(f, "%soutput '%s': max abs err %.4g, mean abs err %.4g%s\n", prefix, e->name,
                    e->max_abs, mean, top1);
#ifndef TG_LOG_DISABLE
        if (tg_log_levels[comp] < TG_LOG_INFO)
#endif
            continue;
        cJSON *j = cJSON_CreateObject();
        cJSON_AddStringToObject(j, "output", e->name);
        cJSON_AddNumberToObject(j, "samples", r->nsample);
        cJSON_AddNumberToObject(j, "max_abs", e->max_abs);
        cJSON_AddNumberToObject(j, "mean_abs", mean);
        cJSON_AddNumberToObject(j, "top1_same", (double)e->top1_same);
        cJSON_AddNumberToObject(j, "top1_rows", (double)e->top1_rows);
        char *fields = cJSON_PrintUnformatted(j);
        tg_log_emit(comp, TG_LOG_INFO, fields, "accuracy of output '%s' over %d samples: max abs"
                " err %.4g, mean abs err %.4g%s", e->name, r->nsample, e->max_abs, mean, top1);
        cJSON_free(fields);
        cJSON_Delete(j);
    }
}
