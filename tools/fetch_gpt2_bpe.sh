#!/bin/sh
# fetch_gpt2_bpe — GPT-2's byte-level BPE files (vocab.json + merges.txt),
# the vocabulary RoBERTa's is derived from, as a RoBERTa-style tokenizer
# directory in OUT_DIR for tests/runtime/test_tokenizer_families.c.
#
# Usage:  PYTHON=/path/to/python sh tools/fetch_gpt2_bpe.sh OUT_DIR   (e.g. build/hf/gpt2-bpe)
#
# Design.  openai-whisper's 2023 releases on PyPI carry GPT-2's files in
# whisper/assets/gpt2/; they are sdists only, and `pip download` prepares an
# sdist's metadata, so PYTHON must have setuptools < 70 (with pkg_resources)
# and wheel (docs/testing.md).  The sdist is cached like the other fixtures
# (BERTC_WHEEL_CACHE or ${XDG_CACHE_HOME:-~/.cache}/bertc) and checked
# against the sha256 below before use; the two files are extracted with
# Python's tarfile, checked, and written with a tokenizer_config.json naming
# RobertaTokenizer (its BPE is GPT-2's, its specials <s> </s> <unk> <pad>
# <mask> come after the vocabulary), into OUT_DIR.partial.$$ renamed into
# place.  `make test` does not need it: the test skips it when absent.
set -eu
PY=${PYTHON:-python3}
VERSION=20230308
SDIST=openai-whisper-$VERSION.tar.gz
SDIST_SHA=bb75d41b3b6b56de984b475833a7eb5e35374b5cae1362b0ed3a414c8ca7d596
MANIFEST='3ba3c3109ff33976c4bd966589c11ee14fcaa1f4c9e5e154c2ed7f99d80709e7 vocab.json
fe36cab26d4f4421ed725e10a2e9ddb7f799449c603a96e7f29b5a3c82a95862 merges.txt'

die() {
    echo "fetch_gpt2_bpe: $*" >&2
    exit 1
}
[ $# -eq 1 ] || die "usage: sh tools/fetch_gpt2_bpe.sh OUT_DIR"
OUT=${1%/}
. "$(dirname "$0")/fetch_lib.sh"
fetch_cache
sdist=$cache/$SDIST
if [ ! -f "$sdist" ] || [ "$(fetch_sha256 "$sdist")" != "$SDIST_SHA" ]; then
    rm -f "$sdist"
    dl=$(mktemp -d "$cache/download.XXXXXX")
    echo "fetch_gpt2_bpe: downloading openai-whisper==$VERSION (sdist) from PyPI into $cache" >&2
    if ! "$PY" -m pip download --no-deps --no-binary :all: --no-build-isolation --disable-pip-version-check -q \
            -d "$dl" "openai-whisper==$VERSION" >&2; then
        rm -rf "$dl"
        die "pip download failed (PYTHON needs setuptools < 70 and wheel to prepare the sdist)"
    fi
    mv "$dl/$SDIST" "$sdist" || { rm -rf "$dl"; die "pip did not produce $SDIST"; }
    rm -rf "$dl"
    [ "$(fetch_sha256 "$sdist")" = "$SDIST_SHA" ] || die "$sdist: sha256 is not $SDIST_SHA"
fi
tmp="$OUT.partial.$$"
rm -rf "$tmp"
trap 'rm -rf "$tmp"' EXIT INT TERM
mkdir -p "$tmp"
"$PY" - "$sdist" "$tmp" "$MANIFEST" <<'PYEOF'
import hashlib, os, sys, tarfile
sdist, dest, manifest = sys.argv[1:]
with tarfile.open(sdist) as t:
    for name in ("vocab.json", "merges.txt"):
        data = t.extractfile("openai-whisper-20230308/whisper/assets/gpt2/" + name).read()
        with open(os.path.join(dest, name), "wb") as f:
            f.write(data)
for line in manifest.strip().splitlines():
    want, name = line.split()
    got = hashlib.sha256(open(os.path.join(dest, name), "rb").read()).hexdigest()
    if got != want:
        sys.exit("fetch_gpt2_bpe: %s: sha256 %s, expected %s" % (name, got, want))
with open(os.path.join(dest, "tokenizer_config.json"), "w") as f:
    f.write('{"tokenizer_class": "RobertaTokenizer", "model_max_length": 512}\n')
PYEOF
rm -rf "$OUT"
mv "$tmp" "$OUT"
trap - EXIT INT TERM
echo "fetch_gpt2_bpe: GPT-2's BPE ready in $OUT" >&2
