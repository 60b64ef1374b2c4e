#!/usr/bin/env bash
# Builds the classes of another revision (default: the parent of HEAD) into DIR (default
# .device-baseline/; any .device-* folder is git-ignored),
# so that scripts/bench/ab.sh can run it beside the current build, back to back, in one call on
# the GPU machine (its 16 cores) or here. Only Treeline's own classes travel (~3 MB xz): the
# dependency jars are those of .device-carry (prepare.sh) or of this build.
#   scripts/device/prepare-baseline.sh [REV] [DIR]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rev=${1:-HEAD~1}
out=${2:-.device-baseline}
sha=$(git rev-parse --short "$rev")
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git clone -q --no-checkout . "$src/tree" && git -C "$src/tree" checkout -q "$sha"
(cd "$src/tree" && ./mvnw -q -B ${MVN_OPTS--o} -pl examples -am compile)
rm -rf "$out" && mkdir -p "$out"
stage="$src/stage" && mkdir -p "$stage"
for m in kernels native-collectives barrier-exec examples; do
  cp -r "$src/tree/$m/target/classes" "$stage/$m"
done
tar -C "$stage" -cf - . | xz -6 -T0 > "$out/classes.tar.xz"
echo "$sha $(git log -1 --format=%s "$sha")" > "$out/REV"
echo "prepare-baseline: $out holds $sha ($(du -sh "$out" | cut -f1))"
