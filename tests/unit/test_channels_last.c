/* The CPU's channels-last lowering (channels_last.c, tcompile --layout=nhwc)
 * on small conv nets: the lowered graph, run interpreted and compiled at
 * -O0 and -O1 on fresh random inputs (cgcheck.h), against the float64
 * reference of the NCHW graph it came from (f32 rtol 1e-4 of the largest
 * output, atol 1e-5); and what the pass left: every conv a conv_nhwc, the
 * permutes only at the boundaries. */
#include "cgcheck.h"
#include "backend/cpu/cpu.h"

static int count_op(const tg_graph *g, tg_op op)
{
    int n = 0;
    for (int i = 0; i < g->nnode; i++)
        n += g->nodes[i].op == op;
    return n;
}

static int conv(tg_graph *g, int x, int64_t c, int64_t k, int64_t kernel, int64_t stride,
                int64_t groups, bool bias)
{
    char name[32];
    static int nconv;
    snprintf(name, sizeof name, "w%d", nconv++);
    int w = weight(g, name, 4, (int64_t[]){k, c / groups, kernel, kernel});
    snprintf(name, sizeof name, "b%d", nconv);
    int b = bias ? weight(g, name, 1, (int64_t[]){k}) : -1;
    tg_attr a[3] = {tg_attr_ints("padding", 2, (int64_t[]){kernel / 2, kernel / 2}),
                    tg_attr_ints("stride", 2, (int64_t[]){stride, stride}),
                    tg_attr_int("groups", groups)};
    return tg_graph_add_node(g, TG_OP_CONV, NULL, 3, (int[]){x, w, b}, 3, a);
}

static int unary(tg_graph *g, tg_op op, int x)
{
    return tg_graph_add_node(g, op, NULL, 1, &x, 0, NULL);
}

static int relu6(tg_graph *g, int x)
{
    tg_attr a[2] = {tg_attr_float("min", 0), tg_attr_float("max", 6)};
    return tg_graph_add_node(g, TG_OP_CLAMP, NULL, 1, &x, 2, a);
}

static int global_pool(tg_graph *g, int x)
{
    tg_attr a = tg_attr_ints("output_size", 2, (int64_t[]){1, 1});
    return tg_graph_add_node(g, TG_OP_ADAPTIVE_AVG_POOL, NULL, 1, &x, 1, &a);
}

/* g lowered, checked against its NCHW self: convs conv_nhwc, permutes left */
static void check(const char *what, tg_graph *g, int permutes)
{
    tg_graph *ref = tg_graph_clone(g);
    int convs = count_op(g, TG_OP_CONV);
    CHECK(tg_cpu_channels_last(g) > 0 && tg_pass_dce(g) >= 0);
    CHECK(count_op(g, TG_OP_CONV) == 0 && count_op(g, TG_OP_CONV_NHWC) == convs);
    if (count_op(g, TG_OP_PERMUTE) != permutes) {
        fprintf(stderr, "%s: %d permutes left, expected %d\n", what, count_op(g, TG_OP_PERMUTE),
                permutes);
        CHECK(false);
    }
    check_case_with(what, g, &(cg_case){.levels = 3, .reference = ref});
}

/* conv -> relu -> conv -> relu -> conv -> + -> relu, times a constant
 * [C,1,1] plus one: the input's permute and the output's */
static void residual_block(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(8, 10, 9));
    int h = unary(g, TG_OP_RELU, conv(g, x, 8, 16, 3, 1, 1, true));
    int a = unary(g, TG_OP_RELU, conv(g, h, 16, 16, 3, 1, 1, true));
    int y = unary(g, TG_OP_RELU,
                  NODE(g, ADD, 0, NULL, conv(g, a, 16, 16, 3, 1, 1, false), h));
    y = NODE(g, MUL, 0, NULL, y, W(g, "scale", 16, 1, 1));
    tg_graph_add_output(g, NODE(g, ADD, 0, NULL, y, W(g, "shift", 1, 16, 1, 1)));
    check("residual block", g, 2);
}

/* squeeze-and-excitation: h * sigmoid(conv(relu(conv(pool(h))))), the
 * [N,C,1,1] scales a reshape, not a copy */
static void se_block(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(8, 7, 7));
    int h = unary(g, TG_OP_SILU, conv(g, x, 8, 32, 3, 2, 1, true));
    int s = unary(g, TG_OP_RELU, conv(g, global_pool(g, h), 32, 8, 1, 1, 1, true));
    s = unary(g, TG_OP_SIGMOID, conv(g, s, 8, 32, 1, 1, 1, true));
    tg_graph_add_output(g, conv(g, NODE(g, MUL, 0, NULL, h, s), 32, 16, 1, 1, 1, false));
    check("SE block", g, 2);
}

/* two branches concatenated along the channels, a ceil-mode max pool, a
 * conv; and the channel means (reduce_mean over H, W): permutes of the
 * input, of the conv's result, none for the means ([N, C] either way) */
static void concat_pool(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(8, 9, 9));
    int a = unary(g, TG_OP_RELU, conv(g, x, 8, 16, 3, 1, 1, true));
    int b = conv(g, x, 8, 16, 1, 1, 1, true);
    tg_attr cat = tg_attr_int("axis", 1);
    int c = tg_graph_add_node(g, TG_OP_CONCAT, NULL, 2, (int[]){a, b}, 1, &cat);
    tg_attr mp[4] = {tg_attr_ints("kernel", 1, (int64_t[]){3}),
                     tg_attr_ints("stride", 1, (int64_t[]){2}),
                     tg_attr_ints("padding", 1, (int64_t[]){1}), tg_attr_int("ceil_mode", 1)};
    int p = tg_graph_add_node(g, TG_OP_MAX_POOL, NULL, 1, &c, 4, mp);
    tg_graph_add_output(g, conv(g, p, 32, 16, 3, 1, 1, true));
    tg_attr m[2] = {tg_attr_ints("axes", 2, (int64_t[]){2, 3}), tg_attr_int("keepdim", 0)};
    tg_graph_add_output(g, tg_graph_add_node(g, TG_OP_REDUCE_MEAN, NULL, 1, &c, 2, m));
    check("concat, max pool, reduce_mean", g, 2);
}

/* MobileNet's inverted residual: 1x1 expand, relu6, depthwise 3x3, relu6,
 * 1x1 project + residual; an avg pool, the global pool, flatten and a
 * linear head: only the input's permute is a copy */
static void depthwise_head(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(16, 8, 8));
    int h = relu6(g, conv(g, x, 16, 32, 1, 1, 1, true));
    h = relu6(g, conv(g, h, 32, 32, 3, 1, 32, true));
    h = NODE(g, ADD, 0, NULL, conv(g, h, 32, 16, 1, 1, 1, true), x);
    tg_attr ap = tg_attr_ints("kernel", 1, (int64_t[]){2});
    h = tg_graph_add_node(g, TG_OP_AVG_POOL, NULL, 1, &h, 1, &ap);
    h = global_pool(g, conv(g, h, 16, 24, 3, 1, 1, true));
    tg_attr flat = tg_attr_dims("shape", 2, (tg_dim[]){tg_dim_sym(0), tg_dim_const(24)});
    h = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &h, 1, &flat);
    tg_graph_add_output(g, NODE(g, LINEAR, 0, NULL, h, W(g, "fc", 10, 24), W(g, "fcb", 10)));
    check("depthwise, residual, pools, flatten head", g, 1);
}

/* a flatten of a spatial map: the permute back before it stays (a copy) */
static void flatten_spatial(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(8, 5, 5));
    int h = unary(g, TG_OP_RELU, conv(g, x, 8, 16, 3, 1, 1, true));
    tg_attr flat = tg_attr_dims("shape", 2, (tg_dim[]){tg_dim_sym(0), tg_dim_const(400)});
    h = tg_graph_add_node(g, TG_OP_RESHAPE, NULL, 1, &h, 1, &flat);
    tg_graph_add_output(g, NODE(g, LINEAR, 0, NULL, h, W(g, "fc", 10, 400)));
    check("flatten of a spatial map", g, 2);
}

/* RegNet's grouped 3x3 of 8 channels a group, which the NHWC kernel refuses,
 * between convs it takes: the graph stays NCHW as it is (no permute added) */
static void refused_group(void)
{
    tg_graph *g = tg_graph_new();
    int x = input(g, "x", DIMS(16, 6, 6));
    int h = unary(g, TG_OP_RELU, conv(g, x, 16, 32, 1, 1, 1, true));
    h = unary(g, TG_OP_RELU, conv(g, h, 32, 32, 3, 1, 4, true));
    tg_graph_add_output(g, conv(g, h, 32, 16, 1, 1, 1, true));
    int nnode = g->nnode;
    CHECK(tg_cpu_channels_last(g) == 0);
    CHECK(g->nnode == nnode && count_op(g, TG_OP_CONV) == 3 && count_op(g, TG_OP_PERMUTE) == 0);
    check_case_with("a refused grouped conv: NCHW as a whole", g, &(cg_case){.levels = 3});
}

int main(void)
{
    if (!cg_start())
        return 77;
    residual_block();
    se_block();
    concat_pool();
    depthwise_head();
    flatten_spatial();
    refused_group();
    return unit_report();
}
