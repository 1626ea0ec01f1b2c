#!/bin/sh
# `bertc compile` and its compile cache end to end: a cold compile, a warm
# one and one with --no-cache write byte-identical plans; the warm one runs
# no compiler (every job from the cache, said on stderr); BERTC_CACHE_DIR
# moves the cache and HOME/.cache/bertc is the default; damaged entries are
# rebuilt into the same plan; the default architectures give CUBINs for
# sm_75, sm_80, sm_90 and PTX for compute_80 and compute_90, and inspect
# says which image each GPU runs.
. tests/cli/lib/common.sh

expect import 0 "$B" import "$BUILD/hf/tiny-bert" -o "$T/tiny.yaml"
C="$T/cache"
export BERTC_CACHE_DIR="$C"
expect cold 0 "$B" compile "$T/tiny.yaml" -o "$T/cold.plan" --buckets 16,64
contains cold-no-hits "$T/err" "[0 of 5 jobs cached]"
if [ -d "$C/images-v1" ]; then pass cache-in-BERTC_CACHE_DIR; else fail cache-in-BERTC_CACHE_DIR "no $C/images-v1"; fi
expect warm 0 "$B" compile "$T/tiny.yaml" -o "$T/warm.plan" --buckets 16,64
contains warm-all-hits "$T/err" "[5 of 5 jobs cached]"
expect no-cache 0 "$B" compile "$T/tiny.yaml" -o "$T/none.plan" --buckets 16,64 --no-cache -j 1
contains no-cache-no-hits "$T/err" "[0 of 5 jobs cached]"
if cmp -s "$T/cold.plan" "$T/warm.plan" && cmp -s "$T/cold.plan" "$T/none.plan"; then
    pass cache-byte-identical
else
    fail cache-byte-identical "cold, warm and --no-cache plans differ"
fi

# Every entry damaged (cut in half): rebuilt, the same plan, entries repaired.
for f in "$C"/images-v1/*/*; do head -c 100 "$f" >"$f.cut" && mv "$f.cut" "$f"; done
expect damaged 0 "$B" compile "$T/tiny.yaml" -o "$T/damaged.plan" --buckets 16,64
contains damaged-rebuilt "$T/err" "[0 of 5 jobs cached]"
if cmp -s "$T/cold.plan" "$T/damaged.plan"; then pass damaged-same-plan; else fail damaged-same-plan "plans differ"; fi
expect repaired 0 "$B" compile "$T/tiny.yaml" -o "$T/repaired.plan" --buckets 16,64
contains repaired-hits "$T/err" "[5 of 5 jobs cached]"

# The default folder: $HOME/.cache/bertc/images-v1 (XDG_CACHE_HOME unset).
mkdir -p "$T/home"
env -u BERTC_CACHE_DIR -u XDG_CACHE_HOME HOME="$T/home" "$B" compile "$T/tiny.yaml" -o "$T/home.plan" \
    --buckets 16,64 >"$T/out" 2>"$T/err"
if [ -d "$T/home/.cache/bertc/images-v1" ] && cmp -s "$T/cold.plan" "$T/home.plan"; then
    pass cache-default-folder
else
    fail cache-default-folder "no $T/home/.cache/bertc/images-v1, or another plan: $(head -c 300 "$T/err")"
fi

# What the default architectures give, and which image each GPU runs.
expect inspect 0 "$B" inspect "$T/cold.plan" --json
if python3 - "$T/out" <<'PY' >"$T/py" 2>&1
import json, sys
j = json.load(open(sys.argv[1]))
assert j["archs"] == ["sm_75", "sm_80", "sm_90"], j["archs"]
kinds = [(im["arch"], im["kind"]) for im in j["images"]]
assert kinds == [("sm_75", "cubin"), ("sm_80", "cubin"), ("sm_90", "cubin"), ("compute_80", "ptx"),
                 ("compute_90", "ptx")], kinds
want = {"sm_75": "sm_75", "sm_80": "sm_80", "sm_86": "sm_80", "sm_89": "sm_80", "sm_90": "sm_90",
        "sm_100": "compute_90", "sm_120": "compute_90"}
assert j["serves"] == want, j["serves"]
print("ok")
PY
then pass default-images; else fail default-images "$(tail -3 "$T/py")"; fi
expect inspect-text 0 "$B" inspect "$T/cold.plan"
contains inspect-serves "$T/out" "sm_86 -> sm_80 (CUBIN)"
contains inspect-serves-ptx "$T/out" "sm_100 -> compute_90 (PTX, JIT)"
