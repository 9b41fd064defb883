/* A compiled CUDA model's graph and memory plan as one block of bytes:
 * tcompile --target cuda writes it into the shared object, whose runtime
 * (model_rt.c) reads it back at open. Not the TG file: that needs cJSON,
 * and the model may need nothing but the CUDA libraries. Host byte order:
 * the block is read by the machine kind it was built for. */
#ifndef TG_BACKEND_CUDA_BLOB_H
#define TG_BACKEND_CUDA_BLOB_H

#include <stdint.h>
#include <stdio.h>

#include "../../graph.h"
#include "../../passes/passes.h"

#define TGC_BLOB_MAGIC "TGCUDA03"

/* g with its constants' data, p's alias and slot of every value and its
 * groups (root and kind of every node); math:
 * tcompile --dtype (a tgc_math, cuda.h), with bf16 and fp16 the float32
 * weights of GEMMs (constants read only as a linear's weight or a matmul's
 * right operand) written in that type. 0 or -1 (tg_err). */
int tgc_blob_write(const tg_graph *g, const tg_plan *p, int math, FILE *f);

/* What tgc_blob_read gives back: the graph (constants' data point into the
 * block, which must outlive it) and the plan's arrays. */
typedef struct {
    tg_graph *g;
    int *alias, *slot;          /* per value */
    int nslot;
    int *root;                  /* per node: its group's root (the plan's) */
    tg_group_kind *kind;        /* per node: its group's kind, read at the root */
    int math;                   /* a tgc_math */
} tgc_blob;

/* 0, or -1 (tg_err) when the block is truncated or not one. */
int tgc_blob_read(const uint8_t *buf, size_t len, tgc_blob *b);
void tgc_blob_free(tgc_blob *b);

#endif
