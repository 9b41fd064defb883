/* Shared by the rewrites of lib/quant (rewrite.c, qdq.c, chain.c); not a contract. */
#ifndef TG_QUANT_INTERNAL_H
#define TG_QUANT_INTERNAL_H

#include "../graph.h"
#include "quant.h"

/* The quantize/dequantize form of static layer ni: dequantize(quantize(x;
 * xs, xz, xdt)) and dequantize(wq; per-channel scales of constant ws) into a
 * copy of the float layer (bias: value or -1). Its output value, or -1. */
int tg_quant_emit_qdq(tg_graph *g, int ni, float xs, int32_t xz, tg_dtype xdt, int wq, int ws,
                      int bias);

/* Give the static qconvs and qlinears whose result only static qconvs or
 * qlinears read (through a relu or clamp, fused; or a silu or gelu, as a
 * table on the pre-activation whose range calib has) a u8 output, their
 * readers u8 input (chain.c). The number changed, or -1. */
int tg_quant_chain(tg_graph *g, const tg_calib *calib);

/* The activation node n is when a layer's u8 output can take it as a table
 * (chain.c): TGK_QACT_SILU for silu, TGK_QACT_GELU or TGK_QACT_GELU_TANH for
 * gelu; 0 otherwise. */
int tg_quant_table_act(const tg_node *n);

#endif
