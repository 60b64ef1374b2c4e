package io.treeline.examples.cli;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CommConfig;
import io.treeline.comm.HostCommunicator;
import io.treeline.plan.Algorithm;
import io.treeline.plan.AlgorithmSelector;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Topology;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.atomic.AtomicReference;
import picocli.CommandLine.Command;
import picocli.CommandLine.Model.CommandSpec;
import picocli.CommandLine.Option;
import picocli.CommandLine.Spec;

/**
 * {@code ./treeline bench}: the allreduce benchmark, in the format of nccl-tests'
 * {@code all_reduce_perf}: per size the mean time per call (and the slowest rank's median
 * and p99), algbw (bytes / time) and busbw (algbw x 2(n-1)/n, the bandwidth a link would
 * need), and #wrong (elements that differ from the reference). Each size also measures a single-thread memcpy of the same bytes in the same run,
 * so that results from noisy machines can be read as ratios. Writes CSV and a PNG plot.
 */
@Command(name = "bench",
    header = "Allreduce benchmark, nccl-tests style: table, CSV and plots", mixinStandardHelpOptions = true,
    versionProvider = Treeline.Version.class, sortOptions = false,
    description = {"Allreduce benchmark in the style of nccl-tests' all_reduce_perf. Ranks run "
        + "as threads of this JVM, or as separate JVMs under ./treeline run (shm inside nodes, "
        + "TCP across). Every result is checked against the expected values. nccl-tests' short "
        + "options work too: -b -e -f -n -w -d -o.",
        "",
        "./treeline bench --device (or ./treeline bench device) is the GPU benchmark."},
    footer = {"", "Examples:", "  ./treeline bench --nodes 2 --ranks-per-node 2 --algo "
        + "auto,ring,dbt,hierarchical --max-bytes 64M",
        "  ./treeline run --nodes 2 --ranks-per-node 2 -- bench -b 8 -e 64M -f 4"})
final class BenchCommand implements Callable<Integer> {

  private record Row(long bytes, long count, String algo, double micros, double median,
      double p99, double algbw,
      double busbw, long wrong, double memcpy) {
  }

  @Spec
  CommandSpec spec;

  private final PrintStream out;

  @Option(names = "--nodes", paramLabel = "N", defaultValue = "1",
      description = "simulated nodes, 1..64 (default: ${DEFAULT-VALUE})")
  int nodes;

  @Option(names = "--ranks-per-node", paramLabel = "G", defaultValue = "4",
      description = "ranks per node, 1..64, at most 256 ranks in all (default: ${DEFAULT-VALUE})")
  int ranksPerNode;

  @Option(names = "--algo", paramLabel = "LIST", split = ",", defaultValue = "auto",
      completionCandidates = AlgorithmIds.WithAuto.class,
      description = "comma list of ${COMPLETION-CANDIDATES} (default: ${DEFAULT-VALUE})")
  List<String> algos;

  @Option(names = {"-d", "--dtype"}, paramLabel = "TYPE", defaultValue = "f32",
      description = "f32, f64, f16, bf16, i32, i64, u8 (default: ${DEFAULT-VALUE})")
  DataType type;

  @Option(names = {"-o", "--op"}, paramLabel = "OP", defaultValue = "sum",
      description = "sum, prod, min, max, avg (default: ${DEFAULT-VALUE})")
  ReduceOp op;

  @Option(names = {"-b", "--min-bytes"}, paramLabel = "SIZE", defaultValue = "8",
      converter = Units.Size.class,
      description = "smallest message, e.g. 8, 64K, 1M (default: ${DEFAULT-VALUE})")
  long minBytes;

  @Option(names = {"-e", "--max-bytes"}, paramLabel = "SIZE", defaultValue = "16M",
      converter = Units.Size.class,
      description = "largest message, below 2G (default: ${DEFAULT-VALUE})")
  long maxBytes;

  @Option(names = {"-f", "--factor"}, paramLabel = "F", defaultValue = "4",
      description = "size multiplier between rows, 2..1024 (default: ${DEFAULT-VALUE})")
  int factor;

  @Option(names = {"-n", "--iters"}, paramLabel = "N", defaultValue = "20",
      description = "timed iterations per size, 1..1000000; a quarter above 64M "
          + "(default: ${DEFAULT-VALUE})")
  int iters;

  @Option(names = {"-w", "--warmup"}, paramLabel = "N", defaultValue = "20",
      description = "untimed iterations per size, 0..1000000; the JIT compiles during these "
          + "(default: ${DEFAULT-VALUE})")
  int warmup;

  @Option(names = "--chunk", paramLabel = "SIZE", defaultValue = "512K",
      converter = Units.Size.class,
      description = "pipelining chunk of tree and ring plans, 64..1G (default: ${DEFAULT-VALUE})")
  long chunk;

  @Option(names = "--timeout", paramLabel = "DURATION", defaultValue = "60s",
      description = "collective timeout, e.g. 30s, 2min; a plain number is seconds "
          + "(default: ${DEFAULT-VALUE})")
  Duration timeout;

  @Option(names = "--out", paramLabel = "DIR", defaultValue = "out/bench",
      description = "folder for bench.csv, bench.png and bench.svg (default: ${DEFAULT-VALUE})")
  Path dir;

  BenchCommand(PrintStream out) {
    this.out = out;
  }

  /** Checks every option against its range before anything runs. */
  private List<Long> validate(boolean distributed) {
    Units.range(spec, "--nodes", nodes, 1, 64);
    Units.range(spec, "--ranks-per-node", ranksPerNode, 1, 64);
    Units.range(spec, "--nodes x --ranks-per-node", (long) nodes * ranksPerNode, 1, 256);
    Units.algorithms(spec, "--algo", algos, List.of("auto", "ring", "dbt", "tree", "oneshot",
        "twoshot", "hierarchical"));
    Units.sizeRange(spec, "-b/--min-bytes", minBytes, 1, Integer.MAX_VALUE,
        "the host benchmark's buffers are Java direct buffers");
    Units.sizeRange(spec, "-e/--max-bytes", maxBytes, 1, Integer.MAX_VALUE,
        "the host benchmark's buffers are Java direct buffers");
    if (minBytes > maxBytes) {
      throw Units.usage(spec, "-b/--min-bytes " + Units.bytesText(minBytes) + " is larger than "
          + "-e/--max-bytes " + Units.bytesText(maxBytes));
    }
    Units.range(spec, "-f/--factor", factor, 2, 1024);
    Units.range(spec, "-n/--iters", iters, 1, 1_000_000);
    Units.range(spec, "-w/--warmup", warmup, 0, 1_000_000);
    Units.sizeRange(spec, "--chunk", chunk, 64, 1L << 30, "a pipelining chunk");
    Units.durationRange(spec, "--timeout", timeout, Duration.ofMillis(100), Duration.ofDays(1));
    Topology topo = Topology.uniform(nodes, ranksPerNode);
    if (!distributed) {
      for (String s : algos) {
        if (!s.equals("auto") && !Algorithm.parse(s).supports(topo)) {
          throw Units.usage(spec, "--algo " + Algorithm.parse(s).id() + " runs inside one "
              + "node; with --nodes " + nodes + " use hierarchical, dbt or ring");
        }
      }
    }
    List<Long> sizes = new ArrayList<>();
    for (long b = Math.max(type.size(), minBytes); b <= maxBytes; b *= factor) {
      sizes.add(b / type.size() * type.size());
    }
    return sizes;
  }

  @Override
  public Integer call() throws Exception {
    boolean distributed = System.getenv(TcpStoreBootstrap.RANK) != null;
    List<Long> sizes = validate(distributed);
    Topology topo = Topology.uniform(nodes, ranksPerNode);
    PlanConfig cfg = PlanConfig.DEFAULT.withChunkBytes(chunk);
    List<Row> rows = new ArrayList<>();
    AtomicReference<Throwable> failure = new AtomicReference<>();
    if (distributed) {
      try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(timeout);
          HostCommunicator comm = HostCommunicator.create(boot, CommConfig.DEFAULT.withTimeout(timeout)
              .withPlan(cfg))) {
        Backend b = new CommBackend(comm);
        if (b.rank() == 0) {
          header(out, "multi-process (shm inside nodes, TCP across), one JVM per rank",
              comm.topology(), type, op, iters, warmup);
        }
        runRank(b, sizes, algos, type, op, iters, warmup, timeout, rows, out);
        topo = comm.topology();
      } catch (Exception e) {
        failure.set(e);
      }
    } else {
      header(out, "in-process (ranks as threads of one JVM, the same communicator)", topo,
          type, op, iters, warmup);
      int[] layout = new int[topo.nodes()];
      java.util.Arrays.fill(layout, topo.localSize(0));
      HostCommunicator[] comms = HostCommunicator.inProcess(CommConfig.DEFAULT.withTimeout(timeout)
          .withPlan(cfg), layout);
      try {
        List<Thread> threads = new ArrayList<>();
        for (HostCommunicator c : comms) {
          Backend b = new CommBackend(c);
          Thread th = new Thread(() -> {
            try {
              runRank(b, sizes, algos, type, op, iters, warmup, timeout, rows, out);
            } catch (Throwable e) {
              failure.compareAndSet(null, e);
              c.close(); // the other ranks fail at once instead of at the timeout
            }
          }, "bench-rank-" + c.rank());
          threads.add(th);
          th.start();
        }
        for (Thread th : threads) {
          th.join();
        }
      } catch (InterruptedException e) {
        Thread.currentThread().interrupt();
        return 1;
      } finally {
        for (HostCommunicator c : comms) {
          c.close();
        }
      }
    }
    if (failure.get() != null) {
      System.err.println("treeline bench: " + failure.get());
      return 1;
    }
    if (rows.isEmpty()) {
      return 0; // not rank 0
    }
    long totalWrong = rows.stream().mapToLong(Row::wrong).sum();
    out.printf("# out of bounds values : %d %s%n", totalWrong, totalWrong == 0 ? "OK" : "FAILED");
    double avg = rows.stream().mapToDouble(Row::busbw).average().orElse(0);
    out.printf("# avg bus bandwidth    : %.3f GB/s%n", avg);
    try {
      write(dir, rows, topo, type, op, distributed ? "processes" : "threads");
      out.println("# wrote " + dir.resolve("bench.csv") + ", " + dir.resolve("bench.png")
          + " and " + dir.resolve("bench.svg"));
    } catch (IOException e) {
      System.err.println("treeline bench: cannot write results to " + dir + ": " + e);
      return 1;
    }
    return totalWrong == 0 ? 0 : 1;
  }

  private static void header(PrintStream out, String transport, Topology topo, DataType type,
      ReduceOp op, int iters, int warmup) {
    out.printf("# treeline bench: allreduce, %s, %d node(s), %d ranks (%s), %s %s%n", transport,
        topo.nodes(), topo.size(), topo, type.longName(), op.shortName());
    out.printf("# %d iterations (fewer above 64 MiB), %d warmup; busbw = algbw x 2(n-1)/n; "
        + "memcpy: one thread copying the same bytes, same run; %d cores, %s%n", iters, warmup,
        Runtime.getRuntime().availableProcessors(), LocalDateTime.now().withNano(0));
    out.println("#");
    out.printf("# %12s %12s %8s %6s %17s %10s %10s %10s %8s %8s %7s %8s%n", "size", "count",
        "type", "redop", "algo", "time", "median", "p99", "algbw", "busbw", "#wrong", "memcpy");
    out.printf("# %12s %12s %8s %6s %17s %10s %10s %10s %8s %8s %7s %8s%n", "(B)",
        "(elements)", "", "", "", "(us)", "(us)", "(us)", "(GB/s)", "(GB/s)", "", "(GB/s)");
  }

  /** What one rank needs to run the benchmark: an allreduce, and agreement on the results. */
  private interface Backend {
    int rank();

    int size();

    Topology topology();

    void allReduce(Algorithm algo, ByteBuffer in, ByteBuffer out, long count, DataType type,
        ReduceOp op);

    /** The largest of every rank's {@code v}, on every rank. */
    double max(double v) throws Exception;

    long sum(long v) throws Exception;
  }

  private record CommBackend(HostCommunicator c) implements Backend {
    public int rank() {
      return c.rank();
    }

    public int size() {
      return c.size();
    }

    public Topology topology() {
      return c.topology();
    }

    public void allReduce(Algorithm algo, ByteBuffer in, ByteBuffer out, long count,
        DataType type, ReduceOp op) {
      c.allReduce(in, out, count, type, op, algo);
    }

    public double max(double v) {
      ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
      b.putDouble(0, v);
      c.allReduce(b, b, 1, DataType.F64, ReduceOp.MAX);
      return b.getDouble(0);
    }

    public long sum(long v) {
      ByteBuffer b = ByteBuffer.allocateDirect(8).order(ByteOrder.nativeOrder());
      b.putLong(0, v);
      c.allReduce(b, b, 1, DataType.I64, ReduceOp.SUM);
      return b.getLong(0);
    }
  }

  /** One rank's part of the benchmark; rank 0 prints and collects the rows. */
  private static void runRank(Backend b, List<Long> sizes, List<String> algos, DataType type,
      ReduceOp op, int iters, int warmup, Duration timeout, List<Row> rows, PrintStream out)
      throws Exception {
    int n = b.size();
    Topology topo = b.topology();
    for (long bytes : sizes) {
      long count = bytes / type.size();
      ByteBuffer in = fill(b.rank(), count, type);
      ByteBuffer res = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
      for (String name : algos) {
        Algorithm al = name.equals("auto") ? AlgorithmSelector.DEFAULT.select(topo, bytes)
            : Algorithm.parse(name);
        int it = bytes > (64 << 20) ? Math.max(3, iters / 4) : iters;
        double micros;
        double median;
        double p99;
        try (Progress bar = b.rank() == 0 ? Progress.start(Units.bytesText(bytes) + " "
            + al.id(), warmup + it) : Progress.none()) {
          for (int w = 0; w < warmup; w++) {
            b.allReduce(al, in, res, count, type, op);
            bar.step();
          }
          b.max(0); // line the ranks up before the clock starts
          long[] each = new long[it];
          long t0 = System.nanoTime();
          for (int i = 0; i < it; i++) {
            long s = System.nanoTime();
            b.allReduce(al, in, res, count, type, op);
            each[i] = System.nanoTime() - s;
            bar.step();
          }
          micros = b.max((System.nanoTime() - t0) / 1e3 / it);
          java.util.Arrays.sort(each);
          // the slowest rank's median and p99 (nearest rank; of 20 iterations p99 is the max)
          median = b.max(each[(it - 1) / 2] / 1e3);
          p99 = b.max(each[(int) Math.ceil(0.99 * it) - 1] / 1e3);
        }
        long wrong = b.sum(countWrong(res, count, type, op, n));
        if (b.rank() == 0) {
          Row row = row(bytes, count, name.equals("auto") ? "auto:" + al.id() : al.id(), micros,
              median, p99, wrong, n, memcpy(in, res));
          rows.add(row);
          out.printf("  %12d %12d %8s %6s %17s %10.1f %10.1f %10.1f %8.2f %8.2f %7d %8.2f%n",
              row.bytes, row.count, type.longName(), op.shortName(), row.algo, row.micros,
              row.median, row.p99, row.algbw, row.busbw, row.wrong, row.memcpy);
        }
      }
    }
  }

  private static Row row(long bytes, long count, String algo, double t, double median,
      double p99, long w, int n, double memcpy) {
    double algbw = bytes / t / 1e3;
    double busbw = algbw * 2.0 * (n - 1) / n;
    return new Row(bytes, count, algo, t, median, p99, algbw, busbw, w, memcpy);
  }

  /** Small integers, exact in every type: rank r's element i is 1 + r % 5 + i % 3. */
  private static ByteBuffer fill(int rank, long count, DataType t) {
    ByteBuffer b = ByteBuffer.allocateDirect((int) Math.max(1, count * t.size()))
        .order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      t.put(b, i, value(rank, i));
    }
    return b;
  }

  private static double value(int rank, long i) {
    return 1 + rank % 5 + i % 3;
  }

  private static long countWrong(ByteBuffer res, long count, DataType t, ReduceOp op, int n) {
    long wrong = 0;
    for (int i = 0; i < count; i++) {
      double expect = value(0, i);
      for (int r = 1; r < n; r++) {
        double v = value(r, i);
        expect = switch (op) {
          case SUM, AVG -> expect + v;
          case PROD -> expect * v;
          case MIN -> Math.min(expect, v);
          case MAX -> Math.max(expect, v);
        };
      }
      if (op == ReduceOp.AVG) {
        expect = t.isFloating() ? expect / n : Math.floor(expect / n);
      }
      if (!t.isFloating()) {
        long e = (long) expect;
        expect = t == DataType.I32 ? (int) e : t == DataType.U8 ? e & 0xFF : e;
      }
      double got = t.get(res, i);
      double tol = switch (t) {
        case F16 -> 0x1p-10;
        case BF16 -> 0x1p-7;
        case F32 -> 0x1p-22;
        case F64 -> 0x1p-50;
        default -> 0;
      } * Math.abs(expect) * n;
      if (!(Math.abs(got - expect) <= tol)) {
        wrong++;
      }
    }
    return wrong;
  }

  /** GB/s of one thread copying the message between two direct buffers (best of 5). */
  private static double memcpy(ByteBuffer src, ByteBuffer dst) {
    long bytes = dst.capacity();
    double best = Double.MAX_VALUE;
    int reps = (int) Math.max(1, Math.min(100, (64L << 20) / Math.max(1, bytes)));
    for (int k = 0; k < 5; k++) {
      long t0 = System.nanoTime();
      for (int i = 0; i < reps; i++) {
        dst.put(0, src, 0, (int) bytes);
      }
      best = Math.min(best, (System.nanoTime() - t0) / (double) reps);
    }
    return bytes / best;
  }

  private static void write(Path dir, List<Row> rows, Topology topo, DataType type,
      ReduceOp op, String ranksAre) throws IOException {
    Files.createDirectories(dir);
    StringBuilder csv = new StringBuilder("size_bytes,count,dtype,op,algorithm,nodes,ranks,"
        + "time_us,median_us,p99_us,algbw_gbps,busbw_gbps,wrong,memcpy_gbps\n");
    for (Row r : rows) {
      csv.append(String.format("%d,%d,%s,%s,%s,%d,%d,%.3f,%.3f,%.3f,%.4f,%.4f,%d,%.4f%n",
          r.bytes, r.count, type.longName(), op.shortName(), r.algo, topo.nodes(), topo.size(),
          r.micros, r.median, r.p99, r.algbw, r.busbw, r.wrong, r.memcpy));
    }
    Files.writeString(dir.resolve("bench.csv"), csv);
    try {
      Map<String, List<Charts.SizePoint>> series = new LinkedHashMap<>();
      for (Row r : rows) {
        series.computeIfAbsent(r.algo.startsWith("auto:") ? "auto" : r.algo,
            k -> new ArrayList<>()).add(new Charts.SizePoint(r.bytes, r.micros, r.busbw));
      }
      Charts.bandwidth("Treeline allreduce, " + topo.nodes() + " node(s), " + topo.size()
          + " ranks (" + ranksAre + "), " + type.longName() + " " + op.shortName(),
          Charts.caption(Charts.machine(), "host path, ./treeline bench"), series,
          dir.resolve("bench.png"));
    } catch (LinkageError e) {
      // a runtime without java.desktop (the jlink image carried to GPU machines): CSV only
      System.err.println("# no plot: this Java runtime has no java.desktop module (" + e
          + "); bench.csv is written");
    }
  }
}
