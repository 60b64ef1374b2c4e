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
