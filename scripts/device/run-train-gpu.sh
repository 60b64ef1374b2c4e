#!/usr/bin/env bash
# Issue 14 on the GPU machine, from the repository root, after carrying .device-carry/
# (scripts/device/prepare.sh): the GPU trainer (io.treeline.examples.gpu.GpuTrainMain) at 1
# rank and at K ranks on the one GPU (threads of one JVM; processes, with CUDA MPS started here
# and quit before the script ends), overlap on and off, then the same MLP in PyTorch on the
# same GPU, and the GEMMs of both. Everything goes to stdout and to $OUT (or out/train-gpu):
# train-gpu.log, train-gpu.csv (one row per epoch of every Treeline run).
# usage: scripts/device/run-train-gpu.sh [sections], sections from
#   gemm train1 train-threads train-processes train-nomps big big-processes big-gemm big-threads-ab
#   torch torch-big (default: all but big-gemm and big-threads-ab)
# big-gemm: the 20M model at 1 rank on the TMA GEMM (--gemm auto) and on the cp.async wgmma
# kernels (--gemm wgmma), alternating, two passes.
# big-threads-ab: the 20M model at RANKS threads, overlap on and off, alternating (PASSES, 2)
# between the classes of a baseline revision ($BASELINE, default .device-baseline:
# scripts/device/prepare-baseline.sh REV) and the carried build, same jars, same minutes.
# EPOCHS (default 10), RANKS (default 2), BIG_EPOCHS (default 2), RUN_TIMEOUT (s per Treeline
# run, 150), TORCH_MODES (eager,compile,reduce-overhead), TORCH_TIMEOUT (240) in the environment.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. scripts/device/env.sh
out=${OUT:-out/train-gpu}
mkdir -p "$out"
log="$out/train-gpu.log"
csv="$out/train-gpu.csv"
epochs=${EPOCHS:-10}
k=${RANKS:-2}
big_epochs=${BIG_EPOCHS:-2}
sections=${*:-gemm train1 train-threads train-processes train-nomps big big-processes torch torch-big}
has() { [[ " $sections " == *" $1 "* ]]; }
say() { echo "== $*" | tee -a "$log"; }
train() { # label, then GpuTrainMain options
  local label=$1
  shift
  say "$label: GpuTrainMain $* (start $(date -u +%H:%M:%S))"
  timeout "${RUN_TIMEOUT:-150}" "$JAVA" -Xmx4g $JMODS -cp "$CP" io.treeline.examples.gpu.GpuTrainMain --data "$DATA" \
    --csv "$csv" --label "$label" "$@" 2>&1 | grep -v '^WARNING: \|INFO' | tee -a "$log"
  echo "exit ${PIPESTATUS[0]}" | tee -a "$log"
}
mps_dir=""
mps_start() {
  mps_dir=$(mktemp -d)
  mkdir -p "$mps_dir/pipe" "$mps_dir/log"
  export CUDA_MPS_PIPE_DIRECTORY="$mps_dir/pipe" CUDA_MPS_LOG_DIRECTORY="$mps_dir/log"
  nvidia-cuda-mps-control -d && say "CUDA MPS control daemon started ($mps_dir)"
}
mps_stop() {
  if [ -n "$mps_dir" ]; then
    echo quit | nvidia-cuda-mps-control && say "CUDA MPS quit"
    unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
    mps_dir=""
  fi
}
trap mps_stop EXIT

say "$(date -u +%FT%TZ) $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader)"
if has gemm; then
  say "GEMM: Treeline's TF32 GEMMs (GemmBench), then torch.matmul (TF32) at the same shapes"
  timeout 120 "$JAVA" $JMODS -cp "$CP" io.treeline.kernels.GemmBench 2>&1 | tee -a "$log"
  timeout 120 python3 scripts/device/torch_mlp.py --gemm 2>&1 | tee -a "$log"
fi
if has train1; then
  train one-rank-overlap --ranks 1 --epochs "$epochs" --overlap on
  train one-rank-serial --ranks 1 --epochs "$epochs" --overlap off
fi
if has train-threads; then
  train "threads-$k-overlap" --ranks "$k" --mode threads --epochs "$epochs" --overlap on
  train "threads-$k-serial" --ranks "$k" --mode threads --epochs "$epochs" --overlap off
fi
if has train-processes; then
  mps_start
  train "processes-$k-mps-overlap" --ranks "$k" --mode processes --epochs "$epochs" --overlap on
  train "processes-$k-mps-serial" --ranks "$k" --mode processes --epochs "$epochs" --overlap off
  mps_stop
fi
if has train-nomps; then
  train "processes-$k-nomps-overlap" --ranks "$k" --mode processes --epochs 2 --overlap on
fi
if has big; then
  train big-one-rank-overlap --ranks 1 --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap on
  train big-one-rank-serial --ranks 1 --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap off
  train "big-threads-$k-overlap" --ranks "$k" --mode threads --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap on
  train "big-threads-$k-serial" --ranks "$k" --mode threads --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap off
fi
if has big-gemm; then # the 20M model on the TMA kernels and on the cp.async wgmma ones, 1 rank
  for pass in 1 2; do
    train "big-gemm$pass-tma" --ranks 1 --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap on --gemm auto
    train "big-gemm$pass-wgmma" --ranks 1 --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap on --gemm wgmma
  done
fi
if has big-threads-ab; then
  bl=${BASELINE:-.device-baseline}
  base=$(mktemp -d)
  python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
    "$bl/classes.tar.xz" "$base"
  base_cp="$base/examples:$base/barrier-exec:$base/native-collectives:$base/kernels"
  base_cp="$base_cp:$(ls .device-carry/lib/*.jar | tr '\n' ':')"
  say "A/B: baseline $(cat "$bl/REV"), current: the carried build"
  for pass in $(seq "${PASSES:-2}"); do
    for ov in on off; do
      CP="$base_cp" train "ab$pass-base-big-threads-$k-$ov" --ranks "$k" --mode threads \
        --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap "$ov"
      train "ab$pass-current-big-threads-$k-$ov" --ranks "$k" --mode threads \
        --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap "$ov"
    done
  done
  rm -rf "$base"
fi
if has big-processes; then
  mps_start
  train "big-processes-$k-mps-overlap" --ranks "$k" --mode processes --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap on
  train "big-processes-$k-mps-serial" --ranks "$k" --mode processes --hidden 4096,4096 --batch 512 --epochs "$big_epochs" --overlap off
  mps_stop
fi
if has torch; then
  say "PyTorch, same MLP and batch, data on the GPU"
  timeout "${TORCH_TIMEOUT:-240}" python3 scripts/device/torch_mlp.py --data "$DATA" --epochs 3 \
    --modes "${TORCH_MODES:-eager,compile,reduce-overhead}" 2>&1 \
    | grep -v Warning | tee -a "$log"
fi
if has torch-big; then
  say "PyTorch, 784-4096-4096-10 at batch 512"
  timeout 200 python3 scripts/device/torch_mlp.py --data "$DATA" --hidden 4096,4096 --batch 512 \
    --epochs 3 --modes eager,compile 2>&1 | grep -v Warning | tee -a "$log"
fi
mps_stop
say "done $(date -u +%FT%TZ)"
