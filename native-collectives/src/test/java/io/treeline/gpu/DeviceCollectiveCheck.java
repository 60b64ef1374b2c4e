package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuMemAlloc;
import static jcuda.driver.JCudaDriver.cuMemFree;
import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CollectiveCheck;
import io.treeline.comm.CommConfig;
import io.treeline.core.DataType;
import io.treeline.core.DeviceGradientAggregator;
import io.treeline.core.ReduceOp;
import io.treeline.core.CollectiveException;
import io.treeline.kernels.DevicePointers;
import io.treeline.plan.Algorithm;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import jcuda.Pointer;
import jcuda.driver.CUdeviceptr;

/**
 * One rank of a GPU test, started by {@link DeviceCollectivesTest} through the launcher, one JVM
 * per rank, all on this machine's GPU 0 (ranks that share a GPU: IPC event synchronisation)
 * unless the mode says otherwise. Every rank generates every rank's input from a hash of (seed,
 * rank, element), so it computes the float64 reference itself; prints "CHECK OK ..." and exits
 * 0, or prints the first mismatch and exits 1.
 *
 * <p>Modes: {@code matrix} (every type x op x odd sizes x {oneshot, twoshot, auto}, from device
 * buffers at odd addresses), {@code big} (64 MiB + 1 element, and windows), {@code leaks} (free
 * device memory and segment files back where they were after close), {@code mismatch} (rank 1
 * calls with one element more: everyone fails naming it), {@code flags} (the flag-barrier
 * synchronisation forced on ranks sharing one GPU: correct, though time-sliced),
 * {@code userapi} (the user interface {@code core.DeviceCommunicator} alone: argument errors
 * leave it usable, copies of more segments than one launch takes, an async allreduce's handle).
 */
public final class DeviceCollectiveCheck {
  private static final java.util.concurrent.atomic.AtomicLong checked =
      new java.util.concurrent.atomic.AtomicLong();

  private DeviceCollectiveCheck() {
  }

  public static void main(String[] args) throws Exception {
    String mode = args[0];
    // TREELINE_GPUS=k (issue 8's multi-GPU runs): rank r on GPU r mod k; else all on GPU 0
    int gpus = Integer.parseInt(System.getenv().getOrDefault("TREELINE_GPUS", "1"));
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(Duration.ofSeconds(120))) {
      int ordinal = gpus > 1 ? boot.rank() % gpus : 0;
      DeviceOptions opts = DeviceOptions.DEFAULT.withOrdinal(ordinal).withBufferBytes(80L << 20);
      switch (mode) {
        case "matrix" -> matrix(boot, opts);
        case "big" -> big(boot, opts);
        case "leaks" -> leaks(boot, opts);
        case "mismatch" -> mismatch(boot, opts);
        case "flags" -> flags(boot, opts);
        case "flags-mismatch" -> flagsMismatch(boot, opts);
        case "aggregator" -> aggregator(boot, opts);
        case "userapi" -> userApi(boot, opts);
        default -> throw new IllegalArgumentException(mode);
      }
    } catch (Throwable e) {
      System.out.println("CHECK FAILED: " + e);
      e.printStackTrace(System.out);
      System.exit(1);
    }
    System.out.println("CHECK OK " + checked.get() + " results");
    System.exit(0);
  }

  /**
   * The same checks with the ranks as threads of this JVM (they share the GPU's primary context
   * and each other's addresses, without IPC): {@code k} threads, each its own bootstrap rank.
   */
  static long threads(int k, String mode) throws Exception {
    int port;
    try (java.net.ServerSocket s = new java.net.ServerSocket(0)) {
      port = s.getLocalPort();
    }
    byte[] secret = ("in-process-" + System.nanoTime()).getBytes();
    java.util.List<Throwable> errors = java.util.Collections.synchronizedList(
        new java.util.ArrayList<>());
    Thread[] ts = new Thread[k];
    checked.set(0);
    for (int r = 0; r < k; r++) {
      int rank = r;
      ts[r] = new Thread(() -> {
        try (TcpStoreBootstrap boot = TcpStoreBootstrap.create(rank, k, "127.0.0.1", port,
            secret, Duration.ofSeconds(60))) {
          DeviceOptions opts = DeviceOptions.DEFAULT.withBufferBytes(8L << 20);
          switch (mode) {
            case "matrix" -> matrix(boot, opts);
            case "flags" -> flags(boot, opts);
            default -> throw new IllegalArgumentException(mode);
          }
        } catch (Throwable e) {
          errors.add(e);
        }
      }, "rank-" + r);
      ts[r].start();
    }
    for (Thread t : ts) {
      t.join(600_000);
    }
    if (!errors.isEmpty()) {
      AssertionError e = new AssertionError(errors.size() + " of " + k + " ranks failed: "
          + errors.get(0), errors.get(0));
      throw e;
    }
    return checked.get();
  }

  private static void matrix(TcpStoreBootstrap boot, DeviceOptions opts) {
    long[] sizes = {0, 1, 2, 13, 1021, 65_537, 131_071};
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT, opts)) {
      System.out.println("rank " + c.rank() + " on " + c.gpu() + ", sync " + c.sync());
      Algorithm[] algos = c.nodeCount() > 1 ? new Algorithm[] {null}
          : new Algorithm[] {Algorithm.ONESHOT, Algorithm.TWOSHOT, null};
      for (Algorithm a : algos) {
        for (DataType t : DataType.values()) {
          for (ReduceOp op : ReduceOp.values()) {
            for (long n : sizes) {
              allReduce(c, t, op, n, a, 31L * t.ordinal() + op.ordinal() + 977L * n, 1);
            }
          }
        }
      }
      // the registered buffers directly (in place: INPUT -> OUTPUT)
      allReduce(c, DataType.F32, ReduceOp.SUM, 4099, null, 7, -1);
    }
  }

  private static void big(TcpStoreBootstrap boot, DeviceOptions opts) {
    long n = (64L << 20) / 4 + 1; // 64 MiB + 1 element
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT, opts)) {
      allReduce(c, DataType.F32, ReduceOp.SUM, n, Algorithm.TWOSHOT, 71, 0);
      allReduce(c, DataType.F32, ReduceOp.AVG, n, Algorithm.ONESHOT, 72, 0);
      allReduce(c, DataType.BF16, ReduceOp.SUM, (64L << 20) / 2 + 1, null, 73, 0);
    }
    // windows: 1 MiB registered buffers, 5 MiB + 3 elements
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT,
        opts.withBufferBytes(1 << 20))) {
      allReduce(c, DataType.F64, ReduceOp.MAX, (5L << 20) / 8 + 3, null, 74, 1);
      allReduce(c, DataType.I32, ReduceOp.SUM, (5L << 20) / 4 + 3, Algorithm.TWOSHOT, 75, 0);
    }
  }

  private static void leaks(TcpStoreBootstrap boot, DeviceOptions opts) throws Exception {
    // free memory is the GPU's, shared by all ranks: every rank reads it at the same quiet points
    // (a context of our own stays alive throughout, so that creating and destroying contexts,
    // which costs hundreds of MiB each, is not what the numbers measure)
    Duration t = Duration.ofSeconds(60);
    try (io.treeline.kernels.CudaModule keep = new io.treeline.kernels.CudaModule(
        opts.ordinal())) {
      leaks(boot, opts, t);
    }
  }

  private static void leaks(TcpStoreBootstrap boot, DeviceOptions opts, Duration t)
      throws Exception {
    boot.barrier(t);
    long before = freeDeviceMemory(opts);
    boot.barrier(t);
    for (int round = 0; round < 3; round++) {
      try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT, opts)) {
        for (int i = 0; i < 200; i++) {
          allReduce(c, i % 2 == 0 ? DataType.F32 : DataType.BF16, ReduceOp.SUM,
              1 + (i * 7919L) % 300_000, null, i, i % 3, i % 50 == 0);
        }
      }
    }
    boot.barrier(t); // every rank has closed its communicator
    long after = freeDeviceMemory(opts);
    boot.barrier(t);
    long files = treelineFiles();
    System.out.println("LEAKS free-before=" + before + " free-after=" + after + " segment-files="
        + files);
    // three rounds of 2 x 80 MiB registered buffers per rank: a leak would show as >= 160 MiB
    if (before - after > (16L << 20) || files > 0) {
      throw new IllegalStateException("device memory or segment files left after close: "
          + (before - after) + " bytes, " + files + " files");
    }
  }

  private static void mismatch(TcpStoreBootstrap boot, DeviceOptions opts) {
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT.withTimeout(
        Duration.ofSeconds(30)), opts.withSync(DeviceOptions.Sync.EVENTS))) {
      for (int call = 0; call < 3; call++) {
        long n = 1000 + (call == 2 && c.rank() == 1 ? 1 : 0);
        long t0 = System.nanoTime();
        try {
          c.allReduce(n, DataType.F32, ReduceOp.SUM, null);
          c.synchronize();
        } catch (CollectiveException e) {
          System.out.printf("MISMATCH-DETECTED after %.0f ms: %s%n",
              (System.nanoTime() - t0) / 1e6, e.getMessage());
          return;
        }
      }
      throw new AssertionError("rank " + c.rank() + ": mismatched calls were not detected");
    }
  }

  /**
   * Flag synchronisation forced (ranks on distinct GPUs use it; here the ranks may share one),
   * one-shot so that both counts run the same barriers: rank 1 calls with one element more in
   * the third call, and every rank's synchronize fails with the call-descriptor check of the
   * flag barrier kernel, naming both calls, rank 1 and the barrier (not a timeout).
   */
  private static void flagsMismatch(TcpStoreBootstrap boot, DeviceOptions opts) {
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT.withTimeout(
        Duration.ofSeconds(30)), opts.withSync(DeviceOptions.Sync.FLAGS))) {
      if (c.sync() != DeviceOptions.Sync.FLAGS) {
        throw new AssertionError("rank " + c.rank() + ": sync " + c.sync());
      }
      for (int call = 0; call < 3; call++) {
        long n = 1000 + (call == 2 && c.rank() == 1 ? 1 : 0);
        long t0 = System.nanoTime();
        try {
          c.allReduce(n, DataType.F32, ReduceOp.SUM, Algorithm.ONESHOT);
          c.synchronize();
        } catch (io.treeline.core.CallMismatchException e) {
          System.out.printf("MISMATCH-DETECTED after %.0f ms: %s%n",
              (System.nanoTime() - t0) / 1e6, e.getMessage());
          return;
        }
      }
      throw new AssertionError("rank " + c.rank() + ": mismatched calls were not detected");
    }
  }

  /**
   * Seven gradient tensors of odd sizes on the GPU, 1 MiB registered buffers (so two
   * buckets), two steps: every tensor ends as the average over all ranks.
   */
  private static void aggregator(TcpStoreBootstrap boot, DeviceOptions opts) {
    long[] sizes = {1, 1021, 65_537, 13, 200_003, 5, 17};
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT,
        opts.withBufferBytes(1 << 20))) {
      DeviceGradientAggregator agg = new DeviceGradientAggregator(c, DataType.F32);
      CUdeviceptr[] grads = new CUdeviceptr[sizes.length];
      for (int g = 0; g < sizes.length; g++) {
        grads[g] = new CUdeviceptr();
        cuMemAlloc(grads[g], sizes[g] * 4);
        agg.register(DevicePointers.address(grads[g]), sizes[g]);
      }
      for (int step = 0; step < 2; step++) {
        for (int g = 0; g < sizes.length; g++) {
          ByteBuffer h = Elements.direct(sizes[g], DataType.F32);
          for (int i = 0; i < sizes[g]; i++) {
            Elements.put(h, i, CollectiveCheck.value(100L * step + g, c.rank(), i, DataType.F32,
                ReduceOp.AVG), DataType.F32);
          }
          cuMemcpyHtoD(grads[g], Pointer.to(h), sizes[g] * 4);
        }
        agg.allReduce();
        c.synchronize();
        for (int g = 0; g < sizes.length; g++) {
          ByteBuffer out = Elements.direct(sizes[g], DataType.F32);
          cuMemcpyDtoH(Pointer.to(out), grads[g], sizes[g] * 4);
          double[][] col = new double[c.size()][1];
          for (int i = 0; i < sizes[g]; i++) {
            for (int r = 0; r < c.size(); r++) {
              col[r][0] = CollectiveCheck.value(100L * step + g, r, i, DataType.F32,
                  ReduceOp.AVG);
            }
            CollectiveCheck.check(c.rank(), "aggregated gradient " + g + " step " + step, col,
                out, i, DataType.F32, ReduceOp.AVG);
            checked.incrementAndGet();
          }
        }
      }
      System.out.println("rank " + c.rank() + ": " + agg.buckets() + " buckets");
      for (CUdeviceptr p : grads) {
        cuMemFree(p);
      }
    }
  }

  /** Through {@link io.treeline.core.DeviceCommunicator} only, as a user holds it. */
  private static void userApi(TcpStoreBootstrap boot, DeviceOptions opts) {
    try (io.treeline.core.DeviceCommunicator c = DeviceCommunicator.create(boot,
        CommConfig.DEFAULT, opts.withBufferBytes(1 << 20))) {
      for (Runnable bad : new Runnable[] {
          () -> c.allReduce(-1, DataType.F32, ReduceOp.SUM),
          () -> c.allReduce(1, null, ReduceOp.SUM),
          () -> c.allReduce(c.capacityBytes() / 4 + 1, DataType.F32, ReduceOp.SUM),
          () -> c.copy(new long[1], new long[1], new long[1], 2)}) {
        try {
          bad.run();
          throw new AssertionError("rank " + c.rank() + ": a bad argument was accepted");
        } catch (IllegalArgumentException expected) {
          checked.incrementAndGet();
        }
      }
      // 11 segments (more than one copy launch takes) from one buffer into the input, back out
      int segments = 11;
      long each = 1021;
      long n = segments * each;
      ByteBuffer host = Elements.direct(n, DataType.F32);
      for (int i = 0; i < n; i++) {
        Elements.put(host, i, CollectiveCheck.value(7, c.rank(), i, DataType.F32, ReduceOp.SUM),
            DataType.F32);
      }
      CUdeviceptr buf = new CUdeviceptr();
      cuMemAlloc(buf, n * 4);
      try {
        long base = DevicePointers.address(buf);
        cuMemcpyHtoD(buf, Pointer.to(host), n * 4);
        long[] src = new long[segments];
        long[] dst = new long[segments];
        long[] bytes = new long[segments];
        for (int k = 0; k < segments; k++) {
          src[k] = base + 4 * each * k;
          dst[k] = c.input() + 4 * each * (segments - 1 - k); // reversed: order matters
          bytes[k] = 4 * each;
        }
        c.copy(src, dst, bytes, segments);
        c.allReduce(n, DataType.F32, ReduceOp.SUM);
        for (int k = 0; k < segments; k++) {
          src[k] = c.output() + 4 * each * (segments - 1 - k);
          dst[k] = base + 4 * each * k;
        }
        c.copy(src, dst, bytes, segments);
        c.synchronize();
        check(c, buf, n, 7, ReduceOp.SUM);
        // the same through allReduceAsync on the caller's buffer, waited for by its handle
        cuMemcpyHtoD(buf, Pointer.to(host), n * 4);
        io.treeline.core.Handle h = c.allReduceAsync(base, base, n, DataType.F32, ReduceOp.SUM);
        h.await();
        if (!h.isDone()) {
          throw new AssertionError("rank " + c.rank() + ": a handle that returned is not done");
        }
        check(c, buf, n, 7, ReduceOp.SUM);
      } finally {
        cuMemFree(buf);
      }
    }
  }

  private static void check(io.treeline.core.DeviceCommunicator c, CUdeviceptr buf, long n,
      long seed, ReduceOp op) {
    ByteBuffer out = Elements.direct(n, DataType.F32);
    cuMemcpyDtoH(Pointer.to(out), buf, n * 4);
    double[][] col = new double[c.size()][1];
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < c.size(); r++) {
        col[r][0] = CollectiveCheck.value(seed, r, i, DataType.F32, op);
      }
      CollectiveCheck.check(c.rank(), "user API allreduce", col, out, i, DataType.F32, op);
      checked.incrementAndGet();
    }
  }

  private static void flags(TcpStoreBootstrap boot, DeviceOptions opts) {
    try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT
        .withTimeout(Duration.ofSeconds(60)), opts.withSync(DeviceOptions.Sync.FLAGS))) {
      System.out.println("rank " + c.rank() + " sync " + c.sync());
      for (Algorithm a : new Algorithm[] {Algorithm.ONESHOT, Algorithm.TWOSHOT}) {
        for (long n : new long[] {1, 1021, 65_537}) {
          allReduce(c, DataType.F32, ReduceOp.SUM, n, a, 90 + n, 0);
          allReduce(c, DataType.BF16, ReduceOp.AVG, n, a, 91 + n, 1);
        }
      }
    }
  }

  private static void allReduce(DeviceCommunicator c, DataType t, ReduceOp op, long n,
      Algorithm a, long seed, int misalign) {
    allReduce(c, t, op, n, a, seed, misalign, true);
  }

  /**
   * Fill a device buffer with this rank's values, allreduce it into another (both starting
   * {@code misalign} elements past an aligned address; -1: the registered buffers in place),
   * copy the result back and compare every element with the reference.
   */
  private static void allReduce(DeviceCommunicator c, DataType t, ReduceOp op, long n,
      Algorithm a, long seed, int misalign, boolean verify) {
    if (c.nodeCount() > 1) {
      a = null; // across nodes the GPU path runs hierarchical
    }
    int es = t.size();
    ByteBuffer host = Elements.direct(n, t);
    for (int i = 0; i < n; i++) {
      Elements.put(host, i, CollectiveCheck.value(seed, c.rank(), i, t, op), t);
    }
    long bytes = n * es;
    CUdeviceptr src = null;
    CUdeviceptr dst = null;
    long from;
    long to;
    if (misalign < 0) {
      from = c.input();
      to = c.output();
      if (bytes > 0) {
        cuMemcpyHtoD(DevicePointers.at(from), Pointer.to(host), bytes);
      }
      c.allReduce(n, t, op, a);
    } else {
      src = new CUdeviceptr();
      dst = new CUdeviceptr();
      cuMemAlloc(src, bytes + 64);
      cuMemAlloc(dst, bytes + 64);
      from = DevicePointers.address(src) + (long) misalign * es;
      to = DevicePointers.address(dst) + (long) misalign * es;
      if (bytes > 0) {
        cuMemcpyHtoD(DevicePointers.at(from), Pointer.to(host), bytes);
      }
      c.allReduce(from, to, n, t, op, a);
    }
    c.synchronize();
    ByteBuffer out = Elements.direct(n, t);
    if (bytes > 0) {
      cuMemcpyDtoH(Pointer.to(out), DevicePointers.at(to), bytes);
    }
    if (src != null) {
      cuMemFree(src);
      cuMemFree(dst);
    }
    if (!verify) {
      return;
    }
    int size = c.size();
    double[][] col = new double[size][1];
    String what = "allreduce " + t + " " + op + " n=" + n + " " + (a == null
        ? "auto (" + c.select(n * es).id() + ")" : a.id());
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < size; r++) {
        col[r][0] = CollectiveCheck.value(seed, r, i, t, op);
      }
      CollectiveCheck.check(c.rank(), what, col, out, i, t, op);
      checked.incrementAndGet();
    }
  }

  private static long freeDeviceMemory(DeviceOptions opts) {
    long[] free = new long[1];
    long[] total = new long[1];
    cuMemGetInfo(free, total);
    return free[0];
  }

  private static long treelineFiles() throws Exception {
    Path dir = io.treeline.transport.shm.SharedSegment.directory();
    String mine = "-p" + ProcessHandle.current().pid();
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("treeline-gpu-")
          && p.getFileName().toString().endsWith(mine)).count();
    }
  }
}
