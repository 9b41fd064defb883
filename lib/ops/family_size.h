/* Included once per family, named by TG_COUNTED (family.h; a kernel file of
 * its own family): defines the constant TG_FAMILY_SIZE_<family>, its number
 * of ops in ops.def. The family column is a bare name; each is compared as
 * a struct tag (struct tg_family_<name>), which needs no list of families. */
#define TG_FAMILY_CAT(a, b) TG_FAMILY_CAT_(a, b)
#define TG_FAMILY_CAT_(a, b) a##b

enum { TG_FAMILY_CAT(TG_FAMILY_SIZE_, TG_COUNTED) = 0
#define OP(id, name, min_in, max_in, infer, family, flag)                               \
    + _Generic((struct tg_family_##family *)0, TG_FAMILY_CAT(struct tg_family_, TG_COUNTED) *: 1, \
               default: 0)
#include "ops.def"
#undef OP
};

#undef TG_COUNTED
