/* The int8 convolution's paths besides the row path, which tgk_qconv
 * (qconv.c) takes by the layout of the packed weights:
 *   dw     depthwise (qconv_dw.c): one input channel a group, on every CPU;
 *   panel  panels (qconv_panel.c): packed while the VNNI path was in use, at
 *          least 3 input and 4 output channels a group (pixels as the GEMM's
 *          columns; a scalar reference for the other paths).
 * For each: whether a convolution fits, the packed weights' size, the
 * packing, and the run: the input (a's x quantized as tgk_quantize_u8
 * does, or a's xq copied) into the path's padded layout, exact integer
 * sums, then (float)(acc - x_zero * sum w) * scale[k] + bias[k] (scale[k] =
 * x_scale * w_scale[k]; bias may be NULL) into a's y; or, when a has yq,
 * tgk_requant1(acc - x_zero * sum w, scale[k], bias[k], y_lo, y_hi)
 * (qquant.h; scale and bias are then its m and c, bias never NULL) into yq
 * (a fused activation's table is tgk_qconv's, after the path).
 * 0, or -1 when scratch cannot be allocated. */
#ifndef TGK_QCONV_PATHS_H
#define TGK_QCONV_PATHS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "kernels.h"
#include "qgemm.h"

bool tgk_qconv_dw_fits(const tgk_conv_desc *d);
size_t tgk_qconv_dw_size(const tgk_conv_desc *d);
void tgk_qconv_dw_pack(const tgk_conv_desc *d, const int8_t *w, void *packed);
int tgk_qconv_dw(const tgk_conv_desc *d, const tgk_qact *a, const void *packed,
                 const float *scale, const float *bias);

bool tgk_qconv_panel_fits(const tgk_conv_desc *d);
size_t tgk_qconv_panel_size(const tgk_conv_desc *d);
void tgk_qconv_panel_pack(const tgk_conv_desc *d, const int8_t *w, void *packed);
int tgk_qconv_panel(const tgk_conv_desc *d, const tgk_qact *a, const void *packed,
                    const float *scale, const float *bias);

#endif
