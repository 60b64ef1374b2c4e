#!/usr/bin/env bash
# Builds gemm_check (the GEMM check-and-time harness) into <repo>/.device-gemm/ (git-ignored):
# one binary, static CUDA runtime and C++ library, sm_90a code, so it runs on the GPU machine
# (driver only, no toolkit). On the GPU machine, from the repository root, with .device-gemm
# carried (it is ignored by git, so name it in the run's carry list):
#   run(command="bash scripts/device/run-gemm-check.sh", carry=[".device-gemm"])
# (gemm_check, then torch.matmul at GemmBench's shapes for the cuBLAS side, in the same call).
# (gemm_check --quick: correctness only.) Exit status 1 names a FAIL line: a wgmma or wmma result
# outside the TF32 bound.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(git rev-parse --show-toplevel)
mkdir -p "$root/.device-gemm"
log=$(mktemp)
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a -cudart static \
  -Xcompiler -static-libstdc++,-static-libgcc --resource-usage \
  -o "$root/.device-gemm/gemm_check" gemm_check.cu >"$log" 2>&1 || { cat "$log"; rm -f "$log"; exit 1; }
grep -E "gemm90|spill|error|warning" "$log" | grep -B1 -E "[1-9][0-9]* bytes spill|error|warning" || true
# the TMA kernels of gemm_sm90_next.cuh: registers and spills, one line each
grep -A3 "Compiling entry function 'gemm90t" "$log" | grep -E "Compiling|spill|Used" | paste - - - |
  sed -E "s/ptxas info *: Compiling entry function '([a-z0-9_]+)'.*bytes stack frame, ([0-9]+) bytes spill stores.*Used ([0-9]+) registers.*/  \1: \3 registers, \2 bytes spilled/" || true
rm -f "$log"
ls -l "$root/.device-gemm/gemm_check"
