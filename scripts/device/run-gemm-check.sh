#!/usr/bin/env bash
# On the GPU machine, in one call: the GEMM check-and-time harness (wgmma and wmma kernels
# against float64, same-run ratio; built on the host by kernels/src/test/cuda/build-gemm-check.sh
# into .device-gemm/, which is git-ignored and so must be carried), then torch.matmul (TF32,
# cuBLAS) at GemmBench's shapes. Arguments go to gemm_check (--quick, shape-name prefixes).
#   run(command="bash scripts/device/run-gemm-check.sh", carry=[".device-gemm"])
# Without arguments: gemm_check --quick first (correctness), then the timed run.
# Exit status: gemm_check's (0 all within the TF32 bound, 1 a FAIL line, 2 a CUDA error).
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
[ -f .device-gemm/gemm_check ] && [ ! -x .device-gemm/gemm_check ] && chmod +x .device-gemm/gemm_check
if [ ! -x .device-gemm/gemm_check ]; then
  echo "no .device-gemm/gemm_check: build it on the host (kernels/src/test/cuda/build-gemm-check.sh)" \
    "and carry .device-gemm" >&2
  exit 2
fi
if [ $# -eq 0 ]; then
  # correctness of every kernel first (one timed launch each), so a hang costs 150 s, not 420
  timeout 150 .device-gemm/gemm_check --quick
  rc=$?
  if [ $rc -eq 124 ]; then echo "gemm_check --quick timed out (a hung kernel?)" >&2; exit 124; fi
fi
timeout 400 .device-gemm/gemm_check "$@"
rc=$?
timeout 120 python3 scripts/device/torch_mlp.py --gemm
exit $rc
