/* The int8 depthwise convolution (qconv_dw.c), taken by tgk_qconv_f32
 * (qconv.c) on every path for convolutions with one input channel a group:
 * exact integer sums, the same float epilogue as the other paths. */
#ifndef TGK_QCONV_DW_H
#define TGK_QCONV_DW_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

bool tgk_qconv_dw_fits(const tgk_conv_desc *d);
size_t tgk_qconv_dw_size(const tgk_conv_desc *d);
void tgk_qconv_dw_pack(const tgk_conv_desc *d, const int8_t *w, void *packed);
/* x [n, c, *in] quantized as tgk_quantize_u8 does (into the padded planes);
 * y [n, k, *out] = (float)(acc - x_zero * sum w) * scale[k] + bias[k] (bias
 * may be NULL). 0, or -1 when scratch cannot be allocated. */
int tgk_qconv_dw_f32(const tgk_conv_desc *d, const float *x, float x_scale, int32_t x_zero,
                     const void *packed, const float *scale, const float *bias, float *y);

#endif
