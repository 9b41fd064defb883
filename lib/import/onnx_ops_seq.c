/* ONNX sequence-model operators: CausalConvWithState, RotaryEmbedding,
 * LinearAttention, and the recurrent RNN, LSTM, GRU. Each is written out in
 * existing tgraph ops; a recurrence is unrolled over a sequence length known at
 * import (at most SEQ_MAX_STEPS steps), and what has no such form is refused
 * by name. */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "../error.h"
#include "../tensor.h"
#include "onnx_internal.h"
#include "onnx_node.h"

/* How many time steps a recurrence is unrolled into at most (each step is a
 * handful of nodes). */
#define SEQ_MAX_STEPS 4096

/* ---- helpers ---------------------------------------------------------------------------- */

static int permute_on(onnx_ctx *c, int x, int n, const int64_t *perm, const char *sfx)
{
    tg_attr a = tg_attr_ints("perm", n, perm);
    return x < 0 ? -1 : unary_on(c, TG_OP_PERMUTE, sfx, x, 1, &a);
}

static int concat_on(onnx_ctx *c, int n, const int *in, int axis, const char *sfx)
{
    for (int i = 0; i < n; i++)
        if (in[i] < 0) return -1;
    tg_attr a = tg_attr_int("axis", axis);
    return n == 1 ? in[0] : onnx_add(c, TG_OP_CONCAT, sfx, n, in, 1, &a);
}

/* A static dim of value v, or an error naming what it is. */
static int static_dim(onnx_ctx *c, int v, int axis, const char *what, int64_t *out)
{
    tg_shape s = shape_of(c, v);
    if (axis >= s.rank || !tg_dim_is_const(s.d[axis], out))
        return tg_err("%s ('%s') needs a static dim %d", what, c->g->values[v].name, axis);
    return 0;
}

/* An optional input: *v its value or -1; an error only when it is given but fails. */
static int opt_in(onnx_ctx *c, int i, int *v)
{
    *v = in_val_opt(c, i);
    return *v < 0 && in_opt(c, i) ? -1 : 0;
}

/* ---- CausalConvWithState ------------------------------------------------------------------- */

/* CausalConvWithState (opset 27): a depthwise conv1d over [past_state (or
 * zeros), input] with no padding, bias, then SiLU for activation silu/swish;
 * present_state is the last k - 1 steps of that padded input. */
static int map_causal_conv(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), w = x < 0 ? -1 : in_val(c, 1), b, past;
    if (w < 0 || opt_in(c, 2, &b) || opt_in(c, 3, &past)) return -1;
    const char *act = onnx_attr_string(N(c), "activation", "none");
    bool silu = !strcmp(act, "silu") || !strcmp(act, "swish");
    if (!silu && strcmp(act, "none")) return tg_err("activation '%s' is not one of none, silu, swish", act);
    tg_shape xs = shape_of(c, x), ws = shape_of(c, w);
    int64_t ch, k, len;
    if (xs.rank != 3 || ws.rank != 3) return tg_err("input and weight must be 3-D");
    if (static_dim(c, x, 1, "input", &ch) || static_dim(c, w, 2, "weight", &k) || static_dim(c, x, 2, "input", &len))
        return -1;
    int padded = x;
    if (k > 1) {
        if (past >= 0) {
            int in[2] = {past, x};
            padded = concat_on(c, 2, in, 2, "padded");
        } else {
            int64_t pads[6] = {0, 0, k - 1, 0, 0, 0};
            tg_attr a[2] = {tg_attr_ints("pads", 6, pads), tg_attr_float("value", 0)};
            padded = unary_on(c, TG_OP_PAD, "padded", x, 2, a);
        }
    }
    int64_t one = 1, zero = 0;
    tg_attr a[4] = {tg_attr_ints("stride", 1, &one), tg_attr_ints("padding", 1, &zero),
                    tg_attr_ints("dilation", 1, &one), tg_attr_int("groups", ch)};
    int in[3] = {padded, w, b};
    int y = padded < 0 ? -1 : onnx_add(c, TG_OP_CONV, silu ? "conv" : NULL, b < 0 ? 2 : 3, in, 4, a);
    if (silu) y = y < 0 ? -1 : unary_on(c, TG_OP_SILU, NULL, y, 0, NULL);
    if (def_out(c, 0, y)) return -1;
    if (N(c)->n_output < 2 || !*N(c)->output[1]) return 0;
    return def_out(c, 1, slice_range(c, padded, 2, len, len + k - 1, "present_state"));
}

/* ---- RotaryEmbedding ---------------------------------------------------------------------- */

/* RotaryEmbedding (opset 23): x [B, H, S, D] or [B, S, H*D] (num_heads), the
 * first rotary_embedding_dim (R) of each head rotated by cos/sin [B, S, R/2]
 * (or caches [P, R/2] read at position_ids [B, S]): halves x1, x2 (or the
 * even and odd elements when interleaved) become x1 cos - x2 sin, x1 sin + x2 cos. */
static int map_rotary(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), cs = x < 0 ? -1 : in_val(c, 1), sn = cs < 0 ? -1 : in_val(c, 2), pos;
    if (sn < 0 || opt_in(c, 3, &pos)) return -1;
    tg_shape xs = shape_of(c, x);
    bool inter = onnx_attr_int(N(c), "interleaved", 0) != 0;
    int64_t heads = onnx_attr_int(N(c), "num_heads", 0), r = onnx_attr_int(N(c), "rotary_embedding_dim", 0), hd, hidden;
    int y = x;
    tg_dim d4[4];
    if (xs.rank == 3) {                         /* [B, S, H, D] with cos/sin [B, S, 1, R/2] */
        if (heads < 1 || static_dim(c, x, 2, "input", &hidden) || hidden % heads)
            return tg_err("a 3-D input needs num_heads dividing its hidden size");
        hd = hidden / heads;
        tg_dim d[4] = {xs.d[0], xs.d[1], tg_dim_const(heads), tg_dim_const(hd)};
        memcpy(d4, d, sizeof d);
        y = reshape_as(c, x, 4, d4, "heads");
    } else if (xs.rank == 4) {                  /* [B, H, S, D] with cos/sin [B, 1, S, R/2] */
        if (static_dim(c, x, 3, "input", &hd)) return -1;
        memcpy(d4, xs.d, sizeof d4);
    } else
        return tg_err("input must be 3-D or 4-D");
    if (r == 0) r = hd;
    if (r < 2 || r > hd || r % 2) return tg_err("rotary_embedding_dim %lld is not even and within the head size %lld",
                                                (long long)r, (long long)hd);
    if (pos >= 0) {
        tg_attr ax = tg_attr_int("axis", 0);
        int p = cast_as(c, pos, TG_I64, "position_i64"), ci[2] = {cs, p}, si[2] = {sn, p};
        if (p < 0 || (cs = onnx_add(c, TG_OP_INDEX_SELECT, "cos", 2, ci, 1, &ax)) < 0 ||
            (sn = onnx_add(c, TG_OP_INDEX_SELECT, "sin", 2, si, 1, &ax)) < 0)
            return -1;
    }
    tg_shape css = shape_of(c, cs), sns = shape_of(c, sn);
    int64_t half;
    if (css.rank != 3 || !tg_dim_is_const(css.d[2], &half) || half * 2 != r || !tg_shape_eq(&css, &sns))
        return tg_err("cos and sin must be [batch, sequence, %lld] (after position_ids)", (long long)(r / 2));
    tg_dim cd[4] = {css.d[0], css.d[1], css.d[1], css.d[2]};
    cd[xs.rank == 3 ? 2 : 1] = tg_dim_const(1);
    cs = reshape_as(c, cs, 4, cd, "cos_b");
    sn = reshape_as(c, sn, 4, cd, "sin_b");
    int rot = r == hd ? y : slice_range(c, y, 3, 0, r, "rotated_part"), x1, x2;
    tg_dim d5[5] = {d4[0], d4[1], d4[2], tg_dim_const(half), tg_dim_const(2)};
    if (inter) {                                /* [..., R/2, 2]: even and odd elements */
        int p = reshape_as(c, rot, 5, d5, "pairs");
        d5[4] = tg_dim_const(1);
        tg_dim h4[4] = {d4[0], d4[1], d4[2], tg_dim_const(half)};
        x1 = reshape_as(c, slice_range(c, p, 4, 0, 1, "even"), 4, h4, "x1");
        x2 = reshape_as(c, slice_range(c, p, 4, 1, 2, "odd"), 4, h4, "x2");
    } else {
        x1 = slice_range(c, rot, 3, 0, half, "x1");
        x2 = slice_range(c, rot, 3, half, r, "x2");
    }
    if (x1 < 0 || x2 < 0 || cs < 0 || sn < 0) return -1;
    int re = binary_on(c, TG_OP_SUB, "real", binary_on(c, TG_OP_MUL, "x1_cos", x1, cs), binary_on(c, TG_OP_MUL, "x2_sin", x2, sn));
    int im = binary_on(c, TG_OP_ADD, "imag", binary_on(c, TG_OP_MUL, "x1_sin", x1, sn), binary_on(c, TG_OP_MUL, "x2_cos", x2, cs));
    if (re < 0 || im < 0) return -1;
    int out;
    if (inter) {
        int ri[2] = {reshape_as(c, re, 5, d5, "real_5d"), reshape_as(c, im, 5, d5, "imag_5d")};
        tg_dim rd[4] = {d4[0], d4[1], d4[2], tg_dim_const(r)};
        out = reshape_as(c, concat_on(c, 2, ri, 4, "interleave"), 4, rd, "rotated");
    } else {
        int ri[2] = {re, im};
        out = concat_on(c, 2, ri, 3, "rotated");
    }
    if (r < hd) {
        int parts[2] = {out, slice_range(c, y, 3, r, hd, "kept_part")};
        out = concat_on(c, 2, parts, 3, xs.rank == 3 ? "joined" : NULL);
    }
    return def_out(c, 0, xs.rank == 3 ? reshape_as(c, out, 3, xs.d, NULL) : out);
}

/* ---- LinearAttention -------------------------------------------------------------------- */

/* [B, T, H*d] -> [B, H, T, d], or an error naming the input. */
static int heads_of(onnx_ctx *c, int x, int64_t heads, const char *what, const char *sfx, int64_t *dim)
{
    tg_shape s = shape_of(c, x);
    int64_t hidden;
    if (s.rank != 3) return tg_err("%s must be 3-D [batch, sequence, heads * dim]", what);
    if (static_dim(c, x, 2, what, &hidden)) return -1;
    if (heads < 1 || hidden % heads) return tg_err("%s's last dim %lld is not a multiple of %lld heads", what,
                                                   (long long)hidden, (long long)heads);
    *dim = hidden / heads;
    tg_dim d[4] = {s.d[0], s.d[1], tg_dim_const(heads), tg_dim_const(*dim)};
    int64_t perm[4] = {0, 2, 1, 3};
    return permute_on(c, reshape_as(c, cast_as(c, x, TG_F32, sfx), 4, d, sfx), 4, perm, sfx);
}

/* LinearAttention (opset 27): the recurrence of onnx's reference in float32,
 * unrolled over the sequence: per step t, state [B, Hkv, dk, dv] decays by
 * exp(decay_t) (gated), the value is corrected by beta_t (v_t - k_t^T state)
 * (delta), state += k_t v_t^T, and o_t = scale q_t state (each group of
 * Hq/Hkv query heads reading its key head's state). */
static int map_linear_attention(onnx_ctx *c, const onnx_op_map *m)
{
    int q = in_val(c, 0), k = q < 0 ? -1 : in_val(c, 1), v = k < 0 ? -1 : in_val(c, 2), past, decay, beta;
    if (v < 0 || opt_in(c, 3, &past) || opt_in(c, 4, &decay) || opt_in(c, 5, &beta)) return -1;
    const char *rule = onnx_attr_string(N(c), "update_rule", "gated_delta");
    bool gated = !strcmp(rule, "gated") || !strcmp(rule, "gated_delta");
    bool delta = !strcmp(rule, "delta") || !strcmp(rule, "gated_delta");
    if (!gated && !delta && strcmp(rule, "linear"))
        return tg_err("update_rule '%s' is not one of linear, gated, delta, gated_delta", rule);
    if (gated != (decay >= 0)) return tg_err("update_rule '%s' %s the decay input", rule, gated ? "needs" : "forbids");
    if (delta != (beta >= 0)) return tg_err("update_rule '%s' %s the beta input", rule, delta ? "needs" : "forbids");
    int64_t hq = onnx_attr_int(N(c), "q_num_heads", 0), hk = onnx_attr_int(N(c), "kv_num_heads", 0), dk, dk2, dv, t;
    if (hq < 1 || hk < 1 || hq % hk)
        return tg_err("q_num_heads %lld must be a positive multiple of kv_num_heads %lld", (long long)hq, (long long)hk);
    tg_dtype odt = dtype_of(c, q);
    if ((q = heads_of(c, q, hq, "query", "q_heads", &dk)) < 0 || (k = heads_of(c, k, hk, "key", "k_heads", &dk2)) < 0 ||
        (v = heads_of(c, v, hk, "value", "v_heads", &dv)) < 0)
        return -1;
    tg_shape qs = shape_of(c, q);
    if (dk != dk2) return tg_err("query and key head sizes differ (%lld, %lld)", (long long)dk, (long long)dk2);
    if (!tg_dim_is_const(qs.d[2], &t)) return tg_err("the sequence length must be known at import (it is unrolled)");
    if (t > SEQ_MAX_STEPS) return tg_err("sequence length %lld is past the %d steps unrolled at most", (long long)t, SEQ_MAX_STEPS);
    tg_dim b = qs.d[0];
    if (decay >= 0) {                           /* [B, Hkv, T, dk or 1] */
        int64_t last, dh;
        if (shape_of(c, decay).rank != 3 || static_dim(c, decay, 2, "decay", &last) || (last != hk && last != hk * dk))
            return tg_err("decay must be 3-D with a last dim of kv_num_heads or kv_num_heads * head size");
        if ((decay = heads_of(c, decay, hk, "decay", "decay_heads", &dh)) < 0) return -1;
    }
    if (beta >= 0) {                            /* [B, Hkv or 1, T, 1] */
        int64_t last, one;
        if (shape_of(c, beta).rank != 3 || static_dim(c, beta, 2, "beta", &last) || (last != hk && last != 1))
            return tg_err("beta must be 3-D with a last dim of kv_num_heads or 1");
        if ((beta = heads_of(c, beta, last, "beta", "beta_heads", &one)) < 0) return -1;
    }
    tg_dtype sdt = past >= 0 ? dtype_of(c, past) : odt;
    tg_dim sd[4] = {b, tg_dim_const(hk), tg_dim_const(dk), tg_dim_const(dv)};
    int state;
    if (past >= 0) {
        tg_shape ps = shape_of(c, past);
        if (ps.rank != 4 || !tg_dim_eq(ps.d[1], sd[1]) || !tg_dim_eq(ps.d[2], sd[2]) || !tg_dim_eq(ps.d[3], sd[3]))
            return tg_err("past_state must be [batch, %lld, %lld, %lld]", (long long)hk, (long long)dk, (long long)dv);
        state = cast_as(c, past, TG_F32, "state_f32");
    } else {
        tg_attr f[3] = {tg_attr_dims("shape", 4, sd), tg_attr_float("value", 0), tg_attr_dtype("dtype", TG_F32)};
        state = onnx_add(c, TG_OP_FULL, "state0", 0, NULL, 3, f);
    }
    double sc = onnx_attr_float(N(c), "scale", 0);
    int scale = scalar_const(c, "scale", TG_F32, sc == 0 ? 1 / sqrt((double)dk) : sc);
    int *outs = malloc(sizeof(int) * (size_t)(t ? t : 1));
    if (!outs) return tg_err("out of memory");
    tg_dim kcol[4] = {b, sd[1], sd[2], tg_dim_const(1)}, qg[4] = {b, sd[1], tg_dim_const(hq / hk * 1), sd[2]};
    tg_dim og[4] = {b, tg_dim_const(hq), tg_dim_const(1), sd[3]};
    int64_t last = 0;
    if (decay >= 0) static_dim(c, decay, 3, "decay", &last);
    tg_dim gcol[4] = {b, sd[1], tg_dim_const(last), tg_dim_const(1)};
    for (int64_t i = 0; i < t && state >= 0; i++) {
        int kt = slice_range(c, k, 2, i, i + 1, "k_t"), vt = slice_range(c, v, 2, i, i + 1, "v_t");
        if (decay >= 0) {                       /* state *= exp(g_t) over dk */
            int g = reshape_as(c, slice_range(c, decay, 2, i, i + 1, "g_t"), 4, gcol, "g_col");
            state = g < 0 ? -1 : binary_on(c, TG_OP_MUL, "decayed", state, unary_on(c, TG_OP_EXP, "g_exp", g, 0, NULL));
        }
        if (beta >= 0 && state >= 0) {         /* v_t = beta_t (v_t - k_t state) */
            int got = kt < 0 ? -1 : binary_on(c, TG_OP_MATMUL, "retrieved", kt, state);
            int bt = slice_range(c, beta, 2, i, i + 1, "beta_t");
            vt = got < 0 || vt < 0 || bt < 0 ? -1 : binary_on(c, TG_OP_MUL, "v_corrected", bt, binary_on(c, TG_OP_SUB, "v_err", vt, got));
        }
        int outer = vt < 0 ? -1 : binary_on(c, TG_OP_MUL, "kv_outer", reshape_as(c, kt, 4, kcol, "k_col"), vt);
        state = outer < 0 || state < 0 ? -1 : binary_on(c, TG_OP_ADD, "state", state, outer);
        int qt = reshape_as(c, slice_range(c, q, 2, i, i + 1, "q_t"), 4, qg, "q_groups");
        int o = qt < 0 || state < 0 ? -1 : binary_on(c, TG_OP_MATMUL, "read", qt, state);
        outs[i] = reshape_as(c, o < 0 ? -1 : binary_on(c, TG_OP_MUL, "read_scaled", o, scale), 4, og, "o_t");
        if (outs[i] < 0) state = -1;
    }
    int y = state < 0 ? -1 : concat_on(c, (int)t, outs, 2, "outputs");
    free(outs);
    int64_t perm[4] = {0, 2, 1, 3};
    tg_dim yd[3] = {b, qs.d[2], tg_dim_const(hq * dv)};
    y = reshape_as(c, permute_on(c, y, 4, perm, "output_bthd"), 3, yd, odt == TG_F32 ? NULL : "output_f32");
    if (def_out(c, 0, cast_as(c, y, odt, NULL))) return -1;
    return def_out(c, 1, cast_as(c, state, sdt, "present_state"));
}

/* ---- RNN, LSTM, GRU ------------------------------------------------------------------------ */

typedef struct {
    char name[32];
    double alpha, beta;
} rnn_act;

/* One activation of ONNX's list for the recurrent ops, on x. */
static int rnn_activate(onnx_ctx *c, int x, const rnn_act *f, const char *sfx)
{
    tg_dtype dt = x < 0 ? TG_F32 : dtype_of(c, x);
    const char *n = f->name;
    if (x < 0) return -1;
    if (!strcmp(n, "Tanh")) return unary_on(c, TG_OP_TANH, sfx, x, 0, NULL);
    if (!strcmp(n, "Sigmoid")) return unary_on(c, TG_OP_SIGMOID, sfx, x, 0, NULL);
    if (!strcmp(n, "Relu")) return unary_on(c, TG_OP_RELU, sfx, x, 0, NULL);
    if (!strcmp(n, "LeakyRelu") || !strcmp(n, "Elu")) {
        tg_attr a = tg_attr_float("alpha", f->alpha);
        return unary_on(c, !strcmp(n, "Elu") ? TG_OP_ELU : TG_OP_LEAKY_RELU, sfx, x, 1, &a);
    }
    if (!strcmp(n, "Affine") || !strcmp(n, "HardSigmoid")) {  /* alpha x + beta (clamped to [0, 1]) */
        int y = binary_on(c, TG_OP_ADD, sfx, binary_on(c, TG_OP_MUL, "scaled", x, scalar_const(c, "alpha", dt, f->alpha)),
                          scalar_const(c, "beta", dt, f->beta));
        tg_attr a[2] = {tg_attr_float("min", 0), tg_attr_float("max", 1)};
        return y < 0 || !strcmp(n, "Affine") ? y : unary_on(c, TG_OP_CLAMP, "clamped", y, 2, a);
    }
    if (!strcmp(n, "ScaledTanh")) {             /* alpha tanh(beta x) */
        int y = unary_on(c, TG_OP_TANH, "tanh", binary_on(c, TG_OP_MUL, "scaled", x, scalar_const(c, "beta", dt, f->beta)), 0, NULL);
        return y < 0 ? -1 : binary_on(c, TG_OP_MUL, sfx, y, scalar_const(c, "alpha", dt, f->alpha));
    }
    return tg_err("activation '%s' is not supported (Tanh, Sigmoid, Relu, LeakyRelu, Elu, Affine, HardSigmoid, ScaledTanh are)", n);
}

/* What one recurrent op is: gates per step (1 RNN, 3 GRU z r h, 4 LSTM i o f c)
 * and activations per direction. */
typedef struct {
    int gates, nact;
    bool lstm, gru, lbr;        /* lbr: GRU's linear_before_reset */
    int64_t h;                  /* hidden size */
    double clip;                /* <= 0: none */
    rnn_act act[2][3];
} rnn_kind;

/* Gate pre-activation clipped to [-clip, clip] when clip is set. */
static int rnn_clip(onnx_ctx *c, const rnn_kind *k, int x)
{
    if (k->clip <= 0 || x < 0) return x;
    tg_attr a[2] = {tg_attr_float("min", -k->clip), tg_attr_float("max", k->clip)};
    return unary_on(c, TG_OP_CLAMP, "clipped", x, 2, a);
}

static int gate(onnx_ctx *c, const rnn_kind *k, int x, int g, const char *sfx)
{
    return slice_range(c, x, 1, g * k->h, (g + 1) * k->h, sfx);
}

static int add2(onnx_ctx *c, int a, int b, const char *sfx)
{
    return a < 0 || b < 0 ? -1 : binary_on(c, TG_OP_ADD, sfx, a, b);
}

static int mul2(onnx_ctx *c, int a, int b, const char *sfx)
{
    return a < 0 || b < 0 ? -1 : binary_on(c, TG_OP_MUL, sfx, a, b);
}

/* The weights of direction d: w [G*H, I], r [G*H, H], the input-side bias
 * bx [G*H] (Wb + Rb, or -1), GRU's hidden-side Rbh [H] kept apart when
 * linear_before_reset (else -1), LSTM's peepholes p [3H] (or -1). */
typedef struct {
    int w, r, bx, rbh, p;
} rnn_weights;

static int rnn_dir_weights(onnx_ctx *c, const rnn_kind *k, int W, int R, int B, int P, int d, rnn_weights *o)
{
    int64_t gh = k->gates * k->h;
    tg_shape ws = shape_of(c, W), rs = shape_of(c, R);
    tg_dim wd[2] = {ws.d[1], ws.d[2]}, rd[2] = {rs.d[1], rs.d[2]}, bd[1] = {tg_dim_const(2 * gh)}, pd[1] = {tg_dim_const(3 * k->h)};
    o->w = reshape_as(c, slice_range(c, W, 0, d, d + 1, "w_dir"), 2, wd, "w");
    o->r = reshape_as(c, slice_range(c, R, 0, d, d + 1, "r_dir"), 2, rd, "r");
    o->bx = o->rbh = o->p = -1;
    if (B >= 0) {
        int b = reshape_as(c, slice_range(c, B, 0, d, d + 1, "b_dir"), 1, bd, "b");
        int wb = slice_range(c, b, 0, 0, gh, "wb"), rb = slice_range(c, b, 0, gh, 2 * gh, "rb");
        if (k->lbr) {                           /* Rbh stays with the hidden side */
            int rzr = slice_range(c, rb, 0, 0, 2 * k->h, "rb_zr");
            int64_t pads[2] = {0, k->h};
            tg_attr pa[2] = {tg_attr_ints("pads", 2, pads), tg_attr_float("value", 0)};
            o->rbh = slice_range(c, rb, 0, 2 * k->h, 3 * k->h, "rbh");
            rb = rzr < 0 ? -1 : unary_on(c, TG_OP_PAD, "rb_input_side", rzr, 2, pa);
        }
        o->bx = add2(c, wb, rb, "bias");
        if (o->bx < 0) return -1;
    }
    if (P >= 0 && (o->p = reshape_as(c, slice_range(c, P, 0, d, d + 1, "p_dir"), 1, pd, "p")) < 0) return -1;
    return o->w < 0 || o->r < 0 ? -1 : 0;
}

static int linear_on(onnx_ctx *c, int x, int w, int b, const char *sfx)
{
    int in[3] = {x, w, b};
    return x < 0 || w < 0 ? -1 : onnx_add(c, TG_OP_LINEAR, sfx, b < 0 ? 2 : 3, in, 0, NULL);
}

/* One step of direction d: xw [B, G*H] (the input side with its bias), h and
 * (LSTM) *cell the state; returns the new h, updates *cell. */
static int rnn_step(onnx_ctx *c, const rnn_kind *k, const rnn_weights *wt, const rnn_act *f, int xw, int h, int *cell)
{
    if (k->gru) {                               /* z, r from [x, h]; then the candidate */
        int64_t hh = k->h;
        int rzr = slice_range(c, wt->r, 0, 0, 2 * hh, "r_zr"), rh = slice_range(c, wt->r, 0, 2 * hh, 3 * hh, "r_h");
        int hr = linear_on(c, h, rzr, -1, "h_zr");
        int z = rnn_activate(c, rnn_clip(c, k, add2(c, gate(c, k, xw, 0, "x_z"), gate(c, k, hr, 0, "h_z"), "z_in")), &f[0], "z");
        int r = rnn_activate(c, rnn_clip(c, k, add2(c, gate(c, k, xw, 1, "x_r"), gate(c, k, hr, 1, "h_r"), "r_in")), &f[0], "r");
        int cand = k->lbr ? mul2(c, r, linear_on(c, h, rh, wt->rbh, "h_h"), "reset_h") : linear_on(c, mul2(c, r, h, "reset"), rh, -1, "h_h");
        int hc = rnn_activate(c, rnn_clip(c, k, add2(c, gate(c, k, xw, 2, "x_h"), cand, "h_in")), &f[1], "candidate");
        /* (1 - z) hc + z h = hc + z (h - hc) */
        return add2(c, hc, mul2(c, z, hc < 0 ? -1 : binary_on(c, TG_OP_SUB, "h_diff", h, hc), "kept"), "h");
    }
    int pre = add2(c, xw, linear_on(c, h, wt->r, -1, "h_side"), "pre");
    if (!k->lstm) return rnn_activate(c, rnn_clip(c, k, pre), &f[0], "h");
    int g[4];                                   /* i, o, f, c */
    const char *nm[4] = {"i_in", "o_in", "f_in", "c_in"};
    for (int i = 0; i < 4; i++) g[i] = gate(c, k, pre, i, nm[i]);
    int pi = -1, po = -1, pf = -1;
    if (wt->p >= 0) {
        pi = slice_range(c, wt->p, 0, 0, k->h, "p_i"), po = slice_range(c, wt->p, 0, k->h, 2 * k->h, "p_o");
        pf = slice_range(c, wt->p, 0, 2 * k->h, 3 * k->h, "p_f");
        g[0] = add2(c, g[0], mul2(c, pi, *cell, "peep_i"), "i_peep");
        g[2] = add2(c, g[2], mul2(c, pf, *cell, "peep_f"), "f_peep");
    }
    int i = rnn_activate(c, rnn_clip(c, k, g[0]), &f[0], "i"), fg = rnn_activate(c, rnn_clip(c, k, g[2]), &f[0], "f");
    int cc = rnn_activate(c, rnn_clip(c, k, g[3]), &f[1], "c_cand");
    *cell = add2(c, mul2(c, fg, *cell, "c_kept"), mul2(c, i, cc, "c_new"), "c");
    if (wt->p >= 0) g[1] = add2(c, g[1], mul2(c, po, *cell, "peep_o"), "o_peep");
    int o = rnn_activate(c, rnn_clip(c, k, g[1]), &f[0], "o");
    return mul2(c, o, rnn_activate(c, *cell, &f[2], "c_act"), "h");
}

/* The activations list (per direction, defaults as ONNX's; one direction's
 * list serves both of a bidirectional op) and their alphas and betas, each
 * list consumed in order by the activations that take one (as ONNX Runtime
 * reads them), else each activation's default. */
static int rnn_acts(onnx_ctx *c, rnn_kind *k, int ndir)
{
    static const char *dflt[3][3] = {{"Tanh"}, {"Sigmoid", "Tanh"}, {"Sigmoid", "Tanh", "Tanh"}};
    const char **dl = dflt[k->nact - 1];
    const Onnx__AttributeProto *a = onnx_attr(N(c), "activations"), *al = onnx_attr(N(c), "activation_alpha"),
                               *be = onnx_attr(N(c), "activation_beta");
    if (a && (int)a->n_strings != k->nact * ndir && (int)a->n_strings != k->nact)
        return tg_err("activations has %zu names for %d per direction", a->n_strings, k->nact);
    size_t ai = 0, bi = 0;
    for (int d = 0; d < ndir; d++)
        for (int i = 0; i < k->nact; i++) {
            int j = a && (int)a->n_strings == k->nact ? i : d * k->nact + i;
            rnn_act *f = &k->act[d][i];
            if (a)
                snprintf(f->name, sizeof f->name, "%.*s", (int)a->strings[j].len, (const char *)a->strings[j].data);
            else
                snprintf(f->name, sizeof f->name, "%s", dl[i]);
            const char *n = f->name;
            bool hs = !strcmp(n, "HardSigmoid"), aff = !strcmp(n, "Affine"), st = !strcmp(n, "ScaledTanh");
            bool takes_a = hs || aff || st || !strcmp(n, "LeakyRelu") || !strcmp(n, "Elu");
            f->alpha = !strcmp(n, "LeakyRelu") ? 0.01 : hs ? 0.2 : 1.0;
            f->beta = hs ? 0.5 : aff ? 0.0 : 1.0;
            if (takes_a && al && ai < al->n_floats) f->alpha = al->floats[ai++];
            if ((hs || aff || st) && be && bi < be->n_floats) f->beta = be->floats[bi++];
        }
    return 0;
}

/* RNN, GRU, LSTM (opsets 7-22): unrolled over the sequence, each direction
 * through its own chain of steps; sequence_lens masks the steps past each
 * batch's length (the state carried, Y zero there), which also starts the
 * reverse direction at each batch's last step. */
static int map_recurrent(onnx_ctx *c, const onnx_op_map *m)
{
    const char *t = N(c)->op_type;
    rnn_kind k = {.gates = 1, .nact = 1};
    if (!strcmp(t, "GRU")) k.gates = 3, k.nact = 2, k.gru = true, k.lbr = onnx_attr_int(N(c), "linear_before_reset", 0) != 0;
    if (!strcmp(t, "LSTM")) k.gates = 4, k.nact = 3, k.lstm = true;
    int X = in_val(c, 0), W = X < 0 ? -1 : in_val(c, 1), R = W < 0 ? -1 : in_val(c, 2), B, L, H0, C0 = -1, P = -1;
    if (R < 0 || opt_in(c, 3, &B) || opt_in(c, 4, &L) || opt_in(c, 5, &H0) || (k.lstm && (opt_in(c, 6, &C0) || opt_in(c, 7, &P))))
        return -1;
    if (k.lstm && onnx_attr_int(N(c), "input_forget", 0)) return tg_err("input_forget=1 is not supported");
    const char *dir = onnx_attr_string(N(c), "direction", "forward");
    int ndir = !strcmp(dir, "bidirectional") ? 2 : 1;
    bool rev = !strcmp(dir, "reverse");
    if (strcmp(dir, "forward") && !rev && ndir != 2) return tg_err("direction '%s' is not forward, reverse or bidirectional", dir);
    int64_t layout = onnx_attr_int(N(c), "layout", 0), nt;
    k.clip = onnx_attr_float(N(c), "clip", 0);
    if (layout != 0 && layout != 1) return tg_err("layout %lld is not 0 or 1", (long long)layout);
    if (rnn_acts(c, &k, ndir)) return -1;
    tg_shape xs = shape_of(c, X), rs = shape_of(c, R);
    if (xs.rank != 3 || shape_of(c, W).rank != 3 || rs.rank != 3) return tg_err("X, W and R must be 3-D");
    if (static_dim(c, R, 2, "R", &k.h)) return -1;
    if (onnx_attr_int(N(c), "hidden_size", k.h) != k.h) return tg_err("hidden_size does not match R's last dim %lld", (long long)k.h);
    int64_t perm3[3] = {1, 0, 2};
    if (layout) {                               /* to [T, B, I] and [D, B, H] */
        X = permute_on(c, X, 3, perm3, "x_tbi");
        H0 = H0 < 0 ? -1 : permute_on(c, H0, 3, perm3, "h0_dbh");
        C0 = C0 < 0 ? -1 : permute_on(c, C0, 3, perm3, "c0_dbh");
        if (X < 0) return -1;
        xs = shape_of(c, X);
    }
    if (!tg_dim_is_const(xs.d[0], &nt)) return tg_err("the sequence length must be known at import (it is unrolled)");
    if (nt > SEQ_MAX_STEPS || nt < 1) return tg_err("sequence length %lld is not within the 1 to %d steps unrolled", (long long)nt, SEQ_MAX_STEPS);
    tg_dim bh[2] = {xs.d[1], tg_dim_const(k.h)}, col[2] = {xs.d[1], tg_dim_const(1)}, y4[4] = {tg_dim_const(1), tg_dim_const(1), xs.d[1], tg_dim_const(k.h)};
    tg_dim s3[3] = {tg_dim_const(1), xs.d[1], tg_dim_const(k.h)};
    tg_dtype dt = dtype_of(c, X);
    int lens = L < 0 ? -1 : reshape_as(c, cast_as(c, L, TG_I64, "lens_i64"), 2, col, "lens");
    if (L >= 0 && lens < 0) return -1;
    int *ys = malloc(sizeof(int) * (size_t)nt), yd[2], hd[2], cd[2];
    if (!ys) return tg_err("out of memory");
    int rc = 0;
    for (int d = 0; d < ndir && !rc; d++) {
        rnn_weights wt;
        if (rnn_dir_weights(c, &k, W, R, B, P, d, &wt)) {
            rc = -1;
            break;
        }
        int xw = linear_on(c, X, wt.w, wt.bx, "x_side"), h, cell = -1;
        tg_attr z[3] = {tg_attr_dims("shape", 2, bh), tg_attr_float("value", 0), tg_attr_dtype("dtype", dt)};
        h = H0 >= 0 ? reshape_as(c, slice_range(c, H0, 0, d, d + 1, "h0_dir"), 2, bh, "h0") : onnx_add(c, TG_OP_FULL, "h0", 0, NULL, 3, z);
        if (k.lstm) cell = C0 >= 0 ? reshape_as(c, slice_range(c, C0, 0, d, d + 1, "c0_dir"), 2, bh, "c0") : onnx_add(c, TG_OP_FULL, "c0", 0, NULL, 3, z);
        int zero = L >= 0 ? scalar_const(c, "zero", dt, 0) : 0;
        for (int64_t s = 0; s < nt && !rc; s++) {
            int64_t at = rev || d == 1 ? nt - 1 - s : s;
            int xt = reshape_as(c, slice_range(c, xw, 0, at, at + 1, "x_t"), 2, (tg_dim[]){xs.d[1], tg_dim_const(k.gates * k.h)}, "x_step");
            int prev_c = cell, hn = xt < 0 || h < 0 || zero < 0 ? -1 : rnn_step(c, &k, &wt, k.act[d], xt, h, &cell), yv = hn;
            if (L >= 0 && hn >= 0) {            /* past this batch's length: state kept, output 0 */
                int on = binary_on(c, TG_OP_GT, "in_sequence", lens, scalar_const(c, "step", TG_I64, (double)at));
                yv = where_on(c, "y_masked", on, hn, zero);
                hn = where_on(c, "h_masked", on, hn, h);
                if (k.lstm) cell = where_on(c, "c_masked", on, cell, prev_c);
            }
            h = hn;
            ys[at] = reshape_as(c, yv, 4, y4, "y_t");
            if (ys[at] < 0 || h < 0 || (k.lstm && cell < 0)) rc = -1;
        }
        if (rc) break;
        yd[d] = concat_on(c, (int)nt, ys, 0, "y_dir");
        hd[d] = reshape_as(c, h, 3, s3, "h_last");
        cd[d] = k.lstm ? reshape_as(c, cell, 3, s3, "c_last") : 0;
        if (yd[d] < 0 || hd[d] < 0 || cd[d] < 0) rc = -1;
    }
    free(ys);
    if (rc) return -1;
    /* named by suffix: the node's name and its first output may both be empty */
    int y = concat_on(c, ndir, yd, 1, "y"), yh = concat_on(c, ndir, hd, 0, "y_h");
    int yc = k.lstm ? concat_on(c, ndir, cd, 0, "y_c") : -1;
    if (layout) {
        int64_t p4[4] = {2, 0, 1, 3};
        y = permute_on(c, y, 4, p4, "y_btdh");
        yh = permute_on(c, yh, 3, perm3, "y_h");
        yc = k.lstm ? permute_on(c, yc, 3, perm3, "y_c") : -1;
    }
    if (def_out(c, 0, y) || def_out(c, 1, yh)) return -1;
    return k.lstm ? def_out(c, 2, yc) : 0;
}

/* ---- ReverseSequence, TensorScatter: gathers of computed positions ------------------------- */

/* [0, n) as int64 at axis `at` of a shape of rank ones. */
static int arange_at(onnx_ctx *c, tg_dim n, int rank, int at, const char *sfx)
{
    tg_attr a[2] = {tg_attr_dims("end", 1, &n), tg_attr_dtype("dtype", TG_I64)};
    tg_dim d[TG_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = tg_dim_const(1);
    d[at] = n;
    return reshape_as(c, onnx_add(c, TG_OP_ARANGE, sfx, 0, NULL, 2, a), rank, d, sfx);
}

/* A [n] vector v as int64 at axis `at` of a shape of rank ones. */
static int vector_at(onnx_ctx *c, int v, int rank, int at, const char *sfx)
{
    tg_dim d[TG_MAX_RANK];
    for (int i = 0; i < rank; i++) d[i] = tg_dim_const(1);
    d[at] = shape_of(c, v).d[0];
    return reshape_as(c, cast_as(c, v, TG_I64, "as_i64"), rank, d, sfx);
}

/* torch.gather of x along axis at positions idx (broadcast to shape s first). */
static int gather_at(onnx_ctx *c, int x, int idx, const tg_shape *s, int axis, const char *sfx)
{
    tg_attr e = tg_attr_dims("shape", s->rank, s->d), a = tg_attr_int("axis", axis);
    int in[2] = {x, idx < 0 ? -1 : unary_on(c, TG_OP_EXPAND, "positions", idx, 1, &e)};
    return in[1] < 0 ? -1 : onnx_add(c, TG_OP_GATHER, sfx, 2, in, 1, &a);
}

/* ReverseSequence: y[t, b] = x[len_b - 1 - t, b] for t < len_b, else x[t, b]. */
static int map_reverse_sequence(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), lens = x < 0 ? -1 : in_val(c, 1);
    if (lens < 0) return -1;
    int64_t ta = onnx_attr_int(N(c), "time_axis", 0), ba = onnx_attr_int(N(c), "batch_axis", 1);
    tg_shape xs = shape_of(c, x);
    if (xs.rank < 2 || ta < 0 || ta > 1 || ba < 0 || ba > 1 || ta == ba)
        return tg_err("time_axis and batch_axis must be 0 and 1 (either way) of an input of rank >= 2");
    if (shape_of(c, lens).rank != 1) return tg_err("sequence_lens must be 1-D");
    int t = arange_at(c, xs.d[ta], 2, (int)ta, "time"), l = vector_at(c, lens, 2, (int)ba, "lens");
    int back = t < 0 || l < 0 ? -1 : binary_on(c, TG_OP_SUB, "reversed", binary_on(c, TG_OP_SUB, "last", l, scalar_const(c, "one", TG_I64, 1)), t);
    int idx = back < 0 ? -1 : where_on(c, "source", binary_on(c, TG_OP_LT, "in_sequence", t, l), back, t);
    tg_dim d[TG_MAX_RANK];
    for (int i = 0; i < xs.rank; i++) d[i] = i < 2 ? shape_of(c, idx < 0 ? t : idx).d[i] : tg_dim_const(1);
    return def_out(c, 0, gather_at(c, x, reshape_as(c, idx, xs.rank, d, "source_nd"), &xs, (int)ta, NULL));
}

/* TensorScatter (opset 24): past_cache with update written along axis from
 * write_indices[b] on (mod the cache length when circular), as a gather of
 * update at (s - w_b) where that lies in [0, U), past_cache elsewhere. */
static int map_tensor_scatter(onnx_ctx *c, const onnx_op_map *m)
{
    int x = in_val(c, 0), u = x < 0 ? -1 : in_val(c, 1), w;
    if (u < 0 || opt_in(c, 2, &w)) return -1;
    const char *mode = onnx_attr_string(N(c), "mode", "linear");
    bool circ = !strcmp(mode, "circular");
    if (!circ && strcmp(mode, "linear")) return tg_err("mode '%s' is not linear or circular", mode);
    tg_shape xs = shape_of(c, x), us = shape_of(c, u);
    int axis = 0;
    int64_t len, n;
    if (axis_norm(onnx_attr_int(N(c), "axis", -2), xs.rank, &axis)) return -1;
    if (axis == 0) return tg_err("axis must not be the batch axis 0");
    if (us.rank != xs.rank || static_dim(c, x, axis, "past_cache", &len) || static_dim(c, u, axis, "update", &n) || n > len)
        return tg_err("update must have past_cache's rank and at most its length on axis %d", axis);
    for (int i = 0; i < xs.rank; i++)
        if (i != axis && !tg_dim_eq(xs.d[i], us.d[i])) return tg_err("update's dim %d differs from past_cache's", i);
    int s = arange_at(c, xs.d[axis], xs.rank, axis, "slot");
    int rel = w < 0 ? s : binary_on(c, TG_OP_SUB, "offset", s, vector_at(c, w, xs.rank, 0, "write_at"));
    if (circ) rel = rel < 0 ? -1 : binary_on(c, TG_OP_REMAINDER, "wrapped", rel, scalar_const(c, "length", TG_I64, (double)len));
    int zero = scalar_const(c, "zero", TG_I64, 0);
    int in = rel < 0 || zero < 0 ? -1 : binary_on(c, TG_OP_LOGICAL_AND, "written", binary_on(c, TG_OP_GE, "from", rel, zero),
                                                binary_on(c, TG_OP_LT, "before", rel, scalar_const(c, "count", TG_I64, (double)n)));
    int g = gather_at(c, u, where_on(c, "source", in, rel, zero), &xs, axis, "from_update");
    return def_out(c, 0, where_on(c, NULL, in, g, x));
}

/* ---- the table ------------------------------------------------------------------------------ */

const onnx_op_map onnx_seq_ops[] = {
    {"CausalConvWithState", map_causal_conv, 0},
    {"RotaryEmbedding", map_rotary, 0},
    {"LinearAttention", map_linear_attention, 0},
    {"ReverseSequence", map_reverse_sequence, 0}, {"TensorScatter", map_tensor_scatter, 0},
    {"RNN", map_recurrent, 0}, {"GRU", map_recurrent, 0}, {"LSTM", map_recurrent, 0},
};
const int onnx_seq_nops = (int)(sizeof onnx_seq_ops / sizeof onnx_seq_ops[0]);
