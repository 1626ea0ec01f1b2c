# Shared by tests/cli/python.sh and tests/cli/triton.sh (sourced after common.sh).
#
# The Python suites run with $BERTC_PYTHON (default python3), which needs
# the packages .ci/run pins (numpy, pytest; tritonclient and nvidia-pytriton
# for Triton).  Without them a suite is skipped with a line that says why,
# unless BERTC_REQUIRE_SERVE=1 (set by .ci/run), which makes a missing
# package a failure so CI cannot skip silently.  Under the sanitizers the
# suites are skipped: an ASan-built libbertc cannot be loaded into an
# uninstrumented Python or tritonserver.
PY=${BERTC_PYTHON:-python3}

# serve_ready NAME MODULES...: 0 if the suite can run; otherwise prints SKIP (or FAIL) and returns 1.
serve_ready() {
    suite=$1
    shift
    if [ -n "${BERTC_SAN:-}" ]; then
        echo "SKIP $suite: not run under the sanitizers (the normal build runs it)"
        return 1
    fi
    missing=""
    for m in "$@"; do
        "$PY" -c "import importlib.util, sys; sys.exit(importlib.util.find_spec('$m') is None)" 2>/dev/null ||
            missing="$missing $m"
    done
    [ -z "$missing" ] && return 0
    why="$PY lacks$missing (.ci/run installs the pinned versions; point BERTC_PYTHON at a Python that has them)"
    if [ -n "${BERTC_REQUIRE_SERVE:-}" ]; then fail "$suite" "$why"; else echo "SKIP $suite: $why"; fi
    return 1
}

# serve_install_wheel: pip-installs the built wheel into $T/site (no network, no dependencies).
serve_install_wheel() {
    wheel=$(ls "$BUILD"/python/bertc-*.whl 2>/dev/null | head -n 1)
    if [ -z "$wheel" ]; then
        fail python-wheel "no wheel in $BUILD/python (make python)"
        return 1
    fi
    if "$PY" -m pip install --quiet --no-deps --no-index --target "$T/site" "$wheel" >"$T/pip.log" 2>&1; then
        pass python-wheel-installs
    else
        fail python-wheel-installs "$(tail -c 600 "$T/pip.log")"
        return 1
    fi
}

# serve_pytest PREFIX FILES...: runs pytest; its PASS/FAIL lines come from tests/support/pytest_lines.py.
# A run that fails without a FAIL line (a test file that does not import, a crash) is one failure.
serve_pytest() {
    prefix=$1
    shift
    env -u BERTC_EMU_DEVICE BERTC_PYTEST_PREFIX="$prefix" BERTC_TEST_SITE="$T/site" \
        PYTHONPATH="$T/site:tests/support:tests/python${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1 \
        "$PY" -m pytest -q -p pytest_lines -p no:cacheprovider --basetemp "$T/pytest" "$@" >"$T/pytest.log" 2>&1
    rc=$?
    grep -E '^(PASS|FAIL|SKIP) ' "$T/pytest.log"
    if [ "$rc" -ne 0 ] && ! grep -q '^FAIL ' "$T/pytest.log"; then
        fail "${prefix}pytest" "pytest exited with status $rc: $(tail -c 800 "$T/pytest.log" | tr '\n' ' ')"
    fi
}
