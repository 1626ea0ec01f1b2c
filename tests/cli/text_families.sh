#!/bin/sh
# Tokenizers beyond WordPiece end to end: a RoBERTa-style (tokenizer.json:
# byte-level BPE; and vocab.json + merges.txt) and an XLM-R-style directory
# (SentencePiece Unigram with its Precompiled map) are imported, compiled and
# asked through the command line; `bertc tokenize --json --offsets` must print
# AutoTokenizer's ids, types, offsets and sequence ids
# (tests/golden/tokenizer-cli.json, tools/make_tokenizer_families.py), and
# `bertc run --text` on the emulated device the same ids.  The directories
# are MiniLM's weights (30,522 embedding rows, room for the trained
# tokenizers' ids) with the trained tokenizers of tests/golden in place of
# its own: what is under test is the tokenizer's path through import, the
# plan and the runtime, not the model.
. tests/cli/lib/common.sh

M="$BUILD/hf/all-MiniLM-L6-v2"
G=tests/golden/tokenizer-cli.json
for tk in tok-roberta tok-roberta-files tok-xlmr; do
    d="$T/$tk"
    mkdir -p "$d"
    ln -s "$PWD/$M/model.safetensors" "$d/model.safetensors"
    cp "$M/config.json" "$d/config.json"
    cp tests/golden/$tk/* "$d/"
    expect "import-$tk" 0 "$B" import "$d" -o "$T/$tk.yaml"
    case $tk in
        tok-roberta-files) contains "yaml-$tk" "$T/$tk.yaml" "  vocab_json: " ;;
        *) contains "yaml-$tk" "$T/$tk.yaml" "  json: " ;;
    esac
    expect "compile-$tk" 0 "$B" compile "$T/$tk.yaml" -o "$T/$tk.plan" --arch emu --buckets 32 -j 1
    for k in 0 1 2 3; do
        text=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[sys.argv[2]][int(sys.argv[3])]; sys.stdout.write(c["text"])' "$G" "$tk" $k)
        pair=$(python3 -c 'import json,sys; c=json.load(open(sys.argv[1]))[sys.argv[2]][int(sys.argv[3])]; sys.stdout.write(c["pair"] or "")' "$G" "$tk" $k)
        if [ -n "$pair" ]; then set -- --text-pair "$pair"; else set --; fi
        expect "tokenize-$tk-$k" 0 "$B" tokenize "$T/$tk.plan" --text "$text" "$@" --json --offsets
        if python3 - "$G" "$tk" $k "$T/out" >"$T/cmp" 2>&1 <<'PY'
import json, sys
want = json.load(open(sys.argv[1]))[sys.argv[2]][int(sys.argv[3])]
got = json.load(open(sys.argv[4]))
for key in ("ids", "type_ids", "offsets", "sequence_ids"):
    assert got[key] == want[key], "%s: bertc %s, Hugging Face %s" % (key, got[key], want[key])
PY
        then pass "tokenize-$tk-$k-matches-autotokenizer"; else fail "tokenize-$tk-$k-matches-autotokenizer" "$(cat "$T/cmp")"; fi
    done
    # The model runs on what the tokenizer made: the ids of run --text are tokenize's.
    text=$(python3 -c 'import json,sys; sys.stdout.write(json.load(open(sys.argv[1]))[sys.argv[2]][0]["text"])' "$G" "$tk")
    expect "run-text-$tk" 0 "$B" run "$T/$tk.plan" --device emu --text "$text" --pooling mean --json
    if python3 -c 'import json,sys; g=json.load(open(sys.argv[1])); w=json.load(open(sys.argv[2]))[sys.argv[3]][0]; assert g["ids"]==w["ids"], (g["ids"], w["ids"]); assert len(g["embedding"])==384' "$T/out" "$G" "$tk" 2>"$T/cmp"; then
        pass "run-text-$tk-ids"
    else
        fail "run-text-$tk-ids" "$(cat "$T/cmp")"
    fi
done

# An unsupported component is an import error naming it.
d="$T/bad"
mkdir -p "$d"
ln -s "$PWD/$M/model.safetensors" "$d/model.safetensors"
cp "$M/config.json" "$d/config.json"
sed 's/"type":"Metaspace"/"type":"Punctuation"/; s/"type": "Metaspace"/"type": "Punctuation"/' tests/golden/tok-xlmr/tokenizer.json >"$d/tokenizer.json"
expect import-unsupported 2 "$B" import "$d" -o "$T/bad.yaml"
contains import-unsupported-msg "$T/err" "pre_tokenizer type 'Punctuation' is not supported"
absent import-unsupported-no-output "$T/bad.yaml"
