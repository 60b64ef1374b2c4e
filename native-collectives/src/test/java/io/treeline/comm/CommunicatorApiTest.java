package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.bootstrap.InProcessBootstrap;
import io.treeline.core.Communicator;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.core.Slice;
import io.treeline.plan.PlanConfig;
import io.treeline.testing.Elements;
import io.treeline.testing.Ranks;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.DoubleBuffer;
import java.nio.FloatBuffer;
import java.nio.IntBuffer;
import java.nio.LongBuffer;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.function.Executable;

/**
 * The user interface {@link Communicator} as {@link HostCommunicator} implements it, over
 * in-process transports: reduce-scatter and all-gather past the shared segment (windows), the
 * array and typed-buffer forms, slices, the root's numbering, and argument errors.
 */
class CommunicatorApiTest {
  /** A segment of 4 KiB, so that a few thousand elements need many windows. */
  private static final int SEGMENT = 4096;
  private static final int[][] LAYOUTS = {{3}, {2, 2}, {3, 1, 2}};

  private static CommConfig config() {
    return CommConfig.DEFAULT.withPlan(PlanConfig.DEFAULT.withChunkBytes(1024))
        .withTimeout(Duration.ofSeconds(60)).withSegmentBytes(SEGMENT);
  }

  private static void closeAll(HostCommunicator[] comms) {
    for (HostCommunicator c : comms) {
      c.close();
    }
  }

  private static double[][] random(Random rnd, int n, long count, DataType t, ReduceOp op) {
    double[][] in = new double[n][];
    for (int r = 0; r < n; r++) {
      in[r] = Elements.random(rnd, count, t, op);
    }
    return in;
  }

  private static ByteBuffer encode(double[] v, DataType t) {
    ByteBuffer b = Elements.direct(v.length, t);
    for (int i = 0; i < v.length; i++) {
      Elements.put(b, i, v[i], t);
    }
    return b;
  }

  private static void checkReduced(String what, double[][] in, DataType t, ReduceOp op, int i,
      double got) {
    if (t.isFloating()) {
      double ref = Elements.reference(in, i, t, op);
      double tol = Elements.tolerance(in, i, t, op);
      assertTrue(Math.abs(got - ref) <= tol, what + " element " + i + ": " + got + " vs " + ref
          + " (tolerance " + tol + ")");
    } else {
      assertEquals((double) Elements.referenceLong(in, i, t, op), got, what + " element " + i);
    }
  }

  /** The rank whose slice holds element i (slices are contiguous, in topology-rank order). */
  private static int owner(Communicator c, long count, DataType t, long i) {
    for (int r = 0; r < c.size(); r++) {
      if (c.slice(count, t, r).contains(i)) {
        return r;
      }
    }
    throw new AssertionError("element " + i + " is in no slice");
  }

  @Test
  void reduceScatterAndAllGatherLargerThanTheSegmentRunInWindowsOnEveryType() {
    for (int[] layout : LAYOUTS) {
      HostCommunicator[] g = HostCommunicator.inProcess(config(), layout);
      int n = g.length;
      try {
        for (DataType t : DataType.values()) {
          ReduceOp op = t.isFloating() ? ReduceOp.AVG : ReduceOp.SUM;
          long perSegment = SEGMENT / t.size();
          for (long count : new long[] {13, perSegment + 1, 7 * perSegment + 13}) {
            Random rnd = new Random(count * 31 + t.ordinal() + 1000L * n);
            double[][] in = random(rnd, n, count, t, op);
            ByteBuffer[] scattered = new ByteBuffer[n];
            ByteBuffer[] gathered = new ByteBuffer[n];
            Ranks.run(n, 120_000, r -> {
              ByteBuffer mine = encode(in[r], t);
              scattered[r] = Elements.direct(count, t);
              g[r].reduceScatter(mine, scattered[r], count, t, op);
              gathered[r] = Elements.direct(count, t);
              g[r].allGather(mine, gathered[r], count, t);
            });
            String what = t + " x " + count + " on " + java.util.Arrays.toString(layout);
            for (int r = 0; r < n; r++) {
              Slice s = g[r].slice(count, t);
              for (long i = s.lo(); i < s.hi(); i++) {
                checkReduced("reduce-scatter " + what + " rank " + r, in, t, op, (int) i,
                    Elements.get(scattered[r], (int) i, t));
              }
              for (int i = 0; i < count; i++) {
                assertEquals(in[owner(g[r], count, t, i)][i], Elements.get(gathered[r], i, t),
                    "all-gather " + what + " rank " + r + " element " + i);
              }
            }
          }
        }
      } finally {
        closeAll(g);
      }
    }
  }

  @Test
  void arrayAndTypedBufferFormsMatchTheReferenceWithOffsetsAndPastTheSegment() {
    HostCommunicator[] g = HostCommunicator.inProcess(config(), 2, 1);
    int n = g.length;
    int count = 3 * SEGMENT / 4 + 7; // f32: 3 windows for the allreduce; i64: 6
    int off = 5;
    Random rnd = new Random(17);
    double[][] f = random(rnd, n, count, DataType.F32, ReduceOp.SUM);
    double[][] d = random(rnd, n, count, DataType.F64, ReduceOp.SUM);
    double[][] k = random(rnd, n, count, DataType.I32, ReduceOp.SUM);
    double[][] l = random(rnd, n, count, DataType.I64, ReduceOp.SUM);
    float[][] fOut = new float[n][];
    float[][] fScatter = new float[n][];
    double[][] dOut = new double[n][];
    int[][] iOut = new int[n][];
    long[][] lOut = new long[n][];
    long[][] lGather = new long[n][];
    try {
      Ranks.run(n, 120_000, r -> {
        Communicator c = g[r];
        float[] fa = new float[count + 2 * off];
        for (int i = 0; i < count; i++) {
          fa[off + i] = (float) f[r][i];
        }
        fOut[r] = new float[count + off];
        c.allReduce(fa, off, fOut[r], off, count, ReduceOp.SUM);
        fScatter[r] = fa.clone();
        c.reduceScatter(fScatter[r], off, fScatter[r], off, count, ReduceOp.SUM); // in place
        // a direct DoubleBuffer in the foreign byte order, reduced in place
        ByteOrder foreign = ByteOrder.nativeOrder() == ByteOrder.LITTLE_ENDIAN
            ? ByteOrder.BIG_ENDIAN : ByteOrder.LITTLE_ENDIAN;
        DoubleBuffer db = ByteBuffer.allocateDirect(count * 8).order(foreign).asDoubleBuffer();
        for (int i = 0; i < count; i++) {
          db.put(i, d[r][i]);
        }
        c.allReduce(db, db, count, ReduceOp.MAX);
        dOut[r] = new double[count];
        db.get(0, dOut[r]);
        // a heap IntBuffer, asynchronously
        IntBuffer ib = IntBuffer.allocate(count);
        for (int i = 0; i < count; i++) {
          ib.put(i, (int) k[r][i]);
        }
        IntBuffer io = IntBuffer.allocate(count + 1);
        c.allReduceAsync(ib, io, count, ReduceOp.SUM).await();
        iOut[r] = io.array();
        // long[]: in-place allreduce over the whole array, then an all-gather of a slice view
        long[] la = new long[count];
        for (int i = 0; i < count; i++) {
          la[i] = (long) l[r][i];
        }
        c.allReduce(la, ReduceOp.MIN);
        lOut[r] = la;
        LongBuffer src = LongBuffer.allocate(count + 3).position(3).slice();
        for (int i = 0; i < count; i++) {
          src.put(i, (long) l[r][i]);
        }
        LongBuffer dst = ByteBuffer.allocateDirect(count * 8).order(ByteOrder.nativeOrder())
            .asLongBuffer();
        c.allGather(src, dst, count);
        lGather[r] = new long[count];
        dst.get(0, lGather[r]);
      });
    } finally {
      closeAll(g);
    }
    for (int r = 0; r < n; r++) {
      String who = "rank " + r;
      Slice s = g[r].slice(count, DataType.F32);
      assertTrue(s.size() > 0, who + " has an empty slice of " + count);
      for (int i = 0; i < count; i++) {
        checkReduced("float[] allReduce " + who, f, DataType.F32, ReduceOp.SUM, i,
            fOut[r][off + i]);
        if (s.contains(i)) {
          checkReduced("float[] reduceScatter " + who, f, DataType.F32, ReduceOp.SUM, i,
              fScatter[r][off + i]);
        }
        checkReduced("DoubleBuffer MAX " + who, d, DataType.F64, ReduceOp.MAX, i, dOut[r][i]);
        checkReduced("IntBuffer SUM " + who, k, DataType.I32, ReduceOp.SUM, i, iOut[r][i]);
        checkReduced("long[] MIN " + who, l, DataType.I64, ReduceOp.MIN, i, lOut[r][i]);
        assertEquals((long) l[owner(g[r], count, DataType.I64, i)][i], lGather[r][i],
            "LongBuffer allGather " + who + " element " + i);
      }
      assertEquals(0f, fOut[r][0], "float[] allReduce wrote before its offset");
    }
  }

  @Test
  void broadcastRootAndSlicesUseTheRanksAsRankNumbersThemEvenWhenNodesInterleave() {
    // ranks 0 and 2 on node a, 1 and 3 on node b: topology ranks 0->0, 2->1, 1->2, 3->3
    HostCommunicator[] g = HostCommunicator.inProcess(config(),
        InProcessBootstrap.group("a", "b", "a", "b"));
    int n = g.length;
    int count = 1000; // f64: two windows of the 4 KiB segment
    double[][] in = random(new Random(5), n, count, DataType.F64, ReduceOp.SUM);
    double[][] got = new double[n][];
    try {
      assertEquals(2, g[1].topologyRank());
      assertEquals(1, g[2].topologyRank());
      assertEquals(1, g[1].nodeRank());
      assertEquals(1, g[2].localRank());
      assertEquals(2, g[3].localSize());
      assertEquals(2, g[0].nodeCount());
      Ranks.run(n, 60_000, r -> {
        double[] mine = in[r].clone();
        g[r].broadcast(mine, 1);
        got[r] = mine;
      });
    } finally {
      closeAll(g);
    }
    for (int r = 0; r < n; r++) {
      assertEquals(java.util.Arrays.toString(in[1]), java.util.Arrays.toString(got[r]),
          "rank " + r + " did not get rank 1's data (root numbered as rank() numbers it)");
    }
    // slices: contiguous in topology-rank order, covering the message, the same on every rank
    for (long count2 : new long[] {0, 1, 61, 1021}) {
      long next = 0;
      for (int p = 0; p < n; p++) {
        int r = java.util.List.of(0, 2, 1, 3).get(p);
        Slice s = g[0].slice(count2, DataType.F32, r);
        assertEquals(next, s.lo(), "slice of rank " + r + " in " + count2);
        assertEquals(s, g[r].slice(count2, DataType.F32), "rank " + r + "'s own slice");
        assertEquals(s, g[3].slice(count2, DataType.F32, r));
        next = s.hi();
      }
      assertEquals(count2, next, "the slices cover " + count2);
    }
  }

  @Test
  void argumentErrorsFailOnTheCallersThreadBeforeAnythingIsSentAndTheCommunicatorGoesOn() {
    HostCommunicator[] g = HostCommunicator.inProcess(config().withTimeout(
        Duration.ofSeconds(10)), 1, 2);
    int n = g.length;
    try {
      Ranks.run(n, 30_000, r -> {
        Communicator c = g[r];
        if (r == 1) { // the others are already in the allreduce below: nothing may reach them
          float[] small = new float[10];
          ByteBuffer direct = Elements.direct(100, DataType.F64);
          expect("rank 1: allReduce of 11 elements at offset 0: the output array holds 10",
              () -> c.allReduce(new float[11], 0, small, 0, 11, ReduceOp.SUM));
          expect("offset -1", () -> c.allReduce(small, -1, small, 0, 5, ReduceOp.SUM));
          expect("the input array is null", () -> c.allGather((long[]) null, 0, new long[4], 0,
              4));
          expect("the output buffer is read-only", () -> c.allReduce(FloatBuffer.allocate(4),
              FloatBuffer.allocate(4).asReadOnlyBuffer(), 4, ReduceOp.SUM));
          expect("the output buffer is read-only", () -> c.reduceScatter(direct,
              direct.asReadOnlyBuffer().order(ByteOrder.nativeOrder()), 100, DataType.F64,
              ReduceOp.SUM));
          expect("limit is 3", () -> c.allGather(IntBuffer.allocate(3), IntBuffer.allocate(3),
              4));
          expect("the byte size overflows", () -> c.allReduce(direct, direct,
              Long.MAX_VALUE / 4, DataType.F64, ReduceOp.SUM));
          expect("needs 808 bytes", () -> c.reduceScatter(direct, direct, 101, DataType.F64,
              ReduceOp.SUM));
          expect("needs a data type", () -> c.allGather(direct, direct, 10, null));
          expect("needs a ReduceOp", () -> c.allReduce(small, null));
          expect("must be direct", () -> c.allReduce(ByteBuffer.allocate(8), direct, 1,
              DataType.F64, ReduceOp.SUM));
          expect("broadcast root 3 is not a rank", () -> c.broadcast(small, 3));
          expect("slice -1 is not a rank", () -> c.slice(10, DataType.F32, -1));
        }
        float[] v = new float[101];
        for (int i = 0; i < v.length; i++) {
          v[i] = r + 1 + i * 0.5f;
        }
        c.allReduce(v, ReduceOp.SUM);
        for (int i = 0; i < v.length; i++) {
          assertEquals(6 + 1.5 * i, v[i], 1e-3, "rank " + r + " element " + i);
        }
      });
    } finally {
      closeAll(g);
    }
  }

  /** The call throws IllegalArgumentException at once, here, with {@code part} in its message. */
  private static void expect(String part, Executable call) {
    Thread caller = Thread.currentThread();
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class, call);
    assertTrue(e.getMessage().contains(part), e.getMessage());
    assertTrue(e.getMessage().startsWith("rank 1: "), e.getMessage());
    assertEquals(caller, Thread.currentThread());
    assertTrue(java.util.Arrays.stream(e.getStackTrace()).noneMatch(f -> f.getClassName()
        .contains("FutureHandle") || f.getClassName().contains("ThreadPoolExecutor")),
        "thrown from the collective thread: " + e);
  }
}
