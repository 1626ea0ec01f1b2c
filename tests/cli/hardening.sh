#!/bin/sh
# What fuzzing and hostile use found (docs/testing.md, "Hardening"), each
# kept as a regression: YAML that import writes must load, and a loader
# error points at its line; outputs never follow a planted link, appear
# together or not at all, and never destroy an input; an ids file with a
# NUL byte, a mask value other than 0/1 on the reference executor, a
# vocabulary that cannot serve, and an output folder that does not exist
# are clear errors; plans can be pinned by digest.
. tests/cli/lib/common.sh

PLAN="$BUILD/plans/tiny-bert-fp32.plan"
YAML="$BUILD/plans/tiny-bert.yaml"
HF="$BUILD/hf/tiny-bert"

# A: a C1 control (and a line separator) in a special token survive import as escapes
cp -R "$HF" "$T/c1"
python3 - "$T/c1" <<'PY'
import json, sys
d = sys.argv[1]
c = json.load(open(d + "/tokenizer_config.json"))
c["mask_token"] = "[MASK]\u0099\u2028"
json.dump(c, open(d + "/tokenizer_config.json", "w"))
PY
expect import-c1-control 0 "$B" import "$T/c1" -o "$T/c1.yaml"
expect import-c1-output-loads 0 "$B" run "$T/c1.yaml" --ids "1 2 3"
# ... and a C1 control in a YAML is reported at its own line
printf 'bertc: 1\nname: x\n# a comment\nweights: "a\302\231b"\n' >"$T/bad.yaml"
expect yaml-c1-error 2 "$B" compile "$T/bad.yaml" -o "$T/bad.plan"
contains yaml-c1-place "$T/err" "bad.yaml:4:12: YAML syntax error: control characters are not allowed (#99"

# C: a link planted at likely temporary names is never followed
echo victim >"$T/victim"
for n in 1 2 $$ tmp; do ln -s "$T/victim" "$T/o.npy.tmp.$n"; done
expect planted-link-run 0 "$B" run "$PLAN" --device emu --ids "1 2 3" --output "$T/o.npy"
if [ "$(cat "$T/victim")" = victim ] && [ -f "$T/o.npy" ] && [ ! -L "$T/o.npy" ]; then pass planted-link-untouched; else fail planted-link-untouched "the link target changed"; fi

# D: outputs commit together
expect outputs-together 2 "$B" run "$PLAN" --device emu --ids "1 2 3" --output "$T/ok.npy" --pooled-output /nonexistent/p.npy
absent outputs-together-none "$T/ok.npy"
expect outputs-together-text 2 "$B" run "$PLAN" --device emu --text hello --output "$T/ok2.npy" --embedding-output /nonexistent/e.npy
absent outputs-together-text-none "$T/ok2.npy"

# E: a NUL byte in an ids file
printf '1 2\0003 4' >"$T/ids.txt"
expect ids-file-nul 2 "$B" run "$PLAN" --device emu --ids-file "$T/ids.txt"
contains ids-file-nul-msg "$T/err" "byte 3 is a NUL"

# F: the reference executor takes a mask as the runtime does
expect ref-mask-0-1 2 "$B" run "$YAML" --ids "1 2 3" --mask "1 2 1"
contains ref-mask-msg "$T/err" "attention_mask[1] = 2 (expected 0 or 1)"
# ... a vocabulary that cannot serve fails at import, not at the first request
for v in empty folder nounk; do
    cp -R "$HF" "$T/v-$v"
    case $v in
        empty) : >"$T/v-$v/vocab.txt" ;;
        folder) rm "$T/v-$v/vocab.txt"; mkdir "$T/v-$v/vocab.txt" ;;
        nounk) grep -v '^\[UNK\]$' "$HF/vocab.txt" >"$T/v-$v/vocab.txt" ;;
    esac
    expect "import-vocab-$v" 2 "$B" import "$T/v-$v" -o "$T/v-$v.yaml"
    absent "import-vocab-$v-no-yaml" "$T/v-$v.yaml"
done
contains import-vocab-nounk-msg "$T/err" "unk_token '[UNK]' (tokenizer_config.json) is not a line of the vocabulary"
# ... and an output folder that does not exist fails before any work
expect compile-missing-folder 2 "$B" compile "$YAML" -o "$T/nodir/x.plan" --arch emu
contains compile-missing-folder-msg "$T/err" "nodir/x.plan: cannot write: No such file or directory"

# Outputs that would destroy inputs are refused, and the inputs survive
cp "$PLAN" "$T/p.plan"
expect no-output-over-plan 1 "$B" run "$T/p.plan" --device emu --ids "1 2" --output "$T/p.plan"
if cmp -s "$PLAN" "$T/p.plan"; then pass plan-intact; else fail plan-intact "the plan changed"; fi
expect no-output-twice 1 "$B" run "$T/p.plan" --device emu --ids "1 2" --output "$T/x.npy" --pooled-output "$T/x.npy"
absent no-output-twice-none "$T/x.npy"
cp -R "$HF" "$T/hf"
cp "$T/hf/config.json" "$T/config.before"
expect no-import-over-config 1 "$B" import "$T/hf" -o "$T/hf/config.json"
if cmp -s "$T/hf/config.json" "$T/config.before"; then pass config-intact; else fail config-intact "config.json changed"; fi
"$B" import "$T/hf" -o "$T/m.yaml" 2>/dev/null
cp "$T/m.yaml" "$T/m.before"
expect no-compile-over-yaml 1 "$B" compile "$T/m.yaml" -o "$T/m.yaml" --arch emu
if cmp -s "$T/m.yaml" "$T/m.before"; then pass yaml-intact; else fail yaml-intact "the YAML changed"; fi

# Pinning: inspect prints the digest the tools pin with
DIGEST=$(python3 -c 'import hashlib,sys; print(hashlib.sha256(open(sys.argv[1],"rb").read()).hexdigest())' "$PLAN")
expect inspect-digest 0 "$B" inspect "$PLAN"
contains inspect-digest-line "$T/out" "sha256 $DIGEST"
expect run-pinned 0 "$B" run "$PLAN" --device emu --ids "1 2" --expect-sha256 "$DIGEST"
OTHER=$(echo "$DIGEST" | tr '0-9a-f' '1-9a-f0')
expect run-pinned-other 2 "$B" run "$PLAN" --device emu --ids "1 2" --expect-sha256 "$OTHER"
contains run-pinned-other-msg "$T/err" "not the pinned $OTHER"
expect inspect-pinned-bad 1 "$B" inspect "$PLAN" --expect-sha256 xyz
