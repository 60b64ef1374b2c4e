#!/usr/bin/env bash
# Prepares .device-carry/ for the GPU machine, which has no Java and no Maven: a jlink runtime,
# the classes of kernels (with the fatbin), native-collectives and examples with their tests,
# JCuda with its linux-x86_64 natives, and JUnit's console launcher. Carry it with the device
# tool, then run scripts/device/run-gpu-tests.sh (and run-bench.sh, run-topo.sh) there.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
carry=.device-carry
rm -rf "$carry" && mkdir -p "$carry/lib"
./mvnw -q -B -pl kernels,native-collectives -am install -DskipTests
./mvnw -q -B -pl kernels,native-collectives test-compile
./mvnw -q -B -pl kernels dependency:copy-dependencies -DincludeScope=runtime \
  -DoutputDirectory="$PWD/$carry/lib"
./mvnw -q -B dependency:copy -Dartifact=org.junit.platform:junit-platform-console-standalone:1.14.4 \
  -DoutputDirectory="$PWD/$carry/lib" -N
cp -r kernels/target/classes "$carry/classes"
cp -r kernels/target/test-classes "$carry/test-classes"
cp -r native-collectives/target/classes "$carry/nc-classes"
cp -r native-collectives/target/test-classes "$carry/nc-test-classes"
if [ -d examples/target/classes ]; then
  cp -r examples/target/classes "$carry/ex-classes"
fi
jlink --add-modules java.base,jdk.unsupported,java.management,java.logging \
  --strip-debug --no-man-pages --no-header-files --compress=2 --output "$carry/jre"
du -sh "$carry"
