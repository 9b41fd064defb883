/* 2:4 semi-structured sparsity (tsparse): the compressed layout's helpers
 * (compress.c), the pass that prunes a graph's constant weights of linear,
 * matmul and 1x1 convolution layers into linear_24 nodes (prune.c), and the
 * output change it causes on calibration inputs (report.c, on tquant's
 * dataset reader and report). No pass here knows about files. */
#ifndef TG_SPARSE_H
#define TG_SPARSE_H

#include <stdbool.h>
#include <stdint.h>

#include "../graph.h"
#include "../quant/quant.h"  /* the calibration dataset and the report */

/* ---- the layout (compress.c; kernels.h and tgraph-format(5) describe it) ------- */
/* Bytes of metadata a row of K weights: 4 bits a group of four. */
int64_t tg_sparse24_meta_bytes(int64_t K);
/* w [N,K], K % 4 == 0 -> values [N, K/2], meta [N, tg_sparse24_meta_bytes(K)]:
 * the two largest |w| of each group (NaN largest; ties: the lower index). */
void tg_sparse24_compress(const float *w, int64_t N, int64_t K, float *values, uint8_t *meta);
/* The dense w [N,K] again. */
void tg_sparse24_expand(const float *values, const uint8_t *meta, int64_t N, int64_t K,
                        float *w);
/* The same for int8 weights (by |w|; ties: the lower index); expand takes
 * metadata whose two indices in a group differ, as compress makes it. */
void tg_sparse24_compress_i8(const int8_t *w, int64_t N, int64_t K, int8_t *values,
                             uint8_t *meta);
void tg_sparse24_expand_i8(const int8_t *values, const uint8_t *meta, int64_t N, int64_t K,
                           int8_t *w);

/* ---- the pass (prune.c) -------------------------------------------------------- */
typedef struct {
    int ninclude, nexclude;     /* fnmatch(3) patterns on node names: a layer is */
    const char *const *include; /* pruned when it matches an include (or there */
    const char *const *exclude; /* are none) and no exclude */
    int64_t min_size;           /* weights of fewer elements stay dense */
} tg_sparse_opts;
void tg_sparse_opts_init(tg_sparse_opts *o);   /* everything, any size */

/* One candidate layer: a float32 linear, a matmul with a constant 2-D right
 * operand, a 1x1 convolution. */
typedef struct {
    char *name;                 /* its node */
    const char *op;             /* linear, matmul, conv */
    int64_t rows, cols;         /* the weight as [N, K], K the reduction dim */
    const char *skip;           /* why it stayed dense, or NULL: pruned */
    bool was_24;                /* it was 2:4 already: kept exactly */
    double sparsity;            /* zeros over weights, after */
    double rel_err;             /* ||W - pruned W|| / ||W|| (Frobenius) */
} tg_sparse_layer;

typedef struct {
    int n;
    tg_sparse_layer *layer;
} tg_sparse_result;

/* Fold g's batch norms into the layers before them (as tcompile would), then
 * prune the chosen layers to 2:4 by magnitude along the reduction dim:
 * each becomes linear_24 on values and metadata constants named after its
 * weight (NAME.values, NAME.meta; a matmul's transposed weight NAME.t.*), a
 * 1x1 convolution with permutes to channels last and back; value names that
 * users see stay. *r lists every candidate (free it with
 * tg_sparse_result_free, also on failure). The number pruned, or -1. */
int tg_sparse_prune(tg_graph *g, const tg_sparse_opts *o, tg_sparse_result *r);
void tg_sparse_result_free(tg_sparse_result *r);


/* ---- the report (report.c) ------------------------------------------------------- */
/* Run both graphs (same inputs and outputs) on the first nsample samples of ds
 * and add each sample's outputs to r (tg_quant_report_init'ed on dense).
 * 0 or -1. */
int tg_sparse_compare(const tg_graph *dense, const tg_graph *pruned, const tg_dataset *ds,
                      int nsample, tg_quant_report *r);

#endif
