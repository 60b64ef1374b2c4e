package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.CollectiveException;
import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.testing.Elements;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Arrays;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * Ranks as threads of one JVM (the in-process transports) fail fast like processes do: a rank
 * that aborts, or leaves while others still need it, reaches every other rank in well under a
 * second, whichever rank each of them is waiting on (before, only a rank waiting on the failed
 * one noticed; the others waited out the timeout).
 */
class InProcessFailFastTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(20);
  private static final long BOUND_NANOS = TimeUnit.SECONDS.toNanos(1);
  private static final int N = 4099; // prime

  private static CommConfig config() {
    return CommConfig.DEFAULT.withTimeout(TIMEOUT).withSegmentBytes(1 << 20);
  }

  /** Ranks {@code callers} call an allreduce; rank 3 never does; returns their errors. */
  private static Throwable[] run(HostCommunicator[] g, int[] callers, Runnable fault,
      long[] failedAt) throws InterruptedException {
    Throwable[] errors = new Throwable[g.length];
    Thread[] threads = new Thread[g.length];
    for (int r : callers) {
      threads[r] = new Thread(() -> {
        ByteBuffer b = Elements.direct(N, DataType.F32);
        try {
          g[r].allReduce(b, b, N, DataType.F32, ReduceOp.SUM);
        } catch (Throwable e) {
          failedAt[r] = System.nanoTime();
          errors[r] = e;
        }
      }, "rank-" + r);
      threads[r].start();
    }
    Thread.sleep(300); // every caller is inside the call, waiting
    fault.run();
    for (int r : callers) {
      threads[r].join(TIMEOUT.toMillis() + 10_000);
      assertTrue(!threads[r].isAlive(), "rank " + r + " is still in its call");
    }
    return errors;
  }

  @Test
  void aRankWhoseCallFailsReachesEveryRankWhateverRankItWaitsOn() throws Exception {
    // one node of 4 (peer memory) and 4 nodes of 1 (the network links): rank 3 never calls,
    // so the others wait on it or on each other; rank 2's call is ended by a close from
    // another thread (its task was killed), which aborts
    for (int[] layout : new int[][] {{4}, {1, 1, 1, 1}}) {
      HostCommunicator[] g = HostCommunicator.inProcess(config(), layout);
      long[] failedAt = new long[4];
      long[] t0 = new long[1];
      try {
        Throwable[] errors = run(g, new int[] {0, 1, 2}, () -> {
          t0[0] = System.nanoTime();
          g[2].close();
        }, failedAt);
        assertNotNull(errors[2], "rank 2's own call ends");
        long worst = 0;
        for (int r = 0; r < 2; r++) {
          assertInstanceOf(CollectiveException.class, errors[r]);
          String m = errors[r].getMessage();
          assertTrue(m.startsWith("rank " + r + ", peer "), m);
          assertTrue(m.contains("rank 2"), m);
          assertTrue(m.contains("timeout of 20 s"), m);
          worst = Math.max(worst, failedAt[r] - t0[0]);
        }
        System.out.printf("in-process %s: rank 2 aborted, ranks 0 and 1 failed %.1f ms later "
            + "(worst; timeout 20 s): %s%n", Arrays.toString(layout), worst / 1e6,
            errors[0].getMessage());
        assertTrue(worst < BOUND_NANOS, Arrays.toString(layout) + ": the others failed "
            + worst / 1_000_000 + " ms after the abort");
      } finally {
        for (HostCommunicator c : g) {
          c.close();
        }
      }
    }
  }

  @Test
  void aRankThatLeavesBeforeACallFailsTheOthersInItAtOnceSayingSo() throws Exception {
    for (int[] layout : new int[][] {{4}, {2, 2}, {1, 1, 1, 1}}) {
      HostCommunicator[] g = HostCommunicator.inProcess(config(), layout);
      long[] failedAt = new long[4];
      long[] t0 = new long[1];
      try {
        // rank 3's task ends without calling: it closes its communicator in order
        Throwable[] errors = run(g, new int[] {0, 1, 2}, () -> {
          t0[0] = System.nanoTime();
          g[3].close();
        }, failedAt);
        long worst = 0;
        for (int r = 0; r < 3; r++) {
          assertInstanceOf(CollectiveException.class, errors[r]);
          String m = errors[r].getMessage();
          assertTrue(m.startsWith("rank " + r + ", peer "), m);
          assertTrue(m.contains("rank 3 closed its communicator"), m);
          worst = Math.max(worst, failedAt[r] - t0[0]);
        }
        System.out.printf("in-process %s: rank 3 left, the others failed %.1f ms later (worst; "
            + "timeout 20 s): %s%n", Arrays.toString(layout), worst / 1e6,
            errors[0].getMessage());
        assertTrue(worst < BOUND_NANOS, Arrays.toString(layout) + ": the others failed "
            + worst / 1_000_000 + " ms after rank 3 left");
      } finally {
        for (HostCommunicator c : g) {
          c.close();
        }
      }
    }
  }

  @Test
  void aRankThatLeavesAfterTheLastCallDisturbsNoOne() throws Exception {
    // rank 3 closes right after its last call, while the others may still be finishing it:
    // they must not read its leaving as a failure
    for (int[] layout : new int[][] {{4}, {2, 2}}) {
      HostCommunicator[] g = HostCommunicator.inProcess(config(), layout);
      try {
        Throwable[] errors = new Throwable[4];
        Thread[] threads = new Thread[4];
        for (int r = 0; r < 4; r++) {
          int rank = r;
          threads[r] = new Thread(() -> {
            ByteBuffer b = Elements.direct(N, DataType.F32);
            for (int i = 0; i < N; i++) {
              Elements.put(b, i, rank + 1, DataType.F32);
            }
            try {
              for (int call = 0; call < 20; call++) {
                g[rank].allReduce(b, b, N, DataType.F32, ReduceOp.MAX);
              }
              if (rank == 3) {
                g[rank].close();
              }
              assertEquals(4.0, Elements.get(b, N - 1, DataType.F32));
            } catch (Throwable e) {
              errors[rank] = e;
            }
          }, "rank-" + r);
          threads[r].start();
        }
        for (Thread t : threads) {
          t.join(60_000);
        }
        for (int r = 0; r < 4; r++) {
          assertNull(errors[r], "rank " + r + ": " + errors[r]);
        }
      } finally {
        for (HostCommunicator c : g) {
          c.close();
        }
      }
    }
  }
}
