#!/usr/bin/env bash
# Prints the device-tool calls that run the Spark job on the GPU machine after
# scripts/device/prepare-spark.sh: one call per piece (each carries .device-spark/N and stores
# it outside the working tree), then the run. Make them back to back: the machine keeps what a
# call stored only while it stays warm (about 30 s after a call).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
pieces=$(awk '$1 == "pieces" {print $2}' .device-spark/MANIFEST)
for i in $(seq 1 "$pieces"); do
  if [ "$i" -lt "$pieces" ]; then
    echo "call $i: carry [\".device-spark/$i\"]  command: bash scripts/device/spark-unpack.sh $i"
  else
    echo "call $i: carry [\".device-spark/$i\"]  command: bash scripts/device/spark-unpack.sh $i" \
      "&& OUT=\$OUT MPS=1 bash scripts/device/run-spark-gpu.sh local cluster"
  fi
done
