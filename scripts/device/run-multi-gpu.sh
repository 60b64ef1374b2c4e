#!/usr/bin/env bash
# Issue 8, on a machine with K GPUs (device kinds nvidia-h200-x2/-x4/-x8), from the repository
# root after carrying .device-carry/: one process per GPU. NVLink multicast stays off
# (NCCL_NVLS_ENABLE=0; Treeline creates no multicast objects). Writes into $OUT (or out/):
#   topo: nvidia-smi topo -m and ./treeline topo --measure (P2P matrix, IPC probe)
#   tests: the GPU tests with rank r on GPU r (flag barriers: the path one GPU cannot exercise)
#   bench-multi-gpu.csv: Treeline oneshot/twoshot/auto and NCCL 2.28 through PyTorch, same call
# usage: scripts/device/run-multi-gpu.sh K [max-bytes, default 4G]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. scripts/device/env.sh
k=${1:?number of GPUs}
max=${2:-4G}
out=${OUT:-out/multi-gpu}
mkdir -p "$out"
nvidia-smi topo -m | tee "$out/nvidia-smi-topo-m.txt"
OUT="$out" bash scripts/device/run-topo.sh > "$out/topo-run.txt" 2>&1 || echo "topo failed: see $out/topo-run.txt"
TREELINE_GPUS=$k bash scripts/device/run-gpu-tests.sh --select-package io.treeline.gpu \
  > "$out/gpu-tests.txt" 2>&1 || echo "GPU tests failed: see $out/gpu-tests.txt"
csv="$out/bench-multi-gpu.csv"
rm -f "$csv"
"$JAVA" -cp "$CP" io.treeline.gpu.DeviceBench --gpus "$k" --ranks "$k" \
  --algo oneshot,twoshot,auto -b 8 -e "$max" -f 2 -n 20 -w 5 --csv "$csv" 2>&1 \
  | grep -v INFO | tee "$out/bench-treeline.txt"
python3 scripts/device/nccl_allreduce.py --gpus "$k" --csv "$csv" -b 8 -e "$max" -f 2 -n 20 -w 5 \
  | tee "$out/bench-nccl.txt"
echo "wrote $csv; plot here with ./treeline bench --device --from-csv $csv"
