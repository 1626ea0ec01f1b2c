#!/bin/sh
# fixtures — the test models, the committed goldens and the build must agree.
#
# The tiny checkpoints are not committed: tools/make_tiny_bert.py writes them
# (deterministically) and `make fixtures` puts them in $BERTC_BUILD_DIR/hf.
# The goldens in tests/golden/ are committed and record, in their header, the
# sha256 of the model.safetensors they were made from.  This test regenerates
# every tiny variant into a temporary directory and checks that (1) it is the
# checkpoint the golden was made from, so a change to the generator cannot
# silently invalidate the goldens, and (2) it is byte-identical to the one in
# the build directory (every file, not just the weights), so the C tests read
# what the goldens describe.  It also parses each golden completely with an
# independent standard-library reader (structure, flags, trailing bytes), and
# checks that the MiniLM golden, tools/fetch_minilm.sh and the fetched
# checkpoint name the same sha256.  One "PASS name" / "FAIL name: why" line
# per check.
cd "$(dirname "$0")/../.." || exit 1
BUILD=${BERTC_BUILD_DIR:-build}
PY=${PYTHON:-python3}
TINY="tiny-bert tiny-bert-prefixed tiny-bert-relu tiny-bert-tanh"
# the other families (tools/make_tiny_family.py, goldens by tools/make_family_goldens.py)
FAMILY="tiny-roberta tiny-xlmr-tokcls tiny-distilbert tiny-electra tiny-mpnet tiny-mpnet-seqcls tiny-cross-encoder"
MINILM=all-MiniLM-L6-v2

tmp=$(mktemp -d "${TMPDIR:-/tmp}/bertc-fixtures.XXXXXX") || exit 1
trap 'rm -rf "$tmp"' EXIT INT TERM

status=0
pass() { echo "PASS $1"; }
fail() {
    echo "FAIL $1: $2"
    status=1
}

sha256() {
    "$PY" -c 'import hashlib,sys
h = hashlib.sha256()
with open(sys.argv[1], "rb") as f:
    for b in iter(lambda: f.read(1 << 20), b""):
        h.update(b)
print(h.hexdigest())' "$1"
}

# Prints "MODEL SHA256 NCASES" for a golden file after checking its whole
# structure, or an error message on stderr and a non-zero status.
golden_info() {
    "$PY" - "$1" <<'EOF'
import struct, sys
path = sys.argv[1]
data = open(path, "rb").read()
off = 0
def take(n, what):
    global off
    if n > len(data) - off:
        sys.exit("%s: truncated at offset %d reading %s" % (path, off, what))
    b = data[off:off + n]
    off += n
    return b
def u32(what):
    return struct.unpack("<I", take(4, what))[0]
if take(4, "magic") != b"BGLD":
    sys.exit("%s: bad magic" % path)
if u32("version") != 1:
    sys.exit("%s: unsupported version" % path)
header = take(u32("header length"), "header").decode("utf-8")
fields = {}
for line in header.splitlines():
    k, sep, v = line.partition(": ")
    if sep and k not in fields:
        fields[k] = v
n = u32("case count")
names = set()
for i in range(n):
    name = take(u32("name length"), "name").decode("utf-8")
    if not name or name in names:
        sys.exit("%s: case %d has an empty or repeated name" % (path, i))
    names.add(name)
    S, H, flags = u32("len"), u32("hidden"), u32("flags")
    if S == 0 or H == 0 or flags & ~31:
        sys.exit("%s: case %s: bad len/hidden/flags %d/%d/%d" % (path, name, S, H, flags))
    ids = struct.unpack("<%di" % S, take(4 * S, "input_ids"))
    for bit, what in ((1, "token_type_ids"), (2, "attention_mask")):
        if flags & bit:
            vals = struct.unpack("<%di" % S, take(4 * S, what))
            if bit == 2 and any(v not in (0, 1) for v in vals):
                sys.exit("%s: case %s: attention_mask not 0/1" % (path, name))
    lhs = struct.unpack("<%df" % (S * H), take(4 * S * H, "last_hidden_state"))
    if flags & 4:
        take(4 * H, "pooler_output")
    for bit, what in ((8, "logits"), (16, "sentence_embedding")):
        if flags & bit:
            k = u32(what + " count")
            vals = struct.unpack("<%df" % k, take(4 * k, what))
            if k == 0 or any(v != v for v in vals):
                sys.exit("%s: case %s: %s empty or NaN" % (path, name, what))
    if any(v != v for v in lhs) or max(abs(v) for v in lhs) == 0:
        sys.exit("%s: case %s: last_hidden_state is NaN or all zero" % (path, name))
    if min(ids) < 0:
        sys.exit("%s: case %s: negative input id" % (path, name))
if off != len(data):
    sys.exit("%s: %d bytes after the last case" % (path, len(data) - off))
for k in ("model", "model_sha256"):
    if k not in fields:
        sys.exit("%s: header has no '%s' line" % (path, k))
print(fields["model"], fields["model_sha256"], n)
EOF
}

for name in $TINY $FAMILY $MINILM; do
    gold=tests/golden/$name.bgld
    if [ ! -f "$gold" ]; then
        fail "golden_format_$name" "$gold is missing (run tools/make_goldens.py)"
        continue
    fi
    if golden_info "$gold" >"$tmp/$name.info" 2>"$tmp/err"; then
        # shellcheck disable=SC2046 # split "MODEL SHA NCASES" on purpose
        set -- $(cat "$tmp/$name.info")
        if [ "$1" != "$name" ]; then
            fail "golden_format_$name" "header names model '$1'"
        elif [ "$3" -lt 5 ]; then
            fail "golden_format_$name" "only $3 cases"
        else
            pass "golden_format_$name"
        fi
    else
        rm -f "$tmp/$name.info"
        fail "golden_format_$name" "$(tail -n 1 "$tmp/err")"
    fi
done

for name in $TINY; do
    gen=$tmp/$name
    if ! "$PY" tools/make_tiny_bert.py --variant "$name" "$gen" 2>"$tmp/err"; then
        fail "fixture_regenerates_$name" "make_tiny_bert.py failed: $(tail -n 1 "$tmp/err")"
        continue
    fi
    pass "fixture_regenerates_$name"

    want=$(cut -d' ' -f2 "$tmp/$name.info" 2>/dev/null)
    got=$(sha256 "$gen/model.safetensors")
    if [ -z "$want" ]; then
        fail "fixture_matches_golden_$name" "cannot read the sha256 from tests/golden/$name.bgld"
    elif [ "$got" != "$want" ]; then
        fail "fixture_matches_golden_$name" "regenerated model.safetensors has sha256 $got but the golden was made from $want (rerun tools/make_goldens.py)"
    else
        pass "fixture_matches_golden_$name"
    fi

    built=$BUILD/hf/$name
    why=
    for f in "$gen"/* "$built"/*; do
        [ -e "$f" ] || continue
        base=${f##*/}
        if [ ! -f "$gen/$base" ] || [ ! -f "$built/$base" ]; then
            why="$base is in only one of $built and the regenerated directory"
            break
        fi
        if ! cmp -s "$gen/$base" "$built/$base"; then
            why="$built/$base differs from a fresh make_tiny_bert.py run (make fixtures)"
            break
        fi
    done
    if [ ! -f "$built/model.safetensors" ]; then
        fail "fixture_matches_build_$name" "$built/model.safetensors is missing (make fixtures)"
    elif [ -n "$why" ]; then
        fail "fixture_matches_build_$name" "$why"
    else
        pass "fixture_matches_build_$name"
    fi
done

# The family fixtures: regenerated, the checkpoint the golden names, and
# every file (sub-folders too: sentence-transformers modules) as built.
for name in $FAMILY; do
    gen=$tmp/$name
    if ! "$PY" tools/make_tiny_family.py --variant "$name" "$gen" 2>"$tmp/err"; then
        fail "fixture_regenerates_$name" "make_tiny_family.py failed: $(tail -n 1 "$tmp/err")"
        continue
    fi
    pass "fixture_regenerates_$name"
    want=$(cut -d' ' -f2 "$tmp/$name.info" 2>/dev/null)
    got=$(sha256 "$gen/model.safetensors")
    if [ -z "$want" ] || [ "$got" != "$want" ]; then
        fail "fixture_matches_golden_$name" "regenerated model.safetensors has sha256 $got, the golden names '$want' (rerun tools/make_family_goldens.py)"
    else
        pass "fixture_matches_golden_$name"
    fi
    if diff -rq "$gen" "$BUILD/hf/$name" >"$tmp/diff" 2>&1; then
        pass "fixture_matches_build_$name"
    else
        fail "fixture_matches_build_$name" "$(head -n 1 "$tmp/diff") (make fixtures)"
    fi
done

want=$(sed -n 's/^MANIFEST=.\([0-9a-f]\{64\}\) model\.safetensors$/\1/p' tools/fetch_minilm.sh)
gold=$(cut -d' ' -f2 "$tmp/$MINILM.info" 2>/dev/null)
built=$BUILD/hf/$MINILM/model.safetensors
if [ -z "$want" ]; then
    fail fixture_minilm_sha256 "no model.safetensors sha256 found in tools/fetch_minilm.sh"
elif [ "$gold" != "$want" ]; then
    fail fixture_minilm_sha256 "golden made from $gold, fetch_minilm.sh expects $want"
elif [ ! -f "$built" ]; then
    fail fixture_minilm_sha256 "$built is missing (make fixtures)"
elif [ "$(sha256 "$built")" != "$want" ]; then
    fail fixture_minilm_sha256 "$built does not have sha256 $want (rm -rf $BUILD/hf/$MINILM; make fixtures)"
else
    pass fixture_minilm_sha256
fi

exit $status
