package io.treeline.gpu;

import static jcuda.driver.JCudaDriver.cuMemGetInfo;
import static jcuda.driver.JCudaDriver.cuMemcpyDtoH;
import static jcuda.driver.JCudaDriver.cuMemcpyHtoD;

import io.treeline.bootstrap.TcpStoreBootstrap;
import io.treeline.comm.CollectiveCheck;
import io.treeline.comm.CommConfig;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.exec.FaultInjection;
import io.treeline.kernels.CudaModule;
import io.treeline.kernels.DevicePointers;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.stream.Stream;
import jcuda.Pointer;

/**
 * One rank of {@link DeviceFaultTest}, started by the launcher on this machine's GPU 0 with the
 * fault in {@code -Dtreeline.test.fault} (the hook in {@code DevicePlanRunner}: {@code
 * point=intra} is the call's first device step). Measures the GPU's free memory before it
 * creates its communicator (every rank at the same quiet point, after a store barrier), runs
 * {@code calls} allreduces of the registered buffers checked against a float64 reference, and
 * reports the one that fails: {@code FAULT-DETECTED t=<epoch ms> <message>}. After close, once
 * every other survivor has closed too (marker files: the store cannot count a dead rank) and
 * the faulty rank's process is gone, it measures again: {@code LEAKS free-before=...
 * free-after=... segment-files=... threads-before=... threads-after=...}; exits 1 if device
 * memory, a segment file or a thread was left. The faulty rank holds no context at either
 * measurement (it makes its first when it creates its communicator, and is gone at the end,
 * killed or exited after its close), so free memory must come back to where it was.
 *
 * <p>{@code main(timeoutMillis, calls, markerDir)}.
 */
public final class DeviceFaultRank {
  private DeviceFaultRank() {
  }

  public static void main(String[] args) throws Exception {
    long pid = ProcessHandle.current().pid();
    System.out.println("FAULT-RANK pid=" + pid);
    System.out.flush();
    Duration timeout = Duration.ofMillis(Long.parseLong(args[0]));
    int calls = Integer.parseInt(args[1]);
    Path markers = Path.of(args[2]);
    String spec = System.getProperty(FaultInjection.PROPERTY, "");
    int victim = Integer.parseInt(field(spec, "rank"));
    int code = 0;
    Duration t = Duration.ofSeconds(60);
    try (TcpStoreBootstrap boot = TcpStoreBootstrap.fromEnv(t);
        // survivors keep a context for the whole run (see DeviceCollectiveCheck's "leaks")
        CudaModule keep = boot.rank() == victim ? null : new CudaModule(0)) {
      long[] pids = new long[boot.size()];
      byte[][] all = boot.allGather(Long.toString(pid).getBytes(), t);
      for (int r = 0; r < pids.length; r++) {
        pids[r] = Long.parseLong(new String(all[r]));
      }
      boot.barrier(t);
      long before = free();
      boot.barrier(t); // every rank measured before any created its communicator
      int threadsBefore = treelineThreads();
      DeviceOptions opts = DeviceOptions.DEFAULT.withBufferBytes(16L << 20);
      try (DeviceCommunicator c = DeviceCommunicator.create(boot, CommConfig.DEFAULT
          .withTimeout(timeout), opts)) {
        for (int call = 1; call <= calls; call++) {
          allReduce(c, call);
        }
        System.out.println("FAULT-NONE " + calls + " calls right");
      } catch (RuntimeException e) {
        System.out.println("FAULT-DETECTED t=" + System.currentTimeMillis() + " "
            + e.getClass().getSimpleName() + ": " + e.getMessage().replace('\n', '|'));
      }
      System.out.flush();
      if (boot.rank() == victim) { // it threw and closed: it goes, so that it holds no memory
        System.exit(0);
      }
      // after close: wait for every other survivor to have closed, and the faulty rank to be gone
      Files.writeString(markers.resolve("closed-" + boot.rank()), "");
      long until = System.nanoTime() + 10_000_000_000L; // within the launcher's 15 s grace
      for (int r = 0; r < pids.length; r++) {
        boolean dead = r == victim;
        while (System.nanoTime() - until < 0 && (dead ? ProcessHandle.of(pids[r])
            .map(ProcessHandle::isAlive).orElse(false)
            : !Files.exists(markers.resolve("closed-" + r)))) {
          Thread.sleep(20);
        }
      }
      Thread.sleep(200); // the driver reclaims a dead process's context once it is reaped
      long after = free();
      long files = treelineFiles(pids);
      int threadsAfter = treelineThreads();
      System.out.println("LEAKS free-before=" + before + " free-after=" + after
          + " segment-files=" + files + " threads-before=" + threadsBefore + " threads-after="
          + threadsAfter);
      // 16 MiB registered buffers x 2 per rank: a leak would show as >= 32 MiB
      if (before - after > (8L << 20) || files > 0 || threadsAfter > threadsBefore) {
        System.out.println("LEAKED device memory " + (before - after) + " bytes, " + files
            + " segment files, threads " + threadsBefore + " -> " + threadsAfter);
        code = 1;
      }
    } catch (Throwable e) {
      System.out.println("CHECK FAILED: " + e);
      e.printStackTrace(System.out);
      code = 1;
    }
    System.out.flush();
    System.exit(code);
  }

  /** Call {@code call}: an odd size through the registered buffers, checked element by element. */
  private static void allReduce(DeviceCommunicator c, int call) {
    DataType t = DataType.F32;
    long n = 65_537 + 1021L * call;
    ByteBuffer host = Elements.direct(n, t);
    for (int i = 0; i < n; i++) {
      Elements.put(host, i, CollectiveCheck.value(call, c.rank(), i, t, ReduceOp.SUM), t);
    }
    cuMemcpyHtoD(DevicePointers.at(c.input()), Pointer.to(host), n * t.size());
    c.allReduce(n, t, ReduceOp.SUM, null);
    c.synchronize();
    ByteBuffer out = Elements.direct(n, t);
    cuMemcpyDtoH(Pointer.to(out), DevicePointers.at(c.output()), n * t.size());
    double[][] col = new double[c.size()][1];
    for (int i = 0; i < n; i++) {
      for (int r = 0; r < c.size(); r++) {
        col[r][0] = CollectiveCheck.value(call, r, i, t, ReduceOp.SUM);
      }
      CollectiveCheck.check(c.rank(), "call " + call, col, out, i, t, ReduceOp.SUM);
    }
  }

  private static long free() {
    long[] free = new long[1];
    long[] total = new long[1];
    cuMemGetInfo(free, total);
    return free[0];
  }

  private static int treelineThreads() {
    return (int) Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
        .filter(th -> th.getName().startsWith("treeline-")).count();
  }

  private static long treelineFiles(long[] pids) throws Exception {
    Path dir = io.treeline.transport.shm.SharedSegment.directory();
    try (Stream<Path> s = Files.list(dir)) {
      return s.map(p -> p.getFileName().toString()).filter(n -> n.startsWith("treeline-")
          && java.util.Arrays.stream(pids).anyMatch(p -> n.endsWith("-p" + p))).count();
    }
  }

  private static String field(String spec, String key) {
    for (String kv : spec.split(",")) {
      if (kv.startsWith(key + "=")) {
        return kv.substring(key.length() + 1);
      }
    }
    return "";
  }
}
