package io.treeline.examples.bench;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.comm.Window;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.launch.ProcessLauncher;
import io.treeline.plan.Algorithm;
import io.treeline.plan.PlanConfig;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.Locale;
import java.util.Map;

/**
 * Treeline's side of scripts/bench/peers.sh, timed exactly as the script's MPI and Gloo sides
 * (scripts/bench/peers.py) are: per size, warm-up calls, then each call timed on every rank;
 * the slowest rank's median and p99 are reported; rank r's element i is 1 + r % 5 + i % 3 and
 * every element of the result is checked. Needs only the JDK and the Treeline classes (no
 * picocli, no XChart), so it runs from the jlink runtime carried to the GPU machine.
 *
 * <pre>
 *   java -cp ... io.treeline.examples.bench.PeerBench RANKS DTYPE MIN MAX FACTOR [WARMUP]
 * </pre>
 * RANKS is a rank count (one node) or {@code NxG}: N simulated nodes of G ranks, all on this
 * host (the rows then name the system {@code treeline-NxG}). The system property
 * {@code peers.chunkBytes} (ranks inherit it through {@code JAVA_TOOL_OPTIONS}) sets the tree
 * plans' chunk, {@code peers.netGrainBytes} their network grain and {@code peers.slotsPerLane}
 * the network's receive slots per lane, for tuning across nodes.
 * WARMUP untimed calls per size (default {@link #warmups}: a JVM needs a few thousand calls
 * before C2 has compiled the whole path, the Vector API's kernels included; the peers get the
 * same number), and then more in batches of that many until every rank has warmed the size
 * for at least {@code peers.warmMillis} (default {@link #WARM_MILLIS}; the ranks agree by an
 * allreduce after each batch, so all make the same calls; peers.py applies the same rule), the
 * sweep's first size for at least {@code peers.warmFirstMillis} ({@link #WARM_FIRST_MILLIS}). The
 * system property {@code peers.algorithm} forces an allreduce algorithm (oneshot, twoshot...)
 * for measuring the selector's crossovers, and {@code peers.system} names the rows (peers.sh's
 * {@code --variant}); {@code peers.registered=true} times the registered form instead: the
 * data in a window reserved once ({@link HostCommunicator#reserveWindow}), reduced in place
 * with no copy into or out of the shared segment, as GradientAggregator's buckets are (rows
 * {@code treeline-registered}).
 * launches RANKS JVMs on one simulated node (shared memory) and prints CSV rows
 * {@code system,dtype,ranks,bytes,iters,median_us,p99_us,wrong,first_us} from rank 0, where
 * first_us is the slowest rank's first call of the size, before its warm-up: what a new size
 * costs once (a plan, windows), after the sweep's earlier sizes warmed the JIT. The system
 * property {@code peers.trace=DIR} has every rank write {@code DIR/rank-R.txt}: its JVM uptime
 * (ms, as {@code -Xlog}'s {@code uptime} decoration counts) at each size's first call, warm-up
 * and timed calls, to line up with {@code -Xlog} files of class loading, compilation or GC.
 */
public final class PeerBench {
  private PeerBench() {
  }

  public static void main(String[] args) throws Exception {
    if (System.getenv(TcpStoreBootstrap.RANK) == null) {
      // RANKS: ranks on one node, or NODESxG: that many simulated nodes of G ranks (shared
      // memory inside each, TCP on loopback between them)
      String[] shape = args[0].toLowerCase(Locale.ROOT).split("x");
      int[] perNode = new int[shape.length == 2 ? Integer.parseInt(shape[0]) : 1];
      Arrays.fill(perNode, Integer.parseInt(shape[shape.length - 1]));
      List<String> jvm = new ArrayList<>(List.of("-Xmx1g", "-XX:MaxDirectMemorySize=3g"));
      jvm.addAll(ProcessLauncher.moduleOptions()); // else the scalar reducer
      List<String> main = new ArrayList<>(List.of(PeerBench.class.getName()));
      main.addAll(Arrays.asList(args));
      List<ProcessLauncher.Result> res = ProcessLauncher.run(perNode, jvm, main,
          Map.of(), Duration.ofMinutes(30), System.out, 0);
      int code = 0;
      for (ProcessLauncher.Result r : res) {
        if (r.exitCode() != 0 && code == 0) {
          code = r.exitCode();
          System.err.println("rank " + r.rank() + " exited " + r.exitCode() + ":\n" + r.output());
        }
      }
      System.exit(code);
    }
    DataType type = DataType.parse(args[1]);
    long min = Long.parseLong(args[2]);
    long max = Long.parseLong(args[3]);
    int factor = Integer.parseInt(args[4]);
    int warmup = args.length > 5 ? Integer.parseInt(args[5]) : -1; // -1: warmups(bytes)
    String forced = System.getProperty("peers.algorithm");
    CommConfig cfg = CommConfig.DEFAULT.withTimeout(Duration.ofSeconds(120))
        .withPlan(PlanConfig.DEFAULT.withChunkBytes(
            Long.getLong("peers.chunkBytes", PlanConfig.DEFAULT.chunkBytes()))
            .withNetGrainBytes(Integer.getInteger("peers.netGrainBytes",
                PlanConfig.DEFAULT.netGrainBytes())))
        .withSlotsPerLane(Integer.getInteger("peers.slotsPerLane",
            CommConfig.DEFAULT.slotsPerLane()))
        .withAlgorithm(forced == null ? null : Algorithm.parse(forced));
    boolean registered = Boolean.getBoolean("peers.registered");
    if (registered) {
      // a window of the largest size, and the ordinary calls (the timing allreduces) the rest
      long window = (max + 4095) / 4096 * 4096;
      cfg = cfg.withSegmentBytes(Math.max(cfg.segmentBytes(), window + window / 4 + (1 << 20))
          / 4096 * 4096 + 4096);
    }
    long warmNanos = Long.getLong("peers.warmMillis", WARM_MILLIS) * 1_000_000L;
    long firstWarmNanos = Math.max(warmNanos, Long.getLong("peers.warmFirstMillis",
        WARM_FIRST_MILLIS) * 1_000_000L);
    long setUp = System.nanoTime();
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(120));
        HostCommunicator comm = HostCommunicator.create(boot, cfg)) {
      int rank = comm.rank();
      if (rank == 0) { // into the log beside the CSV (peers.sh keeps every line of a run)
        System.err.printf(Locale.ROOT, "# rank 0: set-up %.0f ms; kernel warm-up: %s%n",
            (System.nanoTime() - setUp) / 1e6, io.treeline.reduce.KernelWarmUp.report());
      }
      int n = comm.size();
      String system = System.getProperty("peers.system",
          (args[0].contains("x") ? "treeline-" + args[0] : "treeline")
              + (registered ? "-registered" : ""));
      Window window = registered ? comm.reserveWindow(max) : null;
      Trace trace = Trace.open(System.getProperty("peers.trace"), rank);
      for (long bytes = Math.max(min, type.size()); bytes <= max; bytes *= factor) {
        long count = bytes / type.size();
        int iters = iterations(bytes);
        ByteBuffer in = registered ? window.input()
            : ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        ByteBuffer out = registered ? window.output()
            : ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
        Call call = registered ? () -> comm.allReduce(window, count, type, ReduceOp.SUM)
            : () -> comm.allReduce(in, out, count, type, ReduceOp.SUM);
        for (int i = 0; i < count; i++) {
          type.put(in, i, 1 + rank % 5 + i % 3);
        }
        barrier(comm);
        trace.mark(bytes, "first");
        long t1 = System.nanoTime();
        call.run();
        long firstNanos = System.nanoTime() - t1;
        trace.mark(bytes, "warm-up");
        double first = max(comm, firstNanos / 1e3);
        int batch = Math.max(1, warmup >= 0 ? warmup : warmups(bytes));
        long warmFor = bytes == Math.max(min, type.size()) ? firstWarmNanos : warmNanos;
        long warmStart = System.nanoTime();
        do {
          for (int w = 0; w < batch; w++) {
            call.run();
          }
        } while (warmup < 0 && max(comm, System.nanoTime() - warmStart < warmFor ? 1 : 0) > 0);
        long[] each = new long[iters];
        barrier(comm);
        trace.mark(bytes, "timed");
        for (int it = 0; it < iters; it++) {
          long t0 = System.nanoTime();
          call.run();
          each[it] = System.nanoTime() - t0;
        }
        long wrong = 0;
        for (int i = 0; i < count; i++) {
          double want = 0;
          for (int r = 0; r < n; r++) {
            want += 1 + r % 5 + i % 3;
          }
          if (type.get(out, i) != want) {
            wrong++;
          }
        }
        trace.mark(bytes, "done");
        Arrays.sort(each);
        double median = max(comm, each[(iters - 1) / 2] / 1e3);
        double p99 = max(comm, each[(int) Math.ceil(0.99 * iters) - 1] / 1e3);
        wrong = (long) sum(comm, wrong);
        if (rank == 0) {
          System.out.printf(Locale.ROOT, "%s,%s,%d,%d,%d,%.3f,%.3f,%d,%.3f%n", system,
              type.name().toLowerCase(Locale.ROOT), n, bytes, iters, median, p99, wrong, first);
        }
      }
    }
  }

  /** A rank's timeline ({@code peers.trace}); marks nothing when the property is unset. */
  private record Trace(java.io.PrintStream out) {
    static Trace open(String dir, int rank) throws java.io.IOException {
      if (dir == null) {
        return new Trace(null);
      }
      java.nio.file.Path d = java.nio.file.Files.createDirectories(java.nio.file.Path.of(dir));
      return new Trace(new java.io.PrintStream(java.nio.file.Files.newOutputStream(
          d.resolve("rank-" + rank + ".txt")), true, java.nio.charset.StandardCharsets.UTF_8));
    }

    void mark(long bytes, String what) {
      if (out != null) {
        out.printf(Locale.ROOT, "%.3fs %d %s%n",
            java.lang.management.ManagementFactory.getRuntimeMXBean().getUptime() / 1e3, bytes,
            what);
      }
    }
  }

  /** One timed allreduce: of the caller's buffers, or of a registered window. */
  private interface Call {
    void run();
  }

  /**
   * The same rule as peers.py: 1000 timed calls up to 64 KiB (so p99 is the 10th slowest, not
   * one unlucky call in 200), fewer above, at least 5 for large ones.
   */
  static int iterations(long bytes) {
    return (int) Math.max(5, Math.min(1000, (256L << 20) / Math.max(1, bytes) / 4));
  }

  /** Each size warms at least this long on every rank (peers.py: the same). */
  static final long WARM_MILLIS = 200;
  /**
   * The sweep's first size warms longer: it runs while the JIT compiles the whole call path
   * (2026-12-04, 16 cores: after 200 ms the first size's median was 1.5-2.2x its neighbours').
   */
  static final long WARM_FIRST_MILLIS = 1000;

  /** Untimed calls per size, as peers.py: 3000 for small messages, 64 MiB's worth above. */
  static int warmups(long bytes) {
    return (int) Math.max(2, Math.min(3000, (64L << 20) / Math.max(1, bytes)));
  }

  private static void barrier(HostCommunicator comm) {
    max(comm, 0);
  }

  private static double max(HostCommunicator comm, double v) {
    ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    b.putDouble(0, v);
    comm.allReduce(b, b, 1, DataType.F64, ReduceOp.MAX);
    return b.getDouble(0);
  }

  private static double sum(HostCommunicator comm, double v) {
    ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
    b.putDouble(0, v);
    comm.allReduce(b, b, 1, DataType.F64, ReduceOp.SUM);
    return b.getDouble(0);
  }
}
