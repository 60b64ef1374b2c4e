package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.core.CallMismatchException;
import io.treeline.core.CollectiveException;
import io.treeline.plan.Algorithm;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Slices;
import io.treeline.plan.Topology;
import io.treeline.testing.Elements;
import io.treeline.testing.Ranks;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * The communicator over in-process transports (ranks as threads, simulated nodes): every plan
 * on real numbers against the float64 reference, and the failure paths.
 */
class InProcessCollectivesTest {
  private static final PlanConfig SMALL_CHUNKS = PlanConfig.DEFAULT.withChunkBytes(4096);
  private static final Duration TIMEOUT = Duration.ofSeconds(60);
  private static final int[][] LAYOUTS = {{1}, {4}, {1, 1}, {2, 2}, {2, 2, 2}, {3, 1, 2}};
  private static final Topology[] TOPOLOGIES = {Topology.uniform(1, 1), Topology.uniform(1, 4),
      Topology.uniform(2, 1), Topology.uniform(2, 2), Topology.uniform(3, 2),
      Topology.of(3, 1, 2)};

  private static CommConfig config(Duration timeout) {
    return CommConfig.DEFAULT.withPlan(SMALL_CHUNKS).withTimeout(timeout)
        .withSegmentBytes(1 << 20);
  }

  private static void closeAll(HostCommunicator[] comms) {
    for (HostCommunicator c : comms) {
      c.close();
    }
  }
  private static final long[] SIZES = {0, 1, 2, 13, 1021, 20011};

  /** One collective call: every rank's input, and the reference every rank must end with. */
  private record Case(Algorithm algo, DataType type, ReduceOp op, long count, double[][] in) {
  }

  @Test
  void allReduceEveryAlgorithmTypeOpAndOddSizeMatchesTheReferenceAndRanksAgreeBitForBit() {
    for (int l = 0; l < TOPOLOGIES.length; l++) {
      Topology topo = TOPOLOGIES[l];
      int[] layout = LAYOUTS[l];
      Random rnd = new Random(topo.hashCode());
      List<Case> cases = new ArrayList<>();
      for (Algorithm a : Algorithm.values()) {
        if (!a.supports(topo)) {
          continue;
        }
        for (DataType t : DataType.values()) {
          for (ReduceOp op : ReduceOp.values()) {
            for (long count : SIZES) {
              double[][] in = new double[topo.size()][];
              for (int r = 0; r < in.length; r++) {
                in[r] = Elements.random(rnd, count, t, op);
              }
              cases.add(new Case(a, t, op, count, in));
            }
          }
        }
      }
      ByteBuffer[][] outs = new ByteBuffer[cases.size()][topo.size()];
      HostCommunicator[] g = HostCommunicator.inProcess(config(TIMEOUT), layout);
      try {
        assertEquals(topo, g[0].topology());
        Ranks.run(topo.size(), 300_000, r -> {
          for (int c = 0; c < cases.size(); c++) {
            Case k = cases.get(c);
            ByteBuffer in = Elements.direct(k.count, k.type);
            for (int i = 0; i < k.count; i++) {
              Elements.put(in, i, k.in[r][i], k.type);
            }
            ByteBuffer out = Elements.direct(k.count, k.type);
            g[r].allReduceAsync(in, out, k.count, k.type, k.op, k.algo).await(TIMEOUT);
            outs[c][r] = out;
          }
        });
      } finally {
        closeAll(g);
      }
      for (int c = 0; c < cases.size(); c++) {
        Case k = cases.get(c);
        String what = k.algo.id() + " " + k.type + " " + k.op + " on " + topo + ", count "
            + k.count;
        check(what, k, outs[c][0], 0, k.count);
        for (int r = 1; r < topo.size(); r++) {
          assertEquals(outs[c][0], outs[c][r], what + ": rank " + r + " differs from rank 0");
        }
      }
    }
  }

  /**
   * A registered window (GradientAggregator's buckets, PeerBench's registered rows), reduced in
   * place with no copy in or out: the blocking form on the caller's thread and the asynchronous
   * one, interleaved with ordinary calls, every algorithm, odd sizes, the input rewritten by
   * the caller right after each call returns.
   */
  @Test
  void registeredWindowsBlockingAndAsyncMatchTheReference() {
    long[] sizes = {0, 1, 13, 1021, 4099};
    for (int l = 1; l < TOPOLOGIES.length; l++) {
      Topology topo = TOPOLOGIES[l];
      for (Algorithm a : Algorithm.values()) {
        if (!a.supports(topo)) {
          continue;
        }
        Random rnd = new Random(31 * l + a.ordinal());
        List<Case> cases = new ArrayList<>();
        for (long count : sizes) {
          for (DataType t : new DataType[] {DataType.F32, DataType.BF16, DataType.I64}) {
            double[][] in = new double[topo.size()][];
            for (int r = 0; r < in.length; r++) {
              in[r] = Elements.random(rnd, count, t, ReduceOp.SUM);
            }
            cases.add(new Case(a, t, ReduceOp.SUM, count, in));
          }
        }
        ByteBuffer[][] outs = new ByteBuffer[cases.size()][topo.size()];
        HostCommunicator[] g = HostCommunicator.inProcess(
            config(TIMEOUT).withAlgorithm(a).withSegmentBytes(2 << 20), LAYOUTS[l]);
        try {
          Ranks.run(topo.size(), 300_000, r -> {
            Window w = g[r].reserveWindow(4099 * 8);
            ByteBuffer scratch = Elements.direct(64, DataType.F32);
            for (int c = 0; c < cases.size(); c++) {
              Case k = cases.get(c);
              for (int i = 0; i < k.count; i++) {
                Elements.put(w.input(), i, k.in[r][i], k.type);
              }
              if (c % 3 == 0) { // an ordinary call between (before the window's, so that
                // the caller's next write of the input follows the window call at once)
                g[r].allReduce(scratch, scratch, 64, DataType.F32, ReduceOp.MAX);
              }
              if (c % 2 == 0) {
                g[r].allReduce(w, k.count, k.type, k.op);
              } else {
                g[r].allReduceAsync(w, k.count, k.type, k.op).await(TIMEOUT);
              }
              ByteBuffer out = Elements.direct(k.count, k.type);
              out.put(0, w.output(), 0, (int) (k.count * k.type.size()));
              outs[c][r] = out;
            }
            g[r].releaseWindow(w);
          });
        } finally {
          closeAll(g);
        }
        for (int c = 0; c < cases.size(); c++) {
          Case k = cases.get(c);
          String what = "window " + a.id() + " " + k.type + " on " + topo + ", count " + k.count;
          check(what, k, outs[c][0], 0, k.count);
          for (int r = 1; r < topo.size(); r++) {
            assertEquals(outs[c][0], outs[c][r], what + ": rank " + r + " differs from rank 0");
          }
        }
      }
    }
  }

  private static void check(String what, Case k, ByteBuffer out, long lo, long hi) {
    for (int i = (int) lo; i < hi; i++) {
      if (k.type.isFloating()) {
        double ref = Elements.reference(k.in, i, k.type, k.op);
        double got = Elements.get(out, i, k.type);
        double tol = Elements.tolerance(k.in, i, k.type, k.op);
        assertTrue(Math.abs(got - ref) <= tol, what + " element " + i + ": " + got + " vs "
            + ref + " (tolerance " + tol + ")");
      } else {
        assertEquals(Elements.referenceLong(k.in, i, k.type, k.op),
            Elements.getLong(out, i, k.type), what + " element " + i);
      }
    }
  }

  @Test
  void reduceScatterAllGatherAndBroadcastOnRealNumbers() {
    for (int l = 0; l < TOPOLOGIES.length; l++) {
      Topology topo = TOPOLOGIES[l];
      int[] layout = LAYOUTS[l];
      int n = topo.size();
      Random rnd = new Random(7 + n);
      for (long count : SIZES) {
        DataType t = DataType.F64;
        double[][] in = new double[n][];
        for (int r = 0; r < n; r++) {
          in[r] = Elements.random(rnd, count, t, ReduceOp.SUM);
        }
        Case k = new Case(null, t, ReduceOp.AVG, count, in);
        ByteBuffer[][] outs = new ByteBuffer[3][n];
        int root = n - 1;
        int align = SMALL_CHUNKS.alignElements(t.size());
        HostCommunicator[] g = HostCommunicator.inProcess(config(TIMEOUT), layout);
        try {
          Ranks.run(n, 60_000, r -> {
            ByteBuffer buf = Elements.direct(count, t);
            for (int i = 0; i < count; i++) {
              Elements.put(buf, i, in[r][i], t);
            }
            outs[0][r] = Elements.direct(count, t);
            g[r].reduceScatter(buf, outs[0][r], count, t, ReduceOp.AVG);
            outs[1][r] = Elements.direct(count, t);
            g[r].allGather(buf, outs[1][r], count, t);
            outs[2][r] = Elements.direct(count, t);
            g[r].broadcast(buf, outs[2][r], count, t, root);
          });
        } finally {
          closeAll(g);
        }
        for (int r = 0; r < n; r++) {
          String what = topo + " count " + count + " rank " + r;
          check("reduce-scatter " + what, k, outs[0][r], Slices.lo(count, n, r, align),
              Slices.hi(count, n, r, align));
          for (int i = 0; i < count; i++) {
            int owner = 0;
            while (Slices.hi(count, n, owner, align) <= i) {
              owner++;
            }
            assertEquals(in[owner][i], Elements.get(outs[1][r], i, t), "all-gather " + what);
            assertEquals(in[root][i], Elements.get(outs[2][r], i, t), "broadcast " + what);
          }
        }
      }
    }
  }

  @Test
  void aRankThatNeverArrivesMakesEveryOtherRankFailNamingPeerPhaseAndTimeout() {
    HostCommunicator[] g = HostCommunicator.inProcess(config(Duration.ofMillis(300)), 3);
    try {
      List<Throwable> errors = Ranks.runAll(3, 30_000, r -> {
        if (r == 2) {
          return; // rank 2 skips the collective
        }
        ByteBuffer b = Elements.direct(100, DataType.F32);
        g[r].allReduceAsync(b, Elements.direct(100, DataType.F32), 100, DataType.F32,
            ReduceOp.SUM, Algorithm.ONESHOT).await(Duration.ofSeconds(10));
      });
      for (int r = 0; r < 2; r++) {
        Throwable e = errors.get(r);
        assertNotNull(e, "rank " + r + " should have failed");
        assertInstanceOf(CollectiveException.class, e);
        String m = e.getMessage();
        assertTrue(m.startsWith("rank " + r + ", peer "), m);
        assertTrue(m.contains("oneshot"), m);
        assertTrue(m.contains("timed out after 300 ms") || m.contains("aborted"), m);
      }
    } finally {
      closeAll(g);
    }
  }

  @Test
  void ranksCallingDifferentSizesFailInsteadOfHanging() {
    HostCommunicator[] g = HostCommunicator.inProcess(config(Duration.ofSeconds(2)), 1, 1);
    try {
      List<Throwable> errors = Ranks.runAll(2, 30_000, r -> {
        long count = r == 0 ? 100 : 200;
        g[r].allReduceAsync(Elements.direct(count, DataType.F32),
            Elements.direct(count, DataType.F32), count, DataType.F32, ReduceOp.SUM,
            Algorithm.RING).await(Duration.ofSeconds(10));
      });
      assertTrue(errors.stream().anyMatch(e -> e instanceof CallMismatchException
          && e.getMessage().contains("different collective calls")), String.valueOf(errors));
    } finally {
      closeAll(g);
    }
  }

  @Test
  void ranksCallingDifferentSizesInsideOneNodeFailOnTheFlagCheck() {
    HostCommunicator[] g = HostCommunicator.inProcess(config(Duration.ofSeconds(2)), 3);
    try {
      List<Throwable> errors = Ranks.runAll(3, 30_000, r -> {
        long count = r == 1 ? 64 : 96;
        g[r].allReduceAsync(Elements.direct(count, DataType.F32),
            Elements.direct(count, DataType.F32), count, DataType.F32, ReduceOp.SUM,
            Algorithm.ONESHOT).await(Duration.ofSeconds(10));
      });
      assertTrue(errors.stream().anyMatch(e -> e instanceof CallMismatchException),
          String.valueOf(errors));
    } finally {
      closeAll(g);
    }
  }

  @Test
  void closedCommunicatorsLeaveNoThreadBehind() throws InterruptedException {
    HostCommunicator[] g = HostCommunicator.inProcess(config(TIMEOUT), 2, 2);
    // the worker threads start with a first asynchronous call (blocking ones run inline)
    Ranks.run(4, 30_000, r -> {
      ByteBuffer b = Elements.direct(1, DataType.I32);
      g[r].allReduceAsync(b, b, 1, DataType.I32, ReduceOp.SUM).await(TIMEOUT);
    });
    assertTrue(commThreads() >= 4);
    closeAll(g);
    long until = System.nanoTime() + 2_000_000_000L; // a pool thread exits just after it ends
    while (commThreads() > 0 && System.nanoTime() < until) {
      Thread.sleep(10);
    }
    assertEquals(0, commThreads(), "a communicator thread outlived close()");
  }

  /**
   * A blocking call runs on its caller's thread; close() from another thread (a killed task)
   * must end it at once with an error, not at its timeout, and return with nothing mapped.
   */
  @Test
  void closeFromAnotherThreadEndsABlockingCallRunningInline() throws Exception {
    HostCommunicator[] g = HostCommunicator.inProcess(config(TIMEOUT), 1, 2);
    try {
      java.util.concurrent.atomic.AtomicReference<Throwable> thrown =
          new java.util.concurrent.atomic.AtomicReference<>();
      Thread caller = new Thread(() -> {
        ByteBuffer b = Elements.direct(7, DataType.F32);
        try {
          g[0].allReduce(b, b, 7, DataType.F32, ReduceOp.SUM); // rank 1 never joins
        } catch (Throwable e) {
          thrown.set(e);
        }
      }, "inline-caller");
      caller.start();
      Thread.sleep(300);
      long t0 = System.nanoTime();
      g[0].close();
      caller.join(20_000);
      assertTrue(!caller.isAlive(), "the blocking call outlived close()");
      assertInstanceOf(CollectiveException.class, thrown.get());
      assertTrue(System.nanoTime() - t0 < TIMEOUT.toNanos() / 2, "close waited for the timeout");
    } finally {
      closeAll(g);
    }
  }

  @Test
  void aBadArgumentFailsOnlyThatCallAndTheCommunicatorGoesOn() {
    HostCommunicator[] g = HostCommunicator.inProcess(config(Duration.ofSeconds(20)), 1, 2);
    try {
      Ranks.run(3, 60_000, r -> {
        if (r == 1) {
          ByteBuffer heap = ByteBuffer.allocate(400);
          IllegalArgumentException e = org.junit.jupiter.api.Assertions.assertThrows(
              IllegalArgumentException.class, () -> g[r].allReduce(heap, heap, 100,
                  DataType.F32, ReduceOp.SUM));
          assertTrue(e.getMessage().startsWith("rank 1: allReduce: the input buffer must be "
              + "direct"), e.getMessage());
          ByteBuffer small = Elements.direct(10, DataType.F32);
          assertThrows(() -> g[r].allReduce(small, small, 100, DataType.F32, ReduceOp.SUM));
          assertThrows(() -> g[r].broadcast(small, small, 10, DataType.F32, 3));
        }
        ByteBuffer b = Elements.direct(100, DataType.F32);
        for (int i = 0; i < 100; i++) {
          Elements.put(b, i, r + 1 + i * 0.5, DataType.F32);
        }
        g[r].allReduce(b, b, 100, DataType.F32, ReduceOp.SUM);
        for (int i = 0; i < 100; i++) {
          assertEquals(6 + 1.5 * i, Elements.get(b, i, DataType.F32), 1e-3);
        }
      });
    } finally {
      closeAll(g);
    }
  }

  private static void assertThrows(org.junit.jupiter.api.function.Executable call) {
    org.junit.jupiter.api.Assertions.assertThrows(IllegalArgumentException.class, call);
  }

  private static long commThreads() {
    return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
        .filter(t -> t.getName().startsWith("treeline-comm-")).count();
  }
}
