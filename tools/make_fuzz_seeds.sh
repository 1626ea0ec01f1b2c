#!/bin/sh
# make_fuzz_seeds — (re)write the committed seed corpora of tests/fuzz/.
#
#     sh tools/make_fuzz_seeds.sh [BUILD]
#
# Seeds are small valid inputs the fuzzers mutate from: the micro-bert
# fixture's JSON files, graph description, weights and vocabulary, plans
# of it shrunk by tests/fuzz/seed_plan.c (no images, one-line kernel
# sources) at both fusion levels and with token buckets too, and a few
# hand-picked edge cases.  Run by hand when an input
# format changes; the results are committed (all of them a few KiB).  The
# tokenizer.json seeds of fuzz_tokenizer and fuzz_json (a small byte-level
# BPE and a SentencePiece model) come from
# `tools/make_tokenizer_families.py --fuzz-seeds` (it needs tokenizers and
# sentencepiece, docs/testing.md).
set -eu
BUILD=${1:-build}
C=tests/fuzz/corpus
make -s "$BUILD/bertc" "$BUILD/tools/seed_plan" "$BUILD/hf/micro-bert/model.safetensors"
M="$BUILD/hf/micro-bert"
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT
mkdir -p $C/fuzz_json $C/fuzz_safetensors $C/fuzz_plan $C/fuzz_plan_sealed $C/fuzz_tokenizer $C/fuzz_yaml $C/fuzz_import
cp "$M/config.json" $C/fuzz_json/config.json
cp "$M/tokenizer_config.json" $C/fuzz_json/tokenizer_config.json
printf '{"a": [1, -2.5e3, true, null, "\\u00e9\\ud83d\\ude00"], "b": {}}' >$C/fuzz_json/edges.json
cp "$M/model.safetensors" $C/fuzz_safetensors/micro.safetensors
"$BUILD/bertc" import "$M" -o "$T/micro.yaml"
sed -e "s|^weights: .*|weights: model.safetensors|" -e "s|^  vocab: .*|  vocab: vocab.txt|" "$T/micro.yaml" >$C/fuzz_yaml/micro.yaml
"$BUILD/bertc" compile "$T/micro.yaml" -o "$T/micro.plan" --arch sm_80 --buckets 8,16 -j 1 2>/dev/null
"$BUILD/tools/seed_plan" "$T/micro.plan" $C/fuzz_plan/micro.plan
cp $C/fuzz_plan/micro.plan $C/fuzz_plan_sealed/micro.plan
# the baseline fusion level too: cuBLASLt steps and the LayerNorm kernels
# (the default plan carries GEMM_LN / GEMM_SPLITK, their workspace and counters)
"$BUILD/bertc" compile "$T/micro.yaml" -o "$T/micro-baseline.plan" --fusion baseline --arch sm_80 --buckets 8,16 -j 1 2>/dev/null
"$BUILD/tools/seed_plan" "$T/micro-baseline.plan" $C/fuzz_plan/micro-baseline.plan
cp $C/fuzz_plan/micro-baseline.plan $C/fuzz_plan_sealed/micro-baseline.plan
# token buckets (packed batches): the packed kernels, max_seqs, per_seq outputs
"$BUILD/bertc" compile "$T/micro.yaml" -o "$T/micro-batch.plan" --arch sm_80 --buckets 8,16 --batch-tokens 16,32 \
    --max-batch 4 -j 1 2>/dev/null
"$BUILD/tools/seed_plan" "$T/micro-batch.plan" $C/fuzz_plan/micro-batch.plan
cp $C/fuzz_plan/micro-batch.plan $C/fuzz_plan_sealed/micro-batch.plan
# step lists per compute capability (--tune all): the variants' ranges and their equal buckets
"$BUILD/bertc" compile "$T/micro.yaml" -o "$T/micro-tuned.plan" --arch sm_80,sm_90 --buckets 8,16 --tune all -j 1 2>/dev/null
"$BUILD/tools/seed_plan" "$T/micro-tuned.plan" $C/fuzz_plan/micro-tuned.plan
cp $C/fuzz_plan/micro-tuned.plan $C/fuzz_plan_sealed/micro-tuned.plan
printf '\000Hello, world! ##ing [CLS] cafe\314\201 \344\270\255\346\226\207\000a pair' >$C/fuzz_tokenizer/text.bin
printf '\001[PAD]\n[UNK]\n[CLS]\n[SEP]\nhello\n##lo\nworld\n\000hello world hellolo' >$C/fuzz_tokenizer/vocab.bin
{ cat "$M/config.json"; printf '\000'; cat "$M/tokenizer_config.json"; } >$C/fuzz_import/micro.bin
echo "make_fuzz_seeds: wrote $(find $C -type f | wc -l) seeds"
