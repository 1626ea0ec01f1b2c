#!/bin/sh
# Runs every test program and test script; counts their PASS/FAIL lines.
#
# Each C test (BUILD/tests/PART/test_*) and each shell test (tests/cli/*.sh)
# prints one "PASS name" or "FAIL name: why" line per case.  A program that
# exits non-zero without printing a FAIL line (a crash, a sanitizer report)
# counts as one failure of its own.  The last line is "N passed, N failed".
#
# Tests run BERTC_TEST_JOBS at a time (default: one per core).  Most of the
# suite's time is the emulated device, which runs a kernel on its caller's
# thread, so a test keeps one core busy and the machine's others would
# idle; the tests share nothing they write (temporary files and folders
# of their own, the one compile cache below, which takes concurrent
# compiles: test_kbuild_cache checks it).  Each test's output is printed
# whole when it ends, under a lock, so two never interleave; the slowest
# start first, so that none of them is left to run alone at the end.
#
#   sh tests/run.sh [BUILD]              every test
#   sh tests/run.sh --one DIR TEST       (internal) one test, its result in DIR
set -u
if [ "${1:-}" = "--one" ]; then
    dir=$2 t=$3
    log=$(mktemp "$dir/log.XXXXXX")
    t0=$(date +%s)
    case "$t" in
        *.sh) sh "$t" >"$log" 2>&1 ;;
        *) "$t" >"$log" 2>&1 ;;
    esac
    rc=$?
    secs=$(($(date +%s) - t0))
    p=$(grep -c '^PASS ' "$log")
    f=$(grep -c '^FAIL ' "$log")
    {
        flock 9
        echo "== $t"
        cat "$log"
        echo "   ($secs s)"
        if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
            echo "FAIL $t: exited with status $rc"
            f=1
        fi
        echo "$p $f $secs $t" >>"$dir/results"
    } 9>>"$dir/lock"
    rm -f "$log"
    exit 0
fi

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
jobs=${BERTC_TEST_JOBS:-$(nproc 2>/dev/null || echo 1)}
case "$jobs" in '' | *[!0-9]* | 0) echo "tests/run.sh: BERTC_TEST_JOBS must be a positive number, not '$jobs'" >&2; exit 2 ;; esac
echo "test seed: $BERTC_TEST_SEED (set BERTC_TEST_SEED to replay); $jobs tests at a time (BERTC_TEST_JOBS)"
dir=$(mktemp -d)
trap 'rm -rf "$dir" "$BERTC_CACHE_DIR"' EXIT

# The tests that take half a minute or more (`make test`, 2026-11-29:
# 170, 150, 150, 75, then 25-40 s), slowest first; then every other one
# in the order of the folders.
SLOW="tests/runtime/test_sentences tests/runtime/test_e2e tests/cli/python.sh tests/cli/compile.sh tests/kernels/test_emu_kernels_edges
tests/kernels/test_kernels_compile tests/runtime/test_check_steps tests/kernels/test_emu_kernels_gemm
tests/cli/install.sh tests/cli/gpu_validate.sh tests/compiler/test_passes tests/runtime/test_batch"
for t in $SLOW; do
    case "$t" in
        tests/cli/*) [ -f "$t" ] && echo "$t" ;;
        *) [ -f "$BUILD/$t" ] && echo "$BUILD/$t" ;;
    esac
done >"$dir/list"
for t in "$BUILD"/tests/*/test_* tests/cli/*.sh; do
    [ -f "$t" ] || continue
    case "$t" in *.o | *.d) continue ;; esac
    grep -qxF "$t" "$dir/list" || echo "$t" >>"$dir/list"
done
: >"$dir/results"
xargs -P "$jobs" -I{} sh "$0" --one "$dir" {} <"$dir/list"

passed=0
failed=0
ran=0
while read -r p f _ _; do
    passed=$((passed + p))
    failed=$((failed + f))
    ran=$((ran + 1))
done <"$dir/results"
want=$(wc -l <"$dir/list")
if [ "$ran" -ne "$want" ]; then
    echo "FAIL tests/run.sh: $((want - ran)) of $want tests reported no result"
    failed=$((failed + want - ran))
fi
echo "slowest: $(sort -rn -k3 "$dir/results" | head -5 | awk '{printf "%s%s %d s", (NR > 1 ? ", " : ""), $4, $3}')"
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ] && [ "$passed" -gt 0 ]
