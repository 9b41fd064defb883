/* The kernel-op maps of opmap.h, generated from ops.def. A unary, binary or
 * reduce op without its TGK_<ID> does not compile; a kernel op without its op
 * fails the count assertions. */
#include "opmap.h"

#include <math.h>
#include <string.h>

/* Family tests in the preprocessor: TG_CPU_IN(UNARY, fam) is 1 when fam is
 * unary, else 0. A defined TG_CPU_UNARY_unary expands to two arguments,
 * which shifts the 1 into TG_CPU_SECOND's place. */
#define TG_CPU_UNARY_unary ~, 1
#define TG_CPU_BINARY_binary ~, 1
#define TG_CPU_REDUCE_reduce ~, 1
#define TG_CPU_SECOND(a, b, ...) b
#define TG_CPU_TEST(...) TG_CPU_SECOND(__VA_ARGS__, 0, ~)
#define TG_CPU_IN(set, fam) TG_CPU_TEST(TG_CPU_##set##_##fam)
#define TG_CPU_CAT(a, b) TG_CPU_CAT_(a, b)
#define TG_CPU_CAT_(a, b) a##b
#define TG_CPU_ENTRY_1(id) [TG_OP_##id] = TGK_##id,
#define TG_CPU_ENTRY_0(id)
#define TG_CPU_ENTRY(set, fam, id) TG_CPU_CAT(TG_CPU_ENTRY_, TG_CPU_IN(set, fam))(id)

const tgk_unary_op tg_cpu_unary_kop[TG_OP_COUNT] = {
#define OP(id, name, min_in, max_in, infer, fam, flag) TG_CPU_ENTRY(UNARY, fam, id)
#include "../../ops/ops.def"
#undef OP
};

const tgk_binary_op tg_cpu_binary_kop[TG_OP_COUNT] = {
#define OP(id, name, min_in, max_in, infer, fam, flag) TG_CPU_ENTRY(BINARY, fam, id)
#include "../../ops/ops.def"
#undef OP
};

const tgk_reduce_op tg_cpu_reduce_kop[TG_OP_COUNT] = {
#define OP(id, name, min_in, max_in, infer, fam, flag) TG_CPU_ENTRY(REDUCE, fam, id)
#include "../../ops/ops.def"
#undef OP
};

const char *const tg_cpu_kop_name[TG_OP_COUNT] = {
    [TG_OP_NONE] = "?",
#define OP(id, name, min_in, max_in, infer, fam, flag) [TG_OP_##id] = "TGK_" #id,
#include "../../ops/ops.def"
#undef OP
};

/* Every kernel op has its op: the counts of each family in ops.def. */
enum {
    NUNARY = 0
#define OP(id, name, min_in, max_in, infer, fam, flag) + TG_CPU_IN(UNARY, fam)
#include "../../ops/ops.def"
#undef OP
    , NBINARY = 0
#define OP(id, name, min_in, max_in, infer, fam, flag) + TG_CPU_IN(BINARY, fam)
#include "../../ops/ops.def"
#undef OP
    , NREDUCE = 0
#define OP(id, name, min_in, max_in, infer, fam, flag) + TG_CPU_IN(REDUCE, fam)
#include "../../ops/ops.def"
#undef OP
};
_Static_assert(NUNARY + 1 == (int)TGK_UNARY_COUNT,
               "tgk_unary_op: one kernel op per unary op of ops.def, and gelu_tanh");
_Static_assert(NBINARY == (int)TGK_BINARY_COUNT, "tgk_binary_op: one kernel op per binary op");
_Static_assert(NREDUCE == (int)TGK_REDUCE_COUNT, "tgk_reduce_op: one kernel op per reduce op");

void tg_cpu_unary_desc(const tg_node *nd, tgk_unary_op *k, tgk_unary_param *p)
{
    *k = tg_cpu_unary_kop[nd->op];
    p->alpha = tg_node_float(nd, "alpha", *k == TGK_ELU ? 1.0 : 0.01);
    p->lo = tg_node_float(nd, "min", -INFINITY);
    p->hi = tg_node_float(nd, "max", INFINITY);
    if (*k == TGK_GELU && !strcmp(tg_node_string(nd, "approximate", "none"), "tanh"))
        *k = TGK_GELU_TANH;
}

const char *tg_cpu_unary_name(const tg_node *nd, tgk_unary_op k)
{
    return k == TGK_GELU_TANH ? "TGK_GELU_TANH" : tg_cpu_kop_name[nd->op];
}
