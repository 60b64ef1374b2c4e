#!/usr/bin/env bash
# Prepares .device-carry/ for the GPU machine, which has no Java, no Maven and no network:
#   bundle.tar.xz  a jlink runtime (libjvm stripped), the classes of kernels (with the fatbin),
#                  native-collectives, barrier-exec and examples, the tests of kernels and
#                  native-collectives (with the JMH benchmarks), JCuda with only its driver and
#                  runtime natives, JMH and JUnit's console launcher; env.sh unpacks it there on
#                  first use
#   data/          the four Fashion-MNIST .gz files (from /usr/share/datasets/fashion-mnist,
#                  installed with apt-get install -y dataset-fashion-mnist when missing)
# The device tool's carry holds 64 MiB in all; this script fails when the folder is larger.
#   scripts/       a copy of scripts/device, so that the carry runs as built here
# Carry ".device-carry", then run scripts/device/run-gpu-tests.sh or run-train-gpu.sh there.
# The device tool sends the checkout its session started in, also when a helper calls it from
# another worktree: DEVICE_CHECKOUT=/that/checkout puts the folder there as well (it is ignored
# there too); the command then starts with `cp -r .device-carry/scripts/device/. scripts/device/`.
# MVN_OPTS (default -o: offline, the dependencies are in ~/.m2) goes to every ./mvnw call.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
carry=.device-carry
mvn_opts=${MVN_OPTS--o}
data_src=/usr/share/datasets/fashion-mnist
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
rm -rf "$carry" && mkdir -p "$carry/data" "$stage/lib"
./mvnw -q -B $mvn_opts -pl examples -am install -DskipTests
# -Pjmh: native-collectives' test classes then hold the JMH benchmarks (run-jmh.sh)
./mvnw -q -B $mvn_opts -Pjmh -pl kernels,native-collectives test-compile
./mvnw -q -B $mvn_opts -Pjmh -pl native-collectives dependency:copy-dependencies \
  -DincludeGroupIds=org.openjdk.jmh,net.sf.jopt-simple,org.apache.commons \
  -DexcludeArtifactIds=jmh-generator-annprocess -DoutputDirectory="$stage/lib"
./mvnw -q -B $mvn_opts -pl kernels dependency:copy-dependencies -DincludeScope=runtime \
  -DoutputDirectory="$stage/lib"
console() { ./mvnw -q -B "$@" dependency:copy -N -DoutputDirectory="$stage/lib" \
  -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.4; }
console $mvn_opts || console # online, the first time
# JCuda's natives jar carries NVPTX-compiler and NVRTC bindings too (24 MiB unpacked): keep the
# driver's (what Treeline calls) and the runtime's
natives=$(ls "$stage"/lib/jcuda-natives-*.jar)
mkdir -p "$stage/natives" && (cd "$stage/natives" && jar xf "$natives" \
  $(jar tf "$natives" | grep -E '^lib/libJCuda(Driver|Runtime)-'))
rm "$natives" && jar cf "$natives" -C "$stage/natives" lib
cp -r kernels/target/classes "$stage/classes"
cp -r kernels/target/test-classes "$stage/test-classes"
cp -r native-collectives/target/classes "$stage/nc-classes"
cp -r native-collectives/target/test-classes "$stage/nc-test-classes"
cp -r barrier-exec/target/classes "$stage/be-classes"
cp -r examples/target/classes "$stage/ex-classes"
# jdk.incubator.vector: the host reducers (VectorReducer; HostReducer without it);
# jdk.incubator.foreign: the TMA GEMM's tensor maps (ForeignTensorMapEncoder)
jlink --add-modules \
  java.base,jdk.unsupported,java.management,java.logging,jdk.incubator.vector,jdk.incubator.foreign \
  --strip-debug --no-man-pages --no-header-files --compress=2 --output "$stage/jre"
chmod u+w "$stage/jre/lib/server/libjvm.so"
strip --strip-unneeded "$stage/jre/lib/server/libjvm.so"
tar -C "$stage" -cf - jre classes test-classes nc-classes nc-test-classes be-classes ex-classes \
  lib | xz -6 -T0 > "$carry/bundle.tar.xz"
if [ ! -f "$data_src/train-images-idx3-ubyte.gz" ]; then
  apt-get install -y dataset-fashion-mnist || { apt-get update && apt-get install -y dataset-fashion-mnist; }
fi
cp "$data_src"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$carry/data/"
mkdir -p "$carry/scripts" && cp -r scripts/device "$carry/scripts/"
bytes=$(du -sb "$carry" | cut -f1)
echo "prepare: $carry is $bytes bytes ($(du -sh "$carry" | cut -f1)); the carry limit is 67108864"
[ "$bytes" -lt 67108864 ] || { echo "prepare: $carry is over the 64 MiB carry limit" >&2; exit 1; }
if [ -n "${DEVICE_CHECKOUT:-}" ]; then
  git -C "$DEVICE_CHECKOUT" check-ignore -q .device-carry/ \
    || { echo "prepare: .device-carry is not ignored in $DEVICE_CHECKOUT" >&2; exit 1; }
  rm -rf "$DEVICE_CHECKOUT/.device-carry" && cp -r "$carry" "$DEVICE_CHECKOUT/.device-carry"
  echo "prepare: copied $carry into $DEVICE_CHECKOUT"
fi
