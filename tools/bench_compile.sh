#!/bin/sh
# Compile-time and plan-cost benchmark for a BERT-base-sized model
# (random weights; see tools/make_bench_bert.py).  Not a test: run by hand
# or with `make bench-compile`.  Prints the per-stage compile times that
# `bertc compile` reports and the per-bucket launches / FLOPs / bytes.
#
#   sh tools/bench_compile.sh [BUILD_DIR]
set -eu
BUILD=${1:-build}
B="$BUILD/bertc"
M="$BUILD/hf/bench-bert-base"
[ -f "$M/model.safetensors" ] || python3 tools/make_bench_bert.py "$M"
"$B" import "$M" -o "$BUILD/bench-bert-base.yaml"
echo "== machine: $(nproc) cores, $(uname -m)"
for i in 1 2 3; do
    "$B" compile "$BUILD/bench-bert-base.yaml" -o "$BUILD/bench-bert-base.plan" 2>&1 | tail -2
done
"$B" inspect "$BUILD/bench-bert-base.plan" | grep -E '^(weights|bucket)'
