#!/usr/bin/env bash
# Treeline against its peers in ONE run: Treeline's host allreduce (shared memory, one JVM per
# rank), Open MPI's MPI_Allreduce (mpi4py) and PyTorch's Gloo (torch.distributed, TCP on
# 127.0.0.1), over the same sizes, ranks and types (f32; bf16 where the peer has it), all on
# one node, each result checked, timed the same way (warm-up, then every call timed; the
# slowest rank's median and p99 per size). Writes one CSV and one PNG (median time per size, a
# line per system; Treeline/peer ratio panel) and prints the ratios.
#
#   scripts/bench/peers.sh [--ranks "2 4"] [--min 8] [--max 268435456] [--factor 4]
#                          [--types "f32 bf16"] [--sim "2x4"] [--no-spark]
#                          [--out out/peers] [--no-install] [--variant NAME=JAVA_OPTS]...
#                          [--only-treeline] [--mpi-tcp]
#
# --variant NAME=OPTS: Treeline once more in the same run with these JVM options (through
# JAVA_TOOL_OPTIONS, so every rank has them), rows "treeline-NAME" (and "treeline-NxG-NAME" for
# each --sim shape): an A/B of one setting beside
# the peers, e.g. --variant twoshot=-Dpeers.algorithm=twoshot (the selector's crossover) or
# --variant kernels=-Dtreeline.vectorMinElements=0. --only-treeline skips MPI and Gloo.
#
# --mpi-tcp: Open MPI once more with its TCP transport only (--mca btl tcp,self on loopback), rows
# "mpi-tcp": beside Treeline's simulated nodes, whose node-to-node leg is TCP, a like-for-like
# network peer (plain "mpi" uses shared memory between all ranks of this host).
#
# --sim "NxG ...": Treeline also on N simulated nodes of G ranks (shared memory inside a node,
# TCP on loopback between them: all on this host, so the "network" is loopback), rows
# "treeline-NxG", against Open MPI's and Gloo's N*G ranks (run too when N*G is not in --ranks).
# Spark's treeAggregate (examples/bench/TreeAggregateBench: local[K], K partitions, f32) runs at
# every size of the sweep from 1 KiB to 64 MiB for each K of --ranks, where Spark's jars are on
# the classpath (this build: yes; the GPU machine's carry: no, skipped with a message);
# --no-spark skips it.
#
# Installs what is missing from Debian (as root): openmpi-bin, python3-mpi4py, python3-numpy,
# python3-torch (Debian's 1.13 has Gloo; its Gloo has no bf16). A peer that cannot be had is
# skipped with a message. On the GPU machine (no Java, no network) it runs from the carried
# jlink runtime (scripts/device/prepare.sh, .device-carry): torch's Gloo is there; MPI only if
# mpi4py is; no PNG there (no XChart in the carry): draw it here with
#   scripts/bench/peers.sh --plot out/peers/peers.csv
# MPI_PYTHON / GLOO_PYTHON pick the interpreters (default: the first python3 that imports
# mpi4py / torch). MPIRUN_ARGS go to mpirun.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)"
cd "$root"
ranks="2 4"; min=8; max=268435456; factor=4; types="f32 bf16"; out=out/peers; install=1; plot=""
sim=""; spark=1; variants=(); peers=1; mpi_tcp=0
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks="$2"; shift 2 ;;
    --min) min="$2"; shift 2 ;;
    --max) max="$2"; shift 2 ;;
    --factor) factor="$2"; shift 2 ;;
    --types) types="$2"; shift 2 ;;
    --out) out="$2"; shift 2 ;;
    --no-install) install=0; shift ;;
    --sim) sim="$2"; shift 2 ;;
    --no-spark) spark=0; shift ;;
    --plot) plot="$2"; shift 2 ;;
    --variant) variants+=("$2"); shift 2 ;;
    --only-treeline) peers=0; spark=0; shift ;;
    --mpi-tcp) mpi_tcp=1; shift ;;
    -h|--help) sed -n '2,38p' "$0"; exit 0 ;;
    *) echo "peers.sh: unknown option $1 (see --help)" >&2; exit 2 ;;
  esac
done

# ---- Java and the classpath: on the GPU machine (no java there) the Spark store that
# scripts/device/spark-unpack.sh fills, else the carried runtime; else this build (also where
# prepare.sh has left a .device-carry beside it) ------------------------------------------
spark_root=${TREELINE_SPARK_STORE:-/tmp/treeline-spark}/root
have_java=0
command -v "${JAVA_HOME:+$JAVA_HOME/bin/}java" > /dev/null && have_java=1
if [ "$have_java" = 0 ] && [ -f "$spark_root/classpath.txt" ]; then
  # the GPU machine after scripts/device/spark-unpack.sh: Spark's runtime and classpath (with
  # Treeline's jars), so that treeAggregate runs there too
  JAVA=$spark_root/jre/bin/java
  CP=$(cat "$spark_root/classpath.txt")
  charts=0
  install=0
elif [ "$have_java" = 0 ] \
    && { [ -f .device-carry/bundle.tar.xz ] || [ -x .device-carry/jre/bin/java ]; }; then
  # shellcheck source=../device/env.sh
  source scripts/device/env.sh
  charts=0
  install=0 # the GPU machine has no network
else
  ./treeline --version > /dev/null # builds examples when a source changed
  JAVA="${JAVA_HOME:+$JAVA_HOME/bin/}java"
  CP="examples/target/classes:$(cat examples/target/classpath.txt)"
  charts=1
fi
vector=()
if "$JAVA" --list-modules | grep -q '^jdk.incubator.vector'; then
  vector=(--add-modules=jdk.incubator.vector) # else the scalar reducer
fi
java_run() { "$JAVA" "${vector[@]}" -cp "$CP" "$@"; }

draw() { # csv png
  local caption
  # PEERS_MACHINE names the machine a carried CSV was measured on (default: this one)
  caption="${PEERS_MACHINE:-$(nproc) cores, $(uname -m)}, $(date -u +%Y-%m-%d); scripts/bench/peers.sh"
  java_run -Djava.awt.headless=true io.treeline.examples.cli.PeersChart "$1" "$2" "$caption" \
    2> >(grep -v 'incubator modules' >&2)
}
if [ -n "$plot" ]; then
  draw "$plot" "${plot%.csv}.png"
  exit 0
fi

# ---- the peers ------------------------------------------------------------------------------
pick_python() { # module
  for p in python3 /usr/bin/python3; do
    if command -v "$p" > /dev/null && "$p" -c "import $1" 2> /dev/null; then echo "$p"; return; fi
  done
}
apt_install() {
  [ "$install" = 1 ] && [ "$(id -u)" = 0 ] && command -v apt-get > /dev/null || return 1
  DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends "$@" > /dev/null \
    || { apt-get update > /dev/null && DEBIAN_FRONTEND=noninteractive \
      apt-get install -y --no-install-recommends "$@" > /dev/null; }
}
MPI_PYTHON=${MPI_PYTHON:-$(pick_python mpi4py)}
if [ -z "$MPI_PYTHON" ] || ! command -v mpirun > /dev/null; then
  apt_install openmpi-bin python3-mpi4py python3-numpy || true
  MPI_PYTHON=$(pick_python mpi4py)
fi
GLOO_PYTHON=${GLOO_PYTHON:-$(pick_python torch)}
if [ -z "$GLOO_PYTHON" ]; then
  apt_install python3-torch || true
  GLOO_PYTHON=$(pick_python torch)
fi
if [ -n "$GLOO_PYTHON" ] && ! "$GLOO_PYTHON" -c \
  'import sys, torch.distributed as d; sys.exit(0 if d.is_gloo_available() else 1)'; then
  echo "peers.sh: $GLOO_PYTHON's torch has no Gloo; Gloo skipped" >&2
  GLOO_PYTHON=""
fi
mpirun_args=(${MPIRUN_ARGS:-})
[ "$(id -u)" = 0 ] && mpirun_args+=(--allow-run-as-root)

if [ "$spark" = 1 ] && ! printf '%s' "$CP" | grep -q 'spark-core'; then
  echo "peers.sh: no Spark on this classpath (the carried runtime has none); treeAggregate" \
    "skipped" >&2
  spark=0
fi
# Spark's module flags on Java 17, as ./treeline passes them
spark_opens=(-XX:+IgnoreUnrecognizedVMOptions -Dio.netty.tryReflectionSetAccessible=true
  --add-opens=java.security.jgss/sun.security.krb5=ALL-UNNAMED)
for p in java.lang java.lang.invoke java.lang.reflect java.io java.net java.nio java.util \
  java.util.concurrent java.util.concurrent.atomic jdk.internal.ref sun.nio.ch sun.nio.cs \
  sun.security.action sun.util.calendar; do
  spark_opens+=("--add-opens=java.base/$p=ALL-UNNAMED")
done
spark_min=$min # the first size of the sweep from 1 KiB, so the sizes match the others'
while [ "$spark_min" -lt 1024 ]; do spark_min=$((spark_min * factor)); done
spark_max=$((max < 67108864 ? max : 67108864))

# PeerBench for one shape: its rows into the CSV, everything it printed into a log beside it
# (a rank's failure, with its exception, is then on record); a failed run is reported, and the
# sweep goes on with the next system
failed=0
treeline_run() { # system shape dtype tag
  local log="$out/treeline-$4-$3.log"
  if ! java_run io.treeline.examples.bench.PeerBench "$2" "$3" "$min" "$max" "$factor" \
    > "$log" 2>&1; then
    echo "peers.sh: $1 $2 $3 failed; its output: $log" >&2
    grep -v 'incubator modules' "$log" | tail -20 >&2
    failed=$((failed + 1))
  fi
  grep -o "$1,.*" "$log" | tee -a "$csv" || true
}

# ---- one run ----------------------------------------------------------------------------------
mkdir -p "$out"
csv="$out/peers.csv"
echo "system,dtype,ranks,bytes,iters,median_us,p99_us,wrong,first_us" > "$csv"
echo "# peers.sh: ranks $ranks, simulated nodes ${sim:-none}, types $types, $min..$max bytes" \
  "x$factor, $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg)," \
  "$(date -u +%Y-%m-%dT%H:%M:%SZ); MPI: ${MPI_PYTHON:-none}, Gloo: ${GLOO_PYTHON:-none}," \
  "Spark: $([ "$spark" = 1 ] && echo treeAggregate || echo none)"
# the peers' rank counts: --ranks, and N*G of every --sim shape
peer_ranks="$ranks"
for shape in $sim; do
  n=$((${shape%x*} * ${shape#*x}))
  case " $peer_ranks " in *" $n "*) ;; *) peer_ranks="$peer_ranks $n" ;; esac
done
for k in $peer_ranks; do
  for t in $types; do
    case " $ranks " in
      *" $k "*)
        echo "# treeline, $k ranks, $t" >&2
        treeline_run "treeline" "$k" "$t" "$k"
        for v in ${variants[@]+"${variants[@]}"}; do
          echo "# treeline-${v%%=*} (${v#*=}), $k ranks, $t" >&2
          JAVA_TOOL_OPTIONS="${v#*=} -Dpeers.system=treeline-${v%%=*}" \
            treeline_run "treeline-${v%%=*}" "$k" "$t" "$k-${v%%=*}"
        done ;;
    esac
    for shape in $sim; do
      if [ $((${shape%x*} * ${shape#*x})) = "$k" ]; then
        echo "# treeline, $shape simulated nodes x ranks, $t" >&2
        treeline_run "treeline-$shape" "$shape" "$t" "$shape"
        for v in ${variants[@]+"${variants[@]}"}; do
          echo "# treeline-$shape-${v%%=*} (${v#*=}), $t" >&2
          JAVA_TOOL_OPTIONS="${v#*=} -Dpeers.system=treeline-$shape-${v%%=*}" \
            treeline_run "treeline-$shape-${v%%=*}" "$shape" "$t" "$shape-${v%%=*}"
        done
      fi
    done
    if [ "$spark" = 1 ] && [ "$t" = f32 ] && [ "$spark_min" -le "$spark_max" ]; then
      echo "# spark treeAggregate, local[$k], $t" >&2
      # everything it prints into a log beside the CSV: a failure's exception is then on record
      java_run "${spark_opens[@]}" io.treeline.examples.bench.TreeAggregateBench "$k" \
        "$spark_min" "$spark_max" "$factor" > "$out/spark-$k.log" 2>&1 \
        || { echo "peers.sh: treeAggregate failed at $k; its output: $out/spark-$k.log" >&2
             grep -E 'Exception|Error' "$out/spark-$k.log" | head -5 >&2; }
      grep '^spark,' "$out/spark-$k.log" | tee -a "$csv" || true
    fi
    if [ "$peers" = 1 ] && [ -n "$MPI_PYTHON" ] && [ "$t" = f32 ]; then
      echo "# mpi, $k ranks, $t" >&2
      OMP_NUM_THREADS=1 mpirun "${mpirun_args[@]}" --oversubscribe -n "$k" "$MPI_PYTHON" \
        scripts/bench/peers.py mpi "$t" "$min" "$max" "$factor" | grep '^mpi,' | tee -a "$csv"
      if [ "$mpi_tcp" = 1 ]; then
        echo "# mpi over TCP (btl tcp,self, loopback), $k ranks, $t" >&2
        OMP_NUM_THREADS=1 mpirun "${mpirun_args[@]}" --oversubscribe --mca btl tcp,self \
          --mca btl_tcp_if_include lo -n "$k" "$MPI_PYTHON" scripts/bench/peers.py mpi "$t" \
          "$min" "$max" "$factor" | grep '^mpi,' | sed 's/^mpi,/mpi-tcp,/' | tee -a "$csv"
      fi
    fi
    if [ "$peers" = 1 ] && [ -n "$GLOO_PYTHON" ]; then
      echo "# gloo, $k ranks, $t" >&2
      OMP_NUM_THREADS=1 "$GLOO_PYTHON" scripts/bench/peers.py gloo "$k" "$t" "$min" "$max" \
        "$factor" | grep '^gloo,' | tee -a "$csv" || true
    fi
  done
done
wrong=$(awk -F, 'NR > 1 && $8 != 0' "$csv" | wc -l)
echo "# wrote $csv ($wrong rows with wrong elements, $failed failed Treeline runs)"
if [ "$charts" = 1 ]; then
  draw "$csv" "$out/peers.png"
else
  echo "# no PNG here (the carried runtime has no XChart): scripts/bench/peers.sh --plot $csv"
fi
[ "$wrong" = 0 ] && [ "$failed" = 0 ]
