#!/bin/sh
# An installed bertc is self-contained.  The sources are copied to a scratch
# folder, built and installed there into a scratch prefix (`make install
# PREFIX=...`), and then the copy is deleted — the checkout the installed
# programs came from is gone.  The installed bertc must still import a
# Hugging Face directory, compile it for the emulated device (which needs
# the kernel templates and the emulator's prelude: both are embedded) and
# run it (the installed libbertc_emudev.so, found beside the installed
# libraries), giving exactly the outputs the tree's own build gives for the
# same plan.
. tests/cli/lib/common.sh

unset BERTC_EMU_DEVICE
SRC="$T/src"
P="$T/prefix"
mkdir -p "$SRC"
if cp -R Makefile compiler runtime kernels_templates tools "$SRC/" 2>"$T/cp.log"; then pass install-copy; else fail install-copy "$(head -c 300 "$T/cp.log")"; fi
# the copy builds without sanitizers: this checks the installation, not the code
if env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make -s -C "$SRC" -j2 install PREFIX="$P" BUILD="$SRC/build" SAN= CFLAGS="-O2 -g" >"$T/make.log" 2>&1; then
    pass install-build
else
    fail install-build "$(tail -c 600 "$T/make.log")"
fi
rm -rf "$SRC"
if [ ! -e "$SRC" ]; then pass install-checkout-gone; else fail install-checkout-gone "$SRC still exists"; fi

cp -R "$BUILD/hf/tiny-bert" "$T/hf"
IB="$P/bin/bertc"
expect installed-import 0 "$IB" import "$T/hf" -o "$T/m.yaml"
expect installed-compile-emu 0 "$IB" compile "$T/m.yaml" -o "$T/m.plan" --arch emu --buckets 8,16
expect installed-run-emu 0 "$IB" run "$T/m.plan" --device emu --ids "101 7 42 900 3 102" --output "$T/installed.npy"
expect tree-run-emu 0 "$B" run "$T/m.plan" --device emu --ids "101 7 42 900 3 102" --output "$T/tree.npy"
if [ -s "$T/installed.npy" ] && cmp -s "$T/installed.npy" "$T/tree.npy"; then
    pass installed-run-matches-tree
else
    fail installed-run-matches-tree "the installed bertc's outputs differ from the tree's"
fi
expect installed-inspect 0 "$IB" inspect "$T/m.plan" --json
contains installed-plan-has-emu "$T/out" '"kind": "emu"'
# export-triton from the installed tree finds the installed backend in ../lib.
expect installed-export-triton 0 "$IB" export-triton "$T/m.plan" "$T/repo" --name m --device emu
if cmp -s "$P/lib/libtriton_bertc.so" "$T/repo/m/1/libtriton_bertc.so" &&
    cmp -s "$P/lib/libbertc_emudev.so" "$T/repo/m/1/libbertc_emudev.so"; then
    pass installed-export-triton-libraries
else
    fail installed-export-triton-libraries "the repository does not hold the installed backend and emulated device"
fi
