/* The int8 convolution's panel path (qconv_panel.c), taken by tgk_qconv_f32
 * (qconv.c) for weights packed in its layout: those packed while the VNNI
 * path was in use, for convolutions with at least 3 input and 4 output
 * channels a group. Its integer sums are exact on every path (VNNI, and a
 * scalar reference for the others). */
#ifndef TGK_QCONV_PANEL_H
#define TGK_QCONV_PANEL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"

bool tgk_qconv_panel_fits(const tgk_conv_desc *d);
size_t tgk_qconv_panel_size(const tgk_conv_desc *d);
void tgk_qconv_panel_pack(const tgk_conv_desc *d, const int8_t *w, void *packed);
/* x [n, c, *in] quantized as tgk_quantize_u8 does (into the padded copy);
 * y [n, k, *out] = (float)(acc - x_zero * rowsum) * scale[k] + bias[k]
 * (bias may be NULL). 0, or -1 when scratch cannot be allocated. */
int tgk_qconv_panel_f32(const tgk_conv_desc *d, const float *x, float x_scale, int32_t x_zero,
                        const void *packed, const float *scale, const float *bias, float *y);

#endif
