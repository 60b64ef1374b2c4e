#!/usr/bin/env bash
# On the GPU machine, from the repository root, after carrying .device-carry/: runs the GPU
# tests (tag "gpu" and the kernels' tests) with JUnit's console launcher on the carried runtime.
# The launcher is started with the whole classpath as java.class.path, because the multi-process
# tests fork rank JVMs with it. Extra arguments go to the launcher (e.g. --select-method ...).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
. scripts/device/env.sh
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
if [ $# -eq 0 ]; then
  set -- --select-package io.treeline.kernels --select-package io.treeline.gpu
fi
# shellcheck disable=SC2086
"$JAVA" $JMODS -cp "$CP" org.junit.platform.console.ConsoleLauncher execute \
  --details=tree --disable-banner "$@"
