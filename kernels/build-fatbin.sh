#!/usr/bin/env bash
# Compiles src/main/cuda/treeline.cu into one fatbin (sm_80, sm_86, sm_89, sm_90 cubins +
# compute_90 PTX) and src/main/cuda/gemm_sm90.cu (the wgmma GEMM) into a separate sm_90a cubin
# (loaded only on compute capability 9.0) under target/classes, when nvcc is on the PATH or in
# $CUDA_HOME/bin. Without nvcc the
# build still succeeds, says so, and the jar has no GPU path. Called by the Maven build.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
out=target/classes/io/treeline/kernels
nvcc=$(command -v nvcc || true)
if [ -z "$nvcc" ] && [ -n "${CUDA_HOME:-}" ] && [ -x "$CUDA_HOME/bin/nvcc" ]; then
  nvcc="$CUDA_HOME/bin/nvcc"
fi
if [ -z "$nvcc" ]; then
  echo "[treeline-kernels] nvcc not found (PATH, CUDA_HOME): building without the GPU path"
  exit 0
fi
mkdir -p "$out"
stamp="$out/treeline.fatbin"
hopper="$out/treeline_sm90a.cubin"
if [ -f "$stamp" ] && [ -f "$hopper" ] && [ -z "$(find src/main/cuda -newer "$stamp" -print -quit)" ] \
    && [ -z "$(find src/main/cuda -newer "$hopper" -print -quit)" ]; then
  echo "[treeline-kernels] fatbin up to date"
  exit 0
fi
echo "[treeline-kernels] $("$nvcc" --version | tail -1): compiling for sm_80 sm_86 sm_89 sm_90 + PTX"
"$nvcc" -fatbin -O3 -std=c++17 \
  -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
  -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90 \
  -gencode arch=compute_90,code=compute_90 \
  -o "$out/treeline.fatbin" src/main/cuda/treeline.cu
echo "[treeline-kernels] wrote $out/treeline.fatbin ($(stat -c %s "$out/treeline.fatbin") bytes)"
echo "[treeline-kernels] compiling the wgmma GEMM for sm_90a"
"$nvcc" -cubin -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a \
  -o "$hopper" src/main/cuda/gemm_sm90.cu
echo "[treeline-kernels] wrote $hopper ($(stat -c %s "$hopper") bytes)"
