/* aten operators that move data: views (as reshape / permute / expand /
 * slice), concatenation and splitting, indexing and writing by index,
 * rolling and differences, padding, repetition. Sizes
 * may be symbolic: they are tg_dim expressions throughout. */
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "import/pt2.h"

static const tg_shape *shape_of(const pt2_ctx *c, int v) { return &pt2_val(c, v)->shape; }

/* The target of view/reshape with one -1 resolved from the element count. */
static int infer_shape(pt2_ctx *c, int x, tg_dim *shape, int n)
{
    int neg = -1;
    tg_dim known = tg_dim_const(1), total;
    for (int i = 0; i < n; i++) {
        int64_t v;
        if (tg_dim_is_const(shape[i], &v) && v == -1) {
            if (neg >= 0)
                return tg_err("more than one -1 in a shape");
            neg = i;
        } else if (tg_dim_mul(known, shape[i], &known) < 0) {
            return -1;
        }
    }
    if (neg < 0)
        return 0;
    if (tg_shape_numel(shape_of(c, x), &total) < 0 || tg_dim_div(total, known, &shape[neg]) < 0)
        return tg_err("cannot infer the -1 in a view of %d elements", n);
    return 0;
}

static int h_view(pt2_ctx *c, const cJSON *node)
{
    int x, n;
    tg_dim shape[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (n = pt2_dims(c, node, pt2_arg(node, "size") ? "size" : "shape", shape, TG_MAX_RANK)) < 0 ||
        infer_shape(c, x, shape, n) < 0)
        return -1;
    return pt2_set_out(c, 0, pt2_reshape(c, true, x, n, shape));
}

static int h_permute(pt2_ctx *c, const cJSON *node)
{
    int x, n;
    int64_t perm[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0 || (n = pt2_ints(c, node, "dims", perm, TG_MAX_RANK)) < 0)
        return -1;
    if (n != pt2_rank(c, x))
        return tg_err("permute of rank %d with %d dims", pt2_rank(c, x), n);
    for (int i = 0; i < n; i++) {
        int ax;
        if (pt2_axis(perm[i], n, &ax) < 0)
            return -1;
        perm[i] = ax;
    }
    return pt2_set_out(c, 0, pt2_permute(c, true, x, perm));
}

/* transpose(dim0, dim1), and t (2-D transpose; fewer dims unchanged) */
static int h_transpose(pt2_ctx *c, const cJSON *node)
{
    int x, a, b;
    int64_t d0, d1, perm[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    int r = pt2_rank(c, x);
    bool t = !pt2_arg(node, "dim0");
    if (t && r < 2)
        return pt2_set_out(c, 0, x);
    if (pt2_int(c, node, "dim0", 0, &d0) < 0 || pt2_int(c, node, "dim1", 1, &d1) < 0 ||
        pt2_axis(d0, r, &a) < 0 || pt2_axis(d1, r, &b) < 0)
        return -1;
    for (int i = 0; i < r; i++)
        perm[i] = i;
    perm[a] = b;
    perm[b] = a;
    return pt2_set_out(c, 0, r ? pt2_permute(c, true, x, perm) : x);
}

static int expand_to(pt2_ctx *c, int x, int n, tg_dim *shape)
{
    const tg_shape *s = shape_of(c, x);
    if (n < s->rank)
        return tg_err("expand to %d dimensions from %d", n, s->rank);
    bool same = n == s->rank;
    for (int i = 0; i < n; i++) {
        int64_t v;
        int j = i - (n - s->rank);
        if (tg_dim_is_const(shape[i], &v) && v == -1) {
            if (j < 0)
                return tg_err("expand: -1 for a new dimension");
            shape[i] = s->d[j];
        }
        same &= j >= 0 && tg_dim_eq(shape[i], s->d[j]);
    }
    if (same)
        return x;
    tg_attr a = tg_attr_dims("shape", n, shape);
    return pt2_emit(c, true, TG_OP_EXPAND, 1, &x, 1, &a);
}

static int h_expand(pt2_ctx *c, const cJSON *node)
{
    int x, other, n;
    tg_dim shape[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_opt_tensor(c, node, "other", &other) < 0)
        return -1;
    if (other >= 0) {       /* expand_as */
        n = pt2_rank(c, other);
        memcpy(shape, shape_of(c, other)->d, (size_t)n * sizeof *shape);
    } else if ((n = pt2_dims(c, node, "size", shape, TG_MAX_RANK)) < 0) {
        return -1;
    }
    return pt2_set_out(c, 0, expand_to(c, x, n, shape));
}

/* x's shape with dimension ax removed (keep false) or a 1 inserted at ax. */
static int reshape_dim(pt2_ctx *c, bool final, int x, int ax, bool insert)
{
    const tg_shape *s = shape_of(c, x);
    tg_dim d[TG_MAX_RANK];
    int n = 0;
    if (insert && s->rank >= TG_MAX_RANK)
        return tg_err("rank above %d", TG_MAX_RANK);
    for (int i = 0; i <= s->rank; i++) {
        if (i == ax && insert)
            d[n++] = tg_dim_const(1);
        if (i < s->rank && !(i == ax && !insert))
            d[n++] = s->d[i];
    }
    return pt2_reshape(c, final, x, n, d);
}

static int h_unsqueeze(pt2_ctx *c, const cJSON *node)
{
    int x, ax;
    int64_t dim;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x) + 1, &ax) < 0)
        return -1;
    return pt2_set_out(c, 0, reshape_dim(c, true, x, ax, true));
}

/* squeeze(), squeeze(dim), squeeze(dims): drop the listed (or all) dims of
 * size 1; others stay, as in torch. */
static int h_squeeze(pt2_ctx *c, const cJSON *node)
{
    int x, n = 0;
    int64_t dims[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0)
        return -1;
    const tg_shape *s = shape_of(c, x);
    bool listed[TG_MAX_RANK] = {false};
    if (!pt2_arg_none(node, "dim")) {
        if ((n = pt2_ints(c, node, "dim", dims, TG_MAX_RANK)) < 0)
            return -1;
        for (int i = 0; i < n; i++) {
            int ax;
            if (pt2_axis(dims[i], s->rank, &ax) < 0)
                return -1;
            listed[ax] = true;
        }
    }
    tg_dim d[TG_MAX_RANK];
    int r = 0;
    for (int i = 0; i < s->rank; i++) {
        int64_t v;
        if (!((n == 0 || listed[i]) && tg_dim_is_const(s->d[i], &v) && v == 1))
            d[r++] = s->d[i];
    }
    return pt2_set_out(c, 0, pt2_reshape(c, true, x, r, d));
}

static int h_flatten(pt2_ctx *c, const cJSON *node)
{
    int x, a, b;
    int64_t sd, ed;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "start_dim", 0, &sd) < 0 ||
        pt2_int(c, node, "end_dim", -1, &ed) < 0)
        return -1;
    const tg_shape *s = shape_of(c, x);
    if (pt2_axis(sd, s->rank, &a) < 0 || pt2_axis(ed, s->rank, &b) < 0)
        return -1;
    if (s->rank == 0)
        return pt2_set_out(c, 0, pt2_reshape(c, true, x, 1, (tg_dim[]){tg_dim_const(1)}));
    if (a > b)
        return tg_err("flatten: start_dim after end_dim");
    tg_dim d[TG_MAX_RANK], m = tg_dim_const(1);
    int n = 0;
    for (int i = 0; i < a; i++)
        d[n++] = s->d[i];
    for (int i = a; i <= b; i++)
        if (tg_dim_mul(m, s->d[i], &m) < 0)
            return -1;
    d[n++] = m;
    for (int i = b + 1; i < s->rank; i++)
        d[n++] = s->d[i];
    return pt2_set_out(c, 0, pt2_reshape(c, true, x, n, d));
}

static int h_unflatten(pt2_ctx *c, const cJSON *node)
{
    int x, ax, k;
    int64_t dim;
    tg_dim sizes[TG_MAX_RANK], d[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        (k = pt2_dims(c, node, "sizes", sizes, TG_MAX_RANK)) < 0)
        return -1;
    const tg_shape *s = shape_of(c, x);
    if (pt2_axis(dim, s->rank, &ax) < 0)
        return -1;
    if (s->rank - 1 + k > TG_MAX_RANK)
        return tg_err("rank above %d", TG_MAX_RANK);
    int n = 0;
    for (int i = 0; i < s->rank; i++) {
        if (i != ax) {
            d[n++] = s->d[i];
            continue;
        }
        memcpy(d + n, sizes, (size_t)k * sizeof *d);
        n += k;
    }
    return infer_shape(c, x, d, n) < 0 ? -1 : pt2_set_out(c, 0, pt2_reshape(c, true, x, n, d));
}

/* ---- slicing ---- */

/* Python-style index i (negative from the end) as a dim in [0, size]. */
static int norm_index(tg_dim i, tg_dim size, tg_dim *out)
{
    int64_t v, n;
    if (!tg_dim_is_const(i, &v) || v >= 0) {
        *out = i;
        return 0;
    }
    if (tg_dim_add(size, i, out) < 0)
        return -1;
    if (tg_dim_is_const(*out, &n) && n < 0)
        *out = tg_dim_const(0);
    return 0;
}

/* The part of x that slice(dim, start, end, step) or select(dim, index)
 * names, its bounds normalized. */
static int part_args(pt2_ctx *c, const cJSON *node, int x, bool select, pt2_view *p)
{
    int64_t dim;
    if (pt2_int(c, node, "dim", 0, &dim) < 0 || pt2_axis(dim, pt2_rank(c, x), &p->axis) < 0)
        return -1;
    tg_dim size = shape_of(c, x)->d[p->axis];
    p->kind = select ? PT2_V_SELECT : PT2_V_SLICE;
    p->step = 1;
    if (select)
        return pt2_dim(c, node, "index", tg_dim_const(0), &p->start) < 0 ||
               norm_index(p->start, size, &p->start) < 0 ||
               tg_dim_add(p->start, tg_dim_const(1), &p->end) < 0 ? -1 : 0;
    if (pt2_int(c, node, "step", 1, &p->step) < 0)
        return -1;
    if (p->step < 1)
        return tg_err("slice step %lld not supported", (long long)p->step);
    return pt2_dim(c, node, "start", tg_dim_const(0), &p->start) < 0 ||
           pt2_dim(c, node, "end", size, &p->end) < 0 ||
           norm_index(p->start, size, &p->start) < 0 ||
           norm_index(p->end, size, &p->end) < 0 ? -1 : 0;
}

static int h_slice(pt2_ctx *c, const cJSON *node)
{
    int x;
    pt2_view p;
    if (pt2_tensor(c, node, "self", &x) < 0 || part_args(c, node, x, false, &p) < 0)
        return -1;
    return pt2_set_out(c, 0, pt2_slice(c, c->out0, x, p.axis, p.start, p.end, p.step));
}

/* x[..., i, ...] along ax: a slice of one, then the axis dropped. */
static int select_one(pt2_ctx *c, const char *name, int x, int ax, tg_dim i)
{
    tg_dim end, size = shape_of(c, x)->d[ax];
    if (norm_index(i, size, &i) < 0 || tg_dim_add(i, tg_dim_const(1), &end) < 0)
        return -1;
    int s = pt2_slice(c, NULL, x, ax, i, end, 1);
    if (s < 0)
        return -1;
    const tg_shape *sh = shape_of(c, s);
    tg_dim d[TG_MAX_RANK];
    int n = 0;
    for (int k = 0; k < sh->rank; k++)
        if (k != ax)
            d[n++] = sh->d[k];
    tg_attr a = tg_attr_dims("shape", n, d);
    return pt2_emit_named(c, name, TG_OP_RESHAPE, 1, &s, 1, &a);
}

static int h_select(pt2_ctx *c, const cJSON *node)
{
    int x;
    pt2_view p;
    if (pt2_tensor(c, node, "self", &x) < 0 || part_args(c, node, x, true, &p) < 0)
        return -1;
    return pt2_set_out(c, 0, select_one(c, c->out0, x, p.axis, p.start));
}

static int h_narrow(pt2_ctx *c, const cJSON *node)
{
    int x, ax;
    int64_t dim;
    tg_dim start, len, end;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x), &ax) < 0 ||
        pt2_dim(c, node, "start", tg_dim_const(0), &start) < 0 ||
        pt2_dim(c, node, "length", tg_dim_const(0), &len) < 0 ||
        norm_index(start, shape_of(c, x)->d[ax], &start) < 0 || tg_dim_add(start, len, &end) < 0)
        return -1;
    return pt2_set_out(c, 0, pt2_slice(c, c->out0, x, ax, start, end, 1));
}

/* Consecutive pieces of the given sizes (the last may be symbolic: to the
 * end), each bound to one output. */
static int split_pieces(pt2_ctx *c, int x, int ax, int n, const tg_dim *sizes, bool last_to_end)
{
    tg_dim at = tg_dim_const(0), size = shape_of(c, x)->d[ax];
    for (int i = 0; i < n; i++) {
        tg_dim end;
        if (i == n - 1 && last_to_end)
            end = size;
        else if (tg_dim_add(at, sizes[i], &end) < 0)
            return -1;
        const char *name = pt2_out_name(c->node, i);
        if (pt2_set_out(c, i, pt2_slice(c, name, x, ax, at, end, 1)) < 0)
            return -1;
        at = end;
    }
    return 0;
}

/* split(split_size), split(sizes), split_with_sizes, chunk, unbind */
static int h_split(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    int x, ax, n = pt2_out_count(node);
    int64_t dim;
    tg_dim sizes[256];
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_axis(dim, pt2_rank(c, x), &ax) < 0)
        return -1;
    if (n > 256)
        return tg_err("split into %d pieces", n);
    tg_dim size = shape_of(c, x)->d[ax];
    if (!strcmp(name, "unbind")) {
        for (int i = 0; i < n; i++)
            if (pt2_set_out(c, i, select_one(c, pt2_out_name(node, i), x, ax,
                                             tg_dim_const(i))) < 0)
                return -1;
        return 0;
    }
    const char *arg = !strcmp(name, "chunk") ? "chunks"
                    : pt2_arg(node, "split_sizes") ? "split_sizes" : "split_size";
    int k = pt2_dims(c, node, arg, sizes, 256);
    if (k < 0)
        return -1;
    if (k == 1 && strcmp(arg, "split_sizes")) {     /* one size for every piece */
        int64_t each, total;
        if (!strcmp(name, "chunk")) {   /* pieces of ceil(size / chunks) */
            if (!tg_dim_is_const(size, &total) || !tg_dim_is_const(sizes[0], &each) || each < 1)
                return tg_err("chunk of a dynamic dimension is not supported");
            sizes[0] = tg_dim_const((total + each - 1) / each);
        }
        for (int i = 1; i < n; i++)
            sizes[i] = sizes[0];
        return split_pieces(c, x, ax, n, sizes, true);
    }
    if (k != n)
        return tg_err("split into %d sizes but %d outputs", k, n);
    return split_pieces(c, x, ax, n, sizes, false);
}

static int h_cat(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool stack = !strcmp(name, "stack");
    int v[256], n, ax, r = -1;
    int64_t dim;
    if (pt2_tensors(c, node, "tensors", v, 256, &n) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0)
        return -1;
    /* torch skips 1-D empty tensors in cat (a legacy rule) */
    pt2_promo p = {0};
    int m = 0;
    for (int i = 0; i < n; i++) {
        int64_t len;
        if (!stack && pt2_rank(c, v[i]) == 1 && tg_dim_is_const(shape_of(c, v[i])->d[0], &len) &&
            len == 0 && n > 1)
            continue;
        pt2_promo_tensor(&p, pt2_dt(c, v[i]), pt2_rank(c, v[i]));
        v[m++] = v[i];
        r = pt2_rank(c, v[i]);
    }
    if (m == 0)
        return pt2_set_out(c, 0, v[0]);
    if (pt2_axis(dim, r + stack, &ax) < 0)
        return -1;
    tg_dtype dt = pt2_promo_result(&p);
    for (int i = 0; i < m; i++) {
        v[i] = pt2_cast(c, false, v[i], dt);
        if (stack)
            v[i] = reshape_dim(c, m == 1, v[i], ax, true);
        if (v[i] < 0)
            return -1;
    }
    if (m == 1)
        return pt2_set_out(c, 0, v[0]);
    tg_attr a = tg_attr_int("axis", ax);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_CONCAT, m, v, 1, &a));
}

/* ---- repetition ---- */

/* repeat(repeats) and tile(dims): leading dims added as 1s, then tile. */
static int h_repeat(pt2_ctx *c, const cJSON *node)
{
    int x, n;
    int64_t rep[TG_MAX_RANK];
    if (pt2_tensor(c, node, pt2_arg(node, "self") ? "self" : "input", &x) < 0 ||
        (n = pt2_ints(c, node, pt2_arg(node, "repeats") ? "repeats" : "dims", rep, TG_MAX_RANK)) < 0)
        return -1;
    const tg_shape *s = shape_of(c, x);
    if (n < s->rank) {      /* tile: pad the repeats with leading 1s */
        memmove(rep + s->rank - n, rep, (size_t)n * sizeof *rep);
        for (int i = 0; i < s->rank - n; i++)
            rep[i] = 1;
        n = s->rank;
    }
    if (n > s->rank) {
        tg_dim d[TG_MAX_RANK];
        for (int i = 0; i < n; i++)
            d[i] = i < n - s->rank ? tg_dim_const(1) : s->d[i - (n - s->rank)];
        x = pt2_reshape(c, false, x, n, d);
    }
    tg_attr a = tg_attr_ints("repeats", n, rep);
    return pt2_set_out(c, 0, x < 0 ? -1 : pt2_emit(c, true, TG_OP_TILE, 1, &x, 1, &a));
}

/* repeat_interleave(x, r, dim): each element r times in a row, as
 * unsqueeze(dim+1) -> expand r -> merge the two dims. */
static int h_repeat_interleave(pt2_ctx *c, const cJSON *node)
{
    int x, ax;
    int64_t r, dim;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "repeats", 1, &r) < 0)
        return -1;
    if (pt2_arg_none(node, "dim")) {
        tg_dim n;
        if (tg_shape_numel(shape_of(c, x), &n) < 0)
            return -1;
        x = pt2_reshape(c, false, x, 1, &n);
        dim = 0;
    } else if (pt2_int(c, node, "dim", 0, &dim) < 0) {
        return -1;
    }
    if (x < 0 || pt2_axis(dim, pt2_rank(c, x), &ax) < 0)
        return -1;
    int u = reshape_dim(c, false, x, ax + 1, true);
    if (u < 0)
        return -1;
    tg_shape s = *shape_of(c, u);
    s.d[ax + 1] = tg_dim_const(r);
    tg_attr a = tg_attr_dims("shape", s.rank, s.d);
    int e = pt2_emit(c, false, TG_OP_EXPAND, 1, &u, 1, &a);
    tg_dim d[TG_MAX_RANK];
    int n = 0;
    for (int i = 0; i < s.rank; i++) {
        if (i == ax + 1)
            continue;
        d[n] = s.d[i];
        if (i == ax && tg_dim_mul(s.d[i], tg_dim_const(r), &d[n]) < 0)
            return -1;
        n++;
    }
    return pt2_set_out(c, 0, pt2_reshape(c, true, e, n, d));
}

/* ---- indexing ---- */

static int h_index_select(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    int in[2], ax;
    int64_t dim;
    if (pt2_tensor(c, node, "self", &in[0]) < 0 || pt2_tensor(c, node, "index", &in[1]) < 0 ||
        pt2_int(c, node, "dim", 0, &dim) < 0 || pt2_axis(dim, pt2_rank(c, in[0]), &ax) < 0)
        return -1;
    tg_attr a = tg_attr_int("axis", ax);
    tg_op op = !strcmp(name, "gather") ? TG_OP_GATHER : TG_OP_INDEX_SELECT;
    return pt2_set_out(c, 0, pt2_emit(c, true, op, 2, in, 1, &a));
}

/* A rank-0 int64 tensor holding size d (a symbolic size: the sum of a fill
 * of d ones, the one way the IR turns a dim into data). */
static int dim_tensor(pt2_ctx *c, tg_dim d)
{
    int64_t v;
    if (tg_dim_is_const(d, &v))
        return pt2_const(c, (pt2_scalar){.kind = PT2_S_INT, .i = v}, TG_I64);
    tg_attr f[3] = {tg_attr_dims("shape", 1, &d), tg_attr_float("value", 1),
                    tg_attr_dtype("dtype", TG_I64)};
    int ones = pt2_emit(c, false, TG_OP_FULL, 0, NULL, 3, f);
    tg_attr r = tg_attr_int("keepdim", 0);
    return ones < 0 ? -1 : pt2_emit(c, false, TG_OP_REDUCE_SUM, 1, &ones, 1, &r);
}

/* Index i into an axis of size n, negative counting from the end, as
 * index_select of arange(n) by i: out-of-range indices are reported there. */
static int wrap_index(pt2_ctx *c, int i, tg_dim n)
{
    tg_attr a[4] = {tg_attr_int("start", 0), tg_attr_dims("end", 1, &n), tg_attr_int("step", 1),
                    tg_attr_dtype("dtype", TG_I64)};
    int in[2] = {pt2_emit(c, false, TG_OP_ARANGE, 0, NULL, 4, a), pt2_cast(c, false, i, TG_I64)};
    tg_attr ax = tg_attr_int("axis", 0);
    return in[0] < 0 || in[1] < 0 ? -1 : pt2_emit(c, false, TG_OP_INDEX_SELECT, 2, in, 1, &ax);
}

/* x indexed by tensors v[0..n) (-1: None, a whole axis), the indexed axes
 * merged into axis `first` of xm, read by the flat index `flat`. torch
 * broadcasts the indices together; their shape replaces the indexed axes in
 * place when those are adjacent, else it comes first: then the indexed axes
 * are moved first (x permuted by perm into xp). flat = sum_k wrap(i_k) *
 * stride_k (one index needs no wrap: the ops that read it wrap it). */
typedef struct {
    int first, k;
    int xp, xm, flat;
    bool moved;
    int64_t perm[TG_MAX_RANK];
} merged_index;

static int merge_indexed(pt2_ctx *c, int x, const int *v, int n, merged_index *m)
{
    int at[TG_MAX_RANK] = {0}, r = pt2_rank(c, x);
    m->k = 0;
    for (int i = 0; i < n; i++)
        if (v[i] >= 0)
            at[m->k++] = i;
    int k = m->k;
    m->moved = at[k - 1] - at[0] != k - 1;
    m->first = m->moved ? 0 : at[0];
    m->xp = x;
    if (m->moved) {
        bool indexed[TG_MAX_RANK] = {false};
        int j = 0;
        for (int i = 0; i < k; i++) {
            m->perm[j++] = at[i];
            indexed[at[i]] = true;
        }
        for (int i = 0; i < r; i++)
            if (!indexed[i])
                m->perm[j++] = i;
        if ((m->xp = pt2_permute(c, false, x, m->perm)) < 0)
            return -1;
    }
    /* a copy: the index arithmetic below adds values, which may move the array */
    const tg_shape xs = *shape_of(c, m->xp), *s = &xs;
    tg_dim stride = tg_dim_const(1), merged[TG_MAX_RANK];
    m->flat = -1;
    for (int j = k - 1; j >= 0; j--) {
        tg_dim size = s->d[m->first + j];
        int w = k == 1 ? v[at[j]] : wrap_index(c, v[at[j]], size);
        if (j < k - 1)
            w = pt2_binary(c, false, TG_OP_MUL, w, dim_tensor(c, stride));
        m->flat = m->flat < 0 ? w : pt2_binary(c, false, TG_OP_ADD, m->flat, w);
        if (m->flat < 0 || tg_dim_mul(stride, size, &stride) < 0)
            return -1;
    }
    int j = 0;
    for (int i = 0; i < m->first; i++)
        merged[j++] = s->d[i];
    merged[j++] = stride;
    for (int i = m->first + k; i < r; i++)
        merged[j++] = s->d[i];
    m->xm = pt2_reshape(c, false, m->xp, j, merged);
    return m->xm < 0 ? -1 : 0;
}

/* x[i0, i1, ...] with several index tensors: index_select of the merged axes. */
static int index_multi(pt2_ctx *c, int x, const int *v, int n)
{
    merged_index m;
    if (merge_indexed(c, x, v, n, &m) < 0)
        return -1;
    int in[2] = {m.xm, m.flat};
    tg_attr a = tg_attr_int("axis", m.first);
    return pt2_emit(c, true, TG_OP_INDEX_SELECT, 2, in, 1, &a);
}

/* x[..., idx, ...]: one integer index tensor is index_select along its axis;
 * several are index_multi's. */
static int h_index(pt2_ctx *c, const cJSON *node)
{
    int in[2], v[TG_MAX_RANK], n, at = -1, k = 0;
    if (pt2_tensor(c, node, "self", &in[0]) < 0 ||
        pt2_tensors(c, node, "indices", v, TG_MAX_RANK, &n) < 0)
        return -1;
    if (n > pt2_rank(c, in[0]))
        return tg_err("%d indices for a tensor of rank %d", n, pt2_rank(c, in[0]));
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            continue;
        tg_dtype dt = pt2_dt(c, v[i]);
        if (dt == TG_BOOL || dt == TG_U8)
            return tg_err("indexing with a boolean mask is not supported (data-dependent shape)");
        at = i;
        k++;
    }
    if (k == 0)
        return pt2_set_out(c, 0, in[0]);
    if (k > 1)
        return pt2_set_out(c, 0, index_multi(c, in[0], v, n));
    in[1] = v[at];
    tg_attr a = tg_attr_int("axis", at);
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_INDEX_SELECT, 2, in, 1, &a));
}

/* ---- writing into a tensor: index_put, index_copy, slice_scatter ---- */

/* x broadcast to shape d[n], as an intermediate. */
static int broadcast_to(pt2_ctx *c, int x, int n, const tg_dim *d)
{
    tg_shape want = {.rank = n};
    memcpy(want.d, d, (size_t)n * sizeof *d);
    if (x < 0 || tg_shape_eq(shape_of(c, x), &want))
        return x;
    tg_attr a = tg_attr_dims("shape", n, d);
    return pt2_emit(c, false, TG_OP_EXPAND, 1, &x, 1, &a);
}

/* x with a boolean mask's elements set to the one value val: a where. The
 * mask covers axes at.. of x. */
static int put_masked(pt2_ctx *c, int x, int mask, int at, int val)
{
    const tg_shape *ms = shape_of(c, mask);
    tg_dim n, d[TG_MAX_RANK];
    int64_t one, r = pt2_rank(c, x), k = 0;
    if (tg_shape_numel(shape_of(c, val), &n) < 0 || !tg_dim_is_const(n, &one) || one != 1)
        return tg_err("index_put by a boolean mask with more than one value is not supported "
                      "(data-dependent shape)");
    for (int i = 0; i < at; i++)
        d[k++] = tg_dim_const(1);
    for (int i = 0; i < ms->rank; i++)
        d[k++] = ms->d[i];
    while (k < r)
        d[k++] = tg_dim_const(1);
    int in[3] = {pt2_reshape(c, false, pt2_cast(c, false, mask, TG_BOOL), (int)r, d),
                 pt2_reshape(c, false, val, 0, d), x};
    return in[0] < 0 || in[1] < 0 ? -1 : pt2_emit(c, true, TG_OP_WHERE, 3, in, 0, NULL);
}

/* index_put(x, indices, values): x with x[indices] = values (accumulate: +=),
 * values broadcast to the indexed shape; an index_copy (reduce add) of the
 * merged axes by the flat index (merge_indexed), shaped and permuted back. */
static int h_index_put(pt2_ctx *c, const cJSON *node)
{
    int x, val, v[TG_MAX_RANK], n, k = 0, mask = -1;
    bool acc;
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        pt2_tensors(c, node, "indices", v, TG_MAX_RANK, &n) < 0 ||
        pt2_tensor(c, node, "values", &val) < 0 || pt2_bool(node, "accumulate", false, &acc) < 0)
        return -1;
    if (n > pt2_rank(c, x))
        return tg_err("%d indices for a tensor of rank %d", n, pt2_rank(c, x));
    val = pt2_cast(c, false, val, pt2_dt(c, x));
    for (int i = 0; i < n; i++) {
        if (v[i] < 0)
            continue;
        k++;
        if (pt2_dt(c, v[i]) == TG_BOOL || pt2_dt(c, v[i]) == TG_U8)
            mask = i;
    }
    if (val < 0)
        return -1;
    if (acc && (mask >= 0 || k == 0))
        return tg_err("index_put with accumulate=True is only supported with integer indices");
    if (mask >= 0)
        return k > 1 ? tg_err("index_put by a boolean mask and other indices is not supported")
                     : pt2_set_out(c, 0, put_masked(c, x, v[mask], mask, val));
    if (k == 0) {
        const tg_shape *s = shape_of(c, x);
        tg_attr a = tg_attr_dims("shape", s->rank, s->d);
        return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_EXPAND, 1, &val, 1, &a));
    }
    merged_index m;
    if (merge_indexed(c, x, v, n, &m) < 0)
        return -1;
    const tg_shape *xm = shape_of(c, m.xm), *b = shape_of(c, m.flat);
    tg_dim nb, t[TG_MAX_RANK], flat_t[TG_MAX_RANK];
    int nt = 0, nf = 0;
    if (tg_shape_numel(b, &nb) < 0 || xm->rank - 1 + b->rank > TG_MAX_RANK)
        return tg_err("index_put: indexed result above rank %d", TG_MAX_RANK);
    for (int i = 0; i < xm->rank; i++) {
        if (i != m.first) {
            t[nt++] = flat_t[nf++] = xm->d[i];
            continue;
        }
        for (int j = 0; j < b->rank; j++)
            t[nt++] = b->d[j];
        flat_t[nf++] = nb;
    }
    if (pt2_rank(c, val) > nt)
        return tg_err("index_put: values of rank %d for an indexed shape of rank %d",
                      pt2_rank(c, val), nt);
    int in[3] = {m.xm, pt2_reshape(c, false, m.flat, 1, &nb),
                 pt2_reshape(c, false, broadcast_to(c, val, nt, t), nf, flat_t)};
    tg_attr a[2] = {tg_attr_int("axis", m.first), tg_attr_string("reduce", "add")};   /* accumulate */
    int y = in[1] < 0 || in[2] < 0 ? -1 : pt2_emit(c, false, TG_OP_INDEX_COPY, 3, in, acc ? 2 : 1, a);
    const tg_shape pshape = *shape_of(c, m.xp), *ps = &pshape;   /* a copy: values grow below */
    y = pt2_reshape(c, !m.moved, y, ps->rank, ps->d);
    if (m.moved) {
        int64_t inv[TG_MAX_RANK];
        for (int i = 0; i < ps->rank; i++)
            inv[m.perm[i]] = i;
        y = pt2_permute(c, true, y, inv);
    }
    return pt2_set_out(c, 0, y);
}

/* index_copy, and index_add (source times alpha added: index_copy's reduce add) */
static int h_index_copy(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool add = !strcmp(name, "index_add");
    int in[3], ax;
    int64_t dim;
    double alpha = 1;
    if (pt2_tensor(c, node, "self", &in[0]) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_tensor(c, node, "index", &in[1]) < 0 || pt2_tensor(c, node, "source", &in[2]) < 0 ||
        (add && pt2_float(c, node, "alpha", 1, &alpha) < 0) || pt2_axis(dim, pt2_rank(c, in[0]), &ax) < 0)
        return -1;
    if (alpha != 1)
        in[2] = pt2_binary(c, false, TG_OP_MUL, in[2],
                           pt2_const(c, (pt2_scalar){.kind = PT2_S_FLOAT, .f = alpha}, pt2_dt(c, in[2])));
    if (pt2_rank(c, in[1]) == 0) {      /* one index: source lacks the axis */
        in[1] = reshape_dim(c, false, in[1], 0, true);
        in[2] = reshape_dim(c, false, in[2], ax, true);
    }
    in[2] = pt2_cast(c, false, in[2], pt2_dt(c, in[0]));
    tg_attr a[2] = {tg_attr_int("axis", ax), tg_attr_string("reduce", "add")};
    return pt2_set_out(c, 0, in[1] < 0 || in[2] < 0 ? -1
                                : pt2_emit(c, true, TG_OP_INDEX_COPY, 3, in, add ? 2 : 1, a));
}

/* index_fill(x, dim, index, value): index_copy of value broadcast */
static int h_index_fill(pt2_ctx *c, const cJSON *node)
{
    int in[3], ax;
    int64_t dim;
    if (pt2_tensor(c, node, "self", &in[0]) < 0 || pt2_int(c, node, "dim", 0, &dim) < 0 ||
        pt2_tensor(c, node, "index", &in[1]) < 0 ||
        pt2_operand(c, node, "value", pt2_dt(c, in[0]), &in[2]) < 0 ||
        pt2_axis(dim, pt2_rank(c, in[0]), &ax) < 0)
        return -1;
    if (pt2_rank(c, in[1]) == 0)
        in[1] = reshape_dim(c, false, in[1], 0, true);
    if (in[1] < 0)
        return -1;
    tg_shape s = *shape_of(c, in[0]);
    s.d[ax] = shape_of(c, in[1])->d[0];
    in[2] = broadcast_to(c, pt2_reshape(c, false, in[2], 0, s.d), s.rank, s.d);
    tg_attr a = tg_attr_int("axis", ax);
    return pt2_set_out(c, 0, in[2] < 0 ? -1 : pt2_emit(c, true, TG_OP_INDEX_COPY, 3, in, 1, &a));
}

/* x with x[start:end:step] along ax replaced by src: the untouched pieces
 * and src concatenated when step is 1, else index_copy by an arange. */
static int scatter_slice(pt2_ctx *c, bool final, int x, int src, int ax, tg_dim start,
                         tg_dim end, int64_t step)
{
    tg_dim size = shape_of(c, x)->d[ax];
    int64_t s, e, n;
    if (tg_dim_is_const(size, &n) && tg_dim_is_const(end, &e) && e > n)
        end = size;
    src = pt2_cast(c, false, src, pt2_dt(c, x));
    if (src < 0)
        return -1;
    if (step > 1) {
        if (!tg_dim_is_const(start, &s))
            return tg_err("slice_scatter with a step and a dynamic start is not supported");
        tg_attr r[4] = {tg_attr_int("start", s), tg_attr_dims("end", 1, &end),
                        tg_attr_int("step", step), tg_attr_dtype("dtype", TG_I64)};
        int in[3] = {x, pt2_emit(c, false, TG_OP_ARANGE, 0, NULL, 4, r), src};
        tg_attr a = tg_attr_int("axis", ax);
        return in[1] < 0 ? -1 : pt2_emit(c, final, TG_OP_INDEX_COPY, 3, in, 1, &a);
    }
    int piece[3], m = 0;
    if (!(tg_dim_is_const(start, &s) && s == 0))
        piece[m++] = pt2_slice(c, NULL, x, ax, tg_dim_const(0), start, 1);
    piece[m++] = src;
    if (!tg_dim_eq(end, size))
        piece[m++] = pt2_slice(c, NULL, x, ax, end, size, 1);
    for (int i = 0; i < m; i++)
        if (piece[i] < 0)
            return -1;
    if (m == 1)
        return src;
    tg_attr a = tg_attr_int("axis", ax);
    return pt2_emit(c, final, TG_OP_CONCAT, m, piece, 1, &a);
}

/* slice_scatter and select_scatter: x with the part slice or select names
 * replaced by src (a select's src lacks the axis). */
static int h_part_scatter(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    bool select = !strcmp(name, "select_scatter");
    int x, src;
    pt2_view p;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_tensor(c, node, "src", &src) < 0 ||
        part_args(c, node, x, select, &p) < 0)
        return -1;
    if (select)
        src = reshape_dim(c, false, src, p.axis, true);
    return pt2_set_out(c, 0, src < 0 ? -1 : scatter_slice(c, true, x, src, p.axis, p.start,
                                                         p.end, p.step));
}

/* ---- in-place writes through views ----
 * The export IR may write in place into a view (transformers' and
 * torchvision's masks: zeros, then fill_ of slices of slices of it). Each
 * view operator's output remembers its base and how it views it; an
 * in-place operator's result replaces its input and, through the chain of
 * views, each base (slice_scatter, select_scatter, reshape back). */

static const char *arg_name(const cJSON *node, const char *arg)
{
    const cJSON *a = pt2_arg(node, arg);
    const cJSON *n = a && !strcmp(pt2_key(a), "as_tensor")
                   ? cJSON_GetObjectItemCaseSensitive(a, "name") : NULL;
    return cJSON_IsString(n) ? n->valuestring : NULL;
}

static const char *const reshape_views[] = {
    "alias", "detach", "view", "_unsafe_view", "_reshape_alias", "unsqueeze", "squeeze",
    "flatten", "unflatten", "reshape", "contiguous", NULL,
};
static const char *const other_views[] = {
    "permute", "transpose", "t", "expand", "expand_as", "as_strided", "narrow", "split",
    "split_with_sizes", "chunk", "unbind", "diagonal", "unfold", NULL,
};

static bool listed(const char *const *list, const char *name)
{
    for (; *list; list++)
        if (!strcmp(*list, name))
            return true;
    return false;
}

int pt2_note_view(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    const char *self = arg_name(node, "self");
    const pt2_name *base = self ? pt2_lookup(c, self) : NULL;
    pt2_view p = {.kind = PT2_V_NONE};
    if (!base || base->kind != PT2_TENSOR)
        return 0;
    if (!strcmp(name, "slice") || !strcmp(name, "select")) {
        if (part_args(c, node, base->v, name[1] == 'e', &p) < 0)
            return -1;
    } else if (listed(reshape_views, name)) {
        p.kind = PT2_V_RESHAPE;
    } else if (listed(other_views, name)) {
        p.kind = PT2_V_OTHER;
    } else {
        return 0;
    }
    int b = (int)(base - c->sc.names);
    for (int i = 0, n = pt2_out_count(node); i < n; i++) {
        pt2_name *o = (pt2_name *)pt2_lookup(c, pt2_out_name(node, i));
        if (o && o->kind == PT2_TENSOR) {
            o->view = p;
            o->base = b;
        }
    }
    return 0;
}

/* aten.fill_.Scalar: the operator's name ends in one '_' */
static bool in_place(const cJSON *node)
{
    const cJSON *t = cJSON_GetObjectItemCaseSensitive(node, "target");
    const char *s = cJSON_IsString(t) ? t->valuestring : "", *dot = strrchr(s, '.');
    return dot && dot - s >= 2 && dot[-1] == '_' && dot[-2] != '_';
}

int pt2_write_back(pt2_ctx *c, const cJSON *node)
{
    const char *self = arg_name(node, "self"), *out = pt2_out_name(node, 0);
    const pt2_name *r = out ? pt2_lookup(c, out) : NULL;
    pt2_name *at = self ? (pt2_name *)pt2_lookup(c, self) : NULL;
    if (!in_place(node) || !r || r->kind != PT2_TENSOR || !at || at == r)
        return 0;
    int v = r->v;
    for (;;) {
        pt2_view p = at->view;
        int b = at->base;
        at->v = v;
        if (p.kind == PT2_V_NONE)
            return 0;
        if (p.kind == PT2_V_OTHER)
            return tg_err("an in-place write into a view made by permute, expand, split or "
                          "as_strided is not supported");
        pt2_name *base = &c->sc.names[b];
        if (base->kind != PT2_TENSOR)
            return 0;
        const tg_shape *bs = shape_of(c, base->v);
        if (p.kind == PT2_V_RESHAPE)
            v = pt2_reshape(c, false, v, bs->rank, bs->d);
        else
            v = scatter_slice(c, false, base->v,
                              p.kind == PT2_V_SELECT ? reshape_dim(c, false, v, p.axis, true) : v,
                              p.axis, p.start, p.end, p.step);
        if (v < 0)
            return -1;
        at = base;
    }
}

/* ---- shifting and differences ---- */

/* roll(x, shifts, dims): per dim, the last `shift` elements moved to the
 * front (two slices concatenated); no dims: over the flattened tensor. */
static int h_roll(pt2_ctx *c, const cJSON *node)
{
    int x, ns, nd;
    int64_t shifts[TG_MAX_RANK], dims[TG_MAX_RANK];
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (ns = pt2_ints(c, node, "shifts", shifts, TG_MAX_RANK)) < 0 ||
        (nd = pt2_arg_none(node, "dims") ? 0 : pt2_ints(c, node, "dims", dims, TG_MAX_RANK)) < 0)
        return -1;
    tg_shape orig = *shape_of(c, x);
    bool flat = nd == 0;
    if (flat) {
        tg_dim n;
        if (ns != 1 || tg_shape_numel(&orig, &n) < 0)
            return tg_err("roll without dims takes one shift");
        x = pt2_reshape(c, false, x, 1, &n);
        dims[0] = 0;
        nd = 1;
    }
    if (ns != nd)
        return tg_err("roll with %d shifts and %d dims", ns, nd);
    int last = -1;      /* the last dim that moves: its concat is the result */
    for (int i = 0; i < nd; i++)
        if (shifts[i])
            last = i;
    for (int i = 0; i < nd && x >= 0; i++) {
        int ax;
        int64_t size;
        if (pt2_axis(dims[i], pt2_rank(c, x), &ax) < 0)
            return -1;
        if (!tg_dim_is_const(shape_of(c, x)->d[ax], &size))
            return tg_err("roll along a dynamic dimension is not supported");
        int64_t s = size ? ((shifts[i] % size) + size) % size : 0;
        if (s == 0)
            continue;
        int p[2] = {pt2_slice(c, NULL, x, ax, tg_dim_const(size - s), tg_dim_const(size), 1),
                    pt2_slice(c, NULL, x, ax, tg_dim_const(0), tg_dim_const(size - s), 1)};
        tg_attr a = tg_attr_int("axis", ax);
        x = p[0] < 0 || p[1] < 0 ? -1
          : pt2_emit(c, i == last && !flat, TG_OP_CONCAT, 2, p, 1, &a);
    }
    if (flat)
        x = pt2_reshape(c, true, x, orig.rank, orig.d);
    return pt2_set_out(c, 0, x);
}

/* diff(x, n, dim, prepend, append): n times x[1:] - x[:-1] along dim (ne for
 * bool), after prepend and append are concatenated. */
static int h_diff(pt2_ctx *c, const cJSON *node)
{
    int x, pre, app, ax;
    int64_t n, dim;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "n", 1, &n) < 0 ||
        pt2_int(c, node, "dim", -1, &dim) < 0 || pt2_opt_tensor(c, node, "prepend", &pre) < 0 ||
        pt2_opt_tensor(c, node, "append", &app) < 0 || pt2_axis(dim, pt2_rank(c, x), &ax) < 0)
        return -1;
    if (n < 0)
        return tg_err("diff order %lld must be non-negative", (long long)n);
    if (pre >= 0 || app >= 0) {
        int p[3], m = 0;
        if (pre >= 0)
            p[m++] = pt2_cast(c, false, pre, pt2_dt(c, x));
        p[m++] = x;
        if (app >= 0)
            p[m++] = pt2_cast(c, false, app, pt2_dt(c, x));
        tg_attr a = tg_attr_int("axis", ax);
        x = p[0] < 0 || p[m - 1] < 0 ? -1 : pt2_emit(c, n == 0, TG_OP_CONCAT, m, p, 1, &a);
    }
    tg_op op = pt2_dt(c, x) == TG_BOOL ? TG_OP_NE : TG_OP_SUB;
    for (int64_t k = 0; k < n && x >= 0; k++) {
        tg_dim size = shape_of(c, x)->d[ax], end;
        int64_t len;
        if (tg_dim_is_const(size, &len) && len == 0)
            break;
        if (tg_dim_sub(size, tg_dim_const(1), &end) < 0)
            return -1;
        int hi = pt2_slice(c, NULL, x, ax, tg_dim_const(1), size, 1);
        int lo = pt2_slice(c, NULL, x, ax, tg_dim_const(0), end, 1);
        x = pt2_binary(c, k == n - 1, op, hi, lo);
    }
    return pt2_set_out(c, 0, x);
}

/* as_strided(x, size, stride, offset) on x's elements in order (every
 * tensor here is contiguous): a reshape when it reads them contiguously
 * from the start (Core ATen restrides size-1 dims so, after a pool to 1x1),
 * else index_select of flattened x by the constant offsets it reads. */
static int h_as_strided(pt2_ctx *c, const cJSON *node)
{
    int x, n, ns;
    tg_dim size[TG_MAX_RANK], st[TG_MAX_RANK], off, want = tg_dim_const(1), total, numel;
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (n = pt2_dims(c, node, "size", size, TG_MAX_RANK)) < 0 ||
        (ns = pt2_dims(c, node, "stride", st, TG_MAX_RANK)) < 0 ||
        pt2_dim(c, node, "storage_offset", tg_dim_const(0), &off) < 0 ||
        tg_shape_numel(shape_of(c, x), &total) < 0)
        return -1;
    if (ns != n)
        return tg_err("as_strided with %d sizes and %d strides", n, ns);
    bool contiguous = true;
    int64_t v;
    for (int i = n - 1; i >= 0; i--) {
        if (!(tg_dim_is_const(size[i], &v) && v == 1))
            contiguous &= tg_dim_eq(st[i], want);
        if (tg_dim_mul(want, size[i], &want) < 0)
            return -1;
    }
    numel = want;
    if (contiguous && tg_dim_is_const(off, &v) && v == 0 && tg_dim_eq(numel, total))
        return pt2_set_out(c, 0, pt2_reshape(c, true, x, n, size));
    int64_t cnt, lim, sz[TG_MAX_RANK], sv[TG_MAX_RANK], base;
    if (!tg_dim_is_const(numel, &cnt) || !tg_dim_is_const(total, &lim) ||
        !tg_dim_is_const(off, &base))
        return tg_err("as_strided of a dynamic shape that is not a plain reshape");
    tg_shape is = {.rank = n};
    for (int i = 0; i < n; i++) {
        if (!tg_dim_is_const(size[i], &sz[i]) || !tg_dim_is_const(st[i], &sv[i]))
            return tg_err("as_strided of a dynamic shape that is not a plain reshape");
        is.d[i] = size[i];
    }
    int64_t *idx = malloc(sizeof *idx * (size_t)(cnt ? cnt : 1));
    if (!idx)
        return tg_err("out of memory");
    for (int64_t e = 0; e < cnt; e++) {
        int64_t r = e, o = base;
        for (int i = n - 1; i >= 0; i--) {
            o += r % sz[i] * sv[i];
            r /= sz[i];
        }
        if (o < 0 || o >= lim) {
            free(idx);
            return tg_err("as_strided reads element %lld of %lld", (long long)o, (long long)lim);
        }
        idx[e] = o;
    }
    int in[2] = {pt2_reshape(c, false, x, 1, &total),
                 pt2_const_tensor(c, TG_I64, &is, idx, sizeof *idx * (size_t)cnt)};
    tg_attr a = tg_attr_int("axis", 0);
    return in[0] < 0 || in[1] < 0 ? -1
                                  : pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_INDEX_SELECT, 2,
                                                               in, 1, &a));
}

static int h_reshape_as(pt2_ctx *c, const cJSON *node)
{
    int x, other;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_tensor(c, node, "other", &other) < 0)
        return -1;
    const tg_shape *s = shape_of(c, other);
    return pt2_set_out(c, 0, pt2_reshape(c, true, x, s->rank, s->d));
}

/* constant_pad_nd / pad, and reflection_pad / replication_pad{1,2,3}d: torch
 * lists (before, after) pairs from the last dim backwards; tgraph wants all
 * befores, then all afters, from the first. torch's modes reflect, replicate
 * and circular are the pad op's reflect, edge and wrap. */
static int h_pad(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    int x, n;
    int64_t tp[2 * TG_MAX_RANK], pads[2 * TG_MAX_RANK] = {0};
    double value = 0;
    bool named = !strncmp(name, "reflection_pad", 14) || !strncmp(name, "replication_pad", 15);
    const char *mode = named ? (name[2] == 'f' ? "reflect" : "replicate") : pt2_string(node, "mode", "constant");
    const char *ours = !strcmp(mode, "constant") ? "constant" : !strcmp(mode, "reflect") ? "reflect"
                     : !strcmp(mode, "replicate") ? "edge" : !strcmp(mode, "circular") ? "wrap" : NULL;
    if (!ours)
        return tg_err("pad mode '%s' not supported", mode);
    if (pt2_tensor(c, node, "self", &x) < 0 ||
        (n = pt2_ints(c, node, named ? "padding" : "pad", tp, 2 * TG_MAX_RANK)) < 0 ||
        (!named && pt2_float(c, node, "value", 0, &value) < 0))
        return -1;
    int r = pt2_rank(c, x);
    if (n % 2 || n / 2 > r)
        return tg_err("pad of %d values for rank %d", n, r);
    for (int i = 0; i < n / 2; i++) {
        pads[r - 1 - i] = tp[2 * i];
        pads[2 * r - 1 - i] = tp[2 * i + 1];
    }
    tg_attr a[3] = {tg_attr_ints("pads", 2 * r, pads), tg_attr_float("value", value),
                    tg_attr_string("mode", ours)};
    return pt2_set_out(c, 0, pt2_emit(c, true, TG_OP_PAD, 1, &x, 3, a));
}

static int h_tri(pt2_ctx *c, const cJSON *node)
{
    char name[64];
    pt2_op_name(node, name, sizeof name);
    int x;
    int64_t k;
    if (pt2_tensor(c, node, "self", &x) < 0 || pt2_int(c, node, "diagonal", 0, &k) < 0)
        return -1;
    tg_attr a = tg_attr_int("k", k);
    tg_op op = !strcmp(name, "tril") ? TG_OP_TRIL : TG_OP_TRIU;
    return pt2_set_out(c, 0, pt2_emit(c, true, op, 1, &x, 1, &a));
}

const pt2_op_entry pt2_ops_shape[] = {
    {"view", "default", h_view}, {"reshape", "default", h_view},
    {"_unsafe_view", "default", h_view}, {"_reshape_alias", "default", h_view},
    {"permute", "default", h_permute},
    {"transpose", "int", h_transpose}, {"t", "default", h_transpose},
    {"expand", "default", h_expand}, {"expand_as", "default", h_expand},
    {"unsqueeze", "default", h_unsqueeze},
    {"squeeze", "default dim dims", h_squeeze},
    {"flatten", "using_ints", h_flatten}, {"unflatten", "int", h_unflatten},
    {"slice", "Tensor", h_slice}, {"select", "int", h_select}, {"narrow", "default", h_narrow},
    {"split", "Tensor sizes", h_split}, {"split_with_sizes", "default", h_split},
    {"chunk", "default", h_split}, {"unbind", "int", h_split},
    {"cat", "default", h_cat}, {"concat", "default", h_cat}, {"stack", "default", h_cat},
    {"repeat", "default", h_repeat}, {"tile", "default", h_repeat},
    {"repeat_interleave", "self_int", h_repeat_interleave},
    {"index_select", "default", h_index_select}, {"gather", "default", h_index_select},
    {"index", "Tensor", h_index}, {"index_put", "default", h_index_put},
    {"index_copy", "default", h_index_copy}, {"index_add", "default", h_index_copy},
    {"index_fill", "int_Scalar int_Tensor", h_index_fill},
    {"slice_scatter", "default", h_part_scatter}, {"select_scatter", "default", h_part_scatter},
    {"roll", "default", h_roll}, {"diff", "default", h_diff},
    {"reshape_as", "default", h_reshape_as}, {"as_strided", "default", h_as_strided}, {"view_as", "default", h_reshape_as},
    {"constant_pad_nd", "default", h_pad}, {"pad", "default", h_pad},
    {"reflection_pad1d", "default", h_pad}, {"reflection_pad2d", "default", h_pad},
    {"reflection_pad3d", "default", h_pad}, {"replication_pad1d", "default", h_pad},
    {"replication_pad2d", "default", h_pad}, {"replication_pad3d", "default", h_pad},
    {"tril", "default", h_tri}, {"triu", "default", h_tri},
    {NULL, NULL, NULL},
};
