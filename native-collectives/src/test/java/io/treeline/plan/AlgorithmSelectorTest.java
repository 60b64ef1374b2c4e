package io.treeline.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import org.junit.jupiter.api.Test;

class AlgorithmSelectorTest {
  private final AlgorithmSelector sel = AlgorithmSelector.DEFAULT;

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
    long four = crossover(Topology.uniform(1, 4));
    long eight = crossover(Topology.uniform(1, 8));
    assertTrue(eight < four, eight + " vs " + four);
  }

  private long crossover(Topology t) {
    long b = 8;
    while (sel.select(t, b) == Algorithm.ONESHOT) {
      b *= 2;
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
