#!/bin/sh
# Task heads through the CLI: `bertc run --output` writes a head's logits
# (the plan's first output), `--text A --text-pair B` prints a
# cross-encoder's score and a classifier's labels by name, --json carries
# labels and logits; all against the goldens of tools/make_family_goldens.py,
# read by the independent tests/cli/npy_golden.py.
. tests/cli/lib/common.sh

P="$BUILD/plans"
# RoBERTa sequence classification, ids in: --output is the logits [3]
G=tests/golden/tiny-roberta.bgld
for k in 2 5; do
    ids=$(python3 tests/cli/npy_golden.py ids "$G" $k)
    types=$(python3 tests/cli/npy_golden.py types "$G" $k)
    mask=$(python3 tests/cli/npy_golden.py mask "$G" $k)
    expect "roberta-logits-$k" 0 "$B" run "$P/tiny-roberta-fp32.plan" --device emu --ids "$ids" --types "$types" \
        --mask "$mask" --output "$T/l.npy"
    if python3 tests/cli/npy_golden.py logits "$G" $k "$T/l.npy" 1e-4 >"$T/cmp" 2>&1; then
        pass "roberta-logits-$k-match-transformers"
    else
        fail "roberta-logits-$k-match-transformers" "$(cat "$T/cmp")"
    fi
done
# the summary names them with the shape, first
expect roberta-summary 0 "$B" run "$P/tiny-roberta-fp32.plan" --device emu --ids "0 7 1 2"
if head -n 1 "$T/out" | grep -qF 'logits [3]'; then pass roberta-summary-logits-first; else fail roberta-summary-logits-first "$(head -n 2 "$T/out")"; fi
# token classification: [len, 5] from the YAML's reference executor too
expect xlmr-token-logits 0 "$B" run "$P/tiny-xlmr-tokcls.yaml" --ids "0 9 33 2" --output "$T/t.npy"
if python3 -c 'import sys; sys.path.insert(0, "tests/cli"); import npy_golden as g; s, v = g.read_npy(sys.argv[1]); assert tuple(s) == (4, 5), s' "$T/t.npy" 2>"$T/cmp"; then
    pass xlmr-token-logits-shape
else
    fail xlmr-token-logits-shape "$(cat "$T/cmp")"
fi

# A cross-encoder: text pairs in, one score out, as transformers scores the pair.
G=tests/golden/tiny-cross-encoder.bgld
for k in 6 7; do
    python3 tests/cli/npy_golden.py text "$G" $k >"$T/text"
    a=$(sed -n 1p "$T/text")
    b=$(sed -n 2p "$T/text")
    expect "cross-encoder-pair-$k" 0 "$B" run "$P/tiny-cross-encoder-fp32.plan" --device emu --text "$a" --text-pair "$b" --json
    cp "$T/out" "$T/pair.json"
    if python3 tests/cli/npy_golden.py tokens "$G" $k "$T/pair.json" >"$T/cmp" 2>&1 &&
        python3 tests/cli/npy_golden.py logits "$G" $k "$T/pair.json" 1e-4 >>"$T/cmp" 2>&1; then
        pass "cross-encoder-pair-$k-matches-transformers"
    else
        fail "cross-encoder-pair-$k-matches-transformers" "$(cat "$T/cmp")"
    fi
    expect "cross-encoder-score-$k" 0 "$B" run "$P/tiny-cross-encoder-fp32.plan" --device emu --text "$a" --text-pair "$b"
    contains "cross-encoder-score-$k-line" "$T/out" "score LABEL_0: "
done

# Text through each family's own tokenizer, against transformers' ids and
# outputs (the goldens' text cases, tools/make_family_goldens.py): RoBERTa's
# byte-level BPE from vocab.json + merges.txt, XLM-R's Unigram from
# tokenizer.json (a score per token and label), MPNet's WordPiece from
# vocab.txt with its pair template <s> A </s></s> B </s> (the
# sentence-transformers embedding of its Dense head).
for spec in tiny-roberta:7 tiny-roberta:8 tiny-xlmr-tokcls:7 tiny-xlmr-tokcls:8 tiny-mpnet:7 tiny-mpnet:8; do
    m=${spec%:*}
    k=${spec#*:}
    G=tests/golden/$m.bgld
    python3 tests/cli/npy_golden.py text "$G" "$k" >"$T/text"
    a=$(sed -n 1p "$T/text")
    b=$(sed -n 2p "$T/text")
    if [ -n "$b" ]; then
        expect "text-$m-$k" 0 "$B" run "$P/$m-fp32.plan" --device emu --text "$a" --text-pair "$b" --json
    else
        expect "text-$m-$k" 0 "$B" run "$P/$m-fp32.plan" --device emu --text "$a" --json
    fi
    cp "$T/out" "$T/text.json"
    what=logits
    [ "$m" = tiny-mpnet ] && what=sentence
    if python3 tests/cli/npy_golden.py tokens "$G" "$k" "$T/text.json" >"$T/cmp" 2>&1 &&
        python3 tests/cli/npy_golden.py $what "$G" "$k" "$T/text.json" 1e-4 >>"$T/cmp" 2>&1; then
        pass "text-$m-$k-matches-transformers"
    else
        fail "text-$m-$k-matches-transformers" "$(cat "$T/cmp")"
    fi
done

# DistilBERT: both labels by name, the best one marked
expect distilbert-labels 0 "$B" run "$P/tiny-distilbert-fp16.plan" --device emu --text "the quick brown fox"
if grep -q '^\* LABEL_[01]: ' "$T/out" && grep -q '^  LABEL_[01]: ' "$T/out"; then pass distilbert-labels-lines; else fail distilbert-labels-lines "$(cat "$T/out")"; fi
expect distilbert-labels-json 0 "$B" run "$P/tiny-distilbert-fp16.plan" --device emu --text "the quick brown fox" --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["labels"]==["LABEL_0","LABEL_1"] and len(d["logits"])==2' "$T/out" 2>"$T/cmp"; then
    pass distilbert-labels-json-fields
else
    fail distilbert-labels-json-fields "$(cat "$T/cmp") $(head -c 200 "$T/out")"
fi
# asking for an embedding still gives one
expect distilbert-embedding 0 "$B" run "$P/tiny-distilbert-fp16.plan" --device emu --text "the quick brown fox" --pooling cls
contains distilbert-embedding-line "$T/out" "embedding (cls) [80]"
