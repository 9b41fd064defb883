/* Readable views of a graph: a summary, Graphviz dot, and the differences
 * between two graphs. tlog prints them; the graph TLOG component can too. */
#ifndef TG_RENDER_H
#define TG_RENDER_H

#include <stdio.h>

#include "graph.h"

/* Inputs and outputs with dtype and symbolic shape, symbols with ranges, op
 * counts (most frequent first), parameters by dtype, node count. */
void tg_graph_summary(const tg_graph *g, FILE *f);

/* A digraph: one box per node (op, name, output dtype and shape), inputs,
 * constants and outputs styled apart, constants summarized (a few values when
 * tiny, else the element count). */
void tg_graph_dot(const tg_graph *g, FILE *f);

/* What changed from a to b: ops added or removed by kind, symbols, inputs and
 * outputs, values (matched by name) whose dtype or shape changed, constants
 * added, removed or changed (with the largest absolute difference). Prints one
 * line per difference on f (NULL: prints nothing); returns how many were found
 * (0: the same graph). */
int tg_graph_diff(const tg_graph *a, const tg_graph *b, FILE *f);

#endif
