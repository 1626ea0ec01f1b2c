#!/bin/sh
# fuzz_run — run every libFuzzer target of tests/fuzz/ for a while.
#
#     sh tools/fuzz_run.sh FUZZ_BUILD SECONDS [RUNS]   (make fuzz-run FUZZ_SECONDS=N)
#
# With RUNS, each target stops after RUNS executions or SECONDS, whichever
# comes first (the offline campaign of docs/testing.md: RUNS=1000000).
#
# Each target starts from a scratch copy of its committed seeds
# (tests/fuzz/corpus/<target>/, left unchanged) with its dictionary
# (tests/fuzz/<target>.dict) and runs for SECONDS; libFuzzer exits non-zero
# on a crash, a sanitizer report, a leak or a timeout, and the input that
# did it is kept in FUZZ_BUILD/artifacts/<target>/ to become a regression
# test.  Prints a PASS or FAIL line per target with its executions and
# coverage, and "N passed, N failed" last (the shape tests/run.sh uses).
set -u
BUILD=${1:-build-fuzz}
SECONDS_EACH=${2:-60}
RUNS=${3:-0}
passed=0
failed=0
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
for bin in "$BUILD"/fuzz/fuzz_*; do
    [ -x "$bin" ] || continue
    t=$(basename "$bin")
    mkdir -p "$work/$t" "$BUILD/artifacts/$t"
    [ -d "tests/fuzz/corpus/$t" ] && cp -R "tests/fuzz/corpus/$t/." "$work/$t/"
    dict=""
    runs=""
    [ "$RUNS" -gt 0 ] && runs="-runs=$RUNS"
    [ -f "tests/fuzz/$t.dict" ] && dict="-dict=tests/fuzz/$t.dict"
    # shellcheck disable=SC2086
    start=$(date +%s)
    "$bin" -max_total_time="$SECONDS_EACH" $runs -timeout=20 -rss_limit_mb=2560 -print_final_stats=1 \
        -artifact_prefix="$BUILD/artifacts/$t/" $dict "$work/$t" >"$work/$t.log" 2>&1
    rc=$?
    took=$(( $(date +%s) - start ))
    execs=$(grep -E '^stat::number_of_executed_units' "$work/$t.log" | awk '{print $2}')
    cov=$(grep -E '^#[0-9]+.*(DONE|pulse|NEW|REDUCE)' "$work/$t.log" | tail -n 1 | sed -n 's/.*cov: \([0-9]*\).*/\1/p')
    if [ "$rc" -eq 0 ]; then
        echo "PASS $t: ${execs:-?} executions in ${took} s, coverage ${cov:-?} edges, corpus $(ls "$work/$t" | wc -l) inputs"
        passed=$((passed + 1))
    else
        echo "FAIL $t: exit $rc after ${execs:-?} executions; input kept in $BUILD/artifacts/$t/"
        grep -E 'ERROR|SUMMARY|invariant|Test unit written|deadly signal' "$work/$t.log" | head -n 8
        failed=$((failed + 1))
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
