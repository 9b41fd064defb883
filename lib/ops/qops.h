/* The quantized layers' attributes (ops.def: qlinear, qconv), read once for
 * inference, the interpreter and the code generator alike. */
#ifndef TG_OPS_QOPS_H
#define TG_OPS_QOPS_H

#include <stdbool.h>
#include <stdint.h>

#include "../elem.h"    /* TGK_QACT_* */
#include "../graph.h"

typedef enum {
    TG_QSCHEME_STATIC = 0,      /* activations with calibrated parameters */
    TG_QSCHEME_DYNAMIC,         /* activations' parameters from each run's min and max */
    TG_QSCHEME_WEIGHT_ONLY,     /* float activations, weights dequantized */
} tg_qscheme;

/* y_act's names by TGK_QACT_* (elem.h): "none", "silu", "gelu", "gelu_tanh" */
extern const char *const tg_qact_names[4];

typedef struct {
    tg_qscheme scheme;
    float x_scale;
    /* The zero point as the kernels' u8 takes it: an i8 activation zero point z
     * is the u8 zero point z + 128 (the same numbers shifted by 128). */
    int32_t x_zero_u8;
    int bits;                   /* weights: 8, or 4 (weight_only) */
    int64_t group;              /* weight_only: inputs per scale; 0: a whole row */
    /* qconv or qlinear static with y_scale: a u8 output, the float one quantized with
     * y_scale and y_zero and clamped to [y_lo, y_hi], those of y_min and
     * y_max quantized alike (a fused relu or relu6; 0 and 255 when absent) */
    bool y_u8;
    float y_scale;
    int32_t y_zero, y_lo, y_hi;
    int y_act;                  /* y_act: TGK_QACT_NONE, or an activation fused before */
    float p_scale;              /* the u8 output, from the pre-activation in u8 (p_scale, p_zero) */
    int32_t p_zero;
} tg_qlayer;

/* Read and check a qlinear/qconv node's attributes; 0 or -1 (tg_err). */
int tg_qlayer_read(const tg_node *n, tg_qlayer *q);
/* Scales per weight row: ceil(K / group) for weight_only with a group, else 1. */
int64_t tg_qlayer_ngroups(const tg_qlayer *q, int64_t K);

#endif
