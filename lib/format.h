/* The TG file (man/man5/tgraph-format.5): a safetensors file whose header metadata
 * key "tgraph" holds the graph as JSON. Constant values' data are the file's
 * tensors, named after the values. */
#ifndef TG_FORMAT_H
#define TG_FORMAT_H

#include <stdint.h>
#include <stdio.h>

#include "graph.h"

/* The newest format version. Version 2 added subgraphs (attributes of kind
 * graph) and nodes of several outputs (control flow); a graph without them is
 * written as version 1, which older readers read. */
#define TG_FORMAT_VERSION 2

/* The oldest version that holds g. */
int tg_graph_format_version(const tg_graph *g);

/* Read and validate a whole graph from a stream (pipes work: read header-first,
 * then data in order) or a memory buffer. NULL with tg_err on any problem. */
tg_graph *tg_graph_read(FILE *f);
tg_graph *tg_graph_read_mem(const uint8_t *buf, size_t len);
/* Load from path ("-" is stdin). */
tg_graph *tg_graph_load(const char *path);

/* Write deterministically: the same graph gives the same bytes. 0 or -1. */
int tg_graph_write(const tg_graph *g, FILE *f);
/* Write to path via a temporary file and rename; "-" is stdout (refused when it
 * is a terminal). */
int tg_graph_save(const tg_graph *g, const char *path);

/* The graph's JSON alone (malloc'd string), as stored in the metadata. */
char *tg_graph_to_json(const tg_graph *g);

#endif
