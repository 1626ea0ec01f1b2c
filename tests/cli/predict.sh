#!/bin/sh
# `bertc inspect PLAN --predict GPU` end to end (the model itself is
# tests/compiler/test_predict.c): well-formed JSON for one GPU and for all,
# each bucket's predicted_us the sum of its steps' and no less than a
# shorter bucket's, every GPU of the table present, the text view, the SVG
# timeline (well-formed XML, one bar per step of the bucket), and the usage
# errors: an unknown GPU (naming the known ones), a bucket the plan lacks,
# --svg without --predict, --svg for all GPUs, malformed constants.
. tests/cli/lib/common.sh
P="$BUILD/plans/tiny-bert-fp16.plan"

expect predict-json 0 "$B" inspect "$P" --predict a100 --json
cp "$T/out" "$T/a100.json"
expect predict-all 0 "$B" inspect "$P" --predict all --json
cp "$T/out" "$T/all.json"
if python3 - "$T/a100.json" "$T/all.json" <<'PY' >"$T/py" 2>&1
import json, sys
one = json.load(open(sys.argv[1]))
allp = json.load(open(sys.argv[2]))["predictions"]
assert [p["gpu"] for p in allp] == ["t4", "a10", "l4", "l40s", "a100", "h100", "h200", "b200"], [p["gpu"] for p in allp]
assert one == [p for p in allp if p["gpu"] == "a100"][0]
for p in allp:
    for key in ("part", "image", "spec", "constants", "buckets"):
        assert key in p, key
    prev = 0.0
    for b in p["buckets"]:
        total = sum(s["predicted_us"] for s in b["steps"])
        assert abs(total - b["predicted_us"]) <= 1e-3 * b["predicted_us"], (p["gpu"], b["seq_len"], total)
        assert b["predicted_us"] >= prev, (p["gpu"], b["seq_len"])
        prev = b["predicted_us"]
        for s in b["steps"]:
            assert s["bound"] in ("memory", "math") and s["unit"] in ("tensor", "warp_mma", "simt"), s
            assert s["waves"] >= 1 and s["ctas_per_sm"] >= 1 and 0 < s["occupancy"] <= 1, s
print("ok")
PY
then pass predict-json-consistent; else fail predict-json-consistent "$(tail -3 "$T/py")"; fi

# every GPU runs $P; a plan of the emulated device alone is run by none
if python3 -c 'import json, sys; assert json.load(open(sys.argv[1]))["not_served"] == []' "$T/all.json"; then
    pass predict-all-none-skipped
else
    fail predict-all-none-skipped "$(tail -c 200 "$T/all.json")"
fi
expect predict-all-emu-only 2 "$B" inspect "$BUILD/plans/tiny-bert-fp32.plan" --predict all
contains predict-all-emu-only-msg "$T/err" "no GPU of the model runs this plan"

expect predict-text 0 "$B" inspect "$P" --predict t4 --bucket 64
contains predict-text-bucket "$T/out" "bucket 64:"
contains predict-text-image "$T/out" "sm_75"

expect predict-svg 0 "$B" inspect "$P" --predict h100 --svg "$T/t.svg" --bucket 16 --json
if python3 - "$T/t.svg" "$T/out" <<'PY' >"$T/py" 2>&1
import json, sys
import xml.etree.ElementTree as ET
root = ET.parse(sys.argv[1]).getroot()
assert root.tag.endswith("svg"), root.tag
bars = [e for e in root.iter() if e.get("class") == "step"]
launches = [e for e in root.iter() if e.get("class") == "launch"]
steps = json.load(open(sys.argv[2]))["buckets"][0]["steps"]
assert len(bars) == len(steps) == len(launches), (len(bars), len(steps), len(launches))
texts = "".join(e.text or "" for e in root.iter())
assert "memory floor" in texts and "bucket 16" in texts, texts[:200]
print("ok")
PY
then pass predict-svg-xml; else fail predict-svg-xml "$(tail -3 "$T/py")"; fi

expect predict-unknown-gpu 1 "$B" inspect "$P" --predict v100
contains predict-unknown-gpu-msg "$T/err" "t4, a10, l4, l40s, a100, h100, h200, b200"
expect predict-bad-bucket 1 "$B" inspect "$P" --predict a100 --bucket 999
contains predict-bad-bucket-msg "$T/err" "8, 16, 64"
expect predict-svg-alone 1 "$B" inspect "$P" --svg "$T/x.svg"
absent predict-svg-alone-none "$T/x.svg"
expect predict-svg-all 1 "$B" inspect "$P" --predict all --svg "$T/y.svg"
absent predict-svg-all-none "$T/y.svg"
expect predict-bad-constants 1 "$B" inspect "$P" --predict a100 --model-constants efficiency=7
contains predict-bad-constants-msg "$T/err" "efficiency=7"

# Token buckets (tiny-bert-batch-fp16 carries sm_90 too): each modelled step
# by step like a length bucket, with its requests and tokens per second, and
# the throughput summary comparing each with the same requests alone.
PB="$BUILD/plans/tiny-bert-batch-fp16.plan"
expect predict-token-json 0 "$B" inspect "$PB" --predict h100 --json
if python3 - "$T/out" <<'PY' >"$T/py" 2>&1
import json, sys
p = json.load(open(sys.argv[1]))
tok = [b for b in p["buckets"] if b["max_seqs"]]
assert [b["seq_len"] for b in tok] == [64, 256] and all(b["max_seqs"] == 16 for b in tok), tok
for b in p["buckets"]:
    assert abs(b["tokens_per_s"] - b["seq_len"] * 1e6 / b["predicted_us"]) <= 1e-3 * b["tokens_per_s"], b
    n = b["max_seqs"] or 1
    assert abs(b["requests_per_s"] - n * 1e6 / b["predicted_us"]) <= 1e-3 * b["requests_per_s"], b
    assert abs(sum(s["predicted_us"] for s in b["steps"]) - b["predicted_us"]) <= 1e-3 * b["predicted_us"], b
PY
then pass predict-token-json-consistent; else fail predict-token-json-consistent "$(tail -3 "$T/py")"; fi
expect predict-token-text 0 "$B" inspect "$PB" --predict h100
contains predict-token-bucket "$T/out" "token bucket 256 tokens (up to 16 requests, packed):"
contains predict-token-throughput "$T/out" "(16 requests of 16 tokens); alone"
contains predict-token-padded "$T/out" "padded to the longest:"
