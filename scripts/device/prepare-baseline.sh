#!/usr/bin/env bash
# Builds the classes of another revision (default: the parent of HEAD) into .device-baseline/,
# so that scripts/bench/ab.sh can run it beside the current build, back to back, in one call on
# the GPU machine (its 16 cores) or here. Only Treeline's own classes travel (~3 MB xz): the
# dependency jars are those of .device-carry (prepare.sh) or of this build.
#   scripts/device/prepare-baseline.sh [REV]
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
rev=${1:-HEAD~1}
sha=$(git rev-parse --short "$rev")
src=$(mktemp -d)
trap 'rm -rf "$src"' EXIT
git clone -q --no-checkout . "$src/tree" && git -C "$src/tree" checkout -q "$sha"
(cd "$src/tree" && ./mvnw -q -B ${MVN_OPTS--o} -pl examples -am compile)
rm -rf .device-baseline && mkdir -p .device-baseline
stage="$src/stage" && mkdir -p "$stage"
for m in kernels native-collectives barrier-exec examples; do
  cp -r "$src/tree/$m/target/classes" "$stage/$m"
done
tar -C "$stage" -cf - . | xz -6 -T0 > .device-baseline/classes.tar.xz
echo "$sha $(git log -1 --format=%s "$sha")" > .device-baseline/REV
echo "prepare-baseline: .device-baseline holds $sha ($(du -sh .device-baseline | cut -f1))"
