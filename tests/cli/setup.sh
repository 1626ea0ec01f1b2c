#!/bin/sh
# tools/setup.sh, the README's set-up command, on machines it cannot really
# touch: apt-get, dpkg, id and sudo are stubs on PATH that record what they
# were asked.  As root, apt-get runs directly (a fresh Debian image has no
# sudo); as another user through sudo; without sudo the script says what to
# do and fails; with every package present nothing is installed; a missing
# CUDA toolkit is an error that names it.
. tests/cli/lib/common.sh

stubs() {  # stubs DIR UID HAVE_SUDO PACKAGES_PRESENT
    mkdir -p "$1"
    printf '#!/bin/sh\necho %s\n' "$2" >"$1/id"
    printf '#!/bin/sh\necho "apt-get $*" >>"%s/log"\n' "$1" >"$1/apt-get"
    printf '#!/bin/sh\nexit %s\n' "$4" >"$1/dpkg"
    if [ "$3" = 1 ]; then printf '#!/bin/sh\necho "sudo $1" >>"%s/log"\nexec "$@"\n' "$1" >"$1/sudo"; fi
    chmod +x "$1"/*
}
mkdir -p "$T/cuda/include" "$T/cuda/bin"
: >"$T/cuda/include/nvrtc.h"
: >"$T/cuda/include/cuda.h"
printf '#!/bin/sh\n' >"$T/cuda/bin/ptxas" && chmod +x "$T/cuda/bin/ptxas"
# The stubs first on PATH; the real system tools after them (sh, grep, ...).
run_setup() { PATH="$1:/usr/bin:/bin" CUDA_HOME="$T/cuda" sh tools/setup.sh >"$T/out" 2>"$T/err"; }

stubs "$T/root" 0 0 1
if run_setup "$T/root" && grep -q '^apt-get install' "$T/root/log" && ! grep -q sudo "$T/root/log"; then
    pass setup-root-without-sudo
else
    fail setup-root-without-sudo "$(cat "$T/root/log" "$T/err" 2>/dev/null | head -c 300)"
fi
stubs "$T/user" 1000 1 1
if run_setup "$T/user" && grep -q '^sudo apt-get' "$T/user/log"; then pass setup-user-sudo; else fail setup-user-sudo "$(cat "$T/user/log" "$T/err" 2>/dev/null | head -c 300)"; fi
stubs "$T/nosudo" 1000 0 1
if run_setup "$T/nosudo"; then fail setup-user-no-sudo "succeeded without root or sudo"; else contains setup-user-no-sudo "$T/err" "run this script as root"; fi
stubs "$T/done" 0 0 0
if run_setup "$T/done" && [ ! -e "$T/done/log" ]; then pass setup-nothing-to-do; else fail setup-nothing-to-do "apt-get ran: $(cat "$T/done/log" 2>/dev/null)"; fi
rm "$T/cuda/include/nvrtc.h"
stubs "$T/nocuda" 0 0 0
if PATH="$T/nocuda:/usr/bin:/bin" CUDA_HOME="$T/cuda" BERTC_SETUP_CUDA_DIRS="$T/none" sh tools/setup.sh >"$T/out" 2>"$T/err"; then
    fail setup-no-cuda "succeeded without a toolkit"
else
    contains setup-no-cuda "$T/err" "the CUDA toolkit is required"
fi
