#!/bin/sh
# Packed batches from the command line: `bertc run --ids-file/--text-file`
# (an input a line, as packed batches when the plan has token buckets, one
# by one when it has none or with --unpacked — the same .npy bytes either
# way on one plan, per-token outputs packed [total tokens, cols] in input
# order, per-request ones [n, cols]; a plan without token buckets may split
# its own GEMMs' K by the bucket and round differently, so the comparisons
# run the plan with token buckets both ways), its errors (a bad line names the file and the line; nothing is
# written), and `bertc bench --batch` (a seeded load: requests/s, tokens/s,
# percentiles; the same requests for the same seed).
. tests/cli/lib/common.sh

PB="$BUILD/plans/tiny-bert-batch-fp32.plan"
P1="$BUILD/plans/tiny-bert-fp32.plan"
MB="$BUILD/plans/all-MiniLM-L6-v2-batch-fp32.plan"
M1="$BUILD/plans/all-MiniLM-L6-v2-fp32.plan"

# ids: three requests (a blank line skipped), lengths 6, 3 and 11
printf '101 7 42 900 3 102\n\n101 200 102\r\n101 5 6 7 8 9 10 11 12 13 102\n' >"$T/ids.txt"
expect run-ids-file-batch 0 "$B" run "$PB" --device emu --ids-file "$T/ids.txt" --output "$T/b.npy" --pooled-output "$T/bp.npy"
contains run-ids-file-one-launch "$T/err" "3 inputs, 20 tokens in 1 launches (packed batches)"
expect run-ids-file-alone 0 "$B" run "$P1" --device emu --ids-file "$T/ids.txt" --output "$T/a.npy" --pooled-output "$T/ap.npy"
contains run-ids-file-no-token-buckets "$T/err" "in 3 launches (one request each: the plan has no token buckets"
expect run-ids-file-unpacked 0 "$B" run "$PB" --device emu --ids-file "$T/ids.txt" --unpacked --output "$T/a.npy" \
    --pooled-output "$T/ap.npy"
contains run-ids-file-unpacked-msg "$T/err" "in 3 launches (one request each: --unpacked)"
if cmp -s "$T/b.npy" "$T/a.npy" && cmp -s "$T/bp.npy" "$T/ap.npy"; then pass run-ids-file-same-bytes
else fail run-ids-file-same-bytes "packed and one-by-one outputs differ"; fi
if head -c 80 "$T/b.npy" | grep -q "'shape': (20, 96)" && head -c 80 "$T/bp.npy" | grep -q "'shape': (3, 96)"; then
    pass run-ids-file-shapes
else
    fail run-ids-file-shapes "$(head -c 80 "$T/b.npy" | tail -c 40) / $(head -c 80 "$T/bp.npy" | tail -c 40)"
fi
# each request's rows are its rows alone (bertc run --ids of the second line)
expect run-ids-second-alone 0 "$B" run "$PB" --device emu --ids "101 200 102" --output "$T/second.npy"
if python3 - "$T/b.npy" "$T/second.npy" <<'EOF'; then pass run-ids-file-rows; else fail run-ids-file-rows "rows 6..8 differ"; fi
import sys
def body(p):
    b = open(p, "rb").read()
    return b[10 + int.from_bytes(b[8:10], "little"):]
packed, alone = body(sys.argv[1]), body(sys.argv[2])
sys.exit(0 if packed[6 * 96 * 4:9 * 96 * 4] == alone else 1)
EOF
expect run-ids-file-summary 0 "$B" run "$PB" --device emu --ids-file "$T/ids.txt"
contains run-ids-file-summary-rows "$T/out" "input 3: 11 tokens, rows 9..19"
contains run-ids-file-summary-shape "$T/out" "last_hidden_state [20, 96]"

# a bad line: its file and line, exit 2, no output written
printf '101 7 102\n101 x 102\n' >"$T/bad.txt"
expect run-ids-file-bad-line 2 "$B" run "$PB" --device emu --ids-file "$T/bad.txt" --output "$T/bad.npy"
contains run-ids-file-bad-line-msg "$T/err" "bad.txt line 2"
absent run-ids-file-bad-no-output "$T/bad.npy"
printf '101 7 102\n101 2000 102\n' >"$T/vocab.txt"
expect run-ids-file-bad-id 2 "$B" run "$PB" --device emu --ids-file "$T/vocab.txt"
contains run-ids-file-bad-id-msg "$T/err" "inputs 1..2 (one packed batch; its request i is input 1 + i): request 1: input_ids[1] = 2000"
expect run-batch-bad-option 1 "$B" run "$PB" --device emu --ids-file "$T/ids.txt" --types "0 0"
contains run-batch-bad-option-msg "$T/err" "does not combine with --ids-file/--text-file lines"
expect run-text-file-max-len 1 "$B" run "$PB" --device emu --ids-file "$T/ids.txt" --max-len 4
contains run-text-file-max-len-msg "$T/err" "--max-len needs --text-file"

# text: MiniLM, packed and alone, the sentence embeddings per input
printf 'Hello world\nThe quick brown fox jumps over the lazy dog.\n\nA\n' >"$T/texts.txt"
expect run-text-file-batch 0 "$B" run "$MB" --device emu --text-file "$T/texts.txt" --output "$T/tb.npy"
expect run-text-file-alone 0 "$B" run "$MB" --device emu --text-file "$T/texts.txt" --unpacked --output "$T/ta.npy"
expect run-text-file-no-token-buckets 0 "$B" run "$M1" --device emu --text-file "$T/texts.txt" --output "$T/t1.npy"
contains run-text-file-no-token-buckets-msg "$T/err" "(one request each: the plan has no token buckets)"
if cmp -s "$T/tb.npy" "$T/ta.npy"; then pass run-text-file-same-bytes; else fail run-text-file-same-bytes "differ"; fi
expect run-text-file-summary 0 "$B" run "$MB" --device emu --text-file "$T/texts.txt"
contains run-text-file-embeddings "$T/out" "sentence_embedding [3, 384]"

# bench --batch: the report, the same requests for the same seed
expect bench-batch 0 "$B" bench "$PB" --device emu --batch 6 --lengths uniform:1-64 --concurrency 2 --iters 2 --seed 7
contains bench-batch-rps "$T/out" "requests/s"
contains bench-batch-tokens "$T/out" "(24 requests,"
contains bench-batch-pct "$T/out" "latency per request (ms): p50"
contains bench-batch-packed "$T/out" "(packed batches)"
tok1=$(sed -n 's/.*requests, \([0-9]*\) tokens.*/\1/p' "$T/out")
expect bench-batch-unpacked 0 "$B" bench "$PB" --device emu --batch 6 --lengths uniform:1-64 --concurrency 2 --iters 2 --seed 7 --unpacked
tok2=$(sed -n 's/.*requests, \([0-9]*\) tokens.*/\1/p' "$T/out")
contains bench-batch-unpacked-mode "$T/out" "one request per launch"
if [ -n "$tok1" ] && [ "$tok1" = "$tok2" ]; then pass bench-batch-seeded; else fail bench-batch-seeded "$tok1 vs $tok2 tokens"; fi
expect bench-batch-bad-dist 1 "$B" bench "$PB" --device emu --batch 4 --lengths uniform:1-65
contains bench-batch-bad-dist-msg "$T/err" "lengths in 1..64"
expect bench-batch-lengths-alone 1 "$B" bench "$PB" --device emu --lengths fixed:8
contains bench-batch-lengths-alone-msg "$T/err" "go with --batch"

# A text is truncated to the plan's longest length bucket, whatever its
# token buckets (which come after the length buckets in the plan): a plan
# of length bucket 16 and token bucket 256, of a model that takes 64
# tokens, truncates a long text to 16 — by the line or alone (it once
# took the last token bucket's length, and refused every long text).
# Four requests of 16 tokens fill 64, so of the default token buckets only
# the first, 256, is ever chosen: the others are left out, and said to be;
# listed, one no batch reaches is an error.
expect compile-short-buckets 0 "$B" compile "$BUILD/plans/tiny-bert.yaml" -o "$T/short.plan" --arch emu \
    --precision fp32 --buckets 16 --batch-tokens default --max-batch 4
contains compile-default-tokens-left-out "$T/err" \
    "of them 1 token bucket (packed batches of up to 4 requests); the larger defaults are left out: no batch reaches them"
expect compile-token-bucket-unreached 1 "$B" compile "$BUILD/plans/tiny-bert.yaml" -o "$T/never.plan" --arch emu \
    --buckets 16 --batch-tokens 32,64,128 --max-batch 2
contains compile-token-bucket-unreached-msg "$T/err" "--batch-tokens: 64 is never used: a batch holds at most 2 \
requests (--max-batch) of at most 16 tokens (the longest bucket), 32 in all, which 32 already takes"
absent compile-token-bucket-unreached-no-plan "$T/never.plan"
long=$(python3 -c "print('hello world ' * 100)")
expect tokenize-longest-length-bucket 0 "$B" tokenize "$T/short.plan" --text "$long" --json
n=$(python3 -c "import json, sys; print(len(json.load(open(sys.argv[1]))['ids']))" "$T/out")
if [ "$n" = 16 ]; then pass tokenize-longest-length-bucket-ids; else fail tokenize-longest-length-bucket-ids "$n ids, not 16"; fi
expect run-text-longest-length-bucket 0 "$B" run "$T/short.plan" --device emu --text "$long"
printf '%s\nhi\n' "$long" >"$T/long.txt"
expect run-text-file-longest-length-bucket 0 "$B" run "$T/short.plan" --device emu --text-file "$T/long.txt"
contains run-text-file-longest-length-bucket-rows "$T/out" "input 1: 16 tokens"
