/* ONNX ops whose shape-setting inputs are read at run time (onnx_ops_rt.c). */
#ifndef TG_ONNX_RT_H
#define TG_ONNX_RT_H

#include <stdbool.h>

#include "onnx_internal.h"

int onnx_rt_tile(onnx_ctx *c, int x, int repeats);
int onnx_rt_expand(onnx_ctx *c, int x, int shape);
/* ConstantOfShape: value as dt in the shape read from value s. */
int onnx_rt_full(onnx_ctx *c, int s, double value, tg_dtype dt);
int onnx_rt_pad(onnx_ctx *c, int x, int pads, int naxes, const int64_t *axes, int axes_rt, double value,
                int value_rt, const char *mode);
/* Defines the node's nout outputs itself. */
int onnx_rt_split(onnx_ctx *c, int x, int axis, int sizes, int nout);

/* Slice: axes a value av, or na constant axes (na < 0: none given); steps sp or -1. */
int onnx_rt_slice(onnx_ctx *c, int x, int starts, int ends, int av, int na, const int64_t *axes, int sp);
int onnx_rt_squeeze(onnx_ctx *c, int x, int axes, bool unsqueeze);
int onnx_rt_range(onnx_ctx *c, int start, int limit, int delta);
/* TopK: k constant, or read at run time from value kv (>= 0). */
int onnx_rt_topk(onnx_ctx *c, int x, int axis, int kv, int64_t k, bool largest, int *values, int *indices);
/* Slice of x's static axis by a constant negative step. */
int onnx_slice_down(onnx_ctx *c, int x, int axis, int64_t start, int64_t end, int64_t step, const char *sfx);

#endif
