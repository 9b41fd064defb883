/* Graph passes and the execution plan that tcompile's code generator follows.
 *
 * Graph passes rewrite a graph in place into an equivalent one (the
 * interpreter gives the same results before and after). Each returns the
 * number of changes it made, or -1 with tg_err.
 *
 * Scheduling passes (fusion, memory) do not change the graph: they fill a
 * tg_plan, which only the code generator reads. A plan's groups are sets of
 * nodes that run as one kernel; a node alone is a group of one. */
#ifndef TG_PASSES_H
#define TG_PASSES_H

#include <stdbool.h>

#include "../graph.h"
#include "../tensor.h"

/* ---- graph passes --------------------------------------------------------- */
int tg_pass_dce(tg_graph *g);       /* drop nodes and constants nothing uses */
int tg_pass_fold(tg_graph *g);      /* nodes whose inputs are all constants become constants */
/* Value v's contents computed by the interpreter from the constants alone
 * (its whole subgraph copied out and run; g is not changed): 0 and *out
 * filled (tg_tensor_free), or -1 (tg_err) when v depends on a graph input,
 * a node with declared outputs, or a shape that is not constant, or its
 * subgraph's results come to more than max_bytes. */
int tg_eval_const(const tg_graph *g, int v, size_t max_bytes, tg_tensor *out);
int tg_pass_cse(tg_graph *g);       /* equal nodes on equal inputs computed once */
int tg_pass_bn_fold(tg_graph *g);    /* batch_norm after conv/linear into their weights */
int tg_pass_fuse_bias(tg_graph *g); /* linear/conv + constant per-channel add: its bias */
int tg_pass_layout(tg_graph *g);    /* matmul on a transposed constant becomes linear, ... */
int tg_pass_fuse_attention(tg_graph *g);  /* softmax(q k^T * c + mask) v: one sdpa node */
/* The same for f16 and bf16 patterns only, whose rounding of every step the
 * fused form (f32 inside) does not share: texport's ONNX import runs it (ONNX's
 * Attention function is defined as the fused op; a pt2's Core ATen attention
 * is already f32 inside, and written out in f16 it is what PyTorch eager
 * rounds op by op). */
int tg_pass_fuse_attention_narrow(tg_graph *g);
int tg_pass_bf16_weights(tg_graph *g);    /* linears' constant weights in bf16 (--dtype bf16) */
int tg_pass_unshare_views(tg_graph *g);   /* a view link several slices read: one per reader */

/* Give value `to` the name of value `from` (which gets "<name>.replaced"), so
 * a rewrite keeps the names users see (graph outputs). 0 or -1. */
int tg_value_take_name(tg_graph *g, int to, int from);
/* Swap the names of nodes `to` and `from`: a node that replaces another keeps
 * the name profiles and logs show (the replaced one is about to die). */
void tg_node_take_name(tg_graph *g, int to, int from);

/* ---- the plan --------------------------------------------------------------- */
/* The target's grouping rules: which groups its code generator compiles (the
 * plan passes form no other), and which nodes its fused loop computes. A
 * backend fills them (lib/backend/backend.h, groups). */
struct tg_plan;
typedef struct {
    bool epilogue;          /* linear/conv/matmul, then activations in place */
    bool conv_pool;         /* a float 2-D conv (+ relu) and the max pool that tiles it */
    bool gemm_residual;     /* linear_packed or pointwise conv and the residual add its GEMM
                             * applies */
    bool loop;              /* elementwise chains (and a final reduction) as one loop */
    bool view;              /* movement chains as one strided copy */
    bool strided;           /* sdpa reading view chains in place */
    /* Whether a loop computes node nd: an elementwise one element by element,
     * a reduction as the loop's last step (*why: why not). */
    bool (*loop_supports)(const tg_graph *g, const tg_node *nd, const char **why);
    /* Concats written in place (memplan): whether group root's kernels can
     * write its result as rows of its dims from `axis` on, each row a
     * stride of the code generator's choosing after the one before (a part
     * of a concat along axis whose dims before axis are more than 1). NULL:
     * no concat is written in place; else any kernel writes a part that is
     * one block (nothing before the axis but 1s) at its offset. */
    bool (*writes_rows)(const tg_graph *g, const struct tg_plan *p, int root, int axis);
    /* Whether an epilogue applies activation nd after its product (NULL:
     * every one); one it refuses stays for the loops. */
    bool (*epilogue_supports)(const tg_graph *g, const tg_node *nd);
    /* Any float conv of one group (not transposed) takes the residual add
     * and a relu after it, which its kernel applies (gemm_residual: only a
     * pointwise one). Last, so that positional initializers stay valid. */
    bool conv_residual;
} tg_group_rules;

typedef enum {
    TG_GROUP_SINGLE = 0,    /* one node, one kernel */
    TG_GROUP_EPILOGUE,      /* linear/conv/matmul, then elementwise ops applied in place */
    TG_GROUP_LOOP,          /* elementwise nodes (and a final reduction) in one loop */
    TG_GROUP_VIEW,          /* slices, reshapes, permutes, expands: one strided copy */
    TG_GROUP_STRIDED,       /* a kernel (sdpa), the view chains it reads in place, */
                            /* and the permute it may write through (then the root) */
} tg_group_kind;

typedef struct tg_plan {
    int nnode;              /* of the graph it was made for */
    int nvalue;
    /* Fusion: root[n] is the node whose position group n runs at and whose
     * outputs are the group's results (the group's last node); kind[root]. The
     * other nodes' outputs are used only inside the group and get no memory. */
    int *root;
    tg_group_kind *kind;
    /* Memory (memplan): per value, the value whose storage it uses (itself,
     * or what a reshape views), the workspace slot of a storage value (-1:
     * none), and the graph output whose caller buffer holds it (-1: none). */
    int *alias;
    int *slot;
    int *output;
    /* A part of a concat written in place: part[v] is the concat node whose
     * result (alias[v]) holds v's bytes, as its operand part_in[v]
     * (tg_plan_part says where), or -1. Its producer writes it there; the
     * concat copies only its other operands. */
    int *part, *part_in;
    int nslot;
    const tg_group_rules *rules;    /* the target's; NULL (tg_plan_new): no fusion */
    int level;              /* the pipeline's (tg_passes_opts), for its subgraphs' plans */
} tg_plan;

/* A plan with every node its own group and no memory plan yet. */
tg_plan *tg_plan_new(const tg_graph *g);
void tg_plan_free(tg_plan *p);
/* A plan with the groups the fusion passes form under rules, and no memory
 * plan: the interpreter's for a device that runs groups. NULL (tg_err). */
tg_plan *tg_plan_fuse(const tg_graph *g, const tg_group_rules *rules);
/* True when node n's outputs are computed inside a fused group and have no memory. */
bool tg_plan_interior(const tg_plan *p, int n);

int tg_pass_fuse_act(const tg_graph *g, tg_plan *p);          /* linear/conv + activation */
int tg_pass_fuse_elementwise(const tg_graph *g, tg_plan *p);  /* elementwise chains, + reduction */
int tg_pass_fuse_views(const tg_graph *g, tg_plan *p);        /* movement chains: one copy, */
                                                              /* or none where sdpa reads them */
int tg_pass_memplan(const tg_graph *g, tg_plan *p);           /* slots with reuse by liveness */

/* Where part v (p->part[v] >= 0) lies in its concat's result: rows of row
 * elements, stride elements apart (stride == row: one block), the first at
 * offset elements; outer rows (the product of the dims before the axis). 0,
 * or -1 (tg_err) when a dim product does not fit. */
typedef struct {
    int axis;
    tg_dim offset, row, stride, outer;
} tg_part;
int tg_plan_part(const tg_graph *g, const tg_plan *p, int v, tg_part *pt);

/* How a LOOP group iterates (fuse_elementwise.c): its outside inputs, and
 * its index space collapsed to rows x inner, where inner is the last dim
 * (for a reduction root: the reduced one). stride[k][d] is input k's element
 * stride along loop dim d (0 where it is broadcast); the inner stride is
 * always 0 or 1. */
#define TG_LOOP_MAX_IN 16
typedef struct {
    int nin;
    int in[TG_LOOP_MAX_IN];
    int rank;
    tg_dim dims[TG_MAX_RANK];
    tg_dim stride[TG_LOOP_MAX_IN][TG_MAX_RANK];
    bool reduce;
} tg_loop;

/* 0, or -1 with tg_err saying why the group cannot be one loop. */
int tg_loop_analyze(const tg_graph *g, const tg_plan *p, int root, tg_loop *l);

/* What an EPILOGUE group computes (fuse_act.c): its anchor's kernel (linear,
 * linear_packed, conv, matmul, qlinear, qconv), then a chain of members each
 * reading the one before, all of the anchor's shape and dtype: activations
 * (one input each) applied in place, and as the group's root either a max
 * pool the conv kernel applies (a float 2-D conv with nothing or one relu
 * before it, windows that tile the result: pool = the window) or the add of
 * a residual the pre-packed GEMM or pointwise conv applies (nothing before it;
 * any ungrouped conv where the rules have conv_residual). This is the
 * contract between fuse_act and the code generator: it compiles every group
 * tg_epilogue_analyze accepts, and fuse_act forms no other. */
#define TG_EPILOGUE_MAX 16
typedef struct {
    int anchor;
    int nact, act[TG_EPILOGUE_MAX];     /* the activations, in order */
    int64_t pool;                       /* the max pool's window, or 0 */
    int residual;                       /* the value the GEMM adds, or -1 */
} tg_epilogue;

/* 0, or -1 with tg_err saying why group `root` is no epilogue. */
int tg_epilogue_analyze(const tg_graph *g, const tg_plan *p, int root, tg_epilogue *e);

/* What a view chain reads (fuse_views.c): the chain's input `base`, as the
 * strided view rank/dims/strides (elements) starting `offset` elements in.
 * The chain ends at node `last` (a VIEW group's root, or a member of a
 * STRIDED group) and runs back through the nodes of last's group. */
typedef struct {
    int base;
    int rank;
    tg_dim dims[TG_MAX_RANK], strides[TG_MAX_RANK];
    tg_dim offset;
} tg_view;

/* 0, or -1 with tg_err when the chain is not one strided view. */
int tg_view_analyze(const tg_graph *g, const tg_plan *p, int last, tg_view *w);
/* The kernel node of the STRIDED group `root`: root, or the sdpa its root
 * permute reads. */
int tg_strided_kernel(const tg_graph *g, int root);

/* Permute node n with the permute before it as one permute, or dropped when
 * the two (or n alone) keep the order (layout.c; the CPU's channels-last
 * lowering cancels its pairs with it): 1, 0 (unchanged), -1 (tg_err). */
int tg_layout_fold_permute(tg_graph *g, int n);
/* A permute node's perm into p, negative axes made positive; its length. */
int tg_layout_perm(const tg_node *nd, int64_t *p);

/* ---- the pipeline ----------------------------------------------------------- */
struct tg_backend;
typedef struct {
    int level;              /* 0: dce, fold, the target's lowering, memplan only; 1: every pass */
    const struct tg_backend *target;    /* whose lowering and grouping rules */
    /* What linear layers on constant weights compute in (tcompile --dtype):
     * TG_DTYPE_NONE or TG_F32, as the graph says; TG_BF16, their weights
     * rounded to bf16 before the target lowers (tg_pass_bf16_weights) */
    tg_dtype dtype;
    /* tcompile --layout=nhwc: the target's channels-last lowering passes run
     * too (tg_lower_pass.channels_last) */
    bool channels_last;
} tg_passes_opts;

/* Run the pipeline on g (rewritten in place) for o->target and make its plan:
 * the target lowers the graph where the pipeline lowers, refuses any node it
 * cannot compile (with its reason; TLOG=codegen records it), and its grouping
 * rules bound the fusion. Logs the graph after each pass (TLOG=graph, passes).
 * NULL with tg_err. */
tg_plan *tg_passes_run(tg_graph *g, const tg_passes_opts *o);
/* The plan of a control node's subgraph g (rewritten in place: dead code
 * dropped) for target be at the outer plan's level: no graph pass that could
 * make constants (a subgraph has none), its nodes checked, fusion and memory
 * as for a graph. NULL with tg_err. */
tg_plan *tg_passes_subgraph(tg_graph *g, const struct tg_backend *be, int level);

#endif
