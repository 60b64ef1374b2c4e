#!/usr/bin/env bash
# On the GPU machine, from the repository root, after carrying .device-carry/ (which has no
# Maven and no JDK, only the jlink runtime .device-carry/jre): prints `./treeline topo --measure`
# as JSON and as text (GPUs by UUID and PCI id from the CUDA driver, link classes, which pairs
# open each other's IPC handles, the 1 MiB / 64 MiB copy bandwidth matrix, PCIe link health),
# and copies both, with nvidia-smi's own view, into $OUT when it is set.
#
# The class path is whatever of these scripts/device/prepare.sh left in .device-carry/:
#   classes/      kernels (GpuDevices, IpcOpenProbe, P2pBandwidth)
#   nc-classes/   native-collectives (the topology report)
#   ex-classes/   examples (the ./treeline command line)
#   lib/*.jar     JCuda and its natives
# If nc-classes/ or ex-classes/ are missing, build and copy them on the host first:
#   ./mvnw -q -B -pl examples -am install -DskipTests
#   cp -r native-collectives/target/classes .device-carry/nc-classes
#   cp -r examples/target/classes .device-carry/ex-classes
# Usage: scripts/device/run-topo.sh [extra topo options, e.g. --ipc-timeout 120]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. scripts/device/env.sh # unpacks the bundle on first use
c=.device-carry
java="$c/jre/bin/java"
[ -x "$java" ] || { echo "run-topo: no $java; run scripts/device/prepare.sh on the host" >&2; exit 2; }
cp=""
for d in classes nc-classes ex-classes; do
  [ -d "$c/$d" ] && cp="$cp${cp:+:}$c/$d"
done
for j in "$c"/lib/*.jar; do
  case "$(basename "$j")" in
    junit-platform-console-standalone-*) ;; # the test launcher: not needed, and it shades JUnit
    *) [ -f "$j" ] && cp="$cp${cp:+:}$j" ;;
  esac
done
for d in nc-classes ex-classes; do
  if [ ! -d "$c/$d" ]; then
    echo "run-topo: $c/$d is missing: the topology report needs native-collectives and examples" \
      "classes (see the head of this script for the two cp commands)" >&2
    exit 2
  fi
done
# CUDA numbers devices fastest first unless told otherwise; PCI bus order makes the CUDA
# ordinals in the report match nvidia-smi's GPU indices
export CUDA_DEVICE_ORDER=PCI_BUS_ID
export NCCL_NVLS_ENABLE=0
topo() { "$java" -cp "$cp" io.treeline.examples.cli.Treeline topo "$@"; }
out="${OUT:-}"
if command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=index,uuid,pci.bus_id,name,driver_version --format=csv
  if [ -n "$out" ]; then
    nvidia-smi topo -m > "$out/nvidia-smi-topo-m.txt" 2>&1 || true
    nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv > "$out/nvidia-smi-gpus.csv" 2>&1 || true
  fi
fi
echo "== topo --measure --json"
if [ -n "$out" ]; then
  topo --measure --json "$@" | tee "$out/topo-measure.json"
  echo "== topo --measure"
  topo --measure "$@" | tee "$out/topo-measure.txt"
else
  topo --measure --json "$@"
  echo "== topo --measure"
  topo --measure "$@"
fi
