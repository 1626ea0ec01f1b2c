#!/bin/sh
# bertc export-triton (docs/serving.md): the repository it writes, the
# configuration derived from the plan (never a fixed list of inputs and
# outputs), and its refusals, which leave nothing behind.  Serving the
# result in the real tritonserver is tests/cli/triton.sh.
. tests/cli/lib/common.sh
P=$BUILD/plans
R=$T/repo

expect export-emu 0 "$B" export-triton "$P/all-MiniLM-L6-v2-fp32.plan" "$R" --device emu --name minilm --instances 3
for f in config.pbtxt 1/model.plan 1/libtriton_bertc.so 1/libbertc_emudev.so; do
    if [ -s "$R/minilm/$f" ]; then pass "export-file-$f"; else fail "export-file-$f" "$R/minilm/$f missing or empty"; fi
done
if cmp -s "$P/all-MiniLM-L6-v2-fp32.plan" "$R/minilm/1/model.plan" && cmp -s "$BUILD/libtriton_bertc.so" "$R/minilm/1/libtriton_bertc.so"; then
    pass export-copies
else
    fail export-copies "the plan or the backend in the version folder differs from the original"
fi
C=$R/minilm/config.pbtxt
sha=$(sha256sum "$P/all-MiniLM-L6-v2-fp32.plan" | cut -d' ' -f1)
contains export-name "$C" 'name: "minilm"'
contains export-backend "$C" 'backend: "bertc"'
contains export-max-batch "$C" 'max_batch_size: 8'
contains export-text "$C" '{ name: "TEXT" data_type: TYPE_STRING dims: [ 1 ] optional: true }'
contains export-ids "$C" '{ name: "INPUT_IDS" data_type: TYPE_INT64 dims: [ -1 ] optional: true allow_ragged_batch: true }'
contains export-types "$C" 'TOKEN_TYPE_IDS'
contains export-per-token "$C" '{ name: "last_hidden_state" data_type: TYPE_FP32 dims: [ -1, 384 ] }'
contains export-pooled "$C" '{ name: "sentence_embedding" data_type: TYPE_FP32 dims: [ 384 ] }'
contains export-batching "$C" 'dynamic_batching {'
contains export-no-preferred "$C" 'this plan has none (sequence-length buckets only)'
contains export-instances "$C" '{ count: 3 kind: KIND_CPU }'
contains export-device "$C" 'parameters { key: "device" value: { string_value: "emu" } }'
contains export-pin "$C" "parameters { key: \"sha256\" value: { string_value: \"$sha\" } }"
if ls -a "$R" | grep -q tmp; then fail export-no-temp "a temporary folder is left in $R"; else pass export-no-temp; fi

# Token buckets (64 and 256 tokens, up to 16 requests): max_batch_size the
# plan's largest packed batch, one preferred size per bucket — the requests
# of --mean-len tokens (default half the longest bucket, 32) that fill it.
expect export-packed 0 "$B" export-triton "$P/tiny-bert-batch-fp32.plan" "$R" --device emu --name packed
contains export-packed-max "$R/packed/config.pbtxt" 'max_batch_size: 16'
contains export-packed-preferred "$R/packed/config.pbtxt" 'preferred_batch_size: [ 2, 8 ]'
contains export-packed-why "$R/packed/config.pbtxt" 'the requests of 32 tokens (--mean-len) that fill one'
expect export-packed-mean 0 "$B" export-triton "$P/tiny-bert-batch-fp32.plan" "$R" --device emu --name packed2 --mean-len 10 --max-batch 12
contains export-packed-mean-sizes "$R/packed2/config.pbtxt" 'preferred_batch_size: [ 6, 12 ]'
expect export-packed-bad-mean 1 "$B" export-triton "$P/tiny-bert-batch-fp32.plan" "$R" --device emu --name packed3 --mean-len 0
contains export-packed-bad-mean-msg "$T/err" "--mean-len: '0' is not a positive length"
expect export-packed-long-mean 1 "$B" export-triton "$P/tiny-bert-batch-fp32.plan" "$R" --device emu --name packed4 --mean-len 65
contains export-packed-long-mean-msg "$T/err" "--mean-len: 65 is longer than the plan's longest request (64 tokens)"
absent export-packed-long-mean-none "$R/packed4"

# The configuration follows the plan: no tokenizer -> no text inputs; outputs
# as the plan has them; no batching -> no batch dimension, no batcher.
expect export-tanh 0 "$B" export-triton "$P/tiny-bert-tanh-fp32.plan" "$R" --device emu --max-batch 0 --ids-type int32
C=$R/tiny-bert-tanh/config.pbtxt
if grep -q 'name: "TEXT' "$C"; then fail export-no-text "TEXT declared for a plan without a tokenizer"; else pass export-no-text; fi
if grep -q -e dynamic_batching -e allow_ragged_batch "$C"; then fail export-unbatched "$(cat "$C")"; else pass export-unbatched; fi
contains export-unbatched-max "$C" 'max_batch_size: 0'
contains export-int32 "$C" '{ name: "INPUT_IDS" data_type: TYPE_INT32 dims: [ -1 ] optional: true }'
contains export-tanh-pooler "$C" '{ name: "pooler_output" data_type: TYPE_FP32 dims: [ 80 ] }'
if grep -q sentence_embedding "$C"; then fail export-outputs "an output the plan lacks"; else pass export-outputs; fi

# A GPU export: KIND_GPU instances; the plan must carry a GPU image.
expect export-gpu 0 "$B" export-triton "$P/tiny-bert-fp16.plan" "$R" --name tiny_gpu --instances 2
contains export-gpu-kind "$R/tiny_gpu/config.pbtxt" '{ count: 2 kind: KIND_GPU }'
contains export-gpu-device "$R/tiny_gpu/config.pbtxt" 'string_value: "cuda"'

# Refusals: each names the problem, and writes nothing.
expect export-no-gpu-image 2 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --name nogpu
contains export-no-gpu-image-msg "$T/err" "has no kernel image for a GPU (it has: emu); compile it with --arch"
absent export-no-gpu-image-nothing "$R/nogpu"
expect export-exists 2 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --name minilm --device emu
contains export-exists-msg "$T/err" "minilm exists; remove it first"
expect export-bad-name 1 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --name "../x" --device emu
expect export-bad-device 1 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --device gpu
expect export-bad-batch 1 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --max-batch -1
expect export-bad-instances 1 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --instances 0
expect export-missing-repo 1 "$B" export-triton "$P/tiny-bert-fp32.plan"
expect export-bad-plan 2 "$B" export-triton "$T/err" "$R" --name junk --device emu
absent export-bad-plan-nothing "$R/junk"
expect export-no-backend 2 "$B" export-triton "$P/tiny-bert-fp32.plan" "$R" --name nb --device emu --backend "$T/none.so"
contains export-no-backend-msg "$T/err" "none.so"
absent export-no-backend-nothing "$R/nb"
mkdir "$T/ro" && chmod 555 "$T/ro"
if [ "$(id -u)" -ne 0 ]; then
    expect export-read-only 2 "$B" export-triton "$P/tiny-bert-fp32.plan" "$T/ro" --device emu
fi
if ls -a "$R" | grep -q tmp; then fail export-refusals-no-temp "a temporary folder is left in $R"; else pass export-refusals-no-temp; fi
expect export-help 0 "$B" export-triton --help
contains export-help-text "$T/out" "usage: bertc export-triton PLAN REPO"
