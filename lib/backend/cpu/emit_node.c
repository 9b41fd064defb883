/* One node as calls into the CPU kernels (kernels.h, tensor_ops.h) with dims
 * computed from the run's symbol values. Each node is a C block, so its local
 * arrays can reuse names. */
#include "cg.h"

#include <inttypes.h>
#include <math.h>
#include <string.h>

#include "../../error.h"
#include "../../ops/infer.h"
#include "opmap.h"

#define OUT(c, n) cg_ptr(c, (c)->g->nodes[n].out[0])

static const tg_value *in_val(tg_cg *c, const tg_node *nd, int i)
{
    return tg_node_input(c->g, nd, i);
}

static const tg_value *out_val(tg_cg *c, const tg_node *nd)
{
    return &c->g->values[nd->out[0]];
}

static const char *dt_enum(tg_cg *c, tg_dtype t)
{
    return cg_dtype_enum(c, "TGK_", t);
}

static int need_f32(const tg_node *nd, const tg_value *x)
{
    if (x->dtype != TG_F32)
        return tg_err("node '%s': %s on %s is not supported by the CPU code generator"
                      " (f32 only)", nd->name, tg_op_name(nd->op), tg_dtype_name(x->dtype));
    return 0;
}

static const char *opt_ptr(tg_cg *c, const tg_node *nd, int i)
{
    return i < nd->nin && nd->in[i] >= 0 ? cg_ptr(c, nd->in[i]) : "NULL";
}

/* Return a kernel's failure as the run's error (status), naming the node. */
static void check_status(tg_cg *c, const tg_node *nd, const char *call, const char *status,
                         const char *what)
{
    fprintf(c->f, "    if (%s)\n        return tgrt_fail(%s, %s);\n", call, status,
            cg_quote(c, cg_str(c, "node '%s' (%s): %s", nd->name, tg_op_name(nd->op), what)));
}

static void check_rc(tg_cg *c, const tg_node *nd, const char *call, const char *what)
{
    check_status(c, nd, call, "TGRAPH_E_DATA", what);
}

int cg_node_unary(tg_cg *c, const tg_node *nd)
{
    tgk_unary_op k;
    tgk_unary_param p;
    tg_cpu_unary_desc(nd, &k, &p);
    fprintf(c->f, "    const tgk_unary_param p = {%s, %s, %s};\n", cg_double(c, p.alpha),
            cg_double(c, p.lo), cg_double(c, p.hi));
    check_rc(c, nd,
             cg_str(c, "tgk_unary(%s, %s, %s, %s, %s, &p)",
                    tg_cpu_unary_name(nd, k),
                    dt_enum(c, in_val(c, nd, 0)->dtype), cg_numel(c, nd->out[0]),
                    cg_ptr(c, nd->in[0]), OUT(c, nd - c->g->nodes)),
             "not defined for this dtype");
    return 0;
}

/* dims/strides of inputs broadcast to the output: arrays y (output dims) and
 * s<i> for each input i. */
static void broadcast_arrays(tg_cg *c, const tg_node *nd, int nin)
{
    const tg_value *y = out_val(c, nd);
    int r = y->shape.rank ? y->shape.rank : 1;
    cg_dims_array(c, "y", &y->shape);
    for (int i = 0; i < nin; i++) {
        const tg_value *x = in_val(c, nd, i);
        cg_dims_array(c, cg_str(c, "x%d", i), &x->shape);
        fprintf(c->f, "    int64_t s%d[%d];\n    tgk_broadcast_strides(%d, y, %d, x%d, s%d);\n",
                i, r, y->shape.rank, x->shape.rank, i, i);
    }
}

int cg_node_binary(tg_cg *c, const tg_node *nd)
{
    const tg_value *a = in_val(c, nd, 0);
    broadcast_arrays(c, nd, 2);
    check_rc(c, nd,
             cg_str(c, "tgk_binary(%s, %s, %d, y, %s, s0, %s, s1, %s)", tg_cpu_kop_name[nd->op],
                    dt_enum(c, a->dtype), out_val(c, nd)->shape.rank, cg_ptr(c, nd->in[0]),
                    cg_ptr(c, nd->in[1]), OUT(c, nd - c->g->nodes)),
             "integer division by zero");
    return 0;
}

TG_FAMILY_HANDLES(where, 1);
int cg_node_where(tg_cg *c, const tg_node *nd)
{
    broadcast_arrays(c, nd, 3);
    fprintf(c->f, "    tgk_where(%zu, %d, y, %s, s0, %s, s1, %s, s2, %s);\n",
            tg_dtype_size(out_val(c, nd)->dtype), out_val(c, nd)->shape.rank,
            cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]), cg_ptr(c, nd->in[2]),
            OUT(c, nd - c->g->nodes));
    return 0;
}

int cg_axis(const tg_node *nd, const char *name, int64_t dflt, int rank, int *ax)
{
    int64_t a;
    if (tg_attr_get_int(nd, name, dflt, &a) || tg_axis_norm(a, rank, ax))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    return 0;
}

int cg_node_reduce(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    const int64_t *axes;
    int na = tg_node_ints(nd, "axes", &axes);
    uint32_t mask = 0;
    if (na < 0) {
        mask = x->shape.rank ? (uint32_t)((1u << x->shape.rank) - 1) : 0;
    } else {
        for (int i = 0; i < na; i++) {
            int ax;
            if (tg_axis_norm(axes[i], x->shape.rank, &ax))
                return tg_err("node '%s': %s", nd->name, tg_errmsg());
            mask |= 1u << ax;
        }
    }
    cg_dims_array(c, "x", &x->shape);
    check_rc(c, nd,
             cg_str(c, "tgk_reduce(%s, %s, %d, x, 0x%" PRIx32 "u, %" PRId64 ", %s, %s)",
                    tg_cpu_kop_name[nd->op],
                    dt_enum(c, x->dtype), x->shape.rank, mask,
                    tg_node_int(nd, "correction", 1), cg_ptr(c, nd->in[0]),
                    OUT(c, nd - c->g->nodes)),
             "not defined for this dtype");
    return 0;
}

TG_FAMILY_HANDLES(arg_reduce, 2);
int cg_node_arg_reduce(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    tg_shape flat = {.rank = 1};
    int ax = 0, rank = x->shape.rank;
    const tg_shape *s = &x->shape;
    if (!tg_node_attr(nd, "axis")) {        /* over everything: the flat index */
        if (tg_shape_numel(&x->shape, &flat.d[0]))
            return -1;
        s = &flat;
        rank = 1;
    } else if (cg_axis(nd, "axis", 0, rank, &ax)) {
        return -1;
    }
    cg_dims_array(c, "x", s);
    fprintf(c->f, "    tgk_arg_reduce(%d, %s, %d, x, %d, %s, %s);\n",
            nd->op == TG_OP_ARGMAX, dt_enum(c, x->dtype), rank, ax, cg_ptr(c, nd->in[0]),
            OUT(c, nd - c->g->nodes));
    return 0;
}

TG_FAMILY_HANDLES(softmax, 2);
int cg_node_softmax(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    int ax;
    if (need_f32(nd, x) || cg_axis(nd, "axis", -1, x->shape.rank, &ax))
        return -1;
    fprintf(c->f, "    tgk_softmax_f32(%s, %s, %s, %s, %s, %d);\n", cg_ptr(c, nd->in[0]),
            OUT(c, nd - c->g->nodes), cg_prod(c, &x->shape, 0, ax),
            cg_dim(c, x->shape.d[ax]), cg_prod(c, &x->shape, ax + 1, x->shape.rank),
            nd->op == TG_OP_LOG_SOFTMAX);
    return 0;
}

TG_FAMILY_HANDLES(norm, 3);
int cg_node_norm(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    const tg_shape *s = &x->shape;
    const char *y = OUT(c, nd - c->g->nodes), *xp = cg_ptr(c, nd->in[0]);
    tg_cpu_norm d;
    if (need_f32(nd, x))
        return -1;
    if (tg_cpu_norm_desc(nd, s->rank, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    const char *eps = cg_float(c, d.eps);
    switch (nd->op) {
    case TG_OP_LAYER_NORM:
        fprintf(c->f, "    tgk_layer_norm_f32(%s, %s, %s, %s, %s, %s, %s);\n", xp,
                opt_ptr(c, nd, 1), opt_ptr(c, nd, 2), y, cg_prod(c, s, 0, d.axis),
                cg_prod(c, s, d.axis, s->rank), eps);
        return 0;
    case TG_OP_GROUP_NORM:
        fprintf(c->f, "    tgk_group_norm_f32(%s, %s, %s, %s, %s, %s, %s, %" PRId64 ", %s);\n",
                xp, opt_ptr(c, nd, 1), opt_ptr(c, nd, 2), y, cg_dim(c, s->d[0]),
                cg_dim(c, s->d[1]), cg_prod(c, s, 2, s->rank), d.groups, eps);
        return 0;
    default:    /* batch_norm */
        fprintf(c->f, "    tgk_batch_norm_f32(%s, %s, %s, %s, %s, %s, %s, %s, %s, %s);\n", xp,
                cg_ptr(c, nd->in[1]), cg_ptr(c, nd->in[2]), opt_ptr(c, nd, 3),
                opt_ptr(c, nd, 4), y, cg_dim(c, s->d[0]), cg_dim(c, s->d[1]),
                cg_prod(c, s, 2, s->rank), eps);
        return 0;
    }
}

static int emit_matmul(tg_cg *c, const tg_node *nd)
{
    const tg_value *a = in_val(c, nd, 0), *b = in_val(c, nd, 1);
    if (need_f32(nd, a))
        return -1;
    cg_dims_array(c, "a", &a->shape);
    cg_dims_array(c, "b", &b->shape);
    fprintf(c->f, "    tgk_matmul_f32(%d, a, %s, %d, b, %s, %s);\n", a->shape.rank,
            cg_ptr(c, nd->in[0]), b->shape.rank, cg_ptr(c, nd->in[1]),
            OUT(c, nd - c->g->nodes));
    return 0;
}

static int emit_linear(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *w = in_val(c, nd, 1);
    if (need_f32(nd, x) || need_f32(nd, w))     /* a bf16 weight is packed (prepack) */
        return -1;
    fprintf(c->f, "    tgk_linear_f32(%s, %s, %s, %s, %s, %s, %s);\n", cg_ptr(c, nd->in[0]),
            cg_ptr(c, nd->in[1]), opt_ptr(c, nd, 2), OUT(c, nd - c->g->nodes),
            cg_prod(c, &x->shape, 0, x->shape.rank - 1), cg_dim(c, w->shape.d[0]),
            cg_dim(c, w->shape.d[1]));
    return 0;
}

static int emit_linear_packed(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    const char *act, *M = cg_prod(c, &x->shape, 0, x->shape.rank - 1);
    const char *K = cg_dim(c, x->shape.d[x->shape.rank - 1]);
    int res, n = (int)(nd - c->g->nodes);
    bool ep = cg_linear_epilogue(c, c->p->root[n], &act, &res);
    if (in_val(c, nd, 1)->dtype == TG_BF16) {   /* one kernel, with or without epilogue */
        check_status(c, nd,
                     cg_str(c, "tgk_linear_packed_bf16(%s, %s, %s, %s, %s, %s, %" PRId64
                            ", %s, %s)", cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]),
                            opt_ptr(c, nd, 2), ep && res >= 0 ? cg_ptr(c, res) : "NULL",
                            OUT(c, n), M, tg_node_int(nd, "n", 0), K,
                            ep && act ? cg_str(c, "tgk_vec_%s_f32", act) : "NULL"),
                     "TGRAPH_E_NOMEM", "out of memory");
        return 0;
    }
    if (!ep) {
        fprintf(c->f, "    tgk_linear_packed_f32(%s, %s, %s, %s, %s, %" PRId64 ", %s);\n",
                cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]), opt_ptr(c, nd, 2), OUT(c, n), M,
                tg_node_int(nd, "n", 0), K);
        return 0;
    }
    fprintf(c->f, "    tgk_linear_packed_ex_f32(%s, %s, %s, %s, %s, %s, %" PRId64 ", %s, %s);\n",
            cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]), opt_ptr(c, nd, 2),
            res >= 0 ? cg_ptr(c, res) : "NULL", OUT(c, n), M, tg_node_int(nd, "n", 0), K,
            act ? cg_str(c, "tgk_vec_%s_f32", act) : "NULL");
    return 0;
}

/* A descriptor's per-spatial-axis array v as constants, d.field[i] = v[i]. */
static void per_axis(tg_cg *c, const char *field, int nsp, const int64_t *v)
{
    for (int i = 0; i < nsp; i++)
        fprintf(c->f, "    d.%s[%d] = %" PRId64 ";\n", field, i, v[i]);
}

/* The epilogue a conv's or conv_nhwc's kernel applies, as fields of its
 * descriptor d. */
static void conv_epilogue_fields(tg_cg *c, const tg_node *nd)
{
    cg_conv_ep ep;
    if (!cg_conv_epilogue(c, c->p->root[nd - c->g->nodes], &ep))
        return;
    if (ep.relu)
        fprintf(c->f, "    d.relu = 1;\n");
    if (ep.pool)
        fprintf(c->f, "    d.pool = %" PRId64 ";\n", ep.pool);
    if (ep.act)
        fprintf(c->f, "    d.act = tgk_vec_%s_f32;\n", ep.act);
    if (ep.res >= 0)
        fprintf(c->f, "    d.res = %s;\n", cg_ptr(c, ep.res));
}

/* Where nd's result is a part of a concat along the channels written in
 * place (tg_plan_part): the descriptor's field set to the concat's row
 * stride. 0, or -1 (tg_err). */
static int part_stride(tg_cg *c, const tg_node *nd, const char *field)
{
    tg_part pt;
    if (c->p->part[nd->out[0]] < 0)
        return 0;
    if (tg_plan_part(c->g, c->p, nd->out[0], &pt))
        return -1;
    fprintf(c->f, "    d.%s = %s;\n", field, cg_dim(c, pt.stride));
    return 0;
}

static int emit_conv(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *w = in_val(c, nd, 1), *y = out_val(c, nd);
    int nsp = x->shape.rank - 2;
    tgk_conv_desc d;
    if (need_f32(nd, x))
        return -1;
    if (tg_cpu_conv_desc(nd, nsp, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    fprintf(c->f, "    tgk_conv_desc d = {0};\n    d.nsp = %d;\n    d.n = %s;\n    d.c = %s;\n"
            "    d.k = %s;\n    d.groups = %" PRId64 ";\n    d.transposed = %d;\n",
            nsp, cg_dim(c, x->shape.d[0]), cg_dim(c, x->shape.d[1]), cg_dim(c, y->shape.d[1]),
            d.groups, (int)d.transposed);
    for (int i = 0; i < nsp; i++)
        fprintf(c->f, "    d.in[%d] = %s;\n    d.out[%d] = %s;\n    d.kernel[%d] = %s;\n", i,
                cg_dim(c, x->shape.d[2 + i]), i, cg_dim(c, y->shape.d[2 + i]), i,
                cg_dim(c, w->shape.d[2 + i]));
    per_axis(c, "stride", nsp, d.stride);
    per_axis(c, "pad", nsp, d.pad);
    per_axis(c, "dil", nsp, d.dil);
    conv_epilogue_fields(c, nd);
    if (part_stride(c, nd, "y_stride"))   /* images apart */
        return -1;
    check_status(c, nd,
                 cg_str(c, "tgk_conv_f32(&d, %s, %s, %s, %s)", cg_ptr(c, nd->in[0]),
                        cg_ptr(c, nd->in[1]), opt_ptr(c, nd, 2), OUT(c, nd - c->g->nodes)),
                 "TGRAPH_E_NOMEM", "out of memory");
    return 0;
}

/* conv_nhwc: x [N, H, W, C], its weight packed (tgk_pack_conv_nhwc_f32). */
static int emit_conv_nhwc(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *y = out_val(c, nd);
    tgk_conv_nhwc_desc d;
    if (tg_cpu_conv_nhwc_desc(nd, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    fprintf(c->f, "    tgk_conv_nhwc_desc d = {0};\n    d.n = %s;\n    d.c = %s;\n"
            "    d.k = %" PRId64 ";\n    d.groups = %" PRId64 ";\n", cg_dim(c, x->shape.d[0]),
            cg_dim(c, x->shape.d[3]), d.k, d.groups);
    for (int i = 0; i < 2; i++)
        fprintf(c->f, "    d.in[%d] = %s;\n    d.out[%d] = %s;\n", i,
                cg_dim(c, x->shape.d[1 + i]), i, cg_dim(c, y->shape.d[1 + i]));
    per_axis(c, "kernel", 2, d.kernel);
    per_axis(c, "stride", 2, d.stride);
    per_axis(c, "pad", 2, d.pad);
    per_axis(c, "dil", 2, d.dil);
    conv_epilogue_fields(c, nd);
    if (part_stride(c, nd, "y_ld"))       /* pixels apart */
        return -1;
    check_status(c, nd,
                 cg_str(c, "tgk_conv_nhwc_f32(&d, %s, %s, %s, %s)", cg_ptr(c, nd->in[0]),
                        cg_ptr(c, nd->in[1]), opt_ptr(c, nd, 2), OUT(c, nd - c->g->nodes)),
                 "TGRAPH_E_NOMEM", "out of memory");
    return 0;
}

/* sdpa's q, k or v (operand i): its pointer, or where the sdpa's STRIDED
 * group reads a view chain in place, the chain's base and offset, with the
 * view's batch, head and row strides set in the descriptor. NULL: tg_err. */
static const char *sdpa_operand(tg_cg *c, const tg_node *nd, int i)
{
    static const char *const field[] = {"q_stride", "k_stride", "v_stride"};
    int n = (int)(nd - c->g->nodes), v = nd->in[i];
    const tg_value *x = &c->g->values[v];
    if (x->kind != TG_VALUE_NODE || x->producer == n ||
        c->p->root[x->producer] != c->p->root[n])
        return cg_ptr(c, v);
    tg_view w;
    if (tg_view_analyze(c->g, c->p, x->producer, &w))
        return tg_err("node '%s': %s", nd->name, tg_errmsg()), NULL;
    for (int k = 0; k < 3; k++)
        fprintf(c->f, "    d.%s[%d] = %s;\n", field[i], k, cg_dim(c, w.strides[k]));
    return cg_str(c, "(const float *)%s + (%s)", cg_ptr(c, w.base), cg_dim(c, w.offset));
}

/* Where the sdpa's STRIDED group ends in permute `root`: the result goes
 * straight into the permute's, o_stride set to where the permute puts each
 * batch, head and row. */
static int sdpa_permuted_out(tg_cg *c, int root)
{
    const tg_node *pm = &c->g->nodes[root];
    const tg_shape *y = &c->g->values[pm->out[0]].shape;
    const int64_t *perm;
    int r = tg_node_ints(pm, "perm", &perm);
    tg_dim st[TG_MAX_RANK], s = tg_dim_const(1);
    for (int i = r - 1; i >= 0; i--) {
        st[i] = s;
        if (tg_dim_mul(s, y->d[i], &s))
            return -1;
    }
    for (int i = 0; i < r; i++) {
        int k = (int)(perm[i] < 0 ? perm[i] + r : perm[i]);
        if (k < 3)
            fprintf(c->f, "    d.o_stride[%d] = %s;\n", k, cg_dim(c, st[i]));
    }
    return 0;
}

static int emit_sdpa(tg_cg *c, const tg_node *nd)
{
    const tg_value *q = in_val(c, nd, 0), *k = in_val(c, nd, 1), *v = in_val(c, nd, 2);
    const tg_value *m = nd->nin > 3 && nd->in[3] >= 0 ? in_val(c, nd, 3) : NULL;
    int r = q->shape.rank;
    tgk_sdpa_desc d;
    if (need_f32(nd, q))
        return -1;
    tg_cpu_sdpa_desc(nd, &d);
    fprintf(c->f, "    tgk_sdpa_desc d = {0};\n    d.batch = %s;\n    d.hq = %s;\n"
            "    d.hk = %s;\n    d.L = %s;\n    d.S = %s;\n    d.E = %s;\n    d.Ev = %s;\n"
            "    d.causal = %d;\n",
            cg_prod(c, &q->shape, 0, r - 3), cg_dim(c, q->shape.d[r - 3]),
            cg_dim(c, k->shape.d[r - 3]), cg_dim(c, q->shape.d[r - 2]),
            cg_dim(c, k->shape.d[r - 2]), cg_dim(c, q->shape.d[r - 1]),
            cg_dim(c, v->shape.d[r - 1]), (int)d.causal);
    if (d.scale != 0)
        fprintf(c->f, "    d.scale = %s;\n", cg_float(c, d.scale));
    else
        fprintf(c->f, "    d.scale = 1.0f / sqrtf((float)d.E);\n");
    if (m) {
        /* the mask's strides broadcast to the scores [..., hq, L, S]; the
         * batch dims must fold into one stride (the interpreter converts a
         * bool mask and expands one that does not fold: tg_run_sdpa_mask_layout
         * on concrete dims, which the generated code would do at each run) */
        if (m->dtype != TG_F32)
            return tg_err("node '%s': sdpa with a %s mask is not supported by the CPU code"
                          " generator (add a float mask)", nd->name, tg_dtype_name(m->dtype));
        if (r > 4 && m->shape.rank > 3)
            return tg_err("node '%s': sdpa mask with more than one batch dim is not"
                          " supported by the CPU code generator", nd->name);
        tg_shape sc = q->shape;
        sc.d[r - 1] = k->shape.d[r - 2];
        cg_dims_array(c, "sc", &sc);
        cg_dims_array(c, "md", &m->shape);
        fprintf(c->f, "    int64_t ms[%d];\n    tgk_broadcast_strides(%d, sc, %d, md, ms);\n",
                r, r, m->shape.rank);
        fprintf(c->f, "    d.mask = %s;\n", cg_ptr(c, nd->in[3]));
        fprintf(c->f, "    d.mask_stride[0] = %s;\n", r > 3 ? cg_str(c, "ms[%d]", r - 4) : "0");
        for (int i = 1; i < 4; i++)
            fprintf(c->f, "    d.mask_stride[%d] = ms[%d];\n", i, r - 4 + i);
    }
    const char *qkv[3];
    for (int i = 0; i < 3; i++)
        if (!(qkv[i] = sdpa_operand(c, nd, i)))
            return -1;
    int n = (int)(nd - c->g->nodes), root = c->p->root[n];
    if (root != n && sdpa_permuted_out(c, root))
        return -1;
    check_status(c, nd,
                 cg_str(c, "tgk_sdpa_f32(&d, %s, %s, %s, %s)", qkv[0], qkv[1], qkv[2],
                        OUT(c, root)),
                 "TGRAPH_E_NOMEM", "out of memory");
    return 0;
}

TG_FAMILY_HANDLES(resize, 1);
int cg_node_resize(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *y = out_val(c, nd);
    tgk_resize_desc d;
    if (need_f32(nd, x) || tg_cpu_resize_desc(nd, x->shape.rank - 2, &d))
        return -1;
    fprintf(c->f, "    tgk_resize_desc d = {0};\n    d.nsp = %d;\n    d.nc = %s;\n"
            "    d.mode = %d;\n    d.coord = %d;\n    d.nearest = %d;\n    d.cubic_a = %s;\n"
            "    d.exclude_outside = %d;\n    d.antialias = %d;\n    d.extrapolation = %s;\n", d.nsp,
            cg_prod(c, &x->shape, 0, 2), (int)d.mode, (int)d.coord, (int)d.nearest, cg_float(c, d.cubic_a),
            (int)d.exclude_outside, (int)d.antialias, cg_float(c, d.extrapolation));
    for (int i = 0; i < d.nsp; i++)
        fprintf(c->f, "    d.in[%d] = %s;\n    d.out[%d] = %s;\n    d.scale[%d] = %s;\n"
                "    d.roi[%d][0] = %s;\n    d.roi[%d][1] = %s;\n", i,
                cg_dim(c, x->shape.d[2 + i]), i, cg_dim(c, y->shape.d[2 + i]), i,
                cg_double(c, d.scale[i]), i, cg_double(c, d.roi[i][0]), i, cg_double(c, d.roi[i][1]));
    check_status(c, nd,
                 cg_str(c, "tgk_resize_f32(&d, %s, %s)", cg_ptr(c, nd->in[0]),
                        OUT(c, nd - c->g->nodes)),
                 "TGRAPH_E_NOMEM", "out of memory, or an empty input");
    return 0;
}

TG_FAMILY_HANDLES(pool, 3);
int cg_node_pool(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *y = out_val(c, nd);
    int nsp = x->shape.rank - 2, r;
    if (need_f32(nd, x))
        return -1;
    if (nd->op != TG_OP_ADAPTIVE_AVG_POOL && (r = cg_emit_pool(c, nd - c->g->nodes)) <= 0)
        return r;
    if (nd->op == TG_OP_ADAPTIVE_AVG_POOL && tg_node_int(nd, "channels_last", 0)) {
        fprintf(c->f, "    tgk_adaptive_avg_pool_nhwc_f32(%s, %s, %s, %s, %s, %s, %s, %s);\n",
                cg_dim(c, x->shape.d[0]), cg_dim(c, x->shape.d[3]), cg_dim(c, x->shape.d[1]),
                cg_dim(c, x->shape.d[2]), cg_dim(c, y->shape.d[1]), cg_dim(c, y->shape.d[2]),
                cg_ptr(c, nd->in[0]), OUT(c, nd - c->g->nodes));
        return 0;
    }
    if (nd->op == TG_OP_ADAPTIVE_AVG_POOL) {
        const char *one = "1";
        fprintf(c->f, "    tgk_adaptive_avg_pool_f32(%s, %s, %s, %s, %s, %s, %s);\n",
                cg_prod(c, &x->shape, 0, 2), nsp == 2 ? cg_dim(c, x->shape.d[2]) : one,
                cg_dim(c, x->shape.d[x->shape.rank - 1]),
                nsp == 2 ? cg_dim(c, y->shape.d[2]) : one,
                cg_dim(c, y->shape.d[y->shape.rank - 1]), cg_ptr(c, nd->in[0]),
                OUT(c, nd - c->g->nodes));
        return 0;
    }
    tgk_pool_desc d;
    if (tg_cpu_pool_desc(nd, nsp, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    int sp0 = d.channels_last ? 1 : 2;     /* [N, H, W, C] or [N, C, *sp] */
    fprintf(c->f, "    tgk_pool_desc d = {0};\n    d.nsp = %d;\n    d.n = %s;\n    d.c = %s;\n"
            "    d.count_include_pad = %d;\n    d.channels_last = %d;\n", nsp,
            cg_dim(c, x->shape.d[0]), cg_dim(c, x->shape.d[d.channels_last ? 3 : 1]),
            (int)d.count_include_pad, (int)d.channels_last);
    for (int i = 0; i < nsp; i++)
        fprintf(c->f, "    d.in[%d] = %s;\n    d.out[%d] = %s;\n", i,
                cg_dim(c, x->shape.d[sp0 + i]), i, cg_dim(c, y->shape.d[sp0 + i]));
    per_axis(c, "kernel", nsp, d.kernel);
    per_axis(c, "stride", nsp, d.stride);
    per_axis(c, "pad", nsp, d.pad);
    per_axis(c, "dil", nsp, d.dil);
    fprintf(c->f, "    tgk_%s_pool_f32(&d, %s, %s);\n", nd->op == TG_OP_MAX_POOL ? "max" : "avg",
            cg_ptr(c, nd->in[0]), OUT(c, nd - c->g->nodes));
    return 0;
}

TG_FAMILY_HANDLES(movement, 8);
int cg_node_movement(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *y = out_val(c, nd);
    size_t es = tg_dtype_size(x->dtype);
    const char *xp = cg_ptr(c, nd->in[0]), *yp = OUT(c, nd - c->g->nodes);
    int r = x->shape.rank, ax;
    tg_cpu_movement d;
    if (tg_cpu_movement_desc(nd, r, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    ax = d.axis;
    cg_dims_array(c, "x", &x->shape);
    switch (nd->op) {
    case TG_OP_PERMUTE:
        fprintf(c->f, "    static const int64_t perm[] = {");
        for (int i = 0; i < r; i++)
            fprintf(c->f, "%s%" PRId64, i ? ", " : "", d.v[i]);
        fprintf(c->f, "};\n    tgk_permute(%zu, %d, x, perm, %s, %s);\n", es, x->shape.rank,
                xp, yp);
        return 0;
    case TG_OP_EXPAND:
        cg_dims_array(c, "y", &y->shape);
        fprintf(c->f, "    tgk_expand(%zu, %d, y, %d, x, %s, %s);\n", es, y->shape.rank,
                x->shape.rank, xp, yp);
        return 0;
    case TG_OP_SLICE:
        fprintf(c->f, "    int64_t start = %s;\n    if (start > x[%d])\n        start = x[%d];\n"
                "    tgk_slice(%zu, %d, x, %d, start, %" PRId64 ", %s, %s, %s);\n",
                cg_dim(c, d.start), ax, ax, es, r, ax, d.step, cg_dim(c, y->shape.d[ax]), xp,
                yp);
        return 0;
    case TG_OP_CONCAT:     /* its parts written in place by their producers: NULL */
        fprintf(c->f, "    const void *const in[] = {");
        for (int i = 0; i < nd->nin; i++)
            fprintf(c->f, "%s%s", i ? ", " : "",
                    c->p->part[nd->in[i]] == nd - c->g->nodes ? "NULL" : cg_ptr(c, nd->in[i]));
        fprintf(c->f, "};\n    const int64_t len[] = {");
        for (int i = 0; i < nd->nin; i++)
            fprintf(c->f, "%s%s", i ? ", " : "", cg_dim(c, in_val(c, nd, i)->shape.d[ax]));
        fprintf(c->f, "};\n    tgk_concat(%zu, %s, %s, %d, in, len, %s);\n", es,
                cg_prod(c, &x->shape, 0, ax), cg_prod(c, &x->shape, ax + 1, x->shape.rank),
                nd->nin, yp);
        return 0;
    case TG_OP_PAD:
        fprintf(c->f, "    static const int64_t before[] = {");
        for (int i = 0; i < r; i++)
            fprintf(c->f, "%s%" PRId64, i ? ", " : "", d.v[i]);
        fprintf(c->f, "};\n    static const int64_t after[] = {");
        for (int i = 0; i < r; i++)
            fprintf(c->f, "%s%" PRId64, i ? ", " : "", d.v[r + i]);
        if (d.mode) {
            fprintf(c->f, "};\n");
            check_rc(c, nd, cg_str(c, "tgk_pad_mode(%zu, %d, x, before, after, %d, %s, %s)", es,
                                   r, d.mode, xp, yp),
                     "pad mode of an empty axis");
            return 0;
        }
        fprintf(c->f, "};\n    uint64_t value = 0;\n    tgk_store_f64(%s, &value, 0, %s);\n"
                "    tgk_pad(%zu, %d, x, before, after, &value, %s, %s);\n",
                dt_enum(c, x->dtype), cg_double(c, d.value), es, r, xp, yp);
        return 0;
    case TG_OP_TILE:
        fprintf(c->f, "    static const int64_t reps[] = {");
        for (int i = 0; i < r; i++)
            fprintf(c->f, "%s%" PRId64, i ? ", " : "", d.v[i]);
        fprintf(c->f, "};\n    tgk_tile(%zu, %d, x, reps, %s, %s);\n", es, r, xp, yp);
        return 0;
    default:    /* tril, triu */
        fprintf(c->f, "    tgk_tri(%zu, %d, %s, %s, %s, %" PRId64 ", %s, %s);\n", es,
                nd->op == TG_OP_TRIU, cg_prod(c, &x->shape, 0, r - 2),
                cg_dim(c, x->shape.d[r - 2]), cg_dim(c, x->shape.d[r - 1]), d.k, xp, yp);
        return 0;
    }
}

TG_FAMILY_HANDLES(index, 3);
int cg_node_index(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0), *idx = in_val(c, nd, 1);
    size_t es = tg_dtype_size(x->dtype);
    if (idx->dtype != TG_I64)
        return tg_err("node '%s': %s with %s indices is not supported by the CPU code"
                      " generator (i64 only)", nd->name, tg_op_name(nd->op),
                      tg_dtype_name(idx->dtype));
    tg_cpu_index d;
    if (tg_cpu_index_desc(nd, x->shape.rank, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    int ax = d.axis, red = d.reduce;
    fprintf(c->f, "    int64_t bad = 0;\n");
    if (red) {
        check_rc(c, nd,
                 cg_str(c, "tgk_index_reduce(%s, %d, %s, %s, %s, %s, %s, %s, %s, %s, &bad)",
                        cg_dtype_enum(c, "TGK_", x->dtype), red, cg_prod(c, &x->shape, 0, ax),
                        cg_dim(c, x->shape.d[ax]), cg_prod(c, &x->shape, ax + 1, x->shape.rank),
                        cg_ptr(c, nd->in[0]), cg_numel(c, nd->in[1]), cg_ptr(c, nd->in[1]),
                        cg_ptr(c, nd->in[2]), OUT(c, nd - c->g->nodes)),
                 "index out of range");
    } else if (nd->op == TG_OP_INDEX_COPY) {
        check_rc(c, nd,
                 cg_str(c, "tgk_index_copy(%zu, %s, %s, %s, %s, %s, %s, %s, %s, &bad)", es,
                        cg_prod(c, &x->shape, 0, ax), cg_dim(c, x->shape.d[ax]),
                        cg_prod(c, &x->shape, ax + 1, x->shape.rank), cg_ptr(c, nd->in[0]),
                        cg_numel(c, nd->in[1]), cg_ptr(c, nd->in[1]), cg_ptr(c, nd->in[2]),
                        OUT(c, nd - c->g->nodes)),
                 "index out of range");
    } else if (nd->op == TG_OP_INDEX_SELECT) {
        check_rc(c, nd,
                 cg_str(c, "tgk_index_select(%zu, %s, %s, %s, %s, %s, %s, %s, &bad)", es,
                        cg_prod(c, &x->shape, 0, ax), cg_dim(c, x->shape.d[ax]),
                        cg_prod(c, &x->shape, ax + 1, x->shape.rank), cg_ptr(c, nd->in[0]),
                        cg_numel(c, nd->in[1]), cg_ptr(c, nd->in[1]), OUT(c, nd - c->g->nodes)),
                 "index out of range");
    } else {
        cg_dims_array(c, "x", &x->shape);
        cg_dims_array(c, "ix", &idx->shape);
        check_rc(c, nd,
                 cg_str(c, "tgk_gather(%zu, %d, x, ix, %d, %s, %s, %s, &bad)", es,
                        x->shape.rank, ax, cg_ptr(c, nd->in[0]), cg_ptr(c, nd->in[1]),
                        OUT(c, nd - c->g->nodes)),
                 "index out of range");
    }
    return 0;
}

TG_FAMILY_HANDLES(quant, 2);
int cg_node_quant(tg_cg *c, const tg_node *nd)
{
    const tg_value *x = in_val(c, nd, 0);
    bool q = nd->op == TG_OP_QUANTIZE;
    tg_dtype qt = q ? out_val(c, nd)->dtype : x->dtype;
    tg_cpu_quant d;
    if (need_f32(nd, q ? x : out_val(c, nd)))
        return -1;
    if (tg_cpu_quant_desc(nd, x->shape.rank, &d))
        return tg_err("node '%s': %s", nd->name, tg_errmsg());
    int nch = (int)d.nch;
    fprintf(c->f, "    static const float scale[] = {");
    for (int i = 0; i < nch; i++)
        fprintf(c->f, "%s%s", i ? ", " : "", cg_float(c, tg_cpu_quant_scale(&d, i)));
    fprintf(c->f, "};\n    static const int32_t zero[] = {");
    for (int i = 0; i < nch; i++)
        fprintf(c->f, "%s%" PRId32, i ? ", " : "", tg_cpu_quant_zero(&d, i));
    fprintf(c->f, "};\n");
    check_rc(c, nd,
             cg_str(c, "tgk_%s_f32(%s, %s, %s, scale, zero, %d, %s, %s)",
                    q ? "quantize" : "dequantize", cg_numel(c, nd->out[0]),
                    cg_ptr(c, nd->in[0]), dt_enum(c, qt), nch,
                    nch > 1 ? cg_prod(c, &x->shape, d.axis + 1, x->shape.rank) : "1",
                    OUT(c, nd - c->g->nodes)),
             "unsupported quantized dtype");
    return 0;
}

TG_FAMILY_HANDLES(gen, 2);
int cg_node_gen(tg_cg *c, const tg_node *nd)
{
    const tg_value *y = out_val(c, nd);
    tg_cpu_gen d;
    tg_cpu_gen_desc(nd, &d);
    if (nd->op == TG_OP_FULL) {
        fprintf(c->f, "    tgk_full(%s, %s, %s, %s);\n", dt_enum(c, y->dtype),
                cg_numel(c, nd->out[0]), cg_double(c, d.value), OUT(c, nd - c->g->nodes));
        return 0;
    }
    fprintf(c->f, "    tgk_arange(%s, %s, %" PRId64 ", %" PRId64 ", %s);\n",
            dt_enum(c, y->dtype), cg_numel(c, nd->out[0]), d.start, d.step,
            OUT(c, nd - c->g->nodes));
    return 0;
}

TG_FAMILY_HANDLES(cast, 1);
int cg_node_cast(tg_cg *c, const tg_node *nd)
{
    fprintf(c->f, "    tgk_cast(%s, %s, %s, %s, %s);\n", dt_enum(c, out_val(c, nd)->dtype),
            OUT(c, nd - c->g->nodes), dt_enum(c, in_val(c, nd, 0)->dtype),
            cg_ptr(c, nd->in[0]), cg_numel(c, nd->out[0]));
    return 0;
}

TG_FAMILY_HANDLES(linalg, 6);
int cg_node_linalg(tg_cg *c, const tg_node *nd)
{
    switch (nd->op) {
    case TG_OP_MATMUL: return emit_matmul(c, nd);
    case TG_OP_LINEAR: return emit_linear(c, nd);
    case TG_OP_LINEAR_PACKED: return emit_linear_packed(c, nd);
    case TG_OP_CONV: return emit_conv(c, nd);
    case TG_OP_CONV_NHWC: return emit_conv_nhwc(c, nd);
    default: return emit_sdpa(c, nd);     /* sdpa */
    }
}

/* The aliases (reshape, identity) have no code: the memory plan gives their
 * output the input's storage, and cg_emit_node skips them. */
#define cg_node_alias NULL

/* The emitter of each op: its family's (ops.def, cg.h). */
static int (*const node_table[TG_OP_COUNT])(tg_cg *c, const tg_node *nd) = {
#define OP(id, name, min_in, max_in, infer, family, flag) [TG_OP_##id] = cg_node_##family,
#include "../../ops/ops.def"
#undef OP
};

int cg_emit_node(tg_cg *c, int n)
{
    const tg_node *nd = &c->g->nodes[n];
    if (tg_op_is_view(nd->op))
        return 0;
    if (nd->op <= TG_OP_NONE || nd->op >= TG_OP_COUNT)
        return tg_err("node '%s': op %s is not supported by the CPU code generator",
                      nd->name, tg_op_name(nd->op));
    fprintf(c->f, "    /* %s: %s */\n    {\n", nd->name, tg_op_name(nd->op));
    int rc = node_table[nd->op](c, nd);
    fprintf(c->f, "    }\n");
    return rc;
}

int cg_emit_view(tg_cg *c, int root)
{
    tg_view w;
    if (tg_view_analyze(c->g, c->p, root, &w))
        return tg_err("node '%s': %s", c->g->nodes[root].name, tg_errmsg());
    size_t es = tg_dtype_size(c->g->values[w.base].dtype);
    tg_shape dims = {.rank = w.rank}, st = {.rank = w.rank};
    memcpy(dims.d, w.dims, sizeof(tg_dim) * w.rank);
    memcpy(st.d, w.strides, sizeof(tg_dim) * w.rank);
    fprintf(c->f, "    /* view:");
    for (int n = 0; n <= root; n++)
        if (c->p->root[n] == root)
            fprintf(c->f, " %s", c->g->nodes[n].name);
    fprintf(c->f, " */\n    {\n");
    cg_dims_array(c, "dims", &dims);
    cg_dims_array(c, "st", &st);
    fprintf(c->f, "    tgk_copy_strided(%zu, %d, dims, (const char *)%s + (%s) * %zu, st, %s, NULL);\n"
            "    }\n", es, w.rank, cg_ptr(c, w.base), cg_dim(c, w.offset), es,
            cg_ptr(c, c->g->nodes[root].out[0]));
    return 0;
}
