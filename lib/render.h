/* Readable views of a graph: a summary, Graphviz dot, and the differences
 * between two graphs. tlog prints them; the graph TLOG component can too. */
#ifndef TG_RENDER_H
#define TG_RENDER_H

#include <stdio.h>

#include "graph.h"

/* Inputs and outputs with dtype and symbolic shape, symbols with ranges, op
 * counts (most frequent first), parameters by dtype, node count. */
void tg_graph_summary(const tg_graph *g, FILE *f);

/* The graph as text, one line per node, for logs and terminals:
 *   inputs: x f32[batch, 8]
 *     fc1 = linear(x, fc1.weight, fc1.bias) : f32[batch, 16]
 *   outputs: out */
void tg_graph_list(const tg_graph *g, FILE *f);

/* Log g as it is at a stage of a tool ("import", "fold", ...): with TLOG=graph
 * one record "STAGE: N nodes" followed by the listing, fields {"stage","nodes"};
 * +graph adds the summary. Costs one compare when the component is off. */
void tg_graph_log(const tg_graph *g, const char *stage);

/* Log one operator of a source model mapped by an importer: the nodes it
 * became are g's nodes from first on. One node: IMPORT at DEBUG; several (a
 * decomposition): at INFO, "decomposed NAME (SRC_OP) -> op, op". fields
 * {"source_op","node","ops":[...]}. */
void tg_graph_log_mapped(const tg_graph *g, int first, const char *src_op, const char *name);

/* A digraph: one box per node (op, name, output dtype and shape), inputs,
 * constants and outputs styled apart, constants summarized (a few values when
 * tiny, else the element count). */
void tg_graph_dot(const tg_graph *g, FILE *f);

/* Nodes that run as one kernel (a compiled model's fused groups), drawn as
 * Graphviz clusters. */
typedef struct {
    int ngroup;
    int *of;            /* per node of the graph: its group, or -1 */
    char **label;       /* per group: the cluster's title */
} tg_dot_groups;

/* tg_graph_dot with groups (NULL: none) drawn as clusters. */
void tg_graph_dot_groups(const tg_graph *g, const tg_dot_groups *groups, FILE *f);

/* What changed from a to b: ops added or removed by kind, symbols, inputs and
 * outputs, values (matched by name) whose dtype or shape changed, constants
 * added, removed or changed (with the largest absolute difference). Prints one
 * line per difference on f (NULL: prints nothing); returns how many were found
 * (0: the same graph). */
int tg_graph_diff(const tg_graph *a, const tg_graph *b, FILE *f);

#endif
