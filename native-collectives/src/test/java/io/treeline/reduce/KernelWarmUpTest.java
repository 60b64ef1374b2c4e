package io.treeline.reduce;

import static org.junit.jupiter.api.Assertions.assertTrue;
import static org.junit.jupiter.api.Assertions.fail;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.testing.Elements;
import java.io.IOException;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The JVM-wide kernel warm-up: after it, a thread's very first reduces of the kinds it warmed
 * run compiled code, which allocates nothing, where in a JVM without it the same first calls run
 * the Vector API interpreted and box every vector. Each side runs in fresh JVMs (the JIT's state
 * is per JVM; this suite's fork has long warmed every kernel).
 */
class KernelWarmUpTest {
  /** The warm-up's kernels: type, op, inputs. */
  private static final Object[][] KINDS = {{DataType.F32, ReduceOp.SUM, 2},
      {DataType.F32, ReduceOp.AVG, 2}, {DataType.BF16, ReduceOp.SUM, 2},
      {DataType.BF16, ReduceOp.AVG, 2}, {DataType.BF16, ReduceOp.SUM, 4},
      {DataType.F64, ReduceOp.SUM, 2}, {DataType.F32, ReduceOp.SUM, 8},
      {DataType.BF16, ReduceOp.AVG, 8}};

  @Test
  void afterTheWarmUpAThreadsFirstReducesAllocateNothing() throws Exception {
    // up to three JVMs: whether C2 compiles a Vector API kernel without boxing depends on the
    // profile it first sees, and on JDK 17 one JVM in a few keeps a kernel boxing for good
    // (VectorReducerTest.theHotPathAllocatesNothing, the same rule)
    StringBuilder tried = new StringBuilder();
    for (int attempt = 1; attempt <= 3; attempt++) {
      Child c = child("warm");
      if (c.code == 0) {
        System.out.println("kernel warm-up, JVM " + attempt + ": " + c.out);
        return;
      }
      tried.append("\n  JVM ").append(attempt).append(": ").append(c.out);
    }
    fail("three JVMs in a row allocated on their first reduces after the warm-up:" + tried);
  }

  @Test
  void withoutTheWarmUpTheSameFirstReducesAllocate() throws Exception {
    // the control: what the warm-up saves is there to save (the check above can fail)
    Child c = child("cold");
    assertTrue(c.code == 1 && c.out.contains("allocated"), "a cold JVM's first reduces: " + c.out);
  }

  private record Child(int code, String out) {
  }

  private static Child child(String mode) throws IOException, InterruptedException {
    String java = Path.of(System.getProperty("java.home"), "bin", "java").toString();
    Process p = new ProcessBuilder(java, "--add-modules=jdk.incubator.vector",
        "-Dtreeline.warmUpKernels=" + mode.equals("warm"), "-cp",
        System.getProperty("java.class.path"), FirstReduces.class.getName(), mode)
        .redirectErrorStream(true).start();
    boolean ended = p.waitFor(120, TimeUnit.SECONDS);
    if (!ended) {
      p.destroyForcibly();
    }
    String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim()
        .replaceAll("(?m)^WARNING: Using incubator modules.*\n?", "");
    return new Child(ended ? p.exitValue() : -1, ended ? out : "did not finish: " + out);
  }

  /**
   * Main of the child JVM: with "warm", starts the warm-up and waits for it; then measures the
   * bytes this thread allocates in its first 20 reduces of each kind (exit 1 when any allocated).
   */
  static final class FirstReduces {
    public static void main(String[] args) {
      if (args[0].equals("warm")) {
        KernelWarmUp.start(1); // one rank: a core to spare on any machine of 2 or more
        if (!KernelWarmUp.await(Duration.ofSeconds(90))) {
          System.out.println("the warm-up did not end in 90 s");
          System.exit(2);
        }
        System.out.println("warm-up: " + KernelWarmUp.report());
      }
      com.sun.management.ThreadMXBean mx =
          (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
      long tid = Thread.currentThread().getId();
      Reducer r = Reducer.create();
      long count = VectorReducer.WIDE_BLOCK + 4099; // whole blocks and a tail
      StringBuilder culprits = new StringBuilder();
      for (Object[] k : KINDS) {
        DataType t = (DataType) k[0];
        ReduceOp op = (ReduceOp) k[1];
        int n = (Integer) k[2];
        ByteBuffer[] in = new ByteBuffer[n];
        long[] offsets = new long[n];
        for (int i = 0; i < n; i++) {
          in[i] = Elements.direct(count, t);
        }
        ByteBuffer out = Elements.direct(count, t);
        long before = mx.getThreadAllocatedBytes(tid);
        for (int call = 0; call < 20; call++) {
          if (n == 2) {
            r.reduce2(t, op, in[0], 0, in[1], 0, out, 0, count, true, 2);
          } else {
            r.reduce(t, op, in, offsets, n, out, 0, count, true, n);
          }
        }
        long allocated = mx.getThreadAllocatedBytes(tid) - before;
        if (allocated >= 256) { // one boxed vector per call would exceed this
          culprits.append(' ').append(t).append('/').append(op).append('x').append(n)
              .append(": ").append(allocated);
        }
      }
      if (culprits.length() > 0) {
        System.out.println("first reduces allocated bytes:" + culprits);
        System.exit(1);
      }
      System.out.println("first reduces allocated nothing");
    }
  }
}
