#!/bin/sh
# bench_tokenizer — tokenizer throughput of bertc against Hugging Face's
# fast tokenizers, on the same texts and machine (docs/performance.md).
#
#     sh tools/bench_tokenizer.sh [BUILD]      (make bench-tokenizer)
#
# Three tokenizers: all-MiniLM-L6-v2's WordPiece (its own plan), and the
# trained byte-level BPE (RoBERTa) and SentencePiece Unigram (XLM-R) of
# tests/golden, each in a plan compiled from MiniLM's weights with that
# tokenizer in place of its own (the weights play no part: only the
# tokenizer runs).  The texts are tests/golden/tokenizer-train.txt, 1,520
# multilingual lines of 285 KB.  bertc is measured through its public API
# (build/tools/bench_tokenizer: bertc_encode per text, bertc_encode_batch on
# 1 and N threads); Hugging Face with HF_PYTHON (a Python with tokenizers
# 0.21.1 and transformers 4.51.3; skipped when unset) through
# tools/bench_tokenizer_hf.py.  Prints one line per measurement.
set -eu
BUILD=${1:-build}
B=$BUILD/bertc
W=$BUILD/bench-tokenizer
TEXTS=tests/golden/tokenizer-train.txt
M=$BUILD/hf/all-MiniLM-L6-v2
mkdir -p "$W"
for tk in minilm tok-roberta tok-xlmr; do
    d=$W/$tk
    if [ "$tk" = minilm ]; then d=$M; else
        rm -rf "$d"
        mkdir -p "$d"
        ln -s "$PWD/$M/model.safetensors" "$d/model.safetensors"
        cp "$M/config.json" "$d/config.json"
        cp tests/golden/$tk/* "$d/"
    fi
    "$B" import "$d" -o "$W/$tk.yaml" >/dev/null
    "$B" compile "$W/$tk.yaml" -o "$W/$tk.plan" --arch emu --buckets 512 -j 1 >/dev/null 2>&1
    echo "== $tk"
    "$BUILD/tools/bench_tokenizer" "$W/$tk.plan" "$TEXTS"
    if [ -n "${HF_PYTHON:-}" ]; then "$HF_PYTHON" tools/bench_tokenizer_hf.py "$d" "$TEXTS"; fi
done
