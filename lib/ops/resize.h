/* resize's attributes (ops.def), read once for inference, the interpreter
 * and the code generators alike. The enums list each string attribute's
 * choices in tgraph-ops(7)'s order; a backend maps them onto its kernels. */
#ifndef TG_OPS_RESIZE_H
#define TG_OPS_RESIZE_H

#include <stdbool.h>

#include "../graph.h"

typedef enum { TG_RESIZE_NEAREST, TG_RESIZE_LINEAR, TG_RESIZE_CUBIC } tg_resize_mode;
typedef enum {
    TG_COORD_HALF_PIXEL, TG_COORD_PYTORCH_HALF_PIXEL, TG_COORD_ALIGN_CORNERS,
    TG_COORD_ASYMMETRIC, TG_COORD_TF_HALF_PIXEL_FOR_NN, TG_COORD_HALF_PIXEL_SYMMETRIC,
    TG_COORD_TF_CROP_AND_RESIZE,
} tg_resize_coord;
typedef enum {
    TG_NEAREST_ROUND_PREFER_FLOOR, TG_NEAREST_ROUND_PREFER_CEIL, TG_NEAREST_FLOOR,
    TG_NEAREST_CEIL,
} tg_resize_nearest;

typedef struct {
    tg_resize_mode mode;
    tg_resize_coord coord;
    tg_resize_nearest nearest;
    double scale[2];            /* per spatial axis; 0: none given */
    double cubic_a;
    bool exclude_outside;
    bool antialias;             /* linear and cubic shrinking: ONNX's widened filter */
    double roi[2][2];           /* tf_crop_and_resize: [axis][start, end] */
    double extrapolation;       /* tf_crop_and_resize: outside the region of interest */
} tg_resize;

/* Read and check resize node n's attributes but size, for nsp spatial axes.
 * 0, or -1 with tg_err. */
int tg_resize_read(const tg_node *n, int nsp, tg_resize *r);

/* grid_sample's attributes, in tgraph-ops(7)'s order of their choices. */
typedef enum { TG_GRID_LINEAR, TG_GRID_NEAREST, TG_GRID_CUBIC } tg_grid_mode;
typedef enum { TG_GRID_ZEROS, TG_GRID_BORDER, TG_GRID_REFLECTION } tg_grid_padding;
typedef struct {
    tg_grid_mode mode;
    tg_grid_padding padding;
    bool align_corners;
} tg_grid_sample;

/* Read and check grid_sample node n's attributes. 0, or -1 with tg_err. */
int tg_grid_sample_read(const tg_node *n, tg_grid_sample *r);

#endif
