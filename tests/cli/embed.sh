#!/bin/sh
# The embedding example of docs/runtime.md, built the way a user builds it:
# `make install` into a scratch prefix, then `cc ... $(pkg-config --cflags
# --libs bertc)`, against the shared and then the static library; it runs on
# the emulated device and must print the numbers `bertc run` prints for the
# same plan and ids.  Also `bertc run` / `bertc bench` on a plan.
. tests/cli/lib/common.sh

PLAN="$BUILD/plans/tiny-bert-fp32.plan"
# bertc and libbertc.so must find the emulated device beside themselves.
unset BERTC_EMU_DEVICE
IDS="101 7 42 900 3 102"
P="$T/prefix"
if make -s install PREFIX="$P" BUILD="$BUILD" >"$T/install.log" 2>&1; then pass install; else fail install "$(tail -c 400 "$T/install.log")"; fi
for f in bin/bertc include/bertc.h lib/libbertc.a lib/libbertc.so lib/libbertc.so.0 lib/libbertc_emudev.so lib/pkgconfig/bertc.pc; do
    if [ -e "$P/$f" ]; then pass "install-$f"; else fail "install-$f" "missing after make install"; fi
done

sed -n '/<!-- example:begin -->/,/<!-- example:end -->/p' docs/runtime.md | sed '1,2d;$d' | sed '$d' >"$T/example.c"
if grep -q "bertc_infer" "$T/example.c"; then pass example-extracted; else fail example-extracted "no code between the markers"; fi

export PKG_CONFIG_PATH="$P/lib/pkgconfig"
# shellcheck disable=SC2046,SC2086
if cc -std=c11 -Wall -Wextra -Werror $BERTC_SAN -o "$T/example" "$T/example.c" $(pkg-config --cflags --libs bertc) 2>"$T/cc.log"; then
    pass example-builds-shared
else
    fail example-builds-shared "$(head -c 600 "$T/cc.log")"
fi
# shellcheck disable=SC2046,SC2086
if cc -std=c11 -Wall -Wextra -Werror $BERTC_SAN -o "$T/example-static" "$T/example.c" $(pkg-config --cflags bertc) \
    "$P/lib/libbertc.a" $(pkg-config --static --libs-only-l bertc | sed 's/-lbertc//') -Wl,-rpath,"$P/lib" 2>"$T/cc2.log"; then
    pass example-builds-static
else
    fail example-builds-static "$(head -c 600 "$T/cc2.log")"
fi

# bertc run prints "  N: v0 v1 v2 ..." per row; the example "N: v0 v1 v2".
"$B" run "$PLAN" --device emu --ids "$IDS" >"$T/run.out" 2>"$T/run.err"
awk '/^last_hidden_state/ {on = 1; next} /^[a-z]/ {on = 0}
     on && /^ *[0-9]+:/ {sub(":", "", $1); printf "%s: %s %s %s\n", $1, $2, $3, $4}' "$T/run.out" >"$T/want"
for ex in example example-static; do
    # the statically linked example has no libbertc.so to stand beside
    [ "$ex" = example-static ] && export BERTC_EMU_DEVICE="$P/lib/libbertc_emudev.so"
    # shellcheck disable=SC2086
    if "$T/$ex" "$PLAN" emu $IDS >"$T/$ex.out" 2>"$T/$ex.err" && [ -s "$T/want" ] && cmp -s "$T/want" "$T/$ex.out"; then
        pass "$ex-matches-bertc-run"
    else
        fail "$ex-matches-bertc-run" "$(head -c 300 "$T/$ex.err") got: $(head -c 200 "$T/$ex.out") want: $(head -c 200 "$T/want")"
    fi
done
expect example-no-gpu 1 "$T/example" "$PLAN" cuda $IDS
contains example-no-gpu-msg "$T/err" "libcuda.so.1"

# bertc run on a plan: outputs as .npy; errors name the problem.
expect run-emu-npy 0 "$B" run "$PLAN" --device emu --ids "$IDS" --output "$T/lhs.npy" --pooled-output "$T/pool.npy"
if [ -s "$T/lhs.npy" ] && [ -s "$T/pool.npy" ]; then pass run-emu-npy-files; else fail run-emu-npy-files "no .npy written"; fi
expect run-cuda-no-driver 3 "$B" run "$PLAN" --ids "$IDS" --output "$T/none.npy"
contains run-cuda-no-driver-msg "$T/err" "no CUDA driver"
absent run-cuda-no-output "$T/none.npy"
expect run-emu-bad-id 2 "$B" run "$PLAN" --device emu --ids "101 1000 102" --output "$T/bad.npy"
contains run-emu-bad-id-msg "$T/err" "input_ids[1] = 1000 is outside the vocabulary"
absent run-emu-bad-id-no-output "$T/bad.npy"
expect run-emu-too-long 2 "$B" run "$PLAN" --device emu --ids "$(seq -s ' ' 1 65)"
contains run-emu-too-long-msg "$T/err" "outside 1..64"
expect run-ref-on-plan 1 "$B" run "$PLAN" --device ref --ids "$IDS"
expect run-emu-on-yaml 2 "$B" run "$BUILD/plans/tiny-bert.yaml" --device emu --ids "$IDS"
head -c 1000 "$PLAN" >"$T/cut.plan"
expect run-truncated-plan 2 "$B" run "$T/cut.plan" --device emu --ids "$IDS"
contains run-truncated-plan-msg "$T/err" "truncated"

expect bench-emu 0 "$B" bench "$PLAN" --device emu --iters 3 --warmup 1 --seq-len 20
contains bench-emu-table "$T/out" "p50"
expect bench-cuda-no-driver 3 "$B" bench "$PLAN" --iters 3
contains bench-cuda-no-driver-msg "$T/err" "no CUDA driver"
# --per-step: every step of the bucket, named, with the model's column, the sum and the graph
expect bench-per-step 0 "$B" bench "$PLAN" --device emu --per-step --iters 1 --seq-len 9
contains bench-per-step-table "$T/out" "predicted us"
contains bench-per-step-graph "$T/out" "graph (one launch)"
contains bench-per-step-cpu "$T/out" "CPU times"
expect bench-per-step-json 0 "$B" bench "$PLAN" --device emu --per-step --json --iters 1 --seq-len 9
if python3 -c 'import json,sys; d=json.load(open(sys.argv[1])); L=d["lengths"][0]; assert L["len"]==9 and len(L["steps"])>3 and all(s["predicted_us"] is None and s["measured_us"]>=0 for s in L["steps"])' "$T/out"; then
    pass bench-per-step-json-valid
else
    fail bench-per-step-json-valid "$(head -c 300 "$T/out")"
fi
# --predict GPU: the performance model's time of every step beside the measured one,
# the same numbers `bertc inspect --predict` gives for the bucket (a plan with GPU images)
GPLAN="$BUILD/plans/tiny-bert-fp16.plan"
expect bench-per-step-predict 0 "$B" bench "$GPLAN" --device emu --per-step --predict h100 --json --iters 1 --seq-len 9
"$B" inspect "$GPLAN" --predict h100 --json >"$T/model.json" 2>/dev/null
if python3 -c '
import json, sys
d = json.load(open(sys.argv[1])); m = json.load(open(sys.argv[2]))
L = d["lengths"][0]
b = [x for x in m["buckets"] if x["seq_len"] >= 9][0]
assert d["predicted_for"] == "h100", d["predicted_for"]
got = [s["predicted_us"] for s in L["steps"]]
want = [s["predicted_us"] for s in b["steps"]]
assert len(got) == len(want) and all(abs(g - w) <= 0.01 + 1e-3 * w for g, w in zip(got, want)), (got, want)
' "$T/out" "$T/model.json"; then
    pass bench-per-step-predict-json
else
    fail bench-per-step-predict-json "$(head -c 300 "$T/out")"
fi
# --check-steps: every step against its launch contract, the outputs against the graph's
expect bench-check-steps 0 "$B" bench "$GPLAN" --device emu --check-steps
contains bench-check-steps-8 "$T/out" "length 8: 17 steps keep to their launch contracts"
contains bench-check-steps-64 "$T/out" "length 64: 17 steps keep to their launch contracts"
expect bench-check-steps-len 0 "$B" bench "$PLAN" --device emu --check-steps --seq-len 11
contains bench-check-steps-len-out "$T/out" "length 11:"
expect bench-check-steps-alone 1 "$B" bench "$PLAN" --device emu --check-steps --per-step
contains bench-check-steps-alone-msg "$T/err" "--check-steps goes with --seq-len and --device only"
expect bench-per-step-predict-unknown 1 "$B" bench "$PLAN" --device emu --per-step --predict z80
contains bench-per-step-predict-unknown-msg "$T/err" "unknown GPU 'z80' (known: t4, a10"
expect bench-predict-alone 1 "$B" bench "$PLAN" --device emu --predict h100
expect bench-json-alone 1 "$B" bench "$PLAN" --device emu --json
