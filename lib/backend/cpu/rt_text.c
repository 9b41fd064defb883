/* The model ABI and the runtime's headers as text, put into every generated C
 * file so that it compiles without an include path, against exactly the
 * headers libtgkernels.a was built with. rt_headers.inc is made from
 * <tgraph/model.h>, kernels.h, tensor_ops.h and model_rt.h by a rule in
 * Makefile.am. */
const char tg_cg_rt_headers[] =
#include "backend/cpu/rt_headers.inc"
    ;
