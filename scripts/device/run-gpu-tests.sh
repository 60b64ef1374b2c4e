#!/usr/bin/env bash
# On the GPU machine, from the repository root, after carrying .device-carry/: runs the GPU
# tests with JUnit's console launcher on the carried runtime. NVLink multicast stays off.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
export NCCL_NVLS_ENABLE=0
c=.device-carry
cp="$c/classes:$c/test-classes:$(ls $c/lib/jcuda*.jar | tr '\n' ':')"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
"$c/jre/bin/java" -jar "$c"/lib/junit-platform-console-standalone-*.jar execute \
  --class-path "$cp" --select-package io.treeline.kernels --details=tree --disable-banner "$@"
