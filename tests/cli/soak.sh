#!/bin/sh
# A short soak (bertc bench --soak, docs/testing.md "Soak"): four threads
# with their own contexts on one shared plan, random requests and texts,
# context and plan churn, invalid requests mixed in; the checked phase must
# match the single-threaded answers bit for bit, every bad request must be
# refused as one, and the emulated device's live objects must come back to
# where they started.  The long runs are in docs/testing.md.
. tests/cli/lib/common.sh

PLAN="$BUILD/plans/tiny-bert-fp16.plan"
SECS=6
case "${BERTC_SAN:-}" in *address*) SECS=12 ;; esac

expect soak-tiny-bert 0 "$B" bench "$PLAN" --device emu --soak "$SECS" --threads 4 --seed "${BERTC_TEST_SEED:-1}"
cat "$T/out"
contains soak-ok "$T/out" "soak: ok"
contains soak-no-mismatch "$T/out" ", 0 mismatches against the single-threaded answers"
contains soak-refused "$T/out" "bad requests refused as they should be"
contains soak-no-errors "$T/out" "  errors         0"
start=$(sed -n 's/.*device objects start //p' "$T/out")
end=$(sed -n 's/.*device objects end   //p' "$T/out")
if [ -n "$start" ] && [ "$start" = "$end" ]; then pass soak-device-objects; else fail soak-device-objects "start '$start', end '$end'"; fi
# A plan pinned by another digest is refused before the soak starts.
expect soak-pinned-other 2 "$B" bench "$PLAN" --device emu --soak 1 --expect-sha256 "$(printf '0%.0s' $(seq 64))"
expect soak-threads-usage 1 "$B" bench "$PLAN" --device emu --soak 1 --threads 0
