#!/usr/bin/env bash
# On the GPU machine: takes piece N of scripts/device/prepare-spark.sh's archive out of the
# working tree (carried as .device-spark/N) into $TREELINE_SPARK_STORE (default
# /tmp/treeline-spark), where it outlives the call while the machine stays warm. When every
# piece is there, checks the archive's sha256, unpacks it and zips each unpacked jar back with
# Python's zipfile (the machine has no jar tool), so the classpath is what it was here, less
# the jar indexes (META-INF/INDEX.LIST).
# usage: scripts/device/spark-unpack.sh N
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
n=${1:?usage: spark-unpack.sh N}
store=${TREELINE_SPARK_STORE:-/tmp/treeline-spark}
mkdir -p "$store/pieces"
[ -f ".device-spark/$n/piece" ] || { echo "spark-unpack: .device-spark/$n/piece was not carried" >&2; exit 2; }
cp ".device-spark/$n/piece" "$store/pieces/$n" && cp ".device-spark/$n/MANIFEST" "$store/MANIFEST"
pieces=$(awk '$1 == "pieces" {print $2}' "$store/MANIFEST")
have=$(ls "$store/pieces" | wc -l)
echo "spark-unpack: piece $n of $pieces stored in $store ($have here)"
if [ "$have" -lt "$pieces" ]; then exit 0; fi
want=$(awk '$1 == "sha256" {print $2}' "$store/MANIFEST")
got=$(for i in $(seq 1 "$pieces"); do cat "$store/pieces/$i"; done | sha256sum | cut -d' ' -f1)
[ "$got" = "$want" ] || { echo "spark-unpack: archive sha256 $got, manifest $want" >&2; exit 1; }
rm -rf "$store/root" && mkdir -p "$store/root"
for i in $(seq 1 "$pieces"); do cat "$store/pieces/$i"; done | xz -dc | tar -C "$store/root" -xf -
python3 - "$store/root" <<'PY'
import os, sys, zipfile
root = sys.argv[1]
jars = os.path.join(root, "jars")
names = [l.strip() for l in open(os.path.join(root, "jars.order")) if l.strip()]
cp = []
for name in names:
    d = os.path.join(jars, name)
    jar = d + ".jar"
    with zipfile.ZipFile(jar, "w", zipfile.ZIP_STORED) as z:
        # the manifest first, as the jar tool writes it (JarInputStream readers expect it)
        mf = os.path.join(d, "META-INF", "MANIFEST.MF")
        if os.path.exists(mf):
            z.write(mf, "META-INF/MANIFEST.MF")
        for base, dirs, files in os.walk(d):
            dirs.sort()
            if base != d:  # directory entries: getResource finds folders (Spark's ui/static)
                z.write(base, os.path.relpath(base, d) + "/")
            for f in sorted(files):
                p = os.path.join(base, f)
                rel = os.path.relpath(p, d)
                # the manifest went first; a jar index names jars by their old layout
                # (JDK 17 rejects it as an "Invalid index"; JDK 18+ ignores indexes)
                if rel not in ("META-INF/MANIFEST.MF", "META-INF/INDEX.LIST"):
                    z.write(p, rel)
    cp.append(jar)
open(os.path.join(root, "classpath.txt"), "w").write(":".join(cp) + "\n")
print("spark-unpack: %d jars rebuilt" % len(cp))
PY
find "$store/root/jars" -mindepth 1 -maxdepth 1 -type d -exec rm -rf {} +
echo "spark-unpack: ready: $store/root ($(du -sh "$store/root" | cut -f1))"
