#!/bin/sh
# Runs every test program and test script; counts their PASS/FAIL lines.
#
# Each C test (BUILD/tests/PART/test_*) and each shell test (tests/cli/*.sh)
# prints one "PASS name" or "FAIL name: why" line per case.  A program that
# exits non-zero without printing a FAIL line (a crash, a sanitizer report)
# counts as one failure of its own.  The last line is "N passed, N failed".
BUILD=${1:-build}
export BERTC_BUILD_DIR="$BUILD"
export BERTC="$BUILD/bertc"
# The test binaries live in $BUILD/tests, not beside libbertc_emudev.so: name it
# (bertc and libbertc.so find it beside themselves; tests/cli/embed.sh checks that).
export BERTC_EMU_DEVICE="$PWD/$BUILD/libbertc_emudev.so"
# Compiles in tests never touch the user's compile cache (~/.cache/bertc):
# they share one of their own, removed at the end.
BERTC_CACHE_DIR=$(mktemp -d)
export BERTC_CACHE_DIR
: "${BERTC_TEST_SEED:=$(od -An -N4 -tu4 /dev/urandom | tr -d ' ')}"
export BERTC_TEST_SEED
echo "test seed: $BERTC_TEST_SEED (set BERTC_TEST_SEED to replay)"
passed=0
failed=0
log=$(mktemp)
trap 'rm -f "$log"; rm -rf "$BERTC_CACHE_DIR"' EXIT
for t in "$BUILD"/tests/*/test_* tests/cli/*.sh; do
    [ -f "$t" ] || continue
    case "$t" in *.o|*.d) continue ;; esac
    echo "== $t"
    t0=$(date +%s)
    case "$t" in
        *.sh) sh "$t" >"$log" 2>&1 ;;
        *) "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    cat "$log"
    echo "   ($(( $(date +%s) - t0 )) s)"
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
        echo "FAIL $t: exited with status $rc"
        f=1
    fi
    passed=$((passed + p))
    failed=$((failed + f))
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
