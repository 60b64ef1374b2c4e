# Sourced by the scripts that run on the GPU machine: the carried runtime and classpath.
# Unpacks .device-carry/bundle.tar.xz (scripts/device/prepare.sh) on first use.
# NVLink multicast stays off in everything started from here.
export NCCL_NVLS_ENABLE=0
c=.device-carry
if [ ! -x "$c/jre/bin/java" ]; then
  [ -f "$c/bundle.tar.xz" ] || { echo "no $c/bundle.tar.xz: run scripts/device/prepare.sh" \
    "on the host and carry $c" >&2; exit 2; }
  if command -v xz > /dev/null; then
    xz -dc "$c/bundle.tar.xz" | tar -C "$c" -xf -
  else
    python3 -c 'import sys, tarfile; tarfile.open(sys.argv[1]).extractall(sys.argv[2])' \
      "$c/bundle.tar.xz" "$c"
  fi
fi
JAVA="$c/jre/bin/java"
CP="$c/classes:$c/test-classes:$c/nc-classes:$c/nc-test-classes"
for d in be-classes ex-classes; do
  if [ -d "$c/$d" ]; then CP="$CP:$c/$d"; fi
done
CP="$CP:$(ls $c/lib/*.jar | tr '\n' ':')"
DATA="$c/data"
# the Vector API (host reducers) and the foreign linker with native access (the TMA GEMM's
# tensor maps); a bundle jlinked before the foreign module was added runs without the TMA kernels
JMODS="--add-modules=jdk.incubator.vector"
if "$JAVA" --list-modules | grep -q '^jdk.incubator.foreign'; then
  JMODS="$JMODS --add-modules=jdk.incubator.foreign --enable-native-access=ALL-UNNAMED"
fi
export CP JAVA DATA JMODS
