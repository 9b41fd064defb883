/* Post-training quantization (tquant): observers, calibration, the rewrite of
 * float linear and convolution layers into quantized ones (ops.def: qlinear,
 * qconv), and the accuracy report.
 *
 *   static       int8 weights (per output channel, symmetric), activations
 *                quantized per tensor with ranges calibrated on sample inputs
 *   dynamic      int8 weights, activation ranges taken at run time
 *   weight-int8  int8 / int4 weights with one scale per group of inputs,
 *   weight-int4  float activations (linear layers only)
 *
 * No pass here knows about files: the calibration set comes in as tensors
 * (dataset.c loads it from .npy files for the tool). */
#ifndef TG_QUANT_H
#define TG_QUANT_H

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "../graph.h"
#include "../log.h"
#include "../tensor.h"

typedef enum {
    TG_QUANT_STATIC = 0,
    TG_QUANT_DYNAMIC,
    TG_QUANT_WEIGHT_INT8,
    TG_QUANT_WEIGHT_INT4,
} tg_quant_scheme;

typedef enum {
    TG_OBS_MINMAX = 0,          /* the range seen over all samples */
    TG_OBS_MOVING_AVERAGE,      /* exponential moving average of each sample's min and max */
    TG_OBS_PERCENTILE,          /* the p and 100-p percentiles of all values seen */
    TG_OBS_ENTROPY,             /* the clipping threshold of least KL divergence (TensorRT) */
} tg_observer_kind;

typedef struct {
    tg_quant_scheme scheme;
    tg_observer_kind observer;
    double percentile;          /* TG_OBS_PERCENTILE: e.g. 99.99 */
    double averaging;           /* TG_OBS_MOVING_AVERAGE: weight of a new sample, e.g. 0.01 */
    int64_t group;              /* weight-only: inputs per scale; 0: per row */
    bool act_int8;              /* static: symmetric i8 activations instead of affine u8 */
    bool no_bias_correction;    /* keep biases as they are (see tg_quant_rewrite) */
    bool qdq;                   /* static: write quantize/dequantize pairs around float layers */
    bool no_chain;              /* static: float between quantized convolutions (see tg_quant_rewrite) */
    int nskip;                  /* node names or op names (linear, conv) kept in float */
    const char *const *skip;
} tg_quant_opts;

/* Defaults: static, minmax, percentile 99.99, averaging 0.01, group 0. */
void tg_quant_opts_init(tg_quant_opts *o);
const char *tg_quant_scheme_name(tg_quant_scheme s);
const char *tg_observer_name(tg_observer_kind k);
/* By name ("minmax", "moving-average", "percentile", "entropy" or "histogram");
 * -1 when unknown. */
int tg_observer_from_name(const char *name);
int tg_quant_scheme_from_name(const char *name);

/* ---- observers (observer.c) ----------------------------------------------------- */
typedef struct tg_observer tg_observer;
tg_observer *tg_observer_new(const tg_quant_opts *o);
void tg_observer_free(tg_observer *ob);
/* See one sample's values (NaNs and infinities are ignored). 0 or -1 (memory). */
int tg_observer_update(tg_observer *ob, const float *x, int64_t n);
/* The range to quantize to (lo <= 0 <= hi); 0, or -1 when nothing was seen. */
int tg_observer_range(const tg_observer *ob, float *lo, float *hi);
/* TensorRT's entropy calibration on a histogram of |x|: hist[nbins] over
 * [0, nbins * width); returns the threshold. Exposed for the unit tests. */
double tg_entropy_threshold(const double *hist, int nbins, double width, int levels);

/* ---- which layers are quantized (layers.c) ---------------------------------------- */
/* Fold batch norms into the convolution or linear layer before them (as
 * tcompile would), so that the folded weights are the ones quantized and no
 * float batch norm is left behind a quantized layer. The number folded, or -1. */
int tg_quant_prepare(tg_graph *g);
/* Node indices of the layers the scheme quantizes (linear, and conv unless
 * weight-only, with constant float32 weights; linear_24 in the static and
 * dynamic schemes without qdq; not skipped; where tg_quant_rewrite chains,
 * not a depthwise conv that would take and give float: slower in int8, it
 * stays float); *nodes malloc'd.
 * The count, or -1 (tg_err: a skip entry that names no node and no op). */
int tg_quant_layers(const tg_graph *g, const tg_quant_opts *o, int **nodes);
/* The input of layer n that is its bias (linear_24's comes after the metadata). */
int tg_quant_bias_input(const tg_node *n);

/* ---- calibration (calib.c) ------------------------------------------------------- */
typedef struct tg_calib tg_calib;
/* Observe the activations entering each layer of tg_quant_layers (g borrowed). */
tg_calib *tg_calib_new(const tg_graph *g, const tg_quant_opts *o);
void tg_calib_free(tg_calib *c);
/* Run g on one sample (g->ninput tensors) and update the observers. With outs
 * (g->noutput tensors), also hand back g's outputs (caller frees them). */
int tg_calib_run(tg_calib *c, const tg_tensor *inputs, tg_tensor *outs);
/* The quantization range of value v (a layer's input, or a layer's output
 * that a silu or gelu alone reads: its pre-activation); -1 when not observed. */
int tg_calib_range(const tg_calib *c, int v, float *lo, float *hi);
/* The same for the value named name in the graph calibrated. */
int tg_calib_range_named(const tg_calib *c, const char *name, float *lo, float *hi);
/* The mean of each input feature of value v (the last dim for linear layers,
 * dim 1 for convolutions) into mean[max]: the feature count, or -1 when not
 * known (not observed, or more than max). */
int64_t tg_calib_mean(const tg_calib *c, int v, double *mean, int64_t max);

/* ---- the rewrite (rewrite.c) -------------------------------------------------------- */
/* Replace each layer of tg_quant_layers by qlinear/qconv (linear_24:
 * qlinear_24, its values quantized as the dense pruned weight would be, the
 * metadata kept) with quantized weights
 * (with o->qdq: by the float layer between quantize/dequantize pairs that
 * tg_quant_fold_qdq folds back into the same qlinear/qconv)
 * (static: calib gives the activation ranges; other schemes may pass NULL).
 * With calib, each layer's bias is corrected for the mean error its weight
 * rounding causes: b += (W - deq(Wq)) * mean(x), mean(x) over the
 * calibration inputs (bias correction, Nagel et al. 2019). Then (static, u8
 * activations, no qdq, unless no_chain) each qconv whose result, directly or
 * through a relu or clamp, only qconvs read passes it to them as u8, the
 * activation fused (within one quantization step, no float pass between;
 * through a silu, as a table on its pre-activation in u8: within about a
 * step more). Value names
 * that users see stay. Returns the number of layers quantized, or -1. */
int tg_quant_rewrite(tg_graph *g, const tg_quant_opts *o, const tg_calib *calib);
/* Fold quantize/dequantize pairs into quantized layers wherever both sides
 * allow: a linear or conv (not transposed) reading dequantize(quantize(x))
 * (per tensor, u8 or i8, the same parameters on both) and dequantize(W) of a
 * constant i8 weight (symmetric: zero points 0; per output channel along
 * axis 0, or per tensor) becomes qlinear/qconv static; so does a matmul with
 * dequantize of a constant i8 [K, N] (per tensor or per column), or a linear
 * reading one through permute [1, 0]. A reshape/permute/slice/expand/max_pool
 * of a per-tensor quantize is first rewritten as quantize of that op (equal).
 * Pairs that do not fit stay as they are. Returns the number of layers
 * folded, or -1. */
int tg_quant_fold_qdq(tg_graph *g);

/* Per output channel symmetric int8: scale[r] = max|w[r,:]| / 127, q = round(w / scale). */
void tg_quant_weights_int8(const float *w, int64_t rows, int64_t cols, int8_t *q, float *scale);
/* Group-wise symmetric int8 or int4 (two per byte, even k low) in the layout
 * of qlinear's weight_only weights; scale [rows, ceil(cols/group)]. */
void tg_quant_weights_grouped(const float *w, int64_t rows, int64_t cols, int bits,
                              int64_t group, void *q, float *scale);

/* ---- accuracy (report.c) ------------------------------------------------------------ */
typedef struct {
    char *name;
    double max_abs, sum_abs;
    int64_t count;              /* elements compared */
    int64_t top1_same, top1_rows;   /* argmax over the last axis agrees; rows compared */
} tg_quant_err;

typedef struct {
    int noutput;
    tg_quant_err *out;
    int nsample;
} tg_quant_report;

int tg_quant_report_init(tg_quant_report *r, const tg_graph *g);
void tg_quant_report_free(tg_quant_report *r);
/* Compare one sample's quantized outputs with the float ones. */
int tg_quant_report_add(tg_quant_report *r, const tg_tensor *ref, const tg_tensor *got);
/* Lines "output 'y': max abs err ..., mean abs err ..., top-1 agreement ..."
 * to f (NULL: none), each prefixed; also TLOG records of component comp
 * (quant; tsparse's report: sparse). */
void tg_quant_report_print(const tg_quant_report *r, tg_log_comp comp, const char *prefix,
                           FILE *f);

/* ---- calibration data (dataset.c) --------------------------------------------------- */
/* Samples for g's inputs from .npy files. Each path is a file or a folder
 * (its *.npy files, sorted). With one graph input every file is a sample;
 * with several, the files of a sample are NAME.KEY.npy, one per input NAME,
 * sharing KEY. A file whose first dim is a multiple of the graph's constant
 * batch dim is split into samples; a file one rank short gets a batch of 1. */
typedef struct {
    int nsample, ninput;
    tg_tensor *t;               /* nsample * ninput, sample by sample */
} tg_dataset;
int tg_dataset_load(const tg_graph *g, int npaths, const char *const *paths, tg_dataset *ds);
void tg_dataset_free(tg_dataset *ds);

#endif
