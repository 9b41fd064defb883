/* The op table and op names, generated from ops.def. */
#include "ops.h"

#include <string.h>

const tg_op_info tg_op_table[TG_OP_COUNT] = {
    [TG_OP_NONE] = { "none", 0, 0, NULL, "none", TG_OPF_NONE },
#define OP(id, nm, min_in, max_in, fn, family, flag) \
    [TG_OP_##id] = { nm, min_in, max_in, fn, #family, TG_OPF_##flag },
#include "ops.def"
#undef OP
};

const char *tg_op_name(tg_op op)
{
    if ((int)op < 0 || op >= TG_OP_COUNT)
        return "?";
    return tg_op_table[op].name;
}

tg_op tg_op_from_name(const char *name)
{
    if (!name)
        return TG_OP_NONE;
    for (int i = 1; i < TG_OP_COUNT; i++)
        if (!strcmp(tg_op_table[i].name, name))
            return (tg_op)i;
    return TG_OP_NONE;
}

static bool has_flag(tg_op op, unsigned flag)
{
    return (int)op > 0 && op < TG_OP_COUNT && (tg_op_table[op].flags & flag);
}

bool tg_op_is_elementwise(tg_op op)
{
    return has_flag(op, TG_OPF_ELEMENTWISE);
}

bool tg_op_is_view(tg_op op)
{
    return has_flag(op, TG_OPF_VIEW);
}

bool tg_op_is_data(tg_op op)
{
    return has_flag(op, TG_OPF_DATA);
}

bool tg_op_is_control(tg_op op)
{
    return has_flag(op, TG_OPF_CONTROL);
}
