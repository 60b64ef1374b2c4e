#!/usr/bin/env bash
# Treeline's host allreduce in two builds back to back, alternating, so that a change is measured
# against its baseline on the same machine in the same minutes (these machines are noisy):
#   scripts/bench/ab.sh [--passes 2] [--shape 4] [--shape 2x2] [--type f32]
#                       [--min 262144] [--max 67108864] [--factor 4] [--warmup N]
# Both sides run the CURRENT build's bench driver (examples.bench.PeerBench: RANKS or NxG
# simulated nodes, JDK only, so it runs from the carried runtime on the GPU machine), against
# the baseline's engine classes ($AB_BASELINE, default .device-baseline:
# scripts/device/prepare-baseline.sh REV [DIR]) or the
# current ones: only the engine differs. Prints each run's rows (median and p99 per call, the
# slowest rank's), then per shape and size the mean over the passes of current/baseline
# (below 1: the current build is faster).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
passes=2; shapes=(); type=f32; min=262144; max=67108864; factor=4; warmup=()
while [ $# -gt 0 ]; do
  case "$1" in
    --passes) passes="$2"; shift 2 ;;
    --shape) shapes+=("$2"); shift 2 ;;
    --type) type="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --warmup) warmup=("$2"); shift 2 ;;
    -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
    *) echo "ab.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ ${#shapes[@]} -gt 0 ] || shapes=(4 2x2)
bl=${AB_BASELINE:-.device-baseline}
[ -f "$bl/classes.tar.xz" ] || { echo "ab.sh: no $bl/classes.tar.xz: run scripts/device/prepare-baseline.sh REV" >&2; exit 2; }
tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/base" && xz -dc "$bl/classes.tar.xz" | tar -C "$tmp/base" -xf -
if [ -f .device-carry/bundle.tar.xz ] || [ -x .device-carry/jre/bin/java ]; then
  source scripts/device/env.sh
  c=.device-carry
  driver="$c/ex-classes"; engine="$c/be-classes:$c/nc-classes:$c/classes"
  libs=$(ls $c/lib/*.jar | tr '\n' ':')
else
  ./treeline --version > /dev/null # builds what changed
  JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  driver=examples/target/classes
  engine=barrier-exec/target/classes:native-collectives/target/classes:kernels/target/classes
  libs=$(tr ':' '\n' < examples/target/classpath.txt | grep -v '/target/classes' | tr '\n' ':')
fi
# the current driver's bench classes first, then either engine
mkdir -p "$tmp/driver/io/treeline/examples/bench"
cp "$driver"/io/treeline/examples/bench/PeerBench*.class "$tmp/driver/io/treeline/examples/bench/"
b="$tmp/base"
old_cp="$tmp/driver:$b/examples:$b/barrier-exec:$b/native-collectives:$b/kernels:$libs"
new_cp="$tmp/driver:$driver:$engine:$libs"
mods=(); "$JAVA" --list-modules | grep -q '^jdk.incubator.vector' && mods=(--add-modules=jdk.incubator.vector)
echo "ab: baseline $(cat "$bl/REV"); current $(git log -1 --format='%h %s' 2>/dev/null || echo '(the carried build)')"
echo "ab: $(nproc) cores, $type $min..$max x$factor, warm-up ${warmup[*]:-PeerBench default}, $passes passes"
res="$tmp/rows"
for pass in $(seq 1 "$passes"); do
  for shape in "${shapes[@]}"; do
    for side in baseline current; do
      cp="$new_cp"; [ $side = baseline ] && cp="$old_cp"
      echo "== $side pass $pass $shape $(date -u +%T) load $(cut -d' ' -f1 /proc/loadavg)"
      "$JAVA" "${mods[@]}" -cp "$cp" io.treeline.examples.bench.PeerBench "$shape" "$type" "$min" \
        "$max" "$factor" "${warmup[@]}" > "$tmp/log" 2>&1 \
        || { cat "$tmp/log"; echo "ab.sh: the $side run failed" >&2; exit 1; }
      grep -E '^treeline' "$tmp/log" || true
      grep -E '^treeline' "$tmp/log" | sed "s/^/$shape,$side,/" >> "$res"
    done
  done
done
echo "== current / baseline per shape and size: mean over the passes of each pass's ratio (median per call; p99 per call)"
python3 - "$res" <<'PY'
import sys, collections
rows = collections.defaultdict(lambda: collections.defaultdict(list))
for line in open(sys.argv[1]):
    f = line.strip().split(",")
    shape, side, size, med, p99 = f[0], f[1], int(f[5]), float(f[7]), float(f[8])
    rows[(shape, size)][side].append((med, p99))
for (shape, size), d in sorted(rows.items()):
    b, c = d.get("baseline", []), d.get("current", [])
    n = min(len(b), len(c))
    if n == 0:
        continue
    rm = [c[i][0] / b[i][0] for i in range(n)]
    rp = [c[i][1] / b[i][1] for i in range(n)]
    print(f"{shape:>5s} {size:>10d} B  median {sum(x[0] for x in b)/len(b):9.1f} -> {sum(x[0] for x in c)/len(c):9.1f} us"
          f"  ratio {sum(rm)/n:.2f} ({' '.join(f'{r:.2f}' for r in rm)})  p99 ratio {sum(rp)/n:.2f}")
PY
