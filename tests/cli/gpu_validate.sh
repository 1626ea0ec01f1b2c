#!/bin/sh
# tools/gpu_validate.sh on the emulated device (--device emu: a tiny model,
# the same commands as on a GPU), so the script a rare GPU machine runs
# cannot rot between GPUs: it succeeds, hands back exactly its three files,
# and its summary has every table filled (latency, model against
# measurement, per kernel family, compile times, checks); then
# tools/gpu_summary.py alone: a PyTorch timing appears in its column, a
# command gpu_validate.sh saw fail is read as missing, a malformed output
# is an error naming its file; and the script's usage errors.
. tests/cli/lib/common.sh
export BUILD
S="sh tools/gpu_validate.sh --device emu --no-build --work $T/w --out $T/o --hf $T/hf"

# shellcheck disable=SC2086
expect dry-run 0 $S
cp "$T/out" "$T/log"
if [ "$(ls "$T/o" | tr '\n' ' ')" = "log.txt raw.tar.gz summary.md " ]; then pass dry-run-files
else fail dry-run-files "$(ls "$T/o" | tr '\n' ' ')"; fi
contains dry-run-log-ok "$T/o/log.txt" "every command succeeded"
if tar -tzf "$T/o/raw.tar.gz" | grep -q 'steps-tiny-baseline.json.out'; then pass dry-run-raw
else fail dry-run-raw "no steps JSON in raw.tar.gz"; fi
if python3 - "$T/o/summary.md" <<'PY' >"$T/py" 2>&1
import re, sys
text = open(sys.argv[1]).read()
lat = [l for l in text.splitlines() if re.match(r"\| tiny \| (32|64) \| [0-9]", l)]
assert len(lat) == 2, lat
for l in lat:
    cells = [c.strip() for c in l.strip("|").split("|")]
    # default, baseline, ratio, --tune none, no PDL, host: measured; PyTorch: not run here
    assert all(re.match(r"^[0-9.]+$", c) for c in cells[2:8]), cells
    assert cells[8] == "-" and cells[9] == "-", cells
model = [l for l in text.splitlines() if re.match(r"\| tiny \| (32|64) \| (default|baseline|none) \| [0-9]+ \|", l)]
assert len(model) == 6, model
fams = {l.split("|")[4].strip() for l in text.splitlines() if re.match(r"\| tiny \| \d+ \| (default|baseline) \| [a-zA-Z_]+ \|", l)}
assert {"gemm_ln", "gemm_splitk", "attention", "embed_ln", "cublasLt", "add_ln"} <= fams, fams
assert "for h100" in text and "emulated device" in text
for plan in ("default", "baseline", "none", "fp32", "batch"):
    assert re.search(r"\| tiny \| %s \| [0-9.]+ \| \d+ kernels, \d+ texts \| \d+ of \d+ \|" % plan, text), plan
assert "check-tiny-default: every step keeps to its launch contract" in text
assert "batch-tiny (packed batches): requests/s" in text
assert "commands that failed: none" in text
print("ok")
PY
then pass dry-run-summary; else fail dry-run-summary "$(tail -3 "$T/py")"; fi

# The summary alone: a PyTorch timing, a failed command, malformed outputs.
printf '%8s %10s %10s %10s %10s\n%8d %10.1f %10.1f %10.1f %10.1f\n' len p50 p90 p99 jitter 32 50000.0 51000.0 52000.0 2000.0 >"$T/w/torch-tiny.out"
echo bench-tiny-none >"$T/w/failed.txt"
echo "Segmentation fault" >"$T/w/bench-tiny-none.out"
expect summary-torch 0 python3 tools/gpu_summary.py "$T/w"
if grep -E '^\| tiny \| 32 \|' "$T/out" | head -n 1 | grep -qE '\| - \| [0-9.]+ \| [0-9.]+ \| 50000\.0 \| [0-9.]+ \|$'; then pass summary-torch-cells
else fail summary-torch-cells "$(grep -E '^\| tiny \| 32 \|' "$T/out" | head -n 1)"; fi
contains summary-failed-listed "$T/out" "commands that failed: bench-tiny-none"
echo '{"lengths": [' >"$T/w/steps-tiny-default.json.out"
expect summary-bad-json 1 python3 tools/gpu_summary.py "$T/w"
contains summary-bad-json-names "$T/err" "steps-tiny-default.json.out: not the JSON of bertc bench --per-step --json"
cp "$T/w/bench-tiny-baseline.out" "$T/bench.out"
echo "len dev" >"$T/w/bench-tiny-baseline.out"
rm "$T/w/steps-tiny-default.json.out"
expect summary-bad-bench 1 python3 tools/gpu_summary.py "$T/w"
contains summary-bad-bench-names "$T/err" "bench-tiny-baseline.out: no latency rows"
cp "$T/bench.out" "$T/w/bench-tiny-baseline.out"
echo "Segmentation fault" >"$T/w/compile-tiny-none.err"
expect summary-bad-compile 1 python3 tools/gpu_summary.py "$T/w"
contains summary-bad-compile-names "$T/err" "compile-tiny-none.err: no 'wrote PLAN"
expect summary-not-work 1 python3 tools/gpu_summary.py "$T/o"
contains summary-not-work-msg "$T/err" "not a gpu_validate.sh work folder"

expect usage-device 2 sh tools/gpu_validate.sh --device tpu
contains usage-device-msg "$T/err" "--device must be cuda or emu, not 'tpu'"
expect usage-model 2 sh tools/gpu_validate.sh --device emu --models tiny,huge
contains usage-model-msg "$T/err" "unknown model 'huge'"
expect usage-full-emu 2 sh tools/gpu_validate.sh --device emu --full
expect usage-arg 2 sh tools/gpu_validate.sh --fast
expect usage-value 2 sh tools/gpu_validate.sh --out
