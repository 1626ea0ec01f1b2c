#!/bin/sh
# The bertc command line: help, exit statuses, messages, atomic outputs, and
# `run` end to end (ids from the command line -> .npy) compared with the
# transformers goldens by an independent reader (tests/cli/npy_golden.py).
. tests/cli/lib/common.sh

expect help 0 "$B" --help
contains help-usage "$T/out" "usage: bertc COMMAND"
expect version 0 "$B" --version
contains version-text "$T/out" "bertc "
expect no-args 1 "$B"
expect unknown-command 1 "$B" frobnicate
contains unknown-command-msg "$T/err" "unknown command 'frobnicate'"
expect import-help 0 "$B" import --help
expect run-help 0 "$B" run --help
expect import-missing-o 1 "$B" import "$BUILD/hf/tiny-bert"
expect import-bad-option 1 "$B" import "$BUILD/hf/tiny-bert" -o "$T/x.yaml" --frob
expect import-no-dir 2 "$B" import "$T/nonexistent" -o "$T/none.yaml"
absent import-no-dir-no-output "$T/none.yaml"

# A broken config leaves no YAML behind.
mkdir -p "$T/bad"
cp "$BUILD/hf/tiny-bert/model.safetensors" "$T/bad/"
sed 's/"bert"/"gpt2"/' "$BUILD/hf/tiny-bert/config.json" >"$T/bad/config.json"
expect import-gpt2 2 "$B" import "$T/bad" -o "$T/bad.yaml"
contains import-gpt2-msg "$T/err" "model_type 'gpt2' is not supported"
absent import-gpt2-no-output "$T/bad.yaml"

expect import-tiny 0 "$B" import "$BUILD/hf/tiny-bert" -o "$T/tiny.yaml"
expect import-relu 0 "$B" import "$BUILD/hf/tiny-bert-relu" -o "$T/relu.yaml"

# run: golden case 0 of tiny-bert through the CLI, compared by a separate reader.
ids=$(python3 tests/cli/npy_golden.py ids tests/golden/tiny-bert.bgld 1)
types=$(python3 tests/cli/npy_golden.py types tests/golden/tiny-bert.bgld 1)
mask=$(python3 tests/cli/npy_golden.py mask tests/golden/tiny-bert.bgld 1)
set -- --ids "$ids"
[ -n "$types" ] && set -- "$@" --types "$types"
[ -n "$mask" ] && set -- "$@" --mask "$mask"
expect run-npy 0 "$B" run "$T/tiny.yaml" --device ref "$@" --output "$T/last.npy" --pooled-output "$T/pool.npy"
if python3 tests/cli/npy_golden.py compare tests/golden/tiny-bert.bgld 1 "$T/last.npy" "$T/pool.npy" >"$T/cmp" 2>&1; then
    pass run-npy-matches-golden
else
    fail run-npy-matches-golden "$(cat "$T/cmp")"
fi
echo "$ids" | tr ' ' '\n' >"$T/ids.txt"
if [ -z "$types$mask" ]; then
    expect run-ids-file 0 "$B" run "$T/tiny.yaml" --ids-file "$T/ids.txt" --output "$T/last2.npy"
    if cmp -s "$T/last.npy" "$T/last2.npy"; then pass run-ids-file-same; else fail run-ids-file-same "outputs differ"; fi
fi
expect run-summary 0 "$B" run "$T/tiny.yaml" --ids "101 5 102"
contains run-summary-text "$T/out" "last_hidden_state [3, 96]"

expect run-bad-id-text 2 "$B" run "$T/tiny.yaml" --ids "101 x7 102"
contains run-bad-id-text-msg "$T/err" "item 2 ('x7')"
expect run-id-range 2 "$B" run "$T/tiny.yaml" --ids "101 99999 102" --output "$T/r.npy"
contains run-id-range-msg "$T/err" "99999"
absent run-id-range-no-output "$T/r.npy"
expect run-types-count 2 "$B" run "$T/tiny.yaml" --ids "1 2 3" --types "0 1"
contains run-types-count-msg "$T/err" "--types has 2 values"
expect run-too-long 2 "$B" run "$T/tiny.yaml" --ids "$(seq -s ' ' 1 65)"
expect run-empty 2 "$B" run "$T/tiny.yaml" --ids " "
expect run-no-ids 1 "$B" run "$T/tiny.yaml"
expect run-unknown-device 1 "$B" run "$T/tiny.yaml" --device tpu --ids "1 2"
contains run-unknown-device-msg "$T/err" "expected cuda, emu or ref"
expect run-no-pooler 2 "$B" run "$T/relu.yaml" --ids "1 2" --pooled-output "$T/p.npy"
absent run-no-pooler-no-output "$T/p.npy"
expect run-bad-outdir 2 "$B" run "$T/tiny.yaml" --ids "1 2" --output "$T/no/such/dir/x.npy"
printf 'bertc: 1\nname: [x\n' >"$T/broken.yaml"
expect run-broken-yaml 2 "$B" run "$T/broken.yaml" --ids "1 2"
contains run-broken-yaml-pos "$T/err" "broken.yaml:3:1: YAML syntax error"
# a plan that is not there, a folder, a YAML where a plan is needed: each says which
for form in ids text text-file; do
    case $form in ids) set -- --ids 1 ;; text) set -- --text hi ;; text-file) set -- --text-file "$T/tiny.yaml" ;; esac
    expect "run-missing-plan-$form" 2 "$B" run "$T/no-such.plan" --device emu "$@"
    contains "run-missing-plan-$form-msg" "$T/err" "no-such.plan: cannot open: No such file or directory"
    expect "run-folder-plan-$form" 2 "$B" run "$T" --device emu "$@"
    contains "run-folder-plan-$form-msg" "$T/err" ": not a regular file"
    expect "run-yaml-not-plan-$form" 2 "$B" run "$T/tiny.yaml" --device emu "$@"
    contains "run-yaml-not-plan-$form-msg" "$T/err" "tiny.yaml is not a compiled plan ("
done
