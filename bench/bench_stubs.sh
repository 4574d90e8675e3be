#!/usr/bin/env bash
# Wall time of compiling torchgen 2.13's VariableType shards + Functions.cpp against the
# stub headers (all TUs, -j2) versus ONE shard against the wheel's real headers.
# Usage: bench/bench_stubs.sh [REF_DIR]   (REF_DIR: a gen_autograd output; generated if absent)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
tg=$(python -c 'import torchgen, os; print(os.path.dirname(torchgen.__file__))')
ti=$(dirname "$tg")/torch/include
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
ref=${1:-}
if [ -z "$ref" ]; then
  ref=$work/ref; mkdir -p "$ref"
  python -m torchgen.packaged.autograd.gen_autograd "$tg/packaged/ATen/native/native_functions.yaml" \
    "$tg/packaged/ATen/native/tags.yaml" "$ref" "$tg/packaged/autograd" > /dev/null
fi
gen=$work/gen
python -m vtgen_build.stubs.gen_decls "$tg" "$gen" > /dev/null
mkdir -p "$gen/torch/csrc/autograd"
ln -s "$ti/torch/csrc/autograd/FunctionsManual.h" "$gen/torch/csrc/autograd/FunctionsManual.h"
ln -s "$ref" "$gen/torch/csrc/autograd/generated"
jobs=${JOBS:-2}
start=$(date +%s.%N)
ls "$ref"/VariableType_[0-9]*.cpp "$ref/Functions.cpp" |
  xargs -P "$jobs" -I{} g++ -std=c++17 -fsyntax-only -I "$here/vtgen_build/stubs/include" -I "$gen" {}
stub=$(echo "$(date +%s.%N) - $start" | bc)
real_inc=$work/real; mkdir -p "$real_inc/torch/csrc/autograd"; ln -s "$ref" "$real_inc/torch/csrc/autograd/generated"
start=$(date +%s.%N)
g++ -std=c++17 -fsyntax-only -w -I "$real_inc" -I "$ti" -I "$ti/torch/csrc/api/include" "$ref/VariableType_0.cpp"
real=$(echo "$(date +%s.%N) - $start" | bc)
printf 'stubs: all %s TUs, -j%s: %.1f s\nreal headers: VariableType_0.cpp alone: %.1f s\n' \
  "$(ls "$ref"/VariableType_[0-9]*.cpp "$ref/Functions.cpp" | wc -l)" "$jobs" "$stub" "$real"
