#!/usr/bin/env bash
# Prepares the Spark run of issue 14 for the GPU machine, which has no Java, no Maven and no
# network, and whose carry holds 64 MiB a call: Spark's classpath alone is ~240 MB.
#
# What travels: a jlink runtime with the modules Spark's core needs (java.xml for Hadoop's
# configuration, java.naming, java.security.jgss, java.sql, ...; no java.desktop: the job then
# writes its CSV and says there is no plot), spark-core's dependency tree trimmed (no RocksDB,
# no ICU, netty-tcnative for linux-x86_64 only: the barrier job needs neither a disk KV store
# nor collation), the command line's own libraries (picocli, progressbar, Jackson), Treeline's
# jars, JCuda with its driver natives, and the Fashion-MNIST files. The jars are unpacked
# before compressing (xz over class files gains ~2x where the jars' own deflate does not);
# scripts/device/spark-unpack.sh zips them back there with Python's zipfile (no jar tool).
#
# Out: .device-spark/1/, .device-spark/2/, ... each one piece (< 60 MiB) of one tar.xz, plus
# .device-spark/MANIFEST (pieces, bytes, sha256). Carry ".device-spark/N" in consecutive calls
# (each runs scripts/device/spark-unpack.sh N, which copies its piece out of the working tree,
# where it stays while the machine is warm), the last call then runs
# scripts/device/run-spark-gpu.sh. scripts/device/spark-calls.sh prints the commands.
# MVN_OPTS (default -o) goes to every ./mvnw call.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
out=.device-spark
piece=${PIECE_BYTES:-52428800} # the carry holds 64 MiB with the ~6 MB working tree
mvn_opts=${MVN_OPTS--o}
data_src=/usr/share/datasets/fashion-mnist
stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
git check-ignore -q "$out/" || { echo "prepare-spark: $out is not ignored by git" >&2; exit 1; }
rm -rf "$out" && mkdir -p "$out" "$stage/root/jars" "$stage/root/data"
./mvnw -q -B $mvn_opts -pl examples -am package -DskipTests
./mvnw -q -B $mvn_opts -pl barrier-exec dependency:build-classpath -Dmdep.includeScope=provided \
  -Dmdep.outputFile="$stage/core.txt"
# spark-core's tree, then what the command line and Treeline add; the trimmed-away jars by name
keep='/(jackson-[^/]*|picocli-[^/]*|progressbar-[^/]*|jline-[^/]*|treeline-[^/]*|jcuda[^/]*|xchart-[^/]*|VectorGraphics2D-[^/]*|graphics2d-[^/]*|pdfbox-[^/]*|fontbox-[^/]*|animated-gif-lib-[^/]*|commons-logging-[^/]*)\.jar$'
drop='/(junit-[^/]*|opentest4j-[^/]*|apiguardian-[^/]*|rocksdbjni-[^/]*|icu4j-[^/]*|netty-tcnative-boringssl-static-[^/]*-(osx|windows|linux-aarch)[^/]*)\.jar$'
# Treeline's jars as this build made them first (barrier-exec's list names ~/.m2's copies)
{ tr ':' '\n' < examples/target/classpath.txt | grep '/treeline-'; echo
  tr ':' '\n' < "$stage/core.txt"; echo; tr ':' '\n' < examples/target/classpath.txt | grep -E "$keep"; } \
  | grep -v '^$' | grep -vE "$drop" | awk -F/ '!seen[$NF]++' > "$stage/jars.txt" # one of each jar name
echo "$PWD/examples/target/treeline-examples-0.1.0-SNAPSHOT.jar" >> "$stage/jars.txt"
n=0
while read -r jar <&3; do
  [ -f "$jar" ] || { echo "prepare-spark: missing $jar" >&2; exit 1; }
  name=$(basename "$jar" .jar)
  case "$name" in
    jcuda-natives-*) # the driver's natives only (what Treeline calls)
      mkdir -p "$stage/root/jars/$name" && (cd "$stage/root/jars/$name" && unzip -o -q "$jar" \
        'lib/libJCudaDriver-*' 'META-INF/*' 2>/dev/null || true) ;;
    zstd-jni-*) # its natives for this platform only
      mkdir -p "$stage/root/jars/$name" && (cd "$stage/root/jars/$name" && unzip -o -q "$jar" \
        -x 'darwin/*' 'win/*' 'freebsd/*' 'aix/*' 'linux/aarch64/*' 'linux/arm/*' \
        'linux/ppc64*' 'linux/s390x/*' 'linux/mips64/*' 'linux/loongarch64/*' 'linux/riscv64/*' \
        'linux/i386/*') ;;
    *) mkdir -p "$stage/root/jars/$name" && (cd "$stage/root/jars/$name" && unzip -o -q "$jar") ;;
  esac
  n=$((n + 1))
done 3< "$stage/jars.txt"
# the modules Spark's core, Hadoop's client and Treeline need (java.desktop for java.beans, which log4j needs)
jlink --add-modules java.base,java.compiler,java.desktop,java.logging,java.management,java.naming,java.net.http,java.scripting,java.security.jgss,java.security.sasl,java.sql,java.transaction.xa,java.xml,jdk.crypto.ec,jdk.incubator.foreign,jdk.incubator.vector,jdk.management,jdk.net,jdk.security.auth,jdk.security.jgss,jdk.unsupported,jdk.zipfs \
  --strip-debug --no-man-pages --no-header-files --compress=2 --output "$stage/root/jre"
chmod u+w "$stage/root/jre/lib/server/libjvm.so"
strip --strip-unneeded "$stage/root/jre/lib/server/libjvm.so"
if [ ! -f "$data_src/train-images-idx3-ubyte.gz" ]; then
  apt-get install -y dataset-fashion-mnist || { apt-get update && apt-get install -y dataset-fashion-mnist; }
fi
cp "$data_src"/{train,t10k}-{images-idx3,labels-idx1}-ubyte.gz "$stage/root/data/"
sed 's|.*/||; s|\.jar$||' "$stage/jars.txt" > "$stage/root/jars.order" # classpath order
tar -C "$stage/root" -cf - jre jars jars.order data | xz -7 -T0 > "$stage/spark.tar.xz"
(cd "$stage" && split -b "$piece" -d -a 1 spark.tar.xz piece-)
pieces=0
for p in "$stage"/piece-*; do
  pieces=$((pieces + 1))
  mkdir -p "$out/$pieces" && mv "$p" "$out/$pieces/piece"
done
{
  echo "pieces $pieces"
  echo "bytes $(stat -c %s "$stage/spark.tar.xz")"
  echo "sha256 $(sha256sum "$stage/spark.tar.xz" | cut -d' ' -f1)"
  echo "jars $n"
} > "$out/MANIFEST"
for i in $(seq 1 "$pieces"); do cp "$out/MANIFEST" "$out/$i/"; done
echo "prepare-spark: $n jars, runtime and data in $pieces piece(s) of at most $piece bytes:"
du -b "$out"/*/piece | sed 's/^/  /'
