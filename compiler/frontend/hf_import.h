/*
 * hf_import — a Hugging Face BERT checkpoint directory to a model YAML.
 *
 * Reads config.json, the header of model.safetensors (weights are never
 * copied: the YAML refers to the file by a path relative to the YAML) and,
 * when present, the tokenizer's files (tokenizer.json, else vocab.json +
 * merges.txt, else vocab.txt, with tokenizer_config.json: hf_tokenizer.h),
 * and writes the op-level graph in the canonical form of
 * docs/model-yaml.md.  Every config value the
 * graph depends on is checked; an unsupported one is an error naming the
 * field and the value.  Output is written to a temporary file and renamed,
 * so a failed import leaves nothing behind.  Same inputs, same bytes.
 */
#ifndef BERTC_HF_IMPORT_H
#define BERTC_HF_IMPORT_H

#include "diag.h"
#include "tokdesc.h"

int hf_import_run(const char *hf_dir, const char *out_yaml, diag *d);

/*
 * The tokenizer description `bertc import` + `bertc compile` make from a
 * directory's tokenizer files alone (tokenizer.json, vocab.json +
 * merges.txt, or vocab.txt, with tokenizer_config.json's settings), for
 * tests and tools.  out is initialised here; free it with tokdesc_free.
 */
int hf_import_tokenizer_desc(const char *hf_dir, tokdesc *out, diag *d);

#endif
