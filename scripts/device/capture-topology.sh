#!/usr/bin/env bash
# Captures what ./treeline topo reads on a GPU machine, for fixtures and for sending a report to a
# colleague: nvidia-smi's topology matrix and GPU list, and the sysfs attributes of every NVIDIA
# PCI device and of the bridges above it (link speed and width, AER counters, NUMA node).
# Usage: scripts/device/capture-topology.sh OUTDIR
set -euo pipefail
out="${1:?usage: capture-topology.sh OUTDIR}"
mkdir -p "$out/sysfs/bus/pci/devices"
nvidia-smi topo -m > "$out/nvidia-smi-topo-m.txt" 2>&1 || echo "nvidia-smi topo -m failed" >&2
nvidia-smi --query-gpu=index,uuid,pci.bus_id,name --format=csv > "$out/nvidia-smi-gpus.csv" 2>&1 || true
attrs="vendor device class numa_node current_link_speed current_link_width max_link_speed
  max_link_width aer_dev_correctable aer_dev_fatal aer_dev_nonfatal"
copy_dev() { # $1 = bdf
  local d="/sys/bus/pci/devices/$1" t="$out/sysfs/bus/pci/devices/$1"
  [ -d "$d" ] || return 0
  mkdir -p "$t"
  for a in $attrs; do [ -r "$d/$a" ] && cat "$d/$a" > "$t/$a" 2>/dev/null || true; done
  # the path from the root complex, as the parent chain: real sysfs has it in the symlink
  readlink -f "$d" | sed 's|^/sys/devices/||' > "$t/.path"
}
for d in /sys/bus/pci/devices/*; do
  bdf=$(basename "$d")
  vendor=$(cat "$d/vendor" 2>/dev/null || echo)
  class=$(cat "$d/class" 2>/dev/null || echo)
  # NVIDIA GPUs (0x10de, class 0x03xxxx), network controllers (0x02xxxx) and every bridge
  case "$vendor:$class" in
    0x10de:0x03*|*:0x02*|*:0x0604*) copy_dev "$bdf" ;;
  esac
done
echo "captured $(ls "$out/sysfs/bus/pci/devices" | wc -l) PCI devices into $out"
