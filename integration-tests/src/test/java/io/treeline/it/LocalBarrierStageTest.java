package io.treeline.it;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.barrier.BarrierJobs;
import io.treeline.barrier.BarrierStageException;
import io.treeline.barrier.Treeline;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.spark.TreelinePlugin;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.stream.Stream;
import org.apache.spark.SparkConf;
import org.apache.spark.TaskContext;
import org.apache.spark.api.java.JavaRDD;
import org.apache.spark.api.java.JavaSparkContext;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/** Barrier stages on local[4] with the plugin: four tasks, one JVM, shared memory. */
class LocalBarrierStageTest {
  static final int N = 1021; // prime, not a multiple of 4
  private static JavaSparkContext jsc;

  @BeforeAll
  static void start() {
    SparkConf conf = new SparkConf().setMaster("local[4]").setAppName("treeline-local")
        .set("spark.plugins", TreelinePlugin.class.getName())
        .set("spark.ui.enabled", "false")
        .set("spark.treeline.timeout", "20s")
        .set("spark.scheduler.barrier.maxConcurrentTasksCheck.interval", "1s");
    jsc = new JavaSparkContext(conf);
  }

  @AfterAll
  static void stop() {
    if (jsc != null) {
      jsc.stop();
    }
  }

  private static JavaRDD<Integer> fourPartitions() {
    return jsc.parallelize(List.of(0, 1, 2, 3), 4);
  }

  @Test
  void everyTypeAllReducesToTheFloat64ReferenceComputedOnTheDriver() {
    long t0 = System.nanoTime();
    List<double[][]> results = BarrierJobs.collect(fourPartitions(), (p, it) -> {
      Communicator c = Treeline.communicator();
      DataType[] types = DataType.values();
      double[][] out = new double[types.length][];
      for (DataType t : types) {
        ByteBuffer in = ItData.encode(t.ordinal(), c.rank(), N, t);
        ByteBuffer res = ByteBuffer.allocateDirect(N * t.size()).order(in.order());
        c.allReduce(in, res, N, t, ReduceOp.SUM);
        out[t.ordinal()] = ItData.decode(res, N, t);
      }
      return java.util.Collections.singletonList(out).iterator();
    });
    assertEquals(4, results.size());
    for (DataType t : DataType.values()) {
      for (int i = 0; i < N; i++) {
        double ref = ItData.reference(t.ordinal(), 4, i, t, ReduceOp.SUM);
        double tol = ItData.tolerance(t.ordinal(), 4, i, t);
        for (int r = 0; r < 4; r++) {
          double got = results.get(r)[t.ordinal()][i];
          assertTrue(Math.abs(got - ref) <= tol, t + " rank " + r + " element " + i + ": "
              + got + " vs " + ref);
        }
      }
    }
    System.out.printf("local[4] barrier stage, 7 types x %d elements: %.1f s%n", N,
        (System.nanoTime() - t0) / 1e9);
  }

  @Test
  void aTaskFailingOnTheFirstAttemptIsRetriedWithTheWholeStageAndLeavesNothingBehind()
      throws Exception {
    long t0 = System.nanoTime();
    List<Integer> attempts = BarrierJobs.collect(fourPartitions(), (p, it) -> {
      Communicator c = Treeline.communicator();
      ByteBuffer b = ItData.encode(1, c.rank(), N, DataType.F32);
      c.allReduce(b, b, N, DataType.F32, ReduceOp.SUM);
      int attempt = TaskContext.get().stageAttemptNumber();
      if (attempt == 0 && p == 1) {
        throw new IllegalStateException("injected failure on attempt 0");
      }
      c.allReduce(b, b, N, DataType.F32, ReduceOp.SUM);
      return List.of(attempt).iterator();
    });
    assertEquals(4, attempts.size());
    assertTrue(attempts.stream().allMatch(a -> a >= 1), "succeeded on a retry: " + attempts);
    // attempt 0's communicators are closed: no open communicator, thread, or segment file
    long until = System.currentTimeMillis() + 10_000;
    while (Treeline.openCommunicators() > 0 && System.currentTimeMillis() < until) {
      Thread.sleep(50);
    }
    assertEquals(0, Treeline.openCommunicators());
    assertEquals(List.of(), treelineThreads());
    assertEquals(0, treelineSegments());
    System.out.printf("retry after an injected failure: %.1f s%n", (System.nanoTime() - t0) / 1e9);
  }

  @Test
  void aStageFailingOnEveryAttemptEndsCollectWithAnUncheckedExceptionNamingTheTasksError() {
    BarrierStageException e = assertThrows(BarrierStageException.class, () ->
        BarrierJobs.collect(fourPartitions(), (p, it) -> {
          if (p == 3) {
            throw new IllegalStateException("injected failure in partition 3");
          }
          return List.of(p).iterator();
        }));
    assertTrue(e.getMessage().contains("injected failure in partition 3"), e.getMessage());
    assertTrue(e.getMessage().contains("spark.stage.maxConsecutiveAttempts"), e.getMessage());
    assertEquals("org.apache.spark.SparkException", e.getCause().getClass().getName());
  }

  @Test
  void aTaskCallingWithAnotherCountFailsEveryTaskNamingItWithinTheTimeout() {
    long t0 = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> BarrierJobs.mapPartitions(
        fourPartitions(), (p, it) -> {
          Communicator c = Treeline.communicator();
          int n = c.rank() == 2 ? N + 1 : N;
          ByteBuffer b = ItData.encode(2, c.rank(), n, DataType.F32);
          c.allReduce(b, b, n, DataType.F32, ReduceOp.SUM);
          return List.of(0).iterator();
        }).collect());
    double s = (System.nanoTime() - t0) / 1e9;
    String m = String.valueOf(e.getMessage());
    assertTrue(m.contains("different collective calls"), m);
    assertTrue(m.contains("rank 2"), m);
    assertTrue(m.contains("1022 x f32"), m);
    assertTrue(s < 20, "failed after " + s + " s, the timeout is 20 s");
    System.out.printf("mismatched calls failed in %.1f s%n", s);
  }

  @Test
  void theGpuPathWithoutAGpuFailsAtOnceSayingWhyAndLeavesNothingBehind() {
    Assumptions.assumeFalse(io.treeline.kernels.GpuDevices.list().available(),
        "this machine has a GPU: the GPU tests run the GPU path");
    long t0 = System.nanoTime();
    Exception e = assertThrows(Exception.class, () -> BarrierJobs.mapPartitions(
        fourPartitions(), (p, it) -> {
          Treeline.deviceCommunicator();
          return List.of(0).iterator();
        }).collect());
    double s = (System.nanoTime() - t0) / 1e9;
    String m = String.valueOf(e.getMessage());
    assertTrue(m.contains("cannot set up the GPU path"), m);
    assertTrue(m.contains("libcuda") || m.contains("nvcc") || m.contains("CUDA"), m);
    assertTrue(s < 20, "failed after " + s + " s, the timeout is 20 s");
    assertEquals(0, Treeline.openCommunicators());
    System.out.printf("GPU path without a GPU failed in %.1f s: %s%n", s,
        m.lines().filter(l -> l.contains("GPU path")).findFirst().orElse(m));
  }

  @Test
  void communicatorOutsideABarrierStageSaysWhereToCallIt() {
    IllegalStateException e = assertThrows(IllegalStateException.class, Treeline::communicator);
    assertTrue(e.getMessage().contains("barrier"), e.getMessage());
  }

  static List<String> treelineThreads() {
    List<String> names = new ArrayList<>();
    for (Thread t : Thread.getAllStackTraces().keySet()) {
      // the kernel warm-up is the JVM's (the first communicator starts it; it ends by itself)
      if (t.isAlive() && t.getName().startsWith("treeline-")
          && !t.getName().equals(io.treeline.reduce.KernelWarmUp.THREAD)) {
        names.add(t.getName());
      }
    }
    return names;
  }

  static long treelineSegments() throws Exception {
    Path dir = io.treeline.transport.shm.SharedSegment.directory();
    String mine = "-p" + ProcessHandle.current().pid();
    try (Stream<Path> s = Files.list(dir)) {
      return s.filter(p -> p.getFileName().toString().startsWith("treeline-")
          && p.getFileName().toString().endsWith(mine)).count();
    }
  }
}
