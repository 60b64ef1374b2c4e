#!/usr/bin/env bash
# On the GPU machine, after scripts/device/spark-unpack.sh has stored every piece of
# scripts/device/prepare-spark.sh's archive: the training job (./treeline train's code, picocli
# entry io.treeline.examples.cli.Treeline) in a Spark barrier stage on the GPU, in two forms:
#   local     local[K]: K barrier tasks as threads of one JVM on the one GPU
#   cluster   local-cluster[K,1,M]: K executor JVMs under a standalone master, each worker
#             owning the GPUs bin/getGpusResources.sh finds (nvidia-smi: index 0 here), each
#             executor given one (spark.executor.resource.gpu.amount=1) and each task one
#             (spark.task.resource.gpu.amount=1); every task binds the GPU Spark assigned it
# MPS=1 starts CUDA MPS for the cluster form (several processes on one GPU) and quits it after.
# usage: scripts/device/run-spark-gpu.sh [local] [cluster]; EPOCHS (10), RANKS (2), OUT.
# Without a GPU it trains on the CPU (GPU=--cpu), which is how it is checked on the host.
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
repo=$PWD
root=${TREELINE_SPARK_STORE:-/tmp/treeline-spark}/root
[ -f "$root/classpath.txt" ] || { echo "run-spark-gpu: no $root/classpath.txt: run" \
  "scripts/device/spark-unpack.sh for every piece first" >&2; exit 2; }
export JAVA_HOME=$root/jre NCCL_NVLS_ENABLE=0
java=$JAVA_HOME/bin/java
cp=$(cat "$root/classpath.txt")
out=$(mkdir -p "${OUT:-out/spark-gpu}" && cd "${OUT:-out/spark-gpu}" && pwd)
epochs=${EPOCHS:-10}
k=${RANKS:-2}
device=${GPU:---gpu}
sections=${*:-local cluster}
opens="-XX:+IgnoreUnrecognizedVMOptions --add-modules=jdk.incubator.vector"
foreign="" # the TMA GEMM's tensor maps, in the driver and (extraJavaOptions) the executors
if "$java" --list-modules | grep -q '^jdk.incubator.foreign'; then
  foreign="--add-modules=jdk.incubator.foreign --enable-native-access=ALL-UNNAMED"
  opens="$opens $foreign"
fi
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util \
  java.util.concurrent java.util.concurrent.atomic jdk.internal.ref sun.nio.ch sun.nio.cs \
  sun.security.action sun.util.calendar; do
  opens="$opens --add-opens=java.base/$p=ALL-UNNAMED"
done
opens="$opens --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED -Dio.netty.tryReflectionSetAccessible=true"
say() { echo "== $*" | tee -a "$out/spark-gpu.log"; }
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | tee -a "$out/spark-gpu.log"
if [[ " $sections " == *" local "* ]]; then
  say "local[$k]: treeline train $device --ranks $k --epochs $epochs ($(date -u +%T))"
  # shellcheck disable=SC2086
  timeout "${RUN_TIMEOUT:-240}" "$java" -Xmx8g $opens -cp "$cp" io.treeline.examples.cli.Treeline \
    train $device --ranks "$k" --epochs "$epochs" --data "$root/data" --out "$out/local" 2>&1 \
    | grep -v '^WARNING: ' | tee -a "$out/spark-gpu.log"
  say "exit ${PIPESTATUS[0]}"
fi
if [[ " $sections " == *" cluster "* ]]; then
  home=$(mktemp -d) && mkdir -p "$home/jars" # spark.test.home: local-cluster from jars alone
  mps=""
  if [ "${MPS:-0}" = 1 ]; then
    mps=$(mktemp -d) && mkdir -p "$mps/pipe" "$mps/log"
    export CUDA_MPS_PIPE_DIRECTORY="$mps/pipe" CUDA_MPS_LOG_DIRECTORY="$mps/log"
    nvidia-cuda-mps-control -d && say "CUDA MPS control daemon started"
  fi
  gpus="$repo/bin/getGpusResources.sh"
  say "local-cluster[$k,1,6144]: treeline train $device --ranks $k --epochs $epochs," \
    "GPUs by $gpus ($(date -u +%T))"
  # shellcheck disable=SC2086
  timeout "${RUN_TIMEOUT:-240}" "$java" -Xmx4g $opens -Dspark.testing=true -Dspark.test.home="$home" \
    -Dspark.executorEnv.SPARK_SCALA_VERSION=2.13 -Dspark.executor.memory=4g \
    -Dspark.worker.resource.gpu.amount=1 -Dspark.worker.resource.gpu.discoveryScript="$gpus" \
    -Dspark.executor.resource.gpu.amount=1 -Dspark.executor.resource.gpu.discoveryScript="$gpus" \
    -Dspark.task.resource.gpu.amount=1 -Dspark.treeline.timeout=60s \
    -Dspark.executor.extraJavaOptions="-Djava.io.tmpdir=$home $foreign" \
    -cp "$cp" io.treeline.examples.cli.Treeline train $device --master "local-cluster[$k,1,6144]" \
    --ranks "$k" --epochs "$epochs" --data "$root/data" --out "$out/cluster" 2>&1 \
    | grep -v '^WARNING: ' | tee -a "$out/spark-gpu.log"
  say "exit ${PIPESTATUS[0]}"
  if [ -n "$mps" ]; then echo quit | nvidia-cuda-mps-control && say "CUDA MPS quit"; fi
  rm -rf "$home"
fi
