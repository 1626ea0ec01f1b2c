/*
 * hf_tokenizer — Hugging Face tokenizer files to the description the plan
 * carries (runtime/common/tokdesc.h).
 *
 * Three sources, in the order `bertc import` prefers them:
 *
 *   tokenizer.json            what AutoTokenizer loads: normaliser,
 *                             pre-tokeniser, model (WordPiece, BPE,
 *                             Unigram), post-processor, added tokens;
 *   vocab.json + merges.txt   a byte-level BPE (RoBERTa) as transformers'
 *                             RobertaTokenizerFast builds it from them;
 *   vocab.txt                 WordPiece as BertTokenizerFast builds it
 *                             (MPNetTokenizerFast's specials and pair
 *                             template when the class is MPNet's).
 *
 * Over tokenizer.json, the settings of tokenizer_config.json that the
 * tokenizer class applies when transformers builds it (ir_tokenizer: the
 * BERT family's do_lower_case / strip_accents / tokenize_chinese_chars,
 * RoBERTa's add_prefix_space / trim_offsets, every class's ByteLevel
 * add_prefix_space) are applied the same way.  transformers also re-adds
 * the entries of tokenizer_config.json's added_tokens_decoder whose flags
 * differ from tokenizer.json's; bertc does not model that, so such a
 * directory is refused.  A component, option or class bertc does not run
 * is an error naming it and where it is.
 */
#ifndef BERTC_HF_TOKENIZER_H
#define BERTC_HF_TOKENIZER_H

#include "diag.h"
#include "ir.h"
#include "tokdesc.h"

/* The description of cfg's tokenizer (checked with tokdesc_check); out is initialised here. */
int hf_tokenizer_load(const ir_tokenizer *cfg, tokdesc *out, diag *d);

/* tokenizer.json's text alone (no class settings, no files beside it), for the fuzz targets. */
int hf_tokenizer_json_parse(const char *name, const char *text, size_t len, tokdesc *out, diag *d);

/* 1 if AutoTokenizer's class `name` is one bertc knows (see docs/tokenizer.md). */
int hf_tokenizer_class_known(const char *name);

/* 1 if `name` is MPNet's class: over vocab.txt it has its own specials and pair template. */
int hf_tokenizer_class_is_mpnet(const char *name);

#endif
