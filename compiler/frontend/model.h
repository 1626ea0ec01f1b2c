/*
 * model — the graph description (docs/model-yaml.md) read into an ir_graph.
 *
 * model_load() is the whole front end: libyaml parses the text into events,
 * the loader walks them keeping each value's line and column, expands
 * `repeat` blocks, binds weight nodes to the safetensors header (dtype and
 * shape come from there), orders the nodes topologically (a cycle is an
 * error) and runs shape inference.  Every error names FILE:LINE:COL and what
 * was expected, with the offending line and a caret.
 */
#ifndef BERTC_MODEL_H
#define BERTC_MODEL_H

#include "diag.h"
#include "ir.h"
#include "safetensors.h"

#define MODEL_FORMAT_VERSION 1

typedef struct model {
    ir_graph graph;
    st_file file;             /* the safetensors file the YAML names */
    int file_open;
    weights weights;          /* the file through the weights interface: what later stages use */
    char *yaml_text;          /* kept for diagnostics of later stages */
    size_t yaml_len;
} model;

int model_load(model *m, const char *yaml_path, diag *d);
/* Same, from text in memory; relative paths resolve against base_dir. */
int model_load_text(model *m, const char *name, const char *text, size_t len,
                    const char *base_dir, diag *d);
void model_free(model *m);

#endif
