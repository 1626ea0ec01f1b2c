#!/bin/sh
# Text in: `bertc tokenize` and `bertc run --text` on the MiniLM plans, the
# tokens against transformers' own tokenization of the golden sentences and
# the embeddings (cls, mean, pooler, L2-normalised) against transformers'
# outputs for them, both read by the independent tests/cli/npy_golden.py.
. tests/cli/lib/common.sh

G=tests/golden/all-MiniLM-L6-v2.bgld
PLAN="$BUILD/plans/all-MiniLM-L6-v2-fp32.plan"
# sentence_example, sentence_vector, sentence_pair, sentence_fox, sentence_unicode
for k in 0 1 2 3 4; do
    python3 tests/cli/npy_golden.py text "$G" $k >"$T/text$k"
    a=$(sed -n 1p "$T/text$k")
    b=$(sed -n 2p "$T/text$k")
    if [ -n "$b" ]; then set -- --text-pair "$b"; else set --; fi
    expect "tokenize-$k" 0 "$B" tokenize "$PLAN" --text "$a" "$@" --json
    cp "$T/out" "$T/tok$k.json"
    if python3 tests/cli/npy_golden.py tokens "$G" $k "$T/tok$k.json" >"$T/cmp" 2>&1; then pass "tokenize-$k-matches-transformers"; else fail "tokenize-$k-matches-transformers" "$(cat "$T/cmp")"; fi
done

# Embeddings of sentence_fox (3) and the pair (2), every pooling, on the emulated device.
for k in 3 2; do
    a=$(sed -n 1p "$T/text$k")
    b=$(sed -n 2p "$T/text$k")
    if [ -n "$b" ]; then set -- --text-pair "$b"; else set --; fi
    for mode in cls mean pooler; do
        for norm in 0 1; do
            n=""; [ $norm = 1 ] && n=--normalize
            expect "run-text-$k-$mode-$norm" 0 "$B" run "$PLAN" --device emu --text "$a" "$@" --pooling $mode $n --embedding-output "$T/e.npy"
            if python3 tests/cli/npy_golden.py embedding "$G" $k $mode $norm "$T/e.npy" 1e-4 >"$T/cmp" 2>&1; then
                pass "run-text-$k-$mode-$norm-matches-transformers"
            else
                fail "run-text-$k-$mode-$norm-matches-transformers" "$(cat "$T/cmp")"
            fi
        done
    done
done

# --json carries tokens, ids and the embedding.
a=$(sed -n 1p "$T/text3")
expect run-text-json 0 "$B" run "$PLAN" --device emu --text "$a" --pooling cls --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert d["tokens"][0]=="[CLS]" and len(d["embedding"])==384 and len(d["ids"])==len(d["tokens"])' "$T/out" 2>"$T/cmp"; then
    pass run-text-json-fields
else
    fail run-text-json-fields "$(cat "$T/cmp") $(head -c 200 "$T/out")"
fi

# Errors.
expect tokenize-bad-utf8 2 "$B" tokenize "$PLAN" --text "$(printf 'ab\377cd')"
contains tokenize-bad-utf8-msg "$T/err" "not valid UTF-8 at byte 2"
expect tokenize-no-vocab 2 "$B" tokenize "$BUILD/plans/tiny-bert-tanh-fp32.plan" --text "hello"
contains tokenize-no-vocab-msg "$T/err" "carries no tokenizer"
expect tokenize-no-text 1 "$B" tokenize "$PLAN"
expect run-text-with-ids 1 "$B" run "$PLAN" --text "a" --ids "1 2"
expect run-text-bad-pooling 1 "$B" run "$PLAN" --text "a" --pooling max
expect run-text-no-pooler 2 "$B" run "$BUILD/plans/tiny-bert-relu-fp32.plan" --device emu --text "hello" --pooling pooler
contains run-text-no-pooler-msg "$T/err" "no pooler_output"
expect run-text-pair-one-type 2 "$B" run "$BUILD/plans/tiny-bert-relu-fp32.plan" --device emu --text "hello" --text-pair "world"
contains run-text-pair-one-type-msg "$T/err" "is outside 0..0 (the model has one token type: it takes no text pairs)"
expect run-text-truncates 0 "$B" tokenize "$PLAN" --text "$(yes word | head -n 600 | tr '\n' ' ')" --json
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); assert len(d["ids"])==256 and d["truncated"] and d["tokens"][-1]=="[SEP]"' "$T/out" 2>"$T/cmp"; then
    pass run-text-truncates-to-256
else
    fail run-text-truncates-to-256 "$(cat "$T/cmp")"
fi
