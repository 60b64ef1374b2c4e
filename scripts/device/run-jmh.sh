#!/usr/bin/env bash
# On the GPU machine: `./treeline jmh` there (the host reducers against memcpy, JMH), with the
# carried runtime and the benchmarks prepare.sh built into the bundle. Arguments go to JMH, e.g.
#   scripts/device/run-jmh.sh -p dtype=F32,BF16 -p inputs=2,8 -wi 3 -i 5
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
source scripts/device/env.sh
exec "$JAVA" $JMODS -cp "$CP" io.treeline.reduce.jmh.ReducerBenchMain "$@"
