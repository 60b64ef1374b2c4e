package io.treeline.plan.verify;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import io.treeline.plan.Algorithm;
import io.treeline.plan.Plan;
import io.treeline.plan.PlanConfig;
import io.treeline.plan.Ring;
import io.treeline.plan.Topology;
import io.treeline.plan.TreeBroadcast;
import io.treeline.plan.TwoShot;
import java.util.ArrayList;
import java.util.List;
import java.util.TreeSet;
import org.junit.jupiter.api.Test;

/**
 * The symbolic executor over the topologies Treeline must handle: every node count up to 64,
 * then a sample up to 1024 with primes and powers of two plus and minus one, times 1..8 ranks
 * per node. Small chunks force several chunks in flight per tree.
 */
class SymbolicSweepTest {
  /**
   * 4 KiB chunks of f32: 1024 elements, so the larger messages pipeline; the network grain is
   * the alignment, so that the balance checks below hold to 64 B at these small sizes (a larger
   * grain trades balance for fewer messages on purpose).
   */
  private static final PlanConfig SMALL_CHUNKS = PlanConfig.DEFAULT.withChunkBytes(4096)
      .withNetGrainBytes(64);

  /** The same chunks with the default grain (by ranks per node): correctness only. */
  private static final PlanConfig SMALL_CHUNKS_AUTO_GRAIN = PlanConfig.DEFAULT
      .withChunkBytes(4096);

  static List<Integer> nodeCounts() {
    TreeSet<Integer> s = new TreeSet<>();
    for (int n = 1; n <= 64; n++) {
      s.add(n);
    }
    for (int p = 7; p <= 10; p++) {
      s.add((1 << p) - 1);
      s.add(1 << p);
      s.add((1 << p) + 1);
    }
    for (int prime : new int[] {67, 97, 131, 257, 263, 509, 521, 769, 1009, 1021}) {
      s.add(prime);
    }
    s.add(100);
    s.add(500);
    s.add(1000);
    s.remove(1025);
    return new ArrayList<>(s);
  }

  @Test
  void treeAlgorithmsAreCorrectOnEveryNodeCountTo64AndASampleTo1024TimesOneToEightRanks() {
    long t0 = System.nanoTime();
    int plans = 0;
    long steps = 0;
    for (int nodes : nodeCounts()) {
      for (int g = 1; g <= 8; g++) {
        Topology topo = Topology.uniform(nodes, g);
        // a prime element count, not a multiple of any rank count, several chunks per tree
        long count = nodes * g > 256 ? 2053 : 5003;
        for (Algorithm a : new Algorithm[] {Algorithm.DBT, Algorithm.HIERARCHICAL}) {
          Verification v = SymbolicExecutor.verify(a.allReduce(topo, DataType.F32, count,
              SMALL_CHUNKS));
          plans++;
          steps += v.steps();
          if (nodes > 1) {
            assertTreeBalance(a, topo, count * 4, v);
          }
          if (a == Algorithm.HIERARCHICAL && nodes > 1) {
            steps += SymbolicExecutor.verify(a.allReduce(topo, DataType.F32, count,
                SMALL_CHUNKS_AUTO_GRAIN)).steps();
            plans++;
          }
        }
      }
    }
    System.out.printf("symbolic sweep: %d tree plans (%d node counts x 8 x 2 algorithms, and the "
        + "default grain), "
        + "%d steps, %.1f s%n", plans, nodeCounts().size(), steps, (System.nanoTime() - t0) / 1e9);
  }

  /**
   * Each node sends and receives at most twice the message across nodes, as a ring does: in
   * tree t a node with d links moves d halves each way, and a node is a leaf (d = 1) in one of
   * the two trees, so d1 + d2 <= 4. One tree alone would make inner nodes move 3 messages.
   */
  private static void assertTreeBalance(Algorithm a, Topology topo, long bytes, Verification v) {
    long slack = 64L * 2 * topo.maxLocalSize(); // alignment of halves and slices
    String what = a.id() + " on " + topo;
    assertTrue(v.maxNodeInterSent() <= 2 * bytes + slack, what + ": node sent "
        + v.maxNodeInterSent() + " > 2 x " + bytes);
    assertTrue(v.maxNodeInterRecv() <= 2 * bytes + slack, what + ": node received "
        + v.maxNodeInterRecv());
    assertTrue(v.minNodeInterSent() >= bytes - slack, what + ": node sent only "
        + v.minNodeInterSent());
    if (a == Algorithm.DBT && topo.maxLocalSize() == 1) {
      // one rank per node: the bound holds per rank, and most ranks sit exactly on it
      int atTwo = 0;
      for (int r = 0; r < v.ranks(); r++) {
        assertTrue(v.rankInterSent()[r] <= 2 * bytes + slack);
        assertTrue(v.rankInterRecv()[r] <= 2 * bytes + slack);
        if (v.rankInterSent()[r] >= 2 * bytes - slack) {
          atTwo++;
        }
      }
      if (topo.nodes() >= 8) {
        assertTrue(atTwo >= v.ranks() / 2, what + ": only " + atTwo + " ranks at 2x");
      }
    }
    if (a == Algorithm.HIERARCHICAL && topo.isUniform()) {
      // the inter-node work is spread over all local ranks: 2x the message / ranks per node
      long perRank = 2 * bytes / topo.maxLocalSize() + slack;
      assertTrue(v.maxRankInterSent() <= perRank, what + ": rank sent "
          + v.maxRankInterSent() + " > " + perRank);
    }
  }

  @Test
  void ringAndTheOtherCollectivesAreCorrectUpTo128Ranks() {
    long t0 = System.nanoTime();
    int plans = 0;
    for (int nodes = 1; nodes <= 16; nodes++) {
      for (int g = 1; g <= 8; g++) {
        Topology topo = Topology.uniform(nodes, g);
        long count = 3001;
        int n = topo.size();
        Verification v = SymbolicExecutor.verify(Ring.allReduce(topo, DataType.F32, count,
            SMALL_CHUNKS));
        if (n > 1) {
          // a ring moves 2(n-1)/n of the message per rank, give or take slice rounding
          double expect = 2.0 * (n - 1) / n * count * 4;
          double perRank = (double) (v.maxRankInterSent() + 0) ;
          assertTrue(v.maxLinkBytes() <= expect * 1.1 + 64 * 2 * n, "ring " + topo);
          assertTrue(perRank <= expect * 1.1 + 64 * 2 * n, "ring " + topo);
        }
        SymbolicExecutor.verify(Ring.reduceScatter(topo, DataType.F32, count, SMALL_CHUNKS));
        SymbolicExecutor.verify(Ring.allGather(topo, DataType.F32, count, SMALL_CHUNKS));
        SymbolicExecutor.verify(TreeBroadcast.broadcast(topo, DataType.F32, count,
            (nodes * 7 + g) % n, SMALL_CHUNKS));
        plans += 4;
        if (nodes == 1) {
          SymbolicExecutor.verify(Algorithm.ONESHOT.allReduce(topo, DataType.F32, count,
              SMALL_CHUNKS));
          SymbolicExecutor.verify(io.treeline.plan.OneShot.allReduceReleased(topo,
              DataType.F32, count, SMALL_CHUNKS));
          SymbolicExecutor.verify(Algorithm.TWOSHOT.allReduce(topo, DataType.F32, count,
              SMALL_CHUNKS));
          SymbolicExecutor.verify(TwoShot.reduceScatter(topo, DataType.F32, count,
              SMALL_CHUNKS));
          plans += 4;
        }
      }
    }
    System.out.printf("symbolic sweep: %d ring/one-shot/two-shot/reduce-scatter/all-gather/"
        + "broadcast plans up to 128 ranks, %.1f s%n", plans, (System.nanoTime() - t0) / 1e9);
  }

  @Test
  void oddSizesEveryAlgorithmAndCollective() {
    long[] sizes = {0, 1, 2, 3, 5, 13, 31, 127, 1021, 4099, 65521};
    Topology[] topos = {Topology.uniform(1, 1), Topology.uniform(1, 3), Topology.uniform(1, 8),
        Topology.uniform(2, 1), Topology.uniform(3, 2), Topology.uniform(5, 3),
        Topology.uniform(7, 8), Topology.of(3, 1, 2), Topology.of(1, 4, 4, 2, 3),
        Topology.uniform(33, 2)};
    for (Topology topo : topos) {
      for (long count : sizes) {
        for (DataType type : new DataType[] {DataType.F32, DataType.F64, DataType.BF16,
            DataType.U8}) {
          for (Algorithm a : Algorithm.values()) {
            if (a.supports(topo)) {
              SymbolicExecutor.verify(a.allReduce(topo, type, count, SMALL_CHUNKS));
            }
          }
          SymbolicExecutor.verify(Ring.reduceScatter(topo, type, count, SMALL_CHUNKS));
          SymbolicExecutor.verify(Ring.allGather(topo, type, count, SMALL_CHUNKS));
          SymbolicExecutor.verify(TreeBroadcast.broadcast(topo, type, count, topo.size() - 1,
              SMALL_CHUNKS));
        }
      }
    }
  }

  @Test
  void unevenRanksPerNodeUseEveryRankOfTheSmallerNodes() {
    Topology topo = Topology.of(4, 1, 3, 2, 4);
    Plan p = Algorithm.HIERARCHICAL.allReduce(topo, DataType.F32, 10_007, SMALL_CHUNKS);
    Verification v = SymbolicExecutor.verify(p);
    // the node with one rank carries all four slices across nodes
    assertTrue(v.rankInterSent()[4] > 0);
    for (int r = 0; r < topo.size(); r++) {
      assertTrue(v.rankInterSent()[r] > 0, "rank " + r + " idle across nodes");
    }
    assertEquals(5, v.nodes());
  }
}
