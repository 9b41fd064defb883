/* How many ops of ops.def each family has, for the glue that tells a family's
 * ops apart (a switch or an if on the op) or presumes its one op: it states
 * the count it handles, TG_FAMILY_HANDLES(norm, 3), so that an op added to
 * the family fails the build there instead of running another op's code.
 * Unary, binary and reduce ops need none: their glue is generated (the CPU's
 * opmap.c); nor do the aliases (VIEW: any is a copy of its input's bytes). */
#ifndef TG_OPS_FAMILY_H
#define TG_OPS_FAMILY_H

#define TG_FAMILY_HANDLES(fam, n)                                                       \
    _Static_assert(TG_FAMILY_SIZE_##fam == (n), "ops.def's family " #fam " no longer has " \
                   #n " ops: give each its branch in this glue, then the count")

/* TG_FAMILY_SIZE_<family>, one include of family_size.h each, for the
 * families whose glue is in shared files. A family of one op with its own
 * kernel file (kernels/cumsum.c) counts itself there the same way, so that
 * adding such an op needs no line here. */
#define TG_COUNTED cast
#include "family_size.h"
#define TG_COUNTED where
#include "family_size.h"
#define TG_COUNTED arg_reduce
#include "family_size.h"
#define TG_COUNTED softmax
#include "family_size.h"
#define TG_COUNTED norm
#include "family_size.h"
#define TG_COUNTED linalg
#include "family_size.h"
#define TG_COUNTED sparse
#include "family_size.h"
#define TG_COUNTED pool
#include "family_size.h"
#define TG_COUNTED resize
#include "family_size.h"
#define TG_COUNTED movement
#include "family_size.h"
#define TG_COUNTED index
#include "family_size.h"
#define TG_COUNTED gen
#include "family_size.h"
#define TG_COUNTED quant
#include "family_size.h"
#define TG_COUNTED qops
#include "family_size.h"

#endif
