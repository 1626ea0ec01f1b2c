#!/bin/sh
# GPU validation, for the day a machine with an NVIDIA GPU is at hand.  Needs
# the driver, the CUDA toolkit, and for steps 3-4 PyTorch with CUDA and
# transformers (pip install torch transformers numpy).  Run from the
# repository root:  sh tools/gpu_validate.sh
#
#   1. builds and runs the whole test suite (emulated device, as in CI);
#   2. runs the end-to-end tests again on the GPU: test_e2e, test_sentences and test_families, with
#      BERTC_TEST_DEVICE=cuda (the runtime's device choice is the only
#      difference) on plans that also carry the GPU's CUBIN;
#   3. compares bertc (fp32 and fp16 plans) with transformers on the GPU,
#      and checks every step of them against its launch contract with the
#      GPU's CUBINs (bertc bench --check-steps);
#   4. times bertc bench against PyTorch eager fp16 on the same model;
#   5. times every step on its own (bertc bench --per-step, text and JSON)
#      for MiniLM and a BERT-base-sized model at 128 tokens, with the
#      performance model's prediction for this GPU beside each step
#      (--predict, when the model's table has the GPU);
#   6. BERT-base with the default flags (a step list per compute
#      capability: this GPU runs the one chosen for it, when the
#      performance model's table has it) against --tune none (one list,
#      the compromise over the GPUs the archs serve), and the plan for
#      the default archs, whose step list for this GPU should time alike;
#   7. on compute capability 9.0 and newer, the graph with and without
#      programmatic dependent launch (--no-pdl).
set -eu
cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
arch="sm_$cap"
name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
echo "gpu: $name ($arch)"
# the performance model's name for this GPU (bertc inspect --predict), if it has one
model=""
for g in t4 a10 l4 l40s a100 h100 h200 b200; do
    case " $(echo "$name" | tr 'A-Z' 'a-z') " in *[!a-z0-9]"$g"[!a-z0-9]*) model=$g ;; esac
done
predict=${model:+--predict $model}

make -j"$(nproc)" test
make -j"$(nproc)" plans PLAN_ARCH="$arch,emu" -W build/bertc      # -W: rebuild the plans with the GPU arch
BERTC_TEST_DEVICE=cuda BERTC_BUILD_DIR=build build/tests/runtime/test_e2e
BERTC_TEST_DEVICE=cuda BERTC_BUILD_DIR=build build/tests/runtime/test_sentences
BERTC_TEST_DEVICE=cuda BERTC_BUILD_DIR=build build/tests/runtime/test_families

for prec in fp32 fp16; do
    build/bertc compile build/plans/all-MiniLM-L6-v2.yaml -o "build/gpu-minilm-$prec.plan" --precision "$prec" --arch "$arch"
    python3 tools/gpu_compare.py "build/gpu-minilm-$prec.plan" build/hf/all-MiniLM-L6-v2 "$prec"
    build/bertc bench "build/gpu-minilm-$prec.plan" --device cuda --check-steps
done
build/bertc bench build/gpu-minilm-fp16.plan --device cuda --iters 500
python3 tools/bench_torch.py build/hf/all-MiniLM-L6-v2 --iters 500

# shellcheck disable=SC2086
build/bertc bench build/gpu-minilm-fp16.plan --device cuda --per-step --iters 50 $predict
# shellcheck disable=SC2086
build/bertc bench build/gpu-minilm-fp16.plan --device cuda --per-step --json --iters 50 $predict >build/gpu-minilm-fp16-steps.json
[ -f build/hf/bench-bert-base/model.safetensors ] || python3 tools/make_bench_bert.py build/hf/bench-bert-base
build/bertc import build/hf/bench-bert-base -o build/bench-bert-base.yaml
build/bertc compile build/bench-bert-base.yaml -o build/gpu-bert-base.plan --arch "$arch" --buckets 128
build/bertc bench build/gpu-bert-base.plan --device cuda --check-steps
# the same model with one step list, the compromise over the GPUs sm_XY serves (--tune none)
build/bertc compile build/bench-bert-base.yaml -o build/gpu-bert-base-none.plan --arch "$arch" --buckets 128 --tune none
build/bertc bench build/gpu-bert-base-none.plan --device cuda --check-steps
build/bertc bench build/gpu-bert-base.plan --device cuda --iters 500
build/bertc bench build/gpu-bert-base-none.plan --device cuda --iters 500
# shellcheck disable=SC2086
build/bertc bench build/gpu-bert-base-none.plan --device cuda --per-step --iters 50 $predict
# the default archs' plan (a step list per capability): the device picks its own, which the
# check names; on this GPU it should time like build/gpu-bert-base.plan
build/bertc compile build/bench-bert-base.yaml -o build/gpu-bert-base-all.plan --buckets 128
build/bertc bench build/gpu-bert-base-all.plan --device cuda --check-steps
build/bertc bench build/gpu-bert-base-all.plan --device cuda --iters 500
# shellcheck disable=SC2086
build/bertc bench build/gpu-bert-base.plan --device cuda --per-step --iters 50 $predict
# shellcheck disable=SC2086
build/bertc bench build/gpu-bert-base.plan --device cuda --per-step --json --iters 50 $predict >build/gpu-bert-base-steps.json
if [ "${cap%?}" -ge 9 ]; then
    for plan in build/gpu-minilm-fp16.plan build/gpu-bert-base.plan; do
        build/bertc bench "$plan" --device cuda --iters 500
        build/bertc bench "$plan" --device cuda --iters 500 --no-pdl
    done
fi
