#!/bin/sh
# gpu_validate — what bertc does on a real GPU, in one run sized for a short
# loan of a GPU machine, and the same run on the emulated device, which the
# test suite makes (tests/cli/gpu_validate.sh) so that the script cannot rot
# in the long stretches between GPUs.
#
#   sh tools/gpu_validate.sh [--out DIR] [--work DIR] [--hf DIR] [--device cuda|emu]
#                            [--models LIST] [--deps DIR] [--no-build] [--full]
#   sh tools/gpu_validate.sh --fetch-deps DIR
#
# Why it is shaped this way.  A GPU machine comes rarely and for minutes: it
# may have no network, no libyaml or utf8proc, a different C compiler, and
# no Hugging Face weights.  So the default run needs nothing but the driver,
# the CUDA toolkit and python3: it builds bertc alone (the emulated suite is
# CI's job; --full adds it), makes BERT-base and BERT-large checkpoints
# with random weights (tools/make_bench_bert.py), and measures what the
# performance model and docs/performance.md claim, side by side:
#
#   1. the machine: GPU, capability, driver, clocks, toolkit;
#   2. per model, three plans for this GPU's arch at buckets 128 and 384:
#      the default, its --fusion baseline (the 7-launch structure every
#      ratio in docs/performance.md is against) and --tune none (one step
#      list, the compromise over the GPUs the arch serves);
#   3. correctness before any timing: every plan's steps against their
#      launch contracts on this GPU (bench --check-steps), and BERT-base in
#      fp16 and fp32 against transformers on the same GPU (gpu_compare.py,
#      when python3 has torch with CUDA and transformers);
#   4. latency: bench (p50/p90/p99, CUDA events and host), --no-pdl on
#      capability 9.0 and newer, bench --per-step --json with the model's
#      prediction for this GPU beside each step, PyTorch eager fp16 on the
#      same checkpoint, and packed batches' throughput;
#   5. summary.md (tools/gpu_summary.py): the tables to copy into docs/.
#
# A failing command is reported and the run goes on, so one fault does not
# lose the other measurements; the exit status is 1 if any failed.  The
# work folder (--work, default $BUILD/gpu-validate) keeps every command's
# output; the checkpoints are made once, under --hf (default $BUILD/hf);
# --out DIR receives three files: summary.md, log.txt (what this script
# printed) and raw.tar.gz (the work folder's outputs).
#
# --device emu runs the same steps on the emulated device with a tiny model
# (2 layers, hidden 128; buckets 32 and 64): the plans carry sm_90 so the
# model's prediction for an H100 is printed beside the CPU's times, which
# say nothing about a GPU.  --deps DIR unpacks the .deb files in DIR
# (libyaml and utf8proc, from --fetch-deps on a machine with apt) when the
# compiler cannot find yaml.h or utf8proc.h; they come from the machine
# that fetched them, so the GPU machine's C library must be as new.
set -u
BUILD=${BUILD:-build}
out="" work="" hfroot="" device=cuda models="" deps="" build=1 full=0

usage() {
    echo "usage: sh tools/gpu_validate.sh [--out DIR] [--work DIR] [--hf DIR] [--device cuda|emu] [--models LIST]" >&2
    echo "                                [--deps DIR] [--no-build] [--full]" >&2
    echo "       sh tools/gpu_validate.sh --fetch-deps DIR" >&2
    echo "LIST: comma-separated of base, large, tiny (default: base,large on cuda, tiny on emu)" >&2
    exit 2
}
die() { echo "gpu_validate: $*" >&2; exit 2; }

while [ $# -gt 0 ]; do
    case "$1" in
        --out|--work|--hf|--device|--models|--deps|--fetch-deps)
            [ $# -ge 2 ] || die "$1 needs a value"
            case "$1" in
                --out) out=$2 ;;
                --work) work=$2 ;;
                --hf) hfroot=$2 ;;
                --device) device=$2 ;;
                --models) models=$2 ;;
                --deps) deps=$2 ;;
                --fetch-deps)
                    mkdir -p "$2" && cd "$2" || exit 1
                    exec apt-get download libyaml-0-2 libyaml-dev libutf8proc2 libutf8proc-dev ;;
            esac
            shift 2 ;;
        --no-build) build=0; shift ;;
        --full) full=1; shift ;;
        -h|--help) usage ;;
        *) echo "gpu_validate: unknown argument '$1'" >&2; usage ;;
    esac
done
case "$device" in
    cuda) : "${models:=base,large}" ;;
    emu) : "${models:=tiny}"; [ "$full" -eq 0 ] || die "--full needs --device cuda" ;;
    *) die "--device must be cuda or emu, not '$device'" ;;
esac
for m in $(echo "$models" | tr , ' '); do
    case "$m" in base|large|tiny) ;; *) die "unknown model '$m' in --models (base, large, tiny)" ;; esac
done
: "${work:=$BUILD/gpu-validate}" "${hfroot:=$BUILD/hf}"
mkdir -p "$work" || exit 1
# A work folder of an earlier run keeps its checkpoints' YAML, not its outputs.
rm -f "$work"/*.out "$work"/*.err "$work"/*.plan "$work/failed.txt"
[ -z "$out" ] || mkdir -p "$out" || exit 1
B=$BUILD/bertc
failed=""

# run NAME CMD...: stdout in $work/NAME.out, stderr in $work/NAME.err, both
# printed; a failure is recorded, not fatal.  NAME.json: stdout not printed.
run() {
    name=$1
    shift
    echo "== $name: $*"
    "$@" >"$work/$name.out" 2>"$work/$name.err"
    rc=$?
    case "$name" in *.json) echo "(JSON in $work/$name.out)" ;; *) cat "$work/$name.out" ;; esac
    cat "$work/$name.err"
    if [ "$rc" -ne 0 ]; then
        echo "!! $name failed with status $rc"
        failed="$failed $name"
    fi
    return 0
}

# model_shape NAME: the checkpoint's shape (make_bench_bert.py) and the buckets
model_shape() {
    case "$1" in
        base) shape="" buckets=128,384 ;;
        large) shape="--layers 24 --hidden 1024 --heads 16 --intermediate 4096" buckets=128,384 ;;
        tiny) shape="--layers 2 --hidden 128 --heads 2 --intermediate 512 --vocab 1000 --max-pos 128" buckets=32,64 ;;
    esac
}

environment() {
    if [ -n "$deps" ] && ! printf '#include <yaml.h>\n#include <utf8proc.h>\n' | cc -E - >/dev/null 2>&1; then
        prefix=$work/deps
        for f in "$deps"/*.deb; do dpkg -x "$f" "$prefix" || die "cannot unpack $f"; done
        lib=$(dirname "$(find "$prefix" -name 'libyaml*.so*' | head -n 1)")
        export C_INCLUDE_PATH="$prefix/usr/include" LIBRARY_PATH="$lib" LD_LIBRARY_PATH="$lib:${LD_LIBRARY_PATH:-}"
    fi
    if [ -z "${CUDA_HOME:-}" ] && [ ! -f /usr/local/cuda/include/nvrtc.h ] && command -v nvcc >/dev/null; then
        CUDA_HOME=$(dirname "$(dirname "$(command -v nvcc)")")
        export CUDA_HOME
    fi
    for d in "${CUDA_HOME:-/usr/local/cuda}/lib64" /usr/local/nvidia/lib64; do
        [ -d "$d" ] && LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:$d"
    done
    export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}"
    if [ "$device" = cuda ]; then
        command -v nvidia-smi >/dev/null || die "no nvidia-smi: is this a GPU machine? (--device emu for a dry run)"
        cap=$(nvidia-smi --query-gpu=compute_cap --format=csv,noheader | head -n 1 | tr -d ' .')
        name=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -n 1)
        archs="sm_$cap" iters=500 step_iters=50 warmup=20
        gpu=""
        for g in t4 a10 l4 l40s a100 h100 h200 b200; do
            case " $(echo "$name" | tr '[:upper:]' '[:lower:]') " in *[!a-z0-9]"$g"[!a-z0-9]*) gpu=$g ;; esac
        done
        run env nvidia-smi --query-gpu=name,compute_cap,driver_version,clocks.max.sm,clocks.max.mem,memory.total --format=csv
    else
        # The dry run: the plans carry sm_90 for the model's prediction (an H100's).
        cap=0 archs="sm_90,emu" iters=2 step_iters=1 warmup=1 gpu=h100
        run env printf 'name, compute_cap, driver_version\nemulated device, 0.0, none\n'
    fi
    run toolkit sh -c "'${CUDA_HOME:-/usr/local/cuda}/bin/ptxas' --version | tail -n 1; cc --version | head -n 1"
    echo "device $device, archs $archs, performance model's GPU: ${gpu:-none}"
}

build_all() {
    [ "$build" -eq 1 ] || return 0
    # Warnings stay on, but a newer compiler's new warning must not stop a run on a lent GPU.
    run build make -j"$(nproc)" BUILD="$BUILD" WARN="-std=c11 -Wall -Wextra" "$B"
    [ -x "$B" ] || { echo "gpu_validate: no $B, nothing to measure" >&2; exit 1; }
    if [ "$full" -eq 1 ]; then
        run test make -j"$(nproc)" BUILD="$BUILD" test
        run plans make -j"$(nproc)" BUILD="$BUILD" plans PLAN_ARCH="$archs,emu" -W "$B"
        for t in test_e2e test_sentences test_families; do
            run "cuda-$t" env BERTC_TEST_DEVICE=cuda BERTC_BUILD_DIR="$BUILD" "$BUILD/tests/runtime/$t"
        done
        if [ -f "$BUILD/hf/all-MiniLM-L6-v2/model.safetensors" ]; then
            for p in fp32 fp16; do
                run "compile-minilm-$p" "$B" compile "$BUILD/plans/all-MiniLM-L6-v2.yaml" -o "$work/minilm-$p.plan" --precision "$p" --arch "$archs"
                run "compare-minilm-$p" python3 tools/gpu_compare.py "$work/minilm-$p.plan" "$BUILD/hf/all-MiniLM-L6-v2" "$p" --bertc "$B"
            done
        fi
    fi
}

# have_torch: python3 has torch and transformers, and torch sees a GPU when the device is one
have_torch() {
    python3 -c "import torch, transformers; assert '$device' != 'cuda' or torch.cuda.is_available()" >/dev/null 2>&1
}

# one_model NAME: its checkpoint, its three plans, their checks and timings
one_model() {
    m=$1
    model_shape "$m"
    hf=$hfroot/gpu-validate-$m
    # shellcheck disable=SC2086
    [ -f "$hf/model.safetensors" ] || run "checkpoint-$m" python3 tools/make_bench_bert.py "$hf" $shape
    run "import-$m" "$B" import "$hf" -o "$work/$m.yaml"
    for v in default baseline none; do
        case "$v" in default) flags="" ;; baseline) flags="--fusion baseline" ;; none) flags="--tune none" ;; esac
        plan=$work/$m-$v.plan
        # shellcheck disable=SC2086
        run "compile-$m-$v" "$B" compile "$work/$m.yaml" -o "$plan" --arch "$archs" --buckets "$buckets" $flags
        run "check-$m-$v" "$B" bench "$plan" --device "$device" --check-steps
        run "bench-$m-$v" "$B" bench "$plan" --device "$device" --iters "$iters" --warmup "$warmup"
        run "steps-$m-$v.json" "$B" bench "$plan" --device "$device" --per-step --json --iters "$step_iters" ${gpu:+--predict "$gpu"}
    done
    # PDL exists from capability 9.0; the dry run times --no-pdl too, so its path is exercised.
    if [ "$cap" -ge 90 ] || [ "$device" = emu ]; then
        run "bench-$m-default-nopdl" "$B" bench "$work/$m-default.plan" --device "$device" --iters "$iters" --warmup "$warmup" --no-pdl
    fi
    if [ "$device" = cuda ] && have_torch; then
        run "torch-$m" python3 tools/bench_torch.py "$hf" --iters "$iters" --lens "$buckets"
    fi
    rm -f "$work/$m-none.plan" "$work/$m-baseline.plan"
}

# numerics_and_batches NAME: the first model against transformers, and packed batches
numerics_and_batches() {
    m=$1
    model_shape "$m"
    hf=$hfroot/gpu-validate-$m
    first=${buckets%%,*} last=${buckets##*,}
    lens="7,$first,$last"
    run "compile-$m-fp32" "$B" compile "$work/$m.yaml" -o "$work/$m-fp32.plan" --arch "$archs" --buckets "$buckets" --precision fp32
    if have_torch; then
        run "compare-$m-fp32" python3 tools/gpu_compare.py "$work/$m-fp32.plan" "$hf" fp32 --device "$device" --lens "$lens" --bertc "$B"
        # PyTorch has no float16 matrix products on the CPU: fp16 is compared on a GPU only.
        [ "$device" = emu ] || run "compare-$m-fp16" python3 tools/gpu_compare.py "$work/$m-default.plan" "$hf" fp16 --lens "$lens" --bertc "$B"
    else
        echo "== compare-$m: skipped: python3 lacks torch and transformers (or torch sees no GPU)"
        echo "skipped: python3 lacks torch and transformers (or torch sees no GPU)" >"$work/compare-$m-skipped.out"
    fi
    rm -f "$work/$m-fp32.plan"
    if [ "$device" = cuda ]; then tokens=default batch=32 bi=20; else tokens=256 batch=4 bi=1; fi
    run "compile-$m-batch" "$B" compile "$work/$m.yaml" -o "$work/$m-batch.plan" --arch "$archs" --buckets "$buckets" --batch-tokens "$tokens"
    run "batch-$m" "$B" bench "$work/$m-batch.plan" --device "$device" --batch "$batch" --lengths "uniform:8-$first" --iters "$bi"
    rm -f "$work/$m-batch.plan"
}

main() {
    environment
    build_all
    for m in $(echo "$models" | tr , ' '); do one_model "$m"; done
    numerics_and_batches "$(echo "$models" | cut -d, -f1)"
    echo "$failed" | tr ' ' '\n' | sed '/^$/d' >"$work/failed.txt"
    run summary python3 tools/gpu_summary.py "$work"
    rm -f "$work"/*.plan
    if [ -n "$out" ]; then
        cp "$work/summary.out" "$out/summary.md"
        tar -czf "$out/raw.tar.gz" -C "$work" --exclude deps .
    fi
    if [ -n "$failed" ]; then echo "gpu_validate: failed:$failed"; return 1; fi
    echo "gpu_validate: every command succeeded; the tables are in ${out:-$work}/summary.md"
}

if [ -n "$out" ]; then
    # log.txt is what this run printed; the exit status survives the pipe through a file.
    rm -f "$work/status"
    { main; echo $? >"$work/status"; } 2>&1 | tee "$out/log.txt"
    status=$(cat "$work/status" 2>/dev/null) || status=2
    exit "$status"
fi
main
