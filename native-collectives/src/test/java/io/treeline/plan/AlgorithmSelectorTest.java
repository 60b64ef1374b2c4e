package io.treeline.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AlgorithmSelectorTest {
  /** Ranks that outnumber the cores (the 2-core CI machine's 4 ranks). */
  private final AlgorithmSelector sel = AlgorithmSelector.DEFAULT.withCores(2);
  /** Ranks with a core each (the GPU machine's 16 cores). */
  private final AlgorithmSelector wide = AlgorithmSelector.DEFAULT.withCores(16);

  @Test
  void withACoreEachTheCrossoversAreTheMeasuredOnes() {
    // 16 cores, 2026-12-04 (docs/BENCHMARKS.md): two-shot faster from 8 KiB at 2, 4 and 8 ranks
    // (1.1-2.3x), the two level at 4 KiB at 4 and 8 ranks
    for (int ranks : new int[] {2, 4, 8}) {
      Topology one = Topology.uniform(1, ranks);
      assertEquals(Algorithm.ONESHOT, wide.select(one, 4096), ranks + " ranks");
      assertEquals(Algorithm.TWOSHOT, wide.select(one, 32 << 10), ranks + " ranks");
      assertEquals(Algorithm.TWOSHOT, wide.select(one, 64 << 20), ranks + " ranks");
    }
    for (int ranks : new int[] {2, 4, 8}) {
      assertEquals(Algorithm.TWOSHOT, wide.select(Topology.uniform(1, ranks), 16 << 10));
    }
    assertEquals(Algorithm.TWOSHOT, wide.select(Topology.uniform(1, 8), 8 << 10));
    // sharing cores, one-shot's fewer rounds pay up to larger messages
    assertTrue(crossover(sel, Topology.uniform(1, 4)) > 4 * crossover(wide,
        Topology.uniform(1, 4)));
  }

  @Test
  void insideOneNodeOneShotForSmallTwoShotForLarge() {
    Topology one = Topology.uniform(1, 4);
    assertEquals(Algorithm.ONESHOT, sel.select(one, 8));
    assertEquals(Algorithm.ONESHOT, sel.select(one, 64 << 10));
    assertEquals(Algorithm.TWOSHOT, sel.select(one, 1 << 20));
    assertEquals(Algorithm.TWOSHOT, sel.select(one, 1L << 30));
  }

  @Test
  void theCrossoverComesEarlierWithMoreRanksBecauseOneShotReadsEveryBuffer() {
    for (AlgorithmSelector s : new AlgorithmSelector[] {sel, wide}) {
      long four = crossover(s, Topology.uniform(1, 4));
      long eight = crossover(s, Topology.uniform(1, 8));
      assertTrue(eight < four, eight + " vs " + four);
    }
  }

  private static long crossover(AlgorithmSelector sel, Topology t) {
    long b = 8;
    while (sel.select(t, b) == Algorithm.ONESHOT) {
      b += Math.max(64, b / 32);
    }
    return b;
  }

  @Test
  void acrossNodesTreesForLatencyRingOnlyForHugeMessagesOnFewNodes() {
    Topology two = Topology.uniform(2, 8);
    assertEquals(Algorithm.HIERARCHICAL, sel.select(two, 8));
    assertEquals(Algorithm.HIERARCHICAL, sel.select(two, 1 << 20));
    assertEquals(Algorithm.HIERARCHICAL, sel.select(two, 1L << 30));
    // one rank per node: the ring moves 2(R-1)/R S per node, the trees 2S, so rings win when
    // bandwidth is all that counts
    assertEquals(Algorithm.RING, sel.select(Topology.uniform(2, 1), 1L << 30));
    Topology many = Topology.uniform(128, 8);
    // a ring over 1024 ranks pays 2046 steps of latency: trees win up to large messages
    assertEquals(Algorithm.HIERARCHICAL, sel.select(many, 16 << 20));
    assertTrue(sel.estimateMicros(Algorithm.RING, many, 1 << 20)
        > 10 * sel.estimateMicros(Algorithm.HIERARCHICAL, many, 1 << 20));
  }

  @Test
  void neverPicksAnAlgorithmTheTopologyCannotRun() {
    for (int nodes = 1; nodes <= 9; nodes++) {
      for (long b = 1; b <= 1L << 32; b *= 16) {
        Topology t = Topology.uniform(nodes, 3);
        assertTrue(sel.select(t, b).supports(t));
      }
    }
  }
}
