/* Observers: what range of a layer's input to quantize to. minmax and the
 * moving average keep two numbers; percentile and entropy keep a histogram of
 * the positive and of the negative values (HBINS bins each over [0, R)),
 * whose R doubles, merging bins in pairs, when a sample goes past it. */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "quant.h"

#define HBINS 2048

struct tg_observer {
    tg_observer_kind kind;
    double p, c;
    bool seen;
    float lo, hi;               /* minmax: overall; moving average: the averages */
    double range;               /* histogram covers [0, range) on each side */
    double *pos, *neg;
};

tg_observer *tg_observer_new(const tg_quant_opts *o)
{
    tg_observer *ob = calloc(1, sizeof *ob);
    if (!ob) {
        tg_err("out of memory");
        return NULL;
    }
    ob->kind = o->observer;
    ob->p = o->percentile;
    ob->c = o->averaging;
    if (ob->kind == TG_OBS_PERCENTILE || ob->kind == TG_OBS_ENTROPY) {
        ob->pos = calloc(HBINS, sizeof(double));
        ob->neg = calloc(HBINS, sizeof(double));
        if (!ob->pos || !ob->neg) {
            tg_observer_free(ob);
            tg_err("out of memory");
            return NULL;
        }
    }
    return ob;
}

void tg_observer_free(tg_observer *ob)
{
    if (!ob)
        return;
    free(ob->pos);
    free(ob->neg);
    free(ob);
}

/* Double the histogram's range: bin i of the new one is bins 2i, 2i+1. */
static void widen(double *h)
{
    for (int i = 0; i < HBINS / 2; i++)
        h[i] = h[2 * i] + h[2 * i + 1];
    memset(h + HBINS / 2, 0, sizeof(double) * HBINS / 2);
}

static void hist_add(tg_observer *ob, const float *x, int64_t n, float amax)
{
    if (ob->range == 0)
        ob->range = amax > 0 ? amax : 0;
    if (ob->range == 0)
        return;                 /* only zeros so far: they tell no range */
    while (amax >= ob->range) {
        widen(ob->pos);
        widen(ob->neg);
        ob->range *= 2;
    }
    double per = HBINS / ob->range;
    for (int64_t i = 0; i < n; i++) {
        if (!isfinite(x[i]) || x[i] == 0)
            continue;           /* zeros are exact at any scale: they do not vote */
        int b = (int)(fabsf(x[i]) * per);
        (x[i] < 0 ? ob->neg : ob->pos)[b < HBINS ? b : HBINS - 1] += 1;
    }
}

int tg_observer_update(tg_observer *ob, const float *x, int64_t n)
{
    float lo = INFINITY, hi = -INFINITY;
    for (int64_t i = 0; i < n; i++)
        if (isfinite(x[i])) {
            lo = x[i] < lo ? x[i] : lo;
            hi = x[i] > hi ? x[i] : hi;
        }
    if (lo > hi)
        return 0;
    if (!ob->seen || ob->kind != TG_OBS_MOVING_AVERAGE) {
        ob->lo = !ob->seen || lo < ob->lo ? lo : ob->lo;
        ob->hi = !ob->seen || hi > ob->hi ? hi : ob->hi;
    } else {
        ob->lo += (float)(ob->c * (lo - ob->lo));
        ob->hi += (float)(ob->c * (hi - ob->hi));
    }
    ob->seen = true;
    if (ob->pos)
        hist_add(ob, x, n, fmaxf(fabsf(lo), fabsf(hi)));
    return 0;
}

/* The value below which a fraction q of the histogram's mass lies. */
static double hist_quantile(const tg_observer *ob, double q)
{
    double total = 0, cum = 0, w = ob->range / HBINS;
    for (int i = 0; i < HBINS; i++)
        total += ob->pos[i] + ob->neg[i];
    double want = q * total;
    for (int i = HBINS - 1; i >= 0; i--) {          /* from the most negative up */
        cum += ob->neg[i];
        if (cum >= want && ob->neg[i] > 0)
            return -(i + 1) * w;
    }
    for (int i = 0; i < HBINS; i++) {
        cum += ob->pos[i];
        if (cum >= want && ob->pos[i] > 0)
            return (i + 1) * w;
    }
    return ob->range;
}

/* TVM's smoothing of a histogram: zero bins get eps, taken evenly from the
 * others, so KL(p || q) stays finite. 0, or -1 when p has no mass. */
static int smooth(double *p, int n)
{
    const double eps = 1e-4;
    int zeros = 0;
    for (int i = 0; i < n; i++)
        zeros += p[i] == 0;
    if (zeros == n)
        return -1;
    double take = eps * zeros / (n - zeros);
    for (int i = 0; i < n; i++)
        p[i] += p[i] == 0 ? eps : -take;
    return 0;
}

double tg_entropy_threshold(const double *hist, int nbins, double width, int levels)
{
    double *p = malloc(sizeof(double) * nbins), *q = malloc(sizeof(double) * nbins);
    double best_kl = INFINITY;
    int best = nbins;
    for (int i = levels; p && q && i <= nbins; i++) {
        /* reference: the first i bins, the mass beyond them in the last */
        double outliers = 0, sp = 0, sq = 0;
        memcpy(p, hist, sizeof(double) * i);
        for (int k = i; k < nbins; k++)
            outliers += hist[k];
        p[i - 1] += outliers;
        /* candidate: the first i bins merged into `levels`, then spread back
         * evenly over the bins that were not empty */
        int merged = i / levels;
        for (int j = 0; j < levels; j++) {
            int start = j * merged, stop = j == levels - 1 ? i : start + merged;
            double sum = 0;
            int nonzero = 0;
            for (int k = start; k < stop; k++) {
                sum += hist[k];
                nonzero += hist[k] != 0;
            }
            for (int k = start; k < stop; k++)
                q[k] = hist[k] != 0 ? sum / nonzero : 0;
        }
        /* smoothed as counts (eps is tiny next to a count), then normalized */
        if (smooth(p, i) || smooth(q, i))
            continue;
        for (int k = 0; k < i; k++)
            sp += p[k], sq += q[k];
        for (int k = 0; k < i; k++)
            p[k] /= sp, q[k] /= sq;
        double kl = 0;
        for (int k = 0; k < i; k++)
            if (p[k] > 0)
                kl += p[k] * log(p[k] / q[k]);
        if (kl < best_kl) {
            best_kl = kl;
            best = i;
        }
    }
    free(p);
    free(q);
    return best * width;
}

int tg_observer_range(const tg_observer *ob, float *lo, float *hi)
{
    if (!ob->seen)
        return -1;
    double l = ob->lo, h = ob->hi;
    if (ob->kind == TG_OBS_PERCENTILE && ob->range > 0) {
        l = fmax(l, hist_quantile(ob, 1 - ob->p / 100));
        h = fmin(h, hist_quantile(ob, ob->p / 100));
    } else if (ob->kind == TG_OBS_ENTROPY && ob->range > 0) {
        double *abs = malloc(sizeof(double) * HBINS);
        if (!abs)
            return tg_err("out of memory");
        for (int i = 0; i < HBINS; i++)
            abs[i] = ob->pos[i] + ob->neg[i];
        /* u8 over [0, T] has 256 levels when nothing is negative, else 128 a side */
        double t = tg_entropy_threshold(abs, HBINS, ob->range / HBINS, l >= 0 ? 256 : 128);
        free(abs);
        l = fmax(l, -t);
        h = fmin(h, t);
    }
    *lo = (float)fmin(l, 0);
    *hi = (float)fmax(h, 0);
    return 0;
}
