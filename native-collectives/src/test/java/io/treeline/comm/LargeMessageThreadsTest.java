package io.treeline.comm;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.core.ReduceOp;
import io.treeline.plan.Algorithm;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.TwoShot;
import io.treeline.testing.Elements;
import io.treeline.testing.Ranks;
import java.nio.ByteBuffer;
import java.time.Duration;
import java.util.Random;
import org.junit.jupiter.api.Test;

/**
 * Large messages through the host communicator as it runs them on a many-core node: two-shot
 * pipelined in chunks and every rank's reduces, copies and copy in/out shared among reduce
 * threads (forced to 3 here, where the cores are few), on real numbers against the float64
 * reference, odd sizes that cut slices, chunks and thread parts unevenly.
 */
class LargeMessageThreadsTest {
  private static final Duration TIMEOUT = Duration.ofSeconds(120);

  @Test
  void pipelinedTwoShotAndHierarchicalWithReduceThreadsMatchTheReference() {
    // what a node with idle cores gets, forced here where the cores are few
    String threads = System.getProperty("treeline.reduceThreads");
    String chunks = System.getProperty("treeline.peerChunkBytes");
    System.setProperty("treeline.reduceThreads", "3");
    System.setProperty("treeline.peerChunkBytes", Long.toString(PlanConfig.HOST_PEER_CHUNK_BYTES));
    try {
      run(new int[] {3}, Algorithm.TWOSHOT);
      run(new int[] {2, 2}, Algorithm.HIERARCHICAL);
    } finally {
      restore("treeline.reduceThreads", threads);
      restore("treeline.peerChunkBytes", chunks);
    }
  }

  private static void restore(String key, String value) {
    if (value == null) {
      System.clearProperty(key);
    } else {
      System.setProperty(key, value);
    }
  }

  private static void run(int[] layout, Algorithm algo) {
    int n = 0;
    for (int g : layout) {
      n += g;
    }
    int ranks = n;
    // 3 MiB + a prime, 0 and 1: slices of ~1 MiB, cut into pipelined chunks and thread parts
    long[] sizes = {786_433, 0, 1, 1_572_869};
    DataType[] types = {DataType.F32, DataType.BF16, DataType.F32, DataType.F64};
    ReduceOp[] ops = {ReduceOp.SUM, ReduceOp.AVG, ReduceOp.MAX, ReduceOp.AVG};
    // pipelined on purpose (the host default is whole phases: PlanConfig.hostPeerChunkBytes)
    CommConfig cfg = CommConfig.DEFAULT.withTimeout(TIMEOUT).withSegmentBytes(32 << 20)
        .withPlan(CommConfig.DEFAULT.plan().withPeerChunkBytes(PlanConfig.HOST_PEER_CHUNK_BYTES));
    assertTrue(TwoShot.chunks(3, DataType.F32, sizes[0], cfg.plan()) > 1,
        "the case must pipeline");
    Random rnd = new Random(29);
    double[][][] in = new double[sizes.length][ranks][];
    for (int c = 0; c < sizes.length; c++) {
      for (int r = 0; r < ranks; r++) {
        in[c][r] = Elements.random(rnd, sizes[c], types[c], ops[c]);
      }
    }
    ByteBuffer[][] outs = new ByteBuffer[sizes.length][ranks];
    HostCommunicator[] g = HostCommunicator.inProcess(cfg, layout);
    try {
      Ranks.run(ranks, 300_000, r -> {
        for (int c = 0; c < sizes.length; c++) {
          ByteBuffer src = Elements.direct(sizes[c], types[c]);
          for (int i = 0; i < sizes[c]; i++) {
            Elements.put(src, i, in[c][r][i], types[c]);
          }
          ByteBuffer out = Elements.direct(sizes[c], types[c]);
          for (int rep = 0; rep < 2; rep++) { // the second call reuses plans and threads
            g[r].allReduce(src, out, sizes[c], types[c], ops[c], algo);
          }
          outs[c][r] = out;
        }
      });
    } finally {
      for (HostCommunicator c : g) {
        c.close();
      }
    }
    for (int c = 0; c < sizes.length; c++) {
      String what = algo.id() + " " + types[c] + " " + ops[c] + " count " + sizes[c];
      for (int i = 0; i < sizes[c]; i++) {
        double ref = Elements.reference(in[c], i, types[c], ops[c]);
        double got = Elements.get(outs[c][0], i, types[c]);
        double tol = Elements.tolerance(in[c], i, types[c], ops[c]);
        if (!(Math.abs(got - ref) <= tol)) {
          throw new AssertionError(what + " element " + i + ": " + got + " vs " + ref);
        }
      }
      for (int r = 1; r < ranks; r++) {
        assertEquals(outs[c][0], outs[c][r], what + ": rank " + r + " differs from rank 0");
      }
    }
  }
}
