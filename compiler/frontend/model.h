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
#define MODEL_MAX_EXTRA_WEIGHTS 4

/*
 * `extra_weights: {PREFIX: FILE, ...}` adds safetensors files whose tensors
 * the graph names as PREFIX + their name in FILE (a sentence-transformers
 * Dense module's "linear.weight" in 2_Dense/model.safetensors is
 * "2_Dense/linear.weight").  `weights` finds a name in the file whose
 * prefix it starts with, else in the main file; it points into the model,
 * so a loaded model is not copied by value.
 */
typedef struct model {
    ir_graph graph;
    st_file file;             /* the safetensors file the YAML names */
    int file_open;
    weights main_weights;     /* the main file alone */
    st_file extra[MODEL_MAX_EXTRA_WEIGHTS];
    char *extra_prefix[MODEL_MAX_EXTRA_WEIGHTS];
    int nextra;
    weights weights;          /* all the files through the weights interface: what later stages use */
    char *yaml_text;          /* kept for diagnostics of later stages */
    size_t yaml_len;
} model;

int model_load(model *m, const char *yaml_path, diag *d);
/* Same, from text in memory; relative paths resolve against base_dir. */
int model_load_text(model *m, const char *name, const char *text, size_t len,
                    const char *base_dir, diag *d);
void model_free(model *m);

#endif
