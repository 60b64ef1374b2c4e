package io.treeline.examples.cli;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import io.treeline.plan.AlgorithmSelector;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Topology;
import io.treeline.transport.inprocess.InProcessGroup;
import java.io.IOException;
import java.io.PrintStream;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.LocalDateTime;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.BrokenBarrierException;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;
import java.util.concurrent.atomic.AtomicReference;

/**
 * {@code ./treeline bench}: the allreduce benchmark, in the format of nccl-tests'
 * {@code all_reduce_perf}: per size the time per call, algbw (bytes / time) and busbw (algbw x
 * 2(n-1)/n, the bandwidth a link would need), and #wrong (elements that differ from the
 * reference). Each size also measures a single-thread memcpy of the same bytes in the same run,
 * so that results from noisy machines can be read as ratios. Writes CSV and a PNG plot.
 */
final class BenchCommand {
  private BenchCommand() {
  }

  private record Row(long bytes, long count, String algo, double micros, double algbw,
      double busbw, long wrong, double memcpy) {
  }

  static int run(String[] argv, PrintStream out) {
    Args a = new Args("bench", "Allreduce benchmark in the style of nccl-tests' all_reduce_perf."
        + " Ranks run as threads of this JVM (in-process\ntransport) until the multi-process "
        + "launcher exists; every result is checked against the expected values.")
        .option("nodes", "N", "1", "simulated nodes")
        .option("ranks-per-node", "G", "4", "ranks per node")
        .option("algo", "LIST", "auto", "comma list of auto, ring, dbt, oneshot, twoshot, hierarchical")
        .option("dtype", "TYPE", "f32", "f32, f64, f16, bf16, i32, i64, u8")
        .option("op", "OP", "sum", "sum, prod, min, max, avg")
        .option("min-bytes", "SIZE", "8", "smallest message (-b in nccl-tests)")
        .option("max-bytes", "SIZE", "16M", "largest message (-e)")
        .option("factor", "F", "4", "size multiplier between rows (-f)")
        .option("iters", "N", "20", "timed iterations per size (-n); fewer above 64 MiB")
        .option("warmup", "N", "20", "untimed iterations per size (-w); the JIT compiles during these")
        .option("chunk", "SIZE", "512K", "pipelining chunk of tree and ring plans")
        .option("timeout", "SECONDS", "60", "collective timeout")
        .option("out", "DIR", "out/bench", "folder for bench.csv and bench.png");
    if (!a.parse(argv)) {
      return 0;
    }
    Topology topo = Topology.uniform(a.getInt("nodes"), a.getInt("ranks-per-node"));
    DataType type = DataType.parse(a.get("dtype"));
    ReduceOp op = ReduceOp.parse(a.get("op"));
    List<String> algos = List.of(a.get("algo").split(","));
    for (String s : algos) {
      if (!s.equals("auto")) {
        Algorithm al = Algorithm.parse(s);
        if (!al.supports(topo)) {
          throw new Args.UsageException(al.id() + " runs inside one node; with --nodes "
              + topo.nodes() + " use hierarchical, dbt or ring");
        }
      }
    }
    List<Long> sizes = new ArrayList<>();
    long factor = a.getInt("factor");
    if (factor < 2) {
      throw new Args.UsageException("--factor must be at least 2");
    }
    for (long b = Math.max(type.size(), a.getBytes("min-bytes")); b <= a.getBytes("max-bytes");
        b *= factor) {
      sizes.add(b / type.size() * type.size());
    }
    int iters = a.getInt("iters");
    int warmup = a.getInt("warmup");
    PlanConfig cfg = PlanConfig.DEFAULT.withChunkBytes(a.getBytes("chunk"));
    Path dir = Path.of(a.get("out"));

    int n = topo.size();
    out.printf("# treeline bench: allreduce, in-process transport (ranks as threads), %d node(s)"
        + " x %d ranks = %d ranks, %s %s%n", topo.nodes(), topo.maxLocalSize(), n,
        type.longName(), op.shortName());
    out.printf("# %d iterations (fewer above 64 MiB), %d warmup; busbw = algbw x 2(n-1)/n; "
        + "memcpy: one thread copying the same bytes, same run; %d cores, %s%n", iters, warmup,
        Runtime.getRuntime().availableProcessors(), LocalDateTime.now().withNano(0));
    out.println("#");
    out.printf("# %12s %12s %8s %6s %13s %10s %8s %8s %7s %8s%n", "size", "count", "type",
        "redop", "algo", "time", "algbw", "busbw", "#wrong", "memcpy");
    out.printf("# %12s %12s %8s %6s %13s %10s %8s %8s %7s %8s%n", "(B)", "(elements)", "", "",
        "", "(us)", "(GB/s)", "(GB/s)", "", "(GB/s)");

    List<Row> rows = new ArrayList<>();
    double[] rankMicros = new double[n];
    long[] wrong = new long[n];
    CyclicBarrier barrier = new CyclicBarrier(n);
    AtomicReference<Throwable> failure = new AtomicReference<>();
    Duration timeout = Duration.ofSeconds(a.getInt("timeout"));
    try (InProcessGroup group = new InProcessGroup(topo, cfg, timeout)) {
      List<Thread> threads = new ArrayList<>();
      for (int r = 0; r < n; r++) {
        int rank = r;
        Thread t = new Thread(() -> {
          try {
            for (long bytes : sizes) {
              long count = bytes / type.size();
              ByteBuffer in = fill(rank, count, type);
              ByteBuffer res = ByteBuffer.allocateDirect((int) bytes).order(ByteOrder.nativeOrder());
              for (String name : algos) {
                Algorithm al = name.equals("auto") ? AlgorithmSelector.DEFAULT.select(topo, bytes)
                    : Algorithm.parse(name);
                int it = bytes > (64 << 20) ? Math.max(3, iters / 4) : iters;
                for (int w = 0; w < warmup; w++) {
                  group.rank(rank).allReduce(al, in, res, count, type, op);
                }
                await(barrier, timeout);
                long t0 = System.nanoTime();
                for (int i = 0; i < it; i++) {
                  group.rank(rank).allReduce(al, in, res, count, type, op);
                }
                rankMicros[rank] = (System.nanoTime() - t0) / 1e3 / it;
                wrong[rank] = countWrong(res, count, type, op, n);
                await(barrier, timeout);
                if (rank == 0) {
                  Row row = row(bytes, count, name.equals("auto") ? "auto:" + al.id() : al.id(),
                      rankMicros, wrong, n, memcpy(in, res));
                  rows.add(row);
                  out.printf("  %12d %12d %8s %6s %13s %10.1f %8.2f %8.2f %7d %8.2f%n",
                      row.bytes, row.count, type.longName(), op.shortName(), row.algo,
                      row.micros, row.algbw, row.busbw, row.wrong, row.memcpy);
                }
                await(barrier, timeout);
              }
            }
          } catch (Throwable e) {
            failure.compareAndSet(null, e);
            barrier.reset();
          }
        }, "bench-rank-" + r);
        threads.add(t);
        t.start();
      }
      for (Thread t : threads) {
        t.join();
      }
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
      return 1;
    }
    if (failure.get() != null) {
      System.err.println("treeline bench: " + failure.get());
      return 1;
    }
    long totalWrong = rows.stream().mapToLong(Row::wrong).sum();
    out.printf("# out of bounds values : %d %s%n", totalWrong, totalWrong == 0 ? "OK" : "FAILED");
    double avg = rows.stream().mapToDouble(Row::busbw).average().orElse(0);
    out.printf("# avg bus bandwidth    : %.3f GB/s%n", avg);
    try {
      write(dir, rows, topo, type, op);
      out.println("# wrote " + dir.resolve("bench.csv") + " and " + dir.resolve("bench.png"));
    } catch (IOException e) {
      System.err.println("treeline bench: cannot write results to " + dir + ": " + e);
      return 1;
    }
    return totalWrong == 0 ? 0 : 1;
  }

  private static Row row(long bytes, long count, String algo, double[] micros, long[] wrong,
      int n, double memcpy) {
    double t = 0;
    long w = 0;
    for (int r = 0; r < n; r++) {
      t = Math.max(t, micros[r]);
      w += wrong[r];
    }
    double algbw = bytes / t / 1e3;
    double busbw = algbw * 2.0 * (n - 1) / n;
    return new Row(bytes, count, algo, t, algbw, busbw, w, memcpy);
  }

  /** Small integers, exact in every type: rank r's element i is 1 + r % 5 + i % 3. */
  private static ByteBuffer fill(int rank, long count, DataType t) {
    ByteBuffer b = ByteBuffer.allocateDirect((int) Math.max(1, count * t.size()))
        .order(ByteOrder.nativeOrder());
    for (int i = 0; i < count; i++) {
      double v = value(rank, i);
      switch (t) {
        case F32 -> b.putFloat(i * 4, (float) v);
        case F64 -> b.putDouble(i * 8, v);
        case F16 -> b.putShort(i * 2, io.treeline.core.HalfFloats.floatToHalf((float) v));
        case BF16 -> b.putShort(i * 2, io.treeline.core.HalfFloats.floatToBf16((float) v));
        case I32 -> b.putInt(i * 4, (int) v);
        case I64 -> b.putLong(i * 8, (long) v);
        case U8 -> b.put(i, (byte) v);
        default -> throw new AssertionError(t);
      }
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
      double got = switch (t) {
        case F32 -> res.getFloat(i * 4);
        case F64 -> res.getDouble(i * 8);
        case F16 -> io.treeline.core.HalfFloats.halfToFloat(res.getShort(i * 2));
        case BF16 -> io.treeline.core.HalfFloats.bf16ToFloat(res.getShort(i * 2));
        case I32 -> res.getInt(i * 4);
        case I64 -> res.getLong(i * 8);
        case U8 -> res.get(i) & 0xFF;
        default -> throw new AssertionError(t);
      };
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

  private static void await(CyclicBarrier b, Duration timeout) throws InterruptedException,
      BrokenBarrierException, TimeoutException {
    b.await(timeout.toMillis(), TimeUnit.MILLISECONDS);
  }

  private static void write(Path dir, List<Row> rows, Topology topo, DataType type,
      ReduceOp op) throws IOException {
    Files.createDirectories(dir);
    StringBuilder csv = new StringBuilder("size_bytes,count,dtype,op,algorithm,nodes,ranks,"
        + "time_us,algbw_gbps,busbw_gbps,wrong,memcpy_gbps\n");
    LinePlot plot = new LinePlot("Treeline allreduce, " + topo.nodes() + " node(s) x "
        + topo.maxLocalSize() + " ranks (threads), " + type.longName() + " " + op.shortName(),
        "message size", "busbw (GB/s)");
    for (Row r : rows) {
      csv.append(String.format("%d,%d,%s,%s,%s,%d,%d,%.3f,%.4f,%.4f,%d,%.4f%n", r.bytes, r.count,
          type.longName(), op.shortName(), r.algo, topo.nodes(), topo.size(), r.micros, r.algbw,
          r.busbw, r.wrong, r.memcpy));
      plot.add(r.algo.startsWith("auto:") ? "auto" : r.algo, r.bytes, r.busbw);
    }
    Files.writeString(dir.resolve("bench.csv"), csv);
    plot.write(dir.resolve("bench.png"));
  }
}
