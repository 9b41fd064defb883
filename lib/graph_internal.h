/* Private helpers shared by graph.c, graph_edit.c and graph_validate.c. */
#ifndef TG_GRAPH_INTERNAL_H
#define TG_GRAPH_INTERNAL_H

#include "graph.h"

char *tg_strdup_or_null(const char *s);
/* Deep copy of an attribute; 0 or -1 (tg_err). */
int tg_attr_copy(tg_attr *dst, const tg_attr *src);
void tg_attr_release(tg_attr *a);
/* Free what node n owns (not the struct). */
void tg_node_release(tg_node *n);
/* Free what value v owns. */
void tg_value_release(tg_value *v);
/* Problems with a shape on its own: rank, unknown symbols, negative constants.
 * 0, or -1 with tg_err. */
int tg_shape_check(const tg_graph *g, const tg_shape *s);
/* Problems with an attribute on its own (name, kind, counts, pointers). */
int tg_attr_check(const tg_attr *a);
/* Keep the name index (graph_names.c) current: call after appending value v or
 * node n (named); drop it after removing or renumbering anything. */
void tg_graph_names_value_added(tg_graph *g, int v);
void tg_graph_names_node_added(tg_graph *g, int n);
void tg_graph_names_drop(tg_graph *g);

#endif
