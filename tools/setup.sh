#!/bin/sh
# setup — install what bertc needs on a fresh Debian (or Ubuntu) machine.
#
#     sh tools/setup.sh        (also: make setup, once make is installed)
#
# The one list of the project's system packages: the C toolchain and make,
# libyaml and libutf8proc (the graph loader and the tokenizer), pkg-config
# (the runtime's example is built through it), Python 3 (fixture
# generators, the MiniLM download; python3-venv for the environment .ci/run
# installs the serving tests' pinned packages into) and clang (the fuzz
# targets).  apt-get
# runs directly as root and through sudo otherwise; packages already
# present are not touched, so a second run does nothing.  The CUDA toolkit
# (NVRTC, headers and ptxas; no GPU or driver needed) is looked for in $CUDA_HOME,
# /usr/local/cuda and /usr; if none has it, Debian's nvidia-cuda-toolkit
# (non-free) is tried, and failing that the script says what is missing and
# exits 1.  .ci/run uses this script, so CI and the README cannot disagree.
set -eu

PACKAGES="build-essential make libyaml-dev libutf8proc-dev pkg-config python3 python3-pip python3-venv clang libclang-rt-dev"

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null 2>&1; then
        sudo "$@"
    else
        echo "setup: $* needs root, and sudo is not installed; run this script as root" >&2
        return 1
    fi
}

need=""
for p in $PACKAGES; do
    dpkg -s "$p" >/dev/null 2>&1 || need="$need $p"
done
if [ -n "$need" ]; then
    echo "setup: installing$need"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    # shellcheck disable=SC2086
    as_root apt-get install -y -qq $need
fi

cuda_ok() { [ -f "$1/include/nvrtc.h" ] && [ -f "$1/include/cuda.h" ] && [ -x "$1/bin/ptxas" ]; }
# Where a toolkit may be: $CUDA_HOME, NVIDIA's default, Debian's package
# (BERTC_SETUP_CUDA_DIRS replaces the last two; the tests use it).
cuda_find() {
    for c in "${CUDA_HOME:-}" ${BERTC_SETUP_CUDA_DIRS:-/usr/local/cuda /usr}; do
        if [ -n "$c" ] && cuda_ok "$c"; then
            echo "setup: CUDA toolkit in $c"
            return 0
        fi
    done
    return 1
}
cuda_find && exit 0
echo "setup: no CUDA toolkit found; trying Debian's nvidia-cuda-toolkit (non-free)"
if as_root apt-get install -y -qq nvidia-cuda-toolkit >/dev/null 2>&1 && cuda_find; then
    exit 0
fi
echo "setup: the CUDA toolkit is required (NVRTC, its headers and ptxas; no GPU needed) and none was found or installable;" >&2
echo "setup: install it from NVIDIA into /usr/local/cuda, or set CUDA_HOME to where it is" >&2
exit 1
