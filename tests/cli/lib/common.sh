# Shared helpers for the shell tests in tests/cli/ (sourced, not run).
# Each check prints one "PASS name" or "FAIL name: why" line for tests/run.sh.
B=${BERTC:-build/bertc}
BUILD=${BERTC_BUILD_DIR:-build}
T=$(mktemp -d)
trap 'rm -rf "$T"' EXIT

pass() { echo "PASS $1"; }
fail() { echo "FAIL $1: $2"; }

# expect NAME STATUS CMD...: run CMD (stdout in $T/out, stderr in $T/err), check its exit status.
expect() {
    name=$1 want=$2
    shift 2
    "$@" >"$T/out" 2>"$T/err"
    got=$?
    if [ "$got" -eq "$want" ]; then pass "$name"; else fail "$name" "exit $got, expected $want; stderr: $(head -c 400 "$T/err")"; fi
}
# contains NAME FILE TEXT
contains() { if grep -qF -- "$3" "$2"; then pass "$1"; else fail "$1" "'$3' not in $(head -c 300 "$2")"; fi; }
# absent NAME PATH: neither PATH nor a temporary PATH.tmp.* exists
absent() {
    if [ ! -e "$2" ] && ! ls "$(dirname "$2")" 2>/dev/null | grep -qF "$(basename "$2").tmp"; then
        pass "$1"
    else
        fail "$1" "$2 (or a temp file) exists"
    fi
}
