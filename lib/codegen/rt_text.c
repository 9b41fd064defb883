/* The runtime's headers as text, put into every generated C file so that it
 * compiles with nothing but <tgraph/model.h>. rt_headers.inc is made from
 * kernels.h, tensor_ops.h and model_rt.h by a rule in Makefile.am. */
const char tg_cg_rt_headers[] =
#include "codegen/rt_headers.inc"
    ;
