/* libtgraph: everything a C program needs to build, read, write and run tgraph
 * graphs, as installed under <tgraph/...>. Link with -ltgraph (pkg-config
 * tgraph). Compiled models need none of this: see <tgraph/model.h>. */
#ifndef TGRAPH_H
#define TGRAPH_H

#include "error.h"
#include "dtype.h"
#include "sym.h"
#include "graph.h"
#include "tensor.h"
#include "format.h"
#include "npy.h"
#include "log.h"
#include "modelcheck.h"
#include "exec/exec.h"
#include "import/import.h"

#endif
