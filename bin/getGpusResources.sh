#!/usr/bin/env bash
# Spark GPU discovery script for Treeline (spark.executor.resource.gpu.discoveryScript,
# spark.worker.resource.gpu.discoveryScript). Prints the GPUs this executor may use as Spark's
# ResourceInformation JSON, e.g. {"name":"gpu","addresses":["0","1"]}.
#
# Addresses are nvidia-smi indices (as Spark's own examples/src/main/scripts/getGpusResources.sh
# prints them), or GPU UUIDs when TREELINE_GPU_ADDRESSES=uuid is set in the executor's
# environment (spark.executorEnv.TREELINE_GPU_ADDRESSES=uuid): UUIDs name a GPU the same way
# in every process, whatever renumbering isolation applies. When CUDA_VISIBLE_DEVICES is set
# (by the cluster manager, or an administrator), only the GPUs it names are printed.
# Treeline's executor plugin maps the address back to the GPU through nvidia-smi's index and
# UUID and refuses to start an executor whose address names no GPU it can see.
#
# Exits non-zero, saying why on stderr, when nvidia-smi is missing or fails, or lists no GPU.
set -u
me="getGpusResources.sh"
if ! command -v nvidia-smi >/dev/null 2>&1; then
  echo "$me: nvidia-smi is not on the PATH of $(hostname) (PATH=$PATH): cannot discover" \
    "GPUs. Install the NVIDIA driver's utilities on this node, or drop" \
    "spark.executor.resource.gpu.* for a job without GPUs." >&2
  exit 1
fi
if ! rows=$(nvidia-smi --query-gpu=index,uuid --format=csv,noheader 2>&1); then
  echo "$me: nvidia-smi --query-gpu=index,uuid failed on $(hostname): $rows" >&2
  exit 1
fi
mode="${TREELINE_GPU_ADDRESSES:-index}"
case "$mode" in
  index|uuid) ;;
  *) echo "$me: TREELINE_GPU_ADDRESSES=$mode: use index or uuid" >&2; exit 1 ;;
esac
visible=",${CUDA_VISIBLE_DEVICES:-},"
addresses=""
while IFS=', ' read -r index uuid; do
  [ -z "$index" ] && continue
  if [ -n "${CUDA_VISIBLE_DEVICES:-}" ] && [[ "$visible" != *",$index,"* ]] \
      && [[ "$visible" != *",$uuid,"* ]]; then
    continue
  fi
  if [ "$mode" = uuid ]; then a="$uuid"; else a="$index"; fi
  addresses="${addresses:+$addresses,}\"$a\""
done <<< "$rows"
if [ -z "$addresses" ]; then
  echo "$me: no GPU on $(hostname) (nvidia-smi listed: ${rows:-nothing};" \
    "CUDA_VISIBLE_DEVICES=${CUDA_VISIBLE_DEVICES:-unset})" >&2
  exit 1
fi
echo "{\"name\":\"gpu\",\"addresses\":[$addresses]}"
