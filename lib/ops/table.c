/* The op table and op names, generated from ops.def. */
#include "ops.h"

#include <string.h>

const tg_op_info tg_op_table[TG_OP_COUNT] = {
    [TG_OP_NONE] = { "none", 0, 0, NULL },
#define OP(id, nm, min_in, max_in, fn) [TG_OP_##id] = { nm, min_in, max_in, fn },
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
