/* linear_24 on the GPU's sparse tensor cores through cuSPARSELt, a library
 * loaded at run time (dlopen: not needed to build, nor to run without it).
 * A weight is compressed once into cuSPARSELt's layout (tgc_lt24_new: a
 * compiled model does it at open, trun --device cuda at each run); a plan
 * per token count M is made the first time M is seen (with
 * cusparseLtMatmulSearch choosing the algorithm when asked and the stream
 * is not being captured; otherwise cuSPARSELt's default). Not thread-safe
 * on one weight: a compiled model runs under its handle's lock. */
#ifndef TG_BACKEND_CUDA_SPARSELT_H
#define TG_BACKEND_CUDA_SPARSELT_H

#include <stdbool.h>
#include <stdint.h>

#include "cuda.h"

typedef struct tgc_lt24 tgc_lt24;

/* The weight of linear_24 (values f32 [N,K/2] and meta, device memory, as
 * tgraph-format(5)) in cuSPARSELt's compressed layout of type t (TG_BF16 or
 * TG_F16), work queued on cs->stream; NULL with why (TG_WHY_MAX) when
 * cuSPARSELt is absent or refuses the shape: run the dense path then. */
tgc_lt24 *tgc_lt24_new(const tgc_state *cs, const float *values, const uint8_t *meta, int64_t N,
                       int64_t K, tg_dtype t, char *why);
void tgc_lt24_free(tgc_lt24 *w);

/* w's plan for M rows of x (made now if new; search: choose the algorithm
 * by timing, needs an uncaptured stream). 0, or 1 with why. */
int tgc_lt24_plan(const tgc_state *cs, tgc_lt24 *w, int64_t M, bool search, char *why);

/* y [M,N] f32 = x [M,K] f32 times w^T (x rounded to w's type, float32
 * accumulation), + b [N] when b. 0 done; 1 not taken (why): nothing was
 * queued; -1 an error (tg_err). */
int tgc_lt24_linear(const tgc_state *cs, tgc_lt24 *w, const float *x, const float *b, float *y,
                    int64_t M, char *why);

/* What ran last on w for M (for TLOG): "cuSPARSELt bf16, algorithm 17 (searched)". */
void tgc_lt24_describe(const tgc_lt24 *w, int64_t M, char *buf, size_t n);

#endif
