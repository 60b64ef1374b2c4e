package io.treeline.plan;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import io.treeline.core.DataType;
import org.junit.jupiter.api.Test;

class PlanShapeTest {

  @Test
  void slicesTileTheMessageOnAlignedBoundaries() {
    for (long count : new long[] {0, 1, 7, 16, 97, 1000, 65537}) {
      for (int parts = 1; parts <= 9; parts++) {
        long expect = 0;
        for (int i = 0; i < parts; i++) {
          assertEquals(expect, Slices.lo(count, parts, i, 16));
          long lo = Slices.lo(count, parts, i, 16);
          assertTrue(lo % 16 == 0 || lo == count);
          expect = Slices.hi(count, parts, i, 16);
        }
        assertEquals(count, expect);
      }
    }
  }

  /**
   * The network grain: a small message across nodes crosses on one rank of each node and one
   * tree (a leaf's send up, the root's send down: 2 messages), a large one on every rank and
   * both trees; the symbolic executor proves each plan, odd sizes and grains included.
   */
  @Test
  void aSmallMessageAcrossNodesCrossesOnOneRankAndOneTreeALargeOneOnAll() {
    Topology twoByTwo = Topology.uniform(2, 2);
    PlanConfig grain4k = PlanConfig.DEFAULT.withNetGrainBytes(4096);
    PlanConfig grain64 = PlanConfig.DEFAULT.withNetGrainBytes(64);
    assertEquals(2, sends(Hierarchical.allReduce(twoByTwo, DataType.F32, 64, grain4k)));
    assertEquals(2, sends(Hierarchical.allReduce(twoByTwo, DataType.F32, 1024, grain4k)));
    assertEquals(8, sends(Hierarchical.allReduce(twoByTwo, DataType.F32, 64, grain64)),
        "the alignment alone: 2 ranks x 2 trees x up and down");
    // 8 KiB: 2 slices of 4 KiB, each on one tree; 64 KiB: 2 slices of 2 halves each
    assertEquals(4, sends(Hierarchical.allReduce(twoByTwo, DataType.F32, 2048, grain4k)));
    assertEquals(8, sends(Hierarchical.allReduce(twoByTwo, DataType.F32, 16384, grain4k)));
    assertEquals(2, sends(Hierarchical.allReduce(Topology.uniform(2, 1), DataType.F32, 1024,
        grain4k)), "one rank a node: one tree");
    // one node: two-shot's slices stay on the alignment (its crossover was fit so)
    assertEquals(Hierarchical.allReduce(Topology.uniform(1, 4), DataType.F32, 1000, grain64)
        .steps(), Hierarchical.allReduce(Topology.uniform(1, 4), DataType.F32, 1000, grain4k)
        .steps());
    for (int grain : new int[] {PlanConfig.AUTO_NET_GRAIN, 64, 256, 4096, 16384, 1 << 20}) {
      PlanConfig cfg = PlanConfig.DEFAULT.withChunkBytes(8192).withNetGrainBytes(grain);
      for (Topology t : new Topology[] {twoByTwo, Topology.uniform(3, 4), Topology.of(3, 1, 2)}) {
        for (long count : new long[] {0, 1, 7, 1021, 4099, 65521}) {
          for (DataType type : new DataType[] {DataType.F32, DataType.BF16, DataType.F64}) {
            io.treeline.plan.verify.SymbolicExecutor.verify(
                Hierarchical.allReduce(t, type, count, cfg));
          }
        }
      }
    }
    assertThrows(IllegalArgumentException.class, () -> PlanConfig.DEFAULT.withNetGrainBytes(96));
    assertThrows(IllegalArgumentException.class, () -> PlanConfig.DEFAULT.withNetGrainBytes(32));
  }

  /**
   * The default grain divides 32 KiB among a node's ranks: one rank and one tree carry a message
   * up to the grain, every rank and both trees from 64 KiB, whatever the ranks per node.
   */
  @Test
  void theAutomaticGrainDividesThirtyTwoKibAmongTheRanksOfANode() {
    PlanConfig auto = PlanConfig.DEFAULT;
    assertEquals(PlanConfig.AUTO_NET_GRAIN, auto.netGrainBytes());
    assertEquals(32768, auto.netGrainBytes(1));
    assertEquals(16384, auto.netGrainBytes(2));
    assertEquals(8192, auto.netGrainBytes(3), "rounded down to a power of two");
    assertEquals(4096, auto.netGrainBytes(8));
    assertEquals(64, auto.netGrainBytes(4096), "never below the alignment");
    assertEquals(4096, auto.withNetGrainBytes(4096).netGrainBytes(2), "a set grain is kept");
    assertEquals(16384 / 4, auto.netGrainElements(4, 2));
    assertEquals(512 * 1024 / 4, auto.withChunkBytes(512 * 1024).withNetGrainBytes(1 << 20)
        .netGrainElements(4, 2), "a grain above the chunk is the chunk");
    assertThrows(IllegalArgumentException.class, () -> auto.netGrainBytes(0));
    for (int perNode : new int[] {2, 4, 8}) {
      Topology t = Topology.uniform(2, perNode);
      long grainFloats = auto.netGrainBytes(perNode) / 4;
      assertEquals(2, sends(Hierarchical.allReduce(t, DataType.F32, grainFloats, auto)),
          perNode + " a node, one grain: one rank, one tree");
      assertEquals(4L * perNode, sends(Hierarchical.allReduce(t, DataType.F32, 16384, auto)),
          perNode + " a node, 64 KiB: every rank, both trees");
      assertEquals(2L * perNode, sends(Hierarchical.allReduce(t, DataType.F32, 8192, auto)),
          perNode + " a node, 32 KiB: every rank, one tree");
    }
  }

  private static long sends(Plan p) {
    long n = 0;
    for (int r = 0; r < p.size(); r++) {
      n += p.steps(r).stream().filter(s -> s instanceof Step.Send).count();
    }
    return n;
  }

  @Test
  void oneShotAndTwoShotRefuseSeveralNodesAndSayWhatToUse() {
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> OneShot.allReduce(Topology.uniform(2, 4), DataType.F32, 100, PlanConfig.DEFAULT));
    assertTrue(e.getMessage().contains("hierarchical"), e.getMessage());
  }

  @Test
  void treePlansCarryTheirTreesAndOthersNone() {
    Plan p = DoubleBinaryTree.allReduce(Topology.uniform(5, 2), DataType.F32, 1000,
        PlanConfig.DEFAULT);
    assertEquals(2, p.trees().size());
    assertEquals(BinaryTrees.dtree(5, 1), p.trees().get(1));
    assertTrue(Ring.allReduce(Topology.uniform(5, 2), DataType.F32, 1000, PlanConfig.DEFAULT)
        .trees().isEmpty());
  }

  @Test
  void plansArePureFunctionsOfTheirInputs() {
    Topology t = Topology.of(3, 1, 2);
    for (Algorithm a : new Algorithm[] {Algorithm.RING, Algorithm.DBT, Algorithm.HIERARCHICAL}) {
      Plan x = a.allReduce(t, DataType.BF16, 12345, PlanConfig.DEFAULT.withChunkBytes(1024));
      Plan y = a.allReduce(t, DataType.BF16, 12345, PlanConfig.DEFAULT.withChunkBytes(1024));
      assertEquals(x.steps(), y.steps());
      assertEquals(PlanPrinter.json(x), PlanPrinter.json(y));
    }
  }

  @Test
  void jsonListsTreesIndexedByNode() {
    Plan p = DoubleBinaryTree.allReduce(Topology.uniform(4, 1), DataType.F32, 64,
        PlanConfig.DEFAULT);
    String j = PlanPrinter.json(p);
    assertTrue(j.contains("\"trees\":[[{\"node\":0,\"parent\":-1,\"children\":[2]},"
        + "{\"node\":1,\"parent\":2,\"children\":[]}"), j);
    // tree 2 of 4 nodes mirrors: node 3 is the root with child 1
    assertTrue(j.contains("{\"node\":3,\"parent\":-1,\"children\":[1]}]]"), j);
  }
}
