package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.time.Duration;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

/**
 * The small-message allreduce (one-shot with a deferred release): back-to-back calls whose
 * data changes every call stay exact (a rank that wrote its next input before its peers had
 * read the last would show), and after warm-up a call allocates nothing.
 */
class SmallMessageCallTest {
  private static final int RANKS = 3;
  private static final long[] COUNTS = {1, 2, 13, 127, 1021};

  private static ByteBuffer direct(long count) {
    return ByteBuffer.allocateDirect((int) (count * 4)).order(ByteOrder.nativeOrder());
  }

  /** Rank r's element k of call i: small integers, so the f32 sum is exact. */
  private static float value(int r, int i, int k) {
    return (r + 1) * (i % 7 + 1) + k % 5;
  }

  @Test
  void backToBackCallsWithNewDataEachAreExact() throws Exception {
    HostCommunicator[] comms = HostCommunicator.inProcess(CommConfig.DEFAULT
        .withAlgorithm(Algorithm.ONESHOT).withTimeout(Duration.ofSeconds(60)), RANKS);
    try {
      long[] wrong = new long[RANKS];
      Thread[] t = new Thread[RANKS];
      for (int r = 0; r < RANKS; r++) {
        int rank = r;
        t[r] = new Thread(() -> {
          HostCommunicator c = comms[rank];
          int me = c.topologyRank();
          for (long count : COUNTS) {
            ByteBuffer in = direct(count);
            ByteBuffer out = direct(count);
            for (int i = 0; i < 3000; i++) {
              for (int k = 0; k < count; k++) {
                in.putFloat(k * 4, value(me, i, k));
              }
              c.allReduce(in, out, count, DataType.F32, ReduceOp.SUM);
              for (int k = 0; k < count; k++) {
                float want = 0;
                for (int p = 0; p < RANKS; p++) {
                  want += value(p, i, k);
                }
                if (out.getFloat(k * 4) != want) {
                  wrong[rank]++;
                }
              }
            }
          }
        });
        t[r].start();
      }
      for (Thread x : t) {
        x.join();
      }
      assertEquals(0, wrong[0] + wrong[1] + wrong[2], "wrong elements");
    } finally {
      for (HostCommunicator c : comms) {
        c.close();
      }
    }
  }

  @Test
  void aWarmSmallAllReduceAllocatesNothing() throws Exception {
    HostCommunicator[] comms = HostCommunicator.inProcess(CommConfig.DEFAULT
        .withTimeout(Duration.ofSeconds(60)), RANKS);
    try {
      long[] culprit = new long[RANKS];
      Thread[] t = new Thread[RANKS];
      for (int r = 0; r < RANKS; r++) {
        int rank = r;
        t[r] = new Thread(() -> culprit[rank] = allocatedPerRound(comms[rank]));
        t[r].start();
      }
      for (Thread x : t) {
        x.join();
      }
      for (int r = 0; r < RANKS; r++) {
        assertEquals(0, culprit[r], "rank " + r + ": bytes allocated by 200 warm calls of 8 B"
            + " to 4 KiB");
      }
    } finally {
      for (HostCommunicator c : comms) {
        c.close();
      }
    }
  }

  /**
   * Rounds of 200 calls (8 B, 512 B, 4 KiB) until one allocates (almost) nothing or the bound
   * passes, as every rank runs the same number of rounds (decided together by an allreduce).
   * Returns the last round's bytes, 0 when below 256 (a boxed vector or descriptor per call
   * would exceed that).
   */
  private static long allocatedPerRound(HostCommunicator c) {
    com.sun.management.ThreadMXBean mx =
        (com.sun.management.ThreadMXBean) ManagementFactory.getThreadMXBean();
    long tid = Thread.currentThread().getId();
    long[] counts = {2, 128, 1024};
    ByteBuffer[] in = new ByteBuffer[counts.length];
    ByteBuffer[] out = new ByteBuffer[counts.length];
    for (int s = 0; s < counts.length; s++) {
      in[s] = direct(counts[s]);
      out[s] = direct(counts[s]);
    }
    ByteBuffer flag = direct(1);
    long giveUp = System.nanoTime()
        + TimeUnit.SECONDS.toNanos(Long.getLong("treeline.alloc.seconds", 120));
    while (true) {
      long before = mx.getThreadAllocatedBytes(tid);
      for (int i = 0; i < 200; i++) {
        for (int s = 0; s < counts.length; s++) {
          c.allReduce(in[s], out[s], counts[s], DataType.F32, ReduceOp.SUM);
        }
      }
      long allocated = mx.getThreadAllocatedBytes(tid) - before;
      long result = allocated < 256 ? 0 : allocated;
      // continue while any rank allocated and time is left: every rank decides alike
      flag.putFloat(0, result == 0 && System.nanoTime() - giveUp < 0 ? 0 : 1);
      flag.putFloat(0, System.nanoTime() - giveUp >= 0 ? 1e9f : flag.getFloat(0) == 0 ? 0 : 1);
      c.allReduce(flag, flag, 1, DataType.F32, ReduceOp.SUM);
      float f = flag.getFloat(0);
      if (f == 0 || f >= 1e9f) {
        return result;
      }
    }
  }
}
