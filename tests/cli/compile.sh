#!/bin/sh
# `bertc compile` and `bertc inspect` end to end: a plan for every fixture
# (each a different activation / token types / pooler / storage dtype),
# determinism, the JSON fields `inspect --json` promises, the per-layer
# launch budget, the kernel source view, and bad input (no plan written).
. tests/cli/lib/common.sh

for m in tiny-bert tiny-bert-prefixed tiny-bert-relu tiny-bert-tanh; do
    expect "import-$m" 0 "$B" import "$BUILD/hf/$m" -o "$T/$m.yaml"
done

# Every fixture compiles (fp16 default archs for one, single arch for the rest to keep CI fast).
expect compile-tiny 0 "$B" compile "$T/tiny-bert.yaml" -o "$T/tiny.plan"
expect compile-tiny-again 0 "$B" compile "$T/tiny-bert.yaml" -o "$T/tiny2.plan" -j 1
if cmp -s "$T/tiny.plan" "$T/tiny2.plan"; then pass compile-deterministic; else fail compile-deterministic "two compiles differ"; fi
expect compile-prefixed-bf16 0 "$B" compile "$T/tiny-bert-prefixed.yaml" -o "$T/prefixed.plan" --precision bf16 --arch sm_80
expect compile-relu-fp32 0 "$B" compile "$T/tiny-bert-relu.yaml" -o "$T/relu.plan" --precision fp32 --arch sm_90,emu --buckets 16,48
# One arch and the emulated device: four images where the image table once had
# room for three (2 per arch + 1), and the fourth was written past its end.
expect inspect-relu-images 0 "$B" inspect "$T/relu.plan" --json
if python3 -c '
import json, sys
got = [(im["arch"], im["kind"]) for im in json.load(open(sys.argv[1]))["images"]]
want = [("sm_90", "cubin"), ("compute_80", "ptx"), ("compute_90", "ptx"), ("emu", "emu")]
assert got == want, got
' "$T/out" 2>"$T/py"; then pass relu-one-arch-images; else fail relu-one-arch-images "$(tail -1 "$T/py")"; fi
expect run-relu-emu 0 "$B" run "$T/relu.plan" --device emu --ids "101 7 42 102"
# --predict all models the GPUs that run the plan (8.x JITs its compute_80 PTX) and names the T4, which does not
expect predict-all-served 0 "$B" inspect "$T/relu.plan" --predict all --json
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
assert [p["gpu"] for p in j["predictions"]] == ["a10", "l4", "l40s", "a100", "h100", "h200", "b200"], j["predictions"]
assert [n["gpu"] for n in j["not_served"]] == ["t4"] and "sm_75" in j["not_served"][0]["why"], j["not_served"]
' "$T/out" 2>"$T/py"; then pass predict-all-served-json; else fail predict-all-served-json "$(tail -1 "$T/py")"; fi
expect predict-all-served-text 0 "$B" inspect "$T/relu.plan" --predict all
contains predict-all-served-text-t4 "$T/out" "not modelled on t4: the plan has no kernel image for sm_75"
expect compile-tanh 0 "$B" compile "$T/tiny-bert-tanh.yaml" -o "$T/tanh.plan" --arch sm_86

expect inspect-json 0 "$B" inspect "$T/tiny.plan" --json
cp "$T/out" "$T/tiny.json"
if python3 - "$T/tiny.json" <<'PY' >"$T/py" 2>&1
import json, sys
j = json.load(open(sys.argv[1]))
for key in ("format_version", "precision", "fusion", "archs", "weights_bytes", "arena_bytes", "buckets"):
    assert key in j, key
assert j["precision"] == "fp16", j["precision"]
# the default GPUs: sm_86 and sm_89 run the sm_80 CUBIN
assert j["archs"] == ["sm_75", "sm_80", "sm_90"], j["archs"]
assert j["serves"]["sm_86"] == "sm_80" and j["serves"]["sm_89"] == "sm_80", j["serves"]
assert [b["seq_len"] for b in j["buckets"]] == [32, 64], [b["seq_len"] for b in j["buckets"]]
layers = 3
for b in j["buckets"]:
    for key in ("seq_len", "launches", "flops", "min_hbm_bytes", "steps"):
        assert key in b, key
    assert b["launches"] == len(b["steps"])
    # <= 7 per encoder layer + embedding + pooler
    assert b["launches"] <= 7 * layers + 2, b["launches"]
    assert abs(sum(s["flops"] for s in b["steps"]) - b["flops"]) <= 1e-6 * b["flops"] + 1
    assert sum(s["min_hbm_bytes"] for s in b["steps"]) == b["min_hbm_bytes"]
# the matmul FLOPs of a layer at S are at least 2*S*(4*H*H + 2*H*I)
b = j["buckets"][0]
S, H, I = b["seq_len"], 96, 200
assert b["flops"] >= layers * 2 * S * (4 * H * H + 2 * H * I), b["flops"]
# one image per arch plus the PTX newer GPUs JIT: the tensor-core path
# (compute_80; compute_90 for sm_90's generation), never Turing's compute_75
kinds = sorted((im["arch"], im["kind"]) for im in j["images"])
assert ("compute_80", "ptx") in kinds and ("compute_90", "ptx") in kinds, kinds
assert ("compute_75", "ptx") not in kinds, kinds
# inspect says which path each image takes: float16 attention has tensor cores on sm_75 too
att = [i for i, k in enumerate(j["kernels"]) if k["entry"].startswith("bertc_attention_")]
assert att, j["kernels"]
for im in j["images"]:
    if im["kind"] != "emu":
        assert im["kernels"][att[0]]["path"] in ("mma.m16n8k16", "mma.m16n8k8"), im
assert [im for im in j["images"] if im["arch"] == "sm_75"][0]["kernels"][att[0]]["path"] == "mma.m16n8k8"
print("ok")
PY
then pass inspect-json-fields; else fail inspect-json-fields "$(tail -3 "$T/py")"; fi

# Fusion levels: the default fuses each dense layer's residual + LayerNorm
# into its GEMM (5 launches per encoder layer), baseline keeps 7.
expect compile-tiny-baseline 0 "$B" compile "$T/tiny-bert.yaml" -o "$T/base.plan" --fusion baseline --arch emu --buckets 32
expect inspect-baseline 0 "$B" inspect "$T/base.plan" --json
cp "$T/out" "$T/base.json"
expect compile-tiny-default 0 "$B" compile "$T/tiny-bert.yaml" -o "$T/fused.plan" --fusion default --arch emu --buckets 32
expect inspect-default 0 "$B" inspect "$T/fused.plan" --json
cp "$T/out" "$T/fused.json"
if python3 - "$T/base.json" "$T/fused.json" <<'PY' >"$T/py" 2>&1
import json, sys
base, fused = (json.load(open(p)) for p in sys.argv[1:3])
layers = 3
assert base["fusion"] == "baseline" and fused["fusion"] == "default", (base["fusion"], fused["fusion"])
bb, fb = base["buckets"][0], fused["buckets"][0]
assert bb["launches"] == 7 * layers + 2, bb["launches"]
assert fb["launches"] == 5 * layers + 2, fb["launches"]
bt = [s.get("template") for s in bb["steps"]]
ft = [s.get("template") for s in fb["steps"]]
assert "gemm_ln" not in bt and "gemm_splitk" not in bt and bb["counter_bytes"] == 0, bt
assert ft.count("gemm_ln") == 2 * layers and ft.count("add_ln") == 0, ft
# FC1 + GELU per layer and the pooler; the QKV projection where the model
# scores gemm_splitk better than cuBLASLt (the plan's GPUs decide)
qkv = [s.get("template") or s["kind"] for s in fb["steps"] if s["name"].endswith("q+k+v")]
assert len(qkv) == layers and all(t in ("gemm_splitk", "gemm") for t in qkv), qkv   # "gemm": cuBLASLt
assert ft.count("gemm_splitk") == layers + 1 + qkv.count("gemm_splitk"), ft
for s in fb["steps"]:
    if s.get("template") in ("gemm_ln", "gemm_splitk"):
        assert s["ctas"] >= 1 and len(s["tile"]) == 2 and s["splits"] >= 1, s
# the fused plan moves fewer bytes: no activation round trip between a GEMM and its LayerNorm
assert fb["min_hbm_bytes"] < bb["min_hbm_bytes"], (fb["min_hbm_bytes"], bb["min_hbm_bytes"])
assert abs(fb["flops"] - bb["flops"]) <= 0.01 * bb["flops"], (fb["flops"], bb["flops"])
print("ok")
PY
then pass fusion-levels; else fail fusion-levels "$(tail -3 "$T/py")"; fi
expect compile-fusion-bad 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/x.plan" --fusion fast
contains compile-fusion-bad-msg "$T/err" "--fusion: 'fast' is not one of baseline, default"

expect inspect-text 0 "$B" inspect "$T/relu.plan"
contains inspect-text-bucket "$T/out" "bucket 16:"
contains inspect-text-bucket48 "$T/out" "bucket 48:"
contains inspect-text-gemm "$T/out" "cublasLt gemm"
# records of one text (MiniLM's split-K GEMMs of several buckets) say whose text they share
expect inspect-shared-text 0 "$B" inspect "$BUILD/plans/all-MiniLM-L6-v2-fp16.plan"
if python3 -c '
import re, sys
recs = [re.match(r"  \[(\d+)\] (\S+)( \(the text of \[(\d+)\]\))?$", l) for l in open(sys.argv[1])]
recs = [m for m in recs if m]
entries = [m.group(2) for m in recs]
shared = [m for m in recs if m.group(4)]
assert shared, "no record shares a text"
for m in recs:
    first = entries.index(m.group(2))
    want = None if first == int(m.group(1)) else first
    got = int(m.group(4)) if m.group(4) else None
    assert got == want, (m.group(0), want)
' "$T/out"; then pass inspect-shared-text-marks; else fail inspect-shared-text-marks "$(grep 'text of' "$T/out" | head -3)"; fi
entry=$(python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(j['kernels'][0]['entry'])" "$T/tiny.json")
expect inspect-source 0 "$B" inspect "$T/tiny.plan" --source "$entry"
if head -1 "$T/out" | grep -q '^// bertc template='; then pass inspect-source-header; else fail inspect-source-header "first line: $(head -1 "$T/out")"; fi
contains inspect-source-entry "$T/out" "$entry"
expect inspect-source-missing 2 "$B" inspect "$T/tiny.plan" --source nosuchkernel

# --tune: MiniLM's GEMM tilings chosen for the A100 alone are modelled faster there than
# --tune none's (one list, the compromise over every GPU sm_80 serves: A100, A10, L4, L40S);
# the plan runs its steps within their launch contracts on the emulated device
M="$BUILD/plans/all-MiniLM-L6-v2.yaml"
expect tune-none 0 "$B" compile "$M" -o "$T/m-all.plan" --buckets 128 --arch sm_80,emu --tune none
expect tune-none-inspect 0 "$B" inspect "$T/m-all.plan"
if ! grep -q "step list" "$T/out"; then pass tune-none-one-list; else fail tune-none-one-list "$(grep 'step list' "$T/out" | head -2)"; fi
expect tune-a100 0 "$B" compile "$M" -o "$T/m-a100.plan" --buckets 128 --arch sm_80,emu --tune a100
a=$("$B" inspect "$T/m-all.plan" --predict a100 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["buckets"][0]["predicted_us"])')
t=$("$B" inspect "$T/m-a100.plan" --predict a100 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["buckets"][0]["predicted_us"])')
if python3 -c 'import sys; a, t = map(float, sys.argv[1:]); sys.exit(0 if t < a else 1)' "$a" "$t"; then
    pass tune-a100-faster
else
    fail tune-a100-faster "tuned for the A100 $t us, --tune none $a us"
fi
expect tune-a100-contracts 0 "$B" bench "$T/m-a100.plan" --device emu --check-steps --seq-len 100
contains tune-a100-contracts-out "$T/out" "length 100:"
# --tune all: a step list per compute capability; the A100's (8.0) is the one --tune a100 chooses,
# so the model gives it the same time; the emulated device runs the first.  It is the default:
# the same plan, byte for byte, without the option
expect tune-all 0 "$B" compile "$M" -o "$T/m-tall.plan" --buckets 128 --arch sm_80,sm_90,emu --tune all
expect tune-all-default 0 "$B" compile "$M" -o "$T/m-tdef.plan" --buckets 128 --arch sm_80,sm_90,emu
if cmp -s "$T/m-tall.plan" "$T/m-tdef.plan"; then pass tune-all-is-default; else fail tune-all-is-default "the plans differ"; fi
expect tune-all-inspect 0 "$B" inspect "$T/m-tall.plan"
contains tune-all-lists "$T/out" "step list 2 of"
contains tune-all-a100-list "$T/out" "for compute capability 8.0 to 8.5: sm_80"
contains tune-all-h100-list "$T/out" "for compute capability 9.0 to 9.9: sm_90"
contains tune-all-b200-list "$T/out" "for compute capability 10.0 and newer: sm_100, sm_120"
ta=$("$B" inspect "$T/m-tall.plan" --predict a100 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["buckets"][0]["predicted_us"])')
if [ "$ta" = "$t" ]; then pass tune-all-a100-same; else fail tune-all-a100-same "--tune all $ta us on the A100, --tune a100 $t us"; fi
expect tune-all-json 0 "$B" inspect "$T/m-tall.plan" --json
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
v = j["variants"]
assert len(v) >= 2 and v[0]["cc_min"] == 0 and v[-1]["cc_max"] == 65535, v
assert all(a["cc_max"] + 1 == b["cc_min"] for a, b in zip(v, v[1:]))
assert v[0]["buckets"] == j["buckets"]
' "$T/out"; then pass tune-all-json-variants; else fail tune-all-json-variants "$(head -c 300 "$T/out")"; fi
# each CUBIN carries exactly the kernels of the lists of its capabilities (8.0-8.9: sm_80; 9.x:
# sm_90; 10.0 on, the B200's, runs the compute_90 PTX), the emulated device's image every kernel
# (plan format 9)
if python3 -c '
import json, sys
j = json.load(open(sys.argv[1]))
ent = [k["entry"] for k in j["kernels"]]
def used(lo, hi):
    return {s["kernel"] for v in j["variants"] if lo <= v["cc_min"] <= hi for b in v["buckets"] for s in b["steps"]
            if s.get("kernel")}
img = {i["arch"]: {ent[k] for k, x in enumerate(i["kernels"]) if x["carried"]} for i in j["images"]}
assert img["sm_80"] == used(80, 89), (sorted(img["sm_80"] ^ used(80, 89)))
assert img["sm_90"] == used(90, 99), (sorted(img["sm_90"] ^ used(90, 99)))
assert used(100, 65535) <= img["compute_90"]
assert img["emu"] == set(ent) and img["sm_90"] != set(ent)
' "$T/out"; then pass tune-all-carried; else fail tune-all-carried "$(python3 -c 'import json,sys; print([(i["arch"], sum(k["carried"] for k in i["kernels"])) for i in json.load(open(sys.argv[1]))["images"]])' "$T/out")"; fi
expect tune-all-contracts 0 "$B" bench "$T/m-tall.plan" --device emu --check-steps --seq-len 77
contains tune-all-contracts-out "$T/out" "step list 1)"
expect tune-unserved 1 "$B" compile "$M" -o "$T/bad-tune.plan" --arch sm_80 --tune h100
contains tune-unserved-msg "$T/err" "--tune: h100 (compute capability 9.0) runs none of the plan's architectures (--arch): add sm_90"
expect tune-unknown 1 "$B" compile "$M" -o "$T/bad-tune.plan" --tune v100
contains tune-unknown-msg "$T/err" "'v100' is not a GPU of the performance model (known: t4, a10"
if [ ! -e "$T/bad-tune.plan" ]; then pass tune-bad-no-plan; else fail tune-bad-no-plan "a plan was written"; fi

# Bad input: clear error, non-zero exit, no plan.
expect bad-arch 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/bad1.plan" --arch sm_80,sm_31
contains bad-arch-msg "$T/err" "sm_31"
contains bad-arch-lists "$T/err" "sm_90"
absent bad-arch-no-plan "$T/bad1.plan"
expect bad-bucket-mult 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/bad2.plan" --buckets 32,60
contains bad-bucket-mult-msg "$T/err" "'60' is not a positive multiple of 8"
absent bad-bucket-mult-no-plan "$T/bad2.plan"
# an empty item in a list is a slip to show, not to read around
for lst in "--buckets 32," "--buckets 8,,32" "--batch-tokens 64," "--arch ,emu" "--tune a100,"; do
    # shellcheck disable=SC2086
    expect "bad-list-empty-item ($lst)" 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/bad7.plan" $lst
    contains "bad-list-empty-item-msg ($lst)" "$T/err" "'${lst#* }' is not a comma-separated list"
done
absent bad-list-no-plan "$T/bad7.plan"
expect bad-bucket-max 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/bad3.plan" --buckets 32,128
contains bad-bucket-max-msg "$T/err" "above the model's max_seq_len 64"
expect bad-precision 1 "$B" compile "$T/tiny-bert.yaml" -o "$T/bad4.plan" --precision int8
printf 'bertc: 1\nname: x\nmax_seq_len: [\n' >"$T/broken.yaml"
expect bad-yaml 2 "$B" compile "$T/broken.yaml" -o "$T/bad5.plan"
contains bad-yaml-pos "$T/err" "broken.yaml:4:1:"
absent bad-yaml-no-plan "$T/bad5.plan"
head -c 20000 "$BUILD/hf/tiny-bert/model.safetensors" >"$T/trunc.safetensors"
sed "s|^weights: .*|weights: $T/trunc.safetensors|" "$T/tiny-bert.yaml" >"$T/trunc.yaml"
expect bad-weights 2 "$B" compile "$T/trunc.yaml" -o "$T/bad6.plan"
contains bad-weights-msg "$T/err" "trunc.safetensors"
absent bad-weights-no-plan "$T/bad6.plan"
cp "$T/tiny.plan" "$T/old.plan"
expect bad-keeps-old 2 "$B" compile "$T/broken.yaml" -o "$T/old.plan"
if cmp -s "$T/tiny.plan" "$T/old.plan"; then pass bad-keeps-old-plan; else fail bad-keeps-old-plan "existing plan changed"; fi
# A corrupted plan is rejected by inspect with an offset.
cp "$T/tiny.plan" "$T/flip.plan"
python3 -c "
import sys
p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=0x10; open(p,'wb').write(b)" "$T/flip.plan"
expect inspect-corrupt 2 "$B" inspect "$T/flip.plan"
contains inspect-corrupt-msg "$T/err" "checksum"

# Epilogue choice follows the model's activation: relu rides on cuBLASLt's
# RELU_BIAS epilogue; gelu (erf) and gelu_tanh go to the generated GEMM kernel,
# whose formula is the model's (cuBLASLt's GELU form is not documented).
"$B" inspect "$T/relu.plan" >"$T/relu.txt"
if grep -q "inter .*epilogue=bias+relu" "$T/relu.txt"; then pass epilogue-relu-cublaslt; else fail epilogue-relu-cublaslt "$(grep inter "$T/relu.txt" | head -2)"; fi
"$B" inspect "$T/tiny.plan" >"$T/tiny.txt"
if grep -q "inter .*kernel bertc_gemm_.*_gelu" "$T/tiny.txt" && ! grep -q "epilogue=gelu" "$T/tiny.txt"; then
    pass epilogue-gelu-kernel
else
    fail epilogue-gelu-kernel "$(grep inter "$T/tiny.txt" | head -2)"
fi
"$B" inspect "$T/tanh.plan" >"$T/tanh.txt"
if grep -q "inter .*kernel bertc_gemm_.*gelu_tanh" "$T/tanh.txt"; then pass epilogue-gelu-tanh-kernel; else fail epilogue-gelu-tanh-kernel "$(grep inter "$T/tanh.txt" | head -2)"; fi
