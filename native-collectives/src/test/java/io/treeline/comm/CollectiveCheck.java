package io.treeline.comm;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.core.DataType;
import io.treeline.core.HalfFloats;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Slices;
import io.treeline.reduce.KernelWarmUp;
import io.treeline.testing.Elements;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;

/**
 * One rank of a multi-process test, started by {@link MultiProcessCollectivesTest} through the
 * launcher. Every rank generates every rank's input from a hash of (seed, rank, element), so it
 * can compute the float64 reference itself without storing anyone's data, runs the collectives
 * and compares. Prints "CHECK OK ..." and exits 0, or prints the first mismatch and exits 1.
 *
 * <p>Modes: {@code matrix} (every type x op x odd size, every algorithm, the other
 * collectives), {@code big} (1 MiB + 3 and 64 MiB), {@code soak} (1000 mixed allreduces, then
 * counts of files, descriptors and threads after close).
 */
public final class CollectiveCheck {
  private static int checked;

  private CollectiveCheck() {
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(60))) {
      switch (mode) {
        case "matrix" -> matrix(boot);
        case "big" -> big(boot);
        case "soak" -> soak(boot, 1000);
        case "mismatch" -> mismatch(boot);
        default -> {
          if (!mode.startsWith("soak:")) {
            throw new IllegalArgumentException(mode);
          }
          soak(boot, Integer.parseInt(mode.substring(5)));
        }
      }
    } catch (Throwable e) {
      System.out.println("CHECK FAILED: " + e);
      e.printStackTrace(System.out);
      System.exit(1);
    }
    System.out.println("CHECK OK " + checked + " results");
    System.exit(0);
  }

  private static void matrix(TcpStoreBootstrap boot) {
    long[] sizes = {0, 1, 2, 13, 1021, 65537};
    try (HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      for (DataType t : DataType.values()) {
        for (ReduceOp op : ReduceOp.values()) {
          for (long n : sizes) {
            allReduce(c, t, op, n, 31 * t.ordinal() + op.ordinal());
          }
        }
      }
      for (long n : sizes) {
        reduceScatterAllGatherBroadcast(c, n);
      }
    }
    // every algorithm the topology supports, on small chunks so trees and rings pipeline
    for (Algorithm a : Algorithm.values()) {
      CommConfig cfg = CommConfig.DEFAULT.withAlgorithm(a)
          .withPlan(CommConfig.DEFAULT.plan().withChunkBytes(4096));
      boolean ok = a.supports(probeTopology(boot));
      if (!ok) {
        continue;
      }
      try (HostCommunicator c = HostCommunicator.create(boot, cfg)) {
        for (long n : new long[] {0, 7, 1021, 40_009}) {
          allReduce(c, DataType.F32, ReduceOp.SUM, n, 1000 + a.ordinal());
          allReduce(c, DataType.BF16, ReduceOp.AVG, n, 2000 + a.ordinal());
          allReduce(c, DataType.I64, ReduceOp.MAX, n, 3000 + a.ordinal());
        }
      }
    }
  }

  private static io.treeline.plan.Topology probeTopology(TcpStoreBootstrap boot) {
    try (HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      return c.topology();
    }
  }

  /** Rank 2's third call has one element more: every rank must fail, naming it. */
  private static void mismatch(TcpStoreBootstrap boot) {
    try (HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT.withTimeout(
        Duration.ofSeconds(30)))) {
      for (int call = 0; call < 3; call++) {
        long n = 1000 + (call == 2 && c.rank() == 2 ? 1 : 0);
        ByteBuffer b = Elements.direct(n, DataType.F32);
        long t0 = System.nanoTime();
        try {
          c.allReduce(b, b, n, DataType.F32, ReduceOp.SUM);
        } catch (io.treeline.core.CollectiveException e) {
          System.out.printf("MISMATCH-DETECTED after %.0f ms: %s%n",
              (System.nanoTime() - t0) / 1e6, e.getMessage());
          return;
        }
      }
      throw new AssertionError("rank " + c.rank() + ": mismatched calls were not detected");
    }
  }

  private static void big(TcpStoreBootstrap boot) {
    try (HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      allReduce(c, DataType.F32, ReduceOp.SUM, (1 << 20) / 4 + 3, 77);
      allReduce(c, DataType.BF16, ReduceOp.SUM, (1 << 20) / 2 + 3, 78);
      allReduce(c, DataType.F32, ReduceOp.SUM, (64 << 20) / 4, 79); // two 32 MiB windows
      // in place: the caller's buffer is the input whose own slice is read where it lies and
      // the output the peers' slices are gathered into
      allReduce(c, DataType.F32, ReduceOp.SUM, (1 << 20) / 4 + 3, 80, true);
      allReduce(c, DataType.BF16, ReduceOp.AVG, (1 << 20) / 2 + 5, 81, true);
      allReduce(c, DataType.F32, ReduceOp.SUM, (64 << 20) / 4 + 11, 82, true); // windows
    }
  }

  /**
   * {@code calls} mixed allreduces (sizes 1 B to 2 MB, f32 and f64, every 25th and the last 10
   * checked), heap after GC, direct memory, descriptors and threads sampled at every tenth of
   * the run and required flat from the first sample on; then close, and nothing may be left.
   */
  private static void soak(TcpStoreBootstrap boot, int calls) throws IOException {
    boot.barrier(Duration.ofSeconds(60)); // every rank has joined rank 0's store: its sockets are open
    java.util.Set<String> fdsBefore = descriptors();
    int threadsBefore = treelineThreads();
    long[] sizes = {1, 100, 3000, 65_536 + 5, 250_000, 17};
    long[] first = null;
    long t0 = System.nanoTime();
    try (HostCommunicator c = HostCommunicator.create(boot, CommConfig.DEFAULT)) {
      for (int i = 0; i < calls; i++) {
        if (i > 0 && i % Math.max(1, calls / 10) == 0) {
          long[] now = sample();
          System.out.printf("SOAK call %d: heap %.1f MiB, direct %.1f MiB, fds %d, threads %d, "
              + "%.0f calls/s%n", i, now[0] / 1048576.0, now[1] / 1048576.0, now[2], now[3],
              i / ((System.nanoTime() - t0) / 1e9));
          if (first == null) {
            first = now;
          } else if (now[0] > first[0] + (32L << 20) || now[1] > first[1] + (16L << 20)
              || now[2] > first[2] + 2 || now[3] > first[3]) {
            throw new IllegalStateException("not flat at call " + i + ": heap/direct/fds/threads "
                + java.util.Arrays.toString(now) + " against " + java.util.Arrays.toString(first)
                + " at the first sample");
          }
        }
        long n = sizes[i % sizes.length];
        boolean verify = i % 25 == 0 || i >= calls - 10;
        DataType t = i % 2 == 0 ? DataType.F32 : DataType.F64;
        if (verify) {
          allReduce(c, t, ReduceOp.SUM, n, i);
        } else {
          ByteBuffer in = Elements.direct(n, t);
          c.allReduce(in, in, n, t, ReduceOp.SUM); // in place, unchecked: the load itself
        }
      }
    }
    long shm = countTreelineFiles();
    java.util.Set<String> fdsAfter = descriptors();
    int threadsAfter = treelineThreads();
    // what the communicator could leave open: sockets, its segments, selectors' epoll fds
    // (the JVM opens and closes other descriptors, jars and pipes, on its own schedule)
    java.util.Set<String> leaked = new java.util.TreeSet<>(fdsAfter);
    leaked.removeAll(fdsBefore);
    leaked.removeIf(t -> !(t.startsWith("socket:") || t.contains("treeline-")
        || t.contains("eventpoll")));
    System.out.println("LEAKS shm-files=" + shm + " fds-before=" + fdsBefore.size()
        + " fds-after=" + fdsAfter.size() + " new-sockets/segments/selectors=" + leaked
        + " treeline-threads-before=" + threadsBefore + " after=" + threadsAfter);
    if (!leaked.isEmpty() || shm > 0 || threadsAfter > threadsBefore) {
      throw new IllegalStateException("leaked descriptors or threads after close: " + leaked);
    }
  }

  /** Heap used after a GC, direct buffer memory, open descriptors, live threads. */
  private static long[] sample() throws IOException {
    System.gc();
    try {
      Thread.sleep(50); // the cleaner frees direct buffers the GC found unreachable
    } catch (InterruptedException e) {
      Thread.currentThread().interrupt();
    }
    long heap = java.lang.management.ManagementFactory.getMemoryMXBean().getHeapMemoryUsage()
        .getUsed();
    long direct = 0;
    for (java.lang.management.BufferPoolMXBean b : java.lang.management.ManagementFactory
        .getPlatformMXBeans(java.lang.management.BufferPoolMXBean.class)) {
      if (b.getName().equals("direct")) {
        direct = b.getMemoryUsed();
      }
    }
    return new long[] {heap, direct, descriptors().size(), Thread.activeCount()};
  }

  private static long countTreelineFiles() throws IOException {
    Path dir = io.treeline.transport.shm.SharedSegment.directory();
    String mine = "-p" + ProcessHandle.current().pid();
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("treeline-")
          && p.getFileName().toString().endsWith(mine)).count();
    }
  }

  /** "fd -> target" of every open descriptor of this process. */
  private static java.util.Set<String> descriptors() throws IOException {
    java.util.Set<String> out = new java.util.HashSet<>();
    try (Stream<Path> s = Files.list(Path.of("/proc/self/fd"))) {
      for (Path fd : (Iterable<Path>) s::iterator) {
        try {
          out.add(Files.readSymbolicLink(fd).toString() + " (fd " + fd.getFileName() + ")");
        } catch (IOException e) {
          // closed while we listed: the directory stream's own descriptor
        }
      }
    }
    return out;
  }

  private static int treelineThreads() {
    int n = 0;
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      // the communicator's own threads; rank 0's store belongs to the bootstrap, the kernel
      // warm-up to the JVM (it ends by itself)
      if (t.getName().startsWith("treeline-") && !t.getName().startsWith("treeline-store")
          && !t.getName().equals(KernelWarmUp.THREAD) && t.isAlive()) {
        n++;
      }
    }
    return n;
  }

  // ---- data and reference ---------------------------------------------------------------------

  /** A value for (case, rank, element), never 0 or 1, representable in t, suited to op. */
  public static double value(long seed, int rank, long i, DataType t, ReduceOp op) {
    long h = mix(seed * 0x9E3779B97F4A7C15L + rank * 0xC2B2AE3D27D4EB4FL + i);
    double u = (h >>> 11) * 0x1p-53;
    switch (t) {
      case U8:
        return op == ReduceOp.PROD ? 2 + (h & 3) : 2 + Math.floorMod(h, 254);
      case I32:
        return op == ReduceOp.PROD ? Math.floorMod(h, 5) + 2 : (int) h;
      case I64:
        return op == ReduceOp.PROD ? Math.floorMod(h, 5) + 2 : (double) (h >> 12);
      default:
        double mag = op == ReduceOp.PROD ? 0.9 + 0.2 * u : 0.5 + 1.5 * u;
        double x = ((h & 1) == 0 || op == ReduceOp.PROD) ? mag : -mag;
        float f = (float) x;
        return switch (t) {
          case F16 -> HalfFloats.halfToFloat(HalfFloats.floatToHalf(f));
          case BF16 -> HalfFloats.bf16ToFloat(HalfFloats.floatToBf16(f));
          case F32 -> f;
          default -> x;
        };
    }
  }

  private static long mix(long z) {
    z = (z ^ (z >>> 30)) * 0xBF58476D1CE4E5B9L;
    z = (z ^ (z >>> 27)) * 0x94D049BB133111EBL;
    return z ^ (z >>> 31);
  }

  private static void allReduce(HostCommunicator c, DataType t, ReduceOp op, long n, long seed) {
    allReduce(c, t, op, n, seed, false);
  }

  private static void allReduce(HostCommunicator c, DataType t, ReduceOp op, long n, long seed,
      boolean inPlace) {
    int size = c.size();
    ByteBuffer in = Elements.direct(n, t);
    for (int i = 0; i < n; i++) {
      Elements.put(in, i, value(seed, c.rank(), i, t, op), t);
    }
    ByteBuffer out = inPlace ? in : Elements.direct(n, t);
    c.allReduce(in, out, n, t, op);
    double[][] col = new double[size][1];
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < size; r++) {
        col[r][0] = value(seed, r, i, t, op);
      }
      compare(c, "allreduce " + t + " " + op + " n=" + n + (inPlace ? " in place" : ""), col,
          out, i, t, op);
    }
  }

  private static void compare(HostCommunicator c, String what, double[][] col, ByteBuffer out,
      int i, DataType t, ReduceOp op) {
    check(c.rank(), what, col, out, i, t, op);
    checked++;
  }

  /**
   * Element {@code i} of {@code out} against the reference over {@code col} (each rank's value
   * in {@code col[r][0]}): float64 within the type's tolerance, integers exactly.
   */
  public static void check(int rank, String what, double[][] col, ByteBuffer out, int i,
      DataType t, ReduceOp op) {
    if (t.isFloating()) {
      double ref = Elements.reference(col, 0, t, op);
      double tol = Elements.tolerance(col, 0, t, op);
      double got = Elements.get(out, i, t);
      if (!(Math.abs(got - ref) <= tol)) {
        throw new AssertionError("rank " + rank + " " + what + " element " + i + ": got "
            + got + ", float64 reference " + ref + " (tolerance " + tol + ")");
      }
    } else {
      long ref = Elements.referenceLong(col, 0, t, op);
      long got = Elements.getLong(out, i, t);
      if (got != ref) {
        throw new AssertionError("rank " + rank + " " + what + " element " + i + ": got "
            + got + ", expected " + ref);
      }
    }
  }

  private static void reduceScatterAllGatherBroadcast(HostCommunicator c, long n) {
    DataType t = DataType.F64;
    int size = c.size();
    int[] bootOf = new int[size];
    // topology rank -> bootstrap rank, learned with an all-gather of the topology ranks
    ByteBuffer ids = Elements.direct(size, DataType.I32);
    ByteBuffer idsIn = Elements.direct(size, DataType.I32);
    idsIn.putInt(c.topologyRank() * 4, c.rank() + 1);
    c.allReduce(idsIn, ids, size, DataType.I32, ReduceOp.SUM);
    for (int p = 0; p < size; p++) {
      bootOf[p] = ids.getInt(p * 4) - 1;
    }
    int align = c.config().plan().alignElements(t.size());
    long seed = 5000 + n;
    ByteBuffer in = Elements.direct(n, t);
    for (int i = 0; i < n; i++) {
      Elements.put(in, i, value(seed, c.rank(), i, t, ReduceOp.SUM), t);
    }
    ByteBuffer rs = Elements.direct(n, t);
    c.reduceScatter(in, rs, n, t, ReduceOp.AVG);
    double[][] col = new double[size][1];
    long lo = Slices.lo(n, size, c.topologyRank(), align);
    long hi = Slices.hi(n, size, c.topologyRank(), align);
    for (int i = (int) lo; i < hi; i++) {
      for (int r = 0; r < size; r++) {
        col[r][0] = value(seed, r, i, t, ReduceOp.SUM);
      }
      compare(c, "reducescatter avg n=" + n, col, rs, i, t, ReduceOp.AVG);
    }
    ByteBuffer ag = Elements.direct(n, t);
    c.allGather(in, ag, n, t);
    int owner = 0;
    for (int i = 0; i < n; i++) {
      while (Slices.hi(n, size, owner, align) <= i) {
        owner++;
      }
      equal(c, "allgather n=" + n, value(seed, bootOf[owner], i, t, ReduceOp.SUM), ag, i, t);
    }
    int root = size - 1;
    ByteBuffer bc = Elements.direct(n, t);
    c.broadcast(in, bc, n, t, root);
    for (int i = 0; i < n; i++) {
      equal(c, "broadcast n=" + n, value(seed, root, i, t, ReduceOp.SUM), bc, i, t);
    }
  }

  private static void equal(HostCommunicator c, String what, double expect, ByteBuffer b, int i,
      DataType t) {
    double got = Elements.get(b, i, t);
    if (got != expect) {
      throw new AssertionError("rank " + c.rank() + " " + what + " element " + i + ": got "
          + got + ", expected " + expect);
    }
    checked++;
  }

  static List<String> args(String... a) {
    return new ArrayList<>(List.of(a));
  }
}
