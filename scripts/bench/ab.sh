#!/usr/bin/env bash
# The host bench of two builds back to back, alternating, so that a change is measured against
# its baseline on the same machine in the same minutes (these machines are noisy):
#   scripts/bench/ab.sh [--passes 2] [--shape "--nodes 2 --ranks-per-node 2"]... -- BENCH ARGS
# The baseline is .device-baseline (scripts/device/prepare-baseline.sh REV); the current build is
# the carried runtime and classes (.device-carry, on the GPU machine) or this build. Prints each
# pass's bench table, then per shape and size the mean over passes of the current/baseline ratio
# of the mean time per call (below 1: the current build is faster).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
passes=2; shapes=()
while [ $# -gt 0 ]; do
  case "$1" in
    --passes) passes="$2"; shift 2 ;;
    --shape) shapes+=("$2"); shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,9p' "$0"; exit 0 ;;
    *) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#shapes[@]} -gt 0 ] || shapes=("--nodes 1 --ranks-per-node 4" "--nodes 2 --ranks-per-node 2")
bench=("$@"); [ ${#bench[@]} -gt 0 ] || bench=(-b 256K -e 16M -f 8 -n 40 -w 20)
[ -f .device-baseline/classes.tar.xz ] || { echo "ab.sh: no .device-baseline: run scripts/device/prepare-baseline.sh REV" >&2; exit 2; }
base=$(mktemp -d); trap 'rm -rf "$base"' EXIT
xz -dc .device-baseline/classes.tar.xz | tar -C "$base" -xf -
if [ -f .device-carry/bundle.tar.xz ] || [ -x .device-carry/jre/bin/java ]; then
  source scripts/device/env.sh
  new_cp="$CP"
  libs=$(ls .device-carry/lib/*.jar | tr '\n' ':')
else
  ./treeline --version > /dev/null
  JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  new_cp="examples/target/classes:barrier-exec/target/classes:native-collectives/target/classes:kernels/target/classes:$(cat examples/target/classpath.txt)"
  libs="$(cat examples/target/classpath.txt | tr ':' '\n' | grep -v '/target/classes' | tr '\n' ':')"
fi
old_cp="$base/examples:$base/barrier-exec:$base/native-collectives:$base/kernels:$libs"
mods=(); "$JAVA" --list-modules | grep -q '^jdk.incubator.vector' && mods=(--add-modules=jdk.incubator.vector)
echo "ab: baseline $(cat .device-baseline/REV); current $(git log -1 --format='%h %s' 2>/dev/null || echo '(carried)')"
echo "ab: $(nproc) cores, bench ${bench[*]}, $passes passes"
res=$(mktemp); log=$(mktemp)
for pass in $(seq 1 "$passes"); do
  for shape in "${shapes[@]}"; do
    for side in baseline current; do
      cp="$new_cp"; [ $side = baseline ] && cp="$old_cp"
      echo "== $side pass $pass $shape $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      # shellcheck disable=SC2086
      "$JAVA" "${mods[@]}" -cp "$cp" io.treeline.examples.cli.Treeline run $shape -- bench "${bench[@]}" > "$log" 2>&1 \
        || { cat "$log"; echo "ab.sh: the $side run failed" >&2; exit 1; }
      grep -E '^ +[0-9]+ ' "$log" || true
      awk -v s="$shape" -v side=$side '$1 ~ /^[0-9]+$/ && NF >= 12 {print s "|" side "|" $1 "|" $6 "|" $7}' "$log" >> "$res"
    done
  done
done
echo "== current / baseline per shape and size: mean over the passes of each pass's ratio (mean time per call; median per call)"
python3 - "$res" <<'PY'
import sys, collections
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    shape, side, size, mean, med = line.strip().split("|")
    rows[(shape, int(size))][side].append((float(mean), float(med)))
for (shape, size), d in sorted(rows.items()):
    b, c = d.get("baseline", []), d.get("current", [])
    n = min(len(b), len(c))
    if n == 0:
        continue
    rm = [c[i][0] / b[i][0] for i in range(n)]
    rd = [c[i][1] / b[i][1] for i in range(n)]
    print(f"{shape:30s} {size:>10d} B  mean {sum(x[0] for x in b)/len(b):9.1f} -> {sum(x[0] for x in c)/len(c):9.1f} us"
          f"  ratio {sum(rm)/n:.2f} ({' '.join(f'{r:.2f}' for r in rm)})  median ratio {sum(rd)/n:.2f}")
PY
rm -f "$res" "$log"
