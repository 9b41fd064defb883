/* nms (ONNX NonMaxSuppression), an op whose output's length is set by its
 * inputs' values (ops.def's DATA flag): the kernel, then its glue. The
 * interpreter allocates the output for the most boxes the op can keep; the
 * kernel writes the k rows it keeps, packed, and sets the dim (exec.c; compiled,
 * cg_data_bind). The overlap test is ONNX Runtime's (non_max_suppression_helper.h):
 * coordinates ordered per axis, no overlap and empty boxes never suppress. */
#include <math.h>
#include <stdlib.h>

#include "kernels.h"
#include "tensor_ops.h"

typedef struct {
    double lo[2], hi[2];    /* y then x */
} nms_box;

static nms_box box_at(tgk_dtype t, const void *boxes, int64_t at, bool center)
{
    double v[4];
    for (int k = 0; k < 4; k++)
        v[k] = tgk_load_f64(t, boxes, at * 4 + k);
    nms_box b;
    for (int a = 0; a < 2; a++) {
        if (center) {           /* [xc, yc, w, h]: axis y is index 1 */
            double c = v[1 - a], half = v[3 - a] / 2;
            b.lo[a] = c - half;
            b.hi[a] = c + half;
        } else {                /* [y1, x1, y2, x2], either corner first */
            b.lo[a] = fmin(v[a], v[a + 2]);
            b.hi[a] = fmax(v[a], v[a + 2]);
        }
    }
    return b;
}

static bool suppresses(const nms_box *a, const nms_box *b, double iou)
{
    double inter = 1, area_a = 1, area_b = 1;
    for (int k = 0; k < 2; k++) {
        double lo = fmax(a->lo[k], b->lo[k]), hi = fmin(a->hi[k], b->hi[k]);
        if (hi <= lo)
            return false;
        inter *= hi - lo;
        area_a *= a->hi[k] - a->lo[k];
        area_b *= b->hi[k] - b->lo[k];
    }
    double uni = area_a + area_b - inter;
    if (inter <= 0 || area_a <= 0 || area_b <= 0 || uni <= 0)
        return false;
    return inter / uni > iou;
}

typedef struct {
    double score;
    int64_t box;
} nms_cand;

static int by_score(const void *pa, const void *pb)
{
    const nms_cand *a = pa, *b = pb;
    if (a->score != b->score)
        return a->score < b->score ? 1 : -1;
    return a->box < b->box ? -1 : a->box > b->box;
}

/* Per batch b < B and class c < C: the boxes of boxes [B,N,4] whose score in
 * scores [B,C,N] is above score_thr (has_thr), by descending score, each kept
 * unless its IoU with one kept before is above iou, at most max_out; rows
 * (b, c, box) into y [k, 3]. Returns k, or -1 when out of memory. */
TGK_DECL int64_t tgk_nms(tgk_dtype t, int64_t B, int64_t N, int64_t C, const void *boxes,
                         const void *scores, int64_t max_out, double iou, bool has_thr,
                         double score_thr, bool center, int64_t *y)
{
    nms_cand *cand = malloc(sizeof *cand * (size_t)(N ? N : 1));
    nms_box *kept = malloc(sizeof *kept * (size_t)(N ? N : 1));
    int64_t k = 0;
    if (!cand || !kept) {
        free(cand);
        free(kept);
        return -1;
    }
    for (int64_t b = 0; b < B; b++)
        for (int64_t c = 0; c < C; c++) {
            int64_t nc = 0, nk = 0;
            for (int64_t i = 0; i < N; i++) {
                double s = tgk_load_f64(t, scores, (b * C + c) * N + i);
                if (!has_thr || s > score_thr)
                    cand[nc++] = (nms_cand){s, i};
            }
            qsort(cand, (size_t)nc, sizeof *cand, by_score);
            for (int64_t i = 0; i < nc && nk < max_out; i++) {
                nms_box bx = box_at(t, boxes, b * N + cand[i].box, center);
                bool keep = true;
                for (int64_t j = 0; j < nk && keep; j++)
                    keep = !suppresses(&bx, &kept[j], iou);
                if (!keep)
                    continue;
                kept[nk++] = bx;
                y[k * 3] = b;
                y[k * 3 + 1] = c;
                y[k * 3 + 2] = cand[i].box;
                k++;
            }
        }
    free(cand);
    free(kept);
    return k;
}

#ifndef TGK_KERNELS_ONLY
#include <inttypes.h>
#include <stdio.h>

#include "../cg.h"
#include "../run.h"

#define TG_COUNTED nms
#include "../../../ops/family_size.h"
TG_FAMILY_HANDLES(nms, 1);
int tg_run_nms(const tg_run_ctx *c)
{
    const tg_tensor *b = c->in[0], *s = c->in[1];
    const tg_node *n = c->n;
    bool has_thr = tg_node_attr(n, "score_threshold") != NULL;
    int64_t k = tgk_nms(tg_run_kt(b->dtype), b->dims[0], b->dims[1], s->dims[1], b->data, s->data,
                        tg_node_int(n, "max_output", 0), tg_node_float(n, "iou_threshold", 0),
                        has_thr, tg_node_float(n, "score_threshold", 0),
                        tg_node_int(n, "center_point_box", 0), c->out[0]->data);
    if (k < 0)
        return tg_err("out of memory");
    c->out[0]->dims[0] = k;
    return 0;
}

/* As the glue, into the output's buffer sized by the bound (tcompile). */
int cg_node_nms(tg_cg *c, const tg_node *nd)
{
    const tg_value *b = tg_node_input(c->g, nd, 0), *s = tg_node_input(c->g, nd, 1);
    fprintf(c->f, "    int64_t k = tgk_nms(%s, %s, %s, %s, %s, %s, %" PRId64 ", %s, %s, %s, %s, %s);\n"
            "    if (k < 0)\n        return tgrt_fail(TGRAPH_E_NOMEM, %s);\n",
            cg_dtype_enum(c, "TGK_", b->dtype), cg_dim(c, b->shape.d[0]), cg_dim(c, b->shape.d[1]),
            cg_dim(c, s->shape.d[1]), cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]),
            tg_node_int(nd, "max_output", 0), cg_double(c, tg_node_float(nd, "iou_threshold", 0)),
            tg_node_attr(nd, "score_threshold") ? "true" : "false",
            cg_double(c, tg_node_float(nd, "score_threshold", 0)),
            tg_node_int(nd, "center_point_box", 0) ? "true" : "false", cg_ptr(c, nd->out[0]),
            cg_quote(c, cg_str(c, "node '%s' (nms): out of memory", nd->name)));
    return cg_data_bind(c, nd, "k");
}
#endif
